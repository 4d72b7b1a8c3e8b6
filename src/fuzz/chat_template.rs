//! Target `chat_template`: what reaches a chat template (messages, tools, documents, flags and
//! kwargs, from a record, a request or a user), rendered by the three templates of the goldens.
//! Bad input must come back as an error, never a panic, and a render must not depend on anything
//! but its input.

use std::sync::OnceLock;

use serde_json::Value;

use crate::chat::{ChatTemplate, RenderInput};

/// The goldens' templates by file name, compiled once.
fn templates() -> &'static [(&'static str, ChatTemplate)] {
    static TEMPLATES: OnceLock<Vec<(&str, ChatTemplate)>> = OnceLock::new();
    TEMPLATES.get_or_init(|| {
        [
            (
                "qwen3.jinja",
                include_str!("../../testdata/chat/templates/qwen3.jinja"),
            ),
            (
                "xml_tools.jinja",
                include_str!("../../testdata/chat/templates/xml_tools.jinja"),
            ),
            (
                "features.jinja",
                include_str!("../../testdata/chat/templates/features.jinja"),
            ),
        ]
        .into_iter()
        .map(|(name, source)| {
            (
                name,
                ChatTemplate::from_str(source).expect("golden templates compile"),
            )
        })
        .collect()
    })
}

/// The input is a golden case, `{"template": NAME, "input": RENDER_INPUT}`; an unknown or missing
/// template name renders with every template.
pub fn check(data: &[u8]) {
    let Ok(case) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Ok(input) = RenderInput::from_json(&case["input"]) else {
        return;
    };
    let name = case["template"].as_str();
    let every = !templates().iter().any(|(n, _)| Some(*n) == name);
    for (_, template) in templates()
        .iter()
        .filter(|(n, _)| every || Some(*n) == name)
    {
        let first = template.render(&input);
        let second = template.render(&input);
        match (&first, &second) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "two renders of one input differ"),
            (Err(_), Err(_)) => {}
            _ => panic!("one render failed, the other did not: {first:?} / {second:?}"),
        }
    }
}
