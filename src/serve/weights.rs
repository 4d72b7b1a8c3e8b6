//! `POST /update_weights_from_disk`: load new weights into the running server, as SGLang's endpoint
//! of that name does (`{"model_path": DIR}` in; `{"success", "message", "num_paused_requests"}` out;
//! HTTP 400 with `success: false` when the load fails). An RL trainer that plays its rollouts on this
//! server saves each update's weights to a directory both can read and calls this before the next
//! step's rollouts (`grpo-train --rollout-endpoint`).
//!
//! The update queues behind the requests already accepted, which finish on the old weights; requests
//! after it wait and run on the new ones, so no sequence mixes the two. The cached prompt prefixes
//! go, and `prompt_logprobs` scoring follows the new weights. The tokenizer and chat template stay:
//! the checkpoint must have the same vocabulary.
//!
//! Off unless the server starts with `--enable-weight-updates` (it reads any directory the server
//! can), and behind the API key like `/v1`.

use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::error::ApiError;
use super::server::App;

pub const ENDPOINT: &str = "/update_weights_from_disk";

pub async fn update_weights_from_disk(
    State(app): State<App>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    app.metrics.counted(ENDPOINT, handle(&app, body).await)
}

async fn handle(app: &App, body: Result<Bytes, BytesRejection>) -> Result<Response, ApiError> {
    if !app.weight_updates {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "weight updates are off: start serve with --enable-weight-updates",
        ));
    }
    let body = body.map_err(|e| ApiError::new(e.status(), e.body_text()))?;
    let v: Value = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("the body is not JSON: {e}")))?;
    let dir = match v.get("model_path") {
        Some(Value::String(p)) if !p.is_empty() => PathBuf::from(p),
        _ => {
            return Err(ApiError::field(
                "model_path",
                "model_path must be the checkpoint directory to load, as a string",
            ))
        }
    };
    let done = app.engine.load_weights(dir.clone())?;
    let result = done
        .await
        .unwrap_or_else(|_| Err("the engine stopped before loading the weights".to_string()));
    Ok(match result {
        Ok(()) => {
            app.random_weights.store(false, Relaxed);
            Json(json!({"success": true, "num_paused_requests": 0,
                "message": format!("loaded the weights in {}", dir.display())}))
            .into_response()
        }
        Err(message) => (
            StatusCode::BAD_REQUEST,
            Json(json!({"success": false, "num_paused_requests": 0, "message": message})),
        )
            .into_response(),
    })
}
