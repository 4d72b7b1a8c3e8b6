//! `hsa-augment`: Harness-State Augmentation. Writes harness variants (`--out DIR`), or rewrites
//! trajectory JSONL consistently with variants (stream mode). Logic lives in `hat::hsa`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Parser;
use rayon::prelude::*;

use hat::harness::Harness;
use hat::hsa::paraphraser::Endpoint;
use hat::hsa::solvable::needed_skills;
use hat::hsa::variant::{variant_seed, MANIFEST_FILE};
use hat::hsa::{Augmenter, Config, Dim, Paraphraser, Pool, Selection, Spec, Variant, OPS};
use hat::jsonl::JsonlArgs;
use hat::policy::openai::OpenAiConfig;
use hat::record::Trajectory;

const AFTER_HELP: &str = "\
MODES
  Harness mode (--out DIR): writes N variant harness directories OUT/variant-000 … each valid
  (`hat harness validate` passes) with a hidden .hsa-manifest.json (seed, pool, ops with parameters,
  names map canonical→surface, base and variant hash; hidden so it is not part of the harness or its
  hash), and OUT/variants.jsonl with every manifest.

  Stream mode (no --out): reads trajectory JSONL produced under the base harness and writes up to N
  copies of each record (id#hsa0 …), each consistent with one variant from a pool of --variants: system
  prompt (static blocks re-rendered, context-filled blocks kept, variant block order), tools, tool-call
  names, skill names passed to the skill loader, loaded skill bodies, hook feedback wording and role.
  task.expected stays canonical; harness.variant and harness.names record the change. A copy only uses
  a variant the record does not contradict (masked skill it needs, lower limits than it used, fewer
  retries than it took, auto-fix where it retried). Records that call tools or load skills the harness
  lacks, or whose system prompt the harness did not render, are rejected with the reason
  (--on-error skip --rejects FILE keeps going and records them).

OPS (probability and parameters in --config; defaults in configs/hsa.toml)
";

#[derive(Debug, Parser)]
#[command(
    name = "hsa-augment",
    version,
    about = "Harness-State Augmentation: task-preserving variants of a harness, and trajectories rewritten to match",
    after_long_help = after_help(),
    after_help = "Run with --help for the modes and the list of ops."
)]
struct Cli {
    /// The base harness directory.
    #[arg(long, value_name = "DIR")]
    harness: PathBuf,
    /// Harness mode: write N variant directories here (must be absent or empty).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Variants to write (harness mode), or copies per record (stream mode).
    #[arg(long, default_value_t = 8)]
    n: usize,
    /// Seed of every random choice; the same seed gives the same output byte for byte.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Bank half to draw names and rewrites from; `eval` gives held-out variants never seen in training.
    #[arg(long, value_enum, default_value_t = Pool::Train)]
    pool: Pool,
    /// Op config (TOML); default: built-in values, identical to configs/hsa.toml.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Only ops of these dimensions (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',')]
    dims: Vec<Dim>,
    /// Only these ops (comma-separated names, see the list below).
    #[arg(long, value_delimiter = ',')]
    ops: Vec<String>,
    /// A skill no variant may mask (repeatable), e.g. the skills your tasks need.
    #[arg(long = "keep-skill", value_name = "NAME")]
    keep_skill: Vec<String>,
    /// Task records (JSONL, repeatable): no variant may mask a skill one of them needs
    /// (`task.expected.skill`), so every task stays solvable under every variant.
    #[arg(long = "keep-skills-of", value_name = "FILE")]
    keep_skills_of: Vec<String>,
    /// Paraphrase through this OpenAI-compatible endpoint (base URL up to `/v1`) instead of the offline
    /// banks; rewrites that drop a number, a `code` span or a template expression fall back to the banks.
    #[arg(long, value_name = "URL")]
    paraphraser: Option<String>,
    /// Model name sent to the --paraphraser endpoint.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "default",
        requires = "paraphraser"
    )]
    paraphraser_model: String,
    /// Bearer key for the --paraphraser endpoint.
    #[arg(
        long,
        env = "HSA_PARAPHRASER_API_KEY",
        hide_env_values = true,
        requires = "paraphraser"
    )]
    paraphraser_api_key: Option<String>,
    /// Paraphrase cache (JSONL, keyed by sha256 of model, style and text): read if present, appended
    /// to; a rerun with the same seed then needs no endpoint.
    #[arg(
        long,
        value_name = "FILE",
        default_value = ".hsa-paraphrase-cache.jsonl",
        requires = "paraphraser"
    )]
    paraphrase_cache: PathBuf,
    /// Stream mode: size of the variant pool the copies are drawn from.
    #[arg(long, default_value_t = 32)]
    variants: usize,
    #[command(flatten)]
    jsonl: JsonlArgs,
}

