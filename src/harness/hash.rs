//! The harness content hash, recorded in every trajectory, eval and benchmark record.
//!
//! Policy (kept stable; changing it changes every recorded hash):
//! * the input is the harness file set (dot-files excluded, see `files.rs`), in byte order of the
//!   `/`-separated relative path — never in directory-listing or creation order;
//! * the content of a file that is valid UTF-8 is normalized by turning every CRLF into LF, so a
//!   checkout with `core.autocrlf` hashes the same as one without; other files are hashed raw;
//! * file modes and timestamps are not hashed (they differ between machines and file systems);
//! * for each file, the digest absorbs `path`, a NUL byte, the normalized length as 8 little-endian
//!   bytes, then the normalized content, so no two different file sets share a byte stream.
//!
//! The result is written `sha256:<64 lowercase hex digits>`.

use sha2::{Digest, Sha256};

use super::files::FileSet;

pub fn content_hash(files: &FileSet) -> String {
    let mut hasher = Sha256::new();
    for (key, file) in files {
        let content = normalized(&file.bytes);
        hasher.update(key.as_bytes());
        hasher.update([0u8]);
        hasher.update((content.len() as u64).to_le_bytes());
        hasher.update(&content);
    }
    let digest = hasher.finalize();
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

fn normalized(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    match std::str::from_utf8(bytes) {
        Ok(text) if text.contains("\r\n") => text.replace("\r\n", "\n").into_bytes().into(),
        _ => bytes.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::files::HarnessFile;
    use super::*;

    fn set(entries: &[(&str, &str)]) -> FileSet {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), HarnessFile::text(*v)))
            .collect()
    }

    #[test]
    fn crlf_and_lf_hash_the_same() {
        assert_eq!(
            content_hash(&set(&[("a.md", "x\r\ny\r\n")])),
            content_hash(&set(&[("a.md", "x\ny\n")]))
        );
    }

    #[test]
    fn path_and_content_boundaries_matter() {
        // Moving bytes between the path and the content must change the hash.
        assert_ne!(
            content_hash(&set(&[("ab", "c")])),
            content_hash(&set(&[("a", "bc")]))
        );
        assert_ne!(
            content_hash(&set(&[("a", "x")])),
            content_hash(&set(&[("a", "y")]))
        );
    }

    #[test]
    fn known_value_of_empty_set() {
        // sha256 of the empty string: the hash of a harness with no files.
        assert_eq!(
            content_hash(&FileSet::new()),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
