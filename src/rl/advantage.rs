//! Group-relative advantages from several rewards, as TRL's `GRPOTrainer` computes them
//! (`multi_objective_aggregation`, `scale_rewards`, ε = 1e-4, Bessel-corrected std), with GDPO's
//! `normalize_then_sum` (reference/rl_algorithms.md §1.3, §3).
//!
//! * `sum_then_normalize` (GRPO): `R_i = Σ_k w_k r_ik`, then `(R_i − mean_g R) / (std R + ε)` with the
//!   std of the group (`scale_rewards = group`), of the whole batch (`batch`), or no division (`none`).
//! * `normalize_then_sum` (GDPO): each reward is z-scored in its group, the weighted sum is z-scored
//!   over the batch: two rewards that a sum would merge keep their own resolution.
//!
//! A missing reward (`None`: the judge could not score that dimension) is left out of every mean and
//! std, as TRL's `nanmean`/`nanstd`; a row with no reward at all gets advantage 0. A group whose every
//! reward dimension is constant carries no signal: its advantages are 0 and it stays out of the batch
//! statistics (it would otherwise pull GDPO's batch mean); it is counted in `frac_reward_zero_std`.
//! With one reward this is TRL's metric; with several it follows GDPO, where a group with a constant
//! *total* can still differ in a component.

use serde::Serialize;

/// How several rewards become one advantage (TRL's `multi_objective_aggregation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[value(rename_all = "snake_case")]
pub enum Aggregation {
    /// GRPO: weighted sum, then normalised in the group.
    SumThenNormalize,
    /// GDPO: each reward normalised in the group, weighted sum, then normalised over the batch.
    NormalizeThenSum,
}

/// What the centred reward is divided by (TRL's `scale_rewards`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[value(rename_all = "snake_case")]
pub enum ScaleRewards {
    Group,
    Batch,
    /// Dr. GRPO: centred only.
    None,
}

/// The advantage settings.
#[derive(Debug, Clone, PartialEq)]
pub struct AdvantageConfig {
    pub aggregation: Aggregation,
    pub scale_rewards: ScaleRewards,
    /// One weight per reward dimension.
    pub weights: Vec<f64>,
    /// Added to every std before dividing (TRL: 1e-4).
    pub epsilon: f64,
}

/// Advantages of a batch, one per row, and what the batch looked like.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Advantages {
    pub values: Vec<f64>,
    /// Share of rows in groups whose every reward dimension is constant (no signal).
    pub frac_reward_zero_std: f64,
    /// Mean over groups of the std of the weighted reward sum (TRL's `reward_std`).
    pub reward_std: f64,
}

