#!/bin/bash
# The reproduce chain with the reader in it and the reading's rows kept as a share of every later stage
# (docs/learning-default.md, twenty-fifth session):
#   reader (CKPT: real.sh's annealed checkpoint, reads loader names from the real prompt)
#   -> lookup  make reproduce's lookup rows (copy rows of every kind + room-state opening turns), 800 steps,
#              + 5,000 all-coined selection rows + 5,000 synthetic copy rows
#   -> base    make reproduce's base records, 1,000 steps, + 10,000 selection + 10,000 synthetic rows
#              (the twenty-fourth session's sharebase)
#   -> fixed-harness SFT and HSA-SFT, make reproduce's recipes (200 steps), each arm's records joined by
#              the SAME 5,000 selection + 5,000 synthetic rows, so the arms still differ only by harness
# Selection rows are disjoint across the three stages (select.c1.jsonl lines 1-10k base, 10-15k lookup,
# 15-20k SFT). Then hat report and the wide name probes of base and HSA-SFT (wide.sh).
#   chain.sh DIR CKPT
set -eo pipefail
cd /work/main
D=$1; CKPT=$2; SC=docs/runs/select-copy-2026-12-05; DATA=/work/main/out/exp-g128/data
SEL=/work/exp/sel/select.c1.jsonl; SYN=/work/exp/R/synth.jsonl
TRAIN="target/release/teacher-distill train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed 1
  --eval-steps 0 --overwrite-output-dir --batch-tokens 4096 --tokenizer $DATA/tokenizer"
mkdir -p $D/data
for f in $DATA/*; do ln -sfn $f $D/data/$(basename $f); done
rm -f $D/data/sft.fixed.jsonl $D/data/sft.hsa.jsonl
sed -n 15001,20000p $SEL | cat - <(sed -n 5001,10000p $SYN) > $D/sft-share.jsonl
cat $DATA/sft.fixed.jsonl $D/sft-share.jsonl > $D/data/sft.fixed.jsonl
cat $DATA/sft.hsa.jsonl $D/sft-share.jsonl > $D/data/sft.hsa.jsonl
sed -n 10001,15000p $SEL | cat $DATA/lookup.jsonl - <(head -5000 $SYN) > $D/lookup-records.jsonl
head -10000 $SEL | cat $DATA/base-records.jsonl - $SYN > $D/base-records.jsonl
[ -e $D/lookup.done ] || { $TRAIN --model-init $CKPT --records $D/lookup-records.jsonl --max-steps 800 --save-steps 800 \
  --out $D/lookup > $D/lookup.log 2>&1; touch $D/data.done $D/copy.done; sleep 1; touch $D/lookup.done; }
[ -e $D/base.done ] || { $TRAIN --model-init $D/lookup/checkpoint-000800 --records $D/base-records.jsonl --max-steps 1000 \
  --save-steps 1000 --out $D/base > $D/base.log 2>&1; touch $D/base.done; }
make REPRO=$D $D/eval-hsa.done $D/eval-fixed.done > $D/make.log 2>&1
target/release/hat report --dir $D --stage fixed=Fixed-harness-SFT --stage hsa=HSA-SFT -o $D/report.md > /dev/null
for s in base hsa; do
  bash $SC/wide.sh probe $(basename $D)$s $(ls -d $D/$s/checkpoint-* | tail -1)
done
