//! `grpo-train` flags: TRL's `GRPOConfig` names where they exist (`num_generations`, `epsilon`,
//! `epsilon_high`, `beta`, `loss_type`, `importance_sampling_level`, `scale_rewards`,
//! `multi_objective_aggregation`, `num_iterations`), the simulator's for the rest.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use anyhow::{bail, Context, Result};
use burn::tensor::backend::AutodiffBackend;
use clap::Args;

use super::advantage::{AdvantageConfig, Aggregation, ScaleRewards};
use super::learner::Start;
use super::policy_loss::{ImportanceSamplingLevel, LossType, PolicyLossConfig};
use super::remote::{RemoteConfig, RemoteRollouts};
use super::trainer::{train, GrpoConfig, Policies, RunInputs, REPLY_REWARDS, TOOL_REWARDS};
use crate::agent::two_agent::AgentRole;
use crate::agent::{Agent, SimEnv};
use crate::heap;
use crate::hsa::variant::load_harness;
use crate::model::CausalLm;
use crate::opd::reverse_kl::KlPenalty;
use crate::opd::teacher::check_compatible;
use crate::record::Trajectory;
use crate::sim::cli::CatalogSource;
use crate::sim::faults::FaultPlan;
use crate::train::checkpoint;
use crate::train::optim::AdamWConfig;
use crate::train::run_args::RunArgs;
use crate::train::view::ViewBuilder;

#[derive(Debug, Args)]
pub struct GrpoArgs {
    /// The policy to start from: a checkpoint directory (weights, tokenizer, chat template), e.g. the
    /// HSA-SFT model.
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// Task records (`hat sim tasks --split train`).
    #[arg(long, value_name = "FILE")]
    pub tasks: String,
    /// A harness to play under (repeat): the original and HSA train-pool variants (`hsa-augment --out`);
    /// each task of a step draws one.
    #[arg(long = "harness", required = true, value_name = "DIR")]
    pub harnesses: Vec<PathBuf>,
    #[command(flatten)]
    pub catalog: CatalogSource,
    /// Tool faults injected while playing (`hat sim rollout --faults` syntax).
    #[arg(long, default_value = "")]
    pub faults: FaultPlan,
    #[command(flatten)]
    pub run: RunArgs,
    /// G: episodes per task, the group its advantages are relative to.
    #[arg(long, default_value_t = 4)]
    pub num_generations: usize,
    #[arg(long, default_value_t = 8)]
    pub tasks_per_step: usize,
    /// μ: optimizer steps on each step's episodes (ratios move off 1 from the second on).
    #[arg(long, default_value_t = 1)]
    pub num_iterations: usize,
    /// Lower clip ε (default 0.2; 3e-4 with a sequence-level ratio, as GSPO).
    #[arg(long)]
    pub epsilon: Option<f64>,
    /// Upper clip ε (default: `epsilon`; 4e-4 with a sequence-level ratio). DAPO's clip-higher: 0.28.
    #[arg(long)]
    pub epsilon_high: Option<f64>,
    #[arg(long, value_enum, default_value = "token")]
    pub importance_sampling_level: ImportanceSamplingLevel,
    #[arg(long, value_enum, default_value = "dapo")]
    pub loss_type: LossType,
    /// KL coefficient (k3 estimator, which regularises a forward KL) against `--ref-model`.
    #[arg(long, default_value_t = 0.0)]
    pub beta: f64,
    /// Reference policy for the KL term (default: `--model`; in two-agent mode each agent's reference
    /// is its own starting model).
    #[arg(long, value_name = "DIR", conflicts_with = "two_agent")]
    pub ref_model: Option<PathBuf>,
    /// Two-agent mode (the earlier Taobao Live system): in every move a tool agent decides the tool
    /// calls and, once it would answer, a reply agent writes the reply. Two models, each trained only
    /// on its own moves with its own rewards (tool rationality, skill selection / accuracy,
    /// effectiveness, CoT length), reference, optimizer and checkpoints (OUT/tool/, OUT/reply/).
    #[arg(long)]
    pub two_agent: bool,
    /// The reply agent's starting checkpoint in two-agent mode (default: `--model`, which the tool
    /// agent starts from); must share its tokenizer.
    #[arg(long, value_name = "DIR", requires = "two_agent")]
    pub reply_model: Option<PathBuf>,
    /// OPD term: a teacher checkpoint (e.g. the pre-SFT base) whose per-token reverse KL
    /// `−kl_penalty_coef·(log π_old − log π_teacher)` is added to the advantage of every token the
    /// policy generated (as `opd`'s). Must share the policy's tokenizer. Off without it.
    #[arg(long, value_name = "DIR")]
    pub teacher: Option<PathBuf>,
    /// λ of the OPD term (with --teacher; 0 = off).
    #[arg(long, default_value_t = 1.0)]
    pub kl_penalty_coef: f64,
    /// γ: discount of the future reverse KL summed into each token's OPD term (0 = per token).
    #[arg(long, default_value_t = 0.0)]
    pub kl_discount_factor: f64,
    /// Truncated importance sampling (verl's `tis_imp_ratio_cap`): weight each policy token's loss
    /// by min(π_old/π_sampler, C), the trainer's recomputed probability over the one the sampler
    /// recorded while generating. Off without it; verl and TRL use C = 2–3.
    #[arg(long, value_name = "C")]
    pub tis_imp_ratio_cap: Option<f64>,
    #[arg(long, value_enum, default_value = "sum_then_normalize")]
    pub multi_objective_aggregation: Aggregation,
    #[arg(long, value_enum, default_value = "group")]
    pub scale_rewards: ScaleRewards,
    /// Reward weights as NAME=W,… over tool_rationality, skill_selection (tool turns) and accuracy,
    /// effectiveness, cot_length (reply turns); unnamed rewards weigh 1.
    #[arg(long, default_value = "")]
    pub reward_weights: String,
    /// Longest reply, in tokens (also `dr_grpo`'s normaliser).
    #[arg(long, default_value_t = 160)]
    pub max_completion_length: usize,
    /// Episodes run at once (generation itself takes the model in turns).
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// Play the rollouts on this OpenAI-compatible server instead of in-process (repeat for
    /// replicas; requests are balanced, an episode stays on one): `serve --enable-weight-updates`
    /// or SGLang, sharing this machine's file system. Before each step the current weights go to
    /// OUT/rollout-weights/ and every server loads them (`POST /update_weights_from_disk`). The
    /// servers' log-probs come back with every reply: add --tis-imp-ratio-cap 2 to correct for
    /// their numerics, and raise --concurrency to keep them busy.
    #[arg(
        long = "rollout-endpoint",
        value_name = "URL",
        conflicts_with = "two_agent"
    )]
    pub rollout_endpoints: Vec<String>,
    /// Play the next step's rollouts on the rollout servers while this step learns (one step stale:
    /// its episodes come from the weights before this step's update; `staleness` in the metrics,
    /// `rl_policy_step` on every episode). Use with --tis-imp-ratio-cap, which corrects for it.
    #[arg(long = "async", requires = "rollout_endpoints")]
    pub async_rollouts: bool,
    /// The served model's name (default: the first of GET /v1/models).
    #[arg(long, requires = "rollout_endpoints")]
    pub rollout_model: Option<String>,
    /// API key of the rollout servers.
    #[arg(long, env = "HAT_ROLLOUT_API_KEY", hide_env_values = true)]
    pub rollout_api_key: Option<String>,
    /// Per-request timeout of the rollout servers, in seconds (a weight load included).
    #[arg(long, default_value_t = 300)]
    pub rollout_timeout: u64,
}

