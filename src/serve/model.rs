//! The model behind the engine: a [`CausalLm`] on a burn backend, loaded from a Hugging Face checkpoint
//! directory (or random-initialised from a preset for demos and tests, labelled as such by the server),
//! prefilled with the model core's batched `extend_batch` (prompt prefixes reused through the
//! [`PrefixCache`]) and decoded on a persistent [`RunningBatch`], with MTP speculation for a lone
//! sequence when asked (`serve --mtp`).

use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use burn::prelude::Backend;

use super::batch::RunningBatch;
use super::engine::{Prefilled, SpecRound, StepModel, WarmUp};
use super::mtp::{self, SpecState};
use super::prefix_cache::PrefixCache;
use crate::model::{Cache, CausalLm, WeightDtype};
use crate::train::batch::bucket;

/// Tokens per prefix-cache block: a multiple of the DeltaNet chunk (64), so a prompt prefilled in
/// blocks goes through the same chunks as in one piece.
pub const PREFIX_BLOCK: usize = 256;
/// Default number of cached prefix states.
pub const PREFIX_ENTRIES: usize = 64;
/// Padded tokens (rows × longest tail) per batched prefill forward. Bounds the activations that
/// grow with the batch: attention scores (`rows × heads × 256-query block × keys`), the DeltaNet
/// chunk matrices and the MoE buffers, so that a burst of long agent prompts is prefilled in a
/// few forwards instead of one huge one. A longer tail still runs, alone.
pub const PREFILL_TOKENS: usize = 4096;

/// A model on device `B` that the engine can step.
pub struct BurnModel<B: Backend> {
    pub model: CausalLm<B>,
    pub prefixes: PrefixCache<Cache<B>>,
    /// MTP drafts per speculative round (0: no speculation).
    pub mtp_drafts: usize,
}

impl<B: Backend> BurnModel<B> {
    /// Loads `dir`, the projections stored as `dtype` (bf16/int8: the CPU backend only).
    pub fn load(dir: &Path, dtype: WeightDtype, device: B::Device) -> Result<Self> {
        let model = CausalLm::load_as(dir, dtype, &device)
            .with_context(|| format!("loading the checkpoint in {}", dir.display()))?;
        Ok(Self::new(model))
    }

    pub fn new(model: CausalLm<B>) -> Self {
        BurnModel {
            model,
            prefixes: PrefixCache::new(PREFIX_BLOCK, PREFIX_ENTRIES),
            mtp_drafts: 0,
        }
    }

    /// Speculates with the model's MTP head, `drafts` tokens per round, while one sequence runs.
    pub fn with_mtp(mut self, drafts: usize) -> Result<Self> {
        if self.model.mtp.is_none() {
            bail!(
                "--mtp: this checkpoint has no MTP head (no mtp.* weights; mtp_num_hidden_layers \
                 is 0); train one with `teacher-distill sft --mtp-loss-weight 0.3`"
            );
        }
        if drafts == 0 {
            bail!("--mtp-draft-tokens: draft at least one token per round");
        }
        self.mtp_drafts = drafts;
        Ok(self)
    }

    /// Keeps at most `entries` prefix states (0 disables prefix caching).
    pub fn with_prefix_cache(mut self, entries: usize) -> Self {
        self.prefixes = PrefixCache::new(PREFIX_BLOCK, entries);
        self
    }

    /// Random weights from a preset (`tiny`, `small`), deterministic in `seed`; for demos and tests.
    pub fn random(
        preset: &str,
        vocab_size: usize,
        seed: u64,
        dtype: WeightDtype,
        device: B::Device,
    ) -> Result<Self> {
        let cfg = crate::model::presets::preset(preset, Some(vocab_size))?;
        Ok(Self::new(CausalLm::init_as(&cfg, seed, dtype, &device)?))
    }
}

/// A prompt on its way: its cached prefix and whole prefix blocks are in `state`, `prompt[pos..]`
/// (the tail) remains to prefill.
struct Started<B: Backend> {
    state: Cache<B>,
    pos: usize,
    cached_tokens: usize,
}

