//! The optional OPD term of `grpo-train` (the `opd` stage's reverse-KL advantage, reference/
//! rl_algorithms.md §4.2a "combine with RL"): on every token the policy generated, `−λ·(log π_θ_old −
//! log π_T)` against a teacher checkpoint is added to the GRPO advantage of its completion, so RL keeps
//! the policy near the teacher's (e.g. the pre-SFT base's) general behaviour token by token. `λ` and
//! the discount are `opd`'s `kl_penalty_coef` and `kl_discount_factor`; λ = 0 adds exactly nothing.

use crate::opd::reverse_kl::{kl_penalty_advantages, KlPenalty};

/// The per-token term of every view (in score order, as `old` and `teacher`), and the mean of
/// `log π_old − log π_T` over all tokens (the sampled reverse KL, for the metrics; `None` without
/// tokens).
pub fn opd_term(
    old: &[Vec<f64>],
    teacher: &[Vec<f64>],
    penalty: &KlPenalty,
) -> (Vec<Vec<f64>>, Option<f64>) {
    let term = old
        .iter()
        .zip(teacher)
        .map(|(o, t)| kl_penalty_advantages(o, t, penalty))
        .collect();
    let (sum, n) = old
        .iter()
        .flatten()
        .zip(teacher.iter().flatten())
        .fold((0.0, 0usize), |(s, n), (o, t)| (s + (o - t), n + 1));
    (term, (n > 0).then(|| sum / n as f64))
}
