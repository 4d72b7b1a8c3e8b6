//! A policy backed by any OpenAI-compatible chat-completions endpoint (vLLM, SGLang, llama.cpp, a hosted
//! API): the conversation and the harness's tools go out, the assistant message (content, reasoning,
//! structured tool calls) comes back. Blocking HTTP with a timeout per request and bounded retries on
//! transport errors, 429 and 5xx; rollout concurrency comes from the caller's thread pool. Given several
//! endpoints (replicas of one model), each request goes to the least busy one and an episode's turns stay
//! on the endpoint of its first ([`super::endpoints`]).

use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};

use super::endpoints::EndpointPool;
use super::sampler_logprobs::{self, SamplerLogprobs};
use super::{Conversation, Policy};
use crate::chat::{split_reasoning, THINK_OPEN};
use crate::record::{Content, Message, Role};

#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Base URLs up to the version, e.g. `http://localhost:8000/v1`: one, or several replicas of the
    /// same model that requests are balanced over.
    pub urls: Vec<String>,
    pub model: String,
    pub api_key: Option<String>,
    pub timeout: Duration,
    /// Extra attempts after a failed request.
    pub retries: u32,
    pub temperature: f64,
    pub max_tokens: u32,
    /// Ask for the log-prob of every generated token (`logprobs: true`) and keep them on the message
    /// ([`SamplerLogprobs`]; RL's truncated importance sampling).
    pub logprobs: bool,
    /// Merged into every request body (e.g. `{"chat_template_kwargs": {"enable_thinking": false}}`).
    pub extra_body: Map<String, Value>,
}

impl OpenAiConfig {
    pub fn new(url: impl Into<String>, model: impl Into<String>) -> OpenAiConfig {
        OpenAiConfig {
            urls: vec![url.into()],
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(60),
            retries: 2,
            temperature: 0.0,
            max_tokens: 1024,
            logprobs: false,
            extra_body: Map::new(),
        }
    }
}

/// Client flags shared by every command that talks to an OpenAI-compatible endpoint (the URL and
/// model flags differ per command, so they stay there).
#[derive(Debug, Clone, clap::Args)]
pub struct ClientArgs {
    /// API key (or OPENAI_API_KEY).
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Per-request timeout in seconds.
    #[arg(long, default_value_t = 60)]
    pub request_timeout: u64,
    /// Extra attempts after a transport error, 429 or 5xx.
    #[arg(long, default_value_t = 2)]
    pub retries: u32,
    /// Sampling temperature of every request.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// Ask for every generated token's log-prob and record them on the assistant messages
    /// (`sampler_logprobs`, for grpo-train's truncated importance sampling).
    #[arg(long)]
    pub logprobs: bool,
}

impl ClientArgs {
    pub fn config(&self, url: &str, model: &str) -> OpenAiConfig {
        self.config_many(&[url.to_string()], model)
    }

    /// The configuration for one or several endpoints (`urls`, at least one) serving `model`.
    pub fn config_many(&self, urls: &[String], model: &str) -> OpenAiConfig {
        let mut cfg = OpenAiConfig::new(String::new(), model);
        cfg.urls = urls.to_vec();
        cfg.api_key = self.api_key.clone();
        cfg.timeout = Duration::from_secs(self.request_timeout.max(1));
        cfg.retries = self.retries;
        cfg.temperature = self.temperature;
        cfg.logprobs = self.logprobs;
        cfg
    }
}

pub struct OpenAi {
    cfg: OpenAiConfig,
    /// The chat-completions URL of every endpoint.
    endpoints: EndpointPool,
    http: ureq::Agent,
}

impl OpenAi {
    /// A client of `cfg.urls`; fails when there is none, or one is given twice.
    pub fn new(cfg: OpenAiConfig) -> Result<OpenAi> {
        let urls = cfg
            .urls
            .iter()
            .map(|u| format!("{}/chat/completions", u.trim_end_matches('/')))
            .collect();
        let endpoints = EndpointPool::new(urls)?;
        let http = ureq::AgentBuilder::new().timeout(cfg.timeout).build();
        Ok(OpenAi {
            cfg,
            endpoints,
            http,
        })
    }

    /// The endpoints and how many requests each was sent.
    pub fn endpoints(&self) -> &EndpointPool {
        &self.endpoints
    }

