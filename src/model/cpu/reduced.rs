//! Reduced-precision weight matrices for CPU inference (`--dtype bf16|int8`): a projection's weight
//! kept as bf16, or as int8 with one symmetric scale per output channel, and its product with the
//! activations. Each product reduces the activations to the weight's precision as well, as
//! llama.cpp's do, so that the CPU's dot-product instructions can compute it: a bf16 product rounds
//! them to bf16 (f32 sums, AVX-512 BF16), an int8 product quantises each activation row to int8
//! with its own symmetric scale (exact i32 sums, AVX-512 VNNI). Every path and CPU computes the same
//! function. A decode step reads every active weight once per token and is bound by
//! memory bandwidth, so halving (bf16) or quartering (int8) the bytes read is where the gain is.
//!
//! Rows are output channels (`[out, in]`, the Hugging Face layout): an output is one dot product over
//! a contiguous row, and an int8 row's scale multiplies the finished sum once.
//!
//! * A few activation rows (a decode step, an expert's share of one): dot products against each
//!   weight row as it is read, output channels split over [`spin_team`]. `vdpbf16ps` multiplies
//!   32 bf16 pairs, `vpdpbusd` 64 int8 pairs; on a CPU without them bf16 rows are widened to f32
//!   inside the dot product ([`dots`], compiled for AVX-512 and AVX2 too and picked at run time)
//!   and int8 rows summed in i32 in plain Rust.
//! * From [`TILE_ROWS`] rows (a prefill, a batch of decode steps), where the product turns
//!   compute-bound: AMX tiles ([`super::amx`]) where the CPU has them and the weight's rows are
//!   whole 64-byte blocks, output channels split over the spin team as above. Else, above
//!   [`DOT_ROWS`] rows, the same dot-product instructions register-blocked, four weight rows by
//!   four activation rows at a time (`avx512::bf16_blocks`, `int8_blocks`: 1.3–1.9× the prefill
//!   rate of the gemm panels below on an AMD EPYC without AMX); on a CPU without them, the weight
//!   is widened a panel of output channels at a time and multiplied by gemm ([`gemm_into`]) with
//!   the reduced activations widened back to f32 (widening costs one pass over the weight per
//!   product, not one per row).

#[cfg(target_arch = "x86_64")]
use super::amx::{self, Dot};
use super::backend::{gemm_into, SPLIT_MIN_WORK};
use super::spin_team;
use half::bf16;
use ndarray::{s, Array2, ArrayView2};
use std::ops::Range;

/// Without AMX tiles, products of at most this many activation rows take the dot products:
/// widening a panel costs about as much as a gemm of ~16 rows over it (measured on 2 cores,
/// `small`'s shapes).
const DOT_ROWS: usize = 16;
/// Products of at least this many activation rows go through AMX tiles where they fit: measured on
/// `small`'s shapes (2 cores), tiles are level with the dot products at 4 rows and 1.2–1.6× faster
/// from 6 rows, where a tile of 16 rows is still mostly padding.
#[cfg(target_arch = "x86_64")]
const TILE_ROWS: usize = 5;
/// f32 values per widened panel of the many-rows product (1 MB): the whole of most of `small`'s
/// weights, so that a product starts the helper threads once or a few times, not once per panel.
const PANEL_VALUES: usize = 1 << 18;

#[derive(Clone)]
enum Values {
    /// Rounded to the nearest bf16 (ties to even).
    Bf16(Vec<bf16>),
    /// `value ≈ q · scales[row]` with `scale = max|row| / 127`.
    Int8 { q: Vec<i8>, scales: Vec<f32> },
}

/// A `[rows, cols]` = `[out, in]` weight in bf16 or int8, row-major.
#[derive(Clone)]
pub struct ReducedMatrix {
    rows: usize,
    cols: usize,
    values: Values,
}

impl std::fmt::Debug for ReducedMatrix {
    // The shape and the type, not millions of values (module printing goes through this).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} [{}, {}]", self.dtype_name(), self.rows, self.cols)
    }
}

impl ReducedMatrix {
    /// `values`: `[rows, cols]` row-major.
    pub fn bf16(values: &[f32], rows: usize, cols: usize) -> Self {
        assert_eq!(values.len(), rows * cols, "values fill the shape");
        let values = Values::Bf16(rounded_to_bf16(values));
        Self { rows, cols, values }
    }

    /// `values`: `[rows, cols]` row-major; symmetric per-row scales, a row of zeros gets scale 0.
    pub fn int8(values: &[f32], rows: usize, cols: usize) -> Self {
        assert_eq!(values.len(), rows * cols, "values fill the shape");
        let Int8Rows { q, scales } = Int8Rows::quantise(values, rows, cols);
        let values = Values::Int8 { q, scales };
        Self { rows, cols, values }
    }

    /// `(rows, cols)` = `(out, in)`.
    pub fn dims(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    pub fn dtype_name(&self) -> &'static str {
        match self.values {
            Values::Bf16(_) => "bf16",
            Values::Int8 { .. } => "int8",
        }
    }

    /// Bytes held: the values, and the int8 scales.
    pub fn bytes(&self) -> usize {
        match &self.values {
            Values::Bf16(w) => w.len() * 2,
            Values::Int8 { q, scales } => q.len() + scales.len() * 4,
        }
    }

