//! The SFT training loop over training views: micro-batches from the length-bucketed sampler, masked
//! cross-entropy (+ router aux loss, + optional MTP loss), gradient accumulation, global-norm clipping,
//! AdamW with warmup + cosine, periodic dev loss and teacher-forced tool-call accuracy, metrics JSONL +
//! loss plot, atomic checkpoints and an exact `--resume`.
//!
//! Loss normalisation: the masked token losses of all micro-batches of one optimizer step are summed and
//! divided by the number of trained tokens in the whole step, so accumulating k micro-batches gives the
//! same gradient as one batch holding all of them (the router aux loss, a per-forward statistic, is the
//! mean over micro-batches).
//!
//! The seams for OPD/RL: [`trained_token_loss`] takes per-token weights through the batch, and the
//! loop only needs views; other stages build views with `weights` and reuse the optimiser and checkpoints.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result};
use burn::module::AutodiffModule;
use burn::prelude::*;
use burn::tensor::activation::log_softmax;
use burn::tensor::backend::AutodiffBackend;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use super::batch::{bucket_shared, to_tensors, BatchTensors, Sampler};
use super::checkpoint;
use super::metrics;
use super::optim::{fresh_leaves, AdamW, AdamWConfig, GradBuffer, LrSchedulerType};
use super::view::{SegmentKind, TrainingView};
use crate::model::cpu::spin_team;
use crate::model::host::{floats, ints};
use crate::model::train_ops::autodiff::is_cpu_autodiff;
use crate::model::{Cache, CausalLm};

/// Settings of one training run (TRL/transformers names where they exist).
#[derive(Debug, Clone)]
pub struct TrainConfig {
    /// Optimizer steps of the whole run (the schedule's length).
    pub max_steps: usize,
    pub learning_rate: f64,
    /// Tokens a micro-batch computes at most: its padded rows, a shared prompt prefix counted once.
    pub batch_tokens: usize,
    pub gradient_accumulation_steps: usize,
    pub warmup_steps: usize,
    pub lr_scheduler_type: LrSchedulerType,
    pub adamw: AdamWConfig,
    /// Global gradient-norm clip; 0 disables clipping.
    pub max_grad_norm: f64,
    pub seed: u64,
    /// Dev loss every this many steps (and at the end); 0 = only at the end.
    pub eval_steps: usize,
    /// Checkpoint every this many steps (and at the end); 0 = only at the end.
    pub save_steps: usize,
    /// Router load-balancing loss weight; `None` takes the model config's `router_aux_loss_coef`.
    pub router_aux_loss_coef: Option<f64>,
    /// Weight of the MTP head's next-next-token loss; 0 = off (the head is then left untouched).
    pub mtp_loss_weight: f64,
    /// End this session after this many steps, saving a checkpoint as if interrupted.
    pub stop_after: Option<usize>,
    /// End this session (with a checkpoint) once training has used this much wall time.
    pub max_seconds: Option<f64>,
}

/// Views to train on and to measure dev loss on, plus the padding token.
pub struct TrainData {
    pub train: Vec<TrainingView>,
    pub dev: Vec<TrainingView>,
    pub pad: u32,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    pub steps: usize,
    pub interrupted: bool,
    pub last_loss: Option<f64>,
    pub dev: Option<DevMetrics>,
    pub tokens: u64,
    pub train_seconds: f64,
    pub tokens_per_second: f64,
    pub checkpoint: PathBuf,
}

/// Where a run writes: `metrics.jsonl`, `loss.svg`, `checkpoint-NNNNNN/`.
pub struct RunDirs<'a> {
    pub out: &'a Path,
    /// Tokenizer files copied into every checkpoint.
    pub tokenizer: &'a Path,
}

/// Sum over positions of `-log p(target) × mask`: `logits [B, N, V]`, `targets`/`mask` `[B, N]`.
pub fn masked_token_loss<B: Backend>(
    logits: Tensor<B, 3>,
    targets: Tensor<B, 2, Int>,
    mask: Tensor<B, 2>,
) -> Tensor<B, 1> {
    let [b, n, v] = logits.dims();
    let lp = log_softmax(logits.reshape([b * n, v]), 1);
    let picked = lp.gather(1, targets.reshape([b * n, 1])).reshape([b * n]);
    (picked * mask.reshape([b * n])).sum().neg()
}

