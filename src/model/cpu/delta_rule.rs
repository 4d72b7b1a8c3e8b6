//! The gated delta rule as a native loop on the inference CPU backend (`NdArray<f32>` without
//! autodiff), for prefill and decode alike.
//!
//! The chunked form in [`crate::model::layers::gated_deltanet::chunked_rule`] turns the rule into large matrix
//! products, which is what a GPU and autodiff want; on a CPU it costs more than the rule itself (the
//! (I + A)⁻¹ of every chunk alone is a dozen 64×64×64 products per head) and runs as hundreds of
//! small burn ops. The recurrent form does `4·dk·dv` multiply-adds per token and head on a state that
//! stays in L1, so here it runs token by token, (row, head) pairs dealt over [`spin_team`], compiled for
//! AVX-512 or AVX2 when the machine has them. The order of every sum is fixed (over `dk`, one
//! token after another), so the result does not depend on the SIMD width or the thread count.

use super::backend::{standard_values as values, tensor};
use super::spin_team;
use burn::prelude::*;

/// `q, k: [B, H, T, dk]`, `v: [B, H, T, dv]`, `g, beta: [B, H, T]`, `s0: [B, H, dk, dv]` (zeros when
/// `None`) → the outputs `[B, H, T, dv]` and the final state. Only for the CPU backend
/// ([`super::backend::is_cpu`]); the same math as [`crate::model::layers::gated_deltanet::recurrent_rule`].
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
    let (q, k, v, g, beta) = (values(q), values(k), values(v), values(g), values(beta));
    let mut state = match s0 {
        Some(s) => values(s),
        None => vec![0.0; b * h * dk * dv],
    };
    let mut out = vec![0.0; b * h * t * dv];
    if t == 0 {
        return (tensor(out, [b, h, t, dv]), tensor(state, [b, h, dk, dv]));
    }
    let mut pairs: Vec<_> = out
        .chunks_mut(t * dv)
        .zip(state.chunks_mut(dk * dv))
        .collect();
    spin_team::for_each(&mut pairs, &|p, (o, s)| {
        Head::of_pair(p, t, dk, dv, [&q, &k, &v, &g, &beta]).run(s, o);
    });
    (tensor(out, [b, h, t, dv]), tensor(state, [b, h, dk, dv]))
}

/// One (row, head) pair's inputs, time-major.
pub(in crate::model) struct Head<'a> {
    pub dk: usize,
    pub q: &'a [f32],
    pub k: &'a [f32],
    pub v: &'a [f32],
    pub g: &'a [f32],
    pub beta: &'a [f32],
}