    /// The f32 values the products compute with, `[rows, cols]` row-major.
    pub fn dequantised(&self) -> Vec<f32> {
        let mut out = vec![0f32; self.rows * self.cols];
        self.widen_rows(0..self.rows, &mut out);
        out
    }

    /// `x: [m, cols]` times the transpose of this matrix: `[m, rows]`.
    pub fn matmul(&self, x: ArrayView2<f32>) -> Array2<f32> {
        let m = x.nrows();
        assert_eq!(x.ncols(), self.cols, "inner dimensions agree");
        if m == 0 || self.rows == 0 || self.cols == 0 {
            return Array2::zeros((m, self.rows));
        }
        let k = self.cols;
        match &self.values {
            Values::Bf16(w) => {
                let x = x.as_standard_layout();
                let x16 = rounded_to_bf16(x.as_slice().expect("standard layout"));
                // The tiles and the dot-product instructions take the rounded activations as they
                // are; gemm and the widening dot products take them as f32.
                #[cfg(target_arch = "x86_64")]
                if m >= TILE_ROWS && tiles_fit(2 * k) {
                    let x = amx::PackedRows::new(bytes_of(&x16), m, 2 * k);
                    return self.tiled(m, |c, out| {
                        let w = bytes_of(&w[c.start * k..c.end * k]);
                        // SAFETY (of `write`): `ch` counts the band's own channels.
                        let store =
                            |ch, r, sum| unsafe { out.write(r, c.start + ch, f32::from_bits(sum)) };
                        // SAFETY: `tiles_fit` checked the CPU.
                        unsafe {
                            amx::product(Dot::Bf16, amx::Rows::dense(w, c.len(), 2 * k), &x, store)
                        }
                    });
                }
                #[cfg(target_arch = "x86_64")]
                if m <= DOT_ROWS && bf16_instructions() {
                    return self.channel_bands(m, |c, dst| {
                        let w = &w[c.start * k..c.end * k];
                        // SAFETY: `bf16_instructions` checked the CPU; the shapes are as asked.
                        unsafe { avx512::bf16_dots(&x16, k, w, dst) }
                    });
                }
                #[cfg(target_arch = "x86_64")]
                if bf16_instructions() {
                    return self.tiled(m, |c, out| {
                        let w = &w[c.start * k..c.end * k];
                        // SAFETY (of `write`): `ch` counts the band's own channels.
                        let store = |ch, r, sum| unsafe { out.write(r, c.start + ch, sum) };
                        // SAFETY: `bf16_instructions` checked the CPU; the shapes are as asked.
                        unsafe { avx512::bf16_blocks(&x16, m, k, w, &store) }
                    });
                }
                let x: Vec<f32> = x16.iter().map(|v| v.to_f32()).collect();
                if m > DOT_ROWS {
                    return self.many_rows(&x, m);
                }
                self.channel_bands(m, |c, dst| dots(&x, k, &w[c.start * k..c.end * k], dst))
            }
            Values::Int8 { q, scales } => {
                let x = x.as_standard_layout();
                let x = Int8Rows::quantise(x.as_slice().expect("standard layout"), m, k);
                #[cfg(target_arch = "x86_64")]
                if m >= TILE_ROWS && tiles_fit(k) {
                    let packed = amx::PackedRows::new(bytes_of(&x.q), m, k);
                    return self.tiled(m, |c, out| {
                        let w = bytes_of(&q[c.start * k..c.end * k]);
                        // The same arithmetic as the dot products' last step.
                        let store = |ch: usize, r: usize, sum: u32| {
                            let channel = c.start + ch;
                            let value = sum as i32 as f32 * (scales[channel] * x.scales[r]);
                            // SAFETY: `ch` counts the band's own channels.
                            unsafe { out.write(r, channel, value) }
                        };
                        // SAFETY: `tiles_fit` checked the CPU.
                        unsafe {
                            amx::product(Dot::Int8, amx::Rows::dense(w, c.len(), k), &packed, store)
                        }
                    });
                }
                // `vpdpbusd` takes unsigned activations: each as `x + 128`, its top bit flipped.
                let xu: Option<Vec<u8>> =
                    vnni_instructions().then(|| x.q.iter().map(|&v| v as u8 ^ 0x80).collect());
                #[cfg(target_arch = "x86_64")]
                if let (true, Some(xu)) = (m > DOT_ROWS, &xu) {
                    return self.tiled(m, |c, out| {
                        let (w, scales) = (&q[c.start * k..c.end * k], &scales[c.clone()]);
                        // SAFETY (of `write`): `ch` counts the band's own channels.
                        let store = |ch, r, value| unsafe { out.write(r, c.start + ch, value) };
                        // SAFETY: `vnni_instructions` checked the CPU; the shapes are as asked.
                        unsafe { avx512::int8_blocks(xu, &x.scales, k, w, scales, &store) }
                    });
                }
                if m > DOT_ROWS {
                    return self.many_rows(&x.dequantised(k), m);
                }
                self.channel_bands(m, |c, dst| {
                    let (w, scales) = (&q[c.start * k..c.end * k], &scales[c]);
                    match &xu {
                        // SAFETY: `vnni_instructions` checked the CPU; the shapes are as asked.
                        #[cfg(target_arch = "x86_64")]
                        Some(xu) => unsafe { avx512::int8_dots(xu, &x.scales, k, w, scales, dst) },
                        _ => int8_dots(&x, k, w, scales, dst),
                    }
                })
            }
        }
    }

