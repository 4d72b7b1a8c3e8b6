//! A local model's answers to general prompts: each prompt rendered as one user turn with the model's
//! chat template, decoded greedily in batches (greedy, so a score moves only when the model does).

use anyhow::Result;
use burn::prelude::Backend;
use serde_json::json;

use crate::model::generation::generate::TextGenerator;
use crate::model::generation::sampling::SamplingParams;

/// The model's answer to every prompt, `batch` prompts decoded together. A prompt that does not fit
/// the context with `max_new_tokens` is answered with an empty string (which follows no instruction)
/// and counted in the second value.
pub fn answer<B: Backend>(
    generator: &TextGenerator<B>,
    prompts: &[String],
    max_new_tokens: usize,
    batch: usize,
) -> Result<(Vec<String>, usize)> {
    let mut out = vec![String::new(); prompts.len()];
    let mut skipped = 0;
    let mut fitting = Vec::new();
    for (i, p) in prompts.iter().enumerate() {
        let text = generator.render_chat(&[json!({"role": "user", "content": p})], None)?;
        let ids = generator.encode(&text)?;
        if generator
            .model()
            .check_tokens(&ids, 0, max_new_tokens)
            .is_ok()
        {
            fitting.push((i, text));
        } else {
            skipped += 1;
        }
    }
    for chunk in fitting.chunks(batch.max(1)) {
        let texts: Vec<String> = chunk.iter().map(|(_, t)| t.clone()).collect();
        let params = vec![SamplingParams::greedy(max_new_tokens); texts.len()];
        for ((i, _), g) in chunk.iter().zip(generator.generate_text(&texts, &params)?) {
            out[*i] = g.text;
        }
    }
    Ok((out, skipped))
}
