//! Schema-guided tool calls: how `tool_choice: "required"` or a named function is honoured by a model
//! that would not reliably write a call on its own (a small or untrained one).
//!
//! The call is laid out from the tool's JSON schema in the server's tool-call format — fixed markup and
//! keys are forced, while the *model* picks the tool (for `"required"`), enum and boolean values (the
//! alternative whose first token it scores highest) and writes free values token by token. A free value
//! is sampled from the model's full distribution and ends where the model first leaves the value's
//! alphabet (a quote or newline in a string, a non-digit in a number) or at a length cap. It is the
//! structured-output idea of vLLM's guided decoding (named tool choice via a JSON schema) reduced to the
//! shapes tool schemas use: flat objects of strings, numbers, booleans and enums.

use std::collections::VecDeque;

use serde_json::Value;
use tokenizers::Tokenizer;

use crate::chat::ToolCallFormat;
use crate::model::generation::sampling::{log_softmax_at, Sampled, Sampler};
use crate::record::Tool;

/// The alphabet of a free value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// Inside a JSON string: no quote, backslash, control character or markup.
    JsonString,
    /// An XML parameter body: no `<` and no newline.
    XmlText,
    Integer,
    Number,
}

impl ValueKind {
    const ALL: [ValueKind; 4] = [
        ValueKind::JsonString,
        ValueKind::XmlText,
        ValueKind::Integer,
        ValueKind::Number,
    ];

    fn admits(self, text: &str) -> bool {
        if text.is_empty() || text.contains('\u{FFFD}') {
            return false;
        }
        match self {
            ValueKind::JsonString => !text
                .chars()
                .any(|c| c == '"' || c == '\\' || c == '<' || c.is_control()),
            ValueKind::XmlText => !text.chars().any(|c| c == '<' || c.is_control()),
            ValueKind::Integer => text.bytes().all(|b| b.is_ascii_digit()),
            ValueKind::Number => text.bytes().all(|b| b.is_ascii_digit() || b == b'.'),
        }
    }

    /// Length cap in tokens; keeps a rambling model's arguments short.
    fn max_tokens(self) -> usize {
        match self {
            ValueKind::JsonString | ValueKind::XmlText => 12,
            ValueKind::Integer | ValueKind::Number => 4,
        }
    }

    fn min_tokens(self) -> usize {
        match self {
            ValueKind::JsonString | ValueKind::XmlText => 0,
            ValueKind::Integer | ValueKind::Number => 1,
        }
    }
}

/// Which tokens each value kind admits; built once per tokenizer.
pub struct TokenTable {
    admitted: Vec<[bool; 4]>,
}

impl TokenTable {
    pub fn new(tok: &Tokenizer, vocab_size: usize) -> TokenTable {
        let admitted = (0..vocab_size as u32)
            .map(|id| {
                let text = tok.decode(&[id], true).unwrap_or_default();
                ValueKind::ALL.map(|k| k.admits(&text))
            })
            .collect();
        TokenTable { admitted }
    }

    fn admits(&self, kind: ValueKind, id: u32) -> bool {
        let k = ValueKind::ALL.iter().position(|x| *x == kind).unwrap_or(0);
        self.admitted.get(id as usize).is_some_and(|a| a[k])
    }
}

#[derive(Debug, Clone)]
enum Segment {
    Literal(Vec<u32>),
    /// Alternatives, each a literal followed by what comes after choosing it.
    Choice(Vec<(Vec<u32>, Vec<Segment>)>),
    Value(ValueKind),
}

/// Text-level layout before tokenization.
enum Piece {
    Text(String),
    Value(ValueKind),
    Choice(Vec<(String, Vec<Piece>)>),
}

/// The per-sequence state of a guided tool call.
#[derive(Debug, Clone)]
pub struct Guide {
    segments: VecDeque<Segment>,
    forced: VecDeque<u32>,
    /// The free value being written and the tokens it has so far.
    value: Option<(ValueKind, usize)>,
}

