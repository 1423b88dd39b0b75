//! fio's own random numbers (fio 3.33's `lib/rand.[ch]` and `setup_random_seeds`), for the
//! draws elevator makes as fio makes them, so that a job file draws what fio draws: the
//! 32-bit combined Tausworthe generator (taus88, L'Ecuyer 1996) fio's per-job states use,
//! seeded from `randseed` and the job's thread number when `randrepeat` holds (fio's
//! default), and `rand_between`. Written from a reading of those files; the constants are
//! the algorithm's, with fio's seeding quirks kept (below).

/// fio's multiplier between successive seeds (`0x9e370001UL`, a golden-ratio prime).
const SEED_MULTIPLIER: u64 = 0x9e37_0001;

/// Where in `td->rand_seeds` each of fio's generators takes its seed (`FIO_RAND_*_OFF`).
pub mod seed_index {
    /// `FIO_RAND_MIX_OFF`: the data direction of a mixed job (`rwmix_state`).
    pub const MIX: u64 = 4;
    /// `FIO_RAND_FILE_OFF`: the file `file_service_type=random` serves next
    /// (`next_file_state`).
    pub const FILE: u64 = 5;
    /// `FIO_RAND_BLOCK_OFF`: a random job's offsets (`random_state`), without `randrepeat`.
    pub const BLOCK: u64 = 6;
    /// `FIO_RAND_FILE_SIZE_OFF`: the sizes `filesize=LOW-HIGH` draws (`file_size_state`).
    pub const FILE_SIZE: u64 = 7;
}

/// `randseed=`'s default.
pub const DEFAULT_RANDSEED: u64 = 0x89;

/// The seed fio gives generator `index` of the job with thread number `thread_number`
/// (1-based: the job's place among all jobs and their `numjobs` clones, in job file order),
/// under `randrepeat` or an explicit `randseed` (`setup_random_seeds`).
pub fn job_seed(randseed: u64, thread_number: u64, index: u64) -> u64 {
    let mut seed = randseed;
    for _ in 0..4 + index {
        seed = seed.wrapping_mul(SEED_MULTIPLIER);
    }
    seed.wrapping_mul(thread_number).wrapping_add(index)
}

/// fio's `struct taus88_state` with `__rand32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Taus88 {
    s1: u32,
    s2: u32,
    s3: u32,
}

impl Taus88 {
    /// `init_rand_seed(state, seed, false)`: the seed cut to 32 bits (`__init_rand32` takes
    /// an `unsigned int`), three LCG steps from it, each kept above the generator's
    /// forbidden small values, then six draws thrown away.
    pub fn new(seed: u64) -> Taus88 {
        let seed = seed as u32;
        let lcg = |x: u32| x.wrapping_mul(69069) ^ seed;
        let at_least = |x: u32, m: u32| if x < m { x.wrapping_add(m) } else { x };
        // fio writes the first LCG input as `(2^31) + (2^17) + (2^7)`, where C's `^` is
        // exclusive or: 29 + 19 + 5.
        let s1 = at_least(lcg(53), 1);
        let s2 = at_least(lcg(s1), 7);
        let s3 = at_least(lcg(s2), 15);
        let mut t = Taus88 { s1, s2, s3 };
        for _ in 0..6 {
            t.next_u32();
        }
        t
    }

    /// `__rand32`.
    pub fn next_u32(&mut self) -> u32 {
        fn step(s: u32, a: u32, b: u32, c: u32, d: u32) -> u32 {
            ((s & c) << d) ^ (((s << a) ^ s) >> b)
        }
        self.s1 = step(self.s1, 13, 19, 0xffff_fffe, 12);
        self.s2 = step(self.s2, 2, 25, 0xffff_fff8, 4);
        self.s3 = step(self.s3, 3, 11, 0xffff_fff0, 17);
        self.s1 ^ self.s2 ^ self.s3
    }

    /// `rand_between(state, start, end)` for a 32-bit state: `start` plus a draw scaled to
    /// `end - start + 1` values through a double, as `rand32_upto` does.
    pub fn between(&mut self, start: u32, end: u32) -> u32 {
        let r = self.next_u32();
        let span = f64::from(end - start) + 1.0;
        start + (span * (f64::from(r) / 4_294_967_296.0)) as u32
    }
}

/// One of fio's per-job generators as fio draws from it: taus88 from its seed, seeded again
/// at each pass where fio reseeds (`clear_io_state`'s `td_fill_rand_seeds`, under
/// `randrepeat` without `randseed=`). Used for `random_state` (a random job's offsets,
/// `__get_next_rand_offset`), `next_file_state` (`__get_next_fileno_rand`) and
/// `rwmix_state` (a mixed job's directions, `get_rand_ddir`). Deviation: under
/// `random_generator=tausworthe64` fio uses its 64-bit generator; this stays taus88.
#[derive(Clone, Copy, Debug)]
pub struct Draws {
    seed: u64,
    state: Taus88,
    reseed_each_pass: bool,
}

impl Draws {
    pub fn new(seed: u64, reseed_each_pass: bool) -> Draws {
        Draws { seed, state: Taus88::new(seed), reseed_each_pass }
    }

    /// [`Taus88::between`] on this generator.
    pub fn between(&mut self, start: u32, end: u32) -> u32 {
        self.state.between(start, end)
    }

    /// `n * (r / (rand_max + 1.0))`, truncated: one of `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        let r = f64::from(self.state.next_u32());
        (n as f64 * (r / 4_294_967_296.0)) as u64
    }

    /// A new pass: the draws start over if this generator reseeds each pass.
    pub fn new_pass(&mut self) {
        if self.reseed_each_pass {
            self.state = Taus88::new(self.seed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_follow_setup_random_seeds() {
        // seed = randseed × K⁴, then the i-th: seed × K^i × thread + i.
        let k = SEED_MULTIPLIER;
        let base = 0x89u64.wrapping_mul(k.wrapping_pow(4));
        assert_eq!(job_seed(0x89, 1, 0), base);
        assert_eq!(job_seed(0x89, 3, 4), base.wrapping_mul(k.wrapping_pow(4)).wrapping_mul(3) + 4);
    }

    #[test]
    fn draws_stay_in_range_and_spread() {
        let mut t = Taus88::new(job_seed(DEFAULT_RANDSEED, 1, seed_index::MIX));
        let mut seen = [0u32; 100];
        for _ in 0..100_000 {
            let v = t.between(1, 100);
            assert!((1..=100).contains(&v));
            seen[v as usize - 1] += 1;
        }
        assert!(seen.iter().all(|&n| (800..1200).contains(&n)), "{seen:?}");
    }

    #[test]
    fn a_small_seed_is_lifted_past_the_forbidden_values() {
        // LCG(53, seed) is 0 for this seed: s1 becomes 1, and the generator still moves.
        let seed = u64::from(53u32.wrapping_mul(69069));
        let mut t = Taus88::new(seed);
        let a = t.next_u32();
        assert_ne!(a, t.next_u32());
    }
}
