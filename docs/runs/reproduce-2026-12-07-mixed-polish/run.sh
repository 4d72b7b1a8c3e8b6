#!/bin/bash
# Full make reproduce with the adopted mixed polish, reusing out/r42's unchanged stages
# (data, copy, lookup, base, both SFT arms, eval-base, oracle).
set -euo pipefail
cd /work/main
B=/work/bin44
R=out/r43
rm -rf $R; mkdir -p $R/fixed $R/hsa $R/eval $R/ifeval
cp -al out/r42/data out/r42/copy out/r42/lookup out/r42/base $R/
cp -al out/r42/fixed/sft $R/fixed/; cp -al out/r42/hsa/sft $R/hsa/
cp -al out/r42/eval/base.* out/r42/eval/oracle.* $R/eval/; cp -al out/r42/ifeval/base.* $R/ifeval/
grep -E "^(data|copy|lookup|base|eval-base|oracle)\b" out/r42/times.tsv > $R/times.tsv || true
for s in data copy lookup base; do touch $R/$s.done; sleep 1; done
touch $R/eval-base.done $R/oracle.done
for arm in fixed:teacher.fixed.full hsa:teacher.full; do
  { cat $R/data/dialog.jsonl && $B/hat records cat --shard 0/3 -i $R/data/${arm#*:}.renamed.jsonl; } > $R/data/polish.${arm%%:*}.jsonl
done
for arm in hsa fixed; do
  t0=$(date +%s)
  $B/teacher-distill train --learning-rate 1e-3 --warmup-steps 20 --seed 1 --eval-steps 0 --overwrite-output-dir --batch-tokens 4096 \
    --lr-scheduler-type cosine --tokenizer $R/data/tokenizer --records $R/data/polish.$arm.jsonl --max-steps 1800 --save-steps 1800 \
    --model-init $R/$arm/sft/checkpoint-000200 --out $R/$arm
  echo -e "$arm-polish\t$(( $(date +%s) - t0 ))" >> $R/times.tsv
  touch $R/$arm.done
done
make reproduce REPRO=$R BIN=$B CARGO=true
echo R43-DONE
