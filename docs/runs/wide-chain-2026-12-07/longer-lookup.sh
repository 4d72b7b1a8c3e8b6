#!/usr/bin/env bash
# The wide chain's lookup stage went on for 800 more steps (its loss sat at ~0.20 from step ~500, where
# the 64-wide chain's fell to ~0.09), then base and HSA-SFT with make reproduce's recipes, into out/w128b.
set -euo pipefail
W=${W:-out/w128}
V=${V:-out/w128b}
mkdir -p "$V"
ln -sfn ../r37/data "$V/data"
touch "$V/data.done" "$V/copy.done"
target/release/teacher-distill train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 \
  --seed 2 --eval-steps 0 --overwrite-output-dir --batch-tokens 4096 --tokenizer "$V/data/tokenizer" \
  --model-init "$W/lookup/checkpoint-000800" --records "$V/data/lookup.jsonl" --max-steps 800 --save-steps 800 --out "$V/lookup"
touch "$V/lookup.done"
make REPRO="$V" "$V/hsa.done"
