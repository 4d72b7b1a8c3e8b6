//! The environment service, `hat sim serve`: live-room episodes over HTTP/JSON for RL engines on
//! other machines. The engine generates; the service plays the world — renders the harness's system
//! prompt, runs tool calls through hooks and the faulty sandbox, applies Stop hooks — and judges the
//! finished episode. It is the agent runtime's stepping API (`Agent::start`/`step`/`finish`) behind
//! sessions, so an episode played here is the episode `hat sim rollout` plays for the same moves.
//!
//! * `POST /reset` → `session_id`, the system prompt, tools (OpenAI schema), the viewer's messages
//!   and `prompt_text` (the chat template's rendering with the generation prompt).
//! * `POST /step` with the assistant's move as an OpenAI `message`, a raw completion `text`, or
//!   `token_ids` (decoded with `--tokenizer`) → the new messages (tool results, hook feedback),
//!   `feedback_text` to append after the model's tokens, `done`, and at the end the rewards per
//!   dimension, the scalar reward and (if asked) the trajectory record.
//! * `POST /oracle` (with `--oracle`): the scripted teacher's next move for a session, as a message
//!   and as completion text — a stand-in policy for adapter tests and smoke runs.
//! * `POST /close`: ends an episode where it stands (an engine out of token budget), judged as it
//!   is, with stop reason `unfinished`.
//! * `GET /health`: open sessions and settings.
//!
//! A request that cannot be served gets a 4xx with an OpenAI-shaped error and leaves every session,
//! its own included, as it was. Protocol and examples: docs/services.md.

pub mod cli;
pub mod sessions;
pub mod setup;
pub mod text;

use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::http::{self, HttpOptions};
use super::rewards::Rewards;
use crate::agent::SimEnv;
use crate::judge::verifiable::TokenCounter;
use crate::policy::Policy;
use crate::record::{Message, Role, Trajectory};
use crate::serve::error::ApiError;
use sessions::{Missing, Session, Sessions};
use setup::{HarnessChoice, World};
use text::{completion_message, Texts};

/// Settings of one environment service.
pub struct EnvOptions {
    /// Fault profile of resets that name none.
    pub faults: String,
    /// Episode seed of resets that name none.
    pub seed: u64,
    pub oracle: bool,
}

pub struct EnvState {
    world: World,
    sessions: Sessions,
    texts: Texts,
    counter: TokenCounter,
    out: Option<Mutex<File>>,
    options: EnvOptions,
}

pub type Env = Arc<EnvState>;

impl EnvState {
    pub fn new(
        world: World,
        sessions: Sessions,
        texts: Texts,
        counter: TokenCounter,
        out: Option<File>,
        options: EnvOptions,
    ) -> Env {
        Arc::new(EnvState {
            world,
            sessions,
            texts,
            counter,
            out: out.map(Mutex::new),
            options,
        })
    }
}

/// The routes, with the key check and body limit; spawns the idle reaper on the current runtime.
pub fn router(env: Env, opts: &HttpOptions) -> Router {
    let reaper = env.clone();
    let every = (env.sessions.idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(5));
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            // The service is gone when only this task holds it.
            if Arc::strong_count(&reaper) == 1 {
                break;
            }
            reaper.sessions.expire_idle();
        }
    });
    let routes = Router::new()
        .route("/reset", post(reset))
        .route("/step", post(step))
        .route("/oracle", post(oracle))
        .route("/close", post(close))
        .with_state(env.clone());
    let health = Router::new().route("/health", get(health)).with_state(env);
    http::finish(routes, health, opts)
}

