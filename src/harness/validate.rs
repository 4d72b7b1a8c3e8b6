//! Semantic validation of a parsed harness: every rule, every problem, no early exit.

use serde_json::Value;

use super::hooks::{validate_hooks, HookCheckContext};
use super::manifest::{SkillsMode, MANIFEST_FILE, TIMEOUT_RANGE_S};
use super::order::validate_order;
use super::pipeline::{validate_pipeline, Pipeline};
use super::problem::Problem;
use super::render::check_includes;
use super::skills::{is_valid_skill_name, validate_skill, SKILL_NAME_RULE};
use super::tools::validate_tools;
use super::{Harness, LiveContext};

pub fn validate(h: &Harness) -> Vec<Problem> {
    let mut problems = Vec::new();
    let tool_names: Vec<&str> = h.tools.iter().map(|t| t.name.as_str()).collect();
    manifest_rules(h, &tool_names, &mut problems);
    validate_tools(&h.tools, &mut problems);
    skill_rules(h, &tool_names, &mut problems);
    prompt_rules(h, &mut problems);
    problems.extend(super::serves::problems(h));
    if let Some(file) = h.hooks_file.as_deref() {
        let cx = HookCheckContext {
            files: &h.files,
            tool_names: &tool_names,
            max_reply_chars_range: max_reply_chars_range(h),
        };
        validate_hooks(file, &h.hooks, &cx, &mut problems);
    } else if h.files.contains_key("hooks/hooks.json") {
        problems.push(Problem::field(
            MANIFEST_FILE,
            "hooks",
            "hooks/hooks.json exists but harness.toml has no [hooks] table, so it would be ignored",
        ));
    }
    problems
}

fn max_reply_chars_range(h: &Harness) -> (u64, u64) {
    let entry = h
        .limits()
        .checked_entries()
        .into_iter()
        .find(|e| e.0 == "max_reply_chars");
    entry.map_or((1, u64::MAX), |(_, _, lo, hi)| (lo, hi))
}

fn manifest_rules(h: &Harness, tool_names: &[&str], problems: &mut Vec<Problem>) {
    let m = &h.manifest;
    let f = MANIFEST_FILE;
    if !is_valid_skill_name(&m.harness.name) {
        problems.push(Problem::field(
            f,
            "harness.name",
            format!("{:?} {SKILL_NAME_RULE}", m.harness.name),
        ));
    }
    let version_ok = regex::Regex::new(r"^\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]+)?$")
        .expect("static regex")
        .is_match(&m.harness.version);
    if !version_ok {
        problems.push(Problem::field(
            f,
            "harness.version",
            format!(
                "{:?} must look like MAJOR.MINOR.PATCH (e.g. 1.2.0)",
                m.harness.version
            ),
        ));
    }
    for (name, value, lo, hi) in m.limits.checked_entries() {
        if !(lo..=hi).contains(&value) {
            problems.push(Problem::field(
                f,
                format!("limits.{name}"),
                format!("{value} is out of range {lo}..={hi}"),
            ));
        }
    }
    if let Some(hooks) = &m.hooks {
        if !TIMEOUT_RANGE_S.contains(&hooks.default_timeout_s) {
            problems.push(Problem::field(
                f,
                "hooks.default_timeout_s",
                format!(
                    "{} is out of range {}..={} seconds",
                    hooks.default_timeout_s,
                    TIMEOUT_RANGE_S.start(),
                    TIMEOUT_RANGE_S.end()
                ),
            ));
        }
    }
    validate_order(f, "tools.order", &m.tools.order, tool_names, problems);
    let skill_names: Vec<&str> = h.skills.iter().map(|s| s.name()).collect();
    validate_order(f, "skills.order", &m.skills.order, &skill_names, problems);
    if let Some(path) = m.model.chat_template_path() {
        match super::paths::normalize_relative("", path) {
            Ok(key) if !h.files.contains_key(&key) => problems.push(Problem::field(
                f,
                "model.chat_template",
                format!(
                    "{path:?} is neither a built-in template ({}) nor a file in the harness",
                    super::manifest::BUILTIN_CHAT_TEMPLATES.join(", ")
                ),
            )),
            Ok(key) => {
                if let Err(p) = h.renderer.check_template(&key) {
                    problems.push(p);
                }
            }
            // Unsafe paths were already reported while parsing.
            Err(_) => {}
        }
    }
}

