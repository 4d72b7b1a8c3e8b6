//! The replay set: fixed deployment requests, one JSON object per line. Each line is a simulator task
//! record (`id`, `task` with room, viewer and ground truth, the viewer's `messages`) plus `request`, the
//! complete OpenAI chat request the harness produces for it (system prompt rendered from the live-room
//! context, tools) — so plain mode needs no harness at replay time and works against any endpoint, and
//! agent mode posts the record itself to `/v1/agent`. Script mode replays a recorded agent turn (a
//! trajectory record, e.g. `teacher-distill collect`'s output, which needs no `request`) call by call:
//! [`script`] measures each assistant message's length with the model's tokenizer and template.
//!
//! `make_set` draws tasks with exact per-intent quotas of the paper's traffic mix (largest remainder),
//! each intent from its own seeded stream of the test split, then shuffles them with the seed so intents
//! interleave in arrival order. Regenerate the committed default with `make replay-set`.

use anyhow::{Context, Result};
use serde_json::{json, Value};

use crate::chat::{ChatTemplate, RenderInput};
use crate::harness::{Harness, LiveContext};
use crate::record::{Intent, Trajectory};
use crate::rng::Rng;
use crate::sim::catalog::{Catalog, Split};
use crate::sim::context::live_context;
use crate::sim::tasks::{self, Mix, Room, TaskConfig};

/// One replayable request.
#[derive(Debug, Clone)]
pub struct Entry {
    pub record: Trajectory,
    /// `{"messages": [...], "tools": [...]}`; null in a line without one (plain mode needs it).
    pub request: Value,
    /// Script mode's calls (empty until [`script`] measured them).
    pub script: Vec<ScriptedCall>,
}

/// One model call of a recorded agent turn: the conversation before one of its assistant messages,
/// and that message's length in tokens (the output the call must produce).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedCall {
    /// How many of the record's messages the call sends.
    pub messages: usize,
    pub max_tokens: usize,
}

impl Entry {
    pub fn from_json(mut v: Value) -> Result<Entry> {
        let request = v
            .as_object_mut()
            .and_then(|o| o.remove("request"))
            .unwrap_or(Value::Null);
        if !request.is_null() && !request.get("messages").is_some_and(Value::is_array) {
            anyhow::bail!("`request.messages` must be a list");
        }
        let record: Trajectory =
            serde_json::from_value(v).context("a replay line must be a task record")?;
        Ok(Entry {
            record,
            request,
            script: Vec::new(),
        })
    }

    pub fn to_json(&self) -> Result<Value> {
        let mut v = serde_json::to_value(&self.record)?;
        v["request"] = self.request.clone();
        Ok(v)
    }

    pub fn intent(&self) -> String {
        self.record.intent_label()
    }
}

/// Reads a replay set (JSONL); errors name the line.
pub fn read(path: &std::path::Path) -> Result<Vec<Entry>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading replay set {}", path.display()))?;
    parse(&path.display().to_string(), &text)
}

/// Parses the text of a replay set; `source` names it in errors, with the line.
pub fn parse(source: &str, text: &str) -> Result<Vec<Entry>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let v: Value =
                serde_json::from_str(l).with_context(|| format!("{source}:{}: not JSON", i + 1))?;
            Entry::from_json(v).with_context(|| format!("{source}:{}", i + 1))
        })
        .collect()
}

/// The calls that replay `entry`'s agent turn: one per assistant message from the turn's start
/// (`meta.turn_start`, else the first message), each `max_tokens` the message's length as the
/// model's template writes it (the tokens after the generation prompt, its end-of-turn token
/// included).
pub fn script(
    entry: &Entry,
    tokenizer: &tokenizers::Tokenizer,
    template: &ChatTemplate,
) -> Result<Vec<ScriptedCall>> {
    let record = &entry.record;
    let messages: Vec<Value> = record
        .messages
        .iter()
        .map(crate::record::Message::template_json)
        .collect::<Result<_, _>>()?;
    let tools: Vec<Value> = record
        .tools
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    let tokens = |upto: usize, add_generation_prompt: bool| -> Result<usize> {
        let text = template.render(&RenderInput {
            messages: messages[..upto].to_vec(),
            tools: (!tools.is_empty()).then(|| tools.clone()),
            add_generation_prompt,
            ..Default::default()
        })?;
        let enc = tokenizer
            .encode(text, false)
            .map_err(|e| anyhow::anyhow!("tokenizing: {e}"))?;
        Ok(enc.get_ids().len())
    };
    let turn_start = record.meta.get("turn_start").and_then(Value::as_u64);
    let calls = (turn_start.unwrap_or(0) as usize..record.messages.len())
        .filter(|&k| record.messages[k].role == crate::record::Role::Assistant)
        .map(|k| {
            let output = tokens(k + 1, false)?.saturating_sub(tokens(k, true)?);
            Ok(ScriptedCall {
                messages: k,
                max_tokens: output.max(1),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if calls.is_empty() {
        anyhow::bail!("record {} has no assistant message to replay", record.id);
    }
    Ok(calls)
}

/// Per-intent counts for `n` requests: the mix's shares, rounded by largest remainder.
pub fn quotas(mix: &Mix, n: usize) -> Vec<(Intent, usize)> {
    let total: f64 = mix.0.iter().map(|(_, w)| w).sum();
    let exact: Vec<f64> = mix.0.iter().map(|(_, w)| w / total * n as f64).collect();
    let mut counts: Vec<usize> = exact.iter().map(|x| x.floor() as usize).collect();
    let mut order: Vec<usize> = (0..exact.len()).collect();
    order.sort_by(|&a, &b| {
        (exact[b] - exact[b].floor())
            .total_cmp(&(exact[a] - exact[a].floor()))
            .then(a.cmp(&b))
    });
    let short = n - counts.iter().sum::<usize>();
    for &i in order.iter().take(short) {
        counts[i] += 1;
    }
    mix.0.iter().map(|(i, _)| *i).zip(counts).collect()
}

/// `n` requests with the mix's intent quotas, rendered under `harness`.
pub fn make_set(
    harness: &Harness,
    catalog: &Catalog,
    mix: &Mix,
    n: usize,
    seed: u64,
) -> Result<Vec<Entry>> {
    let tools = harness.openai_tools();
    let mut records = Vec::new();
    for (k, (intent, count)) in quotas(mix, n).into_iter().enumerate() {
        if count == 0 {
            continue;
        }
        let mut cfg = TaskConfig::new(Split::Test, seed.wrapping_add(k as u64));
        cfg.mix = Mix(vec![(intent, 1.0)]);
        records.extend(tasks::generate(catalog, &cfg, count)?);
    }
    Rng::derive(seed, "replay-order").shuffle(&mut records);
    records
        .into_iter()
        .enumerate()
        .map(|(i, mut record)| {
            record.id = format!("replay-{i:03}");
            let task = record
                .task
                .as_ref()
                .context("generated task without `task`")?;
            let room: Room = serde_json::from_value(task.room.clone())?;
            let ctx = LiveContext::from_value(live_context(catalog, &room, &task.viewer))?;
            let messages = harness
                .render_prompt(&ctx)?
                .messages()
                .iter()
                .chain(&record.messages)
                .map(serde_json::to_value)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Entry {
                record,
                request: json!({"messages": messages, "tools": tools}),
                script: Vec::new(),
            })
        })
        .collect()
}
