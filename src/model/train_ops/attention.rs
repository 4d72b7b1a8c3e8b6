//! Causal attention as one autodiff operation on the CPU training backend
//! (`Autodiff<NdArray<f32>>`), computed the way flash attention is: query blocks against the keys
//! they can see, each block's scores made, soft-maxed and used at once, and only each query's
//! log-sum-exp kept for the backward pass, which makes the probabilities again block by block.
//!
//! Through burn's autodiff the same attention built every score block as a tensor and ran about ten
//! ops over it forward and as many backward (scale, mask, softmax's passes, the reshapes its matmul
//! copies), each allocating: on `tiny` one full-attention layer over a 2,400-token prompt cost more
//! than its three DeltaNet layers together. Here the products go through gemm on strided views
//! (no transposed copies) and each score block stays in cache.
//!
//! Per query head, with `s = scale · q·kᵀ` over the visible keys, `p = softmax(s)`, `o = p·v`:
//! `dv = pᵀ do`, `dp = do vᵀ`, `ds = p ⊙ (dp − rowsum(do ⊙ o))`, `dq = scale · ds k`,
//! `dk = scale · dsᵀ q`.

use super::autodiff::{self as ad, Cpu};
use crate::model::cpu::backend::softmax_row;
use crate::model::cpu::spin_team;
use crate::model::layers::attention::{gap_of, visible};
use burn::backend::autodiff::checkpoint::{base::Checkpointer, strategy::NoCheckpointing};
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::prelude::*;
use ndarray::{ArcArray, IxDyn};
use std::sync::Arc;

/// Queries per block: a block's scores (`BLOCK × keys`) stay in the core's cache.
const BLOCK: usize = 64;

/// Which keys each query sees: causal over `cached` slots followed by the new keys, row `r` having
/// `starts[r]` real cached slots (see [`visible`]), within `window` (0: no window).
#[derive(Clone, Debug)]
pub struct Causal {
    pub window: usize,
    pub cached: usize,
    pub starts: Vec<usize>,
    /// Each row's padding in a persistent batch (see [`gap_of`]); `None` outside one.
    pub gaps: Option<Vec<(usize, usize)>>,
}

impl Causal {
    fn sees(&self, row: usize, query: usize, key: usize) -> bool {
        let start = self.starts[row.min(self.starts.len() - 1)];
        let gap = gap_of(&self.starts, self.gaps.as_deref(), self.cached, row);
        visible(self.window, start, gap, query, key)
    }
}

/// `q: [B, nh, T, hd]` against `k, v: [B, nkv, cached + T, hd]` (query head `h` reads kv head
/// `h / (nh / nkv)`), scores scaled by `scale` → `[B, nh, T, hd]`; for `B` =
/// `Autodiff<NdArray<f32>>` ([`ad::is_cpu_autodiff`]), with gradients for `q`, `k` and `v`.
pub fn attend<B: Backend>(
    q: Tensor<B, 4>,
    k: Tensor<B, 4>,
    v: Tensor<B, 4>,
    scale: f32,
    causal: Causal,
) -> Tensor<B, 4> {
    let [b, nh, t, hd] = q.dims();
    let [_, nkv, tk, _] = k.dims();
    let inputs = [ad::primitive(q), ad::primitive(k), ad::primitive(v)];
    let [q, k, v] = inputs.each_ref().map(|x| ad::values(&x.primitive));
    let mut saved = Saved {
        dims: Dims {
            b,
            nh,
            nkv,
            t,
            tk,
            hd,
        },
        scale,
        causal,
        q,
        k,
        v,
        out: ArcArray::zeros(IxDyn(&[0])),
        lse: Vec::new(),
    };
    let (out, lse) = forward(&saved);
    // The output tensor and the backward pass's copy share one buffer.
    (saved.out, saved.lse) = (ad::shared(out, &[b, nh, t, hd]), lse);
    let out = ad::inner_of(saved.out.clone());
    let nodes = inputs.map(|x| x.node.clone());
    let out = match AttentionBackward
        .prepare::<NoCheckpointing>(nodes)
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => prep.finish(Arc::new(saved), out),
        OpsKind::UnTracked(prep) => prep.finish(out),
    };
    ad::tensor(out)
}

#[derive(Clone, Copy, Debug)]
struct Dims {
    b: usize,
    nh: usize,
    nkv: usize,
    t: usize,
    tk: usize,
    hd: usize,
}

