//! A tiny seeded generator (SplitMix64) so every seeded choice is reproducible from a seed without
//! pulling a crate whose stream might change between versions. It sits at the crate root, below every
//! other module, because the simulator, HSA, token sampling, training batches and the replay set all
//! draw from it.

/// SplitMix64: fast, statistically fine for simulation, and its output is fixed forever by the algorithm.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// An independent stream for one named purpose, so adding draws in one place never shifts another.
    pub fn derive(seed: u64, tag: &str) -> Rng {
        let mut h = seed ^ 0x9E37_79B9_7F4A_7C15;
        for b in tag.bytes() {
            h = mix(h ^ u64::from(b));
        }
        Rng(h)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// Uniform in `0..n` (`n > 0`); the modulo bias is negligible for the small `n` used here.
    pub fn below(&mut self, n: usize) -> usize {
        debug_assert!(n > 0);
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + self.below((hi - lo + 1) as usize) as u32
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }

    /// `k` distinct numbers below `n` (`k ≤ n`), drawn uniformly, in draw order.
    pub fn distinct(&mut self, n: usize, k: usize) -> Vec<usize> {
        let mut all: Vec<usize> = (0..n).collect();
        // A partial Fisher–Yates shuffle: place i takes a uniform pick of what is left.
        for i in 0..k {
            let j = i + self.below(n - i);
            all.swap(i, j);
        }
        all.truncate(k);
        all
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_tags_differ() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let mut r = Rng::new(7);
        assert_eq!(a, (0..4).map(|_| r.next_u64()).collect::<Vec<_>>());
        assert_ne!(
            Rng::derive(7, "a").next_u64(),
            Rng::derive(7, "b").next_u64()
        );
        let mut r = Rng::new(1);
        assert!((0..1000).all(|_| r.below(3) < 3));
    }

    #[test]
    fn distinct_draws_each_number_at_most_once_and_all_of_them_evenly() {
        let mut r = Rng::new(3);
        let mut first = [0usize; 10];
        for _ in 0..5000 {
            let d = r.distinct(10, 4);
            let mut sorted = d.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), 4);
            assert!(d.iter().all(|&x| x < 10));
            first[d[0]] += 1;
        }
        // Each number leads ~500 times in 5000 draws (binomial sd ~21).
        assert!(first.iter().all(|&c| (400..600).contains(&c)), "{first:?}");
        assert_eq!(r.distinct(5, 5).len(), 5);
    }
}
