//! Qwen3.5 multi-token-prediction head with vLLM semantics (HF does not implement it): for
//! position i, combine the main model's final (post-`model.norm`) hidden state `h_i` with the
//! embedding of the next token `x_{i+1}` and predict `x_{i+2}`:
//! `u = fc([norm_e(embed(x_{i+1})) ; norm_h(h_i)])`, one full-attention + MoE decoder layer at
//! position i, then `mtp.norm` and the shared `lm_head`.

use super::decoder::DecoderLayer;
use super::linear::Linear;
use super::norm::RmsNorm;
use super::rope::RopeTables;
use crate::model::generation::cache::LayerCache;
use crate::model::io::weights::{visit_linear, HfVisitor};
use burn::prelude::*;

#[derive(Module, Debug)]
pub struct Mtp<B: Backend> {
    pub pre_fc_norm_embedding: RmsNorm<B>,
    pub pre_fc_norm_hidden: RmsNorm<B>,
    /// `[2H -> H]`, embedding half first.
    pub fc: Linear<B>,
    pub layers: Vec<DecoderLayer<B>>,
    pub norm: RmsNorm<B>,
}

impl<B: Backend> Mtp<B> {
    /// `embeds`, `hidden`: `[B, T, H]` aligned so that slot i holds `embed(x_{i+1})` and `h_i`.
    /// `step` selects the layer (`step % layers`) for multi-step drafting; `cache` is that
    /// layer's own KV cache when drafting. Returns the normed MTP hidden states and the MTP
    /// layer's router logits.
    pub fn forward(
        &self,
        embeds: Tensor<B, 3>,
        hidden: Tensor<B, 3>,
        rope: &RopeTables<B>,
        step: usize,
        cache: Option<&mut LayerCache<B>>,
    ) -> (Tensor<B, 3>, Option<Tensor<B, 2>>) {
        let e = self.pre_fc_norm_embedding.forward(embeds);
        let h = self.pre_fc_norm_hidden.forward(hidden);
        let u = self.fc.forward(Tensor::cat(vec![e, h], 2));
        let (u, router_logits) =
            self.layers[step % self.layers.len()].forward(u, rope, cache, None);
        (self.norm.forward(u), router_logits)
    }

    pub fn visit<V: HfVisitor<B>>(&self, prefix: &str, v: &mut V) {
        self.pre_fc_norm_embedding
            .visit(&format!("{prefix}.pre_fc_norm_embedding"), v);
        self.pre_fc_norm_hidden
            .visit(&format!("{prefix}.pre_fc_norm_hidden"), v);
        visit_linear(v, &format!("{prefix}.fc"), &self.fc);
        for (i, l) in self.layers.iter().enumerate() {
            l.visit(&format!("{prefix}.layers.{i}"), v);
        }
        self.norm.visit(&format!("{prefix}.norm"), v);
    }
}
