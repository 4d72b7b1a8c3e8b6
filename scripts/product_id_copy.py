"""Does the model copy the product id? From `teacher-distill probe --summary`: for every record whose
expected opening calls carry a `product_id`, the id the model put in its opening call against the
teacher's, and the share right per digit, by how the viewer named the product (`link N`, "this one",
or a title or kind). With evidence quotes (`hat records cat --quote-evidence`), also the id the
model wrote in its quote (`product_id=p…` in the reasoning) — teacher-forced, the call's id follows the
teacher's quote, so the quote's id is the one the model had to find. With `--free-running` probes,
also the id of the opening message the model wrote itself.

    python3 scripts/product_id_copy.py probe.json teacher.primary.jsonl
"""
import json
import re
import sys

summary, records = sys.argv[1], sys.argv[2]
expected = {}
for line in open(records):
    r = json.loads(line)
    calls = (r['task'].get('expected') or {}).get('tool_calls') or []
    pid = next((c['args']['product_id'] for c in calls if isinstance(c.get('args', {}).get('product_id'), str)), None)
    users = [m['content'] for m in r['messages'] if m['role'] == 'user']
    expected[r['id'].split('#')[0]] = (pid, users[-1] if users else '')
for block in json.load(open(summary)):
    n = right = 0
    digits = [0, 0, 0]
    said_ids = {}
    quoted = quoting = 0
    by_reference = {}
    for d in block['probe']['decisions']:
        pid, message = expected.get(d['id'].split('#')[0], (None, ''))
        if not pid:
            continue
        m = re.search(r'"product_id":\s*"(p\d+)', d.get('opening_said') or '')
        said = m.group(1) if m else ''
        said_ids[said] = said_ids.get(said, 0) + 1
        q = re.search(r'product_id=(p\d+)', d.get('opening_said') or '')
        if q:
            quoting += 1
            quoted += q.group(1) == pid
        n += 1
        right += said == pid
        for i in range(3):
            digits[i] += len(said) > i + 1 and len(pid) > i + 1 and said[i + 1] == pid[i + 1]
        if re.search(r'\d号链接|link \d', message):
            ref = 'link N'
        elif '这个' in message or 'this one' in message:
            ref = 'this one'
        else:
            ref = 'title or kind'
        b = by_reference.setdefault(ref, [0, 0])
        b[0] += said == pid
        b[1] += 1
    free = (block['probe'].get('free') or {}).get('decisions') or []
    free_right = free_n = 0
    for d in free:
        pid, _ = expected.get(d['id'].split('#')[0], (None, ''))
        if not pid:
            continue
        m = re.search(r'"product_id":\s*"(p\d+)', d['said'])
        free_n += 1
        free_right += bool(m and m.group(1) == pid)
    common = sorted(said_ids.items(), key=lambda kv: -kv[1])[:3]
    print(f"{block['model']} {block['set']}: product_id right {right}/{n}; digit 1/2/3 right "
          + ', '.join(f'{x}/{n}' for x in digits)
          + '; by reference ' + ', '.join(f'{k} {v[0]}/{v[1]}' for k, v in by_reference.items())
          + (f'; quoted id right {quoted}/{n} ({quoting} quoting)' if quoting else '')
          + (f'; free-running id right {free_right}/{free_n}' if free_n else '')
          + '; most said ' + ', '.join(f'{k or "(none)"} ×{v}' for k, v in common))
