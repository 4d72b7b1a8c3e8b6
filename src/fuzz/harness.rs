//! Target `harness`: a harness directory as an operator edits it (harness.toml, MCP tool JSON,
//! SKILL.md front matter, hooks.json, prompt templates and pipeline). A harness that validates must
//! load and render its system prompt; one that does not must say which file each problem is in.
//!
//! The input edits the sample harness (`harness-samples/taolive`) rather than spelling a whole
//! directory, so the search starts from a valid harness and each input stays one small file:
//! `--- PATH` lines start a file's new text (nothing before the first one counts), and a header
//! followed directly by the next one or the end removes the file.

use std::sync::OnceLock;

use crate::harness::paths::normalize_relative;
use crate::harness::{check_files, files, FileSet, Harness, HarnessFile, LiveContext};

pub fn check(data: &[u8]) {
    let files = edited(data);
    let problems = check_files(files.clone());
    for p in &problems {
        assert!(
            !p.file.is_empty() && !p.file.starts_with('/'),
            "problem without a harness file: {p:?}"
        );
        assert!(p.to_string().starts_with(&p.file), "{p}");
    }
    if !problems.is_empty() {
        return;
    }
    let harness = Harness::from_files(files)
        .unwrap_or_else(|e| panic!("a harness without problems does not load: {e:#}"));
    harness
        .render_prompt(&LiveContext::default_context())
        .unwrap_or_else(|e| panic!("a valid harness does not render: {e:#}"));
}

/// The sample harness with the input's edits applied.
fn edited(data: &[u8]) -> FileSet {
    static SAMPLE: OnceLock<FileSet> = OnceLock::new();
    let mut files = SAMPLE
        .get_or_init(|| {
            let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/harness-samples/taolive");
            let (files, problems) = files::read_dir(dir.as_ref());
            assert!(
                problems.is_empty(),
                "the sample harness reads: {problems:?}"
            );
            files
        })
        .clone();
    // Bytes, not text: a file that is not UTF-8 is one of the things to reject.
    let mut current: Option<(String, Vec<u8>)> = None;
    for line in data.split_inclusive(|&b| b == b'\n') {
        if let Some(path) = line.strip_prefix(b"--- ") {
            apply(&mut files, current.take());
            // Only keys a directory read can produce: normalized, inside the root.
            let path = String::from_utf8_lossy(path);
            current = normalize_relative("", path.trim())
                .ok()
                .map(|key| (key, Vec::new()));
        } else if let Some((_, body)) = &mut current {
            body.extend_from_slice(line);
        }
    }
    apply(&mut files, current);
    files
}

/// Puts one edited file into `files`: its new bytes, or its removal when they are empty. A file
/// that was a hook command stays executable.
fn apply(files: &mut FileSet, edit: Option<(String, Vec<u8>)>) {
    let Some((path, bytes)) = edit else { return };
    if bytes.is_empty() {
        files.remove(&path);
        return;
    }
    let executable = files.get(&path).is_some_and(|f| f.executable);
    files.insert(path, HarnessFile { bytes, executable });
}
