//! Length bucketing: views sorted by length and cut into micro-batches of at most `batch_tokens` padded
//! tokens, so rows of a batch have similar lengths and little padding. Sequences are not packed: the
//! gated-DeltaNet layers carry state along the sequence, so packing would leak one record into the next
//! without per-document state resets.
//!
//! The order of micro-batches is shuffled per epoch from `(seed, epoch)` alone, so a data cursor
//! `(epoch, position)` is the whole sampler state and a resumed run sees the same batches.

use anyhow::Result;
use burn::prelude::*;
use burn::tensor::TensorData;
use serde::{Deserialize, Serialize};

use super::view::TrainingView;
use crate::sim::rng::Rng;

/// Micro-batches as lists of view indices, cut from views sorted by length. A view longer than
/// `batch_tokens` is a batch of its own.
pub fn bucket(lengths: &[usize], batch_tokens: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| (lengths[i], i));
    let mut batches = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    for i in order {
        // Sorted ascending, so the newcomer is the longest row: the padded size is rows × its length.
        if !current.is_empty() && (current.len() + 1) * lengths[i] > batch_tokens {
            batches.push(std::mem::take(&mut current));
        }
        current.push(i);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

/// Where the sampler is: the epoch and the next micro-batch within that epoch's order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    pub epoch: u64,
    pub position: usize,
}

/// An endless, epoch-shuffled stream of micro-batches.
pub struct Sampler {
    batches: Vec<Vec<usize>>,
    seed: u64,
    order: Vec<usize>,
    pub cursor: Cursor,
}

impl Sampler {
    pub fn new(batches: Vec<Vec<usize>>, seed: u64, cursor: Cursor) -> Sampler {
        let mut s = Sampler {
            order: Vec::new(),
            batches,
            seed,
            cursor,
        };
        s.order = s.epoch_order(cursor.epoch);
        s
    }

    fn epoch_order(&self, epoch: u64) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.batches.len()).collect();
        Rng::derive(self.seed, &format!("epoch-{epoch}")).shuffle(&mut order);
        order
    }

    pub fn batches_per_epoch(&self) -> usize {
        self.batches.len()
    }

    /// The next micro-batch (view indices), advancing the cursor.
    pub fn next_batch(&mut self) -> &[usize] {
        if self.cursor.position >= self.order.len() {
            self.cursor = Cursor {
                epoch: self.cursor.epoch + 1,
                position: 0,
            };
            self.order = self.epoch_order(self.cursor.epoch);
        }
        let b = self.order[self.cursor.position];
        self.cursor.position += 1;
        &self.batches[b]
    }
}

/// One micro-batch as tensors. Position t of `targets`/`mask` scores the prediction of token t+1.
#[derive(Clone)]
pub struct BatchTensors<B: Backend> {
    pub ids: Tensor<B, 2, Int>,
    pub targets: Tensor<B, 2, Int>,
    /// 1.0 where the target token is trained (its loss-mask bit, times its weight when the view has one).
    pub mask: Tensor<B, 2>,
    /// Sum of `mask`, the number of trained tokens.
    pub trained: f32,
    /// The trained positions alone, so the LM head runs only where the loss looks: flat indices into
    /// `[B * T]` of the positions whose next token is trained, those next tokens, and their weights.
    pub trained_positions: Tensor<B, 1, Int>,
    pub trained_targets: Tensor<B, 1, Int>,
    pub trained_weights: Tensor<B, 1>,
    /// Real (unpadded) tokens.
    pub tokens: usize,
}

/// Right-pads rows with `pad` (masked out; causal attention keeps padding from affecting real tokens).
pub fn to_tensors<B: Backend>(
    views: &[&TrainingView],
    pad: u32,
    device: &B::Device,
) -> Result<BatchTensors<B>> {
    let t = views.iter().map(|v| v.len()).max().unwrap_or(0);
    anyhow::ensure!(t >= 2, "a batch needs sequences of at least 2 tokens");
    let b = views.len();
    let mut ids = Vec::with_capacity(b * t);
    let mut mask = Vec::with_capacity(b * (t - 1));
    let (mut positions, mut targets, mut weights) = (Vec::new(), Vec::new(), Vec::new());
    for (r, v) in views.iter().enumerate() {
        ids.extend(v.tokens.iter().map(|&x| x as i64));
        ids.extend(std::iter::repeat(pad as i64).take(t - v.len()));
        for k in 1..t {
            let w = match (v.loss_mask.get(k), &v.weights) {
                (Some(1), Some(w)) => w[k],
                (Some(1), None) => 1.0,
                _ => 0.0,
            };
            mask.push(w);
            if w != 0.0 {
                positions.push((r * t + k - 1) as i64);
                targets.push(v.tokens[k] as i64);
                weights.push(w);
            }
        }
    }
    let trained = mask.iter().sum();
    let ids: Tensor<B, 2, Int> = Tensor::from_data(TensorData::new(ids, [b, t]), device);
    let k = positions.len();
    Ok(BatchTensors {
        trained_positions: Tensor::from_data(TensorData::new(positions, [k]), device),
        trained_targets: Tensor::from_data(TensorData::new(targets, [k]), device),
        trained_weights: Tensor::from_data(TensorData::new(weights, [k]), device),
        targets: ids.clone().narrow(1, 1, t - 1),
        ids,
        mask: Tensor::from_data(TensorData::new(mask, [b, t - 1]), device),
        trained,
        tokens: views.iter().map(|v| v.len()).sum(),
    })
}
