//! The weight matrix of a projection (attention, Gated DeltaNet, the experts, the LM head), stored
//! as the model was loaded (`--dtype`): an f32 parameter, or for CPU inference a bf16 or int8 copy
//! (`cpu/reduced.rs`) that is no parameter at all, so that training, which needs f32 parameters and
//! their gradients, cannot be handed one. Every product goes through [`Weight::matmul`].

use crate::model::cpu::backend::{
    is_cpu, matmul_reduced, matmul_weight, matmul_weight_rows, owned,
};
use crate::model::cpu::reduced::ReducedMatrix;
use crate::model::io::weights::{transposed, HfLayout, HfVisitor};
use anyhow::{bail, Result};
use burn::module::{Ignored, Param};
use burn::prelude::*;
use ndarray::ArrayView2;
use std::sync::Arc;

/// How the projections' weights are stored. Embeddings, norms, biases and the small gating
/// projections (MoE router, shared-expert gate, DeltaNet β and decay) stay f32 whatever is chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum WeightDtype {
    /// 4 bytes a weight; the only choice for training.
    #[default]
    F32,
    /// 2 bytes a weight, rounded to the nearest bf16; the products round the activations to bf16
    /// too (as llama.cpp's do), f32 sums.
    Bf16,
    /// 1 byte a weight and one f32 scale per output channel (`max|row| / 127`, symmetric); the
    /// products quantise each activation row to int8 the same way (as llama.cpp's q8_0 does in
    /// blocks), i32 sums.
    Int8,
}

impl WeightDtype {
    pub fn name(self) -> &'static str {
        match self {
            WeightDtype::F32 => "f32",
            WeightDtype::Bf16 => "bf16",
            WeightDtype::Int8 => "int8",
        }
    }
}

#[derive(Module, Debug)]
pub enum Weight<B: Backend> {
    /// `[in, out]` (HF's `[out, in]` transposed once at load), trainable.
    F32(Param<Tensor<B, 2>>),
    /// `[out, in]` in bf16 or int8, shared by the model's clones.
    Reduced(Ignored<Arc<ReducedMatrix>>),
}

impl<B: Backend> Weight<B> {
    /// From HF-layout values `[d_out, d_in]`, stored as `dtype`. A reduced dtype needs the CPU
    /// inference backend: training (autodiff) and the other backends keep f32.
    pub fn new(
        values: &[f32],
        d_out: usize,
        d_in: usize,
        dtype: WeightDtype,
        device: &B::Device,
    ) -> Result<Self> {
        let reduced = match dtype {
            WeightDtype::F32 => {
                let w = owned(transposed(values, d_out, d_in), [d_in, d_out], device);
                return Ok(Weight::F32(Param::from_tensor(w)));
            }
            _ if !is_cpu::<B>() => bail!(
                "{} weights are for inference on the CPU backend only; training and the other \
                 backends need f32 (--dtype f32)",
                dtype.name()
            ),
            WeightDtype::Bf16 => ReducedMatrix::bf16(values, d_out, d_in),
            WeightDtype::Int8 => ReducedMatrix::int8(values, d_out, d_in),
        };
        Ok(Weight::Reduced(Ignored(Arc::new(reduced))))
    }

    /// `[in, out]`.
    pub fn dims(&self) -> [usize; 2] {
        match self {
            Weight::F32(w) => w.dims(),
            Weight::Reduced(w) => {
                let (out, inner) = w.0.dims();
                [inner, out]
            }
        }
    }

    /// Whether this is a bf16 or int8 copy (an inference model loaded with a reduced `--dtype`).
    pub fn is_reduced(&self) -> bool {
        matches!(self, Weight::Reduced(_))
    }

    /// `x: [..., in]` → `[..., out]`.
    pub fn matmul<const D: usize>(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        match self {
            Weight::F32(w) => matmul_weight(x, w.val()),
            Weight::Reduced(w) => matmul_reduced(x, &w.0),
        }
    }

    /// `x` (`m` rows of `in` values) → `m` rows of `out` values, on slices: for the CPU backend's
    /// decode steps only ([`is_cpu`]), where the tensors around a small product cost about what
    /// the product does.
    pub fn matmul_rows(&self, x: &[f32], m: usize) -> Vec<f32> {
        match self {
            Weight::F32(w) => matmul_weight_rows(x, m, w.val()),
            Weight::Reduced(w) => {
                let x = ArrayView2::from_shape((m, w.0.dims().1), x).expect("m rows of inputs");
                w.0.matmul(x).into_raw_vec_and_offset().0
            }
        }
    }

    /// Visits the weight under `name`; `layout` maps the `[in, out]` matrix back to HF tensors.
    pub fn visit<V: HfVisitor<B>>(&self, v: &mut V, name: &str, layout: HfLayout) {
        match self {
            Weight::F32(w) => v.visit(name, w, layout),
            Weight::Reduced(w) => v.visit_reduced(name, &w.0, layout),
        }
    }
}
