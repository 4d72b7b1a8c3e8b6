//! Rollouts on inference servers: the policy's episodes are played by OpenAI-compatible endpoints
//! (our `serve`, SGLang, or replicas of either) instead of the trainer's in-process model, as verl and
//! TRL hand generation to vLLM or SGLang while the trainer keeps the weights.
//!
//! **Weight sync by checkpoint reload.** Before each step's rollouts the trainer writes the current
//! weights as a Hugging Face directory (`OUT/rollout-weights/`, replaced atomically) and asks every
//! server to load it with `POST /update_weights_from_disk {"model_path": DIR}` — SGLang's endpoint,
//! which `serve --enable-weight-updates` implements. The servers must see the same file system. A
//! server that cannot load the weights stops the run: rollouts of stale weights would train on the
//! wrong policy without saying so.
//!
//! **Sampling.** Every request samples at temperature 1 with `logprobs: true`, so each generated
//! message carries the server's log-probs (`sampler_logprobs`) for truncated importance sampling
//! (`--tis-imp-ratio-cap`), and a seed derived from the episode's seed and the turn, so a run is
//! repeatable against a server that honours `seed` (ours does).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use burn::prelude::Backend;
use serde_json::{json, Map, Value};

use crate::model::CausalLm;
use crate::policy::openai::{post_json, OpenAi, OpenAiConfig};
use crate::policy::{Conversation, Policy};
use crate::record::Message;
use crate::rng::Rng;
use crate::train::checkpoint;

/// Where the rollouts run and how to reach the servers.
#[derive(Debug, Clone)]
pub struct RemoteConfig {
    /// Base URLs up to the version (`http://host:8000/v1`), one per server.
    pub urls: Vec<String>,
    /// The served model's name; `None`: the first of the first server's `GET /v1/models`.
    pub model: Option<String>,
    pub api_key: Option<String>,
    pub timeout: Duration,
    /// Longest reply, in tokens.
    pub max_tokens: usize,
}

/// The servers that play the rollouts, and the directory their weights are loaded from.
pub struct RemoteRollouts {
    client: Arc<OpenAi>,
    /// `…/update_weights_from_disk` of every server.
    update_urls: Vec<String>,
    api_key: Option<String>,
    http: ureq::Agent,
    weights_dir: PathBuf,
}

impl RemoteRollouts {
    /// Clients of `cfg.urls`; the weights to sync go to `weights_dir` (absolute, so that the
    /// servers find it whatever their working directory).
    pub fn new(cfg: &RemoteConfig, weights_dir: &Path) -> Result<RemoteRollouts> {
        if cfg.urls.is_empty() {
            bail!("no rollout endpoint");
        }
        let http = ureq::AgentBuilder::new().timeout(cfg.timeout).build();
        let model = match &cfg.model {
            Some(m) => m.clone(),
            None => served_model(&http, &cfg.urls[0], cfg.api_key.as_deref())?,
        };
        let mut client = OpenAiConfig::new(String::new(), model);
        client.urls = cfg.urls.clone();
        client.api_key = cfg.api_key.clone();
        client.timeout = cfg.timeout;
        client.temperature = 1.0;
        client.max_tokens = u32::try_from(cfg.max_tokens).unwrap_or(u32::MAX);
        client.logprobs = true;
        let update_urls = cfg
            .urls
            .iter()
            .map(|u| format!("{}/update_weights_from_disk", server_root(u)))
            .collect();
        let weights_dir = std::path::absolute(weights_dir)
            .with_context(|| format!("resolving {}", weights_dir.display()))?;
        Ok(RemoteRollouts {
            client: Arc::new(OpenAi::new(client)?),
            update_urls,
            api_key: cfg.api_key.clone(),
            http,
            weights_dir,
        })
    }

    /// Writes `model`'s weights (with the tokenizer files of `tokenizer_dir`) and has every server
    /// load them; fails naming the server that did not.
    pub fn sync<B: Backend>(&self, model: &CausalLm<B>, tokenizer_dir: &Path) -> Result<()> {
        checkpoint::save_weights(&self.weights_dir, model, tokenizer_dir)?;
        let body = json!({"model_path": self.weights_dir.to_string_lossy()}).to_string();
        for url in &self.update_urls {
            let answer = post_json(&self.http, url, self.api_key.as_deref(), 0, &body)
                .with_context(|| format!("loading the new weights on {url}"))?;
            let v: Value = serde_json::from_str(&answer).unwrap_or_default();
            if v["success"] != json!(true) {
                bail!("{url} did not load the new weights: {answer}");
            }
        }
        Ok(())
    }

    /// The policy of one episode: the servers, sampling with seeds drawn from `seed`.
    pub fn policy(&self, seed: u64) -> Box<dyn Policy> {
        Box::new(Seeded {
            client: self.client.clone(),
            seed,
        })
    }
}

/// The URL a server's non-`/v1` routes hang off: `base` without its trailing `/v1`.
fn server_root(base: &str) -> &str {
    let base = base.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base)
}

/// `data[0].id` of `GET {base}/models`.
fn served_model(http: &ureq::Agent, base: &str, api_key: Option<&str>) -> Result<String> {
    let url = format!("{}/models", base.trim_end_matches('/'));
    let mut req = http.get(&url);
    if let Some(key) = api_key {
        req = req.set("Authorization", &format!("Bearer {key}"));
    }
    let text = req
        .call()
        .with_context(|| {
            format!("GET {url} (to learn the served model's name; or pass --rollout-model)")
        })?
        .into_string()
        .with_context(|| format!("reading GET {url}"))?;
    let v: Value =
        serde_json::from_str(&text).with_context(|| format!("GET {url}: not JSON: {text}"))?;
    v.pointer("/data/0/id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .with_context(|| format!("GET {url} listed no model; pass --rollout-model"))
}

/// One episode's requests: each with a seed of its own, from the episode's and the turn's.
struct Seeded {
    client: Arc<OpenAi>,
    seed: u64,
}

impl Policy for Seeded {
    fn name(&self) -> &str {
        self.client.name()
    }

    fn respond(&self, conv: &Conversation<'_>) -> Result<Message> {
        let turn = conv.messages.len().to_string();
        // Non-negative as a signed 64-bit integer, which is what servers parse `seed` as.
        let seed = Rng::derive(self.seed, &turn).next_u64() >> 1;
        let mut fields = Map::new();
        fields.insert("seed".into(), json!(seed));
        self.client.respond_with(conv, &fields)
    }

    fn end_session(&self, session: &str) {
        self.client.end_session(session)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_calls_go_to_the_server_root() {
        assert_eq!(server_root("http://h:8000/v1"), "http://h:8000");
        assert_eq!(server_root("http://h:8000/v1/"), "http://h:8000");
        assert_eq!(server_root("http://h:8000"), "http://h:8000");
    }
}
