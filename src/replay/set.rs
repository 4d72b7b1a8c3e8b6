//! The replay set: fixed deployment requests, one JSON object per line. Each line is a simulator task
//! record (`id`, `task` with room, viewer and ground truth, the viewer's `messages`) plus `request`, the
//! complete OpenAI chat request the harness produces for it (system prompt rendered from the live-room
//! context, tools) — so plain mode needs no harness at replay time and works against any endpoint, and
//! agent mode posts the record itself to `/v1/agent`.
//!
//! `make_set` draws tasks with exact per-intent quotas of the paper's traffic mix (largest remainder),
//! each intent from its own seeded stream of the test split, then shuffles them with the seed so intents
//! interleave in arrival order. Regenerate the committed default with `make replay-set`.

use anyhow::{Context, Result};
use serde_json::{json, Value};

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
    /// `{"messages": [...], "tools": [...]}`.
    pub request: Value,
}

impl Entry {
    pub fn from_json(mut v: Value) -> Result<Entry> {
        let request = v
            .as_object_mut()
            .and_then(|o| o.remove("request"))
            .context("a replay line needs a `request` object")?;
        if !request.get("messages").is_some_and(Value::is_array) {
            anyhow::bail!("`request.messages` must be a list");
        }
        let record: Trajectory =
            serde_json::from_value(v).context("a replay line must be a task record")?;
        Ok(Entry { record, request })
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
            })
        })
        .collect()
}
