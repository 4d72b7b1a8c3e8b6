#!/usr/bin/env python3
"""Which names did the model say in its free-running opening? For the loader (first call's tool), the skill
it loaded (the loader's `name` argument) and the second call's tool: right (the teacher's), another name
listed in the record's prompt (read, but chose wrong), or a name listed nowhere in it (did not read).
Only records whose teacher opening loads a skill. `classify` is shared with
docs/runs/select-copy-2026-12-05/realpair.py (paired comparison of two probes).
    names.py FREE.json SET=RECORDS.jsonl ..."""
import collections, json, re, sys
CALL = re.compile(r'<tool_call>\s*\{"name":\s*"([^"]*)",\s*"arguments":\s*(\{.*?\})\s*\}\s*</tool_call>', re.S)
PARTS = ["loader", "skill", "tool"]
KINDS = ["right", "another listed", "listed nowhere", "none said"]

def classify(free_json, sets):
    """[(model, set, {part: {record id: kind}})] for one probe summary; sets maps a set name to its records."""
    out = []
    for s in json.load(open(free_json)):
        recs = {r["id"]: r for r in map(json.loads, open(sets[s["set"]]))}
        c = {p: {} for p in PARTS}
        for d in s["probe"]["free"]["decisions"]:
            r = recs[d["id"]]
            tools = [t["function"]["name"] for t in r["tools"]]
            system = r["messages"][0]["content"]
            opening = next(m for m in r["messages"] if m["role"] == "assistant")
            try:
                want = [(tc["function"]["name"], json.loads(tc["function"]["arguments"])) for tc in opening.get("tool_calls") or []]
            except json.JSONDecodeError:  # a kept malformed-call retry: not an opening to score names on
                continue
            if not want or "name" not in want[0][1]:
                continue
            said = [(n, a) for n, a in CALL.findall(d["said"])]
            def cls(got, right, listed):
                if got is None: return "none said"
                return "right" if got == right else "another listed" if got in listed else "listed nowhere"
            c["loader"][d["id"]] = cls(said[0][0] if said else None, want[0][0], tools)
            skill = None
            if said:
                m = re.search(r'"name"\s*:\s*"([^"]*)"', said[0][1]); skill = m.group(1) if m else None
            # a skill is "listed" when its name appears in the system prompt (the skills catalog)
            right = want[0][1]["name"]
            c["skill"][d["id"]] = "none said" if skill is None else "right" if skill == right else "another listed" if skill in system else "listed nowhere"
            if len(want) > 1:
                c["tool"][d["id"]] = cls(said[1][0] if len(said) > 1 else None, want[1][0], tools)
        out.append((s["model"], s["set"], c))
    return out

if __name__ == "__main__":
    for model, set_name, c in classify(sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])):
        for part in PARTS:
            n = collections.Counter(c[part].values())
            print(f"{model} {set_name} {part} (n={len(c[part])}): " + ", ".join(f"{k} {n[k]}" for k in KINDS))
