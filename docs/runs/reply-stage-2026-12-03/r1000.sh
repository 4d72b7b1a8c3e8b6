#!/bin/bash
# HSA-SFT (make run's recipe, 400 steps) from the reply stage at 1,000 steps, then probe and rollouts
set -ex
cd /work/main
E=/work/exp/R; C=out/curriculum; D=out/distill; TD=/work/snap/teacher-distill
$TD train --records $C/sft.reply.jsonl --dev-records $D/teacher.primary.jsonl --tokenizer $D/tokenizer \
  --max-steps 400 --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --batch-tokens 8192 \
  --gradient-accumulation-steps 2 --eval-steps 100 --save-steps 100 --seed 1 \
  --model-init $E/replylong/checkpoint-001000 --out $E/sft1000 --overwrite-output-dir > $E/sft1000.log 2>&1
M=$E/sft1000/checkpoint-000400
$TD eval --model sft1000=$M --set original=harness-samples/taolive --tasks $D/tasks.primary.jsonl --n 200 --seed 1 --products 600 \
  --episodes $E/eval1000.jsonl --summary $E/eval1000.json > $E/eval1000.md
$TD probe --model sft1000=$M --records primary=$D/teacher.primary.jsonl --records heldout=$D/teacher.heldout.jsonl \
  --summary $E/sft1000.probe.json > $E/sft1000.probe.md
