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
//! **Two-agent mode** ([`Policies::TwoAgent`]): a tool agent and a reply agent, two models, play every
//! move together ([`crate::agent::two_agent`]: the tool agent calls tools, the reply agent answers).
//! A completion belongs to the agent that wrote it ([`super::sides`]), is judged by that agent's
//! rewards and updates that agent's model only; each agent is a [`Learner`] with its own reference,
//! optimizer and checkpoints.
//!
//! **Rollouts on inference servers** ([`super::remote`]): with `remote` the episodes are played by
//! OpenAI-compatible endpoints, which load the current weights from disk before each step.
//!
//! `old` is recomputed by the trainer on the re-rendered episode: the view's tokens are the ones the
//! gradient needs. The sampler records its own log-probs on every message it generates; with
//! `tis_imp_ratio_cap` each token's policy-gradient term is weighted by `min(π_old/π_sampler, C)`
//! ([`super::tis`]), which corrects for a sampler that computes them differently.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result};
use burn::module::AutodiffModule;
use burn::tensor::backend::AutodiffBackend;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::advantage::{advantages, AdvantageConfig, Advantages};
use super::learner::{mean, Learner, Start, StepData};
use super::policy_loss::PolicyLossConfig;
use super::remote::RemoteRollouts;
use super::rollout::{draws, play_groups, Group, Sampler};
use super::sides::{completions, Completions};
use super::tis::sampler_logprobs;
use super::update::{logprobs, Span};
use crate::agent::two_agent::{AgentRole, TwoAgent};
use crate::agent::{Agent, SimEnv};
use crate::eval::rollout::right_tool;
use crate::jsonl::JsonlWriter;
use crate::model::generation::generate::TextGenerator;
use crate::model::CausalLm;
use crate::opd::reverse_kl::KlPenalty;
use crate::policy::local::LocalPolicy;
use crate::policy::Policy;
use crate::record::{Scores, Trajectory};
use crate::rng::Rng;
use crate::train::checkpoint;
use crate::train::metrics;
use crate::train::optim::{cosine_with_warmup, AdamWConfig};
use crate::train::trainer::step_progress;
use crate::train::view::ViewBuilder;

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
    /// Truncated importance sampling against the sampler's log-probs with this cap C (verl's
    /// `tis_imp_ratio_cap`; `None` = off).
    pub tis_imp_ratio_cap: Option<f64>,
    /// Play the next step's rollouts (on the rollout servers) while this step learns: one step
    /// stale, the next step's episodes from the weights before this step's update.
    pub async_rollouts: bool,
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
    /// Inference servers that play the rollouts instead of the in-process model (single policy).
    pub remote: Option<&'a RemoteRollouts>,
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

/// The policies a run trains: one that plays every move (the default; its tool and reply turns are
/// still separate completions with their own rewards), or a tool agent and a reply agent, two models
/// each trained on its own moves with its own reward, reference, optimizer and checkpoints.
// Built once per run and taken apart at once: boxing the larger variant would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Policies<B: AutodiffBackend> {
    Single(Start<B>),
    TwoAgent { tool: Start<B>, reply: Start<B> },
}

