//! Target `checkpoint`: what a downloaded Hugging Face checkpoint hands the loader: `config.json`
//! and a safetensors file's header (and the tensor bytes it points into). A config that parses
//! writes a config.json that parses to the same config; a safetensors file that opens reads every
//! tensor it lists, or says which tensor of which file is wrong.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::split_at_nul;
use crate::model::config::ModelConfig;
use crate::model::io::checkpoint::Checkpoint;

const SHARD: &str = "model.safetensors";

/// `config.json`, a NUL, then `model.safetensors`.
pub fn check(data: &[u8]) {
    let (config, weights) = split_at_nul(data);
    check_config(config);
    check_weights(weights);
}

fn check_config(text: &[u8]) {
    let Ok(json) = serde_json::from_slice::<Value>(text) else {
        return;
    };
    let Ok(config) = ModelConfig::from_json(&json) else {
        return;
    };
    let written = config.to_hf_json();
    let again = ModelConfig::from_json(&written)
        .unwrap_or_else(|e| panic!("a written config.json does not parse: {e:#}\n{written}"));
    assert_eq!(
        again, config,
        "config changed through config.json:\n{written}"
    );
}

fn check_weights(bytes: &[u8]) {
    let dir = Path::new("checkpoint");
    let shards = vec![(dir.join(SHARD), bytes.to_vec())];
    let checkpoint = match Checkpoint::from_shards(dir, shards) {
        Ok(checkpoint) => checkpoint,
        Err(e) => {
            assert_names_file(&format!("{e:#}"));
            return;
        }
    };
    let names: Vec<String> = checkpoint.names().cloned().collect();
    for name in names {
        match checkpoint.read(&name) {
            Ok((shape, values)) => {
                let n = shape.iter().try_fold(1usize, |n, d| n.checked_mul(*d));
                assert_eq!(n, Some(values.len()), "{name}: shape {shape:?}");
            }
            Err(e) => assert_names_file(&format!("{e:#}")),
        }
    }
}

fn assert_names_file(shown: &str) {
    let path: PathBuf = Path::new("checkpoint").join(SHARD);
    assert!(
        shown.contains(&path.display().to_string()),
        "error does not name the file: {shown}"
    );
}