    /// Rows `rows` widened to f32 into `out` (`rows.len() × cols`).
    fn widen_rows(&self, rows: Range<usize>, out: &mut [f32]) {
        let span = rows.start * self.cols..rows.end * self.cols;
        match &self.values {
            Values::Bf16(w) => widen(&w[span], None, self.cols, out),
            Values::Int8 { q, scales } => widen(&q[span], Some(&scales[rows]), self.cols, out),
        }
    }

    /// The product of `m` activation rows in bands of output channels: `band(c, dst)` writes the
    /// outputs of the weight rows `c` into `dst`, `[c.len(), m]`; the bands are split over the spin
    /// team.
    fn channel_bands(
        &self,
        m: usize,
        band: impl Fn(Range<usize>, &mut [f32]) + Sync,
    ) -> Array2<f32> {
        let (n, k) = (self.rows, self.cols);
        // Written transposed, `[n, m]`: a part's band of output channels is one contiguous run.
        let mut out_t = vec![0f32; n * m];
        let band = |b: usize, dst: &mut [f32], channels: usize| {
            band(b * channels..b * channels + dst.len() / m, dst)
        };
        let parts = parts_for(m * n * k);
        if parts == 1 {
            band(0, &mut out_t, n);
        } else {
            let channels = n.div_ceil(parts);
            let mut bands: Vec<&mut [f32]> = out_t.chunks_mut(channels * m).collect();
            spin_team::for_each(&mut bands, &|b, dst| band(b, dst, channels));
        }
        if m == 1 {
            return Array2::from_shape_vec((1, n), out_t).expect("values fill the shape");
        }
        // Transposed back in blocks of 16 channels (16 cache lines read, one written), the output
        // rows split over the team: ndarray's element-wise transposition was a sixth of a prefill
        // product, on one core.
        let mut out = vec![0f32; m * n];
        let rows_per_part = m.div_ceil(parts_for(m * n));
        let mut parts: Vec<&mut [f32]> = out.chunks_mut(rows_per_part * n).collect();
        spin_team::for_each(&mut parts, &|p, rows| {
            for c0 in (0..n).step_by(16) {
                let channels = c0..(c0 + 16).min(n);
                for (i, row) in rows.chunks_exact_mut(n).enumerate() {
                    let r = p * rows_per_part + i;
                    for c in channels.clone() {
                        row[c] = out_t[c * m + r];
                    }
                }
            }
        });
        Array2::from_shape_vec((m, n), out).expect("values fill the shape")
    }

    /// The product of `m` activation rows on AMX tiles or register blocks, in bands of output
    /// channels (whole tiles but the last) split over the spin team: `band(c, out)` writes the
    /// outputs of the weight rows `c` straight into the `[m, rows]` output (nothing to transpose,
    /// as [`Self::channel_bands`] must).
    #[cfg(target_arch = "x86_64")]
    fn tiled(&self, m: usize, band: impl Fn(Range<usize>, &BandColumns) + Sync) -> Array2<f32> {
        let (n, k) = (self.rows, self.cols);
        let mut out = vec![0f32; m * n];
        let columns = BandColumns {
            out: out.as_mut_ptr(),
            m,
            n,
        };
        let parts = parts_for(m * n * k);
        if parts == 1 {
            band(0..n, &columns);
        } else {
            let channels = n.div_ceil(parts).next_multiple_of(16);
            spin_team::run(&|part| {
                let c = (part * channels).min(n)..((part + 1) * channels).min(n);
                if !c.is_empty() {
                    band(c, &columns);
                }
            });
        }
        Array2::from_shape_vec((m, n), out).expect("values fill the shape")
    }

    /// The prefill product of `x` (`m × cols`): f32 panels of the weight through gemm.
    fn many_rows(&self, x: &[f32], m: usize) -> Array2<f32> {
        let (n, k) = (self.rows, self.cols);
        let x = ArrayView2::from_shape((m, k), x).expect("values fill the shape");
        let width = (PANEL_VALUES / k).clamp(16, n.max(16)).min(n);
        let mut panel = vec![0f32; width * k];
        let mut out = Array2::zeros((m, n));
        for first in (0..n).step_by(width) {
            let cols = width.min(n - first);
            let panel = &mut panel[..cols * k];
            self.widen_rows(first..first + cols, panel);
            let w = ArrayView2::from_shape((cols, k), &*panel)
                .expect("panel shape")
                .reversed_axes();
            let mut block = Array2::zeros((m, cols));
            gemm_into(x, w, &mut block);
            out.slice_mut(s![.., first..first + cols]).assign(&block);
        }
        out
    }
}

/// The parts a product of `work` multiply-adds is split into: one below [`SPLIT_MIN_WORK`], where
/// waking the spin team costs about what it saves, else one per member of the team.
fn parts_for(work: usize) -> usize {
    if work < SPLIT_MIN_WORK {
        1
    } else {
        spin_team::parts()
    }
}

/// `values` rounded to the nearest bf16, ties to even (see [`round_to_bf16`]).
fn rounded_to_bf16(values: &[f32]) -> Vec<bf16> {
    let mut out = vec![bf16::ZERO; values.len()];
    round_to_bf16(values, &mut out);
    out
}

