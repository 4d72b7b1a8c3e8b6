#!/bin/bash
# A second SFT seed of fixed-harness SFT and HSA-SFT on make reproduce's records, and of HSA-SFT on the
# stale-loader records (data.sh), all from make reproduce's base, make reproduce's SFT recipe but --seed $SEED (the order the records are drawn in;
# nothing else differs), then played as every stage is (make's eval at the chain's SEED=1, so the tasks and
# faults are the same as for seed 1).
#   SEED=2 bash seed.sh [ARMS]   (ARMS: fixed reproduce stale by default; writes /work/exp/ST/s$SEED-ARM)
set -eo pipefail
cd /work/main
C=$PWD/out/exp-g128
for arm in ${1:-fixed reproduce stale}; do
  S=$([ $arm = fixed ] && echo fixed || echo hsa)
  D=/work/exp/ST/s$SEED-$arm; mkdir -p $D/data $D/base
  for f in $C/data/*; do ln -sfn $f $D/data/$(basename $f); done
  [ $arm = stale ] && ln -sfn /work/exp/ST/r100/sft.hsa.jsonl $D/data/sft.hsa.jsonl
  ln -sfn $C/base/checkpoint-001000 $D/base/checkpoint-001000
  for s in data copy lookup base; do touch $D/$s.done; sleep 1; done
  target/release/teacher-distill train --tokenizer $D/data/tokenizer --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup \
    --batch-tokens 8192 --gradient-accumulation-steps 2 --seed $SEED --eval-steps 0 --overwrite-output-dir --mtp-loss-weight 0 \
    --records $D/data/sft.$S.jsonl --model-init $D/base/checkpoint-001000 --max-steps 200 --save-steps 200 --out $D/$S > $D/train.log 2>&1
  touch $D/$S.done
  make REPRO=$D $D/eval-$S.done > $D/make.log 2>&1
done
