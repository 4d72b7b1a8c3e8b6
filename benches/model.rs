//! CPU prefill and decode throughput of the `tiny` and `small` presets (random weights) with f32,
//! bf16 and int8 projection weights (`--dtype`), what the reduced ones cost against f32 (largest
//! logit difference and greedy agreement, teacher-forced, over `HAT_BENCH_AGREE` decoded tokens),
//! and the f32 ratio to transformers' eager CPU forward on the same weights.
//!
//! Each shape's checkpoint is written to `target/bench-model/<shape>/`, with `ours.json`: this
//! run's figures and the logits at the prompt's last position, per dtype. Then
//! `python3 scripts/bench_transformers.py` measures transformers on it and writes
//! `transformers.json` there, which this bench reads on its next run to print the ratios
//! (`make bench-model` runs all three steps); `scripts/bench_llamacpp.py` converts the same
//! checkpoints to GGUF and runs this bench and llama.cpp in alternation (`make bench-llamacpp`).
//!
//! `HAT_BENCH_SHAPES` (default `tiny,small`) picks the shapes: the presets `tiny` and `small`
//! (Qwen3.5 hybrid MoE), and `small-qwen3`, a Qwen3-MoE (all full attention) of `small`'s width.
//!
//! `HAT_BENCH_PROMPT` (default 128) and `HAT_BENCH_DECODE` (default 64) set the prompt length
//! and the number of decoded tokens, `HAT_BENCH_DECODE_BATCH` (default 4) the rows of the batched
//! decode (one persistent batch, as the serve engine decodes), `HAT_BENCH_DTYPES` (default `f32,bf16,int8`) the weight types measured,
//! `HAT_BENCH_AGREE` (default 256; 0 skips it) the tokens of the comparison with f32. `HAT_BENCH_CHECKPOINT=DIR`
//! measures that checkpoint instead of the random presets: random weights say little about what
//! rounding costs a trained model (a random `small` is chaotic: rounding flips most greedy tokens).

use burn::backend::NdArray;
use clap::ValueEnum;
use hat::model::generation::agreement::agreement;
use hat::model::io::checkpoint::{save, ExpertLayout, SaveOptions};
use hat::model::presets::preset;
use hat::model::{Cache, CausalLm, ModelConfig, WeightDtype};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Instant;

