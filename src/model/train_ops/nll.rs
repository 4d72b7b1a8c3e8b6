//! The SFT loss `-Σ_k w_k · log softmax(logits_k)[target_k]` as one autodiff operation on the CPU
//! training backend (`Autodiff<NdArray<f32>>`): one pass over each row of logits forward (its
//! log-sum-exp and the target's logit) and one backward, `dlogits_k = w_k · (softmax_k −
//! onehot(target_k))`. Through burn, log_softmax and gather made six passes over the `[K, V]`
//! logits each way, each allocating `K × V` values (a `small` row has 32,000).

use crate::model::cpu::spin_team;
use crate::model::train_ops::autodiff::{self as ad, Cpu};
use burn::backend::autodiff::checkpoint::{base::Checkpointer, strategy::NoCheckpointing};
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::prelude::*;
use std::sync::Arc;

/// The loss (`[1]`) of `logits: [K, V]` for `targets[k]` weighted by `weights[k]`, for `B` =
/// `Autodiff<NdArray<f32>>` ([`ad::is_cpu_autodiff`]).
pub fn weighted_nll<B: Backend>(
    logits: Tensor<B, 2>,
    targets: Vec<usize>,
    weights: Vec<f32>,
) -> Tensor<B, 1> {
    let [k, v] = logits.dims();
    let logits = ad::primitive(logits);
    let mut saved = Saved {
        logits: ad::values(&logits.primitive),
        v,
        targets,
        weights,
        lse: vec![0.0; k],
    };
    let mut rows: Vec<_> = saved.lse.iter_mut().collect();
    let logit_rows = &saved.logits;
    spin_team::for_each(&mut rows, &|r, lse| {
        **lse = log_sum_exp(&logit_rows[r * v..(r + 1) * v]);
    });
    let loss: f64 = (0..k)
        .map(|r| {
            let target = saved.logits[r * v + saved.targets[r]];
            f64::from(saved.weights[r]) * f64::from(saved.lse[r] - target)
        })
        .sum();
    let out = ad::inner(vec![loss as f32], &[1]);
    let out = match NllBackward
        .prepare::<NoCheckpointing>([logits.node.clone()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => prep.finish(Arc::new(saved), out),
        OpsKind::UnTracked(prep) => prep.finish(out),
    };
    ad::tensor(out)
}

fn log_sum_exp(row: &[f32]) -> f32 {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    max + row.iter().map(|&x| (x - max).exp()).sum::<f32>().ln()
}

/// The logits (row-major `[K, V]`), targets, weights and each row's log-sum-exp.
#[derive(Debug)]
struct Saved {
    logits: Vec<f32>,
    v: usize,
    targets: Vec<usize>,
    weights: Vec<f32>,
    lse: Vec<f32>,
}

#[derive(Debug)]
struct NllBackward;

impl Backward<Cpu, 1> for NllBackward {
    type State = Arc<Saved>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let x = ops.state;
        let upstream = ad::values(&grads.consume::<Cpu>(&ops.node))[0];
        let v = x.v;
        let mut d = x.logits.clone();
        let mut rows: Vec<&mut [f32]> = d.chunks_mut(v.max(1)).collect();
        spin_team::for_each(&mut rows, &|r, row| {
            let scale = upstream * x.weights[r];
            for value in row.iter_mut() {
                *value = scale * (*value - x.lse[r]).exp();
            }
            row[x.targets[r]] -= scale;
        });
        let k = x.lse.len();
        ad::register(grads, ops.parents[0].as_ref().map(|n| n.id), d, &[k, v]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::Autodiff;
    use burn::tensor::activation::log_softmax;

    type A = Autodiff<Cpu>;

    /// Loss and logit gradients equal burn's log_softmax + gather (through autodiff), with weights
    /// that include zero and a fraction.
    #[test]
    fn fused_loss_has_burns_value_and_gradients() {
        let device = Default::default();
        let (k, v) = (7, 300);
        // Fixed, varied logits (spread like N(0, 3)) so every run checks the same numbers.
        let values: Vec<f32> = (0..k * v)
            .map(|i| 3.0 * (i as f32 * 0.7361).sin())
            .collect();
        let logits = Tensor::<Cpu, 2>::from_data(TensorData::new(values, [k, v]), &device);
        let targets: Vec<usize> = (0..k).map(|r| (r * 37 + 5) % v).collect();
        let weights = vec![1.0, 0.0, 0.5, 1.0, 2.0, 1.0, 1.0];
        let run = |native: bool| {
            let x = Tensor::<A, 2>::from_inner(logits.clone()).require_grad();
            let loss = if native {
                weighted_nll(x.clone(), targets.clone(), weights.clone())
            } else {
                let ids: Vec<i64> = targets.iter().map(|&t| t as i64).collect();
                let ids = Tensor::<A, 2, Int>::from_data(TensorData::new(ids, [k, 1]), &device);
                let w = Tensor::<A, 1>::from_data(TensorData::new(weights.clone(), [k]), &device);
                (log_softmax(x.clone(), 1).gather(1, ids).reshape([k]) * w)
                    .sum()
                    .neg()
            };
            // A scale on the loss checks that the upstream gradient is applied.
            let grads = loss.clone().mul_scalar(1.5).backward();
            let grad = x.grad(&grads).expect("a gradient");
            (
                loss.into_scalar(),
                grad.into_data().to_vec::<f32>().unwrap(),
            )
        };
        let ((loss, grad), (expected_loss, expected_grad)) = (run(true), run(false));
        assert!((loss - expected_loss).abs() < 1e-4 * expected_loss.abs());
        let worst = grad
            .iter()
            .zip(&expected_grad)
            .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
            .fold(0.0f32, f32::max);
        // A few f32 roundings apart at most; a wrong term is off by ~0.1 or more.
        assert!(worst < 1e-5, "{worst}");
    }
}
