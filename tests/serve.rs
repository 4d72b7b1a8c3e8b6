//! The server end to end: a tiny random-weight model behind the real HTTP stack on an ephemeral port,
//! exercised with a real HTTP client — plain and streamed completions, forced tool calls in both shapes,
//! stop strings, auth, limits, malformed input, batching under concurrency, agent mode and graceful
//! shutdown.

mod serve_support;

use std::time::Duration;

use hat::chat::RenderInput;
use hat::serve::server::HttpLimits;
use serde_json::{json, Value};
use serve_support::{options, start, start_with, MODEL};

fn chat_body(extra: Value) -> Value {
    let mut body = json!({"model": MODEL, "messages": [
        {"role": "system", "content": "You are a live-stream shopping host."},
        {"role": "user", "content": "How much is the down jacket?"}], "max_tokens": 12, "temperature": 0});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

async fn post(base: &str, path: &str, body: &Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// The `data:` payloads of an SSE body.
/// `n` sampled chat completions sent at once (seeds 0..n), each awaiting `(status, body)`.
fn spawn_sampled_chats(
    base: &str,
    n: u64,
    max_tokens: u32,
) -> Vec<tokio::task::JoinHandle<(u16, Value)>> {
    (0..n)
        .map(|i| {
            let base = base.to_string();
            let body = chat_body(json!({"seed": i, "temperature": 1.0, "max_tokens": max_tokens}));
            tokio::spawn(async move { post(&base, "/v1/chat/completions", &body).await })
        })
        .collect()
}

async fn post_stream(base: &str, body: &Value) -> Vec<String> {
    let r = reqwest::Client::new()
        .post(format!("{base}/v1/chat/completions"))
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let text = r.text().await.unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(str::to_string)
        .collect()
}

fn weather_tool() -> Value {
    json!([{"type": "function", "function": {"name": "get_stock", "description": "Stock of a product",
        "parameters": {"type": "object", "properties": {
            "product_id": {"type": "string"}, "quantity": {"type": "integer"},
            "express": {"type": "boolean"}, "color": {"type": "string", "enum": ["red", "black"]}},
            "required": ["product_id", "quantity", "express", "color"]}}}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn plain_completion_counts_tokens_and_is_reproducible() {
    let (server, app, base) = start().await;
    let (status, a) = post(
        &base,
        "/v1/chat/completions",
        &chat_body(json!({"temperature": 0.9, "seed": 5})),
    )
    .await;
    assert_eq!(status, 200, "{a}");
    assert_eq!(a["object"], "chat.completion");
    assert_eq!(a["model"], MODEL);
    assert_eq!(a["choices"][0]["message"]["role"], "assistant");
    let usage = &a["usage"];
    let n = usage["completion_tokens"].as_u64().unwrap();
    assert!((1..=12).contains(&n));
    if a["choices"][0]["finish_reason"] == "length" {
        assert_eq!(n, 12);
    }
    // prompt_tokens is the templated conversation's length.
    let rendered = app
        .template
        .render(&RenderInput {
            messages: chat_body(json!({}))["messages"].as_array().unwrap().clone(),
            add_generation_prompt: true,
            ..Default::default()
        })
        .unwrap();
    let expected = app
        .tokenizer
        .encode(rendered, false)
        .unwrap()
        .get_ids()
        .len() as u64;
    assert_eq!(usage["prompt_tokens"].as_u64().unwrap(), expected);
    assert_eq!(usage["total_tokens"].as_u64().unwrap(), expected + n);
    // The same seed gives the same sampled text; another seed (almost surely) does not matter here.
    let (_, b) = post(
        &base,
        "/v1/chat/completions",
        &chat_body(json!({"temperature": 0.9, "seed": 5})),
    )
    .await;
    assert_eq!(
        a["choices"][0]["message"]["content"],
        b["choices"][0]["message"]["content"]
    );
    let (status, models) = reqwest_get(&base, "/v1/models").await;
    assert_eq!(status, 200);
    assert_eq!(models["data"][0]["id"], MODEL);
    assert_eq!(models["data"][0]["random_weights"], true);
    server.shutdown().await.unwrap();
}

/// The Prometheus text of `GET /metrics`.
async fn metrics_text(base: &str) -> String {
    reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

async fn reqwest_get(base: &str, path: &str) -> (u16, Value) {
    let r = reqwest::get(format!("{base}{path}")).await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn streaming_matches_plain_and_reports_usage() {
    let (server, _app, base) = start().await;
    let (_, plain) = post(
        &base,
        "/v1/chat/completions",
        &chat_body(json!({"logprobs": true, "top_logprobs": 2})),
    )
    .await;
    let lps = plain["choices"][0]["logprobs"]["content"]
        .as_array()
        .unwrap();
    assert_eq!(
        lps.len() as u64,
        plain["usage"]["completion_tokens"].as_u64().unwrap()
    );
    assert!(lps.iter().all(|l| l["logprob"].as_f64().unwrap() <= 0.0
        && l["top_logprobs"].as_array().unwrap().len() == 2));
    let data = post_stream(
        &base,
        &chat_body(json!({"stream": true, "stream_options": {"include_usage": true}})),
    )
    .await;
    assert_eq!(data.last().unwrap(), "[DONE]");
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk" && c["id"] == chunks[0]["id"]));
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(
        content,
        plain["choices"][0]["message"]["content"].as_str().unwrap()
    );
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"], plain["usage"]);
    let finish = &chunks[chunks.len() - 2]["choices"][0]["finish_reason"];
    assert_eq!(finish, &plain["choices"][0]["finish_reason"]);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stop_string_cuts_the_reply_before_it() {
    let (server, _app, base) = start().await;
    let (_, full) = post(
        &base,
        "/v1/chat/completions",
        &chat_body(json!({"max_tokens": 24})),
    )
    .await;
    let text = full["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let chars: Vec<char> = text.chars().collect();
    assert!(chars.len() >= 6, "need some text to cut: {text:?}");
    let stop: String = chars[3..5].iter().collect();
    let (_, cut) = post(
        &base,
        "/v1/chat/completions",
        &chat_body(json!({"max_tokens": 24, "stop": [stop.clone()]})),
    )
    .await;
    let expected = &text[..text.find(&stop).unwrap()];
    assert_eq!(cut["choices"][0]["message"]["content"], expected);
    assert_eq!(cut["choices"][0]["finish_reason"], "stop");
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forced_tool_call_plain_and_streamed() {
    let (server, _app, base) = start().await;
    let extra = json!({"tools": weather_tool(), "tool_choice": {"type": "function", "function": {"name": "get_stock"}}, "max_tokens": 200});
    let (status, plain) = post(&base, "/v1/chat/completions", &chat_body(extra.clone())).await;
    assert_eq!(status, 200, "{plain}");
    let choice = &plain["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert!(choice["message"]["content"].is_null());
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_stock");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert!(args["product_id"].is_string());
    assert!(args["quantity"].is_u64());
    assert!(args["express"].is_boolean());
    assert!(["red", "black"].contains(&args["color"].as_str().unwrap()));

    let mut body = chat_body(extra);
    body["stream"] = json!(true);
    let data = post_stream(&base, &body).await;
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let deltas: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"].get("tool_calls"))
        .map(|t| &t[0])
        .collect();
    assert!(deltas.len() >= 2);
    // First delta: index, id, type and name, empty arguments; then argument fragments only.
    assert_eq!(deltas[0]["index"], 0);
    assert!(deltas[0]["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(deltas[0]["type"], "function");
    assert_eq!(deltas[0]["function"]["name"], "get_stock");
    assert_eq!(deltas[0]["function"]["arguments"], "");
    for d in &deltas[1..] {
        assert_eq!(d["index"], 0);
        assert!(d.get("id").is_none() && d["function"].get("name").is_none());
    }
    let streamed: String = deltas
        .iter()
        .filter_map(|d| d["function"]["arguments"].as_str())
        .collect();
    assert_eq!(streamed, call["function"]["arguments"].as_str().unwrap());
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn api_key_is_required_on_v1_only() {
    let mut opts = options();
    opts.api_key = Some("sekret".into());
    let (server, _app, base) = start_with(
        opts,
        HttpLimits {
            max_body_bytes: 1 << 20,
        },
        false,
    )
    .await;
    let client = reqwest::Client::new();
    let url = format!("{base}/v1/chat/completions");
    for auth in [None, Some("Bearer wrong")] {
        let mut r = client.post(&url).json(&chat_body(json!({})));
        if let Some(a) = auth {
            r = r.header("authorization", a);
        }
        let r = r.send().await.unwrap();
        assert_eq!(r.status().as_u16(), 401);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], 401);
        assert_eq!(body["error"]["type"], "AuthenticationError");
    }
    let ok = client
        .post(&url)
        .bearer_auth("sekret")
        .json(&chat_body(json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status().as_u16(), 200);
    assert_eq!(reqwest_get(&base, "/health").await.0, 200);
    assert_eq!(reqwest_get(&base, "/v1/models").await.0, 401);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_requests_get_4xx_and_serving_continues() {
    let (server, _app, base) = start_with(
        options(),
        HttpLimits {
            max_body_bytes: 4096,
        },
        false,
    )
    .await;
    let client = reqwest::Client::new();
    let url = format!("{base}/v1/chat/completions");
    let raw = |body: &'static str| {
        client
            .post(&url)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let r = raw("{\"messages\": [").await.unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let e: Value = r.json().await.unwrap();
    assert!(e["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not valid JSON"));

    let cases = [
        (json!({"temperature": "hot"}), "temperature"),
        (json!({"max_tokens": -3}), "max_tokens"),
        (json!({"messages": []}), "messages"),
        (
            json!({"messages": [{"role": "wizard", "content": "hi"}]}),
            "messages[0].role",
        ),
        (json!({"stop": [1, 2]}), "stop"),
        (json!({"tool_choice": "required"}), "tool_choice"),
        (json!({"top_logprobs": 3}), "top_logprobs"),
    ];
    for (extra, param) in cases {
        let (status, body) = post(&base, "/v1/chat/completions", &chat_body(extra.clone())).await;
        assert_eq!(status, 400, "{extra} → {body}");
        assert_eq!(body["error"]["param"], param, "{body}");
    }
    let (status, body) = post(
        &base,
        "/v1/chat/completions",
        &chat_body(json!({"model": "gpt-9"})),
    )
    .await;
    assert_eq!(
        (status, body["error"]["param"].clone()),
        (404, json!("model"))
    );
    let big = chat_body(json!({"messages": [{"role": "user", "content": "x".repeat(10_000)}]}));
    let (status, body) = post(&base, "/v1/chat/completions", &big).await;
    assert_eq!(status, 413);
    assert_eq!(body["error"]["code"], 413);
    assert_eq!(reqwest_get(&base, "/v2/nothing").await.0, 404);
    let (status, _) = post(&base, "/v1/chat/completions", &chat_body(json!({}))).await;
    assert_eq!(status, 200);
    server.shutdown().await.unwrap();
}

/// vLLM's `ignore_eos`: a sampled end-of-turn token no longer ends the reply, so it runs to
/// `max_tokens` (what a benchmark that fixes output lengths relies on).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ignore_eos_runs_to_max_tokens() {
    let (server, _app, base) = start().await;
    let body = |seed: u64, ignore: bool| {
        chat_body(
            json!({"seed": seed, "temperature": 2.0, "max_tokens": 200, "ignore_eos": ignore}),
        )
    };
    let mut ended_early = None;
    for seed in 0..40 {
        let (status, a) = post(&base, "/v1/chat/completions", &body(seed, false)).await;
        assert_eq!(status, 200, "{a}");
        if a["choices"][0]["finish_reason"] == "stop" {
            ended_early = Some(seed);
            break;
        }
    }
    let seed = ended_early.expect("some seed samples an end-of-turn token within 200 tokens");
    let (status, a) = post(&base, "/v1/chat/completions", &body(seed, true)).await;
    assert_eq!(status, 200, "{a}");
    assert_eq!(a["choices"][0]["finish_reason"], "length");
    assert_eq!(a["usage"]["completion_tokens"], 200);
    let (status, e) = post(
        &base,
        "/v1/chat/completions",
        &chat_body(json!({"ignore_eos": "yes"})),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(e["error"]["param"], "ignore_eos");
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_all_succeed_in_shared_batches() {
    let (server, app, base) = start().await;
    let jobs = spawn_sampled_chats(&base, 12, 16);
    for j in jobs {
        let (status, body) = j.await.unwrap();
        assert_eq!(status, 200, "{body}");
    }
    let metrics = metrics_text(&base).await;
    let max_batch: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("hat_max_running_batch_size "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(max_batch > 1, "requests were never batched together");
    assert!(
        metrics.contains("hat_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 12")
    );
    assert!(metrics.contains("hat_request_ttft_seconds_count 12"));
    // The engine's time by phase: these requests were prefilled, joined and decoded.
    let engine_seconds = |phase: &str| -> f64 {
        let prefix = format!("hat_engine_seconds_total{{phase=\"{phase}\"}} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .unwrap_or_else(|| panic!("no {phase} time in /metrics"))
            .parse()
            .unwrap()
    };
    for phase in ["prefill", "join", "decode"] {
        assert!(engine_seconds(phase) > 0.0, "{phase}");
    }
    assert_eq!(
        app.metrics
            .queue_depth
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shutdown_finishes_requests_in_flight() {
    let (server, _app, base) = start().await;
    let in_flight = spawn_sampled_chats(&base, 3, 48);
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.shutdown().await.unwrap();
    for j in in_flight {
        let (status, body) = j.await.unwrap();
        assert_eq!(status, 200, "{body}");
        assert!(body["usage"]["completion_tokens"].as_u64().unwrap() > 0);
    }
    assert!(
        reqwest::get(format!("{base}/health")).await.is_err(),
        "still accepting after shutdown"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn agent_mode_runs_the_harness_and_returns_the_trajectory() {
    let (server, _app, base) = start_with(
        options(),
        HttpLimits {
            max_body_bytes: 1 << 20,
        },
        true,
    )
    .await;
    let tasks = std::fs::read_to_string("testdata/replay/default.jsonl").unwrap();
    let mut record: Value = serde_json::from_str(tasks.lines().next().unwrap()).unwrap();
    record["hat_agent"] = json!({"return_trajectory": true, "max_tokens": 8});
    let (status, body) = post(&base, "/v1/agent", &record).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "hat.agent.turn");
    assert!(body["reply"].is_string());
    assert!(
        body["success"].is_boolean(),
        "the replay task has ground truth"
    );
    let traj = &body["trajectory"];
    assert_eq!(traj["messages"][0]["role"], "system");
    assert!(
        traj["messages"][0]["content"].as_str().unwrap().len() > 100,
        "the harness prompt pipeline ran"
    );
    assert!(body["rounds"].as_u64().unwrap() >= 1);
    // Without --harness, agent mode is off.
    let (plain_server, _, plain_base) = start().await;
    assert_eq!(post(&plain_base, "/v1/agent", &record).await.0, 404);
    plain_server.shutdown().await.unwrap();
    server.shutdown().await.unwrap();
}

/// Agent mode plays under the harness's own names: its `[serves]` declaration (a variant directory's
/// manifest, for one written by `hsa-augment --out`), as every other stage does.
#[test]
fn agent_mode_reads_the_harness_names() {
    for dir in ["harness-samples/aftersales", "harness-samples/shopdesk"] {
        let service =
            hat::serve::agent::load(dir.as_ref(), "testdata/catalog.json".as_ref()).unwrap();
        let declared = hat::harness::Harness::load(dir).unwrap().names();
        assert!(!declared.is_empty(), "{dir}");
        assert_eq!(service.agent.names(), &declared, "{dir}");
    }
}

/// The tokens of a text under the test server's tokenizer.
fn encode(text: &str) -> Vec<u32> {
    hat::tokenizer::load(serve_support::tokenizer_dir())
        .unwrap()
        .encode(text, false)
        .unwrap()
        .get_ids()
        .to_vec()
}

/// `prompt_logprobs` against the model's own log-probs computed by the trainer's scoring path (a
/// batched teacher-forced forward, independent of the server's scorer): the prompt's token at each
/// position after the first, its rank, and the top k in vLLM's shape; a pure scoring request
/// (`max_tokens: 0`) generates nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn completions_prompt_logprobs_match_the_models_own() {
    let (server, _app, base) = start().await;
    let ids = encode("How much is the down jacket? Is the red one still in stock today?");
    assert!(ids.len() > 8);
    let (status, v) = post(
        &base,
        "/v1/completions",
        &json!({"model": MODEL, "prompt": ids, "max_tokens": 0, "prompt_logprobs": 3}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["object"], "text_completion");
    let choice = &v["choices"][0];
    assert_eq!(choice["text"], "");
    assert_eq!(v["usage"]["completion_tokens"], 0);
    assert_eq!(v["usage"]["prompt_tokens"], ids.len());
    let rows = choice["prompt_logprobs"].as_array().unwrap();
    assert_eq!(rows.len(), ids.len());
    assert!(rows[0].is_null());

    // The reference: the same random weights, scored as the trainers score a view.
    let tok = hat::tokenizer::load(serve_support::tokenizer_dir()).unwrap();
    let model = hat::serve::model::BurnModel::<burn::backend::NdArray<f32>>::random(
        "tiny",
        tok.get_vocab_size(true),
        3,
        hat::model::WeightDtype::F32,
        Default::default(),
    )
    .unwrap()
    .model;
    let view = hat::train::view::TrainingView {
        id: "p".into(),
        tokens: ids.clone(),
        loss_mask: (0..ids.len()).map(|t| u8::from(t > 0)).collect(),
        segments: Vec::new(),
        weights: None,
    };
    let (reference, _) =
        hat::rl::update::logprobs(&model, &[view], 0, 4096, &Default::default()).unwrap();
    let mut worst = 0f64;
    for (t, row) in rows.iter().enumerate().skip(1) {
        let own = &row[ids[t].to_string()];
        let lp = own["logprob"].as_f64().unwrap();
        worst = worst.max((lp - reference[0][t - 1]).abs());
        let rank = own["rank"].as_u64().unwrap();
        assert!(rank >= 1);
        let mut top: Vec<(u64, f64)> = row
            .as_object()
            .unwrap()
            .values()
            .map(|e| (e["rank"].as_u64().unwrap(), e["logprob"].as_f64().unwrap()))
            .filter(|(r, _)| *r <= 3)
            .collect();
        top.sort_by_key(|(r, _)| *r);
        assert_eq!(
            top.iter().map(|(r, _)| *r).collect::<Vec<_>>(),
            [1, 2, 3],
            "{row}"
        );
        assert!(
            top.windows(2).all(|w| w[0].1 >= w[1].1),
            "top-3 best first: {row}"
        );
        // The prompt's token is among the top 3 exactly when its rank says so.
        assert_eq!(rank <= 3, lp >= top[2].1 - 1e-6, "{row}");
        assert!(own["decoded_token"].is_string());
    }
    assert!(
        worst < 1e-4,
        "server vs trainer log-probs differ by {worst}"
    );
    eprintln!(
        "prompt_logprobs of {} tokens: max |server − trainer| = {worst:e}",
        ids.len() - 1
    );
    server.shutdown().await.unwrap();
}

/// `echo` with the legacy `logprobs`: the prompt comes back before the completion, with a log-prob
/// for every returned token but the first; text prompts and batches of prompts work.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn completions_echo_logprobs_and_batches() {
    let (server, _app, base) = start().await;
    let text = "How much is the down jacket?";
    let n = encode(text).len();
    let (status, v) = post(
        &base,
        "/v1/completions",
        &json!({"prompt": [text, encode("Is it in stock?")], "max_tokens": 4, "temperature": 0,
                "echo": true, "logprobs": 2, "prompt_logprobs": 1}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let choices = v["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 2);
    let c = &choices[0];
    assert!(c["text"].as_str().unwrap().starts_with(text), "{c}");
    let lp = &c["logprobs"];
    let generated = v["usage"]["completion_tokens"].as_u64().unwrap() as usize;
    let mine = lp["tokens"].as_array().unwrap().len();
    assert!(
        mine > n && mine <= n + 4,
        "{mine} tokens for a {n}-token prompt"
    );
    assert!(lp["token_logprobs"][0].is_null() && lp["top_logprobs"][0].is_null());
    assert!(lp["token_logprobs"][1].is_number());
    assert!(lp["top_logprobs"][1].as_object().unwrap().len() <= 2);
    assert_eq!(lp["text_offset"][0], 0);
    // The echoed prompt's log-probs are the prompt_logprobs'.
    let ids = encode(text);
    assert_eq!(
        lp["token_logprobs"][1].as_f64().unwrap(),
        c["prompt_logprobs"][1][ids[1].to_string()]["logprob"]
            .as_f64()
            .unwrap()
    );
    assert_eq!(choices[1]["index"], 1);
    assert!(generated >= 2);
    server.shutdown().await.unwrap();
}

/// Bad `/v1/completions` input gets a 4xx naming the field, and serving continues.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn completions_bad_requests_get_4xx() {
    let (server, _app, base) = start().await;
    for (body, status, param) in [
        (
            json!({"prompt": "hi", "prompt_logprobs": 21}),
            400,
            "prompt_logprobs",
        ),
        (
            json!({"prompt": "hi", "prompt_logprobs": -1}),
            400,
            "prompt_logprobs",
        ),
        (
            json!({"prompt": "hi", "prompt_logprobs": -2}),
            400,
            "prompt_logprobs",
        ),
        (
            json!({"prompt": "hi", "prompt_logprobs": 1.5}),
            400,
            "prompt_logprobs",
        ),
        (
            json!({"prompt": "hi", "prompt_logprobs": "3"}),
            400,
            "prompt_logprobs",
        ),
        (json!({"prompt": "hi", "logprobs": 99}), 400, "logprobs"),
        (
            json!({"prompt": "hi", "prompt_logprobs": 1, "stream": true}),
            400,
            "stream",
        ),
        (json!({"max_tokens": 2}), 400, "prompt"),
        (json!({"prompt": []}), 400, "prompt"),
        (json!({"prompt": [[]]}), 400, "prompt"),
        (json!({"prompt": [1, -2]}), 400, "prompt"),
        (json!({"prompt": [1, 999999]}), 400, "prompt"),
        (json!({"prompt": {"a": 1}}), 400, "prompt"),
        (json!({"prompt": "hi", "n": 2}), 422, "n"),
        (json!({"prompt": "hi", "model": "other"}), 404, "model"),
        (
            json!({"prompt": "hi", "temperature": 5}),
            400,
            "temperature",
        ),
    ] {
        let (got, v) = post(&base, "/v1/completions", &body).await;
        assert_eq!(got, status, "{body} → {v}");
        assert_eq!(v["error"]["param"], param, "{body} → {v}");
    }
    let (got, v) = post(
        &base,
        "/v1/completions",
        &json!({"prompt": "hi", "max_tokens": 2, "prompt_logprobs": 0}),
    )
    .await;
    assert_eq!(got, 200, "{v}");
    // prompt_logprobs 0: the prompt's own token only.
    let rows = v["choices"][0]["prompt_logprobs"].as_array().unwrap();
    assert!(rows[1..].iter().all(|r| r.as_object().unwrap().len() == 1));
    server.shutdown().await.unwrap();
}

/// `POST /update_weights_from_disk` (SGLang's endpoint): refused unless the server allows weight
/// updates; allowed, a bad request or a checkpoint that cannot load is a 4xx that changes nothing,
/// and a checkpoint of the same vocabulary loads: greedy output and `prompt_logprobs` then come from
/// the new weights (checked against those weights scored directly), `/health` no longer says random,
/// and `/metrics` counts the update.
#[tokio::test(flavor = "multi_thread")]
async fn new_weights_load_from_disk_while_serving() {
    let limits = || HttpLimits {
        max_body_bytes: 1 << 20,
    };
    let (server, _app, base) = start().await;
    let (status, body) = post(
        &base,
        "/update_weights_from_disk",
        &json!({"model_path": "x"}),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.to_string().contains("--enable-weight-updates"),
        "{body}"
    );
    server.shutdown().await.unwrap();

    let opts = hat::serve::AppOptions {
        weight_updates: true,
        ..options()
    };
    let (server, _app, base) = start_with(opts, limits(), false).await;
    let greedy = chat_body(json!({"max_tokens": 8}));
    let (_, before) = post(&base, "/v1/chat/completions", &greedy).await;
    let prompt: Vec<u32> = (5..40).collect();
    let scored = json!({"model": MODEL, "prompt": prompt, "max_tokens": 0, "prompt_logprobs": 0});

    // Seed 4 of the same preset and vocabulary: other weights than the server's (seed 3).
    let tok = hat::tokenizer::load(serve_support::tokenizer_dir()).unwrap();
    let cfg = hat::model::presets::preset("tiny", Some(tok.get_vocab_size(true))).unwrap();
    let new = hat::model::CausalLm::<burn::backend::NdArray<f32>>::init_as(
        &cfg,
        4,
        hat::model::WeightDtype::F32,
        &Default::default(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    hat::model::io::checkpoint::save(&new, dir.path(), Default::default()).unwrap();

    for (bad, want) in [
        (json!({"path": "x"}), 400),
        (json!({"model_path": 3}), 400),
        (json!({"model_path": "/no/such/checkpoint"}), 400),
    ] {
        let (status, body) = post(&base, "/update_weights_from_disk", &bad).await;
        assert_eq!(status, want, "{bad}: {body}");
        if bad["model_path"].is_string() {
            assert_eq!(body["success"], false, "{body}");
            assert!(
                body["message"]
                    .as_str()
                    .unwrap()
                    .contains("/no/such/checkpoint"),
                "{body}"
            );
        }
    }
    let (_, same) = post(&base, "/v1/chat/completions", &greedy).await;
    assert_eq!(
        same["choices"], before["choices"],
        "a failed load changed the weights"
    );

    let path = dir.path().to_string_lossy();
    let (status, body) = post(
        &base,
        "/update_weights_from_disk",
        &json!({"model_path": path}),
    )
    .await;
    assert_eq!((status, &body["success"]), (200, &json!(true)), "{body}");
    let (_, after) = post(&base, "/v1/chat/completions", &greedy).await;
    assert_ne!(
        after["choices"], before["choices"],
        "the new weights answer as the old"
    );
    let (_, v) = post(&base, "/v1/completions", &scored).await;
    let rows = v["choices"][0]["prompt_logprobs"]
        .as_array()
        .unwrap()
        .clone();
    let direct = hat::serve::prompt_logprobs::ModelScorer::new(new, Default::default());
    let want = hat::serve::prompt_logprobs::PromptScorer::score(&direct, &prompt, 0).unwrap();
    for (t, w) in want.iter().enumerate() {
        let got = rows[t + 1][w.token.to_string()]["logprob"]
            .as_f64()
            .unwrap();
        assert!(
            (got - f64::from(w.logprob)).abs() < 1e-5,
            "position {t}: {got} vs {}",
            w.logprob
        );
    }
    let (_, health) = reqwest_get(&base, "/health").await;
    assert_eq!(health["random_weights"], false);
    let metrics = metrics_text(&base).await;
    assert!(metrics.contains("hat_weight_updates_total 1"), "{metrics}");
    server.shutdown().await.unwrap();
}

/// vLLM's `return_tokens_as_token_ids`: the same greedy reply's log-prob entries, sampled token and
/// alternatives, are named `token_id:N`, with the ids of the tokens the plain request names by text.
#[tokio::test(flavor = "multi_thread")]
async fn logprob_tokens_come_as_ids_when_asked() {
    let (server, _app, base) = start().await;
    let ask = |ids: bool| {
        chat_body(json!({"logprobs": true, "top_logprobs": 2, "return_tokens_as_token_ids": ids}))
    };
    let (_, texts) = post(&base, "/v1/chat/completions", &ask(false)).await;
    let (status, ids) = post(&base, "/v1/chat/completions", &ask(true)).await;
    assert_eq!(status, 200, "{ids}");
    let entries = |v: &Value| {
        v["choices"][0]["logprobs"]["content"]
            .as_array()
            .unwrap()
            .clone()
    };
    let (texts, ids) = (entries(&texts), entries(&ids));
    assert!(!texts.is_empty());
    assert_eq!(texts.len(), ids.len());
    let tok = hat::tokenizer::load(serve_support::tokenizer_dir()).unwrap();
    let id_of = |e: &Value| -> u32 {
        let name = e["token"].as_str().unwrap();
        name.strip_prefix("token_id:").unwrap().parse().unwrap()
    };
    for (t, i) in texts.iter().zip(&ids) {
        assert_eq!(
            tok.decode(&[id_of(i)], false).unwrap(),
            t["token"].as_str().unwrap()
        );
        assert_eq!(t["logprob"], i["logprob"]);
        let alternatives = i["top_logprobs"].as_array().unwrap();
        assert_eq!(alternatives.len(), 2);
        assert!(alternatives
            .iter()
            .all(|a| a["token"].as_str().unwrap().starts_with("token_id:")));
    }
    server.shutdown().await.unwrap();
}
