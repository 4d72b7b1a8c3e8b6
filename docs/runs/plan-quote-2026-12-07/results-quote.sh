#!/usr/bin/env bash
# Plan-quote + result quotes (docs/learning-default.md, forty-first session): the plan-quote chain's rows
# (out/pq41/data, from run.sh) with `hat records cat --quote-results` on every row that ends with a reply
# (the reply's reasoning lists the tool-result fields it states), from the plan-quote lookup checkpoint
# (its rows end with calls, so they are unchanged): base 1,000, HSA-SFT 200, polish 600 on a cosine, then
# the 200 primary tasks under the original harness, paired against the plan-quote model.
# Ran at 7836d70 (`--quote-results` was reverted after this run: the arm failed). The eval ran for the
# results-quote model alone; the plan-quote model's episodes are run.sh's (same tasks, seed and faults).
# Its data were made before 7836d70's fix, so a number whose digits sit inside another stated value
# (eta 4 beside stock 14) was left out of a few quotes.
set -euo pipefail
P=${P:-out/pq41}
R=${R:-out/r41}
Q=${Q:-out/rq41}
BIN=${BIN:-target/release}
TD=$BIN/teacher-distill
D=$Q/data
mkdir -p $D
if [ ! -f $D/sft.hsa.jsonl ]; then
  for f in dialog teacher.full.renamed teacher.first.renamed; do
    $BIN/hat records cat --quote-results -i $P/data/$f.jsonl -o $D/$f.jsonl
  done
  cat $P/data/lookup.jsonl $D/dialog.jsonl > $D/reply.jsonl
  cat $R/data/general-train.jsonl $D/reply.jsonl > $D/base-records.jsonl
  cat $D/teacher.full.renamed.jsonl $D/teacher.first.renamed.jsonl $D/reply.jsonl > $D/sft.hsa.jsonl
fi
FLAGS="--learning-rate 1e-3 --warmup-steps 20 --seed 1 --eval-steps 0 --overwrite-output-dir --batch-tokens 4096
  --tokenizer $R/data/tokenizer"
SFT="--learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --batch-tokens 8192 --gradient-accumulation-steps 2
  --seed 1 --eval-steps 0 --overwrite-output-dir --mtp-loss-weight 0 --tokenizer $R/data/tokenizer"
ck() { ls -d "$1"/checkpoint-* | tail -1; }
[ -d $Q/base ] || $TD train $FLAGS --lr-scheduler-type constant_with_warmup --model-init $(ck $P/lookup) \
  --records $D/base-records.jsonl --max-steps 1000 --save-steps 1000 --out $Q/base
[ -d $Q/hsa/sft ] || $TD train $SFT --model-init $(ck $Q/base) --records $D/sft.hsa.jsonl --max-steps 200 --save-steps 200 --out $Q/hsa/sft
[ -d $Q/hsa/checkpoint-000600 ] || $TD train $FLAGS --lr-scheduler-type cosine --model-init $(ck $Q/hsa/sft) \
  --records $D/dialog.jsonl --max-steps 600 --save-steps 600 --out $Q/hsa
$TD eval --tasks $R/data/tasks.primary.jsonl --n 200 --max-tokens 160 \
  --faults timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03 --seed 1 --products 600 \
  --model plan-quote=$(ck $P/hsa) --model results-quote=$(ck $Q/hsa) \
  --set primary=harness-samples/taolive --episodes $Q/eval.primary.jsonl --summary $Q/eval.primary.json > $Q/eval.primary.md
