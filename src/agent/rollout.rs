//! Rolling out many tasks: episodes in parallel on a bounded thread pool, each checked against its
//! ground truth, with a running summary. Output order is input order, and every episode's randomness
//! comes from the rollout seed and its task id, so a rollout is reproducible at any concurrency.

use std::collections::BTreeMap;

use anyhow::Result;
use rayon::prelude::*;
use serde_json::{json, Value};

use super::runtime::{Agent, SimEnv};
use crate::policy::Policy;
use crate::record::Trajectory;
use crate::sim::success;

/// Run `tasks` and return the trajectories, each with `meta.success` (and `meta.failures` when it
/// failed). An error is a task the runtime could not start (no task, bad room), never a bad policy move.
pub fn run_batch(
    agent: &Agent,
    policy: &dyn Policy,
    tasks: &[Trajectory],
    env: &SimEnv<'_>,
    pool: &rayon::ThreadPool,
) -> Vec<Result<Trajectory>> {
    pool.install(|| {
        tasks
            .par_iter()
            .map(|t| {
                let mut out = agent.run(policy, t, env)?;
                mark_success(&mut out);
                Ok(out)
            })
            .collect()
    })
}

/// Check `traj` against its ground truth: `meta.success`, and `meta.failures` when it failed.
pub fn mark_success(traj: &mut Trajectory) {
    let verdict = success::check(traj);
    traj.meta.insert("success".into(), json!(verdict.success));
    if !verdict.failures.is_empty() {
        traj.meta.insert("failures".into(), json!(verdict.failures));
    }
}

/// Counts over a rollout, for the summary line on stderr.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub episodes: u64,
    pub successes: u64,
    pub errors: u64,
    /// intent → (episodes, successes)
    pub by_intent: BTreeMap<String, (u64, u64)>,
    pub faults: u64,
    pub retries: u64,
    pub malformed_calls: u64,
    pub stop_reasons: BTreeMap<String, u64>,
}

impl Summary {
    pub fn add(&mut self, t: &Trajectory) {
        let ok = t
            .meta
            .get("success")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        self.episodes += 1;
        self.successes += u64::from(ok);
        let intent = t
            .task
            .as_ref()
            .map_or("none".to_string(), |x| x.intent.to_string());
        let e = self.by_intent.entry(intent).or_default();
        e.0 += 1;
        e.1 += u64::from(ok);
        let num = |k: &str| t.meta.get(k).and_then(Value::as_u64).unwrap_or(0);
        self.faults += t
            .meta
            .get("faults")
            .and_then(Value::as_array)
            .map_or(0, |a| a.len() as u64);
        self.retries += num("retries");
        self.malformed_calls += num("malformed_calls");
        let reason = t
            .meta
            .get("stop_reason")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        *self.stop_reasons.entry(reason).or_default() += 1;
    }

    pub fn success_rate(&self) -> f64 {
        if self.episodes == 0 {
            0.0
        } else {
            self.successes as f64 / self.episodes as f64
        }
    }

    /// A human-readable report: overall rate, per intent, faults and retries.
    pub fn report(&self) -> String {
        let mut s = format!(
            "episodes {}  success {}/{} = {:.2}%  errors {}  faults {}  hook retries {}  malformed calls {}\n",
            self.episodes,
            self.successes,
            self.episodes,
            100.0 * self.success_rate(),
            self.errors,
            self.faults,
            self.retries,
            self.malformed_calls
        );
        for (intent, (n, ok)) in &self.by_intent {
            s.push_str(&format!(
                "  {intent:<20} {ok:>6}/{n:<6} {:.2}%\n",
                100.0 * *ok as f64 / (*n).max(1) as f64
            ));
        }
        let reasons: Vec<String> = self
            .stop_reasons
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        s.push_str(&format!("  stop reasons: {}\n", reasons.join(" ")));
        s
    }
}
