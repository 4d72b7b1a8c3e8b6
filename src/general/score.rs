//! IFEval-lite: the judge's IFEval scorer (unchanged) on the held-out general prompts, reported as
//! the official four numbers — prompt- and instruction-level, strict and loose — each with its count
//! and a 95% Wilson interval. Instruction-level intervals treat a prompt's instructions as
//! independent, which they are not quite (one bad answer fails several), so they are a little narrow.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::judge::ifeval::files::Evaluated;
use crate::judge::ifeval::report::{Report, Tally};
use crate::judge::ifeval::{follow, InputExample, Mode};
use crate::judge::stats::wilson;

/// A rate with its count and interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub value: f64,
    pub correct: usize,
    pub total: usize,
    pub low: f64,
    pub high: f64,
}

impl From<Tally> for Rate {
    fn from(t: Tally) -> Rate {
        let (low, high) = wilson(t.correct as u64, t.total as u64);
        Rate {
            value: t.accuracy,
            correct: t.correct,
            total: t.total,
            low,
            high,
        }
    }
}

impl Rate {
    /// `0.512 [0.443, 0.580] (n = 200)`.
    pub fn display(&self) -> String {
        format!(
            "{:.3} [{:.3}, {:.3}] (n = {})",
            self.value, self.low, self.high, self.total
        )
    }
}

/// The four IFEval-lite numbers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IfevalLite {
    pub prompt_strict: Rate,
    pub prompt_loose: Rate,
    pub instruction_strict: Rate,
    pub instruction_loose: Rate,
}

impl IfevalLite {
    pub fn from_report(r: &Report) -> IfevalLite {
        IfevalLite {
            prompt_strict: r.strict.prompt_level.into(),
            prompt_loose: r.loose.prompt_level.into(),
            instruction_strict: r.strict.instruction_level.into(),
            instruction_loose: r.loose.instruction_level.into(),
        }
    }

    /// A markdown table row body: the four rates in the order of [`IfevalLite::HEADER`].
    pub fn row(&self) -> String {
        [
            self.prompt_strict,
            self.prompt_loose,
            self.instruction_strict,
            self.instruction_loose,
        ]
        .iter()
        .map(Rate::display)
        .collect::<Vec<_>>()
        .join(" | ")
    }

    pub const HEADER: &'static str =
        "prompt strict | prompt loose | instruction strict | instruction loose";
}

/// Scores `responses[i]` as the answer to `inputs[i]`.
pub fn ifeval_lite(inputs: &[InputExample], responses: &[String]) -> Result<IfevalLite> {
    Ok(IfevalLite::from_report(&Report::new(&evaluate(
        inputs, responses,
    )?)))
}

/// The verdicts of every prompt: `responses[i]` as the answer to `inputs[i]`.
pub fn evaluate(inputs: &[InputExample], responses: &[String]) -> Result<Vec<Evaluated>> {
    if inputs.len() != responses.len() {
        bail!(
            "{} prompts but {} responses; give one response per prompt",
            inputs.len(),
            responses.len()
        );
    }
    inputs
        .iter()
        .zip(responses)
        .map(|(input, response)| {
            let ins = input.instructions()?;
            Ok(Evaluated {
                strict: follow(&ins, response, Mode::Strict),
                loose: follow(&ins, response, Mode::Loose),
                input: input.clone(),
                response: response.clone(),
            })
        })
        .collect()
}
