#!/bin/bash
# Issue 24, the unscored-accuracy arm: compare it with the earlier arms under today's judge (only
# accuracy changed: a reply with no number where the task's facts have some is unscored, not 1).
# Rescores copies of every arm's eval episodes into $R-rescored/eval, then the table and paired tests.
#   NAME=rl-kl-nan bash docs/runs/grpo-kl-2026-12-04/run.sh    # the run (judge as of e05988f)
#   bash docs/runs/grpo-nan-2026-12-05/rescore.sh
set -e
cd "$(dirname "$0")/../../.."
R=${R:-out/exp-g128}; S=$R-rescored; B=target/release
mkdir -p $S/eval
for a in opd rl rl-kl rl-kl-acc rl-kl-nan; do for set in primary heldout; do
  $B/judge score -i $R/eval/$a.$set.jsonl -o $S/eval/$a.$set.jsonl 2> /dev/null
done; done
$B/hat report --dir $S --stage 'opd=OPD (start)' --stage rl=rl --stage rl-kl=rl-kl --stage rl-kl-acc=rl-kl-acc \
  --stage rl-kl-nan=rl-kl-nan -o $S/compare.md > /dev/null
for set in primary heldout; do python3 scripts/paired_scores.py $S $set opd rl rl-kl rl-kl-nan; done > $S/paired.txt
