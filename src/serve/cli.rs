//! The `serve` command line: load the model (a checkpoint, or a random preset clearly labelled as such),
//! start the engine, bind (127.0.0.1:8000 by default) and serve until SIGTERM or Ctrl-C, then finish the
//! requests in flight before exiting.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Parser;

use super::engine::EngineConfig;
use super::model::BurnModel;
use super::server::{self, HttpLimits};
use super::{agent, build_app, AppOptions};
use crate::chat::{ChatTemplate, ToolCallFormat};
use crate::model::WeightDtype;

#[cfg(feature = "cuda")]
type Backend = burn::backend::Cuda;
#[cfg(not(feature = "cuda"))]
type Backend = burn::backend::NdArray<f32>;

#[derive(Debug, Parser)]
#[command(
    name = "serve",
    version,
    about = "OpenAI-compatible server for HAT models: /v1/chat/completions (streaming, tools), /v1/agent \
             (the complete harness-driven host), /v1/models, /health, /metrics; continuous batching",
    after_help = "Examples:\n  serve --model out/ckpt --harness harness-samples/taolive\n  \
                  serve --model out/ckpt --enable-weight-updates   # an RL trainer's rollout server\n  \
                  serve --preset tiny --tokenizer out/tokenizer --port 8001   # random weights: demos and tests only"
)]
pub struct ServeArgs {
    /// Hugging Face checkpoint directory (config.json, *.safetensors, tokenizer.json, tokenizer_config.json).
    #[arg(
        long,
        value_name = "DIR",
        required_unless_present = "preset",
        conflicts_with = "preset"
    )]
    pub model: Option<PathBuf>,
    /// Serve RANDOM weights of a preset (tiny, small) — for demos and tests only; needs --tokenizer.
    #[arg(long, requires = "tokenizer")]
    pub preset: Option<String>,
    /// Tokenizer directory (tokenizer.json + tokenizer_config.json with the chat template) for --preset.
    #[arg(long, value_name = "DIR")]
    pub tokenizer: Option<PathBuf>,
    /// Seed of the random preset weights.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Require `Authorization: Bearer KEY` on /v1 routes.
    #[arg(long, env = "HAT_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Model id in responses and /v1/models (default: the checkpoint directory name, or `PRESET-random`).
    #[arg(long)]
    pub served_model_name: Option<String>,
    /// Largest request body; larger ones get 413.
    #[arg(long, default_value_t = 1 << 20)]
    pub max_body_bytes: usize,
    /// Per-request time limit in seconds (whole agent turn in agent mode).
    #[arg(long, default_value_t = 120)]
    pub timeout_secs: u64,
    /// Requests waiting for a batch slot beyond which new ones get 429.
    #[arg(long, default_value_t = 256)]
    pub max_queue: usize,
    /// Sequences decoded together at most.
    #[arg(long, default_value_t = 32)]
    pub max_batch: usize,
    /// Most prompt tokens prefilled per engine iteration while other sequences decode (chunked
    /// prefill, run inside their decode step; pieces are sized by --max-itl-stretch). 0
    /// prefills each new prompt in one piece, however long the running sequences then wait.
    #[arg(long, default_value_t = crate::serve::engine::PREFILL_CHUNK)]
    pub prefill_chunk: usize,
    /// Size chunked prefill's pieces so that a decode step carrying prompt tokens takes at most
    /// this times a step without (the engine measures both as it runs), e.g. 1.75 for chat whose
    /// streams should stay steady while long prompts arrive. Arriving prompts are then prefilled
    /// slower while sequences run (agent turns' end-to-end latency doubled in our replay). 0: every
    /// piece is --prefill-chunk tokens.
    #[arg(long, default_value_t = crate::serve::engine::MAX_ITL_STRETCH, value_parser = itl_stretch)]
    pub max_itl_stretch: f64,
    /// Decoding states of prompt prefixes kept for reuse (one per 256-token block of a prompt; each
    /// holds the KV cache up to its block). 0 disables prefix caching.
    #[arg(long, default_value_t = crate::model::generation::prefix_cache::ENTRIES)]
    pub prefix_cache_entries: usize,
    /// Context length (prompt + output) per sequence; capped by the model's max_position_embeddings.
    #[arg(long, default_value_t = 4096)]
    pub max_model_len: usize,
    /// Output tokens when a request sets no max_tokens.
    #[arg(long, default_value_t = 256)]
    pub default_max_tokens: usize,
    /// How the model writes tool calls: hermes (Qwen3) or qwen3_xml (Qwen3.5).
    #[arg(long, default_value = "hermes")]
    pub tool_call_format: ToolCallFormat,
    /// Harness directory; enables agent mode (POST /v1/agent).
    #[arg(long, value_name = "DIR")]
    pub harness: Option<PathBuf>,
    /// Product catalog for agent mode's tool sandbox.
    #[arg(long, value_name = "FILE", default_value = "testdata/catalog.json")]
    pub catalog: PathBuf,
    /// MTP speculative decoding with the checkpoint's MTP head (Qwen3.5 `mtp.*` weights) while one
    /// request runs alone (concurrency 1; batched steps run as usual). Same output, greedy or
    /// sampled; acceptance rate and speed-up in /metrics.
    #[arg(long)]
    pub mtp: bool,
    /// Tokens the MTP head drafts per round with --mtp. 1 by default: on the MoE presets a check of
    /// K + 1 tokens reads the experts of each, and on trained `tiny` and `small` checkpoints K = 2
    /// was at best level with K = 1 (docs/serving-performance.md).
    #[arg(long, default_value_t = 1, requires = "mtp")]
    pub mtp_draft_tokens: usize,
    /// Storage of the projection weights: bf16 halves and int8 (per-channel scales) quarters
    /// their bytes, and so the bytes a decode step reads, at a small accuracy cost
    /// (docs/serving-performance.md). CPU backend only.
    #[arg(long, value_enum, default_value_t = WeightDtype::F32)]
    pub dtype: WeightDtype,
    /// Accept `POST /update_weights_from_disk {"model_path": DIR}` (SGLang's endpoint): load new
    /// weights of the same vocabulary while serving, after the requests already accepted finish.
    /// For an RL trainer that plays its rollouts here (`grpo-train --rollout-endpoint`). Behind
    /// --api-key when one is set; it reads any directory this process can.
    #[arg(long)]
    pub enable_weight_updates: bool,
}

