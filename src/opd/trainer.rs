//! The OPD loop (HAT stage 2): the student samples completions of general prompts, the teacher (the
//! pre-SFT base) scores them, and the student moves towards the teacher on its own samples.
//!
//! One step:
//! 1. **Sampling** ([`super::sample`]): `prompts_per_step` prompts from an epoch-wise shuffle (the
//!    RL trainer's draws; a seeded `domain_share` of them domain prompts, [`super::mix`]),
//!    `num_generations` completions each from the current weights, all decoded
//!    together, the sampler's log-probabilities recorded. A prompt that does not fit the context with
//!    `max_new_tokens` is counted and skipped. With GKD's `lmbda` < 1, a step is on-policy with
//!    probability `lmbda` and otherwise trains on the prompts' own answers (supervised JSD).
//! 2. **Teacher scoring**: the teacher's log-probability of every sampled token — in-process, or
//!    from an endpoint's `prompt_logprobs` ([`super::teacher`]) — and, for the generalized JSD, its
//!    full distribution inside the update (in-process) or its top `teacher_top_k` tokens at every
//!    sampled position (an endpoint).
//! 3. **Update**: `reverse_kl` — per-token advantages `−λ(log q − log π_T)` through the RL update
//!    (importance-sampling or PPO ratio against q, [`super::reverse_kl`]); `gjsd` — the
//!    full-vocabulary divergence ([`super::update`]). Only sampled tokens carry loss.
//!
//! Every draw derives from the seed and the step, so `--resume` continues exactly; checkpoints are the
//! SFT trainer's (atomic, with optimizer and trainer state), and Ctrl-C stops after the current step
//! with a checkpoint.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result};
use burn::module::{AutodiffModule, Module};
use burn::tensor::backend::AutodiffBackend;
use serde_json::{json, Value};

use super::gjsd::GjsdConfig;
use super::mix::{step_prompts, Source};
use super::reverse_kl::{reverse_kl_advantages, ReverseKlConfig};
use super::sample::{completion_view, prompt_ids, sample, Samples};
use super::teacher::{Teacher, TeacherScores, Teachers};
use super::update::{gjsd_update, views_of_teacher, GjsdTeacher, GjsdUpdate};
use crate::general::answer::answer;
use crate::general::score::{ifeval_lite, IfevalLite};
use crate::judge::ifeval::InputExample;
use crate::model::generation::generate::TextGenerator;
use crate::model::generation::sampling::SamplingParams;
use crate::model::CausalLm;
use crate::rl::update::{logprobs, spans_of, update, Batch, UpdateConfig};
use crate::rng::Rng;
use crate::train::checkpoint;
use crate::train::metrics;
use crate::train::optim::{cosine_with_warmup, AdamW, AdamWConfig};
use crate::train::trainer::step_progress;
use crate::train::view::TrainingView;

/// Which loss a run minimises.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OpdLoss {
    /// tinker's sampled-token reverse KL.
    ReverseKl(ReverseKlConfig),
    /// TRL GKD's generalized JSD; `lmbda` = share of on-policy steps.
    Gjsd { loss: GjsdConfig, lmbda: f64 },
}

/// Settings of one OPD run.
#[derive(Debug, Clone)]
pub struct OpdConfig {
    pub max_steps: usize,
    pub learning_rate: f64,
    pub warmup_steps: usize,
    pub adamw: AdamWConfig,
    pub max_grad_norm: f64,
    pub seed: u64,
    /// Tokens a micro-batch computes at most; a step's micro-batches are accumulated into one
    /// optimizer step.
    pub batch_tokens: usize,
    pub prompts_per_step: usize,
    pub num_generations: usize,
    pub max_new_tokens: usize,
    pub temperature: f64,
    pub loss: OpdLoss,
    pub save_steps: usize,
    /// IFEval-lite every this many steps (and before the first); 0 = never.
    pub eval_steps: usize,
    /// Share of a step's prompts drawn from the domain prompts instead of the general ones.
    pub domain_share: f64,
    /// With `gjsd` and a teacher behind an endpoint: how many of its most likely tokens it returns
    /// at each position (the divergence is taken over those and the rest as one bucket).
    pub teacher_top_k: usize,
}

/// One prompt: an id, the conversation up to the assistant's turn, the tools shown to the model (a
/// harness's), and its own answer (for GKD's off-policy steps).
#[derive(Debug, Clone, Default)]
pub struct Prompt {
    pub id: String,
    pub conversation: Vec<Value>,
    pub tools: Option<Vec<Value>>,
    pub answer: Option<String>,
}

