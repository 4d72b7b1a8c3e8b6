//! The model core: `qwen3_moe` (Qwen3-30B-A3B family) and the text stack of `qwen3_5_moe`
//! (Qwen3.5/3.6-35B-A3B), numerically matching Hugging Face transformers, generic over the burn
//! backend (CPU `NdArray` by default, CUDA behind the `cuda` feature).
//!
//! Both architectures share one [`CausalLm`] type: the differences (mixer kind, norm
//! convention, shared expert, MTP) live in the layers that `qwen3_moe` / `qwen3_5_moe` build.
//!
//! ```text
//! mod.rs, config.rs, presets.rs   the model type, its config.json, named shapes
//! qwen3_moe.rs, qwen3_5_moe.rs    how each architecture assembles its decoder layers
//! layers/                         the math: attention, Gated DeltaNet, MoE, norms, RoPE, MTP, decoder layer
//! cpu/                            native inference kernels for the CPU backend and their thread team
//! train_ops/                      CPU autodiff operations with hand-written backward passes (training)
//! generation/                     cache, batched prefill/decode, sampling, speculative decoding
//! host.rs                         host values as tensors of the backend's element types (CUDA, bf16)
//! io/                             weight sources, Hugging Face checkpoint directories, inspection
//! cli.rs                          `hat model …`
//! ```

pub mod cli;
pub mod config;
pub mod cpu;
pub mod generation;
pub mod host;
pub mod io;
pub mod layers;
pub mod presets;
pub mod qwen3_5_moe;
pub mod qwen3_moe;
pub mod train_ops;

use anyhow::{bail, Result};
use burn::constant;
use burn::nn::Embedding;
use burn::prelude::*;
use burn::tensor::activation::log_softmax;
use cpu::backend::matmul_weight;
use layers::linear::Linear;
use std::path::Path;

use burn::module::Param;
pub use config::{Arch, LayerType, ModelConfig};
use cpu::reduced::ReducedMatrix;
pub use generation::cache::Cache;
use io::weights::{
    self, param, visit_linear, HfLayout, HfVisitor, Init, RandomInit, StoredAs, WeightSource,
};
use layers::decoder::DecoderLayer;
use layers::mtp::Mtp;
use layers::norm::RmsNorm;
use layers::rope::RopeTables;
pub use layers::weight::WeightDtype;

impl std::fmt::Display for ModelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.to_hf_json())
    }
}
// The config travels inside the module as a constant (no parameters, not saved in records).
constant!(ModelConfig);

#[derive(Module, Debug)]
pub struct CausalLm<B: Backend> {
    pub embed_tokens: Embedding<B>,
    pub layers: Vec<DecoderLayer<B>>,
    pub norm: RmsNorm<B>,
    /// `None` when `tie_word_embeddings`: logits use the embedding matrix.
    pub lm_head: Option<Linear<B>>,
    pub mtp: Option<Mtp<B>>,
    pub config: ModelConfig,
}

/// Output of a forward pass.
#[derive(Debug, Clone)]
pub struct LmOutput<B: Backend> {
    /// `[B, T, V]`.
    pub logits: Tensor<B, 3>,
    /// Final hidden states after `model.norm`, `[B, T, H]` (the MTP head's input).
    pub hidden: Tensor<B, 3>,
    /// Raw router logits of each sparse layer, `[B*T, E]`.
    pub router_logits: Vec<Tensor<B, 2>>,
}

/// Rows that continue one cache in a forward of several groups
/// ([`CausalLm::hidden_states_of_groups`]).
pub struct Group<'a, B: Backend> {
    /// `[B, T]` token ids.
    pub ids: Tensor<B, 2, Int>,
    /// Continued and updated; `None`: the rows start at position 0 with no cache.
    pub cache: Option<&'a mut Cache<B>>,
    /// Real tokens per row of a right-padded group (`None`: all of them).
    pub lens: Option<&'a [usize]>,
}

