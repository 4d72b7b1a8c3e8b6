//! The sampled-token OPD loss of Thinking Machines / tinker (reference/rl_algorithms.md §4.1–4.2a): on
//! each token the student sampled, the per-token reverse KL `logq − logπ_T` (q the sampler's
//! log-probability, π_T the teacher's) becomes an advantage `A_t = −kl_penalty_coef · (logq − logπ_T)`,
//! optionally summed over the future with `kl_discount_factor` (0 = per token, tinker's default), and
//! the policy is moved by the importance-sampling or clipped-PPO ratio against q.
//!
//! The loss itself is the RL policy loss ([`crate::rl::policy_loss`]) with these per-token advantages,
//! token-level ratio and the global token mean (`Σ_t … / Σ m`, §4.2a); `importance_sampling` is the
//! unclipped ratio, i.e. an infinite clip range. At the sampling weights the gradient is
//! `(λ/Σm) Σ_t (logπ_θ − logπ_T)(y_t) ∇logπ_θ(y_t)`: an estimate of the reverse KL's.

use serde::Serialize;

use crate::rl::policy_loss::{ImportanceSamplingLevel, LossType, PolicyLossConfig};

/// tinker's `loss_fn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[value(rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum LossFn {
    /// `−Σ_t ρ_t·A_t`, ρ = π_θ/q: unbiased, unclipped.
    ImportanceSampling,
    /// `−Σ_t min(ρ_t·A_t, clip(ρ_t, 1−ε, 1+ε)·A_t)`.
    Ppo,
}

/// The settings of the sampled-token loss (tinker's names).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReverseKlConfig {
    pub kl_penalty_coef: f64,
    pub kl_discount_factor: f64,
    pub loss_fn: LossFn,
    /// PPO's clip range (unused by `importance_sampling`).
    pub epsilon: f64,
}

impl ReverseKlConfig {
    /// The RL policy-loss settings that make this loss.
    pub fn policy_loss(&self) -> PolicyLossConfig {
        let epsilon = match self.loss_fn {
            LossFn::ImportanceSampling => f64::INFINITY,
            LossFn::Ppo => self.epsilon,
        };
        PolicyLossConfig {
            epsilon,
            epsilon_high: epsilon,
            importance_sampling_level: ImportanceSamplingLevel::Token,
            loss_type: LossType::Dapo,
            beta: 0.0,
            max_completion_length: 1,
        }
    }
}

impl ReverseKlConfig {
    /// The advantage's settings alone.
    pub fn penalty(&self) -> KlPenalty {
        KlPenalty {
            kl_penalty_coef: self.kl_penalty_coef,
            kl_discount_factor: self.kl_discount_factor,
        }
    }
}

/// The reverse-KL advantage's settings (tinker's names), shared by `opd` and the OPD term of
/// `grpo-train`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KlPenalty {
    pub kl_penalty_coef: f64,
    pub kl_discount_factor: f64,
}

/// `A_t = Σ_{i≥t} γ^{i−t} · (−λ·(sampler_i − teacher_i))` for one completion (γ = 0: `−λ·k1_t`).
pub fn reverse_kl_advantages(sampler: &[f64], teacher: &[f64], cfg: &ReverseKlConfig) -> Vec<f64> {
    kl_penalty_advantages(sampler, teacher, &cfg.penalty())
}

/// [`reverse_kl_advantages`] from the penalty's settings alone.
pub fn kl_penalty_advantages(sampler: &[f64], teacher: &[f64], cfg: &KlPenalty) -> Vec<f64> {
    assert_eq!(sampler.len(), teacher.len(), "teacher log-probs per token");
    let mut out = vec![0.0; sampler.len()];
    let mut running = 0.0;
    for t in (0..sampler.len()).rev() {
        running =
            -cfg.kl_penalty_coef * (sampler[t] - teacher[t]) + cfg.kl_discount_factor * running;
        out[t] = running;
    }
    out
}