impl<B: Backend> BurnModel<B> {
    /// Restores the longest cached prefix of `prompt`, then advances through the remaining whole
    /// prefix blocks one at a time, caching the state after each (so a prompt later in the same
    /// batch that shares them finds them). Checks the tail, so that a bad prompt fails alone
    /// instead of failing the batched forward of its group.
    fn start_prefill(&mut self, prompt: &[u32]) -> Result<Started<B>> {
        let (cached_tokens, mut state) = self
            .prefixes
            .longest(prompt)
            .unwrap_or_else(|| (0, self.model.new_cache()));
        let mut pos = cached_tokens;
        let boundaries: Vec<usize> = self.prefixes.boundaries(pos, prompt.len()).collect();
        for b in boundaries {
            self.model.advance(&prompt[pos..b], &mut state)?;
            self.prefixes.insert(&prompt[..b], state.clone());
            pos = b;
        }
        if pos == prompt.len() {
            bail!("empty prompt: give at least one token");
        }
        self.model.check_tokens(&prompt[pos..], pos, 0)?;
        Ok(Started {
            state,
            pos,
            cached_tokens,
        })
    }
}

impl<B: Backend> StepModel for BurnModel<B> {
    type State = Cache<B>;
    type Batch = RunningBatch<B>;

    fn vocab_size(&self) -> usize {
        self.model.config.vocab_size
    }

    fn prefill_batch(&mut self, prompts: &[&[u32]]) -> Vec<Result<Prefilled<Cache<B>>>> {
        let mut results: Vec<Option<Result<Prefilled<Cache<B>>>>> =
            prompts.iter().map(|_| None).collect();
        let mut tails: Vec<(usize, Started<B>)> = Vec::new();
        for (i, prompt) in prompts.iter().enumerate() {
            match self.start_prefill(prompt) {
                Ok(s) => tails.push((i, s)),
                Err(e) => results[i] = Some(Err(e)),
            }
        }
        // Groups of similar tail lengths within the padded-token budget, as training buckets rows.
        let lens: Vec<usize> = tails
            .iter()
            .map(|(i, s)| prompts[*i].len() - s.pos)
            .collect();
        let mut tails: Vec<Option<(usize, Started<B>)>> = tails.into_iter().map(Some).collect();
        for rows in bucket(&lens, PREFILL_TOKENS) {
            let group: Vec<(usize, Started<B>)> = rows
                .iter()
                .map(|&k| tails[k].take().expect("bucket places each tail once"))
                .collect();
            let rows: Vec<&[u32]> = group.iter().map(|(i, s)| &prompts[*i][s.pos..]).collect();
            let (ids, started): (Vec<usize>, Vec<Started<B>>) = group.into_iter().unzip();
            let cached: Vec<usize> = started.iter().map(|s| s.cached_tokens).collect();
            let mut states: Vec<Cache<B>> = started.into_iter().map(|s| s.state).collect();
            match self.model.extend_batch(&rows, &mut states) {
                Ok(logits) => {
                    for (((i, state), logits), cached_tokens) in
                        ids.into_iter().zip(states).zip(logits).zip(cached)
                    {
                        results[i] = Some(Ok(Prefilled {
                            state,
                            logits,
                            cached_tokens,
                        }));
                    }
                }
                // Each prompt was checked alone, so this is no single request's fault.
                Err(e) => {
                    for i in ids {
                        results[i] = Some(Err(anyhow!("batched prefill: {e:#}")));
                    }
                }
            }
        }
        results
            .into_iter()
            .map(|r| r.expect("every prompt has a result"))
            .collect()
    }

    /// Advances the prompt's whole prefix blocks after its longest cached prefix, up to `budget`
    /// tokens, storing each block's state in the prefix cache, where the admission's prefill
    /// finds them (an entry evicted meanwhile is only computed again).
    fn warm(&mut self, prompt: &[u32], budget: usize) -> Result<Option<WarmUp>> {
        if !self.prefixes.is_enabled() {
            return Ok(None);
        }
        let (cached, mut state) = self
            .prefixes
            .longest(prompt)
            .unwrap_or_else(|| (0, self.model.new_cache()));
        let mut pos = cached;
        let blocks: Vec<usize> = self
            .prefixes
            .boundaries(pos, prompt.len())
            .take_while(|&b| b - cached <= budget)
            .collect();
        for b in blocks {
            self.model.advance(&prompt[pos..b], &mut state)?;
            self.prefixes.insert(&prompt[..b], state.clone());
            pos = b;
        }
        Ok(Some(WarmUp {
            advanced: pos - cached,
            left: prompt.len() - pos,
        }))
    }