/// What a run reads and writes.
pub struct RunInputs<'a> {
    /// General prompts.
    pub prompts: &'a [Prompt],
    /// Domain (live-room) prompts, drawn for `domain_share` of the slots.
    pub domain: &'a [Prompt],
    /// Held-out IFEval rows for IFEval-lite at eval steps.
    pub eval: &'a [InputExample],
    pub tokenizer_dir: &'a Path,
    pub out: &'a Path,
}

/// Runs OPD from `model` (or, with `resume`, the newest checkpoint in `inputs.out`) towards
/// `teachers` (one teacher, or a general and a domain one).
pub fn train<B: AutodiffBackend>(
    cfg: &OpdConfig,
    model: CausalLm<B>,
    teachers: impl Into<Teachers<B>>,
    inputs: &RunInputs<'_>,
    resume: bool,
    stop: &AtomicBool,
    device: &B::Device,
) -> Result<PathBuf> {
    anyhow::ensure!(!inputs.prompts.is_empty(), "no prompts");
    anyhow::ensure!(
        cfg.num_generations >= 1,
        "num_generations must be at least 1"
    );
    if let OpdLoss::ReverseKl(_) = cfg.loss {
        // The ratio and the advantage both use the sampler's log q, which is the raw model's.
        anyhow::ensure!(
            cfg.temperature == 1.0,
            "--loss reverse_kl samples at temperature 1 (the sampler's log-probabilities are the \
             model's own); got --temperature {}",
            cfg.temperature
        );
    }
    let teachers = teachers.into();
    let endpoint = [Some(&teachers.general), teachers.domain.as_ref()]
        .into_iter()
        .flatten()
        .find_map(|t| match t {
            Teacher::Endpoint(e) => Some(e),
            Teacher::Model(_) => None,
        });
    if let (OpdLoss::Gjsd { loss, .. }, Some(e)) = (&cfg.loss, endpoint) {
        // An endpoint's log-probabilities are its model's own (temperature 1).
        anyhow::ensure!(
            loss.temperature == 1.0 && cfg.teacher_top_k > 0,
            "--loss gjsd with the teacher at {} compares the top --teacher-top-k (got {}, needs at \
             least 1) of the teacher's own log-probabilities, so it needs --temperature 1 (got {})",
            e.endpoint(),
            cfg.teacher_top_k,
            loss.temperature
        );
    }
    anyhow::ensure!(
        (0.0..=1.0).contains(&cfg.domain_share),
        "domain_share must be in [0, 1], got {}",
        cfg.domain_share
    );
    anyhow::ensure!(
        cfg.domain_share == 0.0 || !inputs.domain.is_empty(),
        "a domain share of {} needs domain prompts",
        cfg.domain_share
    );
    if !resume {
        checkpoint::ensure_none(inputs.out)?;
    }
    std::fs::create_dir_all(inputs.out)
        .with_context(|| format!("creating {}", inputs.out.display()))?;
    let mut opt = AdamW::<B::InnerBackend>::new(cfg.adamw);
    let (mut model, mut state) =
        checkpoint::resume_or_start(inputs.out, resume, model, &mut opt, cfg.seed, device)?;
    // Scorer 0 is the general teacher, scorer 1 (if any) the domain prompts'.
    let scorers: Vec<Scorer<B>> = std::iter::once(teachers.general)
        .chain(teachers.domain)
        .map(Scorer::new)
        .collect();
    let aux_coef = model.config.router_aux_loss_coef;
    let mut generator = TextGenerator::new(
        model.valid(),
        crate::tokenizer::load(inputs.tokenizer_dir)?,
        Some(crate::chat::ChatTemplate::from_model_dir(
            inputs.tokenizer_dir,
        )?),
    )?;
    let pad = generator
        .tokenizer
        .token_to_id("<|endoftext|>")
        .or(generator.eos_token_ids.first().copied())
        .unwrap_or(0);
    let metrics_path = inputs.out.join("metrics.jsonl");
    let mut log = metrics::Log::open(&metrics_path, state.metrics_lines)?;
    let saves = checkpoint::Schedule {
        out: inputs.out,
        tokenizer_dir: inputs.tokenizer_dir,
        save_steps: cfg.save_steps,
        max_steps: cfg.max_steps,
    };
    let eval_now = |generator: &TextGenerator<B::InnerBackend>| -> Result<Option<IfevalLite>> {
        if cfg.eval_steps == 0 || inputs.eval.is_empty() {
            return Ok(None);
        }
        let prompts: Vec<String> = inputs.eval.iter().map(|e| e.prompt.clone()).collect();
        let (responses, _) = answer(generator, &prompts, cfg.max_new_tokens, 16)?;
        Ok(Some(ifeval_lite(inputs.eval, &responses)?))
    };
    if state.step == 0 {
        if let Some(lite) = eval_now(&generator)? {
            log.write(&eval_record(0, &lite))?;
        }
    }
    let params = SamplingParams {
        temperature: cfg.temperature as f32,
        max_tokens: cfg.max_new_tokens,
        ..SamplingParams::default()
    };
    let pb = step_progress(cfg.max_steps, state.step);
    while state.step < cfg.max_steps {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let step = state.step;
        generator.set_model(model.valid());
        let picks: Vec<(&Prompt, Source)> = step_prompts(
            inputs.prompts,
            inputs.domain,
            cfg.domain_share,
            cfg.seed,
            step,
            cfg.prompts_per_step,
        );
        let domain_picks = picks.iter().filter(|(_, s)| *s == Source::Domain).count();
        let on_policy = match cfg.loss {
            OpdLoss::Gjsd { lmbda, .. } => {
                Rng::derive(cfg.seed, &format!("lmbda/{step}")).unit() < lmbda
            }
            OpdLoss::ReverseKl(_) => true,
        };

        let clock = Instant::now();
        let samples = if on_policy {
            let prompts: Vec<&Prompt> = picks.iter().map(|(p, _)| *p).collect();
            sample(
                &generator,
                &prompts,
                cfg.num_generations,
                &params,
                cfg.seed,
                step,
            )?
        } else {
            own_answers(&generator, &picks, cfg.max_new_tokens, step)?
        };
        let sampling_s = clock.elapsed().as_secs_f64();
        anyhow::ensure!(
            !samples.views.is_empty(),
            "step {}: every prompt is longer than the context with --max-new-tokens {}",
            step + 1,
            cfg.max_new_tokens
        );
        let views = &samples.views;
        let sampled: usize = views.iter().map(|v| v.trained_tokens()).sum();

        let clock = Instant::now();
        let from_domain: Vec<bool> = samples
            .prompt_index
            .iter()
            .map(|&i| picks[i].1 == Source::Domain)
            .collect();
        let teacher_of: Vec<usize> = from_domain
            .iter()
            .map(|&d| usize::from(d && scorers.len() > 1))
            .collect();
        let top_k = match cfg.loss {
            OpdLoss::Gjsd { .. } => cfg.teacher_top_k,
            OpdLoss::ReverseKl(_) => 0,
        };
        let TeacherScores {
            logprobs: teacher_lp,
            top,
        } = score(
            &scorers,
            &teacher_of,
            views,
            top_k,
            pad,
            cfg.batch_tokens,
            device,
        )?;
        let teacher_s = clock.elapsed().as_secs_f64();
        let (student_lp, entropy) = logprobs(&model.valid(), views, pad, cfg.batch_tokens, device)?;
        // The sampler's log q where there is one (on-policy), else the student's teacher-forced ones.
        let q: &[Vec<f64>] = if samples.sampler_logp.is_empty() {
            &student_lp
        } else {
            &samples.sampler_logp
        };
        let flat = |x: &[Vec<f64>]| x.iter().flatten().copied().collect::<Vec<f64>>();
        let (qf, tf, sf) = (flat(q), flat(&teacher_lp), flat(&student_lp));
        let reverse_kl = mean(&qf.iter().zip(&tf).map(|(a, b)| a - b).collect::<Vec<_>>());
        // Domain prompts' share of it, against their own teacher when the run has one.
        let domain_kl: Vec<f64> = (0..views.len())
            .filter(|&v| from_domain[v])
            .flat_map(|v| q[v].iter().zip(&teacher_lp[v]).map(|(a, b)| a - b))
            .collect();
        let mismatch = mean(
            &qf.iter()
                .zip(&sf)
                .map(|(a, b)| (a - b).abs())
                .collect::<Vec<_>>(),
        );

        let clock = Instant::now();
        let lr = cosine_with_warmup(cfg.learning_rate, step, cfg.warmup_steps, cfg.max_steps);
        let mut record = json!({});
        // How much of the endpoint teacher's mass its top k hold: 1 = the top-k divergence is the
        // full one.
        let top_mass: Vec<f64> = top
            .iter()
            .flatten()
            .map(|p| p.iter().map(|(_, lp)| lp.exp()).sum())
            .collect();
        if let Some(m) = mean(&top_mass) {
            record["teacher/top_k_mass"] = json!(m);
        }
        let halted = |e| checkpoint::halted(e, inputs.out, state.step + 1);
        let (updated, loss, grad_norm) = match cfg.loss {
            OpdLoss::ReverseKl(rk) => {
                let advantages: Vec<Vec<f64>> = q
                    .iter()
                    .zip(&teacher_lp)
                    .map(|(q, t)| reverse_kl_advantages(q, t, &rk))
                    .collect();
                let spans: Vec<_> = views
                    .iter()
                    .enumerate()
                    .flat_map(|(i, v)| spans_of(i, v, |_| 0.0))
                    .collect();
                let loss_cfg = rk.policy_loss();
                let batch = Batch {
                    views,
                    spans: &spans,
                    old: q,
                    reference: None,
                    token_advantages: Some(&advantages),
                    tis_weights: None,
                };
                let settings = UpdateConfig {
                    loss: &loss_cfg,
                    num_iterations: 1,
                    learning_rate: lr,
                    max_grad_norm: cfg.max_grad_norm,
                    batch_tokens: cfg.batch_tokens,
                    aux_coef,
                    pad,
                };
                let (m, loss, norm) =
                    update(model, &mut opt, &batch, &settings, device).map_err(halted)?;
                record["clip_ratio/region_mean"] = json!(loss.clip_ratio_region);
                (m, loss.loss, norm)
            }
            OpdLoss::Gjsd { loss, .. } => {
                let settings = GjsdUpdate {
                    loss,
                    learning_rate: lr,
                    max_grad_norm: cfg.max_grad_norm,
                    batch_tokens: cfg.batch_tokens,
                    aux_coef,
                    pad,
                };
                let teachers: Vec<GjsdTeacher<'_, B>> = scorers
                    .iter()
                    .map(|s| match s {
                        Scorer::Model(_, m) => GjsdTeacher::Model(m),
                        Scorer::Endpoint(_) => GjsdTeacher::TopK(&top),
                    })
                    .collect();
                gjsd_update(
                    model,
                    &teachers,
                    &teacher_of,
                    &mut opt,
                    views,
                    &settings,
                    device,
                )
                .map_err(halted)?
            }
        };
        model = updated;
        let update_s = clock.elapsed().as_secs_f64();
        state.step += 1;
        state.tokens += views.iter().map(|v| v.len() as u64).sum::<u64>();

        let per_s = |s: f64| if s > 0.0 { sampled as f64 / s } else { 0.0 };
        let obj = record.as_object_mut().expect("a json object");
        for (k, v) in [
            ("step", json!(state.step)),
            ("learning_rate", json!(lr)),
            ("loss", json!(loss)),
            ("grad_norm", json!(grad_norm)),
            ("reverse_kl", json!(reverse_kl)),
            ("reverse_kl/domain", json!(mean(&domain_kl))),
            ("entropy", json!(mean(&entropy))),
            ("sampler_mismatch", json!(mismatch)),
            ("on_policy", json!(on_policy)),
            ("completions", json!(views.len())),
            (
                "completions/mean_length",
                json!(sampled as f64 / views.len() as f64),
            ),
            (
                "completions/clipped_ratio",
                json!(samples.clipped as f64 / views.len() as f64),
            ),
            ("prompts/too_long", json!(samples.too_long)),
            ("prompts/domain", json!(domain_picks)),
            ("time/sampling_s", json!(sampling_s)),
            ("time/teacher_s", json!(teacher_s)),
            ("time/update_s", json!(update_s)),
            ("tokens_per_s/sampling", json!(per_s(sampling_s))),
            ("tokens_per_s/teacher", json!(per_s(teacher_s))),
            ("tokens_per_s/update", json!(per_s(update_s))),
        ] {
            obj.insert(k.into(), v);
        }
        if cfg.eval_steps > 0 && (state.step % cfg.eval_steps == 0 || state.step == cfg.max_steps) {
            generator.set_model(model.valid());
            if let Some(lite) = eval_now(&generator)? {
                let e = eval_record(state.step, &lite);
                obj.extend(e.as_object().expect("a json object").clone());
            }
        }
        log.write(&record)?;
        pb.set_position(state.step as u64);
        pb.set_message(format!(
            "reverse KL {}",
            reverse_kl.map_or("-".into(), |x| format!("{x:.3}"))
        ));
        saves.after_step(&model, &opt, &mut state, &log)?;
    }
    pb.finish_and_clear();
    let ckpt = saves.last(&model, &opt, &mut state, &log)?;
    metrics::plot(
        &metrics_path,
        &inputs.out.join("opd.svg"),
        &[
            ("reverse KL", "reverse_kl"),
            ("loss", "loss"),
            ("entropy", "entropy"),
            ("IFEval-lite prompt strict", "ifeval/prompt_strict"),
        ],
    )?;
    Ok(ckpt)
}

