//! Evaluation of a trained checkpoint: the local model plays held-out tasks in the simulator under a
//! harness (the original or a variant directory written by `hsa-augment --out`), the verifiable judge
//! scores each episode, and the summary reports tool-call correctness plus the four judge scores.
//!
//! Right tool: over tasks whose ground truth expects tool calls, the share of episodes that call every
//! expected tool by its *surface* name in that harness (a renamed tool must be called by its new name).

use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::agent::rollout::run_batch;
use crate::agent::{Agent, SimEnv};
use crate::harness::Harness;
use crate::hsa::variant::MANIFEST_FILE;
use crate::judge::verifiable::{score, TokenCounter};
use crate::policy::Policy;
use crate::record::{Names, Role, Trajectory};

/// Means over the evaluated episodes.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EvalSummary {
    pub harness: String,
    pub episodes: usize,
    /// Episodes whose task expects tool calls.
    pub tool_tasks: usize,
    pub right_tool: f64,
    pub accuracy: f64,
    pub effectiveness: f64,
    pub tool_rationality: f64,
    pub skill_selection: f64,
    pub success: f64,
    pub errors: usize,
}

/// The harness in `dir` and its canonical → surface names (from the HSA manifest; identity without).
pub fn load_harness(dir: &Path) -> Result<(Harness, Names)> {
    let harness = Harness::load(dir)?;
    let manifest = dir.join(MANIFEST_FILE);
    let names = if manifest.exists() {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&manifest)?)
            .with_context(|| format!("parsing {}", manifest.display()))?;
        serde_json::from_value(v["names"].clone())
            .with_context(|| format!("{}: `names`", manifest.display()))?
    } else {
        Names::default()
    };
    Ok((harness, names))
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

/// Means over scored episodes.
pub fn summarise(label: &str, episodes: &[Trajectory], errors: usize) -> EvalSummary {
    let mut s = EvalSummary {
        harness: label.to_string(),
        episodes: episodes.len(),
        errors,
        ..EvalSummary::default()
    };
    let (mut right, mut skill_n) = (0usize, 0usize);
    for t in episodes {
        if let Some(ok) = right_tool(t) {
            s.tool_tasks += 1;
            right += usize::from(ok);
        }
        let sc = &t.scores;
        s.accuracy += sc.accuracy.unwrap_or(0.0);
        s.effectiveness += sc.effectiveness.unwrap_or(0.0);
        s.tool_rationality += sc.tool_rationality.unwrap_or(0.0);
        if let Some(x) = sc.skill_selection {
            s.skill_selection += x;
            skill_n += 1;
        }
        let ok = t
            .meta
            .get("success")
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        s.success += f64::from(u8::from(ok));
    }
    let n = s.episodes.max(1) as f64;
    s.right_tool = right as f64 / s.tool_tasks.max(1) as f64;
    s.accuracy /= n;
    s.effectiveness /= n;
    s.tool_rationality /= n;
    s.success /= n;
    s.skill_selection /= skill_n.max(1) as f64;
    s
}

/// A markdown table: one row per (model, harness set).
pub fn markdown(rows: &[(String, String, EvalSummary)]) -> String {
    let mut s = String::from(
        "| model | harness set | episodes | right tool | accuracy | effectiveness | tool rationality | skill selection |\n|---|---|---|---|---|---|---|---|\n",
    );
    for (model, set, e) in rows {
        s.push_str(&format!(
            "| {model} | {set} | {} | {:.3} ({} tool tasks) | {:.3} | {:.3} | {:.3} | {:.3} |\n",
            e.episodes,
            e.right_tool,
            e.tool_tasks,
            e.accuracy,
            e.effectiveness,
            e.tool_rationality,
            e.skill_selection
        ));
    }
    s
}
