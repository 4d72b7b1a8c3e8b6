//! Which number of a scored record a report or comparison reads, and how records are grouped: by
//! intent and by harness variant (original vs. the augmentation ops applied).

use serde_json::Value;

use crate::record::{Scores, Trajectory};

/// A per-record number read from `scores`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Accuracy,
    Effectiveness,
    ToolRationality,
    SkillSelection,
    /// Mean of the four reward dimensions that are set (the CoT term is a regulariser, not quality).
    Mean,
}

impl Metric {
    pub const DIMENSIONS: [Metric; 4] = [
        Metric::Accuracy,
        Metric::Effectiveness,
        Metric::ToolRationality,
        Metric::SkillSelection,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Accuracy => "accuracy",
            Metric::Effectiveness => "effectiveness",
            Metric::ToolRationality => "tool_rationality",
            Metric::SkillSelection => "skill_selection",
            Metric::Mean => "mean",
        }
    }

    /// The value, or `None` when the record has none (unscored, or the judge failed on it).
    pub fn get(self, s: &Scores) -> Option<f64> {
        match self {
            Metric::Accuracy => s.accuracy,
            Metric::Effectiveness => s.effectiveness,
            Metric::ToolRationality => s.tool_rationality,
            Metric::SkillSelection => s.skill_selection,
            Metric::Mean => {
                let set: Vec<f64> = Metric::DIMENSIONS.iter().filter_map(|m| m.get(s)).collect();
                (!set.is_empty()).then(|| set.iter().sum::<f64>() / set.len() as f64)
            }
        }
    }
}

/// The record's intent, or `"unknown"` for records without a task.
pub fn intent_key(t: &Trajectory) -> String {
    t.task.as_ref().map_or_else(
        || "unknown".to_string(),
        |task| task.intent.as_str().to_string(),
    )
}

/// `name@version` for the original harness, `name@version+op1+op2` for a variant (its ops' kinds,
/// sorted and deduplicated, so variants made by the same kinds of edit group together).
pub fn variant_key(t: &Trajectory) -> String {
    let Some(h) = &t.harness else {
        return "unknown".to_string();
    };
    let base = if h.version.is_empty() {
        h.name.clone()
    } else {
        format!("{}@{}", h.name, h.version)
    };
    let mut ops: Vec<String> = h
        .variant
        .iter()
        .flat_map(|v| &v.ops)
        .map(|op| match op {
            Value::Object(m) => m
                .get("op")
                .or_else(|| m.get("kind"))
                .and_then(Value::as_str)
                .unwrap_or("op")
                .to_string(),
            Value::String(s) => s.clone(),
            _ => "op".to_string(),
        })
        .collect();
    ops.sort();
    ops.dedup();
    if ops.is_empty() {
        base
    } else {
        format!("{base}+{}", ops.join("+"))
    }
}

/// The endpoint error an LLM judge left on a record it could not score.
pub fn judge_error(s: &Scores) -> Option<&str> {
    s.extra.get("judge_error").and_then(Value::as_str)
}
