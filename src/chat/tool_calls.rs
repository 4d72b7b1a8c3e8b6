//! Parsing tool calls out of generated assistant text.
//!
//! Two wire formats, as vLLM's parsers read them:
//! * **hermes** (Qwen2.5/Qwen3): `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`,
//!   one block per call (vLLM `hermes_tool_parser.py`);
//! * **qwen3_xml** (Qwen3-Coder/Qwen3.5): `<tool_call>\n<function=NAME>\n<parameter=ARG>\nVALUE\n
//!   </parameter>\n</function>\n</tool_call>`, values typed by the tool's JSON schema
//!   (vLLM `qwen3_coder` / `qwen3_xml`).
//!
//! Text before the first call is the message content; reasoning in `<think>` is split off first.
//! Where vLLM silently guesses (an unclosed tag, a value that does not fit its schema), we return
//! a [`ToolCallError`] instead: its message is written to be shown to the model as feedback, and
//! its kind lets the runtime and the rewards count failure types.

use super::pyjson::dumps_json;
use super::reasoning::split_reasoning;
use anyhow::bail;
use serde_json::{Map, Value as Json};
use std::fmt;

pub const TOOL_CALL_OPEN: &str = "<tool_call>";
pub const TOOL_CALL_CLOSE: &str = "</tool_call>";
const FUNCTION_OPEN: &str = "<function=";
const FUNCTION_CLOSE: &str = "</function>";
const PARAMETER_OPEN: &str = "<parameter=";
const PARAMETER_CLOSE: &str = "</parameter>";

/// How a model writes tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCallFormat {
    /// JSON object inside `<tool_call>` tags (Qwen3).
    Hermes,
    /// `<function=...>`/`<parameter=...>` XML inside `<tool_call>` tags (Qwen3.5, Qwen3-Coder).
    Qwen3Xml,
}

impl ToolCallFormat {
    /// The text a call opens with, up to its tool's name (as the Qwen3 chat templates write it).
    pub fn name_open(self) -> &'static str {
        match self {
            ToolCallFormat::Hermes => "<tool_call>\n{\"name\": \"",
            ToolCallFormat::Qwen3Xml => "<tool_call>\n<function=",
        }
    }

    /// The character that ends a call's tool name.
    pub fn name_end(self) -> char {
        match self {
            ToolCallFormat::Hermes => '"',
            ToolCallFormat::Qwen3Xml => '>',
        }
    }
}

impl std::str::FromStr for ToolCallFormat {
    type Err = anyhow::Error;

    /// Accepts the vLLM/SGLang parser names.
    fn from_str(s: &str) -> anyhow::Result<Self> {
        match s {
            "hermes" | "qwen" | "qwen25" => Ok(ToolCallFormat::Hermes),
            "qwen3_xml" | "qwen3_coder" => Ok(ToolCallFormat::Qwen3Xml),
            other => bail!("unknown tool-call format `{other}` (expected hermes or qwen3_xml)"),
        }
    }
}

/// One parsed call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Map<String, Json>,
}

impl ToolCall {
    /// The OpenAI `tool_calls` entry, with `arguments` as a JSON string written the way vLLM
    /// writes it (`json.dumps(..., ensure_ascii=False)`).
    pub fn to_openai(&self, id: &str) -> Json {
        serde_json::json!({
            "id": id,
            "type": "function",
            "function": {"name": self.name, "arguments": dumps_json(&Json::Object(self.arguments.clone()))},
        })
    }
}

/// A generated assistant turn, taken apart.
#[derive(Debug, Clone, PartialEq)]
pub struct AssistantOutput {
    pub reasoning: Option<String>,
    /// Text before the first tool call (trailing whitespace removed: templates add their own
    /// separator before `<tool_call>`).
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
}

impl AssistantOutput {
    /// The OpenAI assistant message; call ids are `call_{id_prefix}{index}`.
    pub fn to_message(&self, id_prefix: &str) -> Json {
        let mut m = Map::new();
        m.insert("role".into(), "assistant".into());
        m.insert("content".into(), Json::String(self.content.clone()));
        if let Some(r) = &self.reasoning {
            m.insert("reasoning_content".into(), Json::String(r.clone()));
        }
        if !self.tool_calls.is_empty() {
            let calls = self
                .tool_calls
                .iter()
                .enumerate()
                .map(|(i, c)| c.to_openai(&format!("call_{id_prefix}{i}")))
                .collect();
            m.insert("tool_calls".into(), Json::Array(calls));
        }
        Json::Object(m)
    }
}

