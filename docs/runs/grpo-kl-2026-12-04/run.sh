#!/bin/bash
# Issue 24: make reproduce's RL stage lowers the original harness's right tool while it trains on
# 8 train-pool variants + the original (1 draw in 9). This arm keeps the original: the same start
# (the chain's OPD model), tasks, variants, faults, seed and budget as `rl`, plus the k3 KL to the start
# (--beta 0.04) and the original harness listed 8 times (half of the draws). Then both RL models and the
# start on the same 200 held-out primary tasks, original harness and the 8 held-out variants, faults on.
#   bash run.sh                                              # arm rl-kl
#   NAME=rl-kl-acc EXTRA="--reward-weights accuracy=0.25" bash run.sh   # + accuracy weighed a quarter
#   NAME=rl-kl-nan-s2 SEED=2 bash run.sh                     # another seed of the RL draws (eval seed stays 1)
set -e
cd "$(dirname "$0")/../../.."
R=${R:-out/exp-g128}
B=target/release
NAME=${NAME:-rl-kl}
ck() { ls -d $R/$1/checkpoint-* | tail -1; }
H=harness-samples/taolive
F=timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03
$B/grpo-train --model $(ck opd) --tasks $R/data/tasks.rl.jsonl $(for i in 1 2 3 4 5 6 7 8; do echo --harness $H; done) \
  $(for d in $R/data/rl-variants/variant-*; do echo --harness $d; done) --faults $F --products 600 \
  --max-steps 30 --save-steps 30 --num-generations 8 --tasks-per-step 8 --learning-rate 3e-4 --seed ${SEED:-1} \
  --beta 0.04 $EXTRA --out $R/$NAME --overwrite-output-dir 2> $R/$NAME.log
for s in $NAME; do
  E="--tasks $R/data/tasks.primary.jsonl --n 200 --max-tokens 160 --faults $F --seed 1 --products 600 --model $s=$(ck $s)"
  $B/teacher-distill eval $E --set primary=$H --episodes $R/eval/$s.primary.jsonl > /dev/null
  $B/teacher-distill eval $E --set heldout=$(ls -d $R/data/heldout/variant-* | paste -sd,) --episodes $R/eval/$s.heldout.jsonl > /dev/null
done
$B/hat report --dir $R --stage 'opd=OPD (start)' --stage "$NAME=$NAME" -o $R/$NAME-compare.md > /dev/null
for set in primary heldout; do python3 scripts/paired_scores.py $R $set opd rl $NAME; done > $R/$NAME-paired.txt
echo RL-DONE $NAME
