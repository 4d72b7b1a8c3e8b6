//! Loopback load test of the environment and reward services (issue 27): 200 episodes at once
//! through `hat sim serve` (reset, then the scripted teacher's moves via /oracle and /step until
//! done, faults on) and 10,000 OpenRLHF-protocol reward requests through `judge serve` (64 in
//! flight). Both services run in this process on ephemeral ports, with the HTTP client beside them,
//! so the peak RSS covers services and client. Prints episodes/s, requests/s, P50/P95 per call and
//! the error count; exits 1 on any error. Run: `make services-loadtest`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use hat::service::env::cli::EnvServeArgs;
use hat::service::http::Running;
use hat::service::reward::RewardServeArgs;
use serde_json::{json, Value};
use tokio::sync::Mutex;

const EPISODES: usize = 200;
const REWARD_REQUESTS: usize = 10_000;
const REWARD_CONCURRENCY: usize = 64;

#[derive(Parser)]
struct EnvCli {
    #[command(flatten)]
    args: EnvServeArgs,
}

#[derive(Parser)]
struct RewardCli {
    #[command(flatten)]
    args: RewardServeArgs,
}

#[derive(Default)]
struct Timings {
    calls: std::collections::BTreeMap<&'static str, Vec<f64>>,
    errors: usize,
}

async fn call(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    what: &'static str,
    t: &Mutex<Timings>,
) -> Option<Value> {
    let started = Instant::now();
    let r = client.post(url).json(body).send().await;
    let out = match r {
        Ok(r) if r.status().is_success() => r.json::<Value>().await.ok(),
        Ok(r) => {
            eprintln!(
                "{what}: HTTP {} {}",
                r.status(),
                r.text().await.unwrap_or_default()
            );
            None
        }
        Err(e) => {
            eprintln!("{what}: {e}");
            None
        }
    };
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let mut t = t.lock().await;
    t.calls.entry(what).or_default().push(ms);
    if out.is_none() {
        t.errors += 1;
    }
    out
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run());
}

async fn run() {
    let env_args = EnvCli::parse_from([
        "env",
        "--harness",
        "harness-samples/taolive",
        "--oracle",
        "--faults",
        "timeout=0.1,malformed=0.05,permission_denied=0.02",
        "--max-sessions",
        "256",
    ])
    .args;
    let env = Running::start(
        hat::service::env::router(env_args.state().unwrap(), &env_args.http()),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let judge_args = RewardCli::parse_from(["judge"]).args;
    let judge = Running::start(
        hat::service::reward::router(judge_args.state().unwrap(), &judge_args.http()),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let env_url = format!("http://{}", env.addr);
    let judge_url = format!("http://{}", judge.addr);
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let timings = Arc::new(Mutex::new(Timings::default()));

    // 200 episodes at once: all reset first, then all play.
    let started = Instant::now();
    let mut handles = Vec::new();
    for i in 0..EPISODES {
        let (client, url, t) = (client.clone(), env_url.clone(), timings.clone());
        handles.push(tokio::spawn(async move {
            let reset = json!({"task_seed": i, "harness": if i % 2 == 0 { json!({}) } else { json!({"variant_seed": i % 8}) },
                               "seed": i, "return_trajectory": true});
            let r = call(&client, &format!("{url}/reset"), &reset, "env /reset", &t).await?;
            let id = r["session_id"].clone();
            for _ in 0..20 {
                let o = call(&client, &format!("{url}/oracle"), &json!({"session_id": id}), "env /oracle", &t).await?;
                let s = call(&client, &format!("{url}/step"), &json!({"session_id": id, "text": o["text"]}), "env /step", &t).await?;
                if s["done"] == json!(true) {
                    return Some(s["trajectory"].clone());
                }
            }
            None
        }));
    }
    let mut records = Vec::new();
    for h in handles {
        if let Ok(Some(r)) = h.await {
            records.push(r);
        }
    }
    let env_secs = started.elapsed().as_secs_f64();
    let finished = records.len();

    // 10,000 reward requests, 64 in flight, each one record as OpenRLHF sends it.
    let started = Instant::now();
    let records = Arc::new(records);
    let mut workers = Vec::new();
    for w in 0..REWARD_CONCURRENCY {
        let (client, url, t, recs) = (
            client.clone(),
            judge_url.clone(),
            timings.clone(),
            records.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut k = w;
            while k < REWARD_REQUESTS {
                let rec = &recs[k % recs.len().max(1)];
                let body = json!({"query": ["q"], "prompts": ["q"], "labels": [rec.to_string()]});
                call(
                    &client,
                    &format!("{url}/reward"),
                    &body,
                    "judge /reward",
                    &t,
                )
                .await;
                k += REWARD_CONCURRENCY;
            }
        }));
    }
    for w in workers {
        let _ = w.await;
    }
    let reward_secs = started.elapsed().as_secs_f64();

    let mut t = timings.lock().await;
    println!(
        "services load test (loopback, in process, {} cores)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "  env:    {finished}/{EPISODES} episodes at once in {env_secs:.2} s = {:.1} episodes/s",
        finished as f64 / env_secs
    );
    println!(
        "  reward: {REWARD_REQUESTS} requests ({REWARD_CONCURRENCY} in flight) in {reward_secs:.2} s = {:.0} requests/s",
        REWARD_REQUESTS as f64 / reward_secs
    );
    for (what, v) in t.calls.iter_mut() {
        let n = v.len();
        let (p50, p95) = (pct(v, 0.5), pct(v, 0.95));
        println!("  {what:<14} n={n:<6} P50 {p50:>7.2} ms  P95 {p95:>7.2} ms");
    }
    println!("  errors: {}", t.errors);
    println!("  peak RSS (services + client): {:.0} MiB", peak_rss_mb());
    let failed = t.errors > 0 || finished != EPISODES;
    drop(t);
    let _ = env.shutdown().await;
    let _ = judge.shutdown().await;
    if failed {
        std::process::exit(1);
    }
}
