//! Trajectory rewriting: a record produced under the base harness becomes K records, each consistent
//! with one harness variant.
//!
//! What changes in a copy: the id (`id#hsa<k>`); `harness` (variant hash, `variant {seed, ops, pool,
//! base_hash}`, `names`); `tools` (the variant's definitions); the system prompt (static blocks
//! re-rendered from the variant and put in the variant's block order, context-filled text kept, see
//! `prompt.rs`); tool-call names, argument keys and skill names passed to the skill loader;
//! identifiers in assistant text and tool results (argument keys only in tool errors: a result's data
//! fields are the service's own); loaded skill bodies; hook feedback messages (re-worded, and
//! re-addressed as user or system); the runtime's notes. `task.expected` stays canonical.
//!
//! Variants come from a pool drawn once (`Augmenter::new`); each copy takes a pool variant chosen by
//! hashing (seed, id, k) and skips variants that would contradict the record: a masked skill the record
//! uses, a limit below what the record did, fewer retries than it took, or auto-fix where it retried.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use anyhow::{bail, Context, Result};
use regex::Regex;
use serde_json::{json, Value};

use super::hooks::hook_id;
use super::prompt::{static_blocks, units};
use super::text::rename_idents;
use super::variant::{variant_seed, Spec, Variant};
use crate::agent::runtime::RUNTIME_NOTE;
use crate::harness::hooks::{BuiltinCheck, FeedbackRole, Hook, OnFail};
use crate::harness::{Harness, Limits, LiveContext, Placement, SkillsMode};
use crate::jsonl::fnv1a64;
use crate::record::{Content, HarnessRef, Message, Names, Role, Tool, Trajectory};

/// Why a record cannot be augmented (it goes to `--rejects` with this reason).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection(pub String);

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A feedback template split at its `{{ … }}` expressions.
#[derive(Debug, Clone)]
struct Template {
    literals: Vec<String>,
    exprs: Vec<String>,
}

impl Template {
    fn parse(source: &str) -> Option<Template> {
        if source.contains("{%") {
            return None;
        }
        let re = Regex::new(r"(?s)\{\{.*?\}\}").expect("static regex");
        let mut literals = Vec::new();
        let mut exprs = Vec::new();
        let mut last = 0;
        for m in re.find_iter(source) {
            literals.push(source[last..m.start()].to_string());
            exprs.push(m.as_str().to_string());
            last = m.end();
        }
        literals.push(source[last..].to_string());
        Some(Template { literals, exprs })
    }

    /// A regex matching the template's rendered text, capturing each expression's value. `None` when
    /// the literal text is too short to recognise the message reliably.
    fn matcher(&self) -> Option<Regex> {
        if self
            .literals
            .iter()
            .map(|l| l.trim().chars().count())
            .sum::<usize>()
            < 4
        {
            return None;
        }
        let body: Vec<String> = self.literals.iter().map(|l| regex::escape(l)).collect();
        Regex::new(&format!("(?s)^{}$", body.join("(.*?)"))).ok()
    }

    fn fill(&self, values: &[String]) -> String {
        let mut out = self.literals[0].clone();
        for (v, lit) in values.iter().zip(&self.literals[1..]) {
            out.push_str(v);
            out.push_str(lit);
        }
        out
    }
}

struct FeedbackPattern {
    id: String,
    regex: Regex,
    tool_error: bool,
    reply_length: bool,
}

/// What the rewriter knows about the base harness.
struct Base {
    harness: Harness,
    /// Canonical → base surface, from the harness's `[serves]` declaration: the names of a record that
    /// carries none (a real log, written before any augmentation).
    names: Names,
    tools: HashSet<String>,
    skills: HashSet<String>,
    load_tool: Option<String>,
    /// Static blocks in pipeline order: (block index, text).
    statics: Vec<(usize, String)>,
    units: Vec<Vec<usize>>,
    /// Trimmed skill body → skill name (recognises results of the skill loader).
    bodies: HashMap<String, String>,
    feedback: Vec<FeedbackPattern>,
}

