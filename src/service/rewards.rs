//! The rewards of a judged episode as both services return them: each dimension of the verifiable
//! judge on its own (GDPO normalises each in its group, so they must not arrive pre-summed), and one
//! scalar for engines that take a single reward (OpenRLHF, a plain verl `compute_score`).
//!
//! The scalar: `score` is the mean of the observable dimensions among accuracy, effectiveness, tool
//! rationality and skill selection (in [0, 1]; what OpenRLHF's dynamic filtering reads), and
//! `reward = score + cot_length` (the chain-of-thought length term, 0 down to −0.1). A dimension the
//! judge cannot observe for the record (no expected skill, say) is `null` and left out of the mean,
//! never counted as 0.

use serde_json::{json, Map, Value};

use crate::agent::rollout::mark_success;
use crate::judge::verifiable::{score, TokenCounter};
use crate::record::{Scores, Trajectory};

/// The reward dimensions, in the judge's names.
pub const DIMENSIONS: [&str; 5] = [
    "accuracy",
    "effectiveness",
    "tool_rationality",
    "skill_selection",
    "cot_length",
];

/// A dimension's value in `scores`.
pub fn dimension(scores: &Scores, name: &str) -> Option<f64> {
    match name {
        "accuracy" => scores.accuracy,
        "effectiveness" => scores.effectiveness,
        "tool_rationality" => scores.tool_rationality,
        "skill_selection" => scores.skill_selection,
        "cot_length" => scores.cot_length,
        _ => None,
    }
}

/// What one judged episode is worth.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewards {
    /// Dimension → value, `None` where the judge could not observe it.
    pub dimensions: Vec<(&'static str, Option<f64>)>,
    pub score: f64,
    pub reward: f64,
    /// The simulator's pass/fail check against the ground truth.
    pub success: bool,
    /// Why the record could not be judged at all (no ground truth), if so.
    pub unscorable: Option<String>,
}

impl Rewards {
    /// Score `traj` in place with the verifiable judge (`scores`, and `meta.success` with
    /// `meta.failures` as `hat sim rollout` writes them) and read off its rewards.
    pub fn judge(traj: &mut Trajectory, counter: &TokenCounter) -> Rewards {
        mark_success(traj);
        score(traj, counter);
        Rewards::of(traj)
    }

    /// The rewards of an already scored record.
    pub fn of(traj: &Trajectory) -> Rewards {
        let s = &traj.scores;
        let dimensions: Vec<(&'static str, Option<f64>)> =
            DIMENSIONS.iter().map(|d| (*d, dimension(s, d))).collect();
        let observed: Vec<f64> = dimensions[..4].iter().filter_map(|(_, v)| *v).collect();
        let score = if observed.is_empty() {
            0.0
        } else {
            observed.iter().sum::<f64>() / observed.len() as f64
        };
        Rewards {
            score,
            reward: score + s.cot_length.unwrap_or(0.0),
            success: traj
                .meta
                .get("success")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            unscorable: s
                .extra
                .get("unscorable")
                .and_then(Value::as_str)
                .map(str::to_string),
            dimensions,
        }
    }

    /// `{"accuracy": …, …}` with `null` for unobserved dimensions.
    pub fn dimensions_json(&self) -> Value {
        let map: Map<String, Value> = self
            .dimensions
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        Value::Object(map)
    }

    /// The fields both services put in a finished episode's answer.
    pub fn to_json(&self, traj: &Trajectory) -> Value {
        let mut v = json!({
            "id": traj.id,
            "reward": self.reward,
            "score": self.score,
            "rewards": self.dimensions_json(),
            "success": self.success,
        });
        if let Some(why) = &self.unscorable {
            v["unscorable"] = json!(why);
        }
        for key in ["reasons", "failures"] {
            if let Some(x) = traj.scores.extra.get(key) {
                v[key] = x.clone();
            }
        }
        v
    }
}
