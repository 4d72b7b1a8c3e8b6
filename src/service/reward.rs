//! The reward service, `judge serve`: the verifiable judge over HTTP for RL engines.
//!
//! * `POST /reward` — OpenRLHF's remote reward protocol (`--reward.remote_url`, and what its
//!   `SingleTurnAgentExecutor` posts): `{"query": [str], "prompts": [str], "labels": [label]}` →
//!   `{"rewards": [f], "scores": [f], "extra_logs": {dimension: [f], "success": [0|1]}}`, one entry
//!   per query. A label is a HAT record, as a JSON object or a JSON string (OpenRLHF passes labels
//!   through as strings): a task record (`hat sim tasks`, or the `label` column the adapters' data
//!   carries), whose episode is then the label's messages plus the model's response — the query with
//!   its prompt prefix removed, parsed in `--tool-call-format` — or a whole trajectory record (with the
//!   assistant's messages, as the environment service writes it), judged as it is.
//! * `POST /score` — the plain JSON form (verl reward functions, GDPO): `{"items": [{"record": R} |
//!   {"label": L, "response": str}]}` → `{"results": [{"id", "reward", "score", "rewards":
//!   {dimension: value|null}, "success", "reasons", "failures"}]}`.
//!
//! Rewards per dimension, `score` and `reward` as [`super::rewards`] defines them. In
//! `extra_logs` an unobservable dimension is 0 (the engine turns logs into tensors); `/score` says
//! `null`.
//!
//! With the LLM judge's flags (`--url`, `--model`, …, as `judge llm` takes them; the endpoint's key is
//! `--judge-api-key` here) every episode is also judged pointwise by the LLM, and its `accuracy` and
//! `effectiveness` come back as the separate dimensions `llm_accuracy` and `llm_effectiveness` (in
//! `extra_logs`; in `/score`'s `rewards`, with the judge's name and reason under `llm`). They change
//! `reward` and `score` only by `--llm-weight` × their mean (default 0: not at all). The call is
//! blocking network I/O on the request's blocking thread, never on the runtime; an endpoint or verdict
//! failure is that request's 502, naming the endpoint.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use clap::Args;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::env::text::completion_message;
use super::http::{self, serve_until_signal, HttpOptions};
use super::rewards::{Rewards, DIMENSIONS};
use crate::chat::ToolCallFormat;
use crate::judge::commands::LlmJudgeArgs;
use crate::judge::llm::{LlmJudge, Pointwise, Tally};
use crate::judge::verifiable::TokenCounter;
use crate::record::{Message, Role, Trajectory};
use crate::serve::error::ApiError;

/// Serve the verifiable judge over HTTP: OpenRLHF's remote reward protocol on `POST /reward`
/// (`--reward.remote_url http://HOST:PORT/reward`) and a JSON form with the rewards per dimension on
/// `POST /score` (verl reward functions, GDPO). Labels are HAT task or trajectory records.
/// Protocol: docs/services.md.
///
/// With `--url` and `--model` (the flags of `judge llm`), the LLM judge also scores every episode
/// pointwise: `llm_accuracy` and `llm_effectiveness` are returned next to the verifiable dimensions,
/// and added to `reward` and `score` with `--llm-weight` (default 0). A request's items are judged by
/// the LLM up to `--jobs` at once.
#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:\n  \
judge serve --port 8200\n  \
judge serve --url http://127.0.0.1:8000 --model qwen3-32b --cache .judge-cache --llm-weight 0.5\n  \
curl -s localhost:8200/score -d '{\"items\": [{\"record\": '\"$(head -1 episodes.jsonl)\"'}]}'")]
#[command(mut_arg("judge_api_key", |a| a.long("judge-api-key")))]
pub struct RewardServeArgs {
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    #[arg(long, default_value_t = 8200)]
    pub port: u16,
    /// Require `Authorization: Bearer KEY` (all routes but /health).
    #[arg(long, env = "HAT_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Largest request body in bytes; larger ones get 413.
    #[arg(long, default_value_t = 16 << 20)]
    pub max_body_bytes: usize,
    /// Most records one request may carry.
    #[arg(long, default_value_t = 4096)]
    pub max_items: usize,
    /// Count reasoning tokens with this tokenizer.json (default: the CJK-char/whitespace
    /// approximation, as `judge score`).
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<String>,
    /// How responses write tool calls: hermes (Qwen3) or qwen3_xml (Qwen3.5).
    #[arg(long, default_value = "hermes")]
    pub tool_call_format: ToolCallFormat,
    /// The LLM judge (optional): its endpoint, template and cache, as `judge llm` takes them.
    #[command(flatten, next_help_heading = "LLM judge (optional)")]
    pub llm: LlmJudgeArgs,
    /// Add this × the mean of llm_accuracy and llm_effectiveness to `reward` and `score` (0: the LLM's
    /// dimensions are only reported).
    #[arg(long, default_value_t = 0.0, requires = "url")]
    pub llm_weight: f64,
}

