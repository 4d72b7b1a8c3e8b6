#!/bin/bash
# select stage from make reproduce's lookup checkpoint (out/exp-g128), first-turn rows under all-renamed variants
set -eo pipefail
cd /work/main
TD=target/release/teacher-distill
STEPS=${STEPS:-3000}; SAVE=${SAVE:-500}; INIT=${INIT:-out/exp-g128/lookup/checkpoint-000800}; OUTD=${OUTD:-/work/exp/sel/run}
$TD train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed 1 --eval-steps 0 \
  --overwrite-output-dir --batch-tokens 8192 --tokenizer out/exp-g128/data/tokenizer --model-init $INIT \
  --records ${RECORDS:-/work/exp/sel/select.jsonl} --max-steps $STEPS --save-steps $SAVE --out $OUTD > $OUTD.log 2>&1
