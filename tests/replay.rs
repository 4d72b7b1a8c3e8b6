//! replay-bench: statistics on hand-computed data, seeded arrivals, the committed replay set, and the
//! client against the real server (plain streaming, agent mode, and a recorded turn in script mode).

mod serve_support;

use std::time::{Duration, Instant};

use hat::harness::Harness;
use hat::policy::endpoints::EndpointPool;
use hat::record::Intent;
use hat::replay::arrivals::schedule;
use hat::replay::client::{send, Mode, Target};
use hat::replay::report::{cdf_svg, compare, summary_json};
use hat::replay::set::{self, quotas};
use hat::replay::stats::{max_concurrency, percentile, summarize, Measured};
use hat::serve::server::HttpLimits;
use hat::sim::catalog::Catalog;
use hat::sim::tasks::Mix;
use serde_json::{json, Map};

const SET: &str = "testdata/replay/default.jsonl";

#[test]
fn percentiles_interpolate_like_numpy() {
    let v = [1.0, 2.0, 3.0, 4.0];
    // numpy.percentile([1, 2, 3, 4], [0, 50, 95, 99, 100])
    assert_eq!(percentile(&v, 0.0), Some(1.0));
    assert_eq!(percentile(&v, 50.0), Some(2.5));
    assert!((percentile(&v, 95.0).unwrap() - 3.85).abs() < 1e-12);
    assert!((percentile(&v, 99.0).unwrap() - 3.97).abs() < 1e-12);
    assert_eq!(percentile(&v, 100.0), Some(4.0));
    assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
    assert_eq!(percentile(&[], 50.0), None);
}

fn run(start_s: f64, ok: bool, e2e_ms: f64, ttft_ms: f64, out: u64) -> Measured {
    Measured {
        start_s,
        ok,
        e2e_ms,
        ttft_ms: ok.then_some(ttft_ms),
        output_tokens: out,
        input_tokens: 5,
        ..Measured::default()
    }
}

#[test]
fn summary_counts_failures_as_attainment_misses() {
    let runs = vec![
        run(0.0, true, 1000.0, 100.0, 10), // tpot (1000-100)/9 = 100
        run(0.5, true, 20000.0, 200.0, 2), // tpot 19800, misses the 15 s SLO
        run(0.6, false, 500.0, 0.0, 0),    // failed
        run(2.0, true, 3000.0, 300.0, 1),  // one token: no tpot
    ];
    let s = summarize(&runs, 10.0, 15000.0);
    assert_eq!((s.completed, s.failed), (3, 1));
    assert_eq!(s.total_output_tokens, 13);
    assert_eq!(s.total_input_tokens, 15);
    assert!((s.request_throughput - 0.3).abs() < 1e-12);
    assert!((s.request_goodput - 0.2).abs() < 1e-12);
    assert!((s.output_throughput - 1.3).abs() < 1e-12);
    assert_eq!(s.execution_success_rate, 0.75);
    assert_eq!(s.attainment, 0.5);
    assert_eq!(s.tpot_ms.mean, Some(9950.0));
    assert_eq!(s.tpot_ms.median, Some(9950.0));
    assert_eq!(s.ttft_ms.mean, Some(200.0));
    assert_eq!(s.e2el_ms.p50, Some(3000.0));
    assert_eq!(s.max_concurrent_requests, 3);
    assert_eq!(s.task_success_rate, None);
    let j = summary_json(&s, Map::new());
    assert_eq!(j["mean_tpot_ms"], 9950.0);
    assert_eq!(
        j["p99_e2el_ms"],
        percentile(&[1000.0, 3000.0, 20000.0], 99.0).unwrap()
    );
    assert_eq!(j["attainment"], 0.5);
    let svg = cdf_svg(&runs, 15000.0, "t");
    assert!(svg.starts_with("<svg") && svg.contains("<polyline") && svg.contains("SLO 15 s"));
    let table = compare(&j, &json!({"mean_tpot_ms": 4975.0}), "a", "b");
    assert!(table.contains("mean_tpot_ms") && table.contains("-50.0%"));
}

