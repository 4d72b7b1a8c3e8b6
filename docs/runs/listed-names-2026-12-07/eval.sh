#!/usr/bin/env bash
# The reproduce chain's fixed-harness SFT and HSA-SFT models, each played free and with
# `--tool-names listed`, on the 200 primary tasks under the 8 held-out variants and under the original
# harness (make reproduce's eval, the same tasks, faults and seed). R = the chain's REPRO directory.
set -euo pipefail
R=${R:-out/r37}
BIN=${BIN:-target/release}
ck() { ls -d "$R/$1"/checkpoint-* | tail -1; }
HELDOUT=$(ls -d "$R"/data/heldout/variant-* | paste -sd,)
mkdir -p "$R/eval"
for set in ${SETS:-heldout primary}; do
  case $set in heldout) dirs=$HELDOUT ;; primary) dirs=harness-samples/taolive ;; esac
  for stage in ${STAGES:-fixed hsa}; do
    "$BIN"/teacher-distill eval --tasks "$R/data/tasks.primary.jsonl" --n 200 --max-tokens 160 \
      --faults timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03 --seed 1 --products 600 \
      --model "$stage=$(ck $stage)" --model "$stage-listed=$(ck $stage)" \
      --tool-names free --tool-names listed --set "$set=$dirs" \
      --episodes "$R/eval/$stage.listed-pair.$set.jsonl" | tee "$R/eval/$stage.listed-pair.$set.md"
  done
done
