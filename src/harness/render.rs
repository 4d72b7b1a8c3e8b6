//! The minijinja environment that renders a harness's prompt templates.
//!
//! Templates are loaded from the harness file set, never from the file system, so rendering a
//! harness that was edited in memory (an augmentation variant) needs no directory. `include`,
//! `import`, `extends` and `from` names are relative to the including template's directory (like
//! Markdown links) and may not leave the harness. `trim_blocks` and `lstrip_blocks` are on, so a
//! `{% for %}` line does not leave a blank line behind, and templates keep their final newline; Python string methods (pycompat) and the
//! contrib filters are available, as in chat templates.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{Context, Result};
use minijinja::{Environment, ErrorKind};

use super::context::LiveContext;
use super::files::FileSet;
use super::paths::{normalize_relative, parent_of};
use super::pipeline::{Block, Pipeline, Placement};
use super::problem::{line_of_offset, Problem};

/// One rendered block of the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedBlock {
    pub name: String,
    pub text: String,
    pub placement: Placement,
}

#[derive(Debug, Clone)]
pub struct PromptRenderer {
    env: Environment<'static>,
}

impl PromptRenderer {
    /// An environment over `files`, with `pipeline`'s inline items compiled up front (they are
    /// rendered for every episode; compiling them each time was a third of the simulator's cost).
    pub fn new(files: &FileSet, pipeline: &Pipeline) -> PromptRenderer {
        let texts: BTreeMap<String, String> = files
            .iter()
            .filter_map(|(k, f)| {
                String::from_utf8(f.bytes.clone())
                    .ok()
                    .map(|t| (k.clone(), t))
            })
            .collect();
        let texts = Arc::new(texts);
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        // A partial is a line (or lines) of text: keep its final newline, or an `{% include %}`
        // line would run into the next one.
        env.set_keep_trailing_newline(true);
        minijinja_contrib::add_to_environment(&mut env);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.set_path_join_callback(|name, parent| {
            match normalize_relative(parent_of(parent), name) {
                Ok(joined) => joined.into(),
                // Leave the name as written; the loader refuses it with the reason.
                Err(_) => name.into(),
            }
        });
        env.set_loader(move |name| match normalize_relative("", name) {
            Ok(key) => Ok(texts.get(&key).cloned()),
            Err(e) => Err(minijinja::Error::new(
                ErrorKind::InvalidOperation,
                format!("template path {name:?}: {e}"),
            )),
        });
        for (i, block) in pipeline.blocks.iter().enumerate() {
            for (j, item) in block.items.iter().enumerate() {
                // A syntax error is reported by validation and again when rendering (the
                // `render_str` fallback below), with the item's position.
                let _ = env.add_template_owned(item_name(i, j), item.clone());
            }
        }
        PromptRenderer { env }
    }

    /// Compiles a template of the harness; the problem carries the template's line.
    pub fn check_template(&self, key: &str) -> Result<(), Problem> {
        self.env.get_template(key).map(|_| ()).map_err(|e| {
            Problem::file(
                key,
                format!("template does not compile: {}", error_text(&e)),
            )
            .at_line(e.line())
        })
    }

    /// Compiles an inline template string (pipeline items, hook feedback).
    pub fn check_inline(&self, source: &str) -> Result<(), String> {
        self.env
            .template_from_str(source)
            .map(|_| ())
            .map_err(|e| error_text(&e))
    }

    pub fn check_expression(&self, expr: &str) -> Result<(), String> {
        self.env
            .compile_expression(expr)
            .map(|_| ())
            .map_err(|e| error_text(&e))
    }

