//! `hat evolve …`: diagnose a scored run, run the evolution loop, and read its ledger (history, diff of
//! two versions, checkout of the best).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use clap::{Args, Subcommand};

use super::candidate::unified_diff;
use super::diagnose::diagnose;
use super::ledger::Ledger;
use super::run::{evolve, read_run, Settings};
use crate::agent::cli::PolicyArgs;
use crate::agent::SimEnv;
use crate::harness::Harness;
use crate::hsa::variant::load_harness;
use crate::judge::endpoint::{Endpoint, EndpointConfig};
use crate::sim::cli::CatalogSource;
use crate::sim::faults::FaultPlan;

#[derive(Debug, Subcommand)]
pub enum EvolveCommand {
    /// Cluster the failures of scored episodes (`judge score` output) and print the report.
    Diagnose {
        /// Scored episodes (JSONL).
        #[arg(short, long, value_name = "FILE")]
        input: PathBuf,
        /// The harness they were played under.
        #[arg(long, value_name = "DIR")]
        harness: PathBuf,
        /// Print the clusters as JSON instead of the Markdown report.
        #[arg(long)]
        json: bool,
    },
    /// Run the loop: evaluate, diagnose, propose, validate, evaluate the candidate, decide, record.
    Run(RunArgs),
    /// The versions of an evolution run: figures, decisions, edits.
    History {
        /// The run's directory (`hat evolve run --out`).
        dir: PathBuf,
    },
    /// Unified diff between two versions of a run.
    Diff {
        dir: PathBuf,
        /// Version numbers, as `history` lists them (`0` is the starting harness).
        from: usize,
        to: usize,
    },
    /// Copy a version (the best one by default) of a run into a new harness directory.
    Checkout {
        dir: PathBuf,
        /// Version number; the newest accepted version without.
        #[arg(long)]
        version: Option<usize>,
        /// Where to write it (must not exist).
        #[arg(long, value_name = "DIR")]
        to: PathBuf,
    },
}

/// `hat evolve run`.
///
/// Each round evaluates the current best version on the dev tasks (same policy, tasks, faults and
/// seed every time), clusters its failures, takes the first untried proposal for the largest cluster
/// that has one, applies it to a copy of the harness, validates it, evaluates it and compares it with
/// its parent on accuracy, effectiveness, tool rationality and skill selection (exact sign tests, as
/// `judge compare`). Accepted when some dimension is better at --alpha and none worse. Everything is
/// kept under --out: ledger.jsonl, versions/vN/, runs/vN.jsonl, diagnosis/vN.md, diffs/vN.diff.
/// Running again with the same --out continues the run.
#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:\n  \
hat sim tasks --n 300 --split dev -o dev.jsonl\n  \
hat evolve run --harness my-harness --tasks dev.jsonl --out evo --rounds 5 --policy reading-oracle --original harness-samples/taolive\n  \
hat evolve history evo\n  \
hat evolve checkout evo --to my-harness-v2")]
pub struct RunArgs {
    /// The harness to start from.
    #[arg(long, value_name = "DIR")]
    pub harness: PathBuf,
    /// Dev tasks (JSONL from `hat sim tasks`).
    #[arg(long, value_name = "FILE")]
    pub tasks: PathBuf,
    /// Directory of the run (created; an existing run is continued).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Rounds (candidates) at most.
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// Stop after this many candidates in a row that were not accepted.
    #[arg(long, default_value_t = 2)]
    pub patience: usize,
    /// Significance level of the per-dimension sign tests.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub catalog: CatalogSource,
    /// Injected tool faults, as `hat sim rollout --faults`.
    #[arg(long, default_value = "")]
    pub faults: FaultPlan,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Episodes run at once.
    #[arg(long, default_value_t = 2)]
    pub concurrency: usize,
    /// Ask this OpenAI-compatible endpoint (base URL) for edits instead of using the built-in rules.
    #[arg(long, value_name = "URL")]
    pub propose_url: Option<String>,
    /// Model name for --propose-url.
    #[arg(long, default_value = "default")]
    pub propose_model: String,
    /// Bearer token for --propose-url.
    #[arg(long, env = "HAT_PROPOSE_API_KEY", hide_env_values = true)]
    pub propose_api_key: Option<String>,
}