fn skill_rules(h: &Harness, tool_names: &[&str], problems: &mut Vec<Problem>) {
    let mut seen = std::collections::BTreeMap::new();
    for skill in &h.skills {
        validate_skill(skill, &h.files, problems);
        if let Some(first) = seen.insert(skill.name(), skill.file.as_str()) {
            problems.push(Problem::field(
                &skill.file,
                "front matter field 'name'",
                format!("duplicate skill name (also {first})"),
            ));
        }
        if let Some(allowed) = &skill.front.allowed_tools {
            for t in allowed
                .names()
                .into_iter()
                .filter(|t| !tool_names.contains(t))
            {
                problems.push(Problem::field(
                    &skill.file,
                    "front matter field 'allowed-tools'",
                    format!("{t:?} is not a tool of this harness"),
                ));
            }
        }
    }
    let cfg = &h.manifest.skills;
    if cfg.mode != SkillsMode::Tool || h.skills.is_empty() {
        return;
    }
    let Some(tool) = h.tool(&cfg.load_tool) else {
        return problems.push(Problem::field(
            MANIFEST_FILE,
            "skills.load_tool",
            format!(
                "skills mode is \"tool\" but there is no tool named {:?} to load skill bodies",
                cfg.load_tool
            ),
        ));
    };
    let required: Vec<&str> = tool
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let Some(param) = required.first() else {
        return problems.push(Problem::field(
            &tool.file,
            "inputSchema.required",
            "the skill-loading tool needs a required parameter for the skill name",
        ));
    };
    // An enum of skill names goes stale when skills are renamed; it must list real skills.
    let enum_values = tool
        .input_schema
        .pointer(&format!("/properties/{param}/enum"))
        .and_then(Value::as_array);
    for v in enum_values.into_iter().flatten() {
        if !v.as_str().is_some_and(|s| h.skill(s).is_some()) {
            problems.push(Problem::field(
                &tool.file,
                format!("inputSchema.properties.{param}.enum"),
                format!("{v} is not a skill of this harness"),
            ));
        }
    }
}

fn prompt_rules(h: &Harness, problems: &mut Vec<Problem>) {
    let file = h.pipeline_file.as_str();
    if file.is_empty() {
        return;
    }
    let before = problems.len();
    validate_pipeline(file, &h.pipeline, &h.files, problems);
    // Every template file next to the pipeline compiles, used by a block or not (partials).
    let dir = super::paths::parent_of(file);
    let mut templates: Vec<String> = h
        .files
        .keys()
        .filter(|k| {
            k.starts_with(&format!("{dir}/")) && (k.ends_with(".j2") || k.ends_with(".jinja"))
        })
        .cloned()
        .collect();
    for block in &h.pipeline.blocks {
        if let Ok(key) = Pipeline::template_key(file, block) {
            if h.files.contains_key(&key) && !templates.contains(&key) {
                templates.push(key);
            }
        }
    }
    for key in &templates {
        if let Err(p) = h.renderer.check_template(key) {
            problems.push(p);
        }
        if let Ok(text) = super::files::text(&h.files, key) {
            check_includes(key, text, &h.files, problems);
        }
    }
    for (i, block) in h.pipeline.blocks.iter().enumerate() {
        if let Some(when) = &block.when {
            if let Err(e) = h.renderer.check_expression(when) {
                problems.push(Problem::field(
                    file,
                    format!("block[{i}].when"),
                    format!("does not compile: {e}"),
                ));
            }
        }
        for (j, item) in block.items.iter().enumerate() {
            if let Err(e) = h.renderer.check_inline(item) {
                problems.push(Problem::field(
                    file,
                    format!("block[{i}].items[{j}]"),
                    format!("does not compile: {e}"),
                ));
            }
        }
    }
    // A trial render catches what compiling cannot (unknown filters, failing includes), but only
    // when everything compiled; otherwise it would repeat the same errors.
    if problems.len() == before {
        if let Err(e) = h.render_blocks(&LiveContext::default_context()) {
            problems.push(Problem::field(
                file,
                "block",
                format!("does not render with the default context: {e:#}"),
            ));
        }
    }
}
