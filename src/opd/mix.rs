//! Which prompts a step samples: general prompts from an epoch-wise shuffle (the RL trainer's draws),
//! with a seeded share of the slots given to domain (live-room) prompts instead, so OPD can restore
//! general ability while still seeing the domain it must not forget. Every draw derives from the seed,
//! the step and the slot, so a resumed run draws the same prompts; with share 0 the draws are exactly
//! the general-only ones.

use super::trainer::Prompt;
use crate::rl::rollout::draws;
use crate::rng::Rng;

/// Where a step's prompt was drawn from (it decides the prompt's teacher when a run has a domain one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    General,
    Domain,
}

/// The prompts of step `step`: `per_step` slots, each a domain prompt (uniform over `domain`) with
/// probability `domain_share`, else the next general prompt of the shuffle.
pub fn step_prompts<'a>(
    general: &'a [Prompt],
    domain: &'a [Prompt],
    domain_share: f64,
    seed: u64,
    step: usize,
    per_step: usize,
) -> Vec<(&'a Prompt, Source)> {
    draws(seed, step, per_step, general.len(), 1)
        .into_iter()
        .enumerate()
        .map(|(slot, (i, _))| {
            let to_domain = !domain.is_empty()
                && domain_share > 0.0
                && Rng::derive(seed, &format!("domain/{step}/{slot}")).unit() < domain_share;
            if to_domain {
                let pick =
                    Rng::derive(seed, &format!("domain-pick/{step}/{slot}")).below(domain.len());
                (&domain[pick], Source::Domain)
            } else {
                (&general[i], Source::General)
            }
        })
        .collect()
}
