#!/usr/bin/env bash
# The reply polish (docs/learning-default.md, thirty-ninth session): make reproduce's SFT models (out/r37,
# the thirty-seventh session's retrain of the chain) trained R_POLISH_STEPS more steps on the room-state
# dialogues (dialog.jsonl: calls, tool results and replies under the room-state sections alone, ids
# renamed) with the stage recipe, as `make reproduce`'s fixed and hsa stages now do; then the polished and
# unpolished models of both arms played on the 200 primary tasks under the original harness, the 8
# held-out variants and held-out wording (reproduce's faults and seed), and the teacher-forced probe of
# reply numbers and product ids. Arms: the failed replies-only arm (--tool-call-weight 0); the polish at
# 1e-3 held (constant_with_warmup) at seed 1 (data order) for both SFT arms and at seed 2 for HSA-SFT;
# the polish decayed on a cosine (what make reproduce runs) at seeds 1 and 2 for HSA-SFT. The held-out
# sets were played for the cosine arms only (the constant arms' were stopped once seed 2 collapsed).
set -euo pipefail
R=${R:-out/r37}
O=${O:-out/rp39}
BIN=${BIN:-target/release}
TD=$BIN/teacher-distill
STAGE="--learning-rate 1e-3 --lr-scheduler-type constant_with_warmup --warmup-steps 20 --eval-steps 0
  --overwrite-output-dir --batch-tokens 4096 --tokenizer $R/data/tokenizer --records $R/data/dialog.jsonl"
if [ "${TRAIN:-1}" = 1 ]; then
  $TD train $STAGE --seed 1 --tool-call-weight 0 --model-init $R/hsa/checkpoint-000200 \
    --max-steps 600 --save-steps 300 --out $O/reply600
  $TD train $STAGE --seed 1 --model-init $R/hsa/checkpoint-000200 --max-steps 600 --save-steps 300 --out $O/dialog600
  $TD train $STAGE --seed 2 --model-init $R/hsa/checkpoint-000200 --max-steps 600 --save-steps 600 --out $O/hsa-s2
  $TD train $STAGE --seed 1 --model-init $R/fixed/checkpoint-000200 --max-steps 600 --save-steps 600 --out $O/fixed-s1
  for seed in 1 2; do
    $TD train ${STAGE/constant_with_warmup/cosine} --seed $seed --model-init $R/hsa/checkpoint-000200 \
      --max-steps 600 --save-steps 600 --out $O/cos-s$seed
  done
fi
HELDOUT=$(ls -d $R/data/heldout/variant-* | paste -sd,)
MODELS=(--model fixed=$R/fixed/checkpoint-000200 --model fixed+polish=$O/fixed-s1/checkpoint-000600
  --model hsa=$R/hsa/checkpoint-000200 --model hsa+polish=$O/dialog600/checkpoint-000600
  --model hsa+polish-s2=$O/hsa-s2/checkpoint-000600)
EVAL=(--n 200 --max-tokens 160 --faults timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03 --seed 1
  --products 600)
COS=(--model hsa=$R/hsa/checkpoint-000200 --model cos-s1=$O/cos-s1/checkpoint-000600
  --model cos-s2=$O/cos-s2/checkpoint-000600)
for set in primary heldout; do
  case $set in primary) dirs=harness-samples/taolive ;; heldout) dirs=$HELDOUT ;; esac
  $TD eval --tasks $R/data/tasks.primary.jsonl "${EVAL[@]}" "${COS[@]}" --set $set=$dirs \
    --episodes $O/cos.$set.jsonl > $O/cos.$set.md
done
for set in primary; do
  case $set in
    primary) tasks=$R/data/tasks.primary.jsonl dirs=harness-samples/taolive ;;
    heldout) tasks=$R/data/tasks.primary.jsonl dirs=$HELDOUT ;;
    phrasings) tasks=$R/data/tasks.phrasings.jsonl dirs=harness-samples/taolive ;;
  esac
  $TD eval --tasks $tasks "${EVAL[@]}" "${MODELS[@]}" --set $set=$dirs \
    --episodes $O/eval5.$set.jsonl --summary $O/eval5.$set.json > $O/eval5.$set.md
done
$TD probe "${MODELS[@]}" --model replies-only=$O/reply600/checkpoint-000600 \
  --records primary=$R/data/teacher.primary.jsonl --summary $O/probe.json > $O/probe.md
python3 scripts/reply_facts.py $O/probe.json $R/data/teacher.primary.jsonl > $O/facts.txt
python3 scripts/product_id_copy.py $O/probe.json $R/data/teacher.primary.jsonl > $O/ids.txt
