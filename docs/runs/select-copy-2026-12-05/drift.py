#!/usr/bin/env python3
"""A free-running probe of anneal.sh's drifted rows, split by the drift (the share of syllables replaced):
asked name / another listed / listed nowhere.    drift.py SUMMARY.json ROWS.jsonl"""
import collections, json, re, sys
recs = {r["id"]: r for r in map(json.loads, open(sys.argv[2]))}
c = collections.Counter()
for s in json.load(open(sys.argv[1])):
    for d in s["probe"]["free"]["decisions"]:
        r = recs[d["id"]]; m = re.search(r'"name": "([^"]*)"', d["said"]); name = m and m.group(1)
        listed = [t["function"]["name"] for t in r["tools"]]
        kind = "asked" if name == r["messages"][-1]["tool_calls"][0]["function"]["name"] else "another" if name in listed else "none"
        c[d["id"].rsplit("-q", 1)[1], kind] += 1
for q in sorted({q for q, _ in c}, key=float):
    print(f"{sys.argv[1]} drift {q}: asked / another listed / listed nowhere = {c[q, 'asked']} / {c[q, 'another']} / {c[q, 'none']}")
