"""Prompt-less rows that keep chosen sections of the system prompt: reads trajectory records (JSONL) on
stdin, drops the tools and every section of the system prompt (a line starting with `#` up to the next)
whose heading contains none of the given strings, writes the records to stdout (id suffixed `#dialogue`).
Used in docs/learning-default.md to ask whether the model learns to copy a product id from the room state
when the room state is all the prompt there is (~200 tokens instead of ~2,500).

    target/release/hat records cat --first-turn -i out/distill/teacher.original.jsonl \
        | python3 scripts/keep_sections.py 'Room state|Current product' > base.room.jsonl
"""
import json
import sys

keep = sys.argv[1].split('|')


def sections(text):
    kept, keeping = [], False
    for line in text.split('\n'):
        if line.startswith('#'):
            keeping = any(h in line for h in keep)
            if keeping:
                kept.append([])
        if keeping:
            kept[-1].append(line)
    return '\n\n'.join('\n'.join(s).rstrip() for s in kept)


for line in sys.stdin:
    r = json.loads(line)
    m = r['messages']
    if m and m[0]['role'] in ('system', 'developer'):
        prompt = m.pop(0)
        c = prompt['content']
        text = c if isinstance(c, str) else ''.join(part.get('text', '') for part in c)
        if sections(text):
            m.insert(0, {'role': prompt['role'], 'content': sections(text)})
    r['tools'] = []
    r['id'] += '#dialogue'
    r.pop('scores', None)
    print(json.dumps(r, ensure_ascii=False))
