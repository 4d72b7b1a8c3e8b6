//! Decoding state: a KV cache for attention layers and the conv + recurrent state for Gated
//! DeltaNet layers. One [`LayerCache`] per decoder layer; `seq_len` counts tokens already seen.
//!
//! Sequences of different lengths decode (or prefill) together by [`Cache::stack`]ing their caches
//! into one batch: keys right-padded to the longest row, recurrent states concatenated along the
//! batch. Each row remembers its padding as a gap of key slots (`gaps`); since every later decode
//! step appends one key to every row at the end, the gap stays where it is and the batch can stay
//! stacked from step to step (the serve engine keeps one such *persistent* batch: a sequence
//! joining or leaving costs a copy of its own row, a decode step none). [`Cache::unstack`] splits a batch back
//! into single-sequence caches without the padding.

use crate::model::cpu::backend::{cat, compact, is_cpu};
use crate::model::host::ints;
use anyhow::{bail, Result};
use burn::prelude::*;

/// Keys/values after RoPE, `[B, kv_heads, T_past, head_dim]`.
///
/// On the CPU inference backend the buffers hold spare slots after the `len` filled ones, and a
/// decode step writes its key into the next slot in place: appending by concatenation copied the
/// whole cache (and faulted in fresh pages for it) on every step of every attention layer, which at
/// a 4,000-token agent prompt was most of a batched decode step of `small`. A buffer shared with a
/// clone (a prefix-cache entry) is copied before it is written (copy on write), so clones never see
/// each other's keys.
///
/// A running batch's buffers also hold spare *rows* after its `rows` ones: a sequence joining the
/// batch is written into one in place instead of the whole batch being copied into a new buffer,
/// and one leaving hands its row to the last one (see [`Cache::join`], [`Cache::keep_rows`]).
#[derive(Clone, Debug, Default)]
pub struct KvCache<B: Backend> {
    /// `[row capacity, kv_heads, slot capacity, head_dim]`: rows `..rows`, slots `..len` filled.
    k: Option<Tensor<B, 4>>,
    v: Option<Tensor<B, 4>>,
    len: usize,
    rows: usize,
}

/// Spare key slots a CPU cache grows by: a reallocation (one copy of the cache) every this many
/// decode steps instead of on every one.
const SPARE_SLOTS: usize = 256;

impl<B: Backend> KvCache<B> {
    /// A cache holding exactly these keys and values (`[B, kv_heads, T, head_dim]`).
    pub fn filled(k: Option<Tensor<B, 4>>, v: Option<Tensor<B, 4>>) -> Self {
        let [rows, _, len, _] = k.as_ref().map_or([0; 4], |k| k.dims());
        Self { k, v, len, rows }
    }

    /// The filled keys, `[B, kv_heads, T_past, head_dim]` (a view, no copy).
    pub fn keys(&self) -> Option<Tensor<B, 4>> {
        self.k.as_ref().map(|k| self.filled_part(k))
    }

    /// The filled values, like [`Self::keys`].
    pub fn values(&self) -> Option<Tensor<B, 4>> {
        self.v.as_ref().map(|v| self.filled_part(v))
    }

    /// `t` cut to the filled slots of the rows in use (a view).
    fn filled_part(&self, t: &Tensor<B, 4>) -> Tensor<B, 4> {
        let t = t.clone().narrow(2, 0, self.len);
        if t.dims()[0] == self.rows {
            t
        } else {
            t.narrow(0, 0, self.rows)
        }
    }

