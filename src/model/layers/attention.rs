//! Causal self-attention with per-head q/k RMSNorm before RoPE and grouped KV heads.
//! Qwen3-MoE: plain attention. Qwen3.5: `q_proj` emits `[q_h | gate_h]` per head and the output
//! is multiplied by `sigmoid(gate)` before `o_proj`; RoPE may be partial.

use super::linear::Linear;
use super::norm::RmsNorm;
use super::rope::RopeTables;
use crate::model::cpu::backend::{
    is_cpu, logistic, sigmoid, softmax_last, standard_values, tensor,
};
use crate::model::generation::cache::KvCache;
use crate::model::host::floats;
use crate::model::io::weights::{linear, visit_linear, HfVisitor, WeightSource};
use crate::model::train_ops::autodiff::is_cpu_autodiff;
use crate::model::{cpu, train_ops};
use anyhow::Result;
use burn::prelude::*;

/// Queries per attention block on long inputs.
const QUERY_BLOCK: usize = 256;
/// Score elements (`rows × heads × block queries × keys`) one query block of [`Attention::attend_blocks`]
/// may hold (1 GiB of f32). Without a bound the scores grow with the batch and the context: on the
/// CPU, before [`cpu::attention::attend_many`], a batched prefill of 16 agent-prompt tails (256
/// queries each) against 4,000 keys held ~270 MB a buffer, the `serve` load test's RSS spike.
const SCORE_ELEMENTS: usize = 256 << 20;

