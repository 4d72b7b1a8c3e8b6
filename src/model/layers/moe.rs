//! Feed-forward blocks: dense SwiGLU, and the sparse MoE block (softmax router, top-k, optional
//! renormalisation, SwiGLU experts, optional sigmoid-gated shared expert), plus the
//! Switch-Transformer load-balancing loss as transformers computes it.

use super::linear::Linear;
use super::weight::Weight;
use crate::model::cpu::backend::{
    cat, is_cpu, logistic, map_values, sigmoid, silu, silu_of, softmax_last, softmax_row,
    standard_values, tensor,
};
use crate::model::host::{floats, ints};
use crate::model::io::weights::{
    exact_linear, linear, visit_linear, HfLayout, HfVisitor, Init, WeightSource,
};
use anyhow::Result;
use burn::prelude::*;
use burn::tensor::IndexingUpdateOp;

#[derive(Module, Debug)]
pub struct SwiGlu<B: Backend> {
    pub gate_proj: Linear<B>,
    pub up_proj: Linear<B>,
    pub down_proj: Linear<B>,
}

impl<B: Backend> SwiGlu<B> {
    pub fn load(
        src: &mut dyn WeightSource,
        prefix: &str,
        hidden: usize,
        inter: usize,
        std: f64,
        device: &B::Device,
    ) -> Result<Self> {
        Ok(Self {
            gate_proj: linear(
                src,
                &format!("{prefix}.gate_proj"),
                hidden,
                inter,
                false,
                std,
                device,
            )?,
            up_proj: linear(
                src,
                &format!("{prefix}.up_proj"),
                hidden,
                inter,
                false,
                std,
                device,
            )?,
            down_proj: linear(
                src,
                &format!("{prefix}.down_proj"),
                inter,
                hidden,
                false,
                std,
                device,
            )?,
        })
    }

    pub fn forward<const D: usize>(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        self.down_proj
            .forward(silu(self.gate_proj.forward(x.clone())) * self.up_proj.forward(x))
    }

    /// [`Self::forward`] of `m` rows on slices (CPU decode steps, see [`Weight::matmul_rows`]).
    fn forward_rows(&self, x: &[f32], m: usize) -> Vec<f32> {
        let gate = self.gate_proj.forward_rows(x, m);
        let up = self.up_proj.forward_rows(x, m);
        self.down_proj.forward_rows(&swiglu(&gate, &up), m)
    }

    pub fn visit<V: HfVisitor<B>>(&self, prefix: &str, v: &mut V) {
        visit_linear(v, &format!("{prefix}.gate_proj"), &self.gate_proj);
        visit_linear(v, &format!("{prefix}.up_proj"), &self.up_proj);
        visit_linear(v, &format!("{prefix}.down_proj"), &self.down_proj);
    }
}

/// One routed expert, stored per expert so that unused experts cost nothing in backward.
#[derive(Module, Debug)]
pub struct Expert<B: Backend> {
    /// `[H, 2I]`: outputs `..I` gate, `I..` up (HF `gate_up_proj[e]`).
    pub gate_up: Weight<B>,
    /// `[I, H]`.
    pub down: Weight<B>,
}

impl<B: Backend> Expert<B> {
    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let i = self.down.dims()[0];
        let h = self.gate_up.matmul(x);
        self.down
            .matmul(silu(h.clone().narrow(1, 0, i)) * h.narrow(1, i, i))
    }

    /// [`Self::forward`] of `m` rows on slices.
    fn forward_rows(&self, x: &[f32], m: usize) -> Vec<f32> {
        let i = self.down.dims()[0];
        let h = self.gate_up.matmul_rows(x, m);
        let act: Vec<f32> = h
            .chunks_exact(2 * i)
            .flat_map(|row| swiglu(&row[..i], &row[i..]))
            .collect();
        self.down.matmul_rows(&act, m)
    }
}

/// `silu(gate) · up`, elementwise.
fn swiglu(gate: &[f32], up: &[f32]) -> Vec<f32> {
    let mut act = gate.to_vec();
    map_values(&mut act, silu_of);
    act.iter_mut().zip(up).for_each(|(a, u)| *a *= u);
    act
}

/// Tokens up to which the CPU backend runs the MoE block on slices ([`SparseMoe::forward_rows_cpu`]):
/// decode steps, a decode step with a prompt piece beside it, short prompts. Each expert then gets
/// a few rows, which its products run as fast on slices, without the tensor ops around them (a
/// 32- or 64-token prefill of `small` 1.08–1.22× faster than the gather/scatter path, 2026-12-06).
const SLICE_ROWS: usize = 64;