    /// Appends new keys/values along time and returns the full sequences.
    pub fn append(&mut self, k: Tensor<B, 4>, v: Tensor<B, 4>) -> (Tensor<B, 4>, Tensor<B, 4>) {
        let [b, h, t, d] = k.dims();
        let (from, to) = (self.len, self.len + t);
        let [row_capacity, _, capacity, _] = self.k.as_ref().map_or([0; 4], |k| k.dims());
        match (self.k.take(), self.v.take()) {
            // Moved, not cloned: a buffer nothing else holds is written in place.
            (Some(old_k), Some(old_v)) if is_cpu::<B>() && to <= capacity && b <= row_capacity => {
                let slots = [0..b, 0..h, from..to, 0..d];
                self.k = Some(old_k.slice_assign(slots.clone(), k));
                self.v = Some(old_v.slice_assign(slots, v));
            }
            (old_k, old_v) => {
                // Filled slots, the new ones, and (on the CPU) spare ones.
                let grown = |old: Option<Tensor<B, 4>>, new: Tensor<B, 4>| {
                    let mut parts: Vec<Tensor<B, 4>> = old
                        .filter(|_| from > 0)
                        .map(|o| o.narrow(0, 0, b).narrow(2, 0, from))
                        .into_iter()
                        .collect();
                    let device = new.device();
                    parts.push(new);
                    if is_cpu::<B>() {
                        parts.push(Tensor::zeros([b, h, SPARE_SLOTS, d], &device));
                    }
                    cat(parts, 2)
                };
                self.k = Some(grown(old_k, k));
                self.v = Some(grown(old_v, v));
            }
        }
        self.len = to;
        self.rows = b;
        (
            self.keys().expect("just appended"),
            self.values().expect("just appended"),
        )
    }

    /// This batch's buffers with `new` (single sequences, none longer than the filled slots) as
    /// its next rows: written into spare rows in place, after the buffers have grown to 1.5 times the
    /// rows needed when there are not enough (one copy of the batch every few joins, not on each).
    /// Slots of a new row past its own keys keep whatever they held: its gap hides them.
    fn with_rows_below<'a>(self, new: Vec<&'a KvCache<B>>) -> Self
    where
        B: 'a,
    {
        let (Some(k), Some(v)) = (self.k, self.v) else {
            return Self::default(); // no attention in this layer
        };
        let rows = self.rows + new.len();
        let [capacity, h, slots, d] = k.dims();
        let spare = if is_cpu::<B>() { rows.div_ceil(2) } else { 0 };
        let grown = |t: Tensor<B, 4>| {
            if rows <= capacity {
                return t;
            }
            let zeros = Tensor::zeros([rows + spare - capacity, h, slots, d], &t.device());
            cat(vec![t, zeros], 0)
        };
        let (mut k, mut v) = (grown(k), grown(v));
        for (row, r) in (self.rows..).zip(new) {
            if let (Some(keys), Some(values)) = (r.keys(), r.values()) {
                let filled = [row..row + 1, 0..h, 0..keys.dims()[2], 0..d];
                k = k.slice_assign(filled.clone(), keys);
                v = v.slice_assign(filled, values);
            }
        }
        Self {
            k: Some(k),
            v: Some(v),
            len: self.len,
            rows,
        }
    }
}

/// A Gated DeltaNet layer's (conv, recurrent) state after each of several tokens.
pub type TokenStates<B> = Vec<(Tensor<B, 3>, Tensor<B, 4>)>;

/// Gated DeltaNet state.
#[derive(Clone, Debug, Default)]
pub struct DeltaNetState<B: Backend> {
    /// The last `K-1` pre-conv inputs, `[B, K-1, conv_dim]` (time-major).
    pub conv: Option<Tensor<B, 3>>,
    /// `S`, `[B, Hv, dk, dv]`, f32.
    pub recurrent: Option<Tensor<B, 4>>,
    /// Armed by [`Cache::keep_token_states`]: the (conv, recurrent) state after each token but
    /// the last of the next forward, for [`Cache::drop_last`] to go back to.
    pub token_states: Option<TokenStates<B>>,
}

impl<B: Backend> DeltaNetState<B> {
    /// Whether a token has been through the layer: the conv history and the recurrent state exist.
    pub fn is_started(&self) -> bool {
        self.conv.is_some() && self.recurrent.is_some()
    }
}

#[derive(Clone, Debug, Default)]
pub struct LayerCache<B: Backend> {
    pub kv: KvCache<B>,
    pub deltanet: DeltaNetState<B>,
}

