//! Generation: prefill prompts and decode one token for many sequences at once, and the sampling
//! loop on top. The server's continuous batching drives [`CausalLm::extend_batch`] and
//! [`CausalLm::decode_step`] itself; [`generate`] is the same loop for a fixed set of prompts,
//! and [`TextGenerator`] adds the tokenizer, chat template and text stop strings.

use super::prefix_cache::{self, PrefixCache};
use super::sampling::{Sampler, SamplingParams};
use super::speculative::{generate_speculative_until, SpecStats};
use crate::chat::{ChatTemplate, RenderInput};
use crate::model::host::ints;
use crate::model::layers::gated_deltanet::CHUNK;
use crate::model::{ids_tensor, Cache, CausalLm, Group, WeightDtype};
use anyhow::{anyhow, bail, Context, Result};
use burn::prelude::*;
use serde_json::Value as Json;
use std::path::Path;
use std::sync::Mutex;
use tokenizers::Tokenizer;

/// Why a sequence ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// A stop token or stop string.
    Stop,
    /// `max_tokens` reached.
    Length,
}

impl FinishReason {
    /// The OpenAI `finish_reason` string.
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
        }
    }
}

/// One finished sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// Generated tokens, including a final stop token.
    pub tokens: Vec<u32>,
    /// `log p(token)` under the raw model distribution, when requested.
    pub logprobs: Option<Vec<f32>>,
    pub finish_reason: FinishReason,
}

impl<B: Backend> CausalLm<B> {
    pub(crate) fn device(&self) -> B::Device {
        self.embed_tokens.weight.val().device()
    }

    /// Checks that `tokens` are in the vocabulary and that positions `start..start+len+extra`
    /// fit the model's context, with errors that say what to change.
    pub fn check_tokens(&self, tokens: &[u32], start: usize, extra: usize) -> Result<()> {
        let vocab = self.config.vocab_size;
        if let Some((pos, id)) = tokens
            .iter()
            .enumerate()
            .find(|(_, &id)| id as usize >= vocab)
        {
            bail!(
                "token id {id} at position {} is outside the vocabulary (vocab_size {vocab})",
                start + pos
            );
        }
        let end = start + tokens.len() + extra;
        let max = self.config.max_position_embeddings;
        if end > max {
            bail!(
                "{} prompt tokens + {extra} new tokens after {start} cached ones exceed the \
                 model's context of {max} positions (max_position_embeddings); shorten the \
                 prompt or lower max_tokens",
                tokens.len()
            );
        }
        Ok(())
    }

    /// Runs `prompt` through the model, continuing `cache`, and returns the logits at its last
    /// position (the distribution of the first new token).
    pub fn prefill(&self, prompt: &[u32], cache: &mut Cache<B>) -> Result<Vec<f32>> {
        let mut rows = self.extend_batch(&[prompt], std::slice::from_mut(cache))?;
        Ok(rows.pop().unwrap_or_default())
    }

    /// Feeds `tokens` into `cache` without computing logits (a prefill in pieces).
    pub fn advance(&self, tokens: &[u32], cache: &mut Cache<B>) -> Result<()> {
        if tokens.is_empty() {
            bail!("empty prompt: give at least one token");
        }
        self.check_tokens(tokens, cache.seq_len, 0)?;
        let ids = ids_tensor(&[tokens.to_vec()], &self.device())?;
        self.hidden_states(ids, Some(cache));
        Ok(())
    }

    /// One new token for each of N independent sequences, as one batched forward: row r feeds
    /// `tokens[r]` at position `caches[r].seq_len` and updates `caches[r]`. Returns each row's
    /// logits. The one-token case of [`Self::extend_batch`].
    pub fn decode_step(&self, tokens: &[u32], caches: &mut [Cache<B>]) -> Result<Vec<Vec<f32>>> {
        if tokens.len() != caches.len() {
            bail!(
                "decode_step got {} tokens for {} caches; give one token per sequence",
                tokens.len(),
                caches.len()
            );
        }
        let tails: Vec<&[u32]> = tokens.iter().map(std::slice::from_ref).collect();
        self.extend_batch(&tails, caches)
    }

