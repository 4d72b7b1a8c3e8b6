#!/bin/bash
# E5 training and probes (after data.sh): R's SFT recipe on the coined-name HSA data, from R's reply-600.
set -eo pipefail
cd /work/main
TD=/work/tgt-exp/release/teacher-distill
E=/work/exp/E5; D=out/distill; C=out/curriculum
test -d $E/sft/checkpoint-000400 || $TD train --records $E/sft.jsonl --tokenizer $D/tokenizer --max-steps 400 --learning-rate 1e-3 \
  --lr-scheduler-type constant_with_warmup --batch-tokens 8192 --gradient-accumulation-steps 2 --eval-steps 0 --save-steps 200 \
  --seed 1 --model-init /work/exp/R/reply/checkpoint-000600 --out $E/sft --overwrite-output-dir > $E/sft.log 2>&1
$TD probe --model E5=$E/sft/checkpoint-000400 --records heldout=$D/teacher.heldout.jsonl --records primary=$D/teacher.primary.jsonl \
  --free-running --summary $E/free.json > $E/free.md
python3 scripts/renamed_names.py $D/teacher.heldout.jsonl /work/exp/Q2/heldout.free.json $E/free.json | tee $E/renamed.md
