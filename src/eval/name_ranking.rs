//! Which listed tool does the model rank first at the opening call? (`teacher-distill probe
//! --rank-names`.)
//!
//! At the point where the teacher's opening call writes its tool's name (the prompt, then the
//! teacher's message up to `<tool_call>\n{"name": "`), each tool the record lists is scored by the
//! log-likelihood of its whole name and the name's end. The right name is the teacher's. Two
//! rankings: by the name's total log-probability (what sampling the name would prefer) and by its
//! mean per token (so a long name is not penalised for its length: whether the later pieces of a name,
//! `_skill_body`, carry what the first token does not). Unlike a greedy choice among listed names
//! (`--tool-names listed`), nothing here is decided by the first token alone.
//!
//! Records whose opening calls a *renamed* tool (the variant's name for it differs from the
//! original's) are counted apart: there the name exists only in the prompt, and ranking it first is
//! reading it.

use anyhow::{bail, Result};
use burn::prelude::*;
use serde::Serialize;

use super::probe::Rate;
use crate::chat::{ChatTemplate, RenderInput, ToolCallFormat};
use crate::judge::stats::paired_sign_test;
use crate::model::generation::generate::TextGenerator;
use crate::model::generation::sampling::log_softmax_at;
use crate::record::{json_values, Trajectory};

/// One record's ranking.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ranked {
    pub id: String,
    /// The teacher's name, and whether the variant renamed that tool.
    pub right: String,
    pub renamed: bool,
    /// The first name by total and by mean log-probability.
    pub first_by_total: String,
    pub first_by_mean: String,
    /// The right name's place by total log-probability (1 = first) among `listed` names.
    pub rank_by_total: usize,
    pub listed: usize,
}

/// A model's rankings on one record set.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NameRanking {
    pub by_total: Rate,
    pub by_mean: Rate,
    /// The same on records whose opening calls a renamed tool.
    pub renamed_by_total: Rate,
    pub renamed_by_mean: Rate,
    pub records: Vec<Ranked>,
}

impl NameRanking {
    pub fn summary(&self) -> String {
        format!(
            "right name ranked first by total {}, by mean {}; renamed tools: by total {}, by mean {}",
            self.by_total.display(),
            self.by_mean.display(),
            self.renamed_by_total.display(),
            self.renamed_by_mean.display()
        )
    }
}

/// Ranks the listed tool names at the opening call of every record that has one (the names written
/// in the format of the model's chat template).
pub fn rank_names<B: Backend>(
    generator: &TextGenerator<B>,
    records: &[Trajectory],
) -> Result<NameRanking> {
    let Some(template) = generator.template.as_ref() else {
        bail!("the model directory has no chat template");
    };
    let format = template.tool_call_format();
    let mut out = NameRanking::default();
    for r in records {
        let Some(first) = r.opening_call() else {
            continue;
        };
        let right = r.messages[first].tool_calls[0].function.name.clone();
        let listed: Vec<String> = r.tools.iter().map(|t| t.function.name.clone()).collect();
        if !listed.contains(&right) {
            continue; // a recorded stale call: no listed name is right
        }
        let scores = score_names(generator, template, format, r, first, &listed)?;
        let best = |key: fn(&(f64, usize)) -> f64| {
            let i = (0..listed.len())
                .max_by(|&a, &b| key(&scores[a]).total_cmp(&key(&scores[b])))
                .unwrap_or(0);
            listed[i].clone()
        };
        let first_by_total = best(|s| s.0);
        let first_by_mean = best(|s| s.0 / s.1.max(1) as f64);
        let right_at = listed.iter().position(|n| *n == right).unwrap_or(0);
        let rank_by_total = 1 + scores.iter().filter(|s| s.0 > scores[right_at].0).count();
        let renamed = r
            .names()
            .tools
            .iter()
            .any(|(c, s)| *s == right && *c != right);
        out.by_total.add(first_by_total == right);
        out.by_mean.add(first_by_mean == right);
        if renamed {
            out.renamed_by_total.add(first_by_total == right);
            out.renamed_by_mean.add(first_by_mean == right);
        }
        out.records.push(Ranked {
            id: r.id.clone(),
            right,
            renamed,
            first_by_total,
            first_by_mean,
            rank_by_total,
            listed: listed.len(),
        });
    }
    Ok(out)
}

/// (total log-probability, tokens) of each listed name and its end, at the opening call's name.
fn score_names<B: Backend>(
    generator: &TextGenerator<B>,
    template: &ChatTemplate,
    format: ToolCallFormat,
    r: &Trajectory,
    first: usize,
    listed: &[String],
) -> Result<Vec<(f64, usize)>> {
    let tools = json_values(&r.tools)?;
    let rendered = template.render(&RenderInput {
        // As training renders it (a call's message without content gets an empty one).
        messages: r.messages[..=first]
            .iter()
            .map(|m| m.template_json())
            .collect::<Result<_, _>>()?,
        tools: (!tools.is_empty()).then_some(tools),
        ..RenderInput::default()
    })?;
    // The opening message's first call: the last assistant turn's first name.
    let turn = rendered.rfind("<|im_start|>assistant").unwrap_or(0);
    let Some(at) = rendered[turn..].find(format.name_open()) else {
        bail!("record {}: no tool call in the rendered opening", r.id);
    };
    let cut = &rendered[..turn + at + format.name_open().len()];
    let candidates = listed
        .iter()
        .map(|n| generator.encode(&format!("{cut}{n}{}", format.name_end())))
        .collect::<Result<Vec<_>>>()?;
    // Score from where the candidates part (a name's first piece may hold the quote before it).
    // (At least one token of each candidate is scored: with one listed name, its last.)
    let common = candidates
        .iter()
        .map(|c| common_prefix(c, &candidates[0]))
        .min()
        .unwrap_or(0)
        .min(candidates[0].len() - 1)
        .max(1);
    let model = generator.model();
    let mut cache = model.new_cache();
    let logits = model.prefill(&candidates[0][..common], &mut cache)?;
    let mut scores = Vec::with_capacity(listed.len());
    for c in &candidates {
        let tail = &c[common..];
        let mut total = f64::from(log_softmax_at(&logits, tail[0] as usize));
        let mut state = cache.clone();
        for w in tail.windows(2) {
            let next = model.decode_step(&[w[0]], std::slice::from_mut(&mut state))?;
            total += f64::from(log_softmax_at(&next[0], w[1] as usize));
        }
        scores.push((total, tail.len()));
    }
    Ok(scores)
}

/// The paired sign test of B against A on records whose opening calls a renamed tool, ranked by
/// total and by mean log-probability: (B first where A is not, the reverse, p-value) for each.
pub fn paired_renamed(a: &NameRanking, b: &NameRanking) -> [(u64, u64, f64); 2] {
    fn first(n: &NameRanking, by_mean: bool) -> impl Iterator<Item = (&str, bool)> {
        n.records.iter().filter(|r| r.renamed).map(move |r| {
            let said = if by_mean {
                &r.first_by_mean
            } else {
                &r.first_by_total
            };
            (r.id.as_str(), *said == r.right)
        })
    }
    [false, true].map(|by_mean| paired_sign_test(first(a, by_mean), first(b, by_mean)))
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}
