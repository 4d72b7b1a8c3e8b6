#!/usr/bin/env python3
"""A free-running probe of run.sh split by the function asked: of the rows where the model said a listed
name, in how many was it the asked one; and which list position the said name held.
    by_function.py SUMMARY.json ROWS_DIR SET"""
import collections, json, sys
from said import ROW_FILES, asked_name, listed_names, name_said, records

summary, rows_dir, want = sys.argv[1:4]
s = next(x for x in json.load(open(summary)) if x["set"] == want)
recs = records(f"{rows_dir}/{ROW_FILES[want]}")
c, pos = collections.Counter(), collections.Counter()
for d in s["probe"]["free"]["decisions"]:
    r = recs[d["id"]]; name = name_said(d); asked = asked_name(r); names = listed_names(r)
    function = next(t["function"]["description"].split()[1].rstrip(":") for t in r["tools"] if t["function"]["name"] == asked)
    if name in names:
        c[function, "copied"] += 1; c[function, "asked"] += name == asked; pos[names.index(name)] += 1
print(f"{summary} {want}: asked / said a listed name, by function asked:",
      ", ".join(f"{f} {c[f, 'asked']}/{c[f, 'copied']}" for f in ["product", "stock", "promotions", "shipping"]),
      "| list position of the name said:", dict(sorted(pos.items())))
