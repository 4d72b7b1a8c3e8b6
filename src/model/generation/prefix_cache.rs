//! Automatic prefix caching: every agent request starts with the same long system prompt, so the
//! decoding state after a shared prefix is kept and reused instead of prefilled again. Used by the
//! serve engine and by [`TextGenerator`](super::generate::TextGenerator) (local rollouts and evals,
//! whose episodes share a harness prompt and grow turn by turn).
//!
//! The state is a whole snapshot (KV cache and DeltaNet recurrent state): a recurrent state cannot
//! be cut back to an earlier position the way paged KV blocks can, so a prompt reuses only states
//! stored at the exact positions it passes through. A prompt's prefill stops to store one at its
//! *stops* ([`PrefixCache::stops`]):
//!
//! * every `block` tokens (256), so that long prompts sharing a start find most of it;
//! * at its last `align`-token boundary before its end, so that the next turn of the same
//!   conversation (the prompt, the model's answer, a tool result) starts there: an agent's second
//!   and third calls prefill only what their first did not see, plus less than `align` tokens;
//! * where it parts from a stored prompt (aligned down), so that the next prompt with the same
//!   start — a system prompt and tool schemas followed by a different room or viewer — starts
//!   there instead of up to a block earlier.
//!
//! Stops are multiples of `align` (64, the DeltaNet chunk), so a prompt prefilled in pieces goes
//! through the same chunks as in one piece. A new prompt starts from the longest stored prefix that
//! leaves at least one token to prefill (its logits are needed). At most `capacity` states are
//! kept; the least recently used goes first.

use crate::model::layers::gated_deltanet::CHUNK;

/// Tokens between block stops.
pub const BLOCK: usize = 256;
/// Default number of cached prefix states.
pub const ENTRIES: usize = 64;

pub struct PrefixCache<S> {
    block: usize,
    align: usize,
    capacity: usize,
    entries: Vec<Entry<S>>,
    clock: u64,
}

struct Entry<S> {
    tokens: Vec<u32>,
    state: S,
    last_used: u64,
}

impl<S: Clone> PrefixCache<S> {
    /// Stops every [`BLOCK`] tokens, aligned to the DeltaNet chunk; `capacity` 0 disables caching
    /// (prompts are then prefilled in one piece).
    pub fn new(capacity: usize) -> Self {
        Self::with_sizes(BLOCK, CHUNK, capacity)
    }

