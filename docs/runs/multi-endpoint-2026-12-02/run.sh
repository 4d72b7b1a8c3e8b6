#!/bin/bash
# replay-bench against two `serve` processes of one random tiny checkpoint (--base-url twice), then
# against one of them alone, and teacher-distill collect with both as --teacher-url. Debug binaries
# (cargo build --bin hat --bin serve --bin replay-bench --bin teacher-distill), 2 cores shared with
# other builds (load average 7-10 during the runs). Output in $OUT (default /tmp/me).
set -euo pipefail
B=target/debug
D=${OUT:-/tmp/me}
mkdir -p $D
N="nice -n 19"
$N $B/hat tokenizer train --harness harness-samples/taolive --text testdata/ifeval/input_data.jsonl --vocab-size 4096 --out $D/tok
$N $B/hat model init --preset tiny --tokenizer $D/tok --out $D/tiny
$N $B/serve --model $D/tiny --port 18801 > $D/s1.log 2>&1 & S1=$!
$N $B/serve --model $D/tiny --port 18802 > $D/s2.log 2>&1 & S2=$!
trap 'kill $S1 $S2' EXIT
for i in $(seq 100); do curl -sf localhost:18801/health >/dev/null && curl -sf localhost:18802/health >/dev/null && break; sleep 0.2; done
$N $B/replay-bench run --base-url http://127.0.0.1:18801 --endpoint http://127.0.0.1:18802 \
  --concurrency 8 --num-prompts 32 --max-tokens 16 --label two-endpoints --out $D/two
$N $B/replay-bench run --base-url http://127.0.0.1:18801 \
  --concurrency 8 --num-prompts 32 --max-tokens 16 --label one-endpoint --out $D/one
$N $B/hat sim tasks --n 12 --seed 3 -o $D/tasks.jsonl
$N $B/teacher-distill collect --harness harness-samples/taolive --tasks $D/tasks.jsonl --variants 1 \
  --teacher-url http://127.0.0.1:18801/v1 --teacher-url http://127.0.0.1:18802/v1 --teacher-model tiny \
  --concurrency 4 --output $D/collect.jsonl --summary $D/collect-summary.json
