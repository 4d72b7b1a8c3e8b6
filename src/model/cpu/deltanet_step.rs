//! One decode token of a Gated DeltaNet layer on the inference CPU backend, from its input
//! projections to the input of `out_proj`: the causal conv over the cached history, SiLU, the
//! L2-normalised q and k, the gates β and g, the delta rule and the gated norm, on slices. In burn
//! ops the same token is some forty small tensor ops, each allocating, which cost a `small` decode
//! step more than the rule they feed (60–80 µs a layer). The math is `GatedDeltaNet::forward`'s, in
//! the same order; the rule itself is [`Head::run`], as in prefill.

use super::backend::{logistic, rms_norm_row, silu_of};
use super::delta_rule::Head;
use super::spin_team;

/// A layer's parameters, as slices.
pub(in crate::model) struct Layer<'a> {
    /// The depthwise conv, `[conv_dim, K]`.
    pub conv: &'a [f32],
    /// `[Hv]` each.
    pub dt_bias: &'a [f32],
    pub a_log: &'a [f32],
    /// The gated norm's weight, `[dv]`.
    pub norm: &'a [f32],
    pub eps: f32,
    pub num_k_heads: usize,
    pub num_v_heads: usize,
    pub head_k_dim: usize,
    pub head_v_dim: usize,
}

/// One token's input projections for each of B rows: `qkv: [B, conv_dim]`, `z: [B, Hv·dv]`,
/// `b` and `a`: `[B, Hv]`.
pub(in crate::model) struct Projections<'a> {
    pub qkv: &'a [f32],
    pub z: &'a [f32],
    pub b: &'a [f32],
    pub a: &'a [f32],
}

impl Layer<'_> {
    /// Runs one token per row, updating `conv_state: [B, K-1, conv_dim]` (the last K-1 conv inputs,
    /// oldest first) and `state: [B, Hv, dk, dv]`; returns the gated norm's outputs `[B, Hv·dv]`.
    pub fn step(&self, x: &Projections, conv_state: &mut [f32], state: &mut [f32]) -> Vec<f32> {
        let (hk, hv, dk, dv) = (
            self.num_k_heads,
            self.num_v_heads,
            self.head_k_dim,
            self.head_v_dim,
        );
        let key_dim = hk * dk;
        let conv_dim = 2 * key_dim + hv * dv;
        let rows = x.qkv.len() / conv_dim;
        let history = (self.conv.len() / conv_dim - 1) * conv_dim;
        let mut y = vec![0f32; rows * conv_dim];
        for (r, y) in y.chunks_exact_mut(conv_dim).enumerate() {
            let input = &x.qkv[r * conv_dim..(r + 1) * conv_dim];
            self.convolve(input, &mut conv_state[r * history..(r + 1) * history], y);
            let scale = (dk as f32).powf(-0.5);
            for (i, head) in y[..2 * key_dim].chunks_exact_mut(dk).enumerate() {
                let inv = (head.iter().map(|v| v * v).sum::<f32>() + 1e-6)
                    .sqrt()
                    .recip();
                // q heads (the first hk) are scaled by dk^-1/2 after the norm.
                let inv = if i < hk { inv * scale } else { inv };
                head.iter_mut().for_each(|v| *v *= inv);
            }
        }
        let mut out = vec![0f32; rows * hv * dv];
        let mut pairs: Vec<_> = out
            .chunks_exact_mut(dv)
            .zip(state.chunks_exact_mut(dk * dv))
            .collect();
        let group = hv / hk;
        spin_team::for_each(&mut pairs, &|p, (o, s)| {
            let (r, h) = (p / hv, p % hv);
            let y = &y[r * conv_dim..(r + 1) * conv_dim];
            // v-head h reads k-head h / group (HF's repeat_interleave).
            let kh = h / group;
            let beta = logistic(x.b[p]);
            let g = -self.a_log[h].exp() * softplus(x.a[p] + self.dt_bias[h]);
            let head = Head {
                dk,
                q: &y[kh * dk..][..dk],
                k: &y[key_dim + kh * dk..][..dk],
                v: &y[2 * key_dim + h * dv..][..dv],
                g: &[g],
                beta: &[beta],
            };
            head.run(s, o);
            rms_norm_row(o, self.norm, self.eps, Some(&x.z[p * dv..(p + 1) * dv]));
        });
        out
    }

    /// `y = silu(Σ_j w[:, j] · xcat[j])` over the K-1 cached inputs and this one (`xcat`), then
    /// the history shifted by one to end with `input`.
    fn convolve(&self, input: &[f32], history: &mut [f32], y: &mut [f32]) {
        let conv_dim = input.len();
        let kernel = self.conv.len() / conv_dim;
        for (c, (y, w)) in y.iter_mut().zip(self.conv.chunks_exact(kernel)).enumerate() {
            let past = (0..kernel - 1).map(|j| w[j] * history[j * conv_dim + c]);
            let sum = past.fold(0.0, |sum, v| sum + v) + w[kernel - 1] * input[c];
            *y = silu_of(sum);
        }
        if kernel > 1 {
            history.copy_within(conv_dim.., 0);
            history[(kernel - 2) * conv_dim..].copy_from_slice(input);
        }
    }
}

