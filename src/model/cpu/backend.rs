//! Work-arounds for slow paths of burn-ndarray 0.20 (the CPU backend). Two copies it made on every
//! use of a weight made one decode step of the 100M `small` preset cost half a second:
//!
//! * a tensor built with `Tensor::from_data` keeps *borrowed* storage, and cloning it — which
//!   `Param::val()` does on every forward — copies all its bytes. [`owned`] gives parameters
//!   ordinary reference-counted storage once, at load.
//! * its matmul reshapes both operands, and its reshape allocates a fresh array even for a
//!   contiguous one. [`matmul_weight`] multiplies activations by a weight on borrowed views.
//!
//! And its concatenation goes element by element; [`cat`] copies contiguous runs. Its sigmoid is
//! `exp(-log(1 + exp(-x)))`, five passes that each allocate; [`sigmoid`] and [`silu`] make one, with
//! the polynomial [`exp`] rather than a libm call per value.
//!
//! All apply only to `NdArray<f32>` without autodiff (inference); every other backend (autodiff
//! for training, CUDA) takes burn's own path. The tests check the two paths agree.

use super::reduced::ReducedMatrix;
use super::{few_rows, spin_team};
use crate::model::train_ops::autodiff::is_cpu_autodiff;
use burn::prelude::*;
use burn::tensor::{activation, TensorPrimitive};
use burn_ndarray::{NdArray, NdArrayTensor};
use ndarray::{ArcArray, Array2, ArrayView2, Axis, CowArray, IxDyn};
use std::any::{Any, TypeId};
use std::ops::Range;

/// Whether `B` is the inference CPU backend these fast paths serve.
pub(crate) fn is_cpu<B: Backend>() -> bool {
    TypeId::of::<B>() == TypeId::of::<NdArray<f32>>()
}

/// A tensor of `values` whose storage is owned (cheap to clone) on the CPU backend.
pub fn owned<B: Backend, const D: usize>(
    values: Vec<f32>,
    shape: [usize; D],
    device: &B::Device,
) -> Tensor<B, D> {
    if !is_cpu::<B>() {
        return crate::model::host::floats(values, shape, device);
    }
    tensor(values, shape)
}

/// `x: [..., K]` times `w: [K, N]` → `[..., N]`.
pub fn matmul_weight<B: Backend, const D: usize>(x: Tensor<B, D>, w: Tensor<B, 2>) -> Tensor<B, D> {
    if is_cpu_autodiff::<B>() {
        return crate::model::train_ops::linear::matmul_weight(x, w);
    }
    if !is_cpu::<B>() {
        return x.matmul(w.unsqueeze());
    }
    let x = downcast::<NdArrayTensor>(x.into_primitive().tensor());
    let w = downcast::<NdArrayTensor>(w.into_primitive().tensor());
    from_array(cpu_matmul(&x, &w))
}

/// `Tensor::cat(parts, dim)`. burn-ndarray's concatenation assigns element by element through
/// dynamic-rank iterators, which made stacking the per-sequence caches into a decode batch (and
/// appending to the KV cache) about a quarter of a batch-32 decode step of `small`; on the CPU
/// backend this copies each part's contiguous runs with `extend_from_slice` instead.
pub fn cat<B: Backend, const D: usize>(parts: Vec<Tensor<B, D>>, dim: usize) -> Tensor<B, D> {
    let mut shape = parts.first().map_or([0; D], Tensor::dims);
    shape[dim] = parts.iter().map(|p| p.dims()[dim]).sum();
    if !is_cpu::<B>() || parts.len() < 2 || shape.contains(&0) {
        return Tensor::cat(parts, dim);
    }
    let outer: usize = shape[..dim].iter().product();
    let storages: Vec<_> = parts
        .into_iter()
        .map(|p| {
            let NdArrayTensor::F32(storage) =
                downcast::<NdArrayTensor>(p.into_primitive().tensor())
            else {
                unreachable!("NdArray<f32> float tensors hold f32")
            };
            storage
        })
        .collect();
    // Borrowed when already in standard layout (the usual case), copied otherwise.
    let views: Vec<_> = storages
        .iter()
        .map(|s| {
            let v = s.view();
            if v.is_standard_layout() {
                CowArray::from(v)
            } else {
                CowArray::from(v.as_standard_layout().into_owned())
            }
        })
        .collect();
    let mut values = Vec::with_capacity(shape.iter().product());
    for o in 0..outer {
        for v in &views {
            // Each part's run per outer index: its extent along `dim` times the trailing axes.
            let run = v.len() / outer;
            let slice = v.as_slice().expect("standard layout");
            values.extend_from_slice(&slice[o * run..(o + 1) * run]);
        }
    }
    tensor(values, shape)
}

