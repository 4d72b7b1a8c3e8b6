#!/bin/bash
# make opd's OPD stage (gjsd beta 0.5, the SFT model as the domain teacher, domain share 0.25, seed 1)
# for 20 steps twice: the base teacher in-process (full vocabulary) and the base behind our `serve`
# (top 20 of its prompt_logprobs + the rest), from the same SFT checkpoint.
set -eo pipefail
cd /work/runs/opdg/endpoint
B=/work/main/target/release
D=/work/main/out/distill
R=/work/runs/opdg
COMMON="--loss gjsd --beta 0.5 --temperature 1 --model $R/sft/checkpoint-000300 --domain-teacher $R/sft/checkpoint-000300
  --prompts $R/general-train.jsonl --domain-prompts $D/teacher.original.jsonl --domain-share 0.25 --eval-steps 0
  --max-steps 20 --save-steps 0 --learning-rate 1e-3 --seed 1 --overwrite-output-dir"
/usr/bin/time -f "in-process: %e s" $B/opd $COMMON --teacher $R/base/checkpoint-002000 --out local 2> local.log
$B/serve --model $R/base/checkpoint-002000 --port 18771 --served-model-name base --max-model-len 4096 > serve.log 2>&1 &
SERVE=$!
trap "kill $SERVE" EXIT
for i in $(seq 120); do curl -sf localhost:18771/health > /dev/null && break; sleep 1; done
/usr/bin/time -f "endpoint: %e s" $B/opd $COMMON --teacher-url http://127.0.0.1:18771/v1 --teacher-model base \
  --teacher-top-k 20 --out endpoint 2> endpoint.log
python3 - <<'PY'
import json
rows = {n: [json.loads(l) for l in open(f"{n}/metrics.jsonl")] for n in ["local", "endpoint"]}
print("| step | reverse KL in-process | reverse KL endpoint | loss (full JSD) | loss (top 20 + rest) | teacher top-20 mass | mean length in-process / endpoint |")
print("|---|---|---|---|---|---|---|")
for a, b in zip(rows["local"], rows["endpoint"]):
    print(f"| {a['step']} | {a['reverse_kl']:.4f} | {b['reverse_kl']:.4f} | {a['loss']:.4f} | {b['loss']:.4f} | {b.get('teacher/top_k_mass', float('nan')):.4f} | {a['completions/mean_length']:.1f} / {b['completions/mean_length']:.1f} |")
PY