    /// The request body for a conversation.
    pub fn body(&self, conv: &Conversation<'_>) -> Value {
        let messages: Vec<Message> = conv
            .messages
            .iter()
            .map(sampler_logprobs::without)
            .collect();
        let mut body = json!({
            "model": self.cfg.model,
            "messages": messages,
            "temperature": self.cfg.temperature,
            "max_tokens": self.cfg.max_tokens,
        });
        if self.cfg.logprobs {
            body["logprobs"] = json!(true);
        }
        if !conv.tools.is_empty() {
            body["tools"] = json!(conv.tools);
            body["tool_choice"] = json!("auto");
        }
        for (k, v) in &self.cfg.extra_body {
            body[k] = v.clone();
        }
        body
    }

    /// [`Policy::respond`] with `fields` set in the request body (a per-request `seed`, say).
    pub fn respond_with(
        &self,
        conv: &Conversation<'_>,
        fields: &Map<String, Value>,
    ) -> Result<Message> {
        let mut body = self.body(conv);
        for (k, v) in fields {
            body[k] = v.clone();
        }
        parse_response(&self.post(conv.session, &body.to_string())?)
    }

    /// POSTs `body` to the endpoint of `session` (the least busy for a new one).
    fn post(&self, session: Option<&str>, body: &str) -> Result<String> {
        let endpoint = self.endpoints.pick(session);
        post_json(
            &self.http,
            endpoint.url(),
            self.cfg.api_key.as_deref(),
            self.cfg.retries,
            body,
        )
    }
}

/// POSTs a JSON `body` to `endpoint`, retrying transport errors, 429 and 5xx `retries` times with
/// doubling backoff (a busy or restarting server recovers; a 4xx will not, so it fails at once).
/// Errors name the endpoint and the last status.
pub fn post_json(
    http: &ureq::Agent,
    endpoint: &str,
    api_key: Option<&str>,
    retries: u32,
    body: &str,
) -> Result<String> {
    let mut last = None;
    for attempt in 0..=retries {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(500 << (attempt - 1).min(4)));
        }
        let mut req = http.post(endpoint).set("Content-Type", "application/json");
        if let Some(key) = api_key {
            req = req.set("Authorization", &format!("Bearer {key}"));
        }
        match req.send_string(body) {
            Ok(resp) => return resp.into_string().context("reading the response body"),
            Err(ureq::Error::Status(code, resp)) if code == 429 || code >= 500 => {
                last = Some(format!(
                    "HTTP {code}: {}",
                    resp.into_string().unwrap_or_default()
                ));
            }
            Err(ureq::Error::Status(code, resp)) => {
                bail!(
                    "{endpoint} answered HTTP {code}: {}",
                    resp.into_string().unwrap_or_default()
                )
            }
            Err(e) => last = Some(e.to_string()),
        }
    }
    bail!(
        "{endpoint} failed after {} attempts: {}",
        retries + 1,
        last.unwrap_or_default()
    )
}

