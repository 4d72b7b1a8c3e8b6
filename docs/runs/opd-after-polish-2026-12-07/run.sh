#!/bin/bash
# OPD after the mixed polish (the seventh run, out/r43): reproduce's OPD stage cost the polished HSA-SFT
# 7 points on Live-Stream QA-lite and 19.5 on Synthetic LS-QA. Arms from the same HSA model, the same
# teacher, prompts and seed, 100 steps each: ARM=LR:DOMAIN_SHARE. Each on the primary and held-out-phrasing
# sets and IFEval-lite, as reproduce's eval stage plays them.
set -euo pipefail
cd /work/main
B=${B:-/work/bin44}
R=out/r43
X=out/x46
ck() { ls -d "$1"/checkpoint-* | tail -1; }
F=timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03
for arm in "$@"; do
  lr=${arm%%:*}; share=${arm#*:}; D=$X/opd-$lr-$share
  [ -d $D/checkpoint-000100 ] || $B/opd --model $(ck $R/hsa) --teacher $(ck $R/base) --prompts $R/data/general-train.jsonl \
    --max-steps 100 --save-steps 100 --learning-rate $lr --seed 1 --loss gjsd --domain-prompts $R/data/teacher.original.jsonl \
    --domain-share $share --domain-teacher $(ck $R/hsa) --out $D --overwrite-output-dir
  for set in primary phrasings; do
    $B/teacher-distill eval --tasks $R/data/tasks.$set.jsonl --n 200 --max-tokens 160 --faults $F --seed 1 --products 600 \
      --model opd=$(ck $D) --set $set=harness-samples/taolive --episodes $D/eval.$set.jsonl > $D/eval.$set.md
  done
  $B/hat general eval --model $(ck $D) --input $R/data/general-eval.jsonl --max-new-tokens 160 \
    --answers $D/ifeval.answers.jsonl > $D/ifeval.json
done
echo OPD-ARMS-DONE
