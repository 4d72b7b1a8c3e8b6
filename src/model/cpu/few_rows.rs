//! The f32 product of a decode step's few activation rows with a row-major weight `[in, out]`.
//!
//! A decode step reads every weight once for a handful of rows, so the product is a stream of the
//! weight through memory, and what decides its speed is how well the hardware prefetcher follows
//! the reads. Short weight rows (≤ [`SHORT_ROW`] columns, the experts' and most projections') are
//! read for one or two activation rows one weight row at a time, front to back: a single stream in
//! address order. Otherwise eight weight rows are read together, each multiplied into all the
//! activation rows at once (their output rows stay in L1/L2 while the weight streams past, and
//! each output vector is read and written once per eight weight rows), with the next eight short
//! rows prefetched while these are read. gemm's general kernel packs panels of the weight first;
//! [`is_faster`] says where each wins.

use std::ops::Range;

/// Most activation rows one call takes (the register budget: a broadcast activation per row).
pub(in crate::model) const MAX_ROWS: usize = 8;

/// Weight rows up to this many columns (4 KB) are short: see the module's comment.
const SHORT_ROW: usize = 1024;

/// Whether [`accumulate`] is the faster product for `m` rows and `n` output columns. Timed
/// against gemm on one thread, alternating, on 0.4 GB of weights (more than the L3 holds) of
/// `small`'s shapes, on an AMD EPYC with AVX-512 (2026-12-06): 2–8 rows at 256–512 columns in
/// 0.50–0.90× gemm's time (one row: gemm's matrix-vector loop reads like ours). Earlier, on an Intel
/// Xeon with the kernel reading four weight rows at a time: 1.08–1.26× for one row at every width,
/// 1.15–2.4× from 1,024 columns with 2–8 rows, 0.83–0.94× with 2–8 rows at 256–384 columns.
pub(in crate::model) fn is_faster(m: usize, n: usize) -> bool {
    m == 1 || (m <= MAX_ROWS && n >= 256)
}

/// The operands of [`accumulate`]: `x`, `m ≤ MAX_ROWS` activation rows with row stride `x_rs`;
/// `w`, the weight's rows with row stride `w_rs`; `dst`, `m` rows of `n` outputs with row stride
/// `dst_rs`. Columns are contiguous in all three.
pub(in crate::model) struct Operands {
    pub n: usize,
    pub x: *const f32,
    pub x_rs: usize,
    pub w: *const f32,
    pub w_rs: usize,
    pub dst: *mut f32,
    pub dst_rs: usize,
}

