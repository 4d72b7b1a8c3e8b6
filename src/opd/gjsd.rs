//! The full-vocabulary generalized Jensen–Shannon divergence of TRL's `GKDTrainer`
//! (reference/rl_algorithms.md §4.3): at each trained position, with logits divided by `temperature`,
//! β = 0 is the forward KL(teacher‖student), β = 1 the reverse KL(student‖teacher), and otherwise
//! `β·KL(T‖M) + (1−β)·KL(S‖M)` with `M = (1−β)·S + β·T`. Averaged over the trained positions
//! ("batchmean").
//!
//! Two forms of one formula: [`generalized_jsd`] on plain numbers with its analytic gradient (tested
//! against PyTorch autograd), and [`generalized_jsd_sum`] on tensors, which training differentiates
//! through burn's autodiff (tested against the plain form).
//!
//! A teacher behind an endpoint returns only its k most likely tokens at each position (vLLM's
//! `prompt_logprobs`, at most `max_logprobs`, 20 by default). [`top_k_generalized_jsd_sum`] then
//! compares the two distributions *coarse-grained* to those k tokens plus one bucket holding all the
//! others: a divergence of two k + 1 outcome distributions, never above the full one (coarse-graining
//! only loses information) and equal to it when the k tokens hold all of both models' mass.

use burn::prelude::*;
use burn::tensor::activation::log_softmax;

/// TRL's `beta` and `temperature`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GjsdConfig {
    pub beta: f64,
    pub temperature: f64,
}

fn log_softmax_of(logits: &[f64], temperature: f64) -> Vec<f64> {
    let z: Vec<f64> = logits.iter().map(|x| x / temperature).collect();
    let max = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let lse = max + z.iter().map(|x| (x - max).exp()).sum::<f64>().ln();
    z.iter().map(|x| x - lse).collect()
}

/// The divergence at one position and its gradient with respect to the student's logits.
///
/// Through the log-softmax and the temperature, the gradient of [`divergence`] `g` (with respect to
/// the student's log-probabilities) becomes `∂/∂z_u = (g_u − p_u·Σ_v g_v) / τ`.
pub fn generalized_jsd(student: &[f64], teacher: &[f64], cfg: &GjsdConfig) -> (f64, Vec<f64>) {
    assert_eq!(
        student.len(),
        teacher.len(),
        "student and teacher vocabularies"
    );
    let s = log_softmax_of(student, cfg.temperature);
    let t = log_softmax_of(teacher, cfg.temperature);
    let (value, g) = divergence(&s, &t, cfg.beta);
    let total: f64 = g.iter().sum();
    let grad = g
        .iter()
        .zip(&s)
        .map(|(g, s)| (g - s.exp() * total) / cfg.temperature)
        .collect();
    (value, grad)
}

/// The divergence of two distributions given by their log-probabilities `s` (student) and `t`
/// (teacher), and its gradient with respect to `s`: with `p = e^s`, `−e^t` (β = 0),
/// `p·(s − t + 1)` (β = 1), `(1−β)·p·(s − m)` otherwise (the mixture's own terms cancel).
pub fn divergence(s: &[f64], t: &[f64], beta: f64) -> (f64, Vec<f64>) {
    if beta == 0.0 {
        let value = s.iter().zip(t).map(|(s, t)| t.exp() * (t - s)).sum();
        (value, t.iter().map(|t| -t.exp()).collect())
    } else if beta == 1.0 {
        let value = s.iter().zip(t).map(|(s, t)| s.exp() * (s - t)).sum();
        let g = s
            .iter()
            .zip(t)
            .map(|(s, t)| s.exp() * (s - t + 1.0))
            .collect();
        (value, g)
    } else {
        let m: Vec<f64> = s
            .iter()
            .zip(t)
            .map(|(s, t)| {
                let (a, b) = (s + (1.0 - beta).ln(), t + beta.ln());
                let hi = a.max(b);
                hi + ((a - hi).exp() + (b - hi).exp()).ln()
            })
            .collect();
        let value = s
            .iter()
            .zip(t)
            .zip(&m)
            .map(|((s, t), m)| beta * t.exp() * (t - m) + (1.0 - beta) * s.exp() * (s - m))
            .sum();
        let g = s
            .iter()
            .zip(&m)
            .map(|(s, m)| (1.0 - beta) * s.exp() * (s - m))
            .collect();
        (value, g)
    }
}

