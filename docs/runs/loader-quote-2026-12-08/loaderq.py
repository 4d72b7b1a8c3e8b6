"""Experiment (forty-fourth session): quote the prompt's clause that names a call (the skill loader,
the only tool the taolive prompt names in backticks) at the head of the call's reasoning, and, with
--rename-share P, give a share P of the records a fresh coined loader name (prompt, tool list, calls,
tool results, reasoning), so that only copying the name from the prompt lowers the loss on it.
usage: loaderq.py IN OUT [--rename-share P] [--seed S] [--any-ticked: rows without a tool list (dialogue-only)
rename the prompt's first backticked name]"""
import json, sys, random, re, hashlib

args = sys.argv[1:]
src, dst = args[0], args[1]
share = float(args[args.index('--rename-share') + 1]) if '--rename-share' in args else 0.0
seed = int(args[args.index('--seed') + 1]) if '--seed' in args else 1
CONS = 'bdfgklmnprstvz'; VOW = 'aeiou'

def word(rng):
    return ''.join(rng.choice(CONS) + rng.choice(VOW) + (rng.choice('nrlsk') if rng.random() < 0.3 else '')
                   for _ in range(rng.randint(1, 3)))

def coined(rng):
    ws = [word(rng) for _ in range(rng.randint(2, 3))]
    style = rng.randrange(4)
    if style == 0: return '_'.join(ws)
    if style == 1: return '-'.join(ws)
    if style == 2: return ws[0] + ''.join(w.capitalize() for w in ws[1:])
    return ''.join(w.capitalize() for w in ws)

DELIMS = '；;，,。.\n：:'
def clause(prompt, name):
    tick = '`' + name + '`'
    at = prompt.find(tick)
    if at < 0: return None
    start = max(prompt.rfind(d, 0, at) for d in DELIMS) + 1
    return prompt[start:at + len(tick)].strip()

def plan(m):
    steps = []
    for c in m['tool_calls']:
        step = c['function']['name']
        try: a = json.loads(c['function']['arguments'])
        except Exception: a = {}
        for v in (a.values() if isinstance(a, dict) else []):
            if isinstance(v, str) and v and not any(ch.isdigit() for ch in v): step += ' ' + v
        steps.append(step)
    return ', '.join(steps)

n = renamed = quoted = 0
with open(dst, 'w') as out:
    for line in open(src):
        r = json.loads(line); n += 1
        ms = r['messages']
        prompt = ms[0]['content'] if ms and ms[0]['role'] in ('system', 'developer') and isinstance(ms[0].get('content'), str) else ''
        tools = {t['function']['name'] for t in r.get('tools') or []}
        named = [t for t in re.findall(r'`([^`]+)`', prompt) if t in tools or (not tools and '--any-ticked' in args)]
        rng = random.Random(int(hashlib.sha256(f'{seed}:{r["id"]}'.encode()).hexdigest()[:16], 16))
        if named and rng.random() < share:
            old, new = named[0], coined(rng)
            text = json.dumps(r, ensure_ascii=False)
            r = json.loads(text.replace(old, new)); renamed += 1
            ms = r['messages']; prompt = ms[0]['content']
        for m in ms:
            if m['role'] != 'assistant' or not m.get('tool_calls'): continue
            quotes = []
            for c in m['tool_calls']:
                q = clause(prompt, c['function']['name'])
                if q and q not in quotes: quotes.append(q)
            had = (m.get('reasoning_content') or '').strip()
            quotes = [q for q in quotes if q not in had]
            if not quotes: continue
            m['reasoning_content'] = '\n'.join(quotes + [had or plan(m)]); quoted += 1
        out.write(json.dumps(r, ensure_ascii=False) + '\n')
print(f'{src}: {n} records, {renamed} renamed, {quoted} messages quoted', file=sys.stderr)
