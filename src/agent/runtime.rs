//! The agent loop for one viewer turn: policy → tool calls → PreToolUse hooks → sandbox → PostToolUse
//! hooks → … → final reply → Stop hooks (which may fix it, or send feedback and let the policy retry).
//! Limits on rounds, tool calls and latency come from the harness. Whatever the policy emits — unknown
//! tools, invalid JSON, wrong argument types — becomes a tool error it can react to, counted in `meta`;
//! only failures of the harness itself (a template that cannot render) are errors of [`Agent::run`].

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

use super::hooks::{self, Decision, Hooks, Kind};
use crate::chat::{parse_assistant_output_any_name, ToolCallFormat as TextFormat};
use crate::harness::hooks::{BuiltinCheck, FeedbackRole, HookEvent};
use crate::harness::{Harness, LiveContext, OnFail, SkillsMode};
use crate::policy::{Conversation, Policy};
use crate::record::{
    Content, FunctionCall, HarnessRef, Message, Names, Role, Tool, ToolCall, Trajectory,
};
use crate::rng::Rng;
use crate::sim::catalog::Catalog;
use crate::sim::context::live_context;
use crate::sim::faults::FaultPlan;
use crate::sim::sandbox::Sandbox;
use crate::sim::tasks::Room;

/// Command-hook blocks of a reply that may send the policy back before the reply is refused (built-in
/// hooks carry their own `max_retries`); Claude Code's `stop_hook_active` guards the same loop.
const MAX_COMMAND_STOP_RETRIES: u32 = 2;

/// How the runtime's own messages to the policy begin (a tool call written as text that does not
/// parse). They sit in the turn like hook feedback; readers that must tell them from a new viewer
/// message (the limits of a turn, the HSA rewriter) look for this prefix.
pub const RUNTIME_NOTE: &str = "[tool-call error]";

/// Episodes started in this process, for their session keys.
static EPISODES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Where a text-form tool call starts, in both formats the harness may name (hermes and qwen3_xml).
pub const TOOL_CALL_OPEN: &str = "<tool_call>";

/// A harness made ready to run episodes: tools, schemas, compiled hooks and the record's harness ref.
#[derive(Debug, Clone)]
pub struct Agent {
    harness: Harness,
    names: Names,
    tools: Vec<Tool>,
    schemas: HashMap<String, Value>,
    hooks: Hooks,
    load_tool: Option<String>,
    harness_ref: HarnessRef,
}

/// The simulated world an episode runs in.
#[derive(Debug, Clone, Copy)]
pub struct SimEnv<'a> {
    pub catalog: &'a Catalog,
    pub faults: &'a FaultPlan,
    /// Rollout seed; each episode derives its own from it and the task id, so results do not depend on
    /// order or concurrency.
    pub seed: u64,
}

/// One episode in progress: what [`Agent::start`] begins, [`Agent::step`] advances one policy move
/// at a time and [`Agent::finish`] turns into a trajectory. It holds the world's state (the sandbox
/// with its fault draws) and the conversation, never the policy, so the moves may come from anywhere:
/// a policy in process, or a trainer on another machine through the environment service.
pub struct Episode<'a> {
    /// The task record, without its messages (they are in `messages`).
    record: Trajectory,
    sandbox: Sandbox<'a>,
    turn: Turn,
    turn_start: usize,
    /// Whether message 1 is the context message (the harness places blocks there).
    context_message: bool,
    messages: Vec<Message>,
    stop_reason: &'static str,
    blocked_reply: Option<String>,
    policy_error: Option<String>,
    done: bool,
    /// See [`Episode::session`].
    session: String,
}

