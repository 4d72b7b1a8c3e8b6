//! `hat general …`: write general prompts (train with the teacher's answers, eval held out), score
//! answers to them, and let a local model answer and be scored (IFEval-lite).

use std::path::PathBuf;

use anyhow::{Context, Result};
use burn::backend::NdArray;
use clap::{Args, Subcommand};

use super::answer::answer;
use super::prompts::{generate, Split};
use super::score::{ifeval_lite, IfevalLite};
use crate::jsonl::{read_all, JsonlWriter};
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
    Eval(EvalArgs),
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
            let lite: IfevalLite = ifeval_lite(&inputs, &responses)?;
            println!("{}", serde_json::to_string(&lite)?);
            writeln!(err, "| {} |\n| {} |", IfevalLite::HEADER, lite.row())?;
        }
    }
    Ok(0)
}
