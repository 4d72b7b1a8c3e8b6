//! The f32 product of a decode step's few activation rows with a row-major weight `[in, out]`.
//!
//! A decode step reads every weight once for a handful of rows, so the product is a stream of the
//! weight through memory. Here each weight row is read once, front to back, and multiplied into all
//! the activation rows at once (their output rows stay in L1/L2 while the weight streams past):
//! one sequential stream per thread, which the hardware prefetcher follows. gemm's general kernel,
//! which `small`'s batched decoding took for 2–8 rows, packs panels of the weight first and ran
//! at about a third of the memory's bandwidth there.

use std::ops::Range;

/// Most activation rows one call takes (the register budget: a broadcast activation per row).
pub(in crate::model) const MAX_ROWS: usize = 8;

/// `dst[r, :] += Σ_{l ∈ inner} x[r, l] · w[l, :]` for the `m ≤ MAX_ROWS` rows of `x` (row stride
/// `x_rs`, columns contiguous), `w` with row stride `w_rs` (columns contiguous), `n` output
/// columns, `dst` with row stride `dst_rs`.
///
/// # Safety
/// `x`, `w` and `dst` must cover the rows and columns named; nothing else may access `dst` during
/// the call.
#[allow(clippy::too_many_arguments)]
pub(in crate::model) unsafe fn accumulate(
    m: usize,
    n: usize,
    inner: Range<usize>,
    x: *const f32,
    x_rs: usize,
    w: *const f32,
    w_rs: usize,
    dst: *mut f32,
    dst_rs: usize,
) {
    assert!(m <= MAX_ROWS, "at most {MAX_ROWS} rows");
    let p = Operands {
        n,
        x,
        x_rs,
        w,
        w_rs,
        dst,
        dst_rs,
    };
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx512f") {
        // SAFETY: the feature was detected; the caller vouches for the operands.
        return unsafe {
            match m {
                1 => avx512::rows::<1>(&p, inner),
                2 => avx512::rows::<2>(&p, inner),
                3 => avx512::rows::<3>(&p, inner),
                4 => avx512::rows::<4>(&p, inner),
                5 => avx512::rows::<5>(&p, inner),
                6 => avx512::rows::<6>(&p, inner),
                7 => avx512::rows::<7>(&p, inner),
                _ => avx512::rows::<8>(&p, inner),
            }
        };
    }
    // SAFETY: as above.
    unsafe { portable(m, &p, inner) }
}

/// The operands of [`accumulate`], as raw pointers with their row strides.
struct Operands {
    n: usize,
    x: *const f32,
    x_rs: usize,
    w: *const f32,
    w_rs: usize,
    dst: *mut f32,
    dst_rs: usize,
}

/// # Safety
/// As [`accumulate`].
unsafe fn portable(m: usize, p: &Operands, inner: Range<usize>) {
    for l in inner {
        // SAFETY: the caller's operands cover row `l` of `w` and column `l` of `x`.
        let w = unsafe { std::slice::from_raw_parts(p.w.add(l * p.w_rs), p.n) };
        for r in 0..m {
            // SAFETY: as above, and row `r` of `dst`, which only this call touches.
            let (x, dst) = unsafe {
                (
                    *p.x.add(r * p.x_rs + l),
                    std::slice::from_raw_parts_mut(p.dst.add(r * p.dst_rs), p.n),
                )
            };
            dst.iter_mut().zip(w).for_each(|(d, w)| *d += x * w);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::Operands;
    use std::arch::x86_64::*;
    use std::ops::Range;

    /// Two weight rows at a time (each output vector is read and written once per pair), 16
    /// columns a vector, a masked vector for the last `n mod 16`.
    ///
    /// # Safety
    /// AVX-512F must be present; the operands as [`super::accumulate`] asks.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn rows<const M: usize>(p: &Operands, inner: Range<usize>) {
        let (n, tail) = (p.n - p.n % 16, p.n % 16);
        let mask: __mmask16 = (1u32 << tail).wrapping_sub(1) as __mmask16;
        let mut l = inner.start;
        while l < inner.end {
            let pair = l + 1 < inner.end;
            // SAFETY (this block): the operands cover rows `l` (and `l + 1` when `pair`) of `w`,
            // those columns of `x`, and the M rows of `dst`.
            unsafe {
                let x0: [__m512; M] =
                    std::array::from_fn(|r| _mm512_set1_ps(*p.x.add(r * p.x_rs + l)));
                let x1: [__m512; M] = std::array::from_fn(|r| {
                    _mm512_set1_ps(if pair {
                        *p.x.add(r * p.x_rs + l + 1)
                    } else {
                        0.0
                    })
                });
                let w0 = p.w.add(l * p.w_rs);
                // A lone last row pairs with itself times zero.
                let w1 = if pair { w0.add(p.w_rs) } else { w0 };
                let mut c = 0;
                while c < n {
                    let (a, b) = (_mm512_loadu_ps(w0.add(c)), _mm512_loadu_ps(w1.add(c)));
                    for r in 0..M {
                        let d = p.dst.add(r * p.dst_rs + c);
                        let sum = _mm512_fmadd_ps(x0[r], a, _mm512_loadu_ps(d));
                        _mm512_storeu_ps(d, _mm512_fmadd_ps(x1[r], b, sum));
                    }
                    c += 16;
                }
                if tail > 0 {
                    let a = _mm512_maskz_loadu_ps(mask, w0.add(c));
                    let b = _mm512_maskz_loadu_ps(mask, w1.add(c));
                    for r in 0..M {
                        let d = p.dst.add(r * p.dst_rs + c);
                        let sum = _mm512_fmadd_ps(x0[r], a, _mm512_maskz_loadu_ps(mask, d));
                        _mm512_mask_storeu_ps(d, mask, _mm512_fmadd_ps(x1[r], b, sum));
                    }
                }
            }
            l += 2;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row count, a width with a masked tail, a band of weight rows that starts inside the
    /// matrix and has an odd length (a lone last row), accumulated onto existing values: equal to
    /// the sums in f64 within f32 rounding.
    #[test]
    fn few_rows_equal_f64_sums() {
        let (k, n, inner) = (40, 37, 3..36);
        let value = |i: usize| ((i * 7919 % 1000) as f32 / 500.0) - 1.0;
        let w: Vec<f32> = (0..k * n).map(value).collect();
        for m in 1..=MAX_ROWS {
            let x: Vec<f32> = (0..m * k).map(|i| value(i * 31 + 5)).collect();
            let start: Vec<f32> = (0..m * n).map(|i| value(i + 11)).collect();
            let mut dst = start.clone();
            // SAFETY: the buffers have the shapes named.
            unsafe {
                accumulate(
                    m,
                    n,
                    inner.clone(),
                    x.as_ptr(),
                    k,
                    w.as_ptr(),
                    n,
                    dst.as_mut_ptr(),
                    n,
                )
            };
            for r in 0..m {
                for c in 0..n {
                    let expected = start[r * n + c] as f64
                        + inner
                            .clone()
                            .map(|l| x[r * k + l] as f64 * w[l * n + c] as f64)
                            .sum::<f64>();
                    let got = dst[r * n + c] as f64;
                    assert!((got - expected).abs() < 1e-5, "m {m}, row {r}, column {c}");
                }
            }
        }
    }
}
