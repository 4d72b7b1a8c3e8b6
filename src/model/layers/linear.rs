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
}
