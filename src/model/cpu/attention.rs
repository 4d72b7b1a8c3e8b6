//! Attention of a few new queries (a decode step, a speculative check) against the cached keys, as
//! a native loop on the inference CPU backend (`NdArray<f32>` without autodiff).
//!
//! Through burn, each decode step of each attention layer transposed and copied the whole key cache
//! for a matrix product of one query row, built the score mask, and ran softmax as several
//! allocating passes: on `small`, decoding after a 512-token prompt ran at ~70 % of the speed after
//! a 128-token one. Here the keys and values are read in place, one (row, kv head) pair per part of
//! [`spin_team`], and the query heads that share a kv head take their scores and outputs as two
//! matrix products together, so each key is read once per position, not once per query head.
//!
//! Prefill (many queries, [`attend_many`]) ran as burn's blocked matrix products on one thread, with
//! a materialised mask and an allocating softmax: about a quarter of a long prompt's prefill of
//! `small`. Here each (row, kv head) pair is a part of the team, and each block of 64 queries of one
//! head is two matrix products (scores against the keys the block can see, then the values) with the
//! mask and softmax applied in place between them.

use std::borrow::Cow;
use std::ops::Range;

use super::backend::{into_array, softmax_row, tensor};
#[cfg(target_arch = "x86_64")]
use super::reduced::tiles_fit;
use super::spin_team;
use burn::prelude::*;
use ndarray::{ArcArray, IxDyn};

/// The key slots a query sees, `visible(row, query)`: two ranges in order (before and after the
/// row's padding; either may be empty).
pub type Visible<'a> = dyn Fn(usize, usize) -> [Range<usize>; 2] + Sync + 'a;

/// Queries per row up to which [`attend`] is used instead of matrix products.
pub const FEW_QUERIES: usize = 8;

/// One (row, kv head) pair's share of an attention call: the `rep` query heads that read its kv
/// head, one after another with `t` queries each (`hd` floats a query), and its `tk` keys and values.
struct Pair<'a> {
    row: usize,
    t: usize,
    hd: usize,
    queries: &'a [f32],
    keys: &'a [f32],
    values: &'a [f32],
}

impl Pair<'_> {
    fn keys(&self) -> usize {
        self.keys.len() / self.hd
    }
}

/// Runs `work(pair, out)` for each (row, kv head) pair of `q: [B, nh, T, hd]` against `k, v: [B,
/// nkv, tk, hd]` as a part of [`spin_team`], `out` being the pair's outputs (laid out as its
/// queries, zeroed), and returns the outputs `[B, nh, T, hd]`.
fn for_each_pair<B: Backend>(
    q: Tensor<B, 4>,
    k: Tensor<B, 4>,
    v: Tensor<B, 4>,
    work: &(dyn Fn(&Pair, &mut [f32]) + Sync),
) -> Tensor<B, 4> {
    let [b, nh, t, hd] = q.dims();
    let [_, nkv, tk, _] = k.dims();
    let rep = nh / nkv;
    let (q, k, v) = (into_array(q), into_array(k), into_array(v));
    let q = q.as_standard_layout();
    let q = q.as_slice().expect("standard layout");
    let ((k, k_stride), (v, v_stride)) = (pair_major(&k), pair_major(&v));
    let mut out = vec![0.0f32; b * nh * t * hd];
    if out.is_empty() || tk == 0 {
        return tensor(out, [b, nh, t, hd]);
    }
    // Pair p = (row, kv head) owns the outputs of that kv head's `rep` query heads: one contiguous run.
    let mut pairs: Vec<&mut [f32]> = out.chunks_mut(rep * t * hd).collect();
    spin_team::for_each(&mut pairs, &|p, out| {
        let pair = Pair {
            row: p / nkv,
            t,
            hd,
            queries: &q[p * rep * t * hd..][..rep * t * hd],
            keys: &k[p * k_stride..][..tk * hd],
            values: &v[p * v_stride..][..tk * hd],
        };
        work(&pair, out)
    });
    tensor(out, [b, nh, t, hd])
}

