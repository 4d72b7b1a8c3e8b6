//! MTP speculative decoding in the engine (`serve --mtp`): while one sequence runs, each step is a
//! [`speculative::round`] on the persistent batch: the MTP head drafts up to `k` tokens, one
//! main-model forward over `[last, drafts…]` checks them, and the engine's own sampler chooses each
//! position's token from the main model's logits in order, so the output is what plain decoding
//! gives (greedy or seeded sampling) and only the speed changes.
//!
//! Concurrency 1 only: with several sequences a batched decode step already keeps the cores busy,
//! and rows accepting different numbers of drafts would leave ragged gaps in the batch.
//!
//! The head's KV cache starts when the sequence runs alone (from the main model's hidden state at
//! its last token) instead of at its prompt: the drafts of the first rounds see less context,
//! which can only lower the acceptance rate, never change the output.

use anyhow::{bail, Context, Result};
use burn::prelude::*;

use super::batch::RunningBatch;
use crate::model::generation::speculative::{self, MtpHead, Round};
use crate::model::CausalLm;

/// A lone sequence's speculation state.
pub struct SpecState<B: Backend> {
    /// Main-model final hidden state `[1, 1, H]` at the last token fed (primes the head).
    hidden: Tensor<B, 3>,
    head: Option<MtpHead<B>>,
}

impl<B: Backend> SpecState<B> {
    pub fn new(hidden: Tensor<B, 3>) -> Self {
        Self { hidden, head: None }
    }
}

/// One speculative round for the batch's only sequence, whose next input is `last` (see
/// [`speculative::round`] for `choose`).
pub fn round<B: Backend>(
    model: &CausalLm<B>,
    batch: &mut RunningBatch<B>,
    last: u32,
    k: usize,
    choose: &mut dyn FnMut(&[f32]) -> (Option<u32>, bool),
) -> Result<Round> {
    if batch.rows() != 1 {
        bail!("a speculative round needs exactly one running sequence");
    }
    let spec = batch
        .spec
        .as_mut()
        .context("no hidden state to draft from: decode one plain step first")?;
    if spec.head.is_none() {
        // The slot pairing the last fed token's hidden state with `last`.
        spec.head = Some(MtpHead::prime(model, spec.hidden.clone(), &[last])?);
    }
    let head = spec.head.as_mut().expect("primed above");
    let cache = batch.cache.as_mut().context("one running sequence")?;
    speculative::round(model, cache, head, last, k, choose)
}
