#!/usr/bin/env python3
"""The cue task of docs/learning-default.md in transformers: does a `tiny`-shaped Qwen3.5-MoE learn a
token that depends on one earlier cue token, (a) with loss on that token only, (b) with every token
trained (ALL=1, the base stage's language modelling)?

Rows: 30 random filler tokens (ids 100..1099), one of 8 cue tokens (10..17) at a random position, a
separator, 25 template tokens, then the answer 20+class. 4,000 training rows, batches of 32, AdamW as the
crate's (betas 0.9/0.999, eps 1e-8, weight decay 0.01 on matrices), clip 1.0, 10 warm-up steps then
cosine. Prints the held-out accuracy (200 rows) and the answers given.

    python3 scripts/cue_task_torch.py CONFIG_JSON     # env: STEPS (200), LR (1e-3), ALL, TEMPLATE (25)

CONFIG_JSON: the config.json of any `tiny` checkpoint (e.g. `hat model init --preset tiny`).
Needs torch and transformers >= 5.
"""
import json, math, os, random, sys
import torch
from transformers import Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig
torch.manual_seed(0); random.seed(1)
steps = int(os.environ.get("STEPS", 200)); lr = float(os.environ.get("LR", 1e-3))
ALL = "ALL" in os.environ; TEMPLATE = int(os.environ.get("TEMPLATE", 25)); LEN = 30
cfg = json.load(open(sys.argv[1]))
cfg["router_aux_loss_coef"] = 0.0
conf = Qwen3_5MoeTextConfig(**cfg)
m = Qwen3_5MoeForCausalLM(conf).float()
def row():
    c = random.randrange(8)
    t = [100 + random.randrange(1000) for _ in range(LEN)]
    t[random.randrange(LEN - 2)] = 10 + c
    t += [5] + [30 + k for k in range(TEMPLATE)] + [20 + c]
    return t, c
train = [row() for _ in range(4000)]; test = [row() for _ in range(200)]
decay = [p for n, p in m.named_parameters() if p.dim() >= 2]
nodecay = [p for n, p in m.named_parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": nodecay, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.999), eps=1e-8)
warm = 10
def lr_at(s):
    if s < warm: return lr * s / warm
    return lr * 0.5 * (1 + math.cos(math.pi * (s - warm) / max(1, steps - warm)))
B = 32
for s in range(steps):
    for g in opt.param_groups: g["lr"] = lr_at(s)
    batch = random.sample(train, B)
    ids = torch.tensor([t for t, _ in batch])
    labels = ids.clone()
    if not ALL: labels[:, :-1] = -100
    out = m(input_ids=ids, labels=labels)
    opt.zero_grad(); out.loss.backward()
    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step()
    if s % 50 == 0: print(s, out.loss.item(), flush=True)
with torch.no_grad():
    ids = torch.tensor([t[:-1] for t, _ in test])
    pred = m(input_ids=ids).logits[:, -1].argmax(-1).tolist()
right = sum(p == 20 + c for p, (_, c) in zip(pred, test))
from collections import Counter
print(f"torch steps {steps} lr {lr} ALL={ALL}: {right}/200 right; said {sorted(Counter(pred).items())}")
