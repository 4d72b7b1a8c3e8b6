//! Inspection helpers for the CLI: a JSON summary of a checkpoint directory and raw logits.

use super::checkpoint::Checkpoint;
use crate::model::config::{Arch, LayerType, ModelConfig};
use crate::model::presets::param_counts;
use crate::model::{ids_tensor, CausalLm};
use anyhow::{anyhow, Result};
use burn::backend::NdArray;
use serde_json::{json, Value};
use std::path::Path;

/// Summary of `dir`: architecture, shapes, parameter counts, stored tensors and which expert
/// layout / key prefix the files use. Reads tensor headers only.
pub fn info(dir: &Path) -> Result<Value> {
    let cfg = ModelConfig::from_dir(dir)?;
    let ck = Checkpoint::open(dir)?;
    let names: Vec<&String> = ck.names().collect();
    let fused = names.iter().any(|n| n.ends_with(".experts.gate_up_proj"));
    let per_expert = names.iter().any(|n| n.contains(".experts.0.gate_proj."));
    let counts = param_counts(&cfg);
    let count_layers = |t: LayerType| cfg.layer_types.iter().filter(|&&x| x == t).count();
    Ok(json!({
        "dir": dir.display().to_string(),
        "arch": match cfg.arch { Arch::Qwen3Moe => "qwen3_moe", Arch::Qwen3_5Moe => "qwen3_5_moe" },
        "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.hidden_size,
        "layers": cfg.num_hidden_layers,
        "full_attention_layers": count_layers(LayerType::FullAttention),
        "linear_attention_layers": count_layers(LayerType::LinearAttention),
        "moe_layers": (0..cfg.num_hidden_layers).filter(|&i| cfg.is_moe_layer(i)).count(),
        "experts": cfg.num_experts,
        "experts_per_token": cfg.num_experts_per_tok,
        "tie_word_embeddings": cfg.tie_word_embeddings,
        "params": {"total": counts.total, "active": counts.active, "mtp": counts.mtp},
        "tensors": names.len(),
        "expert_layout": match (fused, per_expert) {
            (true, false) => "fused",
            (false, true) => "per_expert",
            (true, true) => "mixed",
            (false, false) => "none",
        },
        "language_model_prefix": names.iter().any(|n| n.starts_with("model.language_model.")),
        "has_mtp": names.iter().any(|n| n.starts_with("mtp.")),
        "config": cfg.to_hf_json(),
    }))
}

/// Logits at every position of `ids` (one sequence) on the CPU backend, `[T][V]`.
pub fn logits(dir: &Path, ids: &[u32]) -> Result<Vec<Vec<f32>>> {
    let device = Default::default();
    let model = CausalLm::<NdArray<f32>>::load(dir, &device)?;
    if ids.is_empty() {
        return Err(anyhow!("no token ids given"));
    }
    model.check_tokens(ids, 0, 0)?;
    let out = model.forward(ids_tensor(&[ids.to_vec()], &device)?);
    let v = out.logits.dims()[2];
    let flat = out
        .logits
        .into_data()
        .convert::<f32>()
        .into_vec::<f32>()
        .map_err(|e| anyhow!("reading logits: {e:?}"))?;
    Ok(flat.chunks(v).map(<[f32]>::to_vec).collect())
}
