//! The GRPO/GSPO loop: roll out groups, judge them, turn rewards into advantages per segment kind, and
//! update the policy on its own tokens.
//!
//! One step:
//! 1. **Rollout** ([`super::rollout`]): `tasks_per_step` tasks × `num_generations` episodes of the
//!    current weights (sampled), under a harness drawn per task, faults and hooks live.
//! 2. **Rewards and advantages**: the verifiable judge scores each episode. As in the paper, the
//!    tool-calling turns and the reply turns of an episode are separate completions with their own
//!    rewards — tool turns: tool rationality and skill selection; reply turns: accuracy, effectiveness
//!    and the chain-of-thought length score — and each kind gets its own group advantages
//!    ([`super::advantage`]), so a right tool call is not blamed for a weak reply.
//! 3. **Update**, `num_iterations` times over the same episodes: score the completions with the current
//!    weights (the first pass gives the sampling policy's log-probs, `old`), get `∂L/∂logp` per token
//!    from [`super::policy_loss`], and take one optimizer step of the NLL weighted by `−∂L/∂logp` — the
//!    gradient of the clipped surrogate itself. Only tokens the policy generated carry loss: the views'
//!    loss mask leaves out system text, viewer turns, tool results and hook feedback.
//!
//! With a teacher and `kl_penalty_coef` λ > 0, each policy token's advantage also gets the OPD term
//! `−λ(log π_old − log π_T)` ([`super::opd_term`]).
//!
//! `old` is recomputed by the trainer on the re-rendered episode rather than taken from the sampler:
//! with one process and one set of weights they are the same distribution, and the view's tokens are
//! the ones the gradient needs. (A rollout engine apart from the trainer would need the sampler's
//! log-probs and truncated importance sampling; not built.)

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result};
use burn::module::AutodiffModule;
use burn::tensor::backend::AutodiffBackend;
use serde_json::{json, Value};

use super::advantage::{advantages, AdvantageConfig, Advantages};
use super::opd_term::opd_term;
use super::policy_loss::PolicyLossConfig;
use super::rollout::{draws, play_groups, Group};
use super::update::{logprobs, spans_of, update, Batch, UpdateConfig};
use crate::agent::{Agent, SimEnv};
use crate::eval::rollout::right_tool;
use crate::jsonl::JsonlWriter;
use crate::model::CausalLm;
use crate::opd::reverse_kl::KlPenalty;
use crate::policy::local::LocalPolicy;
use crate::record::{Scores, Trajectory};
use crate::train::checkpoint;
use crate::train::metrics;
use crate::train::optim::{cosine_with_warmup, AdamW, AdamWConfig};
use crate::train::trainer::step_progress;
use crate::train::view::{SegmentKind, ViewBuilder};

/// The rewards of tool-calling turns, in the judge's names.
pub const TOOL_REWARDS: [&str; 2] = ["tool_rationality", "skill_selection"];
/// The rewards of reply turns.
pub const REPLY_REWARDS: [&str; 3] = ["accuracy", "effectiveness", "cot_length"];

fn reward(scores: &Scores, name: &str) -> Option<f64> {
    match name {
        "accuracy" => scores.accuracy,
        "effectiveness" => scores.effectiveness,
        "tool_rationality" => scores.tool_rationality,
        "skill_selection" => scores.skill_selection,
        "cot_length" => scores.cot_length,
        _ => None,
    }
}

/// Settings of one RL run (TRL names where they exist).
#[derive(Debug, Clone)]
pub struct GrpoConfig {
    pub max_steps: usize,
    pub learning_rate: f64,
    pub warmup_steps: usize,
    pub adamw: AdamWConfig,
    pub max_grad_norm: f64,
    pub seed: u64,
    /// Tokens a micro-batch computes at most (the shared prompt prefix counted once).
    pub batch_tokens: usize,
    /// G: episodes per task.
    pub num_generations: usize,
    pub tasks_per_step: usize,
    /// μ: optimizer steps on each step's episodes.
    pub num_iterations: usize,
    /// Advantages of tool turns (weights over [`TOOL_REWARDS`]) and of reply turns ([`REPLY_REWARDS`]).
    pub tool_advantage: AdvantageConfig,
    pub reply_advantage: AdvantageConfig,
    pub loss: PolicyLossConfig,
    pub save_steps: usize,
    pub router_aux_loss_coef: Option<f64>,
    /// The OPD term against the teacher (`kl_penalty_coef` 0 or no teacher = off).
    pub kl_penalty: KlPenalty,
}

