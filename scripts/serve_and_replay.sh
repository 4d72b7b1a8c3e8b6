#!/usr/bin/env bash
# Serve a checkpoint on a free loopback port and replay the committed deployment set against it in agent
# mode (the complete agent: skills, tools, hooks) at 1 request/s, as the paper measures its P50/P95;
# the server stops when the replay ends, whatever its outcome.
# Usage: scripts/serve_and_replay.sh BIN_DIR MODEL_DIR HARNESS_DIR NUM_PROMPTS OUT_DIR
set -euo pipefail
BIN=$1 MODEL=$2 HARNESS=$3 N=$4 OUT=$5
mkdir -p "$OUT"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN/serve" --model "$MODEL" --harness "$HARNESS" --port "$PORT" 2>"$OUT/serve.log" &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 600); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
"$BIN/replay-bench" run --base-url "http://127.0.0.1:$PORT" --mode agent --request-rate 1 --num-prompts "$N" \
  --seed 1 --label reproduce --out "$OUT"
