//! Reading a `POST /v1/chat/completions` or `/v1/completions` body into typed settings, field by field, so every rejection
//! names the field at fault (`param`) and says what is accepted. Unknown fields are ignored, as vLLM
//! ignores them (clients send vendor extras).

use axum::http::StatusCode;
use serde_json::{Map, Value};

use super::error::ApiError;
use crate::model::generation::sampling::SamplingParams;
use crate::record::Tool;

/// OpenAI allows at most four stop sequences.
const MAX_STOP: usize = 4;
/// OpenAI's limit for `top_logprobs`.
const MAX_TOP_LOGPROBS: usize = 20;

#[derive(Debug, Clone, PartialEq)]
pub enum ToolChoice {
    /// Tools are shown to the model but its output is not parsed for calls.
    None,
    /// The model decides; calls it writes are parsed.
    Auto,
    /// Exactly one call, to a tool the model picks (schema-guided).
    Required,
    /// Exactly one call to this tool (schema-guided).
    Named(String),
}

#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub model: Option<String>,
    /// Messages as JSON, exactly as the chat template receives them.
    pub messages: Vec<Value>,
    pub tools: Vec<Tool>,
    pub tool_choice: ToolChoice,
    pub params: SamplingParams,
    pub top_logprobs: usize,
    /// vLLM's `return_tokens_as_token_ids`: log-prob entries name their tokens `token_id:N`, so a
    /// client can line them up with its own token ids (an RL trainer's views).
    pub return_tokens_as_token_ids: bool,
    pub stream: bool,
    pub include_usage: bool,
    /// vLLM's `chat_template_kwargs` (e.g. `enable_thinking`).
    pub template_kwargs: Map<String, Value>,
    /// vLLM's `ignore_eos`: the end-of-turn tokens do not end generation (stop strings still do),
    /// so a benchmark gets exactly `max_tokens` tokens whatever the weights say.
    pub ignore_eos: bool,
}

/// Parses and validates a request body. `default_max_tokens` applies when the client sets no limit.
pub fn parse_chat(body: &[u8], default_max_tokens: usize) -> Result<ChatRequest, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body is not valid JSON: {e}")))?;
    let Value::Object(obj) = value else {
        return Err(ApiError::bad_request("the body must be a JSON object"));
    };
    let f = Fields(&obj);
    let messages = f.messages()?;
    let tools: Vec<Tool> = match obj.get("tools") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
            ApiError::field("tools", format!("`tools` must be a list of {{\"type\": \"function\", \"function\": {{\"name\", ...}}}}: {e}"))
        })?,
    };
    if let Some(t) = tools
        .iter()
        .find(|t| t.kind != "function" || t.function.name.is_empty())
    {
        return Err(ApiError::field(
            "tools",
            format!(
                "unsupported tool {:?}: only named function tools are served",
                t.function.name
            ),
        ));
    }
    let tool_choice = f.tool_choice(&tools)?;
    f.single_choice()?;
    let max_tokens = match f.uint("max_completion_tokens")? {
        Some(n) => Some(n),
        None => f.uint("max_tokens")?,
    };
    let logprobs = f.bool("logprobs")?.unwrap_or(false);
    let top_logprobs = f.uint("top_logprobs")?.unwrap_or(0);
    let return_tokens_as_token_ids = f.bool("return_tokens_as_token_ids")?.unwrap_or(false);
    if top_logprobs > MAX_TOP_LOGPROBS {
        return Err(ApiError::field(
            "top_logprobs",
            format!("top_logprobs must be between 0 and {MAX_TOP_LOGPROBS}"),
        ));
    }
    if top_logprobs > 0 && !logprobs {
        return Err(ApiError::field(
            "top_logprobs",
            "top_logprobs needs \"logprobs\": true",
        ));
    }
    let params = f.sampling(max_tokens.unwrap_or(default_max_tokens), logprobs)?;
    let stream = f.bool("stream")?.unwrap_or(false);
    let ignore_eos = f.bool("ignore_eos")?.unwrap_or(false);
    let include_usage = match obj.get("stream_options") {
        None | Some(Value::Null) => false,
        Some(Value::Object(o)) => Fields(o)
            .bool("include_usage")
            .map_err(|e| ApiError {
                param: Some("stream_options.include_usage".into()),
                ..e
            })?
            .unwrap_or(false),
        Some(_) => {
            return Err(ApiError::field(
                "stream_options",
                "stream_options must be an object",
            ))
        }
    };
    let template_kwargs = match obj.get("chat_template_kwargs") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(o)) => o.clone(),
        Some(_) => {
            return Err(ApiError::field(
                "chat_template_kwargs",
                "chat_template_kwargs must be an object",
            ))
        }
    };
    let model = f.model()?;
    Ok(ChatRequest {
        model,
        messages,
        tools,
        tool_choice,
        params,
        top_logprobs,
        return_tokens_as_token_ids,
        stream,
        include_usage,
        template_kwargs,
        ignore_eos,
    })
}

