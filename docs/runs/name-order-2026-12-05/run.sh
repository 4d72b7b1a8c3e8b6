#!/bin/bash
# Name copy with a tool listing in the system prompt: description before name (DF) against name before
# description (NF), same rows otherwise, same init (make reproduce's copy stage), same recipe as
# docs/runs/coined-names-2026-12-04/name-copy/run.sh. Usage: bash run.sh  (writes under /work/exp)
set -eo pipefail
cd /work/main
G=docs/runs/coined-names-2026-12-04/name-copy/gen.py
TD=target/release/teacher-distill; INIT=${INIT:-out/exp-g128/copy/checkpoint-000300}
STEPS=${STEPS:-1500}; SAVE=${SAVE:-300}
for d in ${ARMS:-DF NF}; do  # NF was stopped: DF showed no copying (docs/learning-default.md)
  N=/work/exp/$d; mkdir -p $N; o=name-first; [ $d = DF ] && o=description-first
  python3 $G 20000 1 train $o > $N/train.jsonl; python3 $G 200 2 eval $o > $N/eval.jsonl; python3 $G 200 3 train $o > $N/dev.jsonl
  $TD train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed 1 --eval-steps 0 \
    --overwrite-output-dir --batch-tokens 4096 --tokenizer out/exp-g128/data/tokenizer --model-init $INIT \
    --records $N/train.jsonl --max-steps $STEPS --save-steps $SAVE --out $N/run > $N/train.log 2>&1
  for s in $(seq $SAVE $SAVE $STEPS); do
    $TD probe --model $d$s=$N/run/checkpoint-$(printf %06d $s) --records heldout=$N/eval.jsonl --records train-syllables=$N/dev.jsonl \
      --summary $N/probe$s.json > $N/probe$s.md
  done
done