impl Episode<'_> {
    /// Whether the episode is over (no further policy move is taken).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The conversation so far: system prompt, viewer messages, and this turn's moves and results.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    pub fn id(&self) -> &str {
        &self.record.id
    }

    /// Why the episode ended (`reply`, `max_rounds`, `slo`, `blocked`, …); meaningful once done.
    pub fn stop_reason(&self) -> &'static str {
        self.stop_reason
    }

    /// What a policy sees for its next move under `agent` (the agent that started the episode).
    pub fn conversation<'s>(&'s self, agent: &'s Agent) -> Conversation<'s> {
        Conversation {
            messages: &self.messages,
            tools: &agent.tools,
            turn_start: self.turn_start,
            task: self.record.task.as_ref(),
            session: Some(&self.session),
        }
    }

    /// The key of this episode, unique within the process: the record id and a counter.
    pub fn session(&self) -> &str {
        &self.session
    }
}

/// Per-episode bookkeeping that ends up in `meta`.
#[derive(Default)]
struct Turn {
    rounds: u64,
    tool_calls: u64,
    malformed_calls: u64,
    retries: u64,
    latency_ms: u64,
    hook_counts: BTreeMap<&'static str, u64>,
    /// Hooks that did more than allow, by hook (`tool_call_json`, `limit_quantity.sh`) and outcome.
    fired: BTreeMap<String, BTreeMap<&'static str, u64>>,
    /// Model retries granted so far, per hook id.
    attempts: HashMap<usize, u32>,
    command_stop_retries: u32,
    /// This turn's successful tool results: (surface tool name, content).
    sources: Vec<(String, String)>,
    limit_hits: u64,
}

impl Turn {
    fn count(&mut self, hook: &hooks::Prepared, what: &'static str) {
        *self.hook_counts.entry(what).or_default() += 1;
        if what != "allow" {
            let label = match &hook.kind {
                Kind::Builtin { hook: b, .. } => b.check.kind().to_string(),
                Kind::Command { path, .. } => path.file_name().map_or_else(
                    || path.display().to_string(),
                    |f| f.to_string_lossy().into_owned(),
                ),
            };
            *self
                .fired
                .entry(label)
                .or_default()
                .entry(what)
                .or_default() += 1;
        }
    }
}

enum StopOutcome {
    Accept,
    Retry,
    Blocked(String),
}

impl Agent {
    /// Prepare `harness`; `names` maps canonical ids to this harness's surface names (empty = identity).
    pub fn new(harness: &Harness, names: Names) -> Result<Agent> {
        let tools: Vec<Tool> = harness
            .openai_tools()
            .into_iter()
            .map(serde_json::from_value)
            .collect::<Result<_, _>>()
            .context("harness tools are not OpenAI function specs")?;
        let schemas = harness
            .tools()
            .iter()
            .map(|t| (t.name.clone(), t.input_schema.clone()))
            .collect();
        let load = &harness.manifest().skills.load_tool;
        let load_tool = (harness.skills_mode() == SkillsMode::Tool && harness.tool(load).is_some())
            .then(|| load.clone());
        let harness_ref = HarnessRef {
            name: harness.name().to_string(),
            version: harness.version().to_string(),
            hash: harness.hash(),
            variant: None,
            names: names.clone(),
            extra: Map::new(),
        };
        Ok(Agent {
            hooks: Hooks::new(harness)?,
            harness: harness.clone(),
            names,
            tools,
            schemas,
            load_tool,
            harness_ref,
        })
    }

    pub fn harness(&self) -> &Harness {
        &self.harness
    }

    pub fn names(&self) -> &Names {
        &self.names
    }

    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// Run one episode of `record` (a task record) with `policy` and return it as a trajectory: the
    /// stepping API below, driven by a policy in process (the environment service drives the same
    /// steps from HTTP requests).
    pub fn run(
        &self,
        policy: &dyn Policy,
        record: &Trajectory,
        env: &SimEnv<'_>,
    ) -> Result<Trajectory> {
        let mut ep = self.start(record, env)?;
        while !ep.is_done() {
            let started = Instant::now();
            let reply = policy.respond(&ep.conversation(self));
            self.step(&mut ep, reply, started.elapsed().as_millis() as u64);
        }
        policy.end_session(ep.session());
        Ok(self.finish(ep, policy.name()))
    }