    /// Feeds `tails[r]` to sequence r, continuing `caches[r]` (empty for a fresh prompt), for all
    /// rows in one batched forward, and returns the logits at each row's last new position. The
    /// caches may have different lengths (attention masks each row's key padding) and the tails too
    /// (right-padded with token 0 to the longest: causal attention keeps the padding from real
    /// positions, and DeltaNet keeps it out of its states, see [`GatedDeltaNet::forward`]).
    ///
    /// [`GatedDeltaNet::forward`]: crate::model::layers::gated_deltanet::GatedDeltaNet::forward
    pub fn extend_batch(&self, tails: &[&[u32]], caches: &mut [Cache<B>]) -> Result<Vec<Vec<f32>>> {
        if tails.len() != caches.len() {
            bail!(
                "extend_batch got {} token rows for {} caches; give one row per sequence",
                tails.len(),
                caches.len()
            );
        }
        for (r, (tail, cache)) in tails.iter().zip(caches.iter()).enumerate() {
            if tail.is_empty() {
                bail!("sequence {r}: no new tokens; give at least one");
            }
            self.check_tokens(tail, cache.seq_len, 0)
                .with_context(|| format!("sequence {r}"))?;
        }
        let lens: Vec<usize> = tails.iter().map(|t| t.len()).collect();
        let Some(&longest) = lens.iter().max() else {
            return Ok(Vec::new());
        };
        let rows: Vec<Vec<u32>> = tails
            .iter()
            .map(|t| {
                let mut row = t.to_vec();
                row.resize(longest, 0);
                row
            })
            .collect();
        let ids = ids_tensor(&rows, &self.device())?;
        let hidden = if let [cache] = caches {
            // A single sequence needs no padding.
            self.hidden_states(ids, Some(cache)).0
        } else {
            let mut batch = Cache::stack(caches)?;
            // Equal lengths (a decode step) have no padding to keep out of the states.
            let ragged = lens.iter().any(|&l| l < longest);
            let hidden = self
                .hidden_states_padded(ids, Some(&mut batch), ragged.then_some(&lens[..]))
                .0;
            for (slot, c) in caches.iter_mut().zip(batch.unstack()) {
                *slot = c;
            }
            hidden
        };
        // The LM head on each row's last real position only.
        let [n, t, h] = hidden.dims();
        let last: Vec<i64> = lens
            .iter()
            .enumerate()
            .map(|(r, &len)| (r * t + len - 1) as i64)
            .collect();
        let last = ints(last, [n], &hidden.device());
        let logits = self.lm_logits(
            hidden
                .reshape([n * t, h])
                .select(0, last)
                .reshape([n, 1, h]),
        );
        let v = logits.dims()[2];
        rows_to_host(logits.reshape([n, v]))
    }
}

impl<B: Backend> CausalLm<B> {
    /// Feeds `rows[r]` (all of one length) to row r of `batch`, a stacked batch ([`Cache::stack`])
    /// or a single sequence, which stays as it is: the serve engine's persistent batch decodes
    /// step after step without splitting it. Returns the logits `[B, T, V]` and the final hidden
    /// states `[B, T, H]` (for an MTP head) of every new position.
    pub fn extend_stacked(
        &self,
        rows: &[Vec<u32>],
        batch: &mut Cache<B>,
    ) -> Result<(Tensor<B, 3>, Tensor<B, 3>)> {
        let (logits, hidden, _) = self.extend_stacked_beside(rows, batch, None)?;
        Ok((logits, hidden))
    }

    /// [`Self::extend_stacked`], and in the same forward `piece` feeds its tokens into its own cache:
    /// a waiting prompt prefilled beside the running batch's decode step, sharing its feed-forward
    /// weight reads ([`Self::hidden_states_of_groups`]). Also returns the piece's final hidden
    /// states `[1, T, H]` (no logits: the caller takes the LM head where it needs it). The piece is
    /// checked first, so a bad one fails the call before anything runs.
    pub fn extend_stacked_beside(
        &self,
        rows: &[Vec<u32>],
        batch: &mut Cache<B>,
        piece: Option<(&[u32], &mut Cache<B>)>,
    ) -> Result<(Tensor<B, 3>, Tensor<B, 3>, Option<Tensor<B, 3>>)> {
        if rows.len() != batch.rows() {
            bail!(
                "extend_stacked got {} token rows for a batch of {}",
                rows.len(),
                batch.rows()
            );
        }
        for (r, (row, pos)) in rows.iter().zip(batch.positions()).enumerate() {
            self.check_tokens(row, pos, 0)
                .with_context(|| format!("sequence {r}"))?;
        }
        let device = self.device();
        let mut groups = vec![Group {
            ids: ids_tensor(rows, &device)?,
            cache: Some(batch),
            lens: None,
        }];
        if let Some((tokens, cache)) = piece {
            if tokens.is_empty() {
                bail!("an empty prompt piece: give at least one token");
            }
            self.check_tokens(tokens, cache.seq_len, 0)
                .context("the prompt piece")?;
            groups.push(Group {
                ids: ids_tensor(&[tokens.to_vec()], &device)?,
                cache: Some(cache),
                lens: None,
            });
        }
        let (hidden, _) = self.hidden_states_of_groups(groups);
        let mut hidden = hidden.into_iter();
        let batch_hidden = hidden.next().expect("the batch's group");
        Ok((
            self.lm_logits(batch_hidden.clone()),
            batch_hidden,
            hidden.next(),
        ))
    }
}

