//! RMSNorm variants: Qwen3 (`w * n(x)`), Qwen3.5 zero-centred (`(1 + w) * n(x)`, stored w ~ 0),
//! and the DeltaNet gated norm (`w * n(x) * silu(z)`, plain w).

use super::cpu::silu;
use super::weights::{param, HfLayout, HfVisitor, Init, WeightSource};
use anyhow::Result;
use burn::module::Param;
use burn::prelude::*;

/// `x * rsqrt(mean(x^2) + eps)` over the last dim.
fn normalize<B: Backend, const D: usize>(x: Tensor<B, D>, eps: f64) -> Tensor<B, D> {
    let var = x.clone().powi_scalar(2).mean_dim(D - 1);
    x * (var + eps).sqrt().recip()
}

#[derive(Module, Debug)]
pub struct RmsNorm<B: Backend> {
    pub weight: Param<Tensor<B, 1>>,
    pub eps: f64,
    /// Qwen3.5 convention: the scale is `1 + weight`.
    pub zero_centered: bool,
}

impl<B: Backend> RmsNorm<B> {
    pub fn load(
        src: &mut dyn WeightSource,
        name: &str,
        dim: usize,
        eps: f64,
        zero_centered: bool,
        device: &B::Device,
    ) -> Result<Self> {
        let init = if zero_centered {
            Init::Zeros
        } else {
            Init::Ones
        };
        Ok(Self {
            weight: param(src, &format!("{name}.weight"), [dim], init, device)?,
            eps,
            zero_centered,
        })
    }

    pub fn forward<const D: usize>(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        let w = self.weight.val();
        let w = if self.zero_centered { w + 1.0 } else { w };
        normalize(x, self.eps) * w.unsqueeze::<D>()
    }

    pub fn visit<V: HfVisitor<B>>(&self, name: &str, v: &mut V) {
        v.visit(&format!("{name}.weight"), &self.weight, HfLayout::AsIs);
    }
}

#[derive(Module, Debug)]
pub struct GatedRmsNorm<B: Backend> {
    pub weight: Param<Tensor<B, 1>>,
    pub eps: f64,
}

impl<B: Backend> GatedRmsNorm<B> {
    pub fn load(
        src: &mut dyn WeightSource,
        name: &str,
        dim: usize,
        eps: f64,
        device: &B::Device,
    ) -> Result<Self> {
        Ok(Self {
            weight: param(src, &format!("{name}.weight"), [dim], Init::Ones, device)?,
            eps,
        })
    }

    /// Norm before gate: `w * n(x) * silu(z)`.
    pub fn forward<const D: usize>(&self, x: Tensor<B, D>, z: Tensor<B, D>) -> Tensor<B, D> {
        normalize(x, self.eps) * self.weight.val().unsqueeze::<D>() * silu(z)
    }

    pub fn visit<V: HfVisitor<B>>(&self, name: &str, v: &mut V) {
        v.visit(&format!("{name}.weight"), &self.weight, HfLayout::AsIs);
    }
}