async fn health(State(env): State<Env>) -> Response {
    Json(json!({
        "status": "ok",
        "service": "hat-env",
        "harness": env.world.original().agent.harness().name(),
        "open_sessions": env.sessions.open_count(),
        "max_sessions": env.sessions.max_open,
        "idle_timeout_s": env.sessions.idle.as_secs_f64(),
        "oracle": env.options.oracle,
    }))
    .into_response()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResetRequest {
    #[serde(default)]
    task: Option<Trajectory>,
    #[serde(default)]
    task_id: Option<String>,
    #[serde(default)]
    task_seed: Option<u64>,
    #[serde(default)]
    harness: HarnessChoice,
    #[serde(default)]
    faults: Option<String>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    return_trajectory: bool,
    /// `meta.policy` of the record (default `remote`).
    #[serde(default)]
    policy: Option<String>,
}

fn blocking_error(e: tokio::task::JoinError) -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("the episode's worker failed: {e}"),
    )
}

async fn reset(State(env): State<Env>, body: Result<Bytes, BytesRejection>) -> Response {
    let req: ResetRequest = match http::json_body(body, "a reset request") {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let env2 = env.clone();
    match tokio::task::spawn_blocking(move || do_reset(&env2, req)).await {
        Ok(Ok(v)) => Json(v).into_response(),
        Ok(Err(e)) => e.into_response(),
        Err(e) => blocking_error(e).into_response(),
    }
}

fn do_reset(env: &EnvState, req: ResetRequest) -> Result<Value, ApiError> {
    let bad = |e: anyhow::Error| ApiError::bad_request(format!("{e:#}"));
    if env.sessions.open_count() >= env.sessions.max_open {
        return Err(too_many(env));
    }
    let task = env
        .world
        .task(req.task, req.task_id.as_deref(), req.task_seed)
        .map_err(bad)?;
    let setting = env.world.setting(&req.harness, &task).map_err(bad)?;
    let faults = env
        .world
        .faults(req.faults.as_deref().unwrap_or(&env.options.faults))
        .map_err(bad)?;
    let sim = SimEnv {
        catalog: env.world.catalog,
        faults,
        seed: req.seed.unwrap_or(env.options.seed),
    };
    let episode = setting.agent.start(&task, &sim).map_err(bad)?;
    let tools: Vec<Value> = setting
        .agent
        .tools()
        .iter()
        .filter_map(|t| serde_json::to_value(t).ok())
        .collect();
    let prompt_text = env
        .texts
        .prompt(episode.messages(), &tools)
        .map_err(|e| ApiError::bad_request(format!("rendering the prompt: {e:#}")))?;
    let mut answer = json!({
        "id": episode.id(),
        "harness": {"name": setting.agent.harness().name(), "hash": setting.agent.harness().hash(),
                    "setting": setting.label, "variant": setting.variant},
        "system_prompt": episode.messages().first().map(Message::text_content),
        "messages": episode.messages(),
        "tools": tools,
        "prompt_text": prompt_text,
        "done": episode.is_done(),
    });
    let session = Session {
        setting,
        episode: Some(episode),
        last_used: Instant::now(),
        return_trajectory: req.return_trajectory,
        policy: req.policy.unwrap_or_else(|| "remote".into()),
    };
    let done = session.episode.as_ref().is_some_and(|e| e.is_done());
    let id = env.sessions.insert(session).ok_or_else(|| too_many(env))?;
    answer["session_id"] = json!(id);
    if done {
        // A prompt the hooks blocked: nothing to play, the episode is judged as it stands.
        let session = env.sessions.get(&id).map_err(|m| missing(m, &id))?;
        let mut s = session.lock().unwrap();
        merge(&mut answer, end_episode(env, &id, &mut s));
    }
    Ok(answer)
}

fn too_many(env: &EnvState) -> ApiError {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        format!(
            "{} episodes are open, the most this service holds (--max-sessions); finish or abandon some, or wait for idle ones to expire ({} s)",
            env.sessions.max_open,
            env.sessions.idle.as_secs()
        ),
    )
}

fn missing(m: Missing, id: &str) -> ApiError {
    match m {
        Missing::Unknown => ApiError::new(StatusCode::NOT_FOUND, format!("unknown session {id:?}")),
        Missing::Expired => ApiError::new(
            StatusCode::GONE,
            format!("session {id:?} expired after being idle longer than the service's time-out"),
        ),
        Missing::Finished => ApiError::new(
            StatusCode::CONFLICT,
            format!("session {id:?} is finished: its episode is over"),
        ),
    }
}

