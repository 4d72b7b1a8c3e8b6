#!/bin/bash
# Does E5 read a coined name it never saw, from the train pool? 8 new train-pool variants (coined 0.5,
# seed 7: other names than training's seed 1) on the 200 primary tasks; R and E5 free-running.
set -eo pipefail
cd /work/main
TD=/work/tgt-exp/release/teacher-distill
E=/work/exp/E5; D=out/distill
$TD collect --harness harness-samples/taolive --tasks $D/tasks.primary.jsonl --variants 8 --pool train --original-share 0 \
  --hsa-config $E/coined.toml --seed 7 --products 600 --variants-dir $E/trainpool -o $E/teacher.trainpool.jsonl
$TD probe --model R=/work/exp/R/sft/checkpoint-000400 --model E5=$E/sft/checkpoint-000400 \
  --records trainpool=$E/teacher.trainpool.jsonl --free-running --summary $E/trainpool.free.json > $E/trainpool.free.md
python3 scripts/renamed_names.py $E/teacher.trainpool.jsonl $E/trainpool.free.json | tee $E/trainpool.renamed.md