/// `t` owning exactly its values. A narrowed tensor shares its parent's buffer and keeps all of it
/// alive: a sequence's DeltaNet conv history cut from the conv input of its whole prompt (one
/// `[T + 3, conv_dim]` buffer per layer for 3 rows of it), a row split from a batch. A state kept
/// for long (a running sequence, a prefix-cache entry) must not pin such a buffer.
pub fn compact<B: Backend, const D: usize>(t: Tensor<B, D>) -> Tensor<B, D> {
    if !is_cpu::<B>() {
        return t;
    }
    let shape = t.dims();
    let array = into_array(t);
    let values = match array.as_slice() {
        Some(run) => run.to_vec(),
        None => array_values(array),
    };
    tensor(values, shape)
}

/// `1 / (1 + e^-x)`, elementwise.
pub fn sigmoid<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    if !is_cpu::<B>() {
        return activation::sigmoid(x);
    }
    map_in_place(x, logistic)
}

/// `1 / (1 + e^-v)` of one value, with the polynomial [`exp`].
#[inline(always)]
pub(in crate::model) fn logistic(v: f32) -> f32 {
    1.0 / (1.0 + exp(-v))
}

/// `v · logistic(v)` of one value.
#[inline(always)]
pub(in crate::model) fn silu_of(v: f32) -> f32 {
    v / (1.0 + exp(-v))
}

/// `x · sigmoid(x)`, elementwise (SwiGLU's and the gated norm's activation).
pub fn silu<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    if !is_cpu::<B>() {
        return activation::silu(x);
    }
    map_in_place(x, silu_of)
}

/// `f` applied to every value of a CPU tensor, in standard order, in place when the storage is its
/// own.
fn map_in_place<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    f: impl Fn(f32) -> f32 + Copy,
) -> Tensor<B, D> {
    let shape = x.dims();
    let mut values = standard_values(x);
    map_values(&mut values, f);
    tensor(values, shape)
}