/// `[N, V]` logits to host rows.
pub(crate) fn rows_to_host<B: Backend>(logits: Tensor<B, 2>) -> Result<Vec<Vec<f32>>> {
    let v = logits.dims()[1];
    let flat = logits
        .into_data()
        .convert::<f32>()
        .into_vec::<f32>()
        .map_err(|e| anyhow!("reading logits: {e:?}"))?;
    Ok(flat.chunks(v).map(<[f32]>::to_vec).collect())
}

/// Generates for every prompt with its own sampling parameters (`params[i]` for `prompts[i]`),
/// decoding all unfinished sequences together. Text stop strings are ignored here (there is no
/// tokenizer); [`TextGenerator`] applies them.
pub fn generate<B: Backend>(
    model: &CausalLm<B>,
    prompts: &[Vec<u32>],
    params: &[SamplingParams],
) -> Result<Vec<Generation>> {
    generate_until(model, prompts, params, |_, _| false)
}

/// [`generate`] with an extra stop test: `stop_after(i, tokens)` is asked after each new token
/// of sequence `i`, and `true` ends it with [`FinishReason::Stop`].
pub fn generate_until<B: Backend>(
    model: &CausalLm<B>,
    prompts: &[Vec<u32>],
    params: &[SamplingParams],
    stop_after: impl FnMut(usize, &[u32]) -> bool,
) -> Result<Vec<Generation>> {
    let prefill = |prompt: &[u32]| {
        let mut cache = model.new_cache();
        let logits = model.prefill(prompt, &mut cache)?;
        Ok((cache, logits))
    };
    generate_after(model, prompts, params, prefill, stop_after, |_, _, _| {})
}

/// The sampling loop of [`generate_until`] with the prefill left to `prefill` (the prompt's
/// decoding state and the logits at its last position): from scratch, or from a cached prefix.
/// `mask(i, tokens, logits)` may change sequence `i`'s logits, given its tokens so far, before
/// each token is sampled (constrained decoding).
fn generate_after<B: Backend>(
    model: &CausalLm<B>,
    prompts: &[Vec<u32>],
    params: &[SamplingParams],
    mut prefill: impl FnMut(&[u32]) -> Result<(Cache<B>, Vec<f32>)>,
    mut stop_after: impl FnMut(usize, &[u32]) -> bool,
    mut mask: impl FnMut(usize, &[u32], &mut [f32]),
) -> Result<Vec<Generation>> {
    if prompts.len() != params.len() {
        bail!(
            "{} prompts but {} sampling parameter sets; give one per prompt",
            prompts.len(),
            params.len()
        );
    }
    for (i, (prompt, p)) in prompts.iter().zip(params).enumerate() {
        p.validate().with_context(|| format!("prompt {i}"))?;
        if prompt.is_empty() {
            bail!("prompt {i} is empty: give at least one token");
        }
        model
            .check_tokens(prompt, 0, p.max_tokens)
            .with_context(|| format!("prompt {i}"))?;
    }
    let mut seqs: Vec<Sequence> = params.iter().map(Sequence::new).collect();
    let mut caches: Vec<Cache<B>> = Vec::with_capacity(prompts.len());
    for (i, prompt) in prompts.iter().enumerate() {
        let (cache, mut logits) = prefill(prompt)?;
        mask(i, &[], &mut logits);
        seqs[i].push(&logits, |t| stop_after(i, t));
        caches.push(cache);
    }
    loop {
        let active: Vec<usize> = (0..seqs.len())
            .filter(|&i| seqs[i].finish.is_none())
            .collect();
        if active.is_empty() {
            break;
        }
        let tokens: Vec<u32> = active.iter().map(|&i| seqs[i].last()).collect();
        let mut batch: Vec<Cache<B>> = active
            .iter()
            .map(|&i| std::mem::replace(&mut caches[i], Cache::new(0)))
            .collect();
        let logits = model.decode_step(&tokens, &mut batch)?;
        for ((&i, cache), mut row) in active.iter().zip(batch).zip(logits) {
            caches[i] = cache;
            mask(i, &seqs[i].tokens, &mut row);
            seqs[i].push(&row, |t| stop_after(i, t));
        }
    }
    Ok(seqs.into_iter().map(Sequence::finish).collect())
}

