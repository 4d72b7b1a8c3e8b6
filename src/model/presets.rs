//! Named model shapes and parameter counting: `tiny` (trains on 2 CPU cores in minutes), `tiny-2attn`
//! (the same size with a second full-attention layer: it learns to copy from its prompt), `small`
//! (~100M total parameters at a 32k vocabulary), and the real Qwen3-30B-A3B and Qwen3.5-35B-A3B text
//! stacks (shapes only; counts match transformers on the meta device).

use super::config::{Arch, LayerType, ModelConfig};
use anyhow::{bail, Result};
use serde_json::json;

/// Names accepted by [`preset`].
pub const PRESETS: &[&str] = &[
    "tiny",
    "tiny-2attn",
    "small",
    "qwen3-30b-a3b",
    "qwen3.5-35b-a3b",
];

/// A named configuration; `vocab_size` overrides the preset's vocabulary when given (a trained
/// tokenizer decides it).
pub fn preset(name: &str, vocab_size: Option<usize>) -> Result<ModelConfig> {
    let mut cfg = match name {
        "tiny" => ModelConfig::from_json(&json!({
            "model_type": "qwen3_5_moe_text", "vocab_size": 4096, "hidden_size": 64, "num_hidden_layers": 4,
            "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
            "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 16, "linear_value_head_dim": 16,
            "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64, "shared_expert_intermediate_size": 64,
            "max_position_embeddings": 4096, "mtp_num_hidden_layers": 1, "initializer_range": 0.02,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": 0.25}
        }))?,
        // `tiny` with layers linear, full, linear, full: copying a string from the prompt needs a layer
        // that marks "the token before me was X" and a later one that looks it up; with attention only
        // in the last layer `tiny` sits on the copy task's plateau for 1,000 steps, this shape leaves it
        // by step 300 (docs/learning-default.md, twelfth session). 1,016 parameters fewer than `tiny`.
        "tiny-2attn" => {
            let mut cfg = preset("tiny", None)?;
            cfg.layer_types = [LayerType::LinearAttention, LayerType::FullAttention]
                .repeat(cfg.num_hidden_layers / 2);
            cfg
        }
        "small" => ModelConfig::from_json(&json!({
            "model_type": "qwen3_5_moe_text", "vocab_size": 32000, "hidden_size": 512, "num_hidden_layers": 12,
            "full_attention_interval": 4,
            "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
            "linear_num_key_heads": 4, "linear_num_value_heads": 8, "linear_key_head_dim": 64, "linear_value_head_dim": 64,
            "num_experts": 16, "num_experts_per_tok": 2, "moe_intermediate_size": 192, "shared_expert_intermediate_size": 256,
            "max_position_embeddings": 32768, "mtp_num_hidden_layers": 1,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1e7, "partial_rotary_factor": 0.25}
        }))?,
        // Qwen/Qwen3-30B-A3B config.json.
        "qwen3-30b-a3b" => ModelConfig::from_json(&json!({
            "model_type": "qwen3_moe", "vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 6144,
            "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
            "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": true,
            "decoder_sparse_step": 1, "mlp_only_layers": [], "rms_norm_eps": 1e-6, "rope_theta": 1e6,
            "max_position_embeddings": 40960, "tie_word_embeddings": false, "bos_token_id": 151643, "eos_token_id": 151645
        }))?,
        // Qwen/Qwen3.5-35B-A3B text_config.
        "qwen3.5-35b-a3b" => ModelConfig::from_json(&json!({
            "model_type": "qwen3_5_moe_text", "vocab_size": 248320, "hidden_size": 2048, "num_hidden_layers": 40,
            "full_attention_interval": 4, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
            "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
            "linear_conv_kernel_dim": 4, "num_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 512,
            "shared_expert_intermediate_size": 512, "max_position_embeddings": 262144, "mtp_num_hidden_layers": 1,
            "eos_token_id": 248044,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1e7, "partial_rotary_factor": 0.25}
        }))?,
        other => bail!("unknown preset {other:?}; known: {}", PRESETS.join(", ")),
    };
    if let Some(v) = vocab_size {
        if v == 0 {
            bail!("vocab_size must be > 0");
        }
        cfg.vocab_size = v;
    }
    Ok(cfg)
}

/// Parameter counts. `total`/`active` cover the decoder stack + embeddings + head, as
/// transformers' `*ForCausalLM` counts them; the MTP head is reported separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamCounts {
    pub total: u64,
    /// Parameters touched per token: all but the `E - k` unselected routed experts per MoE layer.
    pub active: u64,
    pub mtp: u64,
}

fn attention_params(c: &ModelConfig, gated: bool) -> u64 {
    let (h, q, kv) = (
        c.hidden_size as u64,
        (c.num_attention_heads * c.head_dim) as u64,
        (c.num_key_value_heads * c.head_dim) as u64,
    );
    let q_out = if gated { 2 * q } else { q };
    let bias = if c.attention_bias {
        q_out + 2 * kv + h
    } else {
        0
    };
    h * q_out + 2 * h * kv + q * h + bias + 2 * c.head_dim as u64
}

fn deltanet_params(c: &ModelConfig) -> u64 {
    let h = c.hidden_size as u64;
    let key = (c.linear_num_key_heads * c.linear_key_head_dim) as u64;
    let value = (c.linear_num_value_heads * c.linear_value_head_dim) as u64;
    let hv = c.linear_num_value_heads as u64;
    let conv = 2 * key + value;
    h * conv
        + h * value
        + 2 * h * hv
        + conv * c.linear_conv_kernel_dim as u64
        + 2 * hv
        + c.linear_value_head_dim as u64
        + value * h
}

/// (total, inactive) of one MoE block.
fn moe_params(c: &ModelConfig) -> (u64, u64) {
    let (h, e, k) = (
        c.hidden_size as u64,
        c.num_experts as u64,
        c.num_experts_per_tok as u64,
    );
    let expert = 3 * h * c.moe_intermediate_size as u64;
    let shared = if c.shared_expert_intermediate_size > 0 {
        3 * h * c.shared_expert_intermediate_size as u64 + h
    } else {
        0
    };
    (e * h + e * expert + shared, (e - k) * expert)
}

pub fn param_counts(c: &ModelConfig) -> ParamCounts {
    let h = c.hidden_size as u64;
    let v = c.vocab_size as u64;
    let mut total = v * h + h + if c.tie_word_embeddings { 0 } else { v * h };
    let mut inactive = 0;
    for i in 0..c.num_hidden_layers {
        total += 2 * h;
        total += match c.layer_types[i] {
            LayerType::FullAttention => attention_params(c, c.arch == Arch::Qwen3_5Moe),
            LayerType::LinearAttention => deltanet_params(c),
        };
        if c.is_moe_layer(i) {
            let (t, off) = moe_params(c);
            total += t;
            inactive += off;
        } else {
            total += 3 * h * c.intermediate_size as u64;
        }
    }
    let mtp = if c.arch == Arch::Qwen3_5Moe {
        let layer = 2 * h + attention_params(c, true) + moe_params(c).0;
        c.mtp_num_hidden_layers as u64 * layer
            + if c.mtp_num_hidden_layers > 0 {
                3 * h + 2 * h * h
            } else {
                0
            }
    } else {
        0
    };
    ParamCounts {
        total,
        active: total - inactive,
        mtp,
    }
}
