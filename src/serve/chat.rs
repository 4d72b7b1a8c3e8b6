//! `POST /v1/chat/completions`: render the conversation with the model's chat template, queue it on the
//! engine, and answer with one message or an SSE stream. A forced `tool_choice` runs schema-guided (see
//! `guide`); `auto` parses whatever calls the model writes.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::stream::{self, Stream};
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedReceiver;

use super::engine::{Event, FinishReason, GenRequest, TokenLogprob};
use super::error::ApiError;
use super::guide::Guide;
use super::protocol::{parse_chat, ChatRequest, ToolChoice};
use super::server::{unique_id, unix_time, App};
use super::stream::{finish_reason, logprobs_json, parse_reply, usage_json, ChunkWriter};
use crate::chat::RenderInput;

pub const ENDPOINT: &str = "/v1/chat/completions";

pub async fn chat_completions(
    State(app): State<App>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let started = Instant::now();
    app.metrics
        .counted(ENDPOINT, handle(&app, body, started).await)
}

async fn handle(
    app: &App,
    body: Result<Bytes, BytesRejection>,
    started: Instant,
) -> Result<Response, ApiError> {
    let body = body.map_err(|e| ApiError::new(e.status(), e.body_text()))?;
    let req = parse_chat(&body, app.default_max_tokens)?;
    check_model(app, req.model.as_deref())?;
    let prompt = render_prompt(app, &req)?;
    let rx = submit(app, prompt, &req)?;
    let deadline = started + app.timeout;
    let id = format!("chatcmpl-{}", unique_id());
    if req.stream {
        Ok(Sse::new(sse_stream(app.clone(), req, rx, id, started, deadline)).into_response())
    } else {
        let out = collect(app, rx, started, deadline).await?;
        Ok(Json(completion_json(app, &req, &id, out)).into_response())
    }
}

/// 404 when the request names a model other than the one served.
pub fn check_model(app: &App, model: Option<&str>) -> Result<(), ApiError> {
    match model {
        Some(m) if m != app.model_name => Err(ApiError {
            status: StatusCode::NOT_FOUND,
            message: format!(
                "the model `{m}` does not exist; this server serves `{}`",
                app.model_name
            ),
            param: Some("model".into()),
        }),
        _ => Ok(()),
    }
}

/// The prompt token ids: the template's rendering of messages and tools, with the generation prompt.
pub fn render_prompt(app: &App, req: &ChatRequest) -> Result<Vec<u32>, ApiError> {
    let tools: Option<Vec<Value>> = (!req.tools.is_empty()).then(|| {
        req.tools
            .iter()
            .filter_map(|t| serde_json::to_value(t).ok())
            .collect()
    });
    let input = RenderInput {
        messages: req.messages.clone(),
        tools,
        add_generation_prompt: true,
        kwargs: req.template_kwargs.clone(),
        ..Default::default()
    };
    // A template refuses a conversation it cannot format (raise_exception): that is the client's input.
    let text = app.template.render(&input).map_err(|e| {
        ApiError::field(
            "messages",
            format!("the chat template rejected the conversation: {e:#}"),
        )
    })?;
    let enc = app.tokenizer.encode(text, false).map_err(|e| {
        ApiError::field("messages", format!("cannot tokenize the conversation: {e}"))
    })?;
    Ok(enc.get_ids().to_vec())
}

/// Queues a generation; the receiver yields its events.
pub fn submit(
    app: &App,
    prompt: Vec<u32>,
    req: &ChatRequest,
) -> Result<UnboundedReceiver<Event>, ApiError> {
    if prompt.len() + 1 > app.engine.max_context {
        return Err(ApiError::field(
            "messages",
            format!(
                "the prompt has {} tokens; this model's context is {} tokens",
                prompt.len(),
                app.engine.max_context
            ),
        ));
    }
    let guide = match &req.tool_choice {
        ToolChoice::Required => Some(Guide::tool_call(
            &app.tokenizer,
            app.format,
            &req.tools,
            None,
        )),
        ToolChoice::Named(name) => Some(Guide::tool_call(
            &app.tokenizer,
            app.format,
            &req.tools,
            Some(name),
        )),
        _ => None,
    }
    .transpose()
    .map_err(|e| ApiError::field("tool_choice", e))?;
    let mut params = req.params.clone();
    if !req.ignore_eos {
        params.stop_token_ids.extend(&app.stop_token_ids);
    }
    let tokens_as_ids = req.return_tokens_as_token_ids;
    enqueue(app, prompt, params, req.top_logprobs, tokens_as_ids, guide)
}

/// Queues a generation of already-checked settings; the receiver yields its events. A full queue is
/// 429 (the client may retry), a stopping engine 503.
pub fn enqueue(
    app: &App,
    prompt: Vec<u32>,
    params: crate::model::generation::sampling::SamplingParams,
    top_logprobs: usize,
    tokens_as_ids: bool,
    guide: Option<Guide>,
) -> Result<UnboundedReceiver<Event>, ApiError> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let gen = GenRequest {
        prompt,
        params,
        top_logprobs,
        tokens_as_ids,
        guide,
        events: tx,
    };
    app.engine.submit(gen)?;
    Ok(rx)
}

/// A finished generation.
pub struct Output {
    pub text: String,
    pub logprobs: Vec<TokenLogprob>,
    pub reason: FinishReason,
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
}

fn timeout_error(app: &App) -> ApiError {
    ApiError::new(
        StatusCode::GATEWAY_TIMEOUT,
        format!(
            "the request did not finish within {} s",
            app.timeout.as_secs_f64()
        ),
    )
}