#[derive(Clone, Debug)]
pub struct Cache<B: Backend> {
    pub layers: Vec<LayerCache<B>>,
    /// Tokens seen (for a stacked batch: the longest row, i.e. the padded key length).
    pub seq_len: usize,
    /// For a stacked batch: each row's true length (its next position). `None` when every row
    /// has `seq_len` tokens.
    pub row_lens: Option<Vec<usize>>,
    /// For a stacked batch: each row's padding, key slots `lo..hi` that it does not see (its real
    /// keys are the slots before `lo` and from `hi` on). Fixed when the batch is stacked.
    pub gaps: Option<Vec<(usize, usize)>>,
}

impl<B: Backend> Cache<B> {
    pub fn new(num_layers: usize) -> Self {
        Self {
            layers: (0..num_layers).map(|_| LayerCache::default()).collect(),
            seq_len: 0,
            row_lens: None,
            gaps: None,
        }
    }

    /// Rows in this cache (1 unless it is a stacked batch).
    pub fn rows(&self) -> usize {
        self.row_lens.as_ref().map_or(1, Vec::len)
    }

    /// Position of each row's next token.
    pub fn positions(&self) -> Vec<usize> {
        self.row_lens.clone().unwrap_or_else(|| vec![self.seq_len])
    }

    /// Has the next forward keep each Gated DeltaNet layer's state after every token, so that
    /// [`Self::drop_last`] can take tokens back (the rejected drafts of speculative decoding)
    /// without a snapshot of the whole cache and a second forward. Only for one sequence on the
    /// inference CPU backend whose layers have all seen a token; returns whether it is armed.
    pub fn keep_token_states(&mut self) -> bool {
        let started = self.layers.iter().all(|l| {
            let d = &l.deltanet;
            d.is_started() || (d.conv.is_none() && d.recurrent.is_none())
        });
        if !is_cpu::<B>() || self.rows() != 1 || self.seq_len == 0 || !started {
            return false;
        }
        for l in &mut self.layers {
            if l.deltanet.is_started() {
                l.deltanet.token_states = Some(Vec::new());
            }
        }
        true
    }

    /// Takes back the last `n` tokens of the forward that followed [`Self::keep_token_states`]
    /// (`n` smaller than that forward's tokens; 0 keeps them all) and disarms: attention keys are
    /// cut, each Gated DeltaNet state goes back to the one kept after the last token staying.
    pub fn drop_last(&mut self, n: usize) -> Result<()> {
        // The armed layers and the states their last forward kept.
        let armed: Vec<(usize, TokenStates<B>)> = self
            .layers
            .iter_mut()
            .enumerate()
            .filter_map(|(i, l)| l.deltanet.token_states.take().map(|kept| (i, kept)))
            .collect();
        if n == 0 {
            return Ok(());
        }
        let fewest = armed.iter().map(|(_, kept)| kept.len()).min();
        if fewest.is_some_and(|kept| n > kept) || n > self.seq_len {
            bail!(
                "cannot take back {n} tokens: the last forward kept {} token states (of {} tokens seen)",
                fewest.unwrap_or(0),
                self.seq_len
            );
        }
        for (i, mut kept) in armed {
            let (conv, recurrent) = kept.swap_remove(kept.len() - n);
            let state = &mut self.layers[i].deltanet;
            (state.conv, state.recurrent) = (Some(conv), Some(recurrent));
        }
        for l in &mut self.layers {
            l.kv.len = l.kv.len.saturating_sub(n);
        }
        self.seq_len -= n;
        if let Some(lens) = &mut self.row_lens {
            lens.iter_mut().for_each(|l| *l -= n);
        }
        Ok(())
    }

