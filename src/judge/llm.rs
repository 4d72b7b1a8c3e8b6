//! The LLM judge: a harness-aware Agent-as-a-Judge prompt (the episode, its tool results, the ground
//! truth in the *variant's* surface names and the active limits) sent to any OpenAI-compatible endpoint,
//! with a structured JSON verdict.
//!
//! * Pointwise: `{"accuracy": 0-1, "effectiveness": 0-1, "reason": …}` into `scores` (`judge:
//!   "llm:<model>"`, the reason in `scores.reasons`).
//! * Pairwise: the two episodes in both orders (A/B, then B/A); a winner counts only when both orders
//!   name it, otherwise the pair is a tie (FastChat's rule against position bias).
//! * An endpoint or verdict failure leaves the record's judged dimensions unset and the error in
//!   `scores.judge_error`, and is counted; it is never a silent 0.
//!
//! Prompts are minijinja templates; the defaults ship in `templates/judge/` and are compiled in, and a
//! user template gets the same context (see `context`).

use anyhow::{anyhow, bail, Context, Result};
use minijinja::Environment;
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::endpoint::Endpoint;
use super::metric::variant_key;
use super::verifiable::episode::Episode;
use crate::record::{Role, Trajectory};

pub const POINTWISE_TEMPLATE: &str = include_str!("../../templates/judge/pointwise.j2");
pub const PAIRWISE_TEMPLATE: &str = include_str!("../../templates/judge/pairwise.j2");

/// A pointwise verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pointwise {
    pub accuracy: f64,
    pub effectiveness: f64,
    pub reason: String,
}

/// Who won a pairwise comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Winner {
    A,
    B,
    #[serde(rename = "tie")]
    Tie,
}

/// The pairwise verdict after the position swap.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pairwise {
    pub winner: Winner,
    /// The verdict with A shown first.
    pub first: Winner,
    /// The verdict with B shown first, mapped back to A/B.
    pub swapped: Winner,
    pub consistent: bool,
}

/// Whether a call was answered from the cache, or failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Tally {
    pub requests: u64,
    pub cached: u64,
    pub failed: u64,
}

pub struct LlmJudge {
    endpoint: Endpoint,
    env: Environment<'static>,
}

impl LlmJudge {
    /// A judge with the given template source (or the shipped default); a template that does not
    /// compile is an error here, before any record is read.
    pub fn new(
        endpoint: Endpoint,
        pointwise: Option<String>,
        pairwise: Option<String>,
    ) -> Result<LlmJudge> {
        let mut env = Environment::new();
        env.add_template_owned(
            "pointwise",
            pointwise.unwrap_or_else(|| POINTWISE_TEMPLATE.to_string()),
        )
        .context("the pointwise judge template does not compile")?;
        env.add_template_owned(
            "pairwise",
            pairwise.unwrap_or_else(|| PAIRWISE_TEMPLATE.to_string()),
        )
        .context("the pairwise judge template does not compile")?;
        Ok(LlmJudge { endpoint, env })
    }

    pub fn name(&self) -> String {
        format!("llm:{}", self.endpoint.model())
    }

    /// The pointwise prompt for a record.
    pub fn pointwise_prompt(&self, t: &Trajectory) -> Result<String> {
        let ctx = context(t);
        self.env
            .get_template("pointwise")?
            .render(&ctx)
            .context("cannot render the pointwise template")
    }

    /// The pairwise prompt with `first` shown as A.
    pub fn pairwise_prompt(&self, first: &Trajectory, second: &Trajectory) -> Result<String> {
        let a = context(first);
        let b = context(second);
        let mut ctx = a.clone();
        ctx["conversation_a"] = a["conversation"].clone();
        ctx["reply_a"] = a["reply"].clone();
        ctx["conversation_b"] = b["conversation"].clone();
        ctx["reply_b"] = b["reply"].clone();
        self.env
            .get_template("pairwise")?
            .render(&ctx)
            .context("cannot render the pairwise template")
    }

    /// Judge one record; the tally counts the request.
    pub fn pointwise(&self, t: &Trajectory, tally: &mut Tally) -> Result<Pointwise> {
        let prompt = self.pointwise_prompt(t)?;
        let text = self.ask(&prompt, tally)?;
        parse_pointwise(&text)
    }

