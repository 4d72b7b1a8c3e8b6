//! AdamW (decoupled weight decay, as `torch.optim.AdamW`), global-norm gradient clipping
//! (`torch.nn.utils.clip_grad_norm_`), gradient accumulation, and the warmup + cosine schedule of
//! transformers' `get_cosine_schedule_with_warmup`.
//!
//! Written here rather than taken from burn-optim so the optimiser state is plain tensors in a fixed
//! parameter order: it saves to a safetensors file next to the HF checkpoint and restores exactly on
//! `--resume`, whatever the parameter ids of the freshly loaded model are.
//!
//! Parameters are addressed by their index in the module's visiting order (stable for a config).
//! Weight decay applies to matrices only (rank ≥ 2): norms, biases and the DeltaNet `A_log`/`dt_bias`
//! vectors are not decayed, the usual transformers Trainer convention.

use crate::model::cpu::backend::{into_array, is_cpu, standard_values, tensor};
use anyhow::{bail, Result};
use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use rayon::prelude::*;

/// Hyper-parameters (torch names).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamWConfig {
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
}

impl Default for AdamWConfig {
    fn default() -> Self {
        // transformers TrainingArguments defaults (adam_beta1/2, adam_epsilon), weight decay 0.01.
        AdamWConfig {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.01,
        }
    }
}

/// The learning-rate schedule after the warm-up, by transformers' `lr_scheduler_type` names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LrSchedulerType {
    /// A half cosine from the peak to 0 at the last step.
    #[default]
    #[value(name = "cosine")]
    Cosine,
    /// The peak until the end: for a stage whose skill appears only after many steps at full rate.
    #[value(name = "constant_with_warmup")]
    ConstantWithWarmup,
}

impl LrSchedulerType {
    /// Learning rate at optimizer step `step` (0-based) of `total`, after `warmup` linear steps from 0.
    pub fn at(self, peak: f64, step: usize, warmup: usize, total: usize) -> f64 {
        match self {
            LrSchedulerType::Cosine => cosine_with_warmup(peak, step, warmup, total),
            LrSchedulerType::ConstantWithWarmup if step < warmup => {
                peak * step as f64 / warmup.max(1) as f64
            }
            LrSchedulerType::ConstantWithWarmup => peak,
        }
    }
}

/// Learning rate at optimizer step `step` (0-based) of `total`: linear warmup from 0, then a half cosine
/// to 0 — transformers' `get_cosine_schedule_with_warmup` (num_cycles 0.5).
pub fn cosine_with_warmup(peak: f64, step: usize, warmup: usize, total: usize) -> f64 {
    if step < warmup {
        return peak * step as f64 / warmup.max(1) as f64;
    }
    let progress = (step - warmup) as f64 / total.saturating_sub(warmup).max(1) as f64;
    peak * (0.5 * (1.0 + (std::f64::consts::PI * progress).cos())).max(0.0)
}

/// A gradient whose global norm is NaN or infinite: the step that produced it must not be taken.
/// The trainers name the step and the last good checkpoint with it ([`super::checkpoint::halted`]).
#[derive(Debug, Clone, Copy)]
pub struct NonFiniteGradient {
    pub norm: f64,
}

impl std::fmt::Display for NonFiniteGradient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the gradient norm is {} (a NaN or infinite loss); the weights were not updated",
            self.norm
        )
    }
}

impl std::error::Error for NonFiniteGradient {}

/// A copy of `module` whose parameters are new autodiff leaves (same ids and values). Build each
/// backward pass on its own copy, whenever another thread of the process may run a backward at the
/// same time: passes through different copies build disjoint graphs, which burn's autodiff runs on
/// parallel threads, and the gradients still map to the parameters by id. A leaf reused after a
/// backward starts a fresh graph that burn 0.20 lets another thread's backward free while its next
/// op is being registered, silently losing part of the gradient (tracel-ai/burn#5573, fixed after
/// 0.20).
pub fn fresh_leaves<B: AutodiffBackend, M: Module<B>>(module: &M) -> M {
    struct FreshLeaves;
    impl<B: AutodiffBackend> ModuleMapper<B> for FreshLeaves {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
            let (id, tensor, mapper) = param.consume();
            let leaf = Tensor::from_inner(tensor.inner()).require_grad();
            Param::from_mapped_value(id, leaf, mapper)
        }
    }
    module.clone().map(&mut FreshLeaves)
}

