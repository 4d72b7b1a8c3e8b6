//! On-policy distillation (HAT stage 2, `opd`): the student samples general prompts, the pre-SFT base
//! scores the samples, and the student moves towards it on its own tokens, restoring general ability
//! that domain SFT eroded (reference/rl_algorithms.md §4).
//!
//! ```text
//! reverse_kl.rs  tinker's per-token reverse-KL advantage (kl_penalty_coef, kl_discount_factor) and
//!                its importance-sampling / PPO loss, through the RL policy loss
//! gjsd.rs        TRL GKD's generalized JSD over the full vocabulary (beta, temperature): values,
//!                gradients, and the tensor form training differentiates
//! teacher.rs     the teacher: a checkpoint in-process or an endpoint's prompt_logprobs; refusing
//!                one with another tokenizer or vocabulary
//! mix.rs         a step's prompts: general ones, and a seeded share of domain ones
//! sample.rs      the student's batched samples with the sampler's log-probs, as training views
//! update.rs      the full-vocabulary update (the sampled-token one is the RL update)
//! trainer.rs     the loop: sample → teacher scores → update; metrics, IFEval-lite, checkpoints
//! cli.rs         `opd` flags
//! ```

pub mod cli;
pub mod gjsd;
pub mod mix;
pub mod reverse_kl;
pub mod sample;
pub mod teacher;
pub mod trainer;
pub mod update;
