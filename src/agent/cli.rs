//! `hat sim …`: generate a catalog, generate tasks, and roll out a policy in the simulated live room.
//! The group lives here, above the simulator, because `rollout` composes the simulator with a policy and
//! the agent runtime; `catalog` and `tasks` need only the simulator and are `sim::cli`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};

use super::rollout::{run_batch, Summary};
use super::{Agent, SimEnv};
use crate::harness::serves::{has_skill, has_tool};
use crate::harness::{Harness, SkillsMode};
use crate::hsa::variant::load_harness;
use crate::jsonl::JsonlArgs;
use crate::model::generation::sampling::SamplingParams;
use crate::model::WeightDtype;
use crate::policy::listed_names::ToolNames;
use crate::policy::local::{LocalOptions, LocalPolicy};
use crate::policy::noise::{NoiseRates, Noisy};
use crate::policy::openai::{ClientArgs, OpenAi};
use crate::policy::oracle::Oracle;
use crate::policy::reading::ReadingOracle;
use crate::policy::Policy;
use crate::record::{Names, Trajectory};
use crate::sim::cli::{self as sim_cli, CatalogArgs, CatalogSource, CopyTaskArgs, TasksArgs};
use crate::sim::faults::FaultPlan;

#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// Generate a product catalog (JSON) from a seed.
    Catalog(CatalogArgs),
    /// Generate viewer tasks (JSONL trajectories with `task` and the viewer's messages).
    Tasks(TasksArgs),
    /// Generate copy rows (JSONL records): the curriculum that teaches a model to copy a product id
    /// from its prompt into a tool call (`src/sim/copy_task.rs`).
    CopyTask(CopyTaskArgs),
    /// Run a policy on tasks under a harness; write trajectories, print a success summary on stderr.
    Rollout(RolloutArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PolicyKind {
    Oracle,
    /// The oracle's decisions without the names map: it finds tools, argument keys and skills by
    /// matching what it knows of `--original` against the tool specs and the system prompt.
    ReadingOracle,
    Openai,
    /// A local checkpoint directory (`--model-dir`), run on the CPU.
    Local,
}

#[derive(Debug, Args)]
pub struct RolloutArgs {
    /// Harness directory. Its canonical → surface names come from its `[serves]` table, or from the
    /// HSA manifest of a variant directory written by `hsa-augment --out`.
    #[arg(long)]
    pub harness: PathBuf,
    /// Task JSONL (same as --input).
    #[arg(long, value_name = "FILE")]
    pub tasks: Option<String>,
    #[command(flatten)]
    pub io: JsonlArgs,
    #[command(flatten)]
    pub catalog: CatalogSource,
    /// Injected faults: `timeout=0.1,malformed=0.05,permission_denied=0.02,empty=0.05`, optionally per tool
    /// (`check_inventory:timeout=0.3`).
    #[arg(long, default_value = "")]
    pub faults: FaultPlan,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Episodes run at once.
    #[arg(long, default_value_t = 2)]
    pub concurrency: usize,
    /// Exit with status 1 when the success rate is below this (0–1).
    #[arg(long)]
    pub min_success: Option<f64>,
}

/// Which policy plays, and what it needs (`hat sim rollout`, `hat evolve run`).
#[derive(Debug, Clone, Args)]
pub struct PolicyArgs {
    #[arg(long, value_enum, default_value_t = PolicyKind::Oracle)]
    pub policy: PolicyKind,
    /// The harness `--policy reading-oracle` knows (the one `--harness` is a variant of); `--harness`
    /// itself without.
    #[arg(long, value_name = "DIR")]
    pub original: Option<PathBuf>,
    /// Checkpoint directory of `--policy local` (weights, tokenizer.json, chat template).
    #[arg(long, value_name = "DIR", required_if_eq("policy", "local"))]
    pub model_dir: Option<PathBuf>,
    /// Most tokens per reply of `--policy local`.
    #[arg(long, default_value_t = 512)]
    pub max_tokens: usize,
    /// Storage of `--policy local`'s projection weights (bf16: half the bytes, int8: a quarter).
    #[arg(long, value_enum, default_value_t = WeightDtype::F32)]
    pub dtype: WeightDtype,
    /// Which names `--policy local` may write in a tool call: `listed` keeps it to the tools its
    /// prompt lists (as strict function calling does).
    #[arg(long, value_enum, default_value_t = ToolNames::Free)]
    pub tool_names: ToolNames,
    /// OpenAI-compatible base URL (with /v1).
    #[arg(long, default_value = "http://localhost:8000/v1")]
    pub url: String,
    #[arg(long, default_value = "default")]
    pub model: String,
    #[command(flatten)]
    pub client: ClientArgs,
    /// Wrap the policy in the teacher noise model: it errs on a turn's first attempt at the
    /// `--noise-*` rates (over-long replies, forbidden terms, …) and the harness's hooks push back.
    #[arg(long)]
    pub noisy: bool,
    #[command(flatten)]
    pub noise: NoiseRates,
}

impl PolicyArgs {
    /// The policy for episodes under `harness`, whose canonical → surface names are `names`; `seed`
    /// seeds a sampling policy.
    pub fn build(&self, harness: &Harness, names: &Names, seed: u64) -> Result<Box<dyn Policy>> {
        let policy: Box<dyn Policy> = match self.policy {
            PolicyKind::Oracle => Box::new(Oracle::new(harness, names.clone())),
            // The runtime keeps the names (the sandbox and the success check speak canonical ids); the
            // policy is not given them.
            PolicyKind::ReadingOracle => {
                let (original, original_names) = match &self.original {
                    Some(dir) => load_harness(dir)?,
                    None => (harness.clone(), names.clone()),
                };
                Box::new(ReadingOracle::new(&original, &original_names, harness)?)
            }
            PolicyKind::Openai => {
                Box::new(OpenAi::new(self.client.config(&self.url, &self.model))?)
            }
            PolicyKind::Local => {
                let dir = self
                    .model_dir
                    .as_deref()
                    .context("--policy local needs --model-dir DIR")?;
                // The tool-call format is the checkpoint's chat template's, not the harness's.
                let options = LocalOptions {
                    sampling: SamplingParams {
                        temperature: self.client.temperature as f32,
                        seed,
                        max_tokens: self.max_tokens,
                        ..SamplingParams::default()
                    },
                    dtype: self.dtype,
                    tool_names: self.tool_names,
                };
                Box::new(LocalPolicy::load(dir, options)?)
            }
        };
        if !self.noisy {
            return Ok(policy);
        }
        self.noise.check()?;
        Ok(Box::new(Noisy::new(
            policy,
            harness,
            names.clone(),
            self.noise,
            seed,
        )))
    }
}

/// Whether `h`, under `names`, has every tool and skill the task's ground truth needs (skills only where
/// the harness asks the model to load one). A task without ground truth asks for nothing.
fn servable(h: &Harness, names: &Names, t: &Trajectory) -> bool {
    let Some(e) = t.task.as_ref().and_then(|t| t.expected.as_ref()) else {
        return true;
    };
    e.tool_calls.iter().all(|c| has_tool(h, names, &c.tool))
        && (h.skills_mode() != SkillsMode::Tool
            || e.skill.as_deref().is_none_or(|s| has_skill(h, names, s)))
}

/// Run a `hat sim` command; the return value is the process exit status.
pub fn run(cmd: &SimCommand, err: &mut dyn std::io::Write) -> Result<i32> {
    match cmd {
        SimCommand::Catalog(a) => sim_cli::catalog(a),
        SimCommand::Tasks(a) => sim_cli::tasks(a, err),
        SimCommand::CopyTask(a) => sim_cli::copy_task(a, err),
        SimCommand::Rollout(a) => rollout(a, err),
    }
}

fn rollout(a: &RolloutArgs, err: &mut dyn std::io::Write) -> Result<i32> {
    let (harness, names) = load_harness(&a.harness)?;
    let catalog = a.catalog.load()?;
    let policy = a.policy.build(&harness, &names, a.seed)?;
    let agent = Agent::new(&harness, names.clone())?;
    if a.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.concurrency)
        .build()
        .context("building the thread pool")?;
    let env = SimEnv {
        catalog: &catalog,
        faults: &a.faults,
        seed: a.seed,
    };
    let mut io = a.io.clone();
    if let Some(t) = &a.tasks {
        io.input = t.clone();
    }
    let mut records = io.records::<Trajectory>()?;
    let mut writer = io.writer()?;
    let mut summary = Summary::default();
    let mut unservable = 0usize;
    let started = Instant::now();
    // Batches keep memory bounded on large inputs while the pool stays busy.
    let batch = 256 * a.concurrency;
    loop {
        let chunk: Vec<Trajectory> = records.by_ref().take(batch).collect::<Result<_>>()?;
        if chunk.is_empty() {
            break;
        }
        unservable += chunk
            .iter()
            .filter(|t| !servable(&harness, &names, t))
            .count();
        for (task, result) in
            chunk
                .iter()
                .zip(run_batch(&agent, policy.as_ref(), &chunk, &env, &pool))
        {
            match result {
                Ok(t) => {
                    summary.add(&t);
                    writer.write(&t)?;
                }
                Err(e) => {
                    summary.errors += 1;
                    writeln!(err, "hat sim rollout: {}: {e:#}", task.id)?;
                }
            }
        }
    }
    writer.finish()?;
    let secs = started.elapsed().as_secs_f64();
    write!(err, "{}", summary.report())?;
    if unservable > 0 {
        writeln!(
            err,
            "  {unservable} task(s) need a canonical tool or skill harness {} does not serve, so no policy can pass them: \
             generate tasks with `hat sim tasks --harness {}` (docs/own-harness.md)",
            harness.name(),
            a.harness.display()
        )?;
    }
    writeln!(
        err,
        "  {:.0} episodes/s ({:.2} s)",
        summary.episodes as f64 / secs.max(1e-9),
        secs
    )?;
    Ok(match a.min_success {
        Some(min) if summary.success_rate() < min => 1,
        _ => 0,
    })
}