/// The logits `[K, V]` at the K trained positions, from the final hidden states `[B, T, H]`: the LM head
/// runs only where the loss looks (an SFT record trains a few dozen of its thousands of tokens).
pub fn trained_logits<B: Backend>(
    model: &CausalLm<B>,
    hidden: Tensor<B, 3>,
    batch: &BatchTensors<B>,
) -> Tensor<B, 2> {
    let [b, t, h] = hidden.dims();
    let k = batch.trained_positions.dims()[0];
    let picked = hidden
        .reshape([b * t, h])
        .select(0, batch.trained_positions.clone());
    model
        .lm_logits(picked.reshape([1, k, h]))
        .reshape([k, model.config.vocab_size])
}

/// Sum over the trained positions of `-log p(target) × weight`, from the final hidden states `[B, T, H]`.
pub fn trained_token_loss<B: Backend>(
    model: &CausalLm<B>,
    hidden: Tensor<B, 3>,
    batch: &BatchTensors<B>,
) -> Tensor<B, 1> {
    if batch.trained_positions.dims()[0] == 0 {
        return Tensor::zeros([1], &hidden.device());
    }
    weighted_nll(
        trained_logits(model, hidden, batch),
        batch.trained_targets.clone(),
        batch.trained_weights.clone(),
    )
}

/// `-Σ log p(target) × weight` over the trained positions, from their logits `[K, V]`.
fn weighted_nll<B: Backend>(
    logits: Tensor<B, 2>,
    targets: Tensor<B, 1, Int>,
    weights: Tensor<B, 1>,
) -> Tensor<B, 1> {
    let k = logits.dims()[0];
    if is_cpu_autodiff::<B>() {
        let data = targets.to_data().convert::<i64>();
        let targets = data.iter::<i64>().map(|t| t as usize).collect();
        let weights = weights.to_data().iter::<f32>().collect();
        return crate::model::train_ops::nll::weighted_nll(logits, targets, weights);
    }
    let lp = log_softmax(logits, 1)
        .gather(1, targets.reshape([k, 1]))
        .reshape([k]);
    (lp * weights).sum().neg()
}

/// Loss parts of one micro-batch (plain numbers, for metrics).
#[derive(Debug, Clone, Copy, Default)]
pub struct LossParts {
    pub ce_sum: f64,
    pub aux: f64,
    pub mtp_sum: f64,
}

/// The differentiable loss of one micro-batch, normalised by `norm` trained tokens of the whole step;
/// the aux loss is weighted `aux_coef / micro_batches`.
pub fn micro_batch_loss<B: Backend>(
    model: &CausalLm<B>,
    batch: &BatchTensors<B>,
    norm: f32,
    aux_coef: f64,
    micro_batches: usize,
    mtp_weight: f64,
) -> Result<(Tensor<B, 1>, LossParts)> {
    let states = batch_states(model, batch);
    let ce = trained_token_loss(model, states.hidden.clone(), batch);
    let mut parts = LossParts {
        ce_sum: ce.clone().into_scalar().elem(),
        ..LossParts::default()
    };
    let mut total = ce.div_scalar(norm);
    if aux_coef > 0.0 {
        if let Some(aux) = model.aux_loss(&states.router_logits) {
            parts.aux = aux.clone().into_scalar().elem();
            total = total + aux.mul_scalar(aux_coef / micro_batches as f64);
        }
    }
    if mtp_weight > 0.0 {
        if let Some(mtp) = mtp_token_loss(model, batch, states)? {
            parts.mtp_sum = mtp.clone().into_scalar().elem();
            total = total + mtp.mul_scalar(mtp_weight / norm as f64);
        }
    }
    Ok((total, parts))
}

