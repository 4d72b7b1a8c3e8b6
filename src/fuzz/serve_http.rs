//! Target `serve_http`: raw HTTP requests to `serve` over a real socket, so the HTTP layer (hyper's
//! parsing, axum's body limit and extractors) is under test with the handlers: malformed JSON, wrong
//! types, huge numbers, deep nesting, invalid UTF-8, truncated bodies. Every answer is a 2xx the
//! OpenAI client parses or a 4xx with an OpenAI error body, never a 5xx, and the server still answers
//! a valid request afterwards.
//!
//! The server is a tiny random-weight model on an ephemeral port, started once per process, with a
//! short context so any accepted request finishes in milliseconds.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::time::Duration;

use burn::backend::NdArray;
use serde_json::Value;

use crate::chat::{ChatTemplate, ToolCallFormat};
use crate::serve::engine::EngineConfig;
use crate::serve::model::BurnModel;
use crate::serve::server::{HttpLimits, RunningServer};
use crate::serve::{build_app, AppOptions};
use crate::tokenizer::{self, TrainOptions, QWEN3_CHAT_TEMPLATE};

pub const MODEL: &str = "tiny-random";
/// Small enough that inputs reach it (libFuzzer's `-max_len` is 64 KiB in `make fuzz`).
const MAX_BODY_BYTES: usize = 16 * 1024;

/// The first byte picks the request's shape (bits 0–1: chat, chat without a content type, agent
/// mode, which this server does not run, or an unknown path; bit 2: the body is cut short of its
/// `Content-Length`); the rest is the body.
pub fn check(data: &[u8]) {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let addr = server();
    let (path, content_type) = match mode & 3 {
        0 => ("/v1/chat/completions", true),
        1 => ("/v1/chat/completions", false),
        2 => ("/v1/agent", true),
        _ => ("/v1/completions", true),
    };
    let truncated = mode & 4 != 0;
    match post(addr, path, content_type, body, truncated) {
        Some((status, content_type, body)) => check_answer(status, &content_type, &body),
        // A body over the limit is refused (413) before it is read, and closing a socket with
        // unread data resets it: the client may lose the answer. Only then may it be lost.
        None => assert!(body.len() > MAX_BODY_BYTES, "no answer"),
    }
    let valid = format!(
        r#"{{"model": "{MODEL}", "messages": [{{"role": "user", "content": "hi"}}], "max_tokens": 1}}"#
    );
    let (status, _, answer) = post(addr, "/v1/chat/completions", true, valid.as_bytes(), false)
        .expect("a valid request is answered");
    assert_eq!(
        status,
        200,
        "the server stopped answering valid requests: {}",
        String::from_utf8_lossy(&answer)
    );
}

/// What the OpenAI client accepts: a chat completion (or its SSE stream), or an error envelope.
fn check_answer(status: u16, content_type: &str, body: &[u8]) {
    assert!(
        (200..500).contains(&status),
        "status {status}: {}",
        String::from_utf8_lossy(body)
    );
    if status >= 400 {
        let v: Value = serde_json::from_slice(body).unwrap_or_else(|e| {
            panic!(
                "{status} body is not JSON ({e}): {}",
                String::from_utf8_lossy(body)
            )
        });
        let error = &v["error"];
        assert!(
            error["message"].is_string() && error["type"].is_string(),
            "{status} without an OpenAI error body: {v}"
        );
        assert_eq!(error["code"], status, "{v}");
        return;
    }
    if content_type.starts_with("text/event-stream") {
        let text = std::str::from_utf8(body).expect("an SSE stream is UTF-8");
        let events: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .collect();
        assert_eq!(events.last(), Some(&"[DONE]"), "stream not ended: {text}");
        for event in &events[..events.len() - 1] {
            let chunk: Value = serde_json::from_str(event).expect("each event is JSON");
            if chunk.get("error").is_none() {
                assert_eq!(chunk["object"], "chat.completion.chunk", "{chunk}");
                assert!(chunk["choices"].is_array(), "{chunk}");
            }
        }
        return;
    }
    let v: Value = serde_json::from_slice(body).expect("a 2xx body is JSON");
    assert_eq!(v["object"], "chat.completion", "{v}");
    assert!(
        v["id"].is_string() && v["model"].is_string() && v["created"].is_u64(),
        "{v}"
    );
    let choices = v["choices"].as_array().expect("choices");
    assert!(!choices.is_empty(), "{v}");
    for choice in choices {
        let reason = choice["finish_reason"].as_str().unwrap_or_default();
        assert!(
            [
                "stop",
                "length",
                "tool_calls",
                "content_filter",
                "function_call"
            ]
            .contains(&reason),
            "{v}"
        );
        let message = &choice["message"];
        assert_eq!(message["role"], "assistant", "{v}");
        assert!(
            message["content"].is_string() || message["content"].is_null(),
            "{v}"
        );
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            assert!(call["id"].is_string() && call["type"] == "function", "{v}");
            assert!(call["function"]["name"].is_string(), "{v}");
            assert!(call["function"]["arguments"].is_string(), "{v}");
        }
    }
    for key in ["prompt_tokens", "completion_tokens", "total_tokens"] {
        assert!(v["usage"][key].is_u64(), "{v}");
    }
}

