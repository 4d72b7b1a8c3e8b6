//! Gated DeltaNet token mixer (Qwen3.5 `linear_attn`): projections, causal depthwise conv + SiLU
//! over `[q | k | v]`, gates `beta = sigmoid(b)` and `g = -exp(A_log) * softplus(a + dt_bias)`,
//! L2-normalised q/k, the gated delta rule (chunked with C = 64 for prefill/training, recurrent
//! for single-token decode; a native loop on the inference CPU backend, see `cpu/delta_rule.rs`), then
//! a gated RMSNorm and `out_proj`.

use super::linear::Linear;
use super::norm::GatedRmsNorm;
use crate::model::cpu::backend::{
    cat, compact, into_array, is_cpu, sigmoid, silu, standard_values, tensor,
};
use crate::model::cpu::deltanet_step;
use crate::model::generation::cache::DeltaNetState;
use crate::model::host::floats;
use crate::model::io::weights::{
    exact_linear, linear, param, visit_linear, HfLayout, HfVisitor, Init, WeightSource,
};
use crate::model::train_ops::autodiff::is_cpu_autodiff;
use crate::model::{cpu, train_ops};
use anyhow::Result;
use burn::module::Param;
use burn::prelude::*;
use burn::tensor::activation::relu;
use std::borrow::Cow;

/// Chunk length of the chunked rule (HF pads the sequence to a multiple of it).
pub const CHUNK: usize = 64;
/// Up to this many new tokens a started layer on the CPU runs the recurrent rule token by token on
/// slices ([`GatedDeltaNet::cpu_steps`]) instead of the chunked rule on tensors, whose few dozen
/// tensor ops cost a 16-token piece more than its products.
const STEPWISE_TOKENS: usize = 16;

#[derive(Module, Debug)]
pub struct GatedDeltaNet<B: Backend> {
    pub in_proj_qkv: Linear<B>,
    pub in_proj_z: Linear<B>,
    pub in_proj_b: Linear<B>,
    pub in_proj_a: Linear<B>,
    /// Depthwise conv weight `[conv_dim, 1, K]`, no bias.
    pub conv1d: Param<Tensor<B, 3>>,
    pub dt_bias: Param<Tensor<B, 1>>,
    pub a_log: Param<Tensor<B, 1>>,
    pub norm: GatedRmsNorm<B>,
    pub out_proj: Linear<B>,
    pub num_k_heads: usize,
    pub num_v_heads: usize,
    pub head_k_dim: usize,
    pub head_v_dim: usize,
}

pub struct DeltaNetDims {
    pub hidden: usize,
    pub num_k_heads: usize,
    pub num_v_heads: usize,
    pub head_k_dim: usize,
    pub head_v_dim: usize,
    pub conv_kernel: usize,
    pub eps: f64,
    pub init_std: f64,
}

/// Numerically safe `ln(1 + e^x)`.
fn softplus<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    relu(x.clone()) + x.abs().neg().exp().log1p()
}

/// `x * rsqrt(sum(x^2) + 1e-6)` over the last dim (FLA's l2norm; eps inside the sqrt).
fn l2norm<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    let s = x.clone().powi_scalar(2).sum_dim(D - 1);
    x * (s + 1e-6).sqrt().recip()
}

