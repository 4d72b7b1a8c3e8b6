#!/bin/bash
# pipe.sh NAME INIT: make run's distill recipe (base 750 steps, HSA-SFT 400 steps, probe, eval) from INIT
set -ex
NAME=$1; INIT=$2
D=/work/main/out/distill; TD=/work/snap/teacher-distill; E=/work/exp/$NAME; H=/work/main/harness-samples/taolive
mkdir -p $E; cd /work/main
CAT="--products 600"
$TD train --model-init $INIT --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 \
  --batch-tokens 2048 --seed 1 --eval-steps 0 --overwrite-output-dir --records $D/base.jsonl --tokenizer $D/tokenizer \
  --max-steps 750 --save-steps 750 --out $E/base > $E/base.log 2>&1
$TD train --records $D/teacher.jsonl --dev-records $D/teacher.primary.jsonl --tokenizer $D/tokenizer \
  --max-steps 400 --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --batch-tokens 8192 \
  --gradient-accumulation-steps 2 --eval-steps 100 --save-steps 100 --seed 1 \
  --model-init $E/base/checkpoint-000750 --out $E/model --overwrite-output-dir > $E/sft.log 2>&1
M=$E/model/checkpoint-000400
$TD probe --model $NAME=$M --records primary=$D/teacher.primary.jsonl --records heldout=$D/teacher.heldout.jsonl \
  --records phrasings=$D/teacher.phrasings.jsonl --summary $E/probe.json > $E/probe.md
$TD eval --model $NAME=$M --set original=$H --tasks $D/tasks.primary.jsonl --n 200 --seed 1 $CAT \
  --episodes $E/eval.jsonl --summary $E/eval.json > $E/eval.md
