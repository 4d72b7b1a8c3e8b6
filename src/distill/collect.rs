//! `teacher-distill collect`: teacher rollouts under the original harness and HSA variants, scored by the
//! verifiable judge and filtered into SFT data.
//!
//! Per task: a seeded draw picks the original harness (with probability `original_share`) or one of N
//! variants drawn from the *train* pool; the teacher (oracle or an OpenAI-compatible endpoint) plays the
//! episode in the simulator with injected tool faults; the judge scores it; it is kept when Accuracy and
//! Effectiveness reach their thresholds. Hook-triggered retries: by default only the final, accepted
//! attempt is kept (the failed attempt and the hook's feedback are cut out); with probability
//! `keep_retry_prob` (seeded per record id) the full retry trajectory is kept, so the model also sees
//! how to recover; its rejected attempts are marked `"weight": 0` and take no loss.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::{json, Value};

use crate::agent::rollout::run_batch;
use crate::agent::{Agent, SimEnv};
use crate::harness::Harness;
use crate::hsa::solvable::masks_needed_skill;
use crate::hsa::{variant::variant_seed, Spec, Variant};
use crate::judge::verifiable::{score, TokenCounter};
use crate::policy::noise::{is_call_rejection, NoiseRates, Noisy};
use crate::policy::oracle::Oracle;
use crate::policy::Policy;
use crate::record::{Message, Role, Trajectory};
use crate::rng::Rng;

/// Filter settings.
#[derive(Debug, Clone, Copy)]
pub struct Filter {
    pub min_accuracy: f64,
    pub min_effectiveness: f64,
    pub keep_retry_prob: f64,
    pub seed: u64,
}

/// Kept/dropped counts by reason, and where kept records came from.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub episodes: u64,
    pub kept: u64,
    /// reason → count (`accuracy_below_threshold`, `effectiveness_below_threshold`, `rollout_error`,
    /// `policy_error` (the teacher gave no move: an endpoint down, a timeout; the error is reported),
    /// `variant_masks_needed_skill`: the task was assigned a variant without the skill it needs, and
    /// was not played, since no policy could solve it).
    pub dropped: BTreeMap<String, u64>,
    /// harness label (`original`, `variant-003`) → kept records.
    pub kept_by_harness: BTreeMap<String, u64>,
    /// Kept records whose retries were cut to the final attempt / kept in full.
    pub retries_trimmed: u64,
    pub retries_kept_full: u64,
    /// Over every episode played: hook (`reply_length`, `limit_quantity.sh`) → outcome (`retry`,
    /// `block`, `fix`) → count.
    pub hooks_fired: BTreeMap<String, BTreeMap<String, u64>>,
    /// Kept records whose episode fired a hook (`meta.hooks_fired`), and those of them that still
    /// carry the hook's feedback after the retry policy (kept in full).
    pub kept_with_hook: u64,
    pub kept_with_feedback: u64,
    /// With several teacher endpoints: endpoint → requests sent to it.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub requests_per_endpoint: BTreeMap<String, u64>,
}

impl Summary {
    fn drop(&mut self, reason: &str) {
        *self.dropped.entry(reason.to_string()).or_default() += 1;
    }

    /// A short table for stderr.
    pub fn table(&self) -> String {
        let mut s = format!(
            "{:<34} {:>8}\n{:<34} {:>8}\n{:<34} {:>8}\n",
            "episodes",
            self.episodes,
            "kept",
            self.kept,
            "  retries cut to final attempt",
            self.retries_trimmed
        );
        s.push_str(&format!(
            "{:<34} {:>8}\n",
            "  retries kept in full", self.retries_kept_full
        ));
        for (k, v) in &self.dropped {
            s.push_str(&format!("{:<34} {:>8}\n", format!("dropped: {k}"), v));
        }
        for (k, v) in &self.kept_by_harness {
            s.push_str(&format!("{:<34} {:>8}\n", format!("kept under {k}"), v));
        }
        // The share is what `--keep-retry-prob` is chosen for (docs/hsa-fidelity.md: at least 5%).
        s.push_str(&format!(
            "{:<34} {:>8}\n{:<34} {:>8} ({:.2}% of kept)\n",
            "kept with a fired hook",
            self.kept_with_hook,
            "  with its feedback kept",
            self.kept_with_feedback,
            100.0 * self.kept_with_feedback as f64 / self.kept.max(1) as f64
        ));
        for (url, n) in &self.requests_per_endpoint {
            s.push_str(&format!("{:<34} {:>8}\n", format!("requests to {url}"), n));
        }
        for (hook, kinds) in &self.hooks_fired {
            for (kind, n) in kinds {
                s.push_str(&format!(
                    "{:<34} {:>8}\n",
                    format!("hook {hook}: {kind}"),
                    n
                ));
            }
        }
        s
    }
}

