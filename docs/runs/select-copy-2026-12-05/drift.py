#!/usr/bin/env python3
"""A free-running probe of anneal.sh's drifted rows, split by the drift (the share of syllables replaced):
asked name / another listed / listed nowhere.    drift.py SUMMARY.json ROWS.jsonl"""
import collections, json, sys
from said import name_said, records, sort_name

recs = records(sys.argv[2])
c = collections.Counter()
for s in json.load(open(sys.argv[1])):
    for d in s["probe"]["free"]["decisions"]:
        c[d["id"].rsplit("-q", 1)[1], sort_name(recs[d["id"]], name_said(d))] += 1
for q in sorted({q for q, _ in c}, key=float):
    print(f"{sys.argv[1]} drift {q}: asked / another listed / listed nowhere = "
          f"{c[q, 'asked']} / {c[q, 'another listed']} / {c[q, 'listed nowhere']}")