/// Waits for the whole generation, recording latency metrics.
pub async fn collect(
    app: &App,
    mut rx: UnboundedReceiver<Event>,
    started: Instant,
    deadline: Instant,
) -> Result<Output, ApiError> {
    let mut text = String::new();
    let mut logprobs = Vec::new();
    let mut first = true;
    loop {
        let event = tokio::time::timeout_at(deadline.into(), rx.recv())
            .await
            .map_err(|_| timeout_error(app))?;
        match event {
            Some(Event::Text {
                text: t,
                tokens,
                logprobs: lp,
            }) => {
                if first && tokens > 0 {
                    app.metrics.ttft.observe(started.elapsed());
                    first = false;
                }
                text.push_str(&t);
                logprobs.extend(lp);
            }
            Some(Event::Done {
                reason,
                prompt_tokens,
                completion_tokens,
            }) => {
                app.metrics.e2e.observe(started.elapsed());
                return Ok(Output {
                    text,
                    logprobs,
                    reason,
                    prompt_tokens,
                    completion_tokens,
                });
            }
            Some(Event::Error(e)) => return Err(ApiError::field("messages", e)),
            None => {
                return Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the engine stopped before finishing the request",
                ))
            }
        }
    }
}

/// Tools whose calls are parsed out of the reply (none when tool_choice is none).
fn parsed_tools(req: &ChatRequest) -> Option<Vec<Value>> {
    (req.tool_choice != ToolChoice::None && !req.tools.is_empty()).then(|| {
        req.tools
            .iter()
            .filter_map(|t| serde_json::to_value(t).ok())
            .collect()
    })
}

fn completion_json(app: &App, req: &ChatRequest, id: &str, out: Output) -> Value {
    let tools = parsed_tools(req);
    let parsed = parse_reply(&out.text, app.format, tools.as_deref());
    let call_prefix = format!("{}_", unique_id());
    let mut message = json!({"role": "assistant", "content": parsed.content});
    if !parsed.calls.is_empty() {
        let calls: Vec<Value> = parsed
            .calls
            .iter()
            .enumerate()
            .map(|(i, c)| c.to_openai(&format!("call_{call_prefix}{i}")))
            .collect();
        message["tool_calls"] = Value::Array(calls);
        if parsed.content.is_empty() {
            message["content"] = Value::Null;
        }
    }
    let logprobs = req.params.logprobs.then(|| logprobs_json(&out.logprobs));
    json!({"id": id, "object": "chat.completion", "created": unix_time(), "model": app.model_name,
           "choices": [{"index": 0, "message": message, "logprobs": logprobs,
                        "finish_reason": finish_reason(&out.reason, !parsed.calls.is_empty())}],
           "usage": usage_json(out.prompt_tokens, out.completion_tokens)})
}

/// The SSE body: chunks as the engine produces text, `data: [DONE]` at the end. A failure after the
/// stream started is sent as an error object in the stream (vLLM does the same).
fn sse_stream(
    app: App,
    req: ChatRequest,
    rx: UnboundedReceiver<Event>,
    id: String,
    started: Instant,
    deadline: Instant,
) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    let writer = ChunkWriter::new(
        id,
        unix_time(),
        app.model_name.clone(),
        req.include_usage,
        app.format,
        parsed_tools(&req),
        format!("call_{}_", unique_id()),
    );
    let first = vec![writer.start().to_string()];
    let state = StreamState {
        app,
        rx,
        writer,
        pending: first.into(),
        started,
        deadline,
        first_token: true,
        done: false,
    };
    stream::unfold(state, |mut s| async move {
        loop {
            if let Some(chunk) = s.pending.pop_front() {
                return Some((Ok(SseEvent::default().data(chunk)), s));
            }
            if s.done {
                return None;
            }
            s.next_chunks().await;
        }
    })
}

struct StreamState {
    app: App,
    rx: UnboundedReceiver<Event>,
    writer: ChunkWriter,
    /// `data:` payloads ready to send.
    pending: VecDeque<String>,
    started: Instant,
    deadline: Instant,
    first_token: bool,
    done: bool,
}

impl StreamState {
    async fn next_chunks(&mut self) {
        let event = match tokio::time::timeout_at(self.deadline.into(), self.rx.recv()).await {
            Ok(e) => e,
            Err(_) => return self.fail(timeout_error(&self.app)),
        };
        match event {
            Some(Event::Text {
                text,
                tokens,
                logprobs,
            }) => {
                if self.first_token && tokens > 0 {
                    self.app.metrics.ttft.observe(self.started.elapsed());
                    self.first_token = false;
                }
                self.pending.extend(
                    self.writer
                        .text(&text, &logprobs)
                        .iter()
                        .map(Value::to_string),
                );
            }
            Some(Event::Done {
                reason,
                prompt_tokens,
                completion_tokens,
            }) => {
                self.app.metrics.e2e.observe(self.started.elapsed());
                self.pending.extend(
                    self.writer
                        .finish(&reason, prompt_tokens, completion_tokens)
                        .iter()
                        .map(Value::to_string),
                );
                self.pending.push_back("[DONE]".into());
                self.done = true;
            }
            Some(Event::Error(e)) => self.fail(ApiError::new(StatusCode::BAD_REQUEST, e)),
            None => self.fail(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the engine stopped before finishing the request",
            )),
        }
    }

    fn fail(&mut self, e: ApiError) {
        self.pending.push_back(e.body().to_string());
        self.pending.push_back("[DONE]".into());
        self.done = true;
    }
}
