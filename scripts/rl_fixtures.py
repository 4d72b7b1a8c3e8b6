#!/usr/bin/env python3
"""Reference values for the RL losses and advantages, computed with PyTorch autograd.

Writes testdata/rl/fixtures.json; tests/rl.rs asserts that hat::rl agrees. The loss is written the way
TRL's GRPOTrainer._compute_loss and verl's GSPO loss are (reference/rl_algorithms.md §1.3-1.5, §2):
padded [B, T] tensors with a completion mask, the importance weight at token / sequence /
sequence_token level, -min(coef_1 * A, clamp(coef_1) * A) + beta * k3, aggregated by loss_type; the
gradient with respect to the per-token log-probabilities comes from autograd.

Run from the repository root:  python3 scripts/rl_fixtures.py   (needs torch)
"""
import json
import math

import torch

torch.manual_seed(20261201)
torch.set_default_dtype(torch.float64)


def loss_and_grad(logp, old, ref, adv, mask, level, loss_type, beta, eps_low, eps_high, max_len):
    logp = logp.clone().requires_grad_(True)
    log_ratio = logp - old
    if level == "token":
        log_iw = log_ratio
    else:
        seq = (log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)
        if level == "sequence":
            log_iw = seq.unsqueeze(-1)
        else:  # sequence_token: the value of the sequence ratio, each token's own gradient
            log_iw = logp - logp.detach() + seq.detach().unsqueeze(-1)
    coef_1 = torch.exp(log_iw)
    coef_2 = torch.clamp(coef_1, 1 - eps_low, 1 + eps_high)
    per_token = -torch.min(coef_1 * adv.unsqueeze(1), coef_2 * adv.unsqueeze(1))
    if beta > 0:
        d = ref - logp
        per_token = per_token + beta * (torch.exp(d) - d - 1)
    per_token = per_token.expand_as(mask)
    b = logp.shape[0]
    if loss_type == "grpo":
        loss = ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    elif loss_type in ("dapo", "bnpo"):
        loss = (per_token * mask).sum() / mask.sum().clamp(min=1.0)
    elif loss_type == "dr_grpo":
        loss = (per_token * mask).sum() / (b * max_len)
    loss.backward()
    return loss.item(), logp.grad


def ragged(t, lengths):
    return [t[i, :n].tolist() for i, n in enumerate(lengths)]


losses = []
for case in range(3):
    lengths = [3, 7, 1, 5] if case < 2 else [6, 2]
    b, t = len(lengths), max(lengths)
    mask = torch.tensor([[1.0 if j < n else 0.0 for j in range(t)] for n in lengths])
    logp = -torch.rand(b, t) * 3
    # Case 0 near on-policy (little clipping); cases 1-2 far off it, so both clip branches occur.
    spread = 0.05 if case == 0 else 0.6
    old = logp + torch.randn(b, t) * spread
    ref = logp + torch.randn(b, t) * 0.3
    adv = torch.randn(b)
    for level in ("token", "sequence", "sequence_token"):
        for loss_type in ("grpo", "dapo", "dr_grpo"):
            for beta in (0.0, 0.04):
                eps = (0.2, 0.28) if level == "token" else (0.2, 0.2) if case == 2 else (3e-4, 4e-4)
                loss, grad = loss_and_grad(
                    logp, old, ref, adv, mask, level, loss_type, beta, eps[0], eps[1], 8
                )
                losses.append({
                    "logp": ragged(logp, lengths), "old_logp": ragged(old, lengths),
                    "ref_logp": ragged(ref, lengths), "advantages": adv.tolist(),
                    "importance_sampling_level": level, "loss_type": loss_type, "beta": beta,
                    "epsilon": eps[0], "epsilon_high": eps[1], "max_completion_length": 8,
                    "loss": loss, "grad": ragged(grad, lengths),
                })


def nanstd(x):
    x = x[~torch.isnan(x)]
    return torch.std(x) if x.numel() > 1 else torch.tensor(0.0)


def nanmean(x):
    return torch.nanmean(x)


advantages = []
for case in range(4):
    groups, size, dims = 3, 4, 3
    # A group constant in every dimension is dropped by hat (no signal) and not by this plain
    # formula, so draw until every group varies somewhere.
    while True:
        r = torch.randint(0, 3, (groups * size, dims)).double() / 2
        if all((r[g * size:(g + 1) * size].std(0) > 0).any() for g in range(groups)):
            break
    if case == 1:
        r[0, 1] = float("nan")  # a dimension the judge could not score
    w = torch.tensor([1.0, 0.5, 2.0])
    ids = [g for g in range(groups) for _ in range(size)]
    # sum_then_normalize, scale_rewards=group
    total = torch.nansum(r * w, dim=1)
    grpo = torch.zeros(len(ids))
    for g in range(groups):
        idx = [i for i in range(len(ids)) if ids[i] == g]
        x = total[idx]
        grpo[idx] = (x - nanmean(x)) / (nanstd(x) + 1e-4)
    # normalize_then_sum (GDPO)
    s = torch.zeros(len(ids))
    for g in range(groups):
        idx = [i for i in range(len(ids)) if ids[i] == g]
        for k in range(dims):
            x = r[idx, k]
            z = (x - nanmean(x)) / (nanstd(x) + 1e-4)
            s[idx] += w[k] * torch.nan_to_num(z, nan=0.0)
    gdpo = (s - s.mean()) / (s.std() + 1e-4)
    advantages.append({
        "rewards": [[None if math.isnan(v) else v for v in row] for row in r.tolist()],
        "groups": ids, "weights": w.tolist(),
        "sum_then_normalize": grpo.tolist(), "normalize_then_sum": gdpo.tolist(),
    })

with open("testdata/rl/fixtures.json", "w") as f:
    json.dump({"torch": torch.__version__, "policy_loss": losses, "advantages": advantages}, f)
    f.write("\n")
print(f"wrote {len(losses)} loss cases and {len(advantages)} advantage cases")
