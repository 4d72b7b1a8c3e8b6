#!/usr/bin/env python3
"""Teacher-forced: does the model's opening call search, and with the keyword the teacher searched by?

From `teacher-distill probe --summary` (each record's teacher-forced opening message, `opening_said`) and
the probed records (their task's expected.ask.keyword): for the records whose viewer named the product,
how many opening calls name search_products, how many keywords are exact, and how many have the
keyword's first character right (the copy's start: teacher-forced, the rest of a span follows from it).

usage: keyword_probe.py RECORDS.jsonl PROBE_SUMMARY.json
"""
import json
import re
import sys

asks = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    asks[r["id"].split("#")[0]] = (r["task"].get("expected") or {}).get("ask") or {}
for block in json.load(open(sys.argv[2])):
    n = searched = exact = first = 0
    examples = []
    for d in block["probe"]["decisions"]:
        keyword = asks.get(d["id"].split("#")[0], {}).get("keyword")
        if not keyword:
            continue
        n += 1
        said = d.get("opening_said") or ""
        searched += "search_products" in said
        m = re.search(r'"keyword":\s*"([^"]*)"', said)
        got = m.group(1) if m else None
        exact += got == keyword
        first += bool(got) and got[:1] == keyword[:1]
        if len(examples) < 5:
            examples.append(f"{keyword} -> {got}")
    print(f"{block['model']} {block['set']}: named {n}, search called {searched}, keyword exact {exact}, "
          f"first character right {first}; e.g. {'; '.join(examples)}")
