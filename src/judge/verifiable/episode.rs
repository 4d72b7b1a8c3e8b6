//! The scored turn of a trajectory, read once: the calls the assistant made (surface name, canonical id
//! through the harness's name map, parsed arguments, the tool result paired with each), the final
//! reply, the viewer's words, the reasoning text and the active limits. Every dimension scores this view,
//! so they agree on what "the turn" and "the reply" are.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::{Map, Value};

use crate::record::{Expected, Names, Role, Trajectory};

/// One tool call of the turn.
#[derive(Debug, Clone)]
pub struct Call {
    /// The name the assistant called.
    pub surface: String,
    /// The canonical id behind it; `None` when the name is not one of this variant's tools (either not
    /// offered at all, or the old name of a renamed tool).
    pub canonical: Option<String>,
    /// Parsed arguments in canonical keys (through `names.params`), or why they do not parse.
    pub args: Result<Map<String, Value>, String>,
    /// The tool message answering this call, if any.
    pub result: Option<String>,
}

impl Call {
    /// Whether the result is a failure the assistant had to handle: no answer, an `error` object, an
    /// empty object, JSON cut off mid-document, or an HTML error page. Plain text (a skill body) is an
    /// answer.
    pub fn failed(&self) -> bool {
        let Some(text) = &self.result else {
            return true;
        };
        let t = text.trim_start();
        if t.is_empty() || t.starts_with('<') {
            return true;
        }
        if !t.starts_with('{') && !t.starts_with('[') {
            return false;
        }
        match serde_json::from_str::<Value>(t) {
            Ok(Value::Object(map)) => map.is_empty() || map.contains_key("error"),
            Ok(_) => false,
            Err(_) => true,
        }
    }
}

/// Where the reply-length limit came from, for the reason text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitSource {
    Meta,
    Harness,
    SystemPrompt,
}

impl LimitSource {
    pub fn as_str(self) -> &'static str {
        match self {
            LimitSource::Meta => "meta.limits",
            LimitSource::Harness => "harness.limits",
            LimitSource::SystemPrompt => "system prompt",
        }
    }
}

/// The scored turn.
#[derive(Debug, Clone)]
pub struct Episode<'a> {
    pub expected: Option<&'a Expected>,
    pub names: Names,
    /// Surface names of the tools the record offered; empty when the record lists none.
    pub offered: Vec<&'a str>,
    pub calls: Vec<Call>,
    /// The last assistant message of the turn when it carries no tool calls.
    pub reply: Option<String>,
    /// The viewer's messages of the turn, joined.
    pub user: String,
    /// The system prompt(s), joined: the prompt pipeline puts product info and room state there.
    pub system: String,
    /// Reasoning of every assistant message of the turn, joined.
    pub reasoning: String,
    pub max_reply_chars: Option<(u64, LimitSource)>,
}

