//! The trajectory record: one JSON object per line in every HAT stream (DESIGN §3).
//!
//! Ground truth (`task.expected`) is stated in *canonical* ids; `harness.names` maps each canonical id to the
//! surface name the model saw under this harness variant. Scorers and rewriters go through that map, which is
//! what makes harness augmentation task-preserving by construction.
//!
//! Every struct keeps the fields it does not know in `extra` (`#[serde(flatten)]`), so a record written by a
//! newer tool, or annotated by a user, passes through any stage without losing a field.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Fields a struct does not model, kept verbatim for the round trip.
pub type Extra = Map<String, Value>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// Stable id; derived records add a suffix (`"abc#hsa3"`).
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<HarnessRef>,
    /// OpenAI function tools exactly as shown to the model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    #[serde(default)]
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Scores::is_empty")]
    pub scores: Scores,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub meta: Extra,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Trajectory {
    /// The task's intent (`product_qa`, `chat`, …), or `unknown` for a record without a task.
    pub fn intent_label(&self) -> String {
        self.task
            .as_ref()
            .map_or("unknown".into(), |t| t.intent.to_string())
    }

    /// Whether the episode solved its task (`meta.success`, set by the judge: the expected calls made,
    /// the facts stated, the limits kept); false for an unscored record.
    pub fn solved(&self) -> bool {
        self.meta.get("success").and_then(|v| v.as_bool()) == Some(true)
    }

    /// The record up to and including its first trained assistant message, as a record of its own (id
    /// suffixed `#first-turn`; judge scores dropped, they judged the whole episode); `None` without one.
    pub fn first_turn(mut self) -> Option<Trajectory> {
        // The first turn the policy is trained on: a scripted host line (`weight: 0`) before it is context.
        let first = self.messages.iter().position(Message::is_trained)?;
        self.messages.truncate(first + 1);
        self.id.push_str("#first-turn");
        self.scores = Scores::default();
        Some(self)
    }

    /// The text of the system prompt: the first message, when it is a system or developer message
    /// (later ones are hook feedback).
    pub fn system_prompt(&self) -> Option<String> {
        self.messages
            .first()
            .filter(|m| matches!(m.role, Role::System | Role::Developer))
            .map(Message::text_content)
    }

    /// The conversation without its tools and its system prompt — except the prompt's sections whose
    /// `#` heading contains one of `keep` (the room state, say) — as a record of its own (id suffixed
    /// `#dialogue`; judge scores dropped, they judged the episode under its harness).
    pub fn dialogue_only(mut self, keep: &[String]) -> Trajectory {
        // The prompt only: system messages later in the episode are hook feedback, part of the dialogue.
        if self
            .messages
            .first()
            .is_some_and(|m| matches!(m.role, Role::System | Role::Developer))
        {
            let prompt = self.messages.remove(0);
            let kept = kept_sections(&prompt.text_content(), keep);
            if !kept.is_empty() {
                self.messages.insert(0, Message::text(prompt.role, kept));
            }
        }
        self.tools.clear();
        self.id.push_str("#dialogue");
        self.scores = Scores::default();
        self
    }

    /// The canonical → surface name map of the harness this episode ran under (identity when absent).
    pub fn names(&self) -> Names {
        self.harness
            .as_ref()
            .map(|h| h.names.clone())
            .unwrap_or_default()
    }

    /// Index of the opening call: the first assistant message that calls tools (after a clarifying
    /// exchange, if the record has one).
    pub fn opening_call(&self) -> Option<usize> {
        self.messages
            .iter()
            .position(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
    }

    /// The messages of the turn being scored: from `meta.turn_start` (0 when absent) to the end.
    pub fn current_turn(&self) -> &[Message] {
        let start = self
            .meta
            .get("turn_start")
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
        self.messages.get(start..).unwrap_or(&[])
    }
}

/// The sections of a prompt whose first line contains one of `keep`, joined by a blank line. A section
/// starts at a `#` heading, or at the first line after a rule (`---`, `====`: the separator of a harness
/// whose blocks carry no headings, such as `aftersales`'s `Order in this conversation: …`), and runs to the
/// next of either.
fn kept_sections(prompt: &str, keep: &[String]) -> String {
    let mut sections: Vec<Vec<&str>> = Vec::new();
    let mut keeping = false;
    let mut after_rule = false;
    for line in prompt.lines() {
        if is_rule(line) {
            (keeping, after_rule) = (false, true);
            continue;
        }
        if line.starts_with('#') || (after_rule && !line.trim().is_empty()) {
            after_rule = false;
            keeping = keep.iter().any(|k| line.contains(k.as_str()));
            if keeping {
                sections.push(Vec::new());
            }
        }
        if keeping {
            sections
                .last_mut()
                .expect("pushed at its heading")
                .push(line);
        }
    }
    let sections: Vec<String> = sections
        .iter()
        .map(|s| s.join("\n").trim_end().to_string())
        .collect();
    sections.join("\n\n")
}

/// A separator line between prompt blocks: three or more of `-` or `=` alone (`---`, `====`).
fn is_rule(line: &str) -> bool {
    let t = line.trim();
    t.len() >= 3 && (t.chars().all(|c| c == '-') || t.chars().all(|c| c == '='))
}

/// The eight intents of the live-room traffic mix (DESIGN §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    ProductQa,
    Chat,
    Clarify,
    AfterSales,
    Promotion,
    PresentationOrder,
    Faq,
    SilentRefusal,
}