pub struct RewardState {
    counter: TokenCounter,
    max_items: usize,
    format: ToolCallFormat,
    llm: Option<LlmServed>,
}

/// The LLM judge as the service runs it.
struct LlmServed {
    judge: LlmJudge,
    /// The configured endpoint, as errors name it.
    url: String,
    weight: f64,
    /// LLM calls in flight at once for one request's items.
    jobs: usize,
}

/// The LLM's pointwise verdict on one episode.
struct LlmVerdict {
    verdict: Pointwise,
    /// The mean of its two dimensions: what `--llm-weight` scales.
    score: f64,
    cached: bool,
}

pub type RewardApp = Arc<RewardState>;

impl RewardState {
    /// The LLM judge's name (`llm:<model>`), when one is configured.
    pub fn llm_judge(&self) -> Option<String> {
        self.llm.as_ref().map(|l| l.judge.name())
    }
}

impl RewardServeArgs {
    pub fn state(&self) -> Result<RewardApp> {
        Ok(Arc::new(RewardState {
            counter: match &self.tokenizer {
                Some(p) => TokenCounter::from_file(p)?,
                None => TokenCounter::Approximate,
            },
            max_items: self.max_items.max(1),
            format: self.tool_call_format,
            llm: match self.llm.judge(false)? {
                Some(judge) => {
                    if !self.llm_weight.is_finite() {
                        bail!("--llm-weight must be a finite number");
                    }
                    Some(LlmServed {
                        judge,
                        url: self.llm.url.clone().unwrap_or_default(),
                        weight: self.llm_weight,
                        jobs: self.llm.jobs.max(1),
                    })
                }
                None => None,
            },
        }))
    }

    pub fn http(&self) -> HttpOptions {
        HttpOptions {
            api_key: self.api_key.clone().filter(|k| !k.is_empty()),
            max_body_bytes: self.max_body_bytes,
        }
    }

    pub fn run(&self) -> Result<()> {
        let app = self.state()?;
        let http = self.http();
        let llm = match (&self.llm.url, &self.llm.model) {
            (Some(url), Some(model)) => {
                format!(" + LLM judge {model} at {url} (weight {})", self.llm_weight)
            }
            _ => String::new(),
        };
        let banner = format!(
            "judge serve: verifiable judge{llm} (api key {})",
            if http.api_key.is_some() {
                "required"
            } else {
                "off"
            }
        );
        serve_until_signal(|| router(app, &http), &self.host, self.port, &banner)
    }
}

pub fn router(app: RewardApp, opts: &HttpOptions) -> Router {
    let routes = Router::new()
        .route("/reward", post(openrlhf))
        .route("/score", post(score))
        .with_state(app.clone());
    let mut dimensions: Vec<&str> = DIMENSIONS.to_vec();
    let mut info = json!({"status": "ok", "service": "hat-judge"});
    if let Some(llm) = &app.llm {
        dimensions.extend(LLM_DIMENSIONS);
        info["llm_judge"] =
            json!({"judge": llm.judge.name(), "url": llm.url, "weight": llm.weight});
    }
    info["dimensions"] = json!(dimensions);
    let health = Router::new().route(
        "/health",
        get(move || {
            let info = info.clone();
            async move { Json(info) }
        }),
    );
    http::finish(routes, health, opts)
}

/// The episode a label and a response stand for.
fn episode(label: &Value, response: Option<&str>, format: ToolCallFormat) -> Result<Trajectory> {
    let parsed;
    let value = match label {
        Value::String(s) => {
            parsed = serde_json::from_str::<Value>(s)
                .context("the label is a string but not a JSON record")?;
            &parsed
        }
        v => v,
    };
    let mut traj: Trajectory =
        serde_json::from_value(value.clone()).context("the label is not a HAT record")?;
    if traj.messages.iter().any(Message::is_trained) {
        return Ok(traj);
    }
    let Some(response) = response else {
        bail!("the record has no assistant message and no response was given");
    };
    let mut msg = completion_message(response);
    // Text-form tool calls become structured ones, as the runtime would parse them; a malformed one
    // stays text, and the judge scores the reply it is.
    if msg.text_content().contains("<tool_call>") {
        if let Ok(out) = crate::chat::parse_assistant_output(&msg.text_content(), format, None) {
            msg = to_message(out, msg.reasoning_content.take());
        }
    }
    traj.messages.push(msg);
    Ok(traj)
}

