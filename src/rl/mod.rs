//! On-policy RL (HAT stage 3, `grpo-train`): group rollouts in the live-room simulator, group-relative
//! advantages from the judge's rewards, the clipped policy-gradient loss, and the loop around them.
//!
//! ```text
//! advantage.rs    GRPO / GDPO advantages over several rewards (TRL's names and ε, Bessel std)
//! policy_loss.rs  token / sequence (GSPO) ratios, clipping, loss types, k3 KL: values and ∂L/∂logp
//! rollout.rs      which tasks and harnesses a step plays; G episodes per task, judged
//! remote.rs       rollouts on inference servers (serve, SGLang) with weight sync by checkpoint reload
//! update.rs       policy turns as spans of a view; μ optimizer steps of the NLL weighted by −∂L/∂logp
//! sides.rs        which rewards judge a completion and which policy learns it (tool / reply side)
//! learner.rs      one trained policy (weights, optimizer, reference, checkpoints, sampler) and its step
//! opd_term.rs     the optional per-token OPD term (reverse KL to a teacher) added to the advantages
//! tis.rs          truncated importance sampling: weights min(π_old/π_sampler, C) from the rollouts' log-probs
//! trainer.rs      the loop: rollout → judge → advantages per turn kind → update of one policy, or of
//!                 a tool agent and a reply agent (two-agent mode); metrics, checkpoints
//! cli.rs          `grpo-train` flags
//! ```

pub mod advantage;
pub mod cli;
pub mod learner;
pub mod opd_term;
pub mod policy_loss;
pub mod remote;
pub mod rollout;
pub mod sides;
pub mod tis;
pub mod trainer;
pub mod update;
