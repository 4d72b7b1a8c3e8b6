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
//! **Sampling.** Every request samples at temperature 1 with `logprobs: true` and vLLM's
//! `return_tokens_as_token_ids`, so each generated message carries the server's log-probs of the
//! sampled token ids (`sampler_logprobs`) for truncated importance sampling (`--tis-imp-ratio-cap`),
//! and a seed derived from the episode's seed and the turn, so a run is repeatable against a server
//! that honours `seed` (ours does).
//!
//! **The reply as the model wrote it.** A server's parser rewrites a reply: tool-call arguments
//! re-serialised (vLLM and ours write `{"k": "v"}` where the model may have written `{"k":"v"}`),
//! reasoning moved or dropped. The trainer renders the episode again to train on it, so a rewritten
//! reply would put other tokens, in another context, in place of those sampled. With the sampled
//! ids in hand, the message is rebuilt from their decoded text by the in-process sampler's own
//! parser ([`to_message`]), and the view holds the sampled tokens again.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use burn::prelude::Backend;
use serde_json::{json, Map, Value};

use tokenizers::Tokenizer;

use crate::chat::ToolCallFormat;
use crate::model::CausalLm;
use crate::policy::local::to_message;
use crate::policy::openai::{post_json, OpenAi, OpenAiConfig};
use crate::policy::sampler_logprobs::SamplerLogprobs;
use crate::policy::{Conversation, Policy};
use crate::record::{json_values, Message};
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
    /// How the model writes tool calls (the policy's; the in-process sampler's default is hermes).
    pub tool_call_format: ToolCallFormat,
}

/// The servers that play the rollouts, and the directory their weights are loaded from.
pub struct RemoteRollouts {
    client: Arc<OpenAi>,
    /// `…/update_weights_from_disk` of every server.
    update_urls: Vec<String>,
    api_key: Option<String>,
    http: ureq::Agent,
    weights_dir: PathBuf,
    reader: Arc<ReplyReader>,
}

/// Rebuilds a server's reply from its sampled token ids (see the module docs).
struct ReplyReader {
    tokenizer: Tokenizer,
    format: ToolCallFormat,
    /// End-of-turn tokens: the last sampled token when the reply ended by itself.
    end_tokens: Vec<u32>,
}

impl ReplyReader {
    /// `msg` rebuilt from the ids it was sampled as (its log-probs kept); `None` without ids.
    fn read(&self, msg: &Message, tools: &[crate::record::Tool]) -> Option<Message> {
        let sampled = SamplerLogprobs::of(msg)?;
        let mut ids = sampled.token_ids.as_slice();
        if ids.is_empty() {
            return None;
        }
        if let Some((last, rest)) = ids.split_last() {
            if self.end_tokens.contains(last) {
                ids = rest;
            }
        }
        let text = self.tokenizer.decode(ids, false).ok()?;
        let mut rebuilt = to_message(&text, self.format, &json_values(tools).ok()?);
        sampled.attach(&mut rebuilt);
        Some(rebuilt)
    }
}

impl RemoteRollouts {
    /// Clients of `cfg.urls`; the weights to sync go to `weights_dir` (absolute, so that the
    /// servers find it whatever their working directory); `tokenizer` is the policy's.
    pub fn new(
        cfg: &RemoteConfig,
        weights_dir: &Path,
        tokenizer: Tokenizer,
    ) -> Result<RemoteRollouts> {
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
        client
            .extra_body
            .insert("return_tokens_as_token_ids".into(), json!(true));
        let update_urls = cfg
            .urls
            .iter()
            .map(|u| format!("{}/update_weights_from_disk", server_root(u)))
            .collect();
        let weights_dir = std::path::absolute(weights_dir)
            .with_context(|| format!("resolving {}", weights_dir.display()))?;
        let end_tokens = crate::chat::END_TOKENS
            .iter()
            .filter_map(|t| tokenizer.token_to_id(t))
            .collect();
        Ok(RemoteRollouts {
            client: Arc::new(OpenAi::new(client)?),
            update_urls,
            api_key: cfg.api_key.clone(),
            http,
            weights_dir,
            reader: Arc::new(ReplyReader {
                tokenizer,
                format: cfg.tool_call_format,
                end_tokens,
            }),
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
            reader: self.reader.clone(),
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
    reader: Arc<ReplyReader>,
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
        let msg = self.client.respond_with(conv, &fields)?;
        Ok(self.reader.read(&msg, conv.tools).unwrap_or(msg))
    }

    fn end_session(&self, session: &str) {
        self.client.end_session(session)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Content, FunctionCall, Role, ToolCall};
    use crate::tokenizer::{train_bpe, TrainOptions};

    /// A server rewrote the model's call (`{"product_id": "p1"}` for the `{"product_id":"p1"}` it
    /// sampled) and left its think block in the content: the reader rebuilds the message from the
    /// sampled ids, as the in-process sampler parses its own, and keeps the log-probs.
    #[test]
    fn a_reply_is_rebuilt_from_its_sampled_ids() {
        let generated = "<think>\n\n</think>\n\n<tool_call>\n{\"name\": \"get_promotions\", \
                         \"arguments\": {\"product_id\":\"p1\"}}\n</tool_call>";
        let options = TrainOptions {
            vocab_size: 400,
            min_frequency: 1,
        };
        let tokenizer = train_bpe(vec![generated; 4], &options).unwrap();
        let end = tokenizer.token_to_id("<|im_end|>").unwrap();
        let mut ids = tokenizer
            .encode(generated, false)
            .unwrap()
            .get_ids()
            .to_vec();
        ids.push(end);
        let mut served = Message::text(Role::Assistant, "<think>\n\n</think>\n\n");
        served.tool_calls = vec![ToolCall {
            id: "call_0".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "get_promotions".into(),
                arguments: "{\"product_id\": \"p1\"}".into(),
                extra: Map::new(),
            },
            extra: Map::new(),
        }];
        let logprobs = vec![-0.5; ids.len()];
        SamplerLogprobs::from_ids(ids.clone(), &logprobs).attach(&mut served);
        let tools: Vec<crate::record::Tool> = serde_json::from_value(json!([{"type": "function",
            "function": {"name": "get_promotions", "parameters": {"type": "object",
            "properties": {"product_id": {"type": "string"}}}}}]))
        .unwrap();
        let reader = ReplyReader {
            tokenizer,
            format: ToolCallFormat::Hermes,
            end_tokens: vec![end],
        };
        let read = reader.read(&served, &tools).unwrap();
        assert_eq!(read.tool_calls.len(), 1);
        assert_eq!(
            read.tool_calls[0].function.arguments,
            "{\"product_id\":\"p1\"}"
        );
        assert_eq!(read.reasoning_content.as_deref(), Some(""));
        assert_eq!(read.content, Some(Content::Text(String::new())));
        assert_eq!(SamplerLogprobs::of(&read).unwrap().token_ids, ids);
        // Without sampled ids (a server that names tokens by text) the message stays the server's.
        let mut texts = Message::text(Role::Assistant, "hi");
        SamplerLogprobs::from_openai(&json!({"content": [{"token": "hi", "logprob": -1.0}]}))
            .unwrap()
            .attach(&mut texts);
        assert!(reader.read(&texts, &tools).is_none());
    }

    #[test]
    fn update_calls_go_to_the_server_root() {
        assert_eq!(server_root("http://h:8000/v1"), "http://h:8000");
        assert_eq!(server_root("http://h:8000/v1/"), "http://h:8000");
        assert_eq!(server_root("http://h:8000"), "http://h:8000");
    }
}
