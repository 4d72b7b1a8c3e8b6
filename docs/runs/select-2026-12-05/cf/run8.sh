#!/bin/bash
# run8.sh NAME CKPT DIR: teacher-forced loss of every record × loader name in DIR (cf8.py build), then the
# reading score (cf8.py score, beside this script)
set -eo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
/work/main/target/release/teacher-distill probe --model $1=$2 $(cat $3/args) --summary $3/$1.json > /dev/null
python3 $HERE/cf8.py score $3/$1.json $3
