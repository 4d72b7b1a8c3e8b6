//! Calibration of a judge against human labels: join human labels (CSV `id,label[,intent]`) with judged
//! records by id, and report agreement, Cohen's κ, Spearman and Pearson, the confusion matrix and a
//! per-intent breakdown (the set recommended in eval_serve_harness.md §2.1: κ exposes drift in the
//! judge's positive rate that raw agreement hides).
//!
//! Labels are numbers. Binary labels (every label 0 or 1) are compared with `score >= threshold`;
//! graded labels (integers lo..=hi, e.g. 1–5) with the judge's [0, 1] score mapped onto the same
//! scale, `lo + round(score · (hi − lo))`. Correlations use the raw score against the label.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::metric::{intent_key, Metric};
use super::stats::{cohen_kappa, confusion, pearson, spearman};
use crate::record::Trajectory;

/// One human label.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub id: String,
    pub label: f64,
    pub intent: Option<String>,
}

/// Read `id,label[,intent]` with a header row; errors name the file, line and field.
pub fn read_labels(path: &Path) -> Result<Vec<Label>> {
    let name = path.display();
    let mut rd = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_path(path)
        .with_context(|| format!("cannot open labels '{name}'"))?;
    let headers = rd
        .headers()
        .with_context(|| format!("{name}: cannot read the header row"))?
        .clone();
    let col = |want: &str| headers.iter().position(|h| h.eq_ignore_ascii_case(want));
    let (Some(id_col), Some(label_col)) = (col("id"), col("label")) else {
        bail!("{name}: the header must name columns 'id' and 'label' (and optionally 'intent'), found {:?}", headers.iter().collect::<Vec<_>>());
    };
    let intent_col = col("intent");
    let mut out = Vec::new();
    let mut seen: HashMap<String, u64> = HashMap::new();
    for row in rd.records() {
        let row = row.with_context(|| format!("{name}: malformed CSV row"))?;
        let line = row.position().map_or(0, |p| p.line());
        let id = row.get(id_col).unwrap_or("").to_string();
        if id.is_empty() {
            bail!("{name}:{line}: field 'id' is empty");
        }
        if let Some(first) = seen.insert(id.clone(), line) {
            bail!("{name}:{line}: id '{id}' already labelled on line {first}");
        }
        let raw = row.get(label_col).unwrap_or("");
        let label: f64 = raw
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .with_context(|| format!("{name}:{line}: field 'label' is '{raw}', not a number"))?;
        let intent = intent_col
            .and_then(|c| row.get(c))
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        out.push(Label { id, label, intent });
    }
    Ok(out)
}

/// Agreement statistics over one set of joined pairs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agreement {
    pub n: u64,
    pub agreement: Option<f64>,
    pub kappa: Option<f64>,
    pub spearman: Option<f64>,
    pub pearson: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    pub dimension: Metric,
    /// `"binary"` or `"graded lo..hi"`.
    pub scale: String,
    pub threshold: f64,
    pub labels: u64,
    /// Labelled ids with no judged record.
    pub missing: Vec<String>,
    /// Labelled records the judge left without this dimension (e.g. endpoint errors).
    pub unscored: Vec<String>,
    pub overall: Agreement,
    /// Category values, the row/column order of `confusion` (rows human, columns judge).
    pub categories: Vec<f64>,
    pub confusion: Vec<Vec<u64>>,
    pub by_intent: BTreeMap<String, Agreement>,
}

fn agreement(human: &[f64], judged: &[f64], predicted: &[f64]) -> Agreement {
    let n = human.len();
    let agree = human.iter().zip(predicted).filter(|(a, b)| a == b).count();
    // κ over exact category values; the labels are small integers, so bit patterns identify them.
    let h: Vec<u64> = human.iter().map(|v| v.to_bits()).collect();
    let p: Vec<u64> = predicted.iter().map(|v| v.to_bits()).collect();
    Agreement {
        n: n as u64,
        agreement: (n > 0).then(|| agree as f64 / n as f64),
        kappa: cohen_kappa(&h, &p),
        spearman: spearman(judged, human),
        pearson: pearson(judged, human),
    }
}

