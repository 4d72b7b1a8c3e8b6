"""verl parquet rows for HAT episodes from `hat sim tasks` JSONL: one row per task, played through
the environment service by the `hat_live_room` agent loop. Needs pandas + pyarrow (present wherever
verl is). Usage: python make_dataset.py tasks.jsonl out.parquet [--variants 8] [--faults SPEC]"""

import argparse
import json

import pandas as pd

p = argparse.ArgumentParser()
p.add_argument("tasks")
p.add_argument("out")
p.add_argument("--variants", type=int, default=8, help="HSA variant seeds drawn round-robin; 0 = original only")
p.add_argument("--faults", default="timeout=0.1,malformed=0.05,permission_denied=0.02")
a = p.parse_args()
rows = []
with open(a.tasks) as f:
    for i, line in enumerate(f):
        task = json.loads(line)
        reset = {"task_id": task["id"], "faults": a.faults, "seed": i}
        if a.variants:
            reset["harness"] = {"variant_seed": i % a.variants, "pool": "train"}
        rows.append({
            "data_source": "hat_live_room",
            "agent_name": "hat_live_room",
            # The service renders the real prompt; verl wants a chat here for its length filter.
            "prompt": [{"role": "user", "content": task["messages"][-1]["content"]}],
            "reward_model": {"style": "rule", "ground_truth": line.strip()},
            "extra_info": {"index": i, "hat_reset": json.dumps(reset)},
        })
pd.DataFrame(rows).to_parquet(a.out)
print(f"{len(rows)} rows -> {a.out}")
