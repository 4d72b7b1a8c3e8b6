//! `hat sim serve`: the environment service's command line.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;

use super::sessions::Sessions;
use super::setup::World;
use super::text::Texts;
use super::{router, EnvOptions, EnvState};
use crate::chat::ChatTemplate;
use crate::judge::verifiable::TokenCounter;
use crate::record::Trajectory;
use crate::service::http::{serve_until_signal, HttpOptions};
use crate::sim::catalog::Split;
use crate::sim::cli::CatalogSource;

/// Serve live-room episodes over HTTP/JSON for RL engines (verl, OpenRLHF): `POST /reset` starts
/// an episode (a task given, by id or drawn by seed; the original harness, an HSA variant by seed or
/// an extra harness; a fault profile) and returns the system prompt, tools, the viewer's messages and
/// the prompt as the chat template renders it; `POST /step` takes the assistant's move (an OpenAI
/// message, the raw completion text, or token ids) and returns tool results and hook feedback, `done`,
/// and at the end the judge's rewards per dimension. Episodes are sessions with ids, an idle time-out
/// and a cap; the same reset and moves give the same episode. Protocol: docs/services.md.
#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:\n  \
hat sim serve --harness harness-samples/taolive --port 8100 --out episodes.jsonl\n  \
curl -s localhost:8100/reset -d '{\"task_seed\": 3, \"harness\": {\"variant_seed\": 7}, \"faults\": \"timeout=0.1\"}'\n  \
curl -s localhost:8100/step -d '{\"session_id\": \"ep-…\", \"message\": {\"role\": \"assistant\", \"content\": \"在的～\"}}'")]
pub struct EnvServeArgs {
    /// The original harness (variants are drawn from it). Its canonical → surface names come from its
    /// `[serves]` table or an HSA manifest, as for `hat sim rollout`.
    #[arg(long, value_name = "DIR")]
    pub harness: PathBuf,
    /// Another harness a reset may name with `{"harness": {"dir": "DIR"}}` (repeat). Only directories
    /// named here are loaded: a harness runs command hooks, so requests cannot point at arbitrary ones.
    #[arg(long = "extra-harness", value_name = "DIR")]
    pub extra_harness: Vec<PathBuf>,
    /// Task records (`hat sim tasks`) a reset may name by `task_id` or draw by `task_seed`; without
    /// it, `task_seed` generates a task for the harness.
    #[arg(long, value_name = "FILE")]
    pub tasks: Option<String>,
    /// The split generated tasks come from.
    #[arg(long, value_enum, default_value_t = Split::Train)]
    pub split: Split,
    #[command(flatten)]
    pub catalog: CatalogSource,
    /// Fault profile of resets that name none (`hat sim rollout --faults` syntax).
    #[arg(long, default_value = "")]
    pub faults: String,
    /// Episode seed of resets that name none (as `hat sim rollout --seed`).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where HSA variants are written (command hooks run from the harness directory); default a
    /// directory under the system's temporary directory.
    #[arg(long, value_name = "DIR")]
    pub variants_dir: Option<PathBuf>,
    /// Tokenizer directory (tokenizer.json, tokenizer_config.json with the chat template): enables
    /// `token_ids` in /step and renders texts with its template (default: the built-in Qwen3 one).
    #[arg(long, value_name = "DIR")]
    pub tokenizer: Option<PathBuf>,
    /// Append each finished episode's record (judged) to this JSONL file.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Enable `POST /oracle`, the scripted teacher's next move (reads the hidden ground truth: tests
    /// and smoke runs only).
    #[arg(long)]
    pub oracle: bool,
    /// Open episodes at most; resets beyond get 429.
    #[arg(long, default_value_t = 1024)]
    pub max_sessions: usize,
    /// Seconds without a request after which an episode is closed (then 410).
    #[arg(long, default_value_t = 600.0)]
    pub idle_timeout_s: f64,
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    #[arg(long, default_value_t = 8100)]
    pub port: u16,
    /// Require `Authorization: Bearer KEY` (all routes but /health).
    #[arg(long, env = "HAT_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Largest request body in bytes; larger ones get 413.
    #[arg(long, default_value_t = 1 << 20)]
    pub max_body_bytes: usize,
}

impl EnvServeArgs {
    /// The service's state (also what the tests and the load test start in process).
    pub fn state(&self) -> Result<super::Env> {
        let tasks: Vec<Trajectory> = match &self.tasks {
            Some(p) => crate::jsonl::read_all(p)?,
            None => Vec::new(),
        };
        let variants_dir = self.variants_dir.clone().unwrap_or_else(|| {
            std::env::temp_dir().join(format!("hat-env-variants-{}", std::process::id()))
        });
        std::fs::create_dir_all(&variants_dir)
            .with_context(|| format!("creating {}", variants_dir.display()))?;
        let world = World::new(
            self.catalog.load()?,
            &self.harness,
            &self.extra_harness,
            variants_dir,
            tasks,
            self.split,
        )?;
        let (template, tokenizer) = match &self.tokenizer {
            Some(dir) => (
                ChatTemplate::from_model_dir(dir)?,
                Some(crate::tokenizer::load(dir)?),
            ),
            None => (
                ChatTemplate::from_str(crate::tokenizer::QWEN3_CHAT_TEMPLATE)?,
                None,
            ),
        };
        let out = match &self.out {
            Some(p) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .with_context(|| format!("opening {}", p.display()))?,
            ),
            None => None,
        };
        if !(self.idle_timeout_s > 0.0 && self.idle_timeout_s.is_finite()) {
            anyhow::bail!("--idle-timeout-s must be a positive number of seconds");
        }
        Ok(EnvState::new(
            world,
            Sessions::new(
                self.max_sessions.max(1),
                Duration::from_secs_f64(self.idle_timeout_s),
            ),
            Texts::new(template, tokenizer)?,
            TokenCounter::Approximate,
            out,
            EnvOptions {
                faults: self.faults.clone(),
                seed: self.seed,
                oracle: self.oracle,
            },
        ))
    }

    pub fn http(&self) -> HttpOptions {
        HttpOptions {
            api_key: self.api_key.clone().filter(|k| !k.is_empty()),
            max_body_bytes: self.max_body_bytes,
        }
    }

    /// Serve until SIGTERM or Ctrl-C.
    pub fn run(&self) -> Result<i32> {
        let env = self.state()?;
        let http = self.http();
        let banner = format!(
            "hat sim serve: harness {} (api key {}, at most {} episodes, oracle {})",
            self.harness.display(),
            if http.api_key.is_some() {
                "required"
            } else {
                "off"
            },
            self.max_sessions,
            if self.oracle { "on" } else { "off" }
        );
        serve_until_signal(|| router(env, &http), &self.host, self.port, &banner)?;
        Ok(0)
    }
}
