#!/bin/bash
# OPD from the HSA-SFT checkpoint before the polish (out/r40/hsa/sft), the fifth run's OPD recipe otherwise;
# IFEval-lite of that SFT checkpoint and of its OPD.
set -eo pipefail
cd "$(git rev-parse --show-toplevel)"
B=target/release
S=out/r40/hsa/sft/checkpoint-000200
$B/opd --model $S --teacher out/r40/base/checkpoint-001000 --prompts out/r40/data/general-train.jsonl --max-steps 100 --save-steps 100 --learning-rate 1e-3 --seed 1 --loss gjsd --domain-prompts out/r40/data/teacher.original.jsonl --domain-share 0.25 --domain-teacher $S --out out/r40x/opd-sft --overwrite-output-dir
for m in sft=$S opd-sft=out/r40x/opd-sft/checkpoint-000100; do
  $B/hat general eval --model ${m#*=} --input out/r40/data/general-eval.jsonl --max-new-tokens 160 --answers out/r40x/${m%%=*}.answers.jsonl > out/r40x/${m%%=*}.json
done
