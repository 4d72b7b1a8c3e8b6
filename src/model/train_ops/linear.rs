//! The weight product `x · W` as one autodiff operation on the CPU training backend
//! (`Autodiff<NdArray<f32>>`): the forward product and both gradients, `dx = dy · Wᵀ` and
//! `dW = xᵀ · dy`, through [`gemm_into`] on strided views.
//!
//! Through burn's autodiff the product broadcast the weight over the batch axis, so the backward
//! pass made one weight gradient per batch row and summed them; its matmul copied every transposed
//! operand into a fresh array first (burn-ndarray's reshape), and ran on matrixmultiply's AVX2
//! kernels where gemm has AVX-512 ones.

use super::autodiff::{self as ad, Cpu};
use crate::model::cpu::backend::gemm_into;
use burn::backend::autodiff::checkpoint::{base::Checkpointer, strategy::NoCheckpointing};
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::prelude::*;
use burn_ndarray::NdArrayTensor;
use ndarray::{ArcArray, Array2, ArrayView2, Ix2, IxDyn};

/// `x: [..., K]` times `w: [K, N]` → `[..., N]`, for `B` = `Autodiff<NdArray<f32>>`
/// ([`ad::is_cpu_autodiff`]), with gradients for both.
pub fn matmul_weight<B: Backend, const D: usize>(x: Tensor<B, D>, w: Tensor<B, 2>) -> Tensor<B, D> {
    let (x, w) = (ad::primitive(x), ad::primitive(w));
    let x_values = ad::array(&x.primitive);
    let shape = x_values.shape().to_vec();
    let saved = Saved {
        x: rows(x_values, shape[D - 1]),
        w: ad::array(&w.primitive)
            .into_dimensionality::<Ix2>()
            .expect("the weight is 2-D"),
        x_shape: shape,
    };
    let mut out = Array2::zeros((saved.x.nrows(), saved.w.ncols()));
    gemm_into(saved.x.view(), saved.w.view(), &mut out);
    let mut out_shape = saved.x_shape.clone();
    out_shape[D - 1] = saved.w.ncols();
    let out = primitive(out, &out_shape);
    let out = match WeightProductBackward
        .prepare::<NoCheckpointing>([x.node.clone(), w.node.clone()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => prep.finish(saved, out),
        OpsKind::UnTracked(prep) => prep.finish(out),
    };
    ad::tensor(out)
}

/// `x` as `[rows, k]` in standard layout (a copy only when it is strided).
fn rows(x: ArcArray<f32, IxDyn>, k: usize) -> ArcArray<f32, Ix2> {
    let x = if x.is_standard_layout() {
        x
    } else {
        x.as_standard_layout().into_owned().into_shared()
    };
    let m = x.len() / k.max(1);
    x.into_shape_with_order((m, k))
        .expect("standard layout reshapes")
}

fn primitive(values: Array2<f32>, shape: &[usize]) -> NdArrayTensor {
    let values = values
        .into_shape_with_order(IxDyn(shape))
        .expect("same element count");
    NdArrayTensor::F32(values.into_shared().into())
}

/// The activations as `[M, K]`, the weight as it is (possibly strided), `x`'s own shape.
#[derive(Clone, Debug)]
struct Saved {
    x: ArcArray<f32, Ix2>,
    w: ArcArray<f32, Ix2>,
    x_shape: Vec<usize>,
}

#[derive(Debug)]
struct WeightProductBackward;

impl Backward<Cpu, 2> for WeightProductBackward {
    type State = Saved;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let Saved { x, w, x_shape } = ops.state;
        let n = w.ncols();
        let d_out = rows(ad::array(&grads.consume::<Cpu>(&ops.node)), n);
        let [x_node, w_node] = ops.parents;
        if let Some(node) = x_node {
            let mut dx = Array2::zeros(x.dim());
            gemm_into(d_out.view(), w.t(), &mut dx);
            grads.register::<Cpu>(node.id, primitive(dx, &x_shape));
        }
        if let Some(node) = w_node {
            let mut dw = Array2::zeros(w.dim());
            let xt: ArrayView2<f32> = x.t();
            gemm_into(xt, d_out.view(), &mut dw);
            grads.register::<Cpu>(node.id, primitive(dw, &[w.nrows(), n]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::Autodiff;
    use burn::tensor::Distribution;

    type A = Autodiff<Cpu>;

    /// Outputs and both gradients equal burn's broadcast matmul (through autodiff): a strided
    /// (axes-swapped) activation and a column-major weight (a tied LM head), a few rows and many
    /// (above the size where the product is split over threads).
    #[test]
    fn weight_product_has_burns_values_and_gradients() {
        let device = Default::default();
        let normal = Distribution::Normal(0.0, 1.0);
        for (half_rows, k, n) in [(1, 8, 5), (3, 64, 48), (150, 96, 80)] {
            // Stored [rows/2, 2, K], used as [2, rows/2, K]: strided when `swap`.
            let x = Tensor::<Cpu, 3>::random([half_rows, 2, k], normal, &device);
            let w = Tensor::<Cpu, 2>::random([k, n], normal, &device);
            let loss_weights = Tensor::<Cpu, 3>::random([2, half_rows, n], normal, &device);
            for (swap, column_major) in [(false, false), (true, false), (false, true)] {
                let run = |native: bool| {
                    let xl = Tensor::<A, 3>::from_inner(x.clone()).require_grad();
                    let stored_w = if column_major {
                        w.clone().transpose()
                    } else {
                        w.clone()
                    };
                    let wl = Tensor::<A, 2>::from_inner(stored_w).require_grad();
                    let wv = if column_major {
                        wl.clone().transpose()
                    } else {
                        wl.clone()
                    };
                    let xv = if swap {
                        xl.clone().swap_dims(0, 1)
                    } else {
                        xl.clone().reshape([2, half_rows, k])
                    };
                    let out = if native {
                        matmul_weight(xv, wv)
                    } else {
                        xv.matmul(wv.unsqueeze())
                    };
                    let loss = (out.clone() * Tensor::from_inner(loss_weights.clone())).sum();
                    let grads = loss.backward();
                    let values = |t: TensorData| t.to_vec::<f32>().unwrap();
                    [
                        values(out.inner().into_data()),
                        values(xl.grad(&grads).expect("dx").into_data()),
                        values(wl.grad(&grads).expect("dw").into_data()),
                    ]
                };
                for ((ours, burns), name) in
                    run(true).iter().zip(run(false)).zip(["out", "dx", "dw"])
                {
                    let worst = ours
                        .iter()
                        .zip(&burns)
                        .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
                        .fold(0.0f32, f32::max);
                    assert!(
                        worst < 1e-4,
                        "{name}: {half_rows}x2x{k}x{n}, swapped x {swap}, column-major w {column_major}: {worst}"
                    );
                }
            }
        }
    }
}
