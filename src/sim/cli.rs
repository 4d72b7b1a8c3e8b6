//! `hat sim catalog` and `hat sim tasks`: the simulator's own subcommands. The `hat sim` group itself, with
//! `rollout` (which needs a policy and the agent runtime, layers above the simulator), is `agent::cli`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use super::catalog::{Catalog, Split};
use super::copy_task::{copy_rows, CopyKind};
use super::served::Served;
use super::tasks::{self, Mix, TaskConfig};
use crate::harness::problem::problems_error;
use crate::harness::{serves, Harness};
use crate::jsonl;

#[derive(Debug, Args)]
pub struct CatalogSource {
    /// Catalog JSON file (from `hat sim catalog`); without it one is generated from --catalog-seed.
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
    #[arg(long, default_value_t = 7)]
    pub catalog_seed: u64,
    /// Products in a generated catalog.
    #[arg(long, default_value_t = 40)]
    pub products: usize,
}

impl CatalogSource {
    pub fn load(&self) -> Result<Catalog> {
        match &self.catalog {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading catalog {}", path.display()))?;
                serde_json::from_str(&text)
                    .with_context(|| format!("{} is not a catalog", path.display()))
            }
            None => Ok(Catalog::generate(self.catalog_seed, self.products)),
        }
    }
}

#[derive(Debug, Args)]
pub struct CatalogArgs {
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    #[arg(long, default_value_t = 40)]
    pub products: usize,
    /// Output file, or `-` for stdout.
    #[arg(short, long, default_value = "-")]
    pub output: String,
}

#[derive(Debug, Args)]
pub struct TasksArgs {
    #[arg(long, default_value_t = 1000)]
    pub n: usize,
    /// Generate only tasks this harness serves, in the mix its `[serves]` table declares (`--mix`
    /// still overrides the mix); without it, tasks for the canonical names in the live-room mix.
    #[arg(long, value_name = "DIR")]
    pub harness: Option<PathBuf>,
    /// Whose products, rooms, orders and FAQ entries the tasks use (splits share none of them).
    #[arg(long, value_enum, default_value_t = Split::Train)]
    pub split: Split,
    /// Whose viewer phrasing templates the tasks use (default: `--split`'s). `--split dev
    /// --phrasings train` makes held-out tasks worded like training ones: new products and rooms, no
    /// unseen wording.
    #[arg(long, value_enum)]
    pub phrasings: Option<Split>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Intent weights, e.g. `product_qa=46,chat=19,clarify=16,after_sales=7,promotion=4,presentation_order=2,faq=2,silent_refusal=0.8`.
    #[arg(long)]
    pub mix: Option<Mix>,
    /// Share of English rooms.
    #[arg(long, default_value_t = 0.3)]
    pub en_share: f64,
    /// Strength of slang/typo noise on viewer messages (0 = clean).
    #[arg(long, default_value_t = 0.3)]
    pub noise: f64,
    /// Consecutive tasks that share one live-room state, like the viewers of one stream (1 = a room
    /// per task). Records of one room and harness share their whole system prompt and tools, which
    /// `teacher-distill train` then computes once per micro-batch.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub viewers_per_room: u64,
    #[command(flatten)]
    pub catalog: CatalogSource,
    #[arg(short, long, default_value = "-")]
    pub output: String,
}

#[derive(Debug, Args)]
pub struct CopyTaskArgs {
    #[arg(long, default_value_t = 20000)]
    pub n: usize,
    /// Kinds of row, dealt round-robin: `current` (one id), `link` (a queue named by `N号链接`),
    /// `title` (a queue of catalog titles, named by title).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "current,link,title"
    )]
    pub kinds: Vec<CopyKind>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where the `title` rows' titles come from (the ids are drawn fresh).
    #[command(flatten)]
    pub catalog: CatalogSource,
    #[arg(short, long, default_value = "-")]
    pub output: String,
}

/// `hat sim copy-task`: copy rows as JSONL, a one-line count on `err`.
pub fn copy_task(a: &CopyTaskArgs, err: &mut dyn std::io::Write) -> Result<i32> {
    let rows = copy_rows(a.n, &a.kinds, &a.catalog.load()?, a.seed)?;
    jsonl::write_all(&a.output, &rows)?;
    writeln!(
        err,
        "hat sim copy-task: {} rows (seed {})",
        rows.len(),
        a.seed
    )?;
    Ok(0)
}

/// `hat sim catalog`: a generated catalog as pretty JSON.
pub fn catalog(a: &CatalogArgs) -> Result<i32> {
    let cat = Catalog::generate(a.seed, a.products);
    let mut text = serde_json::to_string_pretty(&cat)?;
    text.push('\n');
    write_text(&a.output, &text)?;
    Ok(0)
}

/// `hat sim tasks`: viewer tasks as JSONL, a one-line count on `err`.
pub fn tasks(a: &TasksArgs, err: &mut dyn std::io::Write) -> Result<i32> {
    let catalog = a.catalog.load()?;
    let mut cfg = TaskConfig::new(a.split, a.seed);
    cfg.phrasings = a.phrasings.unwrap_or(a.split);
    let mut served = None;
    if let Some(dir) = &a.harness {
        let h = Harness::load(dir)?;
        let problems = serves::coverage(&h);
        if !problems.is_empty() {
            return Err(problems_error(
                &format!("harness {}", dir.display()),
                &problems,
            ));
        }
        Served::of(&h).apply(&mut cfg);
        served = Some(h.name().to_string());
    }
    if let Some(m) = &a.mix {
        cfg.mix = m.clone();
    }
    cfg.en_share = a.en_share;
    cfg.noise = a.noise;
    cfg.viewers_per_room = a.viewers_per_room as usize;
    let out = tasks::generate(&catalog, &cfg, a.n)?;
    jsonl::write_all(&a.output, &out)?;
    writeln!(
        err,
        "hat sim tasks: {} {} tasks, {} phrasings (seed {})",
        out.len(),
        tasks::split_name(a.split),
        tasks::split_name(cfg.phrasings),
        a.seed
    )?;
    if let Some(name) = served {
        // What the harness narrowed, so a user sees why some intents or asks never appear.
        let mix: Vec<String> = cfg.mix.0.iter().map(|(i, w)| format!("{i}={w}")).collect();
        writeln!(
            err,
            "  for harness {name}: mix {}; no task needs {}",
            mix.join(","),
            if cfg.unserved.is_empty() {
                "anything it lacks (it serves every canonical id)".to_string()
            } else {
                cfg.unserved.iter().cloned().collect::<Vec<_>>().join(", ")
            }
        )?;
    }
    Ok(0)
}

fn write_text(path: &str, text: &str) -> Result<()> {
    if path == "-" {
        use std::io::Write;
        std::io::stdout().lock().write_all(text.as_bytes())?;
        Ok(())
    } else {
        std::fs::write(path, text).with_context(|| format!("writing {path}"))
    }
}