/// The inputs (standard layout), the outputs and each query's log-sum-exp (`[B, nh, T]`).
#[derive(Debug)]
struct Saved {
    dims: Dims,
    scale: f32,
    causal: Causal,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    out: ArcArray<f32, IxDyn>,
    lse: Vec<f32>,
}

/// What one (row, kv head) pair reads: its keys and values, and its query heads' queries
/// (`rep` heads of `T` queries, one after another).
struct Pair<'a> {
    row: usize,
    q: &'a [f32],
    k: &'a [f32],
    v: &'a [f32],
}

impl Saved {
    fn pair(&self, p: usize) -> Pair<'_> {
        let Dims {
            nh, nkv, t, tk, hd, ..
        } = self.dims;
        let rep = nh / nkv;
        Pair {
            row: p / nkv,
            q: &self.q[p * rep * t * hd..][..rep * t * hd],
            k: &self.k[p * tk * hd..][..tk * hd],
            v: &self.v[p * tk * hd..][..tk * hd],
        }
    }

    /// The probabilities of queries `from..from + n` of one query head, into `p` (`n` rows of the
    /// `keys` the last of them can see), scores scaled and masked; returns `keys`.
    fn probabilities(
        &self,
        x: &Pair,
        queries: &[f32],
        from: usize,
        p: &mut Vec<f32>,
        mut lse: Lse,
    ) -> usize {
        let Dims { hd, .. } = self.dims;
        let n = queries.len() / hd;
        let keys = self.causal.cached + from + n;
        p.resize(n * keys, 0.0);
        product(
            p,
            keys,
            Mat::rows(queries, n, hd),
            Mat::rows(x.k, keys, hd).t(),
            self.scale,
            false,
        );
        for (i, row) in p.chunks_exact_mut(keys).enumerate() {
            for (j, s) in row.iter_mut().enumerate() {
                if !self.causal.sees(x.row, from + i, j) {
                    *s = f32::NEG_INFINITY;
                }
            }
            match &mut lse {
                Lse::Known(lse) if lse[i] == f32::NEG_INFINITY => row.fill(0.0),
                Lse::Known(lse) => row.iter_mut().for_each(|s| *s = (*s - lse[i]).exp()),
                Lse::Write(lse) => lse[i] = softmax_row(row),
            }
        }
        keys
    }
}

/// The rows' log-sum-exps: known (the backward pass normalises by them) or to be written (the
/// forward pass).
enum Lse<'a> {
    Known(&'a [f32]),
    Write(&'a mut [f32]),
}

/// The outputs `[B, nh, T, hd]` and log-sum-exps `[B, nh, T]`.
fn forward(x: &Saved) -> (Vec<f32>, Vec<f32>) {
    let Dims {
        b, nh, nkv, t, hd, ..
    } = x.dims;
    let rep = nh / nkv;
    let mut out = vec![0.0; b * nh * t * hd];
    let mut lse = vec![0.0; b * nh * t];
    if out.is_empty() {
        return (out, lse);
    }
    let mut pairs: Vec<_> = out
        .chunks_mut(rep * t * hd)
        .zip(lse.chunks_mut(rep * t))
        .collect();
    spin_team::for_each(&mut pairs, &|p, (out, lse)| {
        let pair = x.pair(p);
        let mut probs = Vec::new();
        for (head, (out, lse)) in out.chunks_mut(t * hd).zip(lse.chunks_mut(t)).enumerate() {
            for from in (0..t).step_by(BLOCK) {
                let n = BLOCK.min(t - from);
                let queries = &pair.q[(head * t + from) * hd..][..n * hd];
                let lse = Lse::Write(&mut lse[from..from + n]);
                let keys = x.probabilities(&pair, queries, from, &mut probs, lse);
                let out = &mut out[from * hd..(from + n) * hd];
                product(
                    out,
                    hd,
                    Mat::rows(&probs, n, keys),
                    Mat::rows(pair.v, keys, hd),
                    1.0,
                    false,
                );
            }
        }
    });
    (out, lse)
}

#[derive(Debug)]
struct AttentionBackward;

impl Backward<Cpu, 3> for AttentionBackward {
    type State = Arc<Saved>;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _: &mut Checkpointer) {
        let x = ops.state;
        let Dims {
            b,
            nh,
            nkv,
            t,
            tk,
            hd,
        } = x.dims;
        let rep = nh / nkv;
        let d_out = ad::values(&grads.consume::<Cpu>(&ops.node));
        let mut dq = vec![0.0; b * nh * t * hd];
        let mut dk = vec![0.0; b * nkv * tk * hd];
        let mut dv = vec![0.0; b * nkv * tk * hd];
        if !dq.is_empty() && !dk.is_empty() {
            let mut pairs: Vec<_> = dq
                .chunks_mut(rep * t * hd)
                .zip(dk.chunks_mut(tk * hd))
                .zip(dv.chunks_mut(tk * hd))
                .collect();
            spin_team::for_each(&mut pairs, &|p, ((dq, dk), dv)| {
                backward_pair(&x, p, &d_out, dq, dk, dv);
            });
        }
        let shapes = [[b, nh, t, hd], [b, nkv, tk, hd], [b, nkv, tk, hd]];
        for ((parent, values), shape) in ops.parents.iter().zip([dq, dk, dv]).zip(shapes) {
            ad::register(grads, parent.as_ref().map(|n| n.id), values, &shape);
        }
    }
}

