//! `teacher-distill` subcommands: `collect` (teacher data) and `train` (SFT). The binary picks the burn
//! backend and calls these.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use burn::tensor::backend::AutodiffBackend;
use clap::Args;
use serde_json::json;

use super::collect::{self, Filter, Summary};
use crate::agent::SimEnv;
use crate::harness::Harness;
use crate::heap;
use crate::hsa::{Config as HsaConfig, Pool, Selection, Spec};
use crate::jsonl::JsonlArgs;
use crate::judge::verifiable::TokenCounter;
use crate::model::config::ModelConfig;
use crate::model::{presets, CausalLm, WeightDtype};
use crate::policy::listed_names::ToolNames;
use crate::policy::noise::NoiseRates;
use crate::policy::openai::{ClientArgs, OpenAi};
use crate::policy::Policy;
use crate::record::Trajectory;
use crate::sim::cli::CatalogSource;
use crate::sim::faults::FaultPlan;
use crate::train::checkpoint;
use crate::train::data::load_views;
use crate::train::optim::{AdamWConfig, LrSchedulerType};
use crate::train::trainer::{self, DevMetrics, RunDirs, TrainConfig, TrainData};
use crate::train::view::{check_tokenizer_fits, SegmentKind, ViewBuilder};

#[derive(Debug, Args)]
pub struct CollectArgs {
    /// Harness directory (the original harness).
    #[arg(long)]
    pub harness: PathBuf,
    /// Task JSONL from `hat sim tasks` (same as --input).
    #[arg(long, value_name = "FILE")]
    pub tasks: Option<String>,
    #[command(flatten)]
    pub io: JsonlArgs,
    #[command(flatten)]
    pub catalog: CatalogSource,
    /// HSA variants of the harness, drawn from --pool (0 = original harness only).
    #[arg(long, default_value_t = 8)]
    pub variants: usize,
    /// Which half of the HSA banks the variants draw from: `train` for training data, `eval` for
    /// held-out harness variants (renames and rewrites training never sees) to evaluate on.
    #[arg(long, value_enum, default_value_t = Pool::Train)]
    pub pool: Pool,
    /// Where the variant harness directories are written (default: OUTPUT.variants, or a temp dir).
    #[arg(long, value_name = "DIR")]
    pub variants_dir: Option<PathBuf>,
    /// Share of tasks played under the original harness; the rest go to variants.
    #[arg(long, default_value_t = 0.25)]
    pub original_share: f64,
    /// HSA config (configs/hsa.toml); built-in defaults without.
    #[arg(long, value_name = "FILE")]
    pub hsa_config: Option<PathBuf>,
    /// Injected tool faults, e.g. `timeout=0.05,malformed=0.05,permission_denied=0.02,empty=0.03`.
    #[arg(long, default_value = "")]
    pub faults: FaultPlan,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// OpenAI-compatible teacher base URL (with /v1); the scripted oracle without. Repeat it (or
    /// `--endpoint`) for replicas of the teacher: each episode goes to the endpoint with the fewest
    /// requests in flight when it starts, and all its turns stay there (the server's prefix cache
    /// keeps the conversation).
    #[arg(long, visible_alias = "endpoint", value_name = "URL")]
    pub teacher_url: Vec<String>,
    #[arg(long, default_value = "default")]
    pub teacher_model: String,
    #[command(flatten)]
    pub client: ClientArgs,
    /// Episodes run at once.
    #[arg(long, default_value_t = 2)]
    pub concurrency: usize,
    /// Keep trajectories with Accuracy at least this.
    #[arg(long, default_value_t = 1.0)]
    pub min_accuracy: f64,
    /// Keep trajectories with Effectiveness at least this.
    #[arg(long, default_value_t = 1.0)]
    pub min_effectiveness: f64,
    /// Probability of keeping a hook-triggered retry in full (otherwise only the final attempt). At 0.6
    /// about 6% of kept records carry a fired hook and its feedback under the default noise rates
    /// (docs/hsa-fidelity.md): enough feedback tokens to learn the recovery from, while the rejected
    /// attempts they contain take no loss.
    #[arg(long, default_value_t = 0.6)]
    pub keep_retry_prob: f64,
    /// Write the kept/dropped summary here as JSON.
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,
    /// How often the oracle teacher errs on a first attempt, so hooks fire and it retries (an
    /// --teacher-url endpoint errs on its own; these apply to the oracle only).
    #[command(flatten)]
    pub noise: NoiseRates,
}