    /// One batch from single-sequence caches of possibly different lengths: keys/values are
    /// right-padded with zeros to the longest (the attention mask hides the padding, see
    /// `row_lens`), DeltaNet states are concatenated. Empty caches (fresh sequences) may take part:
    /// their rows are all padding and zero states, which is what a fresh sequence starts from.
    pub fn stack(caches: &[Cache<B>]) -> Result<Self> {
        let Some(first) = caches.first() else {
            bail!("no caches to stack")
        };
        if let Some(i) = caches.iter().position(|c| c.row_lens.is_some()) {
            bail!("cache {i} is already a batch");
        }
        let lens: Vec<usize> = caches.iter().map(|c| c.seq_len).collect();
        let longest = *lens.iter().max().unwrap_or(&0);
        let pad = |t: &Tensor<B, 4>| -> Tensor<B, 4> {
            let [b, h, len, d] = t.dims();
            if len == longest {
                return t.clone();
            }
            let zeros = Tensor::zeros([b, h, longest - len, d], &t.device());
            cat(vec![t.clone(), zeros], 2)
        };
        let layers = (0..first.layers.len())
            .map(|l| {
                let rows: Vec<&LayerCache<B>> = caches.iter().map(|c| &c.layers[l]).collect();
                LayerCache {
                    kv: KvCache::filled(
                        cat_rows(&rows, |r| r.kv.keys().as_ref().map(pad)),
                        cat_rows(&rows, |r| r.kv.values().as_ref().map(pad)),
                    ),
                    deltanet: DeltaNetState {
                        conv: cat_rows(&rows, |r| r.deltanet.conv.clone()),
                        recurrent: cat_rows(&rows, |r| r.deltanet.recurrent.clone()),
                        token_states: None,
                    },
                }
            })
            .collect();
        Ok(Self {
            layers,
            seq_len: longest,
            gaps: Some(lens.iter().map(|&l| (l, longest)).collect()),
            row_lens: Some(lens),
        })
    }

    /// A batch of `rows` copies of this single-sequence cache, to continue several sequences from one
    /// shared prefix (in training, the gradients of every row flow back into the one prefix pass).
    pub fn repeat_rows(&self, rows: usize) -> Self {
        fn rep<B: Backend, const D: usize>(
            t: &Option<Tensor<B, D>>,
            rows: usize,
        ) -> Option<Tensor<B, D>> {
            t.as_ref().map(|t| t.clone().repeat_dim(0, rows))
        }
        Self {
            layers: self
                .layers
                .iter()
                .map(|l| LayerCache {
                    kv: KvCache::filled(rep(&l.kv.keys(), rows), rep(&l.kv.values(), rows)),
                    deltanet: DeltaNetState {
                        conv: rep(&l.deltanet.conv, rows),
                        recurrent: rep(&l.deltanet.recurrent, rows),
                        token_states: None,
                    },
                })
                .collect(),
            seq_len: self.seq_len,
            row_lens: None,
            gaps: None,
        }
    }

    /// Splits a stacked batch back into single-sequence caches, dropping each row's padding: row r
    /// keeps its real keys before its gap and the ones after it up to its length. After a forward of
    /// right-padded tails of different lengths (a batched prefill) the padding after each row's
    /// last real key goes too: only `row_lens` counts.
    pub fn unstack(self) -> Vec<Cache<B>> {
        let lens = self.positions();
        let gaps = self
            .gaps
            .clone()
            .unwrap_or_else(|| vec![(self.seq_len, self.seq_len)]);
        let mut out: Vec<Cache<B>> = lens
            .iter()
            .map(|&len| Cache {
                layers: Vec::with_capacity(self.layers.len()),
                seq_len: len,
                row_lens: None,
                gaps: None,
            })
            .collect();
        let row = |t: &Tensor<B, 4>, r: usize| t.clone().narrow(0, r, 1);
        for layer in self.layers {
            for (r, (c, (&len, &(lo, hi)))) in
                out.iter_mut().zip(lens.iter().zip(&gaps)).enumerate()
            {
                // The `lo` keys before the gap, then the `len - lo` after it; compacted, so that
                // a sequence does not keep the whole batch's buffer alive.
                let keep = |t: &Tensor<B, 4>| {
                    let t = row(t, r);
                    match (lo, len - lo) {
                        (_, 0) => compact(t.narrow(2, 0, lo)),
                        (0, after) => compact(t.narrow(2, hi, after)),
                        (before, after) => cat(
                            vec![t.clone().narrow(2, 0, before), t.narrow(2, hi, after)],
                            2,
                        ),
                    }
                };
                c.layers.push(LayerCache {
                    kv: KvCache::filled(
                        layer.kv.keys().as_ref().map(keep),
                        layer.kv.values().as_ref().map(keep),
                    ),
                    deltanet: DeltaNetState {
                        conv: layer
                            .deltanet
                            .conv
                            .as_ref()
                            .map(|t| compact(t.clone().narrow(0, r, 1))),
                        recurrent: layer
                            .deltanet
                            .recurrent
                            .as_ref()
                            .map(|t| compact(row(t, r))),
                        token_states: None,
                    },
                });
            }
        }
        out
    }

