#!/usr/bin/env python3
"""pairs.py A=EPISODES[#k] B=EPISODES[#k]: two arms of `teacher-distill eval --episodes` on the same tasks —
each rate with its Wilson interval, the exact sign test of the pair, solved by intent (product questions by aspect).
A file holding several models gives the K-th (default 1) episode of each task.

    pairs.py --table NAME=EPISODES[#k] ...: one row per arm (solved, mean effectiveness, right tool,
    skill selection, the expected product id called), each rate with its interval and n."""
import json, sys, collections, math
from math import comb
def wilson(k,n,z=1.96):
    if n==0: return (0,0)
    p=k/n; d=1+z*z/n; c=(p+z*z/(2*n))/d; h=z*math.sqrt(p*(1-p)/n+z*z/(4*n*n))/d
    return c-h,c+h
def sign(a,b):
    n=a+b;k=min(a,b); return min(1,2*sum(comb(n,i) for i in range(k+1))/2**n) if n else 1
def load(spec):
    path,_,k=spec.partition('#'); k=int(k or 1); seen=collections.Counter(); rows={}
    for l in open(path):
        t=json.loads(l); seen[t['id']]+=1
        if seen[t['id']]==k: rows[t['id']]=t
    return rows
def surface(t,tool): return t.get('harness',{}).get('names',{}).get('tools',{}).get(tool,tool)
def right_tool(t):
    calls=(t['task'].get('expected') or {}).get('tool_calls') or []
    if not calls: return None
    called=[c['function']['name'] for m in t['messages'] if m['role']=='assistant' for c in m.get('tool_calls') or []]
    return all(surface(t,c['tool']) in called for c in calls)
def right_id(t):
    calls=(t['task'].get('expected') or {}).get('tool_calls') or []
    ids=[(c.get('args') or {}).get('product_id') for c in calls if (c.get('args') or {}).get('product_id')]
    if not ids: return None
    got=set()
    for m in t['messages']:
        for c in m.get('tool_calls') or []:
            try: got.add(json.loads(c['function']['arguments']).get('product_id'))
            except Exception: pass
    return ids[0] in got
M={
 'solved': lambda t: t['meta'].get('success') is True,
 'eff>=0.8': lambda t: (t['scores'].get('effectiveness') or 0)>=0.8,
 'right tool': right_tool,
 'skill': lambda t: None if t['scores'].get('skill_selection') is None else t['scores']['skill_selection']>=0.999,
 'accuracy': lambda t: None if t['scores'].get('accuracy') is None else t['scores']['accuracy']>=0.999,
 'tool rat.': lambda t: None if t['scores'].get('tool_rationality') is None else t['scores']['tool_rationality']>=0.999,
 'right id': right_id,
}

def table(specs):
    print("| arm | solved | effectiveness (mean) | right tool | skill selection | product id called |")
    print("|---|---|---|---|---|---|")
    for a in specs:
        name, spec = a.split("=", 1)
        rows = list(load(spec).values())
        cells = []
        for m in ["solved", None, "right tool", "skill", "right id"]:
            if m is None:
                cells.append(f"{sum(t['scores'].get('effectiveness') or 0 for t in rows) / len(rows):.3f}")
                continue
            v = [x for x in map(M[m], rows) if x is not None]
            lo, hi = wilson(sum(v), len(v))
            cells.append(f"{sum(v) / len(v):.3f} [{lo:.2f}, {hi:.2f}] (n = {len(v)})")
        print(f"| {name} | " + " | ".join(cells) + " |")

if sys.argv[1] == "--table":
    table(sys.argv[2:])
    sys.exit()
names=[]; arms=[]
for a in sys.argv[1:]:
    n,s=a.split('=',1); names.append(n); arms.append(load(s))
A,B=arms[0],arms[1]
ids=[i for i in A if i in B]
print(f'n tasks {len(ids)}: {names[0]} vs {names[1]}')
for m,f in M.items():
    va=[(i,f(A[i])) for i in ids]; vb={i:f(B[i]) for i in ids}
    pr=[(x,vb[i]) for i,x in va if x is not None and vb[i] is not None]
    ka=sum(x for x,_ in pr); kb=sum(y for _,y in pr); n=len(pr)
    bo=sum(1 for x,y in pr if y and not x); ao=sum(1 for x,y in pr if x and not y)
    la,ha=wilson(ka,n); lb,hb=wilson(kb,n)
    print(f'{m:11s} n={n:3d}  {ka/n:.3f} [{la:.3f},{ha:.3f}]  ->  {kb/n:.3f} [{lb:.3f},{hb:.3f}]   B better/worse {bo}/{ao} p={sign(bo,ao):.3g}')
ea=sum(A[i]['scores'].get('effectiveness') or 0 for i in ids)/len(ids); eb=sum(B[i]['scores'].get('effectiveness') or 0 for i in ids)/len(ids)
print(f'effectiveness mean {ea:.3f} -> {eb:.3f}')
by=collections.defaultdict(lambda:[0,0,0])
for i in ids:
    t=A[i]['task']; k=t['intent']
    if k=='product_qa': k+='/'+(t['expected'].get('ask') or {}).get('aspect','?')
    by[k][0]+=1; by[k][1]+=M['solved'](A[i]); by[k][2]+=M['solved'](B[i])
print('solved by intent (n: A -> B): '+'  '.join(f'{k} {v[0]}: {v[1]}->{v[2]}' for k,v in sorted(by.items())))
