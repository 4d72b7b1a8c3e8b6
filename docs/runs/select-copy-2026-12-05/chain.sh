#!/bin/bash
# The reproduce chain's SFT arms from a checkpoint of real.sh: `make reproduce`'s own recipes over its data
# (out/exp-g128/data), with the stage before them replaced by a symlink to that checkpoint.
#   chain.sh DIR CKPT lookup   the checkpoint stands for `lookup`: base (1,000 steps), then fixed and HSA-SFT
#   chain.sh DIR CKPT base     the checkpoint stands for `base`: fixed and HSA-SFT straight from it
# Then hat report (right tool, paired) and the wide name probes of each trained stage (wide.sh).
set -eo pipefail
cd /work/main
D=$1; CKPT=$2; AS=$3; H=docs/runs/select-copy-2026-12-05
mkdir -p $D/$AS
ln -sfn /work/main/out/exp-g128/data $D/data
ln -sfn $CKPT $D/$AS/$(basename $CKPT)
for s in data copy lookup $([ $AS = base ] && echo base); do touch $D/$s.done; sleep 1; done
make REPRO=$D $D/eval-hsa.done $D/eval-fixed.done > $D/make.log 2>&1
target/release/hat report --dir $D --stage fixed=Fixed-harness-SFT --stage hsa=HSA-SFT -o $D/report.md > /dev/null
for s in $([ $AS = lookup ] && echo base) hsa; do
  bash $H/wide.sh probe $(basename $D)$s $(ls -d $D/$s/checkpoint-* | tail -1)
done