fn to_message(out: crate::chat::AssistantOutput, reasoning: Option<String>) -> Message {
    let mut m = Message::text(Role::Assistant, out.content);
    m.reasoning_content = reasoning.or(out.reasoning);
    m.tool_calls = out
        .tool_calls
        .into_iter()
        .enumerate()
        .map(|(i, c)| crate::record::ToolCall {
            id: format!("call_{i}"),
            kind: "function".into(),
            function: crate::record::FunctionCall {
                name: c.name,
                arguments: Value::Object(c.arguments).to_string(),
                extra: Map::new(),
            },
            extra: Map::new(),
        })
        .collect();
    m
}

/// The LLM judge's dimensions, after the verifiable ones.
pub const LLM_DIMENSIONS: [&str; 2] = ["llm_accuracy", "llm_effectiveness"];

/// One item judged: the verifiable judge's rewards (with the LLM's weighted share added to `reward`
/// and `score`), the judged record, and the LLM's verdict when one is configured.
struct Judged {
    rewards: Rewards,
    traj: Trajectory,
    llm: Option<LlmVerdict>,
}

/// Judges one item with the verifiable judge; a bad item is the client's error (400) naming it.
fn verify(
    app: &RewardState,
    i: usize,
    label: &Value,
    response: Option<&str>,
) -> Result<(Rewards, Trajectory), ApiError> {
    let mut traj = episode(label, response, app.format)
        .map_err(|e| ApiError::bad_request(format!("item {i}: {e:#}")))?;
    let rewards = Rewards::judge(&mut traj, &app.counter);
    Ok((rewards, traj))
}

/// Judges a request's items (label, response, or the client's error about the item), in order: every
/// item with the verifiable judge first (so a bad item is a 400 before any LLM call), then — with an LLM judge — every episode by the LLM, up to
/// `--jobs` calls at once on scoped threads of this blocking thread. A failed call is the request's
/// 502, naming the first failed item, the judge and its endpoint.
fn judge_all<'a>(
    app: &RewardState,
    items: impl ExactSizeIterator<Item = Result<(&'a Value, Option<&'a str>), ApiError>>,
) -> Result<Vec<Judged>, ApiError> {
    let mut judged = Vec::with_capacity(items.len());
    for (i, item) in items.enumerate() {
        let (label, response) = item?;
        let (rewards, traj) = verify(app, i, label, response)?;
        judged.push(Judged {
            rewards,
            traj,
            llm: None,
        });
    }
    let Some(llm) = &app.llm else {
        return Ok(judged);
    };
    let verdicts = llm_verdicts(llm, &judged);
    for (i, (j, v)) in judged.iter_mut().zip(verdicts).enumerate() {
        let (verdict, cached) = v.map_err(|e| {
            ApiError::new(
                StatusCode::BAD_GATEWAY,
                format!(
                    "item {i}: the LLM judge ({}) at {} failed: {e:#}",
                    llm.judge.name(),
                    llm.url
                ),
            )
        })?;
        let score = (verdict.accuracy + verdict.effectiveness) / 2.0;
        j.rewards.reward += llm.weight * score;
        j.rewards.score += llm.weight * score;
        j.llm = Some(LlmVerdict {
            verdict,
            score,
            cached,
        });
    }
    Ok(judged)
}

/// A verdict and whether the cache gave it, or why the judge gave none.
type VerdictResult = anyhow::Result<(Pointwise, bool)>;

/// The LLM's pointwise verdict on each episode (and whether the cache gave it), in order. The prompt
/// is rendered from the record as the verifiable judge left it, as `judge score | judge llm` sees it.
fn llm_verdicts(llm: &LlmServed, judged: &[Judged]) -> Vec<VerdictResult> {
    let one = |j: &Judged| {
        let mut tally = Tally::default();
        let v = llm.judge.pointwise(&j.traj, &mut tally)?;
        Ok((v, tally.cached > 0))
    };
    let n = judged.len();
    let workers = llm.jobs.min(n);
    if workers <= 1 {
        return judged.iter().map(one).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<VerdictResult>>> = (0..n).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let v = one(&judged[i]);
                *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or_else(|| Err(anyhow::anyhow!("the judging thread died")))
        })
        .collect()
}

fn too_many(app: &RewardState, n: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "{n} items in one request; at most {} (--max-items)",
            app.max_items
        ),
    )
}

#[derive(Debug, Deserialize)]
struct OpenRlhfRequest {
    query: Vec<String>,
    #[serde(default)]
    prompts: Vec<String>,
    #[serde(default)]
    labels: Vec<Value>,
}

async fn openrlhf(State(app): State<RewardApp>, body: Result<Bytes, BytesRejection>) -> Response {
    let req: OpenRlhfRequest = match http::json_body(
        body,
        "an OpenRLHF reward request ({query, prompts, labels})",
    ) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    judge_off_the_runtime(app, req, do_openrlhf).await
}

