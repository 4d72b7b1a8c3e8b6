import sys, json, collections
# The first two calls of each episode (the skill loaded, the tool), counted by the task's intent.
#   python3 intent.py EVAL_DIR/hsa.primary.jsonl [...]
for path in sys.argv[1:]:
    c = collections.defaultdict(collections.Counter)
    for line in open(path):
        r = json.loads(line)
        intent = r['task']['intent']
        calls = [tc['function'] for m in r['messages'] if m['role']=='assistant' for tc in (m.get('tool_calls') or [])]
        names = [f['name'] + (':' + json.loads(f['arguments']).get('name','') if 'skill' in f['name'] else '') for f in calls[:2]]
        c[intent][' '.join(names) or '-'] += 1
    print('==', path)
    for i, cc in sorted(c.items()):
        print(f'{i:14s} n={sum(cc.values()):3d}', '; '.join(f'{k} {v}' for k, v in cc.most_common(4)))
