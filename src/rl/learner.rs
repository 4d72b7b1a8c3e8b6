//! One policy a GRPO run trains: its weights, optimizer, trainer state, reference model, checkpoint
//! directory and the sampler that plays its moves. The default run has one, which plays every move;
//! the two-agent run has a tool agent and a reply agent, each updated only on the moves it made, with
//! its own reward, reference, optimizer and checkpoints (`OUT/tool/`, `OUT/reply/`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use burn::module::AutodiffModule;
use burn::tensor::backend::AutodiffBackend;
use serde_json::{json, Map, Value};

use super::opd_term::opd_term;
use super::tis::{tis_weights, TisStats};
use super::trainer::GrpoConfig;
use super::update::{logprobs, update, Batch, Span, UpdateConfig};
use crate::agent::two_agent::AgentRole;
use crate::chat::ChatTemplate;
use crate::model::generation::generate::TextGenerator;
use crate::model::CausalLm;
use crate::policy::local::{LocalOptions, LocalPolicy};
use crate::train::checkpoint::{self, TrainerState};
use crate::train::optim::AdamW;
use crate::train::view::TrainingView;

/// A policy to train: the weights it starts from and the reference of its KL term (`beta` > 0).
pub struct Start<B: AutodiffBackend> {
    pub model: CausalLm<B>,
    pub reference: Option<CausalLm<B::InnerBackend>>,
}

pub struct Learner<B: AutodiffBackend> {
    /// The agent it is in two-agent mode; `None` when it plays every move.
    pub role: Option<AgentRole>,
    pub model: CausalLm<B>,
    pub opt: AdamW<B::InnerBackend>,
    pub state: TrainerState,
    reference: Option<CausalLm<B::InnerBackend>>,
    /// Where its checkpoints go.
    pub out: PathBuf,
    /// Samples its moves with the weights of the last update.
    pub policy: LocalPolicy<B::InnerBackend>,
}

/// What one step did to the policy, for the metrics and the timing split.
pub struct Learned {
    pub metrics: Map<String, Value>,
    /// The policy's own log-probs of the views (the old policy of the ratio).
    pub scoring_s: f64,
    /// The reference model's log-probs (the KL term).
    pub reference_s: f64,
    pub update_s: f64,
}

/// The step's judged views, with what every learner's update shares: the teacher's log-probs (the
/// OPD term) and the sampler's (TIS), per view in score order.
pub struct StepData<'a> {
    pub views: &'a [TrainingView],
    pub teacher: Option<&'a [Vec<f64>]>,
    pub sampler: Option<&'a [Vec<Option<f64>>]>,
    pub learning_rate: f64,
    pub pad: u32,
}

