//! The API key check. The comparison takes the same time wherever the given key first differs
//! from the configured one, so a client timing many 401 answers learns nothing about how much of
//! its guess was right (a plain `==` returns at the first differing byte).

/// Whether `given` equals `key`, in time that depends only on the lengths.
pub fn key_matches(given: &[u8], key: &[u8]) -> bool {
    // Walk the configured key's full length whatever `given` is; a length mismatch counts as a
    // difference instead of returning early (the key's length alone is not the secret).
    let mut diff = (given.len() ^ key.len()) as u64;
    for (i, &k) in key.iter().enumerate() {
        let g = given.get(i).copied().unwrap_or(!k);
        diff |= u64::from(g ^ k);
    }
    // Keeps the optimiser from turning the fold back into an early-exit comparison.
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::key_matches;

    #[test]
    fn matches_only_the_exact_key() {
        assert!(key_matches(b"secret-key", b"secret-key"));
        assert!(!key_matches(b"secret-kez", b"secret-key"));
        assert!(!key_matches(b"xecret-key", b"secret-key"));
        assert!(!key_matches(b"secret-ke", b"secret-key"));
        assert!(!key_matches(b"secret-key!", b"secret-key"));
        assert!(!key_matches(b"", b"secret-key"));
        // A prefix padded with the bytes that `get` would fill in must still differ.
        assert!(!key_matches(b"s", b"s\0"));
    }
}
