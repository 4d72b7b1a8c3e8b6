//! Propose: harness edits for a failure cluster. Two proposers share one output, [`Proposal`]: the
//! rule-based one below (offline, for the common clusters) and an OpenAI-compatible endpoint
//! (`endpoint.rs`). A proposal is only file edits plus why; `candidate::apply` decides whether it is
//! safe and valid.
//!
//! The rules, by cluster:
//! * skill not chosen (`no_skill`, `wrong_skill`): say *when* to use the skill in its description — what
//!   its tools are for and the viewers' own words from the cluster;
//! * another skill chosen (`wrong_skill`): tighten that skill's description with a "not for" clause;
//! * expected call not made (`missing_call`): add the viewers' words to the tool's description;
//! * replies cut at the limit (`reply_at_limit`): raise `max_reply_chars` by half;
//! * failed calls not retried (`fault_not_recovered`): raise `max_tool_calls` and `max_rounds`;
//! * invented numbers (`ungrounded_number`): add a `grounded_numbers` hook when the harness has none;
//! * a hook that keeps firing (`hook_fired`): every firing costs the viewer a retry round, so relax it
//!   by dropping it — the bluntest edit here, and the evaluation's job to reject when the hook was
//!   doing its work.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::candidate::FileEdit;
use super::diagnose::{Cluster, Kind};
use crate::harness::skills::Skill;
use crate::harness::Harness;
use crate::judge::verifiable::FailureKind;
use crate::record::{Names, Role, Trajectory};

/// Viewer messages quoted in a description.
const QUOTES: usize = 3;
/// Characters kept of a quoted viewer message.
const QUOTE_CHARS: usize = 24;

/// A proposed harness edit and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    /// What the edit does, in one line.
    pub title: String,
    /// The cluster it answers (`skill_selection/no_skill: shipping-info`).
    pub cluster: String,
    pub rationale: String,
    pub edits: Vec<FileEdit>,
    /// `rules`, or the endpoint's model name.
    pub source: String,
    /// The prompt sent to the endpoint and its raw answer, kept with the proposal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
}

/// What a proposer sees: the current harness, its names and the episodes the clusters came from.
pub struct Context<'a> {
    pub harness: &'a Harness,
    pub names: &'a Names,
    pub episodes: &'a [Trajectory],
}

impl Context<'_> {
    /// Up to [`QUOTES`] distinct viewer questions of the cluster's episodes (the message the host
    /// answered, without the viewer's nickname), shortened.
    fn quotes(&self, cluster: &Cluster) -> Vec<String> {
        let ids: Vec<&str> = cluster.examples.iter().map(String::as_str).collect();
        let mut out: Vec<String> = Vec::new();
        let members = self
            .episodes
            .iter()
            .filter(|t| ids.contains(&t.id.as_str()));
        for t in members {
            let Some(m) = t.messages.iter().rev().find(|m| m.role == Role::User) else {
                continue;
            };
            let said = m.text_content();
            let said = said
                .split_once(['：', ':'])
                .map_or(said.as_str(), |(_, words)| words);
            let text: String = said
                .trim()
                .chars()
                .filter(|c| !matches!(c, '“' | '”' | '"'))
                .take(QUOTE_CHARS)
                .collect();
            if !text.is_empty() && !out.contains(&text) {
                out.push(text);
            }
            if out.len() == QUOTES {
                break;
            }
        }
        out
    }
}

