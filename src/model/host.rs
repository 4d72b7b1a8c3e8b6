//! Host values as tensors of the backend's own element types. burn's CUDA backend keeps the dtype
//! of the data it is handed, and its kernels read every operand as the first one's type: f32
//! values in a bf16 model, or i64 ids beside its i32 integers, would be read as the wrong type.
//! Every tensor the model and the trainers build from host values goes through these (on the CPU
//! backend, whose element types are f32 and i64, the conversion is a no-op).

use burn::prelude::*;
use burn::tensor::TensorData;

/// `values` as a float tensor of `B`'s float type.
pub fn floats<B: Backend, const D: usize>(
    values: Vec<f32>,
    shape: [usize; D],
    device: &B::Device,
) -> Tensor<B, D> {
    Tensor::from_data(
        TensorData::new(values, shape).convert::<B::FloatElem>(),
        device,
    )
}

/// `values` as an integer tensor of `B`'s integer type.
pub fn ints<B: Backend, const D: usize>(
    values: Vec<i64>,
    shape: [usize; D],
    device: &B::Device,
) -> Tensor<B, D, Int> {
    Tensor::from_data(
        TensorData::new(values, shape).convert::<B::IntElem>(),
        device,
    )
}
