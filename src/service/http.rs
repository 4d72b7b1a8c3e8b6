//! What the environment and reward services share over HTTP, on the stack `serve` uses (axum on
//! tokio): an optional API key (`Authorization: Bearer KEY`; `/health` stays open for probes), a body
//! size limit (413 before the body is read in full), JSON bodies whose errors say what is wrong (400),
//! a JSON 404 for unknown routes, loopback bind by default, and graceful shutdown on SIGTERM/Ctrl-C.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde::de::DeserializeOwned;
use tokio::net::TcpListener;

use crate::serve::error::ApiError;

/// Transport settings of a service.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Required as `Authorization: Bearer KEY` on every route but `/health`, when set.
    pub api_key: Option<String>,
    /// Largest request body; larger ones get 413.
    pub max_body_bytes: usize,
}

/// `routes` (which must not include `/health`) behind the key check, plus `/health`, a JSON 404
/// and the body limit.
pub fn finish(routes: Router, health: Router, opts: &HttpOptions) -> Router {
    let key: Option<Arc<str>> = opts.api_key.as_deref().map(Arc::from);
    routes
        .route_layer(middleware::from_fn_with_state(key, require_key))
        .merge(health)
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(opts.max_body_bytes))
}

async fn require_key(State(key): State<Option<Arc<str>>>, req: Request, next: Next) -> Response {
    if let Some(key) = key {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if given != Some(&*key) {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "invalid or missing API key (send Authorization: Bearer KEY)",
            )
            .into_response();
        }
    }
    next.run(req).await
}

async fn not_found(req: Request) -> Response {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("no route for {} {}", req.method(), req.uri().path()),
    )
    .into_response()
}

/// The body as `T`: 413 when it is over the limit, 400 naming what does not parse.
pub fn json_body<T: DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
    what: &str,
) -> Result<T, ApiError> {
    let body = body.map_err(|e| ApiError::new(e.status(), e.body_text()))?;
    serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("the body is not {what}: {e}")))
}

/// A service running in the background of the current tokio runtime (tests, the load test).
pub struct Running {
    pub addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    pub async fn start(router: Router, addr: SocketAddr) -> std::io::Result<Running> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (stop, rx) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(run(listener, router, async {
            let _ = rx.await;
        }));
        Ok(Running { addr, stop, task })
    }

    /// Graceful shutdown: returns once every accepted request has been answered.
    pub async fn shutdown(self) -> std::io::Result<()> {
        let _ = self.stop.send(());
        self.task.await.map_err(std::io::Error::other)?
    }
}

async fn run(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

/// Serves the router `make` builds (inside the runtime, so it may spawn background tasks) on
/// `host:port` until SIGTERM or Ctrl-C; `banner` is printed on stderr with the bound address.
pub fn serve_until_signal(
    make: impl FnOnce() -> Router,
    host: &str,
    port: u16,
    banner: &str,
) -> Result<()> {
    let addr: SocketAddr = format!("{host}:{port}")
        .parse()
        .with_context(|| format!("bad --host/--port {host}:{port}"))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        eprintln!("{banner} on http://{}", listener.local_addr()?);
        run(listener, make(), crate::serve::cli::shutdown_signal()).await?;
        anyhow::Ok(())
    })
}
