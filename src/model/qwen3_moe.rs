//! Qwen3-MoE (`Qwen3MoeForCausalLM`) decoder layers: plain attention with q/k norm, routed
//! experts (dense SwiGLU on `mlp_only_layers` / non-sparse steps), plain `w` RMSNorms.

use super::config::ModelConfig;
use super::io::weights::WeightSource;
use super::layers::attention::{Attention, AttentionDims};
use super::layers::decoder::{DecoderLayer, Mixer};
use super::layers::moe::{Ffn, MoeDims, SparseMoe, SwiGlu};
use super::layers::norm::RmsNorm;
use anyhow::Result;
use burn::prelude::*;

pub fn decoder_layer<B: Backend>(
    cfg: &ModelConfig,
    src: &mut dyn WeightSource,
    i: usize,
    device: &B::Device,
) -> Result<DecoderLayer<B>> {
    let p = format!("model.layers.{i}");
    let (h, eps, std) = (cfg.hidden_size, cfg.rms_norm_eps, cfg.initializer_range);
    let attn = AttentionDims {
        hidden: h,
        num_heads: cfg.num_attention_heads,
        num_kv_heads: cfg.num_key_value_heads,
        head_dim: cfg.head_dim,
        bias: cfg.attention_bias,
        gated: false,
        zero_centered_norm: false,
        eps,
        sliding_window: cfg.sliding_window.unwrap_or(0),
        init_std: std,
    };
    let mlp = if cfg.is_moe_layer(i) {
        let d = MoeDims {
            hidden: h,
            num_experts: cfg.num_experts,
            top_k: cfg.num_experts_per_tok,
            inter: cfg.moe_intermediate_size,
            shared_inter: 0,
            norm_topk_prob: cfg.norm_topk_prob,
            init_std: std,
        };
        Ffn::Sparse(SparseMoe::load(src, &format!("{p}.mlp"), &d, device)?)
    } else {
        Ffn::Dense(SwiGlu::load(
            src,
            &format!("{p}.mlp"),
            h,
            cfg.intermediate_size,
            std,
            device,
        )?)
    };
    Ok(DecoderLayer {
        input_layernorm: RmsNorm::load(
            src,
            &format!("{p}.input_layernorm"),
            h,
            eps,
            false,
            device,
        )?,
        mixer: Mixer::Attention(Attention::load(
            src,
            &format!("{p}.self_attn"),
            &attn,
            device,
        )?),
        post_attention_layernorm: RmsNorm::load(
            src,
            &format!("{p}.post_attention_layernorm"),
            h,
            eps,
            false,
            device,
        )?,
        mlp,
    })
}
