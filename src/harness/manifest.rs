//! `harness.toml`: identity of the harness, where its parts live, and its numeric limits.
//!
//! ```toml
//! [harness]
//! name = "taolive"                 # same rules as a skill name
//! version = "1.0.0"                # MAJOR.MINOR.PATCH[-pre][+build]
//! description = "…"
//! [model]
//! chat_template = "qwen3"          # "qwen3", "qwen3_5", or a path to a .jinja file in the harness
//! tool_call_format = "hermes_json" # or "qwen3_xml"
//! [prompts]
//! pipeline = "prompts/pipeline.toml"
//! [tools]
//! dir = "tools"
//! order = []                       # optional: tool names listed first, in this order
//! [skills]
//! dir = "skills"
//! mode = "tool"                    # "tool": bodies via `load_tool`; "inline": bodies in the prompt
//! load_tool = "load_skill"
//! order = []                       # optional: skill names listed first in the catalog
//! [hooks]
//! file = "hooks/hooks.json"        # omit the table for a harness without hooks
//! default_timeout_s = 10
//! [limits]                         # see `Limits`
//! [serves]                         # optional: canonical ids → this harness's names, intents, lacks (`Serves`)
//! ```
//! Unknown keys are errors: a misspelt `max_round` must not silently fall back to a default.

use serde::{Deserialize, Serialize};

use super::limits::Limits;
use super::problem::Problem;
use super::serves::Serves;
use super::toml_error::toml_problem;

pub const MANIFEST_FILE: &str = "harness.toml";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub harness: HarnessMeta,
    #[serde(default)]
    pub model: ModelConfig,
    #[serde(default)]
    pub prompts: PromptsConfig,
    #[serde(default)]
    pub tools: ToolsConfig,
    #[serde(default)]
    pub skills: SkillsConfig,
    /// `None` when the manifest has no `[hooks]` table: the harness has no hooks.
    #[serde(default)]
    pub hooks: Option<HooksFileConfig>,
    #[serde(default)]
    pub limits: Limits,
    /// What the harness serves, against the simulator's canonical ids; `None`: the canonical names as
    /// they are, in the default traffic mix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serves: Option<Serves>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarnessMeta {
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    #[serde(default = "default_chat_template")]
    pub chat_template: String,
    #[serde(default)]
    pub tool_call_format: ToolCallFormat,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            chat_template: default_chat_template(),
            tool_call_format: ToolCallFormat::default(),
        }
    }
}

fn default_chat_template() -> String {
    "qwen3".to_string()
}

/// Chat templates the toolkit ships; any other value is a path to a template file in the harness.
pub const BUILTIN_CHAT_TEMPLATES: [&str; 2] = ["qwen3", "qwen3_5"];

impl ModelConfig {
    /// The harness-relative path of a custom chat template, or `None` for a built-in name.
    pub fn chat_template_path(&self) -> Option<&str> {
        (!BUILTIN_CHAT_TEMPLATES.contains(&self.chat_template.as_str()))
            .then_some(self.chat_template.as_str())
    }
}

/// How the model writes tool calls (matches the chat template family).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallFormat {
    /// Qwen3: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`.
    #[default]
    HermesJson,
    /// Qwen3.5 / Qwen3-Coder: `<tool_call><function=NAME><parameter=ARG>…`.
    Qwen3Xml,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptsConfig {
    #[serde(default = "default_pipeline")]
    pub pipeline: String,
}

impl Default for PromptsConfig {
    fn default() -> Self {
        PromptsConfig {
            pipeline: default_pipeline(),
        }
    }
}

fn default_pipeline() -> String {
    "prompts/pipeline.toml".to_string()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsConfig {
    #[serde(default = "default_tools_dir")]
    pub dir: String,
    /// Tool names shown first, in this order; the rest follow in file-name order. Lets the
    /// augmentation stage reorder the tool list without renaming files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub order: Vec<String>,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        ToolsConfig {
            dir: default_tools_dir(),
            order: Vec::new(),
        }
    }
}

fn default_tools_dir() -> String {
    "tools".to_string()
}

/// How skill bodies reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillsMode {
    /// Progressive disclosure: the prompt lists name + description, the body comes back from the
    /// load tool (`[skills] load_tool`, `load_skill` by default).
    #[default]
    Tool,
    /// Every body is rendered into the system prompt (small harnesses).
    Inline,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsConfig {
    #[serde(default = "default_skills_dir")]
    pub dir: String,
    #[serde(default)]
    pub mode: SkillsMode,
    /// Name of the tool that returns a skill body in `tool` mode; it must exist in `tools/`.
    #[serde(default = "default_load_tool")]
    pub load_tool: String,
    /// Skill names shown first in the catalog, in this order; the rest follow by directory name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub order: Vec<String>,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        SkillsConfig {
            dir: default_skills_dir(),
            mode: SkillsMode::default(),
            load_tool: default_load_tool(),
            order: Vec::new(),
        }
    }
}

fn default_skills_dir() -> String {
    "skills".to_string()
}

fn default_load_tool() -> String {
    "load_skill".to_string()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksFileConfig {
    #[serde(default = "default_hooks_file")]
    pub file: String,
    /// Timeout of command hooks that do not set their own, in seconds (1..=600).
    #[serde(default = "default_timeout_s")]
    pub default_timeout_s: u64,
}

fn default_hooks_file() -> String {
    "hooks/hooks.json".to_string()
}

fn default_timeout_s() -> u64 {
    10
}

/// Allowed range of hook timeouts, in seconds.
pub const TIMEOUT_RANGE_S: std::ops::RangeInclusive<u64> = 1..=600;

impl Manifest {
    pub fn parse(text: &str) -> Result<Manifest, Problem> {
        toml::from_str(text).map_err(|e| toml_problem(MANIFEST_FILE, text, &e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_a_minimal_manifest() {
        let m = Manifest::parse("[harness]\nname = \"x\"\nversion = \"1.0.0\"\n").unwrap();
        assert_eq!(m.prompts.pipeline, "prompts/pipeline.toml");
        assert_eq!(m.skills.mode, SkillsMode::Tool);
        assert!(m.hooks.is_none());
        assert_eq!(m.model.chat_template_path(), None);
    }

    #[test]
    fn misspelt_key_is_an_error_naming_it() {
        let text = "[harness]\nname = \"x\"\nversion = \"1.0.0\"\n[limits]\nmax_round = 3\n";
        let p = Manifest::parse(text).unwrap_err();
        assert_eq!(p.line, Some(5));
        assert_eq!(p.field.as_deref(), Some("limits.max_round"));
        assert!(p.message.contains("unknown field"), "{p}");
    }
}