type B = NdArray<f32>;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A bench shape: a preset, or `small-qwen3` (the Qwen3-MoE architecture at `small`'s width, so
/// that both architectures the toolkit serves are measured).
fn shape(name: &str) -> anyhow::Result<ModelConfig> {
    match name {
        "small-qwen3" => ModelConfig::from_json(&json!({
            "model_type": "qwen3_moe", "vocab_size": 32000, "hidden_size": 512, "intermediate_size": 1024,
            "num_hidden_layers": 12, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
            "moe_intermediate_size": 192, "num_experts": 16, "num_experts_per_tok": 2, "norm_topk_prob": true,
            "decoder_sparse_step": 1, "mlp_only_layers": [], "rms_norm_eps": 1e-6, "rope_theta": 1e6,
            "max_position_embeddings": 32768, "tie_word_embeddings": false
        })),
        other => preset(other, None),
    }
}

/// The bench's prompt: `len` tokens spread over the vocabulary.
fn prompt(m: &CausalLm<B>, len: usize) -> Vec<u32> {
    let v = m.config.vocab_size as u32;
    (0..len as u32).map(|i| (i * 7919 + 13) % v).collect()
}

/// The figures both this bench and the transformers script report, in tokens/s.
fn measure(m: &CausalLm<B>, prompt_len: usize, decode: usize, batch: usize) -> Value {
    let v = m.config.vocab_size as u32;
    let prompt = prompt(m, prompt_len);
    // Warm-up (allocator, thread pool).
    m.prefill(&prompt[..8], &mut m.new_cache())
        .expect("warm-up");

    let mut best_prefill = f64::MAX;
    let mut cache = m.new_cache();
    let mut last_logits = Vec::new();
    for _ in 0..3 {
        cache = m.new_cache();
        let t0 = Instant::now();
        last_logits = m.prefill(&prompt, &mut cache).expect("prefill");
        best_prefill = best_prefill.min(t0.elapsed().as_secs_f64());
    }
    let t0 = Instant::now();
    for step in 0..decode {
        m.decode_step(&[step as u32 % v], std::slice::from_mut(&mut cache))
            .expect("decode");
    }
    let single = decode as f64 / t0.elapsed().as_secs_f64();
    // Batched decode: `batch` sequences of different lengths (the prefilled one plus shorter ones),
    // stacked once into the persistent batch the serve engine decodes step after step (stacking
    // them again on every step would measure a copy of every cache, not the decode).
    let rows: Vec<_> = (0..batch)
        .map(|r| {
            let mut c = m.new_cache();
            m.prefill(&prompt[..prompt_len - r * 4], &mut c)
                .expect("prefill");
            c
        })
        .collect();
    let mut stacked = Cache::stack(&rows).expect("stack");
    let t0 = Instant::now();
    for step in 0..decode {
        let tokens: Vec<Vec<u32>> = (0..batch as u32)
            .map(|r| vec![(r * 31 + step as u32) % v])
            .collect();
        m.extend_stacked(&tokens, &mut stacked).expect("decode");
    }
    let batched = (batch * decode) as f64 / t0.elapsed().as_secs_f64();
    json!({
        "prefill_tokens_per_s": prompt_len as f64 / best_prefill,
        "decode_tokens_per_s": single,
        "decode_batch": batch,
        "decode_batch_tokens_per_s": batched,
        "last_logits": last_logits,
    })
}

fn main() {
    let prompt_len = env_usize("HAT_BENCH_PROMPT", 128);
    let decode = env_usize("HAT_BENCH_DECODE", 64);
    let batch = env_usize("HAT_BENCH_DECODE_BATCH", 4).max(1);
    let agree = env_usize("HAT_BENCH_AGREE", 256);
    let dtypes: Vec<WeightDtype> = std::env::var("HAT_BENCH_DTYPES")
        .unwrap_or_else(|_| "f32,bf16,int8".into())
        .split(',')
        .map(|d| {
            WeightDtype::from_str(d.trim(), true).unwrap_or_else(|_| {
                eprintln!("HAT_BENCH_DTYPES: unknown {d:?}; choose from f32, bf16, int8");
                std::process::exit(2)
            })
        })
        .collect();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-model");
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "model bench: prompt {prompt_len} tokens, {decode} decode steps, CPU NdArray, {threads} threads; \
         reduced dtypes against f32 over {agree} greedy tokens (teacher-forced)"
    );
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let checkpoint = std::env::var_os("HAT_BENCH_CHECKPOINT").map(PathBuf::from);
    let names: Vec<String> = match &checkpoint {
        Some(dir) => vec![dir.display().to_string()],
        None => std::env::var("HAT_BENCH_SHAPES")
            .unwrap_or_else(|_| "tiny,small".into())
            .split(',')
            .map(|s| s.trim().to_string())
            .collect(),
    };
    for name in &names {
        let dev = Default::default();
        // The same f32 values in every dtype, rounded for bf16 and int8.
        let build = |dtype| match &checkpoint {
            Some(dir) => CausalLm::<B>::load_as(dir, dtype, &dev).unwrap_or_else(|e| {
                eprintln!("HAT_BENCH_CHECKPOINT: {e:#}");
                std::process::exit(2)
            }),
            None => {
                let cfg = shape(name).unwrap_or_else(|e| {
                    eprintln!("HAT_BENCH_SHAPES: {e:#}; or small-qwen3");
                    std::process::exit(2)
                });
                CausalLm::<B>::init_as(&cfg, 0, dtype, &dev).expect("init")
            }
        };
        let f32_model = build(WeightDtype::F32);
        let dir = root.join(name);
        if checkpoint.is_none() && !dir.join("config.json").exists() {
            // Fused experts: the layout transformers' Qwen3.5 MoE class loads directly.
            let opts = SaveOptions {
                expert_layout: ExpertLayout::Fused,
                ..SaveOptions::default()
            };
            save(&f32_model, &dir, opts).expect("writing the bench checkpoint");
        }
        let mut by_dtype = serde_json::Map::new();
        let mut last_logits = serde_json::Map::new();
        for &dtype in &dtypes {
            let reduced;
            let m = match dtype {
                WeightDtype::F32 => &f32_model,
                _ => {
                    reduced = build(dtype);
                    &reduced
                }
            };
            let mut ours = measure(m, prompt_len, decode, batch);
            let error = match dtype {
                WeightDtype::F32 => String::new(),
                _ if agree == 0 => String::new(),
                _ => {
                    let a = agreement(&f32_model, m, &prompt(m, 16), agree).expect("agreement");
                    format!(
                        " | vs f32: max |dlogit| {:.2e} (max |logit| {:.2}), greedy {}/{}",
                        a.max_abs_diff, a.max_abs_logit, a.same_argmax, a.positions
                    )
                }
            };
            println!(
                "{name:>5} {:>4}: prefill {:>9.1} tok/s | decode {:>7.1} tok/s | decode x{batch} {:>7.1} tok/s | weights {:>6.1} MB{error}",
                dtype.name(),
                f(&ours, "prefill_tokens_per_s"),
                f(&ours, "decode_tokens_per_s"),
                f(&ours, "decode_batch_tokens_per_s"),
                m.weight_bytes() as f64 / 1e6,
            );
            let logits = ours.as_object_mut().and_then(|o| o.remove("last_logits"));
            last_logits.insert(dtype.name().into(), logits.unwrap_or_default());
            by_dtype.insert(dtype.name().into(), ours);
        }
        if checkpoint.is_none() {
            let record = json!({
                "prompt_tokens": prompt_len, "decode_tokens": decode, "threads": threads,
                "figures": by_dtype.clone(), "last_logits": last_logits,
            });
            std::fs::write(dir.join("ours.json"), record.to_string()).expect("writing ours.json");
        }
        let (Some(ours), None) = (by_dtype.get(WeightDtype::F32.name()), &checkpoint) else {
            continue;
        };
        match reference(&dir, prompt_len, decode) {
            Some(t) => println!(
                "{name:>5}: transformers prefill {:>9.1} tok/s | decode {:>7.1} tok/s  =>  f32 ratio prefill {:.2}x, decode {:.2}x",
                f(&t, "prefill_tokens_per_s"),
                f(&t, "decode_tokens_per_s"),
                f(&ours, "prefill_tokens_per_s") / f(&t, "prefill_tokens_per_s"),
                f(&ours, "decode_tokens_per_s") / f(&t, "decode_tokens_per_s"),
            ),
            None => println!(
                "{name:>5}: no transformers figures for these settings; run `python3 scripts/bench_transformers.py {}`",
                dir.display()
            ),
        }
    }
}

/// transformers' figures for this checkpoint, if measured with the same settings.
fn reference(dir: &Path, prompt_len: usize, decode: usize) -> Option<Value> {
    let text = std::fs::read_to_string(dir.join("transformers.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    (v["prompt_tokens"] == prompt_len
        && v["decode_tokens"] == decode
        && v["prefill_logits"] == "last")
        .then_some(v)
}
