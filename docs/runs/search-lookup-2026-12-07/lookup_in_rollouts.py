#!/usr/bin/env python3
"""How a model found the viewer's product in its rollouts (teacher-distill eval --episodes files).

For every episode whose task names a product (expected.ask.product_id) and expects a data call on it:
whether the model searched, whether its search keyword was the words the viewer named the product by
(expected.ask.keyword, tasks made since 279b623; otherwise the product's reference is unknown and the
row counts under "reference unknown"), and whether its first call carrying a product_id carried the
right one. Printed by how the viewer referred to the product, one line per episodes file.

usage: lookup_in_rollouts.py EPISODES.jsonl [TASKS.jsonl]   (TASKS: the keyword of each task id, for
episode files made from tasks without it)
"""
import json
import sys
from collections import defaultdict


def calls(record):
    for m in record["messages"]:
        if m["role"] == "assistant":
            for c in m.get("tool_calls") or []:
                try:
                    args = json.loads(c["function"]["arguments"])
                except (ValueError, TypeError):
                    args = {}
                yield c["function"]["name"], args if isinstance(args, dict) else {}


def main():
    episodes = sys.argv[1]
    keywords = {}
    if len(sys.argv) > 2:
        for line in open(sys.argv[2]):
            t = json.loads(line)
            ask = (t.get("task") or {}).get("expected", {}).get("ask") or {}
            keywords[t["id"]] = ask.get("keyword")
    rows = defaultdict(lambda: [0, 0, 0, 0])  # n, searched, keyword right, id right
    for line in open(episodes):
        r = json.loads(line)
        exp = (r.get("task") or {}).get("expected") or {}
        ask = exp.get("ask") or {}
        want = ask.get("product_id")
        if not want or not any("product_id" in (c.get("args") or {}) for c in exp.get("tool_calls", [])):
            continue
        kw = keywords.get(r["id"], ask.get("keyword"))
        kind = "named (title or kind)" if kw else "this one / link N"
        row = rows[kind]
        row[0] += 1
        searches = [a for n, a in calls(r) if n == "search_products"]
        row[1] += bool(searches)
        row[2] += any(a.get("keyword") == kw for a in searches) if kw else 0
        ids = [a["product_id"] for n, a in calls(r) if isinstance(a.get("product_id"), str)]
        row[3] += bool(ids) and ids[0] == want
    for kind, (n, s, k, i) in sorted(rows.items()):
        print(f"{episodes}: {kind}: n {n}, searched {s}, keyword exact {k}, first product_id right {i} ({i / n:.2f})")


if __name__ == "__main__":
    main()