/// A run whose requests all finish in well under a second is plotted on an axis that spans its
/// data (here 0–0.5 s), with the 15 s SLO named at the edge instead of stretching the axis.
#[test]
fn cdf_axis_scales_to_the_data() {
    let runs = vec![
        run(0.0, true, 300.0, 40.0, 5),
        run(0.5, true, 450.0, 60.0, 5),
    ];
    let svg = cdf_svg(&runs, 15000.0, "fast");
    assert!(svg.contains(">0.5</text>"), "top tick at 0.5 s: {svg}");
    assert!(!svg.contains(">15</text>"));
    assert!(svg.contains("SLO 15 s (beyond the axis)"));
    // The slowest request lands near the right end of the plot, not at the left edge.
    let e2e = svg
        .lines()
        .find(|l| l.contains("steelblue") && l.contains("polyline"))
        .unwrap();
    let last_x: f64 = e2e
        .rsplit("points=\"")
        .next()
        .unwrap()
        .split(' ')
        .last()
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(last_x > 500.0, "slowest point at x={last_x}");
}

#[test]
fn back_to_back_requests_do_not_overlap() {
    let runs = vec![
        run(0.0, true, 1000.0, 1.0, 1),
        run(1.0, true, 1000.0, 1.0, 1),
    ];
    assert_eq!(max_concurrency(&runs), 1);
}

fn cv(gaps: &[f64]) -> f64 {
    let n = gaps.len() as f64;
    let mean = gaps.iter().sum::<f64>() / n;
    (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n).sqrt() / mean
}

