//! The environment service (`hat sim serve`) and the reward service (`judge serve`) over real HTTP
//! on ephemeral loopback ports, started in process from their command lines: episodes played through
//! the service against the same episodes played in process, determinism, every kind of bad request,
//! and the reward protocols.

use std::time::Duration;

use clap::Parser;
use hat::agent::{Agent, SimEnv};
use hat::hsa::variant::load_harness;
use hat::judge::verifiable::TokenCounter;
use hat::policy::oracle::Oracle;
use hat::record::Trajectory;
use hat::service::env::cli::EnvServeArgs;
use hat::service::http::Running;
use hat::service::reward::RewardServeArgs;
use hat::service::rewards::Rewards;
use hat::sim::catalog::Catalog;
use hat::sim::faults::FaultPlan;
use hat::sim::tasks::{self, TaskConfig};
use serde_json::{json, Value};

const HARNESS: &str = "harness-samples/taolive";

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

/// The environment service with `extra` flags, on an ephemeral port.
async fn start_env(extra: &[&str]) -> (Running, String) {
    let mut argv = vec!["env", "--harness", HARNESS, "--oracle"];
    argv.extend_from_slice(extra);
    let args = EnvCli::parse_from(argv).args;
    let env = args.state().unwrap();
    let router = hat::service::env::router(env, &args.http());
    let running = Running::start(router, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let base = format!("http://{}", running.addr);
    (running, base)
}

async fn start_judge(extra: &[&str]) -> (Running, String) {
    let mut argv = vec!["judge"];
    argv.extend_from_slice(extra);
    let args = RewardCli::parse_from(argv).args;
    let router = hat::service::reward::router(args.state().unwrap(), &args.http());
    let running = Running::start(router, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let base = format!("http://{}", running.addr);
    (running, base)
}

async fn post(base: &str, path: &str, body: &Value) -> (u16, Value) {
    post_raw(base, path, body.to_string()).await
}

async fn post_raw(base: &str, path: &str, body: String) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| json!({"raw": text})),
    )
}

/// Tasks of the default catalog (what `--catalog-seed 7 --products 40` generates).
fn tasks(n: usize, seed: u64) -> Vec<Trajectory> {
    let catalog = Catalog::generate(7, 40);
    let (h, _) = load_harness(HARNESS.as_ref()).unwrap();
    let mut cfg = TaskConfig::new(hat::sim::catalog::Split::Train, seed);
    hat::sim::served::Served::of(&h).apply(&mut cfg);
    tasks::generate(&catalog, &cfg, n).unwrap()
}

/// The oracle's episode of `task` played in process, judged: what `hat sim rollout | judge score`
/// writes.
fn in_process(task: &Trajectory, faults: &str, seed: u64) -> Rewards {
    let mut t = played(task, faults, seed);
    Rewards::judge(&mut t, &TokenCounter::Approximate)
}

/// The oracle's episode of `task` played in process, not judged.
fn played(task: &Trajectory, faults: &str, seed: u64) -> Trajectory {
    let (h, names) = load_harness(HARNESS.as_ref()).unwrap();
    let agent = Agent::new(&h, names.clone()).unwrap();
    let oracle = Oracle::new(&h, names);
    let catalog = Catalog::generate(7, 40);
    let plan: FaultPlan = faults.parse().unwrap();
    let env = SimEnv {
        catalog: &catalog,
        faults: &plan,
        seed,
    };
    agent.run(&oracle, task, &env).unwrap()
}

/// Plays the session's episode with the oracle through `/oracle` and `/step`, sending each move as
/// `how` (`text` or `message`); the final step's answer.
async fn play(base: &str, session: &str, how: &str) -> Value {
    for _ in 0..20 {
        let (s, o) = post(base, "/oracle", &json!({"session_id": session})).await;
        assert_eq!(s, 200, "{o}");
        let mv = match how {
            "text" => json!({"session_id": session, "text": o["text"]}),
            _ => json!({"session_id": session, "message": o["message"]}),
        };
        let (s, r) = post(base, "/step", &mv).await;
        assert_eq!(s, 200, "{r}");
        if r["done"] == json!(true) {
            return r;
        }
        assert!(
            r["feedback_text"]
                .as_str()
                .unwrap()
                .contains("<|im_start|>"),
            "{r}"
        );
    }
    panic!("the episode did not end in 20 moves");
}

