#!/bin/bash
# Names annealed from known to new (gen.py drifted-names: the four known words with each syllable replaced
# with a probability drawn per row from 0 to 1), two shares beside SNQc and T1, padded as run.sh's, from
# the narrow 1,500-step checkpoint: does the choice among known names carry over to new ones when the rows
# run between them? Probed free-running on run.sh's SNQc rows (paired against the starting checkpoint with
# pair.py) and on 400 drifted rows, split by the drift (drift.py).
#   bash anneal.sh          (writes under /work/exp/AN)
#   INIT=/work/exp/AN/run/checkpoint-001500 OUT=more SEED=14 BASE=/work/exp/AN/an1500.short.json bash anneal.sh
set -eo pipefail
cd /work/main
H=docs/runs/select-copy-2026-12-05; G=docs/runs/coined-names-2026-12-04/name-copy/gen.py; A=/work/exp/AN; TD=target/release/teacher-distill
STEPS=${STEPS:-1500}; INIT=${INIT:-/work/exp/SC/narrow/checkpoint-001500}; OUT=${OUT:-run}; SEED=${SEED:-13}
mkdir -p $A/drift
python3 $G 20000 1 train none 4 quoted-questions+drifted-names > $A/train.jsonl
python3 $G 400 3 train none 4 quoted-questions+drifted-names > $A/drift/dev.jsonl; cp $A/drift/dev.jsonl $A/drift/eval.jsonl
python3 $H/mix.py /work/exp/len $A/train.jsonl $A/train.jsonl /work/exp/SNQc/train.jsonl /work/exp/T1/train.jsonl > $A/mix.jsonl
$TD train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed $SEED --eval-steps 0 --overwrite-output-dir \
  --batch-tokens 4096 --tokenizer out/exp-g128/data/tokenizer --model-init $INIT --records $A/mix.jsonl \
  --max-steps $STEPS --save-steps $STEPS --out $A/$OUT > $A/$OUT.log 2>&1
for m in init-$OUT=$INIT $OUT$STEPS=$A/$OUT/checkpoint-$(printf %06d $STEPS); do
  $TD probe --model $m --records train-syllables=$A/drift/dev.jsonl --free-running --max-tokens 40 --summary $A/${m%%=*}.drift.json > /dev/null
  python3 $H/drift.py $A/${m%%=*}.drift.json $A/drift/dev.jsonl | tee -a $A/names.txt
done
$TD probe --model $OUT$STEPS=$A/$OUT/checkpoint-$(printf %06d $STEPS) --records heldout=/work/exp/SC/short/eval.jsonl \
  --records train-syllables=/work/exp/SC/short/dev.jsonl --free-running --max-tokens 40 --summary $A/$OUT$STEPS.short.json > /dev/null
python3 $H/pair.py $A/$OUT$STEPS.short.json ${BASE:-/work/exp/SC/narrow.short1500.json} /work/exp/SC/short | tee -a $A/names.txt
