//! Sending one replay request and timing it, client-side as vLLM's benchmark does: the clock starts
//! just before the POST; TTFT is the first chunk that carries content or a tool call; ITL is every gap
//! between later chunks; E2E ends at the last chunk. Plain mode streams `/v1/chat/completions` from any
//! OpenAI-compatible server; agent mode posts the task record to `/v1/agent` (one response, no TTFT);
//! script mode plays a recorded agent turn call by call (see [`Mode::Script`]).
//! Each request goes to one of the target's endpoints: the least busy, or the one earlier requests of
//! the same replay line went to ([`crate::policy::endpoints`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Map, Value};

use super::set::Entry;
use super::stats::Measured;
use crate::policy::endpoints::EndpointPool;
use crate::record::{Content, FunctionCall, Message, Role, ToolCall};
use crate::sim::success;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// One streamed chat completion per request (`request` of the replay line).
    Plain,
    /// The complete agent turn via `POST /v1/agent` (HAT's serve only).
    Agent,
    /// A recorded agent turn (a teacher's trajectory) played call by call: each of its assistant
    /// messages is one streamed chat completion of the conversation before it, `max_tokens` its
    /// length and `ignore_eos` set, so the server does the work that turn took whatever its
    /// weights say. Any OpenAI-compatible server that honours vLLM's `ignore_eos`.
    Script,
}

#[derive(Debug, Clone)]
pub struct Target {
    /// Server roots, e.g. `http://127.0.0.1:8000`: one, or replicas of one model to balance over.
    pub endpoints: Arc<EndpointPool>,
    pub api_key: Option<String>,
    pub model: String,
    pub mode: Mode,
    pub max_tokens: usize,
    pub temperature: f64,
    pub seed: u64,
    pub timeout: Duration,
}

/// Sends `entry` (the `index`-th request, seeded by it) and measures it; `t0` is the benchmark start.
/// The replay line's id is its session: repeats of a line go where its first request went (its prompt
/// is in that server's prefix cache).
pub async fn send(
    client: &reqwest::Client,
    target: &Target,
    entry: &Entry,
    index: usize,
    t0: Instant,
) -> Measured {
    let endpoint = target.endpoints.pick(Some(&entry.record.id));
    let base = endpoint.url();
    let start = Instant::now();
    let mut m = Measured {
        id: entry.record.id.clone(),
        intent: entry.intent(),
        start_s: start.duration_since(t0).as_secs_f64(),
        endpoint: base.to_string(),
        ..Measured::default()
    };
    let seed = target.seed.wrapping_add(index as u64);
    let result = match target.mode {
        Mode::Plain => plain(client, target, base, entry, seed, start, &mut m).await,
        Mode::Agent => agent(client, target, base, entry, seed, &mut m).await,
        Mode::Script => scripted(client, target, base, entry, seed, start, &mut m).await,
    };
    m.e2e_ms = start.elapsed().as_secs_f64() * 1000.0;
    drop(endpoint);
    if let Err(e) = result {
        m.ok = false;
        m.error = e;
    }
    m
}

fn request(
    client: &reqwest::Client,
    target: &Target,
    base: &str,
    path: &str,
    body: &Value,
) -> reqwest::RequestBuilder {
    let mut r = client
        .post(format!("{}{path}", base.trim_end_matches('/')))
        .timeout(target.timeout)
        .json(body);
    if let Some(k) = &target.api_key {
        r = r.bearer_auth(k);
    }
    r
}

async fn plain(
    client: &reqwest::Client,
    target: &Target,
    base: &str,
    entry: &Entry,
    seed: u64,
    start: Instant,
    m: &mut Measured,
) -> Result<(), String> {
    let body = chat_request(
        target,
        &entry.request["messages"],
        &entry.request["tools"],
        seed,
    );
    let reply = stream_chat(client, target, base, &body, start, m).await?;
    let (input, output) = reply.usage.unwrap_or_default();
    m.input_tokens = input;
    // No usage chunk: count content chunks, as vLLM falls back to re-tokenizing.
    m.output_tokens = match output {
        0 => m.itl_ms.len() as u64 + u64::from(m.ttft_ms.is_some()),
        n => n,
    };
    let message = reply.message()?;
    m.ok = true;
    if entry
        .record
        .task
        .as_ref()
        .is_some_and(|t| t.expected.is_some())
    {
        let mut traj = entry.record.clone();
        traj.meta
            .insert("turn_start".into(), json!(traj.messages.len()));
        traj.messages.push(message);
        m.task_success = Some(success::check(&traj).success);
    }
    Ok(())
}

