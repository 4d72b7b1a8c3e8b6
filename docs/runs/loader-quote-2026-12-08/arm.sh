#!/bin/bash
# usage: arm.sh ARM [SEED]  — make reproduce's SFT (200 steps) and mixed polish (1,800) of ARM from out/r43's base
# on the loader-quoted rows in this directory, then the 200 primary tasks and the 8 held-out variants.
set -euo pipefail
cd /work/main
A=$1; S=${2:-1}; X=/work/x47/lq; TD=/work/bin44/teacher-distill; O=$X/$A.s$S
ck() { ls -d "$1"/checkpoint-* | tail -1; }
[ -d $O/sft/checkpoint-000200 ] || $TD train --tokenizer out/r43/data/tokenizer --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup \
  --batch-tokens 8192 --gradient-accumulation-steps 2 --seed $S --eval-steps 0 --overwrite-output-dir --mtp-loss-weight 0 \
  --records $X/sft.$A.jsonl --model-init $(ck out/r43/base) --max-steps 200 --save-steps 200 --out $O/sft
[ -d $O/checkpoint-001800 ] || $TD train --learning-rate 1e-3 --warmup-steps 20 --seed $S --eval-steps 0 --overwrite-output-dir \
  --batch-tokens 4096 --lr-scheduler-type cosine --tokenizer out/r43/data/tokenizer --records $X/polish.$A.jsonl \
  --max-steps 1800 --save-steps 1800 --model-init $(ck $O/sft) --out $O
for set in primary heldout; do /work/x47/eval.sh $A.s$S $(ck $O) $set; mv /work/x47/$A.s$S.$set.jsonl $X/; done
echo ARM-DONE $A $S
