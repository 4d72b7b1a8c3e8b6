//! The rollout engine's log-probabilities of the tokens a policy generated, kept on the assistant
//! message they belong to (`"sampler_logprobs"`, reference/rl_algorithms.md §7: the trajectory record
//! carries them). An RL trainer recomputes `log π_old` on its own re-rendered view of the episode; where
//! the sampler (another numeric path, an inference server) saw the same token with another probability,
//! truncated importance sampling (`rl::tis`) corrects for the gap with these.
//!
//! The local model gives token ids; an OpenAI-compatible endpoint gives `logprobs.content[].token`
//! texts (or ids, as vLLM's `return_tokens_as_token_ids` writes them: `token_id:123`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::record::Message;

/// The key under which a message carries them (in [`Message::extra`]).
pub const KEY: &str = "sampler_logprobs";

/// One generated message's tokens and `log p(token)` under the sampler's raw distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplerLogprobs {
    /// Token ids, when the sampler gives them; otherwise empty and `tokens` names the tokens.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub token_ids: Vec<u32>,
    /// Token texts (an endpoint without ids).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<String>,
    pub logprobs: Vec<f64>,
}

impl SamplerLogprobs {
    /// From the local sampler: the generated ids (with the stop token) and their log-probs.
    pub fn from_ids(token_ids: Vec<u32>, logprobs: &[f32]) -> SamplerLogprobs {
        SamplerLogprobs {
            token_ids,
            tokens: Vec::new(),
            logprobs: logprobs.iter().map(|&l| f64::from(l)).collect(),
        }
    }

    /// From a chat-completions choice's `logprobs` object (`{"content": [{"token", "logprob"}, …]}`);
    /// `None` when it has no such list or an entry lacks either field.
    pub fn from_openai(logprobs: &Value) -> Option<SamplerLogprobs> {
        let content = logprobs.get("content")?.as_array()?;
        let mut tokens = Vec::with_capacity(content.len());
        let mut lps = Vec::with_capacity(content.len());
        for entry in content {
            tokens.push(entry.get("token")?.as_str()?.to_string());
            lps.push(entry.get("logprob")?.as_f64()?);
        }
        let ids: Option<Vec<u32>> = tokens
            .iter()
            .map(|t| t.strip_prefix("token_id:")?.parse().ok())
            .collect();
        Some(match ids {
            Some(token_ids) if !token_ids.is_empty() => SamplerLogprobs {
                token_ids,
                tokens: Vec::new(),
                logprobs: lps,
            },
            _ => SamplerLogprobs {
                token_ids: Vec::new(),
                tokens,
                logprobs: lps,
            },
        })
    }

    /// Stores them on `msg`.
    pub fn attach(&self, msg: &mut Message) {
        if let Ok(v) = serde_json::to_value(self) {
            msg.extra.insert(KEY.into(), v);
        }
    }

    /// Those `msg` carries; `None` when it carries none, or a malformed set (one log-prob per token).
    pub fn of(msg: &Message) -> Option<SamplerLogprobs> {
        let s: SamplerLogprobs = serde_json::from_value(msg.extra.get(KEY)?.clone()).ok()?;
        let named = if s.token_ids.is_empty() {
            s.tokens.len()
        } else {
            s.token_ids.len()
        };
        (named == s.logprobs.len()).then_some(s)
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.logprobs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.logprobs.is_empty()
    }
}

/// `msg` as a chat-completions request sends it back: without the sampler's log-probs, which are the
/// trainer's business and no field of the chat API.
pub fn without(msg: &Message) -> Message {
    let mut m = msg.clone();
    m.extra.remove(KEY);
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Role;
    use serde_json::json;

    #[test]
    fn endpoint_logprobs_parse_as_texts_or_vllm_ids_and_round_trip_on_a_message() {
        let texts = SamplerLogprobs::from_openai(&json!({"content": [
            {"token": "你", "logprob": -0.5, "top_logprobs": []},
            {"token": "好", "logprob": -1.25}
        ]}))
        .unwrap();
        assert_eq!(texts.tokens, ["你", "好"]);
        assert!(texts.token_ids.is_empty());
        assert_eq!(texts.logprobs, [-0.5, -1.25]);
        let ids = SamplerLogprobs::from_openai(&json!({"content": [
            {"token": "token_id:17", "logprob": -0.5}, {"token": "token_id:3", "logprob": 0.0}
        ]}))
        .unwrap();
        assert_eq!(ids.token_ids, [17, 3]);
        assert!(SamplerLogprobs::from_openai(&json!({"content": [{"token": "x"}]})).is_none());
        assert!(SamplerLogprobs::from_openai(&Value::Null).is_none());

        let mut msg = Message::text(Role::Assistant, "你好");
        ids.attach(&mut msg);
        assert_eq!(SamplerLogprobs::of(&msg), Some(ids));
        assert!(!without(&msg).extra.contains_key(KEY));
        // One log-prob short: not trusted.
        msg.extra[KEY]["logprobs"] = json!([-0.5]);
        assert_eq!(SamplerLogprobs::of(&msg), None);
    }
}
