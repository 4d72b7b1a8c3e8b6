//! Micro-batching. Two plans:
//! * length bucketing: views sorted by length and cut into micro-batches of at most `batch_tokens`
//!   padded tokens, so rows of a batch have similar lengths and little padding;
//! * shared-prefix batching: views sorted by their tokens, so records rendered from one harness (the same
//!   system prompt and tools, thousands of tokens before the first viewer message) are neighbours; a
//!   micro-batch runs the prefix its rows share once and continues every row from that state, so it costs
//!   the prefix plus the padded suffixes instead of the padded full rows.
//!
//! Sequences are not packed: the gated-DeltaNet layers carry state along the sequence, so packing would
//! leak one record into the next without per-document state resets.
//!
//! The order of micro-batches is shuffled per epoch from `(seed, epoch)` alone, so a data cursor
//! `(epoch, position)` is the whole sampler state and a resumed run sees the same batches.

use anyhow::Result;
use burn::prelude::*;
use serde::{Deserialize, Serialize};

use super::view::TrainingView;
use crate::model::host::{floats, ints};
use crate::model::layers::gated_deltanet::CHUNK;
use crate::rng::Rng;

/// Micro-batches as lists of indices into `lengths`, cut from the rows sorted by length so that each
/// batch pads to at most `batch_tokens` (rows × the longest). A row longer than `batch_tokens` is a batch
/// of its own. (`serve` groups its prefill tails with it too.)
pub fn bucket(lengths: &[usize], batch_tokens: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| (lengths[i], i));
    // Sorted ascending, so the newest row is the longest: the padded size is rows × its length.
    cut(order, batch_tokens, |rows| {
        rows.len() * rows.last().map_or(0, |&i| lengths[i])
    })
}

/// Micro-batches of views that share prefixes: views in token order, cut where the next one would make
/// the batch cost more than `batch_tokens` (its shared prefix once plus every row's padded suffix, see
/// [`shared_prefix`]). A view longer than `batch_tokens` is a batch of its own.
pub fn bucket_shared(views: &[TrainingView], batch_tokens: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..views.len()).collect();
    order.sort_by(|&a, &b| views[a].tokens.cmp(&views[b].tokens).then(a.cmp(&b)));
    cut(order, batch_tokens, |rows| {
        let rows: Vec<&TrainingView> = rows.iter().map(|&i| &views[i]).collect();
        let p = shared_prefix(&rows);
        let longest = rows.iter().map(|v| v.len()).max().unwrap_or(0);
        p + rows.len() * (longest - p)
    })
}

/// Cuts `order` greedily into batches whose `cost` stays within `budget` (a single row always fits).
fn cut(order: Vec<usize>, budget: usize, cost: impl Fn(&[usize]) -> usize) -> Vec<Vec<usize>> {
    let mut batches = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    for i in order {
        current.push(i);
        if current.len() > 1 && cost(&current) > budget {
            current.pop();
            batches.push(std::mem::replace(&mut current, vec![i]));
        }
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

/// How many leading tokens every row shares and may compute once: the common prefix, ending before
/// the position that predicts the first trained token of any row (its hidden state must be in every
/// row's own suffix), rounded down to whole DeltaNet chunks so each suffix starts on the chunk boundary
/// a one-pass forward would use. 0 for a single row or when less than a chunk is shared.
pub fn shared_prefix(views: &[&TrainingView]) -> usize {
    let [first, rest @ ..] = views else { return 0 };
    if rest.is_empty() {
        return 0;
    }
    let common = rest
        .iter()
        .map(|v| {
            first
                .tokens
                .iter()
                .zip(&v.tokens)
                .take_while(|(a, b)| a == b)
                .count()
        })
        .min()
        .unwrap_or(0);
    let before_trained = views
        .iter()
        .map(|v| {
            let first_trained = v.loss_mask.iter().position(|&m| m == 1).unwrap_or(v.len());
            first_trained.saturating_sub(1)
        })
        .min()
        .unwrap_or(0);
    common.min(before_trained) / CHUNK * CHUNK
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
    /// `[1, P]`: the tokens every row starts with, run once (see [`shared_prefix`]); `None` when the
    /// rows are run whole. `ids` and everything below hold the rows after the prefix.
    pub prefix: Option<Tensor<B, 2, Int>>,
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
    /// Real (unpadded) tokens of the rows, the shared prefix counted in every row.
    pub tokens: usize,
    /// Tokens the forward pass runs: the prefix once plus the padded rows after it.
    pub computed: usize,
}

/// Right-pads rows with `pad` (masked out; causal attention keeps padding from affecting real tokens).
/// With `share_prefix`, the rows' [`shared_prefix`] becomes [`BatchTensors::prefix`] and the rows start
/// after it.
pub fn to_tensors<B: Backend>(
    views: &[&TrainingView],
    pad: u32,
    share_prefix: bool,
    device: &B::Device,
) -> Result<BatchTensors<B>> {
    let p = if share_prefix {
        shared_prefix(views)
    } else {
        0
    };
    let t = views.iter().map(|v| v.len()).max().unwrap_or(0) - p;
    anyhow::ensure!(t >= 2, "a batch needs sequences of at least 2 tokens");
    let b = views.len();
    let mut ids = Vec::with_capacity(b * t);
    let mut mask = Vec::with_capacity(b * (t - 1));
    let (mut positions, mut targets, mut weights) = (Vec::new(), Vec::new(), Vec::new());
    for (r, v) in views.iter().enumerate() {
        ids.extend(v.tokens[p..].iter().map(|&x| x as i64));
        ids.extend(std::iter::repeat_n(pad as i64, t + p - v.len()));
        for k in 1..t {
            let w = match (v.loss_mask.get(p + k), &v.weights) {
                (Some(1), Some(w)) => w[p + k],
                (Some(1), None) => 1.0,
                _ => 0.0,
            };
            mask.push(w);
            if w != 0.0 {
                positions.push((r * t + k - 1) as i64);
                targets.push(v.tokens[p + k] as i64);
                weights.push(w);
            }
        }
    }
    let trained = mask.iter().sum();
    let prefix = (p > 0).then(|| {
        let shared = views[0].tokens[..p].iter().map(|&x| x as i64).collect();
        ints(shared, [1, p], device)
    });
    let ids: Tensor<B, 2, Int> = ints(ids, [b, t], device);
    let k = positions.len();
    Ok(BatchTensors {
        prefix,
        trained_positions: ints(positions, [k], device),
        trained_targets: ints(targets, [k], device),
        trained_weights: floats(weights, [k], device),
        targets: ids.clone().narrow(1, 1, t - 1),
        ids,
        mask: floats(mask, [b, t - 1], device),
        trained,
        tokens: views.iter().map(|v| v.len()).sum(),
        computed: p + b * t,
    })
}
