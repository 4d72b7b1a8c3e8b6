//! A random policy whose prompts fit: shared by the RL tests and `benches/rl.rs`.

use burn::backend::NdArray;
use hat::model::presets::preset;
use hat::model::CausalLm;
use hat::tokenizer::{save_hf, train_bpe, TrainOptions, QWEN3_CHAT_TEMPLATE};

/// A random `tiny` policy with a BPE tokenizer trained on the harness's own files and the tasks, so
/// the system prompt takes a few thousand tokens, not tens of thousands.
pub fn policy_dir(
    harness: &hat::harness::Harness,
    tasks: &[hat::record::Trajectory],
) -> tempfile::TempDir {
    let mut corpus: Vec<String> = tasks
        .iter()
        .flat_map(|t| t.messages.iter().map(|m| m.text_content()))
        .collect();
    corpus.extend(
        harness
            .tools()
            .iter()
            .map(|t| serde_json::to_string(t).unwrap()),
    );
    let mut pending = vec![std::path::PathBuf::from("harness-samples/taolive")];
    while let Some(p) = pending.pop() {
        for e in std::fs::read_dir(&p).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                corpus.extend(text.lines().map(str::to_string));
            }
        }
    }
    let tok = train_bpe(
        corpus,
        &TrainOptions {
            vocab_size: 2000,
            min_frequency: 2,
        },
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    save_hf(&tok, dir.path(), QWEN3_CHAT_TEMPLATE, 8192).unwrap();
    let mut cfg = preset("tiny", Some(tok.get_vocab_size(true))).unwrap();
    // A tokenizer this small spends ~8k tokens on the harness's system prompt and tools.
    cfg.max_position_embeddings = 16384;
    let m = CausalLm::<NdArray<f32>>::init(&cfg, 3, &Default::default()).unwrap();
    hat::model::io::checkpoint::save(&m, dir.path(), Default::default()).unwrap();
    dir
}