/// `a: [B, nkv, tk, hd]` as one slice in which (row, kv head) pair `p`'s `[tk, hd]` block starts at
/// `p × stride`: the array's own memory when each block is contiguous and the blocks evenly spaced —
/// standard layout, or a KV cache's buffer with spare slots narrowed to its filled ones — else a
/// standard-layout copy.
fn pair_major(a: &ArcArray<f32, IxDyn>) -> (Cow<'_, [f32]>, usize) {
    let (d, s) = (a.shape(), a.strides());
    let (pairs, block) = (d[0] * d[1], d[2] * d[3]);
    let evenly = s[3] == 1
        && s[2] == d[3] as isize
        && s[1] >= block as isize
        && (d[0] == 1 || s[0] == d[1] as isize * s[1]);
    if evenly && pairs > 0 && block > 0 {
        let span = (pairs - 1) * s[1] as usize + block;
        // SAFETY: the strides checked above place every element of the array inside the `span`
        // floats from its first one, all within the array's one allocation, which `a` keeps alive.
        let all = unsafe { std::slice::from_raw_parts(a.as_ptr(), span) };
        return (Cow::Borrowed(all), s[1] as usize);
    }
    (Cow::Owned(a.iter().copied().collect()), block)
}

/// `q: [B, nh, T, hd]` against `k, v: [B, nkv, tk, hd]` (query head `h` reads kv head
/// `h / (nh / nkv)`), with `visible(row, query)` giving the key slots each query sees as two ranges
/// in order (as for [`attend_many`]) → `[B, nh, T, hd]`. Scores are scaled by `scale` before the
/// softmax. Only the visible keys are read: a decode step at a long context, or in a batch row with
/// a long padding gap, costs its own keys. The `rep` query heads that share a kv head take their
/// scores and outputs together, as two matrix products per visible range (`[rep, hd] × [hd, n]`,
/// then `[rep, n] × [n, hd]`), so each key and value is read once per position instead of once per
/// query head: at a 4,000-token context a pair's keys are a megabyte, past what stays in cache
/// from one query head to the next.
pub fn attend<B: Backend>(
    q: Tensor<B, 4>,
    k: Tensor<B, 4>,
    v: Tensor<B, 4>,
    scale: f32,
    visible: &Visible,
) -> Tensor<B, 4> {
    for_each_pair(q, k, v, &|pair, out| {
        let (t, hd) = (pair.t, pair.hd);
        let rep = pair.queries.len() / (t * hd);
        let mut scores = Vec::new();
        for query in 0..t {
            let ranges = visible(pair.row, query);
            let ranges: Vec<&Range<usize>> = ranges.iter().filter(|r| !r.is_empty()).collect();
            let n: usize = ranges.iter().map(|r| r.len()).sum();
            if n == 0 {
                continue; // no key visible: the outputs stay zero
            }
            // Query head h's row is at (h·t + query)·hd: rows `t·hd` apart.
            let (queries, o) = (&pair.queries[query * hd..], &mut out[query * hd..]);
            scores.resize(rep * n, 0.0);
            let mut at = 0;
            for r in &ranges {
                // SAFETY: `scores` is `rep × n` and this range fills its columns `at..at + len`;
                // the `rep` query rows lie `t·hd` apart within the pair's queries, and the keys
                // `r` (read transposed) within its keys, as `visible` stays below `tk`.
                unsafe {
                    product(
                        [rep, r.len(), hd],
                        (scores[at..].as_mut_ptr(), n),
                        (queries.as_ptr(), t * hd, 1),
                        (pair.keys[r.start * hd..].as_ptr(), 1, hd),
                        scale,
                        false,
                    )
                };
                at += r.len();
            }
            scores.chunks_exact_mut(n).for_each(|row| {
                softmax_row(row);
            });
            let mut at = 0;
            for (i, r) in ranges.iter().enumerate() {
                // SAFETY: the outputs are this pair's own `rep` rows `t·hd` apart, the weights
                // columns `at..at + len` of `scores`, the values `r`; the second range adds to
                // what the first wrote.
                unsafe {
                    product(
                        [rep, hd, r.len()],
                        (o.as_mut_ptr(), t * hd),
                        (scores[at..].as_ptr(), n, 1),
                        (pair.values[r.start * hd..].as_ptr(), hd, 1),
                        1.0,
                        i > 0,
                    )
                };
                at += r.len();
            }
        }
    })
}

