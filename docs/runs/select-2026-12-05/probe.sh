#!/bin/bash
# probe.sh NAME CKPT: free-running openings on 100 held-out-variant records (eval pool) and 100 all-renamed
# train-pool records; names.py classifies each name said
set -eo pipefail
cd /work/main
TD=target/release/teacher-distill; S=/work/exp/sel
$TD probe --model $1=$2 --records heldout=$S/heldout100.jsonl --records trainpool=$S/${TRAINPOOL:-trainpool100.jsonl} \
  --free-running --summary $S/$1.free.json > $S/$1.free.md
python3 $S/names.py $S/$1.free.json heldout=$S/heldout100.jsonl trainpool=$S/${TRAINPOOL:-trainpool100.jsonl} | tee $S/$1.names.txt