pub fn collect(a: &CollectArgs) -> Result<()> {
    if a.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    if !(0.0..=1.0).contains(&a.original_share) || !(0.0..=1.0).contains(&a.keep_retry_prob) {
        bail!("--original-share and --keep-retry-prob are probabilities in [0, 1]");
    }
    a.noise.check()?;
    let base = Harness::load(&a.harness)?;
    let mut io = a.io.clone();
    if let Some(t) = &a.tasks {
        io.input = t.clone();
    }
    let tasks: Vec<Trajectory> = io.records::<Trajectory>()?.collect::<Result<_>>()?;
    let spec = Spec {
        config: match &a.hsa_config {
            Some(p) => HsaConfig::load(p)?,
            None => HsaConfig::default(),
        },
        selection: Selection::default(),
        pool: a.pool,
        // No variant may mask a skill one of these tasks needs (the task would be unsolvable).
        keep_skills: crate::hsa::solvable::needed_skills(&tasks, &base.names()),
        paraphraser: Default::default(),
    };
    // One client, so one pool, for every harness setting: the balance is over all episodes.
    let teacher: Option<Arc<OpenAi>> = if a.teacher_url.is_empty() {
        None
    } else {
        let cfg = a.client.config_many(&a.teacher_url, &a.teacher_model);
        Some(Arc::new(OpenAi::new(cfg).context("--teacher-url")?))
    };
    let make_policy =
        || -> Option<Box<dyn Policy>> { teacher.clone().map(|t| Box::new(t) as Box<dyn Policy>) };
    let variants_dir = a
        .variants_dir
        .clone()
        .unwrap_or_else(|| match a.io.output.as_str() {
            "-" => std::env::temp_dir().join(format!("hat-collect-{}", std::process::id())),
            out => PathBuf::from(format!("{out}.variants")),
        });
    let settings = collect::settings(
        &base,
        &spec,
        a.variants,
        a.seed,
        &variants_dir,
        &make_policy,
        a.noise,
    )?;
    let catalog = a.catalog.load()?;
    let env = SimEnv {
        catalog: &catalog,
        faults: &a.faults,
        seed: a.seed,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.concurrency)
        .build()
        .context("building the thread pool")?;
    let filter = Filter {
        min_accuracy: a.min_accuracy,
        min_effectiveness: a.min_effectiveness,
        keep_retry_prob: a.keep_retry_prob,
        seed: a.seed,
    };
    let mut summary = Summary::default();
    let kept = collect::collect(
        &tasks,
        &settings,
        &env,
        &pool,
        a.original_share,
        &filter,
        &TokenCounter::Approximate,
        &mut summary,
        &mut |id, e| eprintln!("teacher-distill collect: {id}: {e:#}"),
    );
    if let Some(t) = teacher.as_ref().filter(|t| t.endpoints().len() > 1) {
        let pool = t.endpoints();
        summary.requests_per_endpoint = pool.urls().iter().cloned().zip(pool.sent()).collect();
    }
    let mut w = io.writer()?;
    for t in &kept {
        w.write(t)?;
    }
    w.finish()?;
    if let Some(p) = &a.summary {
        std::fs::write(p, serde_json::to_string_pretty(&summary)? + "\n")
            .with_context(|| format!("writing {}", p.display()))?;
    }
    eprint!("teacher-distill collect:\n{}", summary.table());
    Ok(())
}