fn merge(into: &mut Value, from: Value) {
    if let (Some(a), Value::Object(b)) = (into.as_object_mut(), from) {
        a.extend(b);
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepRequest {
    session_id: String,
    #[serde(default)]
    message: Option<Value>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    token_ids: Option<Vec<u32>>,
    /// Generation time of this move, counted against the harness's latency budget (default 0, so
    /// an episode does not depend on how busy the engine was).
    #[serde(default)]
    latency_ms: u64,
}

/// The assistant's move from a step request; every problem is the client's (400), found before the
/// episode is touched.
fn parse_move(env: &EnvState, req: &StepRequest) -> Result<Message, ApiError> {
    let given = [
        req.message.is_some(),
        req.text.is_some(),
        req.token_ids.is_some(),
    ];
    if given.iter().filter(|g| **g).count() != 1 {
        return Err(ApiError::bad_request(
            "give exactly one of `message` (an OpenAI assistant message), `text` (the raw completion) or `token_ids`",
        ));
    }
    if let Some(text) = &req.text {
        return Ok(completion_message(text));
    }
    if let Some(ids) = &req.token_ids {
        let text = env
            .texts
            .decode(ids)
            .map_err(|e| ApiError::field("token_ids", format!("{e:#}")))?;
        return Ok(completion_message(&text));
    }
    let v = req.message.clone().unwrap_or_default();
    let msg: Message = serde_json::from_value(v).map_err(|e| {
        ApiError::field(
            "message",
            format!("`message` is not an OpenAI chat message: {e}"),
        )
    })?;
    if msg.role != Role::Assistant {
        return Err(ApiError::field(
            "message.role",
            "`message.role` must be \"assistant\"",
        ));
    }
    for (i, call) in msg.tool_calls.iter().enumerate() {
        // Structured calls claim to be parsed already: arguments that are not a JSON object mean the
        // client's parser is broken, which the episode should not absorb. (A model's malformed call
        // sent as `text` is a move, and is fed back to it.)
        if let Err(e) = call.function.parsed_arguments() {
            return Err(ApiError::field(
                &format!("message.tool_calls[{i}].function.arguments"),
                format!("tool call {i} ({}): arguments must be a JSON object encoded as a string: {e:#}", call.function.name),
            ));
        }
    }
    Ok(msg)
}

async fn step(State(env): State<Env>, body: Result<Bytes, BytesRejection>) -> Response {
    let req: StepRequest = match http::json_body(body, "a step request") {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let env2 = env.clone();
    match tokio::task::spawn_blocking(move || do_step(&env2, req)).await {
        Ok(Ok(v)) => Json(v).into_response(),
        Ok(Err(e)) => e.into_response(),
        Err(e) => blocking_error(e).into_response(),
    }
}

fn do_step(env: &EnvState, req: StepRequest) -> Result<Value, ApiError> {
    let session = env
        .sessions
        .get(&req.session_id)
        .map_err(|m| missing(m, &req.session_id))?;
    let msg = parse_move(env, &req)?;
    let mut s = session.lock().unwrap();
    let Session {
        setting, episode, ..
    } = &mut *s;
    let Some(episode) = episode.as_mut().filter(|e| !e.is_done()) else {
        return Err(missing(Missing::Finished, &req.session_id));
    };
    let before = episode.messages().len();
    setting.agent.step(episode, Ok(msg), req.latency_ms);
    let messages = episode.messages();
    let assistant = messages.get(before).cloned();
    let observations = messages.get(before + 1..).unwrap_or_default().to_vec();
    let done = episode.is_done();
    s.last_used = Instant::now();
    let feedback_text = env.texts.feedback(&observations, done).map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("rendering the feedback: {e:#}"),
        )
    })?;
    let mut answer = json!({
        "session_id": req.session_id,
        "assistant": assistant,
        "messages": observations,
        "feedback_text": feedback_text,
        "done": done,
    });
    if done {
        merge(&mut answer, end_episode(env, &req.session_id, &mut s));
    }
    Ok(answer)
}

