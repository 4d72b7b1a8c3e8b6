#!/usr/bin/env bash
set -euo pipefail
cd /work/main
D=/tmp/exp/dB
F=timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03
H="--harness harness-samples/taolive"
for i in 000 001 002 003 004 005 006 007; do H="$H --harness $D/teacher.jsonl.variants/variant-$i"; done
/tmp/exp/grpo-train --model /tmp/exp/runD/checkpoint-000400 --tasks $D/tasks.train.jsonl $H --faults $F --products 600 \
  --max-steps 30 --num-generations 4 --tasks-per-step 8 --learning-rate 5e-4 --seed 1 --save-steps 10 \
  --out /tmp/exp/rl1 --overwrite-output-dir
HV=$(ls -d $D/heldout-variants/variant-* | paste -sd,)
/tmp/exp/teacher-distill-rl eval --model sft=/tmp/exp/runD/checkpoint-000400 --model rl=$(ls -d /tmp/exp/rl1/checkpoint-* | tail -1) \
  --set heldout=$HV --set original=harness-samples/taolive --tasks $D/tasks.primary.jsonl --n 200 --faults $F --seed 1 --products 600 \
  --episodes /tmp/exp/rl1/eval.jsonl --summary /tmp/exp/rl1/eval.json > /tmp/exp/rl1/eval.md
