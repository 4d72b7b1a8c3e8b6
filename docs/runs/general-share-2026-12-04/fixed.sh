#!/bin/bash
set -e
cd /work/main
R=out/exp-g128
make REPRO=$R R_GENERAL_TRAIN=128000 $R/fixed.done
ck=$(ls -d $R/fixed/checkpoint-* | tail -1)
F="--n 200 --max-tokens 160 --faults timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03 --seed 1 --products 600 --model fixed=$ck"
target/release/teacher-distill eval --tasks $R/data/tasks.primary.jsonl $F --set primary=harness-samples/taolive --episodes $R/eval/fixed.primary.jsonl > /dev/null
target/release/teacher-distill eval --tasks $R/data/tasks.primary.jsonl $F --set heldout=$(ls -d $R/data/heldout/variant-* | paste -sd,) --episodes $R/eval/fixed.heldout.jsonl > /dev/null
echo FIXED-DONE
