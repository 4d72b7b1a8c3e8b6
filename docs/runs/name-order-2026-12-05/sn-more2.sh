set -e
cd /work/main
N=/work/exp/SN
nice -n 19 target/release/teacher-distill train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed 3 --eval-steps 0 \
  --overwrite-output-dir --batch-tokens 4096 --tokenizer out/exp-g128/data/tokenizer --model-init $N/more/checkpoint-003000 \
  --records $N/train.jsonl --max-steps 3000 --save-steps 1000 --out $N/more2 > $N/more2.log 2>&1
for s in 1000 2000 3000; do
  nice -n 19 target/release/teacher-distill probe --model SN-more2$s=$N/more2/checkpoint-$(printf %06d $s) --records heldout=$N/eval.jsonl \
    --records train-syllables=$N/dev.jsonl --summary $N/more2.probe$s.json > $N/more2.probe$s.md
done
