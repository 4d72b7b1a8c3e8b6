//! bf16 and int8 projection weights (`--dtype`, `src/model/cpu/reduced.rs`): the rounding error of
//! each stored value, both products against the dequantised matrix, and a whole reduced model
//! against its f32 original — in less memory, and never for training.

use anyhow::Result;
use burn::backend::{Autodiff, NdArray};
use hat::model::cpu::reduced::ReducedMatrix;
use hat::model::generation::agreement::agreement;
use hat::model::io::checkpoint::{save, SaveOptions};
use hat::model::presets::preset;
use hat::model::{ids_tensor, CausalLm, WeightDtype};
use ndarray::ArrayView2;

type B = NdArray<f32>;

/// Deterministic values of mixed magnitudes: row r scaled by r + 1, a row of zeros, an outlier.
fn matrix(rows: usize, cols: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7919 % 1000) as f32 / 500.0 - 1.0) * (1.0 + (i / cols) as f32))
        .collect();
    v[..cols].fill(0.0);
    v[2 * cols + 3] = 40.0;
    v
}

/// `x: [m, k]` times the transpose of `w: [n, k]`, summed in f64.
fn reference(x: &[f32], w: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let mut out = vec![0f32; m * n];
    for r in 0..m {
        for c in 0..n {
            let dot: f64 = (0..k)
                .map(|i| x[r * k + i] as f64 * w[c * k + i] as f64)
                .sum();
            out[r * n + c] = dot as f32;
        }
    }
    out
}

/// Each row of `x` (rows of `k`) quantised to int8 with the scale `max|row| / 127`, as f32 again.
fn quantised_rows(x: &[f32], k: usize) -> Vec<f32> {
    x.chunks(k)
        .flat_map(|row| {
            let scale = row.iter().fold(0f32, |m, v| m.max(v.abs())) / 127.0;
            row.iter().map(move |v| {
                if scale > 0.0 {
                    (v / scale).round() * scale
                } else {
                    0.0
                }
            })
        })
        .collect()
}

#[test]
fn round_trip_error_is_bounded_per_row() {
    let (rows, cols) = (6, 77);
    let w = matrix(rows, cols);
    let int8 = ReducedMatrix::int8(&w, rows, cols).dequantised();
    let bf16 = ReducedMatrix::bf16(&w, rows, cols).dequantised();
    for r in 0..rows {
        let row = r * cols..(r + 1) * cols;
        let max = w[row.clone()].iter().fold(0f32, |m, v| m.max(v.abs()));
        // Rounding to the nearest of 255 levels: at most half a step, max / 254.
        let step = max / 127.0;
        for i in row {
            let e8 = (w[i] - int8[i]).abs();
            assert!(
                e8 <= 0.5 * step * (1.0 + 1e-5),
                "int8 row {r}: {e8} vs step {step}"
            );
            // bf16 keeps 8 significant bits: relative error at most half an ulp, 2^-8.
            let e16 = (w[i] - bf16[i]).abs();
            assert!(e16 <= w[i].abs() * 2f32.powi(-8), "bf16 row {r}: {e16}");
        }
    }
    // A row of zeros stays exact (scale 0, no division by it).
    assert!(int8[..cols].iter().all(|&v| v == 0.0));
}

#[test]
fn bf16_rounding_is_round_to_nearest_even_as_the_half_crate_does() {
    // Ties both ways (1 + 2⁻⁸ rounds down to even, 1 + 3·2⁻⁸ up), the largest finite value (up to
    // infinity), subnormals, infinities, quiet and signalling NaNs of both signs, and a sweep of
    // bit patterns over every exponent.
    let mut values = vec![
        0.0,
        -0.0,
        1.0 + 2f32.powi(-8),
        1.0 + 3.0 * 2f32.powi(-8),
        -(1.0 + 2f32.powi(-8)),
        f32::MAX,
        f32::MIN_POSITIVE,
        1e-40,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001),
        f32::from_bits(0xff80_8000),
    ];
    values.extend((0..65_536u32).map(|i| f32::from_bits(i.wrapping_mul(65_537) ^ 0x5a5a)));
    let got = ReducedMatrix::bf16(&values, 1, values.len()).dequantised();
    for (v, g) in values.iter().zip(&got) {
        let want = half::bf16::from_f32(*v).to_f32();
        assert_eq!(g.to_bits(), want.to_bits(), "{v:e} ({:#010x})", v.to_bits());
    }
}

