//! Prompt log-probabilities (vLLM's `prompt_logprobs`): one teacher-forced forward over the prompt,
//! and for every prompt token after the first its log-probability given the tokens before it, its
//! rank in the vocabulary and the `k` most likely tokens at that position. This is what an on-policy
//! distillation trainer needs from a teacher it reaches over HTTP (`opd --teacher-url`).
//!
//! It runs on its own copy of the weights, beside the engine rather than in it: scoring is one forward
//! with logits at every position, which the engine's prefill (last-position logits into a decode
//! cache) does not produce, and keeping it apart leaves the batching loop as it is.

use std::sync::Mutex;

use anyhow::Result;
use burn::prelude::*;
use burn::tensor::activation::log_softmax;
use serde_json::{json, Map, Value};
use tokenizers::Tokenizer;

use crate::model::host::ints;
use crate::model::{ids_tensor, CausalLm};

/// The most alternatives a request may ask for per position (vLLM's default `max_logprobs`).
pub const MAX_PROMPT_LOGPROBS: usize = 20;

/// One prompt position `t ≥ 1`: the log-probability of `token` (the prompt's own token `t`) given the
/// tokens before it, its 1-based rank (the number of vocabulary entries at least as likely, itself
/// included, as vLLM counts it), and the `k` most likely tokens, best first.
#[derive(Debug, Clone, PartialEq)]
pub struct PositionLogprobs {
    pub token: u32,
    pub logprob: f32,
    pub rank: usize,
    pub top: Vec<(u32, f32)>,
}

/// Something that scores prompts: the served model's weights.
pub trait PromptScorer: Send + Sync {
    /// One entry per token of `prompt` after the first.
    fn score(&self, prompt: &[u32], top: usize) -> Result<Vec<PositionLogprobs>>;
}

/// A [`PromptScorer`] over a [`CausalLm`]: a clone of the served model (burn clones share the
/// weights' buffers), one prompt at a time.
pub struct ModelScorer<B: Backend> {
    model: Mutex<CausalLm<B>>,
    device: B::Device,
}

impl<B: Backend> ModelScorer<B> {
    pub fn new(model: CausalLm<B>, device: B::Device) -> Self {
        ModelScorer {
            model: Mutex::new(model),
            device,
        }
    }

    /// Scores with `model` from now on (the server loaded new weights).
    pub fn replace(&self, model: CausalLm<B>) {
        *self.model.lock().unwrap_or_else(|e| e.into_inner()) = model;
    }
}

impl<B: Backend> PromptScorer for ModelScorer<B>
where
    B::Device: Sync,
{
    fn score(&self, prompt: &[u32], top: usize) -> Result<Vec<PositionLogprobs>> {
        if prompt.len() < 2 {
            return Ok(Vec::new());
        }
        let model = self.model.lock().unwrap_or_else(|e| e.into_inner());
        model.check_tokens(prompt, 0, 0)?;
        let ids = ids_tensor::<B>(&[prompt.to_vec()], &self.device)?;
        let (hidden, _) = model.hidden_states(ids, None);
        let n = prompt.len() - 1;
        // Position t predicts token t + 1: the last position predicts nothing in the prompt.
        let hidden = hidden.narrow(1, 0, n);
        let logits = model.lm_logits(hidden);
        let v = logits.dims()[2];
        let lp = log_softmax(logits, 2).reshape([n, v]);
        let targets: Vec<i64> = prompt[1..].iter().map(|&t| i64::from(t)).collect();
        let targets = ints::<B, 2>(targets, [n, 1], &self.device);
        let picked = lp.clone().gather(1, targets);
        let rank = lp
            .clone()
            .greater_equal(picked.clone().expand([n, v]))
            .int()
            .sum_dim(1);
        let floats = |t: Tensor<B, 2>| {
            t.into_data()
                .convert::<f32>()
                .to_vec::<f32>()
                .map_err(|e| anyhow::anyhow!("{e:?}"))
        };
        let ints = |t: Tensor<B, 2, Int>| {
            t.into_data()
                .convert::<i64>()
                .to_vec::<i64>()
                .map_err(|e| anyhow::anyhow!("{e:?}"))
        };
        let picked = floats(picked)?;
        let rank = ints(rank)?;
        let k = top.min(v);
        let (top_lp, top_ids) = if k > 0 {
            let (v, i) = lp.topk_with_indices(k, 1);
            (floats(v)?, ints(i)?)
        } else {
            (Vec::new(), Vec::new())
        };
        Ok((0..n)
            .map(|t| PositionLogprobs {
                token: prompt[t + 1],
                logprob: picked[t],
                rank: rank[t] as usize,
                top: (0..k)
                    .map(|j| (top_ids[t * k + j] as u32, top_lp[t * k + j]))
                    .collect(),
            })
            .collect())
    }
}

/// vLLM's `prompt_logprobs` of a choice: `null` for the first token, then per token an object keyed by
/// token id (as a string) holding the prompt's own token and the top alternatives, each
/// `{"logprob", "rank", "decoded_token"}`.
pub fn prompt_logprobs_json(tokenizer: &Tokenizer, rows: &[PositionLogprobs]) -> Value {
    let piece = |id: u32| tokenizer.decode(&[id], false).unwrap_or_default();
    let mut out = vec![Value::Null];
    for r in rows {
        let mut m = Map::new();
        for (rank, (id, lp)) in r.top.iter().enumerate() {
            m.insert(
                id.to_string(),
                json!({"logprob": lp, "rank": rank + 1, "decoded_token": piece(*id)}),
            );
        }
        m.insert(
            r.token.to_string(),
            json!({"logprob": r.logprob, "rank": r.rank, "decoded_token": piece(r.token)}),
        );
        out.push(Value::Object(m));
    }
    Value::Array(out)
}
