#!/bin/bash
# Smoke run of grpo-train --rollout-endpoint through the release binaries on the curriculum model.
set -ex
BIN=${BIN:-target/release}; E=/work/exp/E4; START=/work/exp/R/sft/checkpoint-000400; H=harness-samples/taolive
FAULTS=timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03
$BIN/serve --model $START --port 8315 --enable-weight-updates --max-model-len 16384 > $E/serve.log 2>&1 &
SERVE=$!
trap "kill $SERVE" EXIT
for i in $(seq 60); do curl -sf localhost:8315/health > /dev/null && break; sleep 1; done
run() { local name=$1; shift
  $BIN/grpo-train --model $START --tasks /work/exp/G/tasks.jsonl --harness $H \
    $(for d in /work/exp/G/variants/variant-*; do echo --harness $d; done) --faults $FAULTS --products 600 \
    --max-steps 3 --save-steps 3 --num-generations 4 --tasks-per-step 2 --learning-rate 3e-4 --seed 1 \
    --rollout-endpoint http://127.0.0.1:8315/v1 --concurrency 8 --tis-imp-ratio-cap 2 \
    --out $E/$name --overwrite-output-dir "$@" > $E/$name.log 2>&1
}
run sync
run async --async
curl -s localhost:8315/metrics | grep -E "weight_updates|requests_total" > $E/serve-metrics.txt
