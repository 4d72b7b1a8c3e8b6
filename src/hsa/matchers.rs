//! Hook matchers under tool renames. A matcher is a regex over tool names (`get_.*`); the identifier
//! substitution of `rename_tool` renames a plain name inside it but cannot follow a pattern, so after
//! a rename a matcher can silently stop matching a tool it matched before (a guard that no longer
//! guards) or start matching one it did not.
//!
//! [`drift`] finds such matchers; `Variant::draw` rejects a variant that has one. [`pin`], run by
//! `rename_tool` after its renames, rewrites each drifted matcher as the alternation of the new names
//! of exactly the tools it matched, the edit an operator would make.

use std::collections::HashMap;

use anyhow::Result;
use serde_json::{json, Map, Value};

use super::hooks::edit_hooks;
use super::ops::Ctx;
use crate::harness::hooks::MatcherGroup;
use crate::harness::problem::Problem;
use crate::harness::Harness;
use crate::record::Names;

/// For every tool-event matcher group of `base`: its position (event, group index) and the tools it
/// matches, by their names after `rename` (base → new name).
fn matched_by_group(
    base: &Harness,
    rename: impl Fn(&str) -> String,
) -> Vec<(crate::harness::hooks::HookEvent, usize, Vec<String>)> {
    let mut out = Vec::new();
    for e in base
        .hooks()
        .events
        .iter()
        .filter(|e| e.event.is_tool_event())
    {
        for (g, group) in e.groups.iter().enumerate() {
            let matched = base
                .tools()
                .iter()
                .filter(|t| group.matches(&t.name))
                .map(|t| rename(&t.name))
                .collect();
            out.push((e.event, g, matched));
        }
    }
    out
}

/// Whether `group` matches exactly `expected` among `tools`.
fn matches_exactly(group: &MatcherGroup, tools: &[String], expected: &[String]) -> bool {
    tools
        .iter()
        .all(|t| group.matches(t) == expected.contains(t))
}

/// Matchers of `variant` that no longer match the tools their counterpart in `base` matched, read
/// through `names` (base → variant tool names). Groups an op added have no counterpart and are not
/// checked.
pub fn drift(base: &Harness, variant: &Harness, names: &Names) -> Vec<Problem> {
    let file = variant
        .hooks_file()
        .unwrap_or("hooks/hooks.json")
        .to_string();
    let tools: Vec<String> = variant.tools().iter().map(|t| t.name.clone()).collect();
    let mut problems = Vec::new();
    for (event, g, expected) in matched_by_group(base, |t| names.tool_surface(t).to_string()) {
        let Some(group) = variant
            .hooks()
            .events
            .iter()
            .find(|e| e.event == event)
            .and_then(|e| e.groups.get(g))
        else {
            continue;
        };
        if !matches_exactly(group, &tools, &expected) {
            let now: Vec<&String> = tools.iter().filter(|t| group.matches(t)).collect();
            problems.push(Problem::field(
                file.clone(),
                format!("hooks.{event}[{g}].matcher"),
                format!(
                    "{:?} matches {now:?} after the renames; before them it matched the tools now named {expected:?}",
                    group.matcher.as_deref().unwrap_or_default()
                ),
            ));
        }
    }
    problems
}

/// Rewrites drifted matchers of the harness in `cx` after tool renames `rename` (base → new name)
/// as alternations of the new names; returns `{"matchers": {position: new matcher}}` when it did.
pub fn pin(cx: &mut Ctx<'_>, rename: &HashMap<String, String>) -> Result<Option<Value>> {
    let expected = matched_by_group(cx.base, |t| rename.get(t).cloned().unwrap_or(t.to_string()));
    let tools: Vec<String> = cx
        .harness()?
        .tools()
        .iter()
        .map(|t| t.name.clone())
        .collect();
    edit_hooks(cx, |config| {
        let mut pinned = Map::new();
        for (event, g, want) in &expected {
            let Some(group) = config
                .events
                .iter_mut()
                .find(|e| e.event == *event)
                .and_then(|e| e.groups.get_mut(*g))
            else {
                continue;
            };
            if matches_exactly(group, &tools, want) {
                continue;
            }
            let alternation: Vec<String> = want.iter().map(|t| regex::escape(t)).collect();
            let new = alternation.join("|");
            pinned.insert(format!("{event}[{g}]"), json!(new));
            group.matcher = Some(new);
        }
        (!pinned.is_empty()).then(|| json!({ "matchers": pinned }))
    })
}
