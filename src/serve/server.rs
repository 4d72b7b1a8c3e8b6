//! The HTTP server: routes, shared state, API-key check, body limit and graceful shutdown.
//!
//! `/v1/*` needs `Authorization: Bearer KEY` when a key is set (as vLLM's `--api-key`); `/health` and
//! `/metrics` stay open for probes and scrapers. Bodies over the limit get 413 before they are read in
//! full. Shutdown stops accepting connections, lets in-flight requests finish, then lets the engine
//! drain and stop.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use tokenizers::Tokenizer;
use tokio::net::TcpListener;

use super::agent::{self, AgentService};
use super::chat;
use super::completions;
use super::engine::EngineHandle;
use super::error::ApiError;
use super::metrics::Metrics;
use super::prompt_logprobs::PromptScorer;
use super::weights;
use crate::chat::{ChatTemplate, ToolCallFormat};

/// Everything a request handler reads.
pub struct AppState {
    pub engine: EngineHandle,
    pub tokenizer: Arc<Tokenizer>,
    pub template: ChatTemplate,
    pub format: ToolCallFormat,
    pub model_name: String,
    /// The weights are random (a preset, not a checkpoint): said in `/v1/models` and `/health`.
    pub random_weights: AtomicBool,
    /// `POST /update_weights_from_disk` may load new weights (`serve --enable-weight-updates`).
    pub weight_updates: bool,
    pub metrics: Arc<Metrics>,
    pub timeout: Duration,
    pub default_max_tokens: usize,
    /// End-of-turn tokens of the tokenizer (`<|im_end|>`, `<|endoftext|>`).
    pub stop_token_ids: Vec<u32>,
    pub api_key: Option<String>,
    pub agent: Option<AgentService>,
    pub created: u64,
    /// Scores prompts for `prompt_logprobs` on a copy of the served weights; set once by whoever
    /// built the model (the engine owns the model itself). Unset: those requests get 501.
    pub scorer: OnceLock<Arc<dyn PromptScorer>>,
}

pub type App = Arc<AppState>;

/// HTTP-level limits.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    pub max_body_bytes: usize,
}

pub fn router(app: App, limits: &HttpLimits) -> Router {
    let v1 = Router::new()
        .route(chat::ENDPOINT, post(chat::chat_completions))
        .route(completions::ENDPOINT, post(completions::completions))
        .route(agent::ENDPOINT, post(agent::agent_turn))
        .route("/v1/models", get(models))
        .route(weights::ENDPOINT, post(weights::update_weights_from_disk))
        .route_layer(middleware::from_fn_with_state(app.clone(), require_key));
    Router::new()
        .merge(v1)
        .route("/health", get(health))
        .route("/v1/health", get(health))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(limits.max_body_bytes))
        .with_state(app)
}

/// Serves on `listener` until `shutdown` resolves, then finishes the requests in flight.
pub async fn run(
    listener: TcpListener,
    app: App,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(app, &limits))
        .with_graceful_shutdown(shutdown)
        .await
}

/// A server running in the background of the current tokio runtime (tests, benches, the load test).
pub struct RunningServer {
    pub addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl RunningServer {
    pub async fn start(
        app: App,
        limits: HttpLimits,
        addr: SocketAddr,
    ) -> std::io::Result<RunningServer> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (stop, rx) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(run(listener, app, limits, async {
            let _ = rx.await;
        }));
        Ok(RunningServer { addr, stop, task })
    }

    /// Graceful shutdown: returns once every accepted request has been answered.
    pub async fn shutdown(self) -> std::io::Result<()> {
        let _ = self.stop.send(());
        self.task.await.map_err(std::io::Error::other)?
    }
}

async fn require_key(State(app): State<App>, req: Request, next: Next) -> Response {
    if let Some(key) = &app.api_key {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| super::auth::key_matches(g.as_bytes(), key.as_bytes())) {
            app.metrics.count_request(req.uri().path(), 401);
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "invalid or missing API key (send Authorization: Bearer KEY)",
            )
            .into_response();
        }
    }
    next.run(req).await
}

async fn health(State(app): State<App>) -> Response {
    Json(json!({"status": "ok", "model": app.model_name, "random_weights": app.random_weights.load(Relaxed)}))
        .into_response()
}

async fn models(State(app): State<App>) -> Response {
    app.metrics.count_request("/v1/models", 200);
    Json(json!({"object": "list", "data": [{
        "id": app.model_name, "object": "model", "created": app.created, "owned_by": "hat",
        "root": app.model_name, "parent": null, "max_model_len": app.engine.max_context,
        "random_weights": app.random_weights.load(Relaxed)}]}))
    .into_response()
}

async fn metrics(State(app): State<App>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        app.metrics.render(),
    )
        .into_response()
}

async fn not_found(State(app): State<App>, req: Request) -> Response {
    app.metrics.count_request("other", 404);
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("no route for {} {}", req.method(), req.uri().path()),
    )
    .into_response()
}

pub fn unix_time() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A process-unique id for completions and tool calls (time plus a counter; not secret).
pub fn unique_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{:x}{:08x}", COUNTER.fetch_add(1, Relaxed), nanos)
}