#[test]
fn both_products_equal_the_dequantised_product() {
    // Few rows (dot products, up to 16) and many rows: AMX tiles where the CPU has them and rows
    // are whole 64-byte blocks (every k here from 64 up), else register blocks of the dot-product
    // instructions (4 × 4, with row and channel tails here), else gemm panels. Channel counts that
    // leave a short last band or tile (one tile or two per step), an inner size that splits the
    // weight into two gemm panels (40 × 8000), inner sizes with a vector tail, products on both
    // sides of the thread split.
    for (n, k) in [
        (5, 7),
        (40, 77),
        (16, 64),
        (80, 128),
        (300, 512),
        (1000, 33),
        (40, 8000),
    ] {
        let w = matrix(n, k);
        for reduced in [ReducedMatrix::int8(&w, n, k), ReducedMatrix::bf16(&w, n, k)] {
            let wd = reduced.dequantised();
            for m in [1, 2, 3, 6, 16, 17, 40] {
                let x: Vec<f32> = (0..m * k).map(|i| ((i % 13) as f32 - 6.0) / 7.0).collect();
                let got = reduced.matmul(ArrayView2::from_shape((m, k), &x).unwrap());
                assert_eq!(got.dim(), (m, n));
                // Each product reduces the activations too: bf16 rounds them, int8 quantises each
                // row with its own scale.
                let x = match reduced.dtype_name() {
                    "bf16" => x
                        .iter()
                        .map(|&v| half::bf16::from_f32(v).to_f32())
                        .collect(),
                    _ => quantised_rows(&x, k),
                };
                let want = reference(&x, &wd, m, n, k);
                let scale = want.iter().fold(1f32, |a, v| a.max(v.abs()));
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - w).abs() <= 1e-5 * scale,
                        "{n}x{k}, {m} rows: {g} vs {w}"
                    );
                }
            }
        }
    }
}

#[test]
fn int8_sums_are_exact() {
    // Weights and activations whose rows reach ±127 exactly: both scales are 1, so every output
    // is an integer sum, which i32 holds exactly and f32 too below 2²⁴ (here under 127² · 1024).
    // Rows of 1,000 go through the dot products and, for more than 16 activation rows, register
    // blocks (VNNI) or gemm panels; rows of 1,024 (whole 64-byte blocks) through AMX tiles there
    // where the CPU has them.
    for k in [1000, 1024] {
        exact_int8_sums(33, k);
    }
}

fn exact_int8_sums(n: usize, k: usize) {
    let w: Vec<f32> = (0..n * k)
        .map(|i| {
            if i % k == 0 {
                127.0
            } else {
                ((i * 7919 % 255) as f32 - 127.0).round()
            }
        })
        .collect();
    let reduced = ReducedMatrix::int8(&w, n, k);
    for m in [1, 3, 17, 40] {
        let x: Vec<f32> = (0..m * k)
            .map(|i| {
                if i % k == 1 {
                    -127.0
                } else {
                    (i * 104_729 % 255) as f32 - 127.0
                }
            })
            .collect();
        let got = reduced.matmul(ArrayView2::from_shape((m, k), &x).unwrap());
        let want = reference(&x, &w, m, n, k);
        assert_eq!(
            got.iter().copied().collect::<Vec<_>>(),
            want,
            "{m} rows of {k}"
        );
    }
}

#[test]
fn storage_is_a_half_and_a_quarter() {
    let (rows, cols) = (64, 256);
    let w = matrix(rows, cols);
    assert_eq!(ReducedMatrix::bf16(&w, rows, cols).bytes(), rows * cols * 2);
    assert_eq!(
        ReducedMatrix::int8(&w, rows, cols).bytes(),
        rows * cols + rows * 4
    );
}

