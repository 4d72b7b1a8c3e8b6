#!/bin/bash
# HSA-SFT on the stale-loader records (data.sh, $RECORDS) from `make reproduce`'s own base
# (out/exp-g128/base), make reproduce's SFT recipe (200 steps); the chain's fixed-harness SFT and
# HSA-SFT models (out/exp-g128/{fixed,hsa}) evaluated again beside it, since the runtime now answers a
# text-form call to a missing tool as it answers a structured one. Then hat report over the three.
#   RECORDS=/work/exp/ST/r100/sft.hsa.jsonl D=/work/exp/ST/new bash chain.sh
set -eo pipefail
cd /work/main
C=out/exp-g128; mkdir -p $D/data $D/base $D/fixed $D/before/hsa
for f in $C/data/*; do ln -sfn $PWD/$f $D/data/$(basename $f); done
ln -sfn $RECORDS $D/data/sft.hsa.jsonl
ln -sfn $PWD/$C/base/checkpoint-001000 $D/base/checkpoint-001000
ln -sfn $PWD/$C/fixed/checkpoint-000200 $D/fixed/checkpoint-000200
ln -sfn $PWD/$C/hsa/checkpoint-000200 $D/before/hsa/checkpoint-000200
ln -sfn $PWD/$C/data $D/before/data
for s in data copy lookup base fixed; do touch $D/$s.done; sleep 1; done
touch $D/before/data.done $D/before/copy.done $D/before/lookup.done; sleep 1; touch $D/before/base.done; sleep 1; touch $D/before/hsa.done
make REPRO=$D $D/eval-hsa.done $D/eval-fixed.done > $D/make.log 2>&1
make REPRO=$D/before $D/before/eval-hsa.done >> $D/make.log 2>&1
for d in eval ifeval; do
  for f in $D/before/$d/hsa.*; do n=$(basename $f); ln -sfn $f $D/$d/hsa-before.${n#hsa.}; done
done
target/release/hat report --dir $D --stage fixed=Fixed-harness-SFT --stage hsa-before=HSA-SFT-reproduce --stage hsa=HSA-SFT-stale-loader \
  -o $D/report.md > /dev/null
