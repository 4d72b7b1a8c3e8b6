//! The model behind the engine: a [`CausalLm`] on a burn backend, loaded from a Hugging Face checkpoint
//! directory (or random-initialised from a preset for demos and tests, labelled as such by the server),
//! stepped with the model core's `prefill` and batched `decode_step`, with prompt prefixes reused
//! through the [`PrefixCache`].

use std::path::Path;

use anyhow::{Context, Result};
use burn::prelude::Backend;

use super::engine::{Prefilled, StepModel};
use super::prefix_cache::PrefixCache;
use crate::model::{Cache, CausalLm};

/// Tokens per prefix-cache block: a multiple of the DeltaNet chunk (64), so a prompt prefilled in
/// blocks goes through the same chunks as in one piece.
pub const PREFIX_BLOCK: usize = 256;
/// Default number of cached prefix states.
pub const PREFIX_ENTRIES: usize = 64;

/// A model on device `B` that the engine can step.
pub struct BurnModel<B: Backend> {
    pub model: CausalLm<B>,
    pub prefixes: PrefixCache<Cache<B>>,
}

impl<B: Backend> BurnModel<B> {
    pub fn load(dir: &Path, device: B::Device) -> Result<Self> {
        let model = CausalLm::load(dir, &device)
            .with_context(|| format!("loading the checkpoint in {}", dir.display()))?;
        Ok(Self::new(model))
    }

    pub fn new(model: CausalLm<B>) -> Self {
        BurnModel {
            model,
            prefixes: PrefixCache::new(PREFIX_BLOCK, PREFIX_ENTRIES),
        }
    }

    /// Keeps at most `entries` prefix states (0 disables prefix caching).
    pub fn with_prefix_cache(mut self, entries: usize) -> Self {
        self.prefixes = PrefixCache::new(PREFIX_BLOCK, entries);
        self
    }

    /// Random weights from a preset (`tiny`, `small`), deterministic in `seed`; for demos and tests.
    pub fn random(preset: &str, vocab_size: usize, seed: u64, device: B::Device) -> Result<Self> {
        let cfg = crate::model::presets::preset(preset, Some(vocab_size))?;
        Ok(Self::new(CausalLm::init(&cfg, seed, &device)?))
    }
}

impl<B: Backend> StepModel for BurnModel<B> {
    type State = Cache<B>;

    fn vocab_size(&self) -> usize {
        self.model.config.vocab_size
    }

    fn prefill(&mut self, prompt: &[u32]) -> Result<Prefilled<Cache<B>>> {
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
        let logits = self.model.prefill(&prompt[pos..], &mut state)?;
        Ok(Prefilled {
            state,
            logits,
            cached_tokens,
        })
    }

    fn decode(&self, tokens: &[u32], states: &mut [Cache<B>]) -> Result<Vec<Vec<f32>>> {
        self.model.decode_step(tokens, states)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::NdArray;

    fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    #[test]
    fn prefix_cached_prefill_equals_prefilling_from_scratch() {
        let cached = || BurnModel::<NdArray<f32>>::random("tiny", 300, 7, Default::default());
        let mut with_cache = cached().unwrap();
        let mut without = cached().unwrap().with_prefix_cache(0);
        let a: Vec<u32> = (0..600).map(|i| (i * 37 + 11) % 300).collect();
        let mut b = a[..530].to_vec();
        b.extend((0..70).map(|i| (i * 13 + 5) % 300));

        let first = with_cache.prefill(&a).unwrap();
        assert_eq!(first.cached_tokens, 0);
        assert_eq!(
            with_cache.prefixes.len(),
            2,
            "states after blocks 256 and 512"
        );
        let mut hit = with_cache.prefill(&b).unwrap();
        assert_eq!(hit.cached_tokens, 512);
        let mut fresh = without.prefill(&b).unwrap();
        assert_eq!(fresh.cached_tokens, 0);
        assert!(max_abs_diff(&hit.logits, &fresh.logits) < 1e-4);

        // The restored state decodes like the fresh one.
        let x = with_cache
            .decode(&[3], std::slice::from_mut(&mut hit.state))
            .unwrap();
        let y = without
            .decode(&[3], std::slice::from_mut(&mut fresh.state))
            .unwrap();
        assert!(max_abs_diff(&x[0], &y[0]) < 1e-4);
    }
}