#[derive(Module, Debug)]
pub struct SparseMoe<B: Backend> {
    /// Router `mlp.gate`, `[H, E]`, no bias.
    pub gate: Linear<B>,
    pub experts: Vec<Expert<B>>,
    pub shared_expert: Option<SwiGlu<B>>,
    pub shared_expert_gate: Option<Linear<B>>,
    pub top_k: usize,
    pub norm_topk_prob: bool,
}

pub struct MoeDims {
    pub hidden: usize,
    pub num_experts: usize,
    pub top_k: usize,
    pub inter: usize,
    pub shared_inter: usize,
    pub norm_topk_prob: bool,
    pub init_std: f64,
}

impl<B: Backend> SparseMoe<B> {
    /// Loads `{prefix}.gate`, fused `{prefix}.experts.gate_up_proj` `[E, 2I, H]` /
    /// `{prefix}.experts.down_proj` `[E, H, I]` (the checkpoint source assembles them from
    /// per-expert keys when needed), and the shared expert when `shared_inter > 0`.
    pub fn load(
        src: &mut dyn WeightSource,
        prefix: &str,
        d: &MoeDims,
        device: &B::Device,
    ) -> Result<Self> {
        let (e, h, i) = (d.num_experts, d.hidden, d.inter);
        // Fused HF tensors, split per expert and stored as the source says (see `Weight::new`).
        let gate_up = src.get(
            &format!("{prefix}.experts.gate_up_proj"),
            &[e, 2 * i, h],
            Init::Normal(d.init_std),
        )?;
        let down = src.get(
            &format!("{prefix}.experts.down_proj"),
            &[e, h, i],
            Init::Normal(d.init_std),
        )?;
        let dtype = src.dtype();
        let experts = gate_up
            .chunks_exact(2 * i * h)
            .zip(down.chunks_exact(h * i))
            .map(|(gu, dn)| {
                Ok(Expert {
                    gate_up: Weight::new(gu, 2 * i, h, dtype, device)?,
                    down: Weight::new(dn, h, i, dtype, device)?,
                })
            })
            .collect::<Result<_>>()?;
        let (shared_expert, shared_expert_gate) = if d.shared_inter > 0 {
            (
                Some(SwiGlu::load(
                    src,
                    &format!("{prefix}.shared_expert"),
                    h,
                    d.shared_inter,
                    d.init_std,
                    device,
                )?),
                Some(exact_linear(
                    src,
                    &format!("{prefix}.shared_expert_gate"),
                    h,
                    1,
                    d.init_std,
                    device,
                )?),
            )
        } else {
            (None, None)
        };
        Ok(Self {
            gate: exact_linear(src, &format!("{prefix}.gate"), h, e, d.init_std, device)?,
            experts,
            shared_expert,
            shared_expert_gate,
            top_k: d.top_k,
            norm_topk_prob: d.norm_topk_prob,
        })
    }

    /// `x: [N, H]` → (`[N, H]`, raw router logits `[N, E]`).
    pub fn forward(&self, x: Tensor<B, 2>) -> (Tensor<B, 2>, Tensor<B, 2>) {
        let [n, h] = x.dims();
        if is_cpu::<B>() && n <= SLICE_ROWS {
            return self.forward_rows_cpu(x);
        }
        let e = self.experts.len();
        let k = self.top_k;
        let device = x.device();
        let logits = self.gate.forward(x.clone());
        let probs = softmax_last(logits.clone());
        // Expert choice is discrete: decide it on the host, then gather the (differentiable)
        // probabilities of the chosen experts.
        let selected = top_k_rows(&probs_to_vec(&probs), e, k);
        let flat: Vec<i64> = selected
            .iter()
            .enumerate()
            .map(|(j, &ex)| ((j / k) * e + ex) as i64)
            .collect();
        let mut w = probs
            .reshape([n * e])
            .select(0, ints(flat, [n * k], &device))
            .reshape([n, k]);
        if self.norm_topk_prob {
            w = w.clone() / w.sum_dim(1);
        }
        let w = w.reshape([n * k]);

        // The (token, choice) slots sorted by expert, sent to the device once: one gather of the
        // rows, each expert's products on its contiguous run of them, one scatter-add back. No
        // upload or scatter per expert, which on a GPU cost more than the experts' products.
        let mut order: Vec<usize> = (0..n * k).collect();
        order.sort_by_key(|&j| selected[j]);
        let slots: Vec<i64> = order.iter().map(|&j| j as i64).collect();
        let rows = ints::<B, 1>(
            slots.iter().map(|&j| j / k as i64).collect(),
            [n * k],
            &device,
        );
        let slots = ints::<B, 1>(slots, [n * k], &device);
        let xs = x.clone().select(0, rows.clone());
        let mut counts = vec![0; e];
        for &ex in &selected {
            counts[ex] += 1;
        }
        let mut start = 0;
        let mut outputs = Vec::new();
        for (expert, &m) in self.experts.iter().zip(&counts) {
            if m > 0 {
                outputs.push(expert.forward(xs.clone().narrow(0, start, m)));
            }
            start += m;
        }
        let y = cat(outputs, 0) * w.select(0, slots).unsqueeze_dim(1);
        let mut out =
            Tensor::<B, 2>::zeros([n, h], &device).select_assign(0, rows, y, IndexingUpdateOp::Add);
        if let (Some(se), Some(sg)) = (&self.shared_expert, &self.shared_expert_gate) {
            out = out + sigmoid(sg.forward(x.clone())) * se.forward(x);
        }
        (out, logits)
    }

