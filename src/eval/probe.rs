//! Teacher-forced decisions: on held-out teacher records, does the model's argmax reproduce the
//! teacher's tool calls token for token? No sampling and no simulator, so a few hundred records take
//! seconds, and the number isolates the decision from everything a rollout adds.
//!
//! The *opening call* (the first tool-calling turn: which skill to load, which tool to call) is made
//! from the viewer's message and the harness in the prompt alone. The same tasks under a renamed
//! harness (an HSA variant) ask for the same decision under other names, so the two sets side by side
//! measure whether a model reads the names in its prompt or recalls the ones it was trained on.
//!
//! The *final reply* (the last text turn, after the tool results) is the other half of the job: a reply
//! reproduced token for token states the price, stock or policy the tools returned, in the harness's
//! wording. By intent, a model that does not read the results shows one reply for every intent.

use std::collections::BTreeMap;

use anyhow::Result;
use burn::prelude::*;
use serde::Serialize;

use super::free_opening::FreeOpening;
use super::name_ranking::NameRanking;
use crate::judge::stats::{paired_sign_test, wilson};
use crate::model::CausalLm;
use crate::record::Trajectory;
use crate::train::trainer::score_views;
use crate::train::view::ViewBuilder;

/// `hits` of `n`, with its 95% Wilson interval when printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Rate {
    pub hits: u64,
    pub n: u64,
}

impl Rate {
    pub(crate) fn add(&mut self, hit: bool) {
        self.hits += u64::from(hit);
        self.n += 1;
    }

    pub fn value(&self) -> f64 {
        self.hits as f64 / self.n.max(1) as f64
    }

    /// `0.650 [0.581, 0.713] n=200`; `- n=0` when nothing was decided.
    pub fn display(&self) -> String {
        if self.n == 0 {
            return "- n=0".into();
        }
        let (lo, hi) = wilson(self.hits, self.n);
        format!("{:.3} [{lo:.3}, {hi:.3}] n={}", self.value(), self.n)
    }
}

/// One record's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    pub id: String,
    pub intent: String,
    pub opening_exact: Option<bool>,
    /// What the model says in the opening call's place (its teacher-forced argmax, decoded).
    pub opening_said: Option<String>,
    pub reply_exact: Option<bool>,
    /// What the model says in the final reply's place.
    pub reply_said: Option<String>,
    pub calls: usize,
    pub calls_exact: usize,
}

/// A model on one record set.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Probe {
    /// Records that yielded a view (the others are counted in `skipped`).
    pub records: usize,
    pub skipped: usize,
    /// Mean cross-entropy over the trained tokens.
    pub loss: f64,
    pub opening: Rate,
    pub calls: Rate,
    pub opening_by_intent: BTreeMap<String, Rate>,
    pub reply: Rate,
    pub reply_by_intent: BTreeMap<String, Rate>,
    pub decisions: Vec<Decision>,
    /// The opening message written by the model itself (`teacher-distill probe --free-running`).
    pub free: Option<FreeOpening>,
    /// The listed tool names ranked at the opening call (`teacher-distill probe --rank-names`).
    pub names: Option<NameRanking>,
}

/// Scores `records` teacher-forced with `model` (views built with `builder`, the model's own
/// tokenizer and chat template).
pub fn probe<B: Backend>(
    model: &CausalLm<B>,
    builder: &ViewBuilder,
    records: &[Trajectory],
    pad: u32,
    batch_tokens: usize,
    device: &B::Device,
) -> Result<Probe> {
    let mut kept = Vec::new();
    let mut views = Vec::new();
    for r in records {
        if let Ok(v) = builder.build(r) {
            kept.push(r);
            views.push(v);
        }
    }
    let scores = score_views(model, &views, pad, batch_tokens, device)?;
    let mut p = Probe {
        records: views.len(),
        skipped: records.len() - views.len(),
        ..Probe::default()
    };
    let (mut nll, mut trained) = (0.0, 0.0);
    for (r, s) in kept.iter().zip(&scores) {
        nll += s.nll;
        trained += s.trained;
        let intent = r.intent_label();
        count(
            &mut p.opening,
            &mut p.opening_by_intent,
            &intent,
            s.first_call_exact,
        );
        count(
            &mut p.reply,
            &mut p.reply_by_intent,
            &intent,
            s.final_reply_exact,
        );
        p.calls.hits += s.calls_exact as u64;
        p.calls.n += s.calls as u64;
        let decode = |argmax: &[u32]| {
            builder
                .tokenizer()
                .decode(argmax, false)
                .unwrap_or_default()
        };
        p.decisions.push(Decision {
            id: r.id.clone(),
            intent,
            opening_exact: s.first_call_exact,
            opening_said: s.first_call_exact.map(|_| decode(&s.first_call_argmax)),
            reply_exact: s.final_reply_exact,
            reply_said: s.final_reply_exact.map(|_| decode(&s.final_reply_argmax)),
            calls: s.calls,
            calls_exact: s.calls_exact,
        });
    }
    p.loss = nll / trained.max(f64::MIN_POSITIVE);
    Ok(p)
}