/// A teacher as the loop uses it.
enum Scorer<B: AutodiffBackend> {
    /// The model on the inner backend (scoring) and on the autodiff one (the JSD update).
    Model(CausalLm<B::InnerBackend>, CausalLm<B>),
    Endpoint(super::teacher::EndpointTeacher),
}

impl<B: AutodiffBackend> Scorer<B> {
    /// An in-process teacher runs without gradients: on the inner backend to score, on the autodiff
    /// one (detached) inside the full-vocabulary update.
    fn new(teacher: Teacher<B>) -> Self {
        match teacher {
            Teacher::Model(m) => {
                let m = m.no_grad();
                Scorer::Model(m.valid(), m)
            }
            Teacher::Endpoint(e) => Scorer::Endpoint(e),
        }
    }
}

/// The teacher's log-probability of every view's trained tokens, view `v` scored by
/// `scorers[teacher_of[v]]`, and an endpoint's `top_k` (0: none), indexed like the views. With one
/// teacher the views are scored together, as they are.
fn score<B: AutodiffBackend>(
    scorers: &[Scorer<B>],
    teacher_of: &[usize],
    views: &[TrainingView],
    top_k: usize,
    pad: u32,
    batch_tokens: usize,
    device: &B::Device,
) -> Result<TeacherScores> {
    let mut out = TeacherScores {
        logprobs: vec![Vec::new(); views.len()],
        top: vec![Vec::new(); views.len()],
    };
    for (k, scorer) in scorers.iter().enumerate() {
        let (mine, subset) = views_of_teacher(views, teacher_of, k);
        if mine.is_empty() {
            continue;
        }
        let scores = match scorer {
            Scorer::Model(inner, _) => TeacherScores {
                logprobs: logprobs(inner, &subset, pad, batch_tokens, device)?.0,
                top: Vec::new(),
            },
            Scorer::Endpoint(e) => e.score(&subset, top_k)?,
        };
        for (&v, l) in mine.iter().zip(scores.logprobs) {
            out.logprobs[v] = l;
        }
        for (&v, t) in mine.iter().zip(scores.top) {
            out.top[v] = t;
        }
    }
    Ok(out)
}