/// `weights` over `names` from `NAME=W,…` (other names in the spec belong to the other kind).
fn reward_weights(spec: &str, names: &[&str]) -> Result<Vec<f64>> {
    let mut weights = vec![1.0; names.len()];
    for part in spec.split(',').filter(|p| !p.trim().is_empty()) {
        let (name, w) = part
            .split_once('=')
            .with_context(|| format!("--reward-weights {part:?}: expected NAME=WEIGHT"))?;
        let w: f64 = w
            .trim()
            .parse()
            .with_context(|| format!("--reward-weights {part:?}: the weight is not a number"))?;
        let all: Vec<&str> = TOOL_REWARDS.iter().chain(&REPLY_REWARDS).copied().collect();
        if !all.contains(&name.trim()) {
            bail!(
                "--reward-weights: unknown reward {name:?}; known: {}",
                all.join(", ")
            );
        }
        if let Some(k) = names.iter().position(|n| *n == name.trim()) {
            weights[k] = w;
        }
    }
    Ok(weights)
}

impl GrpoArgs {
    fn config(&self) -> Result<GrpoConfig> {
        let sequence = self.importance_sampling_level != ImportanceSamplingLevel::Token;
        let epsilon = self.epsilon.unwrap_or(if sequence { 3e-4 } else { 0.2 });
        let epsilon_high = self
            .epsilon_high
            .unwrap_or(if sequence && self.epsilon.is_none() {
                4e-4
            } else {
                epsilon
            });
        let advantage = |names: &[&str]| -> Result<AdvantageConfig> {
            Ok(AdvantageConfig {
                aggregation: self.multi_objective_aggregation,
                scale_rewards: self.scale_rewards,
                weights: reward_weights(&self.reward_weights, names)?,
                epsilon: 1e-4,
            })
        };
        if let Some(cap) = self.tis_imp_ratio_cap {
            if !(cap.is_finite() && cap > 0.0) {
                bail!("--tis-imp-ratio-cap must be a positive number, got {cap}");
            }
        }
        if sequence
            && matches!(
                self.loss_type,
                LossType::Dapo | LossType::Bnpo | LossType::DrGrpo
            )
        {
            eprintln!(
                "grpo-train: a sequence-level ratio with --loss-type {:?} weights each completion by its \
                 length; GSPO uses --loss-type grpo",
                self.loss_type
            );
        }
        Ok(GrpoConfig {
            max_steps: self.run.max_steps,
            learning_rate: self.run.learning_rate,
            warmup_steps: self.run.warmup_steps,
            adamw: AdamWConfig::default(),
            max_grad_norm: self.run.max_grad_norm,
            seed: self.run.seed,
            batch_tokens: self.run.batch_tokens,
            num_generations: self.num_generations,
            tasks_per_step: self.tasks_per_step,
            num_iterations: self.num_iterations.max(1),
            tool_advantage: advantage(&TOOL_REWARDS)?,
            reply_advantage: advantage(&REPLY_REWARDS)?,
            loss: PolicyLossConfig {
                epsilon,
                epsilon_high,
                importance_sampling_level: self.importance_sampling_level,
                loss_type: self.loss_type,
                beta: self.beta,
                max_completion_length: self.max_completion_length,
            },
            save_steps: self.run.save_steps,
            router_aux_loss_coef: None,
            kl_penalty: KlPenalty {
                kl_penalty_coef: self.kl_penalty_coef,
                kl_discount_factor: self.kl_discount_factor,
            },
            tis_imp_ratio_cap: self.tis_imp_ratio_cap,
            async_rollouts: self.async_rollouts,
        })
    }
}

