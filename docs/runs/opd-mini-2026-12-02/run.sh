#!/bin/bash
# The miniature base -> domain SFT -> OPD run of docs/opd.md (2026-12-02), debug binaries, from an empty dir.
set -eo pipefail
H=${H:-target/debug}
$H/hat general prompts --split train --n 3000 --seed 1 -o general-train.jsonl
$H/hat general prompts --split eval --n 200 --seed 1 -o general-eval.jsonl
python3 -c "
import json
with open('corpus.jsonl','w') as f:
    for l in open('general-train.jsonl'):
        for m in json.loads(l)['messages']:
            f.write(json.dumps({'text': m['content']}, ensure_ascii=False)+'\n')"
$H/hat tokenizer train --text corpus.jsonl --vocab-size 2048 --out tok
# base: the general stage (stopped after its step-50 checkpoint; --max-steps 150 was set)
$H/teacher-distill train --records general-train.jsonl --model-init tiny --tokenizer tok --max-steps 150 \
  --learning-rate 3e-3 --batch-tokens 8192 --save-steps 50 --seed 1 --out base --overwrite-output-dir
# the domain: 600 oracle episodes under the original harness, dialogue only (no system prompt)
$H/hat sim tasks --n 600 --split train --seed 1 -o tasks.jsonl
$H/hat sim rollout --harness harness-samples/taolive --tasks tasks.jsonl -o teacher.jsonl
$H/hat records cat --dialogue-only -i teacher.jsonl -o dialogues.jsonl
BASE=base/checkpoint-000050
$H/teacher-distill train --records dialogues.jsonl --model-init $BASE --tokenizer tok \
  --max-steps 30 --learning-rate 3e-3 --batch-tokens 8192 --save-steps 30 --seed 1 --out sft --overwrite-output-dir
$H/opd --model sft/checkpoint-000030 --teacher $BASE --prompts general-train.jsonl \
  --eval-prompts general-eval.jsonl --eval-limit 100 --eval-steps 15 --max-steps 15 --prompts-per-step 8 \
  --max-new-tokens 96 --learning-rate 1e-3 --seed 1 --save-steps 15 --out opd --overwrite-output-dir
$H/hat general eval --model $BASE --input general-eval.jsonl --limit 100 --max-new-tokens 96 > base-ifeval-lite.json
