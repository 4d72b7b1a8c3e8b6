// Each test crate uses a different subset of these helpers.
#![allow(dead_code)]

//! A fake OpenAI-compatible chat endpoint on a local port, for tests of clients that call one (the
//! LLM judge, `hat evolve`'s proposer): each request is answered with the text `respond(body, n)`
//! returns for it (n counts requests from 0) as the assistant message, or with an error body when the
//! status is not 200; or, for other protocols, with any JSON body (`serve_json`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;

/// A fake OpenAI-compatible endpoint: answers each request with `respond(body, n)` (n counts from 0).
pub fn serve(
    respond: impl Fn(&str, usize) -> (u16, String) + Send + 'static,
) -> (String, Arc<AtomicUsize>) {
    serve_json(move |body, n| {
        let (status, text) = respond(body, n);
        let reply = if status == 200 {
            json!({"choices": [{"message": {"role": "assistant", "content": text}}]})
        } else {
            json!({"error": "busy"})
        };
        (status, reply)
    })
}

/// A fake HTTP endpoint that answers each request (whatever its path) with the status and JSON body
/// `respond(body, n)` gives (n counts from 0).
pub fn serve_json(
    respond: impl Fn(&str, usize) -> (u16, serde_json::Value) + Send + 'static,
) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut len = 0usize;
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                line.clear();
            }
            let mut body = vec![0u8; len];
            reader.read_exact(&mut body).unwrap();
            let n = seen.fetch_add(1, Ordering::SeqCst);
            let (status, reply) = respond(std::str::from_utf8(&body).unwrap(), n);
            let payload = reply.to_string();
            let _ = write!(stream, "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}", payload.len());
        }
    });
    (url, count)
}
