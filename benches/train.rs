//! CPU training throughput (tokens/s) of the `tiny` and `small` presets (random weights), and the
//! ratio to a PyTorch/transformers training step on the same weights and batch.
//!
//! How to run (three steps):
//!
//! ```text
//! cargo bench --bench train               # our figures; writes target/bench-train/<preset>/
//! python3 scripts/bench_train_torch.py    # torch figures -> target/bench-train/<preset>/torch_train.json
//! cargo bench --bench train               # again: now prints the ratio
//! ```
//!
//! One training step, identical on both sides: a fixed batch of token ids (row r, position i:
//! `(i*7919 + 13 + r*101) % vocab`), a forward over the whole sequence, next-token cross-entropy on
//! every position (mean over the batch's B×(T-1) targets; the loss mask is all ones) plus the router
//! load-balancing loss × the config's `router_aux_loss_coef` (no MTP loss: transformers has no MTP
//! head), backward, AdamW (lr 1e-4, weight decay 0.01 on matrices, betas 0.9/0.999, eps 1e-8), grads
//! dropped. It uses the crate's own training pieces (`to_tensors`, `micro_batch_loss`,
//! `step_gradients`, `AdamW`) as `teacher-distill train` does, without clipping or metrics: the batch
//! is cut into one micro-batch per row, which `step_gradients` runs on parallel threads (so the
//! router aux loss is the mean of the rows' aux losses, a hair off transformers' whole-batch value;
//! the cross-entropy is the same). tokens/s = B×T / mean step time over
//! `HAT_BENCH_TRAIN_STEPS` steps after one warm-up step.
//!
//! Environment (the Python script reads the same): `HAT_BENCH_TRAIN_BATCH` (default 2),
//! `HAT_BENCH_TRAIN_SEQ` (default 512 for `tiny`, 256 for `small`; when set, it applies to every
//! preset), `HAT_BENCH_TRAIN_STEPS` (default 3), `HAT_BENCH_TRAIN_PRESETS` (default `tiny,small`).
//! `small` defaults to 256 tokens a row because at 512 the torch side took ~60 s a step on a 2-core
//! box (over 4 minutes for the four steps). Each preset's checkpoint (fused expert layout, the one transformers'
//! Qwen3.5 MoE class loads) is written once to `target/bench-train/<preset>/`; `torch_train.json`
//! there is used only if its batch/seq match this run's. The first-step loss of both sides is printed
//! too, as a check that the two steps compute the same thing.

use burn::backend::{Autodiff, NdArray};
use hat::model::io::checkpoint::{save, ExpertLayout, SaveOptions};
use hat::model::presets::preset;
use hat::model::CausalLm;
use hat::train::batch::{to_tensors, BatchTensors};
use hat::train::optim::{AdamW, AdamWConfig};
use hat::train::trainer::{micro_batch_loss, step_gradients};
use hat::train::view::TrainingView;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Instant;

type Inner = NdArray<f32>;
type B = Autodiff<Inner>;

const LR: f64 = 1e-4;

