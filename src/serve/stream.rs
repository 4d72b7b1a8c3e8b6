//! The assistant's reply as OpenAI sends it: the whole message (non-streaming) or SSE chunks.
//!
//! Tool calls are written by the model as text in the server's format (`<tool_call>…`). While streaming,
//! content is passed through until a call starts (a possible `<tool_call>` prefix is held back); the call
//! text is then buffered and, once the turn ends, sent as OpenAI tool-call deltas: first
//! `{index, id, type: "function", function: {name, arguments: ""}}`, then `{index, function: {arguments}}`
//! fragments, and `finish_reason: "tool_calls"`. Text that does not parse as a call is sent as content.

use serde_json::{json, Value};

use super::engine::{FinishReason, TokenLogprob};
use crate::chat::{parse_assistant_output, ToolCall, ToolCallFormat};

/// Where a call starts in both formats (hermes and qwen3_xml).
const TOOL_CALL_OPEN: &str = "<tool_call>";

/// Characters per streamed argument fragment.
const ARGUMENT_CHUNK: usize = 16;

/// The message content and the calls found in a finished reply.
pub struct Parsed {
    pub content: String,
    pub calls: Vec<ToolCall>,
}

/// Splits tool calls off `text` when calls are parsed for this request; unparsable calls stay text.
pub fn parse_reply(text: &str, format: ToolCallFormat, tools: Option<&[Value]>) -> Parsed {
    if let Some(tools) = tools {
        if text.contains(TOOL_CALL_OPEN) {
            if let Ok(out) = parse_assistant_output(text, format, Some(tools)) {
                // The content is the text before the first call, a `<think>` block included, as
                // vLLM's tool parsers give it without a reasoning parser and as the stream sends it.
                let start = text.find(TOOL_CALL_OPEN).unwrap_or(0);
                return Parsed {
                    content: text[..start].to_string(),
                    calls: out.tool_calls,
                };
            }
        }
    }
    Parsed {
        content: text.to_string(),
        calls: Vec::new(),
    }
}

pub fn finish_reason(reason: &FinishReason, has_calls: bool) -> &'static str {
    match (reason, has_calls) {
        (_, true) => "tool_calls",
        (FinishReason::Stop, false) => "stop",
        (FinishReason::Length, false) => "length",
    }
}

pub fn logprobs_json(lps: &[TokenLogprob]) -> Value {
    let content: Vec<Value> = lps
        .iter()
        .map(|l| {
            let top: Vec<Value> = l.top.iter().map(|(t, lp)| json!({"token": t, "logprob": lp, "bytes": t.as_bytes()})).collect();
            json!({"token": l.token, "logprob": l.logprob, "bytes": l.token.as_bytes(), "top_logprobs": top})
        })
        .collect();
    json!({"content": content})
}

pub fn usage_json(prompt: usize, completion: usize) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}

/// Builds the SSE chunks of one streamed reply.
pub struct ChunkWriter {
    pub id: String,
    pub created: u64,
    pub model: String,
    pub include_usage: bool,
    pub format: ToolCallFormat,
    /// The offered tools when calls are parsed (tool_choice other than none).
    pub tools: Option<Vec<Value>>,
    /// Prefix of the call id, unique per reply.
    pub call_id: String,
    /// Content not yet sent because it may begin `<tool_call>`.
    held: String,
    /// Text from the first `<tool_call>` on.
    call_text: Option<String>,
}

impl ChunkWriter {
    pub fn new(
        id: String,
        created: u64,
        model: String,
        include_usage: bool,
        format: ToolCallFormat,
        tools: Option<Vec<Value>>,
        call_id: String,
    ) -> Self {
        ChunkWriter {
            id,
            created,
            model,
            include_usage,
            format,
            tools,
            call_id,
            held: String::new(),
            call_text: None,
        }
    }