/// Queries of one head per block of [`attend_many`]: a part holds `QUERY_BLOCK × keys` scores.
const QUERY_BLOCK: usize = 64;

/// `q: [B, nh, T, hd]` against `k, v: [B, nkv, tk, hd]` (query head `h` reads kv head
/// `h / (nh / nkv)`) for many queries → `[B, nh, T, hd]`. `visible(row, query)` gives the key
/// slots the query sees as two ranges in order (before and after the row's padding; either may be
/// empty). Scores are scaled by `scale` before the softmax. With `bf16_products` (a layer whose
/// projections are bf16 or int8) the two products take their operands rounded to bf16, on AMX tiles
/// where the CPU has them, as llama.cpp's attention reads an f16 cache; else, and always for f32
/// layers, they are f32.
pub fn attend_many<B: Backend>(
    q: Tensor<B, 4>,
    k: Tensor<B, 4>,
    v: Tensor<B, 4>,
    scale: f32,
    visible: &Visible,
    bf16_products: bool,
) -> Tensor<B, 4> {
    #[cfg(target_arch = "x86_64")]
    if bf16_products && tiles_fit(2 * q.dims()[3]) {
        return for_each_pair(q, k, v, &|pair, out| tiled::pair(pair, out, scale, visible));
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bf16_products; // no tiles here: f32 products
    for_each_pair(q, k, v, &|pair, out| {
        let (t, hd, tk) = (pair.t, pair.hd, pair.keys());
        let mut scores = vec![0.0f32; QUERY_BLOCK.min(t) * tk];
        for block in Block::all(pair, visible) {
            let s = &mut scores[..block.len * block.seen];
            // SAFETY: `s` is `len × seen`, the queries `len × hd`, and the first `seen` keys
            // `seen × hd` (read transposed through their strides); nothing else touches `s`.
            unsafe {
                product(
                    [block.len, block.seen, hd],
                    (s.as_mut_ptr(), block.seen),
                    (block.queries.as_ptr(), hd, 1),
                    (pair.keys.as_ptr(), 1, hd),
                    scale,
                    false,
                )
            };
            block.softmax(s);
            let o = &mut out[block.at..][..block.len * hd];
            // SAFETY: `o` is `len × hd` (this pair's own outputs), `s` `len × seen`, and the
            // first `seen` values `seen × hd`.
            unsafe {
                product(
                    [block.len, hd, block.seen],
                    (o.as_mut_ptr(), hd),
                    (s.as_ptr(), block.seen, 1),
                    (pair.values.as_ptr(), hd, 1),
                    1.0,
                    false,
                )
            };
        }
    })
}

/// Up to [`QUERY_BLOCK`] queries of one query head of a pair, with the key slots each sees.
struct Block<'a> {
    /// Where the block's queries (and outputs) start in the pair's, in floats.
    at: usize,
    len: usize,
    queries: &'a [f32],
    /// Each query's visible key ranges.
    ranges: Vec<[Range<usize>; 2]>,
    /// Keys up to the last one any query of the block sees: those past it are never read.
    seen: usize,
}