/// Is this message the harness rejecting an attempt? Within the current turn, user/system messages
/// come only from hooks and the runtime's notes; a tool result may instead reject the call itself
/// (`invalid_arguments` from a PreToolUse hook, `denied` by a command hook, `unknown_tool`).
fn is_retry_feedback(m: &Message) -> bool {
    match m.role {
        Role::User | Role::System | Role::Developer => true,
        Role::Tool => serde_json::from_str::<Value>(&m.text_content())
            .ok()
            .and_then(|v| v["error"]["code"].as_str().map(is_call_rejection))
            .unwrap_or(false),
        Role::Assistant => false,
    }
}

/// Cuts every failed attempt out of the current turn: for each retry feedback, the assistant message
/// it answers and everything from there through the feedback. Returns how many attempts were cut.
pub fn keep_final_attempts(traj: &mut Trajectory) -> usize {
    let start = turn_start(traj);
    let mut kept: Vec<Message> = traj.messages[..start].to_vec();
    let mut cut = 0;
    for m in traj.messages[start..].iter() {
        if is_retry_feedback(m) {
            // Drop back to (and including) the assistant message this feedback answers.
            if let Some(a) = kept[start..]
                .iter()
                .rposition(|x| x.role == Role::Assistant)
            {
                kept.truncate(start + a);
                cut += 1;
                continue;
            }
        }
        kept.push(m.clone());
    }
    traj.messages = kept;
    cut
}

/// Where the current turn starts (`meta.turn_start`; earlier messages are history).
fn turn_start(traj: &Trajectory) -> usize {
    let start = traj
        .meta
        .get("turn_start")
        .and_then(Value::as_u64)
        .unwrap_or(0) as usize;
    start.min(traj.messages.len())
}

/// Marks every assistant message that retry feedback rejected `"weight": 0`: a kept full retry
/// trajectory teaches the recovery after the feedback, never the rejected attempt itself (it stays in
/// the context). Returns how many messages were marked.
pub fn mask_rejected_attempts(traj: &mut Trajectory) -> usize {
    let start = turn_start(traj);
    let mut masked = 0;
    for j in start..traj.messages.len() {
        if !is_retry_feedback(&traj.messages[j]) {
            continue;
        }
        let answered = (start..j)
            .rev()
            .find(|&a| traj.messages[a].role == Role::Assistant);
        if let Some(a) = answered {
            if traj.messages[a].is_trained() {
                traj.messages[a].extra.insert("weight".into(), json!(0));
                masked += 1;
            }
        }
    }
    masked
}

