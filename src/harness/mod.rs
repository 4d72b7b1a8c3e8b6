//! Harnesses: load, validate, render, hash and write the directory that shapes the agent's
//! behaviour without touching weights (DESIGN §1, §3; file conventions in
//! `reference/eval_serve_harness.md` §5).
//!
//! ```text
//! harness.toml          manifest: identity, where the parts live, limits      (manifest.rs, limits.rs)
//! prompts/pipeline.toml ordered prompt blocks + minijinja templates           (pipeline.rs, render.rs)
//! tools/*.json          one MCP tool per file → OpenAI function specs         (tools.rs)
//! skills/NAME/SKILL.md  Agent Skills: YAML front matter + rules               (skills.rs)
//! hooks/hooks.json      Claude-Code-shaped hooks + built-in checks            (hooks.rs)
//! ```
//!
//! [`Harness::load`] fails on structural problems (unreadable or unparsable files, paths that
//! leave the directory); [`Harness::validate`] returns every semantic problem; [`check_dir`]
//! does both and never fails, which is what `hat harness validate` prints.
//!
//! The file set read from disk is kept verbatim: [`Harness::write_to`] reproduces it byte for
//! byte, [`Harness::hash`] is computed over it, and [`Harness::edited`] builds a variant by
//! editing files, so unchanged files keep their original text.

pub mod cli;
pub mod context;
pub mod files;
pub mod hash;
pub mod hooks;
pub mod init;
pub mod limits;
pub mod manifest;
pub mod order;
pub mod paths;
pub mod pipeline;
pub mod problem;
pub mod render;
pub mod serves;
pub mod skills;
mod toml_error;
pub mod tools;
mod validate;

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use serde_json::{json, Map, Value};

pub use context::LiveContext;
pub use files::{FileSet, HarnessFile};
pub use hooks::{
    BuiltinCheck, BuiltinHook, CommandHook, Feedback, FeedbackRole, Hook, HookEvent, HooksConfig,
    MatcherGroup, OnFail,
};
pub use limits::Limits;
pub use manifest::{Manifest, SkillsMode, ToolCallFormat};
pub use pipeline::{Block, Pipeline, Placement};
pub use problem::Problem;
pub use render::RenderedBlock;
pub use skills::Skill;
pub use tools::Tool;

use crate::record::{Message, Role};
use paths::normalize_relative;
use problem::problems_error;
use render::PromptRenderer;

/// A loaded harness. Cheap to clone; immutable (build variants with [`Harness::edited`]).
#[derive(Debug, Clone)]
pub struct Harness {
    root: Option<PathBuf>,
    files: FileSet,
    manifest: Manifest,
    pipeline_file: String,
    pipeline: Pipeline,
    tools: Vec<Tool>,
    skills: Vec<Skill>,
    hooks_file: Option<String>,
    hooks: HooksConfig,
    renderer: PromptRenderer,
    /// What every template sees besides the live room, built once (see [`template_vars`]).
    template_vars: minijinja::Value,
}

/// A harness as far as it could be parsed, and the structural problems met on the way.
struct Parsed {
    harness: Option<Harness>,
    problems: Vec<Problem>,
}

impl Harness {
    /// Loads the harness in `dir`. Fails, listing every structural problem, if any file cannot be
    /// read or parsed or a path leaves the directory. Semantic rules are checked by [`validate`].
    ///
    /// [`validate`]: Harness::validate
    pub fn load(dir: impl AsRef<Path>) -> Result<Harness> {
        let dir = dir.as_ref();
        let (files, mut problems) = files::read_dir(dir);
        let parsed = parse(files, Some(dir.to_path_buf()));
        problems.extend(parsed.problems);
        match parsed.harness {
            Some(h) if problems.is_empty() => Ok(h),
            _ => Err(problems_error(
                &format!("harness {}", dir.display()),
                &problems,
            )),
        }
    }

    /// Builds a harness from an in-memory file set (keys are `/`-separated relative paths).
    pub fn from_files(files: FileSet) -> Result<Harness> {
        let parsed = parse(files, None);
        match parsed.harness {
            Some(h) if parsed.problems.is_empty() => Ok(h),
            _ => Err(problems_error("harness", &parsed.problems)),
        }
    }

    /// A variant: edit the file set, then re-parse. Unchanged files keep their exact bytes.
    /// The variant has no root directory until written with [`Harness::write_to`].
    pub fn edited(&self, edit: impl FnOnce(&mut FileSet)) -> Result<Harness> {
        let mut files = self.files.clone();
        edit(&mut files);
        Harness::from_files(files)
    }

    /// Every semantic problem (names, schemas, limits, references, hook rules, templates).
    pub fn validate(&self) -> Vec<Problem> {
        validate::validate(self)
    }

    /// Writes the file set into `dir` (which must be absent or empty), byte for byte.
    pub fn write_to(&self, dir: impl AsRef<Path>) -> Result<()> {
        files::write_dir(&self.files, dir.as_ref())
    }

