#!/bin/bash
# Select and copy together (docs/learning-default.md, twenty-third session): from the padded SNQ model
# (docs/runs/select-2026-12-05/length/mix.sh's 600-step checkpoint, which selects among four known names
# but copies no unseen one), train on mix.py's rows — T1 (copy a coined name), SNQ (select among known
# names), SNQc (select among coined names) in equal shares, padded at random to the real prompt's length —
# and probe every SAVE steps, free-running, on SNQc's held-out and training-syllable rows as they are and
# with pad2's text (3,392 characters) before them; selection.py sorts each name said.
#   bash run.sh            (writes under /work/exp/SC)
#   INIT=/work/exp/SC/run/checkpoint-002400 OUT=more SEED=8 bash run.sh   (2,400 more steps, a fresh data order)
#   INIT=/work/exp/SC/more/checkpoint-002400 OUT=sel SEED=10 STEPS=3000 MIX="SNQc SNQcv SNQc SNQcv SNQ T1" bash run.sh
#     (selection-heavy: three fifths of the rows SNQc-shaped, a third of those with gen.py's vocab-names)
#   python3 widen.py /work/exp/SC/sel/checkpoint-003000 /work/exp/W/init 128 1, then
#   INIT=/work/exp/W/init OUT=wide SEED=11 STEPS=1500 SAVE=750 MIX="SNQc SNQcv SNQc SNQcv SNQ T1" bash run.sh
#     (the same model widened to hidden_size 128, computing exactly what it did: the width test)
# MIX names the row sets, each 20,000 rows from /work/exp/NAME/train.jsonl (SNQcv: made here, 10,000);
# the probes also run on `vocab`: 200 SNQcv-shaped rows (gen.py seed 23; dev seed 24).
set -eo pipefail
cd /work/main
H=docs/runs/select-copy-2026-12-05; S=/work/exp/SC; TD=target/release/teacher-distill
STEPS=${STEPS:-2400}; SAVE=${SAVE:-600}; INIT=${INIT:-/work/exp/len/run/checkpoint-000600}; OUT=${OUT:-run}; SEED=${SEED:-7}
mkdir -p $S/short $S/long
G=docs/runs/coined-names-2026-12-04/name-copy/gen.py; mkdir -p /work/exp/SNQcv $S/vocab
python3 $G 10000 25 train none 4 quoted-questions+vocab-names > /work/exp/SNQcv/train.jsonl
python3 $G 200 23 train none 4 quoted-questions+vocab-names > $S/vocab/eval.jsonl
python3 $G 200 24 train none 4 quoted-questions+vocab-names > $S/vocab/dev.jsonl
python3 $H/mix.py /work/exp/len $(for m in ${MIX:-T1 SNQ SNQc}; do echo /work/exp/$m/train.jsonl; done) > $S/$OUT.train.jsonl
cp /work/exp/SNQc/eval.jsonl /work/exp/SNQc/dev.jsonl $S/short/
for f in eval dev; do python3 $H/mix.py --pad pad2 /work/exp/len $S/short/$f.jsonl > $S/long/$f.jsonl; done
$TD train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed $SEED --eval-steps 0 --overwrite-output-dir \
  --batch-tokens 4096 --tokenizer out/exp-g128/data/tokenizer --model-init $INIT --records $S/$OUT.train.jsonl \
  --max-steps $STEPS --save-steps $SAVE --out $S/$OUT > $S/$OUT.log 2>&1
for k in $(seq $SAVE $SAVE $STEPS); do
  for len in short long vocab; do
    $TD probe --model $OUT$k-$len=$S/$OUT/checkpoint-$(printf %06d $k) --records heldout=$S/$len/eval.jsonl \
      --records train-syllables=$S/$len/dev.jsonl --free-running --max-tokens 40 --summary $S/$OUT.$len$k.json > /dev/null
    python3 docs/runs/name-order-2026-12-05/selection.py $S/$OUT.$len$k.json $S/$len | tee -a $S/names.txt
  done
done
