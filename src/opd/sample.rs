//! The student's samples of a step: each prompt rendered as a conversation ready for the assistant,
//! sampled `num_generations` times (all sequences decoded together, the sampler's log-probabilities
//! recorded), and turned into training views by token concatenation — prompt ids followed by the
//! sampled ids, exactly what was generated, with the loss mask on the sampled tokens only.

use anyhow::Result;
use burn::prelude::Backend;

use super::trainer::Prompt;

use crate::model::generation::generate::{FinishReason, TextGenerator};
use crate::model::generation::sampling::SamplingParams;
use crate::rng::Rng;
use crate::train::view::{Segment, SegmentKind, TrainingView};

/// A step's completions.
#[derive(Debug, Default)]
pub struct Samples {
    pub views: Vec<TrainingView>,
    /// Which of the step's prompts each view completes (an index into the prompts sampled).
    pub prompt_index: Vec<usize>,
    /// The sampler's `log q` of every sampled token, per view.
    pub sampler_logp: Vec<Vec<f64>>,
    /// Completions cut by `max_new_tokens`.
    pub clipped: usize,
    /// Prompts left out because prompt + `max_new_tokens` exceed the context.
    pub too_long: usize,
}

/// A view of `prompt` ids followed by `completion` ids, trained on the completion.
pub fn completion_view(id: String, prompt: &[u32], completion: &[u32]) -> TrainingView {
    let (p, n) = (prompt.len(), prompt.len() + completion.len());
    TrainingView {
        id,
        tokens: prompt.iter().chain(completion).copied().collect(),
        loss_mask: (0..n).map(|t| u8::from(t >= p)).collect(),
        segments: vec![
            Segment {
                start: 0,
                end: p,
                message: 0,
                kind: SegmentKind::Context,
            },
            Segment {
                start: p,
                end: n,
                message: 1,
                kind: SegmentKind::Reply,
            },
        ],
        weights: None,
    }
}

/// The prompt's token ids, rendered (with its tools) for the assistant's turn; `None` when they and
/// `max_new_tokens` do not fit the model's context.
pub fn prompt_ids<B: Backend>(
    generator: &TextGenerator<B>,
    prompt: &Prompt,
    max_new_tokens: usize,
) -> Result<Option<Vec<u32>>> {
    let ids = generator.encode(&render(generator, prompt)?)?;
    Ok(generator
        .model()
        .check_tokens(&ids, 0, max_new_tokens)
        .is_ok()
        .then_some(ids))
}

fn render<B: Backend>(generator: &TextGenerator<B>, prompt: &Prompt) -> Result<String> {
    generator.render_chat(&prompt.conversation, prompt.tools.as_deref())
}

/// Samples `num_generations` completions of every prompt. Sequence `j` of prompt `i` samples from a
/// seed derived from `(seed, step, i, j)`, so a resumed run draws the same completions.
pub fn sample<B: Backend>(
    generator: &TextGenerator<B>,
    prompts: &[&Prompt],
    num_generations: usize,
    params: &SamplingParams,
    seed: u64,
    step: usize,
) -> Result<Samples> {
    let mut out = Samples::default();
    let (mut ids, mut texts, mut names, mut per) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut index = Vec::new();
    for (i, p) in prompts.iter().enumerate() {
        let Some(prompt) = prompt_ids(generator, p, params.max_tokens)? else {
            out.too_long += 1;
            continue;
        };
        let (id, text) = (&p.id, render(generator, p)?);
        for j in 0..num_generations {
            ids.push(prompt.clone());
            texts.push(text.clone());
            names.push(format!("{id}/s{step}/g{j}"));
            index.push(i);
            per.push(SamplingParams {
                seed: Rng::derive(seed, &format!("opd-sample/{step}/{i}/{j}")).next_u64(),
                logprobs: true,
                ..params.clone()
            });
        }
    }
    if texts.is_empty() {
        return Ok(out);
    }
    out.prompt_index = index;
    for ((g, prompt), name) in generator
        .generate_text(&texts, &per)?
        .into_iter()
        .zip(ids)
        .zip(names)
    {
        let generation = g.generation;
        out.clipped += usize::from(generation.finish_reason == FinishReason::Length);
        let lp = generation
            .logprobs
            .expect("log-probs were requested")
            .into_iter()
            .map(f64::from)
            .collect();
        out.views
            .push(completion_view(name, &prompt, &generation.tokens));
        out.sampler_logp.push(lp);
    }
    Ok(out)
}
