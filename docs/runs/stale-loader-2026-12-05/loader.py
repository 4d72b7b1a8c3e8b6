import sys, json, collections
# Held-out episodes by the loader's surface name: how many call it, how many call the stale `load_skill`
# instead, how many are solved, and the unknown_tool refusals they got.
#   python3 loader.py EVAL_DIR/hsa.heldout.jsonl [...]
for path in sys.argv[1:]:
    by = collections.defaultdict(collections.Counter)
    for line in open(path):
        r = json.loads(line)
        h = r['harness']; loader = (h.get('names') or {}).get('tools', {}).get('load_skill', 'load_skill')
        key = loader
        calls = [c['function']['name'] for m in r['messages'] if m['role'] == 'assistant' for c in (m.get('tool_calls') or [])]
        c = by[key]; c['n'] += 1
        c['stale'] += 'load_skill' in calls and loader != 'load_skill'
        c['loader'] += loader in calls
        c['solved'] += bool(r['meta'].get('success'))
        c['refusals'] += sum(1 for m in r['messages'] if m['role'] == 'tool' and 'unknown_tool' in str(m.get('content')))
    print('==', path)
    for k, c in sorted(by.items()):
        print(f"{k:22s} n={c['n']:3d} called-loader={c['loader']:3d} stale={c['stale']:3d} solved={c['solved']:3d} refusals={c['refusals']}")