    /// `sha256:<hex>` over the normalized, path-sorted file contents (policy in `hash.rs`).
    pub fn hash(&self) -> String {
        hash::content_hash(&self.files)
    }

    pub fn name(&self) -> &str {
        &self.manifest.harness.name
    }

    pub fn version(&self) -> &str {
        &self.manifest.harness.version
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Canonical → surface names of this harness, from its `[serves]` declaration (`serves.rs`).
    pub fn names(&self) -> crate::record::Names {
        serves::names(self)
    }

    pub fn limits(&self) -> &Limits {
        &self.manifest.limits
    }

    /// The directory the harness was loaded from (`None` for in-memory variants).
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    pub fn files(&self) -> &FileSet {
        &self.files
    }

    /// Tools in canonical order: `[tools] order` first, then by file name.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Skills in catalog order: `[skills] order` first, then by directory name.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }

    pub fn skill(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name() == name)
    }

    pub fn skills_mode(&self) -> SkillsMode {
        self.manifest.skills.mode
    }

    pub fn hooks(&self) -> &HooksConfig {
        &self.hooks
    }

    /// Root-relative path of the hooks file, if the harness has hooks.
    pub fn hooks_file(&self) -> Option<&str> {
        self.hooks_file.as_deref()
    }

    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    pub fn pipeline_file(&self) -> &str {
        &self.pipeline_file
    }

    /// The timeout a command hook runs under, in seconds.
    pub fn hook_timeout_s(&self, hook: &CommandHook) -> u64 {
        hook.timeout
            .or(self.manifest.hooks.as_ref().map(|h| h.default_timeout_s))
            .unwrap_or(10)
    }

    /// Absolute path of a file named inside the harness (a hook command), after checking on disk
    /// that it stays inside the harness even through symlinks. Needs a harness loaded from disk.
    pub fn resolve_path(&self, rel: &str) -> Result<PathBuf> {
        let root = self.root.as_deref().ok_or_else(|| {
            anyhow!("{rel}: this harness was built in memory; write it to a directory first")
        })?;
        paths::resolve_on_disk(root, rel).map_err(|e| anyhow!("{}: {rel:?}: {e}", root.display()))
    }

    /// OpenAI function specs of all tools, in canonical order.
    pub fn openai_tools(&self) -> Vec<Value> {
        self.tools.iter().map(Tool::openai_spec).collect()
    }

    /// Renders the prompt blocks for a live-room context, in pipeline order.
    pub fn render_blocks(&self, ctx: &LiveContext) -> Result<Vec<RenderedBlock>> {
        self.renderer.render_blocks(
            &self.pipeline_file,
            &self.pipeline,
            &self.template_vars,
            ctx,
        )
    }

    /// The system prompt alone (without a context message, see [`Harness::render_prompt`]).
    pub fn render_system_prompt(&self, ctx: &LiveContext) -> Result<String> {
        Ok(self.render_prompt(ctx)?.system)
    }

    /// The prompt for a live-room context: each placement's rendered blocks joined by the
    /// pipeline's separator.
    pub fn render_prompt(&self, ctx: &LiveContext) -> Result<RenderedPrompt> {
        let blocks = self.render_blocks(ctx)?;
        let joined = |placement: Placement| {
            blocks
                .iter()
                .filter(|b| b.placement == placement)
                .map(|b| b.text.as_str())
                .collect::<Vec<_>>()
                .join(&self.pipeline.separator)
        };
        let context = joined(Placement::Context);
        Ok(RenderedPrompt {
            system: joined(Placement::System),
            context: (!context.is_empty()).then_some(context),
        })
    }
}

/// A rendered prompt: the system prompt and, when the pipeline places blocks there and they
/// render, the context message (see [`Placement`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedPrompt {
    pub system: String,
    pub context: Option<String>,
}

impl RenderedPrompt {
    /// The messages that open a conversation: the system prompt, then the context message.
    pub fn messages(self) -> Vec<Message> {
        let mut messages = vec![Message::text(Role::System, self.system)];
        messages.extend(self.context.map(|c| Message::text(Role::User, c)));
        messages
    }
}

/// Variables every template sees besides the live-room context (see `context.rs`).
fn template_vars(manifest: &Manifest, tools: &[Tool], skills: &[Skill]) -> minijinja::Value {
    let inline = manifest.skills.mode == SkillsMode::Inline;
    let skills: Vec<Value> = skills
        .iter()
        .map(|s| {
            let mut v = json!({"name": s.name(), "description": s.description()});
            if inline {
                v["body"] = Value::String(s.body.trim().to_string());
            }
            v
        })
        .collect();
    let tools: Vec<Value> = tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description}))
        .collect();
    let m = manifest;
    let mut vars = Map::new();
    vars.insert("harness".into(), json!({"name": m.harness.name, "version": m.harness.version, "description": m.harness.description}));
    vars.insert(
        "limits".into(),
        serde_json::to_value(m.limits).unwrap_or(Value::Null),
    );
    vars.insert("tools".into(), Value::Array(tools));
    vars.insert("skills".into(), Value::Array(skills));
    vars.insert(
        "skills_mode".into(),
        serde_json::to_value(m.skills.mode).unwrap_or(Value::Null),
    );
    vars.insert(
        "load_skill_tool".into(),
        Value::String(m.skills.load_tool.clone()),
    );
    minijinja::Value::from_serialize(&vars)
}

