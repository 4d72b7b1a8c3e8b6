#!/bin/bash
# The renamed-names probe on make reproduce's SFT arms (after the run).
set -eo pipefail
cd /work/main
TD=target/release/teacher-distill; R=out/reproduce
$TD probe --model fixed=$(ls -d $R/fixed/checkpoint-* | tail -1) --model hsa=$(ls -d $R/hsa/checkpoint-* | tail -1) \
  --model rl=$(ls -d $R/rl/checkpoint-* | tail -1) \
  --records heldout=$R/data/teacher.heldout.jsonl --free-running --summary $R/heldout.free.json > $R/heldout.free.md
python3 scripts/renamed_names.py $R/data/teacher.heldout.jsonl $R/heldout.free.json | tee $R/renamed.md
