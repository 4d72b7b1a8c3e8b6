#!/usr/bin/env python3
"""Reference values for the OPD losses, computed with PyTorch autograd.

Writes testdata/opd/fixtures.json; tests/opd.rs asserts that hat::opd agrees.

* Sampled-token reverse KL (tinker `train_on_policy.py`, reference/rl_algorithms.md 4.1-4.2):
  A_t = discounted future sum of -kl_penalty_coef * (sampler_logp - teacher_logp), discount
  kl_discount_factor; loss_fn "importance_sampling": -sum(exp(logp - sampler) * A) / sum(mask);
  "ppo": -sum(min(rho*A, clip(rho, 1-eps, 1+eps)*A)) / sum(mask). Gradient w.r.t. logp by autograd.
* TRL GKDTrainer.generalized_jsd_loss (4.3): logits / temperature, beta = 0 forward KL, 1 reverse KL,
  otherwise the generalized JSD through the log mixture; labels -100 masked; "batchmean" over the
  unmasked positions. Gradient w.r.t. the student logits by autograd.

Run from the repository root:  python3 scripts/opd_fixtures.py   (needs torch)
"""
import json
import os

import torch
import torch.nn.functional as F

torch.manual_seed(20261202)
torch.set_default_dtype(torch.float64)


def discounted_future_sum(x, gamma):
    out = torch.zeros_like(x)
    running = 0.0
    for t in range(len(x) - 1, -1, -1):
        running = x[t] + gamma * running
        out[t] = running
    return out


def reverse_kl_case(lengths, spread, coef, gamma, loss_fn, eps):
    sampler = [-torch.rand(n) * 3 for n in lengths]
    teacher = [s + torch.randn(len(s)) * 0.7 for s in sampler]
    logp = [s + torch.randn(len(s)) * spread for s in sampler]
    advantages = [discounted_future_sum(-coef * (s - t), gamma) for s, t in zip(sampler, teacher)]
    leaves = [l.clone().requires_grad_(True) for l in logp]
    total = sum(lengths)
    loss = 0.0
    for lp, s, a in zip(leaves, sampler, advantages):
        rho = torch.exp(lp - s)
        if loss_fn == "importance_sampling":
            per_token = -rho * a
        else:
            per_token = -torch.min(rho * a, torch.clamp(rho, 1 - eps, 1 + eps) * a)
        loss = loss + per_token.sum()
    loss = loss / total
    loss.backward()
    return {
        "sampler_logp": [s.tolist() for s in sampler], "teacher_logp": [t.tolist() for t in teacher],
        "logp": [l.tolist() for l in logp], "kl_penalty_coef": coef, "kl_discount_factor": gamma,
        "loss_fn": loss_fn, "epsilon": eps,
        "advantages": [a.tolist() for a in advantages], "loss": loss.item(),
        "grad": [l.grad.tolist() for l in leaves],
    }


def generalized_jsd_loss(student_logits, teacher_logits, labels, beta, temperature):
    # TRL trl/experimental/gkd/gkd_trainer.py generalized_jsd_loss, reduction="batchmean".
    student_log_probs = F.log_softmax(student_logits / temperature, dim=-1)
    teacher_log_probs = F.log_softmax(teacher_logits / temperature, dim=-1)
    if beta == 0:
        jsd = F.kl_div(student_log_probs, teacher_log_probs, reduction="none", log_target=True)
    elif beta == 1:
        jsd = F.kl_div(teacher_log_probs, student_log_probs, reduction="none", log_target=True)
    else:
        b = torch.tensor(beta, dtype=student_log_probs.dtype)
        mixture = torch.logsumexp(
            torch.stack([student_log_probs + torch.log(1 - b), teacher_log_probs + torch.log(b)]), dim=0
        )
        kl_teacher = F.kl_div(mixture, teacher_log_probs, reduction="none", log_target=True)
        kl_student = F.kl_div(mixture, student_log_probs, reduction="none", log_target=True)
        jsd = b * kl_teacher + (1 - b) * kl_student
    mask = labels != -100
    jsd = jsd[mask]
    return jsd.sum() / mask.sum()


reverse_kl = []
for loss_fn in ("importance_sampling", "ppo"):
    for spread in (0.0, 0.5):
        for coef, gamma in ((1.0, 0.0), (0.5, 0.9)):
            reverse_kl.append(reverse_kl_case([4, 1, 6], spread, coef, gamma, loss_fn, 0.2))

gjsd = []
n, v = 5, 7
labels = torch.tensor([1, -100, 3, 0, -100])
for beta in (0.0, 0.5, 1.0, 0.3):
    for temperature in (1.0, 0.9):
        student = torch.randn(n, v) * 2
        teacher = torch.randn(n, v) * 2
        leaf = student.clone().requires_grad_(True)
        loss = generalized_jsd_loss(leaf, teacher, labels, beta, temperature)
        loss.backward()
        gjsd.append({
            "student_logits": student.tolist(), "teacher_logits": teacher.tolist(),
            "mask": [int(l != -100) for l in labels.tolist()], "beta": beta,
            "temperature": temperature, "loss": loss.item(), "grad": leaf.grad.tolist(),
        })

os.makedirs("testdata/opd", exist_ok=True)
with open("testdata/opd/fixtures.json", "w") as f:
    json.dump({"torch": torch.__version__, "reverse_kl": reverse_kl, "generalized_jsd": gjsd}, f, indent=1)
print(f"wrote {len(reverse_kl)} reverse-KL and {len(gjsd)} generalized-JSD cases")
