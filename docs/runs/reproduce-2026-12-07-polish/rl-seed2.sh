#!/bin/bash
# A second RL seed of the fifth run: grpo-train from its OPD model with --seed 2 (the run's recipe
# otherwise), played on Harness-Variant QA-lite and Live-Stream QA-lite like the chain's eval-rl.
set -eo pipefail
cd "$(git rev-parse --show-toplevel)"
B=target/release; R=out/r40; O=out/r40x/rl-s2
F=timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03
$B/grpo-train --model $R/opd/checkpoint-000100 --tasks $R/data/tasks.rl.jsonl \
  $(for i in $(seq 8); do echo --harness harness-samples/taolive; done) \
  $(for d in $R/data/rl-variants/variant-*; do echo --harness $d; done) --faults $F --products 600 \
  --max-steps 30 --save-steps 30 --num-generations 8 --beta 0.04 --tasks-per-step 8 --learning-rate 3e-4 \
  --seed 2 --out $O --overwrite-output-dir
for set in heldout primary; do
  h=harness-samples/taolive; [ $set = heldout ] && h=$(ls -d $R/data/heldout/variant-* | paste -sd,)
  $B/teacher-distill eval --tasks $R/data/tasks.primary.jsonl --n 200 --max-tokens 160 --faults $F --seed 1 --products 600 \
    --model rl-s2=$O/checkpoint-000030 --set $set=$h --episodes out/r40x/rl-s2.$set.jsonl > out/r40x/rl-s2.$set.md
done