    /// Stops every `block` tokens (a multiple of `align`) and at `align`-token boundaries.
    pub fn with_sizes(block: usize, align: usize, capacity: usize) -> Self {
        let align = align.max(1);
        Self {
            block: block.max(1).div_ceil(align) * align,
            align,
            capacity,
            entries: Vec::new(),
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
        let e = self
            .entries
            .iter_mut()
            .filter(|e| e.tokens.len() < prompt.len() && prompt.starts_with(&e.tokens))
            .max_by_key(|e| e.tokens.len())?;
        e.last_used = self.clock;
        Some((e.tokens.len(), e.state.clone()))
    }

    /// Where `prompt`'s prefill stores states between `from` and `to` (`from < stop ≤ to`), in
    /// order: block multiples, the point where it parts from the stored prompt it shares most
    /// with, and its last boundary before its end (see the module's doc). None when disabled.
    pub fn stops(&self, prompt: &[u32], from: usize, to: usize) -> Vec<usize> {
        if !self.is_enabled() || prompt.is_empty() {
            return Vec::new();
        }
        let aligned = |n: usize| n / self.align * self.align;
        let last = prompt.len() - 1;
        let parting = self
            .entries
            .iter()
            .map(|e| common_prefix(&e.tokens, prompt))
            .max()
            .unwrap_or(0);
        let blocks = (from / self.block + 1..)
            .map(|i| i * self.block)
            .take_while(|&b| b <= last);
        let mut stops: Vec<usize> = blocks
            .chain([aligned(parting.min(last)), aligned(last)])
            .filter(|&s| s > from && s <= to)
            .collect();
        stops.sort_unstable();
        stops.dedup();
        stops
    }

    /// Stores the state after `prefix` (replacing one stored for the same tokens), evicting the
    /// least recently used entry when full.
    pub fn insert(&mut self, prefix: &[u32], state: S) {
        if !self.is_enabled() {
            return;
        }
        self.clock += 1;
        let entry = Entry {
            tokens: prefix.to_vec(),
            state,
            last_used: self.clock,
        };
        if let Some(same) = self.entries.iter_mut().find(|e| e.tokens == prefix) {
            *same = entry;
            return;
        }
        if self.entries.len() >= self.capacity {
            let oldest = (0..self.entries.len()).min_by_key(|&i| self.entries[i].last_used);
            if let Some(i) = oldest {
                self.entries.swap_remove(i);
            }
        }
        self.entries.push(entry);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// How many leading tokens `a` and `b` share.
fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_longest_stored_prefix_that_leaves_a_token() {
        let mut c = PrefixCache::<&str>::with_sizes(4, 2, 8);
        let prompt: Vec<u32> = (0..10).collect();
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
    fn stops_at_blocks_at_the_last_boundary_and_where_a_prompt_parts_from_a_stored_one() {
        let mut c = PrefixCache::<()>::with_sizes(4, 2, 8);
        let prompt: Vec<u32> = (0..11).collect();
        // Blocks 4 and 8, and 10: the last 2-token boundary before the end (token 10 is left).
        assert_eq!(c.stops(&prompt, 0, 10), vec![4, 8, 10]);
        assert_eq!(c.stops(&prompt, 4, 10), vec![8, 10]);
        assert_eq!(c.stops(&prompt, 0, 8), vec![4, 8]);
        assert_eq!(c.stops(&prompt[..10], 0, 10), vec![4, 8]);
        c.insert(&prompt[..10], ());
        // Shares 7 tokens with the stored prompt: a stop at 6, where the next prompt with the
        // same start will find a state.
        let other: Vec<u32> = prompt[..7]
            .iter()
            .copied()
            .chain([99, 98, 97, 96])
            .collect();
        assert_eq!(c.stops(&other, 0, 10), vec![4, 6, 8, 10]);
        // The next turn of the stored prompt starts from its end.
        let next: Vec<u32> = prompt.iter().copied().chain([50, 51, 52]).collect();
        assert_eq!(c.longest(&next).map(|(n, _)| n), Some(10));
        assert_eq!(c.stops(&next, 10, 13), vec![12]);
        assert!(PrefixCache::<()>::with_sizes(4, 2, 0)
            .stops(&prompt, 0, 10)
            .is_empty());
    }

    #[test]
    fn evicts_the_least_recently_used() {
        let mut c = PrefixCache::<u32>::with_sizes(2, 1, 2);
        c.insert(&[1, 1], 1);
        c.insert(&[2, 2], 2);
        assert!(c.longest(&[1, 1, 0]).is_some()); // touch [1, 1]
        c.insert(&[3, 3], 3);
        assert_eq!(c.len(), 2);
        assert_eq!(c.longest(&[2, 2, 0]), None);
        assert_eq!(c.longest(&[1, 1, 0]), Some((2, 1)));
        assert_eq!(c.longest(&[3, 3, 0]), Some((2, 3)));
        // The same tokens again replace their entry.
        c.insert(&[3, 3], 4);
        assert_eq!(c.len(), 2);
        assert_eq!(c.longest(&[3, 3, 0]), Some((2, 4)));
    }

    #[test]
    fn capacity_zero_disables() {
        let mut c = PrefixCache::<u32>::new(0);
        c.insert(&[1, 1], 1);
        assert!(c.is_empty());
        assert!(c.stops(&[1; 1000], 0, 999).is_empty());
    }
}
