//! `hat`: inspection utility for the HAT toolkit. Each command group lives in the library
//! (`hat::<module>::cli`); this file only parses arguments and dispatches. To add a group, add a
//! variant to `Group` and a match arm in `main`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "hat",
    version,
    about = "Inspect HAT toolkit artefacts: harness directories, chat templates, models",
    long_about = "Inspect HAT toolkit artefacts.\n\nA harness is the directory that shapes the agent without touching weights: harness.toml, prompts/ (minijinja templates + pipeline.toml), tools/ (MCP JSON), skills/NAME/SKILL.md and hooks/hooks.json. See harness-samples/README.md."
)]
struct Cli {
    #[command(subcommand)]
    group: Group,
}

#[derive(Debug, Subcommand)]
enum Group {
    /// Validate, render, list tools of, and hash a harness directory.
    #[command(subcommand)]
    Harness(hat::harness::cli::HarnessCommand),
    /// Check, normalise, filter or shard trajectory JSONL.
    #[command(subcommand)]
    Records(hat::records_cli::RecordsCommand),
    /// Render chat templates exactly as transformers does; parse generated tool calls.
    #[command(subcommand)]
    Chat(hat::chat::cli::ChatCommand),
    /// Live-room simulator: catalog, viewer tasks, policy rollouts with faults and hooks, and the
    /// environment service for RL engines.
    #[command(subcommand)]
    Sim(SimGroup),
    /// Train the embedded default's byte-level BPE tokenizer; encode text.
    #[command(subcommand)]
    Tokenizer(hat::tokenizer_cli::TokenizerCommand),
    /// Model checkpoints: summary, raw logits, text generation, random-initialised presets.
    #[command(subcommand)]
    Model(hat::model::cli::ModelCommand),
    /// Harness evolution: diagnose failures, propose and evaluate edits, keep a versioned ledger.
    #[command(subcommand)]
    Evolve(hat::evolve::cli::EvolveCommand),
    /// General prompts with verifiable instructions (train with teacher answers, held-out eval) and IFEval-lite.
    #[command(subcommand)]
    General(hat::general::cli::GeneralCommand),
    /// The stage-by-stage report of `make reproduce`: the paper's table with intervals, paired tests
    /// between adjacent stages, the claims checked, latency and wall-clock; writes markdown + scores.svg.
    ///
    /// Example: hat report --dir out/reproduce --stage base=Base --stage hsa=HSA-SFT -o out/reproduce/report.md
    Report(hat::eval::report::ReportArgs),
    /// Curves of several runs' metrics.jsonl on one SVG (GSPO against GRPO, one seed against another),
    /// with each curve's points, first, last, min and max as a table on stdout.
    Plot(hat::train::metrics::PlotArgs),
}

/// `hat sim`: the simulator's commands (library `agent::cli`) plus `serve`, which lives a layer up in
/// `service` and so joins the group here.
#[derive(Debug, Subcommand)]
enum SimGroup {
    #[command(flatten)]
    Core(hat::agent::cli::SimCommand),
    /// Serve live-room episodes over HTTP (reset/step sessions, rewards at the end) for verl,
    /// OpenRLHF and other RL engines.
    Serve(hat::service::env::cli::EnvServeArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A service logs from its worker threads: it must not run while this thread holds stderr's lock.
    if let Group::Sim(SimGroup::Serve(args)) = &cli.group {
        return exit_code(args.run());
    }
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    let result = match &cli.group {
        Group::Harness(cmd) => hat::harness::cli::run(cmd, &mut out, &mut err),
        Group::Records(cmd) => hat::records_cli::run(cmd, &mut err),
        Group::Chat(cmd) => hat::chat::cli::run(cmd, &mut std::io::stdin().lock(), &mut out),
        Group::Sim(SimGroup::Core(cmd)) => hat::agent::cli::run(cmd, &mut err),
        Group::Sim(SimGroup::Serve(_)) => unreachable!("served above"),
        Group::Tokenizer(cmd) => hat::tokenizer_cli::run(cmd, &mut out, &mut err),
        Group::Model(cmd) => hat::model::cli::run(cmd, &mut out, &mut err),
        Group::Evolve(cmd) => hat::evolve::cli::run(cmd, &mut out, &mut err),
        Group::General(cmd) => hat::general::cli::run(cmd, &mut err),
        Group::Report(a) => hat::eval::report::write(a).map(|md| {
            print!("{md}");
            0
        }),
        Group::Plot(a) => hat::train::metrics::run_plot(&a, &mut out).map(|()| 0),
    };
    drop((out, err));
    exit_code(result)
}

fn exit_code(result: anyhow::Result<i32>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            eprintln!("hat: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