/// Applies the retry policy and the score thresholds; `None` with the reason when dropped.
pub fn filter(mut traj: Trajectory, f: &Filter, summary: &mut Summary) -> Option<Trajectory> {
    let acc = traj.scores.accuracy.unwrap_or(0.0);
    let eff = traj.scores.effectiveness.unwrap_or(0.0);
    if acc < f.min_accuracy {
        summary.drop("accuracy_below_threshold");
        return None;
    }
    if eff < f.min_effectiveness {
        summary.drop("effectiveness_below_threshold");
        return None;
    }
    // Rejected attempts, whether a hook, the runtime or a refused call sent the teacher back.
    let start = turn_start(&traj);
    let retries = traj.messages[start..]
        .iter()
        .filter(|m| is_retry_feedback(m))
        .count();
    if retries > 0 {
        if Rng::derive(f.seed, &format!("keep-retry/{}", traj.id)).chance(f.keep_retry_prob) {
            summary.retries_kept_full += 1;
            summary.kept_with_feedback += u64::from(traj.meta.contains_key("hooks_fired"));
            let masked = mask_rejected_attempts(&mut traj);
            traj.meta.insert("retry_trajectory".into(), json!("full"));
            traj.meta
                .insert("retry_attempts_masked".into(), json!(masked));
        } else {
            let cut = keep_final_attempts(&mut traj);
            summary.retries_trimmed += 1;
            traj.meta
                .insert("retry_trajectory".into(), json!("final_attempt"));
            traj.meta.insert("retry_attempts_cut".into(), json!(cut));
        }
    }
    summary.kept += 1;
    summary.kept_with_hook += u64::from(traj.meta.contains_key("hooks_fired"));
    Some(traj)
}

/// One harness the teacher plays under: the original or a train-pool variant.
pub struct Setting {
    pub label: String,
    pub agent: Agent,
    pub variant: Option<Variant>,
    /// The teacher for this harness (the oracle needs the harness's names; an endpoint does not).
    pub policy: Box<dyn Policy>,
}

/// The original harness plus `n` train-pool variants, each with its teacher from `make_policy`
/// (`None` = the oracle, erring at the `noise` rates). Variants are written under `dir` (`variant-NNN/`) and loaded back, since
/// command hooks run from a harness directory.
pub fn settings(
    base: &Harness,
    spec: &Spec,
    n: usize,
    seed: u64,
    dir: &std::path::Path,
    make_policy: &dyn Fn() -> Option<Box<dyn Policy>>,
    noise: NoiseRates,
) -> Result<Vec<Setting>> {
    let oracle = |h: &Harness, names: crate::record::Names| -> Box<dyn Policy> {
        let o = Box::new(Oracle::new(h, names.clone()));
        if noise == NoiseRates::NONE {
            return o;
        }
        Box::new(Noisy::new(o, h, names, noise, seed))
    };
    let mut out = Vec::with_capacity(n + 1);
    let names = base.names();
    out.push(Setting {
        label: "original".into(),
        agent: Agent::new(base, names.clone())?,
        variant: None,
        policy: make_policy().unwrap_or_else(|| oracle(base, names)),
    });
    for i in 0..n {
        let v = Variant::draw(base, spec, variant_seed(seed, i as u64))
            .with_context(|| format!("drawing HSA variant {i}"))?;
        let label = format!("variant-{i:03}");
        let path = dir.join(&label);
        if path.exists() {
            std::fs::remove_dir_all(&path)
                .with_context(|| format!("replacing {}", path.display()))?;
        }
        v.write_to(&path)?;
        let harness = Harness::load(&path)?;
        let names = v.canonical_names();
        out.push(Setting {
            label,
            agent: Agent::new(&harness, names.clone())?,
            policy: make_policy().unwrap_or_else(|| oracle(&harness, names)),
            variant: Some(v),
        });
    }
    Ok(out)
}

/// Which setting plays a task, from its `key`: the original with probability `original_share`, else a
/// variant.
pub fn assign(key: &str, seed: u64, original_share: f64, settings: usize) -> usize {
    let mut rng = Rng::derive(seed, &format!("assign/{key}"));
    if settings == 1 || rng.chance(original_share) {
        0
    } else {
        1 + rng.below(settings - 1)
    }
}

/// What picks a task's setting: its live room, so the viewers of one room (`hat sim tasks
/// --viewers-per-room`) play under one harness, as they would in a deployment, and their records share
/// the system prompt; the task id when it has no room.
fn setting_key(task: &Trajectory) -> String {
    match task.task.as_ref().map(|t| &t.room) {
        Some(room) if !room.is_null() => room.to_string(),
        _ => task.id.clone(),
    }
}

