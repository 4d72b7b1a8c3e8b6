#!/bin/bash
# The first step of a length curriculum: the SNQ model trained 600 steps on its own rows, each padded at
# random with pad0/pad1/pad2's text (`python3 mix_rows.py /work/exp/len /work/exp/SNQ/train.jsonl >
# /work/exp/len/train.mix.jsonl`, after pad.py wrote the padded sets there), then probed on the three
# padded held-out sets (split.py; mix.txt).
set -eo pipefail
cd /work/main
target/release/teacher-distill train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed 3 \
  --eval-steps 0 --overwrite-output-dir --batch-tokens 4096 --tokenizer out/exp-g128/data/tokenizer \
  --model-init /work/exp/SNQ/more/checkpoint-003000 --records /work/exp/len/train.mix.jsonl --max-steps 600 --save-steps 300 \
  --out /work/exp/len/run > /work/exp/len/run.log 2>&1
for k in 300 600; do
  target/release/teacher-distill probe --model mix$k=/work/exp/len/run/checkpoint-000$k --records pad0=/work/exp/len/pad0.jsonl \
    --records pad1=/work/exp/len/pad1.jsonl --records pad2=/work/exp/len/pad2.jsonl --summary /work/exp/len/mix$k.json > /dev/null
  echo "== mix$k"; python3 docs/runs/select-2026-12-05/length/split.py /work/exp/len/mix$k.json /work/exp/len
done