/// What went wrong, for counting and for choosing feedback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCallErrorKind {
    UnclosedThink,
    UnclosedToolCall,
    /// Hermes body (or string-encoded arguments) is not valid JSON.
    InvalidJson,
    /// The call has no usable function name.
    MissingName,
    /// Hermes `arguments` is neither an object nor a JSON string holding one.
    ArgumentsNotObject,
    /// XML body does not start with `<function=NAME>`.
    UnknownFunctionForm,
    UnclosedFunction,
    UnclosedParameter,
    /// A parameter is repeated or its value does not fit the tool's schema.
    InvalidParameter,
    /// The function is not one of the tools offered.
    UnknownTool,
    /// Stray text where only tags belong.
    UnexpectedText,
}

impl ToolCallErrorKind {
    /// Stable snake_case name, for reports and metrics.
    pub fn name(self) -> &'static str {
        match self {
            ToolCallErrorKind::UnclosedThink => "unclosed_think",
            ToolCallErrorKind::UnclosedToolCall => "unclosed_tool_call",
            ToolCallErrorKind::InvalidJson => "invalid_json",
            ToolCallErrorKind::MissingName => "missing_name",
            ToolCallErrorKind::ArgumentsNotObject => "arguments_not_object",
            ToolCallErrorKind::UnknownFunctionForm => "unknown_function_form",
            ToolCallErrorKind::UnclosedFunction => "unclosed_function",
            ToolCallErrorKind::UnclosedParameter => "unclosed_parameter",
            ToolCallErrorKind::InvalidParameter => "invalid_parameter",
            ToolCallErrorKind::UnknownTool => "unknown_tool",
            ToolCallErrorKind::UnexpectedText => "unexpected_text",
        }
    }
}

/// A parse failure at a byte offset of the generated text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallError {
    pub kind: ToolCallErrorKind,
    pub offset: usize,
    pub message: String,
}

impl ToolCallError {
    pub fn new(kind: ToolCallErrorKind, offset: usize, message: impl Into<String>) -> Self {
        ToolCallError {
            kind,
            offset,
            message: message.into(),
        }
    }
}

impl fmt::Display for ToolCallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "malformed tool call at byte {}: {}",
            self.offset, self.message
        )
    }
}

impl std::error::Error for ToolCallError {}

/// Parses a whole generated turn: reasoning, content, then tool calls in `format`. `tools` are
/// the offered tools (OpenAI `{"type":"function","function":{...}}`, bare function specs, or MCP
/// `inputSchema` shapes); when given, call names must be among them and XML values are typed by
/// their schemas.
pub fn parse_assistant_output(
    text: &str,
    format: ToolCallFormat,
    tools: Option<&[Json]>,
) -> Result<AssistantOutput, ToolCallError> {
    parse_output(text, format, tools, true)
}

/// As [`parse_assistant_output`], but a call may name any tool; `tools` only type XML values. For an
/// agent runtime, which answers a call to a missing tool itself, call by call, as it answers a
/// structured one.
pub fn parse_assistant_output_any_name(
    text: &str,
    format: ToolCallFormat,
    tools: Option<&[Json]>,
) -> Result<AssistantOutput, ToolCallError> {
    parse_output(text, format, tools, false)
}

/// `names_offered`: a call naming a tool outside `tools` is an `UnknownTool` error.
fn parse_output(
    text: &str,
    format: ToolCallFormat,
    tools: Option<&[Json]>,
    names_offered: bool,
) -> Result<AssistantOutput, ToolCallError> {
    let split = split_reasoning(text)?;
    let base = text.len() - split.content.len();
    let (content, tool_calls) =
        parse_calls(split.content, format, tools, names_offered).map_err(|e| ToolCallError {
            offset: e.offset + base,
            ..e
        })?;
    Ok(AssistantOutput {
        reasoning: split.reasoning,
        content,
        tool_calls,
    })
}

/// Parses the tool calls in `text` (no reasoning handling); returns the content before the first
/// call and the calls. Only whitespace may appear between and after calls.
pub fn parse_tool_calls(
    text: &str,
    format: ToolCallFormat,
    tools: Option<&[Json]>,
) -> Result<(String, Vec<ToolCall>), ToolCallError> {
    parse_calls(text, format, tools, true)
}

