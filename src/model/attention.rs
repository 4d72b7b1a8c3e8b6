//! Causal self-attention with per-head q/k RMSNorm before RoPE and grouped KV heads.
//! Qwen3-MoE: plain attention. Qwen3.5: `q_proj` emits `[q_h | gate_h]` per head and the output
//! is multiplied by `sigmoid(gate)` before `o_proj`; RoPE may be partial.

use super::cache::KvCache;
use super::linear::Linear;
use super::norm::RmsNorm;
use super::rope::RopeTables;
use super::weights::{linear, visit_linear, HfVisitor, WeightSource};
use anyhow::Result;
use burn::prelude::*;
use burn::tensor::activation::{sigmoid, softmax};
use burn::tensor::TensorData;

#[derive(Module, Debug)]
pub struct Attention<B: Backend> {
    pub q_proj: Linear<B>,
    pub k_proj: Linear<B>,
    pub v_proj: Linear<B>,
    pub o_proj: Linear<B>,
    pub q_norm: RmsNorm<B>,
    pub k_norm: RmsNorm<B>,
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    /// Qwen3.5 output gate.
    pub gated: bool,
    /// Keys further back than this are masked (Qwen3-MoE `use_sliding_window`); 0 = unlimited.
    pub sliding_window: usize,
}

pub struct AttentionDims {
    pub hidden: usize,
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    pub bias: bool,
    pub gated: bool,
    pub zero_centered_norm: bool,
    pub eps: f64,
    pub sliding_window: usize,
    pub init_std: f64,
}

impl<B: Backend> Attention<B> {
    pub fn load(
        src: &mut dyn WeightSource,
        prefix: &str,
        d: &AttentionDims,
        device: &B::Device,
    ) -> Result<Self> {
        let q_out = d.num_heads * d.head_dim * if d.gated { 2 } else { 1 };
        let kv_out = d.num_kv_heads * d.head_dim;
        Ok(Self {
            q_proj: linear(
                src,
                &format!("{prefix}.q_proj"),
                d.hidden,
                q_out,
                d.bias,
                d.init_std,
                device,
            )?,
            k_proj: linear(
                src,
                &format!("{prefix}.k_proj"),
                d.hidden,
                kv_out,
                d.bias,
                d.init_std,
                device,
            )?,
            v_proj: linear(
                src,
                &format!("{prefix}.v_proj"),
                d.hidden,
                kv_out,
                d.bias,
                d.init_std,
                device,
            )?,
            o_proj: linear(
                src,
                &format!("{prefix}.o_proj"),
                d.num_heads * d.head_dim,
                d.hidden,
                d.bias,
                d.init_std,
                device,
            )?,
            q_norm: RmsNorm::load(
                src,
                &format!("{prefix}.q_norm"),
                d.head_dim,
                d.eps,
                d.zero_centered_norm,
                device,
            )?,
            k_norm: RmsNorm::load(
                src,
                &format!("{prefix}.k_norm"),
                d.head_dim,
                d.eps,
                d.zero_centered_norm,
                device,
            )?,
            num_heads: d.num_heads,
            num_kv_heads: d.num_kv_heads,
            head_dim: d.head_dim,
            gated: d.gated,
            sliding_window: d.sliding_window,
        })
    }

    /// `x: [B, T, H]` at positions `past..past+T` (the tables must cover them).
    pub fn forward(
        &self,
        x: Tensor<B, 3>,
        rope: &RopeTables<B>,
        cache: Option<&mut KvCache<B>>,
    ) -> Tensor<B, 3> {
        let [b, t, _] = x.dims();
        let (nh, nkv, hd) = (self.num_heads, self.num_kv_heads, self.head_dim);
        let q_full = self.q_proj.forward(x.clone());
        let (q, gate) = if self.gated {
            // Per-head interleave: [q_h | gate_h] for each head h.
            let p = q_full.reshape([b, t, nh, 2 * hd]);
            (
                p.clone().narrow(3, 0, hd),
                Some(p.narrow(3, hd, hd).reshape([b, t, nh * hd])),
            )
        } else {
            (q_full.reshape([b, t, nh, hd]), None)
        };
        let q = rope.apply(self.q_norm.forward(q)).swap_dims(1, 2); // [B, nh, T, hd]
        let k = rope
            .apply(
                self.k_norm
                    .forward(self.k_proj.forward(x.clone()).reshape([b, t, nkv, hd])),
            )
            .swap_dims(1, 2);
        let v = self
            .v_proj
            .forward(x)
            .reshape([b, t, nkv, hd])
            .swap_dims(1, 2);
        let (k, v) = match cache {
            Some(c) => c.append(k, v),
            None => (k, v),
        };
        let tk = k.dims()[2];
        let device = k.device();
        let rep = nh / nkv;
        // Query heads h = kv*rep + r share kv head `kv`: fold the rep axis into time instead of
        // materialising repeated keys.
        let qg = q.reshape([b, nkv, rep * t, hd]);
        let scores = qg
            .matmul(k.swap_dims(2, 3))
            .mul_scalar((hd as f64).powf(-0.5));
        let scores = scores.reshape([b, nh, t, tk]) + self.mask(t, tk, &rope.starts, &device);
        let probs = softmax(scores, 3).reshape([b, nkv, rep * t, tk]);
        let o = probs
            .matmul(v)
            .reshape([b, nh, t, hd])
            .swap_dims(1, 2)
            .reshape([b, t, nh * hd]);
        let o = match gate {
            Some(g) => o * sigmoid(g),
            None => o,
        };
        self.o_proj.forward(o)
    }

    /// Additive causal (and sliding-window) mask `[R, 1, T, Tk]`, one row per entry of `starts`.
    /// The keys are `Tk - T` cached slots followed by the `T` new ones. Row r has `starts[r]`
    /// valid cached keys; slots beyond that are right-padding (rows of different lengths
    /// stacked by [`super::cache::Cache::stack`]) and stay hidden.
    fn mask(&self, t: usize, tk: usize, starts: &[usize], device: &B::Device) -> Tensor<B, 4> {
        let cached = tk - t;
        let mut m = vec![0f32; starts.len() * t * tk];
        for (r, &start) in starts.iter().enumerate() {
            for i in 0..t {
                let qpos = start + i;
                for j in 0..tk {
                    let kpos = if j < cached { j } else { start + j - cached };
                    let visible = (j >= cached || j < start)
                        && kpos <= qpos
                        && (self.sliding_window == 0 || qpos - kpos < self.sliding_window);
                    if !visible {
                        m[(r * t + i) * tk + j] = f32::NEG_INFINITY;
                    }
                }
            }
        }
        Tensor::from_data(TensorData::new(m, [starts.len(), 1, t, tk]), device)
    }

    pub fn visit<V: HfVisitor<B>>(&self, prefix: &str, v: &mut V) {
        visit_linear(v, &format!("{prefix}.q_proj"), &self.q_proj);
        visit_linear(v, &format!("{prefix}.k_proj"), &self.k_proj);
        visit_linear(v, &format!("{prefix}.v_proj"), &self.v_proj);
        visit_linear(v, &format!("{prefix}.o_proj"), &self.o_proj);
        self.q_norm.visit(&format!("{prefix}.q_norm"), v);
        self.k_norm.visit(&format!("{prefix}.k_norm"), v);
    }
}
