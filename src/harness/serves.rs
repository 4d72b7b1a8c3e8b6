//! `[serves]` in `harness.toml`: what a harness declares it serves, stated against the simulator's
//! canonical ids (`docs/canonical-ids.md`). Ground truth is canonical; a harness the toolkit has never
//! seen calls its tools and skills what it likes, so the map from canonical ids to its names has to come
//! from the harness itself for the simulator, the oracle, collection, evaluation, the judges, HSA and
//! serve's agent mode to read its episodes right.
//!
//! ```toml
//! [serves]
//! intents = { after_sales = 0.8, chat = 0.2 }   # the traffic it serves and its mix (default: the live-room mix)
//! lacks = ["search_products", "check_inventory"] # canonical ids it has no counterpart for
//! [serves.tools]                                 # canonical tool id = this harness's tool
//! get_order_status = "lookup_order"
//! [serves.skills]                                # canonical skill id = this harness's skill
//! after-sales-care = "return-exchange"
//! ```
//! A canonical id the harness has under the same name needs no entry. `load_skill` is served by
//! `[skills] load_tool` in tool mode. A harness without the table serves the canonical names as they are
//! (the `taolive` sample).
//!
//! Two levels of checks: [`problems`] holds every entry to the files (part of [`Harness::validate`], so
//! HSA variants, whose tool and skill renames rewrite these names like every other reference, stay
//! checked); [`coverage`] asks that every canonical tool be accounted for, which only the operator's
//! `hat harness validate` runs (a variant may rename a tool the base served under its canonical name).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::manifest::{SkillsMode, MANIFEST_FILE};
use super::problem::Problem;
use super::Harness;
use crate::record::{Intent, Names, CANONICAL_SKILLS, CANONICAL_TOOLS};

/// The canonical tool that stands for `[skills] load_tool`.
const LOAD_SKILL: &str = "load_skill";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Serves {
    /// Intents served, with their weights in generated traffic; empty: the simulator's default mix.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub intents: BTreeMap<Intent, f64>,
    /// Canonical tool id → this harness's tool name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, String>,
    /// Canonical skill id → this harness's skill name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skills: BTreeMap<String, String>,
    /// Canonical tool and skill ids the harness has no counterpart for: no task needing one is generated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lacks: Vec<String>,
}

/// The canonical → surface names of `h`: its `[serves]` maps without identity entries, plus `load_skill`
/// → `[skills] load_tool` when a tool-mode harness loads skills under another name.
pub fn names(h: &Harness) -> Names {
    let mut names = Names::default();
    if let Some(s) = &h.manifest().serves {
        let renamed = |m: &BTreeMap<String, String>| -> BTreeMap<String, String> {
            m.iter()
                .filter(|(c, s)| c != s)
                .map(|(c, s)| (c.clone(), s.clone()))
                .collect()
        };
        names.tools = renamed(&s.tools);
        names.skills = renamed(&s.skills);
    }
    let load = &h.manifest().skills.load_tool;
    if h.skills_mode() == SkillsMode::Tool && load != LOAD_SKILL {
        names.tools.insert(LOAD_SKILL.into(), load.clone());
    }
    names
}

/// Whether `h` has a counterpart of canonical tool `id`, under its own name or a mapped one.
pub fn has_tool(h: &Harness, names: &Names, id: &str) -> bool {
    h.tool(names.tool_surface(id)).is_some()
}

/// Whether `h` has a counterpart of canonical skill `id`.
pub fn has_skill(h: &Harness, names: &Names, id: &str) -> bool {
    h.skill(names.skill_surface(id)).is_some()
}