pub fn run(cmd: &EvolveCommand, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32> {
    match cmd {
        EvolveCommand::Diagnose {
            input,
            harness,
            json,
        } => {
            let (h, names) = load_harness(harness)?;
            let episodes = read_run(input)?;
            let d = diagnose(&episodes, &h, &names);
            if *json {
                writeln!(out, "{}", serde_json::to_string_pretty(&d)?)?;
            } else {
                write!(out, "{}", d.markdown(&episodes))?;
            }
        }
        EvolveCommand::Run(a) => run_loop(a, out, err)?,
        EvolveCommand::History { dir } => {
            let ledger = opened(dir)?;
            write!(out, "{}", ledger.markdown())?;
        }
        EvolveCommand::Diff { dir, from, to } => {
            let ledger = opened(dir)?;
            let load = |v: usize| -> Result<Harness> {
                ledger.get(v)?;
                Harness::load(ledger.version_dir(v))
            };
            write!(out, "{}", unified_diff(&load(*from)?, &load(*to)?))?;
        }
        EvolveCommand::Checkout { dir, version, to } => {
            let ledger = opened(dir)?;
            let v = match version {
                Some(v) => ledger.get(*v)?.version,
                None => ledger.best().context("the ledger has no version")?.version,
            };
            if to.exists() {
                bail!("{} exists; checkout writes a new directory", to.display());
            }
            Harness::load(ledger.version_dir(v))?.write_to(to)?;
            writeln!(err, "hat evolve: version {v} written to {}", to.display())?;
        }
    }
    Ok(0)
}

fn opened(dir: &std::path::Path) -> Result<Ledger> {
    let ledger = Ledger::open(dir)?;
    if ledger.entries.is_empty() {
        bail!(
            "{} has no ledger.jsonl: not a `hat evolve run --out` directory",
            dir.display()
        );
    }
    Ok(ledger)
}

fn run_loop(a: &RunArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<()> {
    if !(a.alpha > 0.0 && a.alpha < 1.0) {
        bail!("--alpha must be in (0, 1), got {}", a.alpha);
    }
    if a.concurrency == 0 || a.patience == 0 {
        bail!("--concurrency and --patience must be at least 1");
    }
    let tasks = read_run(&a.tasks)?;
    if tasks.is_empty() {
        bail!("{} has no tasks", a.tasks.display());
    }
    let catalog = a.catalog.load()?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.concurrency)
        .build()
        .context("building the thread pool")?;
    let endpoint = match &a.propose_url {
        Some(url) => Some(Endpoint::new(
            EndpointConfig {
                url: url.clone(),
                model: a.propose_model.clone(),
                api_key: a.propose_api_key.clone(),
                timeout: Duration::from_secs(300),
                retries: 2,
                backoff: Duration::from_secs(1),
                max_tokens: 4096,
            },
            None,
        )?),
        None => None,
    };
    let settings = Settings {
        policy: &a.policy,
        tasks: &tasks,
        env: SimEnv {
            catalog: &catalog,
            faults: &a.faults,
            seed: a.seed,
        },
        pool: &pool,
        endpoint: endpoint.as_ref(),
        rounds: a.rounds,
        patience: a.patience,
        alpha: a.alpha,
    };
    let (ledger, stopped) = evolve(&a.harness, &a.out, &settings)?;
    write!(out, "{}", ledger.markdown())?;
    let best = ledger.best().context("the ledger has no version")?;
    writeln!(
        err,
        "hat evolve: stopped ({stopped}); best version v{} ({}), `hat evolve checkout {} --to DIR` writes it",
        best.version,
        best.hash,
        a.out.display()
    )?;
    Ok(())
}