/// `ln(1 + e^x)`, safe for large |x|.
fn softplus(x: f32) -> f32 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

#[cfg(test)]
mod tests {
    use crate::model::generation::cache::DeltaNetState;
    use crate::model::io::weights::RandomInit;
    use crate::model::layers::gated_deltanet::{DeltaNetDims, GatedDeltaNet};
    use burn::backend::{Autodiff, NdArray};
    use burn::prelude::*;
    use burn::tensor::Distribution;

    type Cpu = NdArray<f32>;
    type Reference = Autodiff<NdArray<f32>>; // burn's ops throughout

    fn layer<B: Backend>() -> GatedDeltaNet<B> {
        let dims = DeltaNetDims {
            hidden: 32,
            num_k_heads: 2,
            num_v_heads: 4,
            head_k_dim: 16,
            head_v_dim: 8,
            conv_kernel: 4,
            eps: 1e-6,
            init_std: 0.2,
        };
        GatedDeltaNet::load(&mut RandomInit::new(7), "l", &dims, &Default::default()).unwrap()
    }

    fn values<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
        t.into_data().convert::<f32>().to_vec().unwrap()
    }

    fn on_reference(t: Tensor<Cpu, 3>) -> Tensor<Reference, 3> {
        Tensor::from_data(t.into_data(), &Default::default())
    }

    /// Both implementations of one layer, eight random tokens for each of `rows` rows, and each
    /// side's state after the first five (prefilled through burn's ops).
    struct Prefilled {
        cpu: GatedDeltaNet<Cpu>,
        reference: GatedDeltaNet<Reference>,
        x: Tensor<Cpu, 3>,
        s_cpu: DeltaNetState<Cpu>,
        s_ref: DeltaNetState<Reference>,
    }

    fn prefilled(rows: usize) -> Prefilled {
        let (cpu, reference) = (layer::<Cpu>(), layer::<Reference>());
        let x = Tensor::<Cpu, 3>::random(
            [rows, 8, 32],
            Distribution::Normal(0.0, 1.0),
            &Default::default(),
        );
        let (mut s_cpu, mut s_ref) = (DeltaNetState::default(), DeltaNetState::default());
        cpu.forward(x.clone().narrow(1, 0, 5), Some(&mut s_cpu), None);
        reference.forward(
            on_reference(x.clone().narrow(1, 0, 5)),
            Some(&mut s_ref),
            None,
        );
        Prefilled {
            cpu,
            reference,
            x,
            s_cpu,
            s_ref,
        }
    }

    fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max)
    }

    /// Two rows (two v heads per k head, dk ≠ dv) prefill five tokens through burn's ops on both
    /// sides, then decode three tokens: the CPU step's outputs, conv history and recurrent state
    /// equal burn's.
    #[test]
    fn decode_step_equals_burns_ops() {
        let Prefilled {
            cpu,
            reference,
            x,
            mut s_cpu,
            mut s_ref,
        } = prefilled(2);
        for p in 5..8 {
            let token = x.clone().narrow(1, p, 1);
            let got = values(cpu.forward(token.clone(), Some(&mut s_cpu), None));
            let expected = values(reference.forward(on_reference(token), Some(&mut s_ref), None));
            assert!(max_abs_diff(&got, &expected) < 1e-5, "output at {p}");
            assert!(
                max_abs_diff(
                    &values(s_cpu.conv.clone().unwrap()),
                    &values(s_ref.conv.clone().unwrap())
                ) < 1e-6,
                "conv at {p}"
            );
            assert!(
                max_abs_diff(
                    &values(s_cpu.recurrent.clone().unwrap()),
                    &values(s_ref.recurrent.clone().unwrap())
                ) < 1e-5,
                "state at {p}"
            );
        }
    }

    /// Three tokens at once through an armed state (the drafts a speculative round checks): the
    /// outputs equal burn's forward of the three, and the states kept after the first two equal
    /// those that one-token steps reach.
    #[test]
    fn armed_steps_keep_the_state_after_each_token() {
        let Prefilled {
            cpu,
            reference,
            x,
            s_cpu: mut armed,
            mut s_ref,
        } = prefilled(1);
        let mut stepped = armed.clone();
        armed.token_states = Some(Vec::new());
        let got = values(cpu.forward(x.clone().narrow(1, 5, 3), Some(&mut armed), None));
        let expected = values(reference.forward(
            on_reference(x.clone().narrow(1, 5, 3)),
            Some(&mut s_ref),
            None,
        ));
        assert!(max_abs_diff(&got, &expected) < 1e-5, "outputs");
        let kept = armed.token_states.take().unwrap();
        assert_eq!(
            kept.len(),
            2,
            "the state after the last token is the state itself"
        );
        for (p, (conv, recurrent)) in (5..7).zip(kept) {
            cpu.forward(x.clone().narrow(1, p, 1), Some(&mut stepped), None);
            assert_eq!(
                values(conv),
                values(stepped.conv.clone().unwrap()),
                "conv after {p}"
            );
            assert_eq!(
                values(recurrent),
                values(stepped.recurrent.clone().unwrap()),
                "state after {p}"
            );
        }
    }
}
