//! Agent mode, `POST /v1/agent`: the complete live-room host behind one call. The server runs the agent
//! runtime (`agent::runtime`) with the harness given at start-up (`--harness`): the prompt pipeline
//! renders the system prompt from the request's live-room context, tools run server-side in the
//! simulator's sandbox over the catalog, hooks check and retry — and every model call goes through the
//! same batching engine as `/v1/chat/completions`, so concurrent agent turns are batched too.
//!
//! Request: a task record as `hat sim tasks` and the replay set write it —
//! `{"id", "task": {"intent", "room", "viewer", "expected"?}, "messages": [viewer messages]}` — plus an
//! optional `"hat_agent": {"return_trajectory": bool, "max_tokens": n, "temperature": t, "seed": s}`.
//! Response: `{"id", "object": "hat.agent.turn", "model", "reply", "stop_reason", "rounds", "tool_calls",
//! "retries", "success", "failures", "usage", "trajectory"?}`; `success` is the simulator's verifiable
//! check when the task carries ground truth (`task.expected`), else null.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use anyhow::{anyhow, Result};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::chat::{collect, render_prompt, submit};
use super::error::ApiError;
use super::protocol::{ChatRequest, ToolChoice};
use super::server::{unique_id, unix_time, App};
use crate::agent::{Agent, SimEnv};
use crate::model::generation::sampling::SamplingParams;
use crate::policy::{Conversation, Policy};
use crate::record::{Message, Role, Trajectory};
use crate::sim::catalog::Catalog;
use crate::sim::faults::FaultPlan;
use crate::sim::success;

pub const ENDPOINT: &str = "/v1/agent";

/// Tokens per model call unless the request says otherwise.
const DEFAULT_MAX_TOKENS: usize = 256;

/// The harness-bound agent and its simulated world, built once at start-up.
pub struct AgentService {
    pub agent: Agent,
    pub catalog: Catalog,
    pub faults: FaultPlan,
}

/// Per-request settings from `hat_agent`.
struct Settings {
    return_trajectory: bool,
    params: SamplingParams,
}

fn settings(v: Option<Value>) -> Result<Settings, ApiError> {
    let v = v.unwrap_or(Value::Null);
    let field = |k: &str| v.get(k).filter(|x| !x.is_null());
    let bad = |k: &str, what: &str| {
        ApiError::field(
            &format!("hat_agent.{k}"),
            format!("hat_agent.{k} must be {what}"),
        )
    };
    let return_trajectory = match field("return_trajectory") {
        None => false,
        Some(x) => x
            .as_bool()
            .ok_or_else(|| bad("return_trajectory", "true or false"))?,
    };
    let mut params = SamplingParams::greedy(DEFAULT_MAX_TOKENS);
    if let Some(x) = field("max_tokens") {
        params.max_tokens =
            x.as_u64()
                .filter(|n| *n > 0)
                .ok_or_else(|| bad("max_tokens", "a positive integer"))? as usize;
    }
    if let Some(x) = field("temperature") {
        params.temperature =
            x.as_f64()
                .filter(|t| (0.0..=2.0).contains(t))
                .ok_or_else(|| bad("temperature", "a number between 0 and 2"))? as f32;
    }
    if let Some(x) = field("seed") {
        params.seed = x
            .as_u64()
            .ok_or_else(|| bad("seed", "a non-negative integer"))?;
    }
    Ok(Settings {
        return_trajectory,
        params,
    })
}

pub async fn agent_turn(State(app): State<App>, body: Result<Bytes, BytesRejection>) -> Response {
    app.metrics
        .counted(ENDPOINT, handle(app.clone(), body).await)
}