impl Base {
    fn new(harness: &Harness) -> Result<Base> {
        let blocks = harness
            .render_blocks(&LiveContext::default_context())
            .context("rendering the base harness")?;
        let is_static = static_blocks(harness);
        let pipeline = harness.pipeline();
        // The context message is rewritten as one piece of context-filled text (identifiers
        // renamed), so a static block there would keep the base's wording under every variant.
        if let Some((_, b)) = pipeline
            .blocks
            .iter()
            .enumerate()
            .find(|(i, b)| is_static[*i] && b.placement == Placement::Context)
        {
            bail!(
                "{}: block {:?} renders the same text in every room but is placed in the context \
                 message; augmentation re-renders static blocks in the system prompt only — drop its \
                 `placement = \"context\"`",
                harness.pipeline_file(),
                b.name
            );
        }
        let statics = pipeline
            .blocks
            .iter()
            .enumerate()
            .filter(|(i, _)| is_static[*i])
            .filter_map(|(i, b)| {
                blocks
                    .iter()
                    .find(|r| r.name == b.name)
                    .map(|r| (i, r.text.clone()))
            })
            .collect();
        let mut feedback = Vec::new();
        for (g_event, groups) in harness.hooks().events.iter().map(|e| (e.event, &e.groups)) {
            for (g, group) in groups.iter().enumerate() {
                for (i, hook) in group.hooks.iter().enumerate() {
                    let Hook::Builtin(b) = hook else { continue };
                    let Some(fb) = &b.feedback else { continue };
                    let Some(t) = Template::parse(&fb.template) else {
                        continue;
                    };
                    let Some(regex) = t.matcher() else { continue };
                    feedback.push(FeedbackPattern {
                        id: hook_id(g_event, g, i),
                        regex,
                        tool_error: fb.role == FeedbackRole::ToolError,
                        reply_length: matches!(b.check, BuiltinCheck::ReplyLength(_)),
                    });
                }
            }
        }
        Ok(Base {
            names: harness.names(),
            tools: harness.tools().iter().map(|t| t.name.clone()).collect(),
            skills: harness
                .skills()
                .iter()
                .map(|s| s.name().to_string())
                .collect(),
            load_tool: load_tool(harness),
            statics,
            units: units(harness),
            bodies: harness
                .skills()
                .iter()
                .map(|s| (s.body.trim().to_string(), s.name().to_string()))
                .collect(),
            feedback,
            harness: harness.clone(),
        })
    }
}

impl Base {
    /// The canonical → base surface names `r` ran under: its own, else the harness's declaration.
    fn names_of(&self, r: &Trajectory) -> Names {
        match &r.harness {
            Some(h) if !h.names.is_empty() => h.names.clone(),
            _ => self.names.clone(),
        }
    }
}

fn load_tool(h: &Harness) -> Option<String> {
    let name = &h.manifest().skills.load_tool;
    (h.skills_mode() == SkillsMode::Tool && h.tool(name).is_some()).then(|| name.clone())
}

/// A pool variant made ready for rewriting records.
struct Prepared {
    variant: Variant,
    /// The variant's content hash and `harness.variant`, computed once (hashing per record is costly).
    hash: String,
    record_variant: crate::record::Variant,
    /// Base identifier → variant identifier, tools and skills together.
    rename: HashMap<String, String>,
    /// Base tool name → (base argument key → variant key).
    params: HashMap<String, HashMap<String, String>>,
    /// Every renamed argument key (base → variant; a key is renamed alike in every tool that takes it),
    /// for calls of a name the harness refused.
    param_keys: HashMap<String, String>,
    /// `rename` plus the renamed argument keys: for text that may mention either (prompt, assistant
    /// text, feedback, tool errors), but not tool results' data, whose fields are the service's own.
    text_rename: HashMap<String, String>,
    tools: HashMap<String, Tool>,
    skills: HashSet<String>,
    /// Variant static block texts by block name.
    statics: HashMap<String, String>,
    block_order: Vec<String>,
    separator: String,
    /// Canonical skill → trimmed variant body.
    bodies: HashMap<String, String>,
    feedback: HashMap<String, (Template, FeedbackRole)>,
    hooks: HashMap<String, (OnFail, u32)>,
    guard_terms: Vec<String>,
    limits: Limits,
}

