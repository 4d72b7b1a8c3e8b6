//! The op registry and the state an op edits.
//!
//! An op is a named, parameterised, seeded edit of a harness's file set along one of the five HSA
//! dimensions. [`OPS`] lists them in application order: renames and masks run first, on the base
//! file set, so a rename is a pure identifier substitution that its inverse undoes byte for byte; text
//! rewrites, additions, prompt and hook edits follow. Each op returns the parameters it actually used
//! (recorded in `harness.variant.ops`), or `None` when it found nothing to change.

use std::collections::{BTreeSet, HashMap};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::config::{Config, Pool};
use super::paraphraser::Paraphraser;
use super::{hooks, prompt, skill_content, skill_ids, tools};
use crate::harness::{FileSet, Harness, HarnessFile};
use crate::record::Names;
use crate::rng::Rng;

/// The five HSA dimensions (DESIGN §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum Dim {
    SkillIds,
    SkillContent,
    Tools,
    Prompt,
    Hooks,
}

impl Dim {
    pub fn as_str(self) -> &'static str {
        match self {
            Dim::SkillIds => "skill_ids",
            Dim::SkillContent => "skill_content",
            Dim::Tools => "tools",
            Dim::Prompt => "prompt",
            Dim::Hooks => "hooks",
        }
    }
}

pub type OpFn = fn(&mut Ctx<'_>, &Config, &mut Rng) -> Result<Option<Value>>;

pub struct OpDef {
    pub name: &'static str,
    pub dim: Dim,
    pub apply: OpFn,
    /// One line for `--help` and the docs.
    pub summary: &'static str,
}

/// Every op, in application order.
pub const OPS: &[OpDef] = &[
    OpDef { name: "mask_skill", dim: Dim::SkillIds, apply: skill_ids::mask_skill, summary: "remove skills no task needs (never a kept or needed one)" },
    OpDef { name: "rename_skill", dim: Dim::SkillIds, apply: skill_ids::rename_skill, summary: "rename skills (kebab-case names from the pool) everywhere they are referenced" },
    OpDef { name: "rename_tool", dim: Dim::Tools, apply: tools::rename_tool, summary: "rename tools (snake/camel/Pascal/kebab, verb-noun or noun-verb, abbreviations) everywhere" },
    OpDef { name: "rewrite_skill_description", dim: Dim::SkillIds, apply: skill_ids::rewrite_description, summary: "paraphrase skill descriptions" },
    OpDef { name: "add_synthetic_skill", dim: Dim::SkillIds, apply: skill_ids::add_synthetic, summary: "add plausible shop-floor skills that no task needs" },
    OpDef { name: "add_noise_skill", dim: Dim::SkillIds, apply: skill_ids::add_noise, summary: "add unrelated noise skills" },
    OpDef { name: "paraphrase_rules", dim: Dim::SkillContent, apply: skill_content::paraphrase_rules, summary: "paraphrase rule lines of skill bodies" },
    OpDef { name: "mask_rules", dim: Dim::SkillContent, apply: skill_content::mask_rules, summary: "drop non-essential bullet rules (no identifier, number or prohibition)" },
    OpDef { name: "reorder_rules", dim: Dim::SkillContent, apply: skill_content::reorder_rules, summary: "shuffle runs of bullet rules (numbered steps keep their order)" },
    OpDef { name: "rewrite_tool_description", dim: Dim::Tools, apply: tools::rewrite_description, summary: "paraphrase tool descriptions" },
    OpDef { name: "rewrite_param_descriptions", dim: Dim::Tools, apply: tools::rewrite_params, summary: "paraphrase parameter descriptions" },
    OpDef { name: "reorder_blocks", dim: Dim::Prompt, apply: prompt::reorder_blocks, summary: "reorder system-prompt blocks (context-filled runs move as one)" },
    OpDef { name: "reorder_items", dim: Dim::Prompt, apply: prompt::reorder_items, summary: "shuffle the items inside prompt blocks" },
    OpDef { name: "perturb_limits", dim: Dim::Prompt, apply: prompt::perturb_limits, summary: "redraw reply length, max rounds and max tool calls within valid ranges" },
    OpDef { name: "hook_retries", dim: Dim::Hooks, apply: hooks::retries, summary: "change retry budgets of retrying hooks" },
    OpDef { name: "hook_on_fail", dim: Dim::Hooks, apply: hooks::on_fail, summary: "switch fixable checks between auto-fix and retry" },
    OpDef { name: "feedback_role", dim: Dim::Hooks, apply: hooks::feedback_role, summary: "deliver reply-check feedback as a user turn or a system note" },
    OpDef { name: "feedback_wording", dim: Dim::Hooks, apply: hooks::feedback_wording, summary: "reword feedback templates (same variables, same order)" },
    OpDef { name: "guard_hook", dim: Dim::Hooks, apply: hooks::guard_hook, summary: "add an auto-fix hook masking already-forbidden phrases" },
    // Last, though it renames: an op appended here leaves every earlier op's gate draw, and so every
    // variant drawn before it existed, unchanged.
    OpDef { name: "rename_params", dim: Dim::Tools, apply: tools::rename_params, summary: "rename identifier-shaped argument keys (product_id → item_id) in schemas, calls and every mention" },
];

/// A variant in the making: the edited file set, the names map, and what the ops need to know.
pub struct Ctx<'a> {
    pub base: &'a Harness,
    pub pool: Pool,
    /// Canonical skill ids that must survive (`--keep-skill`, config `keep`, a record's needs).
    pub keep_skills: &'a BTreeSet<String>,
    pub paraphraser: Paraphraser,
    pub names: Names,
    files: FileSet,
    parsed: Option<Harness>,
}