    /// Renders every block of `pipeline` whose `when` holds, in pipeline order. `base` holds the
    /// harness-provided variables (`harness`, `limits`, `tools`, `skills`, …); `ctx` adds the live
    /// room. Blocks that render to whitespace only are dropped.
    pub fn render_blocks(
        &self,
        pipeline_file: &str,
        pipeline: &Pipeline,
        base: &minijinja::Value,
        ctx: &LiveContext,
    ) -> Result<Vec<RenderedBlock>> {
        // Convert the room once: every `when`, item and block template then shares the same value
        // (cheap clones) instead of re-serialising the room and the skill list for each of them.
        // Context keys never shadow the harness's (see `RESERVED_KEYS`), so merge order is moot.
        let vars =
            minijinja::context! { ..minijinja::Value::from_serialize(ctx.vars()), ..base.clone() };
        let mut out = Vec::new();
        for (i, block) in pipeline.blocks.iter().enumerate() {
            let text = self
                .render_block(pipeline_file, i, block, &vars)
                .with_context(|| {
                    format!(
                        "{pipeline_file}: block {:?} ({})",
                        block.name, block.template
                    )
                })?;
            if let Some(text) = text {
                out.push(RenderedBlock {
                    name: block.name.clone(),
                    text,
                    placement: block.placement,
                });
            }
        }
        Ok(out)
    }

    fn render_block(
        &self,
        pipeline_file: &str,
        index: usize,
        block: &Block,
        vars: &minijinja::Value,
    ) -> Result<Option<String>> {
        if let Some(when) = &block.when {
            let expr = self
                .env
                .compile_expression(when)
                .map_err(|e| anyhow::anyhow!("when {when:?}: {}", error_text(&e)))?;
            let value = expr
                .eval(vars)
                .map_err(|e| anyhow::anyhow!("when {when:?}: {}", error_text(&e)))?;
            if !value.is_true() {
                return Ok(None);
            }
        }
        let mut items = Vec::new();
        for (j, item) in block.items.iter().enumerate() {
            let text = match self.env.get_template(&item_name(index, j)) {
                Ok(compiled) => compiled.render(vars),
                Err(_) => self.env.render_str(item, vars),
            };
            let text = text.map_err(|e| anyhow::anyhow!("items[{j}]: {}", error_text(&e)))?;
            let text = text.trim();
            if !text.is_empty() {
                items.push(text.to_string());
            }
        }
        let key = Pipeline::template_key(pipeline_file, block)
            .map_err(|e| anyhow::anyhow!("template {:?}: {e}", block.template))?;
        let template = self
            .env
            .get_template(&key)
            .map_err(|e| anyhow::anyhow!("{}", error_text(&e)))?;
        let text = template
            .render(minijinja::context! { items, block => block.name, ..vars.clone() })
            .map_err(|e| anyhow::anyhow!("{}", error_text(&e)))?;
        let text = text.trim();
        Ok((!text.is_empty()).then(|| text.to_string()))
    }
}

/// Template name of item `j` of block `i`: no directory, so an `include` in an item resolves from
/// the harness root, as it does for a string rendered directly.
fn item_name(i: usize, j: usize) -> String {
    format!("<block {i} item {j}>")
}

/// A minijinja error with its kind, detail and location, on one line.
fn error_text(e: &minijinja::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

/// Include-like statements (`include`, `import`, `extends`, `from … import`) with a literal name:
/// each must stay inside the harness and name an existing file. Checked statically so the
/// problem points at the template line even when the include sits in a branch that the
/// validation render does not take.
pub fn check_includes(key: &str, text: &str, files: &FileSet, problems: &mut Vec<Problem>) {
    static INCLUDE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = INCLUDE.get_or_init(|| {
        regex::Regex::new(
            r#"\{%[-+]?\s*(include|import|extends|from)\s+(?:\[\s*)?["']([^"']+)["']"#,
        )
        .expect("static regex")
    });
    for caps in re.captures_iter(text) {
        let (stmt, name) = (&caps[1], &caps[2]);
        let line = line_of_offset(text, caps.get(0).map_or(0, |m| m.start()));
        let field = format!("{stmt} {name:?}");
        match normalize_relative(parent_of(key), name) {
            Err(e) => problems.push(Problem::field(key, field, e.to_string()).at_line(Some(line))),
            Ok(target) if !files.contains_key(&target) => problems.push(
                Problem::field(
                    key,
                    field,
                    format!("no such template in the harness directory (looked for {target})"),
                )
                .at_line(Some(line)),
            ),
            Ok(_) => {}
        }
    }
}