/// A sequence being generated.
pub(crate) struct Sequence {
    sampler: Sampler,
    tokens: Vec<u32>,
    logprobs: Vec<f32>,
    finish: Option<FinishReason>,
}

impl Sequence {
    pub(crate) fn new(params: &SamplingParams) -> Self {
        Self {
            sampler: Sampler::new(params),
            tokens: Vec::with_capacity(params.max_tokens),
            logprobs: Vec::new(),
            finish: None,
        }
    }

    pub(crate) fn last(&self) -> u32 {
        *self
            .tokens
            .last()
            .expect("a sequence is prefilled before it decodes")
    }

    pub(crate) fn len(&self) -> usize {
        self.tokens.len()
    }

    pub(crate) fn is_done(&self) -> bool {
        self.finish.is_some()
    }

    /// Samples the next token from `logits`, appends it, and decides whether the sequence has
    /// ended. Returns the token.
    pub(crate) fn push(&mut self, logits: &[f32], stop_after: impl FnOnce(&[u32]) -> bool) -> u32 {
        let s = self.sampler.sample(logits);
        self.tokens.push(s.token);
        self.logprobs.push(s.logprob);
        let p = self.sampler.params();
        if p.stop_token_ids.contains(&s.token) || stop_after(&self.tokens) {
            self.finish = Some(FinishReason::Stop);
        } else if self.tokens.len() >= p.max_tokens {
            self.finish = Some(FinishReason::Length);
        }
        s.token
    }

    pub(crate) fn finish(self) -> Generation {
        let want_logprobs = self.sampler.params().logprobs;
        Generation {
            tokens: self.tokens,
            logprobs: want_logprobs.then_some(self.logprobs),
            finish_reason: self.finish.unwrap_or(FinishReason::Length),
        }
    }
}

/// A generation decoded to text, cut before the first stop string.
#[derive(Debug, Clone, PartialEq)]
pub struct TextGeneration {
    pub text: String,
    pub generation: Generation,
}

/// A model with its tokenizer and chat template: renders conversations, generates, decodes and
/// applies text stop strings. Generation also ends at the tokenizer's end-of-sequence tokens.
///
/// Prompts are prefilled a DeltaNet chunk at a time, and the states after some chunks are kept
/// ([`PrefixCache`]): an agent's turns share the harness prompt and the conversation so far, so
/// each turn prefills only what is new since the last turn (plus less than a chunk). A prompt goes
/// through the same pieces whether or not a prefix was cached, so its tokens do not depend on what
/// ran before it.
pub struct TextGenerator<B: Backend> {
    /// Private: new weights must go through [`Self::set_model`], which forgets the cached states.
    model: CausalLm<B>,
    pub tokenizer: Tokenizer,
    /// `None` when the directory has no chat template.
    pub template: Option<ChatTemplate>,
    /// Tokens that end a turn: `eos_token_id` of config.json and the tokenizer's `eos_token`.
    pub eos_token_ids: Vec<u32>,
    prefixes: Mutex<PrefixCache<Cache<B>>>,
}

impl<B: Backend> TextGenerator<B> {
    /// Loads a Hugging Face model directory: weights, `tokenizer.json`, and the chat template of
    /// `tokenizer_config.json` / `chat_template.jinja` when present.
    pub fn load(dir: &Path, device: &B::Device) -> Result<Self> {
        Self::load_as(dir, WeightDtype::F32, device)
    }

