#!/bin/bash
# The thirteenth session's curriculum (docs/runs/reply-stage-2026-12-03/run.sh, = make curriculum) with
# evidence quotes (`hat records cat --quote-evidence`, src/evidence.rs) on every row: before a call that
# carries a product id, the reasoning quotes the room-state entry from the viewer's words to the id (run Q,
# at 484b00a), then restates the asking viewer's lines (run Q2: E=/work/exp/Q2, at be6e536).
# Same seeds, rows, stages and steps; only the quotes differ. Outputs under $E. Needs out/distill
# (make distill-data) and release binaries in $BIN.
set -ex
cd "$(dirname "$0")/../../.."
BIN=${BIN:-/work/snap}; E=${E:-/work/exp/Q}
D=out/distill; C=$E/data; HAT=$BIN/hat; TD=$BIN/teacher-distill
H=harness-samples/taolive; CAT="--products 600"; P=tiny-2attn
REPLY_STEPS=${REPLY_STEPS:-600}; SFT_STEPS=${SFT_STEPS:-400}
mkdir -p $C $E
ROOM=(--dialogue-only --keep-sections 'Room state|Current product')
Q=--quote-evidence
if [ ! -s $C/dialog.jsonl ]; then
  $HAT sim copy-task --n 20000 --kinds current --seed 1 $CAT | $HAT records cat $Q -o $C/copy.current.jsonl
  $HAT sim copy-task --n 30000 --seed 2 $CAT | $HAT records cat $Q -o $C/copy.jsonl
  for k in current link title; do $HAT sim copy-task --n 200 --kinds $k --seed 3 $CAT | $HAT records cat $Q -o $C/probe.$k.jsonl; done
  $HAT records cat $Q --first-turn "${ROOM[@]}" --rename-ids 1 -i $D/teacher.original.jsonl -o $C/room.jsonl
  $HAT records cat $Q --first-turn "${ROOM[@]}" -i $D/teacher.primary.jsonl -o $C/primary.room.jsonl
  $HAT records cat $Q "${ROOM[@]}" -i $D/teacher.primary.jsonl -o $C/primary.dialog.jsonl
  for s in primary heldout; do $HAT records cat $Q -i $D/teacher.$s.jsonl -o $C/teacher.$s.jsonl; done
  cat $C/copy.jsonl $C/room.jsonl > $C/base.jsonl
  for f in teacher.full teacher.first; do $HAT records cat $Q --rename-ids 1 -i $D/$f.jsonl -o $C/$f.renamed.jsonl; done
  $HAT records cat $Q "${ROOM[@]}" --rename-ids 2 -i $D/teacher.original.jsonl -o $C/dialog.jsonl
fi
TRAIN="$TD train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed 1
  --eval-steps 0 --overwrite-output-dir --tokenizer $D/tokenizer --batch-tokens 4096"
probe() {  # probe CKPT NAME: copy kinds, room rows and primary dialogues, teacher-forced
  $TD probe --model $2=$1 --records current=$C/probe.current.jsonl --records link=$C/probe.link.jsonl \
    --records title=$C/probe.title.jsonl --records room=$C/primary.room.jsonl --records dialog=$C/primary.dialog.jsonl \
    --summary $E/$2.probe.json > $E/$2.probe.md 2>/dev/null
  python3 scripts/product_id_copy.py $E/$2.probe.json $C/primary.room.jsonl > $E/$2.ids.txt
}
test -d $E/copy/checkpoint-000300 || $TRAIN --model-init $P --records $C/copy.current.jsonl --max-steps 300 --save-steps 300 \
  --out $E/copy > $E/copy.log 2>&1
probe $E/copy/checkpoint-000300 copy300
test -d $E/lookup/checkpoint-000800 || $TRAIN --model-init $E/copy/checkpoint-000300 --records $C/base.jsonl --max-steps 800 \
  --save-steps 400 --out $E/lookup > $E/lookup.log 2>&1
probe $E/lookup/checkpoint-000800 lookup800
cat $C/base.jsonl $C/dialog.jsonl > $C/reply.jsonl
R=$E/reply/checkpoint-$(printf %06d $REPLY_STEPS)
test -d $R || $TRAIN --model-init $E/lookup/checkpoint-000800 --records $C/reply.jsonl --max-steps $REPLY_STEPS \
  --save-steps $REPLY_STEPS --out $E/reply > $E/reply.log 2>&1
probe $R reply$REPLY_STEPS
cat $C/teacher.full.renamed.jsonl $C/teacher.first.renamed.jsonl $C/reply.jsonl > $C/sft.jsonl
M=$E/sft/checkpoint-$(printf %06d $SFT_STEPS)
test -d $M || $TD train --records $C/sft.jsonl --dev-records $C/teacher.primary.jsonl --tokenizer $D/tokenizer \
  --max-steps $SFT_STEPS --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --batch-tokens 8192 \
  --gradient-accumulation-steps 2 --eval-steps 100 --save-steps 100 --seed 1 \
  --model-init $R --out $E/sft --overwrite-output-dir > $E/sft.log 2>&1
$TD eval --model sft=$M --set original=$H --tasks $D/tasks.primary.jsonl --n 200 --seed 1 $CAT \
  --episodes $E/eval.jsonl --summary $E/eval.json > $E/eval.md
$TD probe --model sft=$M --records primary=$C/teacher.primary.jsonl --records heldout=$C/teacher.heldout.jsonl \
  --records room=$C/primary.room.jsonl --summary $E/sft.probe.json > $E/sft.probe.md
python3 scripts/product_id_copy.py $E/sft.probe.json $C/teacher.primary.jsonl > $E/sft.ids.txt
