//! Injected tool faults: the ways a production tool service fails, drawn per call from a seeded plan so
//! a rollout is reproducible. Faults are transient (each call draws afresh), as network and backend
//! errors mostly are, so retrying is the right recovery and the simulator can reward it.

use std::str::FromStr;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// The service does not answer before the deadline.
    Timeout,
    /// The answer is truncated or not JSON at all.
    Malformed,
    /// The service refuses the caller.
    PermissionDenied,
    /// The service answers with no data.
    Empty,
}

impl FaultKind {
    pub const ALL: [FaultKind; 4] = [
        FaultKind::Timeout,
        FaultKind::Malformed,
        FaultKind::PermissionDenied,
        FaultKind::Empty,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Timeout => "timeout",
            FaultKind::Malformed => "malformed",
            FaultKind::PermissionDenied => "permission_denied",
            FaultKind::Empty => "empty",
        }
    }

    fn from_name(name: &str) -> Option<FaultKind> {
        match name {
            "timeout" => Some(FaultKind::Timeout),
            "malformed" => Some(FaultKind::Malformed),
            "permission_denied" | "denied" | "permission" => Some(FaultKind::PermissionDenied),
            "empty" => Some(FaultKind::Empty),
            _ => None,
        }
    }
}

/// One rate: `kind` happens with probability `rate` on calls to `tool` (canonical id; `None` = every tool).
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRate {
    pub tool: Option<String>,
    pub kind: FaultKind,
    pub rate: f64,
}

/// Which faults to inject and how often.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultPlan {
    pub rates: Vec<FaultRate>,
    /// The tool deadline a timeout exceeds, in milliseconds.
    pub deadline_ms: u64,
}

impl Default for FaultPlan {
    fn default() -> FaultPlan {
        FaultPlan {
            rates: Vec::new(),
            deadline_ms: 3_000,
        }
    }
}

impl FromStr for FaultPlan {
    type Err = anyhow::Error;

    /// `timeout=0.1,malformed=0.05,check_inventory:denied=0.2,empty=0.05`; empty string = no faults.
    fn from_str(s: &str) -> Result<FaultPlan> {
        let mut plan = FaultPlan::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (lhs, rate) = part
                .split_once('=')
                .with_context(|| format!("fault '{part}' is not [tool:]kind=rate"))?;
            let (tool, kind) = match lhs.split_once(':') {
                Some((t, k)) => (Some(t.trim().to_string()), k.trim()),
                None => (None, lhs.trim()),
            };
            let kind = FaultKind::from_name(kind).with_context(|| {
                format!(
                    "unknown fault kind '{kind}' (timeout, malformed, permission_denied, empty)"
                )
            })?;
            let rate: f64 = rate
                .trim()
                .parse()
                .with_context(|| format!("rate of '{lhs}' is not a number"))?;
            if !(0.0..=1.0).contains(&rate) {
                bail!("rate of '{lhs}' must be in [0, 1], got {rate}");
            }
            plan.rates.push(FaultRate { tool, kind, rate });
        }
        let total: f64 = FaultKind::ALL
            .iter()
            .map(|k| {
                plan.rates
                    .iter()
                    .filter(|r| r.kind == *k && r.tool.is_none())
                    .map(|r| r.rate)
                    .sum::<f64>()
            })
            .sum();
        if total > 1.0 {
            bail!("fault rates for all tools add up to {total} > 1");
        }
        Ok(plan)
    }
}

impl FaultPlan {
    pub fn is_empty(&self) -> bool {
        self.rates.iter().all(|r| r.rate == 0.0)
    }

    /// At most one fault for this call: kinds are tried in plan order against one uniform draw.
    pub fn draw(&self, rng: &mut Rng, tool: &str) -> Option<FaultKind> {
        if self.is_empty() {
            return None;
        }
        let mut x = rng.unit();
        for r in &self.rates {
            if r.tool.as_deref().is_some_and(|t| t != tool) {
                continue;
            }
            if x < r.rate {
                return Some(r.kind);
            }
            x -= r.rate;
        }
        None
    }

    /// The content the caller sees instead of `good` (the real result) when `kind` strikes.
    pub fn render(&self, rng: &mut Rng, kind: FaultKind, tool: &str, good: &str) -> String {
        match kind {
            FaultKind::Timeout => json!({"error": {"code": "timeout",
                "message": format!("{tool} did not answer within {} ms", self.deadline_ms)}})
            .to_string(),
            FaultKind::PermissionDenied => json!({"error": {"code": "permission_denied",
                "message": format!("the live-room service account may not call {tool} right now")}})
            .to_string(),
            FaultKind::Empty => "{}".to_string(),
            FaultKind::Malformed => {
                if rng.chance(0.5) && good.chars().count() > 2 {
                    // Cut mid-document, as a dropped connection does.
                    let n = good.chars().count();
                    good.chars().take(1 + rng.below(n - 1)).collect()
                } else {
                    "<html><body>502 Bad Gateway</body></html>".to_string()
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_parse_and_draw_at_their_rates() {
        let plan: FaultPlan = "timeout=0.2, malformed=0.1, check_inventory:denied=1"
            .parse()
            .unwrap();
        assert_eq!(plan.rates.len(), 3);
        let mut rng = Rng::new(4);
        let n = 20_000;
        let timeouts = (0..n)
            .filter(|_| plan.draw(&mut rng, "get_promotions") == Some(FaultKind::Timeout))
            .count();
        assert!((3_600..4_400).contains(&timeouts), "{timeouts}");
        // Per-tool rates apply to that tool only.
        assert!((0..1000)
            .all(|_| plan.draw(&mut rng, "get_promotions") != Some(FaultKind::PermissionDenied)));
        assert!("timeout=2".parse::<FaultPlan>().is_err());
        assert!("boom=0.1".parse::<FaultPlan>().is_err());
        assert!("timeout=0.6,empty=0.6".parse::<FaultPlan>().is_err());
        assert!("".parse::<FaultPlan>().unwrap().is_empty());
    }

    #[test]
    fn malformed_output_is_not_valid_json() {
        let plan = FaultPlan::default();
        let good = r#"{"product_id":"p001","price":199}"#;
        let mut rng = Rng::new(1);
        for _ in 0..50 {
            let bad = plan.render(&mut rng, FaultKind::Malformed, "t", good);
            assert!(
                serde_json::from_str::<serde_json::Value>(&bad).is_err(),
                "{bad}"
            );
        }
    }
}
