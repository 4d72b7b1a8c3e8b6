#!/usr/bin/env python3
"""Free-running name-copy probe, split: did the model say the asked tool's name, another tool's name from
the same row's list (it copied but selected wrong), or a name listed nowhere (it did not copy)?

    teacher-distill probe --model M=CKPT --records train-syllables=DIR/dev.jsonl --records heldout=DIR/eval.jsonl \
        --free-running --max-tokens 40 --summary DIR/free.json > /dev/null
    python3 selection.py DIR/free.json DIR"""
import collections, json, re, sys

summary, rows = sys.argv[1], sys.argv[2]
for s in json.load(open(summary)):
    file = {"heldout": "eval.jsonl", "train-syllables": "dev.jsonl"}[s["set"]]
    records = {r["id"]: r for r in map(json.loads, open(f"{rows}/{file}"))}
    counts = collections.Counter()
    for d in s["probe"]["free"]["decisions"]:
        said = re.search(r'"name": "([^"]*)"', d["said"])
        r = records[d["id"]]
        listed = [t["function"]["name"] for t in r["tools"]]
        asked = r["messages"][-1]["tool_calls"][0]["function"]["name"]
        name = said.group(1) if said else None
        counts["asked" if name == asked else "another listed" if name in listed else "none listed"] += 1
    n = sum(counts.values())
    print(f"{s['model']} {s['set']}: " + ", ".join(f"{k} {counts[k]}/{n}" for k in ["asked", "another listed", "none listed"]))