/// Loads and validates `dir`, returning every problem (structural and semantic); an empty list
/// means the harness is valid. Never fails and never panics on bad input.
pub fn check_dir(dir: impl AsRef<Path>) -> Vec<Problem> {
    let (files, problems) = files::read_dir(dir.as_ref());
    checked(parse(files, Some(dir.as_ref().to_path_buf())), problems)
}

/// [`check_dir`] for an in-memory file set (no root directory, as [`Harness::from_files`]).
pub fn check_files(files: FileSet) -> Vec<Problem> {
    checked(parse(files, None), Vec::new())
}

/// `problems` met before parsing, then the parse's, then validation's when it parsed.
fn checked(parsed: Parsed, mut problems: Vec<Problem>) -> Vec<Problem> {
    problems.extend(parsed.problems);
    if let Some(h) = parsed.harness {
        problems.extend(h.validate());
        problems.extend(serves::coverage(&h));
    }
    problems
}

/// Resolves a path written in `harness.toml`, recording a problem naming `field` if it is unsafe.
fn manifest_path(field: &str, value: &str, problems: &mut Vec<Problem>) -> Option<String> {
    match normalize_relative("", value) {
        Ok(key) => Some(key),
        Err(e) => {
            problems.push(Problem::field(
                manifest::MANIFEST_FILE,
                field,
                format!("{value:?}: {e}"),
            ));
            None
        }
    }
}

/// Parses a file set as far as possible. Without a readable manifest nothing else can be
/// located, so the harness is `None`; otherwise every part that fails is left empty and reported.
fn parse(files: FileSet, root: Option<PathBuf>) -> Parsed {
    let mut problems = Vec::new();
    let manifest = match files::text(&files, manifest::MANIFEST_FILE).and_then(Manifest::parse) {
        Ok(m) => m,
        Err(p) => {
            return Parsed {
                harness: None,
                problems: vec![p],
            }
        }
    };

    let pipeline_file = manifest_path(
        "prompts.pipeline",
        &manifest.prompts.pipeline,
        &mut problems,
    );
    let pipeline = match pipeline_file
        .as_deref()
        .map(|f| files::text(&files, f).and_then(|t| Pipeline::parse(f, t)))
    {
        Some(Ok(p)) => p,
        Some(Err(p)) => {
            problems.push(p);
            Pipeline {
                separator: "\n\n".into(),
                blocks: Vec::new(),
            }
        }
        None => Pipeline {
            separator: "\n\n".into(),
            blocks: Vec::new(),
        },
    };

    let mut tools = Vec::new();
    if let Some(dir) = manifest_path("tools.dir", &manifest.tools.dir, &mut problems) {
        let prefix = format!("{dir}/");
        for key in files.keys() {
            let Some(rest) = key.strip_prefix(&prefix) else {
                continue;
            };
            if rest.ends_with(".json") && !rest.contains('/') {
                match files::text(&files, key).and_then(|t| Tool::parse(key, t)) {
                    Ok(t) => tools.push(t),
                    Err(p) => problems.push(p),
                }
            }
        }
    }
    let tools = order::apply_order(tools, &manifest.tools.order, |t| t.name.as_str());

    let skills = match manifest_path("skills.dir", &manifest.skills.dir, &mut problems) {
        Some(dir) => skills::load_skills(&files, &dir, &mut problems),
        None => Vec::new(),
    };
    let skills = order::apply_order(skills, &manifest.skills.order, |s| s.name());

    let mut hooks = HooksConfig::default();
    let hooks_file = manifest
        .hooks
        .as_ref()
        .and_then(|h| manifest_path("hooks.file", &h.file, &mut problems));
    if let Some(f) = &hooks_file {
        match files::text(&files, f) {
            Ok(text) => {
                let (config, hook_problems) = HooksConfig::parse(f, text);
                hooks = config;
                problems.extend(hook_problems);
            }
            Err(p) => problems.push(p),
        }
    }
    if let Some(path) = manifest.model.chat_template_path() {
        manifest_path("model.chat_template", path, &mut problems);
    }

    let renderer = PromptRenderer::new(&files, &pipeline);
    let template_vars = template_vars(&manifest, &tools, &skills);
    let harness = Harness {
        root,
        files,
        manifest,
        pipeline_file: pipeline_file.unwrap_or_default(),
        pipeline,
        tools,
        skills,
        hooks_file,
        hooks,
        renderer,
        template_vars,
    };
    Parsed {
        harness: Some(harness),
        problems,
    }
}
