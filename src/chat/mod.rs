//! Chat formatting between OpenAI-style messages and model text.
//!
//! Rendering: [`ChatTemplate`] turns messages and tools into the prompt text a Hugging Face chat
//! template produces, byte for byte as transformers does (goldens in `testdata/chat/`).
//! Parsing: [`parse_tool_calls`] and [`split_reasoning`] turn generated text back into content,
//! reasoning and tool calls, in the Qwen3 (hermes JSON) and Qwen3.5/Qwen3-Coder (XML) formats.

mod py_methods;
pub mod pyjson;
pub mod pyrepr;
mod strftime;
mod template;

pub use template::{ChatTemplate, RenderInput};