impl Intent {
    pub const ALL: [Intent; 8] = [
        Intent::ProductQa,
        Intent::Chat,
        Intent::Clarify,
        Intent::AfterSales,
        Intent::Promotion,
        Intent::PresentationOrder,
        Intent::Faq,
        Intent::SilentRefusal,
    ];

    /// The snake_case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::ProductQa => "product_qa",
            Intent::Chat => "chat",
            Intent::Clarify => "clarify",
            Intent::AfterSales => "after_sales",
            Intent::Promotion => "promotion",
            Intent::PresentationOrder => "presentation_order",
            Intent::Faq => "faq",
            Intent::SilentRefusal => "silent_refusal",
        }
    }
}

impl std::fmt::Display for Intent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub intent: Intent,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub room: Value,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub viewer: Value,
    /// Ground truth in canonical ids; absent for real logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Expected>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// What a correct episode does, in canonical ids.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Expected {
    /// The skill that applies (canonical skill id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill: Option<String>,
    /// Tools that must be called, with the key arguments that must match (canonical argument names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ExpectedCall>,
    /// Facts the reply must state (e.g. a price `"¥199"`, a stock count).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<String>,
    /// Strings the reply must not contain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forbidden: Vec<String>,
    /// True when the right behaviour is to stay silent (no reply).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub silent: bool,
    /// True when the right reply is a clarifying question (the request is ambiguous): it asks, and calls
    /// no data tool. Added for the simulator (`sim::success`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clarify: bool,
    /// What the viewer actually wants, as the simulator generated it (`sim::tasks::Ask`: aspect, product,
    /// SKU, region, order…). A scripted teacher reads it instead of parsing free text; models never see it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpectedCall {
    /// Canonical tool id.
    pub tool: String,
    /// Key arguments by canonical name; only these are checked.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub args: Extra,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Which harness (and which variant of it) an episode ran under.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HarnessRef {
    pub name: String,
    #[serde(default)]
    pub version: String,
    /// `"sha256:<hex>"` of the harness directory content.
    #[serde(default)]
    pub hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<Variant>,
    #[serde(default, skip_serializing_if = "Names::is_empty")]
    pub names: Names,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    pub seed: u64,
    /// The augmentation ops applied, in order, each a JSON object naming the op and its parameters.
    #[serde(default)]
    pub ops: Vec<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The canonical tool ids ground truth names (docs/canonical-ids.md): the simulator's sandbox answers
/// all of them but `load_skill`, which stands for whatever tool of a harness returns a skill body. They
/// live with the schema because a harness declares its names against them (`[serves]` in harness.toml)
/// below the simulator.
pub const CANONICAL_TOOLS: [&str; 12] = [
    "search_products",
    "get_product_detail",
    "check_inventory",
    "get_promotions",
    "get_shipping_info",
    "get_after_sales_policy",
    "create_purchase_link",
    "get_room_state",
    "update_presentation_order",
    "search_faq",
    "get_order_status",
    "load_skill",
];

/// The canonical skill ids ground truth names (docs/canonical-ids.md).
pub const CANONICAL_SKILLS: [&str; 13] = [
    "product-qa",
    "casual-chat",
    "clarify-question",
    "after-sales-care",
    "promotion-explainer",
    "presentation-order",
    "faq-reply",
    "silent-refusal",
    "compliance-guard",
    "size-advice",
    "purchase-guide",
    "shipping-info",
    "stock-alert",
];

