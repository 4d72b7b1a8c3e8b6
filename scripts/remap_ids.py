"""Product ids renamed at random, per record: reads trajectory records (JSONL) on stdin and writes them to
stdout with every product id (`p` and three digits) replaced, consistently within the record (prompt,
viewer turns, tool calls, tool results, replies, the task), by an id drawn at random for that record.
Memorising ids then lowers no loss: only copying the id from the prompt does. Used in
docs/learning-default.md to ask whether the model learns to copy when memorising cannot pay.

    python3 scripts/remap_ids.py SEED < rows.jsonl > rows.remapped.jsonl
"""
import json
import random
import re
import sys

ID = re.compile(r'(?<![A-Za-z0-9])p\d{3}(?!\d)')
seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0


def ids_in(value, found):
    if isinstance(value, str):
        for m in ID.findall(value):
            if m not in found:
                found.append(m)
    elif isinstance(value, list):
        for v in value:
            ids_in(v, found)
    elif isinstance(value, dict):
        for v in value.values():
            ids_in(v, found)


def rename(value, mapping):
    if isinstance(value, str):
        return ID.sub(lambda m: mapping[m.group(0)], value)
    if isinstance(value, list):
        return [rename(v, mapping) for v in value]
    if isinstance(value, dict):
        return {k: rename(v, mapping) for k, v in value.items()}
    return value


for line in sys.stdin:
    r = json.loads(line)
    found = []
    ids_in([r.get('task'), r.get('messages')], found)
    rng = random.Random(f'{seed}:{r["id"]}')
    fresh = rng.sample(range(1000), len(found))
    mapping = {old: f'p{n:03d}' for old, n in zip(found, fresh)}
    if 'task' in r:
        r['task'] = rename(r['task'], mapping)
    r['messages'] = rename(r['messages'], mapping)
    print(json.dumps(r, ensure_ascii=False))
