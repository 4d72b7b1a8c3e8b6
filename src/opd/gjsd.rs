//! The full-vocabulary generalized Jensen–Shannon divergence of TRL's `GKDTrainer`
//! (reference/rl_algorithms.md §4.3): at each trained position, with logits divided by `temperature`,
//! β = 0 is the forward KL(teacher‖student), β = 1 the reverse KL(student‖teacher), and otherwise
//! `β·KL(T‖M) + (1−β)·KL(S‖M)` with `M = (1−β)·S + β·T`. Averaged over the trained positions
//! ("batchmean").
//!
//! Two forms of one formula: [`generalized_jsd`] on plain numbers with its analytic gradient (tested
//! against PyTorch autograd), and [`generalized_jsd_sum`] on tensors, which training differentiates
//! through burn's autodiff (tested against the plain form).

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
/// With `s`, `t` the log-probabilities, `p = e^s`, the gradient with respect to `s` is
/// `−e^t` (β = 0), `p·(s − t + 1)` (β = 1), `(1−β)·p·(s − m)` otherwise (the mixture's own terms
/// cancel); through the log-softmax and the temperature, `∂/∂z_u = (g_u − p_u·Σ_v g_v) / τ`.
pub fn generalized_jsd(student: &[f64], teacher: &[f64], cfg: &GjsdConfig) -> (f64, Vec<f64>) {
    assert_eq!(
        student.len(),
        teacher.len(),
        "student and teacher vocabularies"
    );
    let s = log_softmax_of(student, cfg.temperature);
    let t = log_softmax_of(teacher, cfg.temperature);
    let beta = cfg.beta;
    let (value, g): (f64, Vec<f64>) = if beta == 0.0 {
        let value = s.iter().zip(&t).map(|(s, t)| t.exp() * (t - s)).sum();
        (value, t.iter().map(|t| -t.exp()).collect())
    } else if beta == 1.0 {
        let value = s.iter().zip(&t).map(|(s, t)| s.exp() * (s - t)).sum();
        (
            value,
            s.iter()
                .zip(&t)
                .map(|(s, t)| s.exp() * (s - t + 1.0))
                .collect(),
        )
    } else {
        let m: Vec<f64> = s
            .iter()
            .zip(&t)
            .map(|(s, t)| {
                let (a, b) = (s + (1.0 - beta).ln(), t + beta.ln());
                let hi = a.max(b);
                hi + ((a - hi).exp() + (b - hi).exp()).ln()
            })
            .collect();
        let value = s
            .iter()
            .zip(&t)
            .zip(&m)
            .map(|((s, t), m)| beta * t.exp() * (t - m) + (1.0 - beta) * s.exp() * (s - m))
            .sum();
        let g = s
            .iter()
            .zip(&m)
            .map(|(s, m)| (1.0 - beta) * s.exp() * (s - m))
            .collect();
        (value, g)
    };
    let total: f64 = g.iter().sum();
    let grad = g
        .iter()
        .zip(&s)
        .map(|(g, s)| (g - s.exp() * total) / cfg.temperature)
        .collect();
    (value, grad)
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
    let beta = cfg.beta;
    let terms = if beta == 0.0 {
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
    };
    terms.sum()
}
