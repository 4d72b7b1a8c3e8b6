//! `serve`: an OpenAI-compatible HTTP server running the model with continuous batching, plus agent
//! mode (the complete harness-driven host behind `POST /v1/agent`).
//!
//! Layout: [`engine`] (the batching loop that owns the model) · [`model`] (the burn model as an engine
//! step) · [`piece_budget`] (chunked prefill's tokens per step) · [`detok`] (text deltas and stop strings) · [`guide`] (schema-guided forced tool calls) ·
//! [`protocol`] (request parsing) · [`chat`] and [`stream`] (the chat endpoint and its SSE chunks) ·
//! [`completions`] (legacy completions with vLLM's `prompt_logprobs`, scored by [`prompt_logprobs`]) ·
//! [`agent`] · [`weights`] (loading new weights while serving) · [`server`] (routes, limits, shutdown) · [`auth`] (the API key check) · [`metrics`] · [`error`] · [`cli`].

pub mod agent;
pub mod auth;
pub mod batch;
pub mod chat;
pub mod cli;
pub mod completions;
pub mod detok;
pub mod engine;
pub mod error;
pub mod guide;
pub mod metrics;
pub mod model;
pub mod mtp;
pub mod piece_budget;
pub mod prompt_logprobs;
pub mod protocol;
pub mod server;
pub mod stream;
pub mod weights;

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tokenizers::Tokenizer;

use crate::chat::{ChatTemplate, ToolCallFormat};
use engine::{EngineConfig, StepModel};
use metrics::Metrics;
use server::{App, AppState};

/// Settings of one server instance apart from the model itself.
#[derive(Debug, Clone)]
pub struct AppOptions {
    pub model_name: String,
    pub random_weights: bool,
    /// Whether `POST /update_weights_from_disk` may load new weights.
    pub weight_updates: bool,
    pub format: ToolCallFormat,
    pub timeout: Duration,
    pub default_max_tokens: usize,
    pub api_key: Option<String>,
    pub engine: EngineConfig,
}

/// Starts the engine on `model` and assembles the shared state the routes serve from.
pub fn build_app<M: StepModel>(
    model: M,
    tokenizer: Tokenizer,
    template: ChatTemplate,
    options: &AppOptions,
    agent: Option<agent::AgentService>,
) -> (App, JoinHandle<()>) {
    let metrics = Arc::new(Metrics::default());
    let tokenizer = Arc::new(tokenizer);
    // Those the tokenizer has end generation.
    let stop_token_ids = crate::chat::END_TOKENS
        .iter()
        .filter_map(|t| tokenizer.token_to_id(t))
        .collect();
    let (engine, thread) = engine::spawn(model, tokenizer.clone(), options.engine, metrics.clone());
    let app = Arc::new(AppState {
        engine,
        tokenizer,
        template,
        format: options.format,
        model_name: options.model_name.clone(),
        random_weights: options.random_weights.into(),
        weight_updates: options.weight_updates,
        metrics,
        timeout: options.timeout,
        default_max_tokens: options.default_max_tokens,
        stop_token_ids,
        api_key: options.api_key.clone(),
        agent,
        created: server::unix_time(),
        scorer: Default::default(),
    });
    (app, thread)
}