impl Prepared {
    fn new(variant: Variant) -> Result<Prepared> {
        let h = &variant.harness;
        let mut rename = HashMap::new();
        for (c, s) in variant.names.tools.iter().chain(&variant.names.skills) {
            rename.insert(c.clone(), s.clone());
        }
        let params: HashMap<String, HashMap<String, String>> = variant
            .names
            .params
            .iter()
            .map(|(t, m)| {
                (
                    t.clone(),
                    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                )
            })
            .collect();
        let param_keys: HashMap<String, String> = params
            .values()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut text_rename = rename.clone();
        text_rename.extend(param_keys.clone());
        let mut tools = HashMap::new();
        for spec in h.openai_tools() {
            let tool: Tool = serde_json::from_value(spec)
                .context("variant tool is not an OpenAI function spec")?;
            let canonical = variant
                .names
                .tool_canonical(&tool.function.name)
                .unwrap_or(&tool.function.name)
                .to_string();
            tools.insert(canonical, tool);
        }
        let statics = h
            .render_blocks(&LiveContext::default_context())
            .context("rendering a variant")?
            .into_iter()
            .map(|b| (b.name, b.text))
            .collect();
        let mut feedback = HashMap::new();
        let mut hooks = HashMap::new();
        let mut guard_terms = Vec::new();
        for e in &h.hooks().events {
            for (g, group) in e.groups.iter().enumerate() {
                for (i, hook) in group.hooks.iter().enumerate() {
                    let Hook::Builtin(b) = hook else { continue };
                    let id = hook_id(e.event, g, i);
                    hooks.insert(id.clone(), (b.on_fail, b.max_retries));
                    if let (BuiltinCheck::BannedTerms(p), OnFail::Fix) = (&b.check, b.on_fail) {
                        guard_terms.extend(p.terms.iter().map(|t| t.to_lowercase()));
                    }
                    if let Some(t) = b
                        .feedback
                        .as_ref()
                        .and_then(|fb| Template::parse(&fb.template).map(|t| (t, fb.role)))
                    {
                        feedback.insert(id, t);
                    }
                }
            }
        }
        Ok(Prepared {
            skills: h
                .skills()
                .iter()
                .map(|s| {
                    variant
                        .names
                        .skill_canonical(s.name())
                        .unwrap_or(s.name())
                        .to_string()
                })
                .collect(),
            bodies: h
                .skills()
                .iter()
                .map(|s| {
                    (
                        variant
                            .names
                            .skill_canonical(s.name())
                            .unwrap_or(s.name())
                            .to_string(),
                        s.body.trim().to_string(),
                    )
                })
                .collect(),
            block_order: h.pipeline().blocks.iter().map(|b| b.name.clone()).collect(),
            separator: h.pipeline().separator.clone(),
            limits: *h.limits(),
            rename,
            params,
            param_keys,
            text_rename,
            tools,
            statics,
            feedback,
            hooks,
            guard_terms,
            hash: variant.harness.hash(),
            record_variant: variant.record_variant(),
            variant,
        })
    }
}

/// What a record did, which a variant must not contradict.
#[derive(Debug, Default)]
struct Needs {
    skills: BTreeSet<String>,
    reply_chars: u64,
    rounds: u64,
    tool_calls: u64,
    /// Matched feedback messages per hook id.
    retries: HashMap<String, u32>,
    length_feedback: bool,
    replies: Vec<String>,
    /// Message index → (hook id, captured values), for the feedback messages found.
    feedback: HashMap<usize, (String, Vec<String>)>,
    /// Indices of the runtime's own notes (`[tool-call error] …`): renamed like feedback, and not a
    /// new viewer turn.
    runtime_notes: HashSet<usize>,
}

/// Rewrites trajectory records against a pool of variants of one base harness.
pub struct Augmenter {
    base: Base,
    pool: Vec<Prepared>,
    seed: u64,
}

