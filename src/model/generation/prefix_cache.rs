//! Automatic prefix caching: every agent request starts with the same long system prompt, so the
//! decoding state after a shared prefix is kept and reused instead of prefilled again. Used by the
//! serve engine and by [`TextGenerator`](super::generate::TextGenerator) (local rollouts and evals,
//! whose episodes share a harness prompt and grow turn by turn).
//!
//! Prompts are prefilled in blocks of `block` tokens; the state after each full block is stored,
//! keyed by the tokens before it (a hash, confirmed by comparing the tokens), in a cache of at
//! most `capacity` entries that evicts the least recently used. A new prompt starts from the
//! longest stored prefix that leaves at least one token to prefill (its logits are needed).
//! The state is a whole snapshot (KV cache and DeltaNet recurrent state), since a recurrent
//! state cannot be assembled from per-block pieces the way paged KV blocks can.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// Tokens per block: a multiple of the DeltaNet chunk (64), so a prompt prefilled in blocks goes
/// through the same chunks as in one piece.
pub const BLOCK: usize = 256;
/// Default number of cached prefix states.
pub const ENTRIES: usize = 64;

pub struct PrefixCache<S> {
    block: usize,
    capacity: usize,
    entries: HashMap<u64, Entry<S>>,
    clock: u64,
}

struct Entry<S> {
    tokens: Vec<u32>,
    state: S,
    last_used: u64,
}

impl<S: Clone> PrefixCache<S> {
    /// `capacity` 0 disables caching (prompts are then prefilled in one piece).
    pub fn new(block: usize, capacity: usize) -> Self {
        Self {
            block: block.max(1),
            capacity,
            entries: HashMap::new(),
            clock: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn is_enabled(&self) -> bool {
        self.capacity > 0
    }

    /// The longest stored prefix of `prompt` shorter than the prompt: its length and a copy of
    /// its state.
    pub fn longest(&mut self, prompt: &[u32]) -> Option<(usize, S)> {
        self.clock += 1;
        let clock = self.clock;
        let boundaries: Vec<usize> = self.boundaries(0, prompt.len()).collect();
        for &b in boundaries.iter().rev() {
            if let Some(e) = self.entries.get_mut(&key(&prompt[..b])) {
                if e.tokens == prompt[..b] {
                    e.last_used = clock;
                    return Some((b, e.state.clone()));
                }
            }
        }
        None
    }

    /// Block boundaries strictly between `start` and `len` (where a state may be stored).
    pub fn boundaries(&self, start: usize, len: usize) -> impl Iterator<Item = usize> {
        let block = self.block;
        let enabled = self.is_enabled();
        (start / block + 1..)
            .map(move |i| i * block)
            .take_while(move |&b| enabled && b < len)
    }

    /// Whether a state after `len` tokens is one the cache stores (a block boundary).
    pub fn is_boundary(&self, len: usize) -> bool {
        self.is_enabled() && len > 0 && len % self.block == 0
    }

    /// Stores the state after `prefix`, evicting the least recently used entry when full.
    pub fn insert(&mut self, prefix: &[u32], state: S) {
        if !self.is_enabled() {
            return;
        }
        self.clock += 1;
        let k = key(prefix);
        if !self.entries.contains_key(&k) && self.entries.len() >= self.capacity {
            if let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| *k)
            {
                self.entries.remove(&oldest);
            }
        }
        self.entries.insert(
            k,
            Entry {
                tokens: prefix.to_vec(),
                state,
                last_used: self.clock,
            },
        );
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn key(tokens: &[u32]) -> u64 {
    let mut h = DefaultHasher::new();
    tokens.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_longest_stored_prefix_that_leaves_a_token() {
        let mut c = PrefixCache::<&str>::new(4, 8);
        let prompt: Vec<u32> = (0..10).collect();
        assert_eq!(c.boundaries(0, 10).collect::<Vec<_>>(), vec![4, 8]);
        assert_eq!(c.boundaries(4, 10).collect::<Vec<_>>(), vec![8]);
        assert_eq!(c.boundaries(0, 8).collect::<Vec<_>>(), vec![4]);
        c.insert(&prompt[..4], "four");
        c.insert(&prompt[..8], "eight");
        assert_eq!(c.longest(&prompt), Some((8, "eight")));
        // Exactly 8 tokens: the 8-token state would leave nothing to prefill.
        assert_eq!(c.longest(&prompt[..8]), Some((4, "four")));
        // A different token inside the first block: no hit.
        let mut other = prompt.clone();
        other[1] = 99;
        assert_eq!(c.longest(&other), None);
    }

    #[test]
    fn evicts_the_least_recently_used() {
        let mut c = PrefixCache::<u32>::new(2, 2);
        c.insert(&[1, 1], 1);
        c.insert(&[2, 2], 2);
        assert!(c.longest(&[1, 1, 0]).is_some()); // touch [1, 1]
        c.insert(&[3, 3], 3);
        assert_eq!(c.len(), 2);
        assert_eq!(c.longest(&[2, 2, 0]), None);
        assert_eq!(c.longest(&[1, 1, 0]), Some((2, 1)));
        assert_eq!(c.longest(&[3, 3, 0]), Some((2, 3)));
    }

    #[test]
    fn capacity_zero_disables() {
        let mut c = PrefixCache::<u32>::new(2, 0);
        c.insert(&[1, 1], 1);
        assert!(c.is_empty());
        assert_eq!(c.boundaries(0, 10).count(), 0);
    }
}
