#!/bin/bash
# csft.sh: the curriculum's SFT stage (docs/runs/curriculum-2026-12-02/run.sh) from B's lookup model BL/checkpoint-000800:
# make run's SFT recipe on the HSA records with product ids renamed per record + the base stage's rows; probe; eval
set -ex
M=/work/main; C=$M/out/curriculum; D=$M/out/distill; TD=/work/snap/teacher-distill; H=$M/harness-samples/taolive
cd /work/exp
$TD train --records $C/sft.jsonl --dev-records $D/teacher.primary.jsonl --tokenizer $D/tokenizer \
  --max-steps 400 --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --batch-tokens 8192 \
  --gradient-accumulation-steps 2 --eval-steps 100 --save-steps 100 --seed 1 \
  --model-init BL/checkpoint-000800 --out CS --overwrite-output-dir > CS.train.log 2>&1
S=CS/checkpoint-000400
$TD probe --model cs=$S --records primary=$D/teacher.primary.jsonl --records heldout=$D/teacher.heldout.jsonl \
  --records room=$C/primary.room.jsonl --summary CS/probe.json > CS/probe.md
python3 $M/scripts/product_id_copy.py CS/probe.json $D/teacher.primary.jsonl > CS/ids.txt
$TD eval --model cs=$S --set original=$H --tasks $D/tasks.primary.jsonl --n 200 --seed 1 --products 600 \
  --episodes CS/eval.jsonl --summary CS/eval.json > CS/eval.md