impl Guide {
    /// A guide for one call to `only` (a named `tool_choice`) or to any of `tools` (`"required"`).
    pub fn tool_call(
        tok: &Tokenizer,
        format: ToolCallFormat,
        tools: &[Tool],
        only: Option<&str>,
    ) -> Result<Guide, String> {
        let candidates: Vec<&Tool> = match only {
            Some(name) => {
                let t = tools
                    .iter()
                    .find(|t| t.function.name == name)
                    .ok_or_else(|| {
                        format!("tool_choice names {name:?}, which is not in `tools`")
                    })?;
                vec![t]
            }
            None => tools.iter().collect(),
        };
        if candidates.is_empty() {
            return Err("tool_choice \"required\" needs at least one tool in `tools`".into());
        }
        let sep = match format {
            ToolCallFormat::Hermes => "\", \"arguments\": {",
            ToolCallFormat::Qwen3Xml => ">\n",
        };
        let alternatives = candidates
            .iter()
            .map(|t| {
                let mut rest = vec![Piece::Text(sep.to_string())];
                rest.extend(arguments(format, &t.function.parameters));
                rest.push(Piece::Text(match format {
                    ToolCallFormat::Hermes => "}}\n</tool_call>".into(),
                    ToolCallFormat::Qwen3Xml => "</function>\n</tool_call>".into(),
                }));
                (t.function.name.clone(), rest)
            })
            .collect();
        let pieces = vec![
            Piece::Text(format.name_open().into()),
            Piece::Choice(alternatives),
        ];
        Ok(Guide {
            segments: encode(tok, pieces)?.into(),
            forced: VecDeque::new(),
            value: None,
        })
    }

    /// The next token given the model's logits; `None` once the call is complete.
    pub fn next(
        &mut self,
        logits: &[f32],
        sampler: &mut Sampler,
        table: &TokenTable,
    ) -> Option<Sampled> {
        loop {
            if let Some(token) = self.forced.pop_front() {
                let logprob = log_softmax_at(logits, token as usize);
                return Some(Sampled { token, logprob });
            }
            if let Some((kind, n)) = self.value {
                if n < kind.max_tokens() {
                    let s = sampler.sample(logits);
                    if table.admits(kind, s.token) {
                        self.value = Some((kind, n + 1));
                        return Some(s);
                    }
                    if n < kind.min_tokens() {
                        let token = best_admitted(logits, |id| table.admits(kind, id))?;
                        self.value = Some((kind, n + 1));
                        let logprob = log_softmax_at(logits, token as usize);
                        return Some(Sampled { token, logprob });
                    }
                }
                self.value = None;
                continue;
            }
            match self.segments.pop_front()? {
                Segment::Literal(ids) => self.forced = ids.into(),
                Segment::Value(kind) => self.value = Some((kind, 0)),
                Segment::Choice(alts) => {
                    let pick = alts
                        .iter()
                        .enumerate()
                        .max_by(|a, b| {
                            let score = |ids: &Vec<u32>| {
                                ids.first()
                                    .and_then(|&i| logits.get(i as usize))
                                    .copied()
                                    .unwrap_or(f32::MIN)
                            };
                            score(&a.1 .0)
                                .total_cmp(&score(&b.1 .0))
                                .then(b.0.cmp(&a.0))
                        })
                        .map(|(i, _)| i)?;
                    let (ids, rest) = alts.into_iter().nth(pick)?;
                    for s in rest.into_iter().rev() {
                        self.segments.push_front(s);
                    }
                    self.forced = ids.into();
                }
            }
        }
    }
}

fn best_admitted(logits: &[f32], admits: impl Fn(u32) -> bool) -> Option<u32> {
    (0..logits.len() as u32)
        .filter(|&id| admits(id))
        .max_by(|&a, &b| logits[a as usize].total_cmp(&logits[b as usize]))
}