/// Runs GRPO from `policies` (or, with `resume`, the newest checkpoints in `inputs.out`: `OUT/` for a
/// single policy, `OUT/tool/` and `OUT/reply/` for two agents); `teacher` is the OPD term's
/// (`kl_penalty`). Returns the final checkpoint of every policy.
pub fn train<B: AutodiffBackend>(
    cfg: &GrpoConfig,
    policies: Policies<B>,
    teacher: Option<CausalLm<B::InnerBackend>>,
    inputs: &RunInputs<'_>,
    resume: bool,
    stop: &AtomicBool,
    device: &B::Device,
) -> Result<Vec<PathBuf>>
where
    TextGenerator<B::InnerBackend>: Send,
{
    anyhow::ensure!(!inputs.tasks.is_empty(), "no tasks");
    anyhow::ensure!(!inputs.agents.is_empty(), "no harness");
    anyhow::ensure!(
        cfg.num_generations >= 2,
        "num_generations must be at least 2 (a group needs two to compare)"
    );
    let starts = match policies {
        Policies::Single(start) => vec![(None, start, inputs.out.to_path_buf())],
        Policies::TwoAgent { tool, reply } => [(AgentRole::Tool, tool), (AgentRole::Reply, reply)]
            .into_iter()
            .map(|(role, start)| (Some(role), start, inputs.out.join(role.as_str())))
            .collect(),
    };
    anyhow::ensure!(
        cfg.loss.beta == 0.0 || starts.iter().all(|(_, s, _)| s.reference.is_some()),
        "beta > 0 needs a reference model"
    );
    std::fs::create_dir_all(inputs.out)
        .with_context(|| format!("creating {}", inputs.out.display()))?;
    let mut learners = starts
        .into_iter()
        .map(|(role, start, out)| {
            Learner::new(role, start, out, cfg, inputs.tokenizer_dir, resume, device)
        })
        .collect::<Result<Vec<_>>>()?;
    if let [tool, reply] = &learners[..] {
        anyhow::ensure!(
            tool.state.step == reply.state.step,
            "{} is at step {} but {} at step {}: delete the newer checkpoint to resume from the older",
            tool.out.display(),
            tool.state.step,
            reply.out.display(),
            reply.state.step
        );
    }
    let pad = inputs
        .views
        .tokenizer()
        .token_to_id("<|endoftext|>")
        .unwrap_or(inputs.views.end_of_turn());
    let metrics_path = inputs.out.join("metrics.jsonl");
    let mut log = metrics::Log::open(&metrics_path, learners[0].state.metrics_lines)?;
    let rollouts = inputs.out.join("rollouts");
    std::fs::create_dir_all(&rollouts)
        .with_context(|| format!("creating {}", rollouts.display()))?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(inputs.concurrency.max(1))
        .build()?;
    let two_agent = learners.len() == 2;
    anyhow::ensure!(
        !(two_agent && inputs.remote.is_some()),
        "rollout endpoints play one policy; two-agent mode plays its two models in-process"
    );
    anyhow::ensure!(
        !cfg.async_rollouts || inputs.remote.is_some(),
        "--async plays the next step's rollouts on the rollout servers while this step learns: give \
         --rollout-endpoint"
    );
    let ahead_path = |step: usize| rollouts.join(format!("ahead-step-{:06}.json", step + 1));
    // The next step's rollouts, played while this step learned (`async_rollouts`), kept in
    // `rollouts/ahead-step-N.json` for a resumed run to find.
    let mut ahead: Option<Played> = None;
    if cfg.async_rollouts && resume {
        ahead = Played::read(&ahead_path(learners[0].state.step))?;
    }
    let pb = step_progress(cfg.max_steps, learners[0].state.step);
    while learners[0].state.step < cfg.max_steps {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let step = learners[0].state.step;
        let mut weight_sync_s = 0.0;
        let played = match ahead.take() {
            Some(played) => played,
            None => {
                weight_sync_s += sync_policies(inputs, &learners)?;
                let locals: Vec<&LocalPolicy<B::InnerBackend>> =
                    learners.iter().map(|l| &l.policy).collect();
                let sampler = |seed: u64| episode_policy(inputs.remote, &locals, seed);
                play_step(cfg, inputs, &pool, step, step, &sampler)?
            }
        };
        let run_ahead = cfg.async_rollouts && step + 1 < cfg.max_steps;
        if run_ahead && played.policy_step != step {
            // The servers hold the weights that played this step; the next plays with the current.
            weight_sync_s += sync_policies(inputs, &learners)?;
        }
        let remote_only = |seed: u64| episode_policy::<B::InnerBackend>(inputs.remote, &[], seed);
        let (learned, next) = std::thread::scope(|s| {
            let next = run_ahead
                .then(|| s.spawn(|| play_step(cfg, inputs, &pool, step + 1, step, &remote_only)));
            let learned = learn_step(
                cfg,
                inputs,
                learners,
                teacher.as_ref(),
                &played,
                pad,
                device,
                &pb,
            );
            let next = next.map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            (learned, next)
        });
        let (updated, mut record) = learned?;
        learners = updated;
        if let Some(next) = next {
            let next = next?;
            next.write(&ahead_path(step + 1))?;
            ahead = Some(next);
        }
        let obj = record.as_object_mut().expect("a json object");
        obj.insert("time/weight_sync_s".into(), json!(weight_sync_s));
        log.write(&record)?;
        // One file per step: a resumed run rewrites the steps it replays instead of appending twice.
        let mut w = JsonlWriter::create(
            &rollouts
                .join(format!("step-{:06}.jsonl", step + 1))
                .to_string_lossy(),
        )?;
        for t in played.groups.iter().flat_map(|g| &g.episodes) {
            w.write(t)?;
        }
        w.finish()?;
        pb.set_position((step + 1) as u64);
        pb.set_message(format!(
            "reward {} right tool {}",
            fmt(&record["reward"]),
            fmt(&record["right_tool"])
        ));
        for l in &mut learners {
            schedule(cfg, inputs, &l.out).after_step(&l.model, &l.opt, &mut l.state, &log)?;
        }
    }
    pb.finish_and_clear();
    let mut last = Vec::with_capacity(learners.len());
    for l in &mut learners {
        last.push(schedule(cfg, inputs, &l.out).last(&l.model, &l.opt, &mut l.state, &log)?);
    }
    let mut curves: Vec<(String, String)> = [
        ("reward", "reward"),
        ("right tool", "right_tool"),
        ("tool rationality", "rewards/tool_rationality/mean"),
        ("skill selection", "rewards/skill_selection/mean"),
        ("accuracy", "rewards/accuracy/mean"),
        ("effectiveness", "rewards/effectiveness/mean"),
    ]
    .map(|(label, key)| (label.to_string(), key.to_string()))
    .into();
    for l in &learners {
        let p = l.prefix();
        curves.push((format!("{p}kl"), format!("{p}kl")));
        curves.push((
            format!("{p}clip ratio"),
            format!("{p}clip_ratio/region_mean"),
        ));
    }
    let curves: Vec<(&str, &str)> = curves
        .iter()
        .map(|(l, k)| (l.as_str(), k.as_str()))
        .collect();
    metrics::plot(&metrics_path, &inputs.out.join("reward.svg"), &curves)?;
    Ok(last)
}

