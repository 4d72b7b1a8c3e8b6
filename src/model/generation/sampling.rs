//! Token sampling: temperature, top-k and top-p (nucleus) over one row of logits, driven by a
//! seeded generator so that the same seed and logits always give the same tokens.
//!
//! The returned log-probability is always `log_softmax(logits)[token]` of the model's *raw*
//! distribution (temperature 1, no top-k/top-p truncation): that is the policy's probability
//! of the token, which on-policy distillation and RL need, independent of how it was drawn
//! (vLLM's `logprobs` with `logprobs-mode=raw_logprobs`).

use crate::rng::Rng;
use anyhow::{bail, Result};

/// How to pick tokens for one request. `temperature == 0` is greedy decoding.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingParams {
    /// Logits are divided by it before sampling; 0 picks the arg-max.
    pub temperature: f32,
    /// Keep the smallest set of most likely tokens whose probability reaches `top_p` (1 = off).
    pub top_p: f32,
    /// Keep only the `top_k` most likely tokens (0 = off).
    pub top_k: usize,
    /// Seed of this request's random stream.
    pub seed: u64,
    /// Upper bound on generated tokens.
    pub max_tokens: usize,
    /// Text stop strings (need a tokenizer; the stop string itself is not returned).
    pub stop: Vec<String>,
    /// Generation ends after any of these tokens (the token is returned).
    pub stop_token_ids: Vec<u32>,
    /// Return the log-probability of each generated token.
    pub logprobs: bool,
}

impl Default for SamplingParams {
    fn default() -> Self {
        Self {
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            seed: 0,
            max_tokens: 256,
            stop: Vec::new(),
            stop_token_ids: Vec::new(),
            logprobs: false,
        }
    }
}

impl SamplingParams {
    /// Greedy decoding of up to `max_tokens` tokens.
    pub fn greedy(max_tokens: usize) -> Self {
        Self {
            temperature: 0.0,
            max_tokens,
            ..Self::default()
        }
    }

    /// Rejects values that have no meaning, naming the field and the accepted range.
    pub fn validate(&self) -> Result<()> {
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            bail!(
                "temperature must be a finite number >= 0 (0 = greedy), got {}",
                self.temperature
            );
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            bail!("top_p must be in (0, 1] (1 = off), got {}", self.top_p);
        }
        if self.max_tokens == 0 {
            bail!("max_tokens must be at least 1");
        }
        if self.stop.iter().any(String::is_empty) {
            bail!("stop strings must not be empty");
        }
        Ok(())
    }

    pub fn is_greedy(&self) -> bool {
        self.temperature == 0.0
    }
}

/// One drawn token and its log-probability under the raw model distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampled {
    pub token: u32,
    pub logprob: f32,
}

/// Draws tokens for one sequence; owns that sequence's random stream.
#[derive(Debug, Clone)]
pub struct Sampler {
    params: SamplingParams,
    rng: Rng,
}

impl Sampler {
    pub fn new(params: &SamplingParams) -> Self {
        Self {
            params: params.clone(),
            rng: Rng::derive(params.seed, "sampling"),
        }
    }

    pub fn params(&self) -> &SamplingParams {
        &self.params
    }

    /// Picks the next token from one row of logits (`len == vocab_size`).
    pub fn sample(&mut self, logits: &[f32]) -> Sampled {
        let token = if self.params.is_greedy() {
            argmax(logits)
        } else {
            self.draw(logits)
        };
        Sampled {
            token: token as u32,
            logprob: log_softmax_at(logits, token),
        }
    }

    fn draw(&mut self, logits: &[f32]) -> usize {
        let p = &self.params;
        let inv_t = 1.0 / p.temperature;
        // Candidates (token, scaled logit). Without truncation we sample from the whole row and
        // skip the sort, which dominates the cost at large vocabularies.
        let mut cand: Vec<(usize, f32)> = logits
            .iter()
            .enumerate()
            .map(|(i, &l)| (i, l * inv_t))
            .collect();
        let truncate = (p.top_k > 0 && p.top_k < cand.len()) || p.top_p < 1.0;
        if truncate {
            let by_value =
                |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
            if p.top_k > 0 && p.top_k < cand.len() {
                cand.select_nth_unstable_by(p.top_k - 1, by_value);
                cand.truncate(p.top_k);
            }
            cand.sort_unstable_by(by_value);
        }
        let max = cand.iter().map(|c| c.1).fold(f32::NEG_INFINITY, f32::max);
        let mut weights: Vec<f64> = cand.iter().map(|c| ((c.1 - max) as f64).exp()).collect();
        if p.top_p < 1.0 {
            // Keep the shortest prefix (most likely first) whose mass reaches top_p; at least one.
            let total: f64 = weights.iter().sum();
            let mut acc = 0.0;
            let keep = weights
                .iter()
                .position(|w| {
                    acc += w / total;
                    acc >= p.top_p as f64
                })
                .map_or(weights.len(), |i| i + 1);
            weights.truncate(keep);
        }
        let total: f64 = weights.iter().sum();
        if !(total.is_finite() && total > 0.0) {
            // Degenerate row (all -inf or NaN): fall back to the arg-max rather than panic.
            return argmax(logits);
        }
        let mut u = self.rng.unit() * total;
        for (c, w) in cand.iter().zip(&weights) {
            if u < *w {
                return c.0;
            }
            u -= w;
        }
        cand[weights.len() - 1].0
    }
}

/// Index of the largest logit; ties go to the lower index (like `torch.argmax`).
pub fn argmax(logits: &[f32]) -> usize {
    let mut best = 0;
    for (i, &l) in logits.iter().enumerate() {
        if l > logits[best] {
            best = i;
        }
    }
    best
}

/// `log_softmax(logits)[token]`, computed stably in f64.
pub fn log_softmax_at(logits: &[f32], token: usize) -> f32 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let lse = max
        + logits
            .iter()
            .map(|&l| (l as f64 - max).exp())
            .sum::<f64>()
            .ln();
    (logits[token] as f64 - lse) as f32
}