impl<B: Backend> GatedDeltaNet<B> {
    pub fn load(
        src: &mut dyn WeightSource,
        prefix: &str,
        d: &DeltaNetDims,
        device: &B::Device,
    ) -> Result<Self> {
        let key_dim = d.num_k_heads * d.head_k_dim;
        let value_dim = d.num_v_heads * d.head_v_dim;
        let conv_dim = 2 * key_dim + value_dim;
        let p = |n: &str| format!("{prefix}.{n}");
        Ok(Self {
            in_proj_qkv: linear(
                src,
                &p("in_proj_qkv"),
                d.hidden,
                conv_dim,
                false,
                d.init_std,
                device,
            )?,
            in_proj_z: linear(
                src,
                &p("in_proj_z"),
                d.hidden,
                value_dim,
                false,
                d.init_std,
                device,
            )?,
            in_proj_b: exact_linear(
                src,
                &p("in_proj_b"),
                d.hidden,
                d.num_v_heads,
                d.init_std,
                device,
            )?,
            in_proj_a: exact_linear(
                src,
                &p("in_proj_a"),
                d.hidden,
                d.num_v_heads,
                d.init_std,
                device,
            )?,
            conv1d: param(
                src,
                &p("conv1d.weight"),
                [conv_dim, 1, d.conv_kernel],
                Init::Normal(d.init_std),
                device,
            )?,
            dt_bias: param(src, &p("dt_bias"), [d.num_v_heads], Init::Ones, device)?,
            // Decay per token is e^(−A·softplus(a + dt_bias)), ≈ e^(−1.3·A) at the start. HF draws A from
            // U(0, 16): nearly every head then forgets within a token or two, which a model with dozens
            // of heads a layer survives. A model trained from scratch here has a few (`tiny`: 4), and
            // with that draw it could not learn to act on a viewer message 20–60 tokens before its
            // answer — not even to memorise 64 training records (3 of 20 first calls right after 300
            // steps; 16 of 20 with this range). So every head starts with a memory of ~10–150 tokens;
            // training shortens it where it should.
            a_log: param(
                src,
                &p("A_log"),
                [d.num_v_heads],
                Init::LogUniform(0.005, 0.1),
                device,
            )?,
            norm: GatedRmsNorm::load(src, &p("norm"), d.head_v_dim, d.eps, device)?,
            out_proj: linear(
                src,
                &p("out_proj"),
                value_dim,
                d.hidden,
                false,
                d.init_std,
                device,
            )?,
            num_k_heads: d.num_k_heads,
            num_v_heads: d.num_v_heads,
            head_k_dim: d.head_k_dim,
            head_v_dim: d.head_v_dim,
        })
    }

    pub fn visit<V: HfVisitor<B>>(&self, prefix: &str, v: &mut V) {
        let p = |n: &str| format!("{prefix}.{n}");
        visit_linear(v, &p("in_proj_qkv"), &self.in_proj_qkv);
        visit_linear(v, &p("in_proj_z"), &self.in_proj_z);
        visit_linear(v, &p("in_proj_b"), &self.in_proj_b);
        visit_linear(v, &p("in_proj_a"), &self.in_proj_a);
        v.visit(&p("conv1d.weight"), &self.conv1d, HfLayout::AsIs);
        v.visit(&p("dt_bias"), &self.dt_bias, HfLayout::AsIs);
        v.visit(&p("A_log"), &self.a_log, HfLayout::AsIs);
        self.norm.visit(&p("norm"), v);
        visit_linear(v, &p("out_proj"), &self.out_proj);
    }

