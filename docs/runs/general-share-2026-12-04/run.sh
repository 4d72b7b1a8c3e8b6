#!/bin/bash
set -e
cd /work/main
R=out/exp-g128
M="make REPRO=$R R_GENERAL_TRAIN=128000"
ifeval() { target/release/hat general eval --model $(ls -d $R/$1/checkpoint-* | tail -1) --input $R/data/general-eval.jsonl --max-new-tokens 160 --answers $R/ifeval.$1.answers.jsonl > $R/ifeval.$1.json; echo "$1 $(date +%T)"; }
$M $R/base.done
ifeval base
ifeval lookup
$M $R/hsa.done
ifeval hsa
$M $R/opd.done
ifeval opd
echo ALL-DONE
