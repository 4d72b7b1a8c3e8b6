//! The clipped policy-gradient loss of GRPO/DAPO/Dr. GRPO and GSPO, with an optional KL penalty, as
//! plain numbers: its value and its derivative with respect to every completion token's log-probability
//! (reference/rl_algorithms.md §1.4–1.5, §2; TRL's `_compute_loss`).
//!
//! Why derivatives with respect to log-probabilities: every term of the loss reaches the weights only
//! through `log π_θ(o_t)` of the sampled tokens, so `∇L = Σ_t (∂L/∂logp_t) ∇logp_t`. The trainer scores
//! the completions with the current weights, asks this module for `∂L/∂logp_t`, and takes one weighted
//! NLL step with per-token weight `−∂L/∂logp_t`: the same gradient as differentiating the surrogate, and
//! the whole RL loss stays testable against a PyTorch fixture without a model.
//!
//! Per token, with advantage A of its completion and ratio ρ (see [`ImportanceSamplingLevel`]):
//! `ℓ_t = −w_t·min(ρ·A, clip(ρ, 1−ε_low, 1+ε_high)·A) + β·k3_t`, `k3_t = e^{ref−logp} − (ref−logp) − 1`,
//! where `w_t` is the truncated importance weight against the sampler ([`super::tis`]; 1 without TIS).
//! Aggregation by `loss_type`: `grpo` = mean over completions of their token mean; `bnpo`/`dapo` = sum
//! over the batch's tokens / their number; `dr_grpo` = sum / (completions × `max_completion_length`).

use serde::Serialize;

/// Where the importance ratio is taken (TRL's `importance_sampling_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[value(rename_all = "snake_case")]
pub enum ImportanceSamplingLevel {
    /// GRPO: `ρ_t = π_θ(o_t) / π_old(o_t)` per token.
    Token,
    /// GSPO: `s = exp(mean_t(logp − old))` for every token of the completion; gradient spread evenly.
    Sequence,
    /// GSPO-token: the value of `s`, the gradient of each token through its own log-probability.
    SequenceToken,
}

/// How token losses are averaged (TRL's `loss_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[value(rename_all = "snake_case")]
pub enum LossType {
    Grpo,
    Bnpo,
    DrGrpo,
    Dapo,
}

/// The loss settings (TRL names).
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyLossConfig {
    pub epsilon: f64,
    pub epsilon_high: f64,
    pub importance_sampling_level: ImportanceSamplingLevel,
    pub loss_type: LossType,
    /// KL coefficient (k3 estimator against the reference); 0 = no reference needed.
    pub beta: f64,
    /// `dr_grpo`'s constant normaliser.
    pub max_completion_length: usize,
}

/// One sampled completion: its tokens' log-probabilities now, when sampled (`old`), under the
/// reference (needed when β > 0), and its advantage.
#[derive(Debug, Clone, Copy)]
pub struct Completion<'a> {
    pub logp: &'a [f64],
    pub old_logp: &'a [f64],
    pub ref_logp: Option<&'a [f64]>,
    pub advantage: f64,
    /// Per-token advantages added to `advantage` (on-policy distillation's `−λ·(logq − logπ_T)`, which
    /// tinker and TRL's MiniLLM add to the task advantage); `None` for none.
    pub token_advantages: Option<&'a [f64]>,
    /// Per-token truncated importance weights `min(π_old/π_sampler, C)` on the policy-gradient term
    /// ([`super::tis`]); `None` for 1.
    pub tis_weights: Option<&'a [f64]>,
}

/// The loss over a batch of completions, `∂L/∂logp` per token, and TRL's diagnostics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyLoss {
    pub loss: f64,
    /// `grad[i][t] = ∂L/∂logp_t` of completion i.
    pub grad: Vec<Vec<f64>>,
    /// Shares of tokens clipped below (ρ < 1−ε_low with A < 0), above (ρ > 1+ε_high with A > 0), either.
    pub clip_ratio_low: f64,
    pub clip_ratio_high: f64,
    pub clip_ratio_region: f64,
    /// Mean k3 over tokens (0 without a reference).
    pub kl: f64,
    pub tokens: usize,
}