    /// `x: [B, T, H]`. With a state, continues from it and updates it.
    ///
    /// `lens[r]`, when given, is the number of real tokens in row r (a right-padded batch of
    /// prompts of different lengths): the padding must not reach the state, so it gets beta = 0
    /// and g = 0 (the rule then leaves the recurrent state as the last real token left it, the way
    /// [`chunked_rule`] pads internally) and each row's conv history ends at its last real token.
    /// Outputs at padded positions are meaningless.
    pub fn forward(
        &self,
        x: Tensor<B, 3>,
        state: Option<&mut DeltaNetState<B>>,
        lens: Option<&[usize]>,
    ) -> Tensor<B, 3> {
        let [b, t, _] = x.dims();
        let state = match state {
            // A few tokens per row: a decode step, drafts to check (whose per-token states are
            // kept), a piece of a prompt prefilled beside a decode step.
            Some(s)
                if is_cpu::<B>()
                    && lens.is_none()
                    && s.is_started()
                    && (t <= STEPWISE_TOKENS || s.token_states.is_some()) =>
            {
                return self.cpu_steps(x, s);
            }
            s => s,
        };
        let device = x.device();
        let (hk, hv, dk, dv) = (
            self.num_k_heads,
            self.num_v_heads,
            self.head_k_dim,
            self.head_v_dim,
        );
        let key_dim = hk * dk;
        let [conv_dim, _, kernel] = self.conv1d.dims();

        let qkv = self.in_proj_qkv.forward(x.clone());
        let z = self.in_proj_z.forward(x.clone()).reshape([b, t, hv, dv]);
        let beta = sigmoid(self.in_proj_b.forward(x.clone())); // [B, T, Hv]
        let a = self.in_proj_a.forward(x);
        let g = self.a_log.val().exp().neg().unsqueeze::<3>()
            * softplus(a + self.dt_bias.val().unsqueeze::<3>());
        let (beta, g) = match lens {
            Some(lens) => {
                let real = real_positions::<B>(lens, t, &device);
                (beta * real.clone(), g * real)
            }
            None => (beta, g),
        };

        // Causal depthwise conv: y[t] = sum_j w[:, j] * x[t - (K-1) + j], zero (or cached) history.
        let mut state = state;
        let history = kernel - 1;
        let prev = match state.as_mut().and_then(|s| s.conv.take()) {
            Some(c) => c,
            None => Tensor::zeros([b, history, conv_dim], &device),
        };
        let xcat = if history > 0 {
            cat(vec![prev, qkv], 1)
        } else {
            qkv
        };
        if let Some(s) = state.as_mut() {
            if history > 0 {
                // The inputs before each row's next token: `xcat[len .. len + K-1]`, compacted so
                // that the state does not pin the whole prompt's conv input.
                s.conv = Some(compact(match lens {
                    Some(lens) => cat(
                        lens.iter()
                            .enumerate()
                            .map(|(r, &len)| xcat.clone().narrow(0, r, 1).narrow(1, len, history))
                            .collect(),
                        0,
                    ),
                    None => xcat.clone().narrow(1, t, history),
                }));
            }
        }
        let w = self.conv1d.val().reshape([conv_dim, kernel]);
        let mut y =
            xcat.clone().narrow(1, 0, t) * w.clone().narrow(1, 0, 1).reshape([1, 1, conv_dim]);
        for j in 1..kernel {
            y = y + xcat.clone().narrow(1, j, t)
                * w.clone().narrow(1, j, 1).reshape([1, 1, conv_dim]);
        }
        let y = silu(y);

        let r = hv / hk;
        // v-head j reads k-head j / r (repeat_interleave).
        let expand_heads = |x: Tensor<B, 3>| -> Tensor<B, 4> {
            x.reshape([b, t, hk, 1, dk])
                .expand([b, t, hk, r, dk])
                .reshape([b, t, hv, dk])
                .swap_dims(1, 2)
        };
        let q = l2norm(expand_heads(y.clone().narrow(2, 0, key_dim)))
            .mul_scalar((dk as f64).powf(-0.5));
        let k = l2norm(expand_heads(y.clone().narrow(2, key_dim, key_dim)));
        let v = y
            .narrow(2, 2 * key_dim, hv * dv)
            .reshape([b, t, hv, dv])
            .swap_dims(1, 2);
        let beta = beta.swap_dims(1, 2); // [B, Hv, T]
        let g = g.swap_dims(1, 2);

        let initial = state.as_mut().and_then(|s| s.recurrent.take());
        let (o, last) = match initial {
            s0 if is_cpu::<B>() => cpu::delta_rule::delta_rule(q, k, v, g, beta, s0),
            s0 if is_cpu_autodiff::<B>() && t > 0 => {
                train_ops::delta_rule::delta_rule(q, k, v, g, beta, s0)
            }
            Some(s0) if t == 1 => recurrent_rule(q, k, v, g, beta, s0),
            s0 => chunked_rule(q, k, v, g, beta, s0),
        };
        if let Some(s) = state {
            s.recurrent = Some(last);
        }
        let o = self.norm.forward(o.swap_dims(1, 2), z); // [B, T, Hv, dv]
        self.out_proj.forward(o.reshape([b, t, hv * dv]))
    }

    /// [`Self::forward`] against a started state, token by token on slices: the projections of
    /// all `B·T` positions through [`Linear::forward_rows`], everything between them in the CPU
    /// kernel ([`deltanet_step`]). When the state is armed (`token_states`), the state after each
    /// token but the last is kept there.
    fn cpu_steps(&self, x: Tensor<B, 3>, state: &mut DeltaNetState<B>) -> Tensor<B, 3> {
        let [b, t, hidden] = x.dims();
        let x = standard_values(x);
        let [qkv, z, beta, a] = [
            &self.in_proj_qkv,
            &self.in_proj_z,
            &self.in_proj_b,
            &self.in_proj_a,
        ]
        .map(|p| p.forward_rows(&x, b * t));
        let (Some(conv), Some(recurrent)) = (state.conv.take(), state.recurrent.take()) else {
            unreachable!("the caller checked that the state is started")
        };
        let (conv_shape, recurrent_shape) = (conv.dims(), recurrent.dims());
        let (mut conv, mut recurrent) = (standard_values(conv), standard_values(recurrent));
        let params = [
            into_array(self.conv1d.val()),
            into_array(self.dt_bias.val()),
            into_array(self.a_log.val()),
            into_array(self.norm.weight.val()),
        ];
        let [conv_w, dt_bias, a_log, norm] = params
            .each_ref()
            .map(|p| p.as_slice().expect("parameters are in standard layout"));
        let layer = deltanet_step::Layer {
            conv: conv_w,
            dt_bias,
            a_log,
            norm,
            eps: self.norm.eps as f32,
            num_k_heads: self.num_k_heads,
            num_v_heads: self.num_v_heads,
            head_k_dim: self.head_k_dim,
            head_v_dim: self.head_v_dim,
        };
        let width = self.num_v_heads * self.head_v_dim;
        let mut o = vec![0f32; b * t * width];
        for j in 0..t {
            let [qkv, z, beta, a] = [&qkv, &z, &beta, &a].map(|p| token_of_rows(p, b, t, j));
            let projections = deltanet_step::Projections {
                qkv: &qkv,
                z: &z,
                b: &beta,
                a: &a,
            };
            let oj = layer.step(&projections, &mut conv, &mut recurrent);
            for (r, oj) in oj.chunks_exact(width).enumerate() {
                o[(r * t + j) * width..][..width].copy_from_slice(oj);
            }
            if let Some(kept) = state.token_states.as_mut().filter(|_| j + 1 < t) {
                kept.push((
                    tensor(conv.clone(), conv_shape),
                    tensor(recurrent.clone(), recurrent_shape),
                ));
            }
        }
        state.conv = Some(tensor(conv, conv_shape));
        state.recurrent = Some(tensor(recurrent, recurrent_shape));
        tensor(self.out_proj.forward_rows(&o, b * t), [b, t, hidden])
    }
}