    /// This batch (or single cache) with `more` single-sequence caches added as its last rows.
    /// When none is longer than the batch, each new row's keys are written into a spare row of the
    /// batch's buffers (grown, one copy of the batch, when there are too few), the others' places
    /// and gaps stay, and the next decode step still appends in place. A longer one needs every
    /// row padded again: the rows are split out and stacked again (two copies, and a third when
    /// the next step grows the buffer).
    pub fn join(self, more: Vec<Cache<B>>) -> Result<Self> {
        if let Some(i) = more.iter().position(|c| c.row_lens.is_some()) {
            bail!("cache {i} to join is already a batch");
        }
        let fits = more.iter().all(|c| c.seq_len <= self.seq_len);
        let (Some(mut lens), Some(mut gaps), true) =
            (self.row_lens.clone(), self.gaps.clone(), fits)
        else {
            let mut rows = if self.row_lens.is_some() {
                self.unstack()
            } else {
                vec![self]
            };
            rows.extend(more);
            return Self::stack(&rows);
        };
        for c in &more {
            lens.push(c.seq_len);
            gaps.push((c.seq_len, self.seq_len));
        }
        let layers = self
            .layers
            .into_iter()
            .enumerate()
            .map(|(l, layer)| {
                let rows: Vec<&LayerCache<B>> = more.iter().map(|c| &c.layers[l]).collect();
                LayerCache {
                    kv: layer
                        .kv
                        .with_rows_below(rows.iter().map(|r| &r.kv).collect()),
                    deltanet: DeltaNetState {
                        conv: below(
                            layer.deltanet.conv,
                            cat_rows(&rows, |r| r.deltanet.conv.clone()),
                        ),
                        recurrent: below(
                            layer.deltanet.recurrent,
                            cat_rows(&rows, |r| r.deltanet.recurrent.clone()),
                        ),
                        token_states: None,
                    },
                }
            })
            .collect();
        Ok(Self {
            layers,
            seq_len: self.seq_len,
            row_lens: Some(lens),
            gaps: Some(gaps),
        })
    }

