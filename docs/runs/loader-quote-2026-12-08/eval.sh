#!/bin/bash
# usage: eval.sh NAME CKPT SET  (SET: primary | spec | heldout)
set -e
cd /work/main
NAME=$1; CKPT=$2; SET=$3
F=timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03
case $SET in
 primary) T=out/r43/data/tasks.primary.jsonl; S=primary=harness-samples/taolive;;
 spec) T=/work/x47/spec.tasks.jsonl; S=spec=harness-samples/taolive;;
 heldout) T=out/r43/data/tasks.primary.jsonl; S=heldout=$(ls -d out/r43/data/heldout/variant-* | paste -sd,);;
esac
/work/bin44/teacher-distill eval --tasks $T --n 200 --max-tokens 160 --faults $F --seed 1 --products 600 \
  --model $NAME=$CKPT --set $S --episodes /work/x47/$NAME.$SET.jsonl > /dev/null
