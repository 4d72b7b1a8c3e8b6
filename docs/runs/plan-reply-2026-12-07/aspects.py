#!/usr/bin/env python3
"""aspects.py EPISODES: on the product questions, what the opening plan names after `→` and which reply
template follows (price: `现在标价` / `right now`; spec: `X的K是V` / `The K of X is V`), with whether the
plan's spec key is the one asked. Counts, most common first."""
import collections, json, sys

counts = collections.Counter()
for line in open(sys.argv[1]):
    r = json.loads(line)
    t = r["task"]
    if t["intent"] != "product_qa":
        continue
    ask = t["expected"].get("ask") or {}
    plans = [m.get("reasoning_content") or "" for m in r["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
    first = plans[0].split("\n")[0] if plans else ""
    fields = first.split("→", 1)[1].strip() if "→" in first else "-"
    replies = [m["content"] for m in r["messages"] if m["role"] == "assistant" and m.get("content") and not m.get("tool_calls")]
    reply = replies[-1] if replies else ""
    if "标价" in reply or "right now" in reply:
        template = "price template"
    elif ("的" in reply and "是" in reply) or (" of " in reply and " is " in reply):
        template = "spec template"
    else:
        template = "other"
    planned = "price" if fields.endswith("price") else "a spec key" if fields.startswith("title,") else fields
    key_right = fields.split(", ")[-1] == ask.get("spec_key") if ask.get("aspect") == "spec" else None
    counts[(ask.get("aspect"), planned, template, key_right, r["meta"].get("success") is True)] += 1
print("| n | asked | plan names | reply | spec key right | solved |\n|---|---|---|---|---|---|")
for (asked, planned, template, key_right, solved), n in counts.most_common():
    print(f"| {n} | {asked} | {planned} | {template} | {'' if key_right is None else key_right} | {solved} |")
