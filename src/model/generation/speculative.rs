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
//! Rejected drafts have already passed through the main model. Attention simply drops their
//! keys; a Gated DeltaNet state cannot be rewound, so the verifying forward keeps each layer's
//! state after every token ([`Cache::keep_token_states`]) and a rejection goes back to the one
//! after the last kept token. Where a cache cannot keep them (a GPU backend), it is restored from
//! a snapshot and the accepted tokens are run again.

use super::generate::{rows_to_host, Generation, Sequence};
use super::sampling::{argmax, SamplingParams};
use crate::model::{ids_tensor, Cache, CausalLm};
use anyhow::{bail, Context, Result};
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

/// What one speculative round did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Round {
    pub drafted: usize,
    /// Drafts equal to the token chosen at their position, not counting one at which the
    /// sequence ended.
    pub accepted: usize,
}

/// The MTP head's state for one sequence: its KV cache, and its last hidden state and logits
/// (which give the next round's first draft).
pub struct MtpHead<B: Backend> {
    cache: Cache<B>,
    hidden: Tensor<B, 3>,
    logits: Vec<f32>,
}

impl<B: Backend> MtpHead<B> {
    /// Runs the head over slots pairing the main model's final hidden states `hidden: [1, T, H]`
    /// with the tokens after them, `next` (T tokens, the last one chosen but not yet fed).
    pub fn prime(model: &CausalLm<B>, hidden: Tensor<B, 3>, next: &[u32]) -> Result<Self> {
        let mut cache = Cache::new(1);
        let (hidden, logits) = model.mtp_extend(hidden, next, &mut cache)?;
        Ok(Self {
            cache,
            hidden,
            logits,
        })
    }
}

/// One round for a sequence whose main-model state is `cache` and whose next input is `last`:
/// `k` drafts from `head`, one main-model forward over `[last, drafts…]`, and `choose` receives
/// the logits of each checked position in order and returns the token the sequence took there
/// (if any) and whether it goes on. Afterwards `cache` holds `last` and the accepted drafts and
/// `head` is advanced over them, unless the sequence ended (then both are stale).
pub fn round<B: Backend>(
    model: &CausalLm<B>,
    cache: &mut Cache<B>,
    head: &mut MtpHead<B>,
    last: u32,
    k: usize,
    choose: &mut dyn FnMut(&[f32]) -> (Option<u32>, bool),
) -> Result<Round> {
    let drafts = model.draft(&head.hidden, &head.logits, &head.cache, k)?;
    // Rejected drafts must leave the cache again: taken back token by token where the cache can
    // keep its per-token states, else by restoring a snapshot and feeding the kept tokens again.
    let snapshot = (!cache.keep_token_states()).then(|| cache.clone());
    let input: Vec<u32> = std::iter::once(last)
        .chain(drafts.iter().copied())
        .collect();
    let (logits, hidden) = model.extend_stacked(&[input.clone()], cache)?;
    let v = logits.dims()[2];
    let rows = rows_to_host(logits.reshape([k + 1, v]))?;
    let mut emitted = Vec::with_capacity(k + 1);
    for (j, row) in rows.iter().enumerate() {
        let (token, goes_on) = choose(row);
        emitted.extend(token);
        if !goes_on {
            cache.drop_last(0)?;
            return Ok(Round {
                drafted: k,
                accepted: j,
            });
        }
        if token.is_none() || drafts.get(j) != token.as_ref() {
            break;
        }
    }
    let kept = emitted.len();
    let hidden = match snapshot {
        _ if kept == k + 1 => {
            cache.drop_last(0)?;
            hidden
        }
        None => {
            cache.drop_last(k + 1 - kept)?;
            hidden.narrow(1, 0, kept)
        }
        Some(snapshot) => {
            *cache = snapshot;
            model.extend_stacked(&[input[..kept].to_vec()], cache)?.1
        }
    };
    // Head slot i pairs main hidden state i with the token after it: the emitted ones.
    (head.hidden, head.logits) = model.mtp_extend(hidden, &emitted, &mut head.cache)?;
    Ok(Round {
        drafted: k,
        accepted: kept - 1,
    })
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
    let shifted: Vec<u32> = prompt[1..].iter().chain([&seq.last()]).copied().collect();
    let mut head = MtpHead::prime(model, out.hidden, &shifted)?;

    while !seq.is_done() {
        // Never verify past max_tokens: the round emits up to k + 1 tokens.
        let k = draft_tokens.min(params.max_tokens - seq.len() - 1);
        let last = seq.last();
        let r = round(model, &mut cache, &mut head, last, k, &mut |row| {
            let token = seq.push(row, &mut stop_after);
            (Some(token), !seq.is_done())
        })?;
        stats.rounds += 1;
        stats.drafted += r.drafted;
        stats.accepted += r.accepted;
    }
    Ok((seq.finish(), stats))
}

impl<B: Backend> CausalLm<B> {
    /// Runs the MTP head over slots that pair `hidden: [1, T, H]` (main-model states, or the
    /// head's own output when drafting) with the `next` tokens, extending its KV `cache`.
    /// Returns the last slot's MTP hidden state `[1, 1, H]` and its logits.
    pub(crate) fn mtp_extend(
        &self,
        hidden: Tensor<B, 3>,
        next: &[u32],
        cache: &mut Cache<B>,
    ) -> Result<(Tensor<B, 3>, Vec<f32>)> {
        let t = next.len();
        let ids = ids_tensor(&[next.to_vec()], &hidden.device())?;
        let u = self.mtp_states(hidden, ids, Some(cache))?;
        let last = u.narrow(1, t - 1, 1);
        let v = self.config.vocab_size;
        let logits = rows_to_host(self.lm_logits(last.clone()).reshape([1, v]))?;
        Ok((last, logits.into_iter().next().context("empty MTP logits")?))
    }

    /// `k` greedy drafts: the first from the head's current logits, each next one by feeding
    /// the head its own output with the previous draft (on a copy of its cache, since the
    /// verified tokens replace these slots).
    pub(crate) fn draft(
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