impl<'a> Block<'a> {
    /// The pair's blocks, query head by query head, that see at least one key (a block that sees
    /// none keeps its outputs zero).
    fn all(pair: &'a Pair<'a>, visible: &'a Visible<'a>) -> impl Iterator<Item = Block<'a>> + 'a {
        let (t, hd, tk) = (pair.t, pair.hd, pair.keys());
        let heads = pair.queries.len() / (t * hd);
        (0..heads)
            .flat_map(move |head| (0..t).step_by(QUERY_BLOCK).map(move |from| (head, from)))
            .filter_map(move |(head, from)| {
                let len = (t - from).min(QUERY_BLOCK);
                let ranges: Vec<[Range<usize>; 2]> =
                    (from..from + len).map(|i| visible(pair.row, i)).collect();
                let seen = ranges
                    .iter()
                    .flatten()
                    .filter(|r| !r.is_empty())
                    .map(|r| r.end)
                    .max()
                    .unwrap_or(0)
                    .min(tk);
                let at = (head * t + from) * hd;
                (seen > 0).then(|| Block {
                    at,
                    len,
                    queries: &pair.queries[at..][..len * hd],
                    ranges,
                    seen,
                })
            })
    }

    /// The scores `s: [len, seen]` masked to each query's visible keys and turned into weights.
    fn softmax(&self, s: &mut [f32]) {
        for (srow, r) in s.chunks_exact_mut(self.seen).zip(&self.ranges) {
            let mut next = 0;
            for r in r.iter().filter(|r| !r.is_empty()) {
                srow[next.min(self.seen)..r.start.min(self.seen)].fill(f32::NEG_INFINITY);
                next = next.max(r.end);
            }
            srow[next.min(self.seen)..].fill(f32::NEG_INFINITY);
            // A query that sees no key gets all-zero weights, so its output stays zero.
            softmax_row(srow);
        }
    }
}

/// [`attend_many`]'s products on AMX tiles: the pair's keys and values rounded to bf16 once, then
/// per block the scores as (keys × queries) tiles and the outputs as (weights × values) tiles.
#[cfg(target_arch = "x86_64")]
mod tiled {
    use super::super::amx::{self, Dot, PackedRows, Rows};
    use super::super::reduced::{bytes_of, round_to_bf16};
    use super::{Block, Pair, Visible, QUERY_BLOCK};
    use half::bf16;

    /// Keys per 64-byte block of bf16 weights.
    const BLOCK_KEYS: usize = amx::BLOCK_BYTES / 2;

    pub(super) fn pair(pair: &Pair, out: &mut [f32], scale: f32, visible: &Visible) {
        let (t, hd, tk) = (pair.t, pair.hd, pair.keys());
        let mut keys = vec![bf16::ZERO; tk * hd];
        round_to_bf16(pair.keys, &mut keys);
        let values = PackedRows::bf16_columns(pair.values, tk, hd);
        // The weights of a block's queries, rows as long as the values' (whole blocks of keys).
        let padded = tk.div_ceil(BLOCK_KEYS) * BLOCK_KEYS;
        let rows = QUERY_BLOCK.min(t);
        let (mut scores, mut weights) = (vec![0f32; rows * tk], vec![bf16::ZERO; rows * padded]);
        let mut queries = vec![bf16::ZERO; rows * hd];
        for block in Block::all(pair, visible) {
            let (len, seen) = (block.len, block.seen);
            let q = &mut queries[..len * hd];
            round_to_bf16(block.queries, q);
            let q = PackedRows::new(bytes_of(q), len, 2 * hd);
            let key_rows = Rows::dense(bytes_of(&keys[..seen * hd]), seen, 2 * hd);
            let s = &mut scores[..len * seen];
            let store = |key: usize, query: usize, sum: u32| {
                s[query * seen + key] = f32::from_bits(sum) * scale
            };
            // SAFETY: `tiles_fit` checked the CPU (in `attend_many`).
            unsafe { amx::product(Dot::Bf16, key_rows, &q, store) };
            block.softmax(s);
            // The weights past `seen` (to the end of its block of keys) are zero.
            let blocks = seen.div_ceil(BLOCK_KEYS);
            for (srow, wrow) in s.chunks_exact(seen).zip(weights.chunks_exact_mut(padded)) {
                round_to_bf16(srow, &mut wrow[..seen]);
                wrow[seen..blocks * BLOCK_KEYS].fill(bf16::ZERO);
            }
            let w = Rows {
                bytes: bytes_of(&weights),
                n: len,
                stride: 2 * padded,
                blocks,
            };
            let o = &mut out[block.at..][..len * hd];
            let store = |query: usize, d: usize, sum: u32| o[query * hd + d] = f32::from_bits(sum);
            // SAFETY: as above.
            unsafe { amx::product(Dot::Bf16, w, &values, store) };
        }
    }
}

