#!/bin/bash
# The real prompt, from the model that selects and copies on synthetic rows (run.sh's last checkpoint):
# the twenty-second session's selection rows (docs/runs/select-2026-12-05/data.sh: the teacher's opening
# turn under 1,000 train-pool variants with every skill and tool renamed, every name coined) beside
# 15,000 synthetic rows that keep the skill — 5,000 of run.sh's mix, 5,000 T1 and 5,000 SNQc rows whose
# coined names are made of tokenizer pieces (gen.py's `vocab-names`), padded as run.sh's — about half
# the steps each. Probed free-running with docs/runs/select-2026-12-05/probe.sh (names right, another
# listed, listed nowhere; held-out variants and all-renamed train-pool variants).
#   INIT=/work/exp/SC/more/checkpoint-002400 bash real.sh      (writes under /work/exp/R)
#   INIT=/work/exp/AN/more/checkpoint-001500 SYN=/work/exp/AN/mix.jsonl NSYN=10000 OUT=an bash real.sh
#     (the annealed model, with 10,000 of anneal.sh's rows in place of run.sh's 5,000)
set -eo pipefail
cd /work/main
H=docs/runs/select-copy-2026-12-05; G=docs/runs/coined-names-2026-12-04/name-copy/gen.py; R=/work/exp/R
TD=target/release/teacher-distill; STEPS=${STEPS:-1800}; SAVE=${SAVE:-600}; OUT=${OUT:-run}
mkdir -p $R
python3 $G 5000 21 train none 1 vocab-names > $R/t1v.jsonl
python3 $G 5000 22 train none 4 quoted-questions+vocab-names > $R/snqcv.jsonl
python3 $H/mix.py /work/exp/len $R/t1v.jsonl $R/snqcv.jsonl > $R/synth.jsonl
head -${NSYN:-5000} ${SYN:-/work/exp/SC/train.jsonl} | cat - $R/synth.jsonl /work/exp/sel/select.c1.jsonl > $R/train.jsonl
$TD train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed ${SEED:-9} --eval-steps 0 \
  --overwrite-output-dir --batch-tokens 8192 --tokenizer out/exp-g128/data/tokenizer --model-init $INIT --records $R/train.jsonl \
  --max-steps $STEPS --save-steps $SAVE --out $R/$OUT > $R/$OUT.log 2>&1
for k in $(seq $SAVE $SAVE $STEPS); do
  TRAINPOOL=trainpool100.c1.jsonl bash docs/runs/select-2026-12-05/probe.sh r$OUT$k $R/$OUT/checkpoint-$(printf %06d $k) | tee -a $R/names.txt
done
