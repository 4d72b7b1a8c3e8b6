//! `prompts/pipeline.toml`: the ordered blocks of the system prompt.
//!
//! ```toml
//! separator = "\n\n"                 # between rendered blocks (default: a blank line)
//! [[block]]
//! name = "persona"                   # unique, a-z 0-9 _ -
//! template = "persona.md.j2"         # relative to the pipeline file's directory
//! [[block]]
//! name = "current_product"
//! template = "current_product.md.j2"
//! when = "product"                   # optional minijinja expression; the block is skipped when falsy
//! [[block]]
//! name = "constraints"
//! template = "constraints.md.j2"
//! items = [                          # optional; each is a minijinja template, rendered in order,
//!   "回复不超过 {{ limits.max_reply_chars }} 字",  # and handed to the block template as `items`
//! ]
//! [[block]]
//! name = "room_state"
//! template = "room_state.md.j2"
//! placement = "context"              # optional; see [`Placement`]
//! ```
//! Block order and item order are data, so the augmentation stage reorders them by editing this
//! file; numbers such as reply length come from `limits.*`, never from literal prompt text.

use serde::{Deserialize, Serialize};

use super::files::FileSet;
use super::paths::{normalize_relative, parent_of};
use super::problem::Problem;
use super::toml_error::toml_problem;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pipeline {
    #[serde(default = "default_separator")]
    pub separator: String,
    #[serde(rename = "block", default)]
    pub blocks: Vec<Block>,
}

fn default_separator() -> String {
    "\n\n".to_string()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Block {
    pub name: String,
    pub template: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<String>,
    #[serde(default, skip_serializing_if = "Placement::is_system")]
    pub placement: Placement,
}

/// Where a rendered block goes.
///
/// The chat template writes the tool schemas right after the system prompt, so a system prompt
/// that carries the live room (the product on screen, the queue) differs from request to request
/// before the first tool schema: a serving prefix cache then holds only the few tokens before the
/// first context-filled block. Blocks placed in the *context message* leave the system prompt the
/// same for every request, so the cache holds it and every tool schema (on the sample harness,
/// ~3,800 of ~3,900 prompt tokens; docs/serving-performance.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// In the system prompt (the default).
    #[default]
    System,
    /// In the context message: a user message right after the system prompt, before the
    /// viewer's messages (a user message because Qwen3.5-style templates refuse a system message
    /// anywhere but first).
    Context,
}

impl Placement {
    pub fn is_system(&self) -> bool {
        *self == Placement::System
    }
}

impl Pipeline {
    pub fn parse(file: &str, text: &str) -> Result<Pipeline, Problem> {
        toml::from_str(text).map_err(|e| toml_problem(file, text, &e))
    }

    /// The file text for this pipeline (the augmentation stage writes reordered pipelines).
    pub fn to_toml_text(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Root-relative key of a block's template, given the pipeline file's key.
    pub fn template_key(
        pipeline_file: &str,
        block: &Block,
    ) -> Result<String, super::paths::PathError> {
        normalize_relative(parent_of(pipeline_file), &block.template)
    }
}

/// Structure of the pipeline: at least one block, unique well-formed names, templates that exist
/// inside the harness. Template *compilation* is checked by the renderer.
pub fn validate_pipeline(
    file: &str,
    pipeline: &Pipeline,
    files: &FileSet,
    problems: &mut Vec<Problem>,
) {
    if pipeline.blocks.is_empty() {
        problems.push(Problem::field(
            file,
            "block",
            "the pipeline has no blocks; add at least one [[block]]",
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, block) in pipeline.blocks.iter().enumerate() {
        let valid_name = !block.name.is_empty()
            && block
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        if !valid_name {
            problems.push(Problem::field(
                file,
                format!("block[{i}].name"),
                format!("{:?} must be non-empty a-z, 0-9, '_', '-'", block.name),
            ));
        }
        if !seen.insert(block.name.as_str()) {
            problems.push(Problem::field(
                file,
                format!("block[{i}].name"),
                format!("duplicate block name {:?}", block.name),
            ));
        }
        match Pipeline::template_key(file, block) {
            Err(e) => problems.push(Problem::field(
                file,
                format!("block[{i}].template"),
                format!("{:?}: {e}", block.template),
            )),
            Ok(key) if !files.contains_key(&key) => problems.push(Problem::field(
                file,
                format!("block[{i}].template"),
                format!(
                    "{:?}: no such file in the harness directory (looked for {key})",
                    block.template
                ),
            )),
            Ok(_) => {}
        }
    }
}
