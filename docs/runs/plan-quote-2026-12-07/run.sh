#!/usr/bin/env bash
# Plan-then-quote, second try (docs/learning-default.md, forty-first session). The thirty-ninth session's
# arm (`docs/runs/reply-polish-2026-12-07/plan-quote.sh`) quoted every row, the copy stage's too, and that
# copy stage never left its plateau (loss 0.30 at 300 steps against 0.071 unquoted), so no later stage
# copied. Here the copy stage is make reproduce's own (unquoted one-id rows, out/r41/copy), and every later
# stage trains on rows whose lookup calls are preceded by the plan (the message's calls by name) and the
# quote (the room-state entry, from the viewer's words to the id): `hat records cat --quote-evidence` as at
# b069c3a (HAT_PQ below: a hat binary built from that evidence.rs). Then lookup 800, base 1,000, HSA-SFT
# 200, polish 600 on a cosine — make reproduce's recipes, batches and seed — and the 200 primary tasks under
# the original harness and the 8 held-out variants, beside out/r41's polished HSA-SFT, paired.
set -euo pipefail
R=${R:-out/r41}
Q=${Q:-out/pq41}
BIN=${BIN:-target/release}
HAT_PQ=${HAT_PQ:?a hat binary whose --quote-evidence writes the plan, then the quote}
TD=$BIN/teacher-distill
D=$Q/data
mkdir -p $D
if [ ! -f $D/sft.hsa.jsonl ]; then
  for f in copy room dialog teacher.full.renamed teacher.first.renamed teacher.primary; do
    $HAT_PQ records cat --quote-evidence -i $R/data/$f.jsonl -o $D/$f.jsonl
  done
  cat $D/copy.jsonl $D/room.jsonl > $D/lookup.jsonl
  cat $D/lookup.jsonl $D/dialog.jsonl > $D/reply.jsonl
  cat $R/data/general-train.jsonl $D/reply.jsonl > $D/base-records.jsonl
  cat $D/teacher.full.renamed.jsonl $D/teacher.first.renamed.jsonl $D/reply.jsonl > $D/sft.hsa.jsonl
fi
FLAGS="--learning-rate 1e-3 --warmup-steps 20 --seed 1 --eval-steps 0 --overwrite-output-dir --batch-tokens 4096
  --tokenizer $R/data/tokenizer"
STAGE="$FLAGS --lr-scheduler-type constant_with_warmup"
SFT="--learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --batch-tokens 8192 --gradient-accumulation-steps 2
  --seed 1 --eval-steps 0 --overwrite-output-dir --mtp-loss-weight 0 --tokenizer $R/data/tokenizer"
ck() { ls -d "$1"/checkpoint-* | tail -1; }
[ -d $Q/lookup ] || $TD train $STAGE --model-init $(ck $R/copy) --records $D/lookup.jsonl --max-steps 800 --save-steps 800 --out $Q/lookup
[ -d $Q/base ] || $TD train $STAGE --model-init $(ck $Q/lookup) --records $D/base-records.jsonl --max-steps 1000 --save-steps 1000 --out $Q/base
[ -d $Q/hsa/sft ] || $TD train $SFT --model-init $(ck $Q/base) --records $D/sft.hsa.jsonl --max-steps 200 --save-steps 200 --out $Q/hsa/sft
[ -d $Q/hsa/checkpoint-000600 ] || $TD train $FLAGS --lr-scheduler-type cosine --model-init $(ck $Q/hsa/sft) \
  --records $D/dialog.jsonl --max-steps 600 --save-steps 600 --out $Q/hsa
# The teacher-forced and free-running probes on the quoted primary records (the quote's id, the call's id).
$TD probe --model plan-quote=$(ck $Q/hsa) --records primary=$D/teacher.primary.jsonl --free-running \
  --summary $Q/probe.json > $Q/probe.md
HELDOUT=$(ls -d $R/data/heldout/variant-* | paste -sd,)
for set in primary heldout; do
  case $set in primary) dirs=harness-samples/taolive ;; heldout) dirs=$HELDOUT ;; esac
  $TD eval --tasks $R/data/tasks.primary.jsonl --n 200 --max-tokens 160 \
    --faults timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03 --seed 1 --products 600 \
    --model hsa+polish=$(ck $R/hsa) --model plan-quote=$(ck $Q/hsa) \
    --set $set=$dirs --episodes $Q/eval.$set.jsonl --summary $Q/eval.$set.json > $Q/eval.$set.md
done