/// `f` of every value, with the widest vector instructions the machine has (`f` inlined and
/// branch-free, as [`silu_of`] and [`logistic`] are: the crate targets plain x86-64, where the same
/// loop is scalar). The SwiGLU activation as a scalar loop was ~9 % of a burst's prefill of `small`
/// (32 prompts of 48 tokens), on the engine thread alone.
pub(in crate::model) fn map_values<F: Fn(f32) -> f32 + Copy>(values: &mut [f32], f: F) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the feature was detected at run time.
            return unsafe { map_values_avx512(values, f) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { map_values_avx2(values, f) };
        }
    }
    map_values_portable(values, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn map_values_avx512<F: Fn(f32) -> f32 + Copy>(values: &mut [f32], f: F) {
    map_values_portable(values, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn map_values_avx2<F: Fn(f32) -> f32 + Copy>(values: &mut [f32], f: F) {
    map_values_portable(values, f)
}

#[inline(always)]
fn map_values_portable<F: Fn(f32) -> f32 + Copy>(values: &mut [f32], f: F) {
    values.iter_mut().for_each(|v| *v = f(*v));
}

/// A CPU float tensor's values in standard (row-major) order: its own buffer when it is unshared and
/// already in that order (the recurrent state, a decode step's q/k/v), else copied a contiguous
/// last-axis run at a time (ndarray's element iterators over dynamic-rank arrays cost several
/// times a copy: they were a quarter of a batch-32 decode step).
pub(crate) fn standard_values<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    array_values(into_array(t))
}

/// [`standard_values`] of an array.
pub(in crate::model) fn array_values(array: ArcArray<f32, IxDyn>) -> Vec<f32> {
    let len = array.len();
    if array.is_standard_layout() && array.is_unique() {
        let (mut buffer, offset) = array.into_owned().into_raw_vec_and_offset();
        let offset = offset.unwrap_or(0);
        if offset == 0 && buffer.len() == len {
            return buffer;
        }
        buffer.truncate(offset + len);
        return buffer.split_off(offset);
    }
    let mut out = Vec::with_capacity(len);
    for lane in array.lanes(Axis(array.ndim() - 1)) {
        match lane.as_slice() {
            Some(run) => out.extend_from_slice(run),
            None => out.extend(lane.iter()),
        }
    }
    out
}

/// A CPU tensor of `shape` over `values` (row-major), without a copy.
pub(crate) fn tensor<B: Backend, const D: usize>(
    values: Vec<f32>,
    shape: [usize; D],
) -> Tensor<B, D> {
    from_array(ArcArray::from_shape_vec(IxDyn(&shape), values).expect("values fill the shape"))
}

/// RMSNorm along the last axis, `x · rsqrt(mean(x²) + eps) · (weight_offset + w)`, times `silu(gate)`
/// when a gate is given (the DeltaNet gated norm), in one pass per row instead of burn's eight or
/// more allocating ops; `weight_offset` is 1 for Qwen3.5's zero-centred weights, else 0. Only for
/// the CPU backend ([`is_cpu`]); `norm.rs` holds the same math in burn ops for the others.
pub(in crate::model) fn rms_norm<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    weight: Tensor<B, 1>,
    weight_offset: f32,
    eps: f64,
    gate: Option<Tensor<B, D>>,
) -> Tensor<B, D> {
    let shape = x.dims();
    let mut values = standard_values(x);
    let scale: Vec<f32> = standard_values(weight)
        .into_iter()
        .map(|w| weight_offset + w)
        .collect();
    let gate = gate.map(standard_values);
    let n = scale.len();
    if n == 0 {
        return tensor(values, shape);
    }
    for_each_row(&mut values, n, &|r, row| {
        let gate = gate.as_ref().map(|z| &z[r * n..(r + 1) * n]);
        rms_norm_row(row, &scale, eps as f32, gate)
    });
    tensor(values, shape)
}

/// One row of [`rms_norm`], in place: `row · rsqrt(mean(row²) + eps) · scale`, times `silu(gate)`.
pub(in crate::model) fn rms_norm_row(
    row: &mut [f32],
    scale: &[f32],
    eps: f32,
    gate: Option<&[f32]>,
) {
    let mean_square = row.iter().map(|v| v * v).sum::<f32>() / row.len() as f32;
    let inv = (mean_square + eps).sqrt().recip();
    for (v, s) in row.iter_mut().zip(scale) {
        *v = *v * inv * s;
    }
    if let Some(z) = gate {
        for (v, &z) in row.iter_mut().zip(z) {
            *v *= silu_of(z);
        }
    }
}

/// Softmax along the last axis. On the CPU backend one pass per row, in place when the storage is
/// unshared; burn's takes five allocating passes, which were 14 % of a `tiny` prefill.
pub fn softmax_last<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    if !is_cpu::<B>() {
        return activation::softmax(x, D - 1);
    }
    let shape = x.dims();
    let mut values = standard_values(x);
    for_each_row(&mut values, shape[D - 1], &|_, row| {
        softmax_row(row);
    });
    tensor(values, shape)
}

