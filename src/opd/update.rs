//! The update of the full-vocabulary loss (TRL GKD's generalized JSD): unlike the sampled-token loss,
//! it reaches the weights through every logit of every trained position, so it cannot go through the
//! RL update's weighted NLL. Each micro-batch runs the teacher (no gradients) and the student on the
//! same rows, takes [`generalized_jsd_sum`] of their logits at the trained positions — or, for a
//! teacher behind an endpoint, [`top_k_generalized_jsd_sum`] against the top k it returned — and the
//! step is the SFT trainer's: micro-batches summed, clipped, one AdamW step.

use std::borrow::Cow;
use std::sync::Mutex;

use anyhow::Result;
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;

use super::gjsd::{generalized_jsd_sum, top_k_generalized_jsd_sum, GjsdConfig};
use crate::model::host::{floats, ints};
use crate::model::CausalLm;
use crate::train::batch::{bucket_shared, to_tensors, BatchTensors};
use crate::train::optim::AdamW;
use crate::train::trainer::{batch_hidden_states, step_gradients, trained_logits, LossParts};
use crate::train::view::TrainingView;

/// Settings of one update.
#[derive(Debug, Clone, Copy)]
pub struct GjsdUpdate {
    pub loss: GjsdConfig,
    pub learning_rate: f64,
    pub max_grad_norm: f64,
    pub batch_tokens: usize,
    pub aux_coef: f64,
    pub pad: u32,
}

/// Where a micro-batch's teacher distribution comes from.
pub enum GjsdTeacher<'a, B: AutodiffBackend> {
    /// An autodiff-backend copy of an in-process teacher with no gradients (`no_grad`), run on the
    /// student's micro-batches as they are.
    Model(&'a CausalLm<B>),
    /// An endpoint's top k at every trained position, indexed like the step's views (see
    /// [`super::teacher::TeacherScores::top`]).
    TopK(&'a [Vec<Vec<(u32, f64)>>]),
}

/// One optimizer step of the mean divergence over the views' trained tokens; returns the model, that
/// mean and the gradient norm. View `v` is compared with `teachers[teacher_of[v]]`; a micro-batch
/// holds one teacher's views.
pub fn gjsd_update<B: AutodiffBackend>(
    model: CausalLm<B>,
    teachers: &[GjsdTeacher<'_, B>],
    teacher_of: &[usize],
    opt: &mut AdamW<B::InnerBackend>,
    views: &[TrainingView],
    cfg: &GjsdUpdate,
    device: &B::Device,
) -> Result<(CausalLm<B>, f64, f64)> {
    let tokens: usize = views.iter().map(TrainingView::trained_tokens).sum();
    anyhow::ensure!(tokens > 0, "no trained tokens in the step");
    // (teacher, the rows' indices into `views`, the rows' tensors)
    let mut micro: Vec<(usize, Vec<usize>, BatchTensors<B>)> = Vec::new();
    for k in 0..teachers.len() {
        let (at, mine) = views_of_teacher(views, teacher_of, k);
        for rows in bucket_shared(&mine, cfg.batch_tokens) {
            let refs: Vec<&TrainingView> = rows.iter().map(|&i| &mine[i]).collect();
            let tensors = to_tensors::<B>(&refs, cfg.pad, true, device)?;
            micro.push((k, rows.iter().map(|&i| at[i]).collect(), tensors));
        }
    }
    let count = micro.len();
    // Micro-batches run on their own threads; each takes a handle to its teacher's weights.
    let shared: Vec<Shared<'_, B>> = teachers
        .iter()
        .map(|t| match t {
            GjsdTeacher::Model(m) => Shared::Model(Mutex::new((*m).clone())),
            GjsdTeacher::TopK(top) => Shared::TopK(top),
        })
        .collect();
    let (parts, mut buffer) = step_gradients(&model, micro, |m, (k, rows, b)| {
        let (hidden, router_logits) = batch_hidden_states(m, b);
        let student = trained_logits(m, hidden, b);
        let sum = match &shared[*k] {
            Shared::Model(t) => {
                let t = t.lock().expect("teacher lock").clone();
                let (hidden, _) = batch_hidden_states(&t, b);
                let teacher_logits = trained_logits(&t, hidden, b).detach();
                generalized_jsd_sum(student, teacher_logits, &cfg.loss)
            }
            Shared::TopK(top) => {
                let (ids, logprobs) = top_k_tensors::<B>(top, rows, device)?;
                top_k_generalized_jsd_sum(student, ids, logprobs, cfg.loss.beta)
            }
        };
        let parts = LossParts {
            ce_sum: sum.clone().into_scalar().elem(),
            ..LossParts::default()
        };
        let mut total = sum.div_scalar(tokens as f64);
        if cfg.aux_coef > 0.0 {
            if let Some(aux) = m.aux_loss(&router_logits) {
                total = total + aux.mul_scalar(cfg.aux_coef / count as f64);
            }
        }
        Ok((total, parts))
    })?;
    let norm = buffer.finite_norm(cfg.max_grad_norm)?;
    let model = opt.step::<B, _>(model, cfg.learning_rate, &mut buffer);
    Ok((model, parts.ce_sum / tokens as f64, norm))
}

/// A teacher as the micro-batch threads share it.
enum Shared<'a, B: AutodiffBackend> {
    Model(Mutex<CausalLm<B>>),
    TopK(&'a [Vec<Vec<(u32, f64)>>]),
}

/// The teacher's top k of `rows`' trained positions as `[K, k]` ids and log-probabilities, in the
/// order of [`trained_logits`] (row by row, positions ascending).
fn top_k_tensors<B: AutodiffBackend>(
    top: &[Vec<Vec<(u32, f64)>>],
    rows: &[usize],
    device: &B::Device,
) -> Result<(Tensor<B, 2, Int>, Tensor<B, 2>)> {
    let positions: Vec<&Vec<(u32, f64)>> = rows.iter().flat_map(|&r| &top[r]).collect();
    let k = positions.first().map_or(0, |p| p.len());
    anyhow::ensure!(
        k > 0 && positions.iter().all(|p| p.len() == k),
        "the teacher's top-k log-probs are missing or of uneven length"
    );
    let ids: Vec<i64> = positions
        .iter()
        .flat_map(|p| p.iter().map(|&(id, _)| id as i64))
        .collect();
    let lps: Vec<f32> = positions
        .iter()
        .flat_map(|p| p.iter().map(|&(_, lp)| lp as f32))
        .collect();
    let n = positions.len();
    Ok((ints(ids, [n, k], device), floats(lps, [n, k], device)))
}

/// The positions and views of those of `views` that teacher `k` scores; borrowed as they are when it
/// scores them all (a run with one teacher copies nothing).
pub fn views_of_teacher<'a>(
    views: &'a [TrainingView],
    teacher_of: &[usize],
    k: usize,
) -> (Vec<usize>, Cow<'a, [TrainingView]>) {
    let mine: Vec<usize> = (0..views.len()).filter(|&v| teacher_of[v] == k).collect();
    if mine.len() == views.len() {
        return (mine, Cow::Borrowed(views));
    }
    let subset = mine.iter().map(|&v| views[v].clone()).collect();
    (mine, Cow::Owned(subset))
}
