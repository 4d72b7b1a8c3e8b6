"""What the aftersales models say, by what the viewer asked (`ask.aspect`: order_status, policy, chat):
episodes, mean effectiveness, distinct final replies and the most common ones; for order-status
questions whether the call carries the expected order id, for policy questions which category the
call asks for (and whether it is the product's).

    python3 docs/runs/reproduce-aftersales-2026-12-07/by_aspect.py out/as/reproduce/eval/hsa.primary.jsonl
"""
import json
import sys
from collections import Counter, defaultdict

by = defaultdict(list)
for line in open(sys.argv[1]):
    e = json.loads(line)
    ask = (e['task'].get('expected') or {}).get('ask') or {}
    by[ask.get('aspect') or e['task']['intent']].append((e, ask))
for aspect, eps in sorted(by.items()):
    replies, eff, ids, categories = Counter(), [], Counter(), Counter()
    for e, ask in eps:
        texts = [m.get('content') or '' for m in e['messages']
                 if m['role'] == 'assistant' and (m.get('content') or '').strip()]
        replies[(texts[-1] if texts else '')[:60]] += 1
        eff.append(e['scores']['effectiveness'] or 0.0)
        args = [json.loads(c['function']['arguments'] or '{}')
                for m in e['messages'] for c in m.get('tool_calls') or []]
        if aspect == 'order_status':
            expected = e['task']['expected']['tool_calls'][0]['args'].get('order_id')
            said = next((a['order_id'] for a in args if 'order_id' in a), None)
            ids['right' if said == expected else 'wrong'] += 1
        if aspect == 'policy':
            said = next((a['category'] for a in args if 'category' in a), None)
            categories[said] += 1
            categories['(the product\'s)'] += said == ask.get('category')
    print(f"{aspect}: {len(eps)} episodes, effectiveness {sum(eff) / len(eff):.3f}, "
          f"{len(replies)} distinct replies; most common: "
          + '; '.join(f'{r!r} ×{n}' for r, n in replies.most_common(2)))
    if ids:
        print(f"  order id in the call: right {ids['right']} / {len(eps)}")
    if categories:
        print(f"  category asked for: {dict(categories)}")