/// The MTP head's `-Σ log p(target) × weight` over the batch's trained tokens (`None` when no trained
/// token has a state two positions before it). MTP slot i pairs the state at position i with token
/// i+1 and predicts token i+2. Whole rows: slots 0..T-3. After a shared prefix of P tokens the head's
/// attention needs the prefix's slots too: slots 0..P-2 run once into the head's own cache (they predict
/// prefix tokens, never trained), and each row continues from a copy of it with slot P-1 (the prefix's
/// last state, the row's first token) and its own states, so every target of the row is scored, as in a
/// whole-row pass. As for the token loss, the LM head runs only at the trained slots.
fn mtp_token_loss<B: Backend>(
    model: &CausalLm<B>,
    batch: &BatchTensors<B>,
    states: BatchStates<B>,
) -> Result<Option<Tensor<B, 1>>> {
    let [b, t] = batch.ids.dims();
    // `u`'s slot s of a row predicts the row's token `first + s + 1`, the target at position
    // `first + s` of `batch.targets`.
    let (u, first) = match (&batch.prefix, states.prefix_hidden) {
        (Some(prefix), Some(prefix_hidden)) => {
            let p = prefix.dims()[1];
            let mut head = Cache::new(1);
            if p >= 2 {
                let ids = prefix.clone().narrow(1, 1, p - 1);
                model.mtp_states(
                    prefix_hidden.clone().narrow(1, 0, p - 1),
                    ids,
                    Some(&mut head),
                )?;
            }
            let mut rows = head.repeat_rows(b);
            let before_first = prefix_hidden.narrow(1, p - 1, 1).repeat_dim(0, b);
            let hidden = Tensor::cat(vec![before_first, states.hidden.narrow(1, 0, t - 2)], 1);
            let ids = batch.ids.clone().narrow(1, 0, t - 1);
            (model.mtp_states(hidden, ids, Some(&mut rows))?, 0)
        }
        _ if t >= 3 => {
            let ids = batch.ids.clone().narrow(1, 1, t - 2);
            (
                model.mtp_states(states.hidden.narrow(1, 0, t - 2), ids, None)?,
                1,
            )
        }
        _ => return Ok(None),
    };
    let [_, w, h] = u.dims();
    // The trained positions (flat in `[B, T]`) that have a slot, as flat indices into `u`'s `[B, w]`.
    let positions = batch.trained_positions.to_data().convert::<i64>();
    let targets = batch.trained_targets.to_data().convert::<i64>();
    let weights = batch.trained_weights.to_data().convert::<f32>();
    let (mut slots, mut picked_targets, mut picked_weights) = (Vec::new(), Vec::new(), Vec::new());
    for ((pos, target), weight) in positions
        .iter::<i64>()
        .zip(targets.iter::<i64>())
        .zip(weights.iter::<f32>())
    {
        let (row, col) = (pos as usize / t, pos as usize % t);
        if col >= first {
            slots.push((row * w + col - first) as i64);
            picked_targets.push(target);
            picked_weights.push(weight);
        }
    }
    let k = slots.len();
    if k == 0 {
        return Ok(None);
    }
    let device = u.device();
    let picked = u.reshape([b * w, h]).select(0, ints(slots, [k], &device));
    let logits = model
        .lm_logits(picked.reshape([1, k, h]))
        .reshape([k, model.config.vocab_size]);
    Ok(Some(weighted_nll(
        logits,
        ints(picked_targets, [k], &device),
        floats(picked_weights, [k], &device),
    )))
}

/// What one forward pass over a micro-batch leaves: the rows' final hidden states `[B, T, H]`, the
/// shared prefix's `[1, P, H]` when it ran apart, and the router logits of the pass.
pub struct BatchStates<B: Backend> {
    pub hidden: Tensor<B, 3>,
    pub prefix_hidden: Option<Tensor<B, 3>>,
    pub router_logits: Vec<Tensor<B, 2>>,
}

/// The final hidden states of the batch rows `[B, T, H]` and the router logits of the pass. A shared
/// prefix runs once, and every row continues from a copy of its cache: the same states as running the
/// whole rows, while the router logits hold each prefix token once.
pub fn batch_hidden_states<B: Backend>(
    model: &CausalLm<B>,
    batch: &BatchTensors<B>,
) -> (Tensor<B, 3>, Vec<Tensor<B, 2>>) {
    let s = batch_states(model, batch);
    (s.hidden, s.router_logits)
}