/// The argument layout of a tool's parameters schema: its required properties (all properties when
/// none is required), in schema order.
fn arguments(format: ToolCallFormat, schema: &Value) -> Vec<Piece> {
    let props = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let keys: Vec<(&String, &Value)> = props
        .map(|p| {
            p.iter()
                .filter(|(k, _)| required.is_empty() || required.contains(&k.as_str()))
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    for (i, (key, prop)) in keys.into_iter().enumerate() {
        match format {
            ToolCallFormat::Hermes => {
                let sep = if i == 0 { "" } else { ", " };
                out.push(Piece::Text(format!(
                    "{sep}{}: ",
                    Value::String(key.clone())
                )));
                out.extend(json_value(prop));
            }
            ToolCallFormat::Qwen3Xml => {
                out.push(Piece::Text(format!("<parameter={key}>\n")));
                out.extend(xml_value(prop));
                out.push(Piece::Text("\n</parameter>\n".into()));
            }
        }
    }
    out
}

fn schema_type(prop: &Value) -> &str {
    match prop.get("type") {
        Some(Value::String(s)) => s,
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ => "string",
    }
}

fn enum_choice(prop: &Value, show: impl Fn(&Value) -> String) -> Option<Piece> {
    let values = prop.get("enum")?.as_array()?;
    (!values.is_empty())
        .then(|| Piece::Choice(values.iter().map(|v| (show(v), Vec::new())).collect()))
}

fn json_value(prop: &Value) -> Vec<Piece> {
    if let Some(choice) = enum_choice(prop, Value::to_string) {
        return vec![choice];
    }
    match schema_type(prop) {
        "string" => vec![
            Piece::Text("\"".into()),
            Piece::Value(ValueKind::JsonString),
            Piece::Text("\"".into()),
        ],
        "integer" => vec![Piece::Value(ValueKind::Integer)],
        "number" => vec![Piece::Value(ValueKind::Number)],
        "boolean" => vec![bool_choice()],
        "array" => vec![Piece::Text("[]".into())],
        "object" => vec![Piece::Text("{}".into())],
        _ => vec![Piece::Text("null".into())],
    }
}

fn xml_value(prop: &Value) -> Vec<Piece> {
    let raw = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    if let Some(choice) = enum_choice(prop, raw) {
        return vec![choice];
    }
    match schema_type(prop) {
        "integer" => vec![Piece::Value(ValueKind::Integer)],
        "number" => vec![Piece::Value(ValueKind::Number)],
        "boolean" => vec![bool_choice()],
        "array" => vec![Piece::Text("[]".into())],
        "object" => vec![Piece::Text("{}".into())],
        _ => vec![Piece::Value(ValueKind::XmlText)],
    }
}

fn bool_choice() -> Piece {
    Piece::Choice(vec![
        ("true".into(), Vec::new()),
        ("false".into(), Vec::new()),
    ])
}

/// Tokenizes the layout, merging adjacent text so literals tokenize as the model would write them.
fn encode(tok: &Tokenizer, pieces: Vec<Piece>) -> Result<Vec<Segment>, String> {
    let ids = |text: &str| -> Result<Vec<u32>, String> {
        tok.encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| format!("cannot tokenize the tool-call layout: {e}"))
    };
    let mut out = Vec::new();
    let mut text = String::new();
    for piece in pieces {
        let segment = match piece {
            Piece::Text(t) => {
                text.push_str(&t);
                continue;
            }
            Piece::Value(k) => Segment::Value(k),
            Piece::Choice(alts) => Segment::Choice(
                alts.into_iter()
                    .map(|(t, rest)| Ok((ids(&t)?, encode(tok, rest)?)))
                    .collect::<Result<_, String>>()?,
            ),
        };
        if !text.is_empty() {
            out.push(Segment::Literal(ids(&std::mem::take(&mut text))?));
        }
        out.push(segment);
    }
    if !text.is_empty() {
        out.push(Segment::Literal(ids(&text)?));
    }
    Ok(out)
}
