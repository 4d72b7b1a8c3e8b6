//! Evaluation of a trained checkpoint: the local model plays held-out tasks in the simulator under a
//! harness (the original or a variant directory written by `hsa-augment --out`), the verifiable judge
//! scores each episode, and the summary reports tool-call correctness plus the four judge scores.
//!
//! Right tool: over tasks whose ground truth expects tool calls, the share of episodes that call every
//! expected tool by its *surface* name in that harness (a renamed tool must be called by its new name).

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::agent::rollout::run_batch;
use crate::agent::{Agent, SimEnv};
use crate::hsa::variant::load_harness;
use crate::judge::stats::{mean_interval, paired_sign_test, wilson};
use crate::judge::verifiable::{score, TokenCounter};
use crate::policy::Policy;
use crate::record::{Role, Trajectory};

/// A rate or mean with its 95% interval and n.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Estimate {
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
    pub n: usize,
}

impl Estimate {
    /// `hits` of `n` 0/1 outcomes, Wilson interval.
    fn rate(hits: usize, n: usize) -> Estimate {
        let (lo, hi) = wilson(hits as u64, n as u64);
        Estimate {
            value: hits as f64 / n.max(1) as f64,
            lo,
            hi,
            n,
        }
    }

    /// The mean of scores in [0, 1], normal interval clipped to [0, 1].
    fn mean(values: &[f64]) -> Estimate {
        let (value, lo, hi) = mean_interval(values);
        Estimate {
            value,
            lo: lo.max(0.0),
            hi: hi.min(1.0),
            n: values.len(),
        }
    }

    /// The same estimate ×100 (a rate as points), n unchanged.
    pub fn percent(self) -> Estimate {
        Estimate {
            value: 100.0 * self.value,
            lo: 100.0 * self.lo,
            hi: 100.0 * self.hi,
            n: self.n,
        }
    }

    /// `0.650 [0.581, 0.713]`.
    pub fn display(&self) -> String {
        format!("{:.3} [{:.3}, {:.3}]", self.value, self.lo, self.hi)
    }
}

/// Scores of one model on one harness set.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EvalSummary {
    pub harness: String,
    pub episodes: usize,
    /// Over the episodes whose task expects tool calls (n = those tasks).
    pub right_tool: Estimate,
    pub accuracy: Estimate,
    pub effectiveness: Estimate,
    pub tool_rationality: Estimate,
    /// Over the episodes the judge could score for skill selection.
    pub skill_selection: Estimate,
    pub success: Estimate,
    pub errors: usize,
}

/// Whether the episode called every expected tool by its surface name; `None` when none is expected.
pub fn right_tool(t: &Trajectory) -> Option<bool> {
    let expected = t.task.as_ref()?.expected.as_ref()?;
    if expected.tool_calls.is_empty() {
        return None;
    }
    let names = t.names();
    let called: Vec<&str> = t
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.tool_calls.iter().map(|c| c.function.name.as_str()))
        .collect();
    Some(
        expected
            .tool_calls
            .iter()
            .all(|c| called.contains(&names.tool_surface(&c.tool))),
    )
}

/// Plays `tasks` with `policy` under the harness in `dir`; scored episodes (rollout errors counted).
pub fn play(
    dir: &Path,
    policy: &dyn Policy,
    tasks: &[Trajectory],
    env: &SimEnv<'_>,
    pool: &rayon::ThreadPool,
) -> Result<(Vec<Trajectory>, usize)> {
    let (harness, names) = load_harness(dir)?;
    let agent = Agent::new(&harness, names)?;
    let mut episodes = Vec::new();
    let mut errors = 0;
    for r in run_batch(&agent, policy, tasks, env, pool) {
        match r {
            Ok(mut t) => {
                score(&mut t, &TokenCounter::Approximate);
                episodes.push(t);
            }
            Err(_) => errors += 1,
        }
    }
    Ok((episodes, errors))
}

/// Rates and means over scored episodes, each with its interval.
pub fn summarise(label: &str, episodes: &[Trajectory], errors: usize) -> EvalSummary {
    let right: Vec<bool> = episodes.iter().filter_map(right_tool).collect();
    let scores = |f: &dyn Fn(&Trajectory) -> Option<f64>| -> Vec<f64> {
        episodes.iter().filter_map(f).collect()
    };
    let or_zero = |x: Option<f64>| Some(x.unwrap_or(0.0));
    let success = episodes.iter().filter(|t| t.solved()).count();
    EvalSummary {
        harness: label.to_string(),
        episodes: episodes.len(),
        right_tool: Estimate::rate(right.iter().filter(|&&r| r).count(), right.len()),
        // Unscored where the reply states no fact the task asked for (effectiveness counts that).
        accuracy: Estimate::mean(&scores(&|t| t.scores.accuracy)),
        effectiveness: Estimate::mean(&scores(&|t| or_zero(t.scores.effectiveness))),
        tool_rationality: Estimate::mean(&scores(&|t| or_zero(t.scores.tool_rationality))),
        skill_selection: Estimate::mean(&scores(&|t| t.scores.skill_selection)),
        success: Estimate::rate(success, episodes.len()),
        errors,
    }
}

