#!/bin/bash
# One report over seed.sh's three arms of one seed: $D/report.md (paired tests between adjacent rows).
#   SEED=2 bash seedreport.sh
set -eo pipefail
cd /work/main
S=/work/exp/ST/s$SEED; D=$S-report; mkdir -p $D/eval $D/ifeval
for d in eval ifeval; do
  for f in $S-fixed/$d/fixed.*; do ln -sfn $f $D/$d/; done
  for arm in reproduce stale; do
    for f in $S-$arm/$d/hsa.*; do n=$(basename $f); ln -sfn $f $D/$d/hsa-$arm.${n#hsa.}; done
  done
done
target/release/hat report --dir $D --stage fixed=Fixed-harness-SFT --stage hsa-reproduce=HSA-SFT-reproduce \
  --stage hsa-stale=HSA-SFT-stale-loader -o $D/report.md > /dev/null
