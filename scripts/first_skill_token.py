"""The decision of the opening call, by intent: the first token of the skill name a model puts in the opening
load_skill's place (its teacher-forced argmax, from `teacher-distill probe --summary`), against the
teacher's first token of that name. The rest of a skill name follows from its first token, so this is the
decision alone, where the probe's "opening call exact" also needs every argument right.

    python3 scripts/first_skill_token.py probe.json teacher.primary.jsonl TOKENIZER_DIR [HAT_BIN]
"""
import collections
import json
import re
import subprocess
import sys
summary, records, tok = sys.argv[1], sys.argv[2], sys.argv[3]
hat = sys.argv[4] if len(sys.argv) > 4 else 'target/release/hat'
exp = {}
for l in open(records):
    r = json.loads(l); exp[r['id']] = (r['task'].get('expected') or {}).get('skill')
cache = {}
def first(name):
    if name not in cache:
        out = subprocess.run([hat, 'tokenizer', 'encode', '--pieces', tok, '"name":"%s"' % name], capture_output=True, text=True).stdout
        cache[name] = json.loads(out)['pieces'][3]
    return cache[name]
for block in json.load(open(summary)):
    by = collections.defaultdict(lambda: [0, 0]); said_first = collections.defaultdict(collections.Counter)
    for d in block['probe']['decisions']:
        e = exp.get(d['id']) or exp.get(d['id'].split('#')[0])
        if not e: continue
        m = re.search(r'"name":\s*"([^"]*)"', (d.get('opening_said') or '').split('load_skill', 1)[-1])
        s = first(m.group(1)) if m and m.group(1) else '?'
        ok = s == first(e)
        by[d['intent']][0] += ok; by[d['intent']][1] += 1; said_first[d['intent']][s] += 1
    tot = [sum(v[0] for v in by.values()), sum(v[1] for v in by.values())]
    print(f"{block['model']} {block['set']}: first skill token right {tot[0]}/{tot[1]} = {tot[0]/max(tot[1],1):.3f}")
    for i, (k, n) in sorted(by.items()):
        print(f"   {i:20s} {k:3d}/{n:3d}  said: {dict(said_first[i].most_common(3))}")
