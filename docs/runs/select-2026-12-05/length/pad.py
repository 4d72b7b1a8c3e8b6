#!/usr/bin/env python3
"""Does the SNQ model's selection survive a longer prompt? Prepends harness text (no product ids) to the
system prompt of the SNQ held-out rows: pad0 none, pad1 the real prompt's Role + Constraints sections
(917 characters), pad2 every section but the room state and current product (3,392 characters: role,
skills catalog, constraints). Then probe teacher-forced and split the opening (split.py).
    pad.py SELECT_ROW.jsonl SNQ_EVAL.jsonl OUTDIR
    teacher-distill probe --model snq=/work/exp/SNQ/more/checkpoint-003000 --records pad0=OUTDIR/pad0.jsonl \
      --records pad1=OUTDIR/pad1.jsonl --records pad2=OUTDIR/pad2.jsonl --summary OUTDIR/probe.json
    split.py OUTDIR/probe.json OUTDIR"""
import json, re, sys
system = json.loads(open(sys.argv[1]).readline())["messages"][0]["content"]
keep = [s for s in re.split(r"\n(?=# )", system) if "product_id" not in s and "Room state" not in s and "Current product" not in s]
pads = {"pad0": "", "pad1": "\n".join(s for s in keep if s.startswith(("# 角色", "# 约束"))), "pad2": "\n".join(keep)}
rows = [json.loads(l) for l in open(sys.argv[2])]
for name, pad in pads.items():
    with open(f"{sys.argv[3]}/{name}.jsonl", "w") as f:
        for r in rows:
            r = json.loads(json.dumps(r))
            if pad:
                r["messages"][0]["content"] = pad + "\n" + r["messages"][0]["content"]
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