/// One step's rollouts: its groups, the step whose weights played them (the step itself, or the one
/// before when they ran ahead), and how long they took.
#[derive(Serialize, Deserialize)]
struct Played {
    groups: Vec<Group>,
    policy_step: usize,
    rollout_s: f64,
}

impl Played {
    /// Saved where a resumed run finds them (the next step's rollouts, played ahead).
    fn write(&self, path: &Path) -> Result<()> {
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec(self)?)
            .with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
    }

    /// Those saved at `path`, if there are.
    fn read(path: &Path) -> Result<Option<Played>> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .with_context(|| format!("reading {}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }
}

/// Gives the rollout servers (or the learners' in-process samplers) the learners' current weights;
/// returns the seconds it took.
fn sync_policies<B: AutodiffBackend>(inputs: &RunInputs<'_>, learners: &[Learner<B>]) -> Result<f64>
where
    TextGenerator<B::InnerBackend>: Send,
{
    let clock = Instant::now();
    match inputs.remote {
        Some(remote) => remote.sync(&learners[0].model.valid(), inputs.tokenizer_dir)?,
        None => {
            for l in learners {
                l.policy.set_model(l.model.valid())?;
            }
        }
    }
    Ok(clock.elapsed().as_secs_f64())
}

/// The policy of one episode from its sampling seed: the rollout servers, or the in-process samplers
/// `locals` (one policy, or a tool agent and a reply agent).
fn episode_policy<BI: burn::prelude::Backend>(
    remote: Option<&RemoteRollouts>,
    locals: &[&LocalPolicy<BI>],
    seed: u64,
) -> Box<dyn Policy>
where
    TextGenerator<BI>: Send,
{
    match (remote, locals) {
        (Some(remote), _) => remote.policy(seed),
        (None, [tool, reply]) => Box::new(TwoAgent::new(
            tool.sibling(seed),
            reply.sibling(Rng::derive(seed, "reply").next_u64()),
        )),
        (None, locals) => Box::new(locals[0].sibling(seed)),
    }
}

/// Plays step `step`'s draws with `sampler`, whose weights are those of step `policy_step`; each
/// episode records that step (`rl_policy_step`).
fn play_step(
    cfg: &GrpoConfig,
    inputs: &RunInputs<'_>,
    pool: &rayon::ThreadPool,
    step: usize,
    policy_step: usize,
    sampler: &Sampler<'_>,
) -> Result<Played> {
    let clock = Instant::now();
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
    let mut groups = play_groups(
        sampler,
        inputs.agents,
        inputs.tasks,
        &picks,
        cfg.num_generations,
        &env,
        step,
        pool,
    )?;
    for t in groups.iter_mut().flat_map(|g| &mut g.episodes) {
        t.meta.insert("rl_policy_step".into(), json!(policy_step));
    }
    Ok(Played {
        groups,
        policy_step,
        rollout_s: clock.elapsed().as_secs_f64(),
    })
}

/// Judges `played` into advantages per turn kind and updates every learner on its own completions;
/// returns the updated learners and the step's metrics record (all but the weight sync's time).
#[allow(clippy::too_many_arguments)]
fn learn_step<B: AutodiffBackend>(
    cfg: &GrpoConfig,
    inputs: &RunInputs<'_>,
    learners: Vec<Learner<B>>,
    teacher: Option<&CausalLm<B::InnerBackend>>,
    played: &Played,
    pad: u32,
    device: &B::Device,
    pb: &indicatif::ProgressBar,
) -> Result<(Vec<Learner<B>>, Value)>
where
    TextGenerator<B::InnerBackend>: Send,
{
    let step = learners[0].state.step;
    let two_agent = learners.len() == 2;
    let groups = &played.groups;
    let errors: Vec<&String> = groups.iter().flat_map(|g| &g.errors).collect();
    // Nothing played (a rollout server gone, say): stop rather than step on no data.
    if let (Some(first), true) = (errors.first(), groups.iter().all(|g| g.episodes.is_empty())) {
        anyhow::bail!(
            "step {}: none of the {} episodes could be played (the last checkpoint in {} is \
             where --resume continues); first: {first}",
            step + 1,
            errors.len(),
            inputs.out.display()
        );
    }
    if let Some(first) = errors.first() {
        pb.suspend(|| {
            eprintln!(
                "grpo-train: step {}: {} episode(s) the policy could not play, left out; first: {first}",
                step + 1,
                errors.len()
            )
        });
    }

    let tool_adv = group_advantages(groups, &TOOL_REWARDS, &cfg.tool_advantage);
    let reply_adv = group_advantages(groups, &REPLY_REWARDS, &cfg.reply_advantage);
    let episodes: Vec<&Trajectory> = groups.iter().flat_map(|g| &g.episodes).collect();
    let Completions {
        views,
        spans,
        viewed,
        skipped,
    } = completions(
        &episodes,
        inputs.views,
        [&tool_adv.values, &reply_adv.values],
        two_agent,
    );

    let clock = Instant::now();
    let teacher_lp = teacher
        .filter(|_| cfg.kl_penalty.kl_penalty_coef != 0.0)
        .map(|t| logprobs(t, &views, pad, cfg.batch_tokens, device))
        .transpose()?
        .map(|(lp, _)| lp);
    let sampler_lp: Option<Vec<Vec<Option<f64>>>> = cfg.tis_imp_ratio_cap.map(|_| {
        views
            .iter()
            .zip(&viewed)
            .map(|(v, t)| sampler_logprobs(v, t, inputs.views.tokenizer()))
            .collect()
    });
    // The teacher's log-probs count with the reference's: another model scoring the views.
    let (mut scoring_s, mut reference_s, mut update_s) = (0.0, clock.elapsed().as_secs_f64(), 0.0);
    let data = StepData {
        views: &views,
        teacher: teacher_lp.as_deref(),
        sampler: sampler_lp.as_deref(),
        learning_rate: cosine_with_warmup(cfg.learning_rate, step, cfg.warmup_steps, cfg.max_steps),
        pad,
    };
    let mut record = json!({
        "step": step + 1, "learning_rate": data.learning_rate,
        "frac_reward_zero_std/tool": tool_adv.frac_reward_zero_std,
        "frac_reward_zero_std/reply": reply_adv.frac_reward_zero_std,
        "reward_std/tool": tool_adv.reward_std, "reward_std/reply": reply_adv.reward_std,
        "episodes": episodes.len(), "skipped_views": skipped,
        "rollout_errors": errors.len(),
        "right_tool": mean(&episodes.iter().filter_map(|t| right_tool(t)).map(|r| f64::from(u8::from(r))).collect::<Vec<_>>()),
    });
    let obj = record.as_object_mut().expect("a json object");
    let mut updated = Vec::with_capacity(learners.len());
    for learner in learners {
        let own: Vec<Span> = spans
            .iter()
            .filter(|(side, _)| learner.role.is_none_or(|r| r == *side))
            .map(|(_, s)| *s)
            .collect();
        let (learner, learned) = learner.learn(&own, &data, cfg, device)?;
        obj.extend(learned.metrics);
        scoring_s += learned.scoring_s;
        reference_s += learned.reference_s;
        update_s += learned.update_s;
        updated.push(learner);
    }
    obj.insert("staleness".into(), json!(step - played.policy_step));
    obj.insert("time/rollout_s".into(), json!(played.rollout_s));
    obj.insert("time/scoring_s".into(), json!(scoring_s));
    obj.insert("time/reference_s".into(), json!(reference_s));
    obj.insert("time/update_s".into(), json!(update_s));
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

    Ok((updated, record))
}

/// The checkpoint schedule of the learner checkpointing into `out`.
fn schedule<'a>(
    cfg: &GrpoConfig,
    inputs: &'a RunInputs<'_>,
    out: &'a Path,
) -> checkpoint::Schedule<'a> {
    checkpoint::Schedule {
        out,
        tokenizer_dir: inputs.tokenizer_dir,
        save_steps: cfg.save_steps,
        max_steps: cfg.max_steps,
    }
}

fn fmt(v: &Value) -> String {
    v.as_f64().map_or("-".into(), |x| format!("{x:.3}"))
}