fn parse_calls(
    text: &str,
    format: ToolCallFormat,
    tools: Option<&[Json]>,
    names_offered: bool,
) -> Result<(String, Vec<ToolCall>), ToolCallError> {
    let Some(first) = text.find(TOOL_CALL_OPEN) else {
        if let Some(pos) = text.find(TOOL_CALL_CLOSE) {
            return Err(ToolCallError::new(
                ToolCallErrorKind::UnexpectedText,
                pos,
                "`</tool_call>` without an opening `<tool_call>`",
            ));
        }
        return Ok((text.trim_end().to_string(), Vec::new()));
    };
    let content = text[..first].trim_end().to_string();
    let mut calls = Vec::new();
    let mut pos = first;
    loop {
        let body_start = pos + TOOL_CALL_OPEN.len();
        let rel_close = text[body_start..].find(TOOL_CALL_CLOSE).ok_or_else(|| {
            ToolCallError::new(
                ToolCallErrorKind::UnclosedToolCall,
                pos,
                "`<tool_call>` is never closed with `</tool_call>`",
            )
        })?;
        let body = &text[body_start..body_start + rel_close];
        if let Some(nested) = body.find(TOOL_CALL_OPEN) {
            return Err(ToolCallError::new(
                ToolCallErrorKind::UnclosedToolCall,
                pos,
                format!(
                    "`<tool_call>` opened again at byte {} before `</tool_call>`",
                    body_start + nested
                ),
            ));
        }
        let call = match format {
            ToolCallFormat::Hermes => parse_hermes_body(body, body_start),
            ToolCallFormat::Qwen3Xml => parse_xml_body(body, body_start, tools),
        }?;
        if let Some(tools) = tools.filter(|_| names_offered) {
            if find_tool_schema(tools, &call.name).is_none() {
                return Err(ToolCallError::new(
                    ToolCallErrorKind::UnknownTool,
                    body_start,
                    format!(
                        "no tool named `{}`; available: {}",
                        call.name,
                        tool_names(tools).join(", ")
                    ),
                ));
            }
        }
        calls.push(call);
        pos = body_start + rel_close + TOOL_CALL_CLOSE.len();
        let rest = &text[pos..];
        let gap = rest.len() - rest.trim_start().len();
        match rest.trim_start() {
            "" => break,
            r if r.starts_with(TOOL_CALL_OPEN) => pos += gap,
            _ => {
                return Err(ToolCallError::new(
                    ToolCallErrorKind::UnexpectedText,
                    pos + gap,
                    "text after a tool call; only further `<tool_call>` blocks may follow",
                ))
            }
        }
    }
    Ok((content, calls))
}

/// `{"name": ..., "arguments": {...}}`; `arguments` may also be a JSON string holding an object
/// (some models double-encode) or absent (a call without arguments).
fn parse_hermes_body(body: &str, offset: usize) -> Result<ToolCall, ToolCallError> {
    let err = |kind, msg: String| ToolCallError::new(kind, offset, msg);
    let value: Json = serde_json::from_str(body.trim()).map_err(|e| {
        err(
            ToolCallErrorKind::InvalidJson,
            format!("tool call body is not valid JSON ({e})"),
        )
    })?;
    let Json::Object(obj) = value else {
        return Err(err(
            ToolCallErrorKind::InvalidJson,
            "tool call body must be a JSON object with `name` and `arguments`".into(),
        ));
    };
    let name = match obj.get("name") {
        Some(Json::String(n)) if !n.trim().is_empty() => n.clone(),
        _ => {
            return Err(err(
                ToolCallErrorKind::MissingName,
                "tool call has no `name` string".into(),
            ))
        }
    };
    // Chat templates write the name back between quotes unescaped (`'{"name": "' + name + '"'`), so
    // a name that needs JSON escaping would turn the call into invalid JSON in the next prompt.
    if name.contains(['"', '\\']) || name.contains(char::is_control) {
        return Err(err(
            ToolCallErrorKind::MissingName,
            format!("tool name {name:?} has a quote, backslash or control character"),
        ));
    }
    let arguments = match obj.get("arguments") {
        None | Some(Json::Null) => Map::new(),
        Some(Json::Object(a)) => a.clone(),
        Some(Json::String(s)) => match serde_json::from_str::<Json>(s) {
            Ok(Json::Object(a)) => a,
            Ok(_) => {
                return Err(err(
                    ToolCallErrorKind::ArgumentsNotObject,
                    format!("`arguments` of `{name}` must be a JSON object"),
                ))
            }
            Err(e) => {
                return Err(err(
                    ToolCallErrorKind::InvalidJson,
                    format!("`arguments` of `{name}` is a string but not valid JSON ({e})"),
                ))
            }
        },
        Some(_) => {
            return Err(err(
                ToolCallErrorKind::ArgumentsNotObject,
                format!("`arguments` of `{name}` must be a JSON object"),
            ))
        }
    };
    Ok(ToolCall { name, arguments })
}

