#!/bin/bash
# probe.sh NAME CKPT: free-running openings on 100 held-out-variant records (eval pool) and 100 all-renamed
# train-pool records (TRAINPOOL=trainpool100.c1.jsonl for the every-name-coined arm); names.py (beside
# this script) classifies each name said. DIR= and SETS= (space-separated NAME=FILE) probe other sets
# (docs/runs/select-copy-2026-12-05/wide.sh)
set -eo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd /work/main
TD=target/release/teacher-distill; S=${DIR:-/work/exp/sel}; SETS=${SETS:-"heldout=$S/heldout100.jsonl trainpool=$S/${TRAINPOOL:-trainpool100.jsonl}"}
$TD probe --model $1=$2 $(printf -- '--records %s ' $SETS) --free-running --summary $S/$1.free.json > $S/$1.free.md
python3 $HERE/names.py $S/$1.free.json $SETS | tee $S/$1.names.txt
