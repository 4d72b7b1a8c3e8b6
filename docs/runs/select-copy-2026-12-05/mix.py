#!/usr/bin/env python3
"""Training rows for run.sh: equal shares of T1's rows (one tool, coined name: copy), SNQ's rows (four
known names dealt at random: select) and SNQc's rows (four coined names: select, then copy), each row's
system prompt padded at random with nothing, pad1's or pad2's text (the real prompt's sections, from
docs/runs/select-2026-12-05/length/pad.py's sets), seed 6.
    mix.py PADDIR T1.jsonl SNQ.jsonl SNQc.jsonl > train.jsonl"""
import json, random, sys
d = sys.argv[1]
short = json.loads(open(f"{d}/pad0.jsonl").readline())["messages"][0]["content"]
pads = [""] + [json.loads(open(f"{d}/{n}.jsonl").readline())["messages"][0]["content"][:-len(short)] for n in ["pad1", "pad2"]]
rng = random.Random(6)
rows = [json.loads(line) for f in sys.argv[2:] for line in open(f)]
rng.shuffle(rows)
for r in rows:
    r["messages"][0]["content"] = rng.choice(pads) + r["messages"][0]["content"]
    print(json.dumps(r, ensure_ascii=False))
