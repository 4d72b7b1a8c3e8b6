//! `POST /v1/completions`: OpenAI's legacy text completions with vLLM's extras — prompts as text or
//! token ids, `echo`, the legacy `logprobs` integer, and `prompt_logprobs` (the log-probability of
//! every prompt token after the first, and the top k, in vLLM's shape). A request with
//! `prompt_logprobs` and `max_tokens: 0` is a pure scoring request: one teacher-forced forward, no
//! generation. Non-streaming only.

use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use super::chat::{check_model, collect, enqueue, Output};
use super::engine::{FinishReason, TokenLogprob};
use super::error::ApiError;
use super::prompt_logprobs::{prompt_logprobs_json, PositionLogprobs};
use super::protocol::{parse_completion, CompletionRequest, PromptInput};
use super::server::{unique_id, unix_time, App};
use super::stream::{finish_reason, usage_json};

pub const ENDPOINT: &str = "/v1/completions";

pub async fn completions(State(app): State<App>, body: Result<Bytes, BytesRejection>) -> Response {
    let started = Instant::now();
    app.metrics
        .counted(ENDPOINT, handle(&app, body, started).await)
}

/// One prompt on its way: its ids, and what came back for it.
struct Prompt {
    ids: Vec<u32>,
    text: String,
    scored: Option<Vec<PositionLogprobs>>,
    output: Option<Output>,
}

async fn handle(
    app: &App,
    body: Result<Bytes, BytesRejection>,
    started: Instant,
) -> Result<Response, ApiError> {
    let body = body.map_err(|e| ApiError::new(e.status(), e.body_text()))?;
    let req = parse_completion(&body, app.default_max_tokens)?;
    check_model(app, req.model.as_deref())?;
    let mut prompts = req
        .prompts
        .iter()
        .map(|p| prepare(app, p, &req))
        .collect::<Result<Vec<_>, ApiError>>()?;

    // Prompt scoring: asked for directly, or needed for the echoed prompt's legacy log-probs.
    let echo_top = if req.echo { req.logprobs } else { None };
    let top = req.prompt_logprobs.max(echo_top);
    if let Some(top) = top {
        let scorer = app.scorer.get().cloned().ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_IMPLEMENTED,
                "this server was started without prompt scoring (prompt_logprobs)",
            )
        })?;
        let ids: Vec<Vec<u32>> = prompts.iter().map(|p| p.ids.clone()).collect();
        let scored = tokio::task::spawn_blocking(move || {
            ids.iter()
                .map(|p| scorer.score(p, top))
                .collect::<anyhow::Result<Vec<_>>>()
        })
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
        .map_err(|e| ApiError::field("prompt", format!("{e:#}")))?;
        for (p, s) in prompts.iter_mut().zip(scored) {
            p.scored = Some(s);
        }
    }

    if req.generate {
        // Queue every prompt before waiting on any, so the engine decodes them together.
        let mut params = req.params.clone();
        if !req.ignore_eos {
            params.stop_token_ids.extend(&app.stop_token_ids);
        }
        let receivers = prompts
            .iter()
            .map(|p| {
                enqueue(
                    app,
                    p.ids.clone(),
                    params.clone(),
                    req.logprobs.unwrap_or(0),
                    false,
                    None,
                )
            })
            .collect::<Result<Vec<_>, ApiError>>()?;
        let deadline = started + app.timeout;
        for (p, rx) in prompts.iter_mut().zip(receivers) {
            p.output = Some(collect(app, rx, started, deadline).await?);
        }
    }

    let choices: Vec<Value> = prompts
        .iter()
        .enumerate()
        .map(|(i, p)| choice(app, &req, i, p))
        .collect();
    let prompt_tokens: usize = prompts.iter().map(|p| p.ids.len()).sum();
    let completion_tokens: usize = prompts
        .iter()
        .filter_map(|p| p.output.as_ref())
        .map(|o| o.completion_tokens)
        .sum();
    Ok(Json(json!({
        "id": format!("cmpl-{}", unique_id()), "object": "text_completion", "created": unix_time(),
        "model": app.model_name, "choices": choices,
        "usage": usage_json(prompt_tokens, completion_tokens)
    }))
    .into_response())
}