/// `<function=NAME>` then `<parameter=KEY>\nVALUE\n</parameter>` blocks, then `</function>`.
fn parse_xml_body(
    body: &str,
    offset: usize,
    tools: Option<&[Json]>,
) -> Result<ToolCall, ToolCallError> {
    let lead = body.len() - body.trim_start().len();
    let at = |i: usize| offset + i;
    if !body[lead..].starts_with(FUNCTION_OPEN) {
        return Err(ToolCallError::new(
            ToolCallErrorKind::UnknownFunctionForm,
            at(lead),
            "expected `<function=NAME>` right after `<tool_call>`",
        ));
    }
    let name_start = lead + FUNCTION_OPEN.len();
    let name_end = name_start
        + body[name_start..].find('>').ok_or_else(|| {
            ToolCallError::new(
                ToolCallErrorKind::UnknownFunctionForm,
                at(lead),
                "`<function=` is missing its closing `>`",
            )
        })?;
    let name = body[name_start..name_end].trim().to_string();
    if name.is_empty() || name.contains(char::is_whitespace) || name.contains('<') {
        return Err(ToolCallError::new(
            ToolCallErrorKind::MissingName,
            at(lead),
            format!("`<function=...>` has no valid name (got {name:?})"),
        ));
    }
    let fn_close = body
        .rfind(FUNCTION_CLOSE)
        .filter(|c| *c > name_end)
        .ok_or_else(|| {
            ToolCallError::new(
                ToolCallErrorKind::UnclosedFunction,
                at(lead),
                format!("`<function={name}>` is never closed with `</function>`"),
            )
        })?;
    let trailing = &body[fn_close + FUNCTION_CLOSE.len()..];
    if !trailing.trim().is_empty() {
        return Err(ToolCallError::new(
            ToolCallErrorKind::UnexpectedText,
            at(fn_close + FUNCTION_CLOSE.len()),
            "text after `</function>` inside the tool call",
        ));
    }
    let schema = tools.and_then(|t| find_tool_schema(t, &name));
    let mut arguments = Map::new();
    let mut pos = name_end + 1;
    loop {
        let rest = &body[pos..fn_close];
        let gap = rest.len() - rest.trim_start().len();
        let rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        pos += gap;
        if !rest.starts_with(PARAMETER_OPEN) {
            return Err(ToolCallError::new(
                ToolCallErrorKind::UnexpectedText,
                at(pos),
                format!("inside `<function={name}>` only `<parameter=KEY>` blocks may appear"),
            ));
        }
        let key_start = pos + PARAMETER_OPEN.len();
        let key_end = key_start
            + body[key_start..fn_close].find('>').ok_or_else(|| {
                ToolCallError::new(
                    ToolCallErrorKind::UnclosedParameter,
                    at(pos),
                    "`<parameter=` is missing its closing `>`",
                )
            })?;
        let key = body[key_start..key_end].trim().to_string();
        let value_start = key_end + 1;
        let value_end = value_start
            + body[value_start..fn_close]
                .find(PARAMETER_CLOSE)
                .ok_or_else(|| {
                    ToolCallError::new(
                        ToolCallErrorKind::UnclosedParameter,
                        at(pos),
                        format!("`<parameter={key}>` is never closed with `</parameter>`"),
                    )
                })?;
        if key.is_empty() || arguments.contains_key(&key) {
            return Err(ToolCallError::new(
                ToolCallErrorKind::InvalidParameter,
                at(pos),
                format!("parameter name {key:?} is empty or repeated"),
            ));
        }
        // The template writes `\nVALUE\n`; exactly one newline on each side is framing.
        let raw = &body[value_start..value_end];
        let raw = raw.strip_prefix('\n').unwrap_or(raw);
        let raw = raw.strip_suffix('\n').unwrap_or(raw);
        let param_schema = schema
            .and_then(|s| s.get("properties"))
            .and_then(|p| p.get(&key));
        let value = coerce_parameter(raw, param_schema).map_err(|msg| {
            ToolCallError::new(
                ToolCallErrorKind::InvalidParameter,
                at(pos),
                format!("parameter `{key}` of `{name}`: {msg}"),
            )
        })?;
        arguments.insert(key, value);
        pos = value_end + PARAMETER_CLOSE.len();
    }
    Ok(ToolCall { name, arguments })
}

