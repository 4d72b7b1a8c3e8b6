//! Throughput and memory of the model on the CUDA backend (issue 29; `docs/gpu/`): the `small`
//! preset in f32 and bf16, and the `qwen3.5-35b-a3b` shape in bf16 with its layers cut to
//! `HAT_GPU_LAYERS` (default `4,8`: a whole model's random weights take longer to make on the host
//! than a device lease lasts), from which the 40-layer figures are extrapolated per layer.
//!
//! `cargo bench --features cuda --bench gpu`; `scripts/gpu_check.sh` runs it on the device with
//! the parity tests and the SFT steps. Needs `nvidia-smi` on the PATH for the memory column.
//!
//! `HAT_GPU_PROMPT` (default 512) and `HAT_GPU_DECODE` (default 32) set the prompt length and the
//! decode steps, `HAT_GPU_BATCH` (default 8) the rows of the batched decode, `HAT_GPU_SMALL=0`
//! skips `small`. Each figure is the best of two timed runs after one untimed run of the same
//! shape (CubeCL compiles and autotunes its kernels on first use).

use burn::backend::Cuda;
use burn::prelude::*;
use burn::tensor::bf16;
use hat::model::io::weights::{Init, WeightSource};
use hat::model::presets::preset;
use hat::model::{CausalLm, ModelConfig};
use rayon::prelude::*;
use std::time::Instant;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Random weights fast enough for billions of them: a uniform value with the requested standard
/// deviation from a hash of (tensor, index), filled in parallel. Speed, not the distribution's
/// shape, is what matters here; the router's logits still spread tokens over the experts.
struct FastInit {
    tensor: u64,
}

