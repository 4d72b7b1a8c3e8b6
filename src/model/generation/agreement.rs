//! How closely a model follows a reference on the reference's own greedy output: the measure of
//! what bf16 or int8 weights (`--dtype`) cost against f32. Comparing two free-running generations
//! says little (one early flip changes everything after it), so the other model is fed the
//! reference's tokens (teacher forcing) and each decoded position's logits are compared.

use super::sampling::argmax;
use crate::model::CausalLm;
use anyhow::{bail, Result};
use burn::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Agreement {
    /// Decoded positions compared.
    pub positions: usize,
    /// Positions where both models' greedy choice is the same token.
    pub same_argmax: usize,
    /// Largest |logit difference| over all positions and the vocabulary.
    pub max_abs_diff: f32,
    /// Largest |logit| of the reference, for scale.
    pub max_abs_logit: f32,
}

impl Agreement {
    pub fn rate(&self) -> f64 {
        self.same_argmax as f64 / self.positions.max(1) as f64
    }
}

/// Prefills `prompt` into both models, lets `reference` decode `steps` tokens greedily, feeds the
/// same tokens to `other`, and compares the logits that chose each token (`steps` positions).
pub fn agreement<B: Backend>(
    reference: &CausalLm<B>,
    other: &CausalLm<B>,
    prompt: &[u32],
    steps: usize,
) -> Result<Agreement> {
    if reference.config.vocab_size != other.config.vocab_size {
        bail!("the models have different vocabularies");
    }
    let (mut ref_cache, mut other_cache) = (reference.new_cache(), other.new_cache());
    let mut want = reference.prefill(prompt, &mut ref_cache)?;
    let mut got = other.prefill(prompt, &mut other_cache)?;
    let mut a = Agreement {
        positions: 0,
        same_argmax: 0,
        max_abs_diff: 0.0,
        max_abs_logit: 0.0,
    };
    for step in 0..steps {
        let token = argmax(&want);
        a.positions += 1;
        a.same_argmax += usize::from(argmax(&got) == token);
        for (w, g) in want.iter().zip(&got) {
            a.max_abs_diff = a.max_abs_diff.max((w - g).abs());
            a.max_abs_logit = a.max_abs_logit.max(w.abs());
        }
        if step + 1 < steps {
            let token = token as u32;
            want = reference
                .decode_step(&[token], std::slice::from_mut(&mut ref_cache))?
                .remove(0);
            got = other
                .decode_step(&[token], std::slice::from_mut(&mut other_cache))?
                .remove(0);
        }
    }
    Ok(a)
}
