#!/usr/bin/env python3
"""Training rows for run.sh, df.sh and anneal.sh: the given row sets shuffled together (seed 6), each row's
system prompt padded at random with nothing, pad1's or pad2's text (the real prompt's sections, from
docs/runs/select-2026-12-05/length/pad.py's sets). With `--pad NAME` every row gets that pad, in order
(run.sh's long probe sets).
    mix.py PADDIR ROWS.jsonl... > train.jsonl
    mix.py --pad pad2 PADDIR ROWS.jsonl > long.jsonl"""
import json, random, sys

args = sys.argv[1:]
fixed = None
if args[0] == "--pad":
    fixed, args = args[1], args[2:]
d = args[0]
short = json.loads(open(f"{d}/pad0.jsonl").readline())["messages"][0]["content"]
pads = {"pad0": ""} | {n: json.loads(open(f"{d}/{n}.jsonl").readline())["messages"][0]["content"][:-len(short)] for n in ["pad1", "pad2"]}
rng = random.Random(6)
rows = [json.loads(line) for f in args[1:] for line in open(f)]
if fixed is None:
    rng.shuffle(rows)
for r in rows:
    r["messages"][0]["content"] = (pads[fixed] if fixed else rng.choice(list(pads.values()))) + r["messages"][0]["content"]
    print(json.dumps(r, ensure_ascii=False))
