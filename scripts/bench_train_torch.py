#!/usr/bin/env python3
"""PyTorch/transformers CPU training throughput on the checkpoints `cargo bench --bench train` writes
(target/bench-train/<preset>/), so the Rust bench can print the ratio.

How to run (three steps):
    cargo bench --bench train               # our figures; writes the checkpoints
    python3 scripts/bench_train_torch.py    # this script: writes torch_train.json next to each checkpoint
    cargo bench --bench train               # again: now prints ours, torch's and the ratio

Same step as benches/train.rs: a fixed batch of BATCH x SEQ token ids (row r, position i:
(i*7919 + 13 + r*101) % vocab), a forward over the whole sequence with labels = ids (next-token
cross-entropy, mean over all B x (SEQ-1) targets) and output_router_logits=True, so transformers adds
router_aux_loss_coef x the load-balancing loss to the loss; backward; torch.optim.AdamW (lr 1e-4,
weight decay 0.01 on matrices only, as the crate's AdamW; betas 0.9/0.999, eps 1e-8; torch's default
implementation); zero_grad. tokens/s = BATCH x SEQ / mean step time over STEPS steps after one warm-up
step. The warm-up step's loss is saved as first_loss: it should equal the Rust bench's first loss.
Refuses a checkpoint from which transformers would leave weights randomly initialised.

Usage: python3 scripts/bench_train_torch.py [DIR ...]   (default: target/bench-train/{tiny,small})
Environment: HAT_BENCH_TRAIN_BATCH (2), HAT_BENCH_TRAIN_SEQ (512 for tiny, 256 for small; when set it
applies to every preset), HAT_BENCH_TRAIN_STEPS (3) — the same as the Rust bench's — and
HAT_BENCH_THREADS (torch default). small defaults to 256 tokens a row because at 512 this side took
~60 s a step on a 2-core box (over 4 minutes in all).
"""
import json
import os
import sys
import time

import torch
import transformers
from transformers import AutoConfig, Qwen3_5MoeForCausalLM

LR = 1e-4
WEIGHT_DECAY = 0.01
# Tokens per row when HAT_BENCH_TRAIN_SEQ is unset (benches/train.rs has the same).
DEFAULT_SEQ = {"small": 256}


def load(path):
    cfg = AutoConfig.from_pretrained(path)
    if cfg.model_type == "qwen3_moe":
        sys.exit(f"{path}: a Qwen3 MoE checkpoint; this bench is for the Qwen3.5 MoE presets")
    model, info = Qwen3_5MoeForCausalLM.from_pretrained(
        path, dtype=torch.float32, attn_implementation="eager", output_loading_info=True)
    if info["missing_keys"]:
        sys.exit(f"{path}: transformers found no weights for {sorted(info['missing_keys'])[:5]}...")
    return model.train()


def measure(model, batch, seq, steps):
    vocab = model.config.vocab_size
    ids = torch.tensor([[(i * 7919 + 13 + row * 101) % vocab for i in range(seq)] for row in range(batch)])
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(
        [{"params": [p for p in params if p.ndim >= 2], "weight_decay": WEIGHT_DECAY},
         {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}],
        lr=LR, betas=(0.9, 0.999), eps=1e-8)

    def step():
        out = model(input_ids=ids, labels=ids, output_router_logits=True, use_cache=False)
        out.loss.backward()
        opt.step()
        opt.zero_grad()
        return out.loss.item()

    first_loss = step()  # warm-up
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    mean = (time.perf_counter() - t0) / steps
    return {"tokens_per_s": batch * seq / mean, "mean_step_s": mean, "first_loss": first_loss}


def main():
    root = os.path.join(os.path.dirname(__file__), "..", "target", "bench-train")
    dirs = sys.argv[1:] or [os.path.join(root, p) for p in ("tiny", "small")]
    batch = int(os.environ.get("HAT_BENCH_TRAIN_BATCH", 2))
    steps = max(1, int(os.environ.get("HAT_BENCH_TRAIN_STEPS", 3)))
    if "HAT_BENCH_THREADS" in os.environ:
        torch.set_num_threads(int(os.environ["HAT_BENCH_THREADS"]))
    print(f"torch train bench: batch {batch}, {steps} timed steps after 1 warm-up, "
          f"AdamW lr {LR}, torch {torch.__version__} / transformers {transformers.__version__}, "
          f"{torch.get_num_threads()} threads")
    for d in dirs:
        if not os.path.exists(os.path.join(d, "config.json")):
            sys.exit(f"{d}: no checkpoint; run `cargo bench --bench train` first")
        name = os.path.basename(os.path.normpath(d))
        seq = int(os.environ.get("HAT_BENCH_TRAIN_SEQ", DEFAULT_SEQ.get(name, 512)))
        model = load(d)
        figures = measure(model, batch, seq, steps)
        figures.update(batch=batch, seq=seq, steps=steps, torch_threads=torch.get_num_threads(),
                       router_aux_loss_coef=model.config.router_aux_loss_coef,
                       torch=torch.__version__, transformers=transformers.__version__)
        with open(os.path.join(d, "torch_train.json"), "w") as f:
            json.dump(figures, f, indent=2)
        print(f"{name:>5}: torch train {figures['tokens_per_s']:8.1f} tok/s"
              f" (batch {batch} x {seq}, {figures['mean_step_s']:.2f} s/step, first loss {figures['first_loss']:.4f},"
              f" {figures['torch_threads']} threads)")


if __name__ == "__main__":
    main()
