#!/bin/bash
# Can the model that selects (mix.sh's 600-step checkpoint) add the copy of unseen names? SNQ rows with a
# coined name per tool per row (gen.py ... none 4 quoted-questions), 900 steps, free-running probes at
# 300/600/900 sorted by docs/runs/name-order-2026-12-05/selection.py (coined.txt).
set -eo pipefail
cd /work/main
G=docs/runs/coined-names-2026-12-04/name-copy/gen.py; S=/work/exp/SNQc; TD=target/release/teacher-distill
mkdir -p $S
python3 $G 20000 1 train none 4 quoted-questions > $S/train.jsonl; python3 $G 200 2 eval none 4 quoted-questions > $S/eval.jsonl
python3 $G 200 3 train none 4 quoted-questions > $S/dev.jsonl
$TD train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed 4 --eval-steps 0 --overwrite-output-dir \
  --batch-tokens 4096 --tokenizer out/exp-g128/data/tokenizer --model-init /work/exp/len/run/checkpoint-000600 --records $S/train.jsonl \
  --max-steps 900 --save-steps 300 --out $S/run > $S/run.log 2>&1
for k in 300 600 900; do
  $TD probe --model c$k=$S/run/checkpoint-000$k --records heldout=$S/eval.jsonl --records train-syllables=$S/dev.jsonl \
    --free-running --max-tokens 40 --summary $S/c$k.json > /dev/null
  python3 docs/runs/name-order-2026-12-05/selection.py $S/c$k.json $S
done