/// `out[i]` = `values[i]` rounded to the nearest bf16, ties to even, as `bf16::from_f32` rounds
/// them, in code that vectorises (`from_f32` branches per value: its calls were 7 % of a bf16
/// prefill) and compiled for AVX-512 and AVX2 too (picked at run time).
pub(super) fn round_to_bf16(values: &[f32], out: &mut [bf16]) {
    assert_eq!(values.len(), out.len(), "one output per value");
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512bw")]
        fn avx512(values: &[f32], out: &mut [bf16]) {
            portable(values, out)
        }
        #[target_feature(enable = "avx2")]
        fn avx2(values: &[f32], out: &mut [bf16]) {
            portable(values, out)
        }
        if std::arch::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { avx512(values, out) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { avx2(values, out) };
        }
    }
    #[inline(always)]
    fn portable(values: &[f32], out: &mut [bf16]) {
        for (o, v) in out.iter_mut().zip(values) {
            let bits = v.to_bits();
            // Adding just under half an ulp of bf16, plus the kept part's lowest bit, carries
            // into the kept half exactly when rounding to nearest (ties to even) goes up; a
            // NaN keeps its sign and top payload and is made quiet.
            let rounded = bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) >> 16;
            let kept = if v.is_nan() {
                (bits >> 16) | 0x40
            } else {
                rounded
            };
            *o = bf16::from_bits(kept as u16);
        }
    }
    portable(values, out)
}

/// An `[m, n]` output that bands of output channels on several threads write at once, each band
/// only its own columns (which `tiled` hands out disjoint).
#[cfg(target_arch = "x86_64")]
struct BandColumns {
    out: *mut f32,
    m: usize,
    n: usize,
}

// SAFETY: the bands write disjoint columns (`tiled`), so no element is written by two threads,
// and the output outlives the section that writes it.
#[cfg(target_arch = "x86_64")]
unsafe impl Sync for BandColumns {}

#[cfg(target_arch = "x86_64")]
impl BandColumns {
    /// `out[r, c] = value`.
    ///
    /// # Safety
    /// `c` is one of the calling band's columns: no other thread writes it.
    unsafe fn write(&self, r: usize, c: usize, value: f32) {
        assert!(r < self.m && c < self.n, "inside the output");
        *self.out.add(r * self.n + c) = value
    }
}

/// Whether AMX tiles can compute a product over rows of `row_bytes` bytes: the CPU has them, and the
/// rows are whole tile rows (every projection of the presets; else gemm panels).
#[cfg(target_arch = "x86_64")]
pub(super) fn tiles_fit(row_bytes: usize) -> bool {
    row_bytes.is_multiple_of(amx::BLOCK_BYTES) && amx::available()
}

/// The bytes of stored values (bf16, int8, f32: plain numbers without padding), for the tiles.
#[cfg(target_arch = "x86_64")]
pub(super) fn bytes_of<T: Stored>(values: &[T]) -> &[u8] {
    // SAFETY: every `Stored` type is a plain number, any of whose bytes may be read as `u8`.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

/// A stored weight value.
pub(super) trait Stored: Copy + Sync {
    fn widen(self) -> f32;
}

impl Stored for i8 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self as f32
    }
}

impl Stored for f32 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }
}

impl Stored for bf16 {
    // bf16 is the top half of an f32: a shift, which vectorises (`bf16::to_f32` need not).
    #[inline(always)]
    fn widen(self) -> f32 {
        f32::from_bits((self.to_bits() as u32) << 16)
    }
}

/// `out` (`rows × k`) = each row of `w` widened, times its scale.
fn widen<T: Stored>(w: &[T], scales: Option<&[f32]>, k: usize, out: &mut [f32]) {
    if k == 0 {
        return;
    }
    for (r, (src, dst)) in w.chunks_exact(k).zip(out.chunks_exact_mut(k)).enumerate() {
        let scale = scales.map_or(1.0, |s| s[r]);
        for (d, &v) in dst.iter_mut().zip(src) {
            *d = v.widen() * scale;
        }
    }
}

/// Rows quantised to int8, each with its symmetric scale `max|row| / 127` (a row of zeros gets
/// scale 0): the int8 weights, and the activations an int8 product multiplies them with.
struct Int8Rows {
    q: Vec<i8>,
    scales: Vec<f32>,
}

impl Int8Rows {
    /// `values`: `rows` rows of `cols` values, row-major. Compiled for AVX2 too (picked at run time):
    /// baseline x86-64 has no rounding instruction, so `f32::round` was a libm call per value, a
    /// tenth of an int8 decode step.
    fn quantise(values: &[f32], rows: usize, cols: usize) -> Self {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { Self::quantise_avx2(values, rows, cols) };
        }
        Self::quantise_portable(values, rows, cols)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn quantise_avx2(values: &[f32], rows: usize, cols: usize) -> Self {
        Self::quantise_portable(values, rows, cols)
    }

