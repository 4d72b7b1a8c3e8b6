//! Several `--endpoint`s: `teacher-distill collect` and `replay-bench run` against real HTTP servers on
//! loopback. Each fake server answers chat completions (a tool call first, then a text reply, so an
//! episode takes several requests; an SSE stream when asked to stream) and counts, on its side, the
//! requests of each episode. Checked: every episode's turns reach one server, the load splits, a slow
//! server is sent less, a dead one is named in the error.

use std::collections::{BTreeMap, HashMap};
use std::net::TcpListener as StdListener;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use hat::sim::catalog::{Catalog, Split};
use hat::sim::tasks::{generate, TaskConfig};
use serde_json::{json, Value};

/// What one fake server saw.
#[derive(Default)]
struct Seen {
    requests: AtomicUsize,
    /// Episode (its first user message) → requests.
    episodes: Mutex<HashMap<String, usize>>,
}

struct Fake {
    delay: Duration,
    seen: Seen,
}

/// A fake server, its URL root and its runtime (the server stops when the runtime is dropped).
struct Server {
    url: String,
    fake: Arc<Fake>,
    _rt: tokio::runtime::Runtime,
}

impl Server {
    fn start(delay: Duration) -> Server {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let fake = Arc::new(Fake {
            delay,
            seen: Seen::default(),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route(
                "/v1/models",
                get(|| async { Json(json!({"data": [{"id": "fake"}]})) }),
            )
            .with_state(fake.clone());
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        rt.spawn(async move { axum::serve(listener, app).await });
        Server { url, fake, _rt: rt }
    }

    fn requests(&self) -> usize {
        self.fake.seen.requests.load(Ordering::SeqCst)
    }

    fn episodes(&self) -> HashMap<String, usize> {
        self.fake.seen.episodes.lock().unwrap().clone()
    }
}

fn first_user(body: &Value) -> String {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

async fn chat(State(f): State<Arc<Fake>>, Json(body): Json<Value>) -> Response {
    f.seen.requests.fetch_add(1, Ordering::SeqCst);
    *f.seen
        .episodes
        .lock()
        .unwrap()
        .entry(first_user(&body))
        .or_default() += 1;
    tokio::time::sleep(f.delay).await;
    if body["stream"] == true {
        let chunks = [
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 1}}),
        ];
        let mut text: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        text.push_str("data: [DONE]\n\n");
        return ([("content-type", "text/event-stream")], text).into_response();
    }
    let answered = body["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["role"] == "assistant"));
    let message = match body["tools"][0]["function"]["name"].as_str() {
        Some(tool) if !answered => json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": tool, "arguments": "{}"}}]}),
        _ => {
            json!({"role": "assistant", "content": "Thanks for asking, the host will answer soon."})
        }
    };
    Json(json!({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}))
        .into_response()
}

/// A loopback URL nothing listens on.
fn dead_url() -> String {
    let l = StdListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}")
}

/// `n` task records whose first viewer messages all differ (a server tells episodes apart by it).
fn write_tasks(path: &Path, n: usize) {
    let catalog = Catalog::generate(7, 40);
    let mut seen = std::collections::HashSet::new();
    let tasks: Vec<_> = generate(&catalog, &TaskConfig::new(Split::Train, 11), n * 3)
        .unwrap()
        .into_iter()
        .filter(|t| {
            let first = t
                .messages
                .iter()
                .find(|m| m.role == hat::record::Role::User);
            seen.insert(first.map(|m| m.text_content()).unwrap_or_default())
        })
        .take(n)
        .collect();
    assert_eq!(tasks.len(), n);
    let text: String = tasks
        .iter()
        .map(|t| serde_json::to_string(t).unwrap() + "\n")
        .collect();
    std::fs::write(path, text).unwrap();
}

struct Collected {
    ok: bool,
    stderr: String,
    summary: Value,
}

impl Collected {
    /// Episodes played (a variant that masks a skill the task needs is not played).
    fn played(&self) -> usize {
        let masked = self.summary["dropped"]["variant_masks_needed_skill"]
            .as_u64()
            .unwrap_or(0);
        (self.summary["episodes"].as_u64().unwrap() - masked) as usize
    }
}

