#!/usr/bin/env python3
"""Paired comparison of two free-running probes on the same rows (run.sh's summaries): per set, how many
rows only A / only B said the asked name, and said any listed name, with the exact two-sided sign-test p.
    pair.py A.json B.json ROWS_DIR"""
import json, math, sys
from said import ROW_FILES, name_said, records, sort_name

def said(summary, rows_dir):
    out = {}
    for s in json.load(open(summary)):
        recs = records(f"{rows_dir}/{ROW_FILES[s['set']]}")
        for d in s["probe"]["free"]["decisions"]:
            kind = sort_name(recs[d["id"]], name_said(d))
            out[(s["set"], d["id"])] = (kind == "asked", kind != "listed nowhere")
    return out

def sign_p(a, b):
    n = a + b
    return 1.0 if n == 0 else min(1.0, 2 * sum(math.comb(n, k) for k in range(min(a, b) + 1)) / 2 ** n)

if __name__ == "__main__":
    a, b = said(sys.argv[1], sys.argv[3]), said(sys.argv[2], sys.argv[3])
    for split in sorted({k[0] for k in a}):
        keys = [k for k in a if k[0] == split and k in b]
        for i, what in enumerate(["asked name", "a listed name"]):
            only_a = sum(a[k][i] and not b[k][i] for k in keys); only_b = sum(b[k][i] and not a[k][i] for k in keys)
            print(f"{split} (n = {len(keys)}), {what}: A {sum(a[k][i] for k in keys)}, B {sum(b[k][i] for k in keys)}; "
                  f"only A {only_a}, only B {only_b}, sign-test p = {sign_p(only_a, only_b):.3g}")
