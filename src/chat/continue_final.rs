//! `continue_final_message`: render a conversation so the model continues its last message
//! (prefilling the start of a reply or of its reasoning) instead of starting a new turn.
//!
//! transformers does this by appending a marker to the final message, rendering, and cutting the
//! text at the marker; the template's end-of-turn tokens after it disappear. The same steps are
//! followed here, including its checks and its whitespace rule.

use super::py_methods::{strip, Side};
use anyhow::{anyhow, bail, Result};
use serde_json::Value as Json;

/// transformers' marker; the trailing space detects templates that trim message text.
const TAG: &str = "CONTINUE_FINAL_MESSAGE_TAG ";

/// Message keys transformers reads reasoning from, in priority order.
pub const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "thinking", "reasoning"];

/// Marks the final message's `field` (normally `content`) and returns the text being continued.
pub fn mark(messages: &mut [Json], field: &str, template_source: &str) -> Result<String> {
    let last = messages
        .last_mut()
        .ok_or_else(|| anyhow!("continue_final_message is set but the conversation is empty"))?;
    let final_message = last.get(field).cloned().ok_or_else(|| {
        anyhow!("continue_final_message is set but the final message has no `{field}` to continue")
    })?;
    // Reasoning is copied under several names, so every copy is tagged.
    let fields: Vec<&str> = if REASONING_FIELDS.contains(&field) {
        REASONING_FIELDS
            .iter()
            .copied()
            .filter(|f| last.get(*f) == Some(&final_message))
            .collect()
    } else {
        vec![field]
    };
    if !fields.iter().any(|f| template_source.contains(f)) {
        bail!("continue_final_message is set to `{field}` but the chat template never reads that field");
    }
    match final_message {
        Json::Array(_) => {
            let blocks = last
                .get_mut(field)
                .and_then(Json::as_array_mut)
                .ok_or_else(|| anyhow!("final message `{field}` changed while marking"))?;
            // The last block with text is the one being continued.
            let block = blocks
                .iter_mut()
                .rev()
                .find(|b| b.get("text").is_some())
                .ok_or_else(|| {
                    anyhow!("continue_final_message is set but the final message has no text block")
                })?;
            let text = block["text"]
                .as_str()
                .ok_or_else(|| anyhow!("a text block's `text` must be a string"))?
                .to_string();
            block["text"] = Json::String(format!("{text}{TAG}"));
            Ok(text)
        }
        Json::String(text) => {
            for f in fields {
                last[f] = Json::String(format!("{text}{TAG}"));
            }
            Ok(text)
        }
        other => bail!("continue_final_message: final message `{field}` must be text, got {other}"),
    }
}

/// Cuts the rendered text at the marker.
pub fn cut(rendered: &str, final_message: &str) -> Result<String> {
    let tag = TAG.trim_end();
    let stripped = strip(final_message, None, Side::Both);
    let Some(at) = rendered.rfind(tag).filter(|_| rendered.contains(stripped)) else {
        bail!("continue_final_message is set but the final message does not appear in the rendered chat; the template drops part of it");
    };
    if rendered[at..].starts_with(TAG) {
        Ok(rendered[..at].to_string())
    } else {
        // The template trimmed the message's trailing whitespace, so the cut is trimmed too.
        Ok(strip(&rendered[..at], None, Side::End).to_string())
    }
}
