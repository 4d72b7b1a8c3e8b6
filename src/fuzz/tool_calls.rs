//! Target `tool_calls`: model output → tool calls, in both wire formats (Qwen3 hermes JSON and
//! Qwen3.5 XML). A model under RL writes adversarial text by construction, so any text must either
//! parse or give a typed error located inside it; and a turn that parses, put back into the prompt
//! by the chat template (as training and the agent runtime do), must parse to the same calls.

use std::sync::OnceLock;

use serde_json::{json, Value as Json};

use crate::chat::{parse_assistant_output, ChatTemplate, RenderInput, ToolCallFormat};
use crate::tokenizer::QWEN3_CHAT_TEMPLATE;

/// The Qwen3.5-style template of the chat goldens: the XML form written back into the prompt.
const XML_TEMPLATE: &str = include_str!("../../testdata/chat/templates/xml_tools.jinja");

/// The first byte picks the format and whether calls are checked against (and XML values typed
/// by) offered tools; the rest is the generated text.
pub fn check(data: &[u8]) {
    let Some((&mode, text)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return; // generated text is decoded to a string before it is parsed
    };
    let format = if mode & 1 == 0 {
        ToolCallFormat::Hermes
    } else {
        ToolCallFormat::Qwen3Xml
    };
    let tools = tools();
    let tools = (mode & 2 != 0).then_some(tools.as_slice());
    let out = match parse_assistant_output(text, format, tools) {
        Ok(out) => out,
        Err(e) => {
            assert!(e.offset <= text.len(), "error offset past the text: {e}");
            return;
        }
    };
    if out.tool_calls.is_empty() {
        return;
    }
    let rendered = render_turn(&out.to_message(""), format);
    let again = parse_assistant_output(&rendered, format, tools)
        .unwrap_or_else(|e| panic!("re-rendered turn does not parse: {e}\n{rendered}"));
    assert_eq!(
        again.tool_calls, out.tool_calls,
        "calls changed through render:\n{rendered}"
    );
}

/// The assistant turn as the format's template writes it back into a prompt.
fn render_turn(message: &Json, format: ToolCallFormat) -> String {
    // Compiled once: a template compile costs more than the parse it checks.
    static TEMPLATES: OnceLock<[ChatTemplate; 2]> = OnceLock::new();
    let [hermes, xml] = TEMPLATES.get_or_init(|| {
        [QWEN3_CHAT_TEMPLATE, XML_TEMPLATE]
            .map(|source| ChatTemplate::from_str(source).expect("the embedded templates compile"))
    });
    let template = match format {
        ToolCallFormat::Hermes => hermes,
        ToolCallFormat::Qwen3Xml => xml,
    };
    // Arguments go in as objects: both templates render them with `tojson`.
    let mut message = message.clone();
    for call in message["tool_calls"].as_array_mut().into_iter().flatten() {
        let args = &mut call["function"]["arguments"];
        *args = serde_json::from_str(args.as_str().unwrap_or("{}"))
            .expect("to_openai writes arguments as a JSON object");
    }
    let input = RenderInput::from_json(&json!({
        "messages": [{"role": "user", "content": "hi"}, message],
    }))
    .expect("a well-formed render input");
    let text = template
        .render(&input)
        .unwrap_or_else(|e| panic!("a parsed turn does not render: {e:#}"));
    // Found from the start: the arguments may themselves contain `<|im_start|>assistant`.
    const OPEN: &str = "hi<|im_end|>\n<|im_start|>assistant\n";
    let start = text.find(OPEN).expect("the assistant turn is rendered") + OPEN.len();
    text[start..]
        .strip_suffix("<|im_end|>\n")
        .expect("the turn is closed")
        .to_string()
}

/// Offered tools covering every schema type the XML parser converts to.
fn tools() -> Vec<Json> {
    let params = json!({"type": "object", "properties": {
        "query": {"type": "string"}, "days": {"type": "integer"}, "price": {"type": ["number", "null"]},
        "in_stock": {"type": "boolean"}, "filters": {"type": "object"}, "tags": {"type": "array"},
        "note": {}}});
    vec![
        json!({"type": "function", "function": {"name": "search_products", "parameters": params}}),
        json!({"name": "get_order", "inputSchema": {"type": "object",
            "properties": {"order_id": {"type": "string"}}}}),
    ]
}
