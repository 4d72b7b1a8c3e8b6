#!/bin/bash
# Name-copy probes (docs/learning-default.md, twentieth session), each arm NAME:LISTING:TOOLS for gen.py:
#   DF  the tools also listed in the system prompt, description before name (4 tools)
#   NF  the same listing, name before description (the control; stopped, see the doc)
#   T1  one tool per row, no listing: copying a listed name without having to select it
# Same init (make reproduce's copy stage) and recipe as docs/runs/coined-names-2026-12-04/name-copy/run.sh.
#   ARMS="T1:none:1" STEPS=600 bash run.sh      (writes under /work/exp)
set -eo pipefail
cd /work/main
G=docs/runs/coined-names-2026-12-04/name-copy/gen.py
TD=target/release/teacher-distill; INIT=${INIT:-out/exp-g128/copy/checkpoint-000300}
STEPS=${STEPS:-1500}; SAVE=${SAVE:-300}
for arm in ${ARMS:-DF:description-first:4 NF:name-first:4}; do
  IFS=: read d listing tools <<< "$arm"
  N=/work/exp/$d; mkdir -p $N
  python3 $G 20000 1 train $listing $tools > $N/train.jsonl; python3 $G 200 2 eval $listing $tools > $N/eval.jsonl
  python3 $G 200 3 train $listing $tools > $N/dev.jsonl
  $TD train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed 1 --eval-steps 0 \
    --overwrite-output-dir --batch-tokens 4096 --tokenizer out/exp-g128/data/tokenizer --model-init $INIT \
    --records $N/train.jsonl --max-steps $STEPS --save-steps $SAVE --out $N/run > $N/train.log 2>&1
  for s in $(seq $SAVE $SAVE $STEPS); do
    $TD probe --model $d$s=$N/run/checkpoint-$(printf %06d $s) --records heldout=$N/eval.jsonl --records train-syllables=$N/dev.jsonl \
      --summary $N/probe$s.json > $N/probe$s.md
  done
done
