#!/usr/bin/env python3
"""Paired comparison of two teacher-distill eval episode files on the same tasks: right tool (expected
tool names called, canonical names: original-harness sets only), solved (meta.success), effectiveness
and skill selection (>= 0.8 counts as a pass); exact two-sided sign test on the discordant tasks.

usage: pair.py A.jsonl B.jsonl
"""
import json
import sys
from math import comb
def load(f):
    out={}
    for l in open(f):
        r=json.loads(l); sc=r.get('scores') or {}
        exp=r['task']['expected']; names=[c['tool'] for c in exp.get('tool_calls',[])]
        called=[c['function']['name'] for m in r['messages'] if m['role']=='assistant' for c in (m.get('tool_calls') or [])]
        rt = all(n in called for n in names) if names else None
        solved = r.get('meta',{}).get('success')
        out[r['id']]=dict(rt=rt, eff=sc.get('effectiveness'), solved=solved, skill=sc.get('skill_selection'))
    return out
def sign(a,b):
    n=a+b; k=min(a,b)
    p=min(1,2*sum(comb(n,i) for i in range(k+1))/2**n) if n else 1
    return p
A=load(sys.argv[1]); B=load(sys.argv[2])
for key in ['rt','solved','eff','skill']:
    va=[A[i][key] for i in A if A[i][key] is not None and B[i][key] is not None]
    vb=[B[i][key] for i in A if A[i][key] is not None and B[i][key] is not None]
    bin_=lambda x: (x>=0.8) if isinstance(x,float) else bool(x)
    a_only=sum(1 for x,y in zip(va,vb) if bin_(x) and not bin_(y)); b_only=sum(1 for x,y in zip(va,vb) if bin_(y) and not bin_(x))
    print(key, 'n',len(va),'A',round(sum(map(float,va))/len(va),3),'B',round(sum(map(float,vb))/len(vb),3),'B only',b_only,'A only',a_only,'p',round(sign(a_only,b_only),4))
