#!/usr/bin/env bash
# Runs test_client.py with the official openai package against a live `serve` (tiny random weights) on a
# free port, then stops the server. Used by `make openai-client-test` and CI. Needs target/debug/{serve,hat}.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=target/openai-venv
TOK=target/openai-client-tokenizer
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet openai
fi
if [ ! -f "$TOK/tokenizer.json" ]; then
  target/debug/hat tokenizer train --text testdata/ifeval/input_data.jsonl --vocab-size 1024 --out "$TOK" >/dev/null
fi
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
KEY=ci-key-$RANDOM
target/debug/serve --preset tiny --tokenizer "$TOK" --port "$PORT" --api-key "$KEY" --max-batch 8 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
  sleep 0.2
done
HAT_BASE_URL="http://127.0.0.1:$PORT/v1" HAT_API_KEY="$KEY" timeout 150 "$VENV/bin/python" tests/openai_client/test_client.py
kill -TERM $SERVER
wait $SERVER
trap - EXIT