/// Softmax of one row, in place; returns the row's log-sum-exp. A row of `-inf` only (every key
/// masked) becomes zeros, its log-sum-exp `-inf`. With the widest vector instructions the machine
/// has: the exponentials of attention scores were a fifth of a long prompt's prefill when each was
/// a scalar libm call.
pub(in crate::model) fn softmax_row(row: &mut [f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the feature was detected at run time.
            return unsafe { softmax_row_avx512(row) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { softmax_row_avx2(row) };
        }
    }
    softmax_row_portable(row)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn softmax_row_avx512(row: &mut [f32]) -> f32 {
    softmax_row_portable(row)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn softmax_row_avx2(row: &mut [f32]) -> f32 {
    softmax_row_portable(row)
}

#[inline(always)]
fn softmax_row_portable(row: &mut [f32]) -> f32 {
    // Sixteen running maxima and sums, so that both passes vectorize (a single running value is
    // a dependency chain of scalar compares, a third of the softmax's time at a 4,000-key row).
    let mut lanes = [f32::NEG_INFINITY; 16];
    let mut chunks = row.chunks_exact(16);
    for c in &mut chunks {
        lanes.iter_mut().zip(c).for_each(|(m, &v)| *m = m.max(v));
    }
    let max = (lanes.iter().chain(chunks.remainder())).fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    if max == f32::NEG_INFINITY {
        row.fill(0.0);
        return max;
    }
    row.iter_mut().for_each(|v| *v = exp(*v - max));
    let mut lanes = [0.0f32; 16];
    let mut chunks = row.chunks_exact(16);
    for c in &mut chunks {
        lanes.iter_mut().zip(c).for_each(|(s, v)| *s += v);
    }
    let sum = lanes.iter().sum::<f32>() + chunks.remainder().iter().sum::<f32>();
    let inv = sum.recip();
    row.iter_mut().for_each(|v| *v *= inv);
    max + sum.ln()
}

/// `e^x` in multiply-adds and bit operations, with no libm call, so that a loop over it
/// vectorizes: Cephes' `expf` polynomial on `x = n ln 2 + r`, `|r| ≤ ln 2 / 2`, scaled by `2^n`
/// written into the exponent bits. Within a few ulp of `f32::exp` for `x ≤ 88` (tested); 0 below
/// the smallest normal result, as `e^-inf` is. `n` is read from the bits of the rounded float, not
/// converted with `as i32`: Rust's saturating conversion kept the loops around this scalar.
#[inline(always)]
pub(in crate::model) fn exp(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding 1.5 · 2^23 rounds a float of magnitude below 2^22 to an integer, which then sits in
    // the low bits of the sum's mantissa (its ulp is 1).
    const ROUND: f32 = 12_582_912.0;
    const LOWEST: f32 = -87.336_55;
    let c = x.clamp(LOWEST, 88.0);
    let rounded = c * std::f32::consts::LOG2_E + ROUND;
    let n = rounded - ROUND;
    let r = c - n * LN2_HI - n * LN2_LO;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 5.000_000_1e-1;
    // 2^n: n + 127 (1..=254 for the clamped range) in the exponent bits.
    let biased = rounded
        .to_bits()
        .wrapping_sub(ROUND.to_bits())
        .wrapping_add(127);
    let e = (p * r * r + r + 1.0) * f32::from_bits(biased << 23);
    if x < LOWEST {
        0.0
    } else {
        e
    }
}

/// Values below which a row-wise pass runs on the calling thread alone.
const ROWS_SPLIT_MIN_VALUES: usize = 1 << 14;

/// `f(r, row)` for every row of `n` values, the rows split in contiguous groups over [`spin_team`]
/// when there are enough values to pay for it.
fn for_each_row(values: &mut [f32], n: usize, f: &(dyn Fn(usize, &mut [f32]) + Sync)) {
    if n == 0 {
        return;
    }
    let rows = values.len() / n;
    let group = if values.len() < ROWS_SPLIT_MIN_VALUES {
        rows.max(1)
    } else {
        rows.div_ceil(spin_team::parts()).max(1)
    };
    let mut groups: Vec<&mut [f32]> = values.chunks_mut(group * n).collect();
    spin_team::for_each(&mut groups, &|g, rows| {
        for (i, row) in rows.chunks_exact_mut(n).enumerate() {
            f(g * group + i, row)
        }
    });
}

/// The CPU backend's array behind a float tensor, owned (a borrowed one is copied); only called
/// when `B` is `NdArray<f32>`.
pub(crate) fn into_array<B: Backend, const D: usize>(t: Tensor<B, D>) -> ArcArray<f32, IxDyn> {
    let NdArrayTensor::F32(storage) = downcast::<NdArrayTensor>(t.into_primitive().tensor()) else {
        unreachable!("NdArray<f32> float tensors hold f32")
    };
    storage.into_owned()
}

/// Back from a CPU array to `Tensor<B, D>` (only called when `B` is `NdArray<f32>`).
fn from_array<B: Backend, const D: usize>(array: ArcArray<f32, IxDyn>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(downcast::<B::FloatTensorPrimitive>(
        NdArrayTensor::F32(array.into()),
    )))
}

/// A product of at most this many rows reads its weight more than it computes (a decode step, an
/// MoE expert's share of one): gemm runs it on one thread, at the bandwidth of one core.
pub(in crate::model) const FEW_ROWS: usize = 8;
/// Products of at least this many multiply-adds are split over the spinning helpers of
/// [`spin_team`]; below it the product takes a few microseconds, about what starting them costs.
pub(super) const SPLIT_MIN_WORK: usize = 1 << 15;

fn cpu_matmul(x: &NdArrayTensor, w: &NdArrayTensor) -> ndarray::ArcArray<f32, IxDyn> {
    let (NdArrayTensor::F32(x), NdArrayTensor::F32(w)) = (x, w) else {
        unreachable!("NdArray<f32> float tensors hold f32")
    };
    let wv = w.view();
    let w2: ArrayView2<f32> = wv.into_dimensionality().expect("weight is 2-D");
    let (k, n) = w2.dim();
    product_of_rows(x.view(), k, n, |x2| weight_product(x2, w2))
}

/// `x @ w` into a fresh array.
fn weight_product(x: ArrayView2<f32>, w: ArrayView2<f32>) -> Array2<f32> {
    let mut out = Array2::<f32>::zeros((x.nrows(), w.ncols()));
    gemm_into(x, w, &mut out);
    out
}

/// `x` (`m` rows of `in` values) times a CPU weight `w: [in, out]` → `m` rows of `out` values: the
/// product of [`matmul_weight`] without the tensors around it, for the few rows of a decode step.
/// Only for the CPU backend ([`is_cpu`]).
pub(in crate::model) fn matmul_weight_rows<B: Backend>(
    x: &[f32],
    m: usize,
    w: Tensor<B, 2>,
) -> Vec<f32> {
    let w = into_array(w);
    let w2: ArrayView2<f32> = w.view().into_dimensionality().expect("weight is 2-D");
    let x2 = ArrayView2::from_shape((m, w2.nrows()), x).expect("m rows of the weight's inputs");
    weight_product(x2, w2).into_raw_vec_and_offset().0
}

/// `x: [..., in]` times a reduced-precision weight (`[out, in]`, see `reduced.rs`) → `[..., out]`.
/// Only for the CPU backend ([`is_cpu`]), the only one a reduced weight is built for.
pub(in crate::model) fn matmul_reduced<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    w: &ReducedMatrix,
) -> Tensor<B, D> {
    let NdArrayTensor::F32(x) = downcast::<NdArrayTensor>(x.into_primitive().tensor()) else {
        unreachable!("NdArray<f32> float tensors hold f32")
    };
    let (n, k) = w.dims();
    from_array(product_of_rows(x.view(), k, n, |x2| w.matmul(x2)))
}

