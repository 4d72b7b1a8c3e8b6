#!/bin/bash
# make opd's new default OPD recipe (gjsd beta 0.5, the SFT model as domain teacher, domain share 0.25,
# 100 steps, lr 1e-3 decaying to 0) from the same base and SFT checkpoints, OPD seeds 1-3.
set -eo pipefail
cd /work/runs/opdg/seeds
B=/work/main/target/release
D=/work/main/out/distill
R=/work/runs/opdg
for seed in ${SEEDS:-1 2 3}; do
  $B/opd --loss gjsd --beta 0.5 --temperature 1 --model $R/sft/checkpoint-000300 --teacher $R/base/checkpoint-002000 \
    --domain-teacher $R/sft/checkpoint-000300 --prompts $R/general-train.jsonl --domain-prompts $D/teacher.original.jsonl \
    --domain-share 0.25 --eval-steps 0 --max-steps 100 --save-steps 100 \
    --learning-rate 1e-3 --seed $seed --out opd-s$seed --overwrite-output-dir 2> opd-s$seed.log
  $B/hat general eval --model opd-s$seed/checkpoint-000100 --input $R/general-eval.jsonl --limit 200 \
    --answers s$seed-answers.jsonl > s$seed-ifeval.json 2> /dev/null
  hat general recovery $R/base-answers.jsonl $R/sft-answers.jsonl s$seed-answers.jsonl 2> s$seed-recovery.md > /dev/null
  $B/teacher-distill eval --model sft=$R/sft/checkpoint-000300 --model opd-s$seed=opd-s$seed/checkpoint-000100 \
    --set original=/work/main/harness-samples/taolive --tasks $D/tasks.primary.jsonl --n 200 --seed 1 --products 600 \
    --episodes eval-s$seed.jsonl > eval-s$seed.md 2> eval-s$seed.log
  echo "seed $seed done $(date +%T)"
done
