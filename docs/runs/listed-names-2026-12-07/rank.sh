#!/usr/bin/env bash
# The listed tool names ranked at the teacher's opening call (teacher-distill probe --rank-names), on the
# held-out-variant records of the reproduce chain's tasks, for its fixed-harness SFT and HSA-SFT models.
set -euo pipefail
R=${R:-out/r37}
BIN=${BIN:-target/release}
ck() { ls -d "$R/$1"/checkpoint-* | tail -1; }
"$BIN"/teacher-distill probe --model "fixed=$(ck fixed)" --model "hsa=$(ck hsa)" \
  --records "heldout=$R/data/teacher.heldout.jsonl" --rank-names --summary "$R/eval/rank.heldout.json"
