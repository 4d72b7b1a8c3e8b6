//! The policy of a local checkpoint: render the conversation and tools with the model's chat
//! template, generate, and take the reply apart into content, reasoning and tool calls.
//!
//! A reply whose tool calls do not parse is returned as raw text: the agent runtime parses
//! text-form calls itself and feeds the error back to the model, so the episode goes on.

use super::listed_names::{ListedNames, ToolNames};
use super::sampler_logprobs::SamplerLogprobs;
use super::{Conversation, Policy};
use crate::chat::{parse_assistant_output_any_name, ToolCallFormat};
use crate::model::cpu::spin_team;
use crate::model::generation::generate::TextGenerator;
use crate::model::generation::sampling::SamplingParams;
use crate::model::WeightDtype;
use crate::record::{json_values, FunctionCall, Message, Role, ToolCall};
use crate::rng::Rng;
use anyhow::{anyhow, Context, Result};
use burn::backend::NdArray;
use burn::prelude::*;
use serde_json::{Map, Value as Json};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// How the local policy generates and reads tool calls.
#[derive(Debug, Clone)]
pub struct LocalOptions {
    /// Sampling of each reply. `seed` is the base seed: each reply draws from a stream derived
    /// from it and the rendered prompt, so a rerun reproduces every episode. With `logprobs`, each
    /// message carries its generated tokens and their log-probs ([`SamplerLogprobs`]; RL's
    /// truncated importance sampling).
    pub sampling: SamplingParams,
    /// Storage of the projection weights ([`LocalPolicy::load`]).
    pub dtype: WeightDtype,
    /// Which names the model may write in a tool call ([`ToolNames`]).
    pub tool_names: ToolNames,
}

impl Default for LocalOptions {
    fn default() -> Self {
        Self {
            sampling: SamplingParams {
                temperature: 0.0,
                max_tokens: 512,
                ..SamplingParams::default()
            },
            dtype: WeightDtype::F32,
            tool_names: ToolNames::Free,
        }
    }
}

/// A checkpoint directory behind [`Policy`].
pub struct LocalPolicy<B: Backend = NdArray<f32>> {
    name: String,
    /// Generation takes the whole model; concurrent episodes take turns. Shared by the policy's
    /// [`siblings`](LocalPolicy::sibling), which differ only in their sampling seed.
    generator: Arc<Mutex<TextGenerator<B>>>,
    /// With `--tool-names listed`: the tokens' texts that the name constraint tests.
    listed: Option<Arc<ListedNames>>,
    /// The format the model writes tool calls in: its chat template's
    /// ([`ChatTemplate::tool_call_format`](crate::chat::ChatTemplate::tool_call_format)).
    format: ToolCallFormat,
    options: LocalOptions,
}

impl LocalPolicy<NdArray<f32>> {
    /// Loads `dir` (weights, `tokenizer.json`, `tokenizer_config.json` with the chat template)
    /// on the CPU.
    pub fn load(dir: &Path, options: LocalOptions) -> Result<Self> {
        let generator = TextGenerator::load_as(dir, options.dtype, &Default::default())
            .with_context(|| format!("loading the local policy from {}", dir.display()))?;
        Self::new(generator, &format!("local:{}", dir.display()), options)
    }
}

impl<B: Backend> LocalPolicy<B> {
    pub fn new(generator: TextGenerator<B>, name: &str, options: LocalOptions) -> Result<Self> {
        options.sampling.validate()?;
        let format = generator
            .template
            .as_ref()
            .map(|t| t.tool_call_format())
            .ok_or_else(|| {
                anyhow!("{name} has no chat template; add `chat_template` to tokenizer_config.json")
            })?;
        let listed = (options.tool_names == ToolNames::Listed)
            .then(|| Arc::new(ListedNames::new(&generator.tokenizer)));
        Ok(Self {
            name: name.to_string(),
            generator: Arc::new(Mutex::new(generator)),
            listed,
            format,
            options,
        })
    }

    /// The same model sampled from another seed: the G rollouts of one prompt in RL must not draw
    /// the same stream (each reply's stream derives from the seed and the prompt).
    pub fn sibling(&self, seed: u64) -> Self {
        let mut options = self.options.clone();
        options.sampling.seed = seed;
        Self {
            name: self.name.clone(),
            generator: Arc::clone(&self.generator),
            listed: self.listed.clone(),
            format: self.format,
            options,
        }
    }