    /// [`Self::load`] with the projections stored as `dtype` (bf16/int8: CPU inference only).
    pub fn load_as(dir: &Path, dtype: WeightDtype, device: &B::Device) -> Result<Self> {
        let model = CausalLm::load_as(dir, dtype, device)?;
        let tokenizer = crate::tokenizer::load(dir)?;
        Self::new(model, tokenizer, ChatTemplate::from_model_dir(dir).ok())
    }

    pub fn new(
        model: CausalLm<B>,
        tokenizer: Tokenizer,
        template: Option<ChatTemplate>,
    ) -> Result<Self> {
        let tok_vocab = tokenizer.get_vocab_size(true);
        if tok_vocab > model.config.vocab_size {
            bail!(
                "the tokenizer has {tok_vocab} tokens but the model only {} (vocab_size); they \
                 do not belong together",
                model.config.vocab_size
            );
        }
        let mut eos_token_ids: Vec<u32> = match &model.config.eos_token_id {
            Some(Json::Number(n)) => n.as_u64().map(|x| vec![x as u32]).unwrap_or_default(),
            Some(Json::Array(a)) => a
                .iter()
                .filter_map(|x| x.as_u64())
                .map(|x| x as u32)
                .collect(),
            _ => Vec::new(),
        };
        let named_eos = template
            .as_ref()
            .and_then(|t| t.special_tokens().get("eos_token"))
            .and_then(Json::as_str)
            .and_then(|s| tokenizer.token_to_id(s));
        eos_token_ids.extend(named_eos.filter(|id| !eos_token_ids.contains(id)));
        Ok(Self {
            model,
            tokenizer,
            template,
            eos_token_ids,
            prefixes: Mutex::new(PrefixCache::new(prefix_cache::ENTRIES)),
        })
    }

    /// Keeps at most `entries` prefix states (0: every prompt is prefilled in one piece).
    pub fn with_prefix_cache(self, entries: usize) -> Self {
        Self {
            prefixes: Mutex::new(PrefixCache::new(entries)),
            ..self
        }
    }

    pub fn model(&self) -> &CausalLm<B> {
        &self.model
    }

    /// Generates with `model` from now on; the cached states of the old weights are dropped.
    pub fn set_model(&mut self, model: CausalLm<B>) {
        self.model = model;
        let prefixes = self.prefixes.get_mut().unwrap_or_else(|e| e.into_inner());
        *prefixes = PrefixCache::new(prefixes.capacity());
    }

