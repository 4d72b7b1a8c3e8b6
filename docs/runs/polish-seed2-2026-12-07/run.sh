#!/bin/bash
# Second data-order seed of the adopted mixed polish (make reproduce's recipe rows, out/r43/data/polish.hsa.jsonl)
# from plan-quote's seed-2 HSA-SFT (out/x43/s2/pq/sft), and the old default's 600-step dialogue polish from it
# (baseline), each on the 200 primary tasks and under the 8 held-out variants.
set -euo pipefail
cd /work/main
TD=/work/bin44/teacher-distill
X=out/x44; mkdir -p $X
ck() { ls -d "$1"/checkpoint-* | tail -1; }
polish() { # INIT ROWS STEPS OUT
  [ -d $4/checkpoint-$(printf %06d $3) ] || $TD train --learning-rate 1e-3 --warmup-steps 20 --seed 2 --eval-steps 0 \
    --overwrite-output-dir --tokenizer out/r41/data/tokenizer --lr-scheduler-type cosine --batch-tokens 4096 \
    --model-init "$1" --records "$2" --max-steps $3 --save-steps $3 --out $4
}
HELDOUT=$(ls -d out/r41/data/heldout/variant-* | paste -sd,)
evaluate() { # NAME CHECKPOINT SET
  local dirs=harness-samples/taolive
  [ $3 = heldout ] && dirs=$HELDOUT
  $TD eval --tasks out/r41/data/tasks.primary.jsonl --n 200 --max-tokens 160 \
    --faults timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03 --seed 1 --products 600 \
    --model $1=$2 --set $3=$dirs --episodes $X/eval.$1.$3.jsonl --summary $X/eval.$1.$3.json > $X/eval.$1.$3.md
}
polish $(ck out/x43/s2/pq/sft) out/r43/data/polish.hsa.jsonl 1800 $X/s2mix
for set in primary heldout; do evaluate s2mix $(ck $X/s2mix) $set; done
polish $(ck out/x43/s2/pq/sft) out/pq41/data/dialog.jsonl 600 $X/s2p600
for set in primary heldout; do evaluate s2p600 $(ck $X/s2p600) $set; done
echo X44-DONE