/// `x: [..., k]` flattened to `[m, k]` rows (copied only when not in standard layout), through
/// `product` to `[m, n]`, and back to `[..., n]`.
fn product_of_rows(
    xv: ndarray::ArrayViewD<f32>,
    k: usize,
    n: usize,
    product: impl FnOnce(ArrayView2<f32>) -> Array2<f32>,
) -> ArcArray<f32, IxDyn> {
    let mut out_shape = xv.shape().to_vec();
    *out_shape.last_mut().expect("activations have a last axis") = n;
    let x_std = xv.as_standard_layout();
    let m = x_std.len() / k;
    let x2 = x_std
        .view()
        .into_shape_with_order((m, k))
        .expect("standard layout reshapes");
    product(x2)
        .into_shape_with_order(IxDyn(&out_shape))
        .expect("same element count")
        .into_shared()
}

/// `out = x @ w` with the `gemm` crate: it picks AVX2 or AVX-512 kernels at run time (burn-ndarray's
/// matrixmultiply stops at AVX2), has a matrix-vector path for the few rows of a decode step, and
/// reads either operand through its strides (no transposed copy). Products above [`SPLIT_MIN_WORK`]
/// are split over [`spin_team`].
pub(in crate::model) fn gemm_into(x: ArrayView2<f32>, w: ArrayView2<f32>, out: &mut Array2<f32>) {
    let ((m, k), n) = (x.dim(), w.ncols());
    assert_eq!(w.nrows(), k, "inner dimensions agree");
    assert_eq!(out.dim(), (m, n), "output shape");
    let (xs, ws) = (x.strides(), w.strides());
    let (x_ptr, w_ptr) = (x.as_ptr() as usize, w.as_ptr() as usize);
    // `dst = x[:, inner] @ w[inner, cols]`, `dst` being an `m × cols.len()` block with row stride
    // `dst_rs` (column stride 1).
    let rows_contiguous = xs[1] == 1 && ws[1] == 1 && xs[0] > 0 && ws[0] > 0;
    let block =
        |dst: *mut f32, dst_rs: isize, inner: Range<usize>, cols: Range<usize>, parallelism| {
            if inner.is_empty() || cols.is_empty() {
                return;
            }
            if rows_contiguous && few_rows::is_faster(m, cols.len()) {
                // SAFETY: as below; `dst`'s `m × cols` block is zeroed first, then accumulated.
                return unsafe {
                    for r in 0..m {
                        std::ptr::write_bytes(dst.offset(r as isize * dst_rs), 0, cols.len());
                    }
                    let operands = few_rows::Operands {
                        n: cols.len(),
                        x: x_ptr as *const f32,
                        x_rs: xs[0] as usize,
                        w: (w_ptr as *const f32).add(cols.start),
                        w_rs: ws[0] as usize,
                        dst,
                        dst_rs: dst_rs as usize,
                    };
                    few_rows::accumulate(m, inner, &operands)
                };
            }
            // SAFETY: `x` and `w` are views of the asserted shapes, offset to the block's first
            // element and read with their own strides; the caller passes a `dst` block that nothing
            // else reads or writes during the call.
            unsafe {
                gemm::gemm(
                    m,
                    cols.len(),
                    inner.len(),
                    dst,
                    1,
                    dst_rs,
                    false,
                    (x_ptr as *const f32).offset(inner.start as isize * xs[1]),
                    xs[1],
                    xs[0],
                    (w_ptr as *const f32)
                        .offset(inner.start as isize * ws[0] + cols.start as isize * ws[1]),
                    ws[1],
                    ws[0],
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    parallelism,
                )
            }
        };
    let out_rs = out.strides()[0];
    let out_ptr = out.as_mut_ptr() as usize;
    // Larger products go to the team too while it spans every core: a rayon worker sleeps between
    // products, and waking it cost a prefill of `small` 15 % (measured on 2 cores). On more cores
    // gemm's own rayon threading uses them all.
    let split = m * k * n >= SPLIT_MIN_WORK && (m <= FEW_ROWS || spin_team::spans_all_cores());
    if !split {
        return block(
            out_ptr as *mut f32,
            out_rs,
            0..k,
            0..n,
            gemm::Parallelism::Rayon(0),
        );
    }
    let parts = spin_team::parts();
    if m <= FEW_ROWS && ws[0] >= ws[1] {
        // A few rows against a row-major weight: each part streams a contiguous band of the
        // weight's rows (a column split would read short strided runs, which the hardware
        // prefetcher follows poorly), and the partial products are summed.
        let band = k.div_ceil(parts);
        // Zeros: a band past the end of a tiny inner dimension is empty and writes nothing.
        let mut partials = vec![0f32; (parts - 1) * m * n];
        let partials_ptr = partials.as_mut_ptr() as usize;
        spin_team::run(&|j| {
            let dst = match j {
                0 => out_ptr as *mut f32,
                // SAFETY: part j ≥ 1 owns the j-th `m × n` slice of `partials`.
                _ => unsafe { (partials_ptr as *mut f32).add((j - 1) * m * n) },
            };
            let from = (j * band).min(k);
            let dst_rs = if j == 0 { out_rs } else { n as isize };
            block(
                dst,
                dst_rs,
                from..(from + band).min(k),
                0..n,
                gemm::Parallelism::None,
            )
        });
        for partial in partials.chunks_exact(m * n) {
            for (o, p) in out.iter_mut().zip(partial) {
                *o += p;
            }
        }
        return;
    }
    // Many rows (compute-bound), or a column-major weight: split the output columns.
    let width = n.div_ceil(parts).next_multiple_of(16);
    spin_team::run(&|j| {
        let from = (j * width).min(n);
        // SAFETY: part j writes only its own columns of `out`.
        let dst = unsafe { (out_ptr as *mut f32).add(from) };
        block(
            dst,
            out_rs,
            0..k,
            from..(from + width).min(n),
            gemm::Parallelism::None,
        )
    });
}

