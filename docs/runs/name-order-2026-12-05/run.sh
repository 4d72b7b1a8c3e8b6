#!/bin/bash
# Name-copy probes (docs/learning-default.md, twentieth session), each arm NAME:LISTING:TOOLS[:EXTRA] for gen.py:
#   DF  the tools also listed in the system prompt, description before name (4 tools)
#   NF  the same listing, name before description (the control; stopped, see the doc)
#   T1  one tool per row, no listing: copying a listed name without having to select it
#   DF4 DF's rows from T1's model (the order tested on a model that copies)
#   SN  four tools whose names are always the same four words, dealt at random: select by description only
#   T4  four tools, no listing (the seventeenth session's rows), from T1's model: select, then copy
#   SNQ SN with each description quoting the question it serves (as the sample harness's do)
# Same init (make reproduce's copy stage) and recipe as docs/runs/coined-names-2026-12-04/name-copy/run.sh.
# Commands run (writes under /work/exp):
#   ARMS="DF:description-first:4" bash run.sh
#   ARMS="T1:none:1" STEPS=600 SAVE=150 bash run.sh, then CONTINUE="T1 900 2" bash run.sh
#   INIT=/work/exp/T1/more/checkpoint-000900 ARMS="T4:none:4" STEPS=600 SAVE=200 bash run.sh, then CONTINUE="T4 900 2" bash run.sh
#   INIT=/work/exp/T1/more/checkpoint-000900 ARMS="DF4:description-first:4" STEPS=900 SAVE=300 bash run.sh
#   INIT=/work/exp/T1/more/checkpoint-000900 ARMS="SN:none:4:shuffled-names" STEPS=900 SAVE=300 bash run.sh,
#     then (twenty-first session) CONTINUE="SN 3000 2" bash run.sh; by_function.py splits its probes
#   INIT=/work/exp/T1/more/checkpoint-000900 ARMS="SNQ:none:4:shuffled-names+quoted-questions" STEPS=2400 SAVE=600 bash run.sh,
#     then CONTINUE="SNQ 3000 2" bash run.sh
# where CONTINUE="ARM STEPS SEED" trains from the arm's last checkpoint with another seed (fresh
# data order) into $N/more and probes every 300 steps.
set -eo pipefail
cd /work/main
G=docs/runs/coined-names-2026-12-04/name-copy/gen.py
TD=target/release/teacher-distill; INIT=${INIT:-out/exp-g128/copy/checkpoint-000300}
STEPS=${STEPS:-1500}; SAVE=${SAVE:-300}
# train_probe ARM INIT SEED STEPS SAVE OUT: train from INIT into /work/exp/ARM/OUT, probe every SAVE steps
train_probe() {
  local d=$1 init=$2 seed=$3 steps=$4 save=$5 out=$6 N=/work/exp/$1
  $TD train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed $seed --eval-steps 0 \
    --overwrite-output-dir --batch-tokens 4096 --tokenizer out/exp-g128/data/tokenizer --model-init $init \
    --records $N/train.jsonl --max-steps $steps --save-steps $save --out $N/$out > $N/$out.log 2>&1
  for s in $(seq $save $save $steps); do
    $TD probe --model $d-$out$s=$N/$out/checkpoint-$(printf %06d $s) --records heldout=$N/eval.jsonl \
      --records train-syllables=$N/dev.jsonl --summary $N/$out.probe$s.json > $N/$out.probe$s.md
  done
}
if [ -n "$CONTINUE" ]; then
  read d steps seed <<< "$CONTINUE"
  train_probe $d $(ls -d /work/exp/$d/run/checkpoint-* | tail -1) $seed $steps 300 more
  exit
fi
for arm in ${ARMS:-DF:description-first:4 NF:name-first:4}; do
  IFS=: read d listing tools extra <<< "$arm"
  N=/work/exp/$d; mkdir -p $N
  python3 $G 20000 1 train $listing $tools $extra > $N/train.jsonl; python3 $G 200 2 eval $listing $tools $extra > $N/eval.jsonl
  python3 $G 200 3 train $listing $tools $extra > $N/dev.jsonl
  train_probe $d $INIT 1 $STEPS $SAVE run
done
