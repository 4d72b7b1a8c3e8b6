//! The library's layers (docs/architecture.md), read from the sources: a module may use its own layer
//! and the layers below it, never one above, so that the simulator, a policy or the model can be
//! understood, tested and reused without the stages built on them. A new upward `use` fails here.

use std::path::{Path, PathBuf};

/// Bottom to top. Each CLI module sits with what it composes.
const LAYERS: &[&[&str]] = &[
    &["record", "jsonl", "rng", "fresh_ids", "evidence", "heap"],
    &["harness", "chat", "tokenizer", "tokenizer_cli"],
    &["model"],
    &["sim", "policy"],
    &[
        "agent",
        "hsa",
        "judge",
        "general",
        "fresh_names",
        "records_cli",
    ],
    &["train", "eval", "distill", "rl", "opd", "evolve"],
    &["serve", "replay", "service"],
    &["fuzz"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The `.rs` files of a top-level module: `src/NAME.rs`, or everything under `src/NAME/`.
fn files_of(module: &str) -> Vec<PathBuf> {
    let file = src().join(format!("{module}.rs"));
    if file.is_file() {
        return vec![file];
    }
    let mut files = Vec::new();
    let mut dirs = vec![src().join(module)];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files
}

/// The top-level modules a source text names through `crate::`, both `crate::a::…` and the
/// grouped `crate::{a, b::{…}}` form.
fn crate_modules(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (start, _) in text.match_indices("crate::") {
        let rest = &text[start + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut at_item_start = true;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => at_item_start = true,
                    c if at_item_start && (c.is_alphanumeric() || c == '_') => item.push(c),
                    _ if at_item_start && !item.is_empty() => {
                        found.push(std::mem::take(&mut item));
                        at_item_start = false;
                    }
                    _ => {}
                }
            }
            if !item.is_empty() {
                found.push(item);
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            found.push(name);
        }
    }
    found
}

#[test]
fn the_import_scanner_sees_plain_and_grouped_paths() {
    let text = "use crate::agent::Agent;\nuse crate::{sim::tasks, model::{cpu, io}, rng};\n";
    assert_eq!(crate_modules(text), ["agent", "sim", "model", "rng"]);
}

#[test]
fn every_library_module_has_a_layer() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let unplaced: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';'))
        .filter(|m| layer_of(m).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules without a layer in tests/layering.rs and docs/architecture.md: {unplaced:?}"
    );
}

#[test]
fn no_module_imports_from_a_layer_above_it() {
    let mut upward = Vec::new();
    for module in LAYERS.iter().flat_map(|l| l.iter()) {
        let own = layer_of(module).unwrap();
        for file in files_of(module) {
            let text = std::fs::read_to_string(&file).unwrap();
            for used in crate_modules(&text) {
                if layer_of(&used).is_some_and(|l| l > own) {
                    upward.push(format!("{}: crate::{used}", file.display()));
                }
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports from a higher layer:\n{}",
        upward.join("\n")
    );
}

/// The rule the issue states outright, checked on its own so that a change to the table above
/// cannot quietly drop it.
#[test]
fn sim_policy_and_model_use_no_stage_built_on_them() {
    for module in ["sim", "policy", "model"] {
        for file in files_of(module) {
            let text = std::fs::read_to_string(&file).unwrap();
            for higher in ["agent", "distill", "train", "serve"] {
                assert!(
                    !text.contains(&format!("crate::{higher}")),
                    "{} uses crate::{higher}",
                    file.display()
                );
            }
        }
    }
}
