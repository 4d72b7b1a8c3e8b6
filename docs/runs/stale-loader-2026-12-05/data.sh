#!/bin/bash
# HSA-SFT records of `make reproduce` (out/exp-g128/data) re-collected with the teacher calling a renamed
# skill loader by its old name at rate $RATE (`--noise-stale-loader`): the runtime refuses it with the
# variant's tool list, and a trajectory kept in full (--keep-retry-prob 0.6) trains the call under the
# variant's name. Same tasks, seed, variants and faults as the chain's data, so at RATE=0 the files are
# the chain's own (checked by cmp). Writes $D/sft.hsa.jsonl built as the Makefile builds it.
#   RATE=0.5 D=/work/exp/ST/r50 bash data.sh
set -eo pipefail
cd /work/main
DATA=out/exp-g128/data; B=target/release; mkdir -p $D
COLLECT="$B/teacher-distill collect --harness harness-samples/taolive --variants 64 --original-share 0.5 --keep-retry-prob 0.6
  --faults timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03 --seed 1 --products 600 --noise-stale-loader $RATE"
$COLLECT --tasks $DATA/tasks.train.jsonl -o $D/teacher.full.jsonl --summary $D/collect.json 2> $D/collect.log
$COLLECT --tasks $DATA/tasks.first.jsonl -o $D/teacher.first.full.jsonl --summary $D/collect.first.json 2>> $D/collect.log
$B/hat records cat --first-turn -i $D/teacher.first.full.jsonl -o $D/teacher.first.jsonl
for f in teacher.full teacher.first; do $B/hat records cat --rename-ids 1 -i $D/$f.jsonl -o $D/$f.renamed.jsonl; done
cat $D/teacher.full.renamed.jsonl $D/teacher.first.renamed.jsonl $DATA/reply.jsonl > $D/sft.hsa.jsonl
