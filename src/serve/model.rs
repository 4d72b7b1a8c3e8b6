//! The model behind the engine: a [`CausalLm`] on a burn backend, with its tokenizer and chat
//! template, loaded from a Hugging Face checkpoint directory (or random-initialised from a preset for
//! demos and tests, clearly labelled as such).

use std::path::Path;

use anyhow::{Context, Result};
use burn::prelude::Backend;
use burn::tensor::TensorData;

use super::engine::StepModel;
use crate::model::{ids_tensor, Cache, CausalLm};

/// A model on device `B` that the engine can step.
pub struct BurnModel<B: Backend> {
    pub model: CausalLm<B>,
    pub device: B::Device,
}

impl<B: Backend> BurnModel<B> {
    pub fn load(dir: &Path, device: B::Device) -> Result<Self> {
        let model = CausalLm::load(dir, &device)
            .with_context(|| format!("loading the checkpoint in {}", dir.display()))?;
        Ok(BurnModel { model, device })
    }

    /// Random weights from a preset (`tiny`, `small`), deterministic in `seed`; for demos and tests.
    pub fn random(preset: &str, vocab_size: usize, seed: u64, device: B::Device) -> Result<Self> {
        let cfg = crate::model::presets::preset(preset, Some(vocab_size))?;
        Ok(BurnModel {
            model: CausalLm::init(&cfg, seed, &device)?,
            device,
        })
    }
}

fn last_logits<B: Backend>(logits: burn::Tensor<B, 3>) -> Result<Vec<Vec<f32>>> {
    let [b, t, v] = logits.dims();
    let data: TensorData = logits.narrow(1, t - 1, 1).reshape([b, v]).into_data();
    let flat = data
        .convert::<f32>()
        .into_vec::<f32>()
        .map_err(|e| anyhow::anyhow!("reading logits: {e:?}"))?;
    Ok(flat.chunks(v).map(<[f32]>::to_vec).collect())
}

impl<B: Backend> StepModel for BurnModel<B>
where
    B::Device: Send,
{
    type State = Cache<B>;

    fn vocab_size(&self) -> usize {
        self.model.config.vocab_size
    }

    fn prefill(&self, prompt: &[u32]) -> Result<(Cache<B>, Vec<f32>)> {
        let mut cache = self.model.new_cache();
        let ids = ids_tensor::<B>(&[prompt.to_vec()], &self.device)?;
        let logits = self.model.forward_cached(ids, &mut cache).logits;
        let row = last_logits(logits)?.pop().unwrap_or_default();
        Ok((cache, row))
    }

    fn decode(&self, tokens: &[u32], states: &mut [Cache<B>]) -> Result<Vec<Vec<f32>>> {
        // Until the model core's batched `decode_step` lands, one forward per sequence.
        tokens
            .iter()
            .zip(states.iter_mut())
            .map(|(&t, cache)| {
                let ids = ids_tensor::<B>(&[vec![t]], &self.device)?;
                let logits = self.model.forward_cached(ids, cache).logits;
                Ok(last_logits(logits)?.pop().unwrap_or_default())
            })
            .collect()
    }
}
