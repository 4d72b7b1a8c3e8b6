#!/usr/bin/env python3
"""opening.py EPISODES...: under held-out variants, the opening call's name on tasks whose harness renames the
skill loader — the renamed loader / load_skill / another name — and solved, loader kept vs renamed."""
import json, sys, collections
for p in sys.argv[1:]:
    c = collections.Counter(); solved = collections.Counter(); n = collections.Counter()
    for l in open(p):
        e = json.loads(l)
        loader = ((e["harness"].get("names") or {}).get("tools") or {}).get("load_skill", "load_skill")
        kind = 'renamed' if loader != 'load_skill' else 'kept'
        n[kind] += 1; solved[kind] += e["meta"].get("success") is True
        if kind == 'kept': continue
        first = next((m for m in e["messages"][e["meta"]["turn_start"]:] if m["role"] == "assistant" and m.get("tool_calls")), None)
        name = first["tool_calls"][0]["function"]["name"] if first else None
        c['right' if name == loader else 'load_skill' if name == 'load_skill' else 'none' if name is None else 'other'] += 1
    print(p.split('/')[-1], 'opening under renamed loader:', dict(c), '| solved kept', f"{solved['kept']}/{n['kept']}", 'renamed', f"{solved['renamed']}/{n['renamed']}")
