//! The token side of the environment service, for token-in-token-out engines (verl, OpenRLHF): the
//! prompt as the chat template renders it, the text to append after each model turn (tool results,
//! hook feedback and the next generation prompt), a raw completion turned back into the assistant
//! message the runtime steps with, and token ids decoded with the service's tokenizer.
//!
//! The engine keeps the model's own tokens and appends the feedback's tokens after them; nothing is
//! re-rendered (re-applying the template to a finished conversation is what breaks RL training). The
//! feedback assumes the model's turn ended with the template's end-of-turn token (`<|im_end|>`); an
//! adapter appends that token itself, with mask 0, when generation stopped on the length limit.

use anyhow::{anyhow, Result};
use serde_json::{json, Value};
use tokenizers::Tokenizer;

use crate::chat::{split_reasoning, ChatTemplate, RenderInput, END_TOKENS};
use crate::record::{Content, Message, Role};

/// A chat template and, optionally, the tokenizer it came with.
pub struct Texts {
    template: ChatTemplate,
    tokenizer: Option<Tokenizer>,
    /// What the template writes after a turn's end-of-turn token (`\n` in the Qwen formats).
    after_turn: String,
}

fn render(
    template: &ChatTemplate,
    messages: Vec<Value>,
    tools: Option<Vec<Value>>,
    gen: bool,
) -> Result<String> {
    template.render(&RenderInput {
        messages,
        tools,
        add_generation_prompt: gen,
        ..RenderInput::default()
    })
}

impl Texts {
    pub fn new(template: ChatTemplate, tokenizer: Option<Tokenizer>) -> Result<Texts> {
        let probe = render(
            &template,
            vec![json!({"role": "user", "content": "x"})],
            None,
            false,
        )?;
        let after_turn = END_TOKENS
            .iter()
            .find_map(|t| probe.rfind(t).map(|i| probe[i + t.len()..].to_string()))
            .unwrap_or_default();
        Ok(Texts {
            template,
            tokenizer,
            after_turn,
        })
    }

    /// The conversation so far with the generation prompt: what the model is given first.
    pub fn prompt(&self, messages: &[Message], tools: &[Value]) -> Result<String> {
        let tools = (!tools.is_empty()).then(|| tools.to_vec());
        render(&self.template, to_json(messages), tools, true)
    }

    /// What follows a model turn: the close of that turn, `observations` (tool results, feedback)
    /// and the next generation prompt; empty when the episode is over.
    pub fn feedback(&self, observations: &[Message], done: bool) -> Result<String> {
        if done {
            return Ok(String::new());
        }
        if observations.is_empty() {
            return Ok(self.after_turn.clone());
        }
        let rest = render(&self.template, to_json(observations), None, true)?;
        Ok(format!("{}{rest}", self.after_turn))
    }

    /// The text a model would generate for `msg` (through its end-of-turn token): what a scripted
    /// policy "generates" in token-level tests.
    pub fn completion(&self, msg: &Message) -> Result<String> {
        let user = json!({"role": "user", "content": "·"});
        let head = render(&self.template, vec![user.clone()], None, true)?;
        let full = render(&self.template, vec![user, to_value(msg)], None, false)?;
        let body = full.strip_prefix(&head).ok_or_else(|| {
            anyhow!(
                "the chat template does not render the assistant turn after its generation prompt"
            )
        })?;
        Ok(body
            .strip_suffix(&self.after_turn)
            .unwrap_or(body)
            .to_string())
    }

    /// Token ids as text, special tokens kept (the end-of-turn token is then stripped by
    /// [`completion_message`]).
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        let tok = self.tokenizer.as_ref().ok_or_else(|| {
            anyhow!("this service has no tokenizer (start it with --tokenizer DIR), so it cannot take token_ids; send `text`")
        })?;
        if let Some(bad) = ids
            .iter()
            .find(|&&id| id as usize >= tok.get_vocab_size(true))
        {
            return Err(anyhow!(
                "token id {bad} is outside the tokenizer's vocabulary ({} ids)",
                tok.get_vocab_size(true)
            ));
        }
        tok.decode(ids, false)
            .map_err(|e| anyhow!("decoding token_ids: {e}"))
    }
}

/// A raw completion as an assistant message: the end-of-turn token dropped, `<think>` reasoning
/// split off. Text-form tool calls stay in the content for the runtime to parse in the harness's
/// format, so a malformed one reaches the policy as feedback, as it would in process.
pub fn completion_message(text: &str) -> Message {
    let mut text = text;
    loop {
        let trimmed = END_TOKENS
            .iter()
            .find_map(|t| text.trim_end().strip_suffix(t));
        match trimmed {
            Some(t) => text = t,
            None => break,
        }
    }
    let mut msg = Message::text(Role::Assistant, text);
    if let Ok(split) = split_reasoning(text) {
        if let Some(reasoning) = split.reasoning {
            msg.content = Some(Content::Text(
                split.content.trim_start_matches('\n').to_string(),
            ));
            // An empty think block (thinking off) is no reasoning, as in-process policies record it.
            msg.reasoning_content = Some(reasoning).filter(|r| !r.trim().is_empty());
        }
    }
    msg
}

/// The message as a template reads it; a missing content is an empty string (templates test and
/// concatenate it).
fn to_value(m: &Message) -> Value {
    let mut v = serde_json::to_value(m).unwrap_or(Value::Null);
    if v.get("content").is_none_or(Value::is_null) {
        v["content"] = json!("");
    }
    v
}

fn to_json(messages: &[Message]) -> Vec<Value> {
    messages.iter().map(to_value).collect()
}
