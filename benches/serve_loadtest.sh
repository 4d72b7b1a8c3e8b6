#!/usr/bin/env bash
# Load test of `serve` (tiny preset, random weights, CPU): replay-bench sends 1,000 requests of the
# committed replay set at concurrency 32 while a second client interleaves malformed, oversized and
# unauthenticated requests. Passes when every replay request succeeds, every bad request gets a 4xx,
# and the server counted no 5xx. Reports the server's peak RSS (VmHWM) and the replay summary.
# Usage: benches/serve_loadtest.sh TOKENIZER_DIR OUT_DIR   (make loadtest builds the release binaries;
# BIN=target/debug runs the debug ones)
set -euo pipefail
cd "$(dirname "$0")/.."
TOK=$1
BIN=${BIN:-target/release}
OUT=$2
mkdir -p "$OUT"
rm -f "$OUT/.done"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
KEY=load-$RANDOM
URL="http://127.0.0.1:$PORT/v1/chat/completions"
"$BIN/serve" --preset tiny --tokenizer "$TOK" --port "$PORT" --api-key "$KEY" \
  --max-batch 32 --max-queue 512 --max-body-bytes 262144 2>"$OUT/serve.log" &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 200); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done

python3 -c 'import json; print(json.dumps({"messages": [{"role": "user", "content": "x" * 300000}]}))' >"$OUT/oversized.json"
# Bad requests, round robin, until the replay is done: one status code per line.
(
  while [ ! -f "$OUT/.done" ]; do
    curl -s -o /dev/null -w '%{http_code}\n' -H "authorization: Bearer $KEY" -H 'content-type: application/json' -d '{"messages": [' "$URL"
    curl -s -o /dev/null -w '%{http_code}\n' -H "authorization: Bearer $KEY" -H 'content-type: application/json' -d @"$OUT/oversized.json" "$URL"
    curl -s -o /dev/null -w '%{http_code}\n' -H 'content-type: application/json' -d '{"messages": [{"role": "user", "content": "hi"}]}' "$URL"
    curl -s -o /dev/null -w '%{http_code}\n' -H "authorization: Bearer $KEY" -H 'content-type: application/json' -d '{"messages": [{"role": "user", "content": "hi"}], "temperature": "hot"}' "$URL"
    sleep 0.05
  done
) >"$OUT/bad_codes.txt" &
BAD=$!

START=$(date +%s.%N)
"$BIN/replay-bench" run --base-url "http://127.0.0.1:$PORT" --api-key "$KEY" --num-prompts 1000 \
  --concurrency 32 --max-tokens 32 --temperature 0.7 --seed 1 --label loadtest --out "$OUT" >/dev/null
touch "$OUT/.done"
wait $BAD
HWM=$(awk '/VmHWM/ {print $2, $3}' "/proc/$PID/status")
SERVER_5XX=$(curl -s "http://127.0.0.1:$PORT/metrics" | awk -F'[ "]' '/^hat_requests_total/ && /status="5/ {s += $NF} END {print s + 0}')
kill -TERM $PID
wait $PID
trap - EXIT
ELAPSED=$(python3 -c "import time; print(f'{time.time() - $START:.1f}')")

FAILED=$(python3 -c "import json; print(json.load(open('$OUT/summary.json'))['failed'])")
BAD_TOTAL=$(wc -l <"$OUT/bad_codes.txt")
BAD_NOT_4XX=$(grep -cv '^4' "$OUT/bad_codes.txt" || true)
echo "loadtest: 1000 requests at concurrency 32 in ${ELAPSED}s; failed $FAILED; server 5xx $SERVER_5XX"
echo "loadtest: $BAD_TOTAL bad requests interleaved, status codes: $(sort "$OUT/bad_codes.txt" | uniq -c | tr -s ' ' | tr '\n' ' ')"
echo "loadtest: peak RSS (VmHWM) $HWM"
python3 -c "import json; s = json.load(open('$OUT/summary.json')); print('loadtest: e2e p50/p95/p99 ms %.0f/%.0f/%.0f, ttft p50 %.0f ms, output %.1f tok/s, attainment %.3f' % (s['p50_e2el_ms'], s['p95_e2el_ms'], s['p99_e2el_ms'], s['p50_ttft_ms'], s['output_throughput'], s['attainment']))"
[ "$FAILED" = 0 ] && [ "$SERVER_5XX" = 0 ] && [ "$BAD_NOT_4XX" = 0 ]
