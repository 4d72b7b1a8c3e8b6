//! What the CPU training backend's own autodiff operations share (`linear`,
//! `attention`, `delta_rule`, the loss's `nll`): moving a tensor of the generic
//! backend `B`, once [`is_cpu_autodiff`] has said it is `Autodiff<NdArray<f32>>`, to burn's autodiff
//! primitive and back, reading its values, and handing gradients to the graph.
//!
//! Each operation follows burn's pattern for custom backward passes: `prepare` the op on its
//! parents' nodes, compute the output on the inner `NdArray` values, and `finish` with the state its
//! backward pass needs when any parent is tracked.

use crate::model::cpu::backend::{array_values, downcast};
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::NodeId;
use burn::backend::{Autodiff, NdArray};
use burn::prelude::*;
use burn::tensor::TensorPrimitive;
use burn_ndarray::NdArrayTensor;
use ndarray::{ArcArray, IxDyn};
use std::any::TypeId;

/// The inner backend of CPU training.
pub type Cpu = NdArray<f32>;
/// `AutodiffTensor<Cpu>` (burn exports the type only as the backend's float primitive).
pub type AutodiffTensor = <Autodiff<Cpu> as Backend>::FloatTensorPrimitive;

/// Whether `B` is the CPU training backend, which has these operations.
pub fn is_cpu_autodiff<B: Backend>() -> bool {
    TypeId::of::<B>() == TypeId::of::<Autodiff<Cpu>>()
}

/// `x`'s autodiff primitive (only when [`is_cpu_autodiff`] holds for `B`).
pub fn primitive<B: Backend, const D: usize>(x: Tensor<B, D>) -> AutodiffTensor {
    downcast::<AutodiffTensor>(x.into_primitive().tensor())
}

/// Back to `Tensor<B, D>` (only when [`is_cpu_autodiff`] holds for `B`).
pub fn tensor<B: Backend, const D: usize>(x: AutodiffTensor) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(downcast::<B::FloatTensorPrimitive>(
        x,
    )))
}

/// The values of an inner tensor, sharing its storage.
pub fn array(x: &NdArrayTensor) -> ArcArray<f32, IxDyn> {
    let NdArrayTensor::F32(storage) = x.clone() else {
        unreachable!("NdArray<f32> float tensors hold f32")
    };
    storage.into_owned()
}

/// The values of an inner tensor in standard (row-major) order.
pub fn values(x: &NdArrayTensor) -> Vec<f32> {
    array_values(array(x))
}

/// `values` (row-major) as an array of `shape` that a tensor and an op's saved state can both hold.
pub fn shared(values: Vec<f32>, shape: &[usize]) -> ArcArray<f32, IxDyn> {
    ArcArray::from_shape_vec(IxDyn(shape), values).expect("values fill the shape")
}

/// An inner tensor over `array` (its storage shared, not copied).
pub fn inner_of(array: ArcArray<f32, IxDyn>) -> NdArrayTensor {
    NdArrayTensor::F32(array.into())
}

/// An inner tensor of `shape` over `values` (row-major).
pub fn inner(values: Vec<f32>, shape: &[usize]) -> NdArrayTensor {
    inner_of(shared(values, shape))
}

/// Adds the gradient `values` (of `shape`) to `node`'s, if the parent is tracked.
pub fn register(grads: &mut Gradients, node: Option<NodeId>, values: Vec<f32>, shape: &[usize]) {
    if let Some(node) = node {
        grads.register::<Cpu>(node, inner(values, shape));
    }
}
