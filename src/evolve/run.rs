//! The evolution loop: evaluate the current best version on the dev tasks, diagnose its failures,
//! take the first untried proposal for the largest cluster that has one, build and validate the
//! candidate, evaluate it with the same policy, tasks, faults and seed, compare it with its parent on
//! each judge dimension, decide, and write everything to the ledger. It stops after `rounds` rounds,
//! after `patience` candidates in a row that did not advance, or when no cluster has a proposal left.

use std::collections::HashSet;
use std::fs;
use std::path::Path;

use anyhow::{Context as _, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::candidate::{apply, unified_diff};
use super::diagnose::diagnose;
use super::ledger::{Decision, Entry, Judged, Ledger};
use super::propose::{rules, Context, Proposal};
use crate::agent::cli::PolicyArgs;
use crate::agent::SimEnv;
use crate::eval::rollout::play;
use crate::harness::Harness;
use crate::hsa::variant::load_harness;
use crate::judge::compare::compare;
use crate::judge::endpoint::Endpoint;
use crate::judge::metric::Metric;
use crate::record::Trajectory;

pub struct Settings<'a> {
    pub policy: &'a PolicyArgs,
    pub tasks: &'a [Trajectory],
    pub env: SimEnv<'a>,
    pub pool: &'a rayon::ThreadPool,
    /// Proposals from this endpoint instead of the rules.
    pub endpoint: Option<&'a Endpoint>,
    pub rounds: usize,
    pub patience: usize,
    pub alpha: f64,
}

