//! The gated delta rule as one autodiff operation on the CPU training backend
//! (`Autodiff<NdArray<f32>>`): the native forward loop of [`crate::model::cpu::delta_rule`], keeping the
//! state at the start of every [`CHUNK`] tokens, and a native backward pass that sweeps the tokens
//! in reverse, recomputing each chunk's states from its kept start.
//!
//! Through burn's autodiff the chunked (WY) form of [`crate::model::layers::gated_deltanet::chunked_rule`] runs as
//! thousands of small ops, and it was ~80 % of a DeltaNet layer's training step on a CPU (`tiny`,
//! one 2,400-token row: 0.46 s a layer with it, 0.09 s with the rule left out). The rule costs
//! `4·dk·dv` multiply-adds per token and head, its backward about three times that. The GPU keeps
//! the chunked form (large products are what it wants); the test below holds the two to the same
//! values and gradients.
//!
//! Per (row, head) and token, with the state `S: [dk, dv]`:
//! `A = e^g S`, `u = v − Aᵀk`, `S' = A + β k uᵀ`, `o = S'ᵀ q`. The backward pass, given `dS'` (the
//! gradient flowing into `S'` from later tokens and from the final state) and `do`:
//! `dS' += q doᵀ`, `dq = S' do`, `dδ = dS'ᵀ k` (δ = β u), `dk = dS' δ + A dm`, `dv = β dδ`,
//! `dβ = dδ·u`, `dm = −β dδ`, `dA = dS' + k dmᵀ`, `dg = Σ dA ⊙ A`, `dS = e^g dA`.

use super::autodiff::{self as ad, Cpu};
use crate::model::cpu::delta_rule::Head;
use crate::model::cpu::spin_team;
use burn::backend::autodiff::checkpoint::{base::Checkpointer, strategy::NoCheckpointing};
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::prelude::*;
use std::sync::Arc;

/// Tokens between two kept states: the backward pass holds `CHUNK + 1` states of a head at a time.
const CHUNK: usize = 64;

/// Same arguments and results as [`crate::model::cpu::delta_rule::delta_rule`], for `B` =
/// `Autodiff<NdArray<f32>>` ([`ad::is_cpu_autodiff`]); gradients flow to every input,
/// `s0` included.
pub fn delta_rule<B: Backend>(
    q: Tensor<B, 4>,
    k: Tensor<B, 4>,
    v: Tensor<B, 4>,
    g: Tensor<B, 3>,
    beta: Tensor<B, 3>,
    s0: Option<Tensor<B, 4>>,
) -> (Tensor<B, 4>, Tensor<B, 4>) {
    let [b, h, t, dk] = q.dims();
    let dv = v.dims()[3];
    let s0 = s0.unwrap_or_else(|| Tensor::zeros([b, h, dk, dv], &q.device()));
    let inputs = [
        ad::primitive(q),
        ad::primitive(k),
        ad::primitive(v),
        ad::primitive(g),
        ad::primitive(beta),
        ad::primitive(s0),
    ];
    let [q, k, v, g, beta, s0] = inputs.each_ref().map(|x| ad::values(&x.primitive));
    let saved = Saved {
        dims: [b, h, t, dk, dv],
        q,
        k,
        v,
        g,
        beta,
        kept: Vec::new(),
    };
    let (out, kept) = forward(&saved, &s0);
    let out = ad::inner(out, &[b, h, t + dk, dv]);
    let nodes = inputs.map(|x| x.node.clone());
    let joined = match DeltaRuleBackward
        .prepare::<NoCheckpointing>(nodes)
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => prep.finish(Arc::new(Saved { kept, ..saved }), out),
        OpsKind::UnTracked(prep) => prep.finish(out),
    };
    let joined: Tensor<B, 4> = ad::tensor(joined);
    (joined.clone().narrow(2, 0, t), joined.narrow(2, t, dk))
}

/// What the backward pass needs: the inputs (standard layout) and each head's state at the start
/// of every chunk (`[B·H, chunks, dk·dv]`).
#[derive(Debug)]
struct Saved {
    dims: [usize; 5],
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    g: Vec<f32>,
    beta: Vec<f32>,
    kept: Vec<f32>,
}

impl Saved {
    fn head(&self, p: usize) -> Head<'_> {
        let [_, _, t, dk, dv] = self.dims;
        Head::of_pair(
            p,
            t,
            dk,
            dv,
            [&self.q, &self.k, &self.v, &self.g, &self.beta],
        )
    }
}