    fn new_batch(&self) -> RunningBatch<B> {
        RunningBatch::default()
    }

    fn join(&self, batch: &mut RunningBatch<B>, states: Vec<Cache<B>>) -> Result<()> {
        batch.join(states)
    }

    fn keep(&self, batch: &mut RunningBatch<B>, rows: &[usize]) -> Result<()> {
        batch.keep(rows)
    }

    fn decode(&self, tokens: &[u32], batch: &mut RunningBatch<B>) -> Result<Vec<Vec<f32>>> {
        let cache = batch
            .cache
            .as_mut()
            .ok_or_else(|| anyhow!("no running sequences to decode"))?;
        let rows: Vec<Vec<u32>> = tokens.iter().map(|&t| vec![t]).collect();
        let (logits, hidden) = self.model.extend_stacked(&rows, cache)?;
        let [n, _, v] = logits.dims();
        // A lone sequence may speculate next: keep its hidden state (and drop a head whose
        // cache misses this step's slot).
        batch.spec = (self.mtp_drafts > 0 && n == 1).then(|| SpecState::new(hidden));
        crate::model::generation::generate::rows_to_host(logits.reshape([n, v]))
    }

    fn draft_tokens(&self) -> usize {
        self.mtp_drafts
    }

    fn can_speculate(&self, batch: &RunningBatch<B>) -> bool {
        self.mtp_drafts > 0 && batch.rows() == 1 && batch.spec.is_some()
    }