/// The loss of `completions` under `cfg`. Panics when a completion's `old_logp` (or `ref_logp`)
/// differs in length from its `logp`, or β > 0 without `ref_logp` (a caller's bug).
pub fn policy_loss(completions: &[Completion<'_>], cfg: &PolicyLossConfig) -> PolicyLoss {
    let n = completions.len();
    let tokens: usize = completions.iter().map(|c| c.logp.len()).sum();
    // ∂L/∂ℓ_t: the aggregation's weight of each token's loss.
    let token_weight = |len: usize| -> f64 {
        match cfg.loss_type {
            LossType::Grpo => 1.0 / (n as f64 * len as f64),
            LossType::Bnpo | LossType::Dapo => 1.0 / tokens as f64,
            LossType::DrGrpo => 1.0 / (n as f64 * cfg.max_completion_length as f64),
        }
    };
    let (lo, hi) = (1.0 - cfg.epsilon, 1.0 + cfg.epsilon_high);
    let mut out = PolicyLoss {
        loss: 0.0,
        grad: Vec::with_capacity(n),
        clip_ratio_low: 0.0,
        clip_ratio_high: 0.0,
        clip_ratio_region: 0.0,
        kl: 0.0,
        tokens,
    };
    let (mut low, mut high, mut kl_sum) = (0usize, 0usize, 0.0);
    for c in completions {
        let len = c.logp.len();
        assert_eq!(c.old_logp.len(), len, "old log-probs per token");
        if len == 0 {
            out.grad.push(Vec::new());
            continue;
        }
        let w = token_weight(len);
        if let Some(extra) = c.token_advantages {
            assert_eq!(extra.len(), len, "token advantages per token");
        }
        if let Some(tis) = c.tis_weights {
            assert_eq!(tis.len(), len, "TIS weights per token");
        }
        let seq_ratio = || {
            let mean = c
                .logp
                .iter()
                .zip(c.old_logp)
                .map(|(l, o)| l - o)
                .sum::<f64>()
                / len as f64;
            mean.exp()
        };
        let ratios: Vec<f64> = match cfg.importance_sampling_level {
            ImportanceSamplingLevel::Token => c
                .logp
                .iter()
                .zip(c.old_logp)
                .map(|(l, o)| (l - o).exp())
                .collect(),
            _ => vec![seq_ratio(); len],
        };
        let mut grad = vec![0.0; len];
        for (t, &rho) in ratios.iter().enumerate() {
            let a = c.advantage + c.token_advantages.map_or(0.0, |x| x[t]);
            // The TIS weight scales this token's whole policy-gradient term; a constant to the gradient.
            let w = c.tis_weights.map_or(w, |tis| w * tis[t]);
            let clipped = rho.clamp(lo, hi);
            let (unclipped_term, clipped_term) = (rho * a, clipped * a);
            out.loss -= w * unclipped_term.min(clipped_term);
            low += usize::from(rho < lo && a < 0.0);
            high += usize::from(rho > hi && a > 0.0);
            // The min takes the clipped branch, whose ρ is a constant, only when it is strictly smaller.
            if clipped_term < unclipped_term {
                continue;
            }
            // ∂(ρA)/∂logp: ρA for its own token (token level, GSPO-token); ρA/|o| for every token (GSPO).
            match cfg.importance_sampling_level {
                ImportanceSamplingLevel::Token | ImportanceSamplingLevel::SequenceToken => {
                    grad[t] -= w * rho * a;
                }
                ImportanceSamplingLevel::Sequence => {
                    for g in &mut grad {
                        *g -= w * rho * a / len as f64;
                    }
                }
            }
        }
        if cfg.beta > 0.0 {
            let reference = c.ref_logp.expect("β > 0 needs reference log-probs");
            assert_eq!(reference.len(), len, "reference log-probs per token");
            for (t, (&l, &r)) in c.logp.iter().zip(reference).enumerate() {
                let d = r - l;
                let k3 = d.exp() - d - 1.0;
                kl_sum += k3;
                out.loss += w * cfg.beta * k3;
                // ∂k3/∂logp = 1 − e^{ref−logp}.
                grad[t] += w * cfg.beta * (1.0 - d.exp());
            }
        }
        out.grad.push(grad);
    }
    let per_token = |k: usize| k as f64 / tokens.max(1) as f64;
    out.clip_ratio_low = per_token(low);
    out.clip_ratio_high = per_token(high);
    out.clip_ratio_region = per_token(low + high);
    out.kl = kl_sum / tokens.max(1) as f64;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(level: ImportanceSamplingLevel, loss_type: LossType, beta: f64) -> PolicyLossConfig {
        PolicyLossConfig {
            epsilon: 0.2,
            epsilon_high: 0.28,
            importance_sampling_level: level,
            loss_type,
            beta,
            max_completion_length: 8,
        }
    }

    /// Every ∂L/∂logp against a central finite difference of the loss itself.
    #[test]
    fn gradients_match_finite_differences_for_every_level_and_loss_type() {
        let logp = [vec![-0.5, -1.2, -0.1], vec![-2.0, -0.3]];
        let old = [vec![-0.6, -1.0, -0.4], vec![-1.9, -0.35]];
        let reference = [vec![-0.4, -1.5, -0.2], vec![-2.2, -0.25]];
        let adv = [0.8, -1.3];
        for level in [
            ImportanceSamplingLevel::Token,
            ImportanceSamplingLevel::Sequence,
            ImportanceSamplingLevel::SequenceToken,
        ] {
            for loss_type in [LossType::Grpo, LossType::Dapo, LossType::DrGrpo] {
                let c = cfg(level, loss_type, 0.05);
                let loss_at = |logp: &[Vec<f64>]| {
                    let cs: Vec<Completion> = (0..2)
                        .map(|i| Completion {
                            logp: &logp[i],
                            old_logp: &old[i],
                            ref_logp: Some(&reference[i]),
                            advantage: adv[i],
                            token_advantages: None,
                            tis_weights: None,
                        })
                        .collect();
                    policy_loss(&cs, &c)
                };
                let analytic = loss_at(&logp).grad;
                for i in 0..2 {
                    for t in 0..logp[i].len() {
                        if level == ImportanceSamplingLevel::SequenceToken {
                            // Its gradient is by construction not the derivative of its value (stop-gradients).
                            continue;
                        }
                        let h = 1e-6;
                        let (mut up, mut down) = (logp.clone(), logp.clone());
                        up[i][t] += h;
                        down[i][t] -= h;
                        let numeric = (loss_at(&up).loss - loss_at(&down).loss) / (2.0 * h);
                        assert!(
                            (numeric - analytic[i][t]).abs() < 1e-6,
                            "{level:?} {loss_type:?} [{i}][{t}]: {numeric} vs {}",
                            analytic[i][t]
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn on_policy_the_ratio_is_one_and_the_gradient_is_the_advantage() {
        let logp = [-0.5, -1.0];
        let c = Completion {
            logp: &logp,
            old_logp: &logp,
            ref_logp: None,
            advantage: 2.0,
            token_advantages: None,
            tis_weights: None,
        };
        let out = policy_loss(
            &[c],
            &cfg(ImportanceSamplingLevel::Token, LossType::Grpo, 0.0),
        );
        assert!((out.loss + 2.0).abs() < 1e-12);
        assert_eq!(out.grad, vec![vec![-1.0, -1.0]]);
        assert_eq!(out.clip_ratio_region, 0.0);
    }

    #[test]
    fn a_clipped_token_carries_no_gradient_and_is_counted() {
        let (logp, old) = ([-0.1], [-1.0]); // ρ = e^0.9 ≈ 2.46 > 1.28
        let c = Completion {
            logp: &logp,
            old_logp: &old,
            ref_logp: None,
            advantage: 1.0,
            token_advantages: None,
            tis_weights: None,
        };
        let out = policy_loss(
            &[c],
            &cfg(ImportanceSamplingLevel::Token, LossType::Grpo, 0.0),
        );
        assert_eq!(out.grad, vec![vec![0.0]]);
        assert_eq!(out.clip_ratio_high, 1.0);
        assert!((out.loss + 1.28).abs() < 1e-12);
        // With a negative advantage the unclipped term is the smaller one: not clipped, gradient flows.
        let neg = Completion {
            advantage: -1.0,
            ..c
        };
        let out = policy_loss(
            &[neg],
            &cfg(ImportanceSamplingLevel::Token, LossType::Grpo, 0.0),
        );
        assert!((out.grad[0][0] - 0.9f64.exp()).abs() < 1e-12);
        assert_eq!(out.clip_ratio_region, 0.0);
    }

    /// The TIS weight multiplies a token's policy-gradient term and its gradient, not the KL term.
    #[test]
    fn tis_weights_scale_the_policy_gradient_term_only() {
        let (logp, old, reference) = ([-0.5, -1.2], [-0.6, -1.0], [-0.4, -1.5]);
        let tis = [2.0, 0.5];
        let at = |beta: f64, tis: Option<&[f64]>| {
            let c = Completion {
                logp: &logp,
                old_logp: &old,
                ref_logp: Some(&reference),
                advantage: 0.8,
                token_advantages: None,
                tis_weights: tis,
            };
            policy_loss(
                &[c],
                &cfg(ImportanceSamplingLevel::Token, LossType::Dapo, beta),
            )
        };
        let pg = at(0.0, None);
        let (plain, weighted) = (at(0.05, None), at(0.05, Some(&tis)));
        for (t, w) in tis.iter().enumerate() {
            let expected = plain.grad[0][t] + (w - 1.0) * pg.grad[0][t];
            assert!((weighted.grad[0][t] - expected).abs() < 1e-15);
        }
        assert_eq!(weighted.kl, plain.kl);
    }

    #[test]
    fn kl_to_an_identical_reference_is_zero_with_zero_gradient() {
        let logp = [-0.5, -1.0, -3.0];
        let c = Completion {
            logp: &logp,
            old_logp: &logp,
            ref_logp: Some(&logp),
            advantage: 0.0,
            token_advantages: None,
            tis_weights: None,
        };
        let out = policy_loss(
            &[c],
            &cfg(ImportanceSamplingLevel::Token, LossType::Dapo, 0.1),
        );
        assert_eq!(out.kl, 0.0);
        assert!(out.grad[0].iter().all(|&g| g == 0.0));
    }
}
