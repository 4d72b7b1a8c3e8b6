"""OpenRLHF prompt data for HAT episodes from `hat sim tasks` JSONL: {"prompt", "label"} rows, the
label being the environment service's reset request. Standard library only.
Usage: python make_dataset.py tasks.jsonl train.jsonl [--variants 8] [--faults SPEC]"""

import argparse
import json

p = argparse.ArgumentParser()
p.add_argument("tasks")
p.add_argument("out")
p.add_argument("--variants", type=int, default=8)
p.add_argument("--faults", default="timeout=0.1,malformed=0.05,permission_denied=0.02")
a = p.parse_args()
n = 0
with open(a.tasks) as f, open(a.out, "w") as out:
    for i, line in enumerate(f):
        task = json.loads(line)
        reset = {"task_id": task["id"], "faults": a.faults, "seed": i}
        if a.variants:
            reset["harness"] = {"variant_seed": i % a.variants, "pool": "train"}
        out.write(json.dumps({"prompt": task["id"], "label": json.dumps(reset)}, ensure_ascii=False) + "\n")
        n += 1
print(f"{n} rows -> {a.out}")
