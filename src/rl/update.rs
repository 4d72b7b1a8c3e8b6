//! The policy update of one RL step, given judged episodes as training views: score the completions,
//! take `∂L/∂logp` from [`policy_loss`], and step the optimizer on the NLL weighted by `−∂L/∂logp`
//! (the surrogate's own gradient), `num_iterations` times over the same episodes.

use anyhow::Result;
use burn::module::AutodiffModule;
use burn::tensor::backend::AutodiffBackend;

use super::policy_loss::{policy_loss, Completion, PolicyLoss, PolicyLossConfig};
use crate::model::CausalLm;
use crate::train::batch::{bucket_shared, to_tensors, BatchTensors};
use crate::train::optim::AdamW;
use crate::train::trainer::{micro_batch_loss, score_views, step_gradients};
use crate::train::view::{SegmentKind, TrainingView};

/// One completion (a policy turn) of a view: its trained tokens `first..first + len`, counted in the
/// order the view's trained tokens are scored, the record's message it renders, its kind and its
/// advantage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub view: usize,
    pub message: usize,
    pub first: usize,
    pub len: usize,
    pub kind: SegmentKind,
    pub advantage: f64,
}

/// The completions of `view` (its tool-call and reply turns), with the advantage of each kind.
pub fn spans_of(
    view_index: usize,
    view: &TrainingView,
    advantage: impl Fn(SegmentKind) -> f64,
) -> Vec<Span> {
    let trained: Vec<usize> = (0..view.len())
        .filter(|&t| view.loss_mask[t] == 1)
        .collect();
    view.segments
        .iter()
        .filter(|s| s.kind != SegmentKind::Context)
        .filter_map(|s| {
            let first = trained.iter().position(|&t| t >= s.start && t < s.end)?;
            let len = trained[first..].iter().take_while(|&&t| t < s.end).count();
            Some(Span {
                view: view_index,
                message: s.message,
                first,
                len,
                kind: s.kind,
                advantage: advantage(s.kind),
            })
        })
        .collect()
}

/// Log-probabilities of every view's trained tokens (in score order) and the entropy at each of them.
pub type Scored = (Vec<Vec<f64>>, Vec<f64>);

/// Scores `views` with `model`, teacher-forced, no gradients.
pub fn logprobs<B: burn::prelude::Backend>(
    model: &CausalLm<B>,
    views: &[TrainingView],
    pad: u32,
    batch_tokens: usize,
    device: &B::Device,
) -> Result<Scored> {
    let scores = score_views(model, views, pad, batch_tokens, device)?;
    let entropy = scores
        .iter()
        .flat_map(|s| s.entropy.iter().map(|&e| f64::from(e)))
        .collect();
    let lp = scores
        .into_iter()
        .map(|s| s.logprobs.into_iter().map(f64::from).collect())
        .collect();
    Ok((lp, entropy))
}

/// The settings of an update.
#[derive(Debug, Clone)]
pub struct UpdateConfig<'a> {
    pub loss: &'a PolicyLossConfig,
    pub num_iterations: usize,
    pub learning_rate: f64,
    pub max_grad_norm: f64,
    pub batch_tokens: usize,
    pub aux_coef: f64,
    pub pad: u32,
}

/// The completions an update trains on: the views, their spans, the sampling policy's log-probs
/// (`old`), for a KL term the reference's, and per-token advantages added to the spans' (OPD's
/// reverse-KL term), all per view in score order; and truncated importance weights against the
/// sampler (TIS), one list per span.
pub struct Batch<'a> {
    pub views: &'a [TrainingView],
    pub spans: &'a [Span],
    pub old: &'a [Vec<f64>],
    pub reference: Option<&'a [Vec<f64>]>,
    pub token_advantages: Option<&'a [Vec<f64>]>,
    pub tis_weights: Option<&'a [Vec<f64>]>,
}