/// Canonical id → surface name, per kind. A missing entry means the surface name is the canonical id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Names {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skills: BTreeMap<String, String>,
    /// Renamed argument keys, per canonical tool id: canonical key → surface key. A tool or key
    /// missing here keeps its canonical key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Names {
    /// No renaming and nothing else to keep (a `names` object with only unknown fields is written).
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
            && self.skills.is_empty()
            && self.params.is_empty()
            && self.extra.is_empty()
    }

    /// The surface key of argument `key` of canonical tool `tool`.
    pub fn param_surface<'a>(&'a self, tool: &str, key: &'a str) -> &'a str {
        self.params
            .get(tool)
            .and_then(|m| m.get(key))
            .map_or(key, String::as_str)
    }

    /// The canonical key behind surface argument key `key` of canonical tool `tool`; `None` for the
    /// old key of a renamed argument (it names no argument of this harness).
    pub fn param_canonical<'a>(&'a self, tool: &str, key: &'a str) -> Option<&'a str> {
        match self.params.get(tool) {
            Some(m) => canonical_of(m, key),
            None => Some(key),
        }
    }

    /// `args` of canonical tool `tool` with surface keys turned canonical (what the sandbox and the
    /// ground truth speak). Unknown keys pass unchanged; the old key of a renamed argument is left out,
    /// so a call that uses it does not count as passing that argument.
    pub fn args_canonical(&self, tool: &str, args: &Map<String, Value>) -> Map<String, Value> {
        if !self.params.contains_key(tool) {
            return args.clone();
        }
        args.iter()
            .filter_map(|(k, v)| Some((self.param_canonical(tool, k)?.to_string(), v.clone())))
            .collect()
    }

    /// `args` of canonical tool `tool` with canonical keys turned into this harness's surface keys.
    pub fn args_surface(&self, tool: &str, args: &Map<String, Value>) -> Map<String, Value> {
        args.iter()
            .map(|(k, v)| (self.param_surface(tool, k).to_string(), v.clone()))
            .collect()
    }

    /// The surface name of a canonical tool id.
    pub fn tool_surface<'a>(&'a self, canonical: &'a str) -> &'a str {
        self.tools.get(canonical).map_or(canonical, String::as_str)
    }

    /// The surface name of a canonical skill id.
    pub fn skill_surface<'a>(&'a self, canonical: &'a str) -> &'a str {
        self.skills.get(canonical).map_or(canonical, String::as_str)
    }

    /// The canonical id behind a surface tool name, if the name belongs to this harness's map.
    pub fn tool_canonical<'a>(&'a self, surface: &'a str) -> Option<&'a str> {
        canonical_of(&self.tools, surface)
    }

    /// The canonical id behind a surface skill name.
    pub fn skill_canonical<'a>(&'a self, surface: &'a str) -> Option<&'a str> {
        canonical_of(&self.skills, surface)
    }
}

fn canonical_of<'a>(map: &'a BTreeMap<String, String>, surface: &'a str) -> Option<&'a str> {
    match map.iter().find(|(_, s)| s.as_str() == surface) {
        Some((canonical, _)) => Some(canonical),
        // Unmapped names are their own canonical id, unless another id was renamed *to* nothing else.
        None if !map.contains_key(surface) => Some(surface),
        None => None,
    }
}

/// An OpenAI function tool: `{"type": "function", "function": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionDef,
    #[serde(flatten)]
    pub extra: Extra,
}

