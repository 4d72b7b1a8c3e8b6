#!/bin/bash
# copyrun.sh NAME MODEL_INIT LR STEPS: one-id copy rows from scratch (the curriculum's copy stage), probe every 100 steps
set -e
NAME=$1; INIT=$2; LR=$3; STEPS=$4
M=/work/main; C=$M/out/curriculum; D=$M/out/distill; TD=/work/snap/teacher-distill
cd /work/exp
$TD train --learning-rate $LR --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed ${SEED:-1} \
  --eval-steps 0 --overwrite-output-dir --tokenizer $D/tokenizer --model-init $INIT --records ${RECORDS:-$C/copy.current.jsonl} \
  --batch-tokens 4096 --max-steps $STEPS --save-steps 100 --out $NAME > $NAME.train.log 2>&1
for c in $NAME/checkpoint-*; do
  $TD probe --model $(basename $c)=$c --records current=$C/probe.current.jsonl --records link=$C/probe.link.jsonl \
    --records title=$C/probe.title.jsonl 2>/dev/null | grep '^| checkpoint' >> $NAME.probe.txt
done