#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Training records (JSONL trajectories, e.g. from `collect`).
    #[arg(long, value_name = "FILE")]
    pub records: String,
    /// Held-out records for the dev loss.
    #[arg(long, value_name = "FILE")]
    pub dev_records: Option<String>,
    /// Copy records that yield no training view here (reasons in FILE.reasons.jsonl).
    #[arg(long, value_name = "FILE")]
    pub rejects: Option<PathBuf>,
    /// Where the weights start: a preset name (`tiny`, `small`), or a Hugging Face `config.json` file (a
    /// fresh model of that shape), both randomly initialised from --seed with the tokenizer's vocabulary;
    /// or an HF model directory (its weights).
    #[arg(long, default_value = "tiny")]
    pub model_init: String,
    /// Tokenizer directory (tokenizer.json + tokenizer_config.json with the chat template).
    #[arg(long)]
    pub tokenizer: PathBuf,
    #[arg(long)]
    pub out: PathBuf,
    /// Optimizer steps (max_steps).
    #[arg(long = "max-steps", visible_alias = "steps", default_value_t = 200)]
    pub max_steps: usize,
    #[arg(long = "learning-rate", visible_alias = "lr", default_value_t = 3e-3)]
    pub learning_rate: f64,
    /// Tokens a micro-batch computes at most: its right-padded rows, with the prompt prefix that its
    /// records share (one harness's system prompt and tools) computed once, not once per record
    /// (the loss is the same either way).
    #[arg(long, default_value_t = 8192)]
    pub batch_tokens: usize,
    #[arg(
        long = "gradient-accumulation-steps",
        visible_alias = "grad-accum",
        default_value_t = 1
    )]
    pub gradient_accumulation_steps: usize,
    /// Warmup steps; overrides --warmup-ratio.
    #[arg(long = "warmup-steps", visible_alias = "warmup")]
    pub warmup_steps: Option<usize>,
    #[arg(long, default_value_t = 0.05)]
    pub warmup_ratio: f64,
    /// The schedule after the warm-up: `cosine` decays to 0 at --max-steps; `constant_with_warmup`
    /// keeps the peak (what a stage needs whose decision is learned late, see docs/learning-default.md).
    #[arg(long, value_enum, default_value_t = LrSchedulerType::Cosine)]
    pub lr_scheduler_type: LrSchedulerType,
    #[arg(long, default_value_t = 0.01)]
    pub weight_decay: f64,
    /// Global gradient-norm clip (0 = off).
    #[arg(long = "max-grad-norm", visible_alias = "clip", default_value_t = 1.0)]
    pub max_grad_norm: f64,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Dev loss every N steps (0 = at the end only).
    #[arg(
        long = "eval-steps",
        visible_alias = "eval-every",
        default_value_t = 50
    )]
    pub eval_steps: usize,
    /// Checkpoint every N steps (0 = at the end only).
    #[arg(long, default_value_t = 50)]
    pub save_steps: usize,
    /// Longer training sequences are skipped (counted), not truncated.
    #[arg(long, default_value_t = 4096)]
    pub max_seq_length: usize,
    /// Router load-balancing loss weight (default: the model config's router_aux_loss_coef).
    #[arg(long)]
    pub router_aux_loss_coef: Option<f64>,
    /// Weight of the MTP head's loss (0 = off): trains the head that `serve --mtp` drafts with, to
    /// predict the token after next at every trained position. 0.3 cost the embedded default ~1 % of
    /// token loss and nothing in solved tasks (docs/serving-performance.md).
    #[arg(long, default_value_t = 0.0)]
    pub mtp_loss_weight: f64,
    /// Loss weight of the tool-calling assistant turns relative to text replies (1 = plain SFT). Which
    /// skill and tool to call is a handful of a record's ~70 trained tokens; a larger weight makes that
    /// choice a larger share of the gradient; 0 trains the text replies alone (records with none are
    /// left out). The dev loss stays unweighted.
    #[arg(long, default_value_t = 1.0)]
    pub tool_call_weight: f32,
    /// Loss only on the assistant's tokens (TRL's `assistant_only_loss`; the default, for SFT). `false`
    /// trains on every token — a base stage learning the domain's language, e.g. on `hat records cat
    /// --dialogue-only` rows, so the viewers' words have meaning before SFT asks the model to act on
    /// them. The dev loss and metrics stay on the assistant's tokens.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub assistant_only_loss: bool,
    /// Continue from the newest checkpoint in --out.
    #[arg(long)]
    pub resume: bool,
    /// Delete the checkpoints an earlier run left in --out before starting afresh (without it, and
    /// without --resume, a run refuses an --out that holds checkpoints).
    #[arg(long, conflicts_with = "resume")]
    pub overwrite_output_dir: bool,
    /// Stop (with a checkpoint) after this much training time.
    #[arg(long)]
    pub max_train_minutes: Option<f64>,
    /// Stop (with a checkpoint) after this step, as if interrupted.
    #[arg(long, hide = true)]
    pub stop_after: Option<usize>,
}