fn function_type() -> String {
    "function".to_string()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A JSON Schema object.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub parameters: Value,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

/// An OpenAI chat message. `content` is text or a list of content parts, as the API allows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Message {
    /// The message as chat templates (and chat requests) take it: a tool-call-only assistant
    /// message has no content (the API's null), which templates read as text, so it gets "" —
    /// what the local policy's own messages carry.
    pub fn template_json(&self) -> serde_json::Result<Value> {
        let mut v = serde_json::to_value(self)?;
        if self.role == Role::Assistant && self.content.is_none() {
            v["content"] = Value::String(String::new());
        }
        Ok(v)
    }

    /// Whether the message is the policy's to learn: an assistant message without `"weight": 0`
    /// (the OpenAI fine-tuning field). Scripted host lines of a task and the rejected first attempt
    /// of a retry trajectory carry weight 0: they stay in the context but take no loss.
    pub fn is_trained(&self) -> bool {
        self.role == Role::Assistant
            && self.extra.get("weight").and_then(Value::as_f64) != Some(0.0)
    }

    /// A message with plain-text content and nothing else.
    pub fn text(role: Role, text: impl Into<String>) -> Message {
        Message {
            role,
            content: Some(Content::Text(text.into())),
            reasoning_content: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            extra: Extra::new(),
        }
    }

    /// The text of the message: the string content, or its text parts joined.
    pub fn text_content(&self) -> String {
        match &self.content {
            None => String::new(),
            Some(Content::Text(s)) => s.clone(),
            Some(Content::Parts(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<Value>),
}

/// An assistant's tool call. `function.arguments` is a JSON *string*, as the OpenAI API sends it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    #[serde(default)]
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    #[serde(default)]
    pub arguments: String,
    #[serde(flatten)]
    pub extra: Extra,
}

impl FunctionCall {
    /// The arguments parsed as a JSON object; an error says what is wrong with them.
    pub fn parsed_arguments(&self) -> anyhow::Result<Map<String, Value>> {
        let text = if self.arguments.trim().is_empty() {
            "{}"
        } else {
            &self.arguments
        };
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(other) => anyhow::bail!(
                "arguments of tool call '{}' must be a JSON object, got {}",
                self.name,
                json_kind(&other)
            ),
            Err(e) => anyhow::bail!(
                "arguments of tool call '{}' are not valid JSON: {e}",
                self.name
            ),
        }
    }
}

/// The JSON type name of a value, for error messages.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Reward dimensions, each in [0, 1] (the chain-of-thought term in [-0.1, 0]), plus anything else a judge adds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effectiveness: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_rationality: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_selection: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cot_length: Option<f64>,
    /// Which judge produced the scores (e.g. `"verifiable"`, or a model name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Scores {
    pub fn is_empty(&self) -> bool {
        *self == Scores::default()
    }
}

