# The copy curriculum of docs/learning-default.md as pipeline stages over files, with the Rust generators
# (`hat sim copy-task`, `hat records cat --keep-sections --rename-ids`) instead of the scripts:
#   copy   `tiny` from scratch on one-id copy rows (dense copy targets: past the copy plateau)
#   base   from copy: copy rows of every kind (one id, a queue named by link number, a queue of catalog
#          titles named by title) + the opening turns of the original-harness dialogues with the room
#          state as their only prompt, product ids renamed at random per record (only copying pays)
#   sft    HSA-SFT from base, `make run`'s recipe, on its records with product ids renamed per record,
#          plus the base stage's rows (so the copy is kept while the harness is added)
#   eval   the probe (teacher-forced) and the rollouts on the 200 primary tasks, as `make distill-eval`
# Needs `make distill-data` (out/distill) and release binaries copied to $BIN (so rebuilding target/ does
# not change them mid-run).
set -ex
cd "$(dirname "$0")/../../.."
BIN=${BIN:-/work/snap}
D=out/distill; C=out/curriculum; HAT=$BIN/hat; TD=$BIN/teacher-distill
H=harness-samples/taolive; CAT="--products 600"
COPY_STEPS=${COPY_STEPS:-1000}; BASE_STEPS=${BASE_STEPS:-2000}; SFT_STEPS=${SFT_STEPS:-400}
mkdir -p $C
$HAT sim copy-task --n 20000 --kinds current --seed 1 $CAT -o $C/copy.current.jsonl
$HAT sim copy-task --n 30000 --seed 2 $CAT -o $C/copy.jsonl
for k in current link title; do $HAT sim copy-task --n 200 --kinds $k --seed 3 $CAT -o $C/probe.$k.jsonl; done
ROOM=(--first-turn --dialogue-only --keep-sections 'Room state|Current product')
$HAT records cat "${ROOM[@]}" --rename-ids 1 -i $D/teacher.original.jsonl -o $C/room.jsonl
$HAT records cat "${ROOM[@]}" -i $D/teacher.primary.jsonl -o $C/primary.room.jsonl
TRAIN="$TD train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed 1
  --eval-steps 0 --overwrite-output-dir --tokenizer $D/tokenizer"
test -d $C/copy/checkpoint-$(printf %06d $COPY_STEPS) || $TRAIN --model-init tiny --records $C/copy.current.jsonl --batch-tokens 4096 --max-steps $COPY_STEPS \
  --save-steps $COPY_STEPS --out $C/copy
cat $C/copy.jsonl $C/room.jsonl > $C/base.jsonl
$TRAIN --model-init $(ls -d $C/copy/checkpoint-* | tail -1) --records $C/base.jsonl --batch-tokens 4096 \
  --max-steps $BASE_STEPS --save-steps 500 --out $C/base
probe() {  # probe CKPT NAME: copy kinds and room rows, teacher-forced; product id right by how it is named
  $TD probe --model $2=$1 --records current=$C/probe.current.jsonl --records link=$C/probe.link.jsonl \
    --records title=$C/probe.title.jsonl --records room=$C/primary.room.jsonl --summary $C/$2.probe.json > $C/$2.probe.md
  python3 scripts/product_id_copy.py $C/$2.probe.json $C/primary.room.jsonl | tee $C/$2.ids.txt
}
probe $(ls -d $C/base/checkpoint-* | tail -1) base
for f in teacher.full teacher.first; do $HAT records cat --rename-ids 1 -i $D/$f.jsonl -o $C/$f.renamed.jsonl; done
cat $C/teacher.full.renamed.jsonl $C/teacher.first.renamed.jsonl $C/base.jsonl > $C/sft.jsonl
$TD train --records $C/sft.jsonl --dev-records $D/teacher.primary.jsonl --tokenizer $D/tokenizer \
  --max-steps $SFT_STEPS --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --batch-tokens 8192 \
  --gradient-accumulation-steps 2 --eval-steps 100 --save-steps 100 --seed 1 \
  --model-init $(ls -d $C/base/checkpoint-* | tail -1) --out $C/model --overwrite-output-dir
M=$(ls -d $C/model/checkpoint-* | tail -1)
$TD probe --model sft=$M --records primary=$D/teacher.primary.jsonl --records heldout=$D/teacher.heldout.jsonl \
  --records room=$C/primary.room.jsonl --summary $C/sft.probe.json | tee $C/sft.probe.md
python3 scripts/product_id_copy.py $C/sft.probe.json $D/teacher.primary.jsonl | tee $C/sft.ids.txt
$TD eval --model sft=$M --set original=$H --tasks $D/tasks.primary.jsonl --n 200 --seed 1 $CAT \
  --episodes $C/eval.jsonl --summary $C/eval.json | tee $C/eval.md