/// Queries per block for `rows_heads` (rows × query heads) against up to `keys` keys: `block`, or
/// fewer so that one block's scores stay within `budget` elements; at least one.
fn bounded_block(block: usize, rows_heads: usize, keys: usize, budget: usize) -> usize {
    (budget / (rows_heads * keys).max(1)).clamp(1, block.max(1))
}

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
        if is_cpu::<B>() && t == 1 {
            return self.cpu_decode_step(x, rope, cache);
        }
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
        // Query blocks: a block attends only to the keys up to its last query (causal), which skips
        // about half of the score matrix on long sequences and keeps each block's scores small.
        let gaps = rope.gaps.as_deref();
        let o = self.attend(&q, &k, &v, &rope.starts, gaps, QUERY_BLOCK); // [B, nh, T, hd]
        let o = o.swap_dims(1, 2).reshape([b, t, nh * hd]);
        let o = match gate {
            Some(g) => o * sigmoid(g),
            None => o,
        };
        self.o_proj.forward(o)
    }

    /// [`Self::forward`] of one token per row on the CPU backend: the projections, norms, rotation
    /// and output gate on slices (a decode step's dozen small tensor ops around them cost about
    /// what its attention did); the cache and the attention itself as in [`Self::forward`].
    fn cpu_decode_step(
        &self,
        x: Tensor<B, 3>,
        rope: &RopeTables<B>,
        cache: Option<&mut KvCache<B>>,
    ) -> Tensor<B, 3> {
        let [b, _, hidden] = x.dims();
        let (nh, nkv, hd) = (self.num_heads, self.num_kv_heads, self.head_dim);
        let x = standard_values(x);
        let q_full = self.q_proj.forward_rows(&x, b);
        let (mut q, gate) = if self.gated {
            // Per-head interleave: [q_h | gate_h] for each head h.
            let (mut q, mut gate) = (Vec::with_capacity(b * nh * hd), Vec::new());
            for head in q_full.chunks_exact(2 * hd) {
                q.extend_from_slice(&head[..hd]);
                gate.extend_from_slice(&head[hd..]);
            }
            (q, Some(gate))
        } else {
            (q_full, None)
        };
        let mut k = self.k_proj.forward_rows(&x, b);
        let v = self.v_proj.forward_rows(&x, b);
        self.q_norm.forward_rows(&mut q);
        self.k_norm.forward_rows(&mut k);
        rope.apply_rows(&mut q, nh, hd);
        rope.apply_rows(&mut k, nkv, hd);
        // One position: `[B, 1, heads, hd]` and `[B, heads, 1, hd]` are the same values.
        let (q, k, v) = (
            tensor(q, [b, nh, 1, hd]),
            tensor(k, [b, nkv, 1, hd]),
            tensor(v, [b, nkv, 1, hd]),
        );
        let (k, v) = match cache {
            Some(c) => c.append(k, v),
            None => (k, v),
        };
        let o = self.attend(&q, &k, &v, &rope.starts, rope.gaps.as_deref(), QUERY_BLOCK);
        let mut o = standard_values(o);
        if let Some(gate) = gate {
            for (o, g) in o.iter_mut().zip(gate) {
                *o *= logistic(g);
            }
        }
        tensor(self.o_proj.forward_rows(&o, b), [b, 1, hidden])
    }

    /// The `T` new queries `q: [B, nh, T, hd]` against the keys/values `[B, nkv, cached + T, hd]`,
    /// `block` queries at a time: each block sees the cached slots and the new keys up to its own
    /// last query. `gaps`: each row's padding slots in a persistent batch (see [`gap_of`]).
    /// Returns `[B, nh, T, hd]`.
    fn attend(
        &self,
        q: &Tensor<B, 4>,
        k: &Tensor<B, 4>,
        v: &Tensor<B, 4>,
        starts: &[usize],
        gaps: Option<&[(usize, usize)]>,
        block: usize,
    ) -> Tensor<B, 4> {
        let [_, _, t, hd] = q.dims();
        let cached = k.dims()[2] - t;
        let scale = (hd as f32).powf(-0.5);
        if is_cpu::<B>() {
            let (window, tk) = (self.sliding_window, k.dims()[2]);
            let row_at = |row: usize| {
                let start = starts[row.min(starts.len() - 1)];
                (start, gap_of(starts, gaps, cached, row))
            };
            let (q, k, v) = (q.clone(), k.clone(), v.clone());
            let ranges = |row: usize, i: usize| {
                let (start, gap) = row_at(row);
                visible_ranges(window, start, gap, i, tk)
            };
            if t <= cpu::attention::FEW_QUERIES {
                return cpu::attention::attend(q, k, v, scale, &ranges);
            }
            // A layer loaded with reduced weights computes its prefill attention in bf16 too.
            let bf16_products = self.q_proj.weight.is_reduced();
            return cpu::attention::attend_many(q, k, v, scale, &ranges, bf16_products);
        }
        if is_cpu_autodiff::<B>() {
            let causal = train_ops::attention::Causal {
                window: self.sliding_window,
                cached,
                starts: starts.to_vec(),
                gaps: gaps.map(<[_]>::to_vec),
            };
            return train_ops::attention::attend(q.clone(), k.clone(), v.clone(), scale, causal);
        }
        self.attend_blocks(q, k, v, starts, gaps, block)
    }

    /// [`Self::attend`] in burn ops, `block` queries at a time (what the GPU runs; the reference of
    /// the CPU kernels' tests).
    pub(in crate::model) fn attend_blocks(
        &self,
        q: &Tensor<B, 4>,
        k: &Tensor<B, 4>,
        v: &Tensor<B, 4>,
        starts: &[usize],
        gaps: Option<&[(usize, usize)]>,
        block: usize,
    ) -> Tensor<B, 4> {
        let [b, nh, t, hd] = q.dims();
        let nkv = self.num_kv_heads;
        let rep = nh / nkv;
        let cached = k.dims()[2] - t;
        let block = bounded_block(block, b * nh, cached + t, SCORE_ELEMENTS);
        let mut blocks: Vec<Tensor<B, 4>> = (0..t)
            .step_by(block)
            .map(|from| {
                let len = (t - from).min(block);
                let tk = cached + from + len;
                let (k, v) = (k.clone().narrow(2, 0, tk), v.clone().narrow(2, 0, tk));
                // Query heads h = kv*rep + r share kv head `kv`: fold the rep axis into time instead
                // of materialising repeated keys.
                let qg = q
                    .clone()
                    .narrow(2, from, len)
                    .reshape([b, nkv, rep * len, hd]);
                let scores = qg
                    .matmul(k.swap_dims(2, 3))
                    .mul_scalar((hd as f64).powf(-0.5));
                let scores = scores.reshape([b, nh, len, tk])
                    + self.mask(from, len, cached, starts, gaps, &q.device());
                let probs = softmax_last(scores).reshape([b, nkv, rep * len, tk]);
                probs.matmul(v).reshape([b, nh, len, hd])
            })
            .collect();
        if blocks.len() == 1 {
            blocks.pop().expect("one block")
        } else {
            Tensor::cat(blocks, 2)
        }
    }

    /// Additive causal (and sliding-window) mask `[R, 1, len, tk]` for new queries `from..from+len`
    /// against the keys they can see, `tk = cached + from + len`: the `cached` slots followed by the
    /// new ones up to the last query. One row per entry of `starts`; row r has `starts[r]` valid cached keys; slots beyond that
    /// are right-padding (rows of different lengths stacked by [`crate::model::generation::cache::Cache::stack`]) and
    /// stay hidden.
    fn mask(
        &self,
        from: usize,
        len: usize,
        cached: usize,
        starts: &[usize],
        gaps: Option<&[(usize, usize)]>,
        device: &B::Device,
    ) -> Tensor<B, 4> {
        let tk = cached + from + len;
        let mut m = vec![0f32; starts.len() * len * tk];
        for (r, &start) in starts.iter().enumerate() {
            let gap = gap_of(starts, gaps, cached, r);
            for i in 0..len {
                for j in 0..tk {
                    if !visible(self.sliding_window, start, gap, from + i, j) {
                        m[(r * len + i) * tk + j] = f32::NEG_INFINITY;
                    }
                }
            }
        }
        floats(m, [starts.len(), 1, len, tk], device)
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

/// Row `row`'s padding, the key slots `lo..hi` it does not see: its gap in a persistent batch
/// (`gaps`, fixed when the batch was stacked), else the slots between its `starts[row]` real
/// cached keys and the batch's `cached` slots (empty for a single sequence).
pub(in crate::model) fn gap_of(
    starts: &[usize],
    gaps: Option<&[(usize, usize)]>,
    cached: usize,
    row: usize,
) -> (usize, usize) {
    match gaps {
        Some(g) => g[row.min(g.len() - 1)],
        None => (starts[row.min(starts.len() - 1)].min(cached), cached),
    }
}

/// Whether new query `i` (0 = the first new token) of a row at position `start` sees key slot `j`
/// (the cached slots, then the new keys); the row's slots `gap.0..gap.1` are padding, and the
/// slots after the gap hold the positions after those before it. `window` is the sliding window
/// (0: none).
pub(in crate::model) fn visible(
    window: usize,
    start: usize,
    gap: (usize, usize),
    i: usize,
    j: usize,
) -> bool {
    let (lo, hi) = gap;
    if (lo..hi).contains(&j) {
        return false;
    }
    let qpos = start + i;
    let kpos = if j < lo { j } else { j - (hi - lo) };
    kpos <= qpos && (window == 0 || qpos - kpos < window)
}

/// The key slots (below `tk`) that [`visible`] admits for new query `i`, as two ranges in order:
/// the slots before the gap, then those after it (either may be empty).
pub(in crate::model) fn visible_ranges(
    window: usize,
    start: usize,
    gap: (usize, usize),
    i: usize,
    tk: usize,
) -> [std::ops::Range<usize>; 2] {
    let (lo, hi) = gap;
    let seen = start + i + 1; // key positions 0..seen are at or before the query
    let first = if window == 0 {
        0
    } else {
        seen.saturating_sub(window)
    };
    let clip = |a: usize, b: usize| a.min(tk)..b.min(tk).max(a.min(tk));
    // Slot j < lo holds position j; slot j >= hi holds position j - (hi - lo) >= lo.
    [
        clip(first.min(lo), seen.min(lo)),
        clip(first.max(lo) + (hi - lo), seen.max(lo) + (hi - lo)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::io::weights::RandomInit;
    use burn::backend::NdArray;
    use burn::tensor::Distribution;

    /// Query blocks see exactly the keys one whole-sequence block sees, with and without a cache
    /// in front and with a sliding window.
    #[test]
    fn query_blocks_equal_one_block() {
        let device = Default::default();
        for (window, cached) in [(0usize, 0usize), (0, 37), (100, 0)] {
            let dims = AttentionDims {
                hidden: 32,
                num_heads: 4,
                num_kv_heads: 2,
                head_dim: 8,
                bias: false,
                gated: true,
                zero_centered_norm: true,
                eps: 1e-6,
                sliding_window: window,
                init_std: 0.5,
            };
            let attn =
                Attention::<NdArray<f32>>::load(&mut RandomInit::new(7), "a", &dims, &device)
                    .unwrap();
            let t = 300;
            let normal = Distribution::Normal(0.0, 1.0);
            let q = Tensor::<NdArray<f32>, 4>::random([2, 4, t, 8], normal, &device);
            let k = Tensor::<NdArray<f32>, 4>::random([2, 2, cached + t, 8], normal, &device);
            let v = Tensor::<NdArray<f32>, 4>::random([2, 2, cached + t, 8], normal, &device);
            let starts = [cached, cached.saturating_sub(5)];
            let whole = attn.attend_blocks(&q, &k, &v, &starts, None, t);
            for block in [1, 64, 100] {
                let blocked = attn.attend_blocks(&q, &k, &v, &starts, None, block);
                let diff: f32 = (blocked - whole.clone()).abs().max().into_scalar();
                assert!(
                    diff < 1e-5,
                    "window {window}, cached {cached}, block {block}: {diff}"
                );
            }
        }
    }

    /// The ranges are exactly the slots `visible` admits, with and without a gap and a window.
    #[test]
    fn visible_ranges_are_the_visible_slots() {
        let tk = 24;
        for window in [0, 1, 3, 7] {
            for (lo, hi) in [(0, 0), (5, 5), (4, 9), (0, 6), (10, 24)] {
                for start in 0..lo.max(1) + 3 {
                    for i in 0..6 {
                        let [a, b] = visible_ranges(window, start, (lo, hi), i, tk);
                        let from_ranges: Vec<usize> = a.chain(b).collect();
                        let expected: Vec<usize> = (0..tk)
                            .filter(|&j| visible(window, start, (lo, hi), i, j))
                            .collect();
                        assert_eq!(
                            from_ranges, expected,
                            "window {window}, gap {lo}..{hi}, start {start}, query {i}"
                        );
                    }
                }
            }
        }
    }

    /// The score bound shrinks query blocks only when a block's scores would exceed it (blocking
    /// itself changes no output: `query_blocks_equal_one_block`).
    #[test]
    fn query_blocks_shrink_to_the_score_budget() {
        // The load test's burst: 16 tails of 4 heads against 4,096 keys keep whole blocks.
        assert_eq!(bounded_block(256, 16 * 4, 4096, SCORE_ELEMENTS), 256);
        // 35B's 16 heads, 8 sequences at 128k keys: 16-query blocks (1 GiB).
        assert_eq!(bounded_block(256, 8 * 16, 128 << 10, SCORE_ELEMENTS), 16);
        // Never below one query, whatever the context.
        assert_eq!(bounded_block(256, 32 * 16, 1 << 20, SCORE_ELEMENTS), 1);
    }

    /// The CPU kernels, for a few queries (decode steps) and for many (prefill), see the same keys
    /// and give the same outputs as the matrix-product path in burn ops: ragged rows of a stacked
    /// batch, a persistent batch's gaps, a sliding window, one to 150 new queries.
    #[test]
    fn cpu_kernels_equal_matrix_products() {
        let device = Default::default();
        let gapped: &[(usize, usize)] = &[(40, 40), (5, 12), (0, 40)];
        for (window, cached, t, gaps) in [
            (0usize, 40usize, 1usize, None),
            (0, 40, 3, None),
            (9, 40, 8, None),
            (0, 0, 2, None),
            (0, 40, 3, Some(gapped)),
            // Many queries (a prefill): the blocked kernel, with a ragged last block.
            (0, 40, 9, None),
            (0, 0, 150, None),
            (9, 40, 70, None),
            (0, 40, 130, Some(gapped)),
        ] {
            let dims = AttentionDims {
                hidden: 32,
                num_heads: 6,
                num_kv_heads: 2,
                head_dim: 12,
                bias: false,
                gated: false,
                zero_centered_norm: false,
                eps: 1e-6,
                sliding_window: window,
                init_std: 0.5,
            };
            let attn =
                Attention::<NdArray<f32>>::load(&mut RandomInit::new(7), "a", &dims, &device)
                    .unwrap();
            let normal = Distribution::Normal(0.0, 2.0);
            let q = Tensor::<NdArray<f32>, 4>::random([3, 6, t, 12], normal, &device);
            let k = Tensor::<NdArray<f32>, 4>::random([3, 2, cached + t, 12], normal, &device);
            let v = Tensor::<NdArray<f32>, 4>::random([3, 2, cached + t, 12], normal, &device);
            // Row 1 has padding after its real cached keys (or in a gap); row 2 has no cached keys.
            let starts = [cached, cached.saturating_sub(7), 0];
            let got = attn.attend(&q, &k, &v, &starts, gaps, 256);
            let expected = attn.attend_blocks(&q, &k, &v, &starts, gaps, 256);
            let diff = (got.into_data().to_vec::<f32>().unwrap().iter())
                .zip(expected.into_data().to_vec::<f32>().unwrap())
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(
                diff < 1e-5,
                "window {window}, cached {cached}, {t} queries: {diff}"
            );
        }
    }
}
