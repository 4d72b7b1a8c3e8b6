#!/usr/bin/env python3
# The sixth run's table from out/r42's evaluation files (solved ×100 with Wilson 95 % intervals, IFEval-lite prompt
# strict) and the sign tests between stages on the same tasks; python3 table.py > table.md, from the repository root.
import json,math,sys
from math import comb
def wilson(k,n,z=1.96):
    p=k/n; d=1+z*z/n; c=(p+z*z/(2*n))/d; h=z*math.sqrt(p*(1-p)/n+z*z/(4*n*n))/d
    return c-h,c+h
def solved(st,s):
    try: return {json.loads(l)['id']:bool(json.loads(l)['meta'].get('success')) for l in open(f'out/r42/eval/{st}.{s}.jsonl')}
    except FileNotFoundError: return None
def cell(d):
    if d is None: return '–'
    k=sum(d.values()); n=len(d); lo,hi=wilson(k,n); return f"{100*k/n:.1f} [{100*lo:.1f}, {100*hi:.1f}]"
def ife(st):
    try: j=json.load(open(f'out/r42/ifeval/{st}.json'))['prompt_strict']
    except FileNotFoundError: return '–'
    return f"{100*j['value']:.1f} [{100*j['low']:.1f}, {100*j['high']:.1f}]"
print('| stage | Live-Stream QA-lite | Harness-Variant QA-lite | Synthetic LS-QA | IFEval-lite |\n|---|---|---|---|---|')
for st,name in [('base','Base'),('fixed','Fixed-harness SFT + polish'),('hsa','HSA-SFT + polish'),('opd','+ OPD'),('rl','+ HSA-RL (HAT)')]:
    print(f"| {name} | {cell(solved(st,'primary'))} | {cell(solved(st,'heldout'))} | {cell(solved(st,'phrasings'))} | {ife(st)} |")
print(f"| Teacher (oracle) | {cell(solved('oracle','primary'))} | – | {cell(solved('oracle','phrasings'))} | – |")
def sign(a,b):
    n=a+b;k=min(a,b); return min(1,2*sum(comb(n,i) for i in range(k+1))/2**n) if n else 1
for a,b,s in [('fixed','hsa','heldout'),('fixed','hsa','primary'),('hsa','opd','primary'),('hsa','opd','heldout'),('hsa','opd','phrasings'),('fixed','hsa','phrasings'),('opd','rl','primary'),('opd','rl','heldout'),('opd','rl','phrasings')]:
    A=solved(a,s);B=solved(b,s)
    if A is None or B is None: continue
    bo=sum(1 for i in A if B[i] and not A[i]); ao=sum(1 for i in A if A[i] and not B[i])
    print(f"{b} vs {a} on {s}: {b} only {bo}, {a} only {ao}, p = {sign(bo,ao):.3g}")
def answers(st):
    try: return {json.loads(l).get('key', i):json.loads(l) for i,l in enumerate(open(f'out/r42/ifeval/{st}.answers.jsonl'))}
    except FileNotFoundError: return None
