#!/bin/bash
# The reply stage continued from 600 to 1,400 steps (same rows, constant 1e-3), probed every 200 steps
set -e
cd /work/main
E=/work/exp/R; C=out/curriculum; D=out/distill; TD=/work/snap/teacher-distill
$TD train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed 1 \
  --eval-steps 0 --tokenizer $D/tokenizer --batch-tokens 4096 --records $C/reply.jsonl --max-steps 1400 \
  --save-steps 200 --out $E/replylong --resume > $E/replylong.log 2>&1
for s in 800 1000 1200 1400; do
  c=$E/replylong/checkpoint-$(printf %06d $s)
  $TD probe --model reply$s=$c --records room=$C/primary.room.jsonl --records dialog=$C/primary.dialog.jsonl \
    --summary $E/reply$s.probe.json > $E/reply$s.probe.md 2>/dev/null
  python3 scripts/product_id_copy.py $E/reply$s.probe.json $C/primary.room.jsonl > $E/reply$s.ids.txt
  python3 scripts/reply_facts.py $E/reply$s.probe.json $C/primary.dialog.jsonl > $E/reply$s.facts.txt
done
