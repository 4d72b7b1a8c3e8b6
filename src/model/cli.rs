//! `hat model …`: inspect a checkpoint, print raw logits, generate text, and write a
//! random-initialised checkpoint of a preset.

use super::generation::generate::TextGenerator;
use super::generation::sampling::SamplingParams;
use super::io::checkpoint::{self, SaveOptions};
use super::io::inspect;
use super::presets::{preset, PRESETS};
use super::{CausalLm, WeightDtype};
use anyhow::{Context, Result};
use burn::backend::NdArray;
use clap::{Args, Subcommand};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Print a JSON summary of a checkpoint directory: architecture, shapes, parameter counts,
    /// tensor layout.
    Info {
        /// Hugging Face model directory (config.json + *.safetensors).
        dir: PathBuf,
    },
    /// Print the logits at every position of a token sequence as JSON `{"logits": [[…], …]}`.
    #[command(after_help = "Example: hat model logits out/model --ids 151644,872,198")]
    Logits {
        dir: PathBuf,
        /// Comma-separated token ids.
        #[arg(long, value_delimiter = ',', required = true)]
        ids: Vec<u32>,
    },
    /// Generate a continuation of a prompt on the CPU; the text goes to stdout, statistics to
    /// stderr.
    #[command(
        after_help = "Examples:\n  hat model generate out/model --prompt 'Hello' --max-tokens 32\n  hat model generate out/model --chat --prompt '这件多少钱？' --temperature 0.7 --seed 1 --stop '\\n\\n'"
    )]
    Generate(GenerateArgs),
    /// Write a random-initialised checkpoint of a preset, with a tokenizer's files, so that the
    /// other commands and the benches have weights to run.
    #[command(
        after_help = "Example: hat model init --preset tiny --tokenizer out/tokenizer --out out/model-tiny"
    )]
    Init {
        /// One of: tiny, small, qwen3-30b-a3b, qwen3.5-35b-a3b (the big ones need a lot of RAM).
        #[arg(long, default_value = "tiny")]
        preset: String,
        /// Tokenizer directory (tokenizer.json, tokenizer_config.json); sets the vocabulary size
        /// and is copied next to the weights. Without it the preset's vocabulary is kept.
        #[arg(long, value_name = "DIR")]
        tokenizer: Option<PathBuf>,
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Model directory with tokenizer.json (and a chat template for --chat).
    pub dir: PathBuf,
    #[arg(long)]
    pub prompt: String,
    /// Wrap the prompt as a user message with the model's chat template.
    #[arg(long)]
    pub chat: bool,
    /// 0 = greedy.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f32,
    #[arg(long, default_value_t = 1.0)]
    pub top_p: f32,
    /// 0 = off.
    #[arg(long, default_value_t = 0)]
    pub top_k: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long, default_value_t = 128)]
    pub max_tokens: usize,
    /// Stop string (repeatable); the text is cut before it.
    #[arg(long)]
    pub stop: Vec<String>,
    /// Speculative decoding with the model's MTP head (Qwen3.5 checkpoints that keep `mtp.*`):
    /// same text, fewer main-model forwards; prints the draft acceptance rate.
    #[arg(long)]
    pub mtp: bool,
    /// Tokens drafted per round with --mtp.
    #[arg(long, default_value_t = 3, requires = "mtp")]
    pub draft_tokens: usize,
    /// Storage of the projection weights (bf16: half the bytes, int8: a quarter); the products
    /// reduce the activations to the same precision.
    #[arg(long, value_enum, default_value_t = WeightDtype::F32)]
    pub dtype: WeightDtype,
}

pub fn run(cmd: &ModelCommand, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32> {
    match cmd {
        ModelCommand::Info { dir } => {
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&inspect::info(dir)?)?
            )?;
        }
        ModelCommand::Logits { dir, ids } => {
            writeln!(out, "{}", json!({ "logits": inspect::logits(dir, ids)? }))?;
        }
        ModelCommand::Generate(a) => generate(a, out, err)?,
        ModelCommand::Init {
            preset: name,
            tokenizer,
            out: dir,
            seed,
        } => {
            let tok = tokenizer
                .as_deref()
                .map(crate::tokenizer::load)
                .transpose()?;
            let cfg = preset(name, tok.as_ref().map(|t| t.get_vocab_size(true)))
                .with_context(|| format!("known presets: {}", PRESETS.join(", ")))?;
            let model = CausalLm::<NdArray<f32>>::init(&cfg, *seed, &Default::default())?;
            checkpoint::save(&model, dir, SaveOptions::default())?;
            if let Some(src) = tokenizer {
                for f in ["tokenizer.json", "tokenizer_config.json"] {
                    if src.join(f).exists() {
                        std::fs::copy(src.join(f), dir.join(f))
                            .with_context(|| format!("copying {f} into {}", dir.display()))?;
                    }
                }
            }
            writeln!(
                err,
                "wrote {name} (vocab {}) to {}",
                cfg.vocab_size,
                dir.display()
            )?;
        }
    }
    Ok(0)
}

fn generate(a: &GenerateArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<()> {
    let generator = TextGenerator::<NdArray<f32>>::load_as(&a.dir, a.dtype, &Default::default())?;
    let prompt = if a.chat {
        generator.render_chat(&[json!({"role": "user", "content": a.prompt})], None)?
    } else {
        a.prompt.clone()
    };
    let params = SamplingParams {
        temperature: a.temperature,
        top_p: a.top_p,
        top_k: a.top_k,
        seed: a.seed,
        max_tokens: a.max_tokens,
        stop: a.stop.clone(),
        ..SamplingParams::default()
    };
    let started = Instant::now();
    let (g, stats) = if a.mtp {
        let (g, s) = generator.generate_text_speculative(&prompt, &params, a.draft_tokens)?;
        (g, Some(s))
    } else {
        (
            generator.generate_text(&[prompt], &[params])?.remove(0),
            None,
        )
    };
    let secs = started.elapsed().as_secs_f64();
    writeln!(out, "{}", g.text)?;
    let n = g.generation.tokens.len();
    writeln!(
        err,
        "{n} tokens in {secs:.2} s ({:.1} tokens/s), finish_reason {}",
        n as f64 / secs.max(1e-9),
        g.generation.finish_reason.as_str()
    )?;
    if let Some(s) = stats {
        writeln!(
            err,
            "mtp: {} drafted, {} accepted (acceptance rate {:.3}), {:.2} tokens per main forward",
            s.drafted,
            s.accepted,
            s.acceptance_rate(),
            s.tokens_per_round(n)
        )?;
    }
    Ok(())
}
