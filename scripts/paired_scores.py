"""Paired per-episode comparison of stages against a reference stage on the same tasks: the mean of each
judge score, wins / losses, exact two-sided sign test; and the most common final replies (what the
models say, not only how they score).

    python3 scripts/paired_scores.py DIR SET REFERENCE STAGE...

reads DIR/eval/STAGE.SET.jsonl (what make reproduce's eval stages and `teacher-distill eval --episodes`
write), e.g. `python3 scripts/paired_scores.py out/reproduce heldout opd rl`."""
import collections, json, sys

from renamed_names import sign_test  # the exact two-sided sign test, shared with that probe

if len(sys.argv) < 5:
    sys.exit(__doc__)
R, SET, REFERENCE, STAGES = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def load(stage):
    return {json.loads(l)["id"]: json.loads(l) for l in open(f"{R}/eval/{stage}.{SET}.jsonl")}
def final_reply(t):
    for m in reversed(t["messages"]):
        if m["role"] == "assistant" and not m.get("tool_calls"):
            return (m.get("content") or "").replace("<think>\n\n</think>\n\n", "").strip()
    return ""
base = load(REFERENCE)
for stage in STAGES:
    other = load(stage)
    print(f"## {stage} vs {REFERENCE} on {SET} (n = {len(base)})")
    for key in ["accuracy", "effectiveness", "skill_selection", "tool_rationality"]:
        a = [base[k]["scores"].get(key) for k in base]
        b = [other[k]["scores"].get(key) for k in base]
        pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
        w = sum(y > x for x, y in pairs); l = sum(y < x for x, y in pairs)
        print(f"  {key}: {sum(x for x,_ in pairs)/len(pairs):.3f} -> {sum(y for _,y in pairs)/len(pairs):.3f}, {w} / {l}, p = {sign_test(w, l):.3g}")
    replies = collections.Counter(final_reply(t)[:60] for t in other.values())
    print(f"  distinct final replies {len(set(final_reply(t) for t in other.values()))}; most common:")
    for r, n in replies.most_common(4):
        print(f"    {n} x {r!r}")
