//! Decoding state: a KV cache for attention layers and the conv + recurrent state for Gated
//! DeltaNet layers. One [`LayerCache`] per decoder layer; `seq_len` counts tokens already seen.

use burn::prelude::*;

/// Keys/values after RoPE, `[B, kv_heads, T_past, head_dim]`.
#[derive(Clone, Debug, Default)]
pub struct KvCache<B: Backend> {
    pub k: Option<Tensor<B, 4>>,
    pub v: Option<Tensor<B, 4>>,
}

impl<B: Backend> KvCache<B> {
    /// Appends new keys/values along time and returns the full sequences.
    pub fn append(&mut self, k: Tensor<B, 4>, v: Tensor<B, 4>) -> (Tensor<B, 4>, Tensor<B, 4>) {
        let k = match self.k.take() {
            Some(old) => Tensor::cat(vec![old, k], 2),
            None => k,
        };
        let v = match self.v.take() {
            Some(old) => Tensor::cat(vec![old, v], 2),
            None => v,
        };
        self.k = Some(k.clone());
        self.v = Some(v.clone());
        (k, v)
    }
}

/// Gated DeltaNet state.
#[derive(Clone, Debug, Default)]
pub struct DeltaNetState<B: Backend> {
    /// The last `K-1` pre-conv inputs, `[B, K-1, conv_dim]` (time-major).
    pub conv: Option<Tensor<B, 3>>,
    /// `S`, `[B, Hv, dk, dv]`, f32.
    pub recurrent: Option<Tensor<B, 4>>,
}

#[derive(Clone, Debug, Default)]
pub struct LayerCache<B: Backend> {
    pub kv: KvCache<B>,
    pub deltanet: DeltaNetState<B>,
}

#[derive(Clone, Debug)]
pub struct Cache<B: Backend> {
    pub layers: Vec<LayerCache<B>>,
    pub seq_len: usize,
}

impl<B: Backend> Cache<B> {
    pub fn new(num_layers: usize) -> Self {
        Self {
            layers: (0..num_layers).map(|_| LayerCache::default()).collect(),
            seq_len: 0,
        }
    }
}