/// Runs the `num_iterations` optimizer steps of one RL step; returns the model, the last iteration's
/// loss and its gradient norm (0 when no token carried a gradient: every advantage 0).
pub fn update<B: AutodiffBackend>(
    mut model: CausalLm<B>,
    opt: &mut AdamW<B::InnerBackend>,
    batch: &Batch<'_>,
    cfg: &UpdateConfig<'_>,
    device: &B::Device,
) -> Result<(CausalLm<B>, PolicyLoss, f64)> {
    if let Some(w) = batch.tis_weights {
        assert_eq!(w.len(), batch.spans.len(), "TIS weights per span");
    }
    let mut last = None;
    for iteration in 0..cfg.num_iterations.max(1) {
        let current = if iteration == 0 {
            batch.old.to_vec()
        } else {
            logprobs(
                &model.valid(),
                batch.views,
                cfg.pad,
                cfg.batch_tokens,
                device,
            )?
            .0
        };
        let completions: Vec<Completion> = batch
            .spans
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let range = s.first..s.first + s.len;
                Completion {
                    logp: &current[s.view][range.clone()],
                    old_logp: &batch.old[s.view][range.clone()],
                    ref_logp: batch.reference.map(|r| &r[s.view][range.clone()]),
                    advantage: s.advantage,
                    token_advantages: batch.token_advantages.map(|a| &a[s.view][range]),
                    tis_weights: batch.tis_weights.map(|w| w[i].as_slice()),
                }
            })
            .collect();
        let loss = policy_loss(&completions, cfg.loss);
        let weighted = weighted_views(batch, &loss);
        let grad_norm = if weighted.is_empty() {
            0.0
        } else {
            let micro: Vec<BatchTensors<B>> = bucket_shared(&weighted, cfg.batch_tokens)
                .iter()
                .map(|rows| {
                    let refs: Vec<&TrainingView> = rows.iter().map(|&i| &weighted[i]).collect();
                    to_tensors::<B>(&refs, cfg.pad, true, device)
                })
                .collect::<Result<_>>()?;
            let count = micro.len();
            let (_, mut buffer) = step_gradients(&model, micro, |m, b| {
                micro_batch_loss(m, b, 1.0, cfg.aux_coef, count, 0.0)
            })?;
            let norm = buffer.finite_norm(cfg.max_grad_norm)?;
            model = opt.step::<B, _>(model, cfg.learning_rate, &mut buffer);
            norm
        };
        last = Some((loss, grad_norm));
    }
    let (loss, grad_norm) = last.expect("at least one iteration");
    Ok((model, loss, grad_norm))
}

/// The views with per-token weights `−∂L/∂logp` (the NLL so weighted has the surrogate's gradient);
/// views whose every weight is 0 are left out.
fn weighted_views(batch: &Batch<'_>, loss: &PolicyLoss) -> Vec<TrainingView> {
    let mut weighted: Vec<TrainingView> = batch.views.to_vec();
    for (v, view) in weighted.iter_mut().enumerate() {
        let trained: Vec<usize> = (0..view.len())
            .filter(|&t| view.loss_mask[t] == 1)
            .collect();
        let mut w = vec![0.0f32; view.len()];
        for (s, g) in batch
            .spans
            .iter()
            .zip(&loss.grad)
            .filter(|(s, _)| s.view == v)
        {
            for (k, d) in g.iter().enumerate() {
                w[trained[s.first + k]] = -(*d as f32);
            }
        }
        view.weights = Some(w);
    }
    weighted.retain(|v| {
        v.weights
            .as_ref()
            .is_some_and(|w| w.iter().any(|&x| x != 0.0))
    });
    weighted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::view::Segment;

    /// A view laid out as the view builder lays out system, call, tool result + hook feedback, a
    /// rejected attempt (weight 0: context), the retried call and the reply.
    #[test]
    fn completions_are_the_trained_tokens_of_each_policy_turn() {
        let seg = |start, end, message, kind| Segment {
            start,
            end,
            message,
            kind,
        };
        let mut loss_mask = vec![0u8; 24];
        for t in (3..6).chain(12..15).chain(18..22) {
            loss_mask[t] = 1;
        }
        let view = TrainingView {
            id: "r".into(),
            tokens: (0..24).collect(),
            loss_mask,
            segments: vec![
                seg(0, 3, 0, SegmentKind::Context),
                seg(3, 7, 1, SegmentKind::ToolCall),
                seg(7, 12, 2, SegmentKind::Context),
                seg(12, 16, 4, SegmentKind::ToolCall),
                seg(16, 18, 5, SegmentKind::Context),
                seg(18, 23, 6, SegmentKind::Reply),
                seg(23, 24, 6, SegmentKind::Context),
            ],
            weights: None,
        };
        let spans = spans_of(7, &view, |kind| {
            if kind == SegmentKind::Reply {
                -1.0
            } else {
                0.5
            }
        });
        let got: Vec<(usize, usize, SegmentKind, f64)> = spans
            .iter()
            .map(|s| (s.first, s.len, s.kind, s.advantage))
            .collect();
        assert_eq!(
            got,
            [
                (0, 3, SegmentKind::ToolCall, 0.5),
                (3, 3, SegmentKind::ToolCall, 0.5),
                (6, 4, SegmentKind::Reply, -1.0)
            ]
        );
        assert!(spans.iter().all(|s| s.view == 7));
        let messages: Vec<usize> = spans.iter().map(|s| s.message).collect();
        assert_eq!(messages, [1, 4, 6]);
    }
}