impl<B: Backend> CausalLm<B> {
    /// Builds the model, taking every tensor from `src`.
    pub fn from_source(
        cfg: &ModelConfig,
        src: &mut dyn WeightSource,
        device: &B::Device,
    ) -> Result<Self> {
        cfg.validate()?;
        let (v, h) = (cfg.vocab_size, cfg.hidden_size);
        let zero_centered = cfg.arch == Arch::Qwen3_5Moe;
        let embed = param(
            src,
            "model.embed_tokens.weight",
            [v, h],
            Init::Normal(cfg.initializer_range),
            device,
        )?;
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| match cfg.arch {
                Arch::Qwen3Moe => qwen3_moe::decoder_layer(cfg, src, i, device),
                Arch::Qwen3_5Moe => qwen3_5_moe::decoder_layer(cfg, src, i, device),
            })
            .collect::<Result<Vec<_>>>()?;
        let norm = RmsNorm::load(
            src,
            "model.norm",
            h,
            cfg.rms_norm_eps,
            zero_centered,
            device,
        )?;
        let lm_head = if cfg.tie_word_embeddings {
            None
        } else {
            Some(weights::linear(
                src,
                "lm_head",
                h,
                v,
                false,
                cfg.initializer_range,
                device,
            )?)
        };
        // Checkpoints saved by transformers drop `mtp.*`; the head is optional.
        let mtp = if cfg.arch == Arch::Qwen3_5Moe
            && cfg.mtp_num_hidden_layers > 0
            && src.contains("mtp.fc.weight")
        {
            Some(qwen3_5_moe::mtp(cfg, src, device)?)
        } else {
            None
        };
        Ok(Self {
            embed_tokens: Embedding { weight: embed },
            layers,
            norm,
            lm_head,
            mtp,
            config: cfg.clone(),
        })
    }

    /// A freshly initialised model (HF init rules), deterministic in `seed`.
    pub fn init(cfg: &ModelConfig, seed: u64, device: &B::Device) -> Result<Self> {
        Self::init_as(cfg, seed, WeightDtype::F32, device)
    }

    /// [`Self::init`] with the projections stored as `dtype` (bf16/int8: CPU inference only); the
    /// f32 values are drawn first, so every dtype rounds the same model.
    pub fn init_as(
        cfg: &ModelConfig,
        seed: u64,
        dtype: WeightDtype,
        device: &B::Device,
    ) -> Result<Self> {
        let mut src = StoredAs {
            src: &mut RandomInit::new(seed),
            dtype,
        };
        Self::from_source(cfg, &mut src, device)
    }

    /// Loads a Hugging Face checkpoint directory.
    pub fn load(dir: &Path, device: &B::Device) -> Result<Self> {
        Self::load_as(dir, WeightDtype::F32, device)
    }

    /// [`Self::load`] with the projections stored as `dtype` (bf16/int8: CPU inference only).
    pub fn load_as(dir: &Path, dtype: WeightDtype, device: &B::Device) -> Result<Self> {
        io::checkpoint::load(dir, dtype, device)
    }

    /// Bytes the weights take as stored: 4 per f32 value, and a bf16 or int8 matrix's own size.
    pub fn weight_bytes(&self) -> usize {
        struct Bytes(usize);
        impl<B: Backend> HfVisitor<B> for Bytes {
            fn visit<const D: usize>(&mut self, _: &str, p: &Param<Tensor<B, D>>, _: HfLayout) {
                self.0 += p.shape().num_elements() * 4;
            }

            fn visit_reduced(&mut self, _: &str, w: &ReducedMatrix, _: HfLayout) {
                self.0 += w.bytes();
            }
        }
        let mut bytes = Bytes(0);
        self.visit_hf(&mut bytes);
        bytes.0
    }

    pub fn new_cache(&self) -> Cache<B> {
        Cache::new(self.layers.len())
    }

    /// Logits at every position of `ids: [B, T]`.
    pub fn forward(&self, ids: Tensor<B, 2, Int>) -> LmOutput<B> {
        self.run(ids, None)
    }

    /// Continues from `cache` (which is updated): positions start at `cache.seq_len`.
    pub fn forward_cached(&self, ids: Tensor<B, 2, Int>, cache: &mut Cache<B>) -> LmOutput<B> {
        self.run(ids, Some(cache))
    }

    fn rope(&self, starts: &[usize], len: usize, device: &B::Device) -> RopeTables<B> {
        RopeTables::for_rows(
            self.config.rope_theta,
            self.config.rotary_dim(),
            starts,
            len,
            device,
        )
    }

    fn run(&self, ids: Tensor<B, 2, Int>, cache: Option<&mut Cache<B>>) -> LmOutput<B> {
        let (hidden, router_logits) = self.hidden_states(ids, cache);
        LmOutput {
            logits: self.lm_logits(hidden.clone()),
            hidden,
            router_logits,
        }
    }

    /// The final-norm hidden states `[B, T, H]` and the router logits, without the LM head (a
    /// prefill needs logits at the last position only).
    pub fn hidden_states(
        &self,
        ids: Tensor<B, 2, Int>,
        cache: Option<&mut Cache<B>>,
    ) -> (Tensor<B, 3>, Vec<Tensor<B, 2>>) {
        self.hidden_states_padded(ids, cache, None)
    }

    /// [`Self::hidden_states`] of a right-padded batch: row r of `ids` holds `lens[r]` real tokens
    /// (`None`: all of them). The padding leaves the cache's recurrent states alone, and each row's
    /// length (`row_lens`) advances by its real tokens only.
    fn hidden_states_padded(
        &self,
        ids: Tensor<B, 2, Int>,
        cache: Option<&mut Cache<B>>,
        lens: Option<&[usize]>,
    ) -> (Tensor<B, 3>, Vec<Tensor<B, 2>>) {
        let (mut hidden, router_logits) =
            self.hidden_states_of_groups(vec![Group { ids, cache, lens }]);
        (hidden.pop().expect("one group"), router_logits)
    }

    /// One forward over several groups of rows, each continuing its own cache (a running batch's
    /// next tokens and a piece of a waiting prompt): each group's mixer (attention or DeltaNet) runs
    /// on its own tokens, and each feed-forward layer runs once over the tokens of all groups, so
    /// that its weights — most of a MoE's — are read once. Returns each group's final-norm hidden
    /// states and the router logits of all tokens.
    pub fn hidden_states_of_groups(
        &self,
        mut groups: Vec<Group<'_, B>>,
    ) -> (Vec<Tensor<B, 3>>, Vec<Tensor<B, 2>>) {
        let lengths: Vec<usize> = groups.iter().map(|g| g.ids.dims()[1]).collect();
        let ropes: Vec<RopeTables<B>> = groups
            .iter()
            .zip(&lengths)
            .map(|(g, &t)| {
                let starts = g.cache.as_ref().map_or(vec![0], |c| c.positions());
                let gaps = g.cache.as_ref().and_then(|c| c.gaps.clone());
                self.rope(&starts, t, &g.ids.device()).with_gaps(gaps)
            })
            .collect();
        let mut xs: Vec<Tensor<B, 3>> = groups
            .iter()
            .map(|g| self.embed_tokens.forward(g.ids.clone()))
            .collect();
        let mut router_logits = Vec::new();
        for (i, layer) in self.layers.iter().enumerate() {
            let mixed = xs
                .into_iter()
                .zip(groups.iter_mut())
                .zip(&ropes)
                .map(|((x, g), rope)| {
                    layer.mix(x, rope, g.cache.as_mut().map(|c| &mut c.layers[i]), g.lens)
                })
                .collect();
            let (ys, r) = layer.feed_forward_together(mixed);
            xs = ys;
            router_logits.extend(r);
        }
        for (g, t) in groups.into_iter().zip(lengths) {
            if let Some(c) = g.cache {
                c.seq_len += t;
                if let Some(rows) = &mut c.row_lens {
                    for (r, l) in rows.iter_mut().enumerate() {
                        *l += g.lens.map_or(t, |lens| lens[r]);
                    }
                }
            }
        }
        let hidden = xs.into_iter().map(|x| self.norm.forward(x)).collect();
        (hidden, router_logits)
    }

    /// `lm_head` (or the tied embedding) applied to `[B, T, H]`.
    pub fn lm_logits(&self, hidden: Tensor<B, 3>) -> Tensor<B, 3> {
        match &self.lm_head {
            Some(l) => l.forward(hidden),
            None => {
                let [b, t, h] = hidden.dims();
                let w = self.embed_tokens.weight.val(); // [V, H]
                let v = w.dims()[0];
                matmul_weight(hidden.reshape([b * t, h]), w.transpose()).reshape([b, t, v])
            }
        }
    }

    /// transformers' load-balancing loss over the router logits of one forward pass
    /// ([`LmOutput::router_logits`]; unscaled, multiply by `config.router_aux_loss_coef`). `None`
    /// without sparse layers.
    pub fn aux_loss(&self, router_logits: &[Tensor<B, 2>]) -> Option<Tensor<B, 1>> {
        layers::moe::load_balancing_loss(
            router_logits,
            self.config.num_experts,
            self.config.num_experts_per_tok,
        )
    }

    /// MTP logits for slots `i = 0..T-2`: slot i combines `hidden[i]` with `ids[i+1]` and predicts
    /// `ids[i+2]`. `hidden` is [`LmOutput::hidden`] of the same `ids`. Returns `[B, T-1, V]`.
    pub fn mtp_logits(&self, hidden: Tensor<B, 3>, ids: Tensor<B, 2, Int>) -> Result<Tensor<B, 3>> {
        let t = hidden.dims()[1];
        if t < 2 {
            bail!("MTP needs at least 2 tokens, got {t}");
        }
        let states = self.mtp_states(hidden.narrow(1, 0, t - 1), ids.narrow(1, 1, t - 1), None)?;
        Ok(self.lm_logits(states))
    }

    /// The MTP head's normed output over slots that pair `hidden: [B, S, H]` (main-model states, or
    /// the head's own output when drafting) with the `next` tokens `[B, S]`. With `cache` (the head's
    /// own, one layer) the slots continue after the ones it holds and it is extended.
    pub fn mtp_states(
        &self,
        hidden: Tensor<B, 3>,
        next: Tensor<B, 2, Int>,
        cache: Option<&mut Cache<B>>,
    ) -> Result<Tensor<B, 3>> {
        let Some(mtp) = &self.mtp else {
            bail!("this model has no MTP head (mtp.* weights)")
        };
        let t = next.dims()[1];
        let starts = cache.as_ref().map_or(vec![0], |c| c.positions());
        let rope = self.rope(&starts, t, &hidden.device());
        let embeds = self.embed_tokens.forward(next);
        // All Qwen3.5 checkpoints have one MTP layer; every slot and draft step uses layer 0.
        let layer = cache.map(|c| {
            c.seq_len += t;
            &mut c.layers[0]
        });
        Ok(mtp.forward(embeds, hidden, &rope, 0, layer).0)
    }

    /// Greedy decoding with the cache: prefill `prompt`, then up to `max_new` tokens, stopping
    /// after any token in `stop`.
    pub fn generate_greedy(
        &self,
        prompt: &[u32],
        max_new: usize,
        stop: &[u32],
        device: &B::Device,
    ) -> Result<Vec<u32>> {
        if prompt.is_empty() {
            bail!("empty prompt");
        }
        let mut cache = self.new_cache();
        let mut out = Vec::with_capacity(max_new);
        let mut input: Vec<u32> = prompt.to_vec();
        for _ in 0..max_new {
            let ids = ids_tensor::<B>(&[input.clone()], device)?;
            let logits = self.forward_cached(ids, &mut cache).logits;
            let [_, t, v] = logits.dims();
            let last = logits.narrow(1, t - 1, 1).reshape([v]);
            let next = last
                .argmax(0)
                .into_data()
                .convert::<i64>()
                .into_vec::<i64>()
                .map_err(|e| anyhow::anyhow!("{e:?}"))?[0] as u32;
            out.push(next);
            if stop.contains(&next) {
                break;
            }
            input = vec![next];
        }
        Ok(out)
    }

    /// Visits every parameter under its Hugging Face name.
    pub fn visit_hf<V: HfVisitor<B>>(&self, v: &mut V) {
        v.visit(
            "model.embed_tokens.weight",
            &self.embed_tokens.weight,
            HfLayout::AsIs,
        );
        for (i, l) in self.layers.iter().enumerate() {
            l.visit(&format!("model.layers.{i}"), v);
        }
        self.norm.visit("model.norm", v);
        if let Some(l) = &self.lm_head {
            visit_linear(v, "lm_head", l);
        }
        if let Some(m) = &self.mtp {
            m.visit("mtp", v);
        }
    }
}