/// The rule-based proposals for `cluster`, best first; empty when no rule applies.
pub fn rules(cluster: &Cluster, cx: &Context<'_>) -> Vec<Proposal> {
    let h = cx.harness;
    let subject = cluster.key.subject.as_str();
    let quotes = cx.quotes(cluster);
    let said = quotes
        .iter()
        .map(|q| format!("“{q}”"))
        .collect::<Vec<_>>()
        .join("");
    let proposal = |title: String, rationale: String, edits: Vec<FileEdit>| Proposal {
        title,
        cluster: cluster.key.to_string(),
        rationale,
        edits,
        source: "rules".into(),
        prompt: None,
        response: None,
    };
    let Kind::Judge(kind) = cluster.key.kind else {
        return drop_hook(h, subject)
            .map(|edit| {
                proposal(
                    format!("relax hook {subject}: drop it"),
                    format!(
                        "{subject} fired in {} episodes, each a retry round the viewer waits for",
                        cluster.episodes
                    ),
                    vec![edit],
                )
            })
            .into_iter()
            .collect();
    };
    let mut out = Vec::new();
    match kind {
        FailureKind::NoSkill | FailureKind::WrongSkill => {
            if let Some(skill) = h.skill(cx.names.skill_surface(subject)) {
                let description = when_to_use(skill, h, &said);
                out.push(proposal(
                    format!("say when to use skill {} in its description", skill.name()),
                    format!(
                        "{} episodes needed {} and {}; its description (\"{}\") does not say which requests it serves",
                        cluster.episodes,
                        skill.name(),
                        if kind == FailureKind::NoSkill { "no skill was chosen" } else { "another skill was chosen" },
                        skill.description()
                    ),
                    vec![with_description(skill, h, description)],
                ));
            }
            let taken = cluster.instead.iter().max_by_key(|(_, n)| **n);
            if let Some(other) = taken.and_then(|(name, _)| h.skill(name)) {
                let description = format!(
                    "{} 不用于：观众问{said}时（用 {}）。",
                    other.description(),
                    cx.names.skill_surface(subject)
                );
                out.push(proposal(
                    format!("tighten skill {}: say what it is not for", other.name()),
                    format!(
                        "{} was chosen where {} was needed",
                        other.name(),
                        cx.names.skill_surface(subject)
                    ),
                    vec![with_description(other, h, description)],
                ));
            }
        }
        FailureKind::MissingCall => {
            if let Some(tool) = h.tool(cx.names.tool_surface(subject)) {
                if !said.is_empty() {
                    let mut spec = tool.clone();
                    spec.description = format!("{} 观众问{said}时调用。", tool.description);
                    out.push(proposal(
                        format!("say when to call tool {}", tool.name),
                        format!(
                            "{} episodes did not call {} when they needed it",
                            cluster.episodes, tool.name
                        ),
                        vec![FileEdit {
                            path: tool.file.clone(),
                            content: Some(spec.to_json_text()),
                        }],
                    ));
                }
            }
        }
        FailureKind::ReplyAtLimit => {
            let now = h.limits().max_reply_chars;
            let raised = (now + now / 2).min(8_000);
            if raised > now {
                out.push(proposal(
                    format!("raise max_reply_chars {now} → {raised}"),
                    format!(
                        "{} replies used the whole {now}-character limit and still left expected facts out",
                        cluster.episodes
                    ),
                    vec![set_limits(h, &[("max_reply_chars", raised)])],
                ));
            }
        }
        FailureKind::FaultNotRecovered => {
            let l = h.limits();
            let calls = (l.max_tool_calls + 4).min(256);
            let rounds = (l.max_rounds + 2).min(64);
            out.push(proposal(
                format!(
                    "raise max_tool_calls {} → {calls} and max_rounds {} → {rounds}",
                    l.max_tool_calls, l.max_rounds
                ),
                format!(
                    "{} episodes left a failed call to {subject} unretried; a retry needs a call and a round to spare",
                    cluster.episodes
                ),
                vec![set_limits(h, &[("max_tool_calls", calls), ("max_rounds", rounds)])],
            ));
        }
        FailureKind::UngroundedNumber => {
            if let Some(edit) = add_grounded_numbers_hook(h) {
                out.push(proposal(
                    "add a grounded_numbers hook before replies".into(),
                    format!(
                        "{} replies stated numbers no tool result or prompt gave",
                        cluster.episodes
                    ),
                    vec![edit],
                ));
            }
        }
        _ => {}
    }
    out
}

/// A description that says when to use `skill`: its heading, the description of the first tool its
/// body names (a skill's steps start with the call it is about, and a tool's description says when it
/// is called), and the viewers' words.
fn when_to_use(skill: &Skill, h: &Harness, said: &str) -> String {
    let heading = skill
        .body
        .lines()
        .find_map(|l| l.strip_prefix("# "))
        .unwrap_or(skill.name())
        .trim();
    let first_tool = h
        .tools()
        .iter()
        .filter_map(|t| Some((skill.body.find(&format!("`{}", t.name))?, t)))
        .min_by_key(|(at, _)| *at)
        .map(|(_, t)| t.description.clone());
    let mut text = format!("{heading}：{}", first_tool.unwrap_or_default());
    if !said.is_empty() {
        text += &format!(" 观众问{said}时使用。");
    }
    text
}