    #[inline(always)]
    fn quantise_portable(values: &[f32], rows: usize, cols: usize) -> Self {
        let mut q = Vec::with_capacity(values.len());
        let mut scales = Vec::with_capacity(rows);
        for row in (0..rows).map(|r| &values[r * cols..(r + 1) * cols]) {
            let scale = max_abs(row) / 127.0;
            let inverse = if scale > 0.0 { scale.recip() } else { 0.0 };
            q.extend(row.iter().map(|v| {
                let r = (v * inverse).round();
                let r = if r.is_nan() {
                    0.0
                } else {
                    r.clamp(-127.0, 127.0)
                };
                // SAFETY: `r` is finite and within ±127. (`as i8` checks every value for range
                // and NaN, and so does not vectorise: it was a tenth of an int8 prefill.)
                unsafe { r.to_int_unchecked::<i32>() as i8 }
            }));
            scales.push(scale);
        }
        Self { q, scales }
    }

    /// The f32 values these rows stand for, row-major.
    fn dequantised(&self, cols: usize) -> Vec<f32> {
        let mut out = vec![0f32; self.q.len()];
        widen(&self.q, Some(&self.scales), cols, &mut out);
        out
    }
}

/// The largest magnitude in `values`, in 16 lanes: a running `f32::max` does not vectorise (the
/// compiler keeps its order), and one chain of them was most of quantising an activation row.
#[inline(always)]
fn max_abs(values: &[f32]) -> f32 {
    const LANES: usize = 16;
    let mut lanes = [0f32; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for chunk in &mut chunks {
        for (l, v) in lanes.iter_mut().zip(chunk) {
            *l = l.max(v.abs());
        }
    }
    let tail = chunks.remainder().iter().fold(0f32, |m, v| m.max(v.abs()));
    lanes.iter().fold(tail, |m, &l| m.max(l))
}

/// `dst[c·m + r] = scales[c] · x.scales[r] · (x.q[r] · w[c])` for every weight row `c` of the band
/// `w` and every activation row `r` of `x` (`m × k`), the dot products summed exactly in i32
/// (`k · 255 · 127 < 2³¹` for `k` up to 66,000), in plain Rust: the sums `avx512::int8_dots` makes
/// with AVX-512 VNNI.
fn int8_dots(x: &Int8Rows, k: usize, w: &[i8], scales: &[f32], dst: &mut [f32]) {
    let m = x.scales.len();
    for (c, (row, scale)) in w.chunks_exact(k).zip(scales).enumerate() {
        for (r, xr) in x.q.chunks_exact(k).enumerate() {
            let sum: i32 = xr.iter().zip(row).map(|(&a, &b)| a as i32 * b as i32).sum();
            dst[c * m + r] = scale * x.scales[r] * sum as f32;
        }
    }
}

/// Whether the CPU multiplies bytes into i32 sums (AVX-512 VNNI, `vpdpbusd`).
fn vnni_instructions() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512vnni")
            && std::arch::is_x86_feature_detected!("avx512bw")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `dst[c·m + r] = x[r] · w[c]` for every weight row `c` of the band `w` and every activation row
/// `r` of `x` (`m × k`), bf16 weights widened to f32: AVX-512 intrinsics where the CPU has them
/// (the loops below do not auto-vectorise well: the compiler kept the partial sums in 2-wide
/// registers), else plain Rust compiled for AVX2 or baseline x86-64.
fn dots(x: &[f32], k: usize, w: &[bf16], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { avx512::dots(x, k, w, dst) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { dots_avx2(x, k, w, dst) };
        }
    }
    dots_portable(x, k, w, dst)
}

