//! The model behind the engine: a [`CausalLm`] on a burn backend, loaded from a Hugging Face checkpoint
//! directory (or random-initialised from a preset for demos and tests, labelled as such by the server),
//! prefilled with the model core's batched `extend_batch` (prompt prefixes reused through the
//! [`PrefixCache`]) and decoded on a persistent [`RunningBatch`], with MTP speculation for a lone
//! sequence when asked (`serve --mtp`).

use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, bail, ensure, Context, Result};
use burn::prelude::{Backend, Tensor};

use super::batch::RunningBatch;
use super::engine::{Advanced, Decoded, Partial, Piece, Prefilled, SpecRound, StepModel};
use super::mtp::{self, SpecState};
use super::prompt_logprobs::ModelScorer;
use crate::model::generation::generate::rows_to_host;
use crate::model::generation::prefix_cache::{PrefixCache, ENTRIES};
use crate::model::{Cache, CausalLm, WeightDtype};
use crate::train::batch::bucket;

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
    /// How the projections are stored; new weights load the same way.
    dtype: WeightDtype,
    device: B::Device,
    /// The prompt scorer serving `prompt_logprobs` beside the engine: handed every new set of weights.
    scorer: Option<Arc<ModelScorer<B>>>,
}

impl<B: Backend> BurnModel<B> {
    /// Loads `dir`, the projections stored as `dtype` (bf16/int8: the CPU backend only).
    pub fn load(dir: &Path, dtype: WeightDtype, device: B::Device) -> Result<Self> {
        let model = CausalLm::load_as(dir, dtype, &device)
            .with_context(|| format!("loading the checkpoint in {}", dir.display()))?;
        Ok(Self::new(model, dtype, device))
    }

    /// `model`, whose projections are stored as `dtype`, on `device`.
    pub fn new(model: CausalLm<B>, dtype: WeightDtype, device: B::Device) -> Self {
        BurnModel {
            model,
            prefixes: PrefixCache::new(ENTRIES),
            mtp_drafts: 0,
            dtype,
            device,
            scorer: None,
        }
    }

    /// A prompt scorer on the same weights, which follows them when new ones load.
    pub fn scorer(&mut self) -> Arc<ModelScorer<B>> {
        let scorer = Arc::new(ModelScorer::new(self.model.clone(), self.device.clone()));
        self.scorer = Some(scorer.clone());
        scorer
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
        self.prefixes = PrefixCache::new(entries);
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
        let model = CausalLm::init_as(&cfg, seed, dtype, &device)?;
        Ok(Self::new(model, dtype, device))
    }
}

impl<B: Backend> BurnModel<B> {
    /// The state after the longest cached prefix of `prompt` (or a fresh one).
    fn cached_start(&mut self, prompt: &[u32]) -> Partial<Cache<B>> {
        let (cached_tokens, state) = self
            .prefixes
            .longest(prompt)
            .unwrap_or_else(|| (0, self.model.new_cache()));
        Partial {
            state,
            pos: cached_tokens,
            cached_tokens,
        }
    }

    /// Advances `p` through `prompt[p.pos..to]`, stopping at each of the prefix cache's stops on
    /// the way to store the state there (so that a prompt later in the same batch, or a later
    /// request, that shares the prefix finds it).
    fn advance_to(&mut self, prompt: &[u32], p: &mut Partial<Cache<B>>, to: usize) -> Result<()> {
        let stops = self.prefixes.stops(prompt, p.pos, to);
        for b in stops
            .iter()
            .copied()
            .chain((stops.last() != Some(&to)).then_some(to))
        {
            if b > p.pos {
                self.model.advance(&prompt[p.pos..b], &mut p.state)?;
                p.pos = b;
            }
            if stops.contains(&b) {
                self.prefixes.insert(&prompt[..b], p.state.clone());
            }
        }
        Ok(())
    }

    /// Continues `partial` (or the longest cached prefix of `prompt`) through the prompt's prefix
    /// cache stops, the last of which is less than a DeltaNet chunk before its end. Checks the
    /// tail left for the batched forward, so that a bad prompt fails alone instead of failing its
    /// group.
    fn start_prefill(
        &mut self,
        prompt: &[u32],
        partial: Option<Partial<Cache<B>>>,
    ) -> Result<Partial<Cache<B>>> {
        let mut p = partial.unwrap_or_else(|| self.cached_start(prompt));
        let last_stop = self.prefixes.stops(prompt, p.pos, prompt.len()).pop();
        if let Some(b) = last_stop {
            self.advance_to(prompt, &mut p, b)?;
        }
        if p.pos == prompt.len() {
            bail!("empty prompt: give at least one token");
        }
        self.model.check_tokens(&prompt[p.pos..], p.pos, 0)?;
        Ok(p)
    }

