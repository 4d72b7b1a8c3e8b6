//! Where parameter values come from (a checkpoint or a seeded random init) and how they are
//! exported again under Hugging Face names and layouts.
//!
//! Modules are built by asking a [`WeightSource`] for each tensor by its HF name, in HF layout
//! (`Linear` = `[out, in]`, fused experts = `[E, 2I, H]` / `[E, H, I]`, conv = `[C, 1, K]`); the
//! module converts to its own layout. Export walks the modules with an [`HfVisitor`] that receives
//! each parameter plus the [`HfLayout`] needed to turn it back into HF tensors.

use crate::model::cpu::backend::owned;
use crate::model::cpu::reduced::ReducedMatrix;
use crate::model::layers::linear::Linear;
use crate::model::layers::weight::{Weight, WeightDtype};
use anyhow::{bail, Result};
use burn::module::Param;
use burn::prelude::*;
use burn::tensor::TensorData;

/// How a parameter is initialised when it is not loaded from a checkpoint (HF `_init_weights`).
#[derive(Clone, Copy, Debug)]
pub enum Init {
    Zeros,
    Ones,
    /// Normal(0, std).
    Normal(f64),
    /// `ln(U(lo, hi))`, used for the DeltaNet `A_log`.
    LogUniform(f64, f64),
}

/// A provider of f32 tensors by HF name, in HF layout, row-major.
pub trait WeightSource {
    /// Returns the values of `name`; implementations must check that the stored shape equals `shape`.
    fn get(&mut self, name: &str, shape: &[usize], init: Init) -> Result<Vec<f32>>;
    /// Whether `name` can be provided (optional parts such as the MTP head are skipped if not).
    fn contains(&self, name: &str) -> bool;
    /// How the projections' weights are to be stored ([`linear`], the experts); f32 unless the
    /// source is wrapped in [`StoredAs`].
    fn dtype(&self) -> WeightDtype {
        WeightDtype::F32
    }
}

/// `src` whose projections are stored as `dtype` (inference with `--dtype`).
pub struct StoredAs<'a> {
    pub src: &'a mut dyn WeightSource,
    pub dtype: WeightDtype,
}

impl WeightSource for StoredAs<'_> {
    fn get(&mut self, name: &str, shape: &[usize], init: Init) -> Result<Vec<f32>> {
        self.src.get(name, shape, init)
    }

    fn contains(&self, name: &str) -> bool {
        self.src.contains(name)
    }

    fn dtype(&self) -> WeightDtype {
        self.dtype
    }
}

/// Deterministic random initialisation (SplitMix64 + Box-Muller), so a seed fixes a model.
pub struct RandomInit {
    state: u64,
}