/// Token `j` of each of `rows` rows from values laid out `[rows, t, width]`: the slice itself when
/// `t` is 1, else a gathered copy.
fn token_of_rows(all: &[f32], rows: usize, t: usize, j: usize) -> Cow<'_, [f32]> {
    if t == 1 {
        return Cow::Borrowed(all);
    }
    let width = all.len() / (rows * t);
    let row = |r: usize| &all[(r * t + j) * width..][..width];
    Cow::Owned((0..rows).flat_map(row).copied().collect())
}

/// `[B, T, 1]`: 1 at the first `lens[r]` positions of row r, 0 on its padding.
fn real_positions<B: Backend>(lens: &[usize], t: usize, device: &B::Device) -> Tensor<B, 3> {
    let data: Vec<f32> = lens
        .iter()
        .flat_map(|&len| (0..t).map(move |i| if i < len { 1.0 } else { 0.0 }))
        .collect();
    floats(data, [lens.len(), t, 1], device)
}

/// The delta rule one token at a time. `q, k: [B, Hv, T, dk]`, `v: [B, Hv, T, dv]`,
/// `g, beta: [B, Hv, T]`, state `[B, Hv, dk, dv]`.
pub fn recurrent_rule<B: Backend>(
    q: Tensor<B, 4>,
    k: Tensor<B, 4>,
    v: Tensor<B, 4>,
    g: Tensor<B, 3>,
    beta: Tensor<B, 3>,
    s0: Tensor<B, 4>,
) -> (Tensor<B, 4>, Tensor<B, 4>) {
    let t = q.dims()[2];
    let mut s = s0;
    let mut outs = Vec::with_capacity(t);
    for i in 0..t {
        let q_t = q.clone().narrow(2, i, 1);
        let k_t = k.clone().narrow(2, i, 1);
        let v_t = v.clone().narrow(2, i, 1);
        let decay = g.clone().narrow(2, i, 1).exp().unsqueeze_dim::<4>(3);
        let beta_t = beta.clone().narrow(2, i, 1).unsqueeze_dim::<4>(3);
        s = s * decay;
        let kv_mem = k_t.clone().matmul(s.clone()); // [B, Hv, 1, dv]
        let delta = (v_t - kv_mem) * beta_t;
        s = s + k_t.swap_dims(2, 3).matmul(delta);
        outs.push(q_t.matmul(s.clone()));
    }
    (Tensor::cat(outs, 2), s)
}