/// Runs `judge` on a blocking thread (the judge is CPU work; the runtime keeps serving meanwhile) and
/// answers with its JSON, or its error, or a 500 if the thread died.
async fn judge_off_the_runtime<R: Send + 'static>(
    app: RewardApp,
    req: R,
    judge: fn(&RewardState, R) -> Result<Value, ApiError>,
) -> Response {
    match tokio::task::spawn_blocking(move || judge(&app, req)).await {
        Ok(Ok(v)) => Json(v).into_response(),
        Ok(Err(e)) => e.into_response(),
        Err(e) => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("judging failed: {e}"),
        )
        .into_response(),
    }
}

fn do_openrlhf(app: &RewardState, req: OpenRlhfRequest) -> Result<Value, ApiError> {
    let n = req.query.len();
    if n > app.max_items {
        return Err(too_many(app, n));
    }
    if req.labels.len() != n || (!req.prompts.is_empty() && req.prompts.len() != n) {
        return Err(ApiError::bad_request(format!(
            "query, prompts and labels must have one entry per sample: {} queries, {} prompts, {} labels",
            n,
            req.prompts.len(),
            req.labels.len()
        )));
    }
    let mut rewards = Vec::with_capacity(n);
    let mut scores = Vec::with_capacity(n);
    let mut logs: Vec<(String, Vec<f64>)> = DIMENSIONS
        .iter()
        .map(|d| (d.to_string(), Vec::with_capacity(n)))
        .chain([("success".to_string(), Vec::with_capacity(n))])
        .collect();
    let mut llm_logs: Vec<(String, Vec<f64>)> = match app.llm {
        Some(_) => LLM_DIMENSIONS
            .iter()
            .map(|d| (d.to_string(), Vec::with_capacity(n)))
            .collect(),
        None => Vec::new(),
    };
    // OpenRLHF decodes prompt and response together; the response is what follows the prompt.
    let items = (0..n).map(|i| {
        let query = &req.query[i];
        let response = req
            .prompts
            .get(i)
            .and_then(|p| query.strip_prefix(p.as_str()))
            .unwrap_or(query);
        Ok((&req.labels[i], Some(response)))
    });
    for judged in judge_all(app, items)? {
        if let Some(v) = &judged.llm {
            llm_logs[0].1.push(v.verdict.accuracy);
            llm_logs[1].1.push(v.verdict.effectiveness);
        }
        let r = judged.rewards;
        rewards.push(r.reward);
        scores.push(r.score);
        for (k, (_, v)) in r.dimensions.iter().enumerate() {
            logs[k].1.push(v.unwrap_or(0.0));
        }
        logs[DIMENSIONS.len()]
            .1
            .push(if r.success { 1.0 } else { 0.0 });
    }
    let extra_logs: Map<String, Value> = logs
        .into_iter()
        .chain(llm_logs)
        .map(|(k, v)| (k, json!(v)))
        .collect();
    Ok(json!({"rewards": rewards, "scores": scores, "extra_logs": extra_logs}))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScoreItem {
    #[serde(default)]
    record: Option<Value>,
    #[serde(default)]
    label: Option<Value>,
    #[serde(default)]
    response: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScoreRequest {
    items: Vec<ScoreItem>,
}

async fn score(State(app): State<RewardApp>, body: Result<Bytes, BytesRejection>) -> Response {
    let req: ScoreRequest = match http::json_body(body, "a score request ({\"items\": [...]})") {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    judge_off_the_runtime(app, req, do_score).await
}

fn do_score(app: &RewardState, req: ScoreRequest) -> Result<Value, ApiError> {
    if req.items.len() > app.max_items {
        return Err(too_many(app, req.items.len()));
    }
    let items = req
        .items
        .iter()
        .enumerate()
        .map(|(i, item)| match (&item.record, &item.label) {
            (Some(r), None) if item.response.is_none() => Ok((r, None)),
            (None, Some(l)) => Ok((l, item.response.as_deref())),
            _ => Err(ApiError::bad_request(format!(
                "item {i}: give {{\"record\": R}} or {{\"label\": L, \"response\": TEXT}}"
            ))),
        });
    let mut results = Vec::with_capacity(req.items.len());
    for judged in judge_all(app, items)? {
        let mut result = judged.rewards.to_json(&judged.traj);
        if let (Some(v), Some(llm)) = (&judged.llm, &app.llm) {
            result["rewards"]["llm_accuracy"] = json!(v.verdict.accuracy);
            result["rewards"]["llm_effectiveness"] = json!(v.verdict.effectiveness);
            result["llm"] = json!({
                "judge": llm.judge.name(),
                "accuracy": v.verdict.accuracy,
                "effectiveness": v.verdict.effectiveness,
                "score": v.score,
                "weight": llm.weight,
                "reason": v.verdict.reason,
                "cached": v.cached,
            });
        }
        results.push(result);
    }
    Ok(json!({"results": results}))
}