/// `SKILL.md` with the front matter's `description` line replaced, every other line as written.
fn with_description(skill: &Skill, h: &Harness, description: String) -> FileEdit {
    let text = h
        .files()
        .get(&skill.file)
        .map(|f| String::from_utf8_lossy(&f.bytes).into_owned())
        .unwrap_or_default();
    // A JSON string is a YAML double-quoted scalar.
    let line = format!("description: {}", Value::String(description.clone()));
    let mut replaced = false;
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            if !replaced && l.starts_with("description:") {
                replaced = true;
                line.clone()
            } else {
                l.to_string()
            }
        })
        .collect();
    let content = if replaced {
        lines.join("\n") + "\n"
    } else {
        let mut edited = skill.clone();
        edited.front.description = description;
        edited.to_markdown()
    };
    FileEdit {
        path: skill.file.clone(),
        content: Some(content),
    }
}

/// `harness.toml` with `[limits]` entries set, every other line kept as written.
fn set_limits(h: &Harness, entries: &[(&str, u64)]) -> FileEdit {
    let text = h
        .files()
        .get("harness.toml")
        .map(|f| String::from_utf8_lossy(&f.bytes).into_owned())
        .unwrap_or_default();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut section = String::new();
    let mut missing: BTreeMap<&str, u64> = entries.iter().copied().collect();
    for line in lines.iter_mut() {
        let t = line.trim();
        if t.starts_with('[') {
            section = t.to_string();
            continue;
        }
        if section != "[limits]" {
            continue;
        }
        let key = t.split('=').next().unwrap_or_default().trim();
        if let Some(v) = missing.remove(key) {
            *line = format!("{key} = {v}");
        }
    }
    if !missing.is_empty() {
        let at = match lines.iter().position(|l| l.trim() == "[limits]") {
            Some(i) => i + 1,
            None => {
                lines.push(String::new());
                lines.push("[limits]".into());
                lines.len()
            }
        };
        for (k, v) in missing.iter().rev() {
            lines.insert(at, format!("{k} = {v}"));
        }
    }
    FileEdit {
        path: "harness.toml".into(),
        content: Some(lines.join("\n") + "\n"),
    }
}

/// The hooks file with a `Stop` `grounded_numbers` check over every tool's results; `None` when the
/// harness has no hooks file or already has the check.
fn add_grounded_numbers_hook(h: &Harness) -> Option<FileEdit> {
    let file = h.hooks_file()?;
    let text = String::from_utf8_lossy(&h.files().get(file)?.bytes).into_owned();
    if text.contains("grounded_numbers") {
        return None;
    }
    let mut doc: Value = serde_json::from_str(&text).ok()?;
    let sources: Vec<&str> = h.tools().iter().map(|t| t.name.as_str()).collect();
    let stop = doc
        .pointer_mut("/hooks")?
        .as_object_mut()?
        .entry("Stop")
        .or_insert_with(|| json!([]))
        .as_array_mut()?;
    stop.push(json!({"hooks": [{
        "type": "builtin",
        "check": "grounded_numbers",
        "params": {"kinds": ["price", "stock", "discount"], "sources": sources},
        "on_fail": "retry",
        "max_retries": 1,
        "feedback": {"as": "system", "template": "Numbers not found in this turn's tool results: {{ numbers | join(', ') }}. Call a tool first or leave them out."}
    }]}));
    Some(FileEdit {
        path: file.to_string(),
        content: Some(serde_json::to_string_pretty(&doc).ok()? + "\n"),
    })
}

/// The hooks file without the hooks labelled `label` (a built-in check's name, or a command's file
/// name, as `meta.hooks_fired` names them); matcher groups and events left empty go too.
fn drop_hook(h: &Harness, label: &str) -> Option<FileEdit> {
    let file = h.hooks_file()?;
    let mut doc: Value = serde_json::from_slice(&h.files().get(file)?.bytes).ok()?;
    let events = doc.pointer_mut("/hooks")?.as_object_mut()?;
    let is_it = |hook: &Value| {
        hook.get("check").and_then(Value::as_str) == Some(label)
            || hook
                .get("command")
                .and_then(Value::as_str)
                .is_some_and(|c| c.rsplit('/').next() == Some(label))
    };
    let mut dropped = false;
    for groups in events.values_mut() {
        let Some(groups) = groups.as_array_mut() else {
            continue;
        };
        for group in groups.iter_mut() {
            if let Some(hooks) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                let before = hooks.len();
                hooks.retain(|hook| !is_it(hook));
                dropped |= hooks.len() < before;
            }
        }
        groups.retain(|g| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_none_or(|v| !v.is_empty())
        });
    }
    events.retain(|_, groups| groups.as_array().is_none_or(|v| !v.is_empty()));
    if !dropped {
        return None;
    }
    Some(FileEdit {
        path: file.to_string(),
        content: Some(serde_json::to_string_pretty(&doc).ok()? + "\n"),
    })
}