fn hash(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl WeightSource for FastInit {
    fn contains(&self, _name: &str) -> bool {
        true
    }

    fn get(&mut self, _name: &str, shape: &[usize], init: Init) -> anyhow::Result<Vec<f32>> {
        let n: usize = shape.iter().product();
        self.tensor += 1;
        let base = self.tensor << 40;
        // Uniform in (0, 1] from a hash of (tensor, index).
        let uniform =
            move |i: usize| ((hash(base + i as u64) >> 40) + 1) as f64 / (1u64 << 24) as f64;
        let fill = |f: &(dyn Fn(f64) -> f64 + Sync)| {
            (0..n)
                .into_par_iter()
                .map(|i| f(uniform(i)) as f32)
                .collect()
        };
        Ok(match init {
            Init::Zeros => vec![0.0; n],
            Init::Ones => vec![1.0; n],
            // Uniform on [-a, a] has standard deviation a / sqrt(3).
            Init::Normal(std) => fill(&|u| (2.0 * u - 1.0) * std * 3f64.sqrt()),
            Init::LogUniform(lo, hi) => fill(&|u| (lo + (hi - lo) * u).ln()),
        })
    }
}

/// `qwen3.5-35b-a3b` with its first `layers` layers (three Gated DeltaNet to one attention
/// layer, as in the full model) and no MTP head.
fn shape_35b(layers: usize) -> anyhow::Result<ModelConfig> {
    let mut json = preset("qwen3.5-35b-a3b", None)?.to_hf_json();
    let o = json.as_object_mut().expect("a config is a JSON object");
    o.insert("num_hidden_layers".into(), layers.into());
    o.remove("layer_types");
    o.insert("mtp_num_hidden_layers".into(), 0.into());
    ModelConfig::from_json(&json)
}

/// GPU memory in use, MiB, as `nvidia-smi` reports it (the process's allocator pool included).
fn gpu_memory_mib() -> Option<f64> {
    let out = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=memory.used", "--format=csv,noheader,nounits"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

struct Figures {
    /// Seconds for the prompt's prefill, and for one decode step of one row and of `batch` rows.
    prefill_s: f64,
    decode_s: f64,
    batch_decode_s: f64,
    memory_mib: Option<f64>,
}

fn best_of_two(mut run: impl FnMut() -> f64) -> f64 {
    run(); // compiles and autotunes the shapes' kernels
    run().min(run())
}

fn measure<Bk: Backend>(
    m: &CausalLm<Bk>,
    prompt_len: usize,
    decode: usize,
    batch: usize,
) -> Figures {
    let v = m.config.vocab_size as u32;
    let prompt: Vec<u32> = (0..prompt_len as u32)
        .map(|i| (i * 7919 + 13) % v)
        .collect();
    let prefill_s = best_of_two(|| {
        let t0 = Instant::now();
        m.prefill(&prompt, &mut m.new_cache()).expect("prefill");
        t0.elapsed().as_secs_f64()
    });
    let decode_rows = |rows: usize| {
        best_of_two(|| {
            let mut caches: Vec<_> = (0..rows)
                .map(|_| {
                    let mut c = m.new_cache();
                    m.prefill(&prompt, &mut c).expect("prefill");
                    c
                })
                .collect();
            let t0 = Instant::now();
            for step in 0..decode {
                let tokens: Vec<u32> = (0..rows as u32)
                    .map(|r| (r * 31 + step as u32) % v)
                    .collect();
                m.decode_step(&tokens, &mut caches).expect("decode");
            }
            t0.elapsed().as_secs_f64() / decode as f64
        })
    };
    let decode_s = decode_rows(1);
    let batch_decode_s = decode_rows(batch);
    Figures {
        prefill_s,
        decode_s,
        batch_decode_s,
        memory_mib: gpu_memory_mib(),
    }
}

fn report(label: &str, f: &Figures, prompt_len: usize, batch: usize) {
    println!(
        "| {label} | {:.0} | {:.1} | {:.1} | {:.1} | {} |",
        prompt_len as f64 / f.prefill_s,
        1.0 / f.decode_s,
        batch as f64 / f.batch_decode_s,
        f.decode_s * 1e3,
        f.memory_mib
            .map_or("–".into(), |m| format!("{:.1}", m / 1024.0)),
    );
}

fn main() -> anyhow::Result<()> {
    let prompt_len = env_usize("HAT_GPU_PROMPT", 512);
    let decode = env_usize("HAT_GPU_DECODE", 32);
    let batch = env_usize("HAT_GPU_BATCH", 8);
    let layers: Vec<usize> = std::env::var("HAT_GPU_LAYERS")
        .unwrap_or_else(|_| "4,8".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let dev = Default::default();
    println!("prompt {prompt_len} tokens, {decode} decode steps, batched decode of {batch} rows\n");
    println!("| model | prefill tok/s | decode tok/s | decode x{batch} tok/s | ms / decode step | GPU memory GiB |");
    println!("|---|---|---|---|---|---|");
    if env_usize("HAT_GPU_SMALL", 1) != 0 {
        let cfg = preset("small", None)?;
        let m = CausalLm::<Cuda<f32>>::from_source(&cfg, &mut FastInit { tensor: 0 }, &dev)?;
        report(
            "small f32",
            &measure(&m, prompt_len, decode, batch),
            prompt_len,
            batch,
        );
        drop(m);
        let m = CausalLm::<Cuda<bf16>>::from_source(&cfg, &mut FastInit { tensor: 0 }, &dev)?;
        report(
            "small bf16",
            &measure(&m, prompt_len, decode, batch),
            prompt_len,
            batch,
        );
    }
    let mut per_depth = Vec::new();
    for &l in &layers {
        let t0 = Instant::now();
        let m =
            CausalLm::<Cuda<bf16>>::from_source(&shape_35b(l)?, &mut FastInit { tensor: 0 }, &dev)?;
        let made = t0.elapsed().as_secs_f64();
        let params = m.num_params();
        let f = measure(&m, prompt_len, decode, batch);
        report(
            &format!(
                "35B-A3B shape, {l} layers, bf16 ({:.2} B params, made in {made:.0} s)",
                params as f64 / 1e9
            ),
            &f,
            prompt_len,
            batch,
        );
        per_depth.push((l, f));
        drop(m);
    }
    // Per-layer cost from the two depths measured, then the whole model's 40 layers.
    if let [(l0, a), (l1, b), ..] = per_depth.as_slice() {
        let full = 40.0;
        let extrapolate = |x: f64, y: f64| x + (y - x) / (*l1 - *l0) as f64 * (full - *l0 as f64);
        let prefill = extrapolate(a.prefill_s, b.prefill_s);
        let step = extrapolate(a.decode_s, b.decode_s);
        let batch_step = extrapolate(a.batch_decode_s, b.batch_decode_s);
        println!(
            "\n40 layers, extrapolated from {l0} and {l1}: prefill {:.0} tok/s ({prefill:.2} s for {prompt_len} tokens), \
             decode {:.1} tok/s ({:.1} ms a step), decode x{batch} {:.1} tok/s",
            prompt_len as f64 / prefill,
            1.0 / step,
            step * 1e3,
            batch as f64 / batch_step,
        );
        // An episode of the agent replay (docs/learning-default.md: ~2,500 prompt tokens): the
        // prompt, a 40-token tool call, its ~200-token result prefilled on the cached prefix, and
        // a 60-token reply; prefill time scaled linearly from the measured prompt length.
        let per_token = prefill / prompt_len as f64;
        let episode = per_token * 2700.0 + step * 100.0;
        println!(
            "an agent episode (2,500 + 200 prompt tokens, 40 + 60 output tokens) at one sequence: {episode:.2} s"
        );
    }
    Ok(())
}
