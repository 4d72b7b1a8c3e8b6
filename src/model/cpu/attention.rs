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
use super::spin_team;
use burn::prelude::*;
use ndarray::{ArcArray, IxDyn};

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
    visible: &(dyn Fn(usize, usize) -> [Range<usize>; 2] + Sync),
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
/// empty). Scores are scaled by `scale` before the softmax.
pub fn attend_many<B: Backend>(
    q: Tensor<B, 4>,
    k: Tensor<B, 4>,
    v: Tensor<B, 4>,
    scale: f32,
    visible: &(dyn Fn(usize, usize) -> [Range<usize>; 2] + Sync),
) -> Tensor<B, 4> {
    for_each_pair(q, k, v, &|pair, out| {
        let (t, hd, tk) = (pair.t, pair.hd, pair.keys());
        let mut scores = vec![0.0f32; QUERY_BLOCK.min(t) * tk];
        for head in 0..pair.queries.len() / (t * hd) {
            for from in (0..t).step_by(QUERY_BLOCK) {
                let len = (t - from).min(QUERY_BLOCK);
                let ranges: Vec<[Range<usize>; 2]> =
                    (from..from + len).map(|i| visible(pair.row, i)).collect();
                // Keys past the last one any query of the block sees are never read.
                let seen = ranges
                    .iter()
                    .flatten()
                    .filter(|r| !r.is_empty())
                    .map(|r| r.end)
                    .max()
                    .unwrap_or(0)
                    .min(tk);
                if seen == 0 {
                    continue; // no key visible: the outputs stay zero
                }
                let at = (head * t + from) * hd;
                let queries = &pair.queries[at..][..len * hd];
                let s = &mut scores[..len * seen];
                // SAFETY: `s` is `len × seen`, `queries` `len × hd`, and the first `seen` keys
                // `seen × hd` (read transposed through their strides); nothing else touches `s`.
                unsafe {
                    product(
                        [len, seen, hd],
                        (s.as_mut_ptr(), seen),
                        (queries.as_ptr(), hd, 1),
                        (pair.keys.as_ptr(), 1, hd),
                        scale,
                        false,
                    )
                };
                for (srow, r) in s.chunks_exact_mut(seen).zip(&ranges) {
                    let mut next = 0;
                    for r in r.iter().filter(|r| !r.is_empty()) {
                        srow[next.min(seen)..r.start.min(seen)].fill(f32::NEG_INFINITY);
                        next = next.max(r.end);
                    }
                    srow[next.min(seen)..].fill(f32::NEG_INFINITY);
                    // A query that sees no key gets all-zero weights, so its output stays zero.
                    softmax_row(srow);
                }
                let o = &mut out[at..][..len * hd];
                // SAFETY: `o` is `len × hd` (this pair's own outputs), `s` `len × seen`, and the
                // first `seen` values `seen × hd`.
                unsafe {
                    product(
                        [len, hd, seen],
                        (o.as_mut_ptr(), hd),
                        (s.as_ptr(), seen, 1),
                        (pair.values.as_ptr(), hd, 1),
                        1.0,
                        false,
                    )
                };
            }
        }
    })
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
