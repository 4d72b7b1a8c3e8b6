//! The linear layer: a [`Weight`] (f32 `[in, out]`, or bf16/int8 for CPU inference) and an optional
//! bias. Used instead of burn's `nn::Linear` so that every projection goes through
//! [`Weight::matmul`], which avoids burn-ndarray's weight copies (see `cpu/backend.rs`).

use super::weight::Weight;
use burn::module::Param;
use burn::prelude::*;

#[derive(Module, Debug)]
pub struct Linear<B: Backend> {
    pub weight: Weight<B>,
    pub bias: Option<Param<Tensor<B, 1>>>,
}

impl<B: Backend> Linear<B> {
    /// `x: [..., in]` → `[..., out]`.
    pub fn forward<const D: usize>(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        let y = self.weight.matmul(x);
        match &self.bias {
            Some(b) => y + b.val().unsqueeze(),
            None => y,
        }
    }

    /// [`Self::forward`] of `m` rows on slices (CPU decode steps, see [`Weight::matmul_rows`]).
    pub fn forward_rows(&self, x: &[f32], m: usize) -> Vec<f32> {
        let mut y = self.weight.matmul_rows(x, m);
        if let Some(b) = &self.bias {
            let b = crate::model::cpu::backend::standard_values(b.val());
            for row in y.chunks_exact_mut(b.len()) {
                row.iter_mut().zip(&b).for_each(|(v, b)| *v += b);
            }
        }
        y
    }
}
