#!/bin/bash
# lookup_more.sh: lookup.sh's run continued (--resume) to 1,400 steps, probing the new checkpoints
set -e
M=/work/main; C=$M/out/curriculum; D=$M/out/distill; TD=/work/snap/teacher-distill
cd /work/exp
$TD train --model-init B/checkpoint-000300 --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 \
  --seed 1 --eval-steps 0 --resume --tokenizer $D/tokenizer --records $C/base.jsonl \
  --batch-tokens 4096 --max-steps 1400 --save-steps 200 --out BL > BL2.train.log 2>&1
for s in 001000 001200 001400; do
  c=BL/checkpoint-$s
  $TD probe --model checkpoint-$s=$c --records link=$C/probe.link.jsonl --records title=$C/probe.title.jsonl \
    --records room=$C/primary.room.jsonl --summary BL/checkpoint-$s.probe.json 2>/dev/null | grep '^| checkpoint' | grep -v product_qa | grep -E '\| (link|title|room) \| 200' >> BL2.probe.txt
  python3 $M/scripts/product_id_copy.py BL/checkpoint-$s.probe.json $C/primary.room.jsonl | grep room >> BL2.ids.txt
done