    /// The batch of rows `keep` (in that order). When the rows leaving held most of the padding —
    /// the longest kept row more than a quarter shorter than the batch — the kept rows are split out
    /// and stacked again so that the padding goes with them (two copies). Otherwise places, gaps
    /// and spare slots stay: when `keep` only moves rows from after the kept ones into the places
    /// of rows leaving (see [`fill_holes`]), those rows' keys are moved within the buffers (one
    /// copy of each moved row, the rest untouched); any other order picks the kept rows out of the
    /// batch (one copy of the batch).
    pub fn keep_rows(self, keep: &[usize]) -> Result<Self> {
        let (Some(lens), Some(gaps)) = (self.row_lens.clone(), self.gaps.clone()) else {
            bail!("keep_rows needs a stacked batch");
        };
        let n = lens.len();
        let mut seen = vec![false; n];
        for &r in keep {
            if r >= n || std::mem::replace(&mut seen[r], true) {
                bail!("row {r} is not in the batch of {n} (or kept twice)");
            }
        }
        let longest_kept = keep.iter().map(|&r| lens[r]).max().unwrap_or(0);
        if longest_kept * 4 < self.seq_len * 3 {
            let mut rows: Vec<Option<Cache<B>>> = self.unstack().into_iter().map(Some).collect();
            let kept: Vec<Cache<B>> = keep.iter().filter_map(|&r| rows[r].take()).collect();
            return Self::stack(&kept);
        }
        let device = self.layers.iter().find_map(|l| {
            let kv = l.kv.k.as_ref().map(Tensor::device);
            kv.or_else(|| l.deltanet.recurrent.as_ref().map(Tensor::device))
        });
        let Some(device) = device else {
            bail!("keep_rows: the batch holds no state");
        };
        let picked = ints::<B, 1>(
            keep.iter().map(|&r| r as i64).collect(),
            [keep.len()],
            &device,
        );
        let moves: Option<Vec<(usize, usize)>> = keep
            .iter()
            .enumerate()
            .filter(|&(to, &from)| to != from)
            .map(|(to, &from)| (from >= keep.len()).then_some((to, from)))
            .collect();
        let keys = |t: Option<Tensor<B, 4>>| match &moves {
            Some(moves) => move_rows(t, moves),
            None => pick_rows(t, &picked),
        };
        let layers = self
            .layers
            .into_iter()
            .map(|l| LayerCache {
                kv: KvCache {
                    k: keys(l.kv.k),
                    v: keys(l.kv.v),
                    len: l.kv.len,
                    rows: keep.len(),
                },
                deltanet: DeltaNetState {
                    conv: pick_rows(l.deltanet.conv, &picked),
                    recurrent: pick_rows(l.deltanet.recurrent, &picked),
                    token_states: None,
                },
            })
            .collect();
        Ok(Self {
            layers,
            seq_len: self.seq_len,
            row_lens: Some(keep.iter().map(|&r| lens[r]).collect()),
            gaps: Some(keep.iter().map(|&r| gaps[r]).collect()),
        })
    }
}

/// Rows `picked` of a batch's state (none in a layer without it).
fn pick_rows<B: Backend, const D: usize>(
    rows: Option<Tensor<B, D>>,
    picked: &Tensor<B, 1, Int>,
) -> Option<Tensor<B, D>> {
    rows.map(|t| t.select(0, picked.clone()))
}

/// A batch's buffer with row `from` copied over row `to` for each move. A buffer nothing else holds
/// is written in place on the CPU, so the cost is the moved rows, not the batch (the rows after
/// the kept ones become spare rows for the next to join).
fn move_rows<B: Backend, const D: usize>(
    t: Option<Tensor<B, D>>,
    moves: &[(usize, usize)],
) -> Option<Tensor<B, D>> {
    t.map(|mut t| {
        let dims = t.dims();
        for &(to, from) in moves {
            // Copied out first: a view of the buffer would make it shared, and the write a copy.
            let row = compact(t.clone().narrow(0, from, 1));
            let mut slots = dims.map(|n| 0..n);
            slots[0] = to..to + 1;
            t = t.slice_assign(slots, row);
        }
        t
    })
}

/// The order [`Cache::keep_rows`] moves the fewest keys for: of `n` rows, those `alive` stay where
/// they are, and the last alive ones take the places of the rows leaving before them. Row `i` of
/// the result is the old row `order[i]`.
pub fn fill_holes(n: usize, alive: impl Fn(usize) -> bool) -> Vec<usize> {
    let kept = (0..n).filter(|&r| alive(r)).count();
    let mut movers = (kept..n).filter(|&r| alive(r));
    (0..kept)
        .map(|r| {
            if alive(r) {
                r
            } else {
                movers.next().expect("as many movers as holes")
            }
        })
        .collect()
}

/// `new` rows below a batch's `rows` of one state (none in a layer without it).
fn below<B: Backend, const D: usize>(
    rows: Option<Tensor<B, D>>,
    new: Option<Tensor<B, D>>,
) -> Option<Tensor<B, D>> {
    rows.map(|t| cat(std::iter::once(t).chain(new).collect(), 0))
}

