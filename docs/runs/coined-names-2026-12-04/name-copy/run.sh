#!/bin/bash
# Can the copy-trained model (R's copy stage) learn to copy a coined tool name from its tool list?
set -eo pipefail
cd /work/main
TD=target/release/teacher-distill; N=/work/exp/N
$TD train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed 1 --eval-steps 0 \
  --overwrite-output-dir --batch-tokens 4096 --tokenizer out/distill/tokenizer --model-init $INIT \
  --records $N/train.jsonl --max-steps $STEPS --save-steps $SAVE --out $N/$OUT > $N/train.log 2>&1
for s in $PROBE_STEPS; do
  $TD probe --model $OUT$s=$N/$OUT/checkpoint-$(printf %06d $s) --records heldout=$N/eval.jsonl --records train-syllables=$N/dev.jsonl \
    --summary $N/$OUT.probe$s.json > $N/$OUT.probe$s.md
done