/// Every `[serves]` entry checked against the files: canonical ids exist, mapped names exist, no name
/// serves two ids, nothing is both mapped and lacked, weights are usable.
pub fn problems(h: &Harness) -> Vec<Problem> {
    let mut out = Vec::new();
    let Some(s) = &h.manifest().serves else {
        return out;
    };
    let text = super::files::text(h.files(), MANIFEST_FILE).unwrap_or_default();
    let at = |table: &str, key: &str, message: String| {
        Problem::field(MANIFEST_FILE, format!("{table}.{key}"), message)
            .at_line(line_of(text, table, key))
    };
    let tool_names: Vec<&str> = h.tools().iter().map(|t| t.name.as_str()).collect();
    let skill_names: Vec<&str> = h.skills().iter().map(|s| s.name()).collect();
    for (kind, map, canonical, have, table) in [
        (
            "tool",
            &s.tools,
            &CANONICAL_TOOLS[..],
            &tool_names,
            "serves.tools",
        ),
        (
            "skill",
            &s.skills,
            &CANONICAL_SKILLS[..],
            &skill_names,
            "serves.skills",
        ),
    ] {
        let mut by_surface: BTreeMap<&str, &str> = BTreeMap::new();
        for (c, surface) in map {
            if !canonical.contains(&c.as_str()) {
                out.push(at(
                    table,
                    c,
                    format!("{c:?} is not a canonical {kind} id; the keys are the simulator's ids (docs/canonical-ids.md: {})", canonical.join(", ")),
                ));
            } else if kind == "tool" && c == LOAD_SKILL {
                out.push(at(
                    table,
                    c,
                    "the skill loader is named by `[skills] load_tool`; remove this entry".into(),
                ));
            }
            if !have.contains(&surface.as_str()) {
                out.push(at(
                    table,
                    c,
                    format!(
                        "maps to {surface:?}, but the harness has no {kind} of that name (its {kind}s: {})",
                        if have.is_empty() { "none".to_string() } else { have.join(", ") }
                    ),
                ));
            }
            if let Some(first) = by_surface.insert(surface, c) {
                out.push(at(
                    table,
                    c,
                    format!("{first:?} and {c:?} both map to {surface:?}; a {kind} serves one canonical id, so keep one of them"),
                ));
            }
        }
    }
    for id in &s.lacks {
        let is_tool = CANONICAL_TOOLS.contains(&id.as_str());
        if !is_tool && !CANONICAL_SKILLS.contains(&id.as_str()) {
            out.push(at(
                "serves",
                "lacks",
                format!("{id:?} is not a canonical tool or skill id (docs/canonical-ids.md)"),
            ));
        } else if s.tools.contains_key(id) || s.skills.contains_key(id) {
            out.push(at(
                "serves",
                "lacks",
                format!("{id:?} is both mapped and lacked; keep one"),
            ));
        } else if (is_tool && tool_names.contains(&id.as_str()))
            || (!is_tool && skill_names.contains(&id.as_str()))
        {
            out.push(at(
                "serves",
                "lacks",
                format!("{id:?} is lacked, but the harness has one of that name, which serves it; remove it from lacks"),
            ));
        }
    }
    for (intent, w) in &s.intents {
        if !(w.is_finite() && *w >= 0.0) {
            out.push(at(
                "serves.intents",
                intent.as_str(),
                format!("weight {w} must be a non-negative number"),
            ));
        }
    }
    if !s.intents.is_empty() && s.intents.values().all(|w| *w <= 0.0) {
        out.push(at(
            "serves",
            "intents",
            "no intent has a positive weight, so no task could be generated".into(),
        ));
    }
    out
}

/// With a `[serves]` table, every canonical tool is served (the harness has it under its name or maps
/// it) or lacked: a forgotten entry would otherwise silently drop every task that needs the tool.
pub fn coverage(h: &Harness) -> Vec<Problem> {
    let Some(s) = &h.manifest().serves else {
        return Vec::new();
    };
    let names = names(h);
    let text = super::files::text(h.files(), MANIFEST_FILE).unwrap_or_default();
    CANONICAL_TOOLS
        .iter()
        .filter(|&&id| id != LOAD_SKILL || h.skills_mode() == SkillsMode::Tool)
        .filter(|&&id| !has_tool(h, &names, id) && !s.lacks.iter().any(|l| l == id))
        .map(|id| {
            Problem::field(
                MANIFEST_FILE,
                "serves.tools",
                format!("canonical tool {id:?} is not served: map it to one of your tools under [serves.tools], or list it in [serves] lacks"),
            )
            .at_line(line_of(text, "serves", "tools").or(line_of(text, "serves.tools", "")))
        })
        .collect()
}

/// The 1-based line that sets `key` in `[table]` (a dotted sub-table or an inline table), else the
/// line of the table's header; `None` when neither is written out.
fn line_of(text: &str, table: &str, key: &str) -> Option<usize> {
    let mut current = String::new();
    let mut header = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') {
            current = t.trim_matches(|c| c == '[' || c == ']').trim().to_string();
            if current == table {
                header = Some(i + 1);
            }
            continue;
        }
        let Some((k, _)) = t.split_once('=') else {
            continue;
        };
        let k = k.trim().trim_matches('"');
        let full = if current.is_empty() {
            k.to_string()
        } else {
            format!("{current}.{k}")
        };
        if !key.is_empty() && (full == format!("{table}.{key}") || (current == table && k == key)) {
            return Some(i + 1);
        }
        // An inline table: `tools = { get_order_status = "lookup_order" }` under [serves].
        if table.ends_with(&format!(".{k}")) && format!("{current}.{k}") == table {
            header.get_or_insert(i + 1);
        }
    }
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_keys_in_sub_tables_and_inline_tables() {
        let text = "[harness]\nname = \"x\"\n[serves]\nlacks = [\"a\"]\ntools = { b = \"c\" }\n[serves.skills]\nd = \"e\"\n";
        assert_eq!(line_of(text, "serves", "lacks"), Some(4));
        assert_eq!(line_of(text, "serves.tools", "b"), Some(5));
        assert_eq!(line_of(text, "serves.skills", "d"), Some(7));
        assert_eq!(line_of(text, "serves.skills", "zz"), Some(6));
        assert_eq!(line_of(text, "limits", "x"), None);
    }
}