/// [`batch_hidden_states`] with the shared prefix's own states kept.
pub fn batch_states<B: Backend>(model: &CausalLm<B>, batch: &BatchTensors<B>) -> BatchStates<B> {
    let Some(prefix) = &batch.prefix else {
        let (hidden, router_logits) = model.hidden_states(batch.ids.clone(), None);
        return BatchStates {
            hidden,
            prefix_hidden: None,
            router_logits,
        };
    };
    let mut cache = model.new_cache();
    let (prefix_hidden, mut router_logits) = model.hidden_states(prefix.clone(), Some(&mut cache));
    let mut rows = cache.repeat_rows(batch.ids.dims()[0]);
    let (hidden, more) = model.hidden_states(batch.ids.clone(), Some(&mut rows));
    router_logits.extend(more);
    BatchStates {
        hidden,
        prefix_hidden: Some(prefix_hidden),
        router_logits,
    }
}

/// What the dev set says about a model, teacher-forced (no gradients, no sampling).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct DevMetrics {
    /// Mean cross-entropy over the trained tokens.
    pub loss: f64,
    /// Share of the tool-calling assistant turns whose every token is the model's argmax given the
    /// teacher's history: the turns greedy decoding would reproduce exactly (which tool, which skill,
    /// which arguments). A faster and finer signal than rollouts, and the one the dev loss hides: a
    /// model can copy the call syntax perfectly and still pick the same tool for every message.
    pub tool_call_exact: Option<f64>,
    /// The same for the *first* tool-calling turn of each record alone: the opening decision (which
    /// skill to load, which tool to call) made from the viewer's message and the harness in the
    /// prompt, before any tool result can give the answer away.
    pub first_call_exact: Option<f64>,
    /// Share of records whose final text reply is reproduced token for token: the answer, after the
    /// tool results, that states what they returned.
    pub final_reply_exact: Option<f64>,
}

/// What teacher forcing says about one view: its loss, and which of its tool-calling turns and whether
/// its final reply greedy decoding would reproduce.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ViewScore {
    /// `Σ -log p(target) × weight` over the view's trained tokens, and the sum of those weights.
    pub nll: f64,
    pub trained: f64,
    /// Tool-calling turns, and those whose every token is the model's argmax.
    pub calls: usize,
    pub calls_exact: usize,
    /// Whether the first tool-calling turn is reproduced; `None` for a view without one.
    pub first_call_exact: Option<bool>,
    /// The model's argmax at each trained token of that turn (teacher-forced), to show what it says
    /// instead.
    pub first_call_argmax: Vec<u32>,
    /// Whether the last text reply is reproduced (after the tool results: does the model read them into
    /// its answer?); `None` for a view without a trained reply.
    pub final_reply_exact: Option<bool>,
    /// The model's argmax at each trained token of that reply.
    pub final_reply_argmax: Vec<u32>,
    /// `log p(token)` of every trained token, in token order (what RL and OPD ratios are made of).
    pub logprobs: Vec<f32>,
    /// The entropy of the model's distribution at each trained token, in the same order.
    pub entropy: Vec<f32>,
}

