//! A candidate harness: proposed file edits applied to an in-memory copy of the current version, then
//! checked by the same rules as `hat harness validate`. Nothing is written here: the loop writes an
//! accepted-for-evaluation candidate into its own version directory, so an edit can never reach a file
//! outside the copy, whatever path it names.

use serde::{Deserialize, Serialize};
use similar::TextDiff;

use crate::harness::files::{HarnessFile, MAX_FILE_BYTES};
use crate::harness::paths::normalize_relative;
use crate::harness::Harness;

/// One edit: the whole new text of a harness file (created when absent), or `null` to remove it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEdit {
    /// Path relative to the harness root, `/`-separated.
    pub path: String,
    pub content: Option<String>,
}

/// `base` with `edits` applied, or why the edits are refused (unsafe path, oversized file, no change,
/// a harness that no longer parses or validates).
pub fn apply(base: &Harness, edits: &[FileEdit]) -> Result<Harness, String> {
    if edits.is_empty() {
        return Err("the proposal has no edits".into());
    }
    let mut files = base.files().clone();
    for e in edits {
        let key = normalize_relative("", &e.path)
            .map_err(|why| format!("edit of '{}' refused: {why}", e.path))?;
        if key.split('/').any(|part| part.starts_with('.')) {
            return Err(format!(
                "edit of '{}' refused: dot files are not part of a harness",
                e.path
            ));
        }
        match &e.content {
            Some(text) if text.len() as u64 > MAX_FILE_BYTES => {
                return Err(format!(
                    "edit of '{key}' refused: {} bytes, over the {MAX_FILE_BYTES}-byte limit of a harness file",
                    text.len()
                ));
            }
            Some(text) => {
                let executable = files.get(&key).is_some_and(|f| f.executable);
                files.insert(
                    key,
                    HarnessFile {
                        bytes: text.clone().into_bytes(),
                        executable,
                    },
                );
            }
            None => {
                if files.remove(&key).is_none() {
                    return Err(format!(
                        "edit removes '{key}', which the harness does not have"
                    ));
                }
            }
        }
    }
    if &files == base.files() {
        return Err("the edits change nothing".into());
    }
    let candidate = base
        .edited(|f| *f = files)
        .map_err(|e| format!("the edited harness does not load: {e:#}"))?;
    let problems = candidate.validate();
    if !problems.is_empty() {
        let list: Vec<String> = problems.iter().map(ToString::to_string).collect();
        return Err(format!(
            "the edited harness does not validate: {}",
            list.join("; ")
        ));
    }
    Ok(candidate)
}

/// A unified diff of every file that differs between `a` and `b` (`a/…`, `b/…` headers as git writes
/// them; a file absent on one side diffs against nothing).
pub fn unified_diff(a: &Harness, b: &Harness) -> String {
    let text = |h: &Harness, key: &str| -> String {
        h.files()
            .get(key)
            .map(|f| String::from_utf8_lossy(&f.bytes).into_owned())
            .unwrap_or_default()
    };
    let mut keys: Vec<&String> = a.files().keys().chain(b.files().keys()).collect();
    keys.sort();
    keys.dedup();
    let mut out = String::new();
    for key in keys {
        if a.files().get(key) == b.files().get(key) {
            continue;
        }
        let (old, new) = (text(a, key), text(b, key));
        let diff = TextDiff::from_lines(&old, &new);
        out += &diff
            .unified_diff()
            .context_radius(2)
            .header(&format!("a/{key}"), &format!("b/{key}"))
            .to_string();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taolive() -> Harness {
        Harness::load(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/harness-samples/taolive"
        ))
        .unwrap()
    }

    fn edit(path: &str, content: Option<&str>) -> FileEdit {
        FileEdit {
            path: path.into(),
            content: content.map(str::to_string),
        }
    }

    #[test]
    fn unsafe_empty_and_no_op_edits_are_refused_with_the_reason() {
        let h = taolive();
        let refused = |edits: &[FileEdit]| apply(&h, edits).err().unwrap();
        assert!(refused(&[]).contains("no edits"));
        for p in [
            "../x.md",
            "skills/../../x.md",
            "/etc/passwd",
            "C:/x",
            "a\\b.md",
        ] {
            assert!(
                refused(&[edit(p, Some("x"))]).starts_with(&format!("edit of '{p}' refused")),
                "{p}"
            );
        }
        assert!(refused(&[edit(".git/config", Some("x"))]).contains("dot files"));
        assert!(refused(&[edit("nope.md", None)]).contains("does not have"));
        let same = String::from_utf8(h.files()["harness.toml"].bytes.clone()).unwrap();
        assert!(refused(&[edit("harness.toml", Some(&same))]).contains("change nothing"));
        let invalid = same.replace("max_reply_chars = 120", "max_reply_chars = 0");
        let why = refused(&[edit("harness.toml", Some(&invalid))]);
        assert!(
            why.contains("does not validate") && why.contains("max_reply_chars"),
            "{why}"
        );
    }

    #[test]
    fn a_valid_edit_makes_a_candidate_and_a_diff_of_that_file_only() {
        let h = taolive();
        let text = String::from_utf8(h.files()["harness.toml"].bytes.clone()).unwrap();
        let raised = text.replace("max_reply_chars = 120", "max_reply_chars = 180");
        let c = apply(&h, &[edit("harness.toml", Some(&raised))]).unwrap();
        assert_eq!(c.limits().max_reply_chars, 180);
        assert_ne!(c.hash(), h.hash());
        let diff = unified_diff(&h, &c);
        assert!(
            diff.starts_with("--- a/harness.toml\n+++ b/harness.toml\n"),
            "{diff}"
        );
        assert!(diff.contains("-max_reply_chars = 120\n+max_reply_chars = 180\n"));
        assert_eq!(unified_diff(&h, &h), "");
    }
}