#[test]
fn arrivals_are_seeded_and_shaped_by_burstiness() {
    let a = schedule(50, Some(4.0), 1.0, 7);
    assert_eq!(a, schedule(50, Some(4.0), 1.0, 7));
    assert_ne!(a, schedule(50, Some(4.0), 1.0, 8));
    assert!(a.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(a[0], 0.0);
    assert!(
        (a[49] - 50.0 / 4.0).abs() < 1e-9,
        "the last send lands at n / rate"
    );
    assert_eq!(schedule(3, None, 1.0, 1), vec![0.0; 3]);
    assert_eq!(
        schedule(3, Some(2.0), f64::INFINITY, 1),
        vec![0.0, 0.5, 1.0]
    );
    // Gamma(k) gaps have a coefficient of variation of 1/sqrt(k): 1 for Poisson.
    for (k, expected) in [(1.0, 1.0), (0.25, 2.0), (4.0, 0.5)] {
        let t = schedule(40_000, Some(10.0), k, 3);
        let gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        let c = cv(&gaps);
        assert!(
            (c - expected).abs() < 0.06 * expected,
            "burstiness {k}: cv {c}"
        );
    }
}

#[test]
fn quotas_follow_the_paper_mix_by_largest_remainder() {
    // 46:19:16:7:4:2:2:0.8 of 110, floors 52,21,18,7,4,2,2,0 plus the four largest remainders.
    let q: Vec<usize> = quotas(&Mix::default(), 110)
        .into_iter()
        .map(|(_, n)| n)
        .collect();
    assert_eq!(q, vec![52, 22, 18, 8, 5, 2, 2, 1]);
}

#[test]
fn committed_replay_set_is_current_and_complete() {
    let entries = set::read(SET.as_ref()).unwrap();
    assert_eq!(entries.len(), 110);
    for (intent, n) in quotas(&Mix::default(), 110) {
        let got = entries
            .iter()
            .filter(|e| e.record.task.as_ref().unwrap().intent == intent)
            .count();
        assert_eq!(got, n, "{intent}");
    }
    assert!(entries
        .iter()
        .any(|e| e.record.task.as_ref().unwrap().intent == Intent::SilentRefusal));
    for e in &entries {
        assert_eq!(e.request["messages"][0]["role"], "system");
        assert!(!e.request["tools"].as_array().unwrap().is_empty());
        assert!(e.record.task.as_ref().unwrap().expected.is_some());
    }
    // Regenerating gives the committed file byte for byte.
    let harness = Harness::load("harness-samples/taolive").unwrap();
    let catalog: Catalog =
        serde_json::from_str(&std::fs::read_to_string("testdata/catalog.json").unwrap()).unwrap();
    let fresh = set::make_set(&harness, &catalog, &Mix::default(), 110, 1).unwrap();
    let text: String = fresh
        .iter()
        .map(|e| serde_json::to_string(&e.to_json().unwrap()).unwrap() + "\n")
        .collect();
    assert!(
        text == std::fs::read_to_string(SET).unwrap(),
        "run `make replay-set` to regenerate {SET}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn client_measures_plain_and_agent_requests_against_the_server() {
    let (server, _app, base) = serve_support::start_with(
        serve_support::options(),
        HttpLimits {
            max_body_bytes: 1 << 20,
        },
        true,
    )
    .await;
    let entries = set::read(SET.as_ref()).unwrap();
    let client = reqwest::Client::new();
    let mut target = Target {
        endpoints: std::sync::Arc::new(EndpointPool::new(vec![base.clone()]).unwrap()),
        api_key: None,
        model: serve_support::MODEL.into(),
        mode: Mode::Plain,
        max_tokens: 8,
        temperature: 0.0,
        seed: 0,
        timeout: Duration::from_secs(60),
    };
    let t0 = Instant::now();
    let m = send(&client, &target, &entries[0], 0, t0).await;
    assert!(m.ok, "{}", m.error);
    assert_eq!(m.http_status, 200);
    assert!(m.output_tokens >= 1 && m.output_tokens <= 8);
    assert!(
        m.input_tokens > 100,
        "the rendered system prompt is in the request"
    );
    let ttft = m.ttft_ms.expect("streamed content has a first token");
    assert!(ttft > 0.0 && ttft <= m.e2e_ms);
    assert!(m.task_success.is_some(), "the replay task has ground truth");
    target.mode = Mode::Agent;
    let a = send(&client, &target, &entries[1], 1, t0).await;
    assert!(a.ok, "{}", a.error);
    assert!(a.ttft_ms.is_none() && a.output_tokens >= 1);
    assert!(a.task_success.is_some());
    // A wrong model name is a failed request, not a crash.
    target.mode = Mode::Plain;
    target.model = "nope".into();
    let bad = send(&client, &target, &entries[2], 2, t0).await;
    assert!(!bad.ok && bad.http_status == 404);
    server.shutdown().await.unwrap();
}

/// Script mode: a recorded agent turn (a tool call with null content, as a teacher writes it, its
/// result, the reply) plays as two streamed
/// calls, each generating exactly its recorded message's length in tokens (`ignore_eos`), whatever
/// the random weights would have said.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn script_mode_replays_a_recorded_turn_call_by_call() {
    let (server, _app, base) = serve_support::start().await;
    let first = &set::read(SET.as_ref()).unwrap()[0];
    let mut messages = first.request["messages"].as_array().unwrap().clone();
    let asked = messages.len();
    messages.extend([
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_0", "type": "function",
            "function": {"name": "get_product_detail", "arguments": "{\"product_id\":\"p005\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "call_0", "content": "{\"product_id\":\"p005\",\"price\":89}"}),
        json!({"role": "assistant", "content": "The daily mixed nuts gift box is ¥89 right now, grab it!"}),
    ]);
    let record = json!({"id": "recorded", "task": first.record.task, "messages": messages,
                        "tools": first.request["tools"]});
    let mut entry = set::Entry::from_json(record).unwrap();
    assert!(entry.request.is_null(), "a recorded turn needs no request");
    let dir = serve_support::tokenizer_dir();
    let tokenizer = hat::tokenizer::load(dir).unwrap();
    let template = hat::chat::ChatTemplate::from_model_dir(dir).unwrap();
    entry.script = set::script(&entry, &tokenizer, &template).unwrap();
    let at: Vec<usize> = entry.script.iter().map(|c| c.messages).collect();
    assert_eq!(
        at,
        [asked, asked + 2],
        "one call before each assistant message"
    );
    let reply_words = tokenizer
        .encode(
            "The daily mixed nuts gift box is ¥89 right now, grab it!",
            false,
        )
        .unwrap()
        .len();
    assert!(
        entry.script[1].max_tokens > reply_words,
        "the reply and its end token"
    );
    let client = reqwest::Client::new();
    let target = Target {
        endpoints: std::sync::Arc::new(EndpointPool::new(vec![base.clone()]).unwrap()),
        api_key: None,
        model: serve_support::MODEL.into(),
        mode: Mode::Script,
        max_tokens: 8,
        temperature: 0.0,
        seed: 0,
        timeout: Duration::from_secs(60),
    };
    let m = send(&client, &target, &entry, 0, Instant::now()).await;
    assert!(m.ok, "{}", m.error);
    let recorded: usize = entry.script.iter().map(|c| c.max_tokens).sum();
    assert_eq!(
        m.output_tokens, recorded as u64,
        "each call generated its message's length"
    );
    assert!(m.input_tokens > 200, "two prompts with the system prompt");
    assert!(m.ttft_ms.is_some_and(|t| t <= m.e2e_ms));
    assert!(
        m.task_success.is_none(),
        "the replies are the record's, not judged"
    );
    server.shutdown().await.unwrap();
}
