"""Short reply rows: product-question dialogues with the skill-loading step cut out, so the viewer's
question sits a few dozen tokens before the reply. The lookup call stays as context (weight 0)."""
import json, sys
src, dst = sys.argv[1], sys.argv[2]
n = 0
with open(dst, 'w') as out:
    for line in open(src):
        r = json.loads(line)
        if r['task']['intent'] != 'product_qa':
            continue
        ms = r['messages']
        i = next(k for k, m in enumerate(ms) if m['role'] == 'assistant')
        calls = ms[i].get('tool_calls') or []
        if [c['function']['name'] for c in calls][:1] != ['load_skill'] or len(calls) != 2:
            continue
        if len(ms) != i + 4 or ms[i + 1].get('tool_call_id') != calls[0]['id']:
            continue
        first = dict(ms[i]); first['tool_calls'] = calls[1:]; first['weight'] = 0
        first.pop('reasoning_content', None)
        r['messages'] = ms[:i] + [first, ms[i + 2], ms[i + 3]]
        r['id'] += '#short'
        out.write(json.dumps(r, ensure_ascii=False) + '\n'); n += 1
print(n, 'short rows', file=sys.stderr)