/// Advantages for `rewards[i][k]` (row i, dimension k) where `groups[i]` names row i's group.
/// Panics if the rows and groups differ in number or a row has another number of dimensions than
/// `cfg.weights` (a caller's bug, not input).
pub fn advantages(
    rewards: &[Vec<Option<f64>>],
    groups: &[usize],
    cfg: &AdvantageConfig,
) -> Advantages {
    assert_eq!(rewards.len(), groups.len(), "one group id per row");
    assert!(
        rewards.iter().all(|r| r.len() == cfg.weights.len()),
        "one weight per reward dimension"
    );
    let members = group_members(groups);
    let live: Vec<&Vec<usize>> = members
        .iter()
        .filter(|rows| !constant_in_every_dimension(rewards, rows))
        .collect();
    let dead_rows: usize = members.iter().map(Vec::len).sum::<usize>()
        - live.iter().map(|rows| rows.len()).sum::<usize>();
    let weighted_sum = |i: usize| -> Option<f64> {
        let terms: Vec<f64> = rewards[i]
            .iter()
            .zip(&cfg.weights)
            .filter_map(|(r, w)| r.map(|r| r * w))
            .collect();
        (!terms.is_empty()).then(|| terms.iter().sum())
    };
    let sums: Vec<Option<f64>> = (0..rewards.len()).map(weighted_sum).collect();
    let reward_std = mean(
        &members
            .iter()
            .map(|rows| Some(std(&pick(&sums, rows))))
            .collect::<Vec<_>>(),
    )
    .unwrap_or(0.0);

    let mut values = vec![0.0; rewards.len()];
    match cfg.aggregation {
        Aggregation::SumThenNormalize => {
            let live_rows: Vec<usize> = live.iter().flat_map(|rows| rows.iter().copied()).collect();
            let batch_std = std(&pick(&sums, &live_rows));
            for rows in &live {
                let in_group = pick(&sums, rows);
                let centre = mean(&in_group).unwrap_or(0.0);
                let scale = match cfg.scale_rewards {
                    ScaleRewards::Group => std(&in_group) + cfg.epsilon,
                    ScaleRewards::Batch => batch_std + cfg.epsilon,
                    ScaleRewards::None => 1.0,
                };
                for &i in rows.iter() {
                    if let Some(r) = sums[i] {
                        values[i] = (r - centre) / scale;
                    }
                }
            }
        }
        Aggregation::NormalizeThenSum => {
            let mut summed: Vec<Option<f64>> = vec![None; rewards.len()];
            for rows in &live {
                for (k, w) in cfg.weights.iter().enumerate() {
                    let column: Vec<Option<f64>> = rows.iter().map(|&i| rewards[i][k]).collect();
                    let (centre, spread) = (mean(&column), std(&column));
                    for (&i, r) in rows.iter().zip(&column) {
                        if let (Some(r), Some(c)) = (r, centre) {
                            let z = (r - c) / (spread + cfg.epsilon);
                            *summed[i].get_or_insert(0.0) += w * z;
                        }
                    }
                }
            }
            let (centre, spread) = (mean(&summed).unwrap_or(0.0), std(&summed));
            for (v, s) in values.iter_mut().zip(&summed) {
                if let Some(s) = s {
                    *v = match cfg.scale_rewards {
                        ScaleRewards::None => s - centre,
                        _ => (s - centre) / (spread + cfg.epsilon),
                    };
                }
            }
        }
    }
    Advantages {
        values,
        frac_reward_zero_std: dead_rows as f64 / rewards.len().max(1) as f64,
        reward_std,
    }
}

/// Row indices of each group, groups in order of first appearance.
fn group_members(groups: &[usize]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = Vec::new();
    let mut rows: std::collections::HashMap<usize, Vec<usize>> = Default::default();
    for (i, &g) in groups.iter().enumerate() {
        rows.entry(g).or_insert_with(|| {
            order.push(g);
            Vec::new()
        });
        rows.get_mut(&g).expect("inserted above").push(i);
    }
    order
        .into_iter()
        .map(|g| rows.remove(&g).unwrap_or_default())
        .collect()
}

fn constant_in_every_dimension(rewards: &[Vec<Option<f64>>], rows: &[usize]) -> bool {
    let dims = rows.first().map_or(0, |&i| rewards[i].len());
    (0..dims).all(|k| {
        let column: Vec<Option<f64>> = rows.iter().map(|&i| rewards[i][k]).collect();
        std(&column) <= 1e-12
    })
}

fn pick(values: &[Option<f64>], rows: &[usize]) -> Vec<Option<f64>> {
    rows.iter().map(|&i| values[i]).collect()
}

/// Mean of the present values; `None` when there are none.
pub(crate) fn mean(values: &[Option<f64>]) -> Option<f64> {
    let present: Vec<f64> = values.iter().flatten().copied().collect();
    (!present.is_empty()).then(|| present.iter().sum::<f64>() / present.len() as f64)
}

