//! Aggregates of scored records: per dimension, by intent and by harness variant, with the count of
//! records a judge could not score. The view a harness operator reads after every evaluation run.

use std::collections::BTreeMap;

use serde::Serialize;

use super::metric::{intent_key, judge_error, variant_key, Metric};
use crate::record::Trajectory;

/// Mean and count of one dimension over a group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Mean {
    pub n: u64,
    pub mean: Option<f64>,
    #[serde(skip)]
    sum: f64,
}

impl Mean {
    fn add(&mut self, v: f64) {
        self.n += 1;
        self.sum += v;
        self.mean = Some(self.sum / self.n as f64);
    }
}

/// One group's aggregates.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Group {
    pub records: u64,
    /// Records whose every set dimension is at least the pass threshold (and at least one is set).
    pub passed: u64,
    pub judge_errors: u64,
    pub unscored: u64,
    pub dimensions: BTreeMap<String, Mean>,
    pub cot_length: Mean,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub pass_threshold: f64,
    pub overall: Group,
    pub by_intent: BTreeMap<String, Group>,
    pub by_variant: BTreeMap<String, Group>,
}

impl Group {
    fn add(&mut self, t: &Trajectory, pass: f64) {
        self.records += 1;
        let s = &t.scores;
        if judge_error(s).is_some() {
            self.judge_errors += 1;
        }
        let set: Vec<(Metric, f64)> = Metric::DIMENSIONS
            .iter()
            .filter_map(|m| m.get(s).map(|v| (*m, v)))
            .collect();
        if set.is_empty() {
            self.unscored += 1;
        } else if set.iter().all(|(_, v)| *v >= pass) {
            self.passed += 1;
        }
        for (m, v) in set {
            self.dimensions
                .entry(m.as_str().to_string())
                .or_default()
                .add(v);
        }
        if let Some(c) = s.cot_length {
            self.cot_length.add(c);
        }
    }
}

/// Aggregate `records`; a record passes when every dimension it has is at least `pass`.
pub fn report(records: &[Trajectory], pass: f64) -> Report {
    let mut r = Report {
        pass_threshold: pass,
        overall: Group::default(),
        by_intent: BTreeMap::new(),
        by_variant: BTreeMap::new(),
    };
    for t in records {
        r.overall.add(t, pass);
        r.by_intent.entry(intent_key(t)).or_default().add(t, pass);
        r.by_variant.entry(variant_key(t)).or_default().add(t, pass);
    }
    r
}

impl Report {
    pub fn markdown(&self, title: &str) -> String {
        let mut s = format!("# Judge report: {title}\n\n");
        s += &format!(
            "{} records, {} passed (every dimension >= {}), {} unscored, {} judge errors.\n\n",
            self.overall.records,
            self.overall.passed,
            self.pass_threshold,
            self.overall.unscored,
            self.overall.judge_errors
        );
        s += &table("all", [("all".to_string(), &self.overall)]);
        s += &table("intent", self.by_intent.iter().map(|(k, g)| (k.clone(), g)));
        s += &table(
            "harness variant",
            self.by_variant.iter().map(|(k, g)| (k.clone(), g)),
        );
        s
    }
}

fn table<'a>(what: &str, rows: impl IntoIterator<Item = (String, &'a Group)>) -> String {
    let mut s = format!("## By {what}\n\n| {what} | n | pass rate | accuracy | effectiveness | tool_rationality | skill_selection | cot_length | errors |\n|---|---|---|---|---|---|---|---|---|\n");
    for (k, g) in rows {
        let cell = |m: Option<&Mean>| match m.and_then(|m| m.mean.map(|v| (v, m.n))) {
            Some((v, n)) => format!("{v:.3} (n={n})"),
            None => "–".to_string(),
        };
        let rate = if g.records == 0 {
            0.0
        } else {
            g.passed as f64 / g.records as f64
        };
        s += &format!(
            "| {k} | {} | {rate:.3} | {} | {} | {} | {} | {} | {} |\n",
            g.records,
            cell(g.dimensions.get("accuracy")),
            cell(g.dimensions.get("effectiveness")),
            cell(g.dimensions.get("tool_rationality")),
            cell(g.dimensions.get("skill_selection")),
            cell(Some(&g.cot_length)),
            g.judge_errors + g.unscored
        );
    }
    s + "\n"
}
