//! Skill selection: the skill the assistant chose maps back to the task's expected skill.
//!
//! The choice is observable in two ways: calls to the harness's skill-loading tool (canonical
//! `load_skill`, under its surface name, argument `name` holding the skill's surface name), or a skill
//! the runtime declared in `meta.skill` / `meta.skills` (surface names). Surface names go back to
//! canonical ids through `harness.names.skills`; an old name of a renamed skill maps to nothing.
//! Score: 1 when the expected skill was chosen among at most two skills, 0.5 when it was chosen among
//! more (loading everything is not selecting), 0 when it was not chosen.

use serde_json::Value;

use super::episode::Episode;
use super::{Dimension, FailureKind};
use crate::record::Trajectory;

/// Skills that may be loaded next to the chosen one without counting as shotgun loading.
const FOCUSED: usize = 2;

/// `None` when there is nothing to score: no expected skill, or no observable choice.
pub fn score(traj: &Trajectory, ep: &Episode) -> Option<Dimension> {
    let want = ep.expected.and_then(|e| e.skill.as_deref())?;
    let load = ep.names.tool_surface("load_skill");
    let mut chosen: Vec<&str> = ep
        .calls
        .iter()
        .filter(|c| c.surface == load && c.canonical.is_some())
        .filter_map(|c| c.args.as_ref().ok()?.get("name")?.as_str())
        .collect();
    if let Some(Value::String(s)) = traj.meta.get("skill") {
        chosen.push(s);
    }
    if let Some(Value::Array(list)) = traj.meta.get("skills") {
        chosen.extend(list.iter().filter_map(Value::as_str));
    }
    let mut seen: Vec<&str> = Vec::new();
    chosen.retain(|s| {
        if seen.contains(s) {
            false
        } else {
            seen.push(s);
            true
        }
    });
    let offered = ep.offered.is_empty() || ep.offered.contains(&load);
    if chosen.is_empty() && !offered {
        return None;
    }
    let canonical: Vec<Option<&str>> = chosen.iter().map(|s| ep.names.skill_canonical(s)).collect();
    let unknown: Vec<&str> = chosen
        .iter()
        .zip(&canonical)
        .filter(|(_, c)| c.is_none())
        .map(|(s, _)| *s)
        .collect();
    let hit = canonical.contains(&Some(want));
    let surface = ep.names.skill_surface(want);
    let mut reason = match (hit, chosen.len()) {
        (_, 0) => format!("chose no skill; expected {surface} ({want})"),
        (true, n) if n <= FOCUSED => format!("chose {surface} ({want})"),
        (true, n) => format!("chose {surface} ({want}) among {n} skills"),
        (false, _) => format!("chose {} instead of {surface} ({want})", chosen.join(", ")),
    };
    if !unknown.is_empty() {
        reason.push_str(&format!(
            "; names not in this harness: {}",
            unknown.join(", ")
        ));
    }
    let value = match (hit, chosen.len()) {
        (true, n) if n <= FOCUSED => 1.0,
        (true, _) => 0.5,
        (false, _) => 0.0,
    };
    let shortfall = match (hit, chosen.len()) {
        (_, 0) => Some(FailureKind::NoSkill),
        (true, n) if n <= FOCUSED => None,
        (true, _) => Some(FailureKind::TooManySkills),
        (false, _) => Some(FailureKind::WrongSkill),
    };
    let mut d = Dimension::new(value, reason);
    if let Some(kind) = shortfall {
        d = d.with_shortfall(kind, want);
    }
    Some(d)
}
