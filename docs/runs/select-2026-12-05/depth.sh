#!/bin/bash
# Does attention depth speed up selection by description? SNQ rows (docs/runs/name-order-2026-12-05, gen.py
# ... none 4 shuffled-names+quoted-questions) from scratch: ARM=tiny-2attn (control) or ARM=tiny-4attn.json
# (tiny with all four layers full attention). Usage: ARM=... NAME=... STEPS=2400 SAVE=600 bash depth.sh (stopped at ~1,900 steps: both on the plateau)
# Rows in $S: gen.py 20000 1 train / 200 2 eval / 200 3 train, each "none 4 shuffled-names+quoted-questions";
# tiny-4attn.json beside this script.
set -eo pipefail
cd /work/main
TD=target/release/teacher-distill; S=/work/exp/SNQs; N=$S/$NAME; mkdir -p $N
$TD train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed 1 --eval-steps 0 \
  --overwrite-output-dir --batch-tokens 4096 --tokenizer out/exp-g128/data/tokenizer --model-init $ARM \
  --records $S/train.jsonl --max-steps $STEPS --save-steps $SAVE --out $N/run > $N/run.log 2>&1
for s in $(seq $SAVE $SAVE $STEPS); do
  $TD probe --model $NAME$s=$N/run/checkpoint-$(printf %06d $s) --records heldout=$S/eval.jsonl \
    --records train-syllables=$S/dev.jsonl --summary $N/probe$s.json > $N/probe$s.md
done
