#!/bin/bash
# Probe sets of many harnesses: the loader and skill names are read from the prompt once per harness, and
# rows of one harness share it (the 100-record sets of docs/runs/select-2026-12-05 hold 8 variants each,
# so their counts move a variant at a time). Here 200 held-out-template tasks, one viewer per room, each
# room under its own draw of 200 variants (under /work/exp/sel/wide):
#   trainpool: train pool, every skill and tool renamed, every name coined (data.sh's arm c1, seed 8);
#   heldout:   eval pool (names and rewrites training never sees), every skill and tool renamed, half
#              the names coined (hsa-select.toml, seed 9).
# Then `wide.sh probe NAME CKPT` probes a checkpoint free-running on both and sorts the names (names.py).
set -eo pipefail
cd /work/main
B=target/release; W=/work/exp/sel/wide; H=harness-samples/taolive; SEL=docs/runs/select-2026-12-05
SETS="heldout=$W/heldout.jsonl trainpool=$W/trainpool.jsonl"
if [ "$1" = probe ]; then
  DIR=$W SETS="$SETS" exec bash $SEL/probe.sh $2 $3
fi
mkdir -p $W
$B/hat sim tasks --harness $H --n 200 --split dev --phrasings train --viewers-per-room 1 --seed 31 --products 600 -o $W/tasks.jsonl
sed 's/^coined = 0.5/coined = 1.0/' $SEL/hsa-select.toml > $W/coined1.toml
$B/teacher-distill collect --harness $H --tasks $W/tasks.jsonl --variants 200 --pool train --original-share 0 --hsa-config $W/coined1.toml \
  --seed 8 --products 600 --variants-dir $W/trainpool.variants -o $W/trainpool.jsonl
$B/teacher-distill collect --harness $H --tasks $W/tasks.jsonl --variants 200 --pool eval --original-share 0 --hsa-config $SEL/hsa-select.toml \
  --seed 9 --products 600 --variants-dir $W/heldout.variants -o $W/heldout.jsonl