/// `dst = scale · a · b` (or `dst += scale · a · b` when `add`) on the calling thread, for
/// `[m, n, k]`: `dst` is `m × n` (pointer, row stride; columns contiguous), `a` is `m × k` and `b`
/// is `k × n`, each given as (pointer, row stride, column stride).
///
/// # Safety
/// The pointers must cover the shapes under their strides, and `dst` must not alias `a` or `b`.
unsafe fn product(
    [m, n, k]: [usize; 3],
    dst: (*mut f32, usize),
    a: (*const f32, usize, usize),
    b: (*const f32, usize, usize),
    scale: f32,
    add: bool,
) {
    gemm::gemm(
        m,
        n,
        k,
        dst.0,
        1,
        dst.1 as isize,
        add,
        a.0,
        a.2 as isize,
        a.1 as isize,
        b.0,
        b.2 as isize,
        b.1 as isize,
        if add { 1.0 } else { 0.0 },
        scale,
        false,
        false,
        false,
        gemm::Parallelism::None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::TensorData;
    use burn_ndarray::NdArray;

    /// Values on a grid of 1/8 within ±2: exact in bf16, so the bf16 products differ from the f32
    /// ones only by the weights' rounding (half a bf16 ulp: at most 2^-8 of each weight).
    fn grid(shape: [usize; 4], seed: u64) -> Tensor<NdArray<f32>, 4> {
        let mut rng = crate::rng::Rng::new(seed);
        let n = shape.iter().product();
        let values: Vec<f32> = (0..n)
            .map(|_| (rng.below(33) as f32 - 16.0) / 8.0)
            .collect();
        Tensor::from_data(TensorData::new(values, shape), &Default::default())
    }

    /// The bf16 (tiled) prefill attention against the f32 one, on queries spanning several blocks
    /// of several heads, against keys that are not whole tiles, under a causal mask with a cached
    /// prefix and a row with a padding gap: each output within 2^-8 · max|v| of f32's.
    #[test]
    fn bf16_products_give_f32_attention_within_the_weights_rounding() {
        let (rows, nh, nkv, hd, cached, t) = (2, 4, 2, 64, 37, 150);
        let tk = cached + t;
        let (q, k, v) = (
            grid([rows, nh, t, hd], 1),
            grid([rows, nkv, tk, hd], 2),
            grid([rows, nkv, tk, hd], 3),
        );
        // Row 1 has padding in slots 10..30 of its cached part.
        let visible = |row: usize, i: usize| {
            let end = cached + i + 1;
            if row == 1 {
                [0..10, 30..end]
            } else {
                [0..end, end..end]
            }
        };
        let scale = (hd as f32).powf(-0.5);
        let f32s = attend_many(q.clone(), k.clone(), v.clone(), scale, &visible, false);
        let bf16s = attend_many(q, k, v, scale, &visible, true);
        let (a, b) = (
            f32s.to_data().to_vec::<f32>().unwrap(),
            bf16s.to_data().to_vec::<f32>().unwrap(),
        );
        let worst = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f32, f32::max);
        assert!(worst <= 2.0 / 256.0 + 1e-4, "worst difference {worst}");
        #[cfg(target_arch = "x86_64")]
        if tiles_fit(2 * hd) {
            assert!(worst > 0.0, "the tiles ran: the weights were rounded");
        }
    }
}