/// The assistant message of a chat-completions response, with the sampler's log-probs when the
/// response has them (`choices[0].logprobs`).
pub fn parse_response(text: &str) -> Result<Message> {
    let v: Value = serde_json::from_str(text).context("the response is not JSON")?;
    let msg = v.pointer("/choices/0/message").with_context(|| {
        format!(
            "the response has no choices[0].message: {}",
            truncate(text, 300)
        )
    })?;
    let mut m: Message =
        serde_json::from_value(msg.clone()).context("choices[0].message is not a chat message")?;
    m.role = Role::Assistant;
    // Some servers name the reasoning field `reasoning`.
    if m.reasoning_content.is_none() {
        if let Some(r) = m
            .extra
            .remove("reasoning")
            .and_then(|r| r.as_str().map(str::to_string))
        {
            m.reasoning_content = Some(r);
        }
    }
    // A server without a reasoning parser (vLLM's default; ours) leaves the `<think>` block in the
    // content: split it off as the parser would, or the episode would carry it twice once the chat
    // template adds its own (and an RL trainer's view would no longer be the sampled context).
    if let (None, Some(Content::Text(text))) = (&m.reasoning_content, &m.content) {
        if text.trim_start().starts_with(THINK_OPEN) {
            if let Ok(split) = split_reasoning(text.trim_start()) {
                let content = split.content.to_string();
                m.reasoning_content = split.reasoning;
                m.content = Some(Content::Text(content));
            }
        }
    }
    if let Some(lps) = v
        .pointer("/choices/0/logprobs")
        .and_then(SamplerLogprobs::from_openai)
    {
        lps.attach(&mut m);
    }
    Ok(m)
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

impl Policy for OpenAi {
    fn name(&self) -> &str {
        &self.cfg.model
    }

    fn respond(&self, conv: &Conversation<'_>) -> Result<Message> {
        self.respond_with(conv, &Map::new())
    }

    fn end_session(&self, session: &str) {
        self.endpoints.end(session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `msgs` as a conversation without tools, task or session.
    fn conversation(msgs: &[Message]) -> Conversation<'_> {
        Conversation {
            messages: msgs,
            tools: &[],
            turn_start: 1,
            task: None,
            session: None,
        }
    }

    #[test]
    fn responses_parse_with_tool_calls_and_reasoning() {
        let text = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"reasoning":"think",
            "tool_calls":[{"id":"c1","type":"function","function":{"name":"get_promotions","arguments":"{\"product_id\":\"p1\"}"}}]}}]}"#;
        let m = parse_response(text).unwrap();
        assert_eq!(m.tool_calls[0].function.name, "get_promotions");
        assert_eq!(m.reasoning_content.as_deref(), Some("think"));
        assert!(m.extra.is_empty(), "no logprobs asked, none kept");
        assert!(parse_response(r#"{"error":"x"}"#).is_err());
        let with = r#"{"choices":[{"message":{"role":"assistant","content":"ok"},
            "logprobs":{"content":[{"token":"ok","logprob":-0.25,"top_logprobs":[]}]}}]}"#;
        let m = parse_response(with).unwrap();
        assert_eq!(SamplerLogprobs::of(&m).unwrap().logprobs, [-0.25]);
        assert!(parse_response("nope").is_err());
    }

    /// A reply whose `<think>` block came back in the content (no reasoning parser on the server) is
    /// split as a parser would; content without one, or with an unclosed block, stays as it came.
    #[test]
    fn a_think_block_left_in_the_content_becomes_the_reasoning() {
        let reply = |content: &str| {
            let body = json!({"choices": [{"message": {"role": "assistant", "content": content}}]});
            parse_response(&body.to_string()).unwrap()
        };
        let m = reply("<think>\n\n</think>\n\n宝宝们好");
        assert_eq!(m.reasoning_content.as_deref(), Some(""));
        assert_eq!(m.text_content(), "宝宝们好");
        let m = reply("<think>\nask about size\n</think>\n\nWhich size?");
        assert_eq!(m.reasoning_content.as_deref(), Some("ask about size"));
        assert_eq!(m.text_content(), "Which size?");
        for kept in ["宝宝们好 <think>x</think>", "<think>never closed"] {
            let m = reply(kept);
            assert_eq!(
                (m.text_content(), m.reasoning_content),
                (kept.to_string(), None)
            );
        }
    }

    #[test]
    fn body_carries_tools_and_extra_fields() {
        let mut cfg = OpenAiConfig::new("http://x/v1/", "m");
        cfg.extra_body.insert(
            "chat_template_kwargs".into(),
            json!({"enable_thinking": false}),
        );
        let client = OpenAi::new(cfg).unwrap();
        assert_eq!(client.endpoints.urls(), ["http://x/v1/chat/completions"]);
        let msgs = [Message::text(Role::User, "hi")];
        let conv = conversation(&msgs);
        let b = client.body(&conv);
        assert_eq!(b["messages"][0]["content"], "hi");
        assert!(b.get("tools").is_none());
        assert_eq!(b["chat_template_kwargs"]["enable_thinking"], false);
        assert!(b.get("logprobs").is_none());
    }

    #[test]
    fn logprobs_are_asked_for_and_never_sent_back() {
        let mut cfg = OpenAiConfig::new("http://x/v1", "m");
        cfg.logprobs = true;
        let client = OpenAi::new(cfg).unwrap();
        let mut reply = Message::text(Role::Assistant, "ok");
        SamplerLogprobs::from_ids(vec![5], &[-0.5]).attach(&mut reply);
        let msgs = [Message::text(Role::User, "hi"), reply];
        let conv = conversation(&msgs);
        let b = client.body(&conv);
        assert_eq!(b["logprobs"], true);
        assert!(b["messages"][1].get(sampler_logprobs::KEY).is_none());
    }

    #[test]
    fn unreachable_endpoints_fail_with_context() {
        let mut cfg = OpenAiConfig::new("http://127.0.0.1:9/v1", "m");
        cfg.retries = 0;
        cfg.timeout = Duration::from_millis(500);
        let msgs = [Message::text(Role::User, "hi")];
        let conv = conversation(&msgs);
        let err = OpenAi::new(cfg).unwrap().respond(&conv).unwrap_err();
        assert!(format!("{err:#}").contains("127.0.0.1:9"), "{err:#}");
    }
}
