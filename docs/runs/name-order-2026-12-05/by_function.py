#!/usr/bin/env python3
"""Teacher-forced exact opening call of a name-copy probe, split by the function the viewer asked for
(the description's first English word) and by where the asked tool sits in the row's list.

    python3 by_function.py DIR/more.probe3000.json DIR"""
import collections, json, sys

summary, rows = sys.argv[1], sys.argv[2]
for s in json.load(open(summary)):
    file = {"heldout": "eval.jsonl", "train-syllables": "dev.jsonl"}[s["set"]]
    records = {r["id"]: r for r in map(json.loads, open(f"{rows}/{file}"))}
    by_function, by_slot = collections.defaultdict(lambda: [0, 0]), collections.defaultdict(lambda: [0, 0])
    for d in s["probe"]["decisions"]:
        r = records[d["id"]]
        asked = r["messages"][-1]["tool_calls"][0]["function"]["name"]
        tools = [t["function"] for t in r["tools"]]
        slot = [t["name"] for t in tools].index(asked)
        function = tools[slot]["description"].split()[1].rstrip(":")
        for tally in (by_function[function], by_slot[slot]):
            tally[0] += d["opening_exact"]
            tally[1] += 1
    show = lambda t: ", ".join(f"{k} {a}/{n}" for k, (a, n) in sorted(t.items()))
    print(f"{s['model']} {s['set']}: by function {show(by_function)}; by slot {show(by_slot)}")