/// Types an XML parameter value by its JSON schema, as vLLM's qwen3_coder parser does: `null`
/// (any case) is null; strings stay text; integers, numbers and booleans are parsed; objects
/// and arrays are JSON. Without a schema type the value is JSON if it parses as an object or
/// array and text otherwise. Unlike vLLM, a value that does not fit its declared type is an
/// error (vLLM keeps it as a string), so the model can be told.
fn coerce_parameter(raw: &str, schema: Option<&Json>) -> Result<Json, String> {
    if raw.eq_ignore_ascii_case("null") {
        return Ok(Json::Null);
    }
    let ty = schema.and_then(|s| match s.get("type") {
        Some(Json::String(t)) => Some(t.as_str()),
        // `["number", "null"]`: the first non-null type decides.
        Some(Json::Array(ts)) => ts.iter().filter_map(Json::as_str).find(|t| *t != "null"),
        _ => None,
    });
    let text = raw.trim();
    match ty {
        Some("string" | "str" | "text" | "varchar" | "char" | "enum") => {
            Ok(Json::String(raw.into()))
        }
        Some("integer" | "int") => text
            .parse::<i64>()
            .map(Json::from)
            .map_err(|_| format!("expected an integer, got {raw:?}")),
        Some("number" | "float" | "num") => {
            if let Ok(i) = text.parse::<i64>() {
                return Ok(Json::from(i));
            }
            text.parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .and_then(serde_json::Number::from_f64)
                .map(Json::Number)
                .ok_or_else(|| format!("expected a number, got {raw:?}"))
        }
        Some("boolean" | "bool") => match text.to_ascii_lowercase().as_str() {
            "true" => Ok(Json::Bool(true)),
            "false" => Ok(Json::Bool(false)),
            _ => Err(format!("expected true or false, got {raw:?}")),
        },
        Some(t @ ("object" | "array")) => match serde_json::from_str::<Json>(text) {
            Ok(v @ Json::Object(_)) if t == "object" => Ok(v),
            Ok(v @ Json::Array(_)) if t == "array" => Ok(v),
            _ => Err(format!("expected a JSON {t}, got {raw:?}")),
        },
        _ => match serde_json::from_str::<Json>(text) {
            Ok(v @ (Json::Object(_) | Json::Array(_))) => Ok(v),
            _ => Ok(Json::String(raw.into())),
        },
    }
}

/// The parameters schema of the tool called `name`, in any of the accepted tool shapes.
pub fn find_tool_schema<'a>(tools: &'a [Json], name: &str) -> Option<&'a Json> {
    tools.iter().find_map(|t| {
        let f = t.get("function").unwrap_or(t);
        (f.get("name").and_then(Json::as_str) == Some(name)).then(|| {
            f.get("parameters")
                .or_else(|| f.get("inputSchema"))
                .unwrap_or(&Json::Null)
        })
    })
}

fn tool_names(tools: &[Json]) -> Vec<&str> {
    tools
        .iter()
        .filter_map(|t| {
            t.get("function")
                .unwrap_or(t)
                .get("name")
                .and_then(Json::as_str)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn to_openai_writes_arguments_like_vllm() {
        let call = ToolCall {
            name: "f".into(),
            arguments: json!({"q": "é", "x": 1.0}).as_object().unwrap().clone(),
        };
        assert_eq!(
            call.to_openai("call_0")["function"]["arguments"],
            json!("{\"q\": \"é\", \"x\": 1.0}")
        );
    }

    #[test]
    fn coercion_follows_schema() {
        let s = |t: &str| json!({ "type": t });
        assert_eq!(coerce_parameter("5", Some(&s("integer"))), Ok(json!(5)));
        assert_eq!(coerce_parameter("2.5", Some(&s("number"))), Ok(json!(2.5)));
        assert_eq!(
            coerce_parameter("True", Some(&s("boolean"))),
            Ok(json!(true))
        );
        assert_eq!(
            coerce_parameter("NULL", Some(&s("integer"))),
            Ok(Json::Null)
        );
        assert_eq!(
            coerce_parameter(" 42 ", Some(&s("string"))),
            Ok(json!(" 42 "))
        );
        assert_eq!(
            coerce_parameter("[1, \"a\"]", Some(&json!({"type": ["array", "null"]}))),
            Ok(json!([1, "a"]))
        );
        assert_eq!(coerce_parameter("{\"a\": 1}", None), Ok(json!({"a": 1})));
        assert_eq!(coerce_parameter("42", None), Ok(json!("42")));
        assert!(coerce_parameter("many", Some(&s("integer"))).is_err());
        assert!(coerce_parameter("nan", Some(&s("number"))).is_err());
        assert!(coerce_parameter("[1]", Some(&s("object"))).is_err());
    }
}