/// Tokens per row when `HAT_BENCH_TRAIN_SEQ` is unset (scripts/bench_train_torch.py has the same).
fn default_seq(preset: &str) -> usize {
    if preset == "small" {
        256
    } else {
        512
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The fixed batch: `batch` rows of `seq` ids, every target trained.
fn fixed_batch(vocab: usize, batch: usize, seq: usize) -> Vec<TrainingView> {
    (0..batch)
        .map(|row| TrainingView {
            id: format!("bench-{row}"),
            tokens: (0..seq)
                .map(|i| ((i * 7919 + 13 + row * 101) % vocab) as u32)
                .collect(),
            loss_mask: vec![1; seq],
            segments: Vec::new(),
            weights: None,
        })
        .collect()
}

struct Figures {
    tokens_per_s: f64,
    mean_step_s: f64,
    first_loss: f64,
}

/// One optimizer step (forward, loss, backward, AdamW); returns the updated model and the loss
/// (CE mean + coef × aux, the value transformers reports as `loss`).
fn step(
    model: CausalLm<B>,
    opt: &mut AdamW<Inner>,
    rows: &[BatchTensors<B>],
    aux_coef: f64,
) -> (CausalLm<B>, f64) {
    let norm: f32 = rows.iter().map(|b| b.trained).sum();
    let (parts, mut buffer) = step_gradients(&model, rows.to_vec(), |m, b| {
        micro_batch_loss(m, b, norm, aux_coef, rows.len(), 0.0)
    })
    .expect("loss");
    let model = opt.step::<B, _>(model, LR, &mut buffer);
    (model, parts.ce_sum / norm as f64 + aux_coef * parts.aux)
}

fn measure(mut model: CausalLm<B>, batch: usize, seq: usize, steps: usize) -> Figures {
    let device = Default::default();
    let views = fixed_batch(model.config.vocab_size, batch, seq);
    let tensors: Vec<BatchTensors<B>> = views
        .iter()
        .map(|v| to_tensors::<B>(&[v], 0, false, &device).expect("batch tensors"))
        .collect();
    let trained: f32 = tensors.iter().map(|b| b.trained).sum();
    assert_eq!(trained as usize, batch * (seq - 1));
    let aux_coef = model.config.router_aux_loss_coef;
    let mut opt = AdamW::<Inner>::new(AdamWConfig {
        weight_decay: 0.01,
        ..AdamWConfig::default()
    });
    // Warm-up step (allocator, thread pool, optimizer state); its loss is the untrained model's.
    let (m, first_loss) = step(model, &mut opt, &tensors, aux_coef);
    model = m;
    let t0 = Instant::now();
    for _ in 0..steps {
        let (m, _) = step(model, &mut opt, &tensors, aux_coef);
        model = m;
    }
    let mean_step_s = t0.elapsed().as_secs_f64() / steps.max(1) as f64;
    Figures {
        tokens_per_s: (batch * seq) as f64 / mean_step_s,
        mean_step_s,
        first_loss,
    }
}

fn main() {
    let batch = env_usize("HAT_BENCH_TRAIN_BATCH", 2);
    let steps = env_usize("HAT_BENCH_TRAIN_STEPS", 3).max(1);
    let presets =
        std::env::var("HAT_BENCH_TRAIN_PRESETS").unwrap_or_else(|_| "tiny,small".to_string());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-train");
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    // The allocator settings `teacher-distill train` makes for a model this wide; they hold for the
    // whole process, so with several presets the widest decides (run one preset alone for its own).
    let widest = presets
        .split(',')
        .filter_map(|name| preset(name.trim(), None).ok())
        .map(|cfg| cfg.hidden_size)
        .max()
        .unwrap_or(0);
    hat::heap::keep_freed_memory(widest);
    println!(
        "train bench: batch {batch}, {steps} timed steps after 1 warm-up, AdamW lr {LR}, CPU NdArray f32 autodiff, {threads} threads"
    );
    for name in presets.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let seq = env_usize("HAT_BENCH_TRAIN_SEQ", default_seq(name));
        assert!(seq >= 2, "HAT_BENCH_TRAIN_SEQ must be at least 2");
        let cfg = preset(name, None).expect("preset");
        let model = CausalLm::<B>::init(&cfg, 0, &Default::default()).expect("init");
        let dir = root.join(name);
        if !dir.join("config.json").exists() {
            // Fused experts: the layout transformers' Qwen3.5 MoE class loads directly.
            let opts = SaveOptions {
                expert_layout: ExpertLayout::Fused,
                ..SaveOptions::default()
            };
            save(&model, &dir, opts).expect("writing the bench checkpoint");
        }
        let ours = measure(model, batch, seq, steps);
        println!(
            "{name:>5}: train {:>8.1} tok/s (batch {batch} x {seq}, {:.2} s/step, first loss {:.4})",
            ours.tokens_per_s, ours.mean_step_s, ours.first_loss
        );
        match reference(&dir, batch, seq) {
            Some(t) => {
                let f = |k: &str| t[k].as_f64().unwrap_or(f64::NAN);
                println!(
                    "{name:>5}: train {:>8.1} tok/s | torch {:>8.1} tok/s ({} threads, first loss {:.4})  =>  ratio {:.2}x",
                    ours.tokens_per_s,
                    f("tokens_per_s"),
                    t["torch_threads"],
                    f("first_loss"),
                    ours.tokens_per_s / f("tokens_per_s"),
                );
            }
            None => println!(
                "{name:>5}: no torch figures for batch {batch} x seq {seq}; run `HAT_BENCH_TRAIN_BATCH={batch} HAT_BENCH_TRAIN_SEQ={seq} python3 scripts/bench_train_torch.py {}`",
                dir.display()
            ),
        }
    }
}

/// The torch figures for this checkpoint, if measured with the same batch and sequence length.
fn reference(dir: &Path, batch: usize, seq: usize) -> Option<Value> {
    let text = std::fs::read_to_string(dir.join("torch_train.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    (v["batch"] == batch && v["seq"] == seq).then_some(v)
}