/// The smallest probability the "all other tokens" bucket is given: the top k may hold (up to
/// rounding) all of a distribution's mass, and a log of 0 would turn the divergence into NaN.
pub const REST_FLOOR: f64 = 1e-7;

/// Log-probabilities of the top k tokens, then of the bucket of all the others.
fn with_rest(top: &[f64]) -> Vec<f64> {
    let rest = (1.0 - top.iter().map(|x| x.exp()).sum::<f64>()).max(REST_FLOOR);
    top.iter().copied().chain([rest.ln()]).collect()
}

/// The divergence at one position between the student's distribution (its logits, temperature 1) and
/// a teacher known only by its top k `(token, log-probability)` pairs, both coarse-grained to those k
/// tokens plus the rest (see the module's documentation).
pub fn top_k_generalized_jsd(student: &[f64], teacher_top: &[(u32, f64)], beta: f64) -> f64 {
    let s = log_softmax_of(student, 1.0);
    let s_top: Vec<f64> = teacher_top.iter().map(|&(id, _)| s[id as usize]).collect();
    let t_top: Vec<f64> = teacher_top.iter().map(|&(_, lp)| lp).collect();
    divergence(&with_rest(&s_top), &with_rest(&t_top), beta).0
}

/// The divergence summed over the rows of `student` / `teacher` logits `[K, V]` (the teacher's are
/// constants), differentiable in the student's.
pub fn generalized_jsd_sum<B: Backend>(
    student: Tensor<B, 2>,
    teacher: Tensor<B, 2>,
    cfg: &GjsdConfig,
) -> Tensor<B, 1> {
    let s = log_softmax(student.div_scalar(cfg.temperature), 1);
    let t = log_softmax(teacher.div_scalar(cfg.temperature), 1);
    divergence_terms(s, t, cfg.beta).sum()
}

/// [`top_k_generalized_jsd`] summed over the rows of the student's logits `[K, V]` (temperature 1),
/// differentiable in them; `top_ids` / `top_logprobs` `[K, k]` are the teacher's top k at each row.
pub fn top_k_generalized_jsd_sum<B: Backend>(
    student: Tensor<B, 2>,
    top_ids: Tensor<B, 2, Int>,
    top_logprobs: Tensor<B, 2>,
    beta: f64,
) -> Tensor<B, 1> {
    let s = log_softmax(student, 1).gather(1, top_ids);
    divergence_terms(tensor_with_rest(s), tensor_with_rest(top_logprobs), beta).sum()
}

fn tensor_with_rest<B: Backend>(top: Tensor<B, 2>) -> Tensor<B, 2> {
    let rest = top
        .clone()
        .exp()
        .sum_dim(1)
        .neg()
        .add_scalar(1.0)
        .clamp_min(REST_FLOOR)
        .log();
    Tensor::cat(vec![top, rest], 1)
}

/// [`divergence`]'s terms, elementwise over log-probabilities `[K, n]`.
fn divergence_terms<B: Backend>(s: Tensor<B, 2>, t: Tensor<B, 2>, beta: f64) -> Tensor<B, 2> {
    if beta == 0.0 {
        t.clone().exp() * (t - s)
    } else if beta == 1.0 {
        s.clone().exp() * (s - t)
    } else {
        let a = s.clone().add_scalar((1.0 - beta).ln());
        let b = t.clone().add_scalar(beta.ln());
        let hi = a.clone().max_pair(b.clone()).detach();
        let m = hi.clone() + ((a - hi.clone()).exp() + (b - hi).exp()).log();
        (t.clone().exp() * (t - m.clone())).mul_scalar(beta)
            + (s.clone().exp() * (s - m)).mul_scalar(1.0 - beta)
    }
}