fn collect(dir: &Path, tasks: &Path, urls: &[String], concurrency: usize) -> Collected {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_teacher-distill"));
    cmd.args(["collect", "--harness", "harness-samples/taolive", "--tasks"])
        .arg(tasks)
        .args(["--variants", "1", "--original-share", "0.5"])
        .args([
            "--teacher-model",
            "fake",
            "--retries",
            "0",
            "--request-timeout",
            "5",
        ])
        .args(["--min-accuracy", "0", "--min-effectiveness", "0"])
        .args(["--concurrency", &concurrency.to_string()])
        .arg("--output")
        .arg(dir.join("out.jsonl"))
        .arg("--summary")
        .arg(dir.join("summary.json"));
    for (i, u) in urls.iter().enumerate() {
        // Both spellings of the flag mix.
        cmd.arg(if i % 2 == 0 {
            "--teacher-url"
        } else {
            "--endpoint"
        })
        .arg(format!("{u}/v1"));
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary = std::fs::read_to_string(dir.join("summary.json"))
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(Value::Null);
    Collected {
        ok: out.status.success(),
        stderr,
        summary,
    }
}

/// No episode reached two servers; returns episodes per server.
fn assert_sticky(servers: &[&Server]) -> Vec<usize> {
    let mut owner: BTreeMap<String, usize> = BTreeMap::new();
    for (i, s) in servers.iter().enumerate() {
        for key in s.episodes().keys() {
            if let Some(j) = owner.insert(key.clone(), i) {
                panic!("episode {key} reached servers {j} and {i}");
            }
        }
    }
    servers.iter().map(|s| s.episodes().len()).collect()
}

#[test]
fn collect_keeps_each_episode_on_one_endpoint_and_splits_the_episodes() {
    let (a, b) = (
        Server::start(Duration::from_millis(20)),
        Server::start(Duration::from_millis(20)),
    );
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks.jsonl");
    let n = 32;
    write_tasks(&tasks, n);
    let c = collect(dir.path(), &tasks, &[a.url.clone(), b.url.clone()], 4);
    assert!(c.ok, "{}", c.stderr);
    assert_eq!(c.summary["episodes"], n, "{}", c.summary);
    let per_server = assert_sticky(&[&a, &b]);
    let played = c.played();
    eprintln!(
        "equal servers: episodes {per_server:?}, requests {} / {}",
        a.requests(),
        b.requests()
    );
    assert!(played >= n / 2, "{}", c.summary);
    assert_eq!(per_server.iter().sum::<usize>(), played, "{per_server:?}");
    // Every episode took a tool call and a reply, at least.
    assert!(a.requests() + b.requests() >= 2 * played);
    // Equal servers: neither gets under a quarter of the episodes.
    for (i, &e) in per_server.iter().enumerate() {
        assert!(
            e >= played / 4,
            "server {i} got {e} of {played} episodes: {per_server:?}"
        );
    }
    // The summary counts what the servers saw.
    let counted = &c.summary["requests_per_endpoint"];
    assert_eq!(
        counted[format!("{}/v1/chat/completions", a.url)],
        a.requests(),
        "{counted}"
    );
    assert_eq!(
        counted[format!("{}/v1/chat/completions", b.url)],
        b.requests(),
        "{counted}"
    );
    assert!(
        c.stderr.contains(&format!("requests to {}/v1", a.url)),
        "{}",
        c.stderr
    );
}

#[test]
fn collect_sends_fewer_episodes_to_a_slow_endpoint() {
    let fast = Server::start(Duration::ZERO);
    let slow = Server::start(Duration::from_millis(500));
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks.jsonl");
    let n = 24;
    write_tasks(&tasks, n);
    // The slow one first: ties go to the earlier endpoint, so it is not favoured by the order.
    let c = collect(dir.path(), &tasks, &[slow.url.clone(), fast.url.clone()], 4);
    assert!(c.ok, "{}", c.stderr);
    let per_server = assert_sticky(&[&slow, &fast]);
    eprintln!(
        "slow, fast: episodes {per_server:?}, requests {} / {}",
        slow.requests(),
        fast.requests()
    );
    assert_eq!(per_server.iter().sum::<usize>(), c.played());
    assert!(
        per_server[1] >= 2 * per_server[0],
        "fast {} vs slow {} episodes",
        per_server[1],
        per_server[0]
    );
    assert!(fast.requests() >= 2 * slow.requests());
}

#[test]
fn collect_names_a_dead_endpoint_and_plays_on_the_live_one() {
    let live = Server::start(Duration::ZERO);
    let dead = dead_url();
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks.jsonl");
    write_tasks(&tasks, 8);
    let c = collect(dir.path(), &tasks, &[dead.clone(), live.url.clone()], 2);
    assert!(c.ok, "{}", c.stderr);
    assert!(
        c.stderr
            .contains(&format!("the teacher: {dead}/v1/chat/completions failed")),
        "{}",
        c.stderr
    );
    let failed = c.summary["dropped"]["policy_error"].as_u64().unwrap_or(0);
    assert!(failed >= 1, "{}", c.summary);
    assert_eq!(
        live.episodes().len() + failed as usize,
        c.played(),
        "{}",
        c.summary
    );
}

#[test]
fn one_teacher_url_works_as_before() {
    let only = Server::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks.jsonl");
    write_tasks(&tasks, 4);
    let c = collect(dir.path(), &tasks, std::slice::from_ref(&only.url), 2);
    assert!(c.ok, "{}", c.stderr);
    assert_eq!(only.episodes().len(), c.played());
    assert!(
        c.summary.get("requests_per_endpoint").is_none(),
        "{}",
        c.summary
    );
    // The same endpoint twice is a mistake, said before anything runs.
    let c = collect(dir.path(), &tasks, &[only.url.clone(), only.url.clone()], 2);
    assert!(!c.ok && c.stderr.contains("given twice"), "{}", c.stderr);
}

fn replay(dir: &Path, urls: &[String], prompts: usize) -> (bool, String, Value, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_replay-bench"));
    cmd.args([
        "run",
        "--set",
        "testdata/replay/default.jsonl",
        "--model",
        "fake",
    ])
    .args([
        "--concurrency",
        "8",
        "--max-tokens",
        "8",
        "--timeout-secs",
        "5",
    ])
    .args(["--num-prompts", &prompts.to_string()])
    .arg("--out")
    .arg(dir);
    for (i, u) in urls.iter().enumerate() {
        cmd.arg(if i % 2 == 0 {
            "--base-url"
        } else {
            "--endpoint"
        })
        .arg(u);
    }
    let out = cmd.output().unwrap();
    let summary = std::fs::read_to_string(dir.join("summary.json"))
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(Value::Null);
    let csv = std::fs::read_to_string(dir.join("requests.csv")).unwrap_or_default();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        summary,
        csv,
    )
}

