#!/bin/bash
# lookup.sh: the curriculum's base stage (docs/learning-default.md, sixth session) from B's copy model:
# copy rows of every kind + room-state opening turns with product ids renamed per record; probed every 200 steps
set -e
M=/work/main; C=$M/out/curriculum; D=$M/out/distill; TD=/work/snap/teacher-distill
cd /work/exp
$TD train --model-init B/checkpoint-000300 --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 \
  --seed 1 --eval-steps 0 --overwrite-output-dir --tokenizer $D/tokenizer --records $C/base.jsonl \
  --batch-tokens 4096 --max-steps ${STEPS:-800} --save-steps 200 --out BL > BL.train.log 2>&1
for c in BL/checkpoint-*; do
  s=$(basename $c)
  $TD probe --model $s=$c --records current=$C/probe.current.jsonl --records link=$C/probe.link.jsonl \
    --records title=$C/probe.title.jsonl --records room=$C/primary.room.jsonl --summary BL/$s.probe.json 2>/dev/null | grep '^| checkpoint' | grep -v product_qa >> BL.probe.txt
  python3 $M/scripts/product_id_copy.py BL/$s.probe.json $C/primary.room.jsonl >> BL.ids.txt
done
