#!/bin/bash
set -e
cd /work/main
R=out/exp-g128
for s in hsa opd; do
  ck=$(ls -d $R/$s/checkpoint-* | tail -1)
  target/release/teacher-distill eval --tasks $R/data/tasks.primary.jsonl --n 200 --max-tokens 160 --faults timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03 --seed 1 --products 600 --model $s=$ck --set primary=harness-samples/taolive --episodes $R/eval/$s.primary.jsonl > /dev/null
  target/release/teacher-distill eval --tasks $R/data/tasks.primary.jsonl --n 200 --max-tokens 160 --faults timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03 --seed 1 --products 600 --model $s=$ck --set heldout=$(ls -d $R/data/heldout/variant-* | paste -sd,) --episodes $R/eval/$s.heldout.jsonl > /dev/null
  echo "$s $(date +%T)"
done
echo EVAL-DONE
