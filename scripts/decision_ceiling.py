"""The ceiling of the opening decision from the viewers' words alone: a naive Bayes over the characters and
character bigrams of the user messages, trained on opening-turn rows, scored on held-out teacher records —
is the first word of the opening skill (`casual`, `product`, `after`, …) the teacher's? Stdlib only.

    python3 scripts/decision_ceiling.py out/distill/base.first.jsonl out/distill/teacher.primary.jsonl
"""
import collections
import json
import math
import sys
def rows(path):
    for l in open(path):
        r = json.loads(l); text = []; label = None
        for m in r['messages']:
            if m['role'] == 'user': text.append(m['content'].split('：', 1)[-1])
            if m['role'] == 'assistant' and m.get('weight', 1) != 0:
                tc = m.get('tool_calls') or []
                if tc and tc[0]['function']['name'] == 'load_skill':
                    label = json.loads(tc[0]['function']['arguments'])['name']
                break
        if label: yield ' '.join(text), ' '.join(text[-1:]), label, r['task']['intent']
def feats(t): return [t[i:i+2] for i in range(len(t)-1)] + list(t)
for which in (0, 1):
    cnt = collections.defaultdict(collections.Counter); prior = collections.Counter()
    for all_text, last, y, _ in rows(sys.argv[1]):
        t = (all_text, last)[which]; prior[y] += 1; cnt[y].update(feats(t))
    V = len(set(f for c in cnt.values() for f in c)); tot = {y: sum(c.values()) for y, c in cnt.items()}
    ok = n = 0
    for all_text, last, y, intent in rows(sys.argv[2]):
        t = (all_text, last)[which]
        best = max(prior, key=lambda c: math.log(prior[c]) + sum(math.log((cnt[c][f] + 1) / (tot[c] + V)) for f in feats(t)))
        ok += best.split('-')[0] == y.split('-')[0]; n += 1
    print(('all user messages', 'last user message')[which], f'naive Bayes first skill word right {ok}/{n} = {ok/n:.3f}')
