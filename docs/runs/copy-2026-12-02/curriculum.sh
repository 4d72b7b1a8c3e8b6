# The copy curriculum of docs/learning-default.md (fifth session), after run2.sh (the one-id copy model,
# out/copy/cur): that model trained on the copy rows (one id, and a queue named by N号链接) mixed with the
# room-state rows of the original harness, product ids renamed at random per record; probed every 300 steps.
# Needs `make run`'s out/distill (tokenizer, teacher.original.jsonl, teacher.primary.jsonl).
set -ex
cd "$(dirname "$0")/../../.."
D=out/distill; E=out/copy; TD=target/release/teacher-distill
python3 scripts/copy_task.py --n 20000 --seed 1 > $E/copy.train.jsonl
python3 scripts/copy_task.py --n 200 --seed 2 --kind link > $E/copy.probe.link.jsonl
target/release/hat records cat --first-turn -i $D/teacher.original.jsonl \
  | python3 scripts/keep_sections.py 'Room state|Current product' > $E/room.jsonl
target/release/hat records cat --first-turn -i $D/teacher.primary.jsonl \
  | python3 scripts/keep_sections.py 'Room state|Current product' > $E/primary.room.jsonl
python3 scripts/remap_ids.py 1 < $E/room.jsonl > $E/room.remap.jsonl
cat $E/copy.train.jsonl $E/room.remap.jsonl > $E/mix.jsonl
$TD train --model-init $E/cur/checkpoint-000400 --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup \
  --warmup-steps 20 --batch-tokens 4096 --seed 0 --eval-steps 0 --overwrite-output-dir --records $E/mix.jsonl \
  --tokenizer $D/tokenizer --max-steps 3000 --save-steps 300 --out $E/mixcopy
for c in $E/mixcopy/checkpoint-*; do
  s=$(basename $c)
  $TD probe --model $s=$c --records current=$E/copy.probe.current.jsonl --records link=$E/copy.probe.link.jsonl \
    --records room=$E/primary.room.jsonl --summary $E/$s.json > $E/$s.md
  python3 scripts/product_id_copy.py $E/$s.json $E/primary.room.jsonl
done
