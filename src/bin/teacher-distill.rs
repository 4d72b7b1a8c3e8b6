//! `teacher-distill`: HSA-SFT. `collect` rolls out a teacher under the original harness and HSA variants
//! and keeps the trajectories the judge passes; `train` fine-tunes a model on them with loss on policy
//! tokens only. Logic lives in `hat::distill` and `hat::train`; this file picks the backend.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};
use hat::distill::cli::{collect, eval, probe, train, CollectArgs, EvalArgs, ProbeArgs, TrainArgs};

#[cfg(not(feature = "cuda"))]
type Backend = burn::backend::Autodiff<burn::backend::NdArray<f32>>;
#[cfg(feature = "cuda")]
type Backend = burn::backend::Autodiff<burn::backend::Cuda<f32>>;

#[derive(Debug, Parser)]
#[command(
    name = "teacher-distill",
    version,
    about = "HSA-SFT: collect filtered teacher trajectories, train on them"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Roll out the teacher under the original harness and HSA variants; keep what the judge passes.
    Collect(CollectArgs),
    /// Supervised fine-tuning on trajectories (loss on assistant tokens only); Ctrl-C saves a checkpoint.
    Train(TrainArgs),
    /// Play held-out tasks with trained checkpoints under harness sets; judge scores and a markdown table.
    Eval(EvalArgs),
    /// Teacher-forced decisions on held-out records: does greedy decoding reproduce the opening skill or
    /// tool call and every tool call? By intent, with intervals; seconds, not minutes.
    Probe(ProbeArgs),
}

fn run(cli: &Cli) -> Result<i32> {
    match &cli.command {
        Command::Collect(a) => collect(a).map(|()| 0),
        Command::Train(a) => {
            let stop = hat::train::interrupt::ctrl_c_flag()?;
            train::<Backend>(a, &stop, &Default::default()).map(|()| 0)
        }
        Command::Eval(a) => eval(a),
        Command::Probe(a) => probe(a),
    }
}

fn main() -> ExitCode {
    match run(&Cli::parse()) {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("teacher-distill: {e:#}");
            ExitCode::FAILURE
        }
    }
}
