#!/usr/bin/env bash
# Agent-mode replay (issue 26's end-to-end goal: P50 <= 3.4 s, P95 <= 8.1 s) against `serve` with a
# `small`-shaped model (random weights) on this machine, under the sample harness as shipped and
# under the same harness with its live-room blocks in the context message (`placement = "context"`),
# so that the system prompt and the tool schemas are one prefix shared by every request.
# MODE=script plays the scripted teacher's turn of each task instead (`teacher-distill collect` under
# the same harness; each recorded assistant message one call generating exactly its length), so the
# server does the work an agent that does its job would cause, whatever the random weights say.
# Usage: D=/tmp/agent-replay N=110 ROUNDS=1 LAYOUTS="shipped context" MODE=agent SERVE_ARGS="--prefill-chunk 64" \
#          bash docs/runs/agent-replay-2026-12-05/run.sh
# Needs the release binaries (cargo build --release; BIN=DIR takes them from DIR). Writes $D/<layout>-<round>/ (replay-bench's
# summary.json, requests.csv, cdf.svg) and $D/metrics-<layout>-<round>.txt (the server's /metrics).
set -euo pipefail
cd "$(dirname "$0")/../../.."
D=${D:-/tmp/agent-replay}
N=${N:-110}
ROUNDS=${ROUNDS:-1}
BIN=${BIN:-target/release}
mkdir -p "$D"
[ -f "$D/tokenizer/tokenizer.json" ] || "$BIN/hat" tokenizer train --harness harness-samples/taolive \
  --text testdata/ifeval/input_data.jsonl --vocab-size 4096 --out "$D/tokenizer" >/dev/null
rm -rf "$D/taolive-context" && cp -r harness-samples/taolive "$D/taolive-context"
for t in current_product room_state active_rules; do
  sed -i "s/^template = \"$t.md.j2\"\$/template = \"$t.md.j2\"\nplacement = \"context\"/" \
    "$D/taolive-context/prompts/pipeline.toml"
done
[ "$(grep -c 'placement = "context"' "$D/taolive-context/prompts/pipeline.toml")" = 3 ]
"$BIN/hat" harness validate "$D/taolive-context" >/dev/null

replay() { # LAYOUT HARNESS ROUND
  local port pid
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$BIN/serve" --preset small --tokenizer "$D/tokenizer" --harness "$2" --port "$port" --max-model-len 8192 ${SERVE_ARGS:-} \
    2>"$D/serve-$1-$3.log" &
  pid=$!
  for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
  local set=()
  if [ "${MODE:-agent}" = script ]; then
    [ -f "$D/teacher-$1.jsonl" ] || "$BIN/teacher-distill" collect --harness "$2" --catalog testdata/catalog.json \
      --variants 0 --tasks testdata/replay/default.jsonl -o "$D/teacher-$1.jsonl" 2>/dev/null
    set=(--set "$D/teacher-$1.jsonl" --tokenizer "$D/tokenizer")
  fi
  "$BIN/replay-bench" run --base-url "http://127.0.0.1:$port" --mode "${MODE:-agent}" "${set[@]}" --request-rate 1 \
    --num-prompts "$N" --max-tokens 64 --seed 1 --label "$1" --out "$D/$1-$3" >/dev/null || { kill "$pid"; exit 1; }
  curl -s "http://127.0.0.1:$port/metrics" >"$D/metrics-$1-$3.txt"
  kill "$pid"; wait "$pid" || true
  python3 - "$D/$1-$3/summary.json" "$D/metrics-$1-$3.txt" "$1" "$3" <<'PY'
import json, re, sys
s = json.load(open(sys.argv[1]))
m = open(sys.argv[2]).read()
def metric(name):
    return sum(float(x) for x in re.findall(rf'^{name}(?:{{[^}}]*}})? ([0-9.e+]+)$', m, re.M))
prompt, cached = metric('hat_prompt_tokens_total'), metric('hat_prefix_cache_hit_tokens_total')
gen, steps = metric('hat_generation_tokens_total'), metric('hat_decode_steps_total')
print(f"{sys.argv[3]} round {sys.argv[4]}: n {s['completed']} failed {s['failed']}, "
      f"e2e P50 {s['p50_e2el_ms']/1e3:.2f} s P95 {s['p95_e2el_ms']/1e3:.2f} s P99 {s['p99_e2el_ms']/1e3:.2f} s, "
      f"task success {s['task_success_rate']}, prompt tokens {prompt:.0f}, from the prefix cache {cached:.0f} "
      f"({cached/max(prompt,1):.1%}), generated {gen:.0f} in {steps:.0f} decode steps")
phases = re.findall(r'^hat_engine_seconds_total\{phase="(\w+)"\} ([0-9.e+-]+)$', m, re.M)
if phases:
    print("  engine seconds: " + ", ".join(f"{p} {float(v):.1f}" for p, v in phases))
PY
}
for r in $(seq "$ROUNDS"); do
  for layout in ${LAYOUTS:-shipped context}; do
    case $layout in
      shipped) replay shipped harness-samples/taolive "$r" ;;
      context) replay context "$D/taolive-context" "$r" ;;
    esac
  done
done