/// What a run reads and writes.
pub struct RunInputs<'a> {
    /// Task records (`hat sim tasks`).
    pub tasks: &'a [Trajectory],
    /// The harnesses a task may be played under, with a label each (original, HSA variants).
    pub agents: &'a [(String, Agent)],
    pub env: &'a SimEnv<'a>,
    /// Renders episodes to token ids; the tokenizer and template of the policy.
    pub views: &'a ViewBuilder,
    /// The directory whose tokenizer files go into every checkpoint.
    pub tokenizer_dir: &'a Path,
    pub out: &'a Path,
    /// Episodes run at once.
    pub concurrency: usize,
}

/// Group advantages of every episode for the rewards `names`.
fn group_advantages(groups: &[Group], names: &[&str], cfg: &AdvantageConfig) -> Advantages {
    let (mut rows, mut ids) = (Vec::new(), Vec::new());
    for (g, group) in groups.iter().enumerate() {
        for t in &group.episodes {
            rows.push(names.iter().map(|n| reward(&t.scores, n)).collect());
            ids.push(g);
        }
    }
    advantages(&rows, &ids, cfg)
}

/// Runs GRPO from `model` (or, with `resume`, the newest checkpoint in `inputs.out`); `reference` is
/// the KL term's (`beta`), `teacher` the OPD term's (`kl_penalty`).
#[allow(clippy::too_many_arguments)]
pub fn train<B: AutodiffBackend>(
    cfg: &GrpoConfig,
    model: CausalLm<B>,
    reference: Option<CausalLm<B::InnerBackend>>,
    teacher: Option<CausalLm<B::InnerBackend>>,
    inputs: &RunInputs<'_>,
    resume: bool,
    stop: &AtomicBool,
    device: &B::Device,
) -> Result<PathBuf>
where
    crate::model::generation::generate::TextGenerator<B::InnerBackend>: Send,
{
    anyhow::ensure!(!inputs.tasks.is_empty(), "no tasks");
    anyhow::ensure!(!inputs.agents.is_empty(), "no harness");
    anyhow::ensure!(
        cfg.num_generations >= 2,
        "num_generations must be at least 2 (a group needs two to compare)"
    );
    anyhow::ensure!(
        cfg.loss.beta == 0.0 || reference.is_some(),
        "beta > 0 needs a reference model"
    );
    if !resume {
        checkpoint::ensure_none(inputs.out)?;
    }
    std::fs::create_dir_all(inputs.out)
        .with_context(|| format!("creating {}", inputs.out.display()))?;
    let mut opt = AdamW::<B::InnerBackend>::new(cfg.adamw);
    let (mut model, mut state) =
        checkpoint::resume_or_start(inputs.out, resume, model, &mut opt, cfg.seed, device)?;
    let aux_coef = cfg
        .router_aux_loss_coef
        .unwrap_or(model.config.router_aux_loss_coef);
    let pad = inputs
        .views
        .tokenizer()
        .token_to_id("<|endoftext|>")
        .unwrap_or(inputs.views.end_of_turn());
    let metrics_path = inputs.out.join("metrics.jsonl");
    let mut log = metrics::Log::open(&metrics_path, state.metrics_lines)?;
    let saves = checkpoint::Schedule {
        out: inputs.out,
        tokenizer_dir: inputs.tokenizer_dir,
        save_steps: cfg.save_steps,
        max_steps: cfg.max_steps,
    };
    let rollouts = inputs.out.join("rollouts");
    std::fs::create_dir_all(&rollouts)
        .with_context(|| format!("creating {}", rollouts.display()))?;
    let generator = crate::model::generation::generate::TextGenerator::new(
        model.valid(),
        inputs.views.tokenizer().clone(),
        Some(crate::chat::ChatTemplate::from_model_dir(
            inputs.tokenizer_dir,
        )?),
    )?;
    let mut options = crate::policy::local::LocalOptions::default();
    options.sampling.temperature = 1.0;
    options.sampling.max_tokens = cfg.loss.max_completion_length;
    let policy = LocalPolicy::new(generator, "grpo-policy", options)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(inputs.concurrency.max(1))
        .build()?;
    let pb = step_progress(cfg.max_steps, state.step);
    while state.step < cfg.max_steps {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let step = state.step;
        let clock = Instant::now();
        policy.set_model(model.valid())?;
        let picks = draws(
            cfg.seed,
            step,
            cfg.tasks_per_step,
            inputs.tasks.len(),
            inputs.agents.len(),
        );
        let env = SimEnv {
            seed: cfg.seed ^ (step as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            ..*inputs.env
        };
        let groups = play_groups(
            &policy,
            inputs.agents,
            inputs.tasks,
            &picks,
            cfg.num_generations,
            &env,
            step,
            &pool,
        )?;
        let rollout_s = clock.elapsed().as_secs_f64();
        let errors: Vec<&String> = groups.iter().flat_map(|g| &g.errors).collect();
        if let Some(first) = errors.first() {
            pb.suspend(|| {
                eprintln!(
                    "grpo-train: step {}: {} episode(s) the policy could not play, left out; first: {first}",
                    step + 1,
                    errors.len()
                )
            });
        }

        let tool_adv = group_advantages(&groups, &TOOL_REWARDS, &cfg.tool_advantage);
        let reply_adv = group_advantages(&groups, &REPLY_REWARDS, &cfg.reply_advantage);
        let episodes: Vec<&Trajectory> = groups.iter().flat_map(|g| &g.episodes).collect();
        let (mut views, mut spans) = (Vec::new(), Vec::new());
        let mut skipped: std::collections::BTreeMap<&str, usize> = Default::default();
        for (e, t) in episodes.iter().enumerate() {
            match inputs.views.build(t) {
                Ok(v) => {
                    spans.extend(spans_of(views.len(), &v, |kind| match kind {
                        SegmentKind::ToolCall => tool_adv.values[e],
                        _ => reply_adv.values[e],
                    }));
                    views.push(v);
                }
                Err(why) => *skipped.entry(why.reason()).or_default() += 1,
            }
        }

        let clock = Instant::now();
        let (old, entropy) = logprobs(&model.valid(), &views, pad, cfg.batch_tokens, device)?;
        let reference_lp = reference
            .as_ref()
            .map(|r| logprobs(r, &views, pad, cfg.batch_tokens, device))
            .transpose()?
            .map(|(lp, _)| lp);
        let opd = teacher
            .as_ref()
            .filter(|_| cfg.kl_penalty.kl_penalty_coef != 0.0)
            .map(|t| logprobs(t, &views, pad, cfg.batch_tokens, device))
            .transpose()?
            .map(|(teacher_lp, _)| opd_term(&old, &teacher_lp, &cfg.kl_penalty));
        let scoring_s = clock.elapsed().as_secs_f64();

        let clock = Instant::now();
        let lr = cosine_with_warmup(cfg.learning_rate, step, cfg.warmup_steps, cfg.max_steps);
        let batch = Batch {
            views: &views,
            spans: &spans,
            old: &old,
            reference: reference_lp.as_deref(),
            token_advantages: opd.as_ref().map(|(term, _)| term.as_slice()),
        };
        let settings = UpdateConfig {
            loss: &cfg.loss,
            num_iterations: cfg.num_iterations,
            learning_rate: lr,
            max_grad_norm: cfg.max_grad_norm,
            batch_tokens: cfg.batch_tokens,
            aux_coef,
            pad,
        };
        let (updated, loss, grad_norm) = update(model, &mut opt, &batch, &settings, device)?;
        model = updated;
        let update_s = clock.elapsed().as_secs_f64();
        state.step += 1;
        state.tokens += views.iter().map(|v| v.len() as u64).sum::<u64>();

        let mut record = json!({
            "step": state.step, "learning_rate": lr, "loss": loss.loss, "grad_norm": grad_norm,
            "kl": loss.kl, "entropy": mean(&entropy),
            "clip_ratio/low_mean": loss.clip_ratio_low, "clip_ratio/high_mean": loss.clip_ratio_high,
            "clip_ratio/region_mean": loss.clip_ratio_region,
            "frac_reward_zero_std/tool": tool_adv.frac_reward_zero_std,
            "frac_reward_zero_std/reply": reply_adv.frac_reward_zero_std,
            "reward_std/tool": tool_adv.reward_std, "reward_std/reply": reply_adv.reward_std,
            "completions/mean_length": loss.tokens as f64 / spans.len().max(1) as f64,
            "completions": spans.len(), "episodes": episodes.len(), "skipped_views": skipped,
            "rollout_errors": errors.len(),
            "right_tool": mean(&episodes.iter().filter_map(|t| right_tool(t)).map(|r| f64::from(u8::from(r))).collect::<Vec<_>>()),
            "time/rollout_s": rollout_s, "time/scoring_s": scoring_s, "time/update_s": update_s,
        });
        let obj = record.as_object_mut().expect("a json object");
        for name in TOOL_REWARDS.iter().chain(&REPLY_REWARDS) {
            let values: Vec<f64> = episodes
                .iter()
                .filter_map(|t| reward(&t.scores, name))
                .collect();
            obj.insert(format!("rewards/{name}/mean"), json!(mean(&values)));
        }
        // TRL's `reward`: the weighted sum of an episode's rewards, averaged over episodes.
        let weighted = |names: &[&str], weights: &[f64], t: &Trajectory| -> f64 {
            names
                .iter()
                .zip(weights)
                .filter_map(|(n, w)| reward(&t.scores, n).map(|r| r * w))
                .sum()
        };
        let total: Vec<f64> = episodes
            .iter()
            .map(|t| {
                weighted(&TOOL_REWARDS, &cfg.tool_advantage.weights, t)
                    + weighted(&REPLY_REWARDS, &cfg.reply_advantage.weights, t)
            })
            .collect();
        obj.insert("reward".into(), json!(mean(&total)));
        if let Some((term, reverse_kl)) = &opd {
            obj.insert("opd/reverse_kl".into(), json!(reverse_kl));
            let flat: Vec<f64> = term.iter().flatten().copied().collect();
            obj.insert("opd/advantage_mean".into(), json!(mean(&flat)));
        }
        log.write(&record)?;
        // One file per step: a resumed run rewrites the steps it replays instead of appending twice.
        let mut w = JsonlWriter::create(
            &rollouts
                .join(format!("step-{:06}.jsonl", state.step))
                .to_string_lossy(),
        )?;
        for t in &episodes {
            w.write(*t)?;
        }
        w.finish()?;
        pb.set_position(state.step as u64);
        pb.set_message(format!(
            "reward {} right tool {}",
            fmt(&record["reward"]),
            fmt(&record["right_tool"])
        ));
        saves.after_step(&model, &opt, &mut state, &log)?;
    }
    pb.finish_and_clear();
    let ckpt = saves.last(&model, &opt, &mut state, &log)?;
    metrics::plot(
        &metrics_path,
        &inputs.out.join("reward.svg"),
        &[
            ("reward", "reward"),
            ("right tool", "right_tool"),
            ("tool rationality", "rewards/tool_rationality/mean"),
            ("skill selection", "rewards/skill_selection/mean"),
            ("accuracy", "rewards/accuracy/mean"),
            ("effectiveness", "rewards/effectiveness/mean"),
            ("kl", "kl"),
            ("clip ratio", "clip_ratio/region_mean"),
        ],
    )?;
    Ok(ckpt)
}

/// The mean, `None` (null in the metrics) for no values.
fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn fmt(v: &Value) -> String {
    v.as_f64().map_or("-".into(), |x| format!("{x:.3}"))
}