/// The turn of `entry.script`, one streamed call per recorded assistant message. TTFT is the
/// turn's first token; ITL the gaps inside each call (a call's wait for its prompt is not one);
/// tokens are summed over the calls. The replies are not judged: the conversation is the record's.
async fn scripted(
    client: &reqwest::Client,
    target: &Target,
    base: &str,
    entry: &Entry,
    seed: u64,
    start: Instant,
    m: &mut Measured,
) -> Result<(), String> {
    let messages: Vec<Value> = entry
        .record
        .messages
        .iter()
        .map(crate::record::Message::template_json)
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let tools = serde_json::to_value(&entry.record.tools).map_err(|e| e.to_string())?;
    for (k, call) in entry.script.iter().enumerate() {
        let before = Value::from(&messages[..call.messages]);
        let mut body = chat_request(target, &before, &tools, seed.wrapping_add(k as u64));
        body["max_tokens"] = json!(call.max_tokens);
        body["ignore_eos"] = json!(true);
        let reply = stream_chat(client, target, base, &body, start, m).await?;
        let (input, output) = reply.usage.unwrap_or_default();
        m.input_tokens += input;
        m.output_tokens += output;
    }
    m.ok = true;
    Ok(())
}

/// A streamed chat completion request of `messages` (and `tools`, when there are any).
fn chat_request(target: &Target, messages: &Value, tools: &Value, seed: u64) -> Value {
    let mut body = json!({"model": target.model, "messages": messages, "max_tokens": target.max_tokens,
                          "temperature": target.temperature, "seed": seed, "stream": true,
                          "stream_options": {"include_usage": true}});
    if tools.as_array().is_some_and(|a| !a.is_empty()) {
        body["tools"] = tools.clone();
    }
    body
}

/// Posts `body` and reads its stream to the end. The first chunk with output sets `m.ttft_ms`
/// unless an earlier call of the turn did; each later one adds its gap to `m.itl_ms`.
async fn stream_chat(
    client: &reqwest::Client,
    target: &Target,
    base: &str,
    body: &Value,
    start: Instant,
    m: &mut Measured,
) -> Result<Reply, String> {
    let resp = request(client, target, base, "/v1/chat/completions", body)
        .send()
        .await
        .map_err(|e| format!("send: {e}"))?;
    m.http_status = resp.status().as_u16();
    if !resp.status().is_success() {
        let text = resp.text().await.unwrap_or_default();
        return Err(format!(
            "HTTP {}: {}",
            m.http_status,
            text.chars().take(300).collect::<String>()
        ));
    }
    let mut reply = Reply::default();
    let mut buf = String::new();
    let mut last_chunk: Option<Instant> = None;
    let mut stream = resp.bytes_stream();
    while let Some(bytes) = stream.next().await {
        let bytes = bytes.map_err(|e| format!("reading the stream: {e}"))?;
        buf.push_str(&String::from_utf8_lossy(&bytes));
        while let Some(end) = buf.find('\n') {
            let line: String = buf.drain(..=end).collect();
            let Some(data) = line.trim_end().strip_prefix("data:").map(str::trim) else {
                continue;
            };
            if data == "[DONE]" {
                reply.done = true;
                continue;
            }
            let chunk: Value =
                serde_json::from_str(data).map_err(|e| format!("bad chunk {data:?}: {e}"))?;
            if let Some(err) = chunk.get("error") {
                return Err(format!("error in stream: {err}"));
            }
            if reply.absorb(&chunk) {
                let now = Instant::now();
                match last_chunk {
                    None if m.ttft_ms.is_none() => {
                        m.ttft_ms = Some(now.duration_since(start).as_secs_f64() * 1000.0)
                    }
                    None => {}
                    Some(prev) => m
                        .itl_ms
                        .push(now.duration_since(prev).as_secs_f64() * 1000.0),
                }
                last_chunk = Some(now);
            }
        }
    }
    if !reply.done || reply.finish_reason.is_none() {
        return Err("the stream ended without a finish_reason and [DONE]".into());
    }
    Ok(reply)
}

