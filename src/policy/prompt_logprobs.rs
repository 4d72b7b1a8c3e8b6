//! A client for prompt log-probabilities from any OpenAI-compatible server that has vLLM's
//! `prompt_logprobs` extra on `/v1/completions` (vLLM, SGLang's vLLM-compatible mode, our `serve`):
//! the token ids go out as the prompt, and the log-probability of every token after the first comes
//! back. `opd --teacher-url` scores the student's samples this way, so the teacher can run on
//! whatever inference cluster already serves it.

use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{json, Value};

use super::openai::post_json;

#[derive(Debug, Clone)]
pub struct PromptLogprobsConfig {
    /// Base URL up to the version, e.g. `http://localhost:8000/v1`.
    pub url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub timeout: Duration,
    /// Extra attempts after a transport error, 429 or 5xx.
    pub retries: u32,
    /// Requests in flight at once.
    pub concurrency: usize,
}

/// The log-probability of one prompt token given the ones before it, the text the server decoded
/// it to (used to notice a server with another tokenizer), and every `(token id, log-probability)`
/// the server returned at that position — the top k asked for and the prompt's own token — most
/// likely first.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredToken {
    pub logprob: f64,
    pub decoded: Option<String>,
    pub alternatives: Vec<(u32, f64)>,
}

pub struct PromptLogprobsClient {
    cfg: PromptLogprobsConfig,
    endpoint: String,
    http: ureq::Agent,
}

impl PromptLogprobsClient {
    pub fn new(cfg: PromptLogprobsConfig) -> Self {
        let endpoint = format!("{}/completions", cfg.url.trim_end_matches('/'));
        let http = ureq::AgentBuilder::new().timeout(cfg.timeout).build();
        PromptLogprobsClient {
            cfg,
            endpoint,
            http,
        }
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The request for one token-id prompt: the prompt's own tokens and the `top` most likely at
    /// each position (0: the prompt's own only). One greedy token is generated because vLLM refuses
    /// `max_tokens: 0`.
    pub fn body(&self, prompt: &[u32], top: usize) -> Value {
        json!({"model": self.cfg.model, "prompt": prompt, "max_tokens": 1, "temperature": 0.0,
               "prompt_logprobs": top})
    }

    /// One entry per token of `prompt` after the first, with the `top` most likely alternatives.
    pub fn score(&self, prompt: &[u32], top: usize) -> Result<Vec<ScoredToken>> {
        let body = self.body(prompt, top).to_string();
        let text = post_json(
            &self.http,
            &self.endpoint,
            self.cfg.api_key.as_deref(),
            self.cfg.retries,
            &body,
        )?;
        let v: Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: the response is not JSON", self.endpoint))?;
        let rows = v.pointer("/choices/0/prompt_logprobs").with_context(|| {
            format!(
                "{}: the response has no choices[0].prompt_logprobs",
                self.endpoint
            )
        })?;
        read_prompt_logprobs(rows, prompt).with_context(|| format!("{}", self.endpoint))
    }

    /// [`Self::score`] of every prompt, `concurrency` requests at a time; in order.
    pub fn score_all(&self, prompts: &[Vec<u32>], top: usize) -> Result<Vec<Vec<ScoredToken>>> {
        let workers = self.cfg.concurrency.clamp(1, prompts.len().max(1));
        let mut scored: Vec<(usize, Result<Vec<ScoredToken>>)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .map(|w| {
                    s.spawn(move || {
                        (w..prompts.len())
                            .step_by(workers)
                            .map(|i| (i, self.score(&prompts[i], top)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("a scoring thread panicked"))
                .collect()
        });
        scored.sort_by_key(|(i, _)| *i);
        scored.into_iter().map(|(_, r)| r).collect()
    }
}

/// Reads vLLM's `prompt_logprobs` (`null`, then per token an object keyed by token id holding
/// `{"logprob", "rank", "decoded_token"}` for the prompt's own token and the alternatives): the
/// prompt's own token at each position after the first, and all the entries of its row.
pub fn read_prompt_logprobs(value: &Value, prompt: &[u32]) -> Result<Vec<ScoredToken>> {
    let rows = value.as_array().context(
        "prompt_logprobs is not a list (does the server support vLLM's prompt_logprobs?)",
    )?;
    anyhow::ensure!(
        rows.len() == prompt.len(),
        "prompt_logprobs has {} entries for a prompt of {} tokens",
        rows.len(),
        prompt.len()
    );
    rows.iter()
        .zip(prompt)
        .enumerate()
        .skip(1)
        .map(|(t, (row, id))| {
            let entry = row.get(id.to_string()).with_context(|| {
                format!("prompt_logprobs[{t}] has no entry for the prompt's token {id}")
            })?;
            let logprob = entry
                .get("logprob")
                .and_then(Value::as_f64)
                .with_context(|| format!("prompt_logprobs[{t}][{id}] has no logprob"))?;
            let decoded = entry
                .get("decoded_token")
                .and_then(Value::as_str)
                .map(str::to_string);
            let mut alternatives = row
                .as_object()
                .with_context(|| format!("prompt_logprobs[{t}] is not an object"))?
                .iter()
                .map(|(key, e)| {
                    let id = key.parse::<u32>().ok();
                    let lp = e.get("logprob").and_then(Value::as_f64);
                    id.zip(lp).with_context(|| {
                        format!("prompt_logprobs[{t}][{key:?}] is not a token id with a logprob")
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            alternatives.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            Ok(ScoredToken {
                logprob,
                decoded,
                alternatives,
            })
        })
        .collect()
}