/// Whether the CPU multiplies bf16 pairs into f32 sums (AVX-512 BF16, `vdpbf16ps`).
#[cfg(target_arch = "x86_64")]
fn bf16_instructions() -> bool {
    std::arch::is_x86_feature_detected!("avx512bf16")
        && std::arch::is_x86_feature_detected!("avx512bw")
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dots_avx2(x: &[f32], k: usize, w: &[bf16], dst: &mut [f32]) {
    dots_portable(x, k, w, dst)
}

/// The decode products in AVX-512: bf16 weights widened 16 at a time and multiplied into up to
/// four activation rows, with four partial sums per row in flight (a fused multiply-add waits
/// four cycles for its sum; one chain would leave the unit idle); the same with `vdpbf16ps` and
/// bf16 activations; int8 dot products with `vpdpbusd`.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::Stored;
    use half::bf16;
    use std::arch::x86_64::*;

    /// `$rows::<G>(&x[r·k..], k, w[c], &mut dst[c·m + r..])` for each weight row `c` of `w` and the
    /// `m = x.len() / k` activation rows of `x` in groups of up to `G = 4`, which share each load
    /// of the weights: the loop around every kernel here (a macro, because each kernel is a
    /// generic function of its own).
    macro_rules! four_rows_at_a_time {
        ($rows:ident, $x:expr, $k:expr, $w:expr, $dst:expr) => {{
            let (x, k, dst) = ($x, $k, $dst);
            let m = x.len() / k;
            for (c, row) in $w.chunks_exact(k).enumerate() {
                let out = &mut dst[c * m..(c + 1) * m];
                let mut r = 0;
                while r < m {
                    let xs = &x[r * k..];
                    match m - r {
                        1 => $rows::<1>(xs, k, row, &mut out[r..]),
                        2 => $rows::<2>(xs, k, row, &mut out[r..]),
                        3 => $rows::<3>(xs, k, row, &mut out[r..]),
                        _ => $rows::<4>(xs, k, row, &mut out[r..]),
                    }
                    r += 4;
                }
            }
        }};
    }

    /// 16 bf16 values widened to f32: zero-extended to 32 bits and shifted into place (bf16 is the
    /// top half of an f32).
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn widen16(p: *const bf16) -> __m512 {
        let halves = _mm512_cvtepu16_epi32(_mm256_loadu_si256(p.cast()));
        _mm512_castsi512_ps(_mm512_slli_epi32::<16>(halves))
    }

    /// See [`super::dots`].
    ///
    /// # Safety
    /// The CPU has AVX-512F; `x.len() = m·k`, `w.len() = n·k`, `dst.len() = n·m`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn dots(x: &[f32], k: usize, w: &[bf16], dst: &mut [f32]) {
        four_rows_at_a_time!(rows, x, k, w, dst);
    }

    /// `out[j] = x[j] · row` for the `G` activation rows starting at `x`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn rows<const G: usize>(x: &[f32], k: usize, row: &[bf16], out: &mut [f32]) {
        const UNROLL: usize = 4;
        let mut acc = [[_mm512_setzero_ps(); UNROLL]; G];
        let (wp, xp) = (row.as_ptr(), x.as_ptr());
        let mut i = 0;
        while i + 16 * UNROLL <= k {
            for u in 0..UNROLL {
                let wv = widen16(wp.add(i + 16 * u));
                for (j, a) in acc.iter_mut().enumerate() {
                    let xv = _mm512_loadu_ps(xp.add(j * k + i + 16 * u));
                    a[u] = _mm512_fmadd_ps(xv, wv, a[u]);
                }
            }
            i += 16 * UNROLL;
        }
        while i + 16 <= k {
            let wv = widen16(wp.add(i));
            for (j, a) in acc.iter_mut().enumerate() {
                a[0] = _mm512_fmadd_ps(_mm512_loadu_ps(xp.add(j * k + i)), wv, a[0]);
            }
            i += 16;
        }
        for (j, a) in acc.iter().enumerate() {
            let sum = _mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3]));
            let tail: f32 = (i..k).map(|t| x[j * k + t] * row[t].widen()).sum();
            out[j] = _mm512_reduce_add_ps(sum) + tail;
        }
    }

    /// `dst[c·m + r] = x[r] · w[c]` for bf16 activations: `vdpbf16ps` takes 32 weight-activation
    /// pairs into 16 f32 sums, where [`dots`] widens 16 weights and fuses 16 products.
    ///
    /// # Safety
    /// The CPU has AVX-512F, BW and BF16; `x.len() = m·k`, `w.len() = n·k`, `dst.len() = n·m`.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    pub(super) unsafe fn bf16_dots(x: &[bf16], k: usize, w: &[bf16], dst: &mut [f32]) {
        four_rows_at_a_time!(bf16_rows, x, k, w, dst);
    }

    /// 32 bf16 values from `p`, the lanes at and past `len` zero (and not read).
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    #[inline]
    unsafe fn load_bf16(p: *const bf16, len: usize) -> __m512bh {
        let mask = if len >= 32 {
            u32::MAX
        } else {
            (1u32 << len) - 1
        };
        // SAFETY: `__m512bh` is 32 × 16 bits, like the loaded vector.
        std::mem::transmute::<__m512i, __m512bh>(_mm512_maskz_loadu_epi16(mask, p.cast()))
    }

    /// `out[j] = x[j] · row` for the `G` activation rows starting at `x`. Four sums per row in
    /// flight: `vdpbf16ps` waits ~10 cycles for its sum (measured here), so one chain would leave
    /// the unit idle. The last partial 32 values go through masked loads.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    #[inline]
    unsafe fn bf16_rows<const G: usize>(x: &[bf16], k: usize, row: &[bf16], out: &mut [f32]) {
        const UNROLL: usize = 4;
        let mut acc = [[_mm512_setzero_ps(); UNROLL]; G];
        let (wp, xp) = (row.as_ptr(), x.as_ptr());
        let mut i = 0;
        while i + 32 * UNROLL <= k {
            for u in 0..UNROLL {
                let wv = load_bf16(wp.add(i + 32 * u), 32);
                for (j, a) in acc.iter_mut().enumerate() {
                    let xv = load_bf16(xp.add(j * k + i + 32 * u), 32);
                    a[u] = _mm512_dpbf16_ps(a[u], xv, wv);
                }
            }
            i += 32 * UNROLL;
        }
        while i < k {
            let len = (k - i).min(32);
            let wv = load_bf16(wp.add(i), len);
            for (j, a) in acc.iter_mut().enumerate() {
                a[0] = _mm512_dpbf16_ps(a[0], load_bf16(xp.add(j * k + i), len), wv);
            }
            i += 32;
        }
        for (j, a) in acc.iter().enumerate() {
            let sum = _mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3]));
            out[j] = _mm512_reduce_add_ps(sum);
        }
    }

    /// `store(ch, r, x[r] · w[ch])` for every activation row of bf16 `x` (`m × k`) and every
    /// weight row `ch` of `w`: the many-rows product where the CPU has `vdpbf16ps` but no AMX
    /// tiles. Four weight rows by four activation rows at a time, sixteen sums in flight, so that
    /// each loaded vector feeds four instructions (the dot products' one-row-at-a-time loop feeds
    /// each weight vector to at most four rows and reduces a sum per row and weight row).
    ///
    /// # Safety
    /// The CPU has AVX-512F, BW and BF16; `x.len() = m·k`, `w.len()` a multiple of `k`.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    pub(super) unsafe fn bf16_blocks(
        x: &[bf16],
        m: usize,
        k: usize,
        w: &[bf16],
        store: &dyn Fn(usize, usize, f32),
    ) {
        // SAFETY (of each block): as this function's.
        four_by_four(m, w.len() / k, |r, c, shape| unsafe {
            match shape {
                (4, 4) => bf16_block::<4, 4>(x, k, w, r, c, store),
                (1, 4) => bf16_block::<1, 4>(x, k, w, r, c, store),
                (4, _) => bf16_block::<4, 1>(x, k, w, r, c, store),
                _ => bf16_block::<1, 1>(x, k, w, r, c, store),
            }
        });
    }

    /// Walks an `m × n` product (activation rows × weight rows) in blocks of 4 × 4, the last rows
    /// and channels one at a time: `block(r, c, (rows, channels))` for each.
    fn four_by_four(m: usize, n: usize, mut block: impl FnMut(usize, usize, (usize, usize))) {
        let step = |left: usize| if left >= 4 { 4 } else { 1 };
        let mut c = 0;
        while c < n {
            let mut r = 0;
            while r < m {
                block(r, c, (step(m - r), step(n - c)));
                r += step(m - r);
            }
            c += step(n - c);
        }
    }

    /// The `R × C` sums of activation rows `r0..r0 + R` and weight rows `c0..c0 + C`.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    #[inline]
    unsafe fn bf16_block<const R: usize, const C: usize>(
        x: &[bf16],
        k: usize,
        w: &[bf16],
        r0: usize,
        c0: usize,
        store: &dyn Fn(usize, usize, f32),
    ) {
        let mut acc = [[_mm512_setzero_ps(); C]; R];
        let (xp, wp) = (x.as_ptr().add(r0 * k), w.as_ptr().add(c0 * k));
        let mut i = 0;
        while i < k {
            let len = (k - i).min(32);
            let wv: [__m512bh; C] = std::array::from_fn(|c| load_bf16(wp.add(c * k + i), len));
            for (r, sums) in acc.iter_mut().enumerate() {
                let xv = load_bf16(xp.add(r * k + i), len);
                for (sum, wv) in sums.iter_mut().zip(wv) {
                    *sum = _mm512_dpbf16_ps(*sum, xv, wv);
                }
            }
            i += 32;
        }
        for (r, sums) in acc.iter().enumerate() {
            for (c, sum) in sums.iter().enumerate() {
                store(c0 + c, r0 + r, _mm512_reduce_add_ps(*sum));
            }
        }
    }

    /// `dst[c·m + r] = scales[c] · x_scales[r] · (x[r] · w[c])` with `vpdpbusd`, which multiplies
    /// unsigned by signed bytes: the activations come as `xu = x + 128` (`x` is in -127..=127), and
    /// `128 · Σw` is taken off each sum after.
    ///
    /// # Safety
    /// The CPU has AVX-512F, BW and VNNI; `xu.len() = m·k`, `x_scales.len() = m`,
    /// `w.len() = n·k`, `scales.len() = n`, `dst.len() = n·m`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn int8_dots(
        xu: &[u8],
        x_scales: &[f32],
        k: usize,
        w: &[i8],
        scales: &[f32],
        dst: &mut [f32],
    ) {
        four_rows_at_a_time!(int8_rows, xu, k, w, &mut *dst);
        for (out, scale) in dst.chunks_exact_mut(x_scales.len()).zip(scales) {
            for (o, x_scale) in out.iter_mut().zip(x_scales) {
                *o *= scale * x_scale;
            }
        }
    }

    /// The mask of a 64-byte vector's first `len` bytes (all of them from 64).
    fn first_bytes(len: usize) -> u64 {
        if len >= 64 {
            u64::MAX
        } else {
            (1u64 << len) - 1
        }
    }

    /// `x[j] · row` in i32 for the `G` offset activation rows starting at `xu`; each 64 weights are
    /// loaded once for all of them. The last partial 64 bytes go through masked loads: zeros add
    /// nothing to either sum.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[inline]
    unsafe fn int8_rows<const G: usize>(xu: &[u8], k: usize, row: &[i8], out: &mut [f32]) {
        let mut dots = [_mm512_setzero_si512(); G];
        let mut offset = _mm512_setzero_si512();
        let mut i = 0;
        while i < k {
            let mask = first_bytes(k - i);
            let wv = _mm512_maskz_loadu_epi8(mask, row.as_ptr().add(i));
            // 128 (as an unsigned byte) in the lanes read.
            offset = _mm512_dpbusd_epi32(offset, _mm512_maskz_set1_epi8(mask, -128), wv);
            for (j, d) in dots.iter_mut().enumerate() {
                let xv = _mm512_maskz_loadu_epi8(mask, xu.as_ptr().add(j * k + i).cast());
                *d = _mm512_dpbusd_epi32(*d, xv, wv);
            }
            i += 64;
        }
        let offset = _mm512_reduce_add_epi32(offset);
        for (o, d) in out.iter_mut().zip(dots) {
            *o = (_mm512_reduce_add_epi32(d) - offset) as f32;
        }
    }

    /// `store(ch, r, value)` of every offset activation row of `xu` (`m × k`, scales `x_scales`)
    /// and every weight row `ch` of `w` (scales `scales`), as [`int8_dots`] computes it: the
    /// many-rows product where the CPU has `vpdpbusd` but no AMX tiles, four weight rows by four
    /// activation rows at a time as [`bf16_blocks`].
    ///
    /// # Safety
    /// The CPU has AVX-512F, BW and VNNI; `xu.len() = m·k`, `x_scales.len() = m`, `w.len()` =
    /// `scales.len()·k`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn int8_blocks(
        xu: &[u8],
        x_scales: &[f32],
        k: usize,
        w: &[i8],
        scales: &[f32],
        store: &dyn Fn(usize, usize, f32),
    ) {
        let p = Int8Product {
            xu,
            x_scales,
            k,
            w,
            scales,
        };
        // SAFETY (of each block): as this function's.
        four_by_four(x_scales.len(), scales.len(), |r, c, shape| unsafe {
            match shape {
                (4, 4) => int8_block::<4, 4>(&p, r, c, store),
                (1, 4) => int8_block::<1, 4>(&p, r, c, store),
                (4, _) => int8_block::<4, 1>(&p, r, c, store),
                _ => int8_block::<1, 1>(&p, r, c, store),
            }
        });
    }

    /// The operands of [`int8_blocks`].
    #[derive(Clone, Copy)]
    struct Int8Product<'a> {
        xu: &'a [u8],
        x_scales: &'a [f32],
        k: usize,
        w: &'a [i8],
        scales: &'a [f32],
    }

    /// The outputs of activation rows `r0..r0 + R` and weight rows `c0..c0 + C`: i32 sums, the
    /// offset `128 · Σw` taken off, scaled.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[inline]
    unsafe fn int8_block<const R: usize, const C: usize>(
        p: &Int8Product,
        r0: usize,
        c0: usize,
        store: &dyn Fn(usize, usize, f32),
    ) {
        let Int8Product {
            xu,
            x_scales,
            k,
            w,
            scales,
        } = *p;
        let mut dots = [[_mm512_setzero_si512(); C]; R];
        let mut offsets = [_mm512_setzero_si512(); C];
        let (xp, wp) = (xu.as_ptr().add(r0 * k), w.as_ptr().add(c0 * k));
        let mut i = 0;
        while i < k {
            let mask = first_bytes(k - i);
            let high = _mm512_maskz_set1_epi8(mask, -128);
            let wv: [__m512i; C] =
                std::array::from_fn(|c| _mm512_maskz_loadu_epi8(mask, wp.add(c * k + i)));
            for (offset, wv) in offsets.iter_mut().zip(wv) {
                *offset = _mm512_dpbusd_epi32(*offset, high, wv);
            }
            for (r, sums) in dots.iter_mut().enumerate() {
                let xv = _mm512_maskz_loadu_epi8(mask, xp.add(r * k + i).cast());
                for (sum, wv) in sums.iter_mut().zip(wv) {
                    *sum = _mm512_dpbusd_epi32(*sum, xv, wv);
                }
            }
            i += 64;
        }
        for (r, sums) in dots.iter().enumerate() {
            for (c, (sum, offset)) in sums.iter().zip(&offsets).enumerate() {
                let dot = _mm512_reduce_add_epi32(*sum) - _mm512_reduce_add_epi32(*offset);
                let (r, c) = (r0 + r, c0 + c);
                store(c, r, dot as f32 * (scales[c] * x_scales[r]));
            }
        }
    }
}

