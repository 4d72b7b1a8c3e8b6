//! Free-running opening calls: the model writes its first message itself, greedily, from the prompt
//! alone, and its calls are compared with the teacher's.
//!
//! The teacher-forced probe hands the model the teacher's tokens up to each position. Once the
//! teacher's reasoning quotes the room-state entry before the call (`hat records cat
//! --quote-evidence`), the call's product id there is a copy of a few tokens back, so the
//! teacher-forced number no longer says whether the model finds the product. Here it has to: it
//! writes the quote, then the call, with nothing from the teacher in between.

use std::collections::BTreeMap;

use anyhow::Result;
use burn::prelude::*;
use serde::Serialize;
use serde_json::{Map, Value};

use super::probe::Rate;
use crate::chat::{parse_assistant_output, ToolCallFormat};
use crate::judge::stats::paired_sign_test;
use crate::model::generation::generate::TextGenerator;
use crate::model::generation::sampling::SamplingParams;
use crate::record::{json_values, Trajectory};

/// Prompts generated together.
const BATCH: usize = 8;

/// One record's free-running opening.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FreeDecision {
    pub id: String,
    pub intent: String,
    /// The same tools with the same arguments, in the same order, as the teacher's opening message.
    pub calls_right: bool,
    /// The same tool names in the same order.
    pub tools_right: bool,
    /// What the model wrote.
    pub said: String,
}

/// A model's free-running openings on one record set.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FreeOpening {
    pub calls: Rate,
    pub tools: Rate,
    pub calls_by_intent: BTreeMap<String, Rate>,
    pub decisions: Vec<FreeDecision>,
}

/// A call as compared: the tool's name and its parsed arguments.
type Call = (String, Map<String, Value>);

/// A record's opening, ready to generate: the prompt up to the teacher's opening call, the tools
/// the call may name, and the teacher's calls.
struct Case<'a> {
    record: &'a Trajectory,
    prompt: String,
    tools: Vec<Value>,
    teacher: Vec<Call>,
}

/// Generates the opening call of every record that has one (its first message that calls tools), up to
/// `max_tokens` tokens, and compares its calls with the teacher's (read in the format the model's
/// chat template writes).
pub fn free_openings<B: Backend>(
    generator: &TextGenerator<B>,
    records: &[Trajectory],
    max_tokens: usize,
) -> Result<FreeOpening> {
    let format = generator
        .template
        .as_ref()
        .map_or(ToolCallFormat::Hermes, |t| t.tool_call_format());
    let mut cases = Vec::new();
    for r in records {
        // The opening call as the teacher-forced probe has it.
        let Some(first) = r.opening_call() else {
            continue;
        };
        let teacher: Vec<Call> = r.messages[first]
            .tool_calls
            .iter()
            .map(|c| {
                let args = c.function.parsed_arguments().unwrap_or_default();
                (c.function.name.clone(), args)
            })
            .collect();
        let tools = json_values(&r.tools)?;
        let prompt = generator.render_chat(
            &json_values(&r.messages[..first])?,
            (!tools.is_empty()).then_some(&tools[..]),
        )?;
        cases.push(Case {
            record: r,
            prompt,
            tools,
            teacher,
        });
    }
    let params = SamplingParams {
        temperature: 0.0,
        max_tokens,
        ..SamplingParams::default()
    };
    let mut out = FreeOpening::default();
    for chunk in cases.chunks(BATCH) {
        let prompts: Vec<String> = chunk.iter().map(|c| c.prompt.clone()).collect();
        let texts = generator.generate_text(&prompts, &vec![params.clone(); prompts.len()])?;
        for (case, text) in chunk.iter().zip(texts) {
            let said = said_calls(&text.text, format, &case.tools);
            let names = |calls: &[Call]| calls.iter().map(|c| c.0.clone()).collect::<Vec<_>>();
            let calls_right = said.as_deref() == Some(&case.teacher[..]);
            let tools_right = said.as_deref().map(names) == Some(names(&case.teacher));
            let intent = case.record.intent_label();
            out.calls.add(calls_right);
            out.tools.add(tools_right);
            out.calls_by_intent
                .entry(intent.clone())
                .or_default()
                .add(calls_right);
            out.decisions.push(FreeDecision {
                id: case.record.id.clone(),
                intent,
                calls_right,
                tools_right,
                said: text.text,
            });
        }
    }
    Ok(out)
}

/// The paired sign test of B against A on the calls, over the records both wrote:
/// (B right where A is wrong, A right where B is wrong, p-value).
pub fn paired(a: &FreeOpening, b: &FreeOpening) -> (u64, u64, f64) {
    fn right(f: &FreeOpening) -> impl Iterator<Item = (&str, bool)> {
        f.decisions.iter().map(|d| (d.id.as_str(), d.calls_right))
    }
    paired_sign_test(right(a), right(b))
}

/// The calls in generated text; `None` when it does not parse. Rows without tools (a room state
/// as the only prompt) check no names against a tool list.
fn said_calls(text: &str, format: ToolCallFormat, tools: &[Value]) -> Option<Vec<Call>> {
    let tools = (!tools.is_empty()).then_some(tools);
    let out = parse_assistant_output(text, format, tools).ok()?;
    Some(
        out.tool_calls
            .into_iter()
            .map(|c| (c.name, c.arguments))
            .collect(),
    )
}