/// One prompt of a `/v1/completions` request.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptInput {
    Text(String),
    /// Token ids as given (vLLM accepts them; a trainer sends exactly the tokens it sampled).
    Ids(Vec<u32>),
}

#[derive(Debug, Clone)]
pub struct CompletionRequest {
    pub model: Option<String>,
    /// One choice per prompt, in order.
    pub prompts: Vec<PromptInput>,
    /// `max_tokens` 0 generates nothing (with `echo`, the prompt alone comes back).
    pub params: SamplingParams,
    pub generate: bool,
    /// The legacy `logprobs` integer: log-probs of the returned tokens and this many alternatives.
    pub logprobs: Option<usize>,
    /// Return the prompt before the completion (and, with `logprobs`, its tokens' log-probs).
    pub echo: bool,
    /// vLLM's `prompt_logprobs`: per prompt token after the first, its log-prob and this many
    /// alternatives.
    pub prompt_logprobs: Option<usize>,
    /// As [`ChatRequest::ignore_eos`].
    pub ignore_eos: bool,
}

/// Parses and validates a `POST /v1/completions` body (OpenAI's legacy completions with vLLM's
/// `prompt_logprobs`). Streaming is refused: the endpoint exists for scoring and plain completions.
pub fn parse_completion(
    body: &[u8],
    default_max_tokens: usize,
) -> Result<CompletionRequest, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body is not valid JSON: {e}")))?;
    let Value::Object(obj) = value else {
        return Err(ApiError::bad_request("the body must be a JSON object"));
    };
    let f = Fields(&obj);
    let prompts = f.prompts()?;
    f.single_choice()?;
    let cap = |key: &str| -> Result<Option<usize>, ApiError> {
        match f.get(key) {
            None => Ok(None),
            Some(v) => match v.as_i64() {
                Some(k) if (0..=MAX_TOP_LOGPROBS as i64).contains(&k) => Ok(Some(k as usize)),
                Some(-1) => Err(ApiError::field(
                    key,
                    format!(
                        "{key}=-1 (the whole vocabulary) is not served; this server's max_logprobs \
                         is {MAX_TOP_LOGPROBS}"
                    ),
                )),
                _ => Err(ApiError::field(
                    key,
                    format!("{key} must be an integer between 0 and {MAX_TOP_LOGPROBS}, got {v}"),
                )),
            },
        }
    };
    let logprobs = cap("logprobs")?;
    let prompt_logprobs = cap("prompt_logprobs")?;
    let echo = f.bool("echo")?.unwrap_or(false);
    if f.bool("stream")?.unwrap_or(false) {
        let message = if prompt_logprobs.is_some() {
            "`prompt_logprobs` are not available when `stream=True`."
        } else {
            "this server does not stream /v1/completions; use stream=false or /v1/chat/completions"
        };
        return Err(ApiError::field("stream", message));
    }
    let max_tokens = f.uint("max_tokens")?.unwrap_or(default_max_tokens);
    // max_tokens 0 is a scoring request; the sampler's own checks need at least one token.
    let params = f.sampling(max_tokens.max(1), logprobs.is_some())?;
    Ok(CompletionRequest {
        model: f.model()?,
        prompts,
        params,
        generate: max_tokens > 0,
        logprobs,
        echo,
        prompt_logprobs,
        ignore_eos: f.bool("ignore_eos")?.unwrap_or(false),
    })
}

