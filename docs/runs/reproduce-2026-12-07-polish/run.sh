#!/bin/bash
# At 4b58aa5. out/r40 starts from out/r37 (make reproduce REPRO=out/r37 to hsa.done at 4b58aa5-era code): its data, copy, lookup and base stages
# and its SFT checkpoints hard-linked in (cp -al out/r37/{data,copy,lookup,base} out/r40/; out/r37/{fixed,hsa}/* into out/r40/{fixed,hsa}/sft/).
# The reproduce chain with the polish, from out/r37's data..base and SFT checkpoints (same seed, same commands).
set -eo pipefail
cd "$(git rev-parse --show-toplevel)"
M="make REPRO=out/r40 BIN=target/release CARGO=true"
for arm in fixed hsa; do
  sft=$(awk -v a=$arm '$1==a{print $2}' out/r37/times.tsv)
  t0=$(date +%s)
  target/release/teacher-distill train --learning-rate 1e-3 --warmup-steps 20 --seed 1 --eval-steps 0 --overwrite-output-dir --batch-tokens 4096 --lr-scheduler-type cosine --tokenizer out/r40/data/tokenizer --records out/r40/data/dialog.jsonl --max-steps 600 --save-steps 600 --model-init out/r40/$arm/sft/checkpoint-000200 --out out/r40/$arm
  echo -e "$arm\t$(( sft + $(date +%s) - t0 ))" >> out/r40/times.tsv
  touch out/r40/$arm.done
done
$M reproduce