/// The paired sign test of model B against model A on right tool, over the tasks both played (joined
/// by record id): (B right where A is wrong, the reverse, p-value).
pub fn paired_right_tool(a: &[Trajectory], b: &[Trajectory]) -> (u64, u64, f64) {
    fn right(side: &[Trajectory]) -> impl Iterator<Item = (&str, bool)> {
        side.iter()
            .filter_map(|t| Some((t.id.as_str(), right_tool(t)?)))
    }
    paired_sign_test(right(a), right(b))
}

/// The paired sign test of model B against model A on each judge score (skill selection, accuracy,
/// effectiveness, tool rationality), over the tasks both played: per score, (tasks where B scores
/// higher, where A does, p-value); ties left out.
pub fn paired_scores(a: &[Trajectory], b: &[Trajectory]) -> Vec<(&'static str, (u64, u64, f64))> {
    type Pick = fn(&Trajectory) -> Option<f64>;
    let dims: [(&'static str, Pick); 4] = [
        ("skill selection", |t| t.scores.skill_selection),
        ("accuracy", |t| t.scores.accuracy),
        ("effectiveness", |t| t.scores.effectiveness),
        ("tool rationality", |t| t.scores.tool_rationality),
    ];
    dims.iter()
        .map(|&(name, pick)| {
            let side = |s: &'_ [Trajectory]| -> Vec<(String, f64)> {
                s.iter()
                    .filter_map(|t| Some((t.id.clone(), pick(t)?)))
                    .collect()
            };
            let (sa, sb) = (side(a), side(b));
            let test = paired_sign_test(
                sa.iter().map(|(id, v)| (id.as_str(), *v)),
                sb.iter().map(|(id, v)| (id.as_str(), *v)),
            );
            (name, test)
        })
        .collect()
}

/// A markdown table: one row per (model, harness set); every cell a value with its 95% interval.
pub fn markdown(rows: &[(String, String, EvalSummary)]) -> String {
    let mut s = String::from(
        "| model | harness set | episodes | right tool (n tool tasks) | skill selection | accuracy | effectiveness | tool rationality | success |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for (model, set, e) in rows {
        s.push_str(&format!(
            "| {model} | {set} | {} | {} ({}) | {} | {} | {} | {} | {} |\n",
            e.episodes,
            e.right_tool.display(),
            e.right_tool.n,
            e.skill_selection.display(),
            e.accuracy.display(),
            e.effectiveness.display(),
            e.tool_rationality.display(),
            e.success.display(),
        ));
    }
    s
}

/// Grouped bars ×100 with 95% intervals: a group per (harness set, score) — right tool and the four
/// judge scores — and a bar per model, in the order of `rows` (model-major, as `eval` plays them).
pub fn bars_svg(rows: &[(String, String, EvalSummary)]) -> String {
    use super::bars::{grouped_bars_svg, Bar};
    let mut models: Vec<String> = Vec::new();
    let mut sets: Vec<String> = Vec::new();
    for (m, s, _) in rows {
        if !models.contains(m) {
            models.push(m.clone());
        }
        if !sets.contains(s) {
            sets.push(s.clone());
        }
    }
    let scores: [(&str, fn(&EvalSummary) -> Estimate); 5] = [
        ("right tool", |e| e.right_tool),
        ("skill", |e| e.skill_selection),
        ("accuracy", |e| e.accuracy),
        ("effectiveness", |e| e.effectiveness),
        ("tool rationality", |e| e.tool_rationality),
    ];
    let mut groups = Vec::new();
    for set in &sets {
        for (label, get) in scores {
            let bars = models
                .iter()
                .map(|m| {
                    rows.iter()
                        .find(|(rm, rs, _)| rm == m && rs == set)
                        .map(|(_, _, e)| Bar::from(get(e).percent()))
                })
                .collect();
            groups.push((format!("{set}: {label}"), bars));
        }
    }
    grouped_bars_svg(
        "Rollout scores ×100 (95% intervals)",
        &models,
        &groups,
        100.0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_group_by_set_and_score_with_a_bar_per_model() {
        let summary = |right: f64| EvalSummary {
            right_tool: Estimate {
                value: right,
                lo: right - 0.1,
                hi: right + 0.1,
                n: 100,
            },
            ..EvalSummary::default()
        };
        let rows = vec![
            ("fixed".to_string(), "original".to_string(), summary(0.9)),
            ("fixed".to_string(), "heldout".to_string(), summary(0.2)),
            ("hsa".to_string(), "original".to_string(), summary(0.9)),
        ];
        let svg = bars_svg(&rows);
        assert!(svg.contains("original: right tool") && svg.contains("heldout: effectiveness"));
        // 2 sets × 5 scores; fixed has all 10 bars, hsa only the 5 of `original`; plus 2 legend keys.
        assert_eq!(svg.matches("<rect x=").count(), 10 + 5 + 2, "{svg}");
        // Right tool 0.2 on the 0..100 axis (plot_h 240 from y = 36): bar top at 228, height 48.
        assert!(
            svg.contains("y=\"228.0\" width=\"16.0\" height=\"48.0\""),
            "{svg}"
        );
    }
}
