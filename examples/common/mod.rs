//! What several examples need: the sample harness and one teacher trajectory made on the spot, so no
//! example depends on a committed record. `one_episode.rs` prints such a trajectory turn by turn.

// Each example compiles its own copy of this module and uses part of it.
#![allow(dead_code)]

use std::path::PathBuf;

use anyhow::{Context, Result};
use hat::agent::rollout::run_batch;
use hat::agent::{Agent, SimEnv};
use hat::harness::Harness;
use hat::policy::oracle::Oracle;
use hat::record::{Names, Trajectory};
use hat::sim::catalog::{Catalog, Split};
use hat::sim::faults::FaultPlan;
use hat::sim::tasks::{self, TaskConfig};

/// `harness-samples/taolive` of this checkout, wherever the example is run from.
pub fn sample_harness_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("harness-samples/taolive")
}

/// One viewer task (intent weights as `hat sim tasks --mix` takes them, e.g. `product_qa=1`) played by
/// the oracle teacher under `harness` in the simulated live room, as `hat sim rollout` would record it.
pub fn teacher_episode(
    harness: &Harness,
    mix: &str,
    faults: &str,
    seed: u64,
) -> Result<Trajectory> {
    // The seeded catalog and a dev-split task: the viewer's message and its canonical ground truth.
    let catalog = Catalog::generate(7, 40);
    let mut cfg = TaskConfig::new(Split::Dev, seed);
    cfg.mix = mix.parse()?;
    let task = tasks::generate(&catalog, &cfg, 1)?
        .pop()
        .context("no task generated")?;
    // The sample harness uses the canonical names, so the name map is the identity.
    let agent = Agent::new(harness, Names::default())?;
    let oracle = Oracle::new(harness, Names::default());
    let faults: FaultPlan = faults.parse()?;
    let env = SimEnv {
        catalog: &catalog,
        faults: &faults,
        seed,
    };
    // The agent runtime renders the system prompt, runs the hooks and the tool sandbox, and records
    // every message of the episode; the rollout then checks it against the ground truth
    // (`meta.success`). One episode needs one thread.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    run_batch(&agent, &oracle, &[task], &env, &pool)
        .pop()
        .context("no episode")?
}
