//! A teacher that errs like a real one: a seeded noise model wrapped around a scripted teacher (the
//! oracle by default; an endpoint teacher errs on its own). Without it the oracle never trips a hook —
//! its replies fit, its quantities are small, its arguments valid — so hook feedback, its HSA rewording
//! and the retry trajectories would produce almost no training tokens.
//!
//! On the first attempt of a reply or a tool-call message in a turn, with the configured rate, one
//! error is injected: an over-long reply, a forbidden term, an ungrounded price (Stop hooks), an
//! over-limit quantity (the purchase-limit hook), malformed arguments (the `tool_call_json` hook, or a
//! text-form call the runtime cannot parse) or a wrong tool (a stale or near-miss name the runtime
//! refuses). The skill loader, where a variant renamed it, is called by its old name at its own rate:
//! it opens every skill-using episode, so a renamed loader is the change a model trained on one harness
//! trips over first. Once the harness has pushed back in the turn, the wrapped teacher answers as it would
//! have, which is the retry the harness asks for.

use anyhow::Result;
use clap::Args;
use serde_json::{json, Value};

use super::{Conversation, Policy};
use crate::harness::{Harness, SkillsMode};
use crate::jsonl::fnv1a64;
use crate::record::{Content, Message, Names, Role};
use crate::rng::Rng;

/// Per-attempt error rates (each a probability in [0, 1]); `teacher-distill collect --noise-*`.
#[derive(Debug, Clone, Copy, PartialEq, Args)]
pub struct NoiseRates {
    /// Chance a reply runs past the reply-length limit.
    #[arg(long = "noise-long-reply", default_value_t = 0.04)]
    pub long_reply: f64,
    /// Chance a reply carries a forbidden (banned) term.
    #[arg(long = "noise-forbidden-term", default_value_t = 0.03)]
    pub forbidden_term: f64,
    /// Chance a reply quotes a price no tool returned.
    #[arg(long = "noise-ungrounded-price", default_value_t = 0.03)]
    pub ungrounded_price: f64,
    /// Chance a purchase call asks for more than the per-order limit.
    #[arg(long = "noise-over-quantity", default_value_t = 0.3)]
    pub over_quantity: f64,
    /// Chance a tool call's arguments are malformed (invalid JSON, or a text-form call that does not parse).
    #[arg(long = "noise-malformed-args", default_value_t = 0.03)]
    pub malformed_args: f64,
    /// Chance a tool call names a tool the harness does not offer (a stale or near-miss name).
    #[arg(long = "noise-wrong-tool", default_value_t = 0.02)]
    pub wrong_tool: f64,
    /// Chance the skill loader, where the harness renamed it, is called by the original harness's name.
    #[arg(long = "noise-stale-loader", default_value_t = 0.0)]
    pub stale_loader: f64,
}

impl NoiseRates {
    pub const NONE: NoiseRates = NoiseRates {
        long_reply: 0.0,
        forbidden_term: 0.0,
        ungrounded_price: 0.0,
        over_quantity: 0.0,
        malformed_args: 0.0,
        wrong_tool: 0.0,
        stale_loader: 0.0,
    };

    /// The rates by name, for checks and reports.
    pub fn named(&self) -> [(&'static str, f64); 7] {
        [
            ("long_reply", self.long_reply),
            ("forbidden_term", self.forbidden_term),
            ("ungrounded_price", self.ungrounded_price),
            ("over_quantity", self.over_quantity),
            ("malformed_args", self.malformed_args),
            ("wrong_tool", self.wrong_tool),
            ("stale_loader", self.stale_loader),
        ]
    }

    /// An error naming the first rate outside [0, 1].
    pub fn check(&self) -> Result<()> {
        for (name, p) in self.named() {
            if !(0.0..=1.0).contains(&p) {
                anyhow::bail!(
                    "--noise-{} = {p} is not a probability in [0, 1]",
                    name.replace('_', "-")
                );
            }
        }
        Ok(())
    }
}

/// Wraps a policy and injects errors on first attempts (see the module docs).
pub struct Noisy {
    inner: Box<dyn Policy>,
    rates: NoiseRates,
    seed: u64,
    load_tool: Option<String>,
    names: Names,
    max_reply_chars: u64,
}

/// Far above any per-order limit a harness sets for a live-room purchase.
const OVER_QUANTITY: u64 = 99;

impl Noisy {
    /// `names` maps canonical ids to `harness`'s surface names (a stale canonical name is the most
    /// common wrong tool after a rename).
    pub fn new(
        inner: Box<dyn Policy>,
        harness: &Harness,
        names: Names,
        rates: NoiseRates,
        seed: u64,
    ) -> Noisy {
        let load = &harness.manifest().skills.load_tool;
        Noisy {
            inner,
            rates,
            seed,
            load_tool: (harness.skills_mode() == SkillsMode::Tool).then(|| load.clone()),
            names,
            max_reply_chars: harness.limits().max_reply_chars,
        }
    }

    fn corrupt_reply(&self, m: &mut Message, rng: &mut Rng) {
        let text = m.text_content();
        if text.trim().is_empty() {
            return; // staying silent is the answer; nothing to get wrong in a reply
        }
        let zh = text.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
        let r = &self.rates;
        let new = match draw(rng, &[r.long_reply, r.forbidden_term, r.ungrounded_price]) {
            Some(0) => {
                let filler = if zh {
                    "，欢迎宝宝们点点关注、多多分享直播间"
                } else {
                    ", and do follow the stream and share it with friends"
                };
                let mut t = text.clone();
                while t.chars().count() as u64 <= self.max_reply_chars + 10 {
                    t.push_str(filler);
                }
                t
            }
            Some(1) => format!(
                "{text}{}",
                if zh {
                    "全网最低，闭眼入！"
                } else {
                    " Lowest price anywhere (全网最低)!"
                }
            ),
            Some(2) => format!(
                "{text}{}",
                if zh {
                    "（原价¥9999）"
                } else {
                    " (was ¥9999)"
                }
            ),
            _ => return,
        };
        m.content = Some(Content::Text(new));
    }