/// Rolls out `tasks`, scores and filters them; kept records in input order, with `meta.harness_setting`.
pub fn collect(
    tasks: &[Trajectory],
    settings: &[Setting],
    env: &SimEnv<'_>,
    pool: &rayon::ThreadPool,
    original_share: f64,
    filter_cfg: &Filter,
    counter: &TokenCounter,
    summary: &mut Summary,
    errors: &mut dyn FnMut(&str, &anyhow::Error),
) -> Vec<Trajectory> {
    let which: Vec<usize> = tasks
        .iter()
        .map(|t| {
            assign(
                &setting_key(t),
                filter_cfg.seed,
                original_share,
                settings.len(),
            )
        })
        .collect();
    let mut results: Vec<Option<Trajectory>> = vec![None; tasks.len()];
    let base = settings.first().map(|s| s.agent.harness());
    for (s, setting) in settings.iter().enumerate() {
        let mut idx: Vec<usize> = (0..tasks.len()).filter(|&i| which[i] == s).collect();
        if let (Some(base), Some(_)) = (base, &setting.variant) {
            idx.retain(|&i| {
                let masked = masks_needed_skill(
                    &tasks[i],
                    base,
                    settings[0].agent.names(),
                    setting.agent.harness(),
                    setting.agent.names(),
                );
                if masked.is_some() {
                    summary.episodes += 1;
                    summary.drop("variant_masks_needed_skill");
                }
                masked.is_none()
            });
        }
        let group: Vec<Trajectory> = idx.iter().map(|&i| tasks[i].clone()).collect();
        for (i, r) in idx.into_iter().zip(run_batch(
            &setting.agent,
            setting.policy.as_ref(),
            &group,
            env,
            pool,
        )) {
            summary.episodes += 1;
            match r {
                Ok(t) if t.meta.contains_key("policy_error") => {
                    summary.drop("policy_error");
                    let e = t.meta["policy_error"].as_str().unwrap_or_default();
                    errors(&tasks[i].id, &anyhow::anyhow!("the teacher: {e}"));
                }
                Ok(mut t) => {
                    if let (Some(v), Some(h)) = (&setting.variant, t.harness.as_mut()) {
                        h.variant = Some(v.record_variant());
                    }
                    t.meta
                        .insert("harness_setting".into(), json!(setting.label));
                    if let Some(Value::Object(fired)) = t.meta.get("hooks_fired") {
                        for (hook, kinds) in fired {
                            for (kind, n) in kinds.as_object().into_iter().flatten() {
                                *summary
                                    .hooks_fired
                                    .entry(hook.clone())
                                    .or_default()
                                    .entry(kind.clone())
                                    .or_default() += n.as_u64().unwrap_or(0);
                            }
                        }
                    }
                    score(&mut t, counter);
                    results[i] = Some(t);
                }
                Err(e) => {
                    summary.drop("rollout_error");
                    errors(&tasks[i].id, &e);
                }
            }
        }
    }
    results
        .into_iter()
        .flatten()
        .filter_map(|t| {
            let label = t
                .meta
                .get("harness_setting")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string();
            let kept = filter(t, filter_cfg, summary)?;
            *summary.kept_by_harness.entry(label).or_default() += 1;
            Some(kept)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::catalog::{Catalog, Split};
    use crate::sim::tasks::{generate, TaskConfig};

    #[test]
    fn viewers_of_one_room_play_under_one_setting() {
        let catalog = Catalog::generate(1, 60);
        let mut cfg = TaskConfig::new(Split::Train, 3);
        cfg.viewers_per_room = 8;
        let tasks = generate(&catalog, &cfg, 96).unwrap();
        let setting = |t: &Trajectory| assign(&setting_key(t), 5, 0.5, 5);
        for session in tasks.chunks(8) {
            for t in session {
                if t.task.as_ref().unwrap().room == session[0].task.as_ref().unwrap().room {
                    assert_eq!(setting(t), setting(&session[0]), "{}", t.id);
                }
            }
        }
        let used: std::collections::BTreeSet<usize> = tasks.iter().map(setting).collect();
        assert!(used.len() >= 3, "rooms spread over the settings: {used:?}");
        // Without a room, the task id decides.
        let mut bare = tasks[0].clone();
        bare.task = None;
        assert_eq!(setting_key(&bare), bare.id);
    }
}
