//! Dimension 5, hooks: retry budgets, auto-fix vs retry, how feedback reaches the model (user turn or
//! system note) and its wording, and hook-triggered modifications (an added auto-fix guard).
//!
//! A hook is identified across a base harness and its variants by its position,
//! `"<Event>[<group>].hooks[<index>]"`; ops edit hooks in place and only ever append, so positions of
//! existing hooks never move (the trajectory rewriter relies on this).

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

use super::banks::{FEEDBACK_PREFIXES, FEEDBACK_TAGS, GUARD_TERMS};
use super::config::Config;
use super::ops::Ctx;
use crate::harness::hooks::{
    BannedTermsParams, BuiltinCheck, BuiltinHook, EventHooks, FeedbackRole, Hook, HookEvent,
    HooksConfig, MatcherGroup, OnFail,
};
use crate::rng::Rng;

/// The position id of a hook.
pub fn hook_id(event: HookEvent, group: usize, index: usize) -> String {
    format!("{event}[{group}].hooks[{index}]")
}

/// Every built-in hook with its id, mutably, in file order.
fn builtins_mut(config: &mut HooksConfig) -> Vec<(String, HookEvent, &mut BuiltinHook)> {
    let mut out = Vec::new();
    for e in &mut config.events {
        let event = e.event;
        for (g, group) in e.groups.iter_mut().enumerate() {
            for (i, hook) in group.hooks.iter_mut().enumerate() {
                if let Hook::Builtin(b) = hook {
                    out.push((hook_id(event, g, i), event, b));
                }
            }
        }
    }
    out
}

/// Runs `edit` on the harness's hooks and writes them back, keeping the file's other top-level keys.
pub(super) fn edit_hooks(
    cx: &mut Ctx<'_>,
    edit: impl FnOnce(&mut HooksConfig) -> Option<Value>,
) -> Result<Option<Value>> {
    let h = cx.harness()?;
    let Some(file) = h.hooks_file().map(str::to_string) else {
        return Ok(None);
    };
    let mut config = h.hooks().clone();
    let Some(params) = edit(&mut config) else {
        return Ok(None);
    };
    let mut root: Value =
        serde_json::from_str(cx.text(&file)?).with_context(|| format!("{file}: invalid JSON"))?;
    let fresh: Value =
        serde_json::from_str(&config.to_json_text()).context("hooks serialise to JSON")?;
    root["hooks"] = fresh["hooks"].clone();
    let mut text = serde_json::to_string_pretty(&root).context("JSON always serialises")?;
    text.push('\n');
    cx.set_text(&file, text);
    Ok(Some(params))
}

/// Redraws `max_retries` of retrying hooks (each with probability `share`).
pub fn retries(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let c = cfg.ops.hook_retries;
    edit_hooks(cx, |config| {
        let mut changed = Map::new();
        for (id, _, b) in builtins_mut(config) {
            if b.on_fail != OnFail::Retry || !rng.chance(c.share) {
                continue;
            }
            let new = c.min + rng.below((c.max - c.min + 1) as usize) as u32;
            if new != b.max_retries {
                changed.insert(id, json!([b.max_retries, new]));
                b.max_retries = new;
            }
        }
        (!changed.is_empty()).then(|| json!({ "hooks": changed }))
    })
}

/// Switches fixable reply checks between `fix` (the harness repairs the reply) and `retry` (the model
/// is told and tries again).
pub fn on_fail(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let share = cfg.ops.hook_on_fail.share;
    edit_hooks(cx, |config| {
        let mut changed = Map::new();
        for (id, event, b) in builtins_mut(config) {
            // Only a reply can be sent back for another attempt; a viewer's message cannot.
            let retryable = matches!(event, HookEvent::Stop | HookEvent::SubagentStop);
            if !b.check.can_fix() || !retryable || b.on_fail == OnFail::Block || !rng.chance(share)
            {
                continue;
            }
            let (from, to) = match b.on_fail {
                OnFail::Fix => ("fix", OnFail::Retry),
                _ => ("retry", OnFail::Fix),
            };
            b.on_fail = to;
            if to == OnFail::Retry && b.max_retries == 0 {
                b.max_retries = 1;
            }
            changed.insert(
                id,
                json!([from, if to == OnFail::Fix { "fix" } else { "retry" }]),
            );
        }
        (!changed.is_empty()).then(|| json!({ "hooks": changed }))
    })
}