/// Gradients summed over micro-batches, flattened, one slot per parameter (`None`: no gradient yet).
pub struct GradBuffer<B: Backend> {
    pub grads: Vec<Option<Tensor<B, 1>>>,
}

impl<B: Backend> Default for GradBuffer<B> {
    fn default() -> Self {
        GradBuffer { grads: Vec::new() }
    }
}

impl<B: Backend> GradBuffer<B> {
    /// Adds the gradients of `module`'s parameters from one backward pass.
    pub fn accumulate<AB, M>(&mut self, module: &M, grads: &AB::Gradients)
    where
        AB: AutodiffBackend<InnerBackend = B>,
        M: Module<AB>,
    {
        let mut v = Accumulate::<AB> {
            grads,
            buffer: &mut self.grads,
            index: 0,
        };
        module.visit(&mut v);
    }

    /// Adds another buffer's gradients (from the same module) to these.
    pub fn merge(&mut self, other: GradBuffer<B>) {
        if self.grads.len() < other.grads.len() {
            self.grads.resize(other.grads.len(), None);
        }
        for (mine, theirs) in self.grads.iter_mut().zip(other.grads) {
            *mine = match (mine.take(), theirs) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
        }
    }

    /// The global L2 norm over all gradients.
    pub fn norm(&self) -> f64 {
        self.grads
            .iter()
            .flatten()
            .map(sum_of_squares)
            .sum::<f64>()
            .sqrt()
    }

    /// The norm an optimizer step may use: clipped to `max_norm` when it is > 0 (see [`Self::clip`]),
    /// and an error when it is NaN or infinite — a non-finite loss upstream, which would turn every
    /// weight it reaches into NaN. Returns the norm before clipping.
    pub fn finite_norm(&mut self, max_norm: f64) -> Result<f64, NonFiniteGradient> {
        let norm = self.norm();
        if !norm.is_finite() {
            return Err(NonFiniteGradient { norm });
        }
        if max_norm > 0.0 {
            self.scale_to(norm, max_norm);
        }
        Ok(norm)
    }

    /// Scales gradients so the global norm is at most `max_norm` (torch: coefficient
    /// `max_norm / (norm + 1e-6)`, clamped to 1). Returns the norm before clipping.
    pub fn clip(&mut self, max_norm: f64) -> f64 {
        let norm = self.norm();
        self.scale_to(norm, max_norm);
        norm
    }

    /// Scales gradients of global norm `norm` down to `max_norm` (no change when already below).
    fn scale_to(&mut self, norm: f64, max_norm: f64) {
        let coef = max_norm / (norm + 1e-6);
        if coef < 1.0 {
            for g in self.grads.iter_mut().flatten() {
                *g = g.clone().mul_scalar(coef);
            }
        }
    }
}

/// Σ g² over one gradient: one pass over its values on the CPU backend (the tensor ops allocate a
/// squared copy), tensor ops elsewhere.
fn sum_of_squares<B: Backend>(g: &Tensor<B, 1>) -> f64 {
    if !is_cpu::<B>() {
        return g.clone().powi_scalar(2).sum().into_scalar().elem::<f64>();
    }
    let square = |v: &f32| f64::from(*v) * f64::from(*v);
    let array = into_array(g.clone());
    match array.as_slice() {
        Some(values) => values
            .par_chunks(CHUNK)
            .map(|chunk| chunk.iter().map(square).sum::<f64>())
            .sum(),
        None => array.iter().map(square).sum(),
    }
}