/// The chunked (WY / UT-transform) form of the same rule, as in HF's
/// `torch_chunk_gated_delta_rule`; the sequence is zero-padded to a multiple of [`CHUNK`]
/// (padded steps have beta = 0, g = 0 and leave the state untouched).
pub fn chunked_rule<B: Backend>(
    q: Tensor<B, 4>,
    k: Tensor<B, 4>,
    v: Tensor<B, 4>,
    g: Tensor<B, 3>,
    beta: Tensor<B, 3>,
    s0: Option<Tensor<B, 4>>,
) -> (Tensor<B, 4>, Tensor<B, 4>) {
    let [b, h, t, dk] = q.dims();
    let dv = v.dims()[3];
    let device = q.device();
    let c = CHUNK;
    let pad = (c - t % c) % c;
    let n = (t + pad) / c;
    let pad4 = |x: Tensor<B, 4>| -> Tensor<B, 4> {
        if pad == 0 {
            return x;
        }
        let [b, h, _, d] = x.dims();
        Tensor::cat(vec![x, Tensor::zeros([b, h, pad, d], &device)], 2)
    };
    let pad3 = |x: Tensor<B, 3>| -> Tensor<B, 3> {
        if pad == 0 {
            return x;
        }
        Tensor::cat(vec![x, Tensor::zeros([b, h, pad], &device)], 2)
    };
    let (q, k, v, g, beta) = (pad4(q), pad4(k), pad4(v), pad3(g), pad3(beta));
    let beta4 = beta.unsqueeze_dim::<4>(3);
    let kb = (k.clone() * beta4.clone()).reshape([b, h, n, c, dk]);
    let vb = (v * beta4).reshape([b, h, n, c, dv]);
    let q = q.reshape([b, h, n, c, dk]);
    let k = k.reshape([b, h, n, c, dk]);
    let cum = g.reshape([b, h, n, c]).cumsum(3);

    // decay[i, j] = exp(cum_i - cum_j) for j <= i, else 0 (masked before exp to avoid overflow).
    let upper = constant_mask(
        c,
        &device,
        |i, j| if j > i { f32::NEG_INFINITY } else { 0.0 },
    );
    let decay =
        (cum.clone().unsqueeze_dim::<5>(4) - cum.clone().unsqueeze_dim::<5>(3) + upper).exp();
    let kt = k.clone().swap_dims(3, 4);
    let a = (kb.clone().matmul(kt.clone()) * decay.clone()).tril(-1);
    let intra = q.clone().matmul(kt) * decay;

    // (I + A)^-1 for unit lower-triangular I + A by recursive block doubling: with Inv the
    // inverse of the s-block-diagonal part, Inv' = Inv - Inv N Inv where N holds the blocks that
    // join neighbouring s-blocks into 2s-blocks. Stable like a triangular solve; log2(C) steps.
    let mut inv = Tensor::<B, 2>::eye(c, &device)
        .unsqueeze::<5>()
        .expand([b, h, n, c, c]);
    let mut s = 1;
    while s < c {
        let join = constant_mask(c, &device, |i, j| {
            if i / (2 * s) == j / (2 * s) && i / s != j / s {
                1.0
            } else {
                0.0
            }
        });
        let nmat = a.clone() * join;
        inv = inv.clone() - inv.clone().matmul(nmat).matmul(inv);
        s *= 2;
    }
    let exp_cum = cum.clone().exp().unsqueeze_dim::<5>(4);
    let u = inv.clone().matmul(vb);
    let w = inv.matmul(kb * exp_cum.clone());
    let qd = q * exp_cum;
    let last = cum.clone().narrow(3, c - 1, 1); // [B, H, n, 1]
    let kd = k * (last.clone() - cum).exp().unsqueeze_dim::<5>(4);
    let chunk_decay = last.exp().unsqueeze_dim::<5>(4); // [B, H, n, 1, 1]

    let mut state = s0.unwrap_or_else(|| Tensor::zeros([b, h, dk, dv], &device));
    let mut outs = Vec::with_capacity(n);
    let at = |x: &Tensor<B, 5>, i: usize| -> Tensor<B, 4> {
        x.clone().narrow(2, i, 1).squeeze_dim::<4>(2)
    };
    for i in 0..n {
        let v_new = at(&u, i) - at(&w, i).matmul(state.clone());
        outs.push(at(&qd, i).matmul(state.clone()) + at(&intra, i).matmul(v_new.clone()));
        state = state * at(&chunk_decay, i) + at(&kd, i).swap_dims(2, 3).matmul(v_new);
    }
    let o = Tensor::cat(outs, 2);
    let o = if pad > 0 { o.narrow(2, 0, t) } else { o };
    (o, state)
}

/// A constant `[1, 1, 1, C, C]` tensor with entries `f(i, j)`.
fn constant_mask<B: Backend>(
    c: usize,
    device: &B::Device,
    f: impl Fn(usize, usize) -> f32,
) -> Tensor<B, 5> {
    let data: Vec<f32> = (0..c * c).map(|x| f(x / c, x % c)).collect();
    floats(data, [1, 1, 1, c, c], device)
}
