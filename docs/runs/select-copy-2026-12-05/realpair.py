#!/usr/bin/env python3
"""Paired comparison of two free-running probes on the real prompt (docs/runs/select-2026-12-05/probe.sh's
summaries, same records): per set and part (loader, skill, tool), how many openings only A / only B got
right, and only A / only B said a name read from the prompt (right or another listed), with the exact
two-sided sign-test p.
    realpair.py A.free.json B.free.json SET=RECORDS.jsonl ..."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../select-2026-12-05"))
from names import PARTS, classify
from pair import sign_p

sets = dict(a.split("=", 1) for a in sys.argv[3:])
a = {(s, p): c[p] for _, s, c in classify(sys.argv[1], sets) for p in PARTS}
b = {(s, p): c[p] for _, s, c in classify(sys.argv[2], sets) for p in PARTS}
tests = {"right": lambda k: k == "right", "read from the prompt": lambda k: k in ("right", "another listed")}
for (set_name, part), ka in a.items():
    kb = b[(set_name, part)]
    ids = [i for i in ka if i in kb]
    for what, hit in tests.items():
        ya = sum(hit(ka[i]) for i in ids); yb = sum(hit(kb[i]) for i in ids)
        only_a = sum(hit(ka[i]) and not hit(kb[i]) for i in ids); only_b = sum(hit(kb[i]) and not hit(ka[i]) for i in ids)
        print(f"{set_name} {part} (n = {len(ids)}), {what}: A {ya}, B {yb}; only A {only_a}, only B {only_b}, "
              f"sign-test p = {sign_p(only_a, only_b):.3g}")