fn after_help() -> String {
    let mut text = AFTER_HELP.to_string();
    for dim in [
        Dim::SkillIds,
        Dim::SkillContent,
        Dim::Tools,
        Dim::Prompt,
        Dim::Hooks,
    ] {
        text.push_str(&format!("  {}:\n", dim.as_str()));
        for op in OPS.iter().filter(|o| o.dim == dim) {
            text.push_str(&format!("    {:<28} {}\n", op.name, op.summary));
        }
    }
    text.push_str(
        "\nEXAMPLES\n  hsa-augment --harness harness-samples/taolive --out variants/ --n 8 --seed 1\n  \
         hsa-augment --harness harness-samples/taolive --out heldout/ --n 50 --pool eval\n  \
         hsa-augment --harness harness-samples/taolive -i rollouts.jsonl -o augmented.jsonl --n 4 --seed 7\n",
    );
    text
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hsa-augment: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    let base = Harness::load(&cli.harness)?;
    let problems = base.validate();
    if !problems.is_empty() {
        let list: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        bail!(
            "base harness {} is not valid:\n  {}",
            cli.harness.display(),
            list.join("\n  ")
        );
    }
    let config = match &cli.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    let mut keep_skills = cli.keep_skill.iter().cloned().collect::<BTreeSet<_>>();
    for path in &cli.keep_skills_of {
        let tasks: Vec<Trajectory> = hat::jsonl::read_all(path)?;
        keep_skills.extend(needed_skills(&tasks, &base.names()));
    }
    let spec = Spec {
        config,
        selection: Selection::new(cli.dims.clone(), cli.ops.clone())?,
        pool: cli.pool,
        keep_skills,
        paraphraser: paraphraser(&cli)?,
    };
    let result = match &cli.out {
        Some(out) => harness_mode(&base, &spec, &cli, out),
        None => stream_mode(&base, &spec, &cli),
    };
    if let Paraphraser::Endpoint(e) = &spec.paraphraser {
        eprintln!(
            "hsa-augment: paraphraser: {} cached, {} requests, {} fell back to the banks",
            e.hits.load(Ordering::Relaxed),
            e.calls.load(Ordering::Relaxed),
            e.fallbacks.load(Ordering::Relaxed)
        );
    }
    result
}

fn paraphraser(cli: &Cli) -> Result<Paraphraser> {
    let Some(url) = &cli.paraphraser else {
        return Ok(Paraphraser::Bank);
    };
    let mut cfg = OpenAiConfig::new(url.clone(), cli.paraphraser_model.clone());
    cfg.api_key = cli.paraphraser_api_key.clone();
    cfg.max_tokens = 512;
    let endpoint = Endpoint::new(cfg, Some(cli.paraphrase_cache.clone()))?;
    Ok(Paraphraser::Endpoint(Arc::new(endpoint)))
}

fn harness_mode(base: &Harness, spec: &Spec, cli: &Cli, out: &std::path::Path) -> Result<()> {
    let variants = (0..cli.n as u64)
        .into_par_iter()
        .map(|i| Variant::draw(base, spec, variant_seed(cli.seed, i)))
        .collect::<Result<Vec<_>>>()?;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut index = String::new();
    for (i, v) in variants.iter().enumerate() {
        let dir = out.join(format!("variant-{i:03}"));
        v.write_to(&dir)?;
        index.push_str(&serde_json::to_string(&v.manifest())?);
        index.push('\n');
    }
    let path = out.join("variants.jsonl");
    std::fs::write(&path, index).with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!(
        "hsa-augment: wrote {} variants of {} to {} (manifests in */{MANIFEST_FILE})",
        variants.len(),
        base.name(),
        out.display()
    );
    Ok(())
}

fn stream_mode(base: &Harness, spec: &Spec, cli: &Cli) -> Result<()> {
    let aug = Augmenter::new(base, spec, cli.seed, cli.variants)?;
    let mut records = cli.jsonl.records::<Trajectory>()?;
    let mut writer = cli.jsonl.writer()?;
    let (mut written, mut rejected) = (0u64, 0u64);
    while let Some(item) = records.next_numbered() {
        let (line, record) = item?;
        match aug.augment(&record, cli.n) {
            Ok(copies) => {
                for c in &copies {
                    writer.write(c)?;
                }
                written += copies.len() as u64;
            }
            Err(reason) => {
                rejected += 1;
                records.reject(&line, format!("record {:?}: {reason}", record.id))?;
            }
        }
    }
    writer.finish()?;
    let stats = records.stats();
    eprintln!(
        "hsa-augment: read {} records, wrote {written} augmented records, rejected {rejected}",
        stats.read
    );
    Ok(())
}
