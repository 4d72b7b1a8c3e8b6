"""Share of the SFT drop that OPD recovers, (OPD - SFT) / (base - SFT), with a 95% percentile bootstrap
over prompts (all three models' answers on the same held-out prompts, resampled together).
Usage: python3 recovery.py base-answers.jsonl sft-answers.jsonl opd-answers.jsonl"""
import json, random, sys

def load(path):
    return {r["id"]: r for r in map(json.loads, open(path))}

base, sft, opd = (load(p) for p in sys.argv[1:4])
ids = sorted(set(base) & set(sft) & set(opd))
rng = random.Random(1)

def passes(rows, i, level, mode):
    r = rows[i]
    return [r[f"prompt_{mode}"]] if level == "prompt" else r[mode]

for level in ("prompt", "instruction"):
    for mode in ("strict", "loose"):
        per = [(sum(passes(base, i, level, mode)), sum(passes(sft, i, level, mode)),
                sum(passes(opd, i, level, mode))) for i in ids]
        def share(rows):
            b, s, o = (sum(r[k] for r in rows) for k in range(3))
            return (o - s) / (b - s) if b != s else float("nan")
        boots = sorted(share([per[rng.randrange(len(per))] for _ in per]) for _ in range(2000))
        print(f"{level:11s} {mode:6s} recovered {share(per):.2f} [{boots[50]:.2f}, {boots[1949]:.2f}]  (n = {len(ids)} prompts)")
