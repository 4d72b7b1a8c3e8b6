set -x
mkdir -p out/copy
python3 scripts/copy_task.py --n 20000 --seed 1 --kind current > out/copy/copy.train.current.jsonl
python3 scripts/copy_task.py --n 200 --seed 2 --kind current > out/copy/copy.probe.current.jsonl
D=out/distill; E=out/copy; TD=target/release/teacher-distill
$TD train --model-init tiny --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --batch-tokens 4096 --seed 0 --eval-steps 0 --overwrite-output-dir --records $E/copy.train.current.jsonl --tokenizer $D/tokenizer --max-steps 400 --save-steps 200 --out $E/cur
for s in 200 400; do
  $TD probe --model c$s=$E/cur/checkpoint-000$s --records current=$E/copy.probe.current.jsonl --summary $E/c$s.json > $E/c$s.md 2> $E/c$s.err
  cat $E/c$s.err
done
