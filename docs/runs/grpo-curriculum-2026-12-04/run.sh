#!/bin/bash
# HSA-RL from the curriculum default (run R of docs/learning-default.md, fourteenth session: `make
# curriculum`'s stages, tiny-2attn, right tool 0.847 on the original harness): token-level GRPO
# (run A) and GSPO (run B) from the same start, the same tasks, train-pool variants and faults; then
# R, A and B on the same 200 held-out primary tasks under the held-out variants and the original
# harness, faults on, paired. Binaries in $BIN (release, at 7d4e1e2: prefix-cached local generation).
set -ex
cd "$(dirname "$0")/../../.."
BIN=${BIN:-/work/snap2}; E=${E:-/work/exp/G}; START=${START:-/work/exp/R/sft/checkpoint-000400}
D=out/distill; H=harness-samples/taolive; CAT="--products 600"
FAULTS=timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03
STEPS=${STEPS:-30}; G=${G:-8}; LR=${LR:-3e-4}
mkdir -p $E
test -s $E/tasks.jsonl || $BIN/hat sim tasks --harness $H --n 2000 --split train --viewers-per-room 16 --seed 3 $CAT -o $E/tasks.jsonl
test -d $E/variants || $BIN/hsa-augment --harness $H --out $E/variants --n 8 --pool train --seed 1
rl() {  # rl NAME FLAGS...: STEPS steps of 8 tasks x G episodes from START
  local name=$1; shift
  test -s $E/$name/metrics.jsonl && grep -q "\"step\":$STEPS," $E/$name/metrics.jsonl || \
  $BIN/grpo-train --model $START --tasks $E/tasks.jsonl --harness $H \
    $(for d in $E/variants/variant-*; do echo --harness $d; done) --faults $FAULTS $CAT \
    --max-steps $STEPS --save-steps 10 --num-generations $G --tasks-per-step 8 --learning-rate $LR --seed 1 \
    --out $E/$name --overwrite-output-dir "$@" > $E/$name.log 2>&1
}
rl grpo
rl gspo --importance-sampling-level sequence
last() { ls -d $E/$1/checkpoint-* | tail -1; }
$BIN/teacher-distill eval --model sft=$START --model grpo=$(last grpo) --model gspo=$(last gspo) \
  --set heldout=$(ls -d $D/heldout/variant-* | paste -sd,) --set original=$H --tasks $D/tasks.primary.jsonl \
  --n 200 --faults $FAULTS --seed 1 $CAT --episodes $E/eval.jsonl --summary $E/eval.json > $E/eval.md