/// Counts a decided turn (`hit` is `None` for a record without one) overall and under its intent.
fn count(all: &mut Rate, by_intent: &mut BTreeMap<String, Rate>, intent: &str, hit: Option<bool>) {
    if let Some(hit) = hit {
        all.add(hit);
        by_intent.entry(intent.to_string()).or_default().add(hit);
    }
}

/// The paired sign test of B against A on the opening call, over the records both decided:
/// (B right where A is wrong, A right where B is wrong, p-value).
pub fn paired(a: &Probe, b: &Probe) -> (u64, u64, f64) {
    fn opening(p: &Probe) -> impl Iterator<Item = (&str, bool)> {
        p.decisions
            .iter()
            .filter_map(|d| Some((d.id.as_str(), d.opening_exact?)))
    }
    paired_sign_test(opening(a), opening(b))
}

/// The markdown table of `(model, set, probe)` rows, then the opening call and the final reply by intent.
pub fn markdown(rows: &[(String, String, Probe)]) -> String {
    let mut s = String::from(
        "| model | record set | records | opening call exact [95% CI] | all tool calls exact | final reply exact | loss |\n|---|---|---|---|---|---|---|\n",
    );
    for (model, set, p) in rows {
        s.push_str(&format!(
            "| {model} | {set} | {} | {} | {} | {} | {:.4} |\n",
            p.records,
            p.opening.display(),
            p.calls.display(),
            p.reply.display(),
            p.loss
        ));
    }
    let by_intent = |s: &mut String,
                     turn: &str,
                     of: fn(&Probe) -> &BTreeMap<String, Rate>,
                     said: Said| {
        s.push_str(&format!("\n{turn} by intent (what the model says most often in its place, teacher-forced):\n\n| model | record set | intent | {turn} exact | most common {turn} said |\n|---|---|---|---|---|\n"));
        for (model, set, p) in rows {
            for (intent, r) in of(p) {
                s.push_str(&format!(
                    "| {model} | {set} | {intent} | {} | {} |\n",
                    r.display(),
                    most_common(p, intent, said)
                ));
            }
        }
    };
    by_intent(
        &mut s,
        "opening call",
        |p| &p.opening_by_intent,
        |d| d.opening_said.as_deref(),
    );
    by_intent(
        &mut s,
        "final reply",
        |p| &p.reply_by_intent,
        |d| d.reply_said.as_deref(),
    );
    if rows.iter().any(|(_, _, p)| p.free.is_some()) {
        s.push_str("\nopening message written by the model itself (greedy, nothing from the teacher), against the teacher's calls:\n\n| model | record set | intent | calls right (tools and arguments) | tool names right |\n|---|---|---|---|---|\n");
        for (model, set, p) in rows {
            let Some(f) = &p.free else { continue };
            s.push_str(&format!(
                "| {model} | {set} | all | {} | {} |\n",
                f.calls.display(),
                f.tools.display()
            ));
            for (intent, r) in &f.calls_by_intent {
                s.push_str(&format!(
                    "| {model} | {set} | {intent} | {} | |\n",
                    r.display()
                ));
            }
        }
    }
    s
}

/// What a decision says in one turn's place.
type Said = fn(&Decision) -> Option<&str>;

/// What the model says most often in a turn's place for `intent`, with its count: `` `…` ×12/40 ``.
/// One answer for every intent is the signature of a model that ignores its input.
fn most_common(p: &Probe, intent: &str, said: Said) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for d in p.decisions.iter().filter(|d| d.intent == intent) {
        if let Some(said) = said(d) {
            *counts.entry(said).or_default() += 1;
        }
    }
    let total: usize = counts.values().sum();
    counts
        .into_iter()
        .max_by_key(|&(said, n)| (n, std::cmp::Reverse(said)))
        .map_or("-".into(), |(said, n)| {
            let said: String = said.chars().filter(|c| *c != '|').collect();
            format!("`{}` ×{n}/{total}", said.replace('\n', "⏎"))
        })
}