struct Accumulate<'a, AB: AutodiffBackend> {
    grads: &'a AB::Gradients,
    buffer: &'a mut Vec<Option<Tensor<AB::InnerBackend, 1>>>,
    index: usize,
}

impl<AB: AutodiffBackend> ModuleVisitor<AB> for Accumulate<'_, AB> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<AB, D>>) {
        let i = self.index;
        self.index += 1;
        if self.buffer.len() <= i {
            self.buffer.resize(i + 1, None);
        }
        if let Some(g) = param.val().grad(self.grads) {
            let n = g.shape().num_elements();
            let g = g.reshape([n]);
            self.buffer[i] = Some(match self.buffer[i].take() {
                Some(sum) => sum + g,
                None => g,
            });
        }
    }
}

/// AdamW state: step count and first/second moments per parameter (flattened).
pub struct AdamW<B: Backend> {
    pub config: AdamWConfig,
    /// Optimizer steps taken (the bias-correction exponent).
    pub step: u64,
    pub exp_avg: Vec<Option<Tensor<B, 1>>>,
    pub exp_avg_sq: Vec<Option<Tensor<B, 1>>>,
}

impl<B: Backend> AdamW<B> {
    pub fn new(config: AdamWConfig) -> AdamW<B> {
        AdamW {
            config,
            step: 0,
            exp_avg: Vec::new(),
            exp_avg_sq: Vec::new(),
        }
    }

    /// One update of `module` with the (already clipped) gradients in `buffer`, which is emptied.
    /// Parameters without a gradient are left alone, as torch does.
    pub fn step<AB, M>(&mut self, module: M, lr: f64, buffer: &mut GradBuffer<B>) -> M
    where
        AB: AutodiffBackend<InnerBackend = B>,
        M: Module<AB>,
    {
        self.step += 1;
        let n = buffer.grads.len();
        self.exp_avg.resize(n.max(self.exp_avg.len()), None);
        self.exp_avg_sq.resize(n.max(self.exp_avg_sq.len()), None);
        let mut mapper = Update::<AB> {
            opt: self,
            lr,
            grads: std::mem::take(&mut buffer.grads),
            index: 0,
        };
        module.map(&mut mapper)
    }

    /// Checks restored moments against the parameter shapes (a checkpoint of another model).
    pub fn check_shapes<AB, M>(&self, module: &M) -> Result<()>
    where
        AB: AutodiffBackend<InnerBackend = B>,
        M: Module<AB>,
    {
        let sizes = param_sizes::<AB, M>(module);
        for (i, m) in self.exp_avg.iter().enumerate() {
            match (m, sizes.get(i)) {
                (None, _) => {}
                (Some(m), Some(&n)) if m.shape().num_elements() == n => {}
                (Some(m), n) => bail!(
                    "optimizer state for parameter {i} has {} values, the model has {n:?}: the checkpoint belongs to another model",
                    m.shape().num_elements()
                ),
            }
        }
        Ok(())
    }
}

/// Element counts of the module's float parameters in visiting order.
pub fn param_sizes<AB: AutodiffBackend, M: Module<AB>>(module: &M) -> Vec<usize> {
    struct Sizes(Vec<usize>);
    impl<AB: AutodiffBackend> ModuleVisitor<AB> for Sizes {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<AB, D>>) {
            self.0.push(param.shape().num_elements());
        }
    }
    let mut s = Sizes(Vec::new());
    module.visit(&mut s);
    s.0
}

struct Update<'a, AB: AutodiffBackend> {
    opt: &'a mut AdamW<AB::InnerBackend>,
    lr: f64,
    grads: Vec<Option<Tensor<AB::InnerBackend, 1>>>,
    index: usize,
}