/// The streamed reply, put back together.
#[derive(Default)]
struct Reply {
    content: String,
    /// index → (id, name, arguments)
    calls: BTreeMap<u64, (String, String, String)>,
    finish_reason: Option<String>,
    /// `(prompt_tokens, completion_tokens)` of the usage chunk.
    usage: Option<(u64, u64)>,
    done: bool,
}

impl Reply {
    /// Takes one chunk; true when it carried generated output (content or a tool-call delta).
    fn absorb(&mut self, chunk: &Value) -> bool {
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            let count = |k: &str| u[k].as_u64().unwrap_or(0);
            self.usage = Some((count("prompt_tokens"), count("completion_tokens")));
        }
        let Some(choice) = chunk["choices"].get(0) else {
            return false;
        };
        if let Some(f) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(f.to_string());
        }
        let delta = &choice["delta"];
        let mut output = false;
        if let Some(c) = delta["content"].as_str().filter(|c| !c.is_empty()) {
            self.content.push_str(c);
            output = true;
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let e = self
                .calls
                .entry(call["index"].as_u64().unwrap_or(0))
                .or_default();
            if let Some(id) = call["id"].as_str() {
                e.0 = id.to_string();
            }
            if let Some(n) = call["function"]["name"].as_str() {
                e.1.push_str(n);
            }
            if let Some(a) = call["function"]["arguments"].as_str() {
                e.2.push_str(a);
            }
            output = true;
        }
        output
    }

    /// The assistant message; tool-call arguments must be JSON objects.
    fn message(&self) -> Result<Message, String> {
        let mut msg = Message::text(Role::Assistant, self.content.clone());
        for (id, name, args) in self.calls.values() {
            if !matches!(serde_json::from_str::<Value>(args), Ok(Value::Object(_))) {
                return Err(format!(
                    "tool call {name} has arguments that are not a JSON object: {args:?}"
                ));
            }
            msg.tool_calls.push(ToolCall {
                id: id.clone(),
                kind: "function".into(),
                function: FunctionCall {
                    name: name.clone(),
                    arguments: args.clone(),
                    extra: Map::new(),
                },
                extra: Map::new(),
            });
        }
        if msg.tool_calls.is_empty() && self.content.is_empty() {
            msg.content = Some(Content::Text(String::new()));
        }
        Ok(msg)
    }
}

async fn agent(
    client: &reqwest::Client,
    target: &Target,
    base: &str,
    entry: &Entry,
    seed: u64,
    m: &mut Measured,
) -> Result<(), String> {
    let mut body = serde_json::to_value(&entry.record).map_err(|e| e.to_string())?;
    body["hat_agent"] =
        json!({"max_tokens": target.max_tokens, "temperature": target.temperature, "seed": seed});
    let resp = request(client, target, base, "/v1/agent", &body)
        .send()
        .await
        .map_err(|e| format!("send: {e}"))?;
    m.http_status = resp.status().as_u16();
    let ok = resp.status().is_success();
    let v: Value = resp
        .json()
        .await
        .map_err(|e| format!("HTTP {}: the body is not JSON: {e}", m.http_status))?;
    if !ok {
        return Err(format!("HTTP {}: {}", m.http_status, v["error"]["message"]));
    }
    if !v["reply"].is_string() {
        return Err("the agent response has no reply".into());
    }
    m.input_tokens = v["usage"]["prompt_tokens"].as_u64().unwrap_or(0);
    m.output_tokens = v["usage"]["completion_tokens"].as_u64().unwrap_or(0);
    m.task_success = v["success"].as_bool();
    m.ok = true;
    Ok(())
}
