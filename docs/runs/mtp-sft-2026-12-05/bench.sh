#!/bin/bash
# serve with and without --mtp on one checkpoint, alternating, each a fresh release `serve` at
# concurrency 1 (the only case that speculates): replay-bench's default set, greedy, 64 tokens.
#   [K=drafts] bash bench.sh CHECKPOINT OUTDIR [ROUNDS]
set -euo pipefail
ckpt=$1 out=$2 rounds=${3:-2}
cd /work/main
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  for mode in plain mtp; do
    port=$((18000 + RANDOM % 1000))
    flags=(); [ $mode = mtp ] && flags=(--mtp --mtp-draft-tokens ${K:-2})
    target/release/serve --model "$ckpt" --port $port "${flags[@]}" > "$out/serve.$mode.$round.log" 2>&1 &
    pid=$!
    until curl -sf http://127.0.0.1:$port/v1/models > /dev/null; do sleep 0.5; done
    target/release/replay-bench run --base-url http://127.0.0.1:$port --concurrency 1 --warmup 2 \
      --num-prompts 24 --max-tokens 64 --temperature 0 --seed 1 --out "$out/$mode.$round" > /dev/null 2>&1
    curl -s http://127.0.0.1:$port/metrics | grep -E '^hat_spec' > "$out/$mode.$round.metrics" || true
    kill $pid; wait $pid 2>/dev/null || true
    python3 - "$out/$mode.$round/summary.json" "$mode" "$round" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]} round {sys.argv[3]}: mean TPOT {d['mean_tpot_ms']:.2f} ms, median {d['median_tpot_ms']:.2f} ms, "
      f"output tokens {d['total_output_tokens']}, completed {d['completed']}")
PY
    cat "$out/$mode.$round.metrics"
  done
done