    fn corrupt_calls(&self, conv: &Conversation<'_>, m: &mut Message, rng: &mut Rng) {
        if self.call_loader_by_old_name(m, rng) {
            return;
        }
        let Some(i) = m
            .tool_calls
            .iter()
            .position(|c| Some(&c.function.name) != self.load_tool.as_ref())
        else {
            return;
        };
        let name = m.tool_calls[i].function.name.clone();
        let takes_quantity = conv.tools.iter().any(|t| {
            t.function.name == name
                && t.function
                    .parameters
                    .pointer("/properties/quantity")
                    .is_some()
        });
        let r = &self.rates;
        let over = if takes_quantity { r.over_quantity } else { 0.0 };
        match draw(rng, &[over, r.malformed_args, r.wrong_tool]) {
            Some(0) => {
                let call = &mut m.tool_calls[i].function;
                if let Ok(mut args) = call.parsed_arguments() {
                    args.insert("quantity".into(), json!(OVER_QUANTITY));
                    call.arguments = Value::Object(args).to_string();
                }
            }
            Some(1) if rng.chance(0.5) => {
                // Cut-off JSON: the tool_call_json hook answers with invalid_arguments.
                let call = &mut m.tool_calls[i].function;
                call.arguments.pop();
            }
            Some(1) => {
                // The call written as text, unterminated: the runtime's parser sends a note back.
                let args = m.tool_calls[i]
                    .function
                    .arguments
                    .trim_end_matches('}')
                    .to_string();
                m.tool_calls.clear();
                m.content = Some(Content::Text(format!(
                    "<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {args}\n</tool_call>"
                )));
            }
            Some(_) => {
                let canonical = self.names.tool_canonical(&name).unwrap_or(&name);
                let wrong = if canonical != name {
                    canonical.to_string()
                } else {
                    format!("{name}_v2")
                };
                m.tool_calls[i].function.name = wrong;
            }
            None => {}
        }
    }

    /// With the stale-loader rate, a renamed loader's call goes out under its canonical name (the
    /// runtime refuses it and lists the tools it has). Whether it fired. At rate 0 it draws nothing,
    /// so the other errors fall as they did before the rate existed.
    fn call_loader_by_old_name(&self, m: &mut Message, rng: &mut Rng) -> bool {
        if self.rates.stale_loader == 0.0 {
            return false;
        }
        let Some(load) = &self.load_tool else {
            return false;
        };
        let Some(canonical) = self.names.tool_canonical(load).filter(|c| c != load) else {
            return false;
        };
        let Some(call) = m.tool_calls.iter_mut().find(|c| &c.function.name == load) else {
            return false;
        };
        if !rng.chance(self.rates.stale_loader) {
            return false;
        }
        call.function.name = canonical.to_string();
        true
    }
}

/// Which of `rates` fires in one draw (at most one), by index.
fn draw(rng: &mut Rng, rates: &[f64]) -> Option<usize> {
    let u = rng.unit();
    let mut acc = 0.0;
    for (i, p) in rates.iter().enumerate() {
        acc += p;
        if u < acc {
            return Some(i);
        }
    }
    None
}

/// Whether the harness has already pushed back this turn: hook feedback or a runtime note (user or
/// system messages inside a turn come only from them), or a tool error about the call itself.
fn pushed_back(turn: &[Message]) -> bool {
    turn.iter().any(|m| match m.role {
        Role::User | Role::System | Role::Developer => true,
        Role::Tool => serde_json::from_str::<Value>(&m.text_content())
            .ok()
            .and_then(|v| {
                v.pointer("/error/code")
                    .and_then(Value::as_str)
                    .map(is_call_rejection)
            })
            .unwrap_or(false),
        Role::Assistant => false,
    })
}

/// Tool-error codes that reject the call itself (as opposed to a fault of the service): invalid
/// arguments, an unknown tool, a call a hook denied.
pub fn is_call_rejection(code: &str) -> bool {
    matches!(code, "invalid_arguments" | "unknown_tool" | "denied")
}

impl Policy for Noisy {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn end_session(&self, session: &str) {
        self.inner.end_session(session);
    }

    fn respond(&self, conv: &Conversation<'_>) -> Result<Message> {
        let mut m = self.inner.respond(conv)?;
        let turn = conv.messages.get(conv.turn_start..).unwrap_or(&[]);
        if pushed_back(turn) {
            return Ok(m);
        }
        // Seeded by the episode (its task, else the conversation so far) and the attempt, so a rerun
        // errs the same way whatever the concurrency.
        let episode = match conv.task {
            Some(t) => serde_json::to_string(t).unwrap_or_default(),
            None => conv.messages.iter().map(|m| m.text_content()).collect(),
        };
        let attempt = turn.iter().filter(|m| m.role == Role::Assistant).count();
        let key = fnv1a64(format!("{episode}\u{0}{attempt}").as_bytes());
        let mut rng = Rng::derive(self.seed ^ key, "teacher-noise");
        if m.tool_calls.is_empty() {
            self.corrupt_reply(&mut m, &mut rng);
        } else {
            self.corrupt_calls(conv, &mut m, &mut rng);
        }
        Ok(m)
    }
}
