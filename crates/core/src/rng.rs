//! Seeded random streams.
//!
//! The generator is xoshiro256++ (Blackman & Vigna, 2019) from `rand_xoshiro`: fast, with 256
//! bits of state. A simulation has one master seed; stream `k` (one per random source: a job's
//! offsets and sizes, a device's rotational phase, ...) is seeded with `seed ^ k·φ` (φ the
//! 64-bit golden ratio, so distinct `k` give distinct seeds), expanded to 256 bits by
//! SplitMix64 as `seed_from_u64` documents. Streams are thus statistically independent, adding a
//! source never perturbs the others, and building one costs O(1) whatever its index. Same seed,
//! same stream index: the same numbers on every machine.

use rand::{Rng, RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// One independent, reproducible stream of random numbers.
#[derive(Clone, Debug)]
pub struct RandomStream {
    inner: Xoshiro256PlusPlus,
}

impl RandomStream {
    /// Stream number `stream` of the simulation seeded with `seed`.
    pub fn new(seed: u64, stream: u32) -> RandomStream {
        const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
        RandomStream {
            inner: Xoshiro256PlusPlus::seed_from_u64(seed ^ u64::from(stream).wrapping_mul(GOLDEN)),
        }
    }

    /// A uniformly distributed integer in `0..bound` (`bound` > 0).
    #[inline]
    pub fn below(&mut self, bound: u64) -> u64 {
        debug_assert!(bound > 0);
        self.inner.gen_range(0..bound)
    }

    /// A uniformly distributed float in `[0, 1)`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        self.inner.gen::<f64>()
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> =
            (0..4).map(|_| 0).scan(RandomStream::new(7, 0), |s, _| Some(s.next_u64())).collect();
        let b: Vec<u64> =
            (0..4).map(|_| 0).scan(RandomStream::new(7, 0), |s, _| Some(s.next_u64())).collect();
        let c: Vec<u64> =
            (0..4).map(|_| 0).scan(RandomStream::new(7, 1), |s, _| Some(s.next_u64())).collect();
        let d: Vec<u64> =
            (0..4).map(|_| 0).scan(RandomStream::new(8, 0), |s, _| Some(s.next_u64())).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }

    #[test]
    fn below_stays_in_range() {
        let mut s = RandomStream::new(1, 0);
        assert!((0..1000).all(|_| s.below(10) < 10));
    }
}
