//! The linear layer: weight stored `[in, out]` (HF's `[out, in]` transposed once at load),
//! optional bias. Used instead of burn's `nn::Linear` so that every projection goes through
//! [`matmul_weight`], which avoids burn-ndarray's weight copies (see `cpu/backend.rs`).

use crate::model::cpu::backend::matmul_weight;
use burn::module::Param;
use burn::prelude::*;

#[derive(Module, Debug)]
pub struct Linear<B: Backend> {
    /// `[in, out]`.
    pub weight: Param<Tensor<B, 2>>,
    pub bias: Option<Param<Tensor<B, 1>>>,
}

impl<B: Backend> Linear<B> {
    /// `x: [..., in]` → `[..., out]`.
    pub fn forward<const D: usize>(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        let y = matmul_weight(x, self.weight.val());
        match &self.bias {
            Some(b) => y + b.val().unsqueeze(),
            None => y,
        }
    }
}