    /// Score `t` in place; on failure the error goes into `scores.judge_error`.
    pub fn score(&self, t: &mut Trajectory, tally: &mut Tally) {
        let verdict = self.pointwise(t, tally);
        let s = &mut t.scores;
        match verdict {
            Ok(v) => {
                s.accuracy = Some(v.accuracy);
                s.effectiveness = Some(v.effectiveness);
                s.judge = Some(self.name());
                s.extra.remove("judge_error");
                let reasons = s
                    .extra
                    .entry("reasons")
                    .or_insert_with(|| Value::Object(Map::new()));
                if !reasons.is_object() {
                    *reasons = Value::Object(Map::new());
                }
                reasons["llm"] = json!(v.reason);
            }
            Err(e) => {
                tally.failed += 1;
                s.accuracy = None;
                s.effectiveness = None;
                s.judge = Some(self.name());
                s.extra
                    .insert("judge_error".into(), json!(format!("{e:#}")));
            }
        }
    }

    /// Compare `a` with `b` in both orders.
    pub fn pairwise(&self, a: &Trajectory, b: &Trajectory, tally: &mut Tally) -> Result<Pairwise> {
        let first = parse_winner(&self.ask(&self.pairwise_prompt(a, b)?, tally)?)?;
        let swapped = match parse_winner(&self.ask(&self.pairwise_prompt(b, a)?, tally)?)? {
            Winner::A => Winner::B,
            Winner::B => Winner::A,
            Winner::Tie => Winner::Tie,
        };
        let consistent = first == swapped;
        let winner = if consistent { first } else { Winner::Tie };
        Ok(Pairwise {
            winner,
            first,
            swapped,
            consistent,
        })
    }

    fn ask(&self, prompt: &str, tally: &mut Tally) -> Result<String> {
        tally.requests += 1;
        let (text, cached) = self.endpoint.complete(prompt)?;
        if cached {
            tally.cached += 1;
        }
        Ok(text)
    }
}

/// The template context of a record: `intent`, `harness {name, version, ops}`, `limits
/// {max_reply_chars}`, `tools` (surface names), `expected` (in surface names: `skill`, `tool_calls
/// [{tool, args}]`, `facts`, `forbidden`, `silent`, `clarify`), `conversation [{role, name, text}]`
/// (the scored turn up to the final reply) and `reply`.
pub fn context(t: &Trajectory) -> Value {
    let ep = Episode::read(t);
    let names = &ep.names;
    let expected = ep.expected.map(|e| {
        json!({
            "skill": e.skill.as_deref().map(|s| names.skill_surface(s)),
            "tool_calls": e.tool_calls.iter().map(|c| json!({"tool": names.tool_surface(&c.tool), "args": c.args})).collect::<Vec<_>>(),
            "facts": e.facts, "forbidden": e.forbidden, "silent": e.silent, "clarify": e.clarify,
        })
    });
    let start = t
        .meta
        .get("turn_start")
        .and_then(Value::as_u64)
        .unwrap_or(0) as usize;
    let mut turn: Vec<&crate::record::Message> =
        t.messages.get(start..).unwrap_or(&[]).iter().collect();
    if ep.reply.is_some() {
        turn.pop();
    }
    let mut call_names: Vec<(String, String)> = Vec::new();
    let conversation: Vec<Value> = turn
        .iter()
        .filter(|m| !matches!(m.role, Role::System | Role::Developer))
        .map(|m| match m.role {
            Role::Assistant if !m.tool_calls.is_empty() => {
                let calls: Vec<String> = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        call_names.push((c.id.clone(), c.function.name.clone()));
                        format!("{}({})", c.function.name, c.function.arguments)
                    })
                    .collect();
                json!({"role": "assistant", "text": format!("calls {}", calls.join(", "))})
            }
            Role::Tool => {
                let name = m.name.clone().or_else(|| {
                    m.tool_call_id.as_ref().and_then(|id| {
                        call_names
                            .iter()
                            .find(|(i, _)| i == id)
                            .map(|(_, n)| n.clone())
                    })
                });
                json!({"role": "tool", "name": name, "text": m.text_content()})
            }
            _ => json!({"role": role_name(m.role), "text": m.text_content()}),
        })
        .collect();
    let ops: Vec<String> = variant_key(t)
        .split('+')
        .skip(1)
        .map(str::to_string)
        .collect();
    json!({
        "id": t.id,
        "intent": t.task.as_ref().map(|x| x.intent.as_str()),
        "harness": {
            "name": t.harness.as_ref().map(|h| h.name.as_str()),
            "version": t.harness.as_ref().map(|h| h.version.as_str()),
            "ops": ops,
        },
        "limits": {"max_reply_chars": ep.max_reply_chars.map(|(n, _)| n)},
        "tools": ep.offered,
        "expected": expected,
        "conversation": conversation,
        "reply": ep.reply,
    })
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::System => "system",
        Role::Developer => "developer",
        Role::User => "viewer",
        Role::Assistant => "host",
        Role::Tool => "tool",
    }
}

