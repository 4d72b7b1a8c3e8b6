#!/bin/bash
# make reproduce's own checkpoints (out/exp-g128) played again under this session's runtime (a text
# call to a missing tool answered like a structured one), every stage, and its report rebuilt:
# $D/report.md. Fixed-harness SFT and HSA-SFT were already replayed by chain.sh ($NEW: its eval/fixed.*
# and before/eval/hsa.*); the teacher plays structured calls, so its oracle episodes are unchanged, and the
# replay section and wall-clock are the chain's own (not re-run).
#   D=/work/exp/RE NEW=/work/exp/ST/new bash reeval.sh
set -eo pipefail
cd /work/main
C=$PWD/out/exp-g128; mkdir -p $D/eval $D/ifeval
ln -sfn $C/data $D/data; ln -sfn $C/replay $D/replay; cp $C/times.tsv $D/times.tsv
for s in base opd rl; do mkdir -p $D/$s; ln -sfn $(ls -d $C/$s/checkpoint-* | tail -1) $D/$s/; done
for f in $C/eval/oracle.*; do ln -sfn $f $D/eval/; done
for f in $NEW/eval/fixed.* $NEW/before/eval/hsa.*; do ln -sfn $f $D/eval/; done
for f in $NEW/ifeval/fixed.* $NEW/before/ifeval/hsa.*; do ln -sfn $f $D/ifeval/; done
for s in data copy lookup; do touch $D/$s.done; done; sleep 1
for s in base fixed hsa opd rl oracle replay; do touch $D/$s.done; done; sleep 1
touch $D/eval-fixed.done $D/eval-hsa.done
make REPRO=$D $D/eval-base.done $D/eval-opd.done $D/eval-rl.done > $D/make.log 2>&1
target/release/hat report --dir $D --stage base=Base --stage 'fixed=Fixed-harness SFT' --stage hsa=HSA-SFT \
  --stage 'opd=+ OPD' --stage 'rl=+ HSA-RL (HAT)' --oracle 'oracle=Teacher (oracle)' -o $D/report.md > /dev/null
