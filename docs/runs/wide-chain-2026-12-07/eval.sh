#!/usr/bin/env bash
# The wide chain's HSA-SFT beside out/r37's (64 wide) on reproduce's 200 primary tasks under the original
# harness (SETS=heldout: the 8 held-out variants), same faults and seed; then the teacher-forced probe
# (free-running openings too) for product ids (scripts/product_id_copy.py) and reply numbers
# (scripts/reply_facts.py).
set -euo pipefail
W=${W:-out/w128}
R=${R:-out/r37}
BIN=${BIN:-target/release}
ck() { ls -d "$1"/checkpoint-* | tail -1; }
HELDOUT=$(ls -d "$R"/data/heldout/variant-* | paste -sd,)
mkdir -p "$W/eval"
for set in ${SETS:-primary}; do
  case $set in heldout) dirs=$HELDOUT ;; primary) dirs=harness-samples/taolive ;; esac
  "$BIN"/teacher-distill eval --tasks "$R/data/tasks.primary.jsonl" --n 200 --max-tokens 160 \
    --faults timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03 --seed 1 --products 600 \
    --model "hsa64=$(ck $R/hsa)" --model "hsa128=$(ck $W/hsa)" --set "$set=$dirs" \
    --episodes "$W/eval/hsa.$set.jsonl" | tee "$W/eval/hsa.$set.md"
done
"$BIN"/teacher-distill probe --model "hsa64=$(ck $R/hsa)" --model "hsa128=$(ck $W/hsa)" \
  --records primary="$R/data/teacher.primary.jsonl" --free-running --summary "$W/eval/probe.json" | tee "$W/eval/probe.md"
python3 scripts/product_id_copy.py "$W/eval/probe.json" "$R/data/teacher.primary.jsonl" | tee "$W/eval/ids.txt"
python3 scripts/reply_facts.py "$W/eval/probe.json" "$R/data/teacher.primary.jsonl" | tee "$W/eval/facts.txt"
