//! Policies: whatever produces the assistant's next message. A scripted oracle teacher, an
//! OpenAI-compatible endpoint and (later) the local model all sit behind [`Policy`], so the agent runtime
//! and every stage that rolls out episodes treat them alike.

pub mod endpoints;
pub mod listed_names;
pub mod local;
pub mod noise;
pub mod openai;
pub mod oracle;
pub mod prompt_logprobs;
pub mod reading;
pub mod sampler_logprobs;

use anyhow::Result;

use crate::record::{Message, Task, Tool};

/// The conversation so far, as a policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct Conversation<'a> {
    /// System prompt, the viewer's messages, and this turn's assistant/tool/feedback messages.
    pub messages: &'a [Message],
    /// OpenAI function tools of the harness, as shown to the model.
    pub tools: &'a [Tool],
    /// Index in `messages` where the current turn's generated messages begin.
    pub turn_start: usize,
    /// The simulated task, when there is one. Only a scripted teacher may read its hidden ground truth;
    /// model policies must ignore it.
    pub task: Option<&'a Task>,
    /// The episode this move belongs to: a key unique to the episode within the process, the same for
    /// all its moves (`None` outside an episode). A policy over several endpoints keeps an episode on
    /// one of them by it.
    pub session: Option<&'a str>,
}

/// Produces the next assistant message: text content, optional reasoning and optional tool calls.
pub trait Policy: Send + Sync {
    /// A short name for records (`meta.policy`).
    fn name(&self) -> &str;

    fn respond(&self, conv: &Conversation<'_>) -> Result<Message>;

    /// The episode `session` is over: forget whatever was kept for it. Wrappers pass it on.
    fn end_session(&self, _session: &str) {}
}

/// A policy shared by several owners (one endpoint client, so one balance, for every harness setting).
impl<P: Policy + ?Sized> Policy for std::sync::Arc<P> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn respond(&self, conv: &Conversation<'_>) -> Result<Message> {
        (**self).respond(conv)
    }

    fn end_session(&self, session: &str) {
        (**self).end_session(session)
    }
}
