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

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::NdArray;
    use burn::tensor::DType;

    /// A backend whose element types are not f32 and i64, as the CUDA backend's bf16 and i32 are
    /// not: the values arrive in its own types, unchanged.
    #[test]
    fn host_values_take_the_backends_element_types() {
        type Wide = NdArray<f64, i32>;
        let dev = Default::default();
        let f = floats::<Wide, 2>(vec![1.5, -2.0], [1, 2], &dev);
        assert_eq!(f.dtype(), DType::F64);
        assert_eq!(f.into_data().to_vec::<f64>().unwrap(), vec![1.5, -2.0]);
        let i = ints::<Wide, 1>(vec![3, -7], [2], &dev);
        assert_eq!(i.dtype(), DType::I32);
        assert_eq!(i.into_data().to_vec::<i32>().unwrap(), vec![3, -7]);
    }
}