    /// Replaces the weights every sibling generates with (an on-policy trainer after its update).
    pub fn set_model(&self, model: crate::model::CausalLm<B>) -> Result<()> {
        self.generator
            .lock()
            .map_err(|_| anyhow!("the local model panicked in another episode"))?
            .set_model(model);
        Ok(())
    }
}

impl<B: Backend> Policy for LocalPolicy<B>
where
    TextGenerator<B>: Send,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn respond(&self, conv: &Conversation<'_>) -> Result<Message> {
        let messages = json_values(conv.messages)?;
        let tools = json_values(conv.tools)?;
        let mut generator = self
            .generator
            .lock()
            .map_err(|_| anyhow!("the local model panicked in another episode"))?;
        let prompt = generator.render_chat(&messages, (!tools.is_empty()).then_some(&tools[..]))?;
        let params = SamplingParams {
            seed: Rng::derive(self.options.sampling.seed, &prompt).next_u64(),
            ..self.options.sampling.clone()
        };
        // Episodes played in parallel wait here for the model in turn, so one reply may use every
        // core (the rollout workers are rayon's, whose own sections would run on one).
        // (`&mut`: the model may cross to that thread, but not be shared with it.)
        let model: &mut TextGenerator<B> = &mut generator;
        let format = self.format;
        let listed = self.listed.as_deref();
        let out = spin_team::with_team(move || match listed {
            Some(listed) => {
                let names: Vec<String> =
                    conv.tools.iter().map(|t| t.function.name.clone()).collect();
                model.generate_text_masked(&prompt, &params, |text, logits| {
                    listed.mask(format, &names, text, logits)
                })
            }
            None => Ok(model.generate_text(&[prompt], &[params])?.remove(0)),
        })?;
        drop(generator);
        let mut msg = to_message(&out.text, self.format, &tools);
        if let Some(lps) = &out.generation.logprobs {
            SamplerLogprobs::from_ids(out.generation.tokens.clone(), lps).attach(&mut msg);
        }
        Ok(msg)
    }
}

/// The assistant message of a generated reply; raw text when its tool calls do not parse. (Rollouts
/// on servers rebuild the servers' replies with it too, so both read a reply alike.) A well-formed call
/// to a tool the prompt does not list is kept as a call, for the runtime to answer with the tools it
/// has: as raw text it would be parsed again in the *harness's* format, which need not be the one
/// this model writes (a Qwen3-template model under an XML harness got "expected `<function=NAME>`"
/// instead of the list of tools).
pub fn to_message(text: &str, format: ToolCallFormat, tools: &[Json]) -> Message {
    let Ok(out) = parse_assistant_output_any_name(text, format, Some(tools)) else {
        return Message::text(Role::Assistant, text);
    };
    let mut msg = Message::text(Role::Assistant, out.content);
    msg.reasoning_content = out.reasoning;
    msg.tool_calls = out
        .tool_calls
        .into_iter()
        .map(|c| ToolCall {
            // The runtime numbers calls per round.
            id: String::new(),
            kind: "function".into(),
            function: FunctionCall {
                name: c.name,
                arguments: Json::Object(c.arguments).to_string(),
                extra: Map::new(),
            },
            extra: Map::new(),
        })
        .collect();
    msg
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<Json> {
        vec![
            json!({"type": "function", "function": {"name": "retrieve_purchase",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}),
        ]
    }

    #[test]
    fn a_call_to_an_unlisted_tool_stays_a_call_for_the_runtime_to_answer() {
        let text = "<tool_call>\n{\"name\": \"lookup_order\", \"arguments\": {\"order_id\": \"8219\"}}\n</tool_call>";
        let msg = to_message(text, ToolCallFormat::Hermes, &tools());
        assert_eq!(msg.tool_calls.len(), 1);
        assert_eq!(msg.tool_calls[0].function.name, "lookup_order");
        assert_eq!(
            msg.tool_calls[0].function.arguments,
            r#"{"order_id":"8219"}"#
        );
        assert_eq!(msg.text_content(), "");
    }

    #[test]
    fn a_malformed_call_stays_text_for_the_runtime_to_report() {
        let text = "<tool_call>\n{\"name\": \"retrieve_purchase\", \"arguments\": {\"order_id\": \n</tool_call>";
        let msg = to_message(text, ToolCallFormat::Hermes, &tools());
        assert!(msg.tool_calls.is_empty());
        assert_eq!(msg.text_content(), text);
    }
}
