//! The `replay-bench` command line: `run` (replay a set against an endpoint), `make-set` (regenerate a
//! replay set from the simulator) and `compare` (two summaries side by side).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Map, Value};

use super::arrivals::schedule;
use super::client::{send, Mode, Target};
use super::report::{cdf_svg, compare, summary_json, write_csv};
use super::set;
use super::stats::{by_endpoint, summarize};
use crate::harness::Harness;
use crate::policy::endpoints::EndpointPool;
use crate::sim::catalog::Catalog;
use crate::sim::tasks::Mix;

#[derive(Debug, Parser)]
#[command(
    name = "replay-bench",
    version,
    about = "Replay deployment requests against an OpenAI-compatible endpoint (HAT serve, vLLM, SGLang) and report latency percentiles, throughput, success and 15-second attainment"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Send a replay set and measure it.
    ///
    /// Example: replay-bench run --base-url http://127.0.0.1:8000 --concurrency 8 --out out/replay
    Run(RunArgs),
    /// Generate a replay set from the simulator (the committed default: `make replay-set`).
    MakeSet(MakeSetArgs),
    /// Print two summary JSON files side by side.
    Compare { a: PathBuf, b: PathBuf },
}

#[derive(Debug, Args)]
struct RunArgs {
    /// Server root URL (without /v1). Repeat it (or `--endpoint`) for replicas of one model: each
    /// request goes to the server with the fewest requests in flight, and repeats of a replay line go
    /// where its first request went (its prompt is in that server's prefix cache); the summary then
    /// counts requests, failures and latencies per endpoint.
    #[arg(
        long = "base-url",
        visible_alias = "endpoint",
        value_name = "URL",
        default_value = "http://127.0.0.1:8000"
    )]
    base_url: Vec<String>,
    #[arg(long, default_value = "testdata/replay/default.jsonl")]
    set: PathBuf,
    #[arg(long, value_enum, default_value_t = Mode::Plain)]
    mode: Mode,
    /// The served model's directory (tokenizer.json and chat template), for script mode: each
    /// recorded assistant message's length in tokens is what its call must generate.
    #[arg(long, value_name = "DIR")]
    tokenizer: Option<PathBuf>,
    /// Model id to request (default: the first of GET /v1/models).
    #[arg(long)]
    model: Option<String>,
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Requests in flight at most (default: no limit).
    #[arg(long)]
    concurrency: Option<usize>,
    /// Mean arrival rate in requests/s (default: all at once).
    #[arg(long)]
    request_rate: Option<f64>,
    /// Gamma shape of the inter-arrival times: 1 = Poisson, <1 burstier, >1 more regular.
    #[arg(long, default_value_t = 1.0)]
    burstiness: f64,
    /// Seeds arrivals and each request's sampling seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Requests sent first, one at a time, and left out of the results.
    #[arg(long, default_value_t = 0)]
    warmup: usize,
    /// Measured requests (default: the whole set; the set repeats if more).
    #[arg(long)]
    num_prompts: Option<usize>,
    #[arg(long, default_value_t = 128)]
    max_tokens: usize,
    #[arg(long, default_value_t = 0.0)]
    temperature: f64,
    /// Per-request client timeout.
    #[arg(long, default_value_t = 120)]
    timeout_secs: u64,
    /// The end-to-end SLO for goodput and attainment.
    #[arg(long, default_value_t = 15000.0)]
    slo_e2e_ms: f64,
    #[arg(long, default_value = "")]
    label: String,
    /// Directory for summary.json, requests.csv and cdf.svg (the summary is printed either way).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct MakeSetArgs {
    #[arg(long, default_value = "harness-samples/taolive")]
    harness: PathBuf,
    #[arg(long, default_value = "testdata/catalog.json")]
    catalog: PathBuf,
    #[arg(long, default_value_t = 110)]
    n: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Intent weights (default: the paper's deployment mix).
    #[arg(long)]
    mix: Option<Mix>,
    #[arg(short, long, default_value = "testdata/replay/default.jsonl")]
    output: PathBuf,
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) => run(a),
        Command::MakeSet(a) => make_set(a),
        Command::Compare { a, b } => (|| {
            let read = |p: &PathBuf| -> Result<Value> {
                Ok(serde_json::from_str(
                    &std::fs::read_to_string(p)
                        .with_context(|| format!("reading {}", p.display()))?,
                )?)
            };
            print!(
                "{}",
                compare(
                    &read(&a)?,
                    &read(&b)?,
                    &a.display().to_string(),
                    &b.display().to_string()
                )
            );
            Ok(())
        })(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("replay-bench: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn make_set(a: MakeSetArgs) -> Result<()> {
    let harness = Harness::load(&a.harness)?;
    let catalog: Catalog = serde_json::from_str(
        &std::fs::read_to_string(&a.catalog)
            .with_context(|| format!("reading {}", a.catalog.display()))?,
    )?;
    let entries = set::make_set(&harness, &catalog, &a.mix.unwrap_or_default(), a.n, a.seed)?;
    if let Some(dir) = a.output.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = String::new();
    for e in &entries {
        text.push_str(&serde_json::to_string(&e.to_json()?)?);
        text.push('\n');
    }
    std::fs::write(&a.output, text).with_context(|| format!("writing {}", a.output.display()))?;
    eprintln!(
        "replay-bench: {} requests → {}",
        entries.len(),
        a.output.display()
    );
    Ok(())
}

fn run(a: RunArgs) -> Result<()> {
    if a.concurrency == Some(0) {
        bail!("--concurrency must be at least 1");
    }
    if !(a.burstiness > 0.0) {
        bail!("--burstiness must be > 0");
    }
    let mut entries = set::read(&a.set)?;
    if entries.is_empty() {
        bail!("{} holds no requests", a.set.display());
    }
    match a.mode {
        Mode::Plain => {
            if let Some(e) = entries.iter().find(|e| e.request.is_null()) {
                bail!(
                    "{}: record {} has no `request`; plain mode replays a set from `replay-bench make-set` (a recorded agent turn plays with --mode script)",
                    a.set.display(),
                    e.record.id
                );
            }
        }
        Mode::Script => {
            let dir = a.tokenizer.as_ref().context(
                "--mode script needs --tokenizer DIR (the served model's tokenizer and chat template) to measure each recorded reply",
            )?;
            let tokenizer = crate::tokenizer::load(dir)?;
            let template = crate::chat::ChatTemplate::from_model_dir(dir)?;
            for e in &mut entries {
                e.script = set::script(e, &tokenizer, &template)
                    .with_context(|| format!("{}: record {}", a.set.display(), e.record.id))?;
            }
        }
        Mode::Agent => {}
    }
    let n = a.num_prompts.unwrap_or(entries.len());
    let endpoints = Arc::new(EndpointPool::new(a.base_url.clone()).context("--base-url")?);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let client = reqwest::Client::builder().pool_max_idle_per_host(1024).build()?;
        let model = match &a.model {
            Some(m) => m.clone(),
            None => first_model(&client, &a.base_url[0], a.api_key.as_deref()).await?,
        };
        let target = Arc::new(Target {
            endpoints: endpoints.clone(), api_key: a.api_key.clone(), model: model.clone(), mode: a.mode,
            max_tokens: a.max_tokens, temperature: a.temperature, seed: a.seed, timeout: Duration::from_secs(a.timeout_secs.max(1)),
        });
        let t0 = Instant::now();
        for i in 0..a.warmup {
            send(&client, &target, &entries[i % entries.len()], i, t0).await;
        }
        let entries = Arc::new(entries);
        let times = schedule(n, a.request_rate, a.burstiness, a.seed);
        let limit = Arc::new(tokio::sync::Semaphore::new(a.concurrency.unwrap_or(tokio::sync::Semaphore::MAX_PERMITS)));
        let bar = if std::io::stderr().is_terminal() { ProgressBar::new(n as u64) } else { ProgressBar::hidden() };
        bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} requests {elapsed_precise}").unwrap_or_else(|_| ProgressStyle::default_bar()));
        let t0 = Instant::now();
        let jobs: Vec<_> = times
            .iter()
            .enumerate()
            .map(|(i, &at)| {
                let (client, target, entries, limit, bar) = (client.clone(), target.clone(), entries.clone(), limit.clone(), bar.clone());
                let k = i + a.warmup;
                tokio::spawn(async move {
                    tokio::time::sleep_until((t0 + Duration::from_secs_f64(at)).into()).await;
                    let _permit = limit.acquire().await;
                    let m = send(&client, &target, &entries[k % entries.len()], k, t0).await;
                    bar.inc(1);
                    m
                })
            })
            .collect();
        let mut runs = Vec::with_capacity(n);
        for j in jobs {
            runs.push(j.await?);
        }
        bar.finish_and_clear();
        let duration = t0.elapsed().as_secs_f64();
        let summary = summarize(&runs, duration, a.slo_e2e_ms);
        let mut meta = Map::new();
        meta.insert("date".into(), json!(chrono_free_date()));
        meta.insert("backend".into(), json!("openai-chat"));
        meta.insert("endpoint_type".into(), json!(a.mode));
        meta.insert("label".into(), json!(a.label));
        meta.insert("model_id".into(), json!(model));
        if let [one] = a.base_url.as_slice() {
            meta.insert("base_url".into(), json!(one));
        } else {
            meta.insert("base_url".into(), json!(a.base_url));
            meta.insert("endpoints".into(), json!(by_endpoint(&runs, &a.base_url)));
        }
        meta.insert("replay_set".into(), json!(a.set.display().to_string()));
        meta.insert("num_prompts".into(), json!(n));
        meta.insert("warmup".into(), json!(a.warmup));
        meta.insert("request_rate".into(), a.request_rate.map_or(json!("inf"), |r| json!(r)));
        meta.insert("burstiness".into(), json!(a.burstiness));
        meta.insert("max_concurrency".into(), json!(a.concurrency));
        meta.insert("seed".into(), json!(a.seed));
        meta.insert("max_tokens".into(), json!(a.max_tokens));
        let result = summary_json(&summary, meta);
        println!("{}", serde_json::to_string_pretty(&result)?);
        eprintln!(
            "replay-bench: {} ok / {} failed in {:.1} s · e2e P50 {:.0} ms P95 {:.0} ms · TTFT P50 {:.0} ms · {:.1} output tok/s · attainment@{:.0}s {:.1}%",
            summary.completed, summary.failed, duration, summary.e2el_ms.p50.unwrap_or(f64::NAN), summary.e2el_ms.p95.unwrap_or(f64::NAN),
            summary.ttft_ms.p50.unwrap_or(f64::NAN), summary.output_throughput, a.slo_e2e_ms / 1000.0, summary.attainment * 100.0
        );
        if a.base_url.len() > 1 {
            for e in by_endpoint(&runs, &a.base_url) {
                eprintln!(
                    "replay-bench: {}: {} requests, {} failed{} · e2e P50 {:.0} ms P95 {:.0} ms",
                    e.url, e.requests, e.failed,
                    if e.first_error.is_empty() { String::new() } else { format!(" (first: {})", e.first_error) },
                    e.e2el_ms.p50.unwrap_or(f64::NAN), e.e2el_ms.p95.unwrap_or(f64::NAN)
                );
            }
        }
        if let Some(dir) = &a.out {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            std::fs::write(dir.join("summary.json"), serde_json::to_string_pretty(&result)? + "\n")?;
            write_csv(&dir.join("requests.csv"), &runs)?;
            let title = format!("{model} · {:?} mode · {n} requests", a.mode);
            std::fs::write(dir.join("cdf.svg"), cdf_svg(&runs, a.slo_e2e_ms, &title))?;
            eprintln!("replay-bench: wrote {}/{{summary.json,requests.csv,cdf.svg}}", dir.display());
        }
        anyhow::Ok(())
    })
}

/// `data[0].id` of GET /v1/models, as vLLM's benchmark picks the model.
async fn first_model(client: &reqwest::Client, base: &str, key: Option<&str>) -> Result<String> {
    let mut r = client.get(format!("{}/v1/models", base.trim_end_matches('/')));
    if let Some(k) = key {
        r = r.bearer_auth(k);
    }
    let url = format!("{}/v1/models", base.trim_end_matches('/'));
    let v: Value = r
        .send()
        .await
        .with_context(|| format!("GET {url}"))?
        .json()
        .await
        .with_context(|| format!("GET {url}: not JSON"))?;
    v["data"][0]["id"]
        .as_str()
        .map(str::to_string)
        .context("GET /v1/models listed no model; pass --model")
}

/// UTC `YYYYMMDD-HHMMSS`, vLLM's `date` field format, without a date crate.
fn chrono_free_date() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