    /// Begin an episode of `record` (a task record): render the system prompt from its live room, add
    /// the viewer's messages and run the prompt hooks. The episode may already be over (a blocked
    /// prompt); otherwise it waits for the policy's first message.
    pub fn start<'a>(&self, record: &Trajectory, env: &SimEnv<'a>) -> Result<Episode<'a>> {
        let task = record
            .task
            .as_ref()
            .with_context(|| format!("{}: record has no task", record.id))?;
        let room: Room = serde_json::from_value(task.room.clone())
            .with_context(|| format!("{}: task.room", record.id))?;
        let ctx = LiveContext::from_value(live_context(env.catalog, &room, &task.viewer))?;
        let prompt = self
            .harness
            .render_prompt(&ctx)
            .with_context(|| format!("{}: rendering the prompt", record.id))?;
        let context_message = prompt.context.is_some();
        let mut messages = prompt.messages();
        messages.extend(record.messages.iter().cloned());
        let seed = Rng::derive(env.seed, &record.id).next_u64();
        let mut ep = Episode {
            record: Trajectory {
                messages: Vec::new(),
                ..record.clone()
            },
            sandbox: Sandbox::new(env.catalog, room, env.faults, seed),
            turn: Turn::default(),
            turn_start: 0,
            context_message,
            messages,
            stop_reason: "reply",
            blocked_reply: None,
            policy_error: None,
            done: false,
            session: format!(
                "{}#{}",
                record.id,
                EPISODES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ),
        };
        if let Some(reason) = self.prompt_hooks(&mut ep.messages, &record.id, &mut ep.turn) {
            ep.stop_reason = "prompt_blocked";
            ep.blocked_reply = Some(reason);
            ep.done = true;
        }
        ep.turn_start = ep.messages.len();
        self.check_limits(&mut ep);
        Ok(ep)
    }

    /// One policy move: `reply` is the policy's next message (or why it has none), `policy_ms` the
    /// time it took, which counts against the harness's latency budget. Tool calls run through hooks
    /// and the sandbox, a final reply through the Stop hooks; afterwards the episode is over or waits
    /// for the next message. A step on a finished episode changes nothing.
    pub fn step(&self, ep: &mut Episode<'_>, reply: Result<Message>, policy_ms: u64) {
        if ep.done {
            return;
        }
        let id = ep.record.id.clone();
        let turn = &mut ep.turn;
        let messages = &mut ep.messages;
        turn.latency_ms += policy_ms;
        let mut msg = match reply {
            Ok(m) => m,
            Err(e) => {
                ep.policy_error = Some(format!("{e:#}"));
                ep.stop_reason = "policy_error";
                ep.done = true;
                return;
            }
        };
        turn.rounds += 1;
        msg.role = Role::Assistant;
        // A policy that writes tool calls as text (a local model, an endpoint without a tool
        // parser) gets them parsed in the harness's format; a malformed one is fed back.
        if msg.tool_calls.is_empty() && msg.text_content().contains(TOOL_CALL_OPEN) {
            if let Err(problem) = self.parse_text_calls(&mut msg, turn.rounds) {
                turn.malformed_calls += 1;
                messages.push(msg);
                messages.push(Message::text(
                    Role::User,
                    format!("{RUNTIME_NOTE} {problem}"),
                ));
                self.check_limits(ep);
                return;
            }
        }
        if !msg.tool_calls.is_empty() {
            for (i, c) in msg.tool_calls.iter_mut().enumerate() {
                if c.id.is_empty() {
                    c.id = format!("call_{}_{i}", turn.rounds);
                }
            }
            let calls = msg.tool_calls.clone();
            messages.push(msg);
            let mut feedback = Vec::new();
            for call in &calls {
                let content = self.tool_call(call, &id, &mut ep.sandbox, turn, &mut feedback);
                let mut m = Message::text(Role::Tool, content);
                m.tool_call_id = Some(call.id.clone());
                m.name = Some(call.function.name.clone());
                messages.push(m);
            }
            messages.extend(feedback);
            self.check_limits(ep);
            return;
        }
        let text = msg.text_content();
        messages.push(msg);
        match self.stop_hooks(messages, text, &id, turn) {
            StopOutcome::Accept => ep.done = true,
            StopOutcome::Retry => self.check_limits(ep),
            StopOutcome::Blocked(reason) => {
                ep.stop_reason = "blocked";
                ep.done = true;
                // A refused reply is not spoken: keep what was generated in meta, send nothing.
                if let Some(last) = messages.last_mut() {
                    ep.blocked_reply = Some(format!("{} [{reason}]", last.text_content()));
                    last.content = Some(Content::Text(String::new()));
                }
            }
        }
    }

    /// Ends the episode when the next policy move would exceed the harness's round or latency limit.
    fn check_limits(&self, ep: &mut Episode<'_>) {
        if ep.done {
            return;
        }
        let limits = self.harness.limits();
        if ep.turn.rounds >= limits.max_rounds {
            ep.stop_reason = "max_rounds";
            ep.done = true;
        } else if ep.turn.latency_ms >= limits.slo_e2e_ms {
            ep.stop_reason = "slo";
            ep.done = true;
        }
    }

    /// The episode as a trajectory record, with the runtime's counts in `meta` (`policy` names who
    /// played). An episode not yet over is recorded as it stands, with stop reason `unfinished`.
    pub fn finish(&self, ep: Episode<'_>, policy: &str) -> Trajectory {
        let Episode {
            record,
            sandbox,
            turn,
            turn_start,
            context_message,
            messages,
            stop_reason,
            blocked_reply,
            policy_error,
            done,
            session: _,
        } = ep;
        let mut meta = record.meta.clone();
        meta.insert("policy".into(), json!(policy));
        meta.insert("turn_start".into(), json!(turn_start));
        if context_message {
            meta.insert("context_message".into(), json!(true));
        }
        meta.insert(
            "stop_reason".into(),
            json!(if done { stop_reason } else { "unfinished" }),
        );
        meta.insert("rounds".into(), json!(turn.rounds));
        meta.insert("tool_calls".into(), json!(turn.tool_calls));
        meta.insert("malformed_calls".into(), json!(turn.malformed_calls));
        meta.insert("retries".into(), json!(turn.retries));
        meta.insert("latency_ms".into(), json!(turn.latency_ms));
        if turn.limit_hits > 0 {
            meta.insert("limit_hits".into(), json!(turn.limit_hits));
        }
        if !turn.hook_counts.is_empty() {
            meta.insert("hooks".into(), json!(turn.hook_counts));
        }
        if !turn.fired.is_empty() {
            meta.insert("hooks_fired".into(), json!(turn.fired));
        }
        meta.insert(
            "faults".into(),
            serde_json::to_value(&sandbox.faults).unwrap_or(Value::Null),
        );
        if let Some(e) = policy_error {
            meta.insert("policy_error".into(), json!(e));
        }
        if let Some(b) = blocked_reply {
            meta.insert("blocked_reply".into(), json!(b));
        }
        Trajectory {
            id: record.id,
            task: record.task,
            harness: Some(self.harness_ref.clone()),
            tools: self.tools.clone(),
            messages,
            scores: record.scores,
            meta,
            extra: record.extra,
        }
    }

    /// Replace text-form tool calls in `msg` by structured ones; the error is feedback for the model.
    fn parse_text_calls(&self, msg: &mut Message, round: u64) -> std::result::Result<(), String> {
        let format = match self.harness.manifest().model.tool_call_format {
            crate::harness::ToolCallFormat::HermesJson => TextFormat::Hermes,
            crate::harness::ToolCallFormat::Qwen3Xml => TextFormat::Qwen3Xml,
        };
        let tools: Vec<Value> = self
            .tools
            .iter()
            .filter_map(|t| serde_json::to_value(t).ok())
            .collect();
        // Any name parses: a call to a tool the harness lacks gets the same answer however the
        // policy wrote it, the `unknown_tool` result listing the tools, as for a structured call (a
        // model that learnt the recovery from a teacher's trajectory meets it again here).
        let out = parse_assistant_output_any_name(&msg.text_content(), format, Some(&tools))
            .map_err(|e| e.message)?;
        msg.content = Some(Content::Text(out.content));
        if msg.reasoning_content.is_none() {
            msg.reasoning_content = out.reasoning;
        }
        msg.tool_calls = out
            .tool_calls
            .into_iter()
            .enumerate()
            .map(|(i, c)| ToolCall {
                id: format!("call_{}_{i}", round),
                kind: "function".into(),
                function: FunctionCall {
                    name: c.name,
                    arguments: Value::Object(c.arguments).to_string(),
                    extra: Map::new(),
                },
                extra: Map::new(),
            })
            .collect();
        Ok(())
    }

    /// UserPromptSubmit hooks on the viewer's last message: fix (mask) it, or block the turn.
    fn prompt_hooks(
        &self,
        messages: &mut [Message],
        session: &str,
        turn: &mut Turn,
    ) -> Option<String> {
        let idx = messages.iter().rposition(|m| m.role == Role::User)?;
        for hook in self.hooks.for_event(HookEvent::UserPromptSubmit, None) {
            let text = messages[idx].text_content();
            match &hook.kind {
                Kind::Builtin { hook: b, banned } => {
                    let Some(f) = hooks::check_text(
                        b,
                        banned.as_ref(),
                        &text,
                        self.harness.limits().max_reply_chars,
                        &[],
                    ) else {
                        turn.count(hook, "allow");
                        continue;
                    };
                    match (b.on_fail, f.fixed) {
                        (OnFail::Fix, Some(fixed)) => {
                            turn.count(hook, "fix");
                            messages[idx].content = Some(Content::Text(fixed));
                        }
                        _ => {
                            turn.count(hook, "block");
                            return Some(f.reason);
                        }
                    }
                }
                Kind::Command {
                    path,
                    args,
                    timeout,
                } => {
                    let input = json!({"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": text,
                                       "cwd": self.cwd(), "permission_mode": "default"});
                    match self.hooks.run_command(path, args, *timeout, &input) {
                        Decision::Block(r) => {
                            turn.count(hook, "block");
                            return Some(r);
                        }
                        d => self.count_decision(hook, &d, turn),
                    }
                }
            }
        }
        None
    }

    fn cwd(&self) -> String {
        self.harness
            .root()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    }

    fn count_decision(&self, hook: &hooks::Prepared, d: &Decision, turn: &mut Turn) {
        turn.count(
            hook,
            match d {
                Decision::Allow => "allow",
                Decision::Modify(_) => "modify",
                Decision::Block(_) => "block",
                Decision::Error(_) => "error",
                Decision::TimedOut => "timeout",
            },
        );
    }

    /// One tool call through hooks and the sandbox; returns the tool message content. Feedback the
    /// hooks address to the user or system role is queued in `feedback`.
    fn tool_call(
        &self,
        call: &ToolCall,
        session: &str,
        sandbox: &mut Sandbox<'_>,
        turn: &mut Turn,
        feedback: &mut Vec<Message>,
    ) -> String {
        turn.tool_calls += 1;
        let name = call.function.name.as_str();
        let max = self.harness.limits().max_tool_calls;
        if turn.tool_calls > max {
            turn.limit_hits += 1;
            return error_json(
                "limit",
                &format!(
                    "tool-call limit of {max} per question reached; answer with what you have"
                ),
            );
        }
        let Some(schema) = self.schemas.get(name) else {
            turn.malformed_calls += 1;
            let known: Vec<&str> = self
                .tools
                .iter()
                .map(|t| t.function.name.as_str())
                .collect();
            return error_json(
                "unknown_tool",
                &format!(
                    "there is no tool {name:?}; available tools: {}",
                    known.join(", ")
                ),
            );
        };
        // Unparsable arguments travel on as the raw string, so tool_call_json can word the feedback.
        let mut args = match call.function.parsed_arguments() {
            Ok(a) => Value::Object(a),
            Err(_) => Value::String(call.function.arguments.clone()),
        };
        if !args.is_object() || !super::checks::schema_errors(schema, &args).is_empty() {
            turn.malformed_calls += 1;
        }
        for hook in self.hooks.for_event(HookEvent::PreToolUse, Some(name)) {
            match &hook.kind {
                Kind::Builtin { hook: b, .. } => {
                    let raw = match &args {
                        Value::String(s) => s.clone(),
                        v => v.to_string(),
                    };
                    let Some(f) = hooks::check_tool_call(b, &raw, Some(schema)) else {
                        turn.count(hook, "allow");
                        continue;
                    };
                    let used = turn.attempts.entry(hook.id).or_default();
                    if b.on_fail == OnFail::Retry && *used < b.max_retries {
                        *used += 1;
                        let attempt = *used;
                        turn.count(hook, "retry");
                        turn.retries += 1;
                        let (role, text) =
                            hooks::feedback(b, &f, Some(name), attempt, FeedbackRole::ToolError);
                        return match role {
                            FeedbackRole::ToolError => error_json("invalid_arguments", &text),
                            other => {
                                feedback.push(Message::text(role_of(other), text));
                                error_json("invalid_arguments", &f.reason)
                            }
                        };
                    }
                    turn.count(hook, "block");
                    return error_json(
                        "denied",
                        &format!("call refused by a harness check: {}", f.reason),
                    );
                }
                Kind::Command {
                    path,
                    args: cmd_args,
                    timeout,
                } => {
                    let input = json!({"session_id": session, "hook_event_name": "PreToolUse", "tool_name": name,
                                       "tool_input": args, "tool_use_id": call.id, "cwd": self.cwd(),
                                       "permission_mode": "default", "transcript_path": null});
                    let d = self.hooks.run_command(path, cmd_args, *timeout, &input);
                    self.count_decision(hook, &d, turn);
                    match d {
                        Decision::Block(reason) => return error_json("denied", &reason),
                        Decision::Modify(updated) => args = updated,
                        _ => {}
                    }
                }
            }
        }
        let Value::Object(map) = &args else {
            return error_json(
                "invalid_arguments",
                &format!(
                    "arguments of {name} are not a JSON object: {}",
                    call.function.arguments
                ),
            );
        };
        let (content, ok) = self.execute(name, map, sandbox, turn);
        let mut content = content;
        if ok {
            turn.sources.push((name.to_string(), content.clone()));
        }
        for hook in self.hooks.for_event(HookEvent::PostToolUse, Some(name)) {
            if let Kind::Command {
                path,
                args: cmd_args,
                timeout,
            } = &hook.kind
            {
                let input = json!({"session_id": session, "hook_event_name": "PostToolUse", "tool_name": name,
                                   "tool_input": args, "tool_use_id": call.id, "tool_response": content,
                                   "cwd": self.cwd(), "permission_mode": "default"});
                let d = self.hooks.run_command(path, cmd_args, *timeout, &input);
                self.count_decision(hook, &d, turn);
                // The tool already ran: a block only adds the hook's note for the model.
                if let Decision::Block(note) = d {
                    content = format!("{content}\n[hook] {note}");
                }
            }
        }
        content
    }

    /// Run a tool: the skill loader from the harness, anything else in the sandbox by canonical id.
    fn execute(
        &self,
        name: &str,
        args: &Map<String, Value>,
        sandbox: &mut Sandbox<'_>,
        turn: &mut Turn,
    ) -> (String, bool) {
        if self.load_tool.as_deref() == Some(name) {
            let skill = args.get("name").and_then(Value::as_str).unwrap_or_default();
            return match self.harness.skill(skill) {
                Some(s) => (s.body.trim().to_string(), true),
                None => {
                    let known: Vec<&str> = self.harness.skills().iter().map(|s| s.name()).collect();
                    (
                        error_json(
                            "unknown_skill",
                            &format!("no skill {skill:?}; skills: {}", known.join(", ")),
                        ),
                        false,
                    )
                }
            };
        }
        let canonical = self.names.tool_canonical(name).unwrap_or(name);
        // The sandbox speaks canonical argument keys; its error messages are turned back into this
        // harness's keys, so the policy is never told about a key its schema does not have.
        let out = sandbox.call(
            canonical,
            &self.names.args_canonical(canonical, args),
            turn.rounds as usize,
        );
        turn.latency_ms += out.latency_ms;
        let ok = !out.is_error && out.fault.is_none();
        let content = match self.names.params.get(canonical) {
            Some(keys) if out.is_error => {
                let keys: HashMap<String, String> =
                    keys.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                crate::hsa::text::rename_idents(&out.content, &keys).into_owned()
            }
            _ => out.content,
        };
        (content, ok)
    }

    /// Stop hooks on a final reply: fix it in place, or send feedback for a retry, or refuse it.
    fn stop_hooks(
        &self,
        messages: &mut Vec<Message>,
        mut text: String,
        session: &str,
        turn: &mut Turn,
    ) -> StopOutcome {
        let max_chars = self.harness.limits().max_reply_chars;
        for hook in self.hooks.for_event(HookEvent::Stop, None) {
            match &hook.kind {
                Kind::Builtin { hook: b, banned } => {
                    let sources: Vec<&str> = match &b.check {
                        BuiltinCheck::GroundedNumbers(p) => turn
                            .sources
                            .iter()
                            .filter(|(tool, _)| p.sources.is_empty() || p.sources.contains(tool))
                            .map(|(_, c)| c.as_str())
                            .collect(),
                        _ => Vec::new(),
                    };
                    let Some(f) = hooks::check_text(b, banned.as_ref(), &text, max_chars, &sources)
                    else {
                        turn.count(hook, "allow");
                        continue;
                    };
                    if let (OnFail::Fix, Some(fixed)) = (b.on_fail, &f.fixed) {
                        turn.count(hook, "fix");
                        text = fixed.clone();
                        if let Some(last) = messages.last_mut() {
                            last.content = Some(Content::Text(text.clone()));
                        }
                        continue;
                    }
                    let used = turn.attempts.entry(hook.id).or_default();
                    if b.on_fail == OnFail::Retry && *used < b.max_retries {
                        *used += 1;
                        let attempt = *used;
                        turn.count(hook, "retry");
                        turn.retries += 1;
                        let (role, fb) = hooks::feedback(b, &f, None, attempt, FeedbackRole::User);
                        messages.push(Message::text(role_of(role), fb));
                        return StopOutcome::Retry;
                    }
                    turn.count(hook, "block");
                    return StopOutcome::Blocked(f.reason);
                }
                Kind::Command {
                    path,
                    args,
                    timeout,
                } => {
                    let input = json!({"session_id": session, "hook_event_name": "Stop", "cwd": self.cwd(),
                                       "permission_mode": "default",
                                       "stop_hook_active": turn.command_stop_retries > 0, "reply": text});
                    let d = self.hooks.run_command(path, args, *timeout, &input);
                    self.count_decision(hook, &d, turn);
                    if let Decision::Block(reason) = d {
                        if turn.command_stop_retries < MAX_COMMAND_STOP_RETRIES {
                            turn.command_stop_retries += 1;
                            turn.retries += 1;
                            messages.push(Message::text(Role::User, reason));
                            return StopOutcome::Retry;
                        }
                        return StopOutcome::Blocked(reason);
                    }
                }
            }
        }
        StopOutcome::Accept
    }
}

fn role_of(role: FeedbackRole) -> Role {
    match role {
        FeedbackRole::System => Role::System,
        FeedbackRole::User | FeedbackRole::ToolError => Role::User,
    }
}

fn error_json(code: &str, message: &str) -> String {
    json!({"error": {"code": code, "message": message}}).to_string()
}
