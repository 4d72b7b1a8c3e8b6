#!/usr/bin/env python3
"""The copy task of docs/learning-default.md in transformers: does a `tiny`-shaped Qwen3.5-MoE learn to copy
a three-digit product id from its prompt into its tool call? The same rows as `scripts/copy_task.py
--kind current` as our trainer sees them (the chat template rendered and tokenized by the checkpoint's own
tokenizer: `hat chat render` + `hat tokenizer encode` of one record), with the id's three digit tokens
drawn at random per row; loss on the assistant turn only, as `teacher-distill train`. Batches of 52 rows
(~2,900 tokens; our run's 4,096-token micro-batches hold ~73), AdamW (betas 0.9/0.999, eps 1e-8, weight
decay 0.01 on matrices), clip 1.0, learning rate 1e-3 after 20 warm-up steps, held. Prints the held-out share of rows whose three digits are all the argmax
(teacher-forced) every 100 steps.

    TOKENIZER_JSON=ckpt/tokenizer.json python3 scripts/copy_task_torch.py CONFIG_JSON TOKENS_JSON
    # env: STEPS (400), LR (1e-3)

CONFIG_JSON: config.json of a `tiny` checkpoint. TOKENS_JSON: `{"ids": [...], "pieces": [...]}` of one rendered record
(`hat tokenizer encode`), whose id digits sit at the positions after `=p` and after `":"p`.
Needs torch and transformers >= 5.
"""
import json, os, random, sys
import torch
from transformers import Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig

torch.manual_seed(0); random.seed(1)
steps = int(os.environ.get("STEPS", 400)); lr = float(os.environ.get("LR", 1e-3))
cfg = json.load(open(sys.argv[1])); cfg["router_aux_loss_coef"] = 0.0
model = Qwen3_5MoeForCausalLM(Qwen3_5MoeTextConfig(**cfg)).float()
template = json.load(open(sys.argv[2]))["ids"]
pieces = json.load(open(sys.argv[2]))["pieces"]
# The digits after `=p` (prompt) and after `":"p` (call), and where the assistant turn starts.
prompt_at = pieces.index("=p") + 1
call_at = len(pieces) - 1 - pieces[::-1].index("p") + 1
assistant_at = len(pieces) - 1 - pieces[::-1].index("assistant") + 2
# Token ids of "0".."9" in the checkpoint's tokenizer.json (env TOKENIZER_JSON).
vocab = json.load(open(os.environ["TOKENIZER_JSON"]))["model"]["vocab"]
DIGITS = [vocab[str(d)] for d in range(10)]


def row():
    d = [random.choice(DIGITS) for _ in range(3)]
    t = list(template)
    t[prompt_at:prompt_at + 3] = d
    t[call_at:call_at + 3] = d
    return t


def batch(n):
    ids = torch.tensor([row() for _ in range(n)])
    labels = ids.clone()
    labels[:, :assistant_at] = -100
    return ids, labels


test_ids, _ = batch(200)
decay = [p for p in model.parameters() if p.dim() >= 2]
nodecay = [p for p in model.parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": nodecay, "weight_decay": 0.0}],
                        lr=lr, betas=(0.9, 0.999), eps=1e-8)
for step in range(1, steps + 1):
    for g in opt.param_groups:
        g["lr"] = lr * min(1.0, step / 20)
    ids, labels = batch(52)
    loss = model(input_ids=ids, labels=labels).loss
    opt.zero_grad(); loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0); opt.step()
    if step % 100 == 0:
        with torch.no_grad():
            logits = model(input_ids=test_ids).logits
            pred = logits[:, call_at - 1:call_at + 2].argmax(-1)
            right = (pred == test_ids[:, call_at:call_at + 3]).all(-1).float().mean().item()
        print(f"step {step}: loss {loss.item():.4f}, held-out ids copied {right:.3f}", flush=True)
