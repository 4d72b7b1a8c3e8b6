#!/usr/bin/env python3
"""transformers' eager CPU prefill/decode throughput on the checkpoints `cargo bench --bench model`
writes (target/bench-model/<preset>/), so the Rust bench can print the ratio.

Same measurement as benches/model.rs: prompt of PROMPT tokens (ids (i*7919+13) % vocab), prefill
= best of 3 forwards over the prompt with logits at the last position only, decode = DECODE single-token steps with the KV/recurrent cache, fed
fixed ids (no sampling). Writes transformers.json next to each checkpoint and prints the figures.
Refuses a checkpoint from which transformers would leave weights randomly initialised.

Usage: python3 scripts/bench_transformers.py [DIR ...]   (default: target/bench-model/{tiny,small})
Environment: HAT_BENCH_PROMPT (128), HAT_BENCH_DECODE (64), HAT_BENCH_THREADS (torch default).
"""
import json
import os
import sys
import time

import torch
from transformers import AutoConfig, Qwen3_5MoeForCausalLM, Qwen3MoeForCausalLM


def load(path):
    cfg = AutoConfig.from_pretrained(path)
    cls = Qwen3MoeForCausalLM if cfg.model_type == "qwen3_moe" else Qwen3_5MoeForCausalLM
    model, info = cls.from_pretrained(path, dtype=torch.float32, attn_implementation="eager",
                                      output_loading_info=True)
    if info["missing_keys"]:
        sys.exit(f"{path}: transformers found no weights for {sorted(info['missing_keys'])[:5]}...")
    return model.eval()


@torch.inference_mode()
def measure(model, prompt_len, decode):
    vocab = model.config.vocab_size
    ids = torch.tensor([[(i * 7919 + 13) % vocab for i in range(prompt_len)]])
    model(ids[:, :8], use_cache=True)  # warm-up
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        # Logits at the last position only, as generate() prefills (and as our prefill does).
        out = model(ids, use_cache=True, logits_to_keep=1)
        best = min(best, time.perf_counter() - t0)
    cache = out.past_key_values
    t0 = time.perf_counter()
    for step in range(decode):
        tok = torch.tensor([[step % vocab]])
        out = model(tok, past_key_values=cache, use_cache=True)
        cache = out.past_key_values
    dt = time.perf_counter() - t0
    return {"prefill_tokens_per_s": prompt_len / best, "decode_tokens_per_s": decode / dt}


def main():
    root = os.path.join(os.path.dirname(__file__), "..", "target", "bench-model")
    dirs = sys.argv[1:] or [os.path.join(root, p) for p in ("tiny", "small")]
    prompt_len = int(os.environ.get("HAT_BENCH_PROMPT", 128))
    decode = int(os.environ.get("HAT_BENCH_DECODE", 64))
    if "HAT_BENCH_THREADS" in os.environ:
        torch.set_num_threads(int(os.environ["HAT_BENCH_THREADS"]))
    for d in dirs:
        if not os.path.exists(os.path.join(d, "config.json")):
            sys.exit(f"{d}: no checkpoint; run `cargo bench --bench model` first")
        model = load(d)
        figures = measure(model, prompt_len, decode)
        figures.update(prompt_tokens=prompt_len, decode_tokens=decode, prefill_logits="last", torch_threads=torch.get_num_threads(),
                       torch=torch.__version__, transformers=__import__("transformers").__version__)
        with open(os.path.join(d, "transformers.json"), "w") as f:
            json.dump(figures, f, indent=2)
        print(f"{os.path.basename(os.path.normpath(d)):>5}: transformers prefill {figures['prefill_tokens_per_s']:9.1f} tok/s"
              f" | decode {figures['decode_tokens_per_s']:7.1f} tok/s ({figures['torch_threads']} threads)")


if __name__ == "__main__":
    main()
