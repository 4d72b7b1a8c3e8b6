//! Rubric metrics for the robustness sets (definitions in docs/judge-metrics.md).
//!
//! * Tool robustness (episodes with injected tool faults and renamed or rewritten tools): ACQ, RC, TC.
//! * Prompt robustness (episodes under perturbed prompts, limits and skills): ACQ, FI, TCO.
//!
//! ACQ and RC read the correctness the judge wrote (`scores.accuracy` and `scores.effectiveness`, from
//! any judge); TC, FI and TCO are properties of the trajectory itself and are recomputed here from the
//! record through its name map, so they mean the same whichever judge scored the set.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::metric::variant_key;
use super::verifiable::episode::Episode;
use super::verifiable::{judge, TokenCounter};
use crate::record::Trajectory;

/// A rate with its numerator and denominator, so small sets show how little they say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Rate {
    pub num: u64,
    pub den: u64,
    pub rate: Option<f64>,
}

impl Rate {
    fn add(&mut self, num: u64, den: u64) {
        self.num += num;
        self.den += den;
        self.rate = (self.den > 0).then(|| self.num as f64 / self.den as f64);
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Rubric {
    pub episodes: u64,
    /// Answer correctness/quality: correct episodes / scored episodes.
    pub acq: Rate,
    /// Recovery: correct episodes / scored episodes with at least one injected fault (`meta.faults`).
    pub rc: Rate,
    /// Tool-call correctness: expected calls made by the right surface name with the right key
    /// arguments / expected calls.
    pub tc: Rate,
    /// Format/instruction following: episodes that obey the active limits / episodes.
    pub fi: Rate,
    /// Tool-call over-use: episodes with a hallucinated, malformed, redundant or unnecessary call /
    /// episodes (lower is better).
    pub tco: Rate,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RubricReport {
    pub pass_threshold: f64,
    pub overall: Rubric,
    pub by_variant: BTreeMap<String, Rubric>,
}

impl Rubric {
    fn add(&mut self, t: &Trajectory, pass: f64, counter: &TokenCounter) {
        self.episodes += 1;
        let s = &t.scores;
        // An unscored accuracy (no fact stated) leaves the verdict to effectiveness.
        let correct = s
            .effectiveness
            .map(|e| e >= pass && s.accuracy.is_none_or(|a| a >= pass));
        if let Some(c) = correct {
            self.acq.add(c as u64, 1);
            let faulted = t
                .meta
                .get("faults")
                .and_then(Value::as_array)
                .is_some_and(|f| !f.is_empty());
            if faulted {
                self.rc.add(c as u64, 1);
            }
        }
        let v = judge(t, counter);
        if let Some(d) = &v.tool_rationality.details {
            let n = |k: &str| d.get(k).and_then(Value::as_u64).unwrap_or(0);
            self.tc.add(n("matched"), n("needed"));
            let over = n("hallucinated") + n("malformed") + n("redundant") + n("unnecessary");
            self.tco.add((over > 0) as u64, 1);
        }
        self.fi.add(obeys_limits(t) as u64, 1);
    }
}

/// The reply respects the active harness: silent when silence is required, within `max_reply_chars`
/// when a limit is known, free of the task's forbidden terms.
pub fn obeys_limits(t: &Trajectory) -> bool {
    let ep = Episode::read(t);
    let silent = ep.expected.is_some_and(|e| e.silent);
    let Some(reply) = &ep.reply else { return true };
    if silent {
        return false;
    }
    if ep
        .max_reply_chars
        .is_some_and(|(max, _)| reply.chars().count() as u64 > max)
    {
        return false;
    }
    let lower = reply.to_lowercase();
    !ep.expected.is_some_and(|e| {
        e.forbidden
            .iter()
            .any(|f| !f.is_empty() && lower.contains(&f.to_lowercase()))
    })
}

/// Compute the rubric over `records`; an episode is correct when accuracy and effectiveness are both
/// at least `pass`.
pub fn rubric(records: &[Trajectory], pass: f64) -> RubricReport {
    let counter = TokenCounter::Approximate;
    let mut r = RubricReport {
        pass_threshold: pass,
        overall: Rubric::default(),
        by_variant: BTreeMap::new(),
    };
    for t in records {
        r.overall.add(t, pass, &counter);
        r.by_variant
            .entry(variant_key(t))
            .or_default()
            .add(t, pass, &counter);
    }
    r
}

impl RubricReport {
    pub fn markdown(&self, title: &str) -> String {
        let cell = |r: &Rate| match r.rate {
            Some(v) => format!("{:.3} ({}/{})", v, r.num, r.den),
            None => "–".to_string(),
        };
        let mut s = format!("# Robustness rubric: {title}\n\nCorrect = accuracy and effectiveness >= {}. Definitions: docs/judge-metrics.md.\n\n", self.pass_threshold);
        s += "| group | episodes | ACQ | RC | TC | FI | TCO (lower is better) |\n|---|---|---|---|---|---|---|\n";
        let rows = std::iter::once(("all".to_string(), &self.overall))
            .chain(self.by_variant.iter().map(|(k, v)| (k.clone(), v)));
        for (k, r) in rows {
            s += &format!(
                "| {k} | {} | {} | {} | {} | {} | {} |\n",
                r.episodes,
                cell(&r.acq),
                cell(&r.rc),
                cell(&r.tc),
                cell(&r.fi),
                cell(&r.tco)
            );
        }
        s += "\nTool robustness reads ACQ, RC and TC; prompt robustness reads ACQ, FI and TCO.\n";
        s
    }
}