/// Gradients of one (row, kv head) pair: its query heads' `dq`, and `dk`, `dv` summed over them.
fn backward_pair(
    x: &Saved,
    p: usize,
    d_out: &[f32],
    dq: &mut [f32],
    dk: &mut [f32],
    dv: &mut [f32],
) {
    let Dims { nh, nkv, t, hd, .. } = x.dims;
    let rep = nh / nkv;
    let pair = x.pair(p);
    let out = x
        .out
        .as_slice()
        .expect("the output is saved in standard layout");
    let (mut probs, mut d_scores) = (Vec::new(), Vec::new());
    for head in 0..rep {
        let first = p * rep * t + head * t; // this head's first query among all [B, nh, T]
        for from in (0..t).step_by(BLOCK) {
            let n = BLOCK.min(t - from);
            let rows = (first + from) * hd..(first + from + n) * hd;
            let (queries, d_o, o) = (
                &pair.q[(head * t + from) * hd..][..n * hd],
                &d_out[rows.clone()],
                &out[rows],
            );
            let lse = &x.lse[first + from..first + from + n];
            let keys = x.probabilities(&pair, queries, from, &mut probs, Lse::Known(lse));
            let (p_mat, d_o_mat) = (Mat::rows(&probs, n, keys), Mat::rows(d_o, n, hd));
            // dv += pᵀ do; dp = do vᵀ.
            product(dv, hd, p_mat.t(), d_o_mat, 1.0, true);
            d_scores.resize(n * keys, 0.0);
            product(
                &mut d_scores,
                keys,
                d_o_mat,
                Mat::rows(pair.v, keys, hd).t(),
                1.0,
                false,
            );
            // ds = p ⊙ (dp − rowsum(do ⊙ o)).
            for (i, (ds, p)) in d_scores
                .chunks_exact_mut(keys)
                .zip(probs.chunks_exact(keys))
                .enumerate()
            {
                let dot: f32 = d_o[i * hd..][..hd]
                    .iter()
                    .zip(&o[i * hd..][..hd])
                    .map(|(a, b)| a * b)
                    .sum();
                ds.iter_mut()
                    .zip(p)
                    .for_each(|(ds, &p)| *ds = p * (*ds - dot));
            }
            let d_scores = Mat::rows(&d_scores, n, keys);
            // dq = scale · ds k; dk += scale · dsᵀ q.
            let dq_block = &mut dq[(head * t + from) * hd..][..n * hd];
            product(
                dq_block,
                hd,
                d_scores,
                Mat::rows(pair.k, keys, hd),
                x.scale,
                false,
            );
            product(
                dk,
                hd,
                d_scores.t(),
                Mat::rows(queries, n, hd),
                x.scale,
                true,
            );
        }
    }
}

/// A read-only strided matrix: element `(i, j)` at `data[i·rs + j·cs]`.
#[derive(Clone, Copy)]
struct Mat<'a> {
    data: &'a [f32],
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
}

impl<'a> Mat<'a> {
    /// The first `rows × cols` values of `data`, row-major.
    fn rows(data: &'a [f32], rows: usize, cols: usize) -> Mat<'a> {
        assert!(rows * cols <= data.len(), "matrix within its buffer");
        Mat {
            data,
            rows,
            cols,
            rs: cols,
            cs: 1,
        }
    }

    fn t(self) -> Mat<'a> {
        Mat {
            rows: self.cols,
            cols: self.rows,
            rs: self.cs,
            cs: self.rs,
            ..self
        }
    }
}

