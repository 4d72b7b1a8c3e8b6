//! Per-prompt IFEval-lite answers and the paired comparison of two models on them. A difference of
//! two rates on the same prompts is tested on the prompts (or instructions) where the models
//! disagree — an exact two-sided sign test on the discordant pairs (McNemar's exact test) — which is
//! far more sensitive than comparing two independent intervals, and is what DESIGN §6 asks of a
//! model-vs-model claim.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::judge::ifeval::files::Evaluated;
use crate::judge::stats::{paired_difference_interval, sign_test};

/// One answered prompt: `hat general eval --answers` writes one per line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// The IFEval row's `key`, as a string: the join key of a comparison.
    pub id: String,
    pub prompt: String,
    pub response: String,
    pub instruction_id_list: Vec<String>,
    /// Per instruction, in `instruction_id_list` order.
    pub strict: Vec<bool>,
    pub loose: Vec<bool>,
    /// Every instruction followed.
    pub prompt_strict: bool,
    pub prompt_loose: bool,
}

impl From<&Evaluated> for Answer {
    fn from(e: &Evaluated) -> Answer {
        Answer {
            id: e.input.key.to_string(),
            prompt: e.input.prompt.clone(),
            response: e.response.clone(),
            instruction_id_list: e.input.instruction_id_list.clone(),
            prompt_strict: e.strict.iter().all(|&x| x),
            prompt_loose: e.loose.iter().all(|&x| x),
            strict: e.strict.clone(),
            loose: e.loose.clone(),
        }
    }
}

impl Answer {
    /// Its pass/fail verdicts at `level`: one for the prompt, or one per instruction.
    pub fn verdicts(&self, level: Level, mode: Strictness) -> Vec<bool> {
        match (level, mode) {
            (Level::Prompt, Strictness::Strict) => vec![self.prompt_strict],
            (Level::Prompt, Strictness::Loose) => vec![self.prompt_loose],
            (Level::Instruction, Strictness::Strict) => self.strict.clone(),
            (Level::Instruction, Strictness::Loose) => self.loose.clone(),
        }
    }
}

/// The answers of one file by prompt id; an id twice is an error (the pairing would be ambiguous).
pub fn by_id<'a>(rows: &'a [Answer], name: &str) -> Result<BTreeMap<&'a str, &'a Answer>> {
    let mut m = BTreeMap::new();
    for r in rows {
        if m.insert(r.id.as_str(), r).is_some() {
            bail!("prompt id {:?} appears twice in {name}", r.id);
        }
    }
    Ok(m)
}

impl crate::jsonl::Keyed for Answer {
    fn key(&self) -> Option<&str> {
        Some(&self.id)
    }
}

/// What is compared: whole prompts or single instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Prompt,
    Instruction,
}

/// IFEval's two ways of checking a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strictness {
    Strict,
    Loose,
}

/// B against A on the cases both answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairedComparison {
    pub level: Level,
    pub mode: Strictness,
    /// Paired cases (prompts, or instructions of prompts in both files).
    pub cases: usize,
    pub only_in_a: usize,
    pub only_in_b: usize,
    pub rate_a: f64,
    pub rate_b: f64,
    /// B passes where A fails.
    pub wins: u64,
    /// B fails where A passes.
    pub losses: u64,
    pub ties: u64,
    /// `rate_b − rate_a`, with its 95% paired interval ([`paired_difference_interval`]; at the
    /// instruction level it treats a prompt's instructions as independent, so it is a little narrow).
    pub difference: f64,
    pub difference_low: f64,
    pub difference_high: f64,
    /// Exact two-sided sign test on wins vs losses.
    pub p_value: f64,
}

impl PairedComparison {
    pub fn markdown(&self, a: &str, b: &str) -> String {
        format!(
            "| level | mode | n | {a} | {b} | B − A [95% CI] | B wins | B losses | ties | p (sign test) |\n\
             |---|---|---|---|---|---|---|---|---|---|\n\
             | {:?} | {:?} | {} | {:.3} | {:.3} | {:+.3} [{:+.3}, {:+.3}] | {} | {} | {} | {:.4} |",
            self.level,
            self.mode,
            self.cases,
            self.rate_a,
            self.rate_b,
            self.difference,
            self.difference_low,
            self.difference_high,
            self.wins,
            self.losses,
            self.ties,
            self.p_value
        )
    }
}

/// Joins `a` and `b` by prompt id ([`by_id`]) and tallies, case by case, where B passes and A fails
/// and the reverse.
pub fn compare(
    a: &[Answer],
    b: &[Answer],
    level: Level,
    mode: Strictness,
) -> Result<PairedComparison> {
    let (a, b) = (by_id(a, "A")?, by_id(b, "B")?);
    let (mut wins, mut losses, mut ties) = (0u64, 0u64, 0u64);
    let (mut pass_a, mut pass_b, mut cases) = (0usize, 0usize, 0usize);
    for (id, ra) in &a {
        let Some(rb) = b.get(id) else { continue };
        if ra.instruction_id_list != rb.instruction_id_list {
            bail!("prompt id {id:?} has different instructions in A and B: not the same prompt");
        }
        for (x, y) in ra
            .verdicts(level, mode)
            .into_iter()
            .zip(rb.verdicts(level, mode))
        {
            cases += 1;
            pass_a += usize::from(x);
            pass_b += usize::from(y);
            match (x, y) {
                (false, true) => wins += 1,
                (true, false) => losses += 1,
                _ => ties += 1,
            }
        }
    }
    if cases == 0 {
        bail!("A and B share no prompt id: nothing to compare");
    }
    let (difference_low, difference_high) = paired_difference_interval(wins, losses, cases as u64);
    Ok(PairedComparison {
        level,
        mode,
        cases,
        only_in_a: a.keys().filter(|k| !b.contains_key(*k)).count(),
        only_in_b: b.keys().filter(|k| !a.contains_key(*k)).count(),
        rate_a: pass_a as f64 / cases as f64,
        rate_b: pass_b as f64 / cases as f64,
        difference: (pass_b as f64 - pass_a as f64) / cases as f64,
        difference_low,
        difference_high,
        wins,
        losses,
        ties,
        p_value: sign_test(wins, wins + losses),
    })
}
