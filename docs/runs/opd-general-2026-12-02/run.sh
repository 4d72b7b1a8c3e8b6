#!/bin/bash
# Issue 23's experiment at the embedded default's scale (2026-12-02/03): base (general stage) -> fixed-harness
# SFT -> OPD with the base as teacher; IFEval-lite of all three on the same 200 held-out prompts (paired
# tests) and the right tool of SFT and OPD in the simulator. Release binaries in $B, `make distill-data`'s
# files in $D (tokenizer, base.jsonl, teacher.original.jsonl, tasks.primary.jsonl), run in an empty dir.
set -eo pipefail
B=${B:-target/release}
D=${D:-out/distill}
$B/hat general prompts --split train --n 8000 --seed 1 -o general-train.jsonl
$B/hat general prompts --split eval --n 200 --seed 1 -o general-eval.jsonl
# base: general SFT + the distill-base dialogue openings, from scratch (make's BASE_TRAIN recipe);
# run with --max-steps 3000 and stopped after its step-2000 checkpoint (IFEval-lite had plateaued, below)
cat general-train.jsonl $D/base.jsonl > base-records.jsonl
$B/teacher-distill train --model-init tiny --learning-rate 1e-3 --lr-scheduler-type constant_with_warmup \
  --warmup-steps 20 --batch-tokens 2048 --seed 1 --eval-steps 0 --overwrite-output-dir \
  --records base-records.jsonl --tokenizer $D/tokenizer --max-steps 2000 --save-steps 500 --out base