impl<'a> Head<'a> {
    /// Pair `p`'s inputs from `[B, H, T, ·]` buffers in standard layout.
    pub fn of_pair(p: usize, t: usize, dk: usize, dv: usize, x: [&'a [f32]; 5]) -> Head<'a> {
        let [q, k, v, g, beta] = x;
        Head {
            dk,
            q: &q[p * t * dk..(p + 1) * t * dk],
            k: &k[p * t * dk..(p + 1) * t * dk],
            v: &v[p * t * dv..(p + 1) * t * dv],
            g: &g[p * t..(p + 1) * t],
            beta: &beta[p * t..(p + 1) * t],
        }
    }

    /// The inputs of tokens `range` only.
    pub fn tokens(&self, range: std::ops::Range<usize>) -> Head<'a> {
        let (dk, dv) = (self.dk, self.v.len() / self.g.len().max(1));
        Head {
            dk,
            q: &self.q[range.start * dk..range.end * dk],
            k: &self.k[range.start * dk..range.end * dk],
            v: &self.v[range.start * dv..range.end * dv],
            g: &self.g[range.clone()],
            beta: &self.beta[range],
        }
    }

    /// Runs the rule over every token, updating the state `s: [dk, dv]` and writing `o: [T, dv]`,
    /// with the widest vector instructions the machine has.
    pub fn run(&self, s: &mut [f32], o: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f") {
                // SAFETY: the feature was detected at run time.
                return unsafe { self.run_avx512(s, o) };
            }
            if is_x86_feature_detected!("avx2") {
                // SAFETY: as above.
                return unsafe { self.run_avx2(s, o) };
            }
        }
        self.rule(s, o)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn run_avx512(&self, s: &mut [f32], o: &mut [f32]) {
        self.rule(s, o)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn run_avx2(&self, s: &mut [f32], o: &mut [f32]) {
        self.rule(s, o)
    }

    /// Per token: `S ← e^g · S`, `δ = β (v − Sᵀk)`, `S ← S + k δᵀ`, `o = Sᵀq` (the state is
    /// `[dk, dv]`, so every inner loop runs along a contiguous `dv` row).
    #[inline(always)]
    fn rule(&self, s: &mut [f32], o: &mut [f32]) {
        let dk = self.dk;
        let dv = s.len() / dk;
        let mut delta = vec![0.0f32; dv];
        for (t, o_t) in o.chunks_exact_mut(dv).enumerate() {
            let (q_t, k_t) = (&self.q[t * dk..][..dk], &self.k[t * dk..][..dk]);
            let v_t = &self.v[t * dv..][..dv];
            let decay = self.g[t].exp();
            delta.fill(0.0);
            for (row, &k_i) in s.chunks_exact_mut(dv).zip(k_t) {
                for (s_ij, kv) in row.iter_mut().zip(delta.iter_mut()) {
                    *s_ij *= decay;
                    *kv += k_i * *s_ij;
                }
            }
            for (d, &v_j) in delta.iter_mut().zip(v_t) {
                *d = (v_j - *d) * self.beta[t];
            }
            o_t.fill(0.0);
            for ((row, &k_i), &q_i) in s.chunks_exact_mut(dv).zip(k_t).zip(q_t) {
                for ((s_ij, &d_j), o_j) in row.iter_mut().zip(&delta).zip(o_t.iter_mut()) {
                    *s_ij += k_i * d_j;
                    *o_j += q_i * *s_ij;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::layers::gated_deltanet::{chunked_rule, recurrent_rule};
    use burn::backend::NdArray;
    use burn::tensor::Distribution;

    type C = NdArray<f32>;

    fn max_abs_diff<const D: usize>(a: Tensor<C, D>, b: Tensor<C, D>) -> f32 {
        (a - b).abs().max().into_scalar()
    }

    /// The native loop equals burn's recurrent and chunked forms: from a zero and a given state,
    /// over several chunks plus a ragged tail, with padded steps (beta = g = 0) that must leave the
    /// state alone.
    #[test]
    fn native_rule_equals_burns_recurrent_and_chunked_forms() {
        let device = Default::default();
        let (b, h, t, dk, dv) = (2, 3, 150, 16, 8);
        let normal = Distribution::Normal(0.0, 1.0);
        let unit = |x: Tensor<C, 4>| {
            let n = x.clone().powi_scalar(2).sum_dim(3).sqrt();
            x / n
        };
        let q = unit(Tensor::<C, 4>::random([b, h, t, dk], normal, &device));
        let k = unit(Tensor::<C, 4>::random([b, h, t, dk], normal, &device));
        let v = Tensor::<C, 4>::random([b, h, t, dv], normal, &device);
        let real = Tensor::<C, 3>::ones([b, h, t], &device)
            .slice_assign([1..2, 0..h, 140..t], Tensor::zeros([1, h, 10], &device));
        let g = Tensor::<C, 3>::random([b, h, t], Distribution::Uniform(-1.0, 0.0), &device)
            * real.clone();
        let beta =
            Tensor::<C, 3>::random([b, h, t], Distribution::Uniform(0.0, 1.0), &device) * real;
        let s0 = Tensor::<C, 4>::random([b, h, dk, dv], normal, &device);
        for start in [None, Some(s0.clone())] {
            let args = || (q.clone(), k.clone(), v.clone(), g.clone(), beta.clone());
            let (q1, k1, v1, g1, b1) = args();
            let (o, s) = delta_rule(q1, k1, v1, g1, b1, start.clone());
            let (q2, k2, v2, g2, b2) = args();
            let zero = Tensor::zeros([b, h, dk, dv], &device);
            let (o_rec, s_rec) = recurrent_rule(q2, k2, v2, g2, b2, start.clone().unwrap_or(zero));
            let (q3, k3, v3, g3, b3) = args();
            let (o_chunk, s_chunk) = chunked_rule(q3, k3, v3, g3, b3, start.clone());
            assert!(max_abs_diff(o.clone(), o_rec) < 1e-5);
            assert!(max_abs_diff(s.clone(), s_rec) < 1e-5);
            assert!(max_abs_diff(o.clone(), o_chunk) < 1e-4);
            assert!(max_abs_diff(s.clone(), s_chunk) < 1e-4);
            // Padded steps leave the state as the last real token left it.
            let (q4, k4, v4, g4, b4) = args();
            let narrow3 = |x: Tensor<C, 3>| x.narrow(0, 1, 1).narrow(2, 0, 140);
            let narrow4 = |x: Tensor<C, 4>| x.narrow(0, 1, 1).narrow(2, 0, 140);
            let (_, s_real) = delta_rule(
                narrow4(q4),
                narrow4(k4),
                narrow4(v4),
                narrow3(g4),
                narrow3(b4),
                start.map(|s| s.narrow(0, 1, 1)),
            );
            assert_eq!(
                s.narrow(0, 1, 1).into_data().to_vec::<f32>().unwrap(),
                s_real.into_data().to_vec::<f32>().unwrap()
            );
        }
    }
}
