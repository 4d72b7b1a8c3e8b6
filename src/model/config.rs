//! Model configuration mirroring Hugging Face `config.json` for `qwen3_moe` and `qwen3_5_moe`
//! (flat, or nested under `text_config`), with the transformers class defaults.

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Map, Value};
use std::path::Path;

/// More decoder layers than any released model has by an order of magnitude (Qwen3-235B has 94).
const MAX_LAYERS: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// Qwen3-30B-A3B family: attention + routed experts, plain `w` RMSNorm.
    Qwen3Moe,
    /// Qwen3.5/3.6-35B-A3B text stack: Gated DeltaNet + gated attention, shared expert, `(1+w)` norms.
    Qwen3_5Moe,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerType {
    LinearAttention,
    FullAttention,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ModelConfig {
    pub arch: Arch,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub head_dim: usize,
    /// Dense SwiGLU width (Qwen3-MoE non-sparse layers only).
    pub intermediate_size: usize,
    pub moe_intermediate_size: usize,
    /// Qwen3.5 shared expert width; 0 = no shared expert.
    pub shared_expert_intermediate_size: usize,
    pub num_experts: usize,
    pub num_experts_per_tok: usize,
    pub norm_topk_prob: bool,
    pub decoder_sparse_step: usize,
    pub mlp_only_layers: Vec<usize>,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    /// Fraction of `head_dim` that is rotated (Qwen3.5; Qwen3-MoE always rotates all of it).
    pub partial_rotary_factor: f64,
    pub attention_bias: bool,
    /// Qwen3-MoE only, when `use_sliding_window` is true.
    pub sliding_window: Option<usize>,
    pub tie_word_embeddings: bool,
    pub router_aux_loss_coef: f64,
    pub max_position_embeddings: usize,
    pub initializer_range: f64,
    /// Token mixer per layer (all `FullAttention` for Qwen3-MoE).
    pub layer_types: Vec<LayerType>,
    pub linear_num_key_heads: usize,
    pub linear_num_value_heads: usize,
    pub linear_key_head_dim: usize,
    pub linear_value_head_dim: usize,
    pub linear_conv_kernel_dim: usize,
    /// MTP decoder layers (Qwen3.5); 0 = none.
    pub mtp_num_hidden_layers: usize,
    pub bos_token_id: Option<Value>,
    pub eos_token_id: Option<Value>,
}

fn get<'a>(o: &'a Map<String, Value>, k: &str) -> Option<&'a Value> {
    o.get(k).filter(|v| !v.is_null())
}

fn usize_or(o: &Map<String, Value>, k: &str, d: usize) -> Result<usize> {
    match get(o, k) {
        None => Ok(d),
        Some(v) => v
            .as_u64()
            .map(|x| x as usize)
            .ok_or_else(|| anyhow!("config key `{k}` must be a non-negative integer, got {v}")),
    }
}

fn f64_or(o: &Map<String, Value>, k: &str, d: f64) -> Result<f64> {
    match get(o, k) {
        None => Ok(d),
        Some(v) => v
            .as_f64()
            .ok_or_else(|| anyhow!("config key `{k}` must be a number, got {v}")),
    }
}

fn bool_or(o: &Map<String, Value>, k: &str, d: bool) -> Result<bool> {
    match get(o, k) {
        None => Ok(d),
        Some(v) => v
            .as_bool()
            .ok_or_else(|| anyhow!("config key `{k}` must be a boolean, got {v}")),
    }
}

impl ModelConfig {
    /// Reads `dir/config.json`.
    pub fn from_dir(dir: &Path) -> Result<Self> {
        let path = dir.join("config.json");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let v: Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        Self::from_json(&v).with_context(|| format!("in {}", path.display()))
    }

