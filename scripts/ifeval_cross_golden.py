#!/usr/bin/env python3
"""Freeze official IFEval verdicts for instructions paired with *other* prompts' responses.

The two response golden files only test each response against its own prompt's instructions.
This one stresses every checker on many more texts: each synthetic case takes a real response
(from a golden file, by key), optionally transforms it (upper/lower case, commas removed, first
third of its lines) and scores it against three instructions drawn from other prompts
(referenced as [key, index] into input_data.jsonl). Deterministic (random.Random(2024)).

Needs the same setup as scripts/ifeval_golden.py (official code dir, nltk punkt_tab data):
  python3 scripts/ifeval_cross_golden.py --official DIR --nltk-data DIR \
      --testdata testdata/ifeval --cases 2400 > testdata/ifeval/golden_cross.jsonl

Output line: {"src", "key", "transform", "instructions": [[key, index], ...],
              "strict": [bool], "loose": [bool]}
"""

import argparse
import json
import os
import random
import sys

SOURCES = {"gpt4": "golden_gpt4_20231107.jsonl", "llama": "golden_llama31_8b_instruct.jsonl"}


def transform(name, text):
    if name == "none":
        return text
    if name == "upper":
        return text.upper()
    if name == "lower":
        return text.lower()
    if name == "no_commas":
        return text.replace(",", "")
    if name == "first_third":
        lines = text.split("\n")
        return "\n".join(lines[: max(1, len(lines) // 3)])
    raise ValueError(name)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--official", required=True)
    ap.add_argument("--nltk-data", required=True)
    ap.add_argument("--testdata", required=True)
    ap.add_argument("--cases", type=int, default=2400)
    args = ap.parse_args()
    os.environ["NLTK_DATA"] = args.nltk_data
    sys.path.insert(0, args.official)
    import langdetect
    langdetect.DetectorFactory.seed = 0
    from instruction_following_eval import evaluation_lib

    inputs = {}
    with open(os.path.join(args.testdata, "input_data.jsonl"), encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            inputs[d["key"]] = d
    pool = [(k, i) for k, d in sorted(inputs.items()) for i in range(len(d["instruction_id_list"]))]
    responses = []
    for src, name in SOURCES.items():
        with open(os.path.join(args.testdata, name), encoding="utf-8") as f:
            for line in f:
                d = json.loads(line)
                responses.append((src, d["key"], d["response"]))

    rng = random.Random(2024)
    transforms = ["none", "none", "upper", "lower", "no_commas", "first_third"]
    for n in range(args.cases):
        src, key, response = rng.choice(responses)
        t = rng.choice(transforms)
        refs = rng.sample(pool, 3)
        prompt = f"cross case {n}"
        inp = evaluation_lib.InputExample(
            key=n,
            instruction_id_list=[inputs[k]["instruction_id_list"][i] for k, i in refs],
            prompt=prompt,
            kwargs=[inputs[k]["kwargs"][i] for k, i in refs],
        )
        p2r = {prompt: transform(t, response)}
        strict = evaluation_lib.test_instruction_following_strict(inp, p2r).follow_instruction_list
        loose = evaluation_lib.test_instruction_following_loose(inp, p2r).follow_instruction_list
        print(json.dumps({"src": src, "key": key, "transform": t, "instructions": [list(r) for r in refs],
                          "strict": strict, "loose": loose}))


if __name__ == "__main__":
    main()
