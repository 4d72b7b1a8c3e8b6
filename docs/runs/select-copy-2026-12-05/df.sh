#!/bin/bash
# The description before the name, on a model that has both halves (run.sh's narrow 1,500-step checkpoint:
# selects among known names, copies new ones): SNQc's rows with the tools also listed in the system prompt
# as `- description: name` (gen.py description-first ... quoted-questions; DFQc), two shares beside SNQ and
# T1, padded as run.sh's; probed free-running on DFQc-shaped rows. With the description first, a name's
# tokens can carry what their description says, so the answer can find the name in one hop.
#   bash df.sh             (writes under /work/exp/DFQc)
set -eo pipefail
cd /work/main
H=docs/runs/select-copy-2026-12-05; G=docs/runs/coined-names-2026-12-04/name-copy/gen.py; D=/work/exp/DFQc; TD=target/release/teacher-distill
STEPS=${STEPS:-1500}; SAVE=${SAVE:-750}; INIT=${INIT:-/work/exp/SC/narrow/checkpoint-001500}
mkdir -p $D
python3 $G 20000 1 train description-first 4 quoted-questions > $D/train.jsonl
python3 $G 200 2 eval description-first 4 quoted-questions > $D/eval.jsonl; python3 $G 200 3 train description-first 4 quoted-questions > $D/dev.jsonl
python3 $H/mix.py /work/exp/len $D/train.jsonl $D/train.jsonl /work/exp/SNQ/train.jsonl /work/exp/T1/train.jsonl > $D/mix.jsonl
$TD train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed 12 --eval-steps 0 --overwrite-output-dir \
  --batch-tokens 4096 --tokenizer out/exp-g128/data/tokenizer --model-init $INIT --records $D/mix.jsonl \
  --max-steps $STEPS --save-steps $SAVE --out $D/run > $D/run.log 2>&1
for k in 0 $(seq $SAVE $SAVE $STEPS); do
  ckpt=$D/run/checkpoint-$(printf %06d $k); [ $k = 0 ] && ckpt=$INIT
  $TD probe --model df$k=$ckpt --records heldout=$D/eval.jsonl --records train-syllables=$D/dev.jsonl \
    --free-running --max-tokens 40 --summary $D/df$k.json > /dev/null
  python3 docs/runs/name-order-2026-12-05/selection.py $D/df$k.json $D | tee -a $D/names.txt
done
