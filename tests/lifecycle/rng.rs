//! The driver's randomness: a splitmix64 generator, seeded per round and
//! split into one stream per thread and per process, so that a seed replays
//! the same choices of operations (the threads' interleaving is the
//! machine's). The processes' maps and sets hash with fixed keys, so that
//! a choice among their keys replays too (under the simulation, where the
//! interleaving is the seed's, a seed then replays a whole round).

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;

/// A map whose iteration order depends only on what went in.
pub(crate) type Map<K, V> = HashMap<K, V, BuildHasherDefault<DefaultHasher>>;
/// A set whose iteration order depends only on what went in.
pub(crate) type Set<K> = HashSet<K, BuildHasherDefault<DefaultHasher>>;

/// A splitmix64 generator: deterministic per seed, no dependencies.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A new, independent stream: the `n`th child of this one.
    pub(crate) fn derive(&self, n: u64) -> Rng {
        let mut mixer = Rng(self.0 ^ n.wrapping_mul(0xD1B5_4A32_D192_ED03));
        Rng(mixer.next())
    }

    /// Uniform in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True `per_mille` times in a thousand.
    pub(crate) fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1_000) < per_mille
    }

    /// One of `items`.
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}
