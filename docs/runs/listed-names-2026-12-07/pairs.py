#!/usr/bin/env python3
"""Right tool and skill selection of several arms on the same episodes, by held-out variant, with the
exact sign test of each pair given: what choosing among listed names changes.

    pairs.py NAME=EPISODES.jsonl ... [--pair A,B ...]

EPISODES: `teacher-distill eval --episodes` output; a file of several models (one set) holds each
task once per model, in model order: NAME=FILE#K takes the K-th (default 1)."""
import collections, json, math, sys
sys.path.insert(0, "scripts")
from renamed_names import sign_test, wilson

arms, pairs = {}, []
args = sys.argv[1:]
while args:
    a = args.pop(0)
    if a == "--pair":
        pairs.append(tuple(args.pop(0).split(",")))
        continue
    name, spec = a.split("=", 1)
    path, _, k = spec.partition("#")
    k, seen, rows = int(k or 1), collections.Counter(), {}
    for line in open(path):
        t = json.loads(line)
        seen[t["id"]] += 1
        if seen[t["id"]] == k:
            rows[t["id"]] = t
    arms[name] = rows

def surface(t, tool):
    return t.get("harness", {}).get("names", {}).get("tools", {}).get(tool, tool)

def right_tool(t):
    exp = (t.get("task") or {}).get("expected") or {}
    calls = exp.get("tool_calls") or []
    if not calls:
        return None
    called = [c["function"]["name"] for m in t["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    return all(surface(t, c["tool"]) in called for c in calls)

def variant(t):
    """The variant's renamed skill loader, `-` where the loader keeps its name."""
    return t.get("harness", {}).get("names", {}).get("tools", {}).get("load_skill", "-")


def first_call(t):
    calls = [c["function"]["name"] for m in t["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    return calls[0] if calls else None

def solved(t):
    return t.get("meta", {}).get("success") is True

print("| arm | right tool | skill selection | solved |")
print("|---|---|---|---|")
for name, rows in arms.items():
    rt = [r for r in map(right_tool, rows.values()) if r is not None]
    sk = [t["scores"].get("skill_selection") for t in rows.values() if t["scores"].get("skill_selection") is not None]
    sv = [solved(t) for t in rows.values()]
    lo, hi = wilson(sum(rt), len(rt))
    print(f"| {name} | {sum(rt)/len(rt):.3f} [{lo:.3f}, {hi:.3f}] n={len(rt)} | {sum(sk)/max(1,len(sk)):.3f} n={len(sk)} | {sum(sv)/max(1,len(sv))*100:.1f} |")

print("\nright tool by variant (hits / tool tasks):\n")
names = list(arms)
print("| variant | " + " | ".join(names) + " |")
print("|---|" + "---|" * len(names))
by = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
for name, rows in arms.items():
    for t in rows.values():
        r = right_tool(t)
        if r is None:
            continue
        c = by[variant(t)][name]
        c[0] += r
        c[1] += 1
for v in sorted(by):
    print(f"| {v} | " + " | ".join(f"{by[v][n][0]} / {by[v][n][1]}" for n in names) + " |")

print("\nopening call under a renamed loader: the renamed loader / load_skill / another listed tool / none:\n")
print("| arm | renamed loader | `load_skill` | another tool | none |")
print("|---|---|---|---|---|")
for name, rows in arms.items():
    c = collections.Counter()
    for t in rows.values():
        v = variant(t)
        if v == "-":
            continue
        f = first_call(t)
        c["renamed" if f == v else "load_skill" if f == "load_skill" else "none" if f is None else "other"] += 1
    n = sum(c.values())
    lo, hi = wilson(c["renamed"], n)
    print(f"| {name} | {c['renamed']} / {n} [{lo:.2f}, {hi:.2f}] | {c['load_skill']} | {c['other']} | {c['none']} |")

for a, b in pairs:
    A, B = arms[a], arms[b]
    for label, f in [("right tool", right_tool), ("solved", solved)]:
        only_a = only_b = 0
        for k in A.keys() & B.keys():
            x, y = f(A[k]), f(B[k])
            if x is None or y is None:
                continue
            only_a += x > y
            only_b += y > x
        print(f"\n{b} vs {a}, {label}: {b} only {only_b}, {a} only {only_a}, p = {sign_test(only_a, only_b):.2g}")
