"""A plain copy task in the pipeline's own record format, to ask whether a model of a given size learns to
copy a product id from its prompt at all (issue 21: rule out a bug before calling it capacity). Each record
is one opening turn: a system prompt with random product ids, a viewer's message, and the teacher's call
`get_product_detail {"product_id": …}` with the id to copy. Two kinds, half each:

  current  one id in the prompt (`商品ID product_id=pXYZ`): copy it.
  link     a queue of 3-5 entries `N号链接 （product_id=pXYZ）`; the viewer names `N号链接`: find the entry, copy.

(`--kind` makes one kind only, for a probe set of each.)

Ids are drawn at random (all 1,000), so only copying lowers the loss on them.

    python3 scripts/copy_task.py --n 20000 --seed 1 > copy.train.jsonl
    python3 scripts/copy_task.py --n 200 --seed 2 --kind link > copy.probe.link.jsonl
"""
import argparse
import json
import random

p = argparse.ArgumentParser()
p.add_argument('--n', type=int, required=True)
p.add_argument('--seed', type=int, required=True)
p.add_argument('--kind', choices=['current', 'link', 'both'], default='both')
a = p.parse_args()
rng = random.Random(a.seed)


def call(pid):
    return {'role': 'assistant', 'tool_calls': [{
        'id': 'call_1_0', 'type': 'function',
        'function': {'name': 'get_product_detail', 'arguments': json.dumps({'product_id': pid}, separators=(',', ':'))}}]}


for i in range(a.n):
    ids = [f'p{n:03d}' for n in rng.sample(range(1000), 5)]
    if a.kind == 'current' or (a.kind == 'both' and i % 2 == 0):
        kind, target = 'current', ids[0]
        system = f'# 当前讲解商品 Current product\n商品ID product_id={target}'
        user = '这个多少钱'
    else:
        kind = 'link'
        queue = ids[:rng.randint(3, 5)]
        k = rng.randrange(len(queue))
        target = queue[k]
        system = '# 直播间状态 Room state\n- 待讲解 Up next: ' + '、'.join(
            f'{j + 1}号链接 （product_id={q}）' for j, q in enumerate(queue))
        user = f'{k + 1}号链接多少钱'
    record = {
        'id': f'copy-{a.seed}-{i:06d}',
        'task': {'intent': 'product_qa', 'expected': {'tool_calls': [{'tool': 'get_product_detail', 'args': {'product_id': target}}]}},
        'tools': [],
        'messages': [{'role': 'system', 'content': system}, {'role': 'user', 'content': user}, call(target)],
    }
    print(json.dumps(record, ensure_ascii=False))
