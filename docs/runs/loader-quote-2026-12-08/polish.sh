#!/bin/bash
# usage: polish.sh NAME RECORDS [SEED [SFT_DIR]]  — reproduce's polish (1,800 steps, cosine) from out/r43's HSA-SFT
set -e
cd /work/main
NAME=$1; REC=$2; SEED=${3:-1}
/work/bin44/teacher-distill train --learning-rate 1e-3 --warmup-steps 20 --seed $SEED --eval-steps 0 --overwrite-output-dir --batch-tokens 4096 \
  --lr-scheduler-type cosine --tokenizer out/r43/data/tokenizer --records $REC --max-steps 1800 --save-steps 1800 \
  --model-init $(ls -d ${4:-out/r43/hsa/sft}/checkpoint-* | tail -1) --out /work/x47/$NAME