/// Finishes the session's episode: the record, judged, written to `--out`; the rewards (and the
/// record, if the reset asked for it) for the answer.
fn end_episode(env: &EnvState, id: &str, s: &mut Session) -> Value {
    // The episode moves out of the session, which is closed right after.
    let Some(episode) = s.episode.take() else {
        return json!({});
    };
    let mut traj = s.setting.agent.finish(episode, &s.policy);
    if let (Some(v), Some(h)) = (&s.setting.variant, traj.harness.as_mut()) {
        h.variant = Some(v.clone());
    }
    traj.meta
        .insert("harness_setting".into(), json!(s.setting.label));
    let rewards = Rewards::judge(&mut traj, &env.counter);
    if let Some(out) = &env.out {
        if let Ok(line) = serde_json::to_string(&traj) {
            let mut f = out.lock().unwrap();
            // One write per record, so concurrent episodes never interleave within a line.
            if let Err(e) = f.write_all(format!("{line}\n").as_bytes()) {
                eprintln!("hat sim serve: writing the record of {id}: {e}");
            }
        }
    }
    env.sessions.finish(id);
    let mut v = rewards.to_json(&traj);
    v["stop_reason"] = traj.meta.get("stop_reason").cloned().unwrap_or(Value::Null);
    if s.return_trajectory {
        v["trajectory"] = serde_json::to_value(&traj).unwrap_or(Value::Null);
    }
    v
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OracleRequest {
    session_id: String,
}

async fn oracle(State(env): State<Env>, body: Result<Bytes, BytesRejection>) -> Response {
    let req: OracleRequest = match http::json_body(body, "an oracle request") {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let env2 = env.clone();
    match tokio::task::spawn_blocking(move || do_oracle(&env2, req)).await {
        Ok(Ok(v)) => Json(v).into_response(),
        Ok(Err(e)) => e.into_response(),
        Err(e) => blocking_error(e).into_response(),
    }
}

/// The scripted teacher's next move: it reads the task's hidden ground truth, so it is a test and
/// smoke-run stand-in for a model, off unless the service was started with `--oracle`.
fn do_oracle(env: &EnvState, req: OracleRequest) -> Result<Value, ApiError> {
    if !env.options.oracle {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "the oracle is off: start the service with --oracle (it reads the hidden ground truth; tests and smoke runs only)",
        ));
    }
    let session = env
        .sessions
        .get(&req.session_id)
        .map_err(|m| missing(m, &req.session_id))?;
    let mut s = session.lock().unwrap();
    let Some(episode) = s.episode.as_ref().filter(|e| !e.is_done()) else {
        return Err(missing(Missing::Finished, &req.session_id));
    };
    let msg = s
        .setting
        .oracle
        .respond(&episode.conversation(&s.setting.agent))
        .map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the oracle: {e:#}"),
            )
        })?;
    let text = env.texts.completion(&msg).map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("rendering the oracle's move: {e:#}"),
        )
    })?;
    s.last_used = Instant::now();
    Ok(json!({"session_id": req.session_id, "message": msg, "text": text}))
}

async fn close(State(env): State<Env>, body: Result<Bytes, BytesRejection>) -> Response {
    let req: OracleRequest = match http::json_body(body, "a close request ({\"session_id\": …})")
    {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let env2 = env.clone();
    let run = move || -> Result<Value, ApiError> {
        let session = env2
            .sessions
            .get(&req.session_id)
            .map_err(|m| missing(m, &req.session_id))?;
        let mut s = session.lock().unwrap();
        if s.episode.is_none() {
            return Err(missing(Missing::Finished, &req.session_id));
        }
        let mut answer = json!({"session_id": req.session_id, "done": true});
        merge(&mut answer, end_episode(&env2, &req.session_id, &mut s));
        Ok(answer)
    };
    match tokio::task::spawn_blocking(run).await {
        Ok(Ok(v)) => Json(v).into_response(),
        Ok(Err(e)) => e.into_response(),
        Err(e) => blocking_error(e).into_response(),
    }
}
