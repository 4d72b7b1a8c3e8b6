//! OPD throughput of the `tiny` and `small` presets (random weights, a BPE tokenizer trained on the
//! general prompts): two `opd` steps of the sampled-token loss, each split into sampling (batched
//! decode with log-probs), teacher scoring (one teacher-forced pass over the samples) and the update,
//! printed as sampled tokens per second of each phase. The student and the teacher are two random
//! initialisations of the same shape, so the samples run to `max_new_tokens`.
//!
//! ```text
//! cargo bench --bench opd
//! ```
//!
//! Environment: `HAT_BENCH_OPD_PRESETS` (default `tiny,small`), `HAT_BENCH_OPD_PROMPTS` (prompts per
//! step, default 8), `HAT_BENCH_OPD_TOKENS` (max new tokens, default 64), `HAT_BENCH_OPD_STEPS`
//! (default 2; the figures are the mean over the steps).

use std::sync::atomic::AtomicBool;

use burn::backend::{Autodiff, NdArray};
use hat::general::prompts::{generate, Split};
use hat::model::presets::preset;
use hat::model::CausalLm;
use hat::opd::cli::prompts_of;
use hat::opd::reverse_kl::{LossFn, ReverseKlConfig};
use hat::opd::trainer::{train, OpdConfig, OpdLoss, RunInputs};
use hat::tokenizer::{save_hf, train_bpe, TrainOptions, QWEN3_CHAT_TEMPLATE};
use hat::train::optim::AdamWConfig;
use serde_json::Value;

type B = Autodiff<NdArray<f32>>;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let presets = std::env::var("HAT_BENCH_OPD_PRESETS").unwrap_or("tiny,small".into());
    let (per_step, new_tokens, steps) = (
        env_usize("HAT_BENCH_OPD_PROMPTS", 8),
        env_usize("HAT_BENCH_OPD_TOKENS", 64),
        env_usize("HAT_BENCH_OPD_STEPS", 2),
    );
    let rows: Vec<Value> = generate(Split::Train, 64, 0)
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect();
    let corpus: Vec<String> = rows
        .iter()
        .flat_map(|r| r["messages"].as_array().unwrap().clone())
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    let tok = train_bpe(
        corpus,
        &TrainOptions {
            vocab_size: 1000,
            min_frequency: 2,
        },
    )
    .unwrap();
    let prompts: Vec<_> = rows
        .iter()
        .enumerate()
        .flat_map(|(i, r)| prompts_of(r, "bench", i + 1).unwrap())
        .collect();
    println!("preset | sampling tok/s | teacher tok/s | update tok/s | sampled tokens/step");
    for name in presets.split(',') {
        let dirs: Vec<tempfile::TempDir> = [1, 2]
            .iter()
            .map(|&seed| {
                let dir = tempfile::tempdir().unwrap();
                save_hf(&tok, dir.path(), QWEN3_CHAT_TEMPLATE, 4096).unwrap();
                let cfg = preset(name, Some(tok.get_vocab_size(true))).unwrap();
                let m = CausalLm::<NdArray<f32>>::init(&cfg, seed, &Default::default()).unwrap();
                hat::model::io::checkpoint::save(&m, dir.path(), Default::default()).unwrap();
                dir
            })
            .collect();
        let out = tempfile::tempdir().unwrap();
        let cfg = OpdConfig {
            max_steps: steps,
            learning_rate: 1e-4,
            warmup_steps: 0,
            adamw: AdamWConfig::default(),
            max_grad_norm: 1.0,
            seed: 0,
            batch_tokens: 8192,
            prompts_per_step: per_step,
            domain_share: 0.0,
            teacher_top_k: 20,
            num_generations: 1,
            max_new_tokens: new_tokens,
            temperature: 1.0,
            loss: OpdLoss::ReverseKl(ReverseKlConfig {
                kl_penalty_coef: 1.0,
                kl_discount_factor: 0.0,
                loss_fn: LossFn::ImportanceSampling,
                epsilon: 0.2,
            }),
            save_steps: 0,
            eval_steps: 0,
        };
        let device = Default::default();
        let inputs = RunInputs {
            prompts: &prompts,
            domain: &[],
            eval: &[],
            tokenizer_dir: dirs[0].path(),
            out: out.path(),
        };
        train::<B>(
            &cfg,
            CausalLm::<B>::load(dirs[0].path(), &device).unwrap(),
            CausalLm::<B>::load(dirs[1].path(), &device).unwrap(),
            &inputs,
            false,
            &AtomicBool::new(false),
            &device,
        )
        .unwrap();
        let lines: Vec<Value> = std::fs::read_to_string(out.path().join("metrics.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let mean = |key: &str| {
            lines.iter().map(|l| l[key].as_f64().unwrap()).sum::<f64>() / lines.len() as f64
        };
        println!(
            "{name} | {:.0} | {:.0} | {:.0} | {:.0}",
            mean("tokens_per_s/sampling"),
            mean("tokens_per_s/teacher"),
            mean("tokens_per_s/update"),
            mean("completions/mean_length") * mean("completions"),
        );
    }
}
