import json,sys,re,collections
for f in sys.argv[1:]:
    eps=[json.loads(l) for l in open(f)]
    c=collections.Counter(); ok=collections.Counter()
    for e in eps:
        a=(e['task']['expected'].get('ask') or {})
        rep=e['messages'][-1].get('content') or ''
        key=a.get('spec_key','')
        k='asked key' if key and key in rep else '标价/price' if ('标价' in rep or '¥' in rep) else 'other key/的…是' if re.search('的.{1,6}是',rep) or ' is ' in rep else 'other'
        c[k]+=1; ok[k]+=e['meta'].get('success',False)
    print(f, len(eps), dict(c), 'solved', dict(ok))