/// Join `labels` with `records` on id and compute the statistics for `dimension`.
pub fn calibrate(
    labels: &[Label],
    records: &[Trajectory],
    dimension: Metric,
    threshold: f64,
) -> Result<Calibration> {
    let by_id: HashMap<&str, &Trajectory> = records.iter().map(|t| (t.id.as_str(), t)).collect();
    let binary = labels.iter().all(|l| l.label == 0.0 || l.label == 1.0);
    let (lo, hi) = labels
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), l| {
            (lo.min(l.label), hi.max(l.label))
        });
    if !binary && labels.iter().any(|l| l.label.fract() != 0.0) {
        bail!(
            "labels must be 0/1 or integers on a graded scale (e.g. 1-5); found a fractional label"
        );
    }
    let predict = |score: f64| -> f64 {
        if binary {
            if score >= threshold {
                1.0
            } else {
                0.0
            }
        } else {
            lo + (score.clamp(0.0, 1.0) * (hi - lo)).round()
        }
    };
    let (mut missing, mut unscored) = (Vec::new(), Vec::new());
    let mut groups: BTreeMap<String, (Vec<f64>, Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let (mut human, mut judged, mut predicted) = (Vec::new(), Vec::new(), Vec::new());
    for l in labels {
        let Some(t) = by_id.get(l.id.as_str()) else {
            missing.push(l.id.clone());
            continue;
        };
        let Some(score) = dimension.get(&t.scores) else {
            unscored.push(l.id.clone());
            continue;
        };
        let p = predict(score);
        human.push(l.label);
        judged.push(score);
        predicted.push(p);
        let g = groups
            .entry(l.intent.clone().unwrap_or_else(|| intent_key(t)))
            .or_default();
        g.0.push(l.label);
        g.1.push(score);
        g.2.push(p);
    }
    let mut categories: Vec<f64> = human.iter().chain(&predicted).copied().collect();
    categories.sort_by(f64::total_cmp);
    categories.dedup();
    Ok(Calibration {
        dimension,
        scale: if binary {
            "binary".into()
        } else {
            format!("graded {lo}..{hi}")
        },
        threshold,
        labels: labels.len() as u64,
        missing,
        unscored,
        overall: agreement(&human, &judged, &predicted),
        confusion: confusion(&categories, &human, &predicted),
        categories,
        by_intent: groups
            .into_iter()
            .map(|(k, (h, j, p))| (k, agreement(&h, &j, &p)))
            .collect(),
    })
}

impl Calibration {
    pub fn markdown(&self) -> String {
        let f = |v: Option<f64>| v.map_or("–".to_string(), |x| format!("{x:.4}"));
        let mut s = format!(
            "# Judge calibration: {}\n\nScale {}, threshold {}. {} labels, {} joined, {} without a judged record, {} unscored by the judge.\n\n",
            self.dimension.as_str(), self.scale, self.threshold, self.labels, self.overall.n, self.missing.len(), self.unscored.len()
        );
        s += "| group | n | agreement | Cohen's κ | Spearman ρ | Pearson r |\n|---|---|---|---|---|---|\n";
        let rows = std::iter::once(("all".to_string(), &self.overall))
            .chain(self.by_intent.iter().map(|(k, a)| (k.clone(), a)));
        for (k, a) in rows {
            s += &format!(
                "| {k} | {} | {} | {} | {} | {} |\n",
                a.n,
                f(a.agreement),
                f(a.kappa),
                f(a.spearman),
                f(a.pearson)
            );
        }
        s += "\n## Confusion matrix (rows: human, columns: judge)\n\n|   |";
        for c in &self.categories {
            s += &format!(" {c} |");
        }
        s += "\n|---|";
        s += &"---|".repeat(self.categories.len());
        s += "\n";
        for (c, row) in self.categories.iter().zip(&self.confusion) {
            s += &format!("| **{c}** |");
            for n in row {
                s += &format!(" {n} |");
            }
            s += "\n";
        }
        s
    }
}
