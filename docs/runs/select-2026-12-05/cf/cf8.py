#!/usr/bin/env python3
"""Does the model prefer the loader name listed in *its* prompt? Each opening record is scored (teacher-
forced loss) with each variant's loader name in its loader call: 8 names, one of them listed in the
record's prompt. L[v][j] = mean loss over variant v's records with name j. A model that ignores its
prompt has L[v][j] = a_v + b_j (+ noise): the prompt's cost plus the name's own cost, and
    reading = mean over v of (mean over j != v of L[v][j]  -  L[v][v])
is 0 whatever the names' own costs (each name is listed once and unlisted seven times). p: the share of
the 8! assignments of names to variants whose score is at least the observed one.
    cf8.py build FIRST_TURN_RECORDS.jsonl OUTDIR      one-record files OUTDIR/I-J.jsonl, args in OUTDIR/args
    cf8.py score PROBE_SUMMARY.json OUTDIR"""
import itertools, json, os, sys
from collections import defaultdict

def opening(r):
    return next(m for m in r["messages"] if m["role"] == "assistant")

if sys.argv[1] == "build":
    recs = [json.loads(l) for l in open(sys.argv[2])]
    out = sys.argv[3]; os.makedirs(out, exist_ok=True)
    rows = [r for r in recs if opening(r).get("tool_calls") and '"name"' in opening(r)["tool_calls"][0]["function"]["arguments"]]
    names = sorted({opening(r)["tool_calls"][0]["function"]["name"] for r in rows})
    args, meta = [], {}
    for i, r in enumerate(rows):
        own = names.index(opening(r)["tool_calls"][0]["function"]["name"])
        meta[i] = own
        for j, n in enumerate(names):
            assert j == own or (n not in r["messages"][0]["content"] and n not in {t["function"]["name"] for t in r["tools"]})
            c = json.loads(json.dumps(r)); opening(c)["tool_calls"][0]["function"]["name"] = n
            json.dump(c, open(f"{out}/{i:03d}-{j}.jsonl", "w"), ensure_ascii=False)
            args += ["--records", f"r{i:03d}n{j}={out}/{i:03d}-{j}.jsonl"]
    open(f"{out}/args", "w").write("\n".join(args) + "\n")
    json.dump({"names": names, "variant_of": meta}, open(f"{out}/meta.json", "w"))
    print(len(rows), "records,", len(names), "names")
else:
    out = sys.argv[3]; meta = json.load(open(f"{out}/meta.json")); k = len(meta["names"])
    sums, counts = defaultdict(float), defaultdict(int)
    model = None
    for s in json.load(open(sys.argv[2])):
        model = s["model"]; i, j = s["set"][1:].split("n"); v = meta["variant_of"][str(int(i))]
        sums[v, int(j)] += s["probe"]["loss"]; counts[v, int(j)] += 1
    L = [[sums[v, j] / counts[v, j] for j in range(k)] for v in range(k)]
    score = lambda p: sum(sum(L[v][j] for j in range(k) if j != p[v]) / (k - 1) - L[v][p[v]] for v in range(k)) / k
    obs = score(list(range(k)))
    perms = list(itertools.permutations(range(k)))
    p = sum(score(q) >= obs - 1e-12 for q in perms) / len(perms)
    rows = sum(counts[v, 0] for v in range(k))
    print(f"{model}: reading score {obs:+.4f} nats per trained token (listed name cheaper than the others' mean), "
          f"permutation p = {p:.3g} ({len(perms)} assignments, {rows} records, {k} variants)")