impl<AB: AutodiffBackend> ModuleMapper<AB> for Update<'_, AB> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<AB, D>>) -> Param<Tensor<AB, D>> {
        let i = self.index;
        self.index += 1;
        let Some(g) = self.grads.get_mut(i).and_then(Option::take) else {
            return param;
        };
        let coefs = Coefs::new(&self.opt.config, self.lr, self.opt.step, D >= 2);
        let (id, tensor, mapper) = param.consume();
        let moments = (self.opt.exp_avg[i].take(), self.opt.exp_avg_sq[i].take());
        let (p, m, v) = update(tensor.inner(), g, moments, &coefs);
        self.opt.exp_avg[i] = Some(m);
        self.opt.exp_avg_sq[i] = Some(v);
        Param::from_mapped_value(id, Tensor::from_inner(p).require_grad(), mapper)
    }
}

/// The scalars of one AdamW update of one parameter.
struct Coefs {
    beta1: f32,
    beta2: f32,
    eps: f32,
    /// `1 - lr·weight_decay` for decayed parameters, else 1.
    decay: f32,
    /// `lr / (1 - beta1^t)`.
    step_size: f32,
    /// `sqrt(1 - beta2^t)`.
    bc2_sqrt: f32,
}

impl Coefs {
    fn new(c: &AdamWConfig, lr: f64, step: u64, decayed: bool) -> Coefs {
        let t = step as i32;
        Coefs {
            beta1: c.beta1 as f32,
            beta2: c.beta2 as f32,
            eps: c.eps as f32,
            decay: if decayed {
                (1.0 - lr * c.weight_decay) as f32
            } else {
                1.0
            },
            step_size: (lr / (1.0 - c.beta1.powi(t))) as f32,
            bc2_sqrt: (1.0 - c.beta2.powi(t)).sqrt() as f32,
        }
    }
}

/// First and second moments of one parameter, flattened (`None` before its first update).
type Moments<B> = (Option<Tensor<B, 1>>, Option<Tensor<B, 1>>);
/// The updated parameter and its moments.
type Updated<B, const D: usize> = (Tensor<B, D>, Tensor<B, 1>, Tensor<B, 1>);

/// Parameter, gradient (flattened) and moments (`None` before the first step) → the updated
/// parameter and moments. On the CPU backend one pass over the four arrays, in place; elsewhere
/// the same formula in tensor ops (a dozen passes, each allocating — over a quarter of a `small`
/// training step on CPU, hence the fused pass there).
fn update<B: Backend, const D: usize>(
    p: Tensor<B, D>,
    g: Tensor<B, 1>,
    (m, v): Moments<B>,
    k: &Coefs,
) -> Updated<B, D> {
    if is_cpu::<B>() {
        update_in_place(p, g, (m, v), k)
    } else {
        update_with_tensor_ops(p, g, (m, v), k)
    }
}

fn update_with_tensor_ops<B: Backend, const D: usize>(
    p: Tensor<B, D>,
    g: Tensor<B, 1>,
    (m, v): Moments<B>,
    k: &Coefs,
) -> Updated<B, D> {
    let dims = p.dims();
    let n = g.shape().num_elements();
    let m = match m {
        Some(m) => m.mul_scalar(k.beta1) + g.clone().mul_scalar(1.0 - k.beta1),
        None => g.clone().mul_scalar(1.0 - k.beta1),
    };
    let v = match v {
        Some(v) => v.mul_scalar(k.beta2) + g.powi_scalar(2).mul_scalar(1.0 - k.beta2),
        None => g.powi_scalar(2).mul_scalar(1.0 - k.beta2),
    };
    // torch: p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps)
    let denom = v.clone().sqrt().div_scalar(k.bc2_sqrt).add_scalar(k.eps);
    let mut p = p.reshape([n]);
    if k.decay != 1.0 {
        p = p.mul_scalar(k.decay);
    }
    let p = p - m.clone().div(denom).mul_scalar(k.step_size);
    (p.reshape(dims), m, v)
}

/// Elements per parallel chunk of the in-place update.
const CHUNK: usize = 1 << 16;

