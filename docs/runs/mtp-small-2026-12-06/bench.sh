#!/bin/bash
# serve plain and with --mtp on one checkpoint, alternating, each a fresh release `serve` at
# concurrency 1 (the only case that speculates): replay-bench's default set, greedy, 64 tokens.
# MODES are `name=serve-binary[:mtp[K]]` (the binaries of two commits can be set side by side; K drafts,
# default $K or 1).
#   [K=drafts] [N=requests] MODES="plain=/tmp/serve_new mtp=/tmp/serve_new:mtp" bash bench.sh CHECKPOINT OUTDIR [ROUNDS]
set -euo pipefail
ckpt=$1 out=$2 rounds=${3:-2}
cd /work/main
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  for mode in ${MODES:-plain=target/release/serve mtp=target/release/serve:mtp}; do
    name=${mode%%=*} bin=${mode#*=}
    flags=()
    if [[ $bin =~ :mtp([0-9]*)$ ]]; then
      flags=(--mtp --mtp-draft-tokens ${BASH_REMATCH[1]:-${K:-1}}); bin=${bin%:mtp*}
    fi
    port=$((18000 + RANDOM % 1000))
    "$bin" --model "$ckpt" --port $port "${flags[@]}" > "$out/serve.$name.$round.log" 2>&1 &
    pid=$!
    until curl -sf http://127.0.0.1:$port/v1/models > /dev/null; do sleep 0.5; done
    target/release/replay-bench run --base-url http://127.0.0.1:$port --concurrency 1 --warmup 2 \
      --num-prompts ${N:-24} --max-tokens 64 --temperature 0 --seed 1 ${REPLAY_ARGS:-} --out "$out/$name.$round" > "$out/$name.$round.log" 2>&1
    curl -s http://127.0.0.1:$port/metrics > "$out/$name.$round.metrics" || true
    kill $pid; wait $pid 2>/dev/null || true
    python3 - "$out/$name.$round/summary.json" "$name" "$round" "$out/$name.$round.metrics" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = dict(l.split()[:2] for l in open(sys.argv[4]) if l.strip() and not l.startswith('#'))
drafted = float(m.get('hat_spec_draft_tokens_total', 0))
acc = f", acceptance {float(m['hat_spec_accepted_tokens_total']) / drafted:.3f}" if drafted else ""
# The engine's decode phase (decode steps and speculative rounds, sampling included) per generated
# token: the decode rate without the prefill of the turn's later calls that TPOT includes.
decode_ms = float(m['hat_engine_seconds_total{phase="decode"}']) * 1e3 / d['total_output_tokens']
print(f"{sys.argv[2]} round {sys.argv[3]}: decode phase {decode_ms:.2f} ms/token, mean TPOT {d['mean_tpot_ms']:.2f} ms, "
      f"output tokens {d['total_output_tokens']}, completed {d['completed']}{acc}")
PY
  done
done