#[test]
fn replay_bench_balances_and_keeps_repeats_of_a_line_on_one_endpoint() {
    let (a, b) = (
        Server::start(Duration::from_millis(10)),
        Server::start(Duration::from_millis(10)),
    );
    let dir = tempfile::tempdir().unwrap();
    // The committed set has 110 lines: 220 requests send each line twice.
    let (ok, stderr, summary, csv) = replay(dir.path(), &[a.url.clone(), b.url.clone()], 220);
    assert!(ok, "{stderr}");
    assert_eq!(summary["completed"], 220, "{summary}");
    let shares = summary["endpoints"]
        .as_array()
        .expect("per-endpoint shares");
    assert_eq!(shares.len(), 2);
    assert_eq!(shares[0]["url"], a.url.as_str());
    assert_eq!(shares[0]["requests"], a.requests(), "{summary}");
    assert_eq!(shares[1]["requests"], b.requests(), "{summary}");
    eprintln!("replay: requests {} / {}", a.requests(), b.requests());
    assert!(
        a.requests() >= 55 && b.requests() >= 55,
        "{} / {}",
        a.requests(),
        b.requests()
    );
    // requests.csv: id, …, endpoint; every line's two requests went to one server.
    let mut rows = csv.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    assert_eq!(header.first(), Some(&"id"));
    assert_eq!(header.last(), Some(&"endpoint"));
    let mut by_id: HashMap<String, Vec<String>> = HashMap::new();
    for row in rows {
        let cells: Vec<&str> = row.split(',').collect();
        by_id
            .entry(cells[0].to_string())
            .or_default()
            .push(cells.last().unwrap().to_string());
    }
    assert_eq!(by_id.len(), 110);
    for (id, eps) in &by_id {
        assert_eq!(eps.len(), 2, "{id}");
        assert_eq!(eps[0], eps[1], "{id} went to both servers");
    }
    assert!(stderr.contains(&format!("{}: ", b.url)), "{stderr}");
}

#[test]
fn replay_bench_names_a_dead_endpoint() {
    let live = Server::start(Duration::ZERO);
    let dead = dead_url();
    let dir = tempfile::tempdir().unwrap();
    let (_, stderr, summary, _) = replay(dir.path(), &[live.url.clone(), dead.clone()], 20);
    let shares = summary["endpoints"]
        .as_array()
        .expect("per-endpoint shares");
    assert_eq!(shares[1]["url"], dead.as_str());
    assert_eq!(shares[1]["requests"], shares[1]["failed"], "{summary}");
    assert!(shares[1]["failed"].as_u64().unwrap() >= 1, "{summary}");
    assert_eq!(shares[0]["failed"], 0, "{summary}");
    assert_eq!(shares[0]["requests"], live.requests());
    assert!(
        stderr.contains(&format!("{dead}: ")) && stderr.contains("failed (first: "),
        "{stderr}"
    );
}

#[test]
fn help_says_what_several_endpoints_do() {
    for (exe, sub) in [
        (env!("CARGO_BIN_EXE_teacher-distill"), "collect"),
        (env!("CARGO_BIN_EXE_replay-bench"), "run"),
    ] {
        let out = Command::new(exe).args([sub, "--help"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("--endpoint"), "{exe} {sub}: {text}");
        assert!(
            text.contains("fewest requests in flight"),
            "{exe} {sub}: {text}"
        );
    }
}