impl<'a> Episode<'a> {
    /// Read the turn that starts at `meta.turn_start` (0 when absent: the whole conversation).
    pub fn read(traj: &'a Trajectory) -> Episode<'a> {
        let expected = traj.task.as_ref().and_then(|t| t.expected.as_ref());
        let names = traj.names();
        let turn = traj.current_turn();
        let offered: Vec<&str> = traj
            .tools
            .iter()
            .map(|t| t.function.name.as_str())
            .collect();

        let mut calls: Vec<Call> = Vec::new();
        let mut ids: Vec<String> = Vec::new();
        let (mut user, mut reasoning) = (String::new(), String::new());
        for m in turn {
            match m.role {
                Role::User => push_line(&mut user, &m.text_content()),
                Role::Assistant => {
                    if let Some(r) = &m.reasoning_content {
                        push_line(&mut reasoning, r);
                    } else if let Some(think) = think_block(&m.text_content()) {
                        push_line(&mut reasoning, &think);
                    }
                    for c in &m.tool_calls {
                        let canonical = resolve_tool(&names, &offered, &c.function.name);
                        let args = c
                            .function
                            .parsed_arguments()
                            .map(|a| match &canonical {
                                Some(t) => names.args_canonical(t, &a),
                                None => a,
                            })
                            .map_err(|e| e.to_string());
                        calls.push(Call {
                            surface: c.function.name.clone(),
                            canonical,
                            args,
                            result: None,
                        });
                        ids.push(c.id.clone());
                    }
                }
                Role::Tool => {
                    // Pair by tool_call_id; a result without a usable id answers the oldest open call.
                    let content = m.text_content();
                    let by_id = m
                        .tool_call_id
                        .as_deref()
                        .filter(|id| !id.is_empty())
                        .and_then(|id| ids.iter().position(|x| x == id))
                        .filter(|&i| calls[i].result.is_none());
                    let slot = by_id.or_else(|| calls.iter().position(|c| c.result.is_none()));
                    if let Some(i) = slot {
                        calls[i].result = Some(content);
                    }
                }
                Role::System | Role::Developer => {}
            }
        }
        let system: String = traj
            .messages
            .iter()
            .filter(|m| matches!(m.role, Role::System | Role::Developer))
            .map(|m| m.text_content())
            .collect::<Vec<_>>()
            .join("\n");
        let reply = turn
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .filter(|m| m.tool_calls.is_empty())
            .map(|m| strip_think(&m.text_content()))
            .filter(|r| !r.trim().is_empty());
        let max_reply_chars = limit_from(&traj.meta, LimitSource::Meta)
            .or_else(|| {
                traj.harness
                    .as_ref()
                    .and_then(|h| limit_from(&h.extra, LimitSource::Harness))
            })
            .or_else(|| limit_in_prompt(&system).map(|n| (n, LimitSource::SystemPrompt)));
        Episode {
            expected,
            names,
            offered,
            calls,
            reply,
            user,
            system,
            reasoning,
            max_reply_chars,
        }
    }

    /// Tool results of the turn, in call order.
    pub fn results(&self) -> impl Iterator<Item = &str> {
        self.calls.iter().filter_map(|c| c.result.as_deref())
    }
}

/// The canonical id of a called name, if the record offered it. A record without a tools list cannot
/// tell offered from invented names, so the name map alone decides there.
fn resolve_tool(names: &Names, offered: &[&str], surface: &str) -> Option<String> {
    if !offered.is_empty() && !offered.contains(&surface) {
        return None;
    }
    names.tool_canonical(surface).map(str::to_string)
}

fn push_line(buf: &mut String, text: &str) {
    if !buf.is_empty() {
        buf.push('\n');
    }
    buf.push_str(text);
}

/// `{"limits": {"max_reply_chars": N}}` in a meta or harness object.
fn limit_from(map: &Map<String, Value>, source: LimitSource) -> Option<(u64, LimitSource)> {
    let n = map.get("limits")?.get("max_reply_chars")?;
    n.as_u64()
        .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
        .map(|n| (n, source))
}

/// The reply limit as the prompt pipeline words it ("不超过 120 个字", "within 120 characters", "at most
/// 120 characters"). The tightest one wins when the prompt states several.
fn limit_in_prompt(system: &str) -> Option<u64> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"(?i)(?:不超过|不得超过|不要超过|少于|以内)\s*(\d+)\s*(?:个)?(?:字|字符)|(?:within|at most|no more than|under|max(?:imum)?(?: of)?)\s+(\d+)\s+(?:characters|chars)")
            .expect("limit pattern is valid")
    });
    re.captures_iter(system)
        .filter_map(|c| {
            c.get(1)
                .or_else(|| c.get(2))
                .and_then(|m| m.as_str().parse::<u64>().ok())
        })
        .min()
}

/// The text inside a leading `<think>…</think>` block, for models that inline their reasoning.
fn think_block(content: &str) -> Option<String> {
    let rest = content.trim_start().strip_prefix("<think>")?;
    let end = rest.find("</think>")?;
    Some(rest[..end].trim().to_string())
}

/// The content without a leading `<think>…</think>` block: the spoken reply.
fn strip_think(content: &str) -> String {
    let trimmed = content.trim_start();
    match trimmed
        .strip_prefix("<think>")
        .and_then(|rest| rest.find("</think>").map(|e| &rest[e + 8..]))
    {
        Some(after) => after.trim().to_string(),
        None => content.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_limits_take_the_tightest_wording() {
        assert_eq!(
            limit_in_prompt(
                "每条回复不超过 120 个字，口语化。Keep every reply within 120 characters"
            ),
            Some(120)
        );
        assert_eq!(
            limit_in_prompt("Reply in at most 300 characters; no more than 80 chars when busy"),
            Some(80)
        );
        assert_eq!(limit_in_prompt("回复不超过60字"), Some(60));
        assert_eq!(limit_in_prompt("be brief"), None);
    }

    #[test]
    fn think_blocks_split_from_the_reply() {
        assert_eq!(
            think_block("<think>price?</think>¥199"),
            Some("price?".into())
        );
        assert_eq!(strip_think("<think>price?</think> ¥199"), "¥199");
        assert_eq!(strip_think("plain"), "plain");
    }
}
