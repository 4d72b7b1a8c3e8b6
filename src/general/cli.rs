//! `hat general …`: write general prompts (train with the teacher's answers, eval held out), score
//! answers to them, let a local model answer and be scored (IFEval-lite), and compare two models
//! answer by answer.

use std::path::PathBuf;

use anyhow::{Context, Result};
use burn::backend::NdArray;
use clap::{Args, Subcommand};

use super::answer::answer;
use super::answers::{compare, Answer, Level, Strictness};
use super::prompts::{generate, Split};
use super::recovery::{recovery, Recovery};
use super::score::{evaluate, IfevalLite};
use crate::jsonl::{read_all, JsonlWriter};
use crate::judge::ifeval::report::Report;
use crate::judge::ifeval::InputExample;
use crate::model::generation::generate::TextGenerator;

#[derive(Debug, Subcommand)]
pub enum GeneralCommand {
    /// Write general prompts with verifiable instructions as IFEval input rows plus `messages`.
    ///
    /// Example: hat general prompts --split train --n 2000 -o general-train.jsonl
    Prompts(PromptsArgs),
    /// IFEval-lite of a model: it answers the prompts greedily; prints the four rates as JSON.
    ///
    /// Example: hat general eval --model out/base --input general-eval.jsonl --limit 200
    /// --answers base-answers.jsonl
    Eval(EvalArgs),
    /// Paired comparison of two models' `eval --answers` files on the prompts both answered: rates,
    /// wins/losses of B against A, and an exact sign test on the discordant cases. Prints JSON.
    ///
    /// Example: hat general compare sft-answers.jsonl opd-answers.jsonl --level prompt --mode strict
    Compare(CompareArgs),
    /// The share of a drop that a third model wins back, `(C − B) / (A − B)` for pass rates A (base),
    /// B (after the drop, e.g. domain SFT) and C (e.g. OPD), on the prompts all three answered, at
    /// all four levels with a 95% percentile bootstrap over prompts. Prints JSON; a table on stderr.
    ///
    /// Example: hat general recovery base-answers.jsonl sft-answers.jsonl opd-answers.jsonl
    Recovery(RecoveryArgs),
}

#[derive(Debug, Args)]
pub struct RecoveryArgs {
    /// The base's answers (`hat general eval --answers`), before the drop.
    #[arg(value_name = "BASE.jsonl")]
    pub base: String,
    /// After the drop (e.g. domain SFT).
    #[arg(value_name = "DROPPED.jsonl")]
    pub dropped: String,
    /// The model that should win it back (e.g. OPD).
    #[arg(value_name = "RECOVERED.jsonl")]
    pub recovered: String,
    /// Seed of the bootstrap's resampling.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Baseline answers (A), from `hat general eval --answers`.
    #[arg(value_name = "A.jsonl")]
    pub a: String,
    /// Candidate answers (B).
    #[arg(value_name = "B.jsonl")]
    pub b: String,
    #[arg(long, value_enum, default_value_t = Level::Prompt)]
    pub level: Level,
    #[arg(long, value_enum, default_value_t = Strictness::Strict)]
    pub mode: Strictness,
}

#[derive(Debug, Args)]
pub struct PromptsArgs {
    #[arg(long, value_enum, default_value_t = Split::Train)]
    pub split: Split,
    #[arg(long, default_value_t = 1000)]
    pub n: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output file, or `-` for stdout.
    #[arg(short, long, default_value = "-")]
    pub output: String,
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// IFEval input rows (`hat general prompts --split eval`).
    #[arg(long, value_name = "FILE")]
    pub input: String,
    /// Score only the first N prompts.
    #[arg(long)]
    pub limit: Option<usize>,
    #[arg(long, default_value_t = 128)]
    pub max_new_tokens: usize,
    /// Prompts decoded together.
    #[arg(long, default_value_t = 16)]
    pub batch: usize,
    /// Also write each prompt's answer as a JSONL row (`id` = the IFEval key, `response`, per-
    /// instruction `strict`/`loose` verdicts, `prompt_strict`/`prompt_loose`), for `hat general
    /// compare`.
    #[arg(long, value_name = "FILE")]
    pub answers: Option<String>,
}

pub fn run(cmd: &GeneralCommand, err: &mut dyn std::io::Write) -> Result<i32> {
    match cmd {
        GeneralCommand::Prompts(a) => {
            let mut w = JsonlWriter::create(&a.output)?;
            for row in generate(a.split, a.n, a.seed) {
                w.write(&row)?;
            }
            w.finish()?;
            writeln!(err, "wrote {} {:?} prompts to {}", a.n, a.split, a.output)?;
        }
        GeneralCommand::Eval(a) => {
            let mut inputs: Vec<InputExample> = read_all(&a.input)?;
            inputs.truncate(a.limit.unwrap_or(usize::MAX));
            let generator = TextGenerator::<NdArray<f32>>::load(&a.model, &Default::default())
                .with_context(|| format!("loading {}", a.model.display()))?;
            let prompts: Vec<String> = inputs.iter().map(|i| i.prompt.clone()).collect();
            let (responses, skipped) = answer(&generator, &prompts, a.max_new_tokens, a.batch)?;
            if skipped > 0 {
                writeln!(
                    err,
                    "{skipped} prompt(s) longer than the context, answered empty"
                )?;
            }
            let evaluated = evaluate(&inputs, &responses)?;
            let lite = IfevalLite::from_report(&Report::new(&evaluated));
            if let Some(path) = &a.answers {
                let mut w = JsonlWriter::create(path)?;
                for e in &evaluated {
                    w.write(&Answer::from(e))?;
                }
                w.finish()?;
                writeln!(err, "wrote {} answers to {path}", evaluated.len())?;
            }
            println!("{}", serde_json::to_string(&lite)?);
            writeln!(err, "| {} |\n| {} |", IfevalLite::HEADER, lite.row())?;
        }
        GeneralCommand::Compare(a) => {
            let (ra, rb): (Vec<Answer>, Vec<Answer>) = (read_all(&a.a)?, read_all(&a.b)?);
            let c = compare(&ra, &rb, a.level, a.mode)?;
            println!("{}", serde_json::to_string(&c)?);
            writeln!(err, "{}", c.markdown(&a.a, &a.b))?;
        }
        GeneralCommand::Recovery(a) => {
            let base: Vec<Answer> = read_all(&a.base)?;
            let dropped: Vec<Answer> = read_all(&a.dropped)?;
            let recovered: Vec<Answer> = read_all(&a.recovered)?;
            writeln!(err, "{}", Recovery::HEADER)?;
            let mut all = Vec::new();
            for level in [Level::Prompt, Level::Instruction] {
                for mode in [Strictness::Strict, Strictness::Loose] {
                    let r = recovery(&base, &dropped, &recovered, level, mode, a.seed)?;
                    writeln!(err, "{}", r.row())?;
                    all.push(r);
                }
            }
            println!("{}", serde_json::to_string(&all)?);
        }
    }
    Ok(0)
}