impl Augmenter {
    /// Draws `pool_size` variants of `base` (seeds derived from `seed`) and prepares them.
    pub fn new(base: &Harness, spec: &Spec, seed: u64, pool_size: usize) -> Result<Augmenter> {
        use rayon::prelude::*;
        let pool = (0..pool_size.max(1) as u64)
            .into_par_iter()
            .map(|i| Variant::draw(base, spec, variant_seed(seed, i)).and_then(Prepared::new))
            .collect::<Result<Vec<_>>>()?;
        Ok(Augmenter {
            base: Base::new(base)?,
            pool,
            seed,
        })
    }

    /// Up to `n` augmented copies of `record`, each under a different compatible variant (fewer when
    /// the pool has fewer compatible variants, none only if the record itself is rejected).
    pub fn augment(&self, record: &Trajectory, n: usize) -> Result<Vec<Trajectory>, Rejection> {
        let needs = self.needs(record)?;
        let mut used = HashSet::new();
        let mut out = Vec::with_capacity(n);
        let mut first_reason = None;
        for k in 0..n {
            let key = format!("{}\u{0}{}\u{0}{k}", self.seed, record.id);
            let start = (fnv1a64(key.as_bytes()) % self.pool.len() as u64) as usize;
            let mut chosen = None;
            for t in 0..self.pool.len() {
                let v = (start + t) % self.pool.len();
                if used.contains(&v) {
                    continue;
                }
                match self.compatible(&self.pool[v], &needs) {
                    Ok(()) => {
                        chosen = Some(v);
                        break;
                    }
                    Err(reason) => {
                        first_reason.get_or_insert(reason);
                    }
                }
            }
            let Some(v) = chosen else { break };
            used.insert(v);
            out.push(self.rewrite(record, &needs, &self.pool[v], k)?);
        }
        if out.is_empty() && n > 0 {
            return Err(Rejection(format!(
                "no variant in the pool of {} is compatible with the record (first conflict: {})",
                self.pool.len(),
                first_reason.unwrap_or_default()
            )));
        }
        Ok(out)
    }