/// A [`ViewScore`] per view (in `views` order), teacher-forced in shared-prefix micro-batches of
/// `batch_tokens`.
pub fn score_views<B: Backend>(
    model: &CausalLm<B>,
    views: &[TrainingView],
    pad: u32,
    batch_tokens: usize,
    device: &B::Device,
) -> Result<Vec<ViewScore>> {
    let mut scores = vec![ViewScore::default(); views.len()];
    for rows in bucket_shared(views, batch_tokens) {
        let refs: Vec<&TrainingView> = rows.iter().map(|&i| &views[i]).collect();
        let b = to_tensors::<B>(&refs, pad, true, device)?;
        let k = b.trained_positions.dims()[0];
        if k == 0 {
            continue;
        }
        let (hidden, _) = batch_hidden_states(model, &b);
        let logits = trained_logits(model, hidden, &b);
        let lp = log_softmax(logits.clone(), 1);
        let entropy = (lp.clone().exp() * lp.clone())
            .sum_dim(1)
            .reshape([k])
            .neg();
        let picked = lp
            .gather(1, b.trained_targets.clone().reshape([k, 1]))
            .reshape([k]);
        let floats = |t: Tensor<B, 1>| t.into_data().convert::<f32>().to_vec::<f32>();
        let ints = |t: Tensor<B, 1, Int>| t.into_data().convert::<i64>().to_vec::<i64>();
        let logprobs = floats(picked)?;
        let entropy = floats(entropy)?;
        let weights = floats(b.trained_weights.clone())?;
        let argmax = ints(logits.argmax(1).flatten(0, 1))?;
        let targets = ints(b.trained_targets.clone())?;
        let positions = ints(b.trained_positions.clone())?;
        let prefix = b.prefix.as_ref().map_or(0, |p| p.dims()[1]);
        let row_len = b.ids.dims()[1];
        // Each trained position is (row, token) of the batch: flat index r·T + k predicts token prefix + k + 1.
        // The policy's turns, keyed (row, segment): whether every token is the argmax, and the argmax.
        let mut turns: BTreeMap<(usize, usize), (SegmentKind, bool, Vec<u32>)> = BTreeMap::new();
        for (j, pos) in positions.iter().enumerate() {
            let (row, k) = (*pos as usize / row_len, *pos as usize % row_len);
            let score = &mut scores[rows[row]];
            score.nll -= f64::from(logprobs[j] * weights[j]);
            score.trained += f64::from(weights[j]);
            score.logprobs.push(logprobs[j]);
            score.entropy.push(entropy[j]);
            let token = prefix + k + 1;
            let view = refs[row];
            let Some(seg) = view
                .segments
                .iter()
                .position(|s| s.start <= token && token < s.end)
            else {
                continue;
            };
            let kind = view.segments[seg].kind;
            let (_, hit, said) = turns.entry((row, seg)).or_insert((kind, true, Vec::new()));
            *hit &= argmax[j] == targets[j];
            said.push(argmax[j] as u32);
        }
        // Ordered by (row, segment): a row's first tool-calling entry is its opening call, its last
        // reply entry its final reply.
        for ((row, _), (kind, hit, said)) in turns {
            let score = &mut scores[rows[row]];
            match kind {
                SegmentKind::ToolCall => {
                    if score.first_call_exact.is_none() {
                        score.first_call_exact = Some(hit);
                        score.first_call_argmax = said;
                    }
                    score.calls += 1;
                    score.calls_exact += usize::from(hit);
                }
                SegmentKind::Reply => {
                    score.final_reply_exact = Some(hit);
                    score.final_reply_argmax = said;
                }
                SegmentKind::Context => {}
            }
        }
    }
    Ok(scores)
}

/// [`DevMetrics`] over `views` (see [`score_views`]); `None` without trained tokens.
pub fn dev_metrics<B: Backend>(
    model: &CausalLm<B>,
    views: &[TrainingView],
    pad: u32,
    batch_tokens: usize,
    device: &B::Device,
) -> Result<Option<DevMetrics>> {
    let scores = score_views(model, views, pad, batch_tokens, device)?;
    let sum = |f: &dyn Fn(&ViewScore) -> f64| scores.iter().map(f).sum::<f64>();
    let (nll, trained) = (sum(&|s| s.nll), sum(&|s| s.trained));
    let rate = |hits: f64, n: f64| (n > 0.0).then(|| hits / n);
    let share = |hit: fn(&ViewScore) -> Option<bool>| {
        let hits: Vec<bool> = scores.iter().filter_map(hit).collect();
        rate(
            hits.iter().filter(|&&h| h).count() as f64,
            hits.len() as f64,
        )
    };
    Ok((trained > 0.0).then(|| DevMetrics {
        loss: nll / trained,
        tool_call_exact: rate(sum(&|s| s.calls_exact as f64), sum(&|s| s.calls as f64)),
        first_call_exact: share(|s| s.first_call_exact),
        final_reply_exact: share(|s| s.final_reply_exact),
    }))
}

