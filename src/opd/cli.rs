//! `opd` flags: tinker's names for the sampled-token loss (`kl_penalty_coef`, `kl_discount_factor`,
//! `loss_fn`), TRL GKD's for the full-vocabulary one (`lmbda`, `beta`, `temperature`,
//! `max_new_tokens`).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use burn::tensor::backend::AutodiffBackend;
use clap::{Args, ValueEnum};
use serde_json::{json, Value};

use super::gjsd::GjsdConfig;
use super::reverse_kl::{LossFn, ReverseKlConfig};
use super::teacher::{check_compatible, EndpointTeacher, Teacher, Teachers};
use super::trainer::{train, OpdConfig, OpdLoss, Prompt, RunInputs};
use crate::heap;
use crate::judge::ifeval::InputExample;
use crate::model::CausalLm;
use crate::policy::prompt_logprobs::PromptLogprobsConfig;
use crate::train::optim::AdamWConfig;
use crate::train::run_args::RunArgs;

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
    /// The teacher: the pre-SFT base checkpoint, loaded in-process. Must share the student's tokenizer
    /// and vocabulary. Or give --teacher-url instead.
    #[arg(
        long,
        value_name = "DIR",
        required_unless_present = "teacher_url",
        conflicts_with = "teacher_url"
    )]
    pub teacher: Option<PathBuf>,
    /// The teacher behind an OpenAI-compatible server (base URL up to the version, e.g.
    /// http://host:8000/v1) that returns vLLM's `prompt_logprobs` on /v1/completions: vLLM, SGLang or
    /// our `serve`. Each sampled sequence is sent as token ids; the teacher's log-prob of every
    /// sampled token is read back, and with `--loss gjsd` its --teacher-top-k most likely tokens.
    #[arg(long, value_name = "URL")]
    pub teacher_url: Option<String>,
    /// With --teacher-url and `--loss gjsd`: the teacher's K most likely tokens at each position are
    /// asked for (vLLM serves at most its --max-logprobs, 20 by default; so does our `serve`), and
    /// the divergence is taken between the two models' distributions over those K tokens and one
    /// bucket for all others — a lower bound of the full-vocabulary one, equal when the K tokens
    /// hold all of both models' mass. Needs --temperature 1.
    #[arg(long, default_value_t = 20, value_name = "K")]
    pub teacher_top_k: usize,
    /// The served teacher's model name (required with --teacher-url).
    #[arg(long, value_name = "NAME", requires = "teacher_url")]
    pub teacher_model: Option<String>,
    /// API key of the teacher endpoint (or OPENAI_API_KEY).
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub teacher_api_key: Option<String>,
    /// Per-request timeout of the teacher endpoint, in seconds.
    #[arg(long, default_value_t = 120)]
    pub teacher_timeout: u64,
    /// Extra attempts after a transport error, 429 or 5xx from the teacher endpoint; then the step
    /// fails naming the URL and status (no checkpoint is written for that step).
    #[arg(long, default_value_t = 3)]
    pub teacher_retries: u32,
    /// Teacher requests in flight at once.
    #[arg(long, default_value_t = 4)]
    pub teacher_concurrency: usize,
    /// General prompts: JSONL rows with `messages` (the turns before the first assistant turn are the
    /// prompt; that turn, if any, is the row's own answer) or `prompt` — `hat general prompts --split
    /// train`.
    #[arg(long, value_name = "FILE")]
    pub prompts: String,
    /// Domain (live-room) prompts, rows read as --prompts: e.g. SFT trajectories, where every
    /// assistant turn is a prompt (the turns before it: the harness's system prompt, the viewer's
    /// message, earlier calls and tool results), so the replies after tool results are sampled too.
    /// Drawn for --domain-share of a step's prompts.
    #[arg(long, value_name = "FILE")]
    pub domain_prompts: Option<String>,
    /// The teacher of the domain prompts' samples, in-process: e.g. the SFT checkpoint --model starts
    /// from, which holds the domain turns where SFT left them while --teacher pulls the general ones
    /// back. Without it --teacher scores every prompt. Must share the student's tokenizer.
    #[arg(long, value_name = "DIR", requires = "domain_prompts")]
    pub domain_teacher: Option<PathBuf>,
    /// Share of each step's prompts drawn from --domain-prompts instead of --prompts: every slot is a
    /// domain prompt with this probability, seeded by --seed, the step and the slot (so --resume
    /// draws the same). 0 = general prompts only.
    #[arg(long, default_value_t = 0.0, value_name = "F")]
    pub domain_share: f64,
    /// Held-out IFEval rows (`hat general prompts --split eval`) for IFEval-lite at eval steps.
    #[arg(long, value_name = "FILE")]
    pub eval_prompts: Option<String>,
    /// Score the first N eval prompts.
    #[arg(long, default_value_t = 100)]
    pub eval_limit: usize,
    /// IFEval-lite every N steps, before the first and after the last (0 = never).
    #[arg(long, default_value_t = 0)]
    pub eval_steps: usize,
    #[command(flatten)]
    pub run: RunArgs,
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
}

