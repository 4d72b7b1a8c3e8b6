//! Dimension 3, tool definitions: rename tools, rename argument keys, rewrite tool and parameter
//! descriptions.
//!
//! Tool renames are identifier substitutions over the whole harness (tool files, skill bodies, hook
//! matchers and sources, manifest order and `load_tool`, prompt items), so every reference follows.
//! Argument renames (`product_id` → `item_id`) edit each tool's input schema (property keys,
//! `required`, descriptions) and every mention outside Jinja expressions (skill bodies, prompt text,
//! hook sources); ground truth and the sandbox keep the canonical keys, and `names.params` maps them per
//! tool. A key is renamed in every tool that takes it, so a rule like `check_inventory(product_id)`
//! in a skill body reads the same under the variant whichever tool it names.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use super::banks::DESCRIPTION_PREFIXES;
use super::config::Config;
use super::naming::{is_renamable_param, param_key, tool_name};
use super::ops::Ctx;
use super::paraphraser::Paraphraser;
use super::text::{rename_idents, rename_idents_outside_jinja};
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
            let new = tool_name(old, cx.pool, cfg.ops.rename_tool.coined, rng);
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
    let pinned = super::matchers::pin(cx, &map)?;
    let sorted: BTreeMap<_, _> = map.into_iter().collect();
    let mut params = json!({ "renames": sorted });
    if let Some(Value::Object(p)) = pinned {
        params.as_object_mut().expect("an object").extend(p);
    }
    Ok(Some(params))
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

/// Renames identifier-shaped argument keys (each with probability `share`) in every tool that takes
/// them and wherever the harness mentions them. The skill loader's arguments stay: the runtime and
/// rewriter read its `name`.
pub fn rename_params(cx: &mut Ctx<'_>, cfg: &Config, rng: &mut Rng) -> Result<Option<Value>> {
    let share = cfg.ops.rename_params.share;
    let h = cx.harness()?;
    let load_tool = h.manifest().skills.load_tool.clone();
    let tools: Vec<(String, String, Vec<String>)> = h
        .tools()
        .iter()
        .filter(|t| t.name != load_tool)
        .map(|t| {
            let keys = t
                .parameter_names()
                .into_iter()
                .map(str::to_string)
                .collect();
            (t.file.clone(), t.name.clone(), keys)
        })
        .collect();
    let keys: BTreeSet<&String> = tools
        .iter()
        .flat_map(|(_, _, k)| k)
        .filter(|k| is_renamable_param(k))
        .collect();
    let mut map: HashMap<String, String> = HashMap::new();
    for key in keys {
        if !rng.chance(share) {
            continue;
        }
        for _ in 0..NAME_TRIES {
            let new = param_key(key, cx.pool, rng);
            let clash = new == *key
                || map.values().any(|v| *v == new)
                || tools.iter().any(|(_, _, k)| k.contains(&new));
            if !clash && !cx.ident_in_use(&new) {
                map.insert(key.clone(), new);
                break;
            }
        }
    }
    if map.is_empty() {
        return Ok(None);
    }
    let tool_files: BTreeSet<&str> = tools.iter().map(|(f, _, _)| f.as_str()).collect();
    let mut edits = Vec::new();
    for (key, f) in cx.files() {
        let Ok(text) = std::str::from_utf8(&f.bytes) else {
            continue;
        };
        let new = if tool_files.contains(key.as_str()) {
            let mut v: Value =
                serde_json::from_str(text).with_context(|| format!("{key}: invalid JSON"))?;
            if !rename_schema_keys(&mut v, &map) {
                continue;
            }
            let mut t =
                serde_json::to_string_pretty(&v).context("a JSON value always serialises")?;
            t.push('\n');
            t
        } else {
            match rename_idents_outside_jinja(text, &map) {
                std::borrow::Cow::Owned(t) => t,
                std::borrow::Cow::Borrowed(_) => continue,
            }
        };
        edits.push((key.clone(), new));
    }
    for (key, text) in edits {
        cx.set_text(&key, text);
    }
    // Recorded per tool under its base name (tool renames ran first; names.tools maps base → variant).
    let mut per_tool: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (_, name, keys) in &tools {
        let base = cx
            .names
            .tools
            .iter()
            .find(|(_, v)| *v == name)
            .map_or(name.clone(), |(b, _)| b.clone());
        let renamed: BTreeMap<String, String> = keys
            .iter()
            .filter_map(|k| map.get(k).map(|n| (k.clone(), n.clone())))
            .collect();
        if !renamed.is_empty() {
            per_tool.insert(base, renamed);
        }
    }
    cx.names.params.extend(per_tool.clone());
    let sorted: BTreeMap<_, _> = map.into_iter().collect();
    Ok(Some(
        json!({ "renames": sorted, "tools": per_tool.keys().collect::<Vec<_>>() }),
    ))
}

/// Renames argument keys in an MCP tool's input schema: property keys (order kept), `required`
/// entries, and mentions in the tool's and the properties' descriptions. Returns whether it changed.
fn rename_schema_keys(tool: &mut Value, map: &HashMap<String, String>) -> bool {
    let before = tool.clone();
    if let Some(Value::String(d)) = tool.get_mut("description") {
        *d = rename_idents(d, map).into_owned();
    }
    if let Some(schema) = tool.get_mut("inputSchema").and_then(Value::as_object_mut) {
        if let Some(Value::Object(props)) = schema.get_mut("properties") {
            let renamed = std::mem::take(props)
                .into_iter()
                .map(|(k, mut p)| {
                    if let Some(Value::String(d)) = p.get_mut("description") {
                        *d = rename_idents(d, map).into_owned();
                    }
                    (map.get(&k).cloned().unwrap_or(k), p)
                })
                .collect();
            *props = renamed;
        }
        if let Some(Value::Array(req)) = schema.get_mut("required") {
            for r in req.iter_mut() {
                if let Some(new) = r.as_str().and_then(|k| map.get(k)) {
                    *r = json!(new);
                }
            }
        }
    }
    *tool != before
}
