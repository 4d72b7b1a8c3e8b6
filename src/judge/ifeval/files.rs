//! Reading IFEval's two input files and writing the official per-prompt result files.
//!
//! Inputs are `input_data.jsonl` (`key`, `prompt`, `instruction_id_list`, `kwargs`) and a
//! response file (`prompt`, `response`) matched to the inputs by exact prompt text, as in
//! `evaluation_lib.read_prompt_to_response_dict` (a repeated prompt: the last response wins).
//! Both go through the shared JSONL reader, so a bad line is reported as `file:line:column`, or
//! set aside with `--on-error skip`.

use super::instruction::Instruction;
use super::pyjson::dumps;
use super::{follow, InputExample, Mode};
use crate::jsonl::{Keyed, LineReader, OnError, Records, Rejects};
use anyhow::{bail, Context, Result};
use rayon::prelude::*;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::Path;

impl Keyed for InputExample {
    fn key(&self) -> Option<&str> {
        None
    }
}

/// One line of a response file.
#[derive(Debug, Deserialize)]
struct ResponseRecord {
    prompt: String,
    response: String,
}

impl Keyed for ResponseRecord {
    fn key(&self) -> Option<&str> {
        None
    }
}

/// A prompt whose instructions parsed.
pub struct Prepared {
    pub input: InputExample,
    pub instructions: Vec<Instruction>,
}

/// Reads the prompts and builds their checkers. A line with an unknown id or bad kwargs is an
/// error naming file, line and instruction (or, with `OnError::Skip`, left out and counted).
pub fn read_inputs(path: &str, on_error: OnError) -> Result<(Vec<Prepared>, u64)> {
    let mut records: Records<InputExample> = Records::new(LineReader::open(path)?, on_error);
    let mut out = Vec::new();
    while let Some(next) = records.next_numbered() {
        let (line, input) = next?;
        match input.instructions() {
            Ok(instructions) => out.push(Prepared {
                input,
                instructions,
            }),
            Err(e) => records.reject(&line, format!("prompt key {}: {e:#}", input.key))?,
        }
    }
    Ok((out, records.stats().rejected))
}

/// Reads a response file into prompt → response.
pub fn read_responses(
    path: &str,
    on_error: OnError,
    rejects: Option<&Path>,
) -> Result<(HashMap<String, String>, u64)> {
    let mut records: Records<ResponseRecord> = Records::new(LineReader::open(path)?, on_error);
    if let Some(r) = rejects {
        records = records.with_rejects(Rejects::create(r)?);
    }
    let mut map = HashMap::new();
    while let Some(next) = records.next_numbered() {
        let (_, r) = next?;
        map.insert(r.prompt, r.response);
    }
    Ok((map, records.stats().rejected))
}

/// A prompt with its response and both verdict lists.
pub struct Evaluated {
    pub input: InputExample,
    pub response: String,
    pub strict: Vec<bool>,
    pub loose: Vec<bool>,
}

impl Evaluated {
    pub fn verdicts(&self, mode: Mode) -> &[bool] {
        match mode {
            Mode::Strict => &self.strict,
            Mode::Loose => &self.loose,
        }
    }

    /// The official output line (`evaluation_lib.write_outputs`): attributes in alphabetical
    /// order, `json.dumps` formatting.
    pub fn output_line(&self, mode: Mode) -> String {
        let list = self.verdicts(mode);
        let mut m = Map::new();
        m.insert(
            "follow_all_instructions".into(),
            Value::Bool(list.iter().all(|&b| b)),
        );
        m.insert("follow_instruction_list".into(), Value::from(list.to_vec()));
        m.insert(
            "instruction_id_list".into(),
            Value::from(self.input.instruction_id_list.clone()),
        );
        m.insert("prompt".into(), Value::String(self.input.prompt.clone()));
        m.insert("response".into(), Value::String(self.response.clone()));
        dumps(&Value::Object(m))
    }
}

/// Scores every prompt (in parallel, results in input order). A prompt without a response is
/// an error, as in the official code, unless `skip_missing`; the second value counts those
/// skipped.
pub fn evaluate(
    prepared: Vec<Prepared>,
    responses: &HashMap<String, String>,
    skip_missing: bool,
) -> Result<(Vec<Evaluated>, usize)> {
    let missing: Vec<i64> = prepared
        .iter()
        .filter(|p| !responses.contains_key(&p.input.prompt))
        .map(|p| p.input.key)
        .collect();
    if !missing.is_empty() && !skip_missing {
        let shown: Vec<String> = missing.iter().take(10).map(|k| k.to_string()).collect();
        bail!(
            "{} prompt(s) have no response with exactly the same prompt text (keys {}{}); use --skip-missing to score the rest",
            missing.len(),
            shown.join(", "),
            if missing.len() > 10 { ", ..." } else { "" }
        );
    }
    let evaluated = prepared
        .into_par_iter()
        .filter_map(|p| {
            let response = responses.get(&p.input.prompt)?.clone();
            Some(Evaluated {
                strict: follow(&p.instructions, &response, Mode::Strict),
                loose: follow(&p.instructions, &response, Mode::Loose),
                input: p.input,
                response,
            })
        })
        .collect();
    Ok((evaluated, missing.len()))
}

/// Writes `eval_results_strict.jsonl` and `eval_results_loose.jsonl` into `dir`.
pub fn write_outputs(dir: &Path, evaluated: &[Evaluated]) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create output directory {}", dir.display()))?;
    for (mode, name) in [
        (Mode::Strict, "eval_results_strict.jsonl"),
        (Mode::Loose, "eval_results_loose.jsonl"),
    ] {
        let path = dir.join(name);
        let mut text = String::new();
        for e in evaluated {
            text.push_str(&e.output_line(mode));
            text.push('\n');
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