/// Run (or continue) the loop in `out`, starting from `harness_dir` when `out` has no ledger yet.
/// Returns the ledger and why the loop stopped.
pub fn evolve(harness_dir: &Path, out: &Path, s: &Settings<'_>) -> Result<(Ledger, String)> {
    fs::create_dir_all(out.join("runs")).with_context(|| format!("creating {}", out.display()))?;
    let mut ledger = Ledger::open(out)?;
    if ledger.entries.is_empty() {
        let (harness, _) = load_harness(harness_dir)?;
        harness.write_to(ledger.version_dir(0))?;
        let episodes = evaluate(&ledger, 0, s)?;
        ledger.append(Entry {
            version: 0,
            hash: harness.hash(),
            parent: None,
            proposal: None,
            episodes: episodes.len(),
            figures: figures(&episodes),
            comparisons: Vec::new(),
            decision: Decision::Baseline,
            reason: format!("the starting harness, {}", harness_dir.display()),
        })?;
    }
    let bar = ProgressBar::with_draw_target(Some(s.rounds as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} rounds {msg} [{elapsed}]")
            .expect("static template"),
    );
    let mut stopped = format!("{} rounds done", s.rounds);
    for _ in 0..s.rounds {
        if ledger.failed_in_a_row() >= s.patience {
            stopped = format!(
                "{} candidates in a row did not advance (patience {})",
                ledger.failed_in_a_row(),
                s.patience
            );
            break;
        }
        let Some(entry) = round(&mut ledger, s)? else {
            stopped = "no cluster has an untried proposal".into();
            break;
        };
        bar.set_message(format!("v{}: {:?}", entry.version, entry.decision));
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok((ledger, stopped))
}

/// One round; `None` when nothing is left to propose.
fn round(ledger: &mut Ledger, s: &Settings<'_>) -> Result<Option<Entry>> {
    let head = ledger.best().context("the ledger has no baseline")?.clone();
    let (harness, names) = load_harness(&ledger.version_dir(head.version))?;
    let episodes = read_run(&ledger.run_file(head.version))?;
    let diagnosis = diagnose(&episodes, &harness, &names);
    fs::create_dir_all(ledger.dir.join("diagnosis"))?;
    fs::write(
        ledger
            .dir
            .join("diagnosis")
            .join(format!("v{}.md", head.version)),
        diagnosis.markdown(&episodes),
    )?;
    // An edit is tried once in a run: a file content that was refused or did not advance one version
    // is not proposed again on the next.
    let tried: HashSet<String> = ledger
        .entries
        .iter()
        .filter_map(|e| e.proposal.as_ref())
        .map(edits_key)
        .collect();
    let cx = Context {
        harness: &harness,
        names: &names,
        episodes: &episodes,
    };
    let mut next: Option<Proposal> = None;
    for cluster in &diagnosis.clusters {
        let proposals = match s.endpoint {
            Some(e) => vec![super::endpoint::propose(e, cluster, &cx)?],
            None => rules(cluster, &cx),
        };
        next = proposals
            .into_iter()
            .find(|p| !tried.contains(&edits_key(p)));
        if next.is_some() {
            break;
        }
    }
    let Some(proposal) = next else {
        return Ok(None);
    };
    let version = ledger.next_version();
    let entry = match apply(&harness, &proposal.edits) {
        Err(why) => Entry {
            version,
            hash: String::new(),
            parent: Some(head.version),
            proposal: Some(proposal),
            episodes: 0,
            figures: Default::default(),
            comparisons: Vec::new(),
            decision: Decision::Refused,
            reason: why,
        },
        Ok(candidate) => {
            candidate.write_to(ledger.version_dir(version))?;
            fs::create_dir_all(ledger.dir.join("diffs"))?;
            fs::write(
                ledger.dir.join("diffs").join(format!("v{version}.diff")),
                unified_diff(&harness, &candidate),
            )?;
            evaluated(ledger, &head, &episodes, version, &candidate, proposal, s)?
        }
    };
    ledger.append(entry.clone())?;
    Ok(Some(entry))
}

/// Evaluate a written candidate and decide on it against `head`.
/// `parent` is the scored run of `head`, already read for the diagnosis.
fn evaluated(
    ledger: &Ledger,
    head: &Entry,
    parent: &[Trajectory],
    version: usize,
    candidate: &Harness,
    proposal: Proposal,
    s: &Settings<'_>,
) -> Result<Entry> {
    let episodes = evaluate(ledger, version, s)?;
    let comparisons: Vec<Judged> = Metric::DIMENSIONS
        .iter()
        .map(|&m| compare(parent, &episodes, m, s.alpha, 1e-9).map(|c| Judged::from(&c)))
        .collect::<Result<_>>()?;
    let (decision, reason) = decide(&comparisons, s.alpha);
    Ok(Entry {
        version,
        hash: candidate.hash(),
        parent: Some(head.version),
        proposal: Some(proposal),
        episodes: episodes.len(),
        figures: figures(&episodes),
        comparisons,
        decision,
        reason,
    })
}

/// Accept when some dimension is significantly better and none significantly worse.
pub fn decide(comparisons: &[Judged], alpha: f64) -> (Decision, String) {
    let worse: Vec<&Judged> = comparisons
        .iter()
        .filter(|c| c.losses > c.wins && c.p_value < alpha)
        .collect();
    let better: Vec<&Judged> = comparisons
        .iter()
        .filter(|c| c.wins > c.losses && c.p_value < alpha)
        .collect();
    let list = |v: &[&Judged]| {
        v.iter()
            .map(|c| {
                format!(
                    "{} {}/{} (p = {:.2e})",
                    c.metric, c.wins, c.losses, c.p_value
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !worse.is_empty() {
        (
            Decision::Regression,
            format!("worse on {} (wins/losses)", list(&worse)),
        )
    } else if !better.is_empty() {
        (
            Decision::Accept,
            format!("better on {} (wins/losses), worse on none", list(&better)),
        )
    } else {
        (
            Decision::Reject,
            format!("no dimension significantly better at alpha {alpha}"),
        )
    }
}

/// Play the dev tasks under version `version` and keep the scored episodes in its run file.
fn evaluate(ledger: &Ledger, version: usize, s: &Settings<'_>) -> Result<Vec<Trajectory>> {
    let dir = ledger.version_dir(version);
    let (harness, names) = load_harness(&dir)?;
    let policy = s.policy.build(&harness, &names, s.env.seed)?;
    let (episodes, errors) = play(&dir, policy.as_ref(), s.tasks, &s.env, s.pool)?;
    if errors > 0 {
        anyhow::bail!(
            "{errors} of {} dev tasks could not be played under {}",
            s.tasks.len(),
            dir.display()
        );
    }
    let path = ledger.run_file(version);
    let mut text = String::new();
    for t in &episodes {
        text += &serde_json::to_string(t)?;
        text.push('\n');
    }
    fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(episodes)
}

/// The trajectories of a JSONL file (dev tasks, a scored run).
pub fn read_run(path: &Path) -> Result<Vec<Trajectory>> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("{}:{}: not a trajectory", path.display(), i + 1))
        })
        .collect()
}

/// Mean of each judge dimension over the episodes that have it.
fn figures(episodes: &[Trajectory]) -> std::collections::BTreeMap<String, f64> {
    Metric::DIMENSIONS
        .iter()
        .filter_map(|&m| {
            let v: Vec<f64> = episodes.iter().filter_map(|t| m.get(&t.scores)).collect();
            (!v.is_empty()).then(|| {
                (
                    m.as_str().to_string(),
                    v.iter().sum::<f64>() / v.len() as f64,
                )
            })
        })
        .collect()
}

/// What makes two proposals the same: their edits.
fn edits_key(p: &Proposal) -> String {
    serde_json::to_string(&p.edits).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(metric: &str, wins: u64, losses: u64, p_value: f64) -> Judged {
        Judged {
            metric: metric.into(),
            mean_parent: None,
            mean: None,
            wins,
            ties: 0,
            losses,
            p_value,
            verdict: String::new(),
        }
    }

    #[test]
    fn a_candidate_advances_only_when_better_somewhere_and_worse_nowhere() {
        let better = judged("accuracy", 20, 1, 1e-5);
        let worse = judged("effectiveness", 2, 30, 1e-6);
        let noise = judged("skill_selection", 3, 2, 1.0);
        let decision = |c: &[Judged]| decide(c, 0.05).0;
        assert_eq!(decision(&[better.clone(), noise.clone()]), Decision::Accept);
        // Revision 1 of the paper: accuracy up, effectiveness down — not an advance.
        assert_eq!(decision(&[better, worse.clone()]), Decision::Regression);
        assert_eq!(decision(&[noise.clone()]), Decision::Reject);
        let (_, why) = decide(&[worse, noise], 0.05);
        assert!(why.contains("effectiveness 2/30"), "{why}");
    }
}
