//! Rotary position embedding (NeoX `rotate_half` layout), optionally partial: only the first
//! `rotary_dim` dims of each head rotate, the rest pass through (Qwen3.5). For text-only input
//! Qwen3.5's interleaved mRoPE has equal positions on all three axes, which is exactly 1-D RoPE.

use crate::model::cpu::backend::{is_cpu, standard_values, tensor};
use crate::model::host::floats;
use burn::prelude::*;

/// cos/sin tables for a run of positions, shaped `[1 or B, T, 1, rotary_dim]` to broadcast over
/// `[B, T, heads, head_dim]`.
#[derive(Clone, Debug)]
pub struct RopeTables<B: Backend> {
    pub cos: Tensor<B, 4>,
    pub sin: Tensor<B, 4>,
    pub rotary_dim: usize,
    /// Position of each row's first token (one entry when all rows start together). Attention
    /// reads it as the number of valid cached keys of that row.
    pub starts: Vec<usize>,
    /// Each row's padding key slots in a persistent batch (`Cache::gaps`); `None` elsewhere.
    pub gaps: Option<Vec<(usize, usize)>>,
}

impl<B: Backend> RopeTables<B> {
    /// Positions `start..start+len`. Computed in f32 like HF (`inv_freq = 1 / theta^(2i/r)`).
    pub fn new(
        theta: f64,
        rotary_dim: usize,
        start: usize,
        len: usize,
        device: &B::Device,
    ) -> Self {
        Self::for_rows(theta, rotary_dim, &[start], len, device)
    }

    /// Row `b` of a batch at positions `starts[b]..starts[b]+len` (sequences of different
    /// lengths decoded together), shaped `[B, T, 1, rotary_dim]`.
    pub fn for_rows(
        theta: f64,
        rotary_dim: usize,
        starts: &[usize],
        len: usize,
        device: &B::Device,
    ) -> Self {
        let half = rotary_dim / 2;
        let inv_freq: Vec<f32> = (0..half)
            .map(|i| 1.0f32 / (theta as f32).powf((2 * i) as f32 / rotary_dim as f32))
            .collect();
        let n = starts.len() * len * rotary_dim;
        let mut cos = Vec::with_capacity(n);
        let mut sin = Vec::with_capacity(n);
        for p in starts.iter().flat_map(|&s| s..s + len) {
            // `cat(freqs, freqs)`: the two halves share frequencies.
            for _ in 0..2 {
                for f in &inv_freq {
                    let a = p as f32 * f;
                    cos.push(a.cos());
                    sin.push(a.sin());
                }
            }
        }
        let shape = [starts.len(), len, 1, rotary_dim];
        Self {
            cos: floats(cos, shape, device),
            sin: floats(sin, shape, device),
            rotary_dim,
            starts: starts.to_vec(),
            gaps: None,
        }
    }

    /// These tables for a batch whose rows have padding gaps in their keys.
    pub fn with_gaps(mut self, gaps: Option<Vec<(usize, usize)>>) -> Self {
        self.gaps = gaps;
        self
    }

    /// Applies the rotation to `x: [B, T, heads, head_dim]`.
    pub fn apply(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let shape @ [_, _, heads, head_dim] = x.dims();
        let r = self.rotary_dim;
        if r == 0 {
            return x;
        }
        if is_cpu::<B>() {
            let mut values = standard_values(x);
            self.apply_rows(&mut values, heads, head_dim);
            return tensor(values, shape);
        }
        let x_rot = if r == head_dim {
            x.clone()
        } else {
            x.clone().narrow(3, 0, r)
        };
        let x1 = x_rot.clone().narrow(3, 0, r / 2);
        let x2 = x_rot.clone().narrow(3, r / 2, r / 2);
        let rotated = Tensor::cat(vec![x2.neg(), x1], 3);
        let out = x_rot * self.cos.clone() + rotated * self.sin.clone();
        if r == head_dim {
            out
        } else {
            Tensor::cat(vec![out, x.narrow(3, r, head_dim - r)], 3)
        }
    }

    /// [`Self::apply`] on the CPU backend, in place on `x`: `[B, T, heads, head_dim]` values, one
    /// pass instead of burn's eight ops.
    pub fn apply_rows(&self, x: &mut [f32], heads: usize, head_dim: usize) {
        let (r, half) = (self.rotary_dim, self.rotary_dim / 2);
        if r == 0 {
            return;
        }
        let (cos, sin) = (
            standard_values(self.cos.clone()),
            standard_values(self.sin.clone()),
        );
        // The tables hold T positions shared by every row, or B·T; position p of the flattened
        // `[B·T]` reads entry p of the latter and p mod T of the former.
        let entries = cos.len() / r;
        for (p, position) in x.chunks_exact_mut(heads * head_dim).enumerate() {
            let at = (p % entries) * r;
            let (cos, sin) = (&cos[at..at + r], &sin[at..at + r]);
            for head in position.chunks_exact_mut(head_dim) {
                // NeoX `rotate_half`: `x·cos + [-x2, x1]·sin` over the first r dims.
                let (x1, x2) = head[..r].split_at_mut(half);
                for i in 0..half {
                    let (a, b) = (x1[i], x2[i]);
                    x1[i] = a * cos[i] - b * sin[i];
                    x2[i] = b * cos[half + i] + a * sin[half + i];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::{Autodiff, NdArray};
    use burn::tensor::Distribution;

    type Cpu = NdArray<f32>;
    type Reference = Autodiff<NdArray<f32>>; // burn's ops

    /// The CPU pass equals burn's ops: partial rotation (8 of 12 dims), tables per row (starts 0
    /// and 5) and one table broadcast over both rows.
    #[test]
    fn cpu_rotation_equals_burns_ops() {
        let device = Default::default();
        let x = Tensor::<Cpu, 4>::random([2, 3, 4, 12], Distribution::Normal(0.0, 1.0), &device);
        let x_ref = Tensor::<Reference, 4>::from_data(x.clone().into_data(), &device);
        for starts in [&[0, 5][..], &[7]] {
            let got = RopeTables::<Cpu>::for_rows(1e4, 8, starts, 3, &device).apply(x.clone());
            let expected =
                RopeTables::<Reference>::for_rows(1e4, 8, starts, 3, &device).apply(x_ref.clone());
            let got: Vec<f32> = got.into_data().to_vec().unwrap();
            let expected: Vec<f32> = expected.into_data().to_vec().unwrap();
            let diff = got
                .iter()
                .zip(&expected)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max);
            assert!(diff < 1e-6, "starts {starts:?}: {diff}");
            // The pass-through dims are untouched.
            assert_eq!(got[8..12], expected[8..12]);
        }
    }
}