async fn handle(app: App, body: Result<Bytes, BytesRejection>) -> Result<Response, ApiError> {
    let body = body.map_err(|e| ApiError::new(e.status(), e.body_text()))?;
    if app.agent.is_none() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "agent mode is off: start serve with --harness DIR",
        ));
    }
    let mut record: Trajectory = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("the body is not a task record: {e}")))?;
    let settings = settings(record.extra.remove("hat_agent"))?;
    if record.task.is_none() {
        return Err(ApiError::field(
            "task",
            "a task with the live-room context (`task.room`, `task.viewer`) is required",
        ));
    }
    if !record.messages.iter().any(|m| m.role == Role::User) {
        return Err(ApiError::field(
            "messages",
            "messages must hold at least one viewer (user) message",
        ));
    }
    if record.id.is_empty() {
        record.id = format!("agent-{}", unique_id());
    }
    let deadline = Instant::now() + app.timeout;
    let runtime = tokio::runtime::Handle::current();
    let worker = app.clone();
    // The runtime loop is synchronous (tool sandbox, command hooks): run it on the blocking pool.
    let joined = tokio::task::spawn_blocking(move || {
        let service = worker
            .agent
            .as_ref()
            .ok_or_else(|| anyhow!("agent mode is off"))?;
        let policy = EnginePolicy {
            app: worker.clone(),
            runtime,
            deadline,
            params: settings.params,
            calls: Default::default(),
            usage: Default::default(),
        };
        let env = SimEnv {
            catalog: &service.catalog,
            faults: &service.faults,
            seed: policy.params.seed,
        };
        let mut out = service.agent.run(&policy, &record, &env)?;
        let has_truth = out.task.as_ref().is_some_and(|t| t.expected.is_some());
        let verdict = has_truth.then(|| success::check(&out));
        if let Some(v) = &verdict {
            out.meta.insert("success".into(), json!(v.success));
        }
        let usage = (policy.usage[0].load(Relaxed), policy.usage[1].load(Relaxed));
        Ok::<_, anyhow::Error>((out, verdict, usage))
    })
    .await
    .map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the agent task failed: {e}"),
        )
    })?;
    let (out, verdict, (prompt, completion)) =
        joined.map_err(|e| ApiError::field("task", format!("{e:#}")))?;
    if let Some(err) = out.meta.get("policy_error").and_then(Value::as_str) {
        let status = if err.contains("queue is full") {
            StatusCode::TOO_MANY_REQUESTS
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        return Err(ApiError::new(
            status,
            format!("the model call failed: {err}"),
        ));
    }
    let reply = out
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant && m.tool_calls.is_empty())
        .map(Message::text_content)
        .unwrap_or_default();
    let meta = |k: &str| out.meta.get(k).cloned().unwrap_or(Value::Null);
    let mut body = json!({"id": out.id, "object": "hat.agent.turn", "created": unix_time(), "model": app.model_name,
        "reply": reply, "stop_reason": meta("stop_reason"), "rounds": meta("rounds"), "tool_calls": meta("tool_calls"),
        "retries": meta("retries"), "success": verdict.as_ref().map(|v| v.success),
        "failures": verdict.map(|v| v.failures).unwrap_or_default(),
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}});
    if settings.return_trajectory {
        body["trajectory"] = serde_json::to_value(&out).unwrap_or(Value::Null);
    }
    Ok(Json(body).into_response())
}

/// The server's own model as the agent's policy: each call renders the conversation, queues it on the
/// engine and waits (on the blocking pool) for the text; the runtime parses tool calls from it in the
/// harness's format.
struct EnginePolicy {
    app: App,
    runtime: tokio::runtime::Handle,
    deadline: Instant,
    params: SamplingParams,
    calls: AtomicUsize,
    /// Prompt and completion tokens over all calls.
    usage: [AtomicUsize; 2],
}

impl Policy for EnginePolicy {
    fn name(&self) -> &str {
        &self.app.model_name
    }

    fn respond(&self, conv: &Conversation<'_>) -> Result<Message> {
        let call = self.calls.fetch_add(1, Relaxed) as u64;
        let mut params = self.params.clone();
        // Each call of the episode draws from its own stream of the request's seed.
        params.seed = params.seed.wrapping_add(call);
        let req = ChatRequest {
            model: None,
            messages: conv
                .messages
                .iter()
                .map(serde_json::to_value)
                .collect::<Result<_, _>>()?,
            tools: conv.tools.to_vec(),
            tool_choice: ToolChoice::None,
            params,
            top_logprobs: 0,
            return_tokens_as_token_ids: false,
            stream: false,
            include_usage: false,
            template_kwargs: Default::default(),
            ignore_eos: false,
        };
        let started = Instant::now();
        let prompt = render_prompt(&self.app, &req).map_err(|e| anyhow!(e.message))?;
        let rx = submit(&self.app, prompt, &req).map_err(|e| anyhow!(e.message))?;
        let out = self
            .runtime
            .block_on(collect(&self.app, rx, started, self.deadline))
            .map_err(|e| anyhow!(e.message))?;
        self.usage[0].fetch_add(out.prompt_tokens, Relaxed);
        self.usage[1].fetch_add(out.completion_tokens, Relaxed);
        Ok(Message::text(Role::Assistant, out.text))
    }
}

/// Loads the harness, names map and catalog for agent mode.
pub fn load(harness: &std::path::Path, catalog: &std::path::Path) -> Result<AgentService> {
    let (h, names) = crate::hsa::variant::load_harness(harness)?;
    let agent = Agent::new(&h, names)?;
    let text = std::fs::read_to_string(catalog)
        .map_err(|e| anyhow!("reading catalog {}: {e}", catalog.display()))?;
    let catalog: Catalog = serde_json::from_str(&text)
        .map_err(|e| anyhow!("{} is not a catalog: {e}", catalog.display()))?;
    Ok(AgentService {
        agent,
        catalog,
        faults: FaultPlan::default(),
    })
}
