#!/bin/bash
# run8.sh NAME CKPT DIR: teacher-forced loss of every record × loader name in DIR, then the reading score
set -eo pipefail
/work/main/target/release/teacher-distill probe --model $1=$2 $(cat $3/args) --summary $3/$1.json > /dev/null 2>&1
python3 /work/exp/cf/cf8.py score $3/$1.json $3
