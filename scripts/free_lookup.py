"""Free-running lookup check: for room-state opening turns (`hat records cat --first-turn --dialogue-only
--keep-sections …`), the model *generates* its opening message greedily from the prompt alone (no teacher
tokens), and the product id of its call is compared with the teacher's; with evidence quotes, the id in
its quote too. Teacher-forced probes hand the model the teacher's quote, so they cannot tell whether the
model finds the product itself; this does.

    python3 scripts/free_lookup.py HAT_BIN CHECKPOINT ROWS.jsonl [N]
"""
import json
import re
import subprocess
import sys

hat, ckpt, rows = sys.argv[1:4]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 60
done = call_right = quote_right = 0
by_ref = {}
for line in open(rows):
    r = json.loads(line)
    calls = (r['task'].get('expected') or {}).get('tool_calls') or []
    pid = next((c['args']['product_id'] for c in calls if isinstance(c.get('args', {}).get('product_id'), str)), None)
    if not pid:
        continue
    first = next(i for i, m in enumerate(r['messages']) if m['role'] == 'assistant')
    prompt = subprocess.run([hat, 'chat', 'render', '--model-dir', ckpt],
                            input=json.dumps({'messages': r['messages'][:first], 'tools': None,
                                              'add_generation_prompt': True}),
                            capture_output=True, text=True, check=True).stdout
    out = subprocess.run([hat, 'model', 'generate', ckpt, '--prompt', prompt, '--max-tokens', '128'], capture_output=True, text=True, check=True).stdout
    call = re.search(r'"product_id":\s*"(p\d+)', out)
    quote = re.search(r'product_id=(p\d+)', out)
    user = r['messages'][first - 1]['content']
    ref = 'link N' if re.search(r'\d号链接|link \d', user) else 'this one' if ('这个' in user or 'this one' in user) else 'title or kind'
    done += 1
    ok = bool(call and call.group(1) == pid)
    call_right += ok
    quote_right += bool(quote and quote.group(1) == pid)
    b = by_ref.setdefault(ref, [0, 0])
    b[0] += ok
    b[1] += 1
    if done <= 8:
        print(f'  {pid} | {user[-40:]!r} -> {out[:120]!r}')
    if done >= n:
        break
print(f'{ckpt}: free-running, product id right in the call {call_right}/{done}, in the quote {quote_right}/{done}; '
      + ', '.join(f'{k} {v[0]}/{v[1]}' for k, v in by_ref.items()))