/// Messages, tools or any other records as JSON values, for a chat template.
pub fn json_values<T: Serialize>(items: &[T]) -> serde_json::Result<Vec<Value>> {
    items.iter().map(serde_json::to_value).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = r#"{"id":"t1","task":{"intent":"product_qa","room":{"product":"p1"},"viewer":{"name":"小王"},"expected":{"skill":"product-qa","tool_calls":[{"tool":"check_inventory","args":{"product_id":"p1"}}],"facts":["¥199"],"x_gt":1},"task_extra":true},"harness":{"name":"taolive","version":"1.0.0","hash":"sha256:00","variant":{"seed":7,"ops":[{"op":"rename_tool"}]},"names":{"tools":{"check_inventory":"stock_lookup"}},"h_extra":[1,2]},"tools":[{"type":"function","function":{"name":"stock_lookup","description":"库存","parameters":{"type":"object","properties":{}},"strict":true}}],"messages":[{"role":"system","content":"你好"},{"role":"user","content":[{"type":"text","text":"有货吗"}]},{"role":"assistant","reasoning_content":"think","tool_calls":[{"id":"c1","type":"function","function":{"name":"stock_lookup","arguments":"{\"product_id\": \"p1\"}"}}],"m_extra":"keep"},{"role":"tool","tool_call_id":"c1","content":"{\"stock\": 3}"}],"scores":{"accuracy":1.0,"judge":"verifiable","custom":0.5},"meta":{"source":"sim","latency_ms":12},"top_extra":{"a":[1,{"b":null}]}}"#;

    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let rec: Trajectory = serde_json::from_str(RECORD).unwrap();
        let back: Value = serde_json::to_value(&rec).unwrap();
        let orig: Value = serde_json::from_str(RECORD).unwrap();
        assert_eq!(back, orig);
        assert_eq!(rec.extra["top_extra"]["a"][1]["b"], Value::Null);
        assert_eq!(rec.messages[2].extra["m_extra"], "keep");
        // OpenAI's `content: null` on a tool-call turn reads as no content (and is written without it).
        let null_content: Message =
            serde_json::from_str(r#"{"role":"assistant","content":null}"#).unwrap();
        assert_eq!(null_content.content, None);
    }

    #[test]
    fn names_map_both_ways() {
        let rec: Trajectory = serde_json::from_str(RECORD).unwrap();
        let names = &rec.harness.unwrap().names;
        assert_eq!(names.tool_surface("check_inventory"), "stock_lookup");
        assert_eq!(names.tool_surface("search_faq"), "search_faq");
        assert_eq!(
            names.tool_canonical("stock_lookup"),
            Some("check_inventory")
        );
        assert_eq!(names.tool_canonical("search_faq"), Some("search_faq"));
        // The old name of a renamed tool is no longer a tool of this variant.
        assert_eq!(names.tool_canonical("check_inventory"), None);
    }

    #[test]
    fn tool_call_arguments_are_a_json_string() {
        let rec: Trajectory = serde_json::from_str(RECORD).unwrap();
        let call = &rec.messages[2].tool_calls[0].function;
        assert_eq!(call.parsed_arguments().unwrap()["product_id"], "p1");
        let bad = FunctionCall {
            name: "x".into(),
            arguments: "[1]".into(),
            extra: Map::new(),
        };
        assert!(bad
            .parsed_arguments()
            .unwrap_err()
            .to_string()
            .contains("an array"));
        assert_eq!(rec.messages[1].text_content(), "有货吗");
    }

    fn cut_record(messages: serde_json::Value) -> Trajectory {
        serde_json::from_value(serde_json::json!({
            "id": "r1",
            "messages": messages,
            "scores": {"accuracy": 1.0},
        }))
        .unwrap()
    }

    #[test]
    fn first_turn_keeps_the_history_and_the_first_assistant_turn_only() {
        let rec = cut_record(serde_json::json!([
            {"role": "system", "content": "host"},
            {"role": "user", "content": "阿杰：还有货吗"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "check_inventory", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "{\"stock\": 3}"},
            {"role": "assistant", "content": "还有 3 件"},
        ]));
        assert!(!rec.scores.is_empty());
        let cut = rec.clone().first_turn().unwrap();
        assert_eq!(cut.id, "r1#first-turn");
        assert_eq!(cut.messages, rec.messages[..3]);
        assert!(cut.scores.is_empty(), "scores judged the whole episode");
        // A scripted host line is context: the cut keeps it and ends after the policy's own turn.
        let mut scripted = rec.messages.clone();
        scripted.insert(2, Message::text(Role::Assistant, "Which one?"));
        scripted[2]
            .extra
            .insert("weight".into(), serde_json::json!(0));
        scripted.insert(3, Message::text(Role::User, "阿杰：the first"));
        let mut with_script = rec.clone();
        with_script.messages = scripted.clone();
        assert_eq!(with_script.first_turn().unwrap().messages, scripted[..5]);
        let dialogue = rec.clone().dialogue_only(&[]);
        assert_eq!(dialogue.id, "r1#dialogue");
        assert_eq!(dialogue.messages, rec.messages[1..]);
        assert!(dialogue.tools.is_empty() && dialogue.scores.is_empty());
        let no_assistant = cut_record(serde_json::json!([{"role": "user", "content": "hi"}]));
        assert_eq!(no_assistant.first_turn(), None);
    }

    #[test]
    fn dialogue_only_keeps_the_prompt_sections_asked_for() {
        let prompt = "# 角色 Role\nYou host.\n\n# 直播间状态 Room state\n- 1号链接 p007\n\n# 工具 Tools\nuse them\n# 当前讲解商品 Current product\np003\n";
        let rec = cut_record(serde_json::json!([
            {"role": "system", "content": prompt},
            {"role": "user", "content": "这个多少钱"},
        ]));
        let keep = ["Room state".to_string(), "Current product".to_string()];
        let kept = rec.clone().dialogue_only(&keep);
        assert_eq!(
            kept.messages[0],
            Message::text(
                Role::System,
                "# 直播间状态 Room state\n- 1号链接 p007\n\n# 当前讲解商品 Current product\np003"
            )
        );
        assert_eq!(kept.messages[1..], rec.messages[1..]);
        // Nothing matches: no prompt at all, as without `keep`.
        let none = rec.clone().dialogue_only(&["Catalog".to_string()]);
        assert_eq!(none.messages, rec.messages[1..]);
    }

    #[test]
    fn dialogue_only_keeps_a_block_between_rules_by_its_first_line() {
        // aftersales's pipeline: blocks without headings, separated by `---`.
        let prompt = "You are the after-sales assistant.\n\n---\n\nPolicies:\n1. Be brief.\n\n---\n\nOrder in this conversation: A123 (status: shipped)\nItems: Acme pan x1\n\n---\n\nPlaybooks (follow the one that matches the request):\n## refund\nWhen: money back";
        let rec = cut_record(serde_json::json!([
            {"role": "system", "content": prompt},
            {"role": "user", "content": "到哪了"},
        ]));
        let kept = rec.dialogue_only(&["Order in this conversation".to_string()]);
        assert_eq!(
            kept.messages[0].text_content(),
            "Order in this conversation: A123 (status: shipped)\nItems: Acme pan x1"
        );
    }
}
