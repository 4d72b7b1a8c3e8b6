#!/usr/bin/env python3
"""Generates testdata/model/: tiny random qwen3_moe and qwen3_5_moe checkpoints with reference
outputs from transformers (fp32, eager attention, pure-PyTorch GatedDeltaNet path).

Run from the repository root:  python3 scripts/gen_model_fixtures.py
Needs torch + transformers >= 5 (written against 5.24), and NOT flash-linear-attention /
causal-conv1d (so transformers uses its torch reference kernels).

Per model directory: config.json, model.safetensors, reference.safetensors with
  ids_short [2,7] / logits_short, ids_long [1,T>=150] / logits_long, aux_loss_long,
  gen_prompt / gen_tokens (greedy, with cache), and for qwen3_5_moe the MTP logits and the
  gradients `grad.<hf name>` of  loss = CE + router_aux_loss_coef * aux + 0.3 * CE_mtp.
param_counts.json: total/active parameters of the real 30B-A3B and 35B-A3B text stacks counted
by transformers on the meta device.
"""
import copy
import json
import os

import torch
from safetensors.torch import save_file
from torch import nn
from transformers import (Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig, Qwen3MoeConfig,
                          Qwen3MoeForCausalLM)
from transformers.models.qwen3_5_moe import modeling_qwen3_5_moe as M35

OUT = "testdata/model"
MTP_WEIGHT = 0.3


def randomize(model, zero_centered):
    """Perturb norms (so a missing/extra `1+w` shows), make routers decisive, randomise biases."""
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("linear_attn.norm.weight"):
                p.normal_(1.0, 0.1)  # gated norm: plain w
            elif n.endswith("norm.weight"):
                p.normal_(0.0, 0.1) if zero_centered else p.normal_(1.0, 0.1)
            elif n.endswith("mlp.gate.weight"):
                p.normal_(0.0, 0.5)
            elif n.endswith(".bias"):
                p.normal_(0.0, 0.1)


def greedy(model, prompt, n):
    out = model.generate(prompt, max_new_tokens=n, do_sample=False, use_cache=True,
                         eos_token_id=None, pad_token_id=0)
    return out[0, prompt.shape[1]:]


def references(model, vocab, t_long, gen_new=10):
    ids_short = torch.randint(0, vocab, (2, 7))
    ids_long = torch.randint(0, vocab, (1, t_long))
    with torch.no_grad():
        short = model(input_ids=ids_short).logits
        long = model(input_ids=ids_long, output_router_logits=True)
        gen = greedy(model, ids_short[:1], gen_new)
    ref = {"ids_short": ids_short, "logits_short": short, "ids_long": ids_long,
           "logits_long": long.logits, "gen_prompt": ids_short[0], "gen_tokens": gen}
    if long.aux_loss is not None:
        ref["aux_loss_long"] = long.aux_loss.reshape(1)
    return ref


def save_ref(d, ref):
    save_file({k: v.detach().clone().contiguous() for k, v in ref.items()}, f"{d}/reference.safetensors")


def qwen3_moe():
    torch.manual_seed(0)
    cfg = Qwen3MoeConfig(
        vocab_size=128, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        moe_intermediate_size=24, num_experts=6, num_experts_per_tok=2, norm_topk_prob=False,
        decoder_sparse_step=1, mlp_only_layers=[1], attention_bias=True,
        rms_norm_eps=1e-6, max_position_embeddings=512, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1e6}, initializer_range=0.1,
        router_aux_loss_coef=0.001, attn_implementation="eager")
    model = Qwen3MoeForCausalLM(cfg).eval()
    randomize(model, zero_centered=False)
    d = f"{OUT}/qwen3_moe"
    model.save_pretrained(d)  # per-expert keys
    save_ref(d, references(model, cfg.vocab_size, 160))