/// Delivers reply-check feedback as a user turn or as a system note. Tool-call checks keep their
/// tool-error feedback: the tool message must answer the call either way.
pub fn feedback_role(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let share = cfg.ops.feedback_role.share;
    edit_hooks(cx, |config| {
        let mut changed = Map::new();
        for (id, event, b) in builtins_mut(config) {
            let Some(fb) = b.feedback.as_mut() else {
                continue;
            };
            if event.is_tool_event() || fb.role == FeedbackRole::ToolError || !rng.chance(share) {
                continue;
            }
            let (from, to) = match fb.role {
                FeedbackRole::User => ("user", FeedbackRole::System),
                _ => ("system", FeedbackRole::User),
            };
            fb.role = to;
            changed.insert(
                id,
                json!([
                    from,
                    if to == FeedbackRole::User {
                        "user"
                    } else {
                        "system"
                    }
                ]),
            );
        }
        (!changed.is_empty()).then(|| json!({ "hooks": changed }))
    })
}

/// Rewords feedback templates: swaps or adds a leading tag and paraphrases the literal text. Template
/// expressions are untouched and stay in order, so a recorded feedback message can be re-worded.
pub fn feedback_wording(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let c = cfg.ops.feedback_wording;
    let pool = cx.pool;
    let para = cx.paraphraser.clone();
    edit_hooks(cx, |config| {
        let mut changed = Vec::new();
        for (id, _, b) in builtins_mut(config) {
            let Some(fb) = b.feedback.as_mut() else {
                continue;
            };
            if !rng.chance(c.share) {
                continue;
            }
            let tag = FEEDBACK_TAGS.iter().find(|t| fb.template.starts_with(**t));
            let rest = tag.map_or(fb.template.as_str(), |t| &fb.template[t.len()..]);
            let mut new = para.paraphrase(rest, pool, c.rate, rng);
            if tag.is_some() || rng.chance(0.5) {
                new = format!("{}{new}", rng.pick(FEEDBACK_PREFIXES.of(pool)));
            }
            if new != fb.template {
                fb.template = new;
                changed.push(id);
            }
        }
        (!changed.is_empty()).then(|| json!({ "hooks": changed }))
    })
}

/// Adds a `Stop` group with a `banned_terms` auto-fix hook over phrases the harness already forbids:
/// a hook-triggered modification of replies that a correct reply never triggers.
pub fn guard_hook(cx: &mut Ctx<'_>, _cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let pool = cx.pool;
    edit_hooks(cx, |config| {
        let mut terms: Vec<String> = GUARD_TERMS.of(pool).iter().map(|t| t.to_string()).collect();
        rng.shuffle(&mut terms);
        terms.truncate(2 + rng.below(terms.len() - 1));
        let hook = Hook::Builtin(BuiltinHook {
            check: BuiltinCheck::BannedTerms(BannedTermsParams {
                terms: terms.clone(),
                terms_file: None,
                case_sensitive: false,
            }),
            on_fail: OnFail::Fix,
            max_retries: 0,
            feedback: None,
        });
        let group = MatcherGroup {
            matcher: None,
            hooks: vec![hook],
        };
        let index = match config
            .events
            .iter_mut()
            .find(|e| e.event == HookEvent::Stop)
        {
            Some(e) => {
                e.groups.push(group);
                e.groups.len() - 1
            }
            None => {
                config.events.push(EventHooks {
                    event: HookEvent::Stop,
                    groups: vec![group],
                });
                0
            }
        };
        Some(json!({ "hook": hook_id(HookEvent::Stop, index, 0), "terms": terms }))
    })
}