fn rewards_of(r: &Rewards) -> Value {
    json!({"reward": r.reward, "score": r.score, "rewards": r.dimensions_json(), "success": r.success})
}

fn rewards_in(answer: &Value) -> Value {
    json!({"reward": answer["reward"], "score": answer["score"], "rewards": answer["rewards"],
           "success": answer["success"]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn episodes_through_the_service_match_the_same_policy_in_process() {
    let (_env, base) = start_env(&[]).await;
    let faults = "timeout=0.2,malformed=0.1";
    let mut successes = 0;
    for (k, task) in tasks(8, 11).iter().enumerate() {
        let want = rewards_of(&in_process(task, faults, 5));
        successes += usize::from(want["success"] == json!(true));
        for how in ["text", "message"] {
            let (s, reset) = post(
                &base,
                "/reset",
                &json!({"task": task, "faults": faults, "seed": 5}),
            )
            .await;
            assert_eq!(s, 200, "{reset}");
            assert!(reset["prompt_text"]
                .as_str()
                .unwrap()
                .ends_with("<|im_start|>assistant\n"));
            assert!(!reset["tools"].as_array().unwrap().is_empty());
            let done = play(&base, reset["session_id"].as_str().unwrap(), how).await;
            assert_eq!(
                rewards_in(&done),
                want,
                "task {k} ({}) played as {how}",
                task.id
            );
        }
    }
    // The comparison means something only if the oracle mostly passes.
    assert!(successes >= 6, "{successes}/8 oracle episodes passed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_reset_and_moves_give_the_same_episode() {
    let (_env, base) = start_env(&[]).await;
    let reset = json!({"task_seed": 4, "harness": {"variant_seed": 9, "pool": "train"},
                       "faults": "timeout=0.3,permission_denied=0.1", "seed": 2,
                       "return_trajectory": true});
    let mut runs = Vec::new();
    for _ in 0..2 {
        let (s, r) = post(&base, "/reset", &reset).await;
        assert_eq!(s, 200, "{r}");
        assert_eq!(r["harness"]["setting"], json!("variant-9-train"));
        let done = play(&base, r["session_id"].as_str().unwrap(), "text").await;
        runs.push((
            r["prompt_text"].clone(),
            r["tools"].clone(),
            done["trajectory"]["messages"].clone(),
            rewards_in(&done),
        ));
    }
    assert_eq!(runs[0], runs[1]);
    // A variant renames things: its tools differ from the original's.
    let (_, orig) = post(&base, "/reset", &json!({"task_seed": 4})).await;
    assert_ne!(orig["tools"], runs[0].1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_4xx_and_leave_other_sessions_alone() {
    let (_env, base) = start_env(&["--max-body-bytes", "20000", "--max-sessions", "3"]).await;
    let task = &tasks(1, 3)[0];
    let open = |_: ()| json!({"task": task, "seed": 1});
    let (_, a) = post(&base, "/reset", &open(())).await;
    let (_, b) = post(&base, "/reset", &open(())).await;
    let a_id = a["session_id"].as_str().unwrap().to_string();
    let b_id = b["session_id"].as_str().unwrap().to_string();

    let expect = |status: u16, body: &Value, want: u16, says: &str| {
        assert_eq!(status, want, "{body}");
        let msg = body["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains(says), "{msg:?} should mention {says:?}");
    };
    let (s, r) = post(
        &base,
        "/step",
        &json!({"session_id": "ep-nope", "text": "hi"}),
    )
    .await;
    expect(s, &r, 404, "unknown session");
    let (s, r) = post_raw(&base, "/step", "{not json".into()).await;
    expect(s, &r, 400, "not a step request");
    let (s, r) = post(
        &base,
        "/step",
        &json!({"session_id": a_id, "message": {"role": "assistant", "content": 7}}),
    )
    .await;
    expect(s, &r, 400, "not an OpenAI chat message");
    let (s, r) = post(
        &base,
        "/step",
        &json!({"session_id": a_id, "message": {"role": "user", "content": "x"}}),
    )
    .await;
    expect(s, &r, 400, "must be \"assistant\"");
    let bad_call = json!({"session_id": a_id, "message": {"role": "assistant", "content": "",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search_products", "arguments": "{\"q\": "}}]}});
    let (s, r) = post(&base, "/step", &bad_call).await;
    expect(s, &r, 400, "arguments must be a JSON object");
    assert_eq!(
        r["error"]["param"],
        json!("message.tool_calls[0].function.arguments")
    );
    let (s, r) = post(
        &base,
        "/step",
        &json!({"session_id": a_id, "text": "x", "message": {}}),
    )
    .await;
    expect(s, &r, 400, "exactly one of");
    let (s, r) = post(
        &base,
        "/step",
        &json!({"session_id": a_id, "token_ids": [1, 2]}),
    )
    .await;
    expect(s, &r, 400, "no tokenizer");
    let big = json!({"session_id": a_id, "text": "x".repeat(30_000)});
    let (s, r) = post(&base, "/step", &big).await;
    assert_eq!(s, 413, "{r}");
    let (s, r) = post(&base, "/reset", &json!({"task_id": "nope"})).await;
    expect(s, &r, 400, "no task file");
    let (s, r) = post(
        &base,
        "/reset",
        &json!({"task_seed": 1, "harness": {"dir": "/etc"}}),
    )
    .await;
    expect(s, &r, 400, "was not named at start-up");
    let (s, r) = post(
        &base,
        "/reset",
        &json!({"task_seed": 1, "faults": "explode=2"}),
    )
    .await;
    assert_eq!(s, 400, "{r}");
    let (s, r) = post(&base, "/reset", &json!({"task_seed": 1, "colour": "red"})).await;
    expect(s, &r, 400, "unknown field");

    // None of that touched A or B: both play out exactly alike.
    let done_a = play(&base, &a_id, "text").await;
    let done_b = play(&base, &b_id, "message").await;
    assert_eq!(rewards_in(&done_a), rewards_in(&done_b));
    let (s, r) = post(
        &base,
        "/step",
        &json!({"session_id": a_id, "text": "again"}),
    )
    .await;
    expect(s, &r, 409, "finished");

    // The cap: 3 open sessions, the 4th reset is refused.
    for _ in 0..3 {
        let (s, r) = post(&base, "/reset", &json!({"task_seed": 2})).await;
        assert_eq!(s, 200, "{r}");
    }
    let (s, r) = post(&base, "/reset", &json!({"task_seed": 2})).await;
    expect(s, &r, 429, "most this service holds");
    let (s, _) = post(&base, "/nowhere", &json!({})).await;
    assert_eq!(s, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_expire_and_keys_are_checked() {
    let (_env, base) = start_env(&["--idle-timeout-s", "0.3", "--api-key", "sekrit"]).await;
    let client = reqwest::Client::new();
    let r = client
        .post(format!("{base}/reset"))
        .json(&json!({"task_seed": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let health = client.get(format!("{base}/health")).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let r: Value = client
        .post(format!("{base}/reset"))
        .bearer_auth("sekrit")
        .json(&json!({"task_seed": 1}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = r["session_id"].as_str().unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let r = client
        .post(format!("{base}/step"))
        .bearer_auth("sekrit")
        .json(&json!({"session_id": id, "text": "在的"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 410);
    let body: Value = r.json().await.unwrap();
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("expired"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_ids_are_decoded_with_the_services_tokenizer() {
    let corpus: Vec<String> = tasks(30, 1)
        .iter()
        .map(|t| serde_json::to_string(t).unwrap())
        .collect();
    let tok = hat::tokenizer::train_bpe(
        corpus,
        &hat::tokenizer::TrainOptions {
            vocab_size: 600,
            min_frequency: 2,
        },
    )
    .unwrap();
    let dir = tempfile::TempDir::new().unwrap();
    hat::tokenizer::save_hf(&tok, dir.path(), hat::tokenizer::QWEN3_CHAT_TEMPLATE, 4096).unwrap();
    let dir_s = dir.path().display().to_string();
    let (_env, base) = start_env(&["--tokenizer", &dir_s]).await;
    let task = &tasks(1, 7)[0];
    let want = rewards_of(&in_process(task, "", 0));
    let (_, reset) = post(&base, "/reset", &json!({"task": task})).await;
    let id = reset["session_id"].as_str().unwrap();
    let mut last = Value::Null;
    for _ in 0..20 {
        let (_, o) = post(&base, "/oracle", &json!({"session_id": id})).await;
        let ids = tok
            .encode(o["text"].as_str().unwrap(), false)
            .unwrap()
            .get_ids()
            .to_vec();
        let (s, r) = post(&base, "/step", &json!({"session_id": id, "token_ids": ids})).await;
        assert_eq!(s, 200, "{r}");
        if r["done"] == json!(true) {
            last = r;
            break;
        }
    }
    assert_eq!(rewards_in(&last), want);
    let (s, r) = post(&base, "/reset", &json!({"task": task})).await;
    let (s2, r2) = post(
        &base,
        "/step",
        &json!({"session_id": r["session_id"], "token_ids": [999_999]}),
    )
    .await;
    assert_eq!((s, s2), (200, 400), "{r2}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reward_service_judges_as_the_environment_did() {
    let (_env, env) = start_env(&[]).await;
    let (_judge, judge) = start_judge(&[]).await;
    let task = &tasks(3, 21)[1];
    let (_, reset) = post(
        &env,
        "/reset",
        &json!({"task": task, "return_trajectory": true}),
    )
    .await;
    let done = play(&env, reset["session_id"].as_str().unwrap(), "text").await;
    let mut record = done["trajectory"].clone();
    record["scores"] = json!({});

    // The JSON form, with a whole record.
    let (s, r) = post(&judge, "/score", &json!({"items": [{"record": record}]})).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(rewards_in(&r["results"][0]), rewards_in(&done));

    // OpenRLHF's form: the label a record as a JSON string; one entry per query.
    let (s, r) = post(
        &judge,
        "/reward",
        &json!({"query": ["q"], "prompts": ["q"],
        "labels": [record.to_string()]}),
    )
    .await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["rewards"][0], done["reward"]);
    assert_eq!(r["scores"][0], done["score"]);
    assert_eq!(r["extra_logs"]["accuracy"][0], done["rewards"]["accuracy"]);

    // A task label plus a single-turn response: the prompt prefix is cut off the query.
    let (s, r) = post(
        &judge,
        "/reward",
        &json!({"query": ["PROMPT在的，宝宝有什么想问的？<|im_end|>"],
        "prompts": ["PROMPT"], "labels": [serde_json::to_string(task).unwrap()]}),
    )
    .await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["rewards"].as_array().unwrap().len(), 1);

    let (s, r) = post(
        &judge,
        "/reward",
        &json!({"query": ["a", "b"], "prompts": ["a"], "labels": [{}]}),
    )
    .await;
    assert_eq!(s, 400, "{r}");
    let (s, r) = post(
        &judge,
        "/score",
        &json!({"items": [{"label": "not json", "response": "x"}]}),
    )
    .await;
    assert_eq!(s, 400, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("item 0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_judges_an_unfinished_episode_where_it_stands() {
    let (_env, base) = start_env(&[]).await;
    let task = &tasks(1, 3)[0];
    let (_, reset) = post(
        &base,
        "/reset",
        &json!({"task": task, "return_trajectory": true}),
    )
    .await;
    let id = reset["session_id"].as_str().unwrap();
    let (s, r) = post(&base, "/close", &json!({"session_id": id})).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["done"], json!(true));
    assert_eq!(r["stop_reason"], json!("unfinished"));
    // No reply was given: the judge says so rather than crediting the episode.
    assert_eq!(r["success"], json!(false));
    assert!(r["reward"].as_f64().unwrap() < 1.0, "{r}");
    let (s, _) = post(&base, "/step", &json!({"session_id": id, "text": "hi"})).await;
    assert_eq!(s, 409);
    let (s, _) = post(&base, "/close", &json!({"session_id": id})).await;
    assert_eq!(s, 409);
}

/// The verdict the fake LLM judge gives every episode (in prose, as models answer).
const FAKE_VERDICT: &str =
    "Verdict: {\"accuracy\": 0.75, \"effectiveness\": 0.5, \"reason\": \"fake judge\"} — done.";

/// A fake OpenAI-compatible chat endpoint on loopback that answers every request with
/// `FAKE_VERDICT`, counts the requests it receives, and holds each answer until its gate is open.
/// Every answer closes its connection, so once the fake is killed the next call is refused.
struct FakeJudge {
    addr: std::net::SocketAddr,
    calls: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    gate: std::sync::Arc<tokio::sync::Semaphore>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeJudge {
    async fn start(addr: &str, open: bool) -> FakeJudge {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        let calls = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        if open {
            gate.add_permits(tokio::sync::Semaphore::MAX_PERMITS / 2);
        }
        let (c, g) = (calls.clone(), gate.clone());
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            axum::routing::post(move |axum::Json(req): axum::Json<Value>| {
                let (c, g) = (c.clone(), g.clone());
                async move {
                    c.fetch_add(1, Ordering::SeqCst);
                    let _permit = g.acquire().await.unwrap();
                    assert!(req["messages"][0]["content"].as_str().unwrap().len() > 100);
                    (
                        [(axum::http::header::CONNECTION, "close")],
                        axum::Json(
                            json!({"choices": [{"index": 0, "message": {"role": "assistant",
                            "content": FAKE_VERDICT}, "finish_reason": "stop"}],
                            "model": req["model"]}),
                        ),
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakeJudge {
            addr,
            calls,
            gate,
            task,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn calls(&self) -> usize {
        self.calls.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn open(&self) {
        self.gate
            .add_permits(tokio::sync::Semaphore::MAX_PERMITS / 2);
    }

    /// Stops listening: the port refuses connections from now on.
    async fn kill(self) -> std::net::SocketAddr {
        self.task.abort();
        let _ = self.task.await;
        self.addr
    }
}

/// `answer` (a whole answer or one `/score` result) without the LLM's additions: what the service
/// answers without an LLM judge.
fn verifiable_part(answer: &Value) -> Value {
    let mut a = answer.clone();
    if let Some(results) = a.get_mut("results").and_then(Value::as_array_mut) {
        for r in results.iter_mut() {
            *r = verifiable_part(r);
        }
    }
    if let Some(m) = a.as_object_mut() {
        m.remove("llm");
    }
    for key in ["rewards", "extra_logs"] {
        if let Some(m) = a.get_mut(key).and_then(Value::as_object_mut) {
            m.remove("llm_accuracy");
            m.remove("llm_effectiveness");
        }
    }
    a
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_llm_judge_adds_its_dimensions_next_to_the_verifiable_ones() {
    let fake = FakeJudge::start("127.0.0.1:0", true).await;
    let url = fake.url();
    let cache = tempfile::TempDir::new().unwrap();
    let cache_s = cache.path().display().to_string();
    let llm = ["--url", &url, "--model", "fake-judge", "--retries", "0"];
    let (_plain, plain) = start_judge(&[]).await;
    let (_judged, judged) = start_judge(&[&llm[..], &["--cache", &cache_s]].concat()).await;
    let (_weighted, weighted) = start_judge(&[&llm[..], &["--llm-weight", "0.5"]].concat()).await;

    let records: Vec<Value> = tasks(3, 21)
        .iter()
        .take(2)
        .map(|t| serde_json::to_value(played(t, "", 3)).unwrap())
        .collect();
    let items = json!({"items": records.iter().map(|r| json!({"record": r})).collect::<Vec<_>>()});
    let openrlhf = json!({"query": ["q", "q"], "prompts": ["q", "q"],
        "labels": records.iter().map(|r| r.to_string()).collect::<Vec<_>>()});

    let (s, want) = post(&plain, "/score", &items).await;
    assert_eq!(s, 200, "{want}");
    let (s, want_rlhf) = post(&plain, "/reward", &openrlhf).await;
    assert_eq!(s, 200, "{want_rlhf}");
    assert_eq!(fake.calls(), 0);
    assert!(want["results"][0].get("llm").is_none());
    assert!(want_rlhf["extra_logs"].get("llm_accuracy").is_none());

    // /score: the verifiable part exactly as without the LLM judge, its dimensions beside it.
    let (s, got) = post(&judged, "/score", &items).await;
    assert_eq!(s, 200, "{got}");
    assert_eq!(fake.calls(), 2, "one LLM call per episode");
    assert_eq!(verifiable_part(&got), want);
    for r in got["results"].as_array().unwrap() {
        assert_eq!(r["rewards"]["llm_accuracy"], json!(0.75), "{r}");
        assert_eq!(r["rewards"]["llm_effectiveness"], json!(0.5), "{r}");
        assert_eq!(r["llm"]["judge"], json!("llm:fake-judge"));
        assert_eq!(r["llm"]["reason"], json!("fake judge"));
        assert_eq!(r["llm"]["score"], json!(0.625));
        assert_eq!(r["llm"]["weight"], json!(0.0));
    }

    // /reward: the same episodes, as OpenRLHF sends them; answered from the cache this time (same
    // record, same prompt, same model).
    let (s, got) = post(&judged, "/reward", &openrlhf).await;
    assert_eq!(s, 200, "{got}");
    assert_eq!(fake.calls(), 2, "the cache answered");
    assert_eq!(verifiable_part(&got), want_rlhf);
    assert_eq!(got["extra_logs"]["llm_accuracy"], json!([0.75, 0.75]));
    assert_eq!(got["extra_logs"]["llm_effectiveness"], json!([0.5, 0.5]));
    let (_, again) = post(&judged, "/score", &items).await;
    assert_eq!(again["results"][1]["llm"]["cached"], json!(true));
    assert_eq!(fake.calls(), 2);

    // --llm-weight 0.5: reward and score move by exactly 0.5 × 0.625, nothing else does.
    let (s, got) = post(&weighted, "/score", &items).await;
    assert_eq!(s, 200, "{got}");
    assert_eq!(fake.calls(), 4);
    for (g, w) in got["results"]
        .as_array()
        .unwrap()
        .iter()
        .zip(want["results"].as_array().unwrap())
    {
        for key in ["reward", "score"] {
            assert_eq!(
                g[key].as_f64().unwrap(),
                w[key].as_f64().unwrap() + 0.5 * 0.625,
                "{key}: {g}"
            );
        }
        let mut rest = verifiable_part(g);
        rest["reward"] = w["reward"].clone();
        rest["score"] = w["score"].clone();
        assert_eq!(&rest, w);
    }
    let (s, got) = post(&weighted, "/reward", &openrlhf).await;
    assert_eq!(s, 200, "{got}");
    for key in ["rewards", "scores"] {
        for k in 0..2 {
            assert_eq!(
                got[key][k].as_f64().unwrap(),
                want_rlhf[key][k].as_f64().unwrap() + 0.5 * 0.625,
                "{key}[{k}]"
            );
        }
    }
    assert_eq!(got["extra_logs"]["llm_accuracy"], json!([0.75, 0.75]));
    assert_eq!(
        got["extra_logs"]["accuracy"],
        want_rlhf["extra_logs"]["accuracy"]
    );
    let (_, health) = reqwest::get(format!("{weighted}/health"))
        .await
        .map(|r| (r.status(), r))
        .unwrap();
    let health: Value = health.json().await.unwrap();
    assert_eq!(health["llm_judge"]["weight"], json!(0.5));
    assert!(health["dimensions"]
        .as_array()
        .unwrap()
        .contains(&json!("llm_accuracy")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_calls_run_off_the_runtime_and_a_dead_endpoint_is_a_502_naming_it() {
    let fake = FakeJudge::start("127.0.0.1:0", false).await;
    let url = fake.url();
    let (_judge, judge) =
        start_judge(&["--url", &url, "--model", "fake-judge", "--retries", "0"]).await;
    let record = serde_json::to_value(played(&tasks(1, 5)[0], "", 1)).unwrap();
    let items = json!({"items": [{"record": record}]});

    // Two requests, one of two items, whose LLM calls hang until the gate opens: three calls in
    // flight at once (a request's items go out together, up to --jobs). With the calls on the
    // runtime's two workers, the fake (on the same runtime) could never even count the third.
    let two = json!({"items": [{"record": record}, {"record": record}]});
    let pending: Vec<_> = [two, items.clone()]
        .into_iter()
        .map(|body| {
            let judge = judge.clone();
            tokio::spawn(async move { post(&judge, "/score", &body).await })
        })
        .collect();
    tokio::time::timeout(Duration::from_secs(60), async {
        while fake.calls() < 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the three LLM calls were not in flight at once");
    // Meanwhile the service answers everything else.
    let health = reqwest::get(format!("{judge}/health")).await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let (s, r) = post(
        &judge,
        "/score",
        &json!({"items": [{"label": "not json", "response": "x"}]}),
    )
    .await;
    assert_eq!(s, 400, "{r}");
    fake.open();
    for p in pending {
        let (s, r) = p.await.unwrap();
        assert_eq!(s, 200, "{r}");
        for result in r["results"].as_array().unwrap() {
            assert_eq!(result["rewards"]["llm_accuracy"], json!(0.75));
        }
    }
    assert_eq!(fake.calls(), 3);

    // The endpoint goes away: that request is a 502 naming it; the service stays up.
    let addr = fake.kill().await;
    for (path, body) in [
        ("/score", items.clone()),
        (
            "/reward",
            json!({"query": ["q"], "labels": [record.to_string()]}),
        ),
    ] {
        let (s, r) = post(&judge, path, &body).await;
        assert_eq!(s, 502, "{path}: {r}");
        let msg = r["error"]["message"].as_str().unwrap();
        assert!(msg.contains(&url), "{msg:?} should name {url}");
        assert!(msg.contains("LLM judge"), "{msg}");
    }
    let health = reqwest::get(format!("{judge}/health")).await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    // Back on the same port: the next request is judged again.
    let fake = FakeJudge::start(&addr.to_string(), true).await;
    let (s, r) = post(&judge, "/score", &items).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["results"][0]["llm"]["effectiveness"], json!(0.5));
    assert_eq!(fake.calls(), 1);
}

#[test]
fn llm_judge_flags_are_those_of_judge_llm_and_optional() {
    let plain = RewardCli::try_parse_from(["judge"]).unwrap().args;
    assert!(plain.llm.url.is_none());
    assert!(plain.state().unwrap().llm_judge().is_none());
    // A weight, or a URL without a model, means nothing on its own.
    assert!(RewardCli::try_parse_from(["judge", "--llm-weight", "1"]).is_err());
    assert!(RewardCli::try_parse_from(["judge", "--url", "http://x"]).is_err());
    // The service's key and the endpoint's are different flags.
    let a = RewardCli::try_parse_from([
        "judge",
        "--api-key",
        "service",
        "--url",
        "http://x",
        "--model",
        "m",
        "--judge-api-key",
        "endpoint",
        "--timeout-s",
        "5",
        "--max-tokens",
        "64",
    ])
    .unwrap()
    .args;
    assert_eq!(a.api_key.as_deref(), Some("service"));
    assert_eq!(a.llm.api_key.as_deref(), Some("endpoint"));
    assert_eq!(a.state().unwrap().llm_judge().as_deref(), Some("llm:m"));
}