    /// Where a decode step's prompt piece starts and ends: from `piece.partial` (or the prompt's
    /// longest cached prefix) to the prompt's end when the rest fits the budget, else by the
    /// budget but short of the last token (whose logits an admission needs); never past the
    /// prompt's next prefix-cache stop (stored after the step).
    fn plan_piece<'a>(&mut self, piece: Piece<'a, Cache<B>>) -> Result<PlannedPiece<'a, B>> {
        ensure!(
            piece.budget > 0,
            "a prompt piece needs a budget of at least one token"
        );
        let prompt = piece.prompt;
        let partial = piece.partial.unwrap_or_else(|| self.cached_start(prompt));
        let last = prompt.len().saturating_sub(1);
        let next_stop = self
            .prefixes
            .stops(prompt, partial.pos, last)
            .first()
            .copied();
        let to = match prompt.len() - partial.pos <= piece.budget {
            true => prompt.len(),
            false => (partial.pos + piece.budget).min(last),
        };
        let to = next_stop.map_or(to, |s| to.min(s));
        self.model
            .check_tokens(&prompt[partial.pos..to], partial.pos, 0)?;
        Ok(PlannedPiece {
            prompt,
            partial,
            to,
            stores: next_stop == Some(to),
        })
    }
}

/// A prompt piece about to run inside a decode step: `prompt[partial.pos..to]`.
struct PlannedPiece<'a, B: Backend> {
    prompt: &'a [u32],
    partial: Partial<Cache<B>>,
    to: usize,
    /// `to` is a prefix-cache stop: the state after the piece is stored.
    stores: bool,
}

impl<B: Backend> PlannedPiece<'_, B> {
    /// What the step made of the prompt, given the piece's final hidden states.
    fn advanced(mut self, hidden: Tensor<B, 3>, model: &CausalLm<B>) -> Result<Advanced<Cache<B>>> {
        self.partial.pos = self.to;
        if self.to < self.prompt.len() {
            return Ok(Advanced::Partial(self.partial));
        }
        let t = hidden.dims()[1];
        let logits = model.lm_logits(hidden.narrow(1, t - 1, 1));
        let logits = rows_to_host(logits.reshape([1, model.config.vocab_size]))?;
        Ok(Advanced::Prefilled(Prefilled {
            state: self.partial.state,
            logits: logits.into_iter().next().unwrap_or_default(),
            cached_tokens: self.partial.cached_tokens,
        }))
    }
}

impl<B: Backend> StepModel for BurnModel<B> {
    type State = Cache<B>;
    type Batch = RunningBatch<B>;

    fn vocab_size(&self) -> usize {
        self.model.config.vocab_size
    }

    /// New weights of the same vocabulary (the tokenizer stays), stored as before; the cached
    /// prefixes were computed with the old ones and go.
    fn load_weights(&mut self, dir: &Path) -> Result<()> {
        let model = CausalLm::load_as(dir, self.dtype, &self.device)
            .with_context(|| format!("loading the checkpoint in {}", dir.display()))?;
        ensure!(
            model.config.vocab_size == self.model.config.vocab_size,
            "{} has a vocabulary of {} tokens; the served tokenizer's model has {}",
            dir.display(),
            model.config.vocab_size,
            self.model.config.vocab_size
        );
        ensure!(
            self.mtp_drafts == 0 || model.mtp.is_some(),
            "{} has no MTP head, and this server speculates with one (--mtp)",
            dir.display()
        );
        if let Some(scorer) = &self.scorer {
            scorer.replace(model.clone());
        }
        self.model = model;
        self.prefixes = PrefixCache::new(self.prefixes.capacity());
        Ok(())
    }

