//! `opd` flags: tinker's names for the sampled-token loss (`kl_penalty_coef`, `kl_discount_factor`,
//! `loss_fn`), TRL GKD's for the full-vocabulary one (`lmbda`, `beta`, `temperature`,
//! `max_new_tokens`).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use anyhow::{bail, Result};
use burn::tensor::backend::AutodiffBackend;
use clap::{Args, ValueEnum};
use serde_json::{json, Value};

use super::gjsd::GjsdConfig;
use super::reverse_kl::{LossFn, ReverseKlConfig};
use super::teacher::check_compatible;
use super::trainer::{train, OpdConfig, OpdLoss, Prompt, RunInputs};
use crate::judge::ifeval::InputExample;
use crate::model::CausalLm;
use crate::train::checkpoint;
use crate::train::heap;
use crate::train::optim::AdamWConfig;

/// Which divergence to minimise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum LossKind {
    /// Per-token reverse KL on the sampled tokens as an advantage (tinker).
    ReverseKl,
    /// Full-vocabulary generalized JSD (TRL GKD).
    Gjsd,
}

#[derive(Debug, Args)]
pub struct OpdArgs {
    /// The student: a checkpoint directory (e.g. the domain-SFT model).
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// The teacher: the pre-SFT base checkpoint. Must share the student's tokenizer and vocabulary.
    #[arg(long, value_name = "DIR")]
    pub teacher: PathBuf,
    /// Prompts: JSONL rows with `messages` (the turns before the first assistant turn are the prompt;
    /// that turn, if any, is the row's own answer) or `prompt` — `hat general prompts --split train`.
    /// Domain prompts may be mixed in by adding their rows to this file; nothing else mixes them.
    #[arg(long, value_name = "FILE")]
    pub prompts: String,
    /// Held-out IFEval rows (`hat general prompts --split eval`) for IFEval-lite at eval steps.
    #[arg(long, value_name = "FILE")]
    pub eval_prompts: Option<String>,
    /// Score the first N eval prompts.
    #[arg(long, default_value_t = 100)]
    pub eval_limit: usize,
    /// IFEval-lite every N steps, before the first and after the last (0 = never).
    #[arg(long, default_value_t = 0)]
    pub eval_steps: usize,
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    #[arg(long, default_value_t = 50)]
    pub max_steps: usize,
    #[arg(long, default_value_t = 8)]
    pub prompts_per_step: usize,
    /// Completions sampled per prompt.
    #[arg(long, default_value_t = 1)]
    pub num_generations: usize,
    #[arg(long, default_value_t = 128)]
    pub max_new_tokens: usize,
    /// Sampling temperature; `gjsd` also divides both models' logits by it (TRL GKD uses 0.9).
    /// `reverse_kl` needs 1.
    #[arg(long, default_value_t = 1.0)]
    pub temperature: f64,
    #[arg(long, value_enum, default_value = "reverse_kl")]
    pub loss: LossKind,
    /// λ: the reverse-KL advantage is `−λ·(log q − log π_teacher)`.
    #[arg(long, default_value_t = 1.0)]
    pub kl_penalty_coef: f64,
    /// γ: discount of the future reverse KL summed into each token's advantage (0 = per token).
    #[arg(long, default_value_t = 0.0)]
    pub kl_discount_factor: f64,
    #[arg(long, value_enum, default_value = "importance_sampling")]
    pub loss_fn: LossFn,
    /// PPO's clip range.
    #[arg(long, default_value_t = 0.2)]
    pub epsilon: f64,
    /// GKD: share of on-policy steps (the rest train on the rows' own answers).
    #[arg(long, default_value_t = 1.0)]
    pub lmbda: f64,
    /// GKD: 0 = forward KL(teacher‖student), 1 = reverse KL(student‖teacher), between = generalized JSD.
    #[arg(long, default_value_t = 0.5)]
    pub beta: f64,
    #[arg(long, default_value_t = 1e-4)]
    pub learning_rate: f64,
    #[arg(long, default_value_t = 0)]
    pub warmup_steps: usize,
    #[arg(long, default_value_t = 1.0)]
    pub max_grad_norm: f64,
    /// Tokens a micro-batch computes at most; a step's micro-batches accumulate into one optimizer step.
    #[arg(long, default_value_t = 8192)]
    pub batch_tokens: usize,
    #[arg(long, default_value_t = 10)]
    pub save_steps: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Continue from the newest checkpoint in --out.
    #[arg(long)]
    pub resume: bool,
    /// Delete the checkpoints in --out first.
    #[arg(long)]
    pub overwrite_output_dir: bool,
}

