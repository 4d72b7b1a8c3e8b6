"""What did the model say, by intent? From `teacher-distill eval --episodes`: per intent, the episodes,
mean effectiveness, how many distinct final replies and the most common ones (one reply for every intent
is a model that ignores its input); for tasks that name a product, whether the calls carry the expected
product id and whether every number of the final reply appears in the episode's tool results (the reply
reads the results rather than recalling numbers).

    python3 scripts/replies_by_intent.py eval.jsonl
"""
import json
import re
import sys
from collections import Counter, defaultdict

episodes = [json.loads(line) for line in open(sys.argv[1])]
by = defaultdict(list)
for e in episodes:
    by[e['task']['intent']].append(e)
for intent, eps in sorted(by.items()):
    replies, eff = Counter(), []
    id_right = grounded = named = 0
    for e in eps:
        texts = [m.get('content') for m in e['messages'] if m['role'] == 'assistant' and m.get('content')]
        reply = texts[-1] if texts else ''
        replies[reply[:60]] += 1
        if e['scores'].get('effectiveness') is not None:
            eff.append(e['scores']['effectiveness'])
        expected = (e['task'].get('expected') or {}).get('tool_calls') or []
        pid = next((c['args']['product_id'] for c in expected
                    if isinstance((c.get('args') or {}).get('product_id'), str)), None)
        if pid:
            named += 1
            calls = [c['function']['arguments'] for m in e['messages'] if m['role'] == 'assistant'
                     for c in m.get('tool_calls') or []]
            id_right += any(f'"{pid}"' in a for a in calls)
            results = ' '.join(m.get('content') or '' for m in e['messages'] if m['role'] == 'tool')
            numbers = set(re.findall(r'\d+', reply))
            grounded += bool(numbers) and numbers <= set(re.findall(r'\d+', results))
    mean = sum(eff) / len(eff) if eff else float('nan')
    top = '; '.join(f'{r!r} ×{n}' for r, n in replies.most_common(2))
    ids = f', product id right {id_right}/{named}, reply numbers all from tool results {grounded}/{named}' if named else ''
    print(f'{intent}: {len(eps)} episodes, effectiveness {mean:.3f}, {len(replies)} distinct replies{ids}; most common: {top}')
