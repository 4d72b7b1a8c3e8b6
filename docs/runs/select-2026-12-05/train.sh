#!/bin/bash
# select stage from make reproduce's lookup checkpoint (out/exp-g128), first-turn rows under all-renamed variants
set -eo pipefail
cd /work/main
TD=target/release/teacher-distill
STEPS=${STEPS:-3000}; SAVE=${SAVE:-500}; INIT=${INIT:-out/exp-g128/lookup/checkpoint-000800}; OUTD=${OUTD:-/work/exp/sel/run}
$TD train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed ${SEED:-1} --eval-steps 0 \
  --overwrite-output-dir --batch-tokens 8192 --tokenizer out/exp-g128/data/tokenizer --model-init $INIT \
  --records ${RECORDS:-/work/exp/sel/select.jsonl} --max-steps $STEPS --save-steps $SAVE --out $OUTD > $OUTD.log 2>&1
# Runs (this session):
#   bash train.sh                                  (stopped at ~2,150 steps; probed at 500, 1,000, 2,000)
#   RECORDS=/work/exp/sel/select.c1.jsonl STEPS=1500 SAVE=500 INIT=/work/exp/sel/run/checkpoint-002000 OUTD=/work/exp/sel/c1 bash train.sh
#                                                  (stopped at ~1,025; probed at 500, 1,000)
#   RECORDS=/work/exp/sel/select.c1.jsonl STEPS=1500 SAVE=500 SEED=2 INIT=/work/exp/sel/c1/checkpoint-001000 OUTD=/work/exp/sel/c1more bash train.sh
# and `bash probe.sh NAME CHECKPOINT` (TRAINPOOL=trainpool100.c1.jsonl for the c1 checkpoints).
