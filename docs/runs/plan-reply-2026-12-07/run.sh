#!/usr/bin/env bash
# The plan names what the reply will state (docs/learning-default.md, forty-second session).
# From the forty-first session's plan-quote chain (out/pq41: its base and HSA-SFT; its rows' sources in
# out/r41), arms at equal data and compute, each played on the 200 primary tasks under the original
# harness, faults on, as out/pq41's evals were:
#   polish1800   plan-quote's HSA-SFT, polished 1,800 steps instead of 600 (same rows, cosine)
#   pr600/1800   rows re-quoted so the plan line ends with the result fields the reply states
#                (`→ title, price`), HSA-SFT 200 from the same base, polish 600 / 1,800 — made with the hat
#                of becb264 (HAT_FIELDS_ONLY below); the committed --plan-reply also restates them:
#   rs600/1800   the same, and the reply's reasoning restates the fields (`→ title, price`): `hat records cat
#                --quote-evidence --plan-reply` at 3a21224 (HAT_PLAN_REPLY below; reverted since)
#   s2pq, s2rs   polish1800 and rs1800 again with data-order seed 2 (SFT and polish)
#   mix1800      rs1800 with 1,600 full HSA episodes (tools listed, variants) among the polish rows; s2mix1800
#                the same with seed 2; pqmix1800 the mixed polish from plan-quote's HSA-SFT (no --plan-reply)
# Held-out variants for polish1800, rs1800 and mix1800.
set -euo pipefail
R=${R:-out/r41}
Q=${Q:-out/pq41}
X=${X:-out/x43}
BIN=${BIN:-target/release}
TD=$BIN/teacher-distill
S='Room state|Current product|Order in this conversation'
ck() { ls -d "$1"/checkpoint-* | tail -1; }
rows() { # HAT DIR: the SFT and polish rows of an arm
  local hat=$1 D=$2
  mkdir -p $D
  [ -f $D/sft.hsa.jsonl ] && return
  q() { $hat records cat --quote-evidence --plan-reply "$@"; }
  q --rename-ids 1 -i $R/data/teacher.full.jsonl -o $D/teacher.full.renamed.jsonl
  q --first-turn --rename-ids 1 -i $R/data/teacher.first.full.jsonl -o $D/teacher.first.renamed.jsonl
  q --first-turn --dialogue-only --keep-sections "$S" --rename-ids 1 -i $R/data/teacher.original.jsonl -o $D/room.jsonl
  q --dialogue-only --keep-sections "$S" --rename-ids 2 -i $R/data/teacher.original.jsonl -o $D/dialog.jsonl
  cat $Q/data/copy.jsonl $D/room.jsonl > $D/lookup.jsonl
  cat $D/lookup.jsonl $D/dialog.jsonl > $D/reply.jsonl
  cat $D/teacher.full.renamed.jsonl $D/teacher.first.renamed.jsonl $D/reply.jsonl > $D/sft.hsa.jsonl
}
[ -n "${HAT_FIELDS_ONLY:-}" ] && rows $HAT_FIELDS_ONLY $X/data
rows ${HAT_PLAN_REPLY:?a hat binary built at 3a21224, whose --plan-reply restates the fields} $X/data2
# The mixed polish rows: the dialogues and 1,600 of the 4,794 full HSA episodes (seeded shuffle), for the
# restated rows (data2) and for plan-quote's (pqmix1800: the mixed polish without --plan-reply).
for d in $X/data2 $Q/data; do python3 - "$d" <<'PY'
import random, sys
d = sys.argv[1]
full = open(f"{d}/teacher.full.renamed.jsonl").readlines()
random.Random(1).shuffle(full)
with open(f"{d}/polish-mix.jsonl", "w") as f:
    f.writelines(open(f"{d}/dialog.jsonl").readlines())
    f.writelines(full[:1600])
PY
done
stage() { # SEED INIT ROWS STEPS SCHEDULE BATCH OUT
  local extra="--batch-tokens $6"
  [ "$6" = 8192 ] && extra="$extra --gradient-accumulation-steps 2 --mtp-loss-weight 0"
  [ -d $7/checkpoint-$(printf %06d $4) ] || $TD train --learning-rate 1e-3 --warmup-steps 20 --seed $1 --eval-steps 0 \
    --overwrite-output-dir --tokenizer $R/data/tokenizer --lr-scheduler-type $5 $extra \
    --model-init "$2" --records "$3" --max-steps $4 --save-steps $4 --out $7
}
sft() { stage $1 $(ck $Q/base) $2/sft.hsa.jsonl 200 constant_with_warmup 8192 $3; }
polish() { stage $1 "$2" "$3" $4 cosine 4096 $5; }
HELDOUT=$(ls -d $R/data/heldout/variant-* | paste -sd,)
evaluate() { # NAME CHECKPOINT SET
  local dirs=harness-samples/taolive
  [ $3 = heldout ] && dirs=$HELDOUT
  $TD eval --tasks $R/data/tasks.primary.jsonl --n 200 --max-tokens 160 \
    --faults timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03 --seed 1 --products 600 \
    --model $1=$2 --set $3=$dirs --episodes $X/eval.$1.$3.jsonl --summary $X/eval.$1.$3.json > $X/eval.$1.$3.md
}
polish 1 $(ck $Q/hsa/sft) $Q/data/dialog.jsonl 1800 $X/polish1800
if [ -n "${HAT_FIELDS_ONLY:-}" ]; then
  sft 1 $X/data $X/pr/sft
  for n in 600 1800; do polish 1 $(ck $X/pr/sft) $X/data/dialog.jsonl $n $X/pr/p$n; evaluate pr$n $(ck $X/pr/p$n) primary; done
fi
sft 1 $X/data2 $X/rs/sft
for n in 600 1800; do polish 1 $(ck $X/rs/sft) $X/data2/dialog.jsonl $n $X/rs/p$n; evaluate rs$n $(ck $X/rs/p$n) primary; done
polish 1 $(ck $X/rs/sft) $X/data2/polish-mix.jsonl 1800 $X/rs/mix1800
polish 1 $(ck $Q/hsa/sft) $Q/data/polish-mix.jsonl 1800 $X/pqmix1800
sft 2 $Q/data $X/s2/pq/sft
polish 2 $(ck $X/s2/pq/sft) $Q/data/dialog.jsonl 1800 $X/s2/pq/p1800
sft 2 $X/data2 $X/s2/rs/sft
polish 2 $(ck $X/s2/rs/sft) $X/data2/dialog.jsonl 1800 $X/s2/rs/p1800
polish 2 $(ck $X/s2/rs/sft) $X/data2/polish-mix.jsonl 1800 $X/s2/rs/mix1800
evaluate polish1800 $(ck $X/polish1800) primary
evaluate s2pq $(ck $X/s2/pq/p1800) primary
evaluate s2rs $(ck $X/s2/rs/p1800) primary
evaluate s2pq-sft-only $(ck $X/s2/pq/sft) primary
for set in primary heldout; do
  evaluate mix1800 $(ck $X/rs/mix1800) $set
  evaluate s2mix1800 $(ck $X/s2/rs/mix1800) $set
  evaluate pqmix1800 $(ck $X/pqmix1800) $set
done
for arm in polish1800 rs1800; do evaluate $arm $(ck $X/${arm/rs1800/rs\/p1800}) heldout; done