/// One request on a fresh connection; the status, content type and (de-chunked) body, or `None`
/// when the connection was reset before the answer could be read.
fn post(
    addr: SocketAddr,
    path: &str,
    content_type: bool,
    body: &[u8],
    truncated: bool,
) -> Option<(u16, String, Vec<u8>)> {
    let mut stream = TcpStream::connect(addr).expect("the server accepts connections");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a timeout");
    let declared = body.len() + usize::from(truncated) * 7;
    let mut request = format!("POST {path} HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n");
    if content_type {
        request.push_str("Content-Type: application/json\r\n");
    }
    request.push_str(&format!("Content-Length: {declared}\r\n\r\n"));
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body);
    // The server may answer (413) and close before reading everything: a failed write is fine.
    let _ = stream.write_all(&bytes);
    if truncated {
        let _ = stream.shutdown(Shutdown::Write);
    }
    let mut answer = Vec::new();
    match stream.read_to_end(&mut answer) {
        Ok(_) => Some(parse_response(&answer)),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => None,
        Err(e) => panic!("no answer: {e}"),
    }
}

fn parse_response(answer: &[u8]) -> (u16, String, Vec<u8>) {
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP response: {}", String::from_utf8_lossy(answer)));
    let head = std::str::from_utf8(&answer[..split]).expect("HTTP headers are ASCII");
    let body = &answer[split + 4..];
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line: {head}"));
    let header = |name: &str| {
        head.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_string())
    };
    let body = if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        dechunk(body)
    } else {
        body.to_vec()
    };
    (status, header("content-type").unwrap_or_default(), body)
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("a chunk size line");
        let size = std::str::from_utf8(&rest[..line_end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok())
            .expect("a hex chunk size");
        rest = &rest[line_end + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// Starts the server now rather than on the first input (libFuzzer times each input's run).
pub fn start() {
    // libFuzzer's C `main` skips Rust's start-up, which ignores SIGPIPE: without this, writing to a
    // connection the server has closed (after a 413) would kill the process.
    // SAFETY: setting a signal's disposition to "ignore" runs no handler code.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    server();
}

/// The server, started on first use and kept for the process (libFuzzer runs many inputs in one).
fn server() -> SocketAddr {
    static SERVER: OnceLock<(tokio::runtime::Runtime, RunningServer)> = OnceLock::new();
    SERVER
        .get_or_init(|| {
            // Trained on the template and the replay set's requests (tools, prompts, messages), so
            // the requests the fuzzer derives from them fit the short context.
            let replay = std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/testdata/replay/default.jsonl"
            ))
            .expect("the replay set");
            let corpus: Vec<&str> = QWEN3_CHAT_TEMPLATE.lines().chain(replay.lines()).collect();
            let options = TrainOptions {
                vocab_size: 2048,
                min_frequency: 2,
            };
            let tok = tokenizer::train_bpe(corpus, &options).expect("a tokenizer trains");
            let model = BurnModel::<NdArray<f32>>::random(
                "tiny",
                tok.get_vocab_size(true),
                3,
                crate::model::WeightDtype::F32,
                Default::default(),
            )
            .expect("the tiny preset builds");
            let template = ChatTemplate::from_str(QWEN3_CHAT_TEMPLATE).expect("qwen3 compiles");
            let options = AppOptions {
                model_name: MODEL.into(),
                random_weights: true,
                weight_updates: false,
                format: ToolCallFormat::Hermes,
                timeout: Duration::from_secs(10),
                default_max_tokens: 4,
                api_key: None,
                engine: EngineConfig {
                    queue_capacity: 16,
                    max_batch: 4,
                    max_context: 128,
                    prefill_chunk: crate::serve::engine::PREFILL_CHUNK,
                    max_itl_stretch: crate::serve::engine::MAX_ITL_STRETCH,
                },
            };
            let (app, _engine) = build_app(model, tok, template, &options, None);
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("a tokio runtime");
            let limits = HttpLimits {
                max_body_bytes: MAX_BODY_BYTES,
            };
            let addr = "127.0.0.1:0".parse().expect("an address");
            let running = runtime
                .block_on(RunningServer::start(app, limits, addr))
                .expect("the server starts");
            (runtime, running)
        })
        .1
        .addr
}