    /// [`Self::forward`] of a decode step's few rows on the CPU backend, on slices: the same routing
    /// and sums without the two dozen small tensor ops around the products (gathers, a scatter,
    /// concatenations), which cost a `small` decode step about a third of what its experts'
    /// products did.
    fn forward_rows_cpu(&self, x: Tensor<B, 2>) -> (Tensor<B, 2>, Tensor<B, 2>) {
        let [n, h] = x.dims();
        let (e, k) = (self.experts.len(), self.top_k);
        let x = standard_values(x);
        let logits = self.gate.forward_rows(&x, n);
        let mut probs = logits.clone();
        for row in probs.chunks_exact_mut(e) {
            softmax_row(row);
        }
        let selected = top_k_rows(&probs, e, k);
        let mut out = vec![0f32; n * h];
        for (ex, expert) in self.experts.iter().enumerate() {
            // The rows routed to this expert, with their routing weights.
            let routed: Vec<(usize, f32)> = selected
                .chunks_exact(k)
                .enumerate()
                .filter(|(_, chosen)| chosen.contains(&ex))
                .map(|(r, chosen)| {
                    let p = &probs[r * e..(r + 1) * e];
                    let total: f32 = chosen.iter().map(|&c| p[c]).sum();
                    (
                        r,
                        if self.norm_topk_prob {
                            p[ex] / total
                        } else {
                            p[ex]
                        },
                    )
                })
                .collect();
            if routed.is_empty() {
                continue;
            }
            let rows: Vec<f32> = routed
                .iter()
                .flat_map(|&(r, _)| &x[r * h..(r + 1) * h])
                .copied()
                .collect();
            let y = expert.forward_rows(&rows, routed.len());
            for (&(r, w), y) in routed.iter().zip(y.chunks_exact(h)) {
                for (o, y) in out[r * h..(r + 1) * h].iter_mut().zip(y) {
                    *o += w * y;
                }
            }
        }
        if let (Some(se), Some(sg)) = (&self.shared_expert, &self.shared_expert_gate) {
            let gate = sg.forward_rows(&x, n);
            let y = se.forward_rows(&x, n);
            for ((o, y), g) in out.chunks_exact_mut(h).zip(y.chunks_exact(h)).zip(gate) {
                let g = logistic(g);
                o.iter_mut().zip(y).for_each(|(o, y)| *o += g * y);
            }
        }
        (tensor(out, [n, h]), tensor(logits, [n, e]))
    }

    pub fn visit<V: HfVisitor<B>>(&self, prefix: &str, v: &mut V) {
        visit_linear(v, &format!("{prefix}.gate"), &self.gate);
        for (i, ex) in self.experts.iter().enumerate() {
            let p = format!("{prefix}.experts.{i}");
            ex.gate_up.visit(v, &p, HfLayout::ExpertGateUp);
            ex.down.visit(v, &p, HfLayout::ExpertDown);
        }
        if let (Some(se), Some(sg)) = (&self.shared_expert, &self.shared_expert_gate) {
            se.visit(&format!("{prefix}.shared_expert"), v);
            visit_linear(v, &format!("{prefix}.shared_expert_gate"), sg);
        }
    }
}

/// The feed-forward half of a decoder layer.
#[derive(Module, Debug)]
pub enum Ffn<B: Backend> {
    Dense(SwiGlu<B>),
    Sparse(SparseMoe<B>),
}

impl<B: Backend> Ffn<B> {
    /// `x: [B, T, H]`; returns the output and, for sparse blocks, the router logits `[B*T, E]`.
    pub fn forward(&self, x: Tensor<B, 3>) -> (Tensor<B, 3>, Option<Tensor<B, 2>>) {
        match self {
            Ffn::Dense(m) => (m.forward(x), None),
            Ffn::Sparse(m) => {
                let [b, t, h] = x.dims();
                let (y, logits) = m.forward(x.reshape([b * t, h]));
                (y.reshape([b, t, h]), Some(logits))
            }
        }
    }