/// Typed access to the body's fields with errors that name them.
struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    /// The sampling settings both endpoints share, validated.
    fn sampling(&self, max_tokens: usize, logprobs: bool) -> Result<SamplingParams, ApiError> {
        let params = SamplingParams {
            temperature: self.number("temperature")?.unwrap_or(1.0) as f32,
            top_p: self.number("top_p")?.unwrap_or(1.0) as f32,
            top_k: self.top_k()?,
            seed: self.seed()?,
            max_tokens,
            stop: self.stop()?,
            stop_token_ids: Vec::new(),
            logprobs,
        };
        if params.temperature > 2.0 {
            return Err(ApiError::field(
                "temperature",
                "temperature must be between 0 and 2",
            ));
        }
        params.validate().map_err(|e| {
            let msg = e.to_string();
            let param = ["temperature", "top_p", "max_tokens", "stop"]
                .into_iter()
                .find(|p| msg.starts_with(p));
            ApiError {
                status: StatusCode::BAD_REQUEST,
                message: msg.clone(),
                param: param.map(str::to_string),
            }
        })?;
        Ok(params)
    }

    fn model(&self) -> Result<Option<String>, ApiError> {
        match self.get("model") {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(ApiError::field("model", "model must be a string")),
        }
    }

    /// `n` other than 1 is refused: one choice per prompt.
    fn single_choice(&self) -> Result<(), ApiError> {
        match self.uint("n")? {
            Some(n) if n != 1 => Err(ApiError {
                status: StatusCode::UNPROCESSABLE_ENTITY,
                message: format!("n={n} is not supported; this server returns one choice"),
                param: Some("n".into()),
            }),
            _ => Ok(()),
        }
    }

    fn number(&self, key: &str) -> Result<Option<f64>, ApiError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| ApiError::field(key, format!("{key} must be a number, got {v}"))),
        }
    }

    fn uint(&self, key: &str) -> Result<Option<usize>, ApiError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_u64().map(|n| Some(n as usize)).ok_or_else(|| {
                ApiError::field(
                    key,
                    format!("{key} must be a non-negative integer, got {v}"),
                )
            }),
        }
    }

    fn bool(&self, key: &str) -> Result<Option<bool>, ApiError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_bool().map(Some).ok_or_else(|| {
                ApiError::field(key, format!("{key} must be true or false, got {v}"))
            }),
        }
    }

    /// `prompt`: a string, a list of token ids, or a list of either (one choice each).
    fn prompts(&self) -> Result<Vec<PromptInput>, ApiError> {
        let bad = || {
            ApiError::field(
                "prompt",
                "prompt must be a string, a list of token ids, or a non-empty list of strings or of \
                 token-id lists",
            )
        };
        let ids = |v: &Vec<Value>| -> Result<PromptInput, ApiError> {
            let ids = v
                .iter()
                .map(|x| {
                    x.as_u64()
                        .filter(|&n| n <= u64::from(u32::MAX))
                        .map(|n| n as u32)
                })
                .collect::<Option<Vec<u32>>>()
                .ok_or_else(|| {
                    ApiError::field("prompt", "token ids must be non-negative integers")
                })?;
            if ids.is_empty() {
                return Err(ApiError::field(
                    "prompt",
                    "a prompt needs at least one token",
                ));
            }
            Ok(PromptInput::Ids(ids))
        };
        match self.get("prompt") {
            None => Err(ApiError::field("prompt", "prompt is required")),
            Some(Value::String(s)) => Ok(vec![PromptInput::Text(s.clone())]),
            Some(Value::Array(a)) if a.is_empty() => Err(bad()),
            Some(Value::Array(a)) if a.iter().all(Value::is_number) => Ok(vec![ids(a)?]),
            Some(Value::Array(a)) => a
                .iter()
                .map(|p| match p {
                    Value::String(s) => Ok(PromptInput::Text(s.clone())),
                    Value::Array(x) => ids(x),
                    _ => Err(bad()),
                })
                .collect(),
            Some(_) => Err(bad()),
        }
    }

    /// vLLM's extra; -1 and 0 both mean off.
    fn top_k(&self) -> Result<usize, ApiError> {
        match self.get("top_k") {
            None => Ok(0),
            Some(v) => match v.as_i64() {
                Some(k) if k >= -1 => Ok(k.max(0) as usize),
                _ => Err(ApiError::field(
                    "top_k",
                    format!("top_k must be an integer >= -1 (-1 or 0 = off), got {v}"),
                )),
            },
        }
    }

    /// Any integer; without one the stream is seeded from 0, so an unseeded request is reproducible too.
    fn seed(&self) -> Result<u64, ApiError> {
        match self.get("seed") {
            None => Ok(0),
            Some(v) => v
                .as_i64()
                .map(|s| s as u64)
                .or_else(|| v.as_u64())
                .ok_or_else(|| {
                    ApiError::field("seed", format!("seed must be an integer, got {v}"))
                }),
        }
    }

    fn stop(&self) -> Result<Vec<String>, ApiError> {
        let stops = match self.get("stop") {
            None => Vec::new(),
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .map(|s| s.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    ApiError::field("stop", "stop must be a string or a list of strings")
                })?,
            Some(v) => {
                return Err(ApiError::field(
                    "stop",
                    format!("stop must be a string or a list of strings, got {v}"),
                ))
            }
        };
        if stops.len() > MAX_STOP {
            return Err(ApiError::field(
                "stop",
                format!("at most {MAX_STOP} stop sequences are allowed"),
            ));
        }
        Ok(stops)
    }

    fn messages(&self) -> Result<Vec<Value>, ApiError> {
        let list = match self.get("messages") {
            None => return Err(ApiError::field("messages", "messages is required")),
            Some(Value::Array(a)) if !a.is_empty() => a,
            Some(_) => {
                return Err(ApiError::field(
                    "messages",
                    "messages must be a non-empty list",
                ))
            }
        };
        for (i, m) in list.iter().enumerate() {
            let role = m.get("role").and_then(Value::as_str);
            match role {
                Some("system" | "developer" | "user" | "assistant" | "tool") => {}
                _ => {
                    return Err(ApiError::field(
                        &format!("messages[{i}].role"),
                        format!(
                        "messages[{i}] needs a role of system, developer, user, assistant or tool"
                    ),
                    ))
                }
            }
        }
        list.iter()
            .enumerate()
            .map(|(i, m)| normalize(i, m))
            .collect()
    }

    fn tool_choice(&self, tools: &[Tool]) -> Result<ToolChoice, ApiError> {
        let none_given = if tools.is_empty() {
            ToolChoice::None
        } else {
            ToolChoice::Auto
        };
        let choice = match self.get("tool_choice") {
            None => none_given,
            Some(Value::String(s)) => match s.as_str() {
                "none" => ToolChoice::None,
                "auto" => ToolChoice::Auto,
                "required" => ToolChoice::Required,
                other => return Err(ApiError::field("tool_choice", format!("tool_choice must be none, auto, required or a function, got {other:?}"))),
            },
            Some(v) => match v.pointer("/function/name").and_then(Value::as_str) {
                Some(name) if v.get("type").and_then(Value::as_str) == Some("function") => ToolChoice::Named(name.to_string()),
                _ => return Err(ApiError::field("tool_choice", "a tool_choice object must be {\"type\": \"function\", \"function\": {\"name\": ...}}")),
            },
        };
        let needs_tools = matches!(choice, ToolChoice::Required | ToolChoice::Named(_));
        if needs_tools && tools.is_empty() {
            return Err(ApiError::field(
                "tool_choice",
                "tool_choice requires `tools`",
            ));
        }
        if let ToolChoice::Named(name) = &choice {
            if !tools.iter().any(|t| &t.function.name == name) {
                return Err(ApiError::field(
                    "tool_choice",
                    format!("tool_choice names {name:?}, which is not in `tools`"),
                ));
            }
        }
        Ok(choice)
    }
}

/// Message content as string-content chat templates expect it, as vLLM prepares it: a missing or null
/// content (an assistant turn that only called tools) becomes "", and a list of text parts is joined.
fn normalize(i: usize, message: &Value) -> Result<Value, ApiError> {
    let mut m = message.clone();
    let param = format!("messages[{i}].content");
    let text = match m.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| {
                match (
                    p.get("type").and_then(Value::as_str),
                    p.get("text").and_then(Value::as_str),
                ) {
                    (Some("text"), Some(t)) => Ok(t),
                    _ => Err(ApiError::field(
                        &param,
                        format!("{param}: only text parts are supported"),
                    )),
                }
            })
            .collect::<Result<Vec<_>, _>>()?
            .join(""),
        Some(_) => {
            return Err(ApiError::field(
                &param,
                format!("{param} must be a string, a list of parts or null"),
            ))
        }
    };
    m["content"] = Value::String(text);
    Ok(m)
}