    fn needs(&self, r: &Trajectory) -> Result<Needs, Rejection> {
        let base = &self.base;
        if let Some(h) = &r.harness {
            if h.name != base.harness.name() {
                return Err(Rejection(format!(
                    "record ran under harness {:?}, not {:?}",
                    h.name,
                    base.harness.name()
                )));
            }
            if h.variant.is_some() {
                return Err(Rejection("record is already augmented (harness.variant is set); augment the original record".into()));
            }
        }
        let names = self.base.names_of(r);
        let mut needs = Needs::default();
        for t in &r.tools {
            if !base.tools.contains(&t.function.name) {
                return Err(Rejection(format!(
                    "tools lists {:?}, which is not a tool of harness {}",
                    t.function.name,
                    base.harness.name()
                )));
            }
        }
        if let Some(exp) = r.task.as_ref().and_then(|t| t.expected.as_ref()) {
            for c in &exp.tool_calls {
                if !base.tools.contains(names.tool_surface(&c.tool)) {
                    return Err(Rejection(format!(
                        "task.expected names tool {:?}, which the harness lacks",
                        c.tool
                    )));
                }
            }
            if let Some(s) = exp.skill.as_deref() {
                let s = names.skill_surface(s);
                if base.skills.contains(s) {
                    needs.skills.insert(s.to_string());
                } else if base.load_tool.is_some() {
                    return Err(Rejection(format!(
                        "task.expected names skill {s:?}, which the harness lacks"
                    )));
                }
                // An inline harness that lacks the skill never asks for a choice of it: nothing to keep.
            }
        }
        let (mut rounds, mut calls) = (0u64, 0u64);
        let context_message = context_message_index(r);
        for (i, m) in r.messages.iter().enumerate() {
            match m.role {
                Role::Assistant => {
                    rounds += 1;
                    for c in &m.tool_calls {
                        calls += 1;
                        let name = &c.function.name;
                        // A name the harness refused (`unknown_tool`) is invented under any variant:
                        // it stays as it is, and its error lists the variant's tools once renamed.
                        if !base.tools.contains(name)
                            && refused_as_unknown(&r.messages[i + 1..], &c.id)
                        {
                            continue;
                        }
                        if !base.tools.contains(name) {
                            return Err(Rejection(format!(
                                "message {i} calls {name:?}, which is not a tool of harness {}",
                                base.harness.name()
                            )));
                        }
                        if base.load_tool.as_ref() == Some(name) {
                            let skill = c.function.parsed_arguments().ok().and_then(|a| {
                                a.get("name").and_then(Value::as_str).map(str::to_string)
                            });
                            match skill {
                                Some(s) if base.skills.contains(&s) => {
                                    needs.skills.insert(s);
                                }
                                Some(s) => return Err(Rejection(format!("message {i} loads skill {s:?}, which is not a skill of harness {}", base.harness.name()))),
                                None => {}
                            }
                        }
                    }
                    if m.tool_calls.is_empty() {
                        needs.replies.push(m.text_content());
                    }
                }
                Role::User if Some(i) == context_message => {}
                Role::User if i > 0 && m.text_content().starts_with(RUNTIME_NOTE) => {
                    needs.runtime_notes.insert(i);
                }
                Role::User | Role::System | Role::Tool if i > 0 => {
                    if let Some((id, values, p)) = self.match_feedback(m) {
                        *needs.retries.entry(id.clone()).or_default() += 1;
                        needs.length_feedback |= p;
                        needs.feedback.insert(i, (id, values));
                    } else if m.role == Role::User {
                        // A viewer message starts a new turn.
                        needs.rounds = needs.rounds.max(rounds);
                        needs.tool_calls = needs.tool_calls.max(calls);
                        (rounds, calls) = (0, 0);
                    }
                }
                _ => {}
            }
        }
        needs.rounds = needs.rounds.max(rounds);
        needs.tool_calls = needs.tool_calls.max(calls);
        needs.reply_chars = needs.replies.last().map_or(0, |r| r.chars().count() as u64);
        Ok(needs)
    }

    /// The hook whose feedback `m` is, with the captured expression values and whether it is a
    /// reply-length check.
    fn match_feedback(&self, m: &Message) -> Option<(String, Vec<String>, bool)> {
        let text = m.text_content();
        let tool_text = (m.role == Role::Tool && text.starts_with("{\"error\""))
            .then(|| serde_json::from_str::<Value>(&text).ok())
            .flatten()
            .and_then(|v| {
                v.pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            });
        for p in &self.base.feedback {
            let subject = match (m.role, p.tool_error) {
                (Role::Tool, true) => tool_text.as_deref(),
                (Role::User | Role::System, false) => Some(text.as_str()),
                _ => None,
            };
            let Some(caps) = subject.and_then(|s| p.regex.captures(s)) else {
                continue;
            };
            let values = caps
                .iter()
                .skip(1)
                .map(|c| c.map_or(String::new(), |c| c.as_str().to_string()))
                .collect();
            return Some((p.id.clone(), values, p.reply_length));
        }
        None
    }

    fn compatible(&self, p: &Prepared, needs: &Needs) -> Result<(), String> {
        if let Some(s) = needs.skills.iter().find(|s| !p.skills.contains(*s)) {
            return Err(format!(
                "variant {} masks skill {s}, which the record uses",
                p.variant.seed
            ));
        }
        let base = self.base.harness.limits();
        if p.limits.max_reply_chars < needs.reply_chars
            || (needs.length_feedback && p.limits.max_reply_chars != base.max_reply_chars)
        {
            return Err(format!(
                "variant {} allows {} reply characters; the record's reply has {}",
                p.variant.seed, p.limits.max_reply_chars, needs.reply_chars
            ));
        }
        if p.limits.max_rounds < needs.rounds || p.limits.max_tool_calls < needs.tool_calls {
            return Err(format!(
                "variant {} allows fewer rounds or tool calls than the record used",
                p.variant.seed
            ));
        }
        for (id, n) in &needs.retries {
            match p.hooks.get(id) {
                Some((OnFail::Retry, max)) if max >= n => {}
                _ => {
                    return Err(format!(
                        "variant {} does not retry hook {id} {n} time(s) as the record did",
                        p.variant.seed
                    ))
                }
            }
        }
        if let Some(t) = p.guard_terms.iter().find(|t| {
            needs
                .replies
                .iter()
                .any(|r| r.to_lowercase().contains(t.as_str()))
        }) {
            return Err(format!(
                "variant {} would auto-fix {t:?} in the record's reply",
                p.variant.seed
            ));
        }
        Ok(())
    }