impl RandomInit {
    pub fn new(seed: u64) -> Self {
        Self {
            state: seed ^ 0x9E37_79B9_7F4A_7C15,
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: never 0, so `ln` below is finite.
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

impl WeightSource for RandomInit {
    fn contains(&self, _name: &str) -> bool {
        true
    }

    fn get(&mut self, _name: &str, shape: &[usize], init: Init) -> Result<Vec<f32>> {
        let n: usize = shape.iter().product();
        Ok(match init {
            Init::Zeros => vec![0.0; n],
            Init::Ones => vec![1.0; n],
            Init::Normal(std) => (0..n).map(|_| (self.normal() * std) as f32).collect(),
            Init::LogUniform(lo, hi) => (0..n)
                .map(|_| (lo + (hi - lo) * self.uniform()).ln() as f32)
                .collect(),
        })
    }
}

/// Loads one tensor in HF layout.
pub fn tensor<B: Backend, const D: usize>(
    src: &mut dyn WeightSource,
    name: &str,
    shape: [usize; D],
    init: Init,
    device: &B::Device,
) -> Result<Tensor<B, D>> {
    let values = src.get(name, &shape, init)?;
    check_len(name, &shape, values.len())?;
    Ok(owned(values, shape, device))
}

/// Loads one tensor as a trainable parameter, keeping the HF layout.
pub fn param<B: Backend, const D: usize>(
    src: &mut dyn WeightSource,
    name: &str,
    shape: [usize; D],
    init: Init,
    device: &B::Device,
) -> Result<Param<Tensor<B, D>>> {
    Ok(Param::from_tensor(tensor(src, name, shape, init, device)?))
}

/// Loads `{prefix}.weight` (`[out, in]`) and optionally `{prefix}.bias` into a [`Linear`], whose
/// weight is stored as the source says ([`WeightSource::dtype`]).
pub fn linear<B: Backend>(
    src: &mut dyn WeightSource,
    prefix: &str,
    d_in: usize,
    d_out: usize,
    bias: bool,
    std: f64,
    device: &B::Device,
) -> Result<Linear<B>> {
    let dtype = src.dtype();
    linear_stored(src, prefix, [d_in, d_out], bias, std, dtype, device)
}

/// [`linear`] kept in f32 whatever the source's dtype: for the small projections whose outputs pass
/// through a softmax, sigmoid or exponential (the MoE router, gates, DeltaNet β and decay), where
/// rounding would move routing and decay for no memory saved.
pub fn exact_linear<B: Backend>(
    src: &mut dyn WeightSource,
    prefix: &str,
    d_in: usize,
    d_out: usize,
    std: f64,
    device: &B::Device,
) -> Result<Linear<B>> {
    let dtype = WeightDtype::F32;
    linear_stored(src, prefix, [d_in, d_out], false, std, dtype, device)
}

fn linear_stored<B: Backend>(
    src: &mut dyn WeightSource,
    prefix: &str,
    [d_in, d_out]: [usize; 2],
    bias: bool,
    std: f64,
    dtype: WeightDtype,
    device: &B::Device,
) -> Result<Linear<B>> {
    let name = format!("{prefix}.weight");
    let w = src.get(&name, &[d_out, d_in], Init::Normal(std))?;
    check_len(&name, &[d_out, d_in], w.len())?;
    let bias = if bias {
        Some(param(
            src,
            &format!("{prefix}.bias"),
            [d_out],
            Init::Zeros,
            device,
        )?)
    } else {
        None
    };
    Ok(Linear {
        weight: Weight::new(&w, d_out, d_in, dtype, device)?,
        bias,
    })
}

/// The row-major `[cols, rows]` transpose of a row-major `[rows, cols]` matrix.
///
/// Weights are transposed on the host once at load rather than kept as a transposed view, so that
/// decoding can stream them row by row (`cpu::matmul_weight`).
pub fn transposed(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0f32; values.len()];
    for (r, row) in values.chunks_exact(cols).enumerate() {
        for (c, &v) in row.iter().enumerate() {
            out[c * rows + r] = v;
        }
    }
    out
}

fn check_len(name: &str, shape: &[usize], len: usize) -> Result<()> {
    let want: usize = shape.iter().product();
    if len != want {
        bail!("tensor {name}: expected {want} values for shape {shape:?}, got {len}");
    }
    Ok(())
}

/// How a stored parameter maps back to HF tensors.
#[derive(Clone, Copy, Debug)]
pub enum HfLayout {
    /// Same shape and order as in HF.
    AsIs,
    /// A burn `Linear` weight `[in, out]`; HF stores `[out, in]`.
    Transposed,
    /// One routed expert's fused `[H, 2I]` gate/up weight; HF per-expert keys are
    /// `{name}.gate_proj.weight` and `{name}.up_proj.weight`, each `[I, H]`.
    ExpertGateUp,
    /// One routed expert's `[I, H]` down weight; HF key `{name}.down_proj.weight` `[H, I]`.
    ExpertDown,
}

/// Receives every parameter with its HF name (for `ExpertGateUp`/`ExpertDown` the name is the
/// per-expert prefix `...mlp.experts.{e}`).
pub trait HfVisitor<B: Backend> {
    fn visit<const D: usize>(&mut self, name: &str, param: &Param<Tensor<B, D>>, layout: HfLayout);

    /// A weight kept in bf16 or int8 (CPU inference, `--dtype`); visited by default as the f32
    /// values the model computes with (`[in, out]`, as an f32 [`Weight`] holds them).
    fn visit_reduced(&mut self, name: &str, w: &ReducedMatrix, layout: HfLayout) {
        let (out, inner) = w.dims();
        let values = transposed(&w.dequantised(), out, inner);
        let param = Param::from_tensor(owned(values, [inner, out], &Default::default()));
        self.visit(name, &param, layout);
    }
}

/// Converts a parameter value (or its gradient) to HF-named tensors.
pub fn to_hf<B: Backend, const D: usize>(
    name: &str,
    value: Tensor<B, D>,
    layout: HfLayout,
) -> Vec<(String, TensorData)> {
    match layout {
        HfLayout::AsIs => vec![(name.to_string(), value.into_data())],
        HfLayout::Transposed => vec![(name.to_string(), value.transpose().into_data())],
        HfLayout::ExpertGateUp => {
            let i = value.dims()[D - 1] / 2;
            let t = value.transpose(); // [2I, H]
            vec![
                (
                    format!("{name}.gate_proj.weight"),
                    t.clone().narrow(0, 0, i).into_data(),
                ),
                (
                    format!("{name}.up_proj.weight"),
                    t.narrow(0, i, i).into_data(),
                ),
            ]
        }
        HfLayout::ExpertDown => vec![(
            format!("{name}.down_proj.weight"),
            value.transpose().into_data(),
        )],
    }
}

/// Visits a `Linear` as `{prefix}.weight` (+ `{prefix}.bias`).
pub fn visit_linear<B: Backend, V: HfVisitor<B>>(v: &mut V, prefix: &str, l: &Linear<B>) {
    l.weight
        .visit(v, &format!("{prefix}.weight"), HfLayout::Transposed);
    if let Some(b) = &l.bias {
        v.visit(&format!("{prefix}.bias"), b, HfLayout::AsIs);
    }
}
