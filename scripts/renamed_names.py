#!/usr/bin/env python3
"""Does the model read tool and skill names from its prompt? The probe that asks exactly that.

Splits held-out-variant records by whether the opening turn the teacher wrote uses a *renamed* name
(a skill or tool the variant renamed: the name exists only in that record's prompt) or only names the
original harness also has, and scores the model's free-running opening (`teacher-distill probe
--free-running --summary FILE`) on each part:

  names right    the model called the same tools and loaded the same skill as the teacher, by name
                 (arguments aside)
  training name  on a renamed record, the model used the original harness's name of the renamed skill
                 or tool instead: what a model that memorised the names does

A model that reads names scores alike on both parts; one that memorised them scores near 0 on the
renamed part. With two or more models, the paired sign test of each against the first on each part.

Usage: scripts/renamed_names.py [--set NAME] RECORDS.jsonl PROBE.json [PROBE.json ...]
  RECORDS.jsonl  the probed held-out records (teacher.heldout.jsonl)
  PROBE.json     `teacher-distill probe --free-running --summary` output (one or more models each)
  --set NAME     only the probe's record set NAME (a probe of several sets of the same tasks, as
                 `--records heldout=… --records primary=…`, repeats the record ids; default: every set)
"""
import json
import math
import re
import sys

CALL = re.compile(r'<tool_call>\s*\{"name":\s*"([^"]*)",\s*"arguments":\s*(\{.*?\})\s*\}\s*</tool_call>', re.S)
SKILL_ARG = re.compile(r'"name"\s*:\s*"([^"]*)"')


def wilson(k, n, z=1.96):
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def sign_test(a, b):
    n, k = a + b, min(a, b)
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)


def loader_of(record):
    """The skill loader's surface name (renamed by some variants)."""
    tools = record.get("harness", {}).get("names", {}).get("tools", {})
    return tools.get("load_skill", "load_skill")


def names_in_calls(calls, loader):
    """The tools called and the skills loaded, as (kind, name) pairs, in order."""
    out = []
    for tool, args in calls:
        out.append(("tool", tool))
        if tool == loader:
            m = SKILL_ARG.search(args)
            out.append(("skill", m.group(1) if m else ""))
    return out


def teacher_opening(record):
    for m in record["messages"]:
        if m["role"] == "assistant":
            return [(c["function"]["name"], c["function"]["arguments"]) for c in m.get("tool_calls") or []]
    return []


def main():
    args = sys.argv[1:]
    only_set = None
    if args[:1] == ["--set"] and len(args) > 1:
        only_set, args = args[1], args[2:]
    if len(args) < 2:
        sys.exit(__doc__)
    records = {}
    with open(args[0]) as f:
        for line in f:
            r = json.loads(line)
            names = r.get("harness", {}).get("names", {})
            renamed = {}  # surface name -> original name
            for kind in ("skills", "tools"):
                for original, surface in (names.get(kind) or {}).items():
                    renamed[surface] = original
            wanted = names_in_calls(teacher_opening(r), loader_of(r))
            records[r["id"]] = (wanted, renamed, loader_of(r))
    models = []
    for path in args[1:]:
        with open(path) as f:
            for entry in json.load(f):
                if only_set is not None and entry["set"] != only_set:
                    continue
                free = entry["probe"].get("free")
                if free is None:
                    sys.exit(f"{path}: model {entry['model']} was probed without --free-running")
                models.append((entry["model"], entry["set"], free["decisions"]))
    results = []
    print("| model | set | part | records | names right [95% CI] | training name said |")
    print("|---|---|---|---|---|---|")
    for model, set_name, decisions in models:
        right = {}
        for d in decisions:
            if d["id"] not in records:
                continue
            wanted, renamed, loader = records[d["id"]]
            if not wanted:
                continue
            said = names_in_calls(CALL.findall(d["said"]), loader)
            part = "renamed" if any(n in renamed for _, n in wanted) else "kept"
            training = part == "renamed" and any(
                n in renamed and renamed[n] in {s for _, s in said} for _, n in wanted)
            right[d["id"]] = (part, said == wanted, training)
        results.append((model, right))
        for part in ("renamed", "kept"):
            rows = [v for v in right.values() if v[0] == part]
            n, k = len(rows), sum(v[1] for v in rows)
            lo, hi = wilson(k, n)
            trained = sum(v[2] for v in rows)
            p = f"{k / n:.3f} [{lo:.3f}, {hi:.3f}]" if n else "–"
            print(f"| {model} | {set_name} | {part} | {n} | {p} | {trained if part == 'renamed' else '–'} |")
    if len(results) > 1:
        first, base = results[0]
        print()
        for model, right in results[1:]:
            for part in ("renamed", "kept"):
                shared = [i for i in base if i in right and base[i][0] == part]
                better = sum(right[i][1] and not base[i][1] for i in shared)
                worse = sum(base[i][1] and not right[i][1] for i in shared)
                print(f"{part} part, {model} against {first}: right where {first} is wrong {better}, "
                      f"the reverse {worse}, sign test p = {sign_test(better, worse):.3g} (n = {len(shared)})")


if __name__ == "__main__":
    main()