/// The outputs joined with the final states, `[B, H, T + dk, dv]`, and the kept states.
fn forward(x: &Saved, s0: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let [b, h, t, dk, dv] = x.dims;
    let chunks = t.div_ceil(CHUNK);
    let mut out = vec![0.0; b * h * (t + dk) * dv];
    let mut kept = vec![0.0; b * h * chunks * dk * dv];
    let mut kept_parts: Vec<&mut [f32]> = kept.chunks_mut((chunks * dk * dv).max(1)).collect();
    kept_parts.resize_with(b * h, Default::default);
    let mut pairs: Vec<_> = out.chunks_mut((t + dk) * dv).zip(kept_parts).collect();
    spin_team::for_each(&mut pairs, &|p, (out, kept)| {
        let (o, s) = out.split_at_mut(t * dv);
        s.copy_from_slice(&s0[p * dk * dv..(p + 1) * dk * dv]);
        let head = x.head(p);
        for (c, start) in kept.chunks_exact_mut(dk * dv).enumerate() {
            start.copy_from_slice(s);
            let tokens = c * CHUNK..((c + 1) * CHUNK).min(t);
            head.tokens(tokens.clone())
                .run(s, &mut o[tokens.start * dv..tokens.end * dv]);
        }
    });
    (out, kept)
}

#[derive(Debug)]
struct DeltaRuleBackward;

impl Backward<Cpu, 6> for DeltaRuleBackward {
    type State = Arc<Saved>;

    fn backward(self, ops: Ops<Self::State, 6>, grads: &mut Gradients, _: &mut Checkpointer) {
        let x = ops.state;
        let [b, h, t, dk, dv] = x.dims;
        let grad = ad::values(&grads.consume::<Cpu>(&ops.node));
        let mut d = Grads {
            q: vec![0.0; b * h * t * dk],
            k: vec![0.0; b * h * t * dk],
            v: vec![0.0; b * h * t * dv],
            g: vec![0.0; b * h * t],
            beta: vec![0.0; b * h * t],
            s0: vec![0.0; b * h * dk * dv],
        };
        let chunks = t.div_ceil(CHUNK);
        let mut pairs: Vec<_> = grad
            .chunks(((t + dk) * dv).max(1))
            .zip(d.s0.chunks_mut(dk * dv))
            .zip(d.q.chunks_mut((t * dk).max(1)))
            .zip(d.k.chunks_mut((t * dk).max(1)))
            .zip(d.v.chunks_mut((t * dv).max(1)))
            .zip(d.g.chunks_mut(t.max(1)))
            .zip(d.beta.chunks_mut(t.max(1)))
            .map(|((((((grad, ds), q), k), v), g), beta)| {
                let (d_o, d_final) = grad.split_at(t * dv);
                ds.copy_from_slice(d_final);
                (HeadGrads { q, k, v, g, beta }, d_o, ds)
            })
            .collect();
        spin_team::for_each(&mut pairs, &|p, (grads, d_o, ds)| {
            let kept = &x.kept[p * chunks * dk * dv..(p + 1) * chunks * dk * dv];
            backward_head(&x.head(p), kept, d_o, ds, grads);
        });
        let shapes: [&[usize]; 6] = [
            &[b, h, t, dk],
            &[b, h, t, dk],
            &[b, h, t, dv],
            &[b, h, t],
            &[b, h, t],
            &[b, h, dk, dv],
        ];
        let Grads {
            q,
            k,
            v,
            g,
            beta,
            s0,
        } = d;
        for ((parent, values), shape) in ops.parents.iter().zip([q, k, v, g, beta, s0]).zip(shapes)
        {
            ad::register(grads, parent.as_ref().map(|n| n.id), values, shape);
        }
    }
}

/// Gradients of the six inputs, standard layout.
struct Grads {
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    g: Vec<f32>,
    beta: Vec<f32>,
    s0: Vec<f32>,
}

/// One (row, head) pair's share of [`Grads`] (without `s0`, which the sweep carries in `ds`).
struct HeadGrads<'a> {
    q: &'a mut [f32],
    k: &'a mut [f32],
    v: &'a mut [f32],
    g: &'a mut [f32],
    beta: &'a mut [f32],
}