def qwen3_moe_tied():
    """Tied embeddings, norm_topk_prob, decoder_sparse_step=2, sliding window; bf16 and f16 files."""
    torch.manual_seed(1)
    cfg = Qwen3MoeConfig(
        vocab_size=96, hidden_size=32, intermediate_size=40, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16,
        moe_intermediate_size=16, num_experts=4, num_experts_per_tok=2, norm_topk_prob=True,
        decoder_sparse_step=2, use_sliding_window=True, sliding_window=5,
        rms_norm_eps=1e-5, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, initializer_range=0.1,
        attn_implementation="eager")
    model = Qwen3MoeForCausalLM(cfg).eval()
    randomize(model, zero_centered=False)
    for dtype, name in [(torch.bfloat16, "bf16"), (torch.float16, "f16")]:
        d = f"{OUT}/qwen3_moe_tied_{name}"
        copy.deepcopy(model).to(dtype).save_pretrained(d)
        # Reference: the rounded parameters, computed in fp32. (Rounding the whole module would
        # also round the RoPE `inv_freq` buffer, which a loader recomputes in fp32.)
        rounded = copy.deepcopy(model)
        with torch.no_grad():
            for p in rounded.parameters():
                p.copy_(p.to(dtype).float())
        save_ref(d, references(rounded, cfg.vocab_size, 20))


class Mtp(nn.Module):
    """vLLM's Qwen3.5 MTP head: fc([norm_e(embed(x_{i+1})); norm_h(h_i)]) -> full-attn MoE layer
    at position i -> norm -> shared lm_head."""

    def __init__(self, cfg):
        super().__init__()
        h, eps = cfg.hidden_size, cfg.rms_norm_eps
        self.pre_fc_norm_embedding = M35.Qwen3_5MoeRMSNorm(h, eps=eps)
        self.pre_fc_norm_hidden = M35.Qwen3_5MoeRMSNorm(h, eps=eps)
        self.fc = nn.Linear(2 * h, h, bias=False)
        c2 = copy.deepcopy(cfg)
        c2.layer_types = ["full_attention"] * cfg.num_hidden_layers
        self.layers = nn.ModuleList([M35.Qwen3_5MoeDecoderLayer(c2, 0)])
        self.norm = M35.Qwen3_5MoeRMSNorm(h, eps=eps)

    def forward(self, model, hidden, ids):
        t = ids.shape[1] - 1
        e = self.pre_fc_norm_embedding(model.model.embed_tokens(ids[:, 1:]))
        u = self.fc(torch.cat([e, self.pre_fc_norm_hidden(hidden[:, :t])], -1))
        pos = torch.arange(t)[None].expand(ids.shape[0], -1)
        cos, sin = model.model.rotary_emb(u, pos)
        mask = torch.full((t, t), float("-inf")).triu(1)[None, None]
        u = self.layers[0](u, position_embeddings=(cos, sin), attention_mask=mask)
        return model.lm_head(self.norm(u))


def ce(logits, targets):
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))


