//! One decoder layer: `h = x + mixer(norm(x)); out = h + ffn(norm(h))`, where the mixer is full
//! attention or Gated DeltaNet and the FFN dense or sparse.

use super::attention::Attention;
use super::gated_deltanet::GatedDeltaNet;
use super::moe::Ffn;
use super::norm::RmsNorm;
use super::rope::RopeTables;
use crate::model::generation::cache::LayerCache;
use crate::model::io::weights::HfVisitor;
use burn::prelude::*;

#[derive(Module, Debug)]
pub enum Mixer<B: Backend> {
    /// HF `self_attn`.
    Attention(Attention<B>),
    /// HF `linear_attn`.
    DeltaNet(GatedDeltaNet<B>),
}

#[derive(Module, Debug)]
pub struct DecoderLayer<B: Backend> {
    pub input_layernorm: RmsNorm<B>,
    pub mixer: Mixer<B>,
    pub post_attention_layernorm: RmsNorm<B>,
    pub mlp: Ffn<B>,
}

impl<B: Backend> DecoderLayer<B> {
    /// Returns the new hidden states and the router logits of a sparse FFN. `lens`: real tokens
    /// per row of a right-padded batch (see [`GatedDeltaNet::forward`]; causal attention needs
    /// nothing, its cache drops the padding on [`crate::model::generation::cache::Cache::unstack`]).
    pub fn forward(
        &self,
        x: Tensor<B, 3>,
        rope: &RopeTables<B>,
        cache: Option<&mut LayerCache<B>>,
        lens: Option<&[usize]>,
    ) -> (Tensor<B, 3>, Option<Tensor<B, 2>>) {
        self.feed_forward(self.mix(x, rope, cache, lens))
    }

    /// The mixer half with its residual, `x + mixer(norm(x))`: the only part that looks at other
    /// tokens (and at `cache`).
    pub fn mix(
        &self,
        x: Tensor<B, 3>,
        rope: &RopeTables<B>,
        cache: Option<&mut LayerCache<B>>,
        lens: Option<&[usize]>,
    ) -> Tensor<B, 3> {
        let h = self.input_layernorm.forward(x.clone());
        let h = match &self.mixer {
            Mixer::Attention(a) => a.forward(h, rope, cache.map(|c| &mut c.kv)),
            Mixer::DeltaNet(d) => d.forward(h, cache.map(|c| &mut c.deltanet), lens),
        };
        x + h
    }

    /// The feed-forward half with its residual, `x + ffn(norm(x))`, token by token, and the router
    /// logits of a sparse FFN.
    pub fn feed_forward(&self, x: Tensor<B, 3>) -> (Tensor<B, 3>, Option<Tensor<B, 2>>) {
        let (f, router_logits) = self
            .mlp
            .forward(self.post_attention_layernorm.forward(x.clone()));
        (x + f, router_logits)
    }

    /// [`Self::feed_forward`] of several groups of rows (`[B_g, T_g, H]` each) as one batch of
    /// tokens, so that the FFN's weights are read once for all of them; each group's output in
    /// its own shape, and the router logits of all tokens in group order.
    pub fn feed_forward_together(
        &self,
        xs: Vec<Tensor<B, 3>>,
    ) -> (Vec<Tensor<B, 3>>, Option<Tensor<B, 2>>) {
        if xs.len() == 1 {
            let (y, r) = self.feed_forward(xs.into_iter().next().expect("one group"));
            return (vec![y], r);
        }
        let shapes: Vec<[usize; 3]> = xs.iter().map(|x| x.dims()).collect();
        let flat = xs
            .into_iter()
            .zip(&shapes)
            .map(|(x, &[b, t, h])| x.reshape([1, b * t, h]))
            .collect();
        let (y, router_logits) = self.feed_forward(Tensor::cat(flat, 1));
        let mut start = 0;
        let ys = shapes
            .iter()
            .map(|&[b, t, h]| {
                let part = y.clone().narrow(1, start, b * t).reshape([b, t, h]);
                start += b * t;
                part
            })
            .collect();
        (ys, router_logits)
    }

    pub fn visit<V: HfVisitor<B>>(&self, prefix: &str, v: &mut V) {
        self.input_layernorm
            .visit(&format!("{prefix}.input_layernorm"), v);
        match &self.mixer {
            Mixer::Attention(a) => a.visit(&format!("{prefix}.self_attn"), v),
            Mixer::DeltaNet(d) => d.visit(&format!("{prefix}.linear_attn"), v),
        }
        self.post_attention_layernorm
            .visit(&format!("{prefix}.post_attention_layernorm"), v);
        self.mlp.visit(&format!("{prefix}.mlp"), v);
    }
}
