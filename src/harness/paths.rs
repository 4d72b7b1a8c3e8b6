//! Safe resolution of paths written inside a harness.
//!
//! A harness is data that operators (and the augmentation stage) edit, and that the runtime later
//! executes (hook commands) or reads (templates, skill references). No path written in it may
//! reach outside the harness directory. Two layers enforce that:
//! * [`normalize_relative`] is lexical: it rejects absolute paths, drive prefixes, backslashes and
//!   any `..` that climbs above the root, and yields a canonical `a/b/c` key;
//! * [`resolve_on_disk`] additionally canonicalizes against the real file system, so a symlink
//!   that points out of the directory is caught too.

use std::path::{Path, PathBuf};

/// Why a path written in a harness was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    Empty,
    Absolute,
    Backslash,
    EscapesRoot,
    NotFound,
    SymlinkOutside,
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PathError::Empty => "path is empty",
            PathError::Absolute => {
                "absolute paths are not allowed; use a path relative to the harness directory"
            }
            PathError::Backslash => "use '/' as the path separator (backslashes are not portable)",
            PathError::EscapesRoot => "path leaves the harness directory ('..' above the root)",
            PathError::NotFound => "no such file in the harness directory",
            PathError::SymlinkOutside => {
                "path resolves (through a symlink) to a location outside the harness directory"
            }
        })
    }
}

/// Normalizes `path`, written relative to the directory `base` (itself a normalized path relative
/// to the harness root, `""` for the root), into a root-relative key such as `prompts/a.j2`.
pub fn normalize_relative(base: &str, path: &str) -> Result<String, PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if path.contains('\\') {
        return Err(PathError::Backslash);
    }
    let bytes = path.as_bytes();
    let has_drive = bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic();
    if path.starts_with('/') || has_drive {
        return Err(PathError::Absolute);
    }
    let mut parts: Vec<&str> = base.split('/').filter(|s| !s.is_empty()).collect();
    for comp in path.split('/') {
        match comp {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(PathError::EscapesRoot);
                }
            }
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        return Err(PathError::Empty);
    }
    Ok(parts.join("/"))
}

/// Resolves a root-relative path on disk and checks, after following symlinks, that it is still
/// inside `root`. This is what code that *executes* or opens harness paths (hook runners) must use.
pub fn resolve_on_disk(root: &Path, rel: &str) -> Result<PathBuf, PathError> {
    let key = normalize_relative("", rel)?;
    let root = root.canonicalize().map_err(|_| PathError::NotFound)?;
    let full = root
        .join(&key)
        .canonicalize()
        .map_err(|_| PathError::NotFound)?;
    if full.starts_with(&root) {
        Ok(full)
    } else {
        Err(PathError::SymlinkOutside)
    }
}

/// The directory part of a root-relative key (`"skills/a/SKILL.md"` → `"skills/a"`).
pub fn parent_of(key: &str) -> &str {
    key.rfind('/').map_or("", |i| &key[..i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_inside_paths() {
        assert_eq!(
            normalize_relative("", "prompts/./a.j2").unwrap(),
            "prompts/a.j2"
        );
        assert_eq!(
            normalize_relative("skills/x", "../y/ref.md").unwrap(),
            "skills/y/ref.md"
        );
        assert_eq!(
            normalize_relative("hooks", "check.sh").unwrap(),
            "hooks/check.sh"
        );
    }

    #[test]
    fn rejects_escapes() {
        assert_eq!(
            normalize_relative("", "../etc/passwd"),
            Err(PathError::EscapesRoot)
        );
        assert_eq!(
            normalize_relative("skills/x", "../../../a"),
            Err(PathError::EscapesRoot)
        );
        assert_eq!(
            normalize_relative("", "/etc/passwd"),
            Err(PathError::Absolute)
        );
        assert_eq!(normalize_relative("", "C:/x"), Err(PathError::Absolute));
        assert_eq!(normalize_relative("", "a\\b"), Err(PathError::Backslash));
        assert_eq!(normalize_relative("", "."), Err(PathError::Empty));
    }

    #[test]
    fn parent_of_keys() {
        assert_eq!(parent_of("skills/a/SKILL.md"), "skills/a");
        assert_eq!(parent_of("harness.toml"), "");
    }
}
