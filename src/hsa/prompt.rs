//! Dimension 4, the system prompt: reorder blocks, reorder items within blocks, perturb the numeric
//! limits the prompt states (reply length, rounds, tool calls).
//!
//! Limits live in `harness.toml` and prompt items read them as `{{ limits.* }}`, so perturbing a limit
//! changes the prompt wording, the `reply_length` hook and the runtime budget together: the expected
//! behaviour follows the new numbers.
//!
//! Blocks are *static* (same text in every live-room context) or *context-filled* (product, room, rules).
//! A trajectory's system prompt can be rewritten only around context-filled text it cannot re-render, so
//! block reordering moves each run of consecutive context-filled blocks as one unit (see `rewrite.rs`),
//! and all the blocks placed in the context message as one unit (their joined text cannot be split).

use anyhow::Result;
use regex::Regex;
use serde_json::{json, Value};

use super::config::Config;
use super::ops::Ctx;
use crate::harness::{Harness, LiveContext, Pipeline, Placement};
use crate::rng::Rng;

/// A context that fills every variable the sample templates read, to tell static blocks from
/// context-filled ones by comparison with the default (empty-room) context.
fn probe_context() -> LiveContext {
    let probe = json!({
        "room": {"title": "probe-room", "host": "probe-host", "status": "live", "viewers": 7,
                  "queue": [{"product_id": "p-probe", "title": "probe item"}], "ongoing_promotion": "probe promo"},
        "product": {"product_id": "p-probe", "title": "probe item", "brand": "probe", "category": "probe",
                    "price": 1, "specs": {"probe": "probe"}},
        "active_rules": ["probe rule"],
        "viewer": {"name": "probe"},
        "order": {"order_id": "o-probe", "status": "probe", "items": [{"title": "probe", "quantity": 1}]},
    });
    LiveContext::from_value(probe).expect("the probe context has no reserved keys")
}

/// For each pipeline block, whether it is static: no `when` and the same text under two contexts.
pub fn static_blocks(h: &Harness) -> Vec<bool> {
    let render = |ctx: &LiveContext| -> Option<Vec<(String, String)>> {
        h.render_blocks(ctx)
            .ok()
            .map(|bs| bs.into_iter().map(|b| (b.name, b.text)).collect())
    };
    let empty = render(&LiveContext::default_context()).unwrap_or_default();
    let probe = render(&probe_context());
    h.pipeline()
        .blocks
        .iter()
        .map(|b| {
            let text = |set: &[(String, String)]| {
                set.iter()
                    .find(|(n, _)| *n == b.name)
                    .map(|(_, t)| t.clone())
            };
            let in_empty = text(&empty);
            b.when.is_none()
                && in_empty.is_some()
                && probe.as_ref().is_none_or(|p| text(p) == in_empty)
        })
        .collect()
}

/// Block indices grouped into units: each static block alone, each run of context-filled blocks together,
/// and every block placed in the context message in one unit where the first of them stands.
pub fn units(h: &Harness) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut context_unit: Option<usize> = None;
    let mut prev_dynamic = false;
    let blocks = &h.pipeline().blocks;
    for (i, is_static) in static_blocks(h).into_iter().enumerate() {
        if blocks[i].placement == Placement::Context {
            match context_unit {
                Some(u) => out[u].push(i),
                None => {
                    context_unit = Some(out.len());
                    out.push(vec![i]);
                }
            }
            prev_dynamic = false;
            continue;
        }
        match out.last_mut() {
            Some(last) if !is_static && prev_dynamic => last.push(i),
            _ => out.push(vec![i]),
        }
        prev_dynamic = !is_static;
    }
    out
}

fn write_pipeline(cx: &mut Ctx<'_>, pipeline: &Pipeline) -> Result<()> {
    let file = cx.harness()?.pipeline_file().to_string();
    cx.set_text(&file, pipeline.to_toml_text());
    Ok(())
}

pub fn reorder_blocks(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let h = cx.harness()?;
    let mut units = units(h);
    let fixed = usize::from(cfg.ops.reorder_blocks.keep_first).min(units.len());
    if units.len() - fixed < 2 {
        return Ok(None);
    }
    let before = units.clone();
    rng.shuffle(&mut units[fixed..]);
    if units == before {
        return Ok(None);
    }
    let mut pipeline = h.pipeline().clone();
    let blocks = pipeline.blocks.clone();
    pipeline.blocks = units.iter().flatten().map(|&i| blocks[i].clone()).collect();
    let order: Vec<String> = pipeline.blocks.iter().map(|b| b.name.clone()).collect();
    write_pipeline(cx, &pipeline)?;
    Ok(Some(json!({ "order": order })))
}

pub fn reorder_items(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let mut pipeline = cx.harness()?.pipeline().clone();
    let mut changed = Vec::new();
    for block in &mut pipeline.blocks {
        if block.items.len() < 2 || !rng.chance(cfg.ops.reorder_items.share) {
            continue;
        }
        let before = block.items.clone();
        rng.shuffle(&mut block.items);
        if block.items != before {
            changed.push(block.name.clone());
        }
    }
    if changed.is_empty() {
        return Ok(None);
    }
    write_pipeline(cx, &pipeline)?;
    Ok(Some(json!({ "blocks": changed })))
}

/// Redraws `max_reply_chars`, `max_rounds` and `max_tool_calls`, editing only their numbers in
/// `harness.toml` (comments and layout stay). Limits the manifest leaves at their defaults are kept.
pub fn perturb_limits(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let c = cfg.ops.perturb_limits;
    let limits = *cx.harness()?.limits();
    let ranges = limits.checked_entries();
    let range = |key: &str| {
        ranges
            .iter()
            .find(|e| e.0 == key)
            .map_or((0, u64::MAX), |e| (e.2, e.3))
    };
    let factor =
        c.reply_chars_factor[0] + rng.unit() * (c.reply_chars_factor[1] - c.reply_chars_factor[0]);
    let (lo, hi) = range("max_reply_chars");
    let reply =
        ((limits.max_reply_chars as f64 * factor / 10.0).round() as u64 * 10).clamp(lo.max(10), hi);
    let delta = |rng: &mut Rng| {
        c.rounds_delta[0] + rng.below((c.rounds_delta[1] - c.rounds_delta[0] + 1) as usize) as i64
    };
    let shifted = |old: u64, d: i64, key: &str| {
        let (lo, hi) = range(key);
        (old as i64 + d)
            .max(c.min_rounds.max(lo) as i64)
            .min(hi as i64) as u64
    };
    let rounds = shifted(limits.max_rounds, delta(rng), "max_rounds");
    let calls = shifted(limits.max_tool_calls, delta(rng), "max_tool_calls");

    let mut text = cx
        .text(crate::harness::manifest::MANIFEST_FILE)?
        .to_string();
    let mut changes = serde_json::Map::new();
    for (key, old, new) in [
        ("max_reply_chars", limits.max_reply_chars, reply),
        ("max_rounds", limits.max_rounds, rounds),
        ("max_tool_calls", limits.max_tool_calls, calls),
    ] {
        if old == new {
            continue;
        }
        let re = Regex::new(&format!(r"(?m)^(\s*{key}\s*=\s*)\d+")).expect("key is a plain word");
        if !re.is_match(&text) {
            continue;
        }
        text = re.replace(&text, format!("${{1}}{new}")).into_owned();
        changes.insert(key.to_string(), json!([old, new]));
    }
    if changes.is_empty() {
        return Ok(None);
    }
    cx.set_text(crate::harness::manifest::MANIFEST_FILE, text);
    Ok(Some(Value::Object(changes)))
}