def qwen3_5_moe():
    torch.manual_seed(2)
    cfg = Qwen3_5MoeTextConfig(
        vocab_size=128, hidden_size=32, num_hidden_layers=4,
        layer_types=["linear_attention", "linear_attention", "full_attention", "linear_attention"],
        num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
        linear_value_head_dim=8, linear_conv_kernel_dim=4,
        num_experts=8, num_experts_per_tok=2, moe_intermediate_size=16,
        shared_expert_intermediate_size=24, rms_norm_eps=1e-6, max_position_embeddings=512,
        tie_word_embeddings=False, initializer_range=0.1,
        rope_parameters={"rope_type": "default", "rope_theta": 1e7, "partial_rotary_factor": 0.25,
                         "mrope_section": [1, 1, 0], "mrope_interleaved": True},
        router_aux_loss_coef=0.01, attn_implementation="eager", mtp_num_hidden_layers=1)
    model = Qwen3_5MoeForCausalLM(cfg).eval()
    mtp = Mtp(cfg)
    with torch.no_grad():
        for n, p in mtp.named_parameters():
            if "experts" in n:
                p.normal_(0.0, cfg.initializer_range)
    randomize(model, zero_centered=True)
    randomize(mtp, zero_centered=True)
    d = f"{OUT}/qwen3_5_moe"
    os.makedirs(d, exist_ok=True)
    cfg.save_pretrained(d)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}  # fused experts, `model.` prefix
    state.update({f"mtp.{k}": v.contiguous() for k, v in mtp.state_dict().items()})
    save_file(state, f"{d}/model.safetensors", metadata={"format": "pt"})

    ref = references(model, cfg.vocab_size, 150)
    # Training-style pass: CE + coef * aux + MTP CE, gradients of a few named parameters.
    ids = ref["ids_long"]
    out = model(input_ids=ids, labels=ids, output_router_logits=True, output_hidden_states=True)
    # Final post-norm hidden states: recompute via the base model.
    hidden = model.model(input_ids=ids).last_hidden_state
    mtp_logits = mtp(model, hidden, ids)
    mtp_ce = ce(mtp_logits[:, :-1], ids[:, 2:])
    loss = out.loss + MTP_WEIGHT * mtp_ce
    loss.backward()
    ref["loss_long"] = out.loss.detach().reshape(1)
    ref["mtp_logits_long"] = mtp_logits.detach()
    ref["mtp_ce_long"] = mtp_ce.detach().reshape(1)
    ref["total_loss_long"] = loss.detach().reshape(1)
    names = {
        "model.layers.0.mlp.gate.weight": model.model.layers[0].mlp.gate.weight,
        "model.layers.0.linear_attn.in_proj_qkv.weight": model.model.layers[0].linear_attn.in_proj_qkv.weight,
        "model.layers.0.linear_attn.A_log": model.model.layers[0].linear_attn.A_log,
        "model.layers.0.linear_attn.dt_bias": model.model.layers[0].linear_attn.dt_bias,
        "model.layers.0.linear_attn.conv1d.weight": model.model.layers[0].linear_attn.conv1d.weight,
        "model.layers.1.linear_attn.norm.weight": model.model.layers[1].linear_attn.norm.weight,
        "model.layers.1.mlp.experts.gate_up_proj": model.model.layers[1].mlp.experts.gate_up_proj,
        "model.layers.2.self_attn.q_proj.weight": model.model.layers[2].self_attn.q_proj.weight,
        "model.layers.3.mlp.shared_expert_gate.weight": model.model.layers[3].mlp.shared_expert_gate.weight,
        "model.embed_tokens.weight": model.model.embed_tokens.weight,
        "mtp.fc.weight": mtp.fc.weight,
        "mtp.layers.0.mlp.gate.weight": mtp.layers[0].mlp.gate.weight,
        "mtp.pre_fc_norm_hidden.weight": mtp.pre_fc_norm_hidden.weight,
    }
    for n, p in names.items():
        ref[f"grad.{n}"] = p.grad.detach().clone()
    save_ref(d, ref)


def count(model, cfg):
    total = sum(p.numel() for p in model.parameters())
    per_expert = 3 * cfg.hidden_size * cfg.moe_intermediate_size
    moe_layers = sum(1 for layer in model.model.layers if hasattr(layer.mlp, "experts"))
    inactive = (cfg.num_experts - cfg.num_experts_per_tok) * per_expert * moe_layers
    return {"total": total, "active": total - inactive}


def param_counts():
    c30 = Qwen3MoeConfig(
        vocab_size=151936, hidden_size=2048, intermediate_size=6144, num_hidden_layers=48,
        num_attention_heads=32, num_key_value_heads=4, head_dim=128, moe_intermediate_size=768,
        num_experts=128, num_experts_per_tok=8, norm_topk_prob=True, tie_word_embeddings=False)
    c35 = Qwen3_5MoeTextConfig()  # class defaults are the 35B-A3B text stack
    with torch.device("meta"):
        m30 = Qwen3MoeForCausalLM(c30)
        m35 = Qwen3_5MoeForCausalLM(c35)
    counts = {"qwen3_moe_30b_a3b": count(m30, c30), "qwen3_5_moe_35b_a3b": count(m35, c35)}
    with open(f"{OUT}/param_counts.json", "w") as f:
        json.dump(counts, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    torch.set_grad_enabled(True)
    qwen3_moe()
    qwen3_moe_tied()
    qwen3_5_moe()
    param_counts()