    fn speculate(
        &self,
        batch: &mut RunningBatch<B>,
        last: u32,
        k: usize,
        choose: &mut dyn FnMut(&[f32]) -> (Option<u32>, bool),
    ) -> Result<SpecRound> {
        mtp::round(&self.model, batch, last, k, choose)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::NdArray;

    type M = BurnModel<NdArray<f32>>;

    fn tiny() -> M {
        M::random("tiny", 300, 7, WeightDtype::F32, Default::default()).unwrap()
    }

    fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    fn tokens(n: usize, seed: u32) -> Vec<u32> {
        (0..n as u32)
            .map(|i| (i * 37 + seed * 11 + 5) % 300)
            .collect()
    }

    fn prefill_one(m: &mut M, prompt: &[u32]) -> Prefilled<Cache<NdArray<f32>>> {
        m.prefill_batch(&[prompt]).pop().unwrap().unwrap()
    }

    #[test]
    fn prefix_cached_prefill_equals_prefilling_from_scratch() {
        let mut with_cache = tiny();
        let mut without = tiny().with_prefix_cache(0);
        let a: Vec<u32> = (0..600).map(|i| (i * 37 + 11) % 300).collect();
        let mut b = a[..530].to_vec();
        b.extend((0..70).map(|i| (i * 13 + 5) % 300));

        let first = prefill_one(&mut with_cache, &a);
        assert_eq!(first.cached_tokens, 0);
        assert_eq!(
            with_cache.prefixes.len(),
            2,
            "states after blocks 256 and 512"
        );
        let mut hit = prefill_one(&mut with_cache, &b);
        assert_eq!(hit.cached_tokens, 512);
        let mut fresh = prefill_one(&mut without, &b);
        assert_eq!(fresh.cached_tokens, 0);
        assert!(max_abs_diff(&hit.logits, &fresh.logits) < 1e-4);

        // The restored state decodes like the fresh one.
        let x = with_cache
            .model
            .decode_step(&[3], std::slice::from_mut(&mut hit.state))
            .unwrap();
        let y = without
            .model
            .decode_step(&[3], std::slice::from_mut(&mut fresh.state))
            .unwrap();
        assert!(max_abs_diff(&x[0], &y[0]) < 1e-4);
    }

    /// Prefills `prompts` in one batch on one model and one at a time on an identical one, after
    /// both prefilled `warm` (to fill their prefix caches), then decodes a few tokens for all
    /// sequences together on the first and for each alone on the second: the last logits, the
    /// cached prefix lengths and every decoded step's logits must agree. A wrong DeltaNet conv or
    /// recurrent state, or padding left in a cache, shows up in the decode steps.
    fn assert_batched_prefill_matches_single(
        mut batched: M,
        mut single: M,
        warm: &[Vec<u32>],
        prompts: &[Vec<u32>],
    ) {
        for w in warm {
            prefill_one(&mut batched, w);
            prefill_one(&mut single, w);
        }
        let refs: Vec<&[u32]> = prompts.iter().map(Vec::as_slice).collect();
        let together: Vec<_> = batched
            .prefill_batch(&refs)
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let alone: Vec<_> = refs.iter().map(|p| prefill_one(&mut single, p)).collect();
        for (r, (x, y)) in together.iter().zip(&alone).enumerate() {
            assert_eq!(x.cached_tokens, y.cached_tokens, "row {r}");
            let d = max_abs_diff(&x.logits, &y.logits);
            assert!(
                d < 1e-4,
                "prompt {r} ({} tokens): last logits differ by {d}",
                prompts[r].len()
            );
        }
        let mut states: Vec<_> = together.into_iter().map(|p| p.state).collect();
        let mut alone: Vec<_> = alone.into_iter().map(|p| p.state).collect();
        for step in 0..3u32 {
            let next: Vec<u32> = (0..prompts.len() as u32)
                .map(|r| (r * 7 + step * 3 + 1) % 300)
                .collect();
            let rows = batched.model.decode_step(&next, &mut states).unwrap();
            for (r, (tok, state)) in next.iter().zip(alone.iter_mut()).enumerate() {
                let one = single
                    .model
                    .decode_step(&[*tok], std::slice::from_mut(state))
                    .unwrap();
                let d = max_abs_diff(&rows[r], &one[0]);
                assert!(
                    d < 1e-4,
                    "prompt {r} ({} tokens): decode step {step} differs by {d}",
                    prompts[r].len()
                );
                assert_eq!(states[r].seq_len, prompts[r].len() + step as usize + 1);
            }
        }
    }

    /// Fresh prompts of different lengths (shorter than the conv history, across a DeltaNet chunk
    /// of 64) prefilled as one right-padded batch.
    #[test]
    fn batched_prefill_of_fresh_prompts_equals_one_at_a_time() {
        let prompts: Vec<Vec<u32>> = [1, 2, 5, 64, 97, 130]
            .iter()
            .enumerate()
            .map(|(i, &n)| tokens(n, i as u32))
            .collect();
        assert_batched_prefill_matches_single(
            tiny().with_prefix_cache(0),
            tiny().with_prefix_cache(0),
            &[],
            &prompts,
        );
    }

    /// Tails after a cached prefix (non-empty caches, of different lengths) batched with fresh
    /// prompts (empty caches).
    #[test]
    fn batched_prefill_after_cached_prefixes_equals_one_at_a_time() {
        let warm = tokens(300, 1);
        let mut prompts: Vec<Vec<u32>> = [1, 2, 70]
            .iter()
            .map(|&n| [&warm[..PREFIX_BLOCK], &tokens(n, n as u32)[..]].concat())
            .collect();
        prompts.push(tokens(3, 9));
        prompts.push(tokens(90, 8));
        // 512 + 3: advances a block of its own before its tail joins the batch.
        prompts.push([&warm[..], &tokens(215, 4)[..]].concat());
        assert_batched_prefill_matches_single(tiny(), tiny(), &[warm], &prompts);
    }

    #[test]
    fn a_bad_prompt_fails_alone() {
        let mut m = tiny();
        let results = m.prefill_batch(&[&[1, 2, 3], &[1, 300], &[], &[4, 5]]);
        assert!(results[0].is_ok() && results[3].is_ok());
        let err = |r: &Result<_>| format!("{:#}", r.as_ref().err().unwrap());
        assert!(err(&results[1]).contains("outside the vocabulary"));
        assert!(err(&results[2]).contains("empty prompt"));
    }

    #[test]
    fn tail_groups_stay_within_the_token_budget() {
        let lens = [1, 2, 3, 4, 10, 30];
        let groups = bucket(&lens, 12);
        assert_eq!(groups, vec![vec![0, 1, 2], vec![3], vec![4], vec![5]]);
    }
}
