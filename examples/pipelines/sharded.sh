#!/usr/bin/env bash
# A stage run as 2 shards (as a Slurm array or a Kubernetes indexed Job would, `--shard K/N`) gives
# the same records as one unsharded run: each record goes to the shard its id hashes to, and each
# episode's randomness derives from its task id, not from its position or its neighbours.
#
#   examples/pipelines/sharded.sh [N_TASKS]               (binaries from $BIN, default target/release)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-target/release}
H=harness-samples/taolive
N=${1:-40}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

"$BIN/hat" sim tasks --n "$N" --split dev --seed 3 -o "$WORK/tasks.jsonl"
rollout() { "$BIN/hat" sim rollout --harness "$H" --tasks "$WORK/tasks.jsonl" --faults timeout=0.1 --seed 3 "$@"; }

rollout -o "$WORK/all.jsonl"
for k in 0 1; do
  rollout --shard "$k/2" -o "$WORK/shard-$k.jsonl"
  echo "shard $k/2: $(wc -l < "$WORK/shard-$k.jsonl") records"
done
cat "$WORK"/shard-*.jsonl > "$WORK/merged.jsonl"

all=$(wc -l < "$WORK/all.jsonl")
merged=$(wc -l < "$WORK/merged.jsonl")
echo "unsharded: $all records, shards together: $merged records"
[ "$all" -eq "$merged" ] || { echo "line counts differ" >&2; exit 1; }
# Not only as many records: the same records, byte for byte in another order, except meta.latency_ms,
# which adds the policy's measured wall-clock time to the simulated tool latencies.
same() { sed -E 's/"latency_ms":[0-9]+//' "$1" | sort; }
cmp <(same "$WORK/all.jsonl") <(same "$WORK/merged.jsonl")
echo "same records byte for byte (apart from the measured latency)"
