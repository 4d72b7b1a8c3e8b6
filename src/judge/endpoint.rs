//! A blocking client for an OpenAI-compatible chat endpoint (`POST {url}/v1/chat/completions`), as the
//! LLM judge uses it: greedy decoding, bounded time per request, retries with exponential backoff on
//! transport errors, 429 and 5xx (a 4xx other than 429 is the caller's fault and is not retried), and
//! a content-addressed cache so a re-run of the same prompts against the same model costs nothing.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Where and how to call.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// Base URL, e.g. `http://127.0.0.1:8000` (a trailing `/v1` is accepted too).
    pub url: String,
    pub model: String,
    pub api_key: Option<String>,
    /// Whole-request deadline.
    pub timeout: Duration,
    /// Attempts after the first.
    pub retries: u32,
    /// First backoff; doubles after every failed attempt.
    pub backoff: Duration,
    pub max_tokens: u32,
}

pub struct Endpoint {
    cfg: EndpointConfig,
    agent: ureq::Agent,
    cache: Option<PathBuf>,
}

/// The cache key of a prompt for a model: sha256 over model, a NUL, and the prompt, in hex.
pub fn cache_key(model: &str, prompt: &str) -> String {
    let mut h = Sha256::new();
    h.update(model.as_bytes());
    h.update([0u8]);
    h.update(prompt.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

impl Endpoint {
    pub fn new(cfg: EndpointConfig, cache: Option<PathBuf>) -> Result<Endpoint> {
        if let Some(dir) = &cache {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create cache directory '{}'", dir.display()))?;
        }
        let agent = ureq::AgentBuilder::new().timeout(cfg.timeout).build();
        Ok(Endpoint { cfg, agent, cache })
    }

    pub fn model(&self) -> &str {
        &self.cfg.model
    }

    fn completions_url(&self) -> String {
        let base = self.cfg.url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        format!("{base}/v1/chat/completions")
    }

    /// The assistant text for `prompt` (one user message), from the cache when present.
    /// Returns the text and whether it came from the cache.
    pub fn complete(&self, prompt: &str) -> Result<(String, bool)> {
        let key = cache_key(&self.cfg.model, prompt);
        let cached = self.cache.as_ref().map(|d| d.join(format!("{key}.txt")));
        if let Some(path) = &cached {
            if let Ok(text) = std::fs::read_to_string(path) {
                return Ok((text, true));
            }
        }
        let text = self.request(prompt)?;
        if let Some(path) = &cached {
            // Write beside, then rename: a concurrent reader never sees half a verdict.
            let tmp = path.with_extension(format!(
                "tmp-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            std::fs::write(&tmp, &text)
                .and_then(|_| std::fs::rename(&tmp, path))
                .with_context(|| format!("cannot write cache entry '{}'", path.display()))?;
        }
        Ok((text, false))
    }

    fn request(&self, prompt: &str) -> Result<String> {
        let body = json!({
            "model": self.cfg.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0,
            "max_tokens": self.cfg.max_tokens,
        })
        .to_string();
        let url = self.completions_url();
        let mut wait = self.cfg.backoff;
        let mut last = anyhow!("no attempt made");
        for attempt in 0..=self.cfg.retries {
            if attempt > 0 {
                std::thread::sleep(wait);
                wait = wait.saturating_mul(2);
            }
            let mut req = self
                .agent
                .post(&url)
                .set("Content-Type", "application/json");
            if let Some(key) = &self.cfg.api_key {
                req = req.set("Authorization", &format!("Bearer {key}"));
            }
            match req.send_string(&body) {
                Ok(resp) => {
                    let text = resp
                        .into_string()
                        .context("cannot read the endpoint's response body")?;
                    return content_of(&text);
                }
                Err(ureq::Error::Status(code, resp)) => {
                    let detail: String = resp
                        .into_string()
                        .unwrap_or_default()
                        .chars()
                        .take(200)
                        .collect();
                    last = anyhow!("{url} answered HTTP {code}: {detail}");
                    if code != 429 && code < 500 {
                        return Err(last);
                    }
                }
                Err(e) => last = anyhow!("{url}: {e}"),
            }
        }
        Err(last.context(format!("giving up after {} attempts", self.cfg.retries + 1)))
    }
}

/// `choices[0].message.content` of a chat completion.
fn content_of(body: &str) -> Result<String> {
    let v: Value = serde_json::from_str(body).with_context(|| {
        format!(
            "the endpoint's response is not JSON: {}",
            body.chars().take(200).collect::<String>()
        )
    })?;
    match v.pointer("/choices/0/message/content") {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => bail!(
            "the endpoint's response has no choices[0].message.content: {}",
            body.chars().take(200).collect::<String>()
        ),
    }
}
