//! Rollout and step throughput of `grpo-train`: a few steps of the real trainer (through the binary's
//! own argument parser, so every default is the binary's) on the sample harness with tool faults,
//! printed per step — episodes and generated tokens per second of the rollout phase, and how the step
//! divides into rollout (episodes played and judged), scoring (the policy's log-probs of every view),
//! reference (the reference's and the teacher's log-probs, when a KL or OPD term asks for them) and
//! the update.
//!
//! ```text
//! cargo bench --bench rl
//! HAT_BENCH_RL_MODEL=out/distill/model/checkpoint-000400 cargo bench --bench rl   # a trained policy
//! ```
//!
//! Environment: `HAT_BENCH_RL_MODEL` (a checkpoint directory; default: a random `tiny` policy with a
//! BPE trained on the harness and the tasks, whose episodes call no tools and run to the length cap),
//! `HAT_BENCH_RL_STEPS` (2), `HAT_BENCH_RL_TASKS` (tasks per step, 4), `HAT_BENCH_RL_GENERATIONS`
//! (episodes per task, 4), `HAT_BENCH_RL_ARGS` (more `grpo-train` flags, split on spaces).

#[allow(dead_code)]
#[path = "../tests/rl_support/mod.rs"]
mod rl_support;

use std::io::Write;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use burn::backend::{Autodiff, NdArray};
use clap::Parser;
use hat::hsa::variant::load_harness;
use hat::rl::cli::{run, GrpoArgs};
use hat::sim::catalog::{Catalog, Split};
use hat::sim::tasks::{generate, TaskConfig};
use serde_json::Value;

type B = Autodiff<NdArray<f32>>;

const HARNESS: &str = "harness-samples/taolive";
const FAULTS: &str = "timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03";

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    grpo: GrpoArgs,
}

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.into())
}

fn main() {
    let (catalog_seed, products) = (7, 600);
    let tasks = generate(
        &Catalog::generate(catalog_seed, products),
        &TaskConfig::new(Split::Train, 3),
        64,
    )
    .unwrap();
    let work = tempfile::tempdir().unwrap();
    let tasks_file = work.path().join("tasks.jsonl");
    let mut f = std::fs::File::create(&tasks_file).unwrap();
    for t in &tasks {
        writeln!(f, "{}", serde_json::to_string(t).unwrap()).unwrap();
    }
    let random;
    let model = match std::env::var("HAT_BENCH_RL_MODEL") {
        Ok(dir) => dir,
        Err(_) => {
            let (harness, _) = load_harness(Path::new(HARNESS)).unwrap();
            random = rl_support::policy_dir(&harness, &tasks);
            random.path().display().to_string()
        }
    };
    let out = work.path().join("out");
    let mut argv: Vec<String> = [
        "grpo-train",
        "--model",
        &model,
        "--tasks",
        &tasks_file.display().to_string(),
        "--harness",
        HARNESS,
        "--faults",
        FAULTS,
        "--catalog-seed",
        &catalog_seed.to_string(),
        "--products",
        &products.to_string(),
        "--out",
        &out.display().to_string(),
        "--max-steps",
        &env("HAT_BENCH_RL_STEPS", "2"),
        "--save-steps",
        "0",
        "--tasks-per-step",
        &env("HAT_BENCH_RL_TASKS", "4"),
        "--num-generations",
        &env("HAT_BENCH_RL_GENERATIONS", "4"),
    ]
    .map(String::from)
    .to_vec();
    argv.extend(
        env("HAT_BENCH_RL_ARGS", "")
            .split_whitespace()
            .map(String::from),
    );
    let cli = Cli::parse_from(&argv);
    run::<B>(&cli.grpo, &AtomicBool::new(false), &Default::default()).unwrap();

    println!("policy: {model}");
    println!("step | episodes | episodes/s | generated tok/s | rollout s | scoring s | reference s | update s | rollout share");
    for line in std::fs::read_to_string(out.join("metrics.jsonl"))
        .unwrap()
        .lines()
    {
        let m: Value = serde_json::from_str(line).unwrap();
        let num = |k: &str| m[k].as_f64().unwrap_or(0.0);
        let [rollout, scoring, reference, update] =
            ["rollout", "scoring", "reference", "update"].map(|k| num(&format!("time/{k}_s")));
        let generated = num("completions") * num("completions/mean_length");
        println!(
            "{} | {} | {:.2} | {:.0} | {rollout:.1} | {scoring:.1} | {reference:.1} | {update:.1} | {:.0}%",
            m["step"],
            m["episodes"],
            num("episodes") / rollout,
            generated / rollout,
            100.0 * rollout / (rollout + scoring + reference + update),
        );
    }
}