    /// Parses a HF config (flat, or with the text model under `text_config`).
    pub fn from_json(v: &Value) -> Result<Self> {
        let top = v
            .as_object()
            .ok_or_else(|| anyhow!("config must be a JSON object"))?;
        let model_type = get(top, "model_type").and_then(Value::as_str).unwrap_or("");
        let (arch, o) = match model_type {
            "qwen3_moe" => (Arch::Qwen3Moe, top),
            "qwen3_5_moe_text" => (Arch::Qwen3_5Moe, top),
            "qwen3_5_moe" => match get(top, "text_config") {
                Some(Value::Object(t)) => (Arch::Qwen3_5Moe, t),
                Some(_) => bail!("`text_config` must be an object"),
                // A flat qwen3_5_moe config (text keys at top level) is accepted as well.
                None => (Arch::Qwen3_5Moe, top),
            },
            other => bail!(
                "unsupported model_type {other:?}: supported are \"qwen3_moe\", \"qwen3_5_moe\" and \"qwen3_5_moe_text\""
            ),
        };
        if let Some(act) = get(o, "hidden_act").and_then(Value::as_str) {
            if act != "silu" {
                bail!("unsupported hidden_act {act:?}: only \"silu\" is implemented");
            }
        }
        let q35 = arch == Arch::Qwen3_5Moe;
        let hidden_size = usize_or(o, "hidden_size", 2048)?;
        let num_attention_heads = usize_or(o, "num_attention_heads", if q35 { 16 } else { 32 })?;
        if num_attention_heads == 0 {
            bail!("num_attention_heads must be > 0");
        }
        let num_hidden_layers = usize_or(o, "num_hidden_layers", if q35 { 40 } else { 24 })?;
        // Per-layer tables are built from this count before any weight is read: a corrupt value must
        // be an error here, not an allocation of billions of entries (found by `make fuzz`).
        if num_hidden_layers > MAX_LAYERS {
            bail!(
                "num_hidden_layers {num_hidden_layers} is over {MAX_LAYERS}: not the config.json of a real checkpoint"
            );
        }
        // HF: `getattr(config, "head_dim", None) or hidden_size // num_attention_heads`
        let head_dim = match get(o, "head_dim").and_then(Value::as_u64) {
            Some(h) if h > 0 => h as usize,
            _ if q35 => 256,
            _ => hidden_size / num_attention_heads,
        };

        // RoPE: `rope_parameters` (v5) or legacy `rope_scaling` dict, else top-level keys.
        let rope = get(o, "rope_parameters")
            .or_else(|| get(o, "rope_scaling"))
            .and_then(Value::as_object);
        let rope_get = |k: &str| rope.and_then(|r| get(r, k)).or_else(|| get(o, k));
        if let Some(t) = rope_get("rope_type")
            .or_else(|| rope.and_then(|r| get(r, "type")))
            .and_then(Value::as_str)
        {
            if t != "default" {
                bail!("unsupported rope_type {t:?}: only \"default\" RoPE is implemented");
            }
        }
        let rope_theta = match rope_get("rope_theta") {
            None => 10000.0,
            Some(x) => x
                .as_f64()
                .ok_or_else(|| anyhow!("rope_theta must be a number"))?,
        };
        let partial_rotary_factor = match rope_get("partial_rotary_factor") {
            None => {
                if q35 {
                    0.25
                } else {
                    1.0
                }
            }
            Some(x) => x
                .as_f64()
                .ok_or_else(|| anyhow!("partial_rotary_factor must be a number"))?,
        };

        let num_experts = match get(o, "num_experts").or_else(|| get(o, "num_local_experts")) {
            None => {
                if q35 {
                    256
                } else {
                    128
                }
            }
            Some(x) => x
                .as_u64()
                .ok_or_else(|| anyhow!("num_experts must be an integer"))?
                as usize,
        };
        let layer_types = if q35 {
            match get(o, "layer_types") {
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|t| match t.as_str() {
                        Some("linear_attention") => Ok(LayerType::LinearAttention),
                        Some("full_attention") => Ok(LayerType::FullAttention),
                        _ => Err(anyhow!("unknown layer type {t} in layer_types")),
                    })
                    .collect::<Result<Vec<_>>>()?,
                Some(_) => bail!("layer_types must be a list"),
                None => {
                    let interval = usize_or(o, "full_attention_interval", 4)?.max(1);
                    (0..num_hidden_layers)
                        .map(|i| {
                            if (i + 1) % interval == 0 {
                                LayerType::FullAttention
                            } else {
                                LayerType::LinearAttention
                            }
                        })
                        .collect()
                }
            }
        } else {
            vec![LayerType::FullAttention; num_hidden_layers]
        };
        let mlp_only_layers = match get(o, "mlp_only_layers") {
            None => vec![],
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_u64()
                        .map(|x| x as usize)
                        .ok_or_else(|| anyhow!("mlp_only_layers must hold integers"))
                })
                .collect::<Result<_>>()?,
            Some(_) => bail!("mlp_only_layers must be a list"),
        };
        let sliding_window = if !q35 && bool_or(o, "use_sliding_window", false)? {
            get(o, "sliding_window")
                .and_then(Value::as_u64)
                .map(|w| w as usize)
                .or(Some(4096))
        } else {
            None
        };
        // The nested VLM config keeps `tie_word_embeddings` at top level too; the text value wins.
        let tie_word_embeddings = match get(o, "tie_word_embeddings") {
            Some(_) => bool_or(o, "tie_word_embeddings", false)?,
            None => bool_or(top, "tie_word_embeddings", false)?,
        };
        // Linear attention is Qwen3.5's: a qwen3_moe config keeps the defaults whatever it says, as
        // it does for shared experts and MTP, so nothing is read that a written config.json drops.
        let q35_usize = |key: &str, default: usize| {
            if q35 {
                usize_or(o, key, default)
            } else {
                Ok(default)
            }
        };
        let cfg = Self {
            arch,
            vocab_size: usize_or(o, "vocab_size", if q35 { 248320 } else { 151936 })?,
            hidden_size,
            num_hidden_layers,
            num_attention_heads,
            num_key_value_heads: usize_or(o, "num_key_value_heads", if q35 { 2 } else { 4 })?,
            head_dim,
            // Every Qwen3.5 layer is sparse: a dense size there is never used, nor written back.
            intermediate_size: if q35 {
                6144
            } else {
                usize_or(o, "intermediate_size", 6144)?
            },
            moe_intermediate_size: usize_or(
                o,
                "moe_intermediate_size",
                if q35 { 512 } else { 768 },
            )?,
            shared_expert_intermediate_size: if q35 {
                usize_or(o, "shared_expert_intermediate_size", 512)?
            } else {
                0
            },
            num_experts,
            num_experts_per_tok: usize_or(o, "num_experts_per_tok", 8)?,
            // Qwen3.5's router always renormalises; Qwen3-MoE's class default is false.
            norm_topk_prob: if q35 {
                true
            } else {
                bool_or(o, "norm_topk_prob", false)?
            },
            decoder_sparse_step: if q35 {
                1
            } else {
                usize_or(o, "decoder_sparse_step", 1)?
            },
            mlp_only_layers: if q35 { vec![] } else { mlp_only_layers },
            rms_norm_eps: f64_or(o, "rms_norm_eps", 1e-6)?,
            rope_theta,
            partial_rotary_factor,
            attention_bias: bool_or(o, "attention_bias", false)?,
            sliding_window,
            tie_word_embeddings,
            router_aux_loss_coef: f64_or(o, "router_aux_loss_coef", 0.001)?,
            max_position_embeddings: usize_or(o, "max_position_embeddings", 32768)?,
            initializer_range: f64_or(o, "initializer_range", 0.02)?,
            layer_types,
            linear_num_key_heads: q35_usize("linear_num_key_heads", 16)?,
            linear_num_value_heads: q35_usize("linear_num_value_heads", 32)?,
            linear_key_head_dim: q35_usize("linear_key_head_dim", 128)?,
            linear_value_head_dim: q35_usize("linear_value_head_dim", 128)?,
            linear_conv_kernel_dim: q35_usize("linear_conv_kernel_dim", 4)?,
            mtp_num_hidden_layers: if q35 {
                usize_or(o, "mtp_num_hidden_layers", 0)?
            } else {
                0
            },
            bos_token_id: get(o, "bos_token_id")
                .or_else(|| get(top, "bos_token_id"))
                .cloned(),
            eos_token_id: get(o, "eos_token_id")
                .or_else(|| get(top, "eos_token_id"))
                .cloned(),
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks the divisibility rules the forward pass relies on.
    pub fn validate(&self) -> Result<()> {
        let c = self;
        if c.hidden_size == 0 || c.vocab_size == 0 || c.head_dim == 0 {
            bail!("hidden_size, vocab_size and head_dim must be > 0");
        }
        if c.num_key_value_heads == 0 || c.num_attention_heads % c.num_key_value_heads != 0 {
            bail!(
                "num_attention_heads ({}) must be a multiple of num_key_value_heads ({})",
                c.num_attention_heads,
                c.num_key_value_heads
            );
        }
        if c.layer_types.len() != c.num_hidden_layers {
            bail!(
                "layer_types has {} entries but num_hidden_layers is {}",
                c.layer_types.len(),
                c.num_hidden_layers
            );
        }
        // Qwen3-MoE rotates the whole head (transformers' qwen3_moe cannot apply a partial rotation
        // either): a factor there would be read, ignored here and dropped from a written config.json.
        if c.arch == Arch::Qwen3Moe && c.partial_rotary_factor != 1.0 {
            bail!(
                "partial_rotary_factor {} is not supported by qwen3_moe (it rotates the whole head)",
                c.partial_rotary_factor
            );
        }
        if c.rotary_dim() % 2 != 0 {
            bail!(
                "rotary dimension {} (head_dim {} x partial_rotary_factor {}) must be even",
                c.rotary_dim(),
                c.head_dim,
                c.partial_rotary_factor
            );
        }
        // `is_moe_layer` divides by it (transformers does too, and fails the same way).
        if c.decoder_sparse_step == 0 {
            bail!("decoder_sparse_step must be > 0 (layer i is sparse when (i + 1) % step == 0)");
        }
        let any_moe = (0..c.num_hidden_layers).any(|i| c.is_moe_layer(i));
        if any_moe && (c.num_experts_per_tok == 0 || c.num_experts_per_tok > c.num_experts) {
            bail!(
                "num_experts_per_tok ({}) must be in 1..=num_experts ({})",
                c.num_experts_per_tok,
                c.num_experts
            );
        }
        if c.layer_types.contains(&LayerType::LinearAttention) {
            if c.linear_num_key_heads == 0 || c.linear_num_value_heads % c.linear_num_key_heads != 0
            {
                bail!(
                    "linear_num_value_heads ({}) must be a multiple of linear_num_key_heads ({})",
                    c.linear_num_value_heads,
                    c.linear_num_key_heads
                );
            }
            if c.linear_conv_kernel_dim == 0 {
                bail!("linear_conv_kernel_dim must be > 0");
            }
        }
        if c.decoder_sparse_step == 0 {
            bail!("decoder_sparse_step must be > 0");
        }
        Ok(())
    }

    /// Number of rotated dims per head (`int(head_dim * partial_rotary_factor)` for Qwen3.5).
    pub fn rotary_dim(&self) -> usize {
        match self.arch {
            Arch::Qwen3Moe => self.head_dim,
            Arch::Qwen3_5Moe => (self.head_dim as f64 * self.partial_rotary_factor) as usize,
        }
    }

    /// HF rule: layer i is sparse iff not in `mlp_only_layers`, experts exist and `(i+1) % step == 0`.
    pub fn is_moe_layer(&self, i: usize) -> bool {
        match self.arch {
            Arch::Qwen3_5Moe => true,
            Arch::Qwen3Moe => {
                !self.mlp_only_layers.contains(&i)
                    && self.num_experts > 0
                    && (i + 1) % self.decoder_sparse_step == 0
            }
        }
    }

    /// The config.json transformers reads back (`Qwen3MoeForCausalLM` / `Qwen3_5MoeForCausalLM`).
    pub fn to_hf_json(&self) -> Value {
        let c = self;
        let mut o = json!({
            "vocab_size": c.vocab_size,
            "hidden_size": c.hidden_size,
            "num_hidden_layers": c.num_hidden_layers,
            "num_attention_heads": c.num_attention_heads,
            "num_key_value_heads": c.num_key_value_heads,
            "head_dim": c.head_dim,
            "hidden_act": "silu",
            "moe_intermediate_size": c.moe_intermediate_size,
            "num_experts": c.num_experts,
            "num_experts_per_tok": c.num_experts_per_tok,
            "rms_norm_eps": c.rms_norm_eps,
            "attention_bias": c.attention_bias,
            "tie_word_embeddings": c.tie_word_embeddings,
            "router_aux_loss_coef": c.router_aux_loss_coef,
            "max_position_embeddings": c.max_position_embeddings,
            "initializer_range": c.initializer_range,
            "bos_token_id": c.bos_token_id,
            "eos_token_id": c.eos_token_id,
            "dtype": "float32",
        });
        let m = o.as_object_mut().expect("json! object");
        match c.arch {
            Arch::Qwen3Moe => {
                m.insert("model_type".into(), json!("qwen3_moe"));
                m.insert("architectures".into(), json!(["Qwen3MoeForCausalLM"]));
                m.insert("intermediate_size".into(), json!(c.intermediate_size));
                m.insert("norm_topk_prob".into(), json!(c.norm_topk_prob));
                m.insert("decoder_sparse_step".into(), json!(c.decoder_sparse_step));
                m.insert("mlp_only_layers".into(), json!(c.mlp_only_layers));
                m.insert(
                    "use_sliding_window".into(),
                    json!(c.sliding_window.is_some()),
                );
                m.insert("sliding_window".into(), json!(c.sliding_window));
                m.insert(
                    "rope_parameters".into(),
                    json!({"rope_type": "default", "rope_theta": c.rope_theta}),
                );
            }
            Arch::Qwen3_5Moe => {
                m.insert("model_type".into(), json!("qwen3_5_moe_text"));
                m.insert("architectures".into(), json!(["Qwen3_5MoeForCausalLM"]));
                m.insert(
                    "shared_expert_intermediate_size".into(),
                    json!(c.shared_expert_intermediate_size),
                );
                let lt: Vec<&str> = c
                    .layer_types
                    .iter()
                    .map(|t| match t {
                        LayerType::LinearAttention => "linear_attention",
                        LayerType::FullAttention => "full_attention",
                    })
                    .collect();
                m.insert("layer_types".into(), json!(lt));
                for (k, v) in [
                    ("linear_num_key_heads", c.linear_num_key_heads),
                    ("linear_num_value_heads", c.linear_num_value_heads),
                    ("linear_key_head_dim", c.linear_key_head_dim),
                    ("linear_value_head_dim", c.linear_value_head_dim),
                    ("linear_conv_kernel_dim", c.linear_conv_kernel_dim),
                    ("mtp_num_hidden_layers", c.mtp_num_hidden_layers),
                ] {
                    m.insert(k.into(), json!(v));
                }
                m.insert(
                    "rope_parameters".into(),
                    json!({"rope_type": "default", "rope_theta": c.rope_theta, "partial_rotary_factor": c.partial_rotary_factor}),
                );
            }
        }
        o
    }
}
