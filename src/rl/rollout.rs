//! One step's rollouts: for each task drawn, `num_generations` episodes of the policy (one local model,
//! or a tool agent and a reply agent) in the simulator, all under one harness (the original or an HSA variant, drawn per task) and one fault seed,
//! each scored by the verifiable judge. The episodes of a task form its group.

use anyhow::{anyhow, Result};
use rayon::prelude::*;
use serde_json::json;

use crate::agent::{Agent, SimEnv};
use crate::judge::verifiable::{score, TokenCounter};
use crate::policy::Policy;
use crate::record::Trajectory;
use crate::rng::Rng;

/// The policy of one episode, from its sampling seed: the current weights, their own random stream
/// (the G episodes of a group must not draw the same tokens).
pub type Sampler<'a> = dyn Fn(u64) -> Box<dyn Policy> + Sync + 'a;

/// The episodes of one task under one harness.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Group {
    pub episodes: Vec<Trajectory>,
    /// Episodes the policy could not play (a prompt longer than the model's context, say): left out
    /// of the group rather than scored as failures the policy could learn nothing from.
    pub errors: Vec<String>,
}

/// Which tasks and harnesses a step plays, derived from the run seed and the step alone (so a resumed
/// run replays the same draws): `per_step` tasks from an epoch-wise shuffle of `tasks`, each with a
/// harness drawn uniformly from `harnesses`.
pub fn draws(
    seed: u64,
    step: usize,
    per_step: usize,
    tasks: usize,
    harnesses: usize,
) -> Vec<(usize, usize)> {
    let mut orders: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    (0..per_step)
        .map(|j| {
            let k = step * per_step + j;
            let order = orders.entry(k / tasks).or_insert_with_key(|epoch| {
                let mut order: Vec<usize> = (0..tasks).collect();
                Rng::derive(seed, &format!("tasks/{epoch}")).shuffle(&mut order);
                order
            });
            let harness = Rng::derive(seed, &format!("harness/{step}/{j}")).below(harnesses);
            (order[k % tasks], harness)
        })
        .collect()
}

/// Plays every draw `generations` times with `sampler`'s policy (each episode from its own seed; the
/// fault seed is the task's, shared by its group) and scores the episodes. Episode ids become
/// `TASK/sSTEP/gG` and `meta` records the step, group, generation and harness. An episode the
/// runtime could not start is an error for the whole step: it is a bad task, not a policy move.
#[allow(clippy::too_many_arguments)]
pub fn play_groups(
    sampler: &Sampler<'_>,
    agents: &[(String, Agent)],
    tasks: &[Trajectory],
    picks: &[(usize, usize)],
    generations: usize,
    env: &SimEnv<'_>,
    step: usize,
    pool: &rayon::ThreadPool,
) -> Result<Vec<Group>> {
    let jobs: Vec<(usize, usize)> = (0..picks.len())
        .flat_map(|j| (0..generations).map(move |g| (j, g)))
        .collect();
    let played: Vec<Result<Trajectory>> = pool.install(|| {
        jobs.par_iter()
            .map(|&(j, g)| {
                let (task, harness) = picks[j];
                let (label, agent) = &agents[harness];
                let policy = sampler(Rng::derive(env.seed, &format!("{step}/{j}/{g}")).next_u64());
                let mut t = agent
                    .run(policy.as_ref(), &tasks[task], env)
                    .map_err(|e| anyhow!("task {} under {label}: {e:#}", tasks[task].id))?;
                score(&mut t, &TokenCounter::Approximate);
                t.id = format!("{}/s{step}/g{g}", tasks[task].id);
                for (k, v) in [
                    ("rl_step", json!(step)),
                    ("rl_group", json!(j)),
                    ("rl_generation", json!(g)),
                    ("harness", json!(label)),
                ] {
                    t.meta.insert(k.into(), v);
                }
                Ok(t)
            })
            .collect()
    });
    let mut groups: Vec<Group> = picks
        .iter()
        .map(|_| Group {
            episodes: Vec::with_capacity(generations),
            errors: Vec::new(),
        })
        .collect();
    for ((j, _), t) in jobs.into_iter().zip(played) {
        let t = t?;
        match t.meta.get("policy_error").and_then(|e| e.as_str()) {
            Some(e) => groups[j].errors.push(format!("{}: {e}", t.id)),
            None => groups[j].episodes.push(t),
        }
    }
    Ok(groups)
}