/// GKD's off-policy step: the prompts' own answers as completions (a prompt without one is skipped).
fn own_answers<B: burn::prelude::Backend>(
    generator: &TextGenerator<B>,
    picks: &[(&Prompt, Source)],
    max_new_tokens: usize,
    step: usize,
) -> Result<Samples> {
    let mut out = Samples::default();
    let end = generator.eos_token_ids.first().copied();
    for (i, (p, _)) in picks.iter().enumerate() {
        let Some(answer) = &p.answer else { continue };
        let Some(prompt) = prompt_ids(generator, p, max_new_tokens)? else {
            out.too_long += 1;
            continue;
        };
        let mut completion = generator.encode(answer)?;
        completion.truncate(max_new_tokens.saturating_sub(1));
        completion.extend(end);
        out.views.push(completion_view(
            format!("{}/s{step}/own", p.id),
            &prompt,
            &completion,
        ));
        out.prompt_index.push(i);
    }
    Ok(out)
}

/// The IFEval-lite fields of a metrics line.
fn eval_record(step: usize, lite: &IfevalLite) -> Value {
    let mut v = json!({"step": step});
    for (name, r) in [
        ("prompt_strict", lite.prompt_strict),
        ("prompt_loose", lite.prompt_loose),
        ("instruction_strict", lite.instruction_strict),
        ("instruction_loose", lite.instruction_loose),
    ] {
        v[format!("ifeval/{name}")] = json!(r.value);
        v[format!("ifeval/{name}_low")] = json!(r.low);
        v[format!("ifeval/{name}_high")] = json!(r.high);
    }
    v["ifeval/n"] = json!(lite.prompt_strict.total);
    v
}

/// The mean, `None` (null in the metrics) for no values.
fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}
