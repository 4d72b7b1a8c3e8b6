#!/bin/bash
# usage: sp.sh ARM [ROWS TAG] — the mixed polish (1,800 steps) of ARM's loader-quoted SFT model (ARM.s1/sft) on
# ROWS.ARM.jsonl (default spolish) into ARM.TAG (default sp):
# the dialogue rows keep the prompt's Skills section (fresh loader names in half of them for hsa), plus a third of
# the arm's quoted full episodes; then the 200 primary tasks and the 8 held-out variants.
set -euo pipefail
cd /work/main
A=$1; ROWS=${2:-spolish}; TAG=${3:-sp}; X=/work/x47/lq; TD=/work/bin47/teacher-distill; O=$X/$A.$TAG
ck() { ls -d "$1"/checkpoint-* | tail -1; }
while [ ! -d $X/$A.s1/checkpoint-001800 ]; do sleep 20; done
[ -d $O/checkpoint-001800 ] || $TD train --learning-rate 1e-3 --warmup-steps 20 --seed 1 --eval-steps 0 --overwrite-output-dir \
  --batch-tokens 4096 --lr-scheduler-type cosine --tokenizer out/r43/data/tokenizer --records $X/$ROWS.$A.jsonl \
  --max-steps 1800 --save-steps 1800 --model-init $(ck $X/$A.s1/sft) --out $O
for set in primary heldout; do /work/x47/eval.sh $A.$TAG $(ck $O) $set; mv /work/x47/$A.$TAG.$set.jsonl $X/; done
echo DONE $A $TAG
