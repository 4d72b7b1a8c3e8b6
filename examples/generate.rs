//! Load a checkpoint directory and generate a reply with its chat template, as `hat model generate
//! --chat` and the local policy do. Without a directory, one is made first: the `tiny` preset with
//! random weights and a small tokenizer trained on the sample harness's text (so the reply is
//! well-formed tokens but gibberish: the point is the path, not the quality).
//!
//!     cargo run --release --example generate [CHECKPOINT_DIR] [PROMPT]

mod common;

use std::path::PathBuf;

use anyhow::Result;
use burn::backend::NdArray;
use hat::harness::{Harness, LiveContext};
use hat::model::generation::generate::TextGenerator;
use hat::model::generation::sampling::SamplingParams;
use hat::model::io::checkpoint::{self, SaveOptions};
use hat::model::presets::preset;
use hat::model::CausalLm;
use hat::tokenizer::{save_hf, train_bpe, TrainOptions, QWEN3_CHAT_TEMPLATE};
use serde_json::json;

type B = NdArray<f32>;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let given = args.next().map(PathBuf::from);
    let prompt = args.next().unwrap_or_else(|| "这件羽绒服还有货吗？".into());
    // Kept alive until the end: dropping it deletes the random checkpoint.
    let scratch = tempfile::tempdir()?;
    let dir = match given {
        Some(dir) => dir,
        None => {
            random_checkpoint(&scratch.path().join("tiny"))?;
            scratch.path().join("tiny")
        }
    };

    // Weights, tokenizer.json and the chat template from tokenizer_config.json, all from one directory.
    let generator = TextGenerator::<B>::load(&dir, &Default::default())?;
    let rendered = generator.render_chat(&[json!({"role": "user", "content": prompt})], None)?;
    println!(
        "chat template rendered {} chars:\n{rendered}",
        rendered.len()
    );
    let params = SamplingParams {
        temperature: 0.8,
        seed: 1,
        max_tokens: 24,
        ..SamplingParams::default()
    };
    let out = generator.generate_text(&[rendered], &[params])?.remove(0);
    println!(
        "generated {} tokens (finish: {}): {}",
        out.generation.tokens.len(),
        out.generation.finish_reason.as_str(),
        out.text
    );
    Ok(())
}

/// What `hat tokenizer train` + `hat model init --preset tiny` write, in one step.
fn random_checkpoint(dir: &std::path::Path) -> Result<()> {
    let harness = Harness::load(common::sample_harness_dir())?;
    let prompt = harness.render_system_prompt(&LiveContext::default_context())?;
    let corpus: Vec<&str> = prompt.lines().filter(|l| !l.trim().is_empty()).collect();
    let options = TrainOptions {
        vocab_size: 600,
        min_frequency: 2,
    };
    let tokenizer = train_bpe(corpus, &options)?;
    save_hf(&tokenizer, dir, QWEN3_CHAT_TEMPLATE, 4096)?;
    let cfg = preset("tiny", Some(tokenizer.get_vocab_size(true)))?;
    let model = CausalLm::<B>::init(&cfg, 0, &Default::default())?;
    checkpoint::save(&model, dir, SaveOptions::default())?;
    println!(
        "wrote a random-weight tiny model (vocab {}) to {}",
        cfg.vocab_size,
        dir.display()
    );
    Ok(())
}
