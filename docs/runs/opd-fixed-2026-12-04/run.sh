#!/bin/bash
# Issue 23's first criterion as the issue states it: OPD from the *fixed-harness* SFT model (not HSA-SFT)
# of the general-share run (out/exp-g128, docs/runs/general-share-2026-12-04), make reproduce's OPD recipe
# (gjsd β 0.5, base as the general teacher, the SFT model as the domain teacher for a quarter of the
# prompts, 100 steps, lr 1e-3), OPD seeds 1–3; IFEval-lite and Live-Stream QA-lite of each.
set -e
cd "$(dirname "$0")/../../.."
R=${R:-out/exp-g128}
B=target/release
ck() { ls -d $R/$1/checkpoint-* | tail -1; }
for seed in ${SEEDS:-1 2 3}; do
  s=opdfixed-s$seed
  $B/opd --model $(ck fixed) --teacher $(ck base) --prompts $R/data/general-train.jsonl \
    --max-steps 100 --save-steps 100 --learning-rate 1e-3 --seed $seed --loss gjsd \
    --domain-prompts $R/data/teacher.original.jsonl --domain-share 0.25 --domain-teacher $(ck fixed) \
    --out $R/$s --overwrite-output-dir 2> $R/$s.log
  $B/hat general eval --model $(ck $s) --input $R/data/general-eval.jsonl --max-new-tokens 160 \
    --answers $R/ifeval/$s.answers.jsonl > $R/ifeval/$s.json
  $B/teacher-distill eval --tasks $R/data/tasks.primary.jsonl --n 200 --max-tokens 160 \
    --faults timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03 --seed 1 --products 600 \
    --model $s=$(ck $s) --set primary=harness-samples/taolive --episodes $R/eval/$s.primary.jsonl > /dev/null
  echo "$s $(date +%T)"
done
echo OPD-FIXED-DONE
