#!/bin/bash
# The reproduce chain's SFT arms from a checkpoint of real.sh: `make reproduce`'s own recipes over its data
# (out/exp-g128/data), with the stage before them replaced by a symlink to that checkpoint.
#   chain.sh DIR CKPT lookup     the checkpoint stands for `lookup`: base (1,000 steps), then fixed and HSA-SFT
#   chain.sh DIR CKPT base       the checkpoint stands for `base`: fixed and HSA-SFT straight from it
#   chain.sh DIR CKPT sharebase  base's recipe from the checkpoint with 10,000 all-coined selection rows and
#                                real.sh's 10,000 synthetic copy rows among its records, then as `base`
# Then hat report (right tool, paired) and the wide name probes of each trained stage (wide.sh). The
# twenty-fourth session ran these by hand (probes wchbase, wchhsa, wch2hsa, wbsbase).
set -eo pipefail
cd /work/main
D=$1; CKPT=$2; AS=$3; H=docs/runs/select-copy-2026-12-05; DATA=/work/main/out/exp-g128/data
if [ $AS = sharebase ]; then
  mkdir -p $D
  head -10000 /work/exp/sel/select.c1.jsonl | cat $DATA/base-records.jsonl - /work/exp/R/synth.jsonl > $D/share-records.jsonl
  target/release/teacher-distill train --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --seed 1 \
    --eval-steps 0 --overwrite-output-dir --batch-tokens 4096 --tokenizer $DATA/tokenizer --model-init $CKPT \
    --records $D/share-records.jsonl --max-steps 1000 --save-steps 1000 --out $D/sharebase > $D/sharebase.log 2>&1
  bash $H/wide.sh probe $(basename $D)sharebase $D/sharebase/checkpoint-001000
  CKPT=$D/sharebase/checkpoint-001000; AS=base
fi
mkdir -p $D/$AS
ln -sfn $DATA $D/data
ln -sfn $CKPT $D/$AS/$(basename $CKPT)
for s in data copy lookup $([ $AS = base ] && echo base); do touch $D/$s.done; sleep 1; done
make REPRO=$D $D/eval-hsa.done $D/eval-fixed.done > $D/make.log 2>&1
target/release/hat report --dir $D --stage fixed=Fixed-harness-SFT --stage hsa=HSA-SFT -o $D/report.md > /dev/null
for s in $([ $AS = lookup ] && echo base) hsa; do
  bash $H/wide.sh probe $(basename $D)$s $(ls -d $D/$s/checkpoint-* | tail -1)
done
