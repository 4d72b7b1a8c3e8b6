# The fixed-harness arm of make compare, run by hand on the data of `make run` (seed 1); make compare now does the same.
set -ex
cd "$(dirname "$0")/../../.."
D=out/distill; C=out/compare; TD=target/release/teacher-distill; HAT=target/release/hat
FAULTS=timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03
$TD collect --harness harness-samples/taolive --tasks $D/tasks.train.jsonl --variants 0 --faults $FAULTS \
  --keep-retry-prob 0.6 --seed 1 --products 600 -o $C/teacher.fixed.full.jsonl
$HAT records cat --first-turn -i $D/teacher.original.jsonl -o $C/teacher.fixed.first.jsonl
cat $C/teacher.fixed.full.jsonl $C/teacher.fixed.first.jsonl $D/base.jsonl > $C/teacher.fixed.jsonl
wc -l $C/teacher.fixed.jsonl $D/teacher.jsonl
$TD train --records $C/teacher.fixed.jsonl --dev-records $D/teacher.primary.jsonl --tokenizer $D/tokenizer --max-steps 400 \
  --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --batch-tokens 8192 --gradient-accumulation-steps 2 \
  --eval-steps 100 --save-steps 100 --seed 1 --model-init $D/base/checkpoint-000750 --out $C/fixed --overwrite-output-dir
