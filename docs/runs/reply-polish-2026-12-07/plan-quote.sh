#!/usr/bin/env bash
# The plan-then-quote arm (docs/learning-default.md, thirty-ninth session): out/r37's rows with
# `hat records cat --quote-evidence` (reasoning that names the calls, then quotes the room-state entry
# the product id is read from), and make reproduce's chain on them — copy 300, lookup 800, base 1,000,
# HSA-SFT 200, reply polish 600, the same recipes, batches and seed — then the 200 primary tasks under
# the original harness and the 8 held-out variants, paired against out/r37's HSA-SFT with the polish.
# Ran at b069c3a, whose --quote-evidence opened the reasoning with the plan (reverted after this run:
# the arm failed), with the polish then held at 1e-3; the held-out set was not played.
set -euo pipefail
R=${R:-out/r37}
Q=${Q:-out/q39}
BIN=${BIN:-target/release}
TD=$BIN/teacher-distill
D=$Q/data
mkdir -p $D
if [ ! -f $D/sft.hsa.jsonl ]; then
  for f in copy.current copy room dialog teacher.full.renamed teacher.first.renamed teacher.primary; do
    $BIN/hat records cat --quote-evidence -i $R/data/$f.jsonl -o $D/$f.jsonl
  done
  cat $D/copy.jsonl $D/room.jsonl > $D/lookup.jsonl
  cat $D/lookup.jsonl $D/dialog.jsonl > $D/reply.jsonl
  cat $R/data/general-train.jsonl $D/reply.jsonl > $D/base-records.jsonl
  cat $D/teacher.full.renamed.jsonl $D/teacher.first.renamed.jsonl $D/reply.jsonl > $D/sft.hsa.jsonl
fi
STAGE="--learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed 1 --eval-steps 0
  --overwrite-output-dir --batch-tokens 4096 --tokenizer $R/data/tokenizer"
SFT="--learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --batch-tokens 8192 --gradient-accumulation-steps 2
  --seed 1 --eval-steps 0 --overwrite-output-dir --mtp-loss-weight 0 --tokenizer $R/data/tokenizer"
ck() { ls -d "$1"/checkpoint-* | tail -1; }
[ -d $Q/copy ] || $TD train $STAGE --model-init tiny-2attn --records $D/copy.current.jsonl --max-steps 300 --save-steps 300 --out $Q/copy
[ -d $Q/lookup ] || $TD train $STAGE --model-init $(ck $Q/copy) --records $D/lookup.jsonl --max-steps 800 --save-steps 800 --out $Q/lookup
[ -d $Q/base ] || $TD train $STAGE --model-init $(ck $Q/lookup) --records $D/base-records.jsonl --max-steps 1000 --save-steps 1000 --out $Q/base
[ -d $Q/hsa/sft ] || $TD train $SFT --model-init $(ck $Q/base) --records $D/sft.hsa.jsonl --max-steps 200 --save-steps 200 --out $Q/hsa/sft
[ -d $Q/hsa/checkpoint-000600 ] || $TD train $STAGE --model-init $(ck $Q/hsa/sft) --records $D/dialog.jsonl --max-steps 600 --save-steps 600 --out $Q/hsa
HELDOUT=$(ls -d $R/data/heldout/variant-* | paste -sd,)
for set in primary heldout; do
  case $set in primary) dirs=harness-samples/taolive ;; heldout) dirs=$HELDOUT ;; esac
  $TD eval --tasks $R/data/tasks.primary.jsonl --n 200 --max-tokens 160 \
    --faults timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03 --seed 1 --products 600 \
    --model hsa+polish=${POLISHED:-out/rp39/dialog600/checkpoint-000600} --model plan-quote=$(ck $Q/hsa) \
    --set $set=$dirs --episodes $Q/eval.$set.jsonl --summary $Q/eval.$set.json > $Q/eval.$set.md
done
$TD probe --model plan-quote=$(ck $Q/hsa) --records primary=$D/teacher.primary.jsonl --free-running \
  --summary $Q/probe.json > $Q/probe.md
python3 scripts/product_id_copy.py $Q/probe.json $D/teacher.primary.jsonl > $Q/ids.txt
