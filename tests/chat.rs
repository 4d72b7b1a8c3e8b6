//! Chat templates and tool-call parsing against transformers' own output.
//!
//! Golden cases in `testdata/chat/cases/` come from `scripts/gen_chat_goldens.py`, which renders
//! each input with transformers' `apply_chat_template(..., tokenize=False)`.

use hat::chat::{ChatTemplate, RenderInput};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/chat")
}

fn first_difference(a: &str, b: &str) -> String {
    let at = a
        .char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i);
    let ctx = |s: &str| {
        let window: String = s
            .char_indices()
            .filter(|(i, _)| *i + 60 >= at && *i <= at + 60)
            .map(|(_, c)| c)
            .collect();
        format!("{window:?}")
    };
    format!(
        "at byte {at}:\n  rust:         {}\n  transformers: {}",
        ctx(a),
        ctx(b)
    )
}

#[test]
fn golden_renders_match_transformers_byte_for_byte() {
    let dir = testdata();
    let mut templates: BTreeMap<String, ChatTemplate> = BTreeMap::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir.join("cases"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 25, "only {} golden cases", paths.len());
    let mut failures = Vec::new();
    for path in &paths {
        let case: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let name = case["template"].as_str().unwrap().to_string();
        let template = templates.entry(name.clone()).or_insert_with(|| {
            ChatTemplate::from_file(&dir.join("templates").join(&name)).unwrap()
        });
        let input = RenderInput::from_json(&case["input"]).unwrap();
        let got = template.render(&input);
        let case_name = path.file_stem().unwrap().to_string_lossy();
        match (got, case.get("expected").and_then(Value::as_str)) {
            (Ok(got), Some(want)) if got == want => {}
            (Ok(got), Some(want)) => {
                failures.push(format!("{case_name}: {}", first_difference(&got, want)))
            }
            (Err(e), Some(_)) => failures.push(format!("{case_name}: render failed: {e:#}")),
            (Ok(got), None) => failures.push(format!(
                "{case_name}: transformers refused ({}) but rust rendered {got:?}",
                case["error"]
            )),
            (Err(_), None) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