/// Concatenates one optional per-row tensor along the batch; rows without one (fresh sequences)
/// get zeros shaped like the others'. `None` when no row has one.
fn cat_rows<B: Backend, const D: usize>(
    rows: &[&LayerCache<B>],
    get: impl Fn(&LayerCache<B>) -> Option<Tensor<B, D>>,
) -> Option<Tensor<B, D>> {
    let parts: Vec<Option<Tensor<B, D>>> = rows.iter().map(|r| get(r)).collect();
    let like = parts.iter().flatten().next()?;
    let (shape, device) = (like.shape(), like.device());
    let parts = parts
        .into_iter()
        .map(|p| p.unwrap_or_else(|| Tensor::zeros(shape.clone(), &device)))
        .collect();
    Some(cat(parts, 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::cpu::backend::into_array;
    use burn::backend::NdArray;

    type B = NdArray<f32>;

    fn filled(t: usize, x: f32) -> Tensor<B, 4> {
        Tensor::full([2, 2, t, 4], x, &Default::default())
    }

    fn buffer_address(c: &KvCache<B>) -> usize {
        into_array(c.k.clone().expect("a buffer")).as_ptr() as usize
    }

    #[test]
    fn the_last_running_rows_fill_the_places_of_those_leaving() {
        let order = |n: usize, dead: &[usize]| fill_holes(n, |r| !dead.contains(&r));
        assert_eq!(order(4, &[]), [0, 1, 2, 3]);
        assert_eq!(order(4, &[3]), [0, 1, 2]); // the last leaves: nothing moves
        assert_eq!(order(5, &[0, 2]), [3, 1, 4]);
        assert_eq!(order(5, &[1, 4]), [0, 3, 2]); // a row leaving at the end moves nothing
        assert!(order(3, &[0, 1, 2]).is_empty());
    }

    #[test]
    fn decode_steps_fill_spare_slots_in_place_and_clones_keep_their_own_keys() {
        let mut c = KvCache::<B>::default();
        c.append(filled(3, 1.0), filled(3, -1.0));
        assert_eq!(c.k.as_ref().unwrap().dims()[2], 3 + SPARE_SLOTS);
        let address = buffer_address(&c);
        let (k, v) = c.append(filled(1, 2.0), filled(1, -2.0));
        assert_eq!(buffer_address(&c), address, "written in place");
        assert_eq!((k.dims(), v.dims()), ([2, 2, 4, 4], [2, 2, 4, 4]));
        let last = |t: Tensor<B, 4>| t.narrow(2, 3, 1).into_data().to_vec::<f32>().unwrap();
        assert!(last(k).iter().all(|&x| x == 2.0) && last(v).iter().all(|&x| x == -2.0));

        // A clone (a prefix-cache entry) shares the buffer: the next append copies it first.
        let snapshot = c.clone();
        c.append(filled(1, 3.0), filled(1, -3.0));
        assert_ne!(buffer_address(&c), address, "copied on write");
        assert_eq!(snapshot.keys().unwrap().dims()[2], 4);
        let slot = snapshot.k.unwrap().narrow(2, 4, 1);
        assert!(slot
            .into_data()
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .all(|&x| x == 0.0));

        // Past the spare slots the buffer grows again, keeping every key.
        let (k, _) = c.append(filled(SPARE_SLOTS, 4.0), filled(SPARE_SLOTS, -4.0));
        assert_eq!(k.dims()[2], 5 + SPARE_SLOTS);
        let keys = k.into_data().to_vec::<f32>().unwrap();
        let per_pair = (5 + SPARE_SLOTS) * 4;
        assert_eq!(keys[..4], [1.0; 4]);
        assert_eq!(keys[4 * 4..per_pair][..4], [3.0; 4]);
        assert_eq!(keys[per_pair - 4..per_pair], [4.0; 4]);
    }
}