for s in 000500 001000 001500 002000; do
  $B/hat general eval --model base/checkpoint-$s --input general-eval.jsonl --limit 100 --answers base$((10#$s))-answers.jsonl
done
# fixed-harness SFT from the base: the original harness's opening turns only, no general rows
$B/teacher-distill train --records $D/teacher.original.jsonl --model-init base/checkpoint-002000 --tokenizer $D/tokenizer \
  --max-steps 300 --learning-rate 1e-3 --batch-tokens 8192 --save-steps 100 --eval-steps 0 --seed 1 --out sft --overwrite-output-dir
for s in 000100; do
  $B/hat general eval --model sft/checkpoint-$s --input general-eval.jsonl --limit 100 --answers sft100-answers.jsonl
done
# OPD from the SFT model, the base as teacher: reverse_kl / importance sampling, 8 prompts x 1 sample a step
$B/opd --model sft/checkpoint-000300 --teacher base/checkpoint-002000 --prompts general-train.jsonl \
  --eval-prompts general-eval.jsonl --eval-limit 200 --eval-steps 50 --max-steps 200 --save-steps 50 \
  --learning-rate 1e-3 --seed 1 --out opd-lr1e-3 --overwrite-output-dir
$B/opd --model sft/checkpoint-000300 --teacher base/checkpoint-002000 --prompts general-train.jsonl \
  --eval-prompts general-eval.jsonl --eval-limit 200 --eval-steps 100 --max-steps 400 --save-steps 100 \
  --learning-rate 3e-4 --seed 1 --out opd-400 --overwrite-output-dir
# (a first 100-step run at 3e-4, eval every 20, gave 0.265 instruction-loose at its end: opd/ in the table)
$B/opd --loss gjsd --beta 0.5 --temperature 1 --model sft/checkpoint-000300 --teacher base/checkpoint-002000 \
  --prompts general-train.jsonl --eval-prompts general-eval.jsonl --eval-limit 200 --eval-steps 50 \
  --max-steps 150 --save-steps 50 --learning-rate 1e-3 --seed 1 --out opd-gjsd --overwrite-output-dir
# IFEval-lite with per-prompt answers on all 200 held-out prompts, then the paired comparisons
for m in base/checkpoint-002000:base sft/checkpoint-000300:sft opd-lr1e-3/checkpoint-000200:opd1e3 opd-400/checkpoint-000400:opd400; do
  $B/hat general eval --model ${m%%:*} --input general-eval.jsonl --limit 200 --answers ${m##*:}-answers.jsonl
done
for pair in "base sft" "sft opd1e3" "base opd1e3" "sft opd400" "base opd400"; do set -- $pair
  for lv in prompt instruction; do for md in strict loose; do
    $B/hat general compare $1-answers.jsonl $2-answers.jsonl --level $lv --mode $md; done; done; done
for o in opd1e3 opd400; do python3 recovery.py base-answers.jsonl sft-answers.jsonl $o-answers.jsonl; done
# the right tool in the simulator: SFT and both OPD models on the same 200 held-out tasks (paired)
$B/teacher-distill eval --model sft=sft/checkpoint-000300 --model opd-lr1e-3=opd-lr1e-3/checkpoint-000200 \
  --model opd-400=opd-400/checkpoint-000400 --set original=harness-samples/taolive --tasks $D/tasks.primary.jsonl \
  --n 200 --seed 1 --products 600 --episodes eval-episodes.jsonl --summary eval.json > eval.md
# gjsd with half the prompts from the original harness's episodes (the base still the teacher), 50 steps
$B/opd --loss gjsd --beta 0.5 --temperature 1 --model sft/checkpoint-000300 --teacher base/checkpoint-002000 \
  --prompts general-train.jsonl --domain-prompts $D/teacher.original.jsonl --domain-share 0.5 \
  --eval-prompts general-eval.jsonl --eval-limit 200 --eval-steps 50 --max-steps 50 --save-steps 25 \
  --learning-rate 1e-3 --seed 1 --out opd-gjsd-mix --overwrite-output-dir
for m in opd-gjsd/checkpoint-000150:gjsd opd-gjsd/checkpoint-000050:gjsd50 opd-gjsd-mix/checkpoint-000050:mix; do
  $B/hat general eval --model ${m%%:*} --input general-eval.jsonl --limit 200 --answers ${m##*:}-answers.jsonl
done
for m in opd-gjsd/checkpoint-000150:opd-gjsd opd-gjsd/checkpoint-000050:opd-gjsd-50 opd-gjsd-mix/checkpoint-000050:opd-gjsd-mix; do
  $B/teacher-distill eval --model sft=sft/checkpoint-000300 --model ${m##*:}=${m%%:*} --set original=harness-samples/taolive \
    --tasks $D/tasks.primary.jsonl --n 200 --seed 1 --products 600 --episodes eval-${m##*:}.jsonl > eval-${m##*:}.md
done
# (2026-12-03) Two teachers: gjsd with half the prompts from the original harness's episodes — now every
# assistant turn, rendered with the row's tools — scored by the SFT model itself (--domain-teacher), the
# general half by the base; 150 steps. Then the same with a quarter domain prompts, 200 steps.
$B/opd --loss gjsd --beta 0.5 --temperature 1 --model sft/checkpoint-000300 --teacher base/checkpoint-002000 \
  --domain-teacher sft/checkpoint-000300 --prompts general-train.jsonl --domain-prompts $D/teacher.original.jsonl \
  --domain-share 0.5 --eval-prompts general-eval.jsonl --eval-limit 200 --eval-steps 50 --max-steps 150 --save-steps 50 \
  --learning-rate 1e-3 --seed 1 --out opd-gjsd-dt --overwrite-output-dir
$B/opd --loss gjsd --beta 0.5 --temperature 1 --model sft/checkpoint-000300 --teacher base/checkpoint-002000 \
  --domain-teacher sft/checkpoint-000300 --prompts general-train.jsonl --domain-prompts $D/teacher.original.jsonl \
  --domain-share 0.25 --eval-prompts general-eval.jsonl --eval-limit 200 --eval-steps 100 --max-steps 200 --save-steps 100 \
  --learning-rate 1e-3 --seed 1 --out opd-gjsd-dt25 --overwrite-output-dir
for m in opd-gjsd-dt/checkpoint-000150:gjsd-dt opd-gjsd-dt25/checkpoint-000200:gjsd-dt25; do
  $B/hat general eval --model ${m%%:*} --input general-eval.jsonl --limit 200 --answers ${m##*:}-answers.jsonl
  python3 recovery.py base-answers.jsonl sft-answers.jsonl ${m##*:}-answers.jsonl
done
$B/teacher-distill eval --model sft=sft/checkpoint-000300 --model opd-gjsd-dt=opd-gjsd-dt/checkpoint-000150 \
  --model opd-gjsd-dt-50=opd-gjsd-dt/checkpoint-000050 --set original=harness-samples/taolive --tasks $D/tasks.primary.jsonl \
  --n 200 --seed 1 --products 600 --episodes eval-dt.jsonl > eval-gjsd-dt.md
$B/teacher-distill eval --model sft=sft/checkpoint-000300 --model opd-gjsd-dt25=opd-gjsd-dt25/checkpoint-000200 \
  --set original=harness-samples/taolive --tasks $D/tasks.primary.jsonl --n 200 --seed 1 --products 600 \
  --episodes eval-dt25.jsonl > eval-gjsd-dt25.md
# the quarter-share run's 100-step checkpoint
$B/hat general eval --model opd-gjsd-dt25/checkpoint-000100 --input general-eval.jsonl --limit 200 --answers gjsd-dt25-100-answers.jsonl
$B/teacher-distill eval --model sft=sft/checkpoint-000300 --model opd-gjsd-dt25-100=opd-gjsd-dt25/checkpoint-000100 \
  --set original=harness-samples/taolive --tasks $D/tasks.primary.jsonl --n 200 --seed 1 --products 600 \
  --episodes eval-dt25-100.jsonl > eval-gjsd-dt25-100.md
