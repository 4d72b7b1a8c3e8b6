//! Aggregate decode throughput of the serving engine (continuous batching) at 1, 8 and 32 concurrent
//! requests, for the tiny and small presets with random weights on the CPU backend. Every request
//! generates exactly its max_tokens (no end-of-turn token is set), so tokens/s compare across
//! concurrency; the wall clock includes each request's (short) prefill. Goal: ≥3× the single-request
//! rate at 32. Run: `cargo bench --bench serve`.

use std::sync::Arc;
use std::time::Instant;

use burn::backend::NdArray;
use hat::model::generation::sampling::SamplingParams;
use hat::serve::engine::{self, EngineConfig, Event, GenRequest};
use hat::serve::metrics::Metrics;
use hat::serve::model::BurnModel;
use hat::tokenizer::{train_bpe, TrainOptions};
use serde_json::Value;

fn main() {
    let text = std::fs::read_to_string("testdata/ifeval/input_data.jsonl")
        .expect("run from the repository root");
    let corpus: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["prompt"].as_str().map(str::to_string))
        .collect();
    let tok = train_bpe(
        corpus.clone(),
        &TrainOptions {
            vocab_size: 1024,
            min_frequency: 2,
        },
    )
    .expect("tokenizer");
    let prompt: Vec<u32> = tok
        .encode(corpus[0].as_str(), false)
        .expect("encode")
        .get_ids()[..48]
        .to_vec();
    let tok = Arc::new(tok);
    for (preset, max_tokens) in [("tiny", 64), ("small", 16)] {
        let model = BurnModel::<NdArray<f32>>::random(
            preset,
            tok.get_vocab_size(true),
            0,
            Default::default(),
        )
        .expect("model");
        let metrics = Arc::new(Metrics::default());
        let config = EngineConfig {
            queue_capacity: 64,
            max_batch: 32,
            max_context: 4096,
        };
        let (handle, thread) = engine::spawn(model, tok.clone(), config, metrics.clone());
        let run = |c: usize| -> f64 {
            let started = Instant::now();
            let receivers: Vec<_> = (0..c)
                .map(|i| {
                    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                    let mut params = SamplingParams::greedy(max_tokens);
                    params.seed = i as u64;
                    let req = GenRequest {
                        prompt: prompt.clone(),
                        params,
                        top_logprobs: 0,
                        guide: None,
                        events: tx,
                    };
                    handle
                        .submit(req)
                        .map_err(|e| format!("{e:?}"))
                        .expect("submit");
                    rx
                })
                .collect();
            let mut tokens = 0;
            for mut rx in receivers {
                while let Some(ev) = rx.blocking_recv() {
                    if let Event::Done {
                        completion_tokens, ..
                    } = ev
                    {
                        tokens += completion_tokens;
                        break;
                    }
                }
            }
            tokens as f64 / started.elapsed().as_secs_f64()
        };
        run(1); // warm-up
        let base = run(1);
        println!("serve/{preset}: concurrency  1: {base:>8.1} tok/s");
        for c in [8, 32] {
            let rate = run(c);
            println!(
                "serve/{preset}: concurrency {c:>2}: {rate:>8.1} tok/s  ({:.2}x single)",
                rate / base
            );
        }
        drop(handle);
        thread.join().expect("engine thread");
    }
}
