//! The raw file set of a harness directory: every file, byte for byte, keyed by its normalized
//! root-relative path.
//!
//! The file set is the source of truth. Parsed views (manifest, tools, skills, hooks, prompts) are
//! derived from it, the content hash is computed over it, and writing a harness back writes it out
//! unchanged, which is what makes load → write byte-identical and lets the augmentation stage edit
//! one file while every other file keeps its original text (comments, key order, whitespace).
//!
//! Policy: entries whose name starts with `.` (`.git`, `.DS_Store`, editor swap files) are not part
//! of a harness. Symlinks are followed only when they resolve to a regular file inside the root;
//! a symlink that points outside, dangles, or names a directory is reported and left out.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::paths::PathError;
use super::problem::Problem;

/// Largest file a harness may contain. Harness files are prompts and JSON; anything bigger is a
/// mistake (a model checkpoint dropped into the directory) and would bloat every record's hash work.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// One file of a harness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessFile {
    pub bytes: Vec<u8>,
    /// Whether any execute bit is set (hook commands must be executable). Not part of the hash.
    pub executable: bool,
}

impl HarnessFile {
    pub fn text(text: impl Into<String>) -> Self {
        HarnessFile {
            bytes: text.into().into_bytes(),
            executable: false,
        }
    }
}

/// All files of a harness, sorted by key (`prompts/system.md.j2`, always `/`-separated).
pub type FileSet = BTreeMap<String, HarnessFile>;

/// Reads every file under `root`. Problems (unreadable entries, symlinks out, oversized files) are
/// collected; the files that could be read are returned regardless.
pub fn read_dir(root: &Path) -> (FileSet, Vec<Problem>) {
    let mut files = FileSet::new();
    let mut problems = Vec::new();
    match root.canonicalize() {
        Ok(canon) if canon.is_dir() => walk(&canon, &canon, "", &mut files, &mut problems),
        Ok(_) => problems.push(Problem::file(root.display().to_string(), "not a directory")),
        Err(e) => problems.push(Problem::file(
            root.display().to_string(),
            format!("cannot open harness directory: {e}"),
        )),
    }
    (files, problems)
}

fn walk(root: &Path, dir: &Path, prefix: &str, files: &mut FileSet, problems: &mut Vec<Problem>) {
    let shown = if prefix.is_empty() {
        ".".to_string()
    } else {
        prefix.to_string()
    };
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            return problems.push(Problem::file(shown, format!("cannot list directory: {e}")))
        }
    };
    let mut names = Vec::new();
    for entry in entries {
        match entry {
            Ok(entry) => match entry.file_name().into_string() {
                Ok(name) => names.push(name),
                Err(raw) => problems.push(Problem::file(
                    format!("{shown}/{}", raw.to_string_lossy()),
                    "file name is not valid UTF-8",
                )),
            },
            Err(e) => problems.push(Problem::file(
                shown.clone(),
                format!("cannot list directory: {e}"),
            )),
        }
    }
    names.sort();
    for name in names {
        if name.starts_with('.') {
            continue;
        }
        let key = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let path = dir.join(&name);
        let meta = match fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) => {
                problems.push(Problem::file(key, format!("cannot stat: {e}")));
                continue;
            }
        };
        if meta.file_type().is_symlink() {
            match path.canonicalize() {
                Err(_) => {
                    problems.push(Problem::field(key, "path", "symlink target does not exist"))
                }
                Ok(target) if !target.starts_with(root) => problems.push(Problem::field(
                    key,
                    "path",
                    PathError::SymlinkOutside.to_string(),
                )),
                Ok(target) if target.is_dir() => problems.push(Problem::field(
                    key,
                    "path",
                    "symlinks to directories are not supported; copy the directory instead",
                )),
                Ok(target) => read_file(&target, key, files, problems),
            }
        } else if meta.is_dir() {
            walk(root, &path, &key, files, problems);
        } else if meta.is_file() {
            read_file(&path, key, files, problems);
        } else {
            problems.push(Problem::file(
                key,
                "not a regular file (device, socket or fifo)",
            ));
        }
    }
}

fn read_file(path: &Path, key: String, files: &mut FileSet, problems: &mut Vec<Problem>) {
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) => return problems.push(Problem::file(key, format!("cannot stat: {e}"))),
    };
    if meta.len() > MAX_FILE_BYTES {
        return problems.push(Problem::file(
            key,
            format!(
                "file is {} bytes; harness files are limited to {MAX_FILE_BYTES} bytes",
                meta.len()
            ),
        ));
    }
    match fs::read(path) {
        Ok(bytes) => {
            files.insert(
                key,
                HarnessFile {
                    bytes,
                    executable: is_executable(&meta),
                },
            );
        }
        Err(e) => problems.push(Problem::file(key, format!("cannot read: {e}"))),
    }
}

#[cfg(unix)]
fn is_executable(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &fs::Metadata) -> bool {
    // No execute bit to read; the hook runner decides how to start the script.
    true
}

/// Writes `files` into `dir`, which must not exist yet or be empty: writing over an existing
/// harness would leave stale files behind and silently change its hash.
pub fn write_dir(files: &FileSet, dir: &Path) -> Result<()> {
    if dir.exists() {
        let mut entries =
            fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
        if entries.next().is_some() {
            bail!(
                "{}: refusing to write a harness into a non-empty directory",
                dir.display()
            );
        }
    }
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (key, file) in files {
        // Keys come from a FileSet, but a caller may have built one by hand: re-check them.
        let clean = super::paths::normalize_relative("", key)
            .map_err(|e| anyhow::anyhow!("{key}: refusing to write: {e}"))?;
        let path = dir.join(&clean);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        fs::write(&path, &file.bytes)
            .with_context(|| format!("cannot write {}", path.display()))?;
        set_executable(&path, file.executable)?;
    }
    Ok(())
}

#[cfg(unix)]
fn set_executable(path: &Path, executable: bool) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = if executable { 0o755 } else { 0o644 };
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot set permissions of {}", path.display()))
}

#[cfg(not(unix))]
fn set_executable(_path: &Path, _executable: bool) -> Result<()> {
    Ok(())
}

/// The UTF-8 text of a file, or a problem naming it.
pub fn text<'a>(files: &'a FileSet, key: &str) -> Result<&'a str, Problem> {
    let file = files
        .get(key)
        .ok_or_else(|| Problem::file(key, "file is missing"))?;
    std::str::from_utf8(&file.bytes).map_err(|e| {
        let line =
            super::problem::line_of_offset(&String::from_utf8_lossy(&file.bytes), e.valid_up_to());
        Problem::file(key, "file is not valid UTF-8").at_line(Some(line))
    })
}