/// Token ids as a `[B, T]` tensor; all rows must have the same length.
pub fn ids_tensor<B: Backend>(rows: &[Vec<u32>], device: &B::Device) -> Result<Tensor<B, 2, Int>> {
    let t = rows.first().map_or(0, Vec::len);
    if t == 0 || rows.iter().any(|r| r.len() != t) {
        bail!("token id rows must be non-empty and of equal length");
    }
    let data: Vec<i64> = rows.iter().flatten().map(|&x| x as i64).collect();
    Ok(host::ints(data, [rows.len(), t], device))
}

/// Mean next-token cross-entropy (transformers' `ForCausalLMLoss` without ignored labels):
/// position t predicts `ids[t+1]`. Returns `[1]`.
pub fn causal_lm_loss<B: Backend>(logits: Tensor<B, 3>, ids: Tensor<B, 2, Int>) -> Tensor<B, 1> {
    let [b, t, v] = logits.dims();
    shifted_cross_entropy(
        logits.narrow(1, 0, t - 1),
        ids.narrow(1, 1, t - 1),
        b,
        t - 1,
        v,
    )
}

/// Mean cross-entropy of `logits: [B, N, V]` against `targets: [B, N]`.
pub fn shifted_cross_entropy<B: Backend>(
    logits: Tensor<B, 3>,
    targets: Tensor<B, 2, Int>,
    b: usize,
    n: usize,
    v: usize,
) -> Tensor<B, 1> {
    let lp = log_softmax(logits.reshape([b * n, v]), 1);
    let picked = lp.gather(1, targets.reshape([b * n, 1]));
    picked.mean().neg()
}
