#!/bin/bash
# opd through the binaries: in-process teacher vs our serve as the teacher (random tiny checkpoints,
# 4 steps each), the refused combinations, a raw prompt_logprobs request, then IFEval-lite answers of
# the student and the OPD checkpoint and their paired comparison. Debug binaries (cargo build --bin
# hat --bin opd --bin serve). Output in $OUT (default /tmp/onp_demo/out).
set -euo pipefail
cd /work/wt-onp
B=target/debug
D=${OUT:-/tmp/onp_demo/out}
rm -rf $D; mkdir -p $D
N="nice -n 19"
$N $B/hat general prompts --split train --n 400 --seed 1 -o $D/gtrain.jsonl
$N $B/hat general prompts --split eval --n 60 --seed 1 -o $D/geval.jsonl
$N $B/hat tokenizer train --text $D/gtrain.jsonl --vocab-size 1024 --out $D/tok
$N $B/hat model init --preset tiny --tokenizer $D/tok --out $D/student --seed 1
$N $B/hat model init --preset tiny --tokenizer $D/tok --out $D/teacher --seed 2
COMMON="--model $D/student --prompts $D/gtrain.jsonl --max-steps 4 --prompts-per-step 4 --num-generations 2 --max-new-tokens 48 --learning-rate 1e-3 --seed 7 --save-steps 0"
/usr/bin/time -f "in-process opd: %e s" $N $B/opd $COMMON --teacher $D/teacher --out $D/opd-local
$N $B/serve --model $D/teacher --port 18761 --served-model-name teacher > $D/serve.log 2>&1 &
SERVE=$!
for i in $(seq 60); do curl -sf localhost:18761/health >/dev/null && break; sleep 1; done
/usr/bin/time -f "endpoint opd: %e s" $N $B/opd $COMMON --teacher-url http://127.0.0.1:18761/v1 --teacher-model teacher --out $D/opd-endpoint
# refused combinations
$N $B/opd $COMMON --teacher-url http://127.0.0.1:18761/v1 --teacher-model teacher --loss gjsd --out $D/x 2>&1 | tail -1 || true
$N $B/opd $COMMON --teacher-url http://127.0.0.1:18762/v1 --teacher-model teacher --teacher-retries 1 --out $D/y 2>&1 | tail -1 || true
curl -s localhost:18761/v1/completions -d '{"prompt": "Write about tea.", "max_tokens": 0, "prompt_logprobs": 2}' | head -c 600; echo
curl -s localhost:18761/v1/completions -d '{"prompt": "hi", "prompt_logprobs": 21}'; echo
kill $SERVE
python3 - "$D" <<'PY'
import json, sys
for name in ["opd-local", "opd-endpoint"]:
    rows = [json.loads(l) for l in open(f"{sys.argv[1]}/{name}/metrics.jsonl")]
    print(name, [(r["step"], round(r["reverse_kl"], 7), round(r["loss"], 7), r["tokens_per_s/teacher"]) for r in rows])
PY
$N $B/hat general eval --model $D/student --input $D/geval.jsonl --limit 60 --max-new-tokens 48 --answers $D/student-answers.jsonl
$N $B/hat general eval --model $D/opd-local/checkpoint-000004 --input $D/geval.jsonl --limit 60 --max-new-tokens 48 --answers $D/opd-answers.jsonl
$N $B/hat general compare $D/student-answers.jsonl $D/opd-answers.jsonl --level instruction --mode loose
