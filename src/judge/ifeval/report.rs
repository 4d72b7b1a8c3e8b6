//! Accuracy summary: prompt-level and instruction-level, strict and loose, per category (the
//! id before `:`) and per instruction id, as `evaluation_lib.print_report` prints them.

use super::files::Evaluated;
use super::Mode;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Followed out of total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Tally {
    pub correct: usize,
    pub total: usize,
    pub accuracy: f64,
}

impl Tally {
    fn add(&mut self, ok: bool) {
        self.total += 1;
        self.correct += usize::from(ok);
        self.accuracy = self.correct as f64 / self.total as f64;
    }
}

/// The scores of one mode.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ModeReport {
    pub prompt_level: Tally,
    pub instruction_level: Tally,
    pub by_category: BTreeMap<String, Tally>,
    pub by_instruction: BTreeMap<String, Tally>,
}

/// The whole summary.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub prompts: usize,
    pub instructions: usize,
    pub strict: ModeReport,
    pub loose: ModeReport,
}

impl Report {
    pub fn new(evaluated: &[Evaluated]) -> Report {
        let mode_report = |mode: Mode| {
            let mut r = ModeReport::default();
            for e in evaluated {
                let list = e.verdicts(mode);
                r.prompt_level.add(list.iter().all(|&b| b));
                for (id, &ok) in e.input.instruction_id_list.iter().zip(list) {
                    r.instruction_level.add(ok);
                    let category = id.split(':').next().unwrap_or(id);
                    r.by_category
                        .entry(category.to_string())
                        .or_default()
                        .add(ok);
                    r.by_instruction.entry(id.clone()).or_default().add(ok);
                }
            }
            r
        };
        Report {
            prompts: evaluated.len(),
            instructions: evaluated
                .iter()
                .map(|e| e.input.instruction_id_list.len())
                .sum(),
            strict: mode_report(Mode::Strict),
            loose: mode_report(Mode::Loose),
        }
    }

    /// A short table for people: the four headline numbers, then per id.
    pub fn table(&self) -> String {
        let pct = |t: &Tally| {
            if t.total == 0 {
                "-".to_string()
            } else {
                format!("{:.2}%", 100.0 * t.accuracy)
            }
        };
        let mut s = String::new();
        let _ = writeln!(
            s,
            "IFEval: {} prompts, {} instructions",
            self.prompts, self.instructions
        );
        let _ = writeln!(s, "{:<48} {:>8} {:>8}", "", "strict", "loose");
        let _ = writeln!(
            s,
            "{:<48} {:>8} {:>8}",
            "prompt-level",
            pct(&self.strict.prompt_level),
            pct(&self.loose.prompt_level)
        );
        let _ = writeln!(
            s,
            "{:<48} {:>8} {:>8}",
            "instruction-level",
            pct(&self.strict.instruction_level),
            pct(&self.loose.instruction_level)
        );
        for (id, strict) in &self.strict.by_instruction {
            let loose = self
                .loose
                .by_instruction
                .get(id)
                .copied()
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "  {:<46} {:>8} {:>8}  (n={})",
                id,
                pct(strict),
                pct(&loose),
                strict.total
            );
        }
        s
    }
}