/// Tokenizes a text prompt (as the chat endpoint does, without added special tokens) or checks the
/// ids of a token prompt, and checks that it and the completion fit the context.
fn prepare(app: &App, prompt: &PromptInput, req: &CompletionRequest) -> Result<Prompt, ApiError> {
    let (ids, text) = match prompt {
        PromptInput::Text(t) => {
            let enc = app.tokenizer.encode(t.as_str(), false).map_err(|e| {
                ApiError::field("prompt", format!("cannot tokenize the prompt: {e}"))
            })?;
            (enc.get_ids().to_vec(), t.clone())
        }
        PromptInput::Ids(ids) => {
            let vocab = app.tokenizer.get_vocab_size(true);
            if let Some(bad) = ids.iter().find(|&&id| id as usize >= vocab) {
                return Err(ApiError::field(
                    "prompt",
                    format!("token id {bad} is outside the vocabulary ({vocab} tokens)"),
                ));
            }
            let text = app.tokenizer.decode(ids, false).unwrap_or_default();
            (ids.clone(), text)
        }
    };
    if ids.is_empty() {
        return Err(ApiError::field("prompt", "the prompt has no tokens"));
    }
    let room = usize::from(req.generate);
    if ids.len() + room > app.engine.max_context {
        return Err(ApiError::field(
            "prompt",
            format!(
                "the prompt has {} tokens; this model's context is {} tokens",
                ids.len(),
                app.engine.max_context
            ),
        ));
    }
    Ok(Prompt {
        ids,
        text,
        scored: None,
        output: None,
    })
}

fn choice(app: &App, req: &CompletionRequest, index: usize, p: &Prompt) -> Value {
    let generated = p.output.as_ref().map_or("", |o| o.text.as_str());
    let text = if req.echo {
        format!("{}{generated}", p.text)
    } else {
        generated.to_string()
    };
    let logprobs = req.logprobs.map(|k| legacy_logprobs(app, req.echo, k, p));
    let prompt_logprobs = match (req.prompt_logprobs, &p.scored) {
        (Some(k), Some(rows)) => prompt_logprobs_json(&app.tokenizer, &truncated(rows, k)),
        _ => Value::Null,
    };
    // Nothing generated (max_tokens 0) stops at the length limit, as vLLM reports it.
    let reason = p
        .output
        .as_ref()
        .map_or(FinishReason::Length, |o| o.reason.clone());
    json!({"index": index, "text": text, "logprobs": logprobs,
           "finish_reason": finish_reason(&reason, false), "stop_reason": Value::Null,
           "prompt_logprobs": prompt_logprobs})
}

/// The rows with at most `k` alternatives each (one scoring pass serves both `prompt_logprobs` and
/// the echo's `logprobs`, at the larger k).
fn truncated(rows: &[PositionLogprobs], k: usize) -> Vec<PositionLogprobs> {
    rows.iter()
        .map(|r| PositionLogprobs {
            top: r.top.iter().take(k).copied().collect(),
            ..r.clone()
        })
        .collect()
}

/// OpenAI's legacy `logprobs` object over the returned tokens — with `echo`, the prompt's first (no
/// log-prob: nothing precedes it), the rest of the prompt, then the completion: `tokens`,
/// `token_logprobs`, `top_logprobs` (`{token: logprob}` of the `k` best) and `text_offset` (character
/// offsets into the returned text).
fn legacy_logprobs(app: &App, echo: bool, k: usize, p: &Prompt) -> Value {
    let piece = |id: u32| app.tokenizer.decode(&[id], false).unwrap_or_default();
    let mut entries: Vec<(String, Value, Value)> = Vec::new();
    if echo {
        entries.push((piece(p.ids[0]), Value::Null, Value::Null));
        for r in p.scored.as_deref().unwrap_or_default() {
            let top: Map<String, Value> = r
                .top
                .iter()
                .take(k)
                .map(|(id, lp)| (piece(*id), json!(lp)))
                .collect();
            entries.push((piece(r.token), json!(r.logprob), Value::Object(top)));
        }
    }
    let generated: &[TokenLogprob] = p.output.as_ref().map_or(&[][..], |o| o.logprobs.as_slice());
    for l in generated {
        let top: Map<String, Value> = l.top.iter().map(|(t, lp)| (t.clone(), json!(lp))).collect();
        entries.push((l.token.clone(), json!(l.logprob), Value::Object(top)));
    }
    let mut offset = 0;
    let mut offsets = Vec::new();
    for (t, _, _) in &entries {
        offsets.push(offset);
        offset += t.chars().count();
    }
    json!({
        "tokens": entries.iter().map(|e| e.0.clone()).collect::<Vec<_>>(),
        "token_logprobs": entries.iter().map(|e| e.1.clone()).collect::<Vec<_>>(),
        "top_logprobs": entries.iter().map(|e| e.2.clone()).collect::<Vec<_>>(),
        "text_offset": offsets,
    })
}
