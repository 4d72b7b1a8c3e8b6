//! RMSNorm variants: Qwen3 (`w * n(x)`), Qwen3.5 zero-centred (`(1 + w) * n(x)`, stored w ~ 0),
//! and the DeltaNet gated norm (`w * n(x) * silu(z)`, plain w).

use crate::model::cpu::backend::{is_cpu, rms_norm, rms_norm_row, silu, standard_values};
use crate::model::io::weights::{param, HfLayout, HfVisitor, Init, WeightSource};
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
        if is_cpu::<B>() {
            let offset = if self.zero_centered { 1.0 } else { 0.0 };
            return rms_norm(x, self.weight.val(), offset, self.eps, None);
        }
        let w = self.weight.val();
        let w = if self.zero_centered { w + 1.0 } else { w };
        normalize(x, self.eps) * w.unsqueeze::<D>()
    }

    /// [`Self::forward`] in place on CPU values, each run of the weight's length one vector.
    pub fn forward_rows(&self, x: &mut [f32]) {
        let offset = if self.zero_centered { 1.0 } else { 0.0 };
        let scale: Vec<f32> = standard_values(self.weight.val())
            .into_iter()
            .map(|w| offset + w)
            .collect();
        for row in x.chunks_exact_mut(scale.len()) {
            rms_norm_row(row, &scale, self.eps as f32, None);
        }
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
        if is_cpu::<B>() {
            return rms_norm(x, self.weight.val(), 0.0, self.eps, Some(z));
        }
        normalize(x, self.eps) * self.weight.val().unsqueeze::<D>() * silu(z)
    }

    pub fn visit<V: HfVisitor<B>>(&self, name: &str, v: &mut V) {
        v.visit(&format!("{name}.weight"), &self.weight, HfLayout::AsIs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::{Autodiff, NdArray};
    use burn::tensor::{Distribution, TensorData};

    type Cpu = NdArray<f32>;
    type Reference = Autodiff<NdArray<f32>>; // takes burn's ops, not the CPU kernel

    fn random<const D: usize>(shape: [usize; D]) -> Tensor<Cpu, D> {
        Tensor::random(shape, Distribution::Normal(0.0, 2.0), &Default::default())
    }

    /// The largest difference, relative to the magnitude (outputs reach ~20 here, where f32
    /// rounding alone differs by more than 1e-5 in absolute terms: an absolute bound failed now
    /// and then on the unseeded random inputs).
    fn same(a: TensorData, b: TensorData) -> f32 {
        let (a, b) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs() / (1.0 + y.abs()))
            .fold(0.0, f32::max)
    }

    /// The CPU kernel (one pass per row) equals burn's ops, plain, zero-centred and gated, on a
    /// strided input.
    #[test]
    fn cpu_norms_equal_burn_ops() {
        let device = Default::default();
        let x = random([3, 5, 40]);
        let z = random([3, 40, 5]).swap_dims(1, 2); // strided gate
        let w = random([40]);
        let on =
            |t: &Tensor<Cpu, 3>| Tensor::<Reference, 3>::from_data(t.clone().into_data(), &device);
        for zero_centered in [false, true] {
            let norm = |w: Tensor<Cpu, 1>| RmsNorm::<Cpu> {
                weight: Param::from_tensor(w),
                eps: 1e-6,
                zero_centered,
            };
            let reference = RmsNorm::<Reference> {
                weight: Param::from_tensor(Tensor::from_data(w.clone().into_data(), &device)),
                eps: 1e-6,
                zero_centered,
            };
            let got = norm(w.clone()).forward(x.clone()).into_data();
            assert!(same(got, reference.forward(on(&x)).into_data()) < 1e-5);
        }
        let gated = GatedRmsNorm::<Cpu> {
            weight: Param::from_tensor(w.clone()),
            eps: 1e-6,
        };
        let reference = GatedRmsNorm::<Reference> {
            weight: Param::from_tensor(Tensor::from_data(w.into_data(), &device)),
            eps: 1e-6,
        };
        let got = gated.forward(x.clone(), z.clone()).into_data();
        let expected = reference.forward(on(&x), on(&z.clone())).into_data();
        assert!(same(got, expected) < 1e-5);
    }
}
