//! The model behind the engine: a [`CausalLm`] on a burn backend, loaded from a Hugging Face checkpoint
//! directory (or random-initialised from a preset for demos and tests, labelled as such by the server),
//! stepped with the model core's `prefill` and batched `decode_step`.

use std::path::Path;

use anyhow::{Context, Result};
use burn::prelude::Backend;

use super::engine::StepModel;
use crate::model::{Cache, CausalLm};

/// A model on device `B` that the engine can step.
pub struct BurnModel<B: Backend> {
    pub model: CausalLm<B>,
}

impl<B: Backend> BurnModel<B> {
    pub fn load(dir: &Path, device: B::Device) -> Result<Self> {
        let model = CausalLm::load(dir, &device)
            .with_context(|| format!("loading the checkpoint in {}", dir.display()))?;
        Ok(BurnModel { model })
    }

    /// Random weights from a preset (`tiny`, `small`), deterministic in `seed`; for demos and tests.
    pub fn random(preset: &str, vocab_size: usize, seed: u64, device: B::Device) -> Result<Self> {
        let cfg = crate::model::presets::preset(preset, Some(vocab_size))?;
        Ok(BurnModel {
            model: CausalLm::init(&cfg, seed, &device)?,
        })
    }
}

impl<B: Backend> StepModel for BurnModel<B> {
    type State = Cache<B>;

    fn vocab_size(&self) -> usize {
        self.model.config.vocab_size
    }

    fn prefill(&self, prompt: &[u32]) -> Result<(Cache<B>, Vec<f32>)> {
        let mut cache = self.model.new_cache();
        let logits = self.model.prefill(prompt, &mut cache)?;
        Ok((cache, logits))
    }

    fn decode(&self, tokens: &[u32], states: &mut [Cache<B>]) -> Result<Vec<Vec<f32>>> {
        self.model.decode_step(tokens, states)
    }
}