/// The summed loss parts and gradients of one step's micro-batches. They run on parallel threads,
/// as many at a time as there are cores (one autodiff pass leaves much of a second core idle), and
/// their gradients are summed in micro-batch order, so the step does not depend on thread timing.
pub fn step_gradients<B: AutodiffBackend, M: Send>(
    model: &CausalLm<B>,
    micro: Vec<M>,
    loss_of: impl Fn(&CausalLm<B>, &M) -> Result<(Tensor<B, 1>, LossParts)> + Sync,
) -> Result<(LossParts, GradBuffer<B::InnerBackend>)> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let count = micro.len() as f64;
    let (mut parts, mut buffer) = (LossParts::default(), GradBuffer::default());
    let mut pending = micro.into_iter().peekable();
    while pending.peek().is_some() {
        let wave: Vec<M> = pending.by_ref().take(threads).collect();
        // Each pass of a wave of several keeps a core busy: its parallel sections stay on its thread.
        let alone = wave.len() > 1;
        // Scoped OS threads, not rayon tasks: a pass holds burn's autodiff lock while its ops fan
        // out on rayon, so passes running as rayon tasks can deadlock.
        let results = std::thread::scope(|scope| {
            let handles: Vec<_> = wave
                .into_iter()
                .map(|b| {
                    let m = fresh_leaves(model);
                    let loss_of = &loss_of;
                    scope.spawn(
                        move || -> Result<(LossParts, GradBuffer<B::InnerBackend>)> {
                            let pass = || {
                                let (loss, p) = loss_of(&m, &b)?;
                                let mut grads = GradBuffer::default();
                                grads.accumulate::<B, _>(&m, &loss.backward());
                                Ok((p, grads))
                            };
                            if alone {
                                spin_team::alone(pass)
                            } else {
                                pass()
                            }
                        },
                    )
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .map_err(|_| anyhow::anyhow!("a training thread panicked"))?
                })
                .collect::<Result<Vec<_>>>()
        })?;
        for (p, grads) in results {
            parts.ce_sum += p.ce_sum;
            parts.aux += p.aux / count;
            parts.mtp_sum += p.mtp_sum;
            buffer.merge(grads);
        }
    }
    Ok((parts, buffer))
}

/// The progress bar of a training loop: `max_steps` steps, `done` of them already (a resumed run).
pub fn step_progress(max_steps: usize, done: usize) -> ProgressBar {
    let pb = ProgressBar::new(max_steps as u64).with_position(done as u64);
    pb.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} steps {msg} [{elapsed} < {eta}]")
            .expect("static template"),
    );
    pb
}

