#!/usr/bin/env python3
"""The teacher-forced opening of each padded set, split: the tool name (the asked one, another listed,
listed nowhere) and the product id (copied right or not).    split.py PROBE.json DIR"""
import collections, json, re, sys
for s in json.load(open(sys.argv[1])):
    recs = {r["id"]: r for r in map(json.loads, open(f"{sys.argv[2]}/{s['set']}.jsonl"))}
    c = collections.Counter()
    for d in s["probe"]["decisions"]:
        r = recs[d["id"]]; said = d["opening_said"] or ""
        call = r["messages"][-1]["tool_calls"][0]["function"]
        listed = [t["function"]["name"] for t in r["tools"]]
        m = re.search(r'"name": "([^"]*)"', said); name = m.group(1) if m else None
        c["name: " + ("asked" if name == call["name"] else "another listed" if name in listed else "listed nowhere")] += 1
        c["id right"] += json.loads(call["arguments"])["product_id"] in said
    print(s["set"], f"(n = {len(s['probe']['decisions'])}):", ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