/// Runs `grpo-train`; prints the final checkpoint's path (one per agent in two-agent mode).
pub fn run<B: AutodiffBackend>(a: &GrpoArgs, stop: &AtomicBool, device: &B::Device) -> Result<()>
where
    crate::model::generation::generate::TextGenerator<B::InnerBackend>: Send,
{
    let cfg = a.config()?;
    a.run.prepare_out()?;
    if a.two_agent && a.run.overwrite_output_dir {
        for role in [AgentRole::Tool, AgentRole::Reply] {
            checkpoint::remove_all(&a.run.out.join(role.as_str()))?;
        }
    }
    let tasks: Vec<Trajectory> = crate::jsonl::read_all(&a.tasks)?;
    let agents = a
        .harnesses
        .iter()
        .map(|dir| {
            let (harness, names) = load_harness(dir)?;
            Ok((dir.display().to_string(), Agent::new(&harness, names)?))
        })
        .collect::<Result<Vec<_>>>()?;
    let catalog = a.catalog.load()?;
    let env = SimEnv {
        catalog: &catalog,
        faults: &a.faults,
        seed: a.run.seed,
    };
    let views = ViewBuilder::from_dir(&a.model)?;
    // A policy to train from `dir`, with `reference` for the KL term when there is one.
    let start = |dir: &Path, reference: &Path| -> Result<Start<B>> {
        let model: CausalLm<B> = CausalLm::load(dir, device)?;
        heap::keep_freed_memory(model.config.hidden_size);
        let reference = (a.beta > 0.0)
            .then(|| CausalLm::<B::InnerBackend>::load(reference, device))
            .transpose()?;
        Ok(Start { model, reference })
    };
    let policies = if a.two_agent {
        let reply = a.reply_model.as_deref().unwrap_or(&a.model);
        check_compatible(&a.model, reply)
            .context("--reply-model must share --model's tokenizer (one view of every episode)")?;
        Policies::TwoAgent {
            tool: start(&a.model, &a.model)?,
            reply: start(reply, reply)?,
        }
    } else {
        Policies::Single(start(&a.model, a.ref_model.as_deref().unwrap_or(&a.model))?)
    };
    let teacher = match &a.teacher {
        Some(dir) => {
            check_compatible(&a.model, dir)?;
            Some(CausalLm::<B::InnerBackend>::load(dir, device)?)
        }
        None => None,
    };
    let remote = if a.rollout_endpoints.is_empty() {
        None
    } else {
        let cfg = RemoteConfig {
            urls: a.rollout_endpoints.clone(),
            model: a.rollout_model.clone(),
            api_key: a.rollout_api_key.clone(),
            timeout: std::time::Duration::from_secs(a.rollout_timeout.max(1)),
            max_tokens: a.max_completion_length,
            tool_call_format: crate::chat::ChatTemplate::from_model_dir(&a.model)?
                .tool_call_format(),
        };
        Some(RemoteRollouts::new(
            &cfg,
            &a.run.out.join("rollout-weights"),
            crate::tokenizer::load(&a.model)?,
        )?)
    };
    let inputs = RunInputs {
        tasks: &tasks,
        agents: &agents,
        env: &env,
        views: &views,
        tokenizer_dir: Path::new(&a.model),
        out: &a.run.out,
        concurrency: a.concurrency,
        remote: remote.as_ref(),
    };
    for ckpt in train::<B>(&cfg, policies, teacher, &inputs, a.run.resume, stop, device)? {
        println!("{}", ckpt.display());
    }
    Ok(())
}