/// The model configuration in a `config.json` file, its vocabulary set to the tokenizer's.
fn config_with_vocab(path: &std::path::Path, vocab: usize) -> Result<ModelConfig> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "--model-init {}: cannot read the config file",
            path.display()
        )
    })?;
    let mut v: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("--model-init {}: not JSON", path.display()))?;
    let target = match v.get_mut("text_config") {
        Some(t) => t,
        None => &mut v,
    };
    let obj = target.as_object_mut().with_context(|| {
        format!(
            "--model-init {}: expected a JSON object (a Hugging Face config.json)",
            path.display()
        )
    })?;
    obj.insert("vocab_size".into(), vocab.into());
    ModelConfig::from_json(&v).with_context(|| format!("--model-init {}", path.display()))
}

/// Runs `train`; `stop` is set by Ctrl-C.
pub fn train<B: AutodiffBackend>(
    a: &TrainArgs,
    stop: &AtomicBool,
    device: &B::Device,
) -> Result<()> {
    if a.overwrite_output_dir {
        let removed = checkpoint::remove_all(&a.out)?;
        if removed > 0 {
            eprintln!(
                "--overwrite-output-dir: deleted {removed} checkpoint(s) in {}",
                a.out.display()
            );
        }
    } else if !a.resume {
        // Before minutes of loading; the trainer checks again.
        checkpoint::ensure_none(&a.out)?;
    }
    let builder = ViewBuilder::from_dir(&a.tokenizer)?;
    let vocab = builder.tokenizer().get_vocab_size(true);
    let init = std::path::Path::new(&a.model_init);
    let model: CausalLm<B> = if presets::PRESETS.contains(&a.model_init.as_str()) {
        CausalLm::init(
            &presets::preset(&a.model_init, Some(vocab))?,
            a.seed,
            device,
        )?
    } else if init.is_file() {
        CausalLm::init(&config_with_vocab(init, vocab)?, a.seed, device)?
    } else {
        CausalLm::load(init, device)?
    };
    // Before the records are tokenized on every core: threads keep the arena they first allocate from.
    heap::keep_freed_memory(model.config.hidden_size);
    check_tokenizer_fits(
        builder.tokenizer(),
        model.config.vocab_size,
        builder.end_of_turn(),
    )
    .with_context(|| {
        format!(
            "tokenizer {} vs model {}",
            a.tokenizer.display(),
            a.model_init
        )
    })?;
    let max_len = a.max_seq_length.min(model.config.max_position_embeddings);
    if !(a.tool_call_weight.is_finite() && a.tool_call_weight >= 0.0) {
        bail!(
            "--tool-call-weight must be a number ≥ 0, got {}",
            a.tool_call_weight
        );
    }
    let (mut train, summary) = load_views(&a.records, a.rejects.clone(), &builder, max_len)?;
    for v in &mut train {
        if !a.assistant_only_loss {
            v.train_on_every_token();
        }
        if a.tool_call_weight != 1.0 {
            v.scale_segments(SegmentKind::ToolCall, a.tool_call_weight);
        }
    }
    eprintln!("train data {}: {}", a.records, json!(summary));
    let before = train.len();
    train.retain(|v| v.trained_weight() > 0.0);
    if train.len() < before {
        eprintln!(
            "left out {} records with no weighted token (--tool-call-weight {} and no text reply)",
            before - train.len(),
            a.tool_call_weight
        );
    }
    let dev = match &a.dev_records {
        Some(p) => {
            let (v, s) = load_views(p, None, &builder, max_len)?;
            eprintln!("dev data {p}: {}", json!(s));
            v
        }
        None => Vec::new(),
    };
    if train.is_empty() {
        bail!(
            "{}: no record yields a training view ({:?})",
            a.records,
            summary.skipped
        );
    }
    let pad = builder
        .tokenizer()
        .token_to_id("<|endoftext|>")
        .unwrap_or(builder.end_of_turn());
    let cfg = TrainConfig {
        max_steps: a.max_steps,
        learning_rate: a.learning_rate,
        batch_tokens: a.batch_tokens,
        gradient_accumulation_steps: a.gradient_accumulation_steps,
        warmup_steps: a
            .warmup_steps
            .unwrap_or((a.warmup_ratio * a.max_steps as f64).ceil() as usize),
        lr_scheduler_type: a.lr_scheduler_type,
        adamw: AdamWConfig {
            weight_decay: a.weight_decay,
            ..AdamWConfig::default()
        },
        max_grad_norm: a.max_grad_norm,
        seed: a.seed,
        eval_steps: a.eval_steps,
        save_steps: a.save_steps,
        router_aux_loss_coef: a.router_aux_loss_coef,
        mtp_loss_weight: a.mtp_loss_weight,
        stop_after: a.stop_after,
        max_seconds: a.max_train_minutes.map(|m| m * 60.0),
    };
    let data = TrainData { train, dev, pad };
    let dirs = RunDirs {
        out: &a.out,
        tokenizer: &a.tokenizer,
    };
    let outcome = trainer::train(&cfg, model, &data, &dirs, a.resume, stop, device)?;
    let report = json!({"data": summary, "outcome": outcome});
    std::fs::write(
        a.out.join("train_summary.json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    let share = |of: fn(&DevMetrics) -> Option<f64>| {
        outcome
            .dev
            .as_ref()
            .and_then(of)
            .map_or("-".into(), |e| format!("{e:.3}"))
    };
    eprintln!(
        "teacher-distill train: {} steps{} in {:.0} s, {:.0} tokens/s, last loss {:.4}, dev loss {}, dev tool calls exact {} (opening call {}), final reply exact {}; checkpoint {}",
        outcome.steps,
        if outcome.interrupted { " (stopped early)" } else { "" },
        outcome.train_seconds,
        outcome.tokens_per_second,
        outcome.last_loss.unwrap_or(f64::NAN),
        outcome.dev.map_or("-".into(), |d| format!("{:.4}", d.loss)),
        share(|d| d.tool_call_exact),
        share(|d| d.first_call_exact),
        share(|d| d.final_reply_exact),
        outcome.checkpoint.display()
    );
    Ok(())
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// A model to evaluate as NAME=DIR (repeat to compare models).
    #[arg(long = "model", required = true, value_name = "NAME=DIR")]
    pub models: Vec<String>,
    /// A harness set as NAME=DIR[,DIR…] (repeat); tasks are dealt round-robin over the set's harnesses.
    #[arg(long = "set", required = true, value_name = "NAME=DIRS")]
    pub sets: Vec<String>,
    /// Held-out task JSONL (`hat sim tasks --split dev`).
    #[arg(long, value_name = "FILE")]
    pub tasks: String,
    /// Evaluate the first N tasks.
    #[arg(long, default_value_t = 50)]
    pub n: usize,
    #[command(flatten)]
    pub catalog: CatalogSource,
    #[arg(long, default_value = "")]
    pub faults: FaultPlan,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Longest reply, in tokens.
    #[arg(long, default_value_t = 160)]
    pub max_tokens: usize,
    /// Storage of the projection weights (`serve --dtype`): one value for every --model, or one per
    /// --model in order — the same checkpoint given as two models at f32 and bf16 puts the
    /// rounding's cost in the paired test.
    #[arg(long, value_enum)]
    pub dtype: Vec<WeightDtype>,
    /// Which names a model may write in a tool call (`free`: any; `listed`: only the tools its
    /// prompt lists, as strict function calling does): one value for every --model, or one per
    /// --model in order — the same checkpoint given twice, free and listed, puts in the paired
    /// test what it gains by choosing among the listed names.
    #[arg(long, value_enum)]
    pub tool_names: Vec<ToolNames>,
    /// Episodes run at once.
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// Write the scored episodes here.
    #[arg(long, value_name = "FILE")]
    pub episodes: Option<String>,
    /// Write the summaries here as JSON.
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,
    /// Write grouped bars (right tool and the judge scores by set, a bar per model, 95% intervals)
    /// here as SVG.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Exit with status 1 when the first model's right-tool rate on the first set is below this.
    #[arg(long)]
    pub min_right_tool: Option<f64>,
}

#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// A checkpoint to probe as NAME=DIR (repeat to compare; the first is the baseline of the paired
    /// test). The directory holds the weights, tokenizer.json and the chat template.
    #[arg(long = "model", required = true, value_name = "NAME=DIR")]
    pub models: Vec<String>,
    /// Held-out teacher records as NAME=FILE (repeat), e.g. the same tasks collected under the
    /// original harness and under held-out variants.
    #[arg(long = "records", required = true, value_name = "NAME=FILE")]
    pub records: Vec<String>,
    /// Tokens a micro-batch computes at most (the shared system prompt once).
    #[arg(long, default_value_t = 8192)]
    pub batch_tokens: usize,
    /// Write the per-record decisions and summaries here as JSON.
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,
    /// Also let the model write each opening message itself (greedy, from the prompt alone) and
    /// compare its calls with the teacher's: the measure that still says whether the model finds the
    /// product when the teacher's reasoning quotes it (teacher-forced, the quote hands over the id).
    #[arg(long)]
    pub free_running: bool,
    /// With --free-running: the longest opening message, in tokens.
    #[arg(long, default_value_t = 160, requires = "free_running")]
    pub max_tokens: usize,
    /// Also rank the listed tool names where the teacher's opening call writes its name, by each
    /// name's log-likelihood (total and per token): is the right one first, on records whose
    /// opening calls a renamed tool too? Reading measured without decoding.
    #[arg(long)]
    pub rank_names: bool,
}