/// Bessel-corrected std of the present values (0 for fewer than two, as a constant).
pub(crate) fn std(values: &[Option<f64>]) -> f64 {
    let present: Vec<f64> = values.iter().flatten().copied().collect();
    if present.len() < 2 {
        return 0.0;
    }
    let m = present.iter().sum::<f64>() / present.len() as f64;
    let var = present.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (present.len() - 1) as f64;
    var.sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::FRAC_1_SQRT_2;

    fn cfg(aggregation: Aggregation, scale_rewards: ScaleRewards, dims: usize) -> AdvantageConfig {
        AdvantageConfig {
            aggregation,
            scale_rewards,
            weights: vec![1.0; dims],
            epsilon: 1e-4,
        }
    }

    /// reference/rl_algorithms.md §3: two groups of two, rewards (format, correct).
    fn toy() -> (Vec<Vec<Option<f64>>>, Vec<usize>) {
        let r = |a: f64, b: f64| vec![Some(a), Some(b)];
        (
            vec![r(1.0, 0.0), r(0.0, 0.0), r(1.0, 1.0), r(0.0, 0.0)],
            vec![0, 0, 1, 1],
        )
    }

    fn close(a: &[f64], b: &[f64], tol: f64) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < tol)
    }

    #[test]
    fn gdpo_keeps_the_extra_reward_that_grpo_collapses() {
        let (rewards, groups) = toy();
        let gdpo = advantages(
            &rewards,
            &groups,
            &cfg(Aggregation::NormalizeThenSum, ScaleRewards::Group, 2),
        );
        assert!(
            close(&gdpo.values, &[0.5477, -0.5477, 1.0954, -1.0954], 1e-4),
            "{:?}",
            gdpo.values
        );
        let grpo = advantages(
            &rewards,
            &groups,
            &cfg(Aggregation::SumThenNormalize, ScaleRewards::Group, 2),
        );
        assert!(
            close(
                &grpo.values,
                &[FRAC_1_SQRT_2, -FRAC_1_SQRT_2, FRAC_1_SQRT_2, -FRAC_1_SQRT_2],
                1e-3
            ),
            "{:?}",
            grpo.values
        );
        assert_eq!(gdpo.frac_reward_zero_std, 0.0);
    }

    #[test]
    fn a_group_constant_in_every_reward_is_dropped_and_counted() {
        let (mut rewards, mut groups) = toy();
        rewards.extend([vec![Some(1.0), Some(1.0)], vec![Some(1.0), Some(1.0)]]);
        groups.extend([2, 2]);
        let a = advantages(
            &rewards,
            &groups,
            &cfg(Aggregation::NormalizeThenSum, ScaleRewards::Group, 2),
        );
        // The dead group neither gets an advantage nor shifts the batch statistics of the others.
        assert!(close(
            &a.values[..4],
            &[0.5477, -0.5477, 1.0954, -1.0954],
            1e-4
        ));
        assert_eq!(&a.values[4..], &[0.0, 0.0]);
        assert!((a.frac_reward_zero_std - 2.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn missing_rewards_are_left_out_and_unscored_rows_get_zero() {
        let rewards = vec![
            vec![Some(1.0)],
            vec![None],
            vec![Some(0.0)],
            vec![Some(0.5)],
        ];
        let a = advantages(
            &rewards,
            &[0, 0, 0, 0],
            &cfg(Aggregation::SumThenNormalize, ScaleRewards::None, 1),
        );
        assert!(
            close(&a.values, &[0.5, 0.0, -0.5, 0.0], 1e-12),
            "{:?}",
            a.values
        );
    }

    #[test]
    fn batch_scaling_divides_by_the_std_of_every_live_row() {
        let (rewards, groups) = toy();
        let a = advantages(
            &rewards,
            &groups,
            &cfg(Aggregation::SumThenNormalize, ScaleRewards::Batch, 2),
        );
        // Sums 1, 0, 2, 0: batch std (Bessel) = sqrt(((1-.75)² + .75² + 1.25² + .75²) / 3).
        let s = ((0.0625f64 + 0.5625 + 1.5625 + 0.5625) / 3.0).sqrt() + 1e-4;
        assert!(close(
            &a.values,
            &[0.5 / s, -0.5 / s, 1.0 / s, -1.0 / s],
            1e-12
        ));
    }
}