/// Trains `model` (or, with `resume`, the newest checkpoint under `dirs.out`) on `data`.
/// `stop` (set by Ctrl-C) ends the run after the current step with a checkpoint.
pub fn train<B: AutodiffBackend>(
    cfg: &TrainConfig,
    model: CausalLm<B>,
    data: &TrainData,
    dirs: &RunDirs<'_>,
    resume: bool,
    stop: &AtomicBool,
    device: &B::Device,
) -> Result<Outcome> {
    anyhow::ensure!(!data.train.is_empty(), "no training views");
    anyhow::ensure!(cfg.max_steps > 0, "max_steps must be at least 1");
    anyhow::ensure!(
        cfg.gradient_accumulation_steps > 0,
        "gradient_accumulation_steps must be at least 1"
    );
    if !resume {
        checkpoint::ensure_none(dirs.out)?;
    }
    std::fs::create_dir_all(dirs.out)
        .with_context(|| format!("creating {}", dirs.out.display()))?;
    let mut opt = AdamW::<B::InnerBackend>::new(cfg.adamw);
    let (mut model, mut state) =
        checkpoint::resume_or_start(dirs.out, resume, model, &mut opt, cfg.seed, device)?;
    let aux_coef = cfg
        .router_aux_loss_coef
        .unwrap_or(model.config.router_aux_loss_coef);
    let metrics_path = dirs.out.join("metrics.jsonl");
    let mut log = metrics::Log::open(&metrics_path, state.metrics_lines)?;

    let batches = bucket_shared(&data.train, cfg.batch_tokens);
    let mut sampler = Sampler::new(batches, state.seed, state.cursor);
    let pb = step_progress(cfg.max_steps, state.step);
    let started = Instant::now();
    let out_of_time = || {
        cfg.max_seconds
            .is_some_and(|s| started.elapsed().as_secs_f64() >= s)
    };
    let session_start_step = state.step;
    let (mut last_loss, mut dev) = (None, None);
    let mut session_tokens = 0u64;
    let mut interrupted = false;
    while state.step < cfg.max_steps {
        let stopped = cfg.stop_after.is_some_and(|k| state.step >= k);
        if stop.load(Ordering::SeqCst) || out_of_time() || stopped {
            interrupted = true;
            break;
        }
        let step_start = Instant::now();
        let lr = cfg.lr_scheduler_type.at(
            cfg.learning_rate,
            state.step,
            cfg.warmup_steps,
            cfg.max_steps,
        );
        let micro: Vec<BatchTensors<B>> = (0..cfg.gradient_accumulation_steps)
            .map(|_| {
                let rows: Vec<&TrainingView> = sampler
                    .next_batch()
                    .iter()
                    .map(|&i| &data.train[i])
                    .collect();
                to_tensors::<B>(&rows, data.pad, true, device)
            })
            .collect::<Result<_>>()?;
        let norm: f32 = micro.iter().map(|b| b.trained).sum::<f32>().max(1.0);
        let tokens: usize = micro.iter().map(|b| b.tokens).sum();
        let computed: usize = micro.iter().map(|b| b.computed).sum();
        let micro_count = micro.len();
        let loss_of = |m: &CausalLm<B>, b: &BatchTensors<B>| {
            micro_batch_loss(m, b, norm, aux_coef, micro_count, cfg.mtp_loss_weight)
        };
        let (parts, mut buffer) = step_gradients(&model, micro, loss_of)?;
        let grad_norm = buffer
            .finite_norm(cfg.max_grad_norm)
            .map_err(|e| checkpoint::halted(e.into(), dirs.out, state.step + 1))?;
        model = opt.step::<B, _>(model, lr, &mut buffer);
        state.step += 1;
        state.cursor = sampler.cursor;
        state.tokens += tokens as u64;
        session_tokens += tokens as u64;
        let loss = parts.ce_sum / norm as f64;
        last_loss = Some(loss);
        let secs = step_start.elapsed().as_secs_f64();
        log.write(&json!({
            "step": state.step, "epoch": state.cursor.epoch, "loss": loss, "aux_loss": parts.aux,
            "mtp_loss": parts.mtp_sum / norm as f64, "learning_rate": lr, "grad_norm": grad_norm,
            "tokens": tokens, "computed_tokens": computed, "trained_tokens": norm, "tokens_per_second": tokens as f64 / secs.max(1e-9),
        }))?;
        pb.set_position(state.step as u64);
        pb.set_message(format!(
            "loss {loss:.4} lr {lr:.2e} {:.0} tok/s",
            tokens as f64 / secs.max(1e-9)
        ));
        let last = state.step == cfg.max_steps;
        // A run that ends on its time budget reports the dev loss of the checkpoint it leaves.
        if !data.dev.is_empty()
            && (last || out_of_time() || (cfg.eval_steps > 0 && state.step % cfg.eval_steps == 0))
        {
            dev = dev_metrics(
                &model.valid(),
                &data.dev,
                data.pad,
                cfg.batch_tokens,
                device,
            )?;
            let (dev_loss, exact, first, reply) = (
                dev.map(|d| d.loss),
                dev.and_then(|d| d.tool_call_exact),
                dev.and_then(|d| d.first_call_exact),
                dev.and_then(|d| d.final_reply_exact),
            );
            log.write(
                &json!({"step": state.step, "dev_loss": dev_loss, "dev_tool_call_exact": exact,
                        "dev_first_call_exact": first, "dev_final_reply_exact": reply}),
            )?;
            pb.suspend(|| {
                eprintln!(
                    "step {}: train loss {loss:.4}, dev loss {:.4}, dev tool calls exact {:.3}",
                    state.step,
                    dev_loss.unwrap_or(f64::NAN),
                    exact.unwrap_or(f64::NAN)
                )
            });
        }
        if !last && cfg.save_steps > 0 && state.step % cfg.save_steps == 0 {
            state.metrics_lines = log.lines();
            checkpoint::save(
                &dirs.out.join(checkpoint::dir_name(state.step)),
                &model,
                dirs.tokenizer,
                &opt,
                &state,
            )?;
        }
    }
    pb.finish_and_clear();
    state.metrics_lines = log.lines();
    let ckpt = dirs.out.join(checkpoint::dir_name(state.step));
    if state.step > session_start_step || !ckpt.exists() {
        checkpoint::save(&ckpt, &model, dirs.tokenizer, &opt, &state)?;
    }
    metrics::plot_loss(&metrics_path, &dirs.out.join("loss.svg"))?;
    let train_seconds = started.elapsed().as_secs_f64();
    Ok(Outcome {
        steps: state.step,
        interrupted,
        last_loss,
        dev,
        tokens: state.tokens,
        train_seconds,
        tokens_per_second: session_tokens as f64 / train_seconds.max(1e-9),
        checkpoint: ckpt,
    })
}