impl OpdArgs {
    pub fn config(&self) -> Result<OpdConfig> {
        if !(0.0..=1.0).contains(&self.beta) {
            bail!("--beta must be in [0, 1], got {}", self.beta);
        }
        if !(0.0..=1.0).contains(&self.lmbda) {
            bail!("--lmbda must be in [0, 1], got {}", self.lmbda);
        }
        if !(self.temperature > 0.0) {
            bail!("--temperature must be above 0, got {}", self.temperature);
        }
        let loss = match self.loss {
            LossKind::ReverseKl => {
                if self.lmbda != 1.0 {
                    bail!("--lmbda is GKD's (--loss gjsd); --loss reverse_kl is always on-policy");
                }
                OpdLoss::ReverseKl(ReverseKlConfig {
                    kl_penalty_coef: self.kl_penalty_coef,
                    kl_discount_factor: self.kl_discount_factor,
                    loss_fn: self.loss_fn,
                    epsilon: self.epsilon,
                })
            }
            LossKind::Gjsd => OpdLoss::Gjsd {
                loss: GjsdConfig {
                    beta: self.beta,
                    temperature: self.temperature,
                },
                lmbda: self.lmbda,
            },
        };
        Ok(OpdConfig {
            max_steps: self.max_steps,
            learning_rate: self.learning_rate,
            warmup_steps: self.warmup_steps,
            adamw: AdamWConfig::default(),
            max_grad_norm: self.max_grad_norm,
            seed: self.seed,
            batch_tokens: self.batch_tokens,
            prompts_per_step: self.prompts_per_step,
            num_generations: self.num_generations,
            max_new_tokens: self.max_new_tokens,
            temperature: self.temperature,
            loss,
            save_steps: self.save_steps,
            eval_steps: self.eval_steps,
        })
    }
}

/// The prompt of one JSONL row (line `line` of `file`).
pub fn prompt_of(row: &Value, file: &str, line: usize) -> Result<Prompt> {
    let id = row
        .get("id")
        .or(row.get("key"))
        .map_or(format!("{file}:{line}"), |v| {
            v.as_str().map_or(v.to_string(), str::to_string)
        });
    if let Some(messages) = row.get("messages").and_then(Value::as_array) {
        let first = messages
            .iter()
            .position(|m| m["role"] == "assistant")
            .unwrap_or(messages.len());
        if first == 0 {
            bail!("{file}:{line}: field `messages` has no turn before the first assistant turn");
        }
        return Ok(Prompt {
            id,
            conversation: messages[..first].to_vec(),
            answer: messages
                .get(first)
                .and_then(|m| m["content"].as_str())
                .map(str::to_string),
        });
    }
    match row.get("prompt").and_then(Value::as_str) {
        Some(p) => Ok(Prompt {
            id,
            conversation: vec![json!({"role": "user", "content": p})],
            answer: None,
        }),
        None => bail!("{file}:{line}: a prompt row needs a `messages` array or a `prompt` string"),
    }
}

/// Runs `opd`; prints the final checkpoint's path.
pub fn run<B: AutodiffBackend>(a: &OpdArgs, stop: &AtomicBool, device: &B::Device) -> Result<()> {
    let cfg = a.config()?;
    check_compatible(&a.model, &a.teacher)?;
    if a.overwrite_output_dir {
        checkpoint::remove_all(&a.out)?;
    } else if !a.resume {
        checkpoint::ensure_none(&a.out)?;
    }
    let rows: Vec<Value> = crate::jsonl::read_all(&a.prompts)?;
    let prompts = rows
        .iter()
        .enumerate()
        .map(|(i, r)| prompt_of(r, &a.prompts, i + 1))
        .collect::<Result<Vec<_>>>()?;
    let mut eval: Vec<InputExample> = match &a.eval_prompts {
        Some(f) => crate::jsonl::read_all(f)?,
        None => Vec::new(),
    };
    eval.truncate(a.eval_limit);
    let model: CausalLm<B> = CausalLm::load(&a.model, device)?;
    heap::keep_freed_memory(model.config.hidden_size);
    let teacher: CausalLm<B> = CausalLm::load(&a.teacher, device)?;
    let inputs = RunInputs {
        prompts: &prompts,
        eval: &eval,
        tokenizer_dir: Path::new(&a.model),
        out: &a.out,
    };
    let ckpt = train::<B>(&cfg, model, teacher, &inputs, a.resume, stop, device)?;
    println!("{}", ckpt.display());
    Ok(())
}