impl<B: AutodiffBackend> Learner<B>
where
    TextGenerator<B::InnerBackend>: Send,
{
    /// A learner checkpointing into `out`: `start`, or with `resume` its newest checkpoint there.
    /// A fresh run refuses an `out` that already holds checkpoints.
    pub fn new(
        role: Option<AgentRole>,
        start: Start<B>,
        out: PathBuf,
        cfg: &GrpoConfig,
        tokenizer_dir: &Path,
        resume: bool,
        device: &B::Device,
    ) -> Result<Self> {
        if !resume {
            checkpoint::ensure_none(&out)?;
        }
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        let mut opt = AdamW::<B::InnerBackend>::new(cfg.adamw);
        let (model, state) =
            checkpoint::resume_or_start(&out, resume, start.model, &mut opt, cfg.seed, device)?;
        let generator = TextGenerator::new(
            model.valid(),
            crate::tokenizer::load(tokenizer_dir)?,
            Some(ChatTemplate::from_model_dir(tokenizer_dir)?),
        )?;
        let mut options = LocalOptions::default();
        options.sampling.temperature = 1.0;
        options.sampling.max_tokens = cfg.loss.max_completion_length;
        // The rollouts carry the sampler's log-probs (the record TIS reads; free, the sampler has them).
        options.sampling.logprobs = true;
        let name = role.map_or("grpo-policy".into(), |r| format!("grpo-{}", r.as_str()));
        let policy = LocalPolicy::new(generator, &name, options)?;
        Ok(Learner {
            role,
            model,
            opt,
            state,
            reference: start.reference,
            out,
            policy,
        })
    }

    /// The prefix of its metrics: none for the single policy, `tool/` or `reply/`.
    pub fn prefix(&self) -> String {
        self.role
            .map_or(String::new(), |r| format!("{}/", r.as_str()))
    }

    /// One RL step on `spans`, the completions this policy wrote (with their advantages): score the
    /// views with the current weights (`old`), the reference and the OPD and TIS terms, then
    /// `num_iterations` optimizer steps.
    pub fn learn(
        mut self,
        spans: &[Span],
        data: &StepData<'_>,
        cfg: &GrpoConfig,
        device: &B::Device,
    ) -> Result<(Self, Learned)> {
        let clock = std::time::Instant::now();
        let views = data.views;
        let (old, entropy) = logprobs(
            &self.model.valid(),
            views,
            data.pad,
            cfg.batch_tokens,
            device,
        )?;
        let scoring_s = clock.elapsed().as_secs_f64();
        let clock = std::time::Instant::now();
        let reference = self
            .reference
            .as_ref()
            .map(|r| logprobs(r, views, data.pad, cfg.batch_tokens, device))
            .transpose()?
            .map(|(lp, _)| lp);
        let opd = data
            .teacher
            .filter(|_| cfg.kl_penalty.kl_penalty_coef != 0.0)
            .map(|teacher| opd_term(&old, teacher, &cfg.kl_penalty));
        let mut tis_stats = TisStats::default();
        let tis: Option<Vec<Vec<f64>>> =
            cfg.tis_imp_ratio_cap
                .zip(data.sampler)
                .map(|(cap, sampler)| {
                    spans
                        .iter()
                        .map(|s| {
                            let r = s.first..s.first + s.len;
                            tis_weights(
                                &old[s.view][r.clone()],
                                &sampler[s.view][r],
                                cap,
                                &mut tis_stats,
                            )
                        })
                        .collect()
                });
        let reference_s = clock.elapsed().as_secs_f64();

        let clock = std::time::Instant::now();
        let batch = Batch {
            views,
            spans,
            old: &old,
            reference: reference.as_deref(),
            token_advantages: opd.as_ref().map(|(term, _)| term.as_slice()),
            tis_weights: tis.as_deref(),
        };
        let settings = UpdateConfig {
            loss: &cfg.loss,
            num_iterations: cfg.num_iterations,
            learning_rate: data.learning_rate,
            max_grad_norm: cfg.max_grad_norm,
            batch_tokens: cfg.batch_tokens,
            aux_coef: cfg
                .router_aux_loss_coef
                .unwrap_or(self.model.config.router_aux_loss_coef),
            pad: data.pad,
        };
        let (model, loss, grad_norm) = update(self.model, &mut self.opt, &batch, &settings, device)
            .map_err(|e| checkpoint::halted(e, &self.out, self.state.step + 1))?;
        self.model = model;
        let update_s = clock.elapsed().as_secs_f64();
        self.state.step += 1;
        self.state.tokens += views.iter().map(|v| v.len() as u64).sum::<u64>();

        // Entropy over this policy's own tokens (`entropy` is flat over every view's trained tokens).
        let offsets: Vec<usize> = old
            .iter()
            .scan(0, |at, v| {
                let here = *at;
                *at += v.len();
                Some(here)
            })
            .collect();
        let own_entropy: Vec<f64> = spans
            .iter()
            .flat_map(|s| &entropy[offsets[s.view] + s.first..offsets[s.view] + s.first + s.len])
            .copied()
            .collect();
        let mut m = Map::new();
        let p = self.prefix();
        let mut put = |k: &str, v: Value| {
            m.insert(format!("{p}{k}"), v);
        };
        put("loss", json!(loss.loss));
        put("grad_norm", json!(grad_norm));
        put("kl", json!(loss.kl));
        put("entropy", json!(mean(&own_entropy)));
        put("clip_ratio/low_mean", json!(loss.clip_ratio_low));
        put("clip_ratio/high_mean", json!(loss.clip_ratio_high));
        put("clip_ratio/region_mean", json!(loss.clip_ratio_region));
        put(
            "completions/mean_length",
            json!(loss.tokens as f64 / spans.len().max(1) as f64),
        );
        put("completions", json!(spans.len()));
        if let Some((term, reverse_kl)) = &opd {
            put("opd/reverse_kl", json!(reverse_kl));
            let flat: Vec<f64> = term.iter().flatten().copied().collect();
            put("opd/advantage_mean", json!(mean(&flat)));
        }
        if tis.is_some() {
            put("tis/mean_ratio", json!(tis_stats.mean_ratio()));
            put("tis/clipped_frac", json!(tis_stats.clipped_frac()));
            put("tis/matched_frac", json!(tis_stats.matched_frac()));
        }
        Ok((
            self,
            Learned {
                metrics: m,
                scoring_s,
                reference_s,
                update_s,
            },
        ))
    }
}

/// The mean, `None` (null in the metrics) for no values.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}
