//! `judge`: score model outputs. For now one subcommand, `ifeval`, which reproduces Google's
//! official IFEval evaluation (`instruction_following_eval/evaluation_main.py`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use hat::jsonl::OnError;
use hat::judge::ifeval::files::{evaluate, read_inputs, read_responses, write_outputs};
use hat::judge::ifeval::report::Report;

#[derive(Debug, Parser)]
#[command(
    name = "judge",
    version,
    about = "Score model outputs: verifiable reward scoring, LLM judge, IFEval, robustness rubric, calibration, reports and harness regression checks"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Ifeval(IfevalArgs),
    Score(hat::judge::commands::ScoreArgs),
    Llm(hat::judge::commands::LlmArgs),
    Rubric(hat::judge::commands::RubricArgs),
    Calibrate(hat::judge::commands::CalibrateArgs),
    Report(hat::judge::commands::ReportArgs),
    Compare(hat::judge::commands::CompareArgs),
    Serve(hat::service::reward::RewardServeArgs),
}

/// Score responses on IFEval, as Google's official evaluation does.
///
/// Each of the 541 prompts carries 1-3 verifiable instructions (25 kinds: keywords, language,
/// length, format, case, punctuation...). An instruction is followed *strictly* when the
/// response passes its check as it is, and *loosely* when any of 8 variants passes (the
/// response without its first line, last line or both, each with and without `*`). Reported:
/// prompt-level accuracy (all of a prompt's instructions followed) and instruction-level
/// accuracy, strict and loose, plus per category and per instruction id.
///
/// The checks are ported from the official Python code, including NLTK's Punkt sentence
/// splitter and word tokenizer and langdetect (seeded with 0, as lm-evaluation-harness does, so
/// results are reproducible).
///
/// Output: with --output-dir, `eval_results_strict.jsonl` and `eval_results_loose.jsonl` (one
/// line per prompt, byte-compatible with the official tool: `follow_all_instructions`,
/// `follow_instruction_list`, `instruction_id_list`, `prompt`, `response`) and `summary.json`.
/// The summary JSON is also printed on stdout, and a short table on stderr.
#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:\n  \
judge ifeval --input input_data.jsonl --responses responses.jsonl --output-dir results/\n  \
judge ifeval --input input_data.jsonl --responses - --skip-missing < partial.jsonl | jq .report.strict.prompt_level\n\n\
EXIT STATUS: 0 when scored, 2 on an error (bad line, unknown instruction id, missing response).")]
struct IfevalArgs {
    /// The prompts: IFEval's input_data.jsonl (`key`, `prompt`, `instruction_id_list`,
    /// `kwargs`; null kwargs, as in the Hugging Face copy, are ignored).
    #[arg(long, value_name = "FILE")]
    input: String,
    /// The model's responses, one `{"prompt": ..., "response": ...}` per line, matched to the
    /// inputs by exact prompt text (`-` reads stdin).
    #[arg(long, value_name = "FILE")]
    responses: String,
    /// Write eval_results_strict.jsonl, eval_results_loose.jsonl and summary.json here.
    #[arg(long, value_name = "DIR")]
    output_dir: Option<PathBuf>,
    /// Score the prompts that have a response instead of failing when some prompt has none.
    /// The accuracies are then over the scored prompts only (the summary says how many).
    #[arg(long)]
    skip_missing: bool,
    /// What to do with an unreadable line in either file (bad JSON, missing field, non-UTF-8,
    /// unknown instruction id or bad kwargs): stop with its file and line, or leave it out.
    #[arg(long, value_enum, default_value_t = OnError::Fail)]
    on_error: OnError,
    /// With --on-error skip: copy bad response lines here (reasons in FILE.reasons.jsonl).
    #[arg(long, value_name = "FILE")]
    rejects: Option<PathBuf>,
}

fn run_ifeval(args: &IfevalArgs) -> Result<()> {
    if args.rejects.is_some() && args.on_error == OnError::Fail {
        anyhow::bail!("--rejects needs --on-error skip");
    }
    let (prepared, bad_inputs) = read_inputs(&args.input, args.on_error)?;
    let (responses, bad_responses) =
        read_responses(&args.responses, args.on_error, args.rejects.as_deref())?;
    let (evaluated, missing) = evaluate(prepared, &responses, args.skip_missing)?;
    let report = Report::new(&evaluated);
    let summary = serde_json::json!({
        "input": args.input,
        "responses": args.responses,
        "skipped": {"bad_input_lines": bad_inputs, "bad_response_lines": bad_responses, "prompts_without_response": missing},
        "report": report,
    });
    let text = serde_json::to_string_pretty(&summary)?;
    if let Some(dir) = &args.output_dir {
        write_outputs(dir, &evaluated)?;
        let path = dir.join("summary.json");
        std::fs::write(&path, format!("{text}\n"))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    eprint!("{}", report.table());
    if bad_inputs + bad_responses > 0 || missing > 0 {
        eprintln!("skipped: {bad_inputs} bad input line(s), {bad_responses} bad response line(s), {missing} prompt(s) without response");
    }
    println!("{text}");
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Ifeval(args) => run_ifeval(args),
        Command::Score(args) => args.run(),
        Command::Llm(args) => args.run(),
        Command::Rubric(args) => args.run(),
        Command::Calibrate(args) => args.run(),
        Command::Report(args) => args.run(),
        Command::Compare(args) => args.run(),
        Command::Serve(args) => args.run(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("judge: error: {e:#}");
            ExitCode::from(2)
        }
    }
}
