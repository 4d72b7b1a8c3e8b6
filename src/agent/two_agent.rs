//! Two-agent play, as in the earlier Taobao Live system (reference/seeds/000…: a tool-call agent and a
//! reply agent, each trained with its own reward): in every assistant move the tool agent decides
//! first. A move that calls tools — or tries to, with a text-form call the runtime will parse or send
//! back as malformed — is the tool agent's. Once the tool agent would answer instead, its draft is
//! dropped and the reply agent writes the answer from the same conversation, so the episode goes on
//! exactly as with one policy. Every message is tagged with its author (`"agent": "tool"` or
//! `"reply"`), which is how `grpo-train --two-agent` trains each model on its own moves only.
//!
//! The tool agent's decision to answer leaves no tokens in the episode: it learns from the calls it
//! makes, not from the calls it leaves out.

use anyhow::Result;
use serde_json::Value;

use super::runtime::TOOL_CALL_OPEN;
use crate::policy::{Conversation, Policy};
use crate::record::Message;

/// The key of a message's author tag (in [`Message::extra`]).
pub const KEY: &str = "agent";

/// Which of the two agents wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentRole {
    Tool,
    Reply,
}

impl AgentRole {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentRole::Tool => "tool",
            AgentRole::Reply => "reply",
        }
    }

    /// The author `msg` is tagged with; `None` for an untagged message (one policy played it).
    pub fn of(msg: &Message) -> Option<AgentRole> {
        match msg.extra.get(KEY).and_then(Value::as_str)? {
            "tool" => Some(AgentRole::Tool),
            "reply" => Some(AgentRole::Reply),
            _ => None,
        }
    }

    fn tag(self, msg: &mut Message) {
        msg.extra.insert(KEY.into(), Value::from(self.as_str()));
    }
}

/// A tool agent and a reply agent behind one [`Policy`], for the agent runtime.
pub struct TwoAgent<T, R> {
    tool: T,
    reply: R,
    name: String,
}

impl<T: Policy, R: Policy> TwoAgent<T, R> {
    pub fn new(tool: T, reply: R) -> Self {
        let name = format!("{}+{}", tool.name(), reply.name());
        TwoAgent { tool, reply, name }
    }
}

impl<T: Policy, R: Policy> Policy for TwoAgent<T, R> {
    fn name(&self) -> &str {
        &self.name
    }

    fn respond(&self, conv: &Conversation<'_>) -> Result<Message> {
        let draft = self.tool.respond(conv)?;
        let calls_tools =
            !draft.tool_calls.is_empty() || draft.text_content().contains(TOOL_CALL_OPEN);
        let (role, mut msg) = if calls_tools {
            (AgentRole::Tool, draft)
        } else {
            (AgentRole::Reply, self.reply.respond(conv)?)
        };
        role.tag(&mut msg);
        Ok(msg)
    }

    fn end_session(&self, session: &str) {
        self.tool.end_session(session);
        self.reply.end_session(session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{FunctionCall, Role, ToolCall};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Answers with a fixed message and counts its calls.
    struct Fixed(Message, AtomicUsize);

    impl Policy for Fixed {
        fn name(&self) -> &str {
            "fixed"
        }
        fn respond(&self, _: &Conversation<'_>) -> Result<Message> {
            self.1.fetch_add(1, Ordering::SeqCst);
            Ok(self.0.clone())
        }
    }

    fn call() -> Message {
        let mut m = Message::text(Role::Assistant, "");
        m.tool_calls.push(ToolCall {
            id: String::new(),
            kind: "function".into(),
            function: FunctionCall {
                name: "get_stock".into(),
                arguments: "{}".into(),
                extra: Default::default(),
            },
            extra: Default::default(),
        });
        m
    }

    #[test]
    fn the_tool_agent_calls_and_the_reply_agent_answers() {
        let conv = Conversation {
            messages: &[],
            tools: &[],
            turn_start: 0,
            task: None,
            session: None,
        };
        let answer = Message::text(Role::Assistant, "还有货哦");
        let play = |draft: Message| {
            let two = TwoAgent::new(
                Fixed(draft, AtomicUsize::new(0)),
                Fixed(answer.clone(), AtomicUsize::new(0)),
            );
            let msg = two.respond(&conv).unwrap();
            (msg, two.reply.1.load(Ordering::SeqCst))
        };
        let (msg, replies) = play(call());
        assert_eq!(AgentRole::of(&msg), Some(AgentRole::Tool));
        assert_eq!(msg.tool_calls.len(), 1);
        assert_eq!(replies, 0, "a tool move does not ask the reply agent");
        // A text-form call (parsed, or sent back as malformed, by the runtime) is a tool move too.
        let (msg, _) = play(Message::text(
            Role::Assistant,
            "<tool_call>{\"name\": \"get_stock\"",
        ));
        assert_eq!(AgentRole::of(&msg), Some(AgentRole::Tool));
        // The tool agent would answer: its draft is dropped, the reply agent's answer is taken.
        let (msg, replies) = play(Message::text(Role::Assistant, "draft"));
        assert_eq!(AgentRole::of(&msg), Some(AgentRole::Reply));
        assert_eq!(msg.text_content(), "还有货哦");
        assert_eq!(replies, 1);
        assert_eq!(AgentRole::of(&answer), None);
    }
}