impl<'a> Ctx<'a> {
    pub fn new(
        base: &'a Harness,
        pool: Pool,
        keep_skills: &'a BTreeSet<String>,
        paraphraser: Paraphraser,
    ) -> Ctx<'a> {
        Ctx {
            base,
            pool,
            keep_skills,
            paraphraser,
            names: Names::default(),
            files: base.files().clone(),
            parsed: Some(base.clone()),
        }
    }

    pub fn files(&self) -> &FileSet {
        &self.files
    }

    pub fn into_files(self) -> FileSet {
        self.files
    }

    /// The current file set, parsed (re-parsed after edits).
    pub fn harness(&mut self) -> Result<&Harness> {
        if self.parsed.is_none() {
            let h = Harness::from_files(self.files.clone())
                .context("an HSA op produced an unparsable harness")?;
            self.parsed = Some(h);
        }
        Ok(self.parsed.as_ref().expect("just parsed"))
    }

    pub fn text(&self, key: &str) -> Result<&str> {
        let f = self
            .files
            .get(key)
            .with_context(|| format!("{key}: no such file in the harness"))?;
        std::str::from_utf8(&f.bytes).with_context(|| format!("{key}: not UTF-8"))
    }

    /// Replaces (or adds) a file's text, keeping its execute bit.
    pub fn set_text(&mut self, key: &str, text: String) {
        let executable = self.files.get(key).is_some_and(|f| f.executable);
        self.files.insert(
            key.to_string(),
            HarnessFile {
                bytes: text.into_bytes(),
                executable,
            },
        );
        self.parsed = None;
    }

    pub fn remove_prefix(&mut self, prefix: &str) {
        self.files.retain(|k, _| !k.starts_with(prefix));
        self.parsed = None;
    }

    /// Applies `map` to every identifier of every text file, and moves files whose path has a
    /// component named in the map (`skills/old/…`, `tools/old.json`).
    pub fn rename_everywhere(&mut self, map: &HashMap<String, String>) {
        self.files = rename_files(&self.files, map);
        self.parsed = None;
    }

    /// Whether `name` already occurs as an identifier anywhere in the harness (a rename to it could
    /// not be undone exactly, and could shadow a real reference).
    pub fn ident_in_use(&self, name: &str) -> bool {
        self.files.iter().any(|(k, f)| {
            super::text::idents(k).any(|i| i == name)
                || std::str::from_utf8(&f.bytes)
                    .is_ok_and(|t| super::text::idents(t).any(|i| i == name))
        })
    }
}

/// `files` with every identifier in `map` renamed in text files and in paths. Non-UTF-8 files are
/// copied unchanged. Renaming with the inverse map restores the original exactly, provided the new
/// names did not occur before (which [`Ctx::ident_in_use`] checks).
pub fn rename_files(files: &FileSet, map: &HashMap<String, String>) -> FileSet {
    files
        .iter()
        .map(|(key, f)| {
            let key = path_renamed(key, map);
            let bytes = match std::str::from_utf8(&f.bytes) {
                Ok(t) => super::text::rename_idents(t, map).into_owned().into_bytes(),
                Err(_) => f.bytes.clone(),
            };
            (
                key,
                HarnessFile {
                    bytes,
                    executable: f.executable,
                },
            )
        })
        .collect()
}

fn path_renamed(key: &str, map: &HashMap<String, String>) -> String {
    key.split('/')
        .map(|part| {
            let (stem, ext) = match part.strip_suffix(".json") {
                Some(stem) => (stem, ".json"),
                None => (part, ""),
            };
            match map.get(stem) {
                Some(new) => format!("{new}{ext}"),
                None => part.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}