    fn chunk(&self, delta: Value, finish: Option<&str>, logprobs: Option<Value>) -> Value {
        let mut c = json!({"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                           "choices": [{"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}]});
        if self.include_usage {
            c["usage"] = Value::Null;
        }
        c
    }

    /// The opening chunk: the role.
    pub fn start(&self) -> Value {
        self.chunk(json!({"role": "assistant", "content": ""}), None, None)
    }

    /// Chunks for newly generated text.
    pub fn text(&mut self, text: &str, logprobs: &[TokenLogprob]) -> Vec<Value> {
        let lp = (!logprobs.is_empty()).then(|| logprobs_json(logprobs));
        let content = match (&mut self.call_text, &self.tools) {
            (Some(buf), _) => {
                buf.push_str(text);
                String::new()
            }
            (None, None) => text.to_string(),
            (None, Some(_)) => {
                self.held.push_str(text);
                if let Some(i) = self.held.find(TOOL_CALL_OPEN) {
                    self.call_text = Some(self.held.split_off(i));
                    std::mem::take(&mut self.held)
                } else {
                    let keep = partial_suffix(&self.held, TOOL_CALL_OPEN);
                    let rest = self.held.split_off(self.held.len() - keep);
                    std::mem::replace(&mut self.held, rest)
                }
            }
        };
        if content.is_empty() && lp.is_none() {
            return Vec::new();
        }
        vec![self.chunk(json!({"content": content}), None, lp)]
    }

    /// The closing chunks: held text, tool-call deltas, the finish reason, and usage when asked for.
    pub fn finish(
        &mut self,
        reason: &FinishReason,
        prompt: usize,
        completion: usize,
    ) -> Vec<Value> {
        let mut out = Vec::new();
        let mut content = std::mem::take(&mut self.held);
        let mut calls = Vec::new();
        if let Some(text) = self.call_text.take() {
            let parsed = parse_reply(&text, self.format, self.tools.as_deref());
            content.push_str(&parsed.content);
            calls = parsed.calls;
        }
        if !content.is_empty() {
            out.push(self.chunk(json!({"content": content}), None, None));
        }
        for (i, call) in calls.iter().enumerate() {
            let openai = call.to_openai(&format!("{}{i}", self.call_id));
            let first = json!({"tool_calls": [{"index": i, "id": openai["id"], "type": "function",
                                               "function": {"name": call.name, "arguments": ""}}]});
            out.push(self.chunk(first, None, None));
            let args = openai["function"]["arguments"]
                .as_str()
                .unwrap_or("{}")
                .to_string();
            for piece in char_chunks(&args, ARGUMENT_CHUNK) {
                out.push(self.chunk(
                    json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                    None,
                    None,
                ));
            }
        }
        out.push(self.chunk(
            json!({}),
            Some(finish_reason(reason, !calls.is_empty())),
            None,
        ));
        if self.include_usage {
            out.push(json!({"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                            "model": self.model, "choices": [], "usage": usage_json(prompt, completion)}));
        }
        out
    }
}

/// Length of the longest suffix of `text` that is a proper prefix of `tag`.
fn partial_suffix(text: &str, tag: &str) -> usize {
    (1..tag.len())
        .rev()
        .find(|&n| {
            text.len() >= n
                && text.is_char_boundary(text.len() - n)
                && tag.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0)
}

fn char_chunks(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_tag_is_held_back() {
        assert_eq!(partial_suffix("hello <tool", TOOL_CALL_OPEN), 5);
        assert_eq!(partial_suffix("hello", TOOL_CALL_OPEN), 0);
        assert_eq!(partial_suffix("价格<", TOOL_CALL_OPEN), 1);
    }

    /// A reply with a think block and a call: the call is parsed and the content is the text before
    /// it, think block and all (what the stream sends as content too), so a client can split the
    /// reasoning off; a reply whose call does not parse stays text.
    #[test]
    fn the_content_of_a_call_keeps_the_text_before_it() {
        let tools = [
            json!({"type": "function", "function": {"name": "get_promotions",
            "parameters": {"type": "object", "properties": {"product_id": {"type": "string"}}}}}),
        ];
        let text = "<think>\n\n</think>\n\n<tool_call>\n{\"name\": \"get_promotions\", \"arguments\": {\"product_id\": \"p1\"}}\n</tool_call>";
        let parsed = parse_reply(text, ToolCallFormat::Hermes, Some(&tools));
        assert_eq!(parsed.content, "<think>\n\n</think>\n\n");
        assert_eq!(parsed.calls.len(), 1);
        assert_eq!(parsed.calls[0].name, "get_promotions");
        let broken = "<think>\n\n</think>\n\n<tool_call>\n{not json\n</tool_call>";
        let parsed = parse_reply(broken, ToolCallFormat::Hermes, Some(&tools));
        assert_eq!((parsed.content.as_str(), parsed.calls.len()), (broken, 0));
    }
}
