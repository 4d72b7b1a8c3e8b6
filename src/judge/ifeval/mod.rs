//! IFEval (Google's `instruction_following_eval`): the 25 verifiable instructions, scored
//! strict and loose, per prompt and per instruction, as the official `evaluation_lib.py` does.
//!
//! * [`instruction`] parses `(id, kwargs)` and dispatches to one checker module per family
//!   (`keywords`, `language`, `length`, `detectable_content`, `detectable_format`,
//!   `combination`, `startend`, `change_case`, `punctuation`).
//! * The NLP the checkers need is ported, not approximated: [`punkt`] (NLTK's Punkt English
//!   sentence splitter and model), [`treebank`] (`nltk.word_tokenize`), [`langdetect`]
//!   (langdetect with its profiles, seeded as in the golden verdicts), [`text`] (Python `str`
//!   and `re` semantics), [`pyjson`] (Python's `json` module).
//! * [`files`] reads the prompt and response files and writes the official per-prompt outputs;
//!   [`report`] aggregates accuracies.
//!
//! Agreement with the official Python code is measured on real model responses by
//! `tests/ifeval.rs` against the golden verdicts in `testdata/ifeval/`.

pub mod change_case;
pub mod combination;
pub mod detectable_content;
pub mod detectable_format;
pub mod files;
pub mod instruction;
pub mod keywords;
pub mod langdetect;
pub mod language;
pub mod length;
pub mod punctuation;
pub mod punkt;
pub mod pyjson;
pub mod report;
pub mod startend;
pub mod text;
pub mod treebank;

use anyhow::{bail, Context, Result};
use instruction::Instruction;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use text::py_strip;

/// One line of `input_data.jsonl`.
#[derive(Debug, Clone, Deserialize)]
pub struct InputExample {
    pub key: i64,
    pub prompt: String,
    pub instruction_id_list: Vec<String>,
    pub kwargs: Vec<Value>,
}

impl InputExample {
    /// The checkers for this prompt's instructions, in order.
    pub fn instructions(&self) -> Result<Vec<Instruction>> {
        if self.kwargs.len() != self.instruction_id_list.len() {
            bail!(
                "instruction_id_list has {} ids but kwargs has {} entries",
                self.instruction_id_list.len(),
                self.kwargs.len()
            );
        }
        self.instruction_id_list
            .iter()
            .zip(&self.kwargs)
            .enumerate()
            .map(|(i, (id, kw))| {
                Instruction::parse(id, kw).with_context(|| format!("instruction {} ({id})", i + 1))
            })
            .collect()
    }
}

/// Strict or loose scoring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The response as it is.
    Strict,
    /// Also the response without its first and/or last line and/or without `*`: any of the 8
    /// variants following the instruction counts.
    Loose,
}

/// The 8 variants of `test_instruction_following_loose`, in the official order.
pub fn loose_variants(response: &str) -> [String; 8] {
    let lines: Vec<&str> = response.split('\n').collect();
    let join = |from: usize, to: usize| {
        if from < to {
            lines[from..to].join("\n")
        } else {
            String::new()
        }
    };
    let n = lines.len();
    let remove_first = py_strip(&join(1, n)).to_string();
    let remove_last = py_strip(&join(0, n - 1)).to_string();
    let remove_both = py_strip(&join(1, n.saturating_sub(1))).to_string();
    let unstar = |s: &str| s.replace('*', "");
    [
        response.to_string(),
        unstar(response),
        remove_first.clone(),
        remove_last.clone(),
        remove_both.clone(),
        unstar(&remove_first),
        unstar(&remove_last),
        unstar(&remove_both),
    ]
}

/// `follow_instruction_list` for one response: a blank response follows nothing.
pub fn follow(instructions: &[Instruction], response: &str, mode: Mode) -> Vec<bool> {
    let passes = |ins: &Instruction, r: &str| !py_strip(r).is_empty() && ins.check(r);
    match mode {
        Mode::Strict => instructions
            .iter()
            .map(|ins| passes(ins, response))
            .collect(),
        Mode::Loose => {
            let variants = loose_variants(response);
            instructions
                .iter()
                .map(|ins| variants.iter().any(|v| passes(ins, v)))
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn example(ids: &[&str], kwargs: Value) -> InputExample {
        InputExample {
            key: 1,
            prompt: "p".into(),
            instruction_id_list: ids.iter().map(|s| s.to_string()).collect(),
            kwargs: kwargs.as_array().unwrap().clone(),
        }
    }

    #[test]
    fn loose_variants_drop_lines_and_stars() {
        let v = loose_variants("Sure!\n**Title**\nbody\nBye");
        assert_eq!(v[1], "Sure!\nTitle\nbody\nBye");
        assert_eq!(v[2], "**Title**\nbody\nBye");
        assert_eq!(v[3], "Sure!\n**Title**\nbody");
        assert_eq!(v[4], "**Title**\nbody");
        assert_eq!(v[7], "Title\nbody");
        let single = loose_variants("one line");
        assert_eq!(single[2], "");
        assert_eq!(single[4], "");
    }

    #[test]
    fn strict_and_loose_differ_on_a_preamble() {
        let ex = example(
            &["startend:quotation", "punctuation:no_comma"],
            json!([{}, {}]),
        );
        let ins = ex.instructions().unwrap();
        let response = "Here you go:\n\"A quote without commas\"";
        assert_eq!(follow(&ins, response, Mode::Strict), [false, true]);
        assert_eq!(follow(&ins, response, Mode::Loose), [true, true]);
        assert_eq!(
            follow(&ins, "  \n ", Mode::Loose),
            [false, false],
            "blank responses follow nothing"
        );
    }

    #[test]
    fn kwargs_must_match_ids() {
        let ex = example(&["startend:quotation"], json!([]));
        assert!(format!("{:#}", ex.instructions().unwrap_err()).contains("1 ids but kwargs has 0"));
    }
}
