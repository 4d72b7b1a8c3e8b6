#!/usr/bin/env python3
"""Training rows for mix.sh: every SNQ training row with its system prompt padded by pad0's (nothing),
pad1's or pad2's text, chosen at random (seed 5) in equal shares; the pads are read from pad.py's sets.
    mix_rows.py PADDIR SNQ_TRAIN.jsonl > train.mix.jsonl"""
import json, random, sys
d = sys.argv[1]
short = json.loads(open(f"{d}/pad0.jsonl").readline())["messages"][0]["content"]
pads = [""] + [json.loads(open(f"{d}/{n}.jsonl").readline())["messages"][0]["content"][:-len(short)] for n in ["pad1", "pad2"]]
rng = random.Random(5)
for line in open(sys.argv[2]):
    r = json.loads(line)
    r["messages"][0]["content"] = rng.choice(pads) + r["messages"][0]["content"]
    print(json.dumps(r, ensure_ascii=False))