    pub fn visit<V: HfVisitor<B>>(&self, prefix: &str, v: &mut V) {
        match self {
            Ffn::Dense(m) => m.visit(prefix, v),
            Ffn::Sparse(m) => m.visit(prefix, v),
        }
    }
}

fn probs_to_vec<B: Backend>(p: &Tensor<B, 2>) -> Vec<f32> {
    p.clone()
        .into_data()
        .convert::<f32>()
        .into_vec::<f32>()
        .expect("router probabilities are f32")
}

/// Indices of the `k` largest values of each row (descending; ties go to the lower index).
pub fn top_k_rows(values: &[f32], cols: usize, k: usize) -> Vec<usize> {
    let mut out = Vec::with_capacity(values.len() / cols.max(1) * k);
    let mut idx: Vec<usize> = Vec::with_capacity(cols);
    for row in values.chunks(cols) {
        idx.clear();
        idx.extend(0..cols);
        idx.sort_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
        out.extend_from_slice(&idx[..k]);
    }
    out
}

/// transformers' `load_balancing_loss_func`: `E * sum_e f_e * P_e` over all layers' rows, where
/// `f_e` is the fraction of top-k assignments to expert e and `P_e` its mean router probability.
/// Gradients flow through `P` only (the counts are discrete). Returns a `[1]` tensor.
pub fn load_balancing_loss<B: Backend>(
    router_logits: &[Tensor<B, 2>],
    num_experts: usize,
    top_k: usize,
) -> Option<Tensor<B, 1>> {
    let first = router_logits.first()?;
    let device = first.device();
    let mut counts = vec![0f32; num_experts];
    let mut prob_sum = Tensor::<B, 1>::zeros([num_experts], &device);
    let mut rows = 0usize;
    for logits in router_logits {
        let probs = softmax_last(logits.clone());
        for ex in top_k_rows(&probs_to_vec(&probs), num_experts, top_k) {
            counts[ex] += 1.0;
        }
        rows += logits.dims()[0];
        prob_sum = prob_sum + probs.sum_dim(0).reshape([num_experts]);
    }
    let r = rows as f32;
    let f: Vec<f32> = counts.iter().map(|c| c / r).collect();
    let f = floats::<B, 1>(f, [num_experts], &device);
    Some(
        (f * prob_sum.div_scalar(r))
            .sum()
            .mul_scalar(num_experts as f64),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::io::weights::RandomInit;
    use burn::backend::{Autodiff, NdArray};
    use burn::tensor::Distribution;

    type Cpu = NdArray<f32>;
    type Reference = Autodiff<NdArray<f32>>; // burn's ops throughout

    fn block<B: Backend>(norm_topk_prob: bool, shared_inter: usize) -> SparseMoe<B> {
        let dims = MoeDims {
            hidden: 24,
            num_experts: 6,
            top_k: 2,
            inter: 16,
            shared_inter,
            norm_topk_prob,
            init_std: 0.3,
        };
        SparseMoe::load(&mut RandomInit::new(3), "m", &dims, &Default::default()).unwrap()
    }

    fn values<B: Backend>(t: Tensor<B, 2>) -> Vec<f32> {
        t.into_data().convert::<f32>().to_vec().unwrap()
    }

    /// Rows on slices give burn's outputs and router logits: a decode step's five rows (some
    /// sharing an expert), 40 and the most the slice path takes, with and without renormalised
    /// top-k weights and a shared expert.
    #[test]
    fn rows_on_slices_equal_burns_ops() {
        for ((norm, shared), n) in [(true, 20), (false, 0)]
            .into_iter()
            .flat_map(|b| [5, 40, SLICE_ROWS].map(|n| (b, n)))
        {
            let x = Tensor::<Cpu, 2>::random(
                [n, 24],
                Distribution::Normal(0.0, 1.0),
                &Default::default(),
            );
            let on_reference =
                Tensor::<Reference, 2>::from_data(x.clone().into_data(), &Default::default());
            let (y, logits) = block::<Cpu>(norm, shared).forward(x.clone());
            let (y_ref, logits_ref) =
                block::<Reference>(norm, shared).forward(on_reference.clone());
            let diff = |a: Vec<f32>, b: Vec<f32>| {
                a.iter()
                    .zip(&b)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f32::max)
            };
            assert!(diff(values(logits), values(logits_ref)) < 1e-5);
            assert!(
                diff(values(y), values(y_ref)) < 1e-5,
                "norm {norm}, shared {shared}, {n} rows"
            );
        }
    }
}