    fn rewrite(
        &self,
        r: &Trajectory,
        needs: &Needs,
        p: &Prepared,
        k: usize,
    ) -> Result<Trajectory, Rejection> {
        let mut out = Trajectory {
            id: format!("{}#hsa{k}", r.id),
            task: r.task.clone(),
            harness: None,
            tools: Vec::new(),
            messages: r.messages.clone(),
            scores: r.scores.clone(),
            meta: r.meta.clone(),
            extra: r.extra.clone(),
        };
        let mut href = r.harness.clone().unwrap_or_else(|| HarnessRef {
            name: self.base.harness.name().to_string(),
            version: self.base.harness.version().to_string(),
            ..HarnessRef::default()
        });
        href.hash = p.hash.clone();
        href.variant = Some(p.record_variant.clone());
        href.names = compose(&self.base.names_of(r), &p.variant.names);
        out.harness = Some(href);
        out.tools = r
            .tools
            .iter()
            .map(|t| {
                p.tools
                    .get(&t.function.name)
                    .cloned()
                    .unwrap_or_else(|| t.clone())
            })
            .collect();
        let load_tool = self.base.load_tool.as_deref();
        let context_message = context_message_index(r);
        for (i, m) in out.messages.iter_mut().enumerate() {
            if i == 0 && m.role == Role::System {
                let text = self.rewrite_prompt(&m.text_content(), p)?;
                m.content = Some(Content::Text(text));
                continue;
            }
            if Some(i) == context_message {
                // Context-filled text only (see `Base::new`), its blocks one unit in every variant's
                // order (`prompt::units`): what changes is the identifiers it mentions.
                rename_content(m, &p.text_rename);
                continue;
            }
            if let Some((id, values)) = needs.feedback.get(&i) {
                rewrite_feedback(m, id, values, p);
                continue;
            }
            if needs.runtime_notes.contains(&i) {
                rename_content(m, &p.text_rename);
                continue;
            }
            match m.role {
                Role::Assistant => {
                    for c in &mut m.tool_calls {
                        let keys = match p.params.get(&c.function.name) {
                            None if !self.base.tools.contains(&c.function.name) => {
                                Some(&p.param_keys)
                            }
                            keys => keys,
                        };
                        rename_arg_keys(&mut c.function, keys);
                        if Some(c.function.name.as_str()) == load_tool {
                            if let Ok(mut args) = c.function.parsed_arguments() {
                                let renamed = args
                                    .get("name")
                                    .and_then(Value::as_str)
                                    .and_then(|s| p.rename.get(s))
                                    .cloned();
                                if let Some(new) = renamed {
                                    args.insert("name".into(), json!(new));
                                    c.function.arguments = Value::Object(args).to_string();
                                }
                            }
                        }
                        if let Some(new) = p.rename.get(&c.function.name) {
                            c.function.name = new.clone();
                        }
                    }
                    rename_content(m, &p.text_rename);
                    if let Some(rc) = &m.reasoning_content {
                        if let std::borrow::Cow::Owned(new) = rename_idents(rc, &p.text_rename) {
                            m.reasoning_content = Some(new);
                        }
                    }
                }
                Role::Tool => {
                    let text = m.text_content();
                    match self
                        .base
                        .bodies
                        .get(text.trim())
                        .and_then(|skill| p.bodies.get(skill))
                    {
                        Some(body) => m.content = Some(Content::Text(body.clone())),
                        // An error speaks of the call (its tool and argument keys); a result's
                        // data fields belong to the service and keep their names.
                        None if text.starts_with("{\"error\"") => rename_content(m, &p.text_rename),
                        None => rename_content(m, &p.rename),
                    }
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// The record's system prompt under variant `p`: static blocks located in the original and
    /// replaced by the variant's, context-filled runs kept (identifiers renamed), in the variant's order.
    fn rewrite_prompt(&self, prompt: &str, p: &Prepared) -> Result<String, Rejection> {
        let base = &self.base;
        let sep = &base.harness.pipeline().separator;
        let blocks = &base.harness.pipeline().blocks;
        let mut spans: HashMap<usize, (usize, usize)> = HashMap::new();
        let mut pos = 0;
        for (bi, text) in &base.statics {
            let Some(at) = prompt[pos..].find(text.as_str()) else {
                return Err(Rejection(format!(
                    "the system prompt was not rendered by harness {}: block {:?} not found",
                    base.harness.name(),
                    blocks[*bi].name
                )));
            };
            spans.insert(*bi, (pos + at, pos + at + text.len()));
            pos += at + text.len();
        }
        // Text of each context-filled unit: what lies between its static neighbours, minus separators.
        let mut unit_text: HashMap<usize, String> = HashMap::new();
        let mut cursor = 0;
        let mut prev_static = false;
        for (u, unit) in base.units.iter().enumerate() {
            if let Some(&(s, e)) = spans.get(&unit[0]) {
                let gap = &prompt[cursor..s];
                if !(gap.is_empty() || gap == sep.as_str()) {
                    return Err(Rejection(format!("the system prompt has text before block {:?} that no block of the harness renders", blocks[unit[0]].name)));
                }
                cursor = e;
                prev_static = true;
                continue;
            }
            let next_static = base.units[u + 1..]
                .iter()
                .find_map(|n| spans.get(&n[0]).map(|&(s, _)| s));
            let end = next_static.unwrap_or(prompt.len());
            let mut gap = &prompt[cursor..end];
            if prev_static {
                gap = gap.strip_prefix(sep.as_str()).unwrap_or(gap);
            }
            if next_static.is_some() {
                gap = gap.strip_suffix(sep.as_str()).unwrap_or(gap);
            }
            if !gap.is_empty() {
                unit_text.insert(u, rename_idents(gap, &p.text_rename).into_owned());
            }
            cursor = end;
            prev_static = false;
        }
        if cursor < prompt.len() && base.units.last().is_some_and(|u| spans.contains_key(&u[0])) {
            return Err(Rejection(
                "the system prompt has text after the last block of the harness".into(),
            ));
        }
        let unit_of: HashMap<&str, usize> = base
            .units
            .iter()
            .enumerate()
            .flat_map(|(u, unit)| unit.iter().map(move |&b| (blocks[b].name.as_str(), u)))
            .collect();
        let mut parts: Vec<&str> = Vec::new();
        let mut last_unit = None;
        for name in &p.block_order {
            let Some(&u) = unit_of.get(name.as_str()) else {
                continue;
            };
            if spans.contains_key(&base.units[u][0]) {
                if let Some(t) = p.statics.get(name) {
                    parts.push(t);
                }
            } else if last_unit != Some(u) {
                if let Some(t) = unit_text.get(&u) {
                    parts.push(t);
                }
            }
            last_unit = Some(u);
        }
        Ok(parts.join(&p.separator))
    }
}

/// Where the record's context message is (the live room placed after the system prompt, see
/// `harness::Placement`): message 1 when the runtime says it wrote one (`meta.context_message`).
fn context_message_index(r: &Trajectory) -> Option<usize> {
    (r.meta.get("context_message") == Some(&json!(true))
        && r.messages.get(1).is_some_and(|m| m.role == Role::User))
    .then_some(1)
}

/// Whether the tool message answering call `id` (among `after`) is the runtime's `unknown_tool` error.
fn refused_as_unknown(after: &[Message], id: &str) -> bool {
    after
        .iter()
        .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(id))
        .and_then(|m| serde_json::from_str::<Value>(&m.text_content()).ok())
        .is_some_and(|v| v.pointer("/error/code") == Some(&json!("unknown_tool")))
}

/// canonical → variant surface, from canonical → base surface (`outer`) and base → variant (`inner`).
pub fn compose(outer: &Names, inner: &Names) -> Names {
    fn one(
        outer: &BTreeMap<String, String>,
        inner: &BTreeMap<String, String>,
    ) -> BTreeMap<String, String> {
        let mut out: BTreeMap<String, String> = BTreeMap::new();
        for (c, s) in outer {
            out.insert(c.clone(), inner.get(s).unwrap_or(s).clone());
        }
        for (b, v) in inner {
            if !outer.values().any(|s| s == b) && !outer.contains_key(b) {
                out.insert(b.clone(), v.clone());
            }
        }
        out.retain(|c, s| c != s);
        out
    }
    // Argument keys compose per tool: canonical key → base key (outer, by canonical tool) then base key
    // → variant key (inner, by base tool name).
    let empty = BTreeMap::new();
    let canonical_tools: BTreeSet<&str> = outer
        .params
        .keys()
        .map(String::as_str)
        .chain(inner.params.keys().filter_map(|b| outer.tool_canonical(b)))
        .collect();
    let params = canonical_tools
        .into_iter()
        .filter_map(|c| {
            let o = outer.params.get(c).unwrap_or(&empty);
            let i = inner.params.get(outer.tool_surface(c)).unwrap_or(&empty);
            let m = one(o, i);
            (!m.is_empty()).then(|| (c.to_string(), m))
        })
        .collect();
    Names {
        tools: one(&outer.tools, &inner.tools),
        skills: one(&outer.skills, &inner.skills),
        params,
        // Fields of the record's own map that the composition does not know stay with it.
        extra: outer.extra.clone(),
    }
}

/// Renames the argument keys of a call under `keys` (base key → variant key), keeping their order.
/// Arguments that do not parse stay as they are: there is no key to rename.
fn rename_arg_keys(call: &mut crate::record::FunctionCall, keys: Option<&HashMap<String, String>>) {
    let Some(keys) = keys else { return };
    let Ok(args) = call.parsed_arguments() else {
        return;
    };
    if !args.keys().any(|k| keys.contains_key(k)) {
        return;
    }
    let renamed: serde_json::Map<String, Value> = args
        .into_iter()
        .map(|(k, v)| (keys.get(&k).cloned().unwrap_or(k), v))
        .collect();
    call.arguments = Value::Object(renamed).to_string();
}

fn rename_content(m: &mut Message, rename: &HashMap<String, String>) {
    if let Some(Content::Text(t)) = &m.content {
        if let std::borrow::Cow::Owned(new) = rename_idents(t, rename) {
            m.content = Some(Content::Text(new));
        }
    }
}

/// Re-words a feedback message with the variant's template for the same hook, and gives it the
/// variant's role. Captured values that are identifiers (a tool name) follow the renames.
fn rewrite_feedback(m: &mut Message, id: &str, values: &[String], p: &Prepared) {
    let Some((t, role)) = p.feedback.get(id) else {
        return;
    };
    if t.exprs.len() != values.len() {
        return;
    }
    let values: Vec<String> = values
        .iter()
        .map(|v| rename_idents(v, &p.text_rename).into_owned())
        .collect();
    let text = t.fill(&values);
    if m.role == Role::Tool {
        let code = serde_json::from_str::<Value>(&m.text_content())
            .ok()
            .and_then(|v| {
                v.pointer("/error/code")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_else(|| "invalid_arguments".into());
        m.content = Some(Content::Text(
            json!({"error": {"code": code, "message": text}}).to_string(),
        ));
        return;
    }
    m.role = match role {
        FeedbackRole::System => Role::System,
        _ => Role::User,
    };
    m.content = Some(Content::Text(text));
}
