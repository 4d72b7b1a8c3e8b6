#!/usr/bin/env bash
# The Slurm array script run locally as 4 array tasks (the array variables set by hand), its parts
# concatenated, and the result compared with the single-process run after sorting by record id.
# Usage: examples/shard_check.sh HARNESS INPUT   (BIN=target/debug for debug binaries)
set -euo pipefail
cd "$(dirname "$0")/.."
HARNESS=$1 INPUT=$2
BIN=${BIN:-target/release}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for k in 0 1 2 3; do
  BIN=$BIN SLURM_ARRAY_TASK_ID=$k SLURM_ARRAY_TASK_COUNT=4 examples/slurm/hsa_augment_array.sh "$HARNESS" "$INPUT" "$TMP/out"
done
cat "$TMP"/out.part-* > "$TMP/sharded.jsonl"
"$BIN/hsa-augment" --harness "$HARNESS" -i "$INPUT" -o "$TMP/single.jsonl" --n 2 --seed 1
sort "$TMP/sharded.jsonl" > "$TMP/a" && sort "$TMP/single.jsonl" > "$TMP/b"
if cmp -s "$TMP/a" "$TMP/b"; then
  echo "shard_check: 4 Slurm array tasks = the single-process run ($(wc -l < "$TMP/b") lines, sorted)"
else
  echo "shard_check: MISMATCH between the sharded and the single-process output" >&2
  exit 1
fi
