//! Speculative decoding with the Qwen3.5 MTP head (vLLM semantics, see `layers/mtp.rs`): the head
//! drafts `k` tokens from the main model's last hidden state, one main-model forward over
//! `[last token, drafts…]` verifies them, and the longest prefix that agrees is kept plus one
//! token from the main model.
//!
//! Verification draws each position's token with the sequence's own [`super::sampling::Sampler`]
//! from the main model's logits, in order, and keeps a draft only when it equals the drawn token.
//! The sampler therefore sees exactly the logits and draws it would see without speculation: the
//! output is the same as [`super::generate::generate`] for the same seed, greedy or sampled
//! (up to float rounding between batched and one-token forwards), and only the speed changes.
//!
//! Rejected drafts have already passed through the main model. Attention could simply drop
//! their keys, but a Gated DeltaNet state cannot be rewound, so after a rejection the cache is
//! restored from a snapshot and the accepted tokens are run again.

use super::generate::{rows_to_host, Generation, Sequence};
use super::sampling::{argmax, SamplingParams};
use crate::model::{ids_tensor, Cache, CausalLm};
use anyhow::{anyhow, bail, Context, Result};
use burn::prelude::*;

/// How well the drafts fared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpecStats {
    /// Verification forwards.
    pub rounds: usize,
    pub drafted: usize,
    pub accepted: usize,
}

impl SpecStats {
    /// Accepted drafts / drafted tokens (0 when nothing was drafted).
    pub fn acceptance_rate(&self) -> f64 {
        if self.drafted == 0 {
            0.0
        } else {
            self.accepted as f64 / self.drafted as f64
        }
    }

    /// Tokens produced per main-model verification forward.
    pub fn tokens_per_round(&self, generated: usize) -> f64 {
        generated as f64 / self.rounds.max(1) as f64
    }
}

/// Generates for one prompt, drafting up to `draft_tokens` tokens per round with the MTP head.
pub fn generate_speculative<B: Backend>(
    model: &CausalLm<B>,
    prompt: &[u32],
    params: &SamplingParams,
    draft_tokens: usize,
) -> Result<(Generation, SpecStats)> {
    generate_speculative_until(model, prompt, params, draft_tokens, |_| false)
}

/// [`generate_speculative`] with an extra stop test on the tokens so far (text stop strings).
pub fn generate_speculative_until<B: Backend>(
    model: &CausalLm<B>,
    prompt: &[u32],
    params: &SamplingParams,
    draft_tokens: usize,
    mut stop_after: impl FnMut(&[u32]) -> bool,
) -> Result<(Generation, SpecStats)> {
    if model.mtp.is_none() {
        bail!("this model has no MTP head (mtp.* weights); generate without speculation");
    }
    if draft_tokens == 0 {
        bail!("draft at least one token per round");
    }
    params.validate()?;
    if prompt.is_empty() {
        bail!("empty prompt: give at least one token");
    }
    model.check_tokens(prompt, 0, params.max_tokens)?;
    let device = model.device();
    let mut stats = SpecStats::default();
    let mut seq = Sequence::new(params);

    let mut cache = model.new_cache();
    let out = model.forward_cached(ids_tensor(&[prompt.to_vec()], &device)?, &mut cache);
    let t = prompt.len();
    let v = out.logits.dims()[2];
    let last = rows_to_host(out.logits.narrow(1, t - 1, 1).reshape([1, v]))?;
    seq.push(&last[0], &mut stop_after);
    // MTP slot i pairs h_i with x_{i+1}: the prompt shifted left, then the sampled token.
    let mut mtp_cache = Cache::new(1);
    let shifted: Vec<u32> = prompt[1..].iter().chain([&seq.last()]).copied().collect();
    let (mut mtp_hidden, mut mtp_logits) =
        model.mtp_extend(out.hidden, &shifted, &mut mtp_cache)?;

    while !seq.is_done() {
        // Never verify past max_tokens: the round emits up to k + 1 tokens.
        let k = draft_tokens.min(params.max_tokens - seq.len() - 1);
        let drafts = model.draft(&mtp_hidden, &mtp_logits, &mtp_cache, k)?;

        let input: Vec<u32> = [seq.last()]
            .into_iter()
            .chain(drafts.iter().copied())
            .collect();
        let snapshot = cache.clone();
        let out = model.forward_cached(ids_tensor(&[input.clone()], &device)?, &mut cache);
        let rows = rows_to_host(out.logits.reshape([k + 1, v]))?;
        let mut accepted = 0;
        for (j, row) in rows.iter().enumerate() {
            let token = seq.push(row, &mut stop_after);
            if seq.is_done() || drafts.get(j) != Some(&token) {
                break;
            }
            accepted += 1;
        }
        stats.rounds += 1;
        stats.drafted += k;
        stats.accepted += accepted;
        if seq.is_done() {
            break;
        }
        let hidden = if accepted == k {
            out.hidden
        } else {
            cache = snapshot;
            let kept = input[..=accepted].to_vec();
            model
                .forward_cached(ids_tensor(&[kept], &device)?, &mut cache)
                .hidden
        };
        let emitted = &seq.tokens()[seq.len() - (accepted + 1)..];
        (mtp_hidden, mtp_logits) = model.mtp_extend(hidden, emitted, &mut mtp_cache)?;
    }
    Ok((seq.finish(), stats))
}

impl<B: Backend> CausalLm<B> {
    /// Runs the MTP head over slots that pair `hidden: [1, T, H]` (main-model states, or the
    /// head's own output when drafting) with the `next` tokens, extending its KV `cache`.
    /// Returns the last slot's MTP hidden state `[1, 1, H]` and its logits.
    fn mtp_extend(
        &self,
        hidden: Tensor<B, 3>,
        next: &[u32],
        cache: &mut Cache<B>,
    ) -> Result<(Tensor<B, 3>, Vec<f32>)> {
        let mtp = self.mtp.as_ref().ok_or_else(|| anyhow!("no MTP head"))?;
        let device = hidden.device();
        let t = next.len();
        let rope = self.rope(&cache.positions(), t, &device);
        let embeds = self
            .embed_tokens
            .forward(ids_tensor(&[next.to_vec()], &device)?);
        // All Qwen3.5 checkpoints have one MTP layer; every draft step uses layer 0.
        let (u, _) = mtp.forward(embeds, hidden, &rope, 0, Some(&mut cache.layers[0]));
        cache.seq_len += t;
        let last = u.narrow(1, t - 1, 1);
        let v = self.config.vocab_size;
        let logits = rows_to_host(self.lm_logits(last.clone()).reshape([1, v]))?;
        Ok((last, logits.into_iter().next().context("empty MTP logits")?))
    }

    /// `k` greedy drafts: the first from the head's current logits, each next one by feeding
    /// the head its own output with the previous draft (on a copy of its cache, since the
    /// verified tokens replace these slots).
    fn draft(
        &self,
        hidden: &Tensor<B, 3>,
        logits: &[f32],
        cache: &Cache<B>,
        k: usize,
    ) -> Result<Vec<u32>> {
        let mut drafts = Vec::with_capacity(k);
        if k == 0 {
            return Ok(drafts);
        }
        drafts.push(argmax(logits) as u32);
        let mut cache = cache.clone();
        let mut hidden = hidden.clone();
        while drafts.len() < k {
            let prev = drafts[drafts.len() - 1];
            let (h, l) = self.mtp_extend(hidden, &[prev], &mut cache)?;
            drafts.push(argmax(&l) as u32);
            hidden = h;
        }
        Ok(drafts)
    }
}
