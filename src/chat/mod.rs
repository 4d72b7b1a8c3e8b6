//! Chat formatting between OpenAI-style messages and model text.
//!
//! Rendering: [`ChatTemplate`] turns messages and tools into the prompt text a Hugging Face chat
//! template produces, byte for byte as transformers does (goldens in `testdata/chat/`).
//! Parsing: [`parse_assistant_output`] (with [`split_reasoning`] and [`parse_tool_calls`]) turn generated text back into content,
//! reasoning and tool calls, in the Qwen3 (hermes JSON) and Qwen3.5/Qwen3-Coder (XML) formats.

pub mod cli;
mod continue_final;
mod py_methods;
pub mod pyjson;
pub mod pyrepr;
mod reasoning;
mod strftime;
mod template;
mod tool_calls;

pub use reasoning::{split_reasoning, ReasoningSplit, THINK_OPEN};

/// End-of-turn tokens of the Qwen chat format: generation ends at them, and they are not part of
/// the message.
pub const END_TOKENS: [&str; 2] = ["<|im_end|>", "<|endoftext|>"];
pub use template::{ChatTemplate, RenderInput};
pub use tool_calls::{
    find_tool_schema, parse_assistant_output, parse_assistant_output_any_name, parse_tool_calls,
    AssistantOutput, ToolCall, ToolCallError, ToolCallErrorKind, ToolCallFormat,
};