/// `dst = alpha · a · b`, or `dst += alpha · a · b` when `accumulate`; `dst` is row-major with
/// `dst_cols` columns (= `b.cols`), on the calling thread (callers run pairs in parallel).
fn product(dst: &mut [f32], dst_cols: usize, a: Mat, b: Mat, alpha: f32, accumulate: bool) {
    assert_eq!(a.cols, b.rows, "inner dimensions agree");
    assert_eq!(dst_cols, b.cols, "output columns");
    assert!(a.rows * b.cols <= dst.len(), "output within its buffer");
    if a.rows == 0 || b.cols == 0 {
        return;
    }
    if a.cols == 0 {
        if !accumulate {
            dst[..a.rows * b.cols].fill(0.0);
        }
        return;
    }
    // SAFETY: the asserts above keep every element gemm reads or writes inside the slices (row-major
    // views built by `Mat::rows`, possibly transposed); `dst` is borrowed mutably for the call.
    unsafe {
        gemm::gemm(
            a.rows,
            b.cols,
            a.cols,
            dst.as_mut_ptr(),
            1,
            dst_cols as isize,
            accumulate,
            a.data.as_ptr(),
            a.cs as isize,
            a.rs as isize,
            b.data.as_ptr(),
            b.cs as isize,
            b.rs as isize,
            if accumulate { 1.0 } else { 0.0 },
            alpha,
            false,
            false,
            false,
            gemm::Parallelism::None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::io::weights::RandomInit;
    use crate::model::layers::attention::{Attention, AttentionDims};
    use burn::backend::Autodiff;
    use burn::tensor::Distribution;

    type A = Autodiff<Cpu>;

    /// Outputs and the gradients of `q`, `k` and `v` equal those of the same attention in burn ops
    /// ([`Attention::attend_blocks`] through autodiff): one block and several (with a ragged last
    /// block), with cached keys and rows of different real cache lengths, a sliding window, grouped
    /// query heads.
    #[test]
    fn blocked_attention_has_burns_values_and_gradients() {
        let device = Default::default();
        let normal = Distribution::Normal(0.0, 1.0);
        let cases = [
            (1, 0, 30, 0, vec![0]),
            (2, 0, 150, 0, vec![0, 0]),
            (3, 40, 70, 0, vec![40, 25, 0]),
            (2, 10, 100, 33, vec![10, 4]),
        ];
        for (b, cached, t, window, starts) in cases {
            let (nh, nkv, hd) = (4, 2, 8);
            let dims = AttentionDims {
                hidden: 16,
                num_heads: nh,
                num_kv_heads: nkv,
                head_dim: hd,
                bias: false,
                gated: false,
                zero_centered_norm: false,
                eps: 1e-6,
                sliding_window: window,
                init_std: 0.5,
            };
            let attn = Attention::<A>::load(&mut RandomInit::new(7), "a", &dims, &device).unwrap();
            let scale = (hd as f32).powf(-0.5);
            let causal = Causal {
                window,
                cached,
                starts: starts.clone(),
                gaps: None,
            };
            let q = Tensor::<Cpu, 4>::random([b, nh, t, hd], normal, &device);
            let k = Tensor::<Cpu, 4>::random([b, nkv, cached + t, hd], normal, &device);
            let v = Tensor::<Cpu, 4>::random([b, nkv, cached + t, hd], normal, &device);
            let w = Tensor::<A, 4>::random([b, nh, t, hd], normal, &device);
            let run = |native: bool| {
                let leaf =
                    |x: &Tensor<Cpu, 4>| Tensor::<A, 4>::from_inner(x.clone()).require_grad();
                let (q, k, v) = (leaf(&q), leaf(&k), leaf(&v));
                let o = if native {
                    attend(q.clone(), k.clone(), v.clone(), scale, causal.clone())
                } else {
                    attn.attend_blocks(&q, &k, &v, &starts, None, 64)
                };
                let grads = (o.clone() * w.clone()).sum().backward();
                let grad = |x: &Tensor<A, 4>| x.grad(&grads).expect("a gradient");
                [o.inner(), grad(&q), grad(&k), grad(&v)]
            };
            for ((ours, burns), name) in run(true)
                .into_iter()
                .zip(run(false))
                .zip(["o", "dq", "dk", "dv"])
            {
                let diff: f32 = (ours - burns).abs().max().into_scalar();
                assert!(
                    diff < 1e-4,
                    "{name}, {b} rows, {cached} cached, {t} new, window {window}: {diff}"
                );
            }
        }
    }
}