    fn prefill_batch(
        &mut self,
        admitted: Vec<(&[u32], Option<Partial<Cache<B>>>)>,
    ) -> Vec<Result<Prefilled<Cache<B>>>> {
        let mut results: Vec<Option<Result<Prefilled<Cache<B>>>>> =
            admitted.iter().map(|_| None).collect();
        let mut prompts = Vec::with_capacity(admitted.len());
        let mut tails: Vec<(usize, Partial<Cache<B>>)> = Vec::new();
        for (i, (prompt, partial)) in admitted.into_iter().enumerate() {
            prompts.push(prompt);
            match self.start_prefill(prompt, partial) {
                Ok(s) => tails.push((i, s)),
                Err(e) => results[i] = Some(Err(e)),
            }
        }
        // Groups of similar tail lengths within the padded-token budget, as training buckets rows.
        let lens: Vec<usize> = tails
            .iter()
            .map(|(i, s)| prompts[*i].len() - s.pos)
            .collect();
        let mut tails: Vec<Option<(usize, Partial<Cache<B>>)>> =
            tails.into_iter().map(Some).collect();
        for rows in bucket(&lens, PREFILL_TOKENS) {
            let group: Vec<(usize, Partial<Cache<B>>)> = rows
                .iter()
                .map(|&k| tails[k].take().expect("bucket places each tail once"))
                .collect();
            let rows: Vec<&[u32]> = group.iter().map(|(i, s)| &prompts[*i][s.pos..]).collect();
            let (ids, started): (Vec<usize>, Vec<Partial<Cache<B>>>) = group.into_iter().unzip();
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

    fn new_batch(&self) -> RunningBatch<B> {
        RunningBatch::default()
    }

    fn join(&self, batch: &mut RunningBatch<B>, states: Vec<Cache<B>>) -> Result<()> {
        batch.join(states)
    }

    fn keep(&self, batch: &mut RunningBatch<B>, rows: &[usize]) -> Result<()> {
        batch.keep(rows)
    }

    fn decode(
        &mut self,
        tokens: &[u32],
        batch: &mut RunningBatch<B>,
        piece: Option<Piece<'_, Cache<B>>>,
    ) -> Result<Decoded<Cache<B>>> {
        let mut planned = piece.map(|p| self.plan_piece(p));
        let cache = batch
            .cache
            .as_mut()
            .ok_or_else(|| anyhow!("no running sequences to decode"))?;
        let rows: Vec<Vec<u32>> = tokens.iter().map(|&t| vec![t]).collect();
        let beside = match &mut planned {
            Some(Ok(p)) => Some((&p.prompt[p.partial.pos..p.to], &mut p.partial.state)),
            _ => None,
        };
        let (logits, hidden, piece_hidden) =
            self.model.extend_stacked_beside(&rows, cache, beside)?;
        let [n, _, v] = logits.dims();
        // A lone sequence may speculate next: keep its hidden state (and drop a head whose
        // cache misses this step's slot).
        batch.spec = (self.mtp_drafts > 0 && n == 1).then(|| SpecState::new(hidden));
        let logits = rows_to_host(logits.reshape([n, v]))?;
        let piece = planned.map(|p| {
            let p = p?;
            if p.stores {
                self.prefixes
                    .insert(&p.prompt[..p.to], p.partial.state.clone());
            }
            let hidden =
                piece_hidden.ok_or_else(|| anyhow!("the piece's forward gave no states"))?;
            p.advanced(hidden, &self.model)
        });
        Ok(Decoded { logits, piece })
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
    use crate::model::generation::prefix_cache::BLOCK as PREFIX_BLOCK;
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
        m.prefill_batch(vec![(prompt, None)])
            .pop()
            .unwrap()
            .unwrap()
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
            3,
            "states after blocks 256 and 512 and the last chunk boundary, 576"
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

    /// A running batch of one sequence, `prompt` prefilled.
    fn running_batch(m: &mut M, prompt: &[u32]) -> RunningBatch<NdArray<f32>> {
        let state = prefill_one(m, prompt).state;
        let mut batch = m.new_batch();
        m.join(&mut batch, vec![state]).unwrap();
        batch
    }

    /// Chunked prefill: a prompt prefilled in pieces of any budget inside the decode steps of a
    /// running sequence (prefix blocks stored on the way), the last piece ending its prefill, gives
    /// the logits of prefilling it in one piece, with and without a prefix cache; the running
    /// sequence decodes as it does alone; a later prompt sharing the prefix finds the blocks the
    /// pieces stored.
    #[test]
    fn pieces_inside_decode_steps_equal_one_piece() {
        let prompt: Vec<u32> = (0..700).map(|i| (i * 37 + 11) % 300).collect();
        let running = tokens(20, 3);
        let whole = prefill_one(&mut tiny().with_prefix_cache(0), &prompt);
        let decode_alone = |steps: usize| {
            let mut m = tiny().with_prefix_cache(0);
            let mut batch = running_batch(&mut m, &running);
            (0..steps as u32)
                .map(|i| m.decode(&[i % 300], &mut batch, None).unwrap().logits)
                .collect::<Vec<_>>()
        };
        for (entries, budget) in [(8, 100), (0, 64), (8, 7), (0, 1000)] {
            let mut m = tiny().with_prefix_cache(entries);
            let mut batch = running_batch(&mut m, &running);
            let mut partial = None;
            let mut positions = Vec::new();
            let mut logits = Vec::new();
            let prefilled = loop {
                let piece = Piece {
                    prompt: &prompt,
                    partial: partial.take(),
                    budget,
                };
                let step = logits.len() as u32;
                let d = m.decode(&[step % 300], &mut batch, Some(piece)).unwrap();
                logits.push(d.logits);
                match d.piece.unwrap().unwrap() {
                    Advanced::Partial(p) => {
                        positions.push(p.pos);
                        partial = Some(p);
                    }
                    Advanced::Prefilled(p) => {
                        positions.push(prompt.len());
                        break p;
                    }
                }
            };
            // No further than the budget (the last piece takes the whole rest), stopping
            // at the prefix cache's stops (blocks 256 and 512, the last chunk boundary 640).
            let mut from = 0;
            for &p in &positions {
                assert!(p > from && p - from <= budget, "{positions:?}");
                from = p;
            }
            if entries > 0 {
                assert!(
                    [256, 512, 640].iter().all(|s| positions.contains(s)),
                    "{positions:?}"
                );
            }
            for (step, (x, y)) in logits.iter().zip(decode_alone(logits.len())).enumerate() {
                let diff = max_abs_diff(&x[0], &y[0]);
                assert!(
                    diff < 1e-4,
                    "budget {budget}: decode step {step} differs by {diff}"
                );
            }
            let diff = max_abs_diff(&prefilled.logits, &whole.logits);
            assert!(diff < 1e-4, "entries {entries}, budget {budget}: {diff}");
            assert_eq!(prefilled.state.seq_len, prompt.len());
            if entries > 0 {
                assert_eq!(
                    m.prefixes.len(),
                    3,
                    "blocks 256 and 512 and the last chunk boundary, 640, stored by the pieces"
                );
                let again = prefill_one(&mut m, &prompt[..600]);
                assert_eq!(again.cached_tokens, 512);
            }
        }
    }

    /// A piece whose prompt cannot be prefilled fails alone: the step decodes the running
    /// sequence as without it.
    #[test]
    fn a_bad_piece_fails_alone() {
        let mut m = tiny();
        let mut batch = running_batch(&mut m, &tokens(10, 1));
        let bad: Vec<u32> = (0..50).map(|i| if i == 5 { 300 } else { i }).collect();
        let piece = Piece {
            prompt: &bad,
            partial: None,
            budget: 16,
        };
        let d = m.decode(&[1], &mut batch, Some(piece)).unwrap();
        assert_eq!(d.logits.len(), 1);
        let err = format!("{:#}", d.piece.unwrap().err().unwrap());
        assert!(err.contains("outside the vocabulary"), "{err}");
        assert_eq!(batch.cache.as_ref().unwrap().seq_len, 11);
    }

    /// An agent's next call (its prompt, the model's answer, a tool result) starts where the last
    /// prompt's prefill stopped, less than a chunk before its end; a prompt sharing a start with a
    /// stored one leaves a state where they part, where the next prompt with that start begins
    /// (another room after the same system prompt and tools). Logits as from scratch.
    #[test]
    fn the_next_turn_and_the_next_room_start_where_the_last_prompt_stopped() {
        let mut m = tiny();
        let mut fresh = tiny().with_prefix_cache(0);
        let mut check = |m: &mut M, prompt: &[u32], cached: usize| {
            let hit = prefill_one(m, prompt);
            assert_eq!(hit.cached_tokens, cached);
            let diff = max_abs_diff(&hit.logits, &prefill_one(&mut fresh, prompt).logits);
            assert!(diff < 1e-4, "{diff}");
        };
        let shared = tokens(350, 1);
        let room = |n: usize, seed: u32| [&shared[..], &tokens(n, seed)[..]].concat();
        let first = room(100, 2); // 450 tokens: stops at 256 and 448
        check(&mut m, &first, 0);
        let next_turn = [&first[..], &tokens(50, 3)[..]].concat();
        check(&mut m, &next_turn, 448);
        // Parts from the stored prompts at 350: a stop at 320, beside the block at 256.
        check(&mut m, &room(120, 4), 256);
        check(&mut m, &room(90, 5), 320);
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
        let together: Vec<_> = batched
            .prefill_batch(prompts.iter().map(|p| (p.as_slice(), None)).collect())
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let alone: Vec<_> = prompts
            .iter()
            .map(|p| prefill_one(&mut single, p))
            .collect();
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
        let prompts: [&[u32]; 4] = [&[1, 2, 3], &[1, 300], &[], &[4, 5]];
        let results = m.prefill_batch(prompts.iter().map(|&p| (p, None)).collect());
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
