#!/usr/bin/env bash
# The teacher-forced probes behind results/reply-numbers.txt and results/product-ids.txt: reply numbers
# and product ids of out/r37's checkpoints on 300 training records (the first of teacher.original.jsonl)
# and on the 200 primary records, on the full prompt and on the room-state prompt alone; and the lookup
# checkpoint trained 1,200 more steps on the room-state opening turns (room.jsonl), probed every 400.
set -euo pipefail
R=${R:-out/r37}
O=${O:-out/rp39}
T=${T:-$O/probes}
BIN=${BIN:-target/release}
TD=$BIN/teacher-distill
mkdir -p $T
head -300 $R/data/teacher.original.jsonl > $T/train300.jsonl
tail -300 $R/data/room.jsonl > $T/roomtrain.jsonl
$BIN/hat records cat --first-turn --dialogue-only --keep-sections 'Room state|Current product' \
  -i $R/data/teacher.primary.jsonl -o $T/primary.room.jsonl
$TD train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed 1 --eval-steps 0 \
  --overwrite-output-dir --batch-tokens 4096 --tokenizer $R/data/tokenizer --model-init $R/lookup/checkpoint-000800 \
  --records $R/data/room.jsonl --max-steps 1200 --save-steps 400 --out $O/room1200
$TD probe --model hsa=$R/hsa/checkpoint-000200 --model replies-only=$O/reply600/checkpoint-000600 \
  --model polish-held=$O/dialog600/checkpoint-000600 --records train=$T/train300.jsonl \
  --records primary=$R/data/teacher.primary.jsonl --summary $T/replies.json > $T/replies.md
for set in train primary; do
  f=$T/train300.jsonl; [ $set = primary ] && f=$R/data/teacher.primary.jsonl
  python3 scripts/reply_facts.py $T/replies.json $f | grep " $set:"
done > $T/reply-numbers.txt
$TD probe --model hsa=$R/hsa/checkpoint-000200 --model lookup=$R/lookup/checkpoint-000800 \
  --model base=$R/base/checkpoint-001000 --model room400=$O/room1200/checkpoint-000400 \
  --model room800=$O/room1200/checkpoint-000800 --model room1200=$O/room1200/checkpoint-001200 \
  --records room=$T/primary.room.jsonl --records full=$R/data/teacher.primary.jsonl \
  --records roomtrain=$T/roomtrain.jsonl --summary $T/ids.json > $T/ids.md
python3 scripts/product_id_copy.py $T/ids.json $R/data/teacher.primary.jsonl | grep -v roomtrain > $T/product-ids.txt
python3 scripts/product_id_copy.py $T/ids.json $T/roomtrain.jsonl | grep roomtrain >> $T/product-ids.txt
