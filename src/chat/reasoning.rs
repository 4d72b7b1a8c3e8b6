//! Separating `<think>…</think>` reasoning from the answer in generated text.
//!
//! Qwen3 generates `<think>` itself; Qwen3.5 templates put `<think>\n` in the prompt, so the output
//! holds only the closing `</think>`. Both shapes are accepted. The trimming mirrors what the
//! templates do when they re-render a turn (`reasoning.strip('\n')`, `content.lstrip('\n')`), so
//! a parsed turn renders back to the text the model produced.

use super::tool_calls::{ToolCallError, ToolCallErrorKind};

pub const THINK_OPEN: &str = "<think>";
pub const THINK_CLOSE: &str = "</think>";

/// Reasoning (if any) and the remaining answer text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReasoningSplit<'a> {
    pub reasoning: Option<String>,
    pub content: &'a str,
}

/// Splits `text` at the first `</think>`. A `<think>` that is never closed is an error (the model
/// ran out of tokens or forgot the tag), and so is a second `<think>` block.
pub fn split_reasoning(text: &str) -> Result<ReasoningSplit<'_>, ToolCallError> {
    let Some(close) = text.find(THINK_CLOSE) else {
        if let Some(open) = text.find(THINK_OPEN) {
            return Err(ToolCallError::new(
                ToolCallErrorKind::UnclosedThink,
                open,
                "`<think>` is never closed with `</think>`",
            ));
        }
        return Ok(ReasoningSplit {
            reasoning: None,
            content: text,
        });
    };
    let before = &text[..close];
    let inner = match before.find(THINK_OPEN) {
        Some(open) => {
            if !before[..open].trim().is_empty() {
                return Err(ToolCallError::new(
                    ToolCallErrorKind::UnexpectedText,
                    0,
                    "text before `<think>`; reasoning must come first",
                ));
            }
            &before[open + THINK_OPEN.len()..]
        }
        None => before,
    };
    let after = &text[close + THINK_CLOSE.len()..];
    if let Some(again) = after.find(THINK_OPEN).or_else(|| after.find(THINK_CLOSE)) {
        return Err(ToolCallError::new(
            ToolCallErrorKind::UnexpectedText,
            close + THINK_CLOSE.len() + again,
            "a second think tag after the reasoning block",
        ));
    }
    Ok(ReasoningSplit {
        reasoning: Some(inner.trim_matches('\n').to_string()),
        content: after.trim_start_matches('\n'),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qwen3_and_qwen35_shapes() {
        let s = split_reasoning("<think>\nplan\n</think>\n\nanswer").unwrap();
        assert_eq!(s.reasoning.as_deref(), Some("plan"));
        assert_eq!(s.content, "answer");
        // Qwen3.5: `<think>\n` was in the prompt.
        let s = split_reasoning("plan\n</think>\n\nanswer").unwrap();
        assert_eq!(s.reasoning.as_deref(), Some("plan"));
        assert_eq!(s.content, "answer");
        let s = split_reasoning("just an answer").unwrap();
        assert_eq!(s.reasoning, None);
        assert_eq!(s.content, "just an answer");
        let s = split_reasoning("<think>\n\n</think>\n\nhi").unwrap();
        assert_eq!(s.reasoning.as_deref(), Some(""));
    }

    #[test]
    fn malformed_reasoning_is_an_error() {
        let e = split_reasoning("<think>never closed").unwrap_err();
        assert_eq!(e.kind, ToolCallErrorKind::UnclosedThink);
        let e = split_reasoning("x <think>a</think>b").unwrap_err();
        assert_eq!(e.kind, ToolCallErrorKind::UnexpectedText);
        let e = split_reasoning("<think>a</think>b</think>").unwrap_err();
        assert_eq!(e.kind, ToolCallErrorKind::UnexpectedText);
    }
}