/// `--max-itl-stretch`: 0, or a finite factor above 1.
fn itl_stretch(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v == 0.0 || (v.is_finite() && v > 1.0) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a stretch: give a factor above 1 (1.75: a step that prefills prompt \
             tokens takes at most 1.75x one that does not), or 0 for pieces of --prefill-chunk tokens"
        )),
    }
}

pub fn main() -> ExitCode {
    let args = ServeArgs::parse();
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("serve: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(args: ServeArgs) -> Result<()> {
    let device = Default::default();
    let (model_dir, mut model, random): (_, BurnModel<Backend>, _) =
        match (&args.model, &args.preset) {
            (Some(dir), _) => (
                dir.clone(),
                BurnModel::<Backend>::load(dir, args.dtype, device)?,
                false,
            ),
            (None, Some(preset)) => {
                let dir = args
                    .tokenizer
                    .clone()
                    .context("--preset needs --tokenizer DIR")?;
                let vocab = crate::tokenizer::load(&dir)?.get_vocab_size(true);
                (
                    dir,
                    BurnModel::<Backend>::random(preset, vocab, args.seed, args.dtype, device)?,
                    true,
                )
            }
            (None, None) => {
                bail!("give --model DIR (or --preset NAME --tokenizer DIR for random weights)")
            }
        };
    let tokenizer = crate::tokenizer::load(&model_dir)?;
    let template = ChatTemplate::from_model_dir(&model_dir)?;
    let name = match (&args.served_model_name, &args.preset) {
        (Some(n), _) => n.clone(),
        (None, Some(p)) => format!("{p}-random"),
        (None, None) => model_dir
            .file_name()
            .map_or("model".into(), |n| n.to_string_lossy().into_owned()),
    };
    let max_context = args
        .max_model_len
        .min(model.model.config.max_position_embeddings);
    let options = AppOptions {
        model_name: name.clone(),
        random_weights: random,
        weight_updates: args.enable_weight_updates,
        format: args.tool_call_format,
        timeout: Duration::from_secs(args.timeout_secs.max(1)),
        default_max_tokens: args.default_max_tokens,
        api_key: args.api_key.clone().filter(|k| !k.is_empty()),
        engine: EngineConfig {
            queue_capacity: args.max_queue,
            max_batch: args.max_batch.max(1),
            max_context,
            prefill_chunk: args.prefill_chunk,
            max_itl_stretch: args.max_itl_stretch,
        },
    };
    let agent = match &args.harness {
        Some(h) => Some(agent::load(h, &args.catalog)?),
        None => None,
    };
    let agent_on = agent.is_some();
    // Before the engine thread starts: the agent replay of `small` on 2 cores served 99–111
    // generated tok/s with these settings against 72–86 without (docs/serving-performance.md).
    crate::heap::keep_freed_memory(model.model.config.hidden_size);
    let weight_bytes = model.model.weight_bytes();
    let scorer = model.scorer();
    let model = model.with_prefix_cache(args.prefix_cache_entries);
    let model = if args.mtp {
        model.with_mtp(args.mtp_draft_tokens)?
    } else {
        model
    };
    let (app, engine) = build_app(model, tokenizer, template, &options, agent);
    let _ = app.scorer.set(scorer);
    let addr: SocketAddr = format!("{}:{}", args.host, args.port)
        .parse()
        .with_context(|| format!("bad --host/--port {}:{}", args.host, args.port))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        let label = if random {
            " — RANDOM WEIGHTS (demo/test only)"
        } else {
            ""
        };
        eprintln!(
            "serve: {name}{label} on http://{}  (weights {} MB {}, agent mode {}, api key {})",
            listener.local_addr()?,
            weight_bytes.div_ceil(1 << 20),
            args.dtype.name(),
            if agent_on { "on" } else { "off" },
            if options.api_key.is_some() {
                "required"
            } else {
                "off"
            }
        );
        server::run(
            listener,
            app,
            HttpLimits {
                max_body_bytes: args.max_body_bytes,
            },
            shutdown_signal(),
        )
        .await?;
        anyhow::Ok(())
    })?;
    eprintln!("serve: stopped accepting; finishing the engine's work");
    engine
        .join()
        .map_err(|_| anyhow::anyhow!("the engine thread panicked"))?;
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    eprintln!("serve: shutting down gracefully");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stretch_is_off_or_a_factor_above_one() {
        assert_eq!(itl_stretch("0"), Ok(0.0));
        assert_eq!(itl_stretch("1.75"), Ok(1.75));
        for bad in ["1", "0.5", "-2", "NaN", "inf", "fast"] {
            let e = itl_stretch(bad).unwrap_err();
            assert!(e.contains("factor above 1"), "{bad}: {e}");
        }
        // And through the parser, as a user types it.
        let e = ServeArgs::try_parse_from(["serve", "--model", "m", "--max-itl-stretch", "1"])
            .unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
        let args = ServeArgs::try_parse_from(["serve", "--model", "m"]).unwrap();
        assert_eq!(args.max_itl_stretch, crate::serve::engine::MAX_ITL_STRETCH);
    }
}