    /// The decoding state after `prompt` and the logits at its last position: from the longest
    /// cached prefix of the prompt, through each further stop of the cache (stored on the way),
    /// then the rest in one piece.
    fn prefill(&self, prompt: &[u32]) -> Result<(Cache<B>, Vec<f32>)> {
        let mut prefixes = self.prefixes.lock().unwrap_or_else(|e| e.into_inner());
        let (mut pos, mut cache) = prefixes
            .longest(prompt)
            .unwrap_or_else(|| (0, self.model.new_cache()));
        // One DeltaNet chunk a piece up to the last stop, whether or not a state is stored at the
        // piece's end: stops depend on what the cache holds (where a prompt parts from a stored
        // one), and pieces of other lengths round differently, so only pieces that are the same
        // every time keep a prompt's logits, bit for bit, independent of what ran before it.
        let stops = prefixes.stops(prompt, pos, prompt.len());
        let last = stops.last().copied().unwrap_or(pos);
        for b in (pos + CHUNK..=last).step_by(CHUNK) {
            self.model.advance(&prompt[pos..b], &mut cache)?;
            if stops.contains(&b) {
                prefixes.insert(&prompt[..b], cache.clone());
            }
            pos = b;
        }
        let logits = self.model.prefill(&prompt[pos..], &mut cache)?;
        Ok((cache, logits))
    }

    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        // Rendered chat text already holds its special tokens; add none.
        Ok(self
            .tokenizer
            .encode(text, false)
            .map_err(|e| anyhow!("tokenizing the prompt: {e}"))?
            .get_ids()
            .to_vec())
    }

    /// Decodes generated tokens, keeping markup such as `<tool_call>` (it is not special) and
    /// dropping special tokens such as `<|im_end|>`.
    pub fn decode(&self, tokens: &[u32]) -> Result<String> {
        self.tokenizer
            .decode(tokens, true)
            .map_err(|e| anyhow!("decoding generated tokens: {e}"))
    }

    /// Renders a conversation with the chat template, ready for the assistant's reply.
    pub fn render_chat(&self, messages: &[Json], tools: Option<&[Json]>) -> Result<String> {
        let template = self.template.as_ref().ok_or_else(|| {
            anyhow!(
                "the model directory has no chat template (tokenizer_config.json chat_template)"
            )
        })?;
        template.render(&RenderInput {
            messages: messages.to_vec(),
            tools: tools.map(<[Json]>::to_vec),
            add_generation_prompt: true,
            ..RenderInput::default()
        })
    }

    /// Generates a continuation of each text prompt (`params[i]` for `prompts[i]`), stopping at
    /// end-of-sequence tokens, `stop_token_ids` and `stop` strings.
    pub fn generate_text(
        &self,
        prompts: &[String],
        params: &[SamplingParams],
    ) -> Result<Vec<TextGeneration>> {
        self.generate_text_after(prompts, params, |_, _, _| {})
    }

    /// [`Self::generate_text`] for one prompt, constrained: before each token is sampled,
    /// `mask(text, logits)` may change the logits given the text generated so far.
    pub fn generate_text_masked(
        &self,
        prompt: &str,
        params: &SamplingParams,
        mut mask: impl FnMut(&str, &mut [f32]),
    ) -> Result<TextGeneration> {
        let prompts = [prompt.to_string()];
        let mut gens =
            self.generate_text_after(&prompts, &[params.clone()], |_, tokens, logits| {
                // Decoding the whole text each step is quadratic, as for stop strings (below).
                if let Ok(text) = self.decode(tokens) {
                    mask(&text, logits)
                }
            })?;
        Ok(gens.remove(0))
    }

    fn generate_text_after(
        &self,
        prompts: &[String],
        params: &[SamplingParams],
        mask: impl FnMut(usize, &[u32], &mut [f32]),
    ) -> Result<Vec<TextGeneration>> {
        let ids = prompts
            .iter()
            .map(|p| self.encode(p))
            .collect::<Result<Vec<_>>>()?;
        let params: Vec<SamplingParams> = params.iter().map(|p| self.with_eos(p)).collect();
        let prefill = |prompt: &[u32]| self.prefill(prompt);
        let stop_after = |i: usize, tokens: &[u32]| self.hits_stop(tokens, &params[i].stop);
        let gens = generate_after(&self.model, &ids, &params, prefill, stop_after, mask)?;
        gens.into_iter()
            .zip(&params)
            .map(|(g, p)| self.to_text(g, &p.stop))
            .collect()
    }

    /// [`Self::generate_text`] for one prompt with MTP speculative decoding (same output).
    pub fn generate_text_speculative(
        &self,
        prompt: &str,
        params: &SamplingParams,
        draft_tokens: usize,
    ) -> Result<(TextGeneration, SpecStats)> {
        let ids = self.encode(prompt)?;
        let params = self.with_eos(params);
        let (g, stats) =
            generate_speculative_until(&self.model, &ids, &params, draft_tokens, |tokens| {
                self.hits_stop(tokens, &params.stop)
            })?;
        Ok((self.to_text(g, &params.stop)?, stats))
    }

    fn with_eos(&self, params: &SamplingParams) -> SamplingParams {
        let mut p = params.clone();
        p.stop_token_ids.extend(&self.eos_token_ids);
        p
    }

    /// Decoding the whole text after every token is quadratic, but stop strings are short and
    /// generations a few hundred tokens; matching across token boundaries matters more.
    fn hits_stop(&self, tokens: &[u32], stop: &[String]) -> bool {
        !stop.is_empty()
            && self
                .decode(tokens)
                .is_ok_and(|text| first_stop(&text, stop).is_some())
    }

    fn to_text(&self, generation: Generation, stop: &[String]) -> Result<TextGeneration> {
        let mut text = self.decode(&generation.tokens)?;
        if let Some(cut) = first_stop(&text, stop) {
            text.truncate(cut);
        }
        Ok(TextGeneration { text, generation })
    }
}

/// Byte offset of the earliest occurrence of any stop string.
fn first_stop(text: &str, stop: &[String]) -> Option<usize> {
    stop.iter().filter_map(|s| text.find(s.as_str())).min()
}