/// `dst[r, :] += Σ_{l ∈ inner} x[r, l] · w[l, :]` for the first `m` rows of the operands.
///
/// # Safety
/// The operands must cover the rows and columns named; nothing else may access `dst` during the
/// call.
pub(in crate::model) unsafe fn accumulate(m: usize, inner: Range<usize>, p: &Operands) {
    assert!(m <= MAX_ROWS, "at most {MAX_ROWS} rows");
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx512f") {
        use avx512::rows;
        let short = p.n <= SHORT_ROW;
        // SAFETY: the feature was detected; the caller vouches for the operands.
        return unsafe {
            match (m, short) {
                (1, true) => rows::<1, 1>(p, inner),
                (2, true) => rows::<2, 1>(p, inner),
                (1, false) => rows::<1, 8>(p, inner),
                (2, false) => rows::<2, 8>(p, inner),
                (3, _) => rows::<3, 8>(p, inner),
                (4, _) => rows::<4, 8>(p, inner),
                (5, _) => rows::<5, 8>(p, inner),
                (6, _) => rows::<6, 8>(p, inner),
                (7, _) => rows::<7, 8>(p, inner),
                _ => rows::<8, 8>(p, inner),
            }
        };
    }
    // SAFETY: as above.
    unsafe { portable(m, p, inner) }
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

    /// `R` weight rows at a time (each output vector is read and written once per `R`), 16 columns
    /// a vector, a masked vector for the last `n mod 16`; a band's last rows pair with a row of
    /// their own times zero. Several short weight rows at a time prefetch the next `R` while these
    /// are read (long ones the hardware prefetcher follows by itself).
    ///
    /// # Safety
    /// AVX-512F must be present; the operands as [`super::accumulate`] asks.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn rows<const M: usize, const R: usize>(p: &Operands, inner: Range<usize>) {
        let (n, tail) = (p.n - p.n % 16, p.n % 16);
        let mask: __mmask16 = (1u32 << tail).wrapping_sub(1) as __mmask16;
        let prefetch = R > 1 && p.n <= super::SHORT_ROW;
        let mut l = inner.start;
        while l < inner.end {
            // SAFETY (this block): the operands cover rows `l..l + R` of `w` that are inside
            // `inner` (the others are replaced by row `l`, weighted zero), those columns of `x`,
            // and the M rows of `dst`; a prefetch reads nothing.
            unsafe {
                let real = |j: usize| l + j < inner.end;
                let xs: [[__m512; M]; R] = std::array::from_fn(|j| {
                    std::array::from_fn(|r| {
                        _mm512_set1_ps(if real(j) {
                            *p.x.add(r * p.x_rs + l + j)
                        } else {
                            0.0
                        })
                    })
                });
                let ws: [*const f32; R] =
                    std::array::from_fn(|j| p.w.add(if real(j) { l + j } else { l } * p.w_rs));
                let ahead = prefetch && l + 2 * R <= inner.end;
                let mut c = 0;
                while c < n {
                    if ahead {
                        for w in ws {
                            _mm_prefetch::<_MM_HINT_T0>(w.add(R * p.w_rs + c) as *const i8);
                        }
                    }
                    let wv: [__m512; R] = std::array::from_fn(|j| _mm512_loadu_ps(ws[j].add(c)));
                    for r in 0..M {
                        let d = p.dst.add(r * p.dst_rs + c);
                        let mut sum = _mm512_loadu_ps(d);
                        for j in 0..R {
                            sum = _mm512_fmadd_ps(xs[j][r], wv[j], sum);
                        }
                        _mm512_storeu_ps(d, sum);
                    }
                    c += 16;
                }
                if tail > 0 {
                    let wv: [__m512; R] =
                        std::array::from_fn(|j| _mm512_maskz_loadu_ps(mask, ws[j].add(c)));
                    for r in 0..M {
                        let d = p.dst.add(r * p.dst_rs + c);
                        let mut sum = _mm512_maskz_loadu_ps(mask, d);
                        for j in 0..R {
                            sum = _mm512_fmadd_ps(xs[j][r], wv[j], sum);
                        }
                        _mm512_mask_storeu_ps(d, mask, sum);
                    }
                }
            }
            l += R;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row count, short and long weight rows with a masked tail, a band of weight rows that
    /// starts inside the matrix and has an odd length (a lone last row), accumulated onto existing
    /// values: equal to the sums in f64 within f32 rounding.
    #[test]
    fn few_rows_equal_f64_sums() {
        let (k, inner) = (40, 3..36);
        let value = |i: usize| ((i * 7919 % 1000) as f32 / 500.0) - 1.0;
        // A short and a long row width, each with a masked tail.
        for n in [37, SHORT_ROW + 5] {
            let w: Vec<f32> = (0..k * n).map(value).collect();
            for m in 1..=MAX_ROWS {
                let x: Vec<f32> = (0..m * k).map(|i| value(i * 31 + 5)).collect();
                let start: Vec<f32> = (0..m * n).map(|i| value(i + 11)).collect();
                let mut dst = start.clone();
                let operands = Operands {
                    n,
                    x: x.as_ptr(),
                    x_rs: k,
                    w: w.as_ptr(),
                    w_rs: n,
                    dst: dst.as_mut_ptr(),
                    dst_rs: n,
                };
                // SAFETY: the buffers have the shapes named.
                unsafe { accumulate(m, inner.clone(), &operands) };
                for r in 0..m {
                    for c in 0..n {
                        let expected = start[r * n + c] as f64
                            + inner
                                .clone()
                                .map(|l| x[r * k + l] as f64 * w[l * n + c] as f64)
                                .sum::<f64>();
                        let got = dst[r * n + c] as f64;
                        assert!(
                            (got - expected).abs() < 1e-5,
                            "n {n}, m {m}, row {r}, column {c}"
                        );
                    }
                }
            }
        }
    }
}
