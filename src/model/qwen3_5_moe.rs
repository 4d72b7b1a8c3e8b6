//! Qwen3.5-MoE text stack (`Qwen3_5MoeForCausalLM`): Gated DeltaNet or gated full attention per
//! `layer_types`, every FFN a MoE with a sigmoid-gated shared expert, `(1+w)` RMSNorms, and the
//! optional MTP head.

use super::config::{LayerType, ModelConfig};
use super::io::weights::{linear, WeightSource};
use super::layers::attention::{Attention, AttentionDims};
use super::layers::decoder::{DecoderLayer, Mixer};
use super::layers::gated_deltanet::{DeltaNetDims, GatedDeltaNet};
use super::layers::moe::{Ffn, MoeDims, SparseMoe};
use super::layers::mtp::Mtp;
use super::layers::norm::RmsNorm;
use anyhow::Result;
use burn::prelude::*;

fn layer<B: Backend>(
    cfg: &ModelConfig,
    src: &mut dyn WeightSource,
    p: &str,
    kind: LayerType,
    device: &B::Device,
) -> Result<DecoderLayer<B>> {
    let (h, eps, std) = (cfg.hidden_size, cfg.rms_norm_eps, cfg.initializer_range);
    let mixer = match kind {
        LayerType::FullAttention => {
            let d = AttentionDims {
                hidden: h,
                num_heads: cfg.num_attention_heads,
                num_kv_heads: cfg.num_key_value_heads,
                head_dim: cfg.head_dim,
                bias: cfg.attention_bias,
                gated: true,
                zero_centered_norm: true,
                eps,
                sliding_window: 0,
                init_std: std,
            };
            Mixer::Attention(Attention::load(src, &format!("{p}.self_attn"), &d, device)?)
        }
        LayerType::LinearAttention => {
            let d = DeltaNetDims {
                hidden: h,
                num_k_heads: cfg.linear_num_key_heads,
                num_v_heads: cfg.linear_num_value_heads,
                head_k_dim: cfg.linear_key_head_dim,
                head_v_dim: cfg.linear_value_head_dim,
                conv_kernel: cfg.linear_conv_kernel_dim,
                eps,
                init_std: std,
            };
            Mixer::DeltaNet(GatedDeltaNet::load(
                src,
                &format!("{p}.linear_attn"),
                &d,
                device,
            )?)
        }
    };
    let moe = MoeDims {
        hidden: h,
        num_experts: cfg.num_experts,
        top_k: cfg.num_experts_per_tok,
        inter: cfg.moe_intermediate_size,
        shared_inter: cfg.shared_expert_intermediate_size,
        norm_topk_prob: true,
        init_std: std,
    };
    Ok(DecoderLayer {
        input_layernorm: RmsNorm::load(src, &format!("{p}.input_layernorm"), h, eps, true, device)?,
        mixer,
        post_attention_layernorm: RmsNorm::load(
            src,
            &format!("{p}.post_attention_layernorm"),
            h,
            eps,
            true,
            device,
        )?,
        mlp: Ffn::Sparse(SparseMoe::load(src, &format!("{p}.mlp"), &moe, device)?),
    })
}

pub fn decoder_layer<B: Backend>(
    cfg: &ModelConfig,
    src: &mut dyn WeightSource,
    i: usize,
    device: &B::Device,
) -> Result<DecoderLayer<B>> {
    layer(
        cfg,
        src,
        &format!("model.layers.{i}"),
        cfg.layer_types[i],
        device,
    )
}

/// The MTP head (`mtp.*`), whose layers are full-attention + MoE layers.
pub fn mtp<B: Backend>(
    cfg: &ModelConfig,
    src: &mut dyn WeightSource,
    device: &B::Device,
) -> Result<Mtp<B>> {
    let (h, eps) = (cfg.hidden_size, cfg.rms_norm_eps);
    Ok(Mtp {
        pre_fc_norm_embedding: RmsNorm::load(
            src,
            "mtp.pre_fc_norm_embedding",
            h,
            eps,
            true,
            device,
        )?,
        pre_fc_norm_hidden: RmsNorm::load(src, "mtp.pre_fc_norm_hidden", h, eps, true, device)?,
        fc: linear(
            src,
            "mtp.fc",
            2 * h,
            h,
            false,
            cfg.initializer_range,
            device,
        )?,
        layers: (0..cfg.mtp_num_hidden_layers)
            .map(|i| {
                layer(
                    cfg,
                    src,
                    &format!("mtp.layers.{i}"),
                    LayerType::FullAttention,
                    device,
                )
            })
            .collect::<Result<_>>()?,
        norm: RmsNorm::load(src, "mtp.norm", h, eps, true, device)?,
    })
}