/// The first JSON object in a model's text (models wrap verdicts in prose or code fences).
pub fn find_json_object(text: &str) -> Option<Map<String, Value>> {
    text.match_indices('{').find_map(|(i, _)| {
        match serde_json::Deserializer::from_str(&text[i..])
            .into_iter::<Value>()
            .next()
        {
            Some(Ok(Value::Object(m))) => Some(m),
            _ => None,
        }
    })
}

fn unit_field(m: &Map<String, Value>, key: &str) -> Result<f64> {
    let v = m
        .get(key)
        .ok_or_else(|| anyhow!("verdict has no field '{key}'"))?;
    let x = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .ok_or_else(|| anyhow!("verdict field '{key}' is {v}, not a number"))?;
    if !(0.0..=1.0).contains(&x) {
        bail!("verdict field '{key}' is {x}, outside [0, 1]");
    }
    Ok(x)
}

/// Parse a pointwise verdict; errors say which field is wrong.
pub fn parse_pointwise(text: &str) -> Result<Pointwise> {
    let m = find_json_object(text).ok_or_else(|| {
        anyhow!(
            "no JSON object in the judge's answer: {}",
            text.chars().take(200).collect::<String>()
        )
    })?;
    Ok(Pointwise {
        accuracy: unit_field(&m, "accuracy")?,
        effectiveness: unit_field(&m, "effectiveness")?,
        reason: m
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    })
}

/// Parse a pairwise verdict (`"winner": "A" | "B" | "tie"`, case-insensitive).
pub fn parse_winner(text: &str) -> Result<Winner> {
    let m = find_json_object(text).ok_or_else(|| {
        anyhow!(
            "no JSON object in the judge's answer: {}",
            text.chars().take(200).collect::<String>()
        )
    })?;
    match m
        .get("winner")
        .and_then(Value::as_str)
        .map(|s| s.trim().to_ascii_lowercase())
        .as_deref()
    {
        Some("a") => Ok(Winner::A),
        Some("b") => Ok(Winner::B),
        Some("tie") | Some("c") => Ok(Winner::Tie),
        _ => bail!(
            "verdict field 'winner' must be \"A\", \"B\" or \"tie\", got {:?}",
            m.get("winner")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_are_found_in_prose_and_validated() {
        let v = parse_pointwise("Sure! ```json\n{\"accuracy\": 1, \"effectiveness\": \"0.5\", \"reason\": \"ok {x}\"}\n```").unwrap();
        assert_eq!((v.accuracy, v.effectiveness), (1.0, 0.5));
        let e = parse_pointwise("{\"accuracy\": 7, \"effectiveness\": 1}").unwrap_err();
        assert!(e.to_string().contains("outside [0, 1]"), "{e}");
        assert!(parse_pointwise("no verdict").is_err());
        assert!(parse_pointwise("{\"effectiveness\": 1}")
            .unwrap_err()
            .to_string()
            .contains("'accuracy'"));
        assert_eq!(
            parse_winner("I pick {\"winner\": \"b\"}").unwrap(),
            Winner::B
        );
        assert!(parse_winner("{\"winner\": \"both\"}").is_err());
    }
}
