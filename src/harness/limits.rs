//! Numeric limits of a harness (`[limits]` in `harness.toml`).
//!
//! They are data, not prompt text: templates read them as `limits.max_reply_chars` etc., the
//! built-in `reply_length` hook defaults to `max_reply_chars`, and the agent runtime enforces
//! `max_rounds`/`max_tool_calls`/`slo_e2e_ms`. The augmentation stage perturbs them and everything
//! downstream (prompt wording, checks, budgets) follows.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Model turns (assistant messages) per viewer message, tool rounds included.
    #[serde(default = "d_max_rounds")]
    pub max_rounds: u64,
    /// Tool calls per viewer message.
    #[serde(default = "d_max_tool_calls")]
    pub max_tool_calls: u64,
    /// Characters (Unicode scalar values) in one spoken reply.
    #[serde(default = "d_max_reply_chars")]
    pub max_reply_chars: u64,
    /// End-to-end latency budget of one answer, in milliseconds.
    #[serde(default = "d_slo_e2e_ms")]
    pub slo_e2e_ms: u64,
}

fn d_max_rounds() -> u64 {
    6
}
fn d_max_tool_calls() -> u64 {
    8
}
fn d_max_reply_chars() -> u64 {
    200
}
fn d_slo_e2e_ms() -> u64 {
    15_000
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_rounds: d_max_rounds(),
            max_tool_calls: d_max_tool_calls(),
            max_reply_chars: d_max_reply_chars(),
            slo_e2e_ms: d_slo_e2e_ms(),
        }
    }
}

impl Limits {
    /// Every limit with its value and allowed inclusive range, in declaration order. Ranges are
    /// generous but exclude values that make an agent useless or unbounded.
    pub fn checked_entries(&self) -> [(&'static str, u64, u64, u64); 4] {
        [
            ("max_rounds", self.max_rounds, 1, 64),
            ("max_tool_calls", self.max_tool_calls, 0, 256),
            ("max_reply_chars", self.max_reply_chars, 10, 8_000),
            ("slo_e2e_ms", self.slo_e2e_ms, 100, 600_000),
        ]
    }
}
