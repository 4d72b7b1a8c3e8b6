//! Regression check for harness evolution: the same dev set run under a baseline (A) and a candidate
//! (B) harness, joined by record id, per-case win/tie/loss on one metric, and an exact two-sided sign
//! test on the decided cases. The candidate is accepted only when it wins more cases than it loses and
//! the sign test rejects "no difference" at `alpha`; otherwise it is rejected (and flagged as a
//! regression when it is significantly worse).

use std::collections::{BTreeMap, HashMap};

use anyhow::{bail, Result};
use serde::Serialize;

use super::metric::{intent_key, Metric};
use super::stats::sign_test;
use crate::record::Trajectory;

/// Win/tie/loss counts of B against A.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub wins: u64,
    pub ties: u64,
    pub losses: u64,
}

/// One case where B scored lower than A.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub id: String,
    pub intent: String,
    pub a: f64,
    pub b: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub metric: Metric,
    pub alpha: f64,
    /// Differences up to this size count as ties.
    pub epsilon: f64,
    pub cases: u64,
    pub only_in_a: u64,
    pub only_in_b: u64,
    /// Joined cases where either side has no value for the metric (unscored, judge error).
    pub missing: u64,
    pub mean_a: Option<f64>,
    pub mean_b: Option<f64>,
    pub tally: Tally,
    pub p_value: f64,
    /// `"accept"` or `"reject"`.
    pub verdict: String,
    pub reason: String,
    pub by_intent: BTreeMap<String, Tally>,
    pub regressions: Vec<Change>,
}

/// Compare candidate `b` with baseline `a` on `metric`.
pub fn compare(
    a: &[Trajectory],
    b: &[Trajectory],
    metric: Metric,
    alpha: f64,
    epsilon: f64,
) -> Result<Comparison> {
    if !(0.0..1.0).contains(&alpha) || alpha == 0.0 {
        bail!("--alpha must be in (0, 1), got {alpha}");
    }
    let index = |side: &[Trajectory], name: &str| -> Result<HashMap<String, usize>> {
        let mut map = HashMap::new();
        for (i, t) in side.iter().enumerate() {
            if map.insert(t.id.clone(), i).is_some() {
                bail!(
                    "{name} has record id '{}' twice; ids must be unique to join runs",
                    t.id
                );
            }
        }
        Ok(map)
    };
    let ia = index(a, "baseline (A)")?;
    let ib = index(b, "candidate (B)")?;
    let mut tally = Tally::default();
    let mut by_intent: BTreeMap<String, Tally> = BTreeMap::new();
    let mut regressions = Vec::new();
    let (mut cases, mut missing) = (0u64, 0u64);
    let (mut sum_a, mut sum_b) = (0.0, 0.0);
    // Baseline order keeps the output deterministic.
    for ta in a {
        let Some(&j) = ib.get(&ta.id) else { continue };
        cases += 1;
        let tb = &b[j];
        let (Some(va), Some(vb)) = (metric.get(&ta.scores), metric.get(&tb.scores)) else {
            missing += 1;
            continue;
        };
        sum_a += va;
        sum_b += vb;
        let intent = intent_key(ta);
        let slot = by_intent.entry(intent.clone()).or_default();
        if vb > va + epsilon {
            tally.wins += 1;
            slot.wins += 1;
        } else if vb < va - epsilon {
            tally.losses += 1;
            slot.losses += 1;
            regressions.push(Change {
                id: ta.id.clone(),
                intent,
                a: va,
                b: vb,
            });
        } else {
            tally.ties += 1;
            slot.ties += 1;
        }
    }
    let scored = cases - missing;
    let p_value = sign_test(tally.wins, tally.wins + tally.losses);
    let significant = p_value < alpha;
    let (verdict, reason) = if tally.wins > tally.losses && significant {
        (
            "accept",
            format!(
                "B wins {} and loses {} cases: better at p = {p_value:.3e} < {alpha}",
                tally.wins, tally.losses
            ),
        )
    } else if tally.losses > tally.wins && significant {
        (
            "reject",
            format!(
                "regression: B loses {} and wins {} cases, p = {p_value:.3e} < {alpha}",
                tally.losses, tally.wins
            ),
        )
    } else {
        ("reject", format!("no significant improvement: {} wins, {} losses, p = {p_value:.3} >= {alpha} or not better", tally.wins, tally.losses))
    };
    Ok(Comparison {
        metric,
        alpha,
        epsilon,
        cases,
        only_in_a: a.iter().filter(|t| !ib.contains_key(&t.id)).count() as u64,
        only_in_b: b.iter().filter(|t| !ia.contains_key(&t.id)).count() as u64,
        missing,
        mean_a: (scored > 0).then(|| sum_a / scored as f64),
        mean_b: (scored > 0).then(|| sum_b / scored as f64),
        tally,
        p_value,
        verdict: verdict.into(),
        reason,
        by_intent,
        regressions,
    })
}

impl Comparison {
    pub fn markdown(&self, a_name: &str, b_name: &str) -> String {
        let f = |v: Option<f64>| v.map_or("–".to_string(), |x| format!("{x:.4}"));
        let mut s = format!("# Harness comparison: {b_name} (B) vs {a_name} (A)\n\n");
        s += &format!(
            "**Verdict: {}** — {}\n\n",
            self.verdict.to_uppercase(),
            self.reason
        );
        s += &format!("| metric | cases | missing | only A | only B | mean A | mean B | wins | ties | losses | p (sign test) |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
        s += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.3e} |\n\n",
            self.metric.as_str(),
            self.cases,
            self.missing,
            self.only_in_a,
            self.only_in_b,
            f(self.mean_a),
            f(self.mean_b),
            self.tally.wins,
            self.tally.ties,
            self.tally.losses,
            self.p_value
        );
        s += "## By intent\n\n| intent | wins | ties | losses |\n|---|---|---|---|\n";
        for (k, t) in &self.by_intent {
            s += &format!("| {k} | {} | {} | {} |\n", t.wins, t.ties, t.losses);
        }
        if !self.regressions.is_empty() {
            s += "\n## Regressions (B < A)\n\n| id | intent | A | B |\n|---|---|---|---|\n";
            for c in &self.regressions {
                s += &format!("| {} | {} | {:.3} | {:.3} |\n", c.id, c.intent, c.a, c.b);
            }
        }
        s
    }
}