fn update_in_place<B: Backend, const D: usize>(
    p: Tensor<B, D>,
    g: Tensor<B, 1>,
    (m, v): Moments<B>,
    k: &Coefs,
) -> Updated<B, D> {
    let dims = p.dims();
    let mut p = standard_values(p);
    let g = standard_values(g);
    let n = g.len();
    let mut m = m.map_or_else(|| vec![0.0; n], standard_values);
    let mut v = v.map_or_else(|| vec![0.0; n], standard_values);
    p.par_chunks_mut(CHUNK)
        .zip(m.par_chunks_mut(CHUNK))
        .zip(v.par_chunks_mut(CHUNK))
        .zip(g.par_chunks(CHUNK))
        .for_each(|(((p, m), v), g)| {
            for (((p, m), v), &g) in p.iter_mut().zip(m).zip(v).zip(g) {
                *m = *m * k.beta1 + g * (1.0 - k.beta1);
                *v = *v * k.beta2 + g * g * (1.0 - k.beta2);
                let denom = v.sqrt() / k.bc2_sqrt + k.eps;
                *p = *p * k.decay - *m / denom * k.step_size;
            }
        });
    (tensor(p, dims), tensor(m, [n]), tensor(v, [n]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::NdArray;
    use burn::tensor::Distribution;

    type Cpu = NdArray<f32>;

    fn values<const D: usize>(t: Tensor<Cpu, D>) -> Vec<f32> {
        t.into_data().convert::<f32>().into_vec().unwrap()
    }

    #[test]
    fn sum_of_squares_matches_the_tensor_ops() {
        let g = Tensor::<Cpu, 1>::random(
            [300_000],
            Distribution::Normal(0.0, 2.0),
            &Default::default(),
        );
        let by_ops: f64 = g.clone().powi_scalar(2).sum().into_scalar().into();
        let fused = sum_of_squares(&g);
        assert!(
            (fused - by_ops).abs() <= 1e-5 * by_ops,
            "{fused} vs {by_ops}"
        );
        assert!(
            fused > 1.1e6 && fused < 1.3e6,
            "E[g²]·n = 1.2e6, got {fused}"
        );
    }

    /// The fused CPU pass and the tensor-op formula (what the GPU runs) agree over three steps,
    /// from empty moments, for a decayed matrix and an undecayed vector.
    #[test]
    fn in_place_update_matches_the_tensor_op_formula() {
        let dev = Default::default();
        let cfg = AdamWConfig {
            weight_decay: 0.1,
            ..AdamWConfig::default()
        };
        for decayed in [true, false] {
            let p0 = Tensor::<Cpu, 2>::random([3, 70_000], Distribution::Normal(0.0, 1.0), &dev);
            let (mut a, mut b) = ((p0.clone(), None, None), (p0, None, None));
            for step in 1..=3u64 {
                let k = Coefs::new(&cfg, 1e-2, step, decayed);
                let g = Tensor::<Cpu, 1>::random([210_000], Distribution::Normal(0.0, 0.5), &dev);
                let (p, m, v) = update_in_place(a.0, g.clone(), (a.1, a.2), &k);
                a = (p, Some(m), Some(v));
                let (p, m, v) = update_with_tensor_ops(b.0, g, (b.1, b.2), &k);
                b = (p, Some(m), Some(v));
            }
            let pairs = [
                (values(a.0), values(b.0)),
                (values(a.1.unwrap()), values(b.1.unwrap())),
                (values(a.2.unwrap()), values(b.2.unwrap())),
            ];
            for (what, (x, y)) in ["parameter", "exp_avg", "exp_avg_sq"].iter().zip(pairs) {
                assert_eq!(x.len(), 210_000);
                for (j, (x, y)) in x.iter().zip(&y).enumerate() {
                    assert!(
                        (x - y).abs() <= 1e-6 * (1.0 + y.abs()),
                        "{what}[{j}]: {x} vs {y}"
                    );
                }
            }
        }
    }
}
