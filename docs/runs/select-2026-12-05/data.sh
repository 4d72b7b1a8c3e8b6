#!/bin/bash
# The selection rows (docs/learning-default.md, twenty-second session), under /work/exp/sel:
# 32,000 train tasks in rooms of 32 viewers, each room played by the teacher under one of 1,000 train-pool
# HSA variants in which every skill and tool is renamed (docs/runs/select-2026-12-05/hsa-select.toml: coined = 0.5; arm c1:
# coined = 1.0, seed 12), cut to the opening turn (loader call with the skill's name, and the first tool
# call). Product ids are NOT renamed per record: that would end the shared prefix at the room state and
# put 3 rows in an 8,192-token batch instead of ~25 (the room's viewers share the ~2,550-token prompt).
# Probe sets: 100 records of make reproduce's held-out variants (eval pool), and 100 of 8 new train-pool
# all-renamed variants (seed 7) on the primary tasks.
set -eo pipefail
cd /work/main
B=target/release; S=/work/exp/sel; H=harness-samples/taolive; F=timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03
$B/hat sim tasks --harness $H --n 32000 --split train --viewers-per-room 32 --seed 11 --products 600 -o $S/tasks.jsonl
arm() { # arm CONFIG SEED SUFFIX
  $B/teacher-distill collect --harness $H --tasks $S/tasks.jsonl --variants 1000 --original-share 0 --hsa-config $1 --seed $2 \
    --products 600 --faults $F --keep-retry-prob 0.6 -o $S/teacher$3.jsonl --variants-dir $S/variants$3
  $B/hat records cat --first-turn -i $S/teacher$3.jsonl -o $S/select$3.jsonl
  $B/teacher-distill collect --harness $H --tasks out/exp-g128/data/tasks.primary.jsonl --variants 8 --pool train --original-share 0 \
    --hsa-config $1 --seed 7 --products 600 --variants-dir $S/trainpool$3 -o $S/teacher.trainpool$3.jsonl
  head -100 $S/teacher.trainpool$3.jsonl > $S/trainpool100$3.jsonl
}
arm docs/runs/select-2026-12-05/hsa-select.toml 11 ""
sed 's/^coined = 0.5/coined = 1.0/' docs/runs/select-2026-12-05/hsa-select.toml > $S/coined1.toml
arm $S/coined1.toml 12 .c1
head -100 out/exp-g128/data/teacher.heldout.jsonl > $S/heldout100.jsonl