/// Moves a value whose concrete type the caller has established through `TypeId`.
pub(in crate::model) fn downcast<T: 'static>(value: impl Any) -> T {
    *(Box::new(value) as Box<dyn Any>)
        .downcast::<T>()
        .expect("type checked by TypeId")
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::Autodiff;
    use burn::tensor::{Distribution, TensorData};

    fn max_abs_diff(a: Tensor<NdArray<f32>, 3>, b: Tensor<NdArray<f32>, 3>) -> f32 {
        (a - b).abs().max().into_scalar()
    }

    #[test]
    fn fast_path_equals_burn_matmul() {
        let device = Default::default();
        // Products below and above SPLIT_MIN_WORK (split by columns; the last shape leaves a
        // narrow or empty last part), row counts on both sides of FEW_ROWS.
        for (k, n) in [(3, 1000), (30, 1000), (300, 1000), (2000, 20)] {
            for rows in [1, 3, 8, 9, 32, 40] {
                let normal = Distribution::Normal(0.0, 1.0);
                let x = Tensor::<NdArray<f32>, 3>::random([1, rows, k], normal, &device);
                let w = Tensor::<NdArray<f32>, 2>::random([k, n], normal, &device);
                let reference = x.clone().matmul(w.clone().unsqueeze());
                let got = matmul_weight(x.clone(), w.clone());
                // f32 rounding grows with the inner dimension; a wrong column block is off by O(1).
                let tolerance = 1e-6 * k as f32;
                let diff = max_abs_diff(got, reference.clone());
                assert!(diff < tolerance, "{k}x{n}, {rows} rows: {diff}");
                // A transposed (strided) weight, read through its strides.
                let wt = Tensor::<NdArray<f32>, 2>::from_data(w.transpose().into_data(), &device)
                    .transpose();
                assert!(max_abs_diff(matmul_weight(x, wt), reference) < tolerance);
            }
        }
    }

    #[test]
    fn owned_tensors_are_not_borrowed_and_keep_their_values() {
        let t = owned::<NdArray<f32>, 2>(
            vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            [2, 3],
            &Default::default(),
        );
        let NdArrayTensor::F32(storage) = t.clone().into_primitive().tensor() else {
            panic!("f32 tensor")
        };
        assert!(storage.is_owned());
        assert_eq!(
            t.into_data().to_vec::<f32>().unwrap(),
            vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        );
    }

    #[test]
    fn autodiff_path_has_gradients() {
        type A = Autodiff<NdArray<f32>>;
        let device = Default::default();
        let w = Tensor::<A, 2>::from_data(
            TensorData::new(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2]),
            &device,
        )
        .require_grad();
        let x = Tensor::<A, 2>::from_data(TensorData::new(vec![1.0f32, 1.0], [1, 2]), &device);
        let grads = matmul_weight(x, w.clone()).sum().backward();
        let g = w.grad(&grads).expect("weight gradient").into_data();
        assert_eq!(g.to_vec::<f32>().unwrap(), vec![1.0, 1.0, 1.0, 1.0]);
    }

    #[test]
    fn fused_activations_equal_burns() {
        let device = Default::default();
        let mut x =
            Tensor::<NdArray<f32>, 3>::random([2, 5, 33], Distribution::Normal(0.0, 4.0), &device);
        // The tails, where a naive formula overflows: e^100 is inf in f32.
        x = x.slice_assign(
            [0..1, 0..1, 0..4],
            Tensor::from_data(
                TensorData::new(vec![-100.0f32, -30.0, 30.0, 100.0], [1, 1, 4]),
                &device,
            ),
        );
        // A strided input (a narrowed view) as well as a contiguous one.
        for input in [x.clone(), x.clone().narrow(2, 3, 20)] {
            let shared = input.clone(); // a second owner: the fused path must not write through it
            assert!(
                max_abs_diff(sigmoid(input.clone()), activation::sigmoid(input.clone())) < 1e-6
            );
            assert!(max_abs_diff(silu(input.clone()), activation::silu(input.clone())) < 1e-5);
            assert_eq!(shared.into_data(), input.into_data());
        }
    }

    #[test]
    fn exp_is_within_a_few_ulp_of_libm() {
        let mut worst = 0.0f32;
        for i in 0..=200_000 {
            let x = -87.0 + 175.0 * i as f32 / 200_000.0;
            let (got, want) = (exp(x), x.exp());
            worst = worst.max(((got - want) / want).abs() / f32::EPSILON);
        }
        assert!(worst <= 4.0, "{worst} ulp");
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(-100.0), 0.0);
        assert!(exp(f32::NAN).is_nan());
    }

    #[test]
    fn softmax_equals_burns() {
        let device = Default::default();
        // Large enough to be split into row groups, with masked (-inf) entries and a strided view.
        let x = Tensor::<NdArray<f32>, 3>::random(
            [4, 300, 40],
            Distribution::Normal(0.0, 5.0),
            &device,
        )
        .slice_assign(
            [0..4, 0..300, 0..3],
            Tensor::full([4, 300, 3], f32::NEG_INFINITY, &device),
        );
        for input in [x.clone(), x.clone().narrow(2, 1, 30), x.swap_dims(1, 2)] {
            let got = softmax_last(input.clone());
            // Within 1e-6 of the softmax in f64; burn's own f32 softmax is off by up to 1.6e-6 on
            // the 300-long rows, so it is the reference for shapes and masks only.
            let n = input.dims()[2];
            let values: Vec<f32> = input.clone().into_data().to_vec().unwrap();
            let got_values: Vec<f32> = got.clone().into_data().to_vec().unwrap();
            for (row, out) in values.chunks(n).zip(got_values.chunks(n)) {
                let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
                let e: Vec<f64> = row.iter().map(|&v| (v as f64 - max).exp()).collect();
                let sum: f64 = e.iter().sum();
                for (&o, &e) in out.iter().zip(&e) {
                    let exact = if max.is_finite() { e / sum } else { 0.0 };
                    assert!((o as f64 - exact).abs() < 1e-6, "{o} against {exact}");
                }
            }
            assert!(max_abs_diff(got, activation::softmax(input, 2)) < 4e-6);
        }
    }

    #[test]
    fn cat_equals_burn_cat() {
        let device = Default::default();
        let normal = Distribution::Normal(0.0, 1.0);
        let a = Tensor::<NdArray<f32>, 4>::random([3, 2, 5, 4], normal, &device);
        let b = Tensor::<NdArray<f32>, 4>::random([3, 2, 7, 4], normal, &device);
        // A strided part (a row and a time range of a bigger tensor), as the cache holds them.
        let c = Tensor::<NdArray<f32>, 4>::random([6, 2, 9, 4], normal, &device)
            .narrow(0, 2, 3)
            .narrow(2, 1, 6);
        for dim in [0, 2] {
            let parts = if dim == 0 {
                vec![
                    a.clone(),
                    a.clone().mul_scalar(2.0),
                    c.clone().narrow(2, 0, 5),
                ]
            } else {
                vec![a.clone(), b.clone(), c.clone()]
            };
            let expected = Tensor::cat(parts.clone(), dim);
            let got = cat(parts, dim);
            assert_eq!(got.dims(), expected.dims());
            assert_eq!(
                got.into_data().to_vec::<f32>().unwrap(),
                expected.into_data().to_vec::<f32>().unwrap()
            );
        }
    }
}
