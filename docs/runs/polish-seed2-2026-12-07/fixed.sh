#!/bin/bash
# The fixed-harness arm at seed 2 under the adopted polish, paired with run.sh's HSA arm (s2mix): fixed-harness
# SFT from the chain's base (out/r42/base, the base of out/x43/s2/pq/sft) on make reproduce's fixed rows,
# with the recipe of out/x43/s2/pq/sft (plan-reply-2026-12-07/run.sh's `sft`: 200 steps, 8,192-token batches,
# 2 accumulated, warm-up 20, seed 2), then the mixed polish on make reproduce's polish.fixed.jsonl, seed 2.
set -euo pipefail
cd /work/main
TD=${TD:-/work/bin44/teacher-distill}
X=out/x44
ck() { ls -d "$1"/checkpoint-* | tail -1; }
[ -d $X/s2fixed/sft/checkpoint-000200 ] || $TD train --learning-rate 1e-3 --warmup-steps 20 --seed 2 --eval-steps 0 \
  --overwrite-output-dir --tokenizer out/r41/data/tokenizer --lr-scheduler-type constant_with_warmup \
  --batch-tokens 8192 --gradient-accumulation-steps 2 --mtp-loss-weight 0 \
  --model-init $(ck out/r42/base) --records out/r42/data/sft.fixed.jsonl --max-steps 200 --save-steps 200 --out $X/s2fixed/sft
[ -d $X/s2fixed/checkpoint-001800 ] || $TD train --learning-rate 1e-3 --warmup-steps 20 --seed 2 --eval-steps 0 \
  --overwrite-output-dir --tokenizer out/r41/data/tokenizer --lr-scheduler-type cosine --batch-tokens 4096 \
  --model-init $(ck $X/s2fixed/sft) --records out/r43/data/polish.fixed.jsonl --max-steps 1800 --save-steps 1800 --out $X/s2fixed
HELDOUT=$(ls -d out/r41/data/heldout/variant-* | paste -sd,)
for set in primary heldout; do
  dirs=harness-samples/taolive; [ $set = heldout ] && dirs=$HELDOUT
  $TD eval --tasks out/r41/data/tasks.primary.jsonl --n 200 --max-tokens 160 \
    --faults timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03 --seed 1 --products 600 \
    --model s2fixed=$(ck $X/s2fixed) --set $set=$dirs --episodes $X/eval.s2fixed.$set.jsonl \
    --summary $X/eval.s2fixed.$set.json > $X/eval.s2fixed.$set.md
done
echo FIXED-DONE