fn logits(m: &CausalLm<B>, ids: &[u32]) -> Vec<f32> {
    let ids = ids_tensor::<B>(&[ids.to_vec()], &Default::default()).unwrap();
    m.forward(ids).logits.into_data().to_vec().unwrap()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()))
}

/// Weight bytes without the token embedding (always f32): what `--dtype` shrinks.
fn body_bytes(m: &CausalLm<B>) -> f64 {
    let c = &m.config;
    (m.weight_bytes() - c.vocab_size * c.hidden_size * 4) as f64
}

#[test]
fn a_reduced_model_follows_the_f32_model_in_less_memory() -> Result<()> {
    let dev = Default::default();
    let cfg = preset("tiny", None)?;
    let f32_model = CausalLm::<B>::init(&cfg, 1, &dev)?;
    let prompt: Vec<u32> = (0..40).map(|i| (i * 7919 + 13) % 4096).collect();
    let full = logits(&f32_model, &prompt);
    // This model's logits reach about 0.75. Measured (the activations reduced too): bf16 moves a
    // position's logits by 0.0015–0.009, int8 by 0.005–0.009 — except where the rounding flips a
    // near-tie of an MoE router (another expert runs), which moves that position by ~0.05: 2 of 40
    // prompt positions with bf16. So `typical` bounds 9 positions in 10 and FLIP every one.
    const FLIP: f32 = 0.1;
    for (dtype, typical, body_ratio) in [
        (WeightDtype::Bf16, 1e-2, 0.55),
        (WeightDtype::Int8, 1.5e-2, 0.30),
    ] {
        let reduced = CausalLm::<B>::init_as(&cfg, 1, dtype, &dev)?;
        // The projections shrink to about a half (bf16) or a quarter (int8, plus its scales):
        // measured 0.504 and 0.271 of the f32 bytes without the embedding.
        let ratio = body_bytes(&reduced) / body_bytes(&f32_model);
        assert!(
            ratio <= body_ratio,
            "{dtype:?}: body bytes ratio {ratio:.3}"
        );
        // The whole prompt's logits (the many-rows product, through gemm panels).
        let got = logits(&reduced, &prompt);
        let v = cfg.vocab_size;
        let mut moved: Vec<f32> = got
            .chunks(v)
            .zip(full.chunks(v))
            .map(|(a, b)| max_abs_diff(a, b))
            .collect();
        moved.sort_by(f32::total_cmp);
        let ninth_decile = moved[moved.len() * 9 / 10 - 1];
        assert!(moved[0] > 0.0, "{dtype:?}: the weights were not rounded");
        assert!(ninth_decile < typical, "{dtype:?} prefill: {moved:?}");
        assert!(
            moved[moved.len() - 1] < FLIP,
            "{dtype:?} prefill: {moved:?}"
        );
        // Decoding (the few-rows dot products), teacher-forced on the f32 model's greedy output:
        // measured 62 (bf16) and 64 (int8) of 64 tokens the same.
        let a = agreement(&f32_model, &reduced, &prompt, 64)?;
        assert!(
            a.rate() >= 0.9 && a.max_abs_diff < FLIP,
            "{dtype:?} decode: {a:?}"
        );
        // Exported, a reduced model is saved as the f32 values it computes with; its products
        // reduce the activations too, so the export is loaded back in the same dtype (reducing
        // those values again changes none of them).
        let tmp = tempfile::tempdir()?;
        save(&reduced, tmp.path(), SaveOptions::default())?;
        let reloaded = CausalLm::<B>::load_as(tmp.path(), dtype, &dev)?;
        let diff = max_abs_diff(&logits(&reloaded, &prompt), &got);
        assert!(diff < 1e-5, "{dtype:?} exported: {diff}");
    }
    Ok(())
}

#[test]
fn reduced_weights_are_refused_for_training() {
    let cfg = preset("tiny", None).unwrap();
    for dtype in [WeightDtype::Bf16, WeightDtype::Int8] {
        let dev = Default::default();
        let err = CausalLm::<Autodiff<B>>::init_as(&cfg, 0, dtype, &dev)
            .expect_err("an autodiff model cannot hold reduced weights");
        assert!(err.to_string().contains("need f32"), "{err}");
    }
}
