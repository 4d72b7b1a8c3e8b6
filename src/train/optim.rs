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

use anyhow::{bail, Result};
use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;

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

/// Learning rate at optimizer step `step` (0-based) of `total`: linear warmup from 0, then a half cosine
/// to 0 — transformers' `get_cosine_schedule_with_warmup` (num_cycles 0.5).
pub fn cosine_with_warmup(peak: f64, step: usize, warmup: usize, total: usize) -> f64 {
    if step < warmup {
        return peak * step as f64 / warmup.max(1) as f64;
    }
    let progress = (step - warmup) as f64 / total.saturating_sub(warmup).max(1) as f64;
    peak * (0.5 * (1.0 + (std::f64::consts::PI * progress).cos())).max(0.0)
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
            .map(|g| g.clone().powi_scalar(2).sum().into_scalar().elem::<f64>())
            .sum::<f64>()
            .sqrt()
    }

    /// Scales gradients so the global norm is at most `max_norm` (torch: coefficient
    /// `max_norm / (norm + 1e-6)`, clamped to 1). Returns the norm before clipping.
    pub fn clip(&mut self, max_norm: f64) -> f64 {
        let norm = self.norm();
        let coef = max_norm / (norm + 1e-6);
        if coef < 1.0 {
            for g in self.grads.iter_mut().flatten() {
                *g = g.clone().mul_scalar(coef);
            }
        }
        norm
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
        let c = self.opt.config;
        let t = self.opt.step as i32;
        let (id, tensor, mapper) = param.consume();
        let shape = tensor.shape();
        let n = shape.num_elements();
        let mut p = tensor.inner().reshape([n]);
        let m = match self.opt.exp_avg[i].take() {
            Some(m) => m.mul_scalar(c.beta1) + g.clone().mul_scalar(1.0 - c.beta1),
            None => g.clone().mul_scalar(1.0 - c.beta1),
        };
        let v = match self.opt.exp_avg_sq[i].take() {
            Some(v) => v.mul_scalar(c.beta2) + g.powi_scalar(2).mul_scalar(1.0 - c.beta2),
            None => g.powi_scalar(2).mul_scalar(1.0 - c.beta2),
        };
        if D >= 2 && c.weight_decay > 0.0 {
            p = p.mul_scalar(1.0 - self.lr * c.weight_decay);
        }
        let bc1 = 1.0 - c.beta1.powi(t);
        let bc2 = 1.0 - c.beta2.powi(t);
        // torch: p -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps)
        let denom = v.clone().sqrt().div_scalar(bc2.sqrt()).add_scalar(c.eps);
        p = p - m.clone().div(denom).mul_scalar(self.lr / bc1);
        self.opt.exp_avg[i] = Some(m);
        self.opt.exp_avg_sq[i] = Some(v);
        let updated = Tensor::<AB, D>::from_inner(p.reshape(shape)).require_grad();
        Param::from_mapped_value(id, updated, mapper)
    }
}
