"""Does the model state what the tools returned? From `teacher-distill probe --summary`: for every record
whose teacher-forced final reply was scored, whether the model's reply (its argmax in the reply's place)
carries every number of the teacher's reply (price, stock, days, fee, quantity: the facts the tool
results give) and no other, and whether it is the teacher's reply exactly, by intent. Facts right is
finer than exact: a reply may state the right price in other words.

    python3 scripts/reply_facts.py probe.json records.jsonl
"""
import json
import re
import sys
from collections import defaultdict

summary, records = sys.argv[1], sys.argv[2]
teacher = {}
for line in open(records):
    r = json.loads(line)
    replies = [m.get('content') for m in r['messages'] if m['role'] == 'assistant' and m.get('content')]
    if replies:
        teacher[r['id']] = replies[-1]
numbers = lambda s: sorted(re.findall(r'\d+(?:\.\d+)?', s or ''))
for block in json.load(open(summary)):
    by = defaultdict(lambda: [0, 0, 0])  # n, facts right, exact
    for d in block['probe']['decisions']:
        said, want = d.get('reply_said'), teacher.get(d['id'])
        if said is None or want is None or not numbers(want):
            continue
        said = said.split('</think>')[-1].replace('<|im_end|>', '').strip()
        row = by[d['intent']]
        row[0] += 1
        row[1] += numbers(said) == numbers(want)
        row[2] += said == want.strip()
    total = [sum(v[i] for v in by.values()) for i in range(3)]
    print(f"{block['model']} {block['set']}: replies with numbers {total[0]}, numbers right {total[1]}, exact {total[2]}; by intent: "
          + ', '.join(f'{k} {v[1]}/{v[0]} ({v[2]} exact)' for k, v in sorted(by.items())))
