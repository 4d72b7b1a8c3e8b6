#!/bin/bash
# make opd's previous default (reverse_kl, importance sampling, the base alone as teacher, 200 steps,
# lr 1e-3) from the same base and SFT, OPD seeds 2-3 (seed 1 is opd-lr1e-3 of the experiment).
set -eo pipefail
cd /work/runs/opdg/rkseeds
B=/work/main/target/release
D=/work/main/out/distill
R=/work/runs/opdg
for seed in ${SEEDS:-2 3}; do
  $B/opd --model $R/sft/checkpoint-000300 --teacher $R/base/checkpoint-002000 --prompts $R/general-train.jsonl \
    --eval-steps 0 --max-steps 200 --save-steps 200 --learning-rate 1e-3 --seed $seed --out rk-s$seed --overwrite-output-dir 2> rk-s$seed.log
  $B/hat general eval --model rk-s$seed/checkpoint-000200 --input $R/general-eval.jsonl --limit 200 \
    --answers s$seed-answers.jsonl > s$seed-ifeval.json 2> /dev/null
  $B/hat general recovery $R/base-answers.jsonl $R/sft-answers.jsonl s$seed-answers.jsonl 2> s$seed-recovery.md > s$seed-recovery.json
  $B/teacher-distill eval --model sft=$R/sft/checkpoint-000300 --model rk-s$seed=rk-s$seed/checkpoint-000200 \
    --set original=/work/main/harness-samples/taolive --tasks $D/tasks.primary.jsonl --n 200 --seed 1 --products 600 \
    --episodes eval-s$seed.jsonl > eval-s$seed.md 2> eval-s$seed.log
  echo "seed $seed done $(date +%T)"
done
