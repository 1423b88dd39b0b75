//! A fast hash for maps keyed by small integers (request ids, pids, queue indices) on the hot
//! paths of the schedulers and the server, where SipHash's flood resistance buys nothing (the
//! keys are ours, not an attacker's) and its cost shows in profiles. Each word is folded in
//! with a rotate, xor and multiply by the golden-ratio constant (the rustc "Fx" scheme), which
//! also spreads sequential ids into the high bits hashbrown uses for its tags.
//!
//! Lookups only: nothing may iterate such a map in an order that reaches output.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// See the module documentation.
#[derive(Clone, Copy, Default)]
pub struct FastHasher(u64);

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }
    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

/// A `HashMap` with [`FastHasher`].
pub type FastHashMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;
/// A `HashSet` with [`FastHasher`].
pub type FastHashSet<K> = HashSet<K, BuildHasherDefault<FastHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composite_keys_differ_and_sequential_ids_spread() {
        let h = |k: (u32, usize)| {
            let mut s = FastHasher::default();
            std::hash::Hash::hash(&k, &mut s);
            s.finish()
        };
        assert_ne!(h((1, 2)), h((2, 1)));
        let mut m: FastHashMap<u64, u64> = FastHashMap::default();
        for i in 0..10_000 {
            m.insert(i, i * 2);
        }
        assert_eq!(m[&4321], 8642);
        let tops: FastHashSet<u64> = (0..256u64)
            .map(|i| {
                let mut s = FastHasher::default();
                s.write_u64(i);
                s.finish() >> 57
            })
            .collect();
        assert!(tops.len() > 64, "top bits vary: {}", tops.len());
    }
}