impl OpdArgs {
    pub fn config(&self) -> Result<OpdConfig> {
        if !(0.0..=1.0).contains(&self.beta) {
            bail!("--beta must be in [0, 1], got {}", self.beta);
        }
        if !(0.0..=1.0).contains(&self.lmbda) {
            bail!("--lmbda must be in [0, 1], got {}", self.lmbda);
        }
        if !(0.0..=1.0).contains(&self.domain_share) {
            bail!(
                "--domain-share must be in [0, 1], got {}",
                self.domain_share
            );
        }
        if self.domain_share > 0.0 && self.domain_prompts.is_none() {
            bail!(
                "--domain-share {} needs --domain-prompts FILE",
                self.domain_share
            );
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
            max_steps: self.run.max_steps,
            learning_rate: self.run.learning_rate,
            warmup_steps: self.run.warmup_steps,
            adamw: AdamWConfig::default(),
            max_grad_norm: self.run.max_grad_norm,
            seed: self.run.seed,
            batch_tokens: self.run.batch_tokens,
            prompts_per_step: self.prompts_per_step,
            num_generations: self.num_generations,
            max_new_tokens: self.max_new_tokens,
            temperature: self.temperature,
            loss,
            save_steps: self.run.save_steps,
            eval_steps: self.eval_steps,
            domain_share: self.domain_share,
            teacher_top_k: self.teacher_top_k,
        })
    }
}

/// The prompts of one JSONL row (line `line` of `file`). A `messages` row gives one per assistant turn:
/// the turns before it, with the turn's text as the prompt's own answer (ids `ID`, `ID#K` for the turn
/// at message K after the first), or the whole conversation when no assistant turn is in it. A `prompt`
/// row is one user turn.
pub fn prompts_of(row: &Value, file: &str, line: usize) -> Result<Vec<Prompt>> {
    let id = row
        .get("id")
        .or(row.get("key"))
        .map_or(format!("{file}:{line}"), |v| {
            v.as_str().map_or(v.to_string(), str::to_string)
        });
    if let Some(messages) = row.get("messages").and_then(Value::as_array) {
        if messages.first().is_some_and(|m| m["role"] == "assistant") || messages.is_empty() {
            bail!("{file}:{line}: field `messages` has no turn before the first assistant turn");
        }
        // A tool-call-only turn may have no content (the API's null); the chat template wants "", as
        // training renders it.
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| {
                let mut m = m.clone();
                if m["role"] == "assistant" && m["content"].is_null() {
                    m["content"] = json!("");
                }
                m
            })
            .collect();
        let tools = row
            .get("tools")
            .and_then(Value::as_array)
            .filter(|t| !t.is_empty())
            .cloned();
        let mut turns: Vec<usize> = (0..messages.len())
            .filter(|&k| messages[k]["role"] == "assistant")
            .collect();
        if turns.is_empty() {
            turns.push(messages.len());
        }
        return Ok(turns
            .iter()
            .enumerate()
            .map(|(n, &k)| Prompt {
                id: if n == 0 {
                    id.clone()
                } else {
                    format!("{id}#{k}")
                },
                conversation: messages[..k].to_vec(),
                tools: tools.clone(),
                // A turn that calls tools has no text-only answer to train on.
                answer: messages
                    .get(k)
                    .filter(|m| m.get("tool_calls").is_none())
                    .and_then(|m| m["content"].as_str())
                    .map(str::to_string),
            })
            .collect());
    }
    match row.get("prompt").and_then(Value::as_str) {
        Some(p) => Ok(vec![Prompt {
            id,
            conversation: vec![json!({"role": "user", "content": p})],
            ..Prompt::default()
        }]),
        None => bail!("{file}:{line}: a prompt row needs a `messages` array or a `prompt` string"),
    }
}

/// Runs `opd`; prints the final checkpoint's path.
pub fn run<B: AutodiffBackend>(a: &OpdArgs, stop: &AtomicBool, device: &B::Device) -> Result<()> {
    let cfg = a.config()?;
    for dir in [&a.teacher, &a.domain_teacher].into_iter().flatten() {
        check_compatible(&a.model, dir)?;
    }
    a.run.prepare_out()?;
    let read_prompts = |file: &str| -> Result<Vec<Prompt>> {
        let rows: Vec<Value> = crate::jsonl::read_all(file)?;
        rows.iter()
            .enumerate()
            .map(|(i, r)| prompts_of(r, file, i + 1))
            .collect::<Result<Vec<_>>>()
            .map(|p| p.concat())
    };
    let prompts = read_prompts(&a.prompts)?;
    let domain = match &a.domain_prompts {
        Some(f) => read_prompts(f)?,
        None => Vec::new(),
    };
    let mut eval: Vec<InputExample> = match &a.eval_prompts {
        Some(f) => crate::jsonl::read_all(f)?,
        None => Vec::new(),
    };
    eval.truncate(a.eval_limit);
    let model: CausalLm<B> = CausalLm::load(&a.model, device)?;
    heap::keep_freed_memory(model.config.hidden_size);
    let general: Teacher<B> = match (&a.teacher, &a.teacher_url) {
        (Some(dir), _) => CausalLm::<B>::load(dir, device)?.into(),
        (None, Some(url)) => EndpointTeacher::new(
            PromptLogprobsConfig {
                url: url.clone(),
                model: a.teacher_model.clone().context(
                    "--teacher-url needs --teacher-model NAME (the served model's name)",
                )?,
                api_key: a.teacher_api_key.clone().filter(|k| !k.is_empty()),
                timeout: Duration::from_secs(a.teacher_timeout.max(1)),
                retries: a.teacher_retries,
                concurrency: a.teacher_concurrency.max(1),
            },
            crate::tokenizer::load(&a.model)?,
        )
        .into(),
        (None, None) => bail!("give --teacher DIR or --teacher-url URL"),
    };
    let teachers = Teachers {
        general,
        domain: match &a.domain_teacher {
            Some(dir) => Some(CausalLm::<B>::load(dir, device)?.into()),
            None => None,
        },
    };
    let inputs = RunInputs {
        prompts: &prompts,
        domain: &domain,
        eval: &eval,
        tokenizer_dir: Path::new(&a.model),
        out: &a.run.out,
    };
    let ckpt = train::<B>(&cfg, model, teachers, &inputs, a.run.resume, stop, device)?;
    println!("{}", ckpt.display());
    Ok(())
}