/// Runs `probe`: teacher-forced opening-call and tool-call exact match per (model, record set), by
/// intent, with the paired sign test of every later model against the first; markdown on stdout.
pub fn probe(a: &ProbeArgs) -> Result<i32> {
    use crate::eval::free_opening::{free_openings, paired as free_paired};
    use crate::eval::name_ranking::{paired_renamed, rank_names};
    use crate::eval::probe::{markdown, paired, probe};
    use crate::model::generation::generate::TextGenerator;
    let device = Default::default();
    let mut sets = Vec::new();
    for r in &a.records {
        let (name, path) = split_pair(r, "--records")?;
        let records = read_records(path, usize::MAX)?;
        sets.push((name.to_string(), records));
    }
    let mut rows = Vec::new();
    for m in &a.models {
        let (name, dir) = split_pair(m, "--model")?;
        let dir = std::path::Path::new(dir);
        let generator = TextGenerator::<burn::backend::NdArray<f32>>::load(dir, &device)
            .with_context(|| format!("loading {}", dir.display()))?;
        let builder = ViewBuilder::from_dir(dir)?;
        let pad = builder
            .tokenizer()
            .token_to_id("<|endoftext|>")
            .unwrap_or(builder.end_of_turn());
        for (set, records) in &sets {
            let mut p = probe(
                generator.model(),
                &builder,
                records,
                pad,
                a.batch_tokens,
                &device,
            )?;
            eprintln!(
                "teacher-distill probe: {name} on {set}: opening call {}, skipped {}",
                p.opening.display(),
                p.skipped
            );
            if a.rank_names {
                let names = rank_names(&generator, records)?;
                eprintln!(
                    "teacher-distill probe: {name} on {set}: {}",
                    names.summary()
                );
                p.names = Some(names);
            }
            if a.free_running {
                let free = free_openings(&generator, records, a.max_tokens)?;
                eprintln!(
                    "teacher-distill probe: {name} on {set}: free-running opening calls right {}",
                    free.calls.display()
                );
                p.free = Some(free);
            }
            rows.push((name.to_string(), set.clone(), p));
        }
    }
    print!("{}", markdown(&rows));
    let baseline = a.models.first().map(|m| m.split('=').next().unwrap_or(m));
    for (model, set, p) in &rows {
        if Some(model.as_str()) == baseline {
            continue;
        }
        if let Some((_, _, base)) = rows
            .iter()
            .find(|(m, s, _)| Some(m.as_str()) == baseline && s == set)
        {
            let (b_only, a_only, pv) = paired(base, p);
            println!(
                "\npaired sign test on {set}, opening call: {model} right where {} is wrong {b_only}, the reverse {a_only}, p = {pv:.2e}",
                baseline.unwrap_or_default()
            );
            if let (Some(a), Some(b)) = (&base.names, &p.names) {
                let [total, mean] = paired_renamed(a, b);
                println!(
                    "paired sign test on {set}, renamed tool ranked first: {model} where {} is not, by total {} / {} (p = {:.2e}), by mean {} / {} (p = {:.2e})",
                    baseline.unwrap_or_default(),
                    total.0, total.1, total.2, mean.0, mean.1, mean.2
                );
            }
            if let (Some(a), Some(b)) = (&base.free, &p.free) {
                let (b_only, a_only, pv) = free_paired(a, b);
                println!(
                    "paired sign test on {set}, free-running opening calls: {model} right where {} is wrong {b_only}, the reverse {a_only}, p = {pv:.2e}",
                    baseline.unwrap_or_default()
                );
            }
        }
    }
    if let Some(path) = &a.summary {
        let v: Vec<_> = rows
            .iter()
            .map(|(m, s, p)| json!({"model": m, "set": s, "probe": p}))
            .collect();
        std::fs::write(path, serde_json::to_string_pretty(&v)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(0)
}

/// The first `n` records of a JSONL file, failing on the first bad line (with file and line).
fn read_records(path: &str, n: usize) -> Result<Vec<Trajectory>> {
    JsonlArgs {
        input: path.to_string(),
        output: "-".into(),
        on_error: crate::jsonl::OnError::Fail,
        rejects: None,
        shard: None,
    }
    .records::<Trajectory>()?
    .take(n)
    .collect()
}

/// A flag given once for every model, once per model, or not at all (the default for each).
fn per_model<T: Clone + Default>(values: &[T], models: usize, flag: &str) -> Result<Vec<T>> {
    match values.len() {
        0 => Ok(vec![T::default(); models]),
        1 => Ok(vec![values[0].clone(); models]),
        n if n == models => Ok(values.to_vec()),
        n => bail!("{flag}: {n} values for {models} models; give one for all, or one per --model"),
    }
}

fn split_pair<'a>(s: &'a str, flag: &str) -> Result<(&'a str, &'a str)> {
    s.split_once('=')
        .ok_or_else(|| anyhow::anyhow!("{flag} {s:?}: expected NAME=VALUE"))
}

/// Runs `eval`; prints the markdown table on stdout. Returns the exit status.
pub fn eval(a: &EvalArgs) -> Result<i32> {
    use crate::eval::rollout::{
        bars_svg, markdown, paired_right_tool, paired_scores, play, summarise,
    };
    use crate::policy::local::{LocalOptions, LocalPolicy};
    let dtypes = per_model(&a.dtype, a.models.len(), "--dtype")?;
    let tool_names = per_model(&a.tool_names, a.models.len(), "--tool-names")?;
    let tasks = read_records(&a.tasks, a.n)?;
    let catalog = a.catalog.load()?;
    let env = SimEnv {
        catalog: &catalog,
        faults: &a.faults,
        seed: a.seed,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.concurrency.max(1))
        .build()?;
    let mut writer = a
        .episodes
        .as_deref()
        .map(crate::jsonl::JsonlWriter::create)
        .transpose()?;
    let (mut rows, mut played) = (Vec::new(), Vec::new());
    for ((m, dtype), tool_names) in a.models.iter().zip(dtypes).zip(tool_names) {
        let (name, dir) = split_pair(m, "--model")?;
        let mut opts = LocalOptions::default();
        opts.sampling.max_tokens = a.max_tokens;
        opts.sampling.seed = a.seed;
        opts.dtype = dtype;
        opts.tool_names = tool_names;
        let policy = LocalPolicy::load(std::path::Path::new(dir), opts)?;
        for set in &a.sets {
            let (set_name, dirs) = split_pair(set, "--set")?;
            let dirs: Vec<&str> = dirs.split(',').filter(|d| !d.is_empty()).collect();
            let (mut all, mut errors) = (Vec::new(), 0);
            for (k, d) in dirs.iter().enumerate() {
                let mine: Vec<Trajectory> =
                    tasks.iter().skip(k).step_by(dirs.len()).cloned().collect();
                let (eps, err) = play(std::path::Path::new(d), &policy, &mine, &env, &pool)?;
                all.extend(eps);
                errors += err;
            }
            let s = summarise(set_name, &all, errors);
            eprintln!("teacher-distill eval: {name} on {set_name}: {}", json!(s));
            if let Some(w) = writer.as_mut() {
                for t in &all {
                    w.write(t)?;
                }
            }
            rows.push((name.to_string(), set_name.to_string(), s));
            played.push(all);
        }
    }
    if let Some(w) = writer {
        w.finish()?;
    }
    print!("{}", markdown(&rows));
    // Every later model against the first, on the same tasks of each set.
    let sets = a.sets.len();
    for (i, (model, set, _)) in rows.iter().enumerate().skip(sets) {
        let base = &rows[i % sets].0;
        let (b_only, a_only, p) = paired_right_tool(&played[i % sets], &played[i]);
        println!(
            "\npaired sign test on {set}, right tool: {model} right where {base} is wrong {b_only}, the reverse {a_only}, p = {p:.2e}"
        );
        for (score, (b_better, a_better, p)) in paired_scores(&played[i % sets], &played[i]) {
            println!(
                "paired sign test on {set}, {score}: {model} higher {b_better}, {base} higher {a_better}, p = {p:.2e}"
            );
        }
    }
    if let Some(p) = &a.summary {
        let v: Vec<_> = rows
            .iter()
            .map(|(m, s, e)| json!({"model": m, "set": s, "summary": e}))
            .collect();
        std::fs::write(p, serde_json::to_string_pretty(&v)? + "\n")?;
    }
    if let Some(p) = &a.plot {
        std::fs::write(p, bars_svg(&rows)).with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(match (a.min_right_tool, rows.first()) {
        (Some(min), Some((_, _, s))) if s.right_tool.value < min => 1,
        _ => 0,
    })
}