/// The reverse sweep of one (row, head) pair: `ds` holds the gradient of the final state on entry
/// and that of the initial state on return; `kept` are the states at the chunk starts.
fn backward_head(x: &Head, kept: &[f32], d_o: &[f32], ds: &mut [f32], d: &mut HeadGrads) {
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f") {
            // SAFETY: the feature was detected at run time.
            return unsafe { backward_avx512(x, kept, d_o, ds, d) };
        }
        if is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { backward_avx2(x, kept, d_o, ds, d) };
        }
    }
    sweep(x, kept, d_o, ds, d)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn backward_avx512(x: &Head, kept: &[f32], d_o: &[f32], ds: &mut [f32], d: &mut HeadGrads) {
    sweep(x, kept, d_o, ds, d)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn backward_avx2(x: &Head, kept: &[f32], d_o: &[f32], ds: &mut [f32], d: &mut HeadGrads) {
    sweep(x, kept, d_o, ds, d)
}

#[inline(always)]
fn sweep(x: &Head, kept: &[f32], d_o: &[f32], ds: &mut [f32], d: &mut HeadGrads) {
    let (dk, t) = (x.dk, x.g.len());
    let dv = ds.len() / dk;
    let n = dk * dv;
    // states[i] = the state before token `from + i` of the current chunk; u[i] = v − Aᵀk there.
    let mut states = vec![0.0f32; (CHUNK + 1) * n];
    let mut u = vec![0.0f32; CHUNK * dv];
    let (mut d_delta, mut dm) = (vec![0.0f32; dv], vec![0.0f32; dv]);
    for (c, start) in kept.chunks_exact(n).enumerate().rev() {
        let from = c * CHUNK;
        let to = (from + CHUNK).min(t);
        states[..n].copy_from_slice(start);
        for tt in from..to {
            let i = tt - from;
            let (before, after) = states.split_at_mut((i + 1) * n);
            let (prev, next) = (&before[i * n..], &mut after[..n]);
            let (k_t, v_t) = (&x.k[tt * dk..][..dk], &x.v[tt * dv..][..dv]);
            let (a, beta) = (x.g[tt].exp(), x.beta[tt]);
            let u_t = &mut u[i * dv..][..dv];
            u_t.copy_from_slice(v_t);
            for (row, &k_i) in prev.chunks_exact(dv).zip(k_t) {
                for (u_j, &s_ij) in u_t.iter_mut().zip(row) {
                    *u_j -= a * k_i * s_ij;
                }
            }
            for ((next_row, row), &k_i) in next
                .chunks_exact_mut(dv)
                .zip(prev.chunks_exact(dv))
                .zip(k_t)
            {
                for ((n_ij, &s_ij), &u_j) in next_row.iter_mut().zip(row).zip(u_t.iter()) {
                    *n_ij = a * s_ij + beta * k_i * u_j;
                }
            }
        }
        for tt in (from..to).rev() {
            let i = tt - from;
            let (prev, state) = (&states[i * n..][..n], &states[(i + 1) * n..][..n]);
            let (q_t, k_t) = (&x.q[tt * dk..][..dk], &x.k[tt * dk..][..dk]);
            let (u_t, do_t) = (&u[i * dv..][..dv], &d_o[tt * dv..][..dv]);
            let (a, beta) = (x.g[tt].exp(), x.beta[tt]);
            // o = S'ᵀq and S' = A + k δᵀ: dq, dS' += q doᵀ, then dk (through δ) and dδ.
            d_delta.fill(0.0);
            for (i_k, ((ds_row, s_row), (&q_i, &k_i))) in ds
                .chunks_exact_mut(dv)
                .zip(state.chunks_exact(dv))
                .zip(q_t.iter().zip(k_t))
                .enumerate()
            {
                let (mut dq_i, mut dk_i) = (0.0f32, 0.0f32);
                for ((((ds_ij, &s_ij), &do_j), &u_j), dd_j) in ds_row
                    .iter_mut()
                    .zip(s_row)
                    .zip(do_t)
                    .zip(u_t)
                    .zip(d_delta.iter_mut())
                {
                    dq_i += s_ij * do_j;
                    *ds_ij += q_i * do_j;
                    dk_i += *ds_ij * beta * u_j;
                    *dd_j += *ds_ij * k_i;
                }
                d.q[tt * dk + i_k] = dq_i;
                d.k[tt * dk + i_k] = dk_i;
            }
            // δ = β u, u = v − m.
            let mut d_beta = 0.0f32;
            for (((dv_j, dm_j), &dd_j), &u_j) in d.v[tt * dv..][..dv]
                .iter_mut()
                .zip(dm.iter_mut())
                .zip(&d_delta)
                .zip(u_t)
            {
                d_beta += dd_j * u_j;
                *dv_j = beta * dd_j;
                *dm_j = -beta * dd_j;
            }
            d.beta[tt] = d_beta;
            // m = Aᵀk with A = e^g S: dA = dS' + k dmᵀ, dk += A dm, dg = Σ dA ⊙ A, dS = e^g dA.
            let mut d_a = 0.0f32;
            for (i_k, ((ds_row, p_row), &k_i)) in ds
                .chunks_exact_mut(dv)
                .zip(prev.chunks_exact(dv))
                .zip(k_t)
                .enumerate()
            {
                let mut dk_i = 0.0f32;
                for ((ds_ij, &p_ij), &dm_j) in ds_row.iter_mut().zip(p_row).zip(&dm) {
                    let da_ij = *ds_ij + k_i * dm_j;
                    d_a += da_ij * p_ij;
                    dk_i += p_ij * dm_j;
                    *ds_ij = a * da_ij;
                }
                d.k[tt * dk + i_k] += a * dk_i;
            }
            d.g[tt] = a * d_a;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::layers::gated_deltanet::chunked_rule;
    use burn::backend::Autodiff;
    use burn::tensor::Distribution;

    type A = Autodiff<Cpu>;

    /// Values and gradients of every input equal those of burn's chunked form through autodiff:
    /// several chunks plus a ragged tail, padded steps (β = g = 0), from zeros and from a given
    /// state, with a loss that reads the outputs and the final state.
    #[test]
    fn native_rule_has_the_chunked_forms_values_and_gradients() {
        let device = Default::default();
        let (b, h, t, dk, dv) = (2, 3, 150, 16, 8);
        let normal = Distribution::Normal(0.0, 1.0);
        let unit = |x: Tensor<Cpu, 4>| {
            let n = x.clone().powi_scalar(2).sum_dim(3).sqrt();
            x / n
        };
        let q = unit(Tensor::<Cpu, 4>::random([b, h, t, dk], normal, &device)).mul_scalar(0.25);
        let k = unit(Tensor::<Cpu, 4>::random([b, h, t, dk], normal, &device));
        let v = Tensor::<Cpu, 4>::random([b, h, t, dv], normal, &device);
        let real = Tensor::<Cpu, 3>::ones([b, h, t], &device)
            .slice_assign([1..2, 0..h, 140..t], Tensor::zeros([1, h, 10], &device));
        let g = Tensor::<Cpu, 3>::random([b, h, t], Distribution::Uniform(-1.0, 0.0), &device)
            * real.clone();
        let beta =
            Tensor::<Cpu, 3>::random([b, h, t], Distribution::Uniform(0.0, 1.0), &device) * real;
        let s0 = Tensor::<Cpu, 4>::random([b, h, dk, dv], normal, &device);
        let w_o = Tensor::<A, 4>::random([b, h, t, dv], normal, &device);
        let w_s = Tensor::<A, 4>::random([b, h, dk, dv], normal, &device);
        for with_s0 in [false, true] {
            let leaf = |x: &Tensor<Cpu, 4>| Tensor::<A, 4>::from_inner(x.clone()).require_grad();
            let leaf3 = |x: &Tensor<Cpu, 3>| Tensor::<A, 3>::from_inner(x.clone()).require_grad();
            let run = |native: bool| {
                let (q, k, v, g, beta, s) = (
                    leaf(&q),
                    leaf(&k),
                    leaf(&v),
                    leaf3(&g),
                    leaf3(&beta),
                    leaf(&s0),
                );
                let start = with_s0.then(|| s.clone());
                let args = (q.clone(), k.clone(), v.clone(), g.clone(), beta.clone());
                let (o, last) = if native {
                    delta_rule(args.0, args.1, args.2, args.3, args.4, start)
                } else {
                    chunked_rule(args.0, args.1, args.2, args.3, args.4, start)
                };
                let loss = (o.clone() * w_o.clone()).sum() + (last.clone() * w_s.clone()).sum();
                let grads = loss.backward();
                let grad4 = |x: &Tensor<A, 4>| x.grad(&grads).expect("a gradient");
                let grad3 = |x: &Tensor<A, 3>| x.grad(&grads).expect("a gradient");
                let mut values = vec![o.inner(), last.inner(), grad4(&q), grad4(&k), grad4(&v)];
                values.push(grad3(&g).unsqueeze_dim(3));
                values.push(grad3(&beta).unsqueeze_dim(3));
                if with_s0 {
                    values.push(grad4(&s));
                }
                values
            };
            let (native, chunked) = (run(true), run(false));
            let names = ["o", "final state", "dq", "dk", "dv", "dg", "dbeta", "ds0"];
            for ((a, b), name) in native.into_iter().zip(chunked).zip(names) {
                let scale: f32 = b.clone().abs().max().into_scalar();
                let diff: f32 = (a - b).abs().max().into_scalar();
                assert!(
                    diff <= 1e-4 * scale.max(1.0),
                    "{name} (s0 given: {with_s0}): {diff} of {scale}"
                );
            }
        }
    }
}