/// [`dots`] in plain Rust; inlined into the AVX2 variant, which compiles it again. One activation
/// row widens each weight value inside its dot product; several share one widened copy of the
/// weight row, so that a weight is widened once per step, not once per row.
#[inline(always)]
fn dots_portable(x: &[f32], k: usize, w: &[bf16], dst: &mut [f32]) {
    let m = x.len() / k;
    let mut wide = vec![0f32; if m > 1 { k } else { 0 }];
    for (c, row) in w.chunks_exact(k).enumerate() {
        if m == 1 {
            dst[c] = dot(x, row);
            continue;
        }
        for (d, &v) in wide.iter_mut().zip(row) {
            *d = v.widen();
        }
        for (r, xr) in x.chunks_exact(k).enumerate() {
            dst[c * m + r] = dot(xr, &wide);
        }
    }
}

/// `x · w`, in `LANES` independent partial sums so that the loop vectorises without reassociating
/// one running sum (which the compiler may not do for floats).
#[inline(always)]
fn dot<T: Stored>(x: &[f32], w: &[T]) -> f32 {
    const LANES: usize = 32;
    let mut acc = [0f32; LANES];
    let (mut xs, mut ws) = (x.chunks_exact(LANES), w.chunks_exact(LANES));
    for (a, b) in (&mut xs).zip(&mut ws) {
        let a: &[f32; LANES] = a.try_into().expect("a whole chunk");
        let b: &[T; LANES] = b.try_into().expect("a whole chunk");
        for i in 0..LANES {
            acc[i] += a[i] * b[i].widen();
        }
    }
    let tail: f32 = xs
        .remainder()
        .iter()
        .zip(ws.remainder())
        .map(|(a, b)| a * b.widen())
        .sum();
    // Halving, so that the sum of the lanes vectorises too (a running sum of 32 lanes was most
    // of a dot over a 192-long row).
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            acc[i] += acc[i + width];
        }
    }
    acc[0] + tail
}
