#!/bin/bash
# E5: HSA-SFT with coined train-pool names (coined = 0.5, 256 variants) from R's reply-600 checkpoint;
# same recipe as R's SFT otherwise (docs/learning-default.md). Data part.
set -eo pipefail
cd /work/main
TD=/work/tgt-exp/release/teacher-distill
HAT=target/release/hat
E=/work/exp/E5; D=out/distill; C=out/curriculum
FAULTS=timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03
CAT="--products 600"
$TD collect --harness harness-samples/taolive --tasks $D/tasks.train.jsonl --variants 256 --original-share 0.5 \
  --keep-retry-prob 0.6 --hsa-config $E/coined.toml --faults $FAULTS --seed 1 $CAT -o $E/teacher.full.jsonl --summary $E/collect.json
$TD collect --harness harness-samples/taolive --tasks $D/tasks.first.jsonl --variants 256 --original-share 0.5 \
  --keep-retry-prob 0.6 --hsa-config $E/coined.toml --faults $FAULTS --seed 1 $CAT -o $E/teacher.first.full.jsonl --summary $E/collect.first.json
$HAT records cat --first-turn -i $E/teacher.first.full.jsonl -o $E/teacher.first.jsonl
for f in teacher.full teacher.first; do $HAT records cat --rename-ids 1 -i $E/$f.jsonl -o $E/$f.renamed.jsonl; done
cat $E/teacher.full.renamed.jsonl $E/teacher.first.renamed.jsonl $C/reply.jsonl > $E/sft.jsonl
