//! Dimension 3, tool definitions: rename tools, rewrite tool and parameter descriptions.
//!
//! Renames are identifier substitutions over the whole harness (tool files, skill bodies, hook
//! matchers and sources, manifest order and `load_tool`, prompt items), so every reference follows.
//! Argument keys are never renamed: ground truth and the sandbox address arguments by their canonical
//! keys, and a renamed key would need a second map in every record.

use std::collections::{BTreeMap, HashMap};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use super::banks::DESCRIPTION_PREFIXES;
use super::config::Config;
use super::naming::tool_name;
use super::ops::Ctx;
use super::paraphraser::Paraphraser;
use crate::rng::Rng;

const NAME_TRIES: usize = 16;

pub fn rename_tool(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let share = cfg.ops.rename_tool.share;
    let names: Vec<String> = cx
        .harness()?
        .tools()
        .iter()
        .map(|t| t.name.clone())
        .collect();
    let mut map = HashMap::new();
    let mut taken = names.clone();
    for old in &names {
        if !rng.chance(share) {
            continue;
        }
        for _ in 0..NAME_TRIES {
            let new = tool_name(old, cx.pool, rng);
            if !taken.contains(&new) && !cx.ident_in_use(&new) {
                taken.push(new.clone());
                map.insert(old.clone(), new);
                break;
            }
        }
    }
    if map.is_empty() {
        return Ok(None);
    }
    cx.rename_everywhere(&map);
    for (old, new) in &map {
        cx.names.tools.insert(old.clone(), new.clone());
    }
    let sorted: BTreeMap<_, _> = map.into_iter().collect();
    Ok(Some(json!({ "renames": sorted })))
}

/// Edits the JSON of each tool with probability `share`; `edit` returns whether it changed anything.
fn edit_tools(
    cx: &mut Ctx<'_>,
    share: f64,
    rng: &mut Rng,
    mut edit: impl FnMut(&mut Value, &mut Rng) -> bool,
) -> Result<Option<Value>> {
    let tools: Vec<(String, String)> = cx
        .harness()?
        .tools()
        .iter()
        .map(|t| (t.file.clone(), t.name.clone()))
        .collect();
    let mut changed = Vec::new();
    for (file, name) in tools {
        if !rng.chance(share) {
            continue;
        }
        let mut v: Value = serde_json::from_str(cx.text(&file)?)
            .with_context(|| format!("{file}: invalid JSON"))?;
        if edit(&mut v, rng) {
            let mut text =
                serde_json::to_string_pretty(&v).context("a JSON value always serialises")?;
            text.push('\n');
            cx.set_text(&file, text);
            changed.push(name);
        }
    }
    Ok((!changed.is_empty()).then(|| json!({ "tools": changed })))
}

fn rewrite_str(
    slot: Option<&mut Value>,
    para: &Paraphraser,
    pool: super::config::Pool,
    rate: f64,
    lead_in: bool,
    rng: &mut Rng,
) -> bool {
    let Some(Value::String(s)) = slot else {
        return false;
    };
    let mut new = para.paraphrase(s, pool, rate, rng);
    if lead_in && rng.chance(0.3) {
        new = format!("{}{new}", rng.pick(DESCRIPTION_PREFIXES.of(pool)));
    }
    let changed = new != *s && !new.trim().is_empty();
    if changed {
        *s = new;
    }
    changed
}

pub fn rewrite_description(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let c = cfg.ops.rewrite_tool_description;
    let pool = cx.pool;
    let para = cx.paraphraser.clone();
    edit_tools(cx, c.share, rng, |v, rng| {
        rewrite_str(v.get_mut("description"), &para, pool, c.rate, true, rng)
    })
}

pub fn rewrite_params(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let c = cfg.ops.rewrite_param_descriptions;
    let pool = cx.pool;
    let para = cx.paraphraser.clone();
    edit_tools(cx, c.share, rng, |v, rng| {
        let Some(props) = v
            .pointer_mut("/inputSchema/properties")
            .and_then(Value::as_object_mut)
        else {
            return false;
        };
        let mut any = false;
        for prop in props.values_mut() {
            any |= rewrite_str(prop.get_mut("description"), &para, pool, c.rate, false, rng);
        }
        any
    })
}
