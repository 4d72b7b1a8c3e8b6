#!/usr/bin/env bash
# The reply polish on the second harness: `HARNESS=harness-samples/aftersales make reproduce`'s SFT
# models (out/as/reproduce, 2026-12-07) polished as make reproduce now polishes (600 steps of the dialogue
# rows, 1e-3 decayed on a cosine, seed 1), then played on its 200 primary tasks under the aftersales harness and its 8
# held-out variants, paired against the unpolished models. A second seed of the HSA-SFT polish was
# trained and played on the primary set by hand the same way (--seed 2, out/rp39/as/hsa-s2).
set -euo pipefail
R=${R:-out/as/reproduce}
O=${O:-out/rp39/as}
BIN=${BIN:-target/release}
TD=$BIN/teacher-distill
STAGE="--learning-rate 1e-3 --lr-scheduler-type cosine --warmup-steps 20 --eval-steps 0
  --overwrite-output-dir --batch-tokens 4096 --tokenizer $R/data/tokenizer --records $R/data/dialog.jsonl
  --seed 1 --max-steps 600 --save-steps 600"
for arm in fixed hsa; do
  $TD train $STAGE --model-init $R/$arm/checkpoint-000200 --out $O/$arm
done
HELDOUT=$(ls -d $R/data/heldout/variant-* | paste -sd,)
for set in primary heldout; do
  case $set in primary) dirs=harness-samples/aftersales ;; heldout) dirs=$HELDOUT ;; esac
  $TD eval --tasks $R/data/tasks.primary.jsonl --n 200 --max-tokens 160 \
    --faults timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03 --seed 1 --products 600 \
    --model fixed=$R/fixed/checkpoint-000200 --model fixed+polish=$O/fixed/checkpoint-000600 \
    --model hsa=$R/hsa/checkpoint-000200 --model hsa+polish=$O/hsa/checkpoint-000600 --set $set=$dirs \
    --episodes $O/eval.$set.jsonl --summary $O/eval.$set.json > $O/eval.$set.md
done
