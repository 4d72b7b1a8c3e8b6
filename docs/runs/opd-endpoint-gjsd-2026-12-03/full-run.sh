#!/bin/bash
# make opd's default OPD recipe (seed 1, 100 steps) with the base behind our serve (top 20 + rest),
# then IFEval-lite, the recovered share and QA-lite, as for the in-process seeds.
set -eo pipefail
cd /work/runs/opdg/endpoint-full
B=/work/main/target/release
D=/work/main/out/distill
R=/work/runs/opdg
$B/serve --model $R/base/checkpoint-002000 --port 18772 --served-model-name base --max-model-len 4096 > serve.log 2>&1 &
SERVE=$!
trap "kill $SERVE" EXIT
for i in $(seq 120); do curl -sf localhost:18772/health > /dev/null && break; sleep 1; done
$B/opd --loss gjsd --beta 0.5 --temperature 1 --model $R/sft/checkpoint-000300 --teacher-url http://127.0.0.1:18772/v1 \
  --teacher-model base --teacher-top-k 20 --domain-teacher $R/sft/checkpoint-000300 --prompts $R/general-train.jsonl \
  --domain-prompts $D/teacher.original.jsonl --domain-share 0.25 --eval-steps 0 --max-steps 100 --save-steps 100 \
  --learning-rate 1e-3 --seed 1 --out opd --overwrite-output-dir 2> opd.log
kill $SERVE
$B/hat general eval --model opd/checkpoint-000100 --input $R/general-eval.jsonl --limit 200 --answers answers.jsonl > ifeval.json 2> /dev/null
$B/hat general recovery $R/base-answers.jsonl $R/sft-answers.jsonl answers.jsonl 2> recovery.md > /dev/null
$B/teacher-distill eval --model sft=$R/sft/checkpoint-000300 --model opd-endpoint=opd/checkpoint-000100 \
  --set original=/work/main/harness-samples/taolive --tasks $D/tasks.primary.jsonl --n 200 --seed 1 --products 600 \
  --episodes eval.jsonl > eval.md 2> eval.log
echo "done $(date +%T)"
