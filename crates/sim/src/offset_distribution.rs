//! fio's non-uniform random offsets (`random_distribution=`): which aligned place of its
//! region a random job's next I/O goes to, when not uniformly anywhere.
//!
//! Each follows fio 3.33 (`lib/zipf.c`, `lib/gauss.c`, `io_u.c`'s zoned draws, set up per
//! file by `filesetup.c`):
//! - **zipf** and **pareto** draw a rank over `nranges` ranges of the job's smallest block
//!   (read or write), the region's size over it rounded up. Zipf uses Gray et al.'s generator
//!   ("Quickly generating billion-record synthetic databases", SIGMOD 1994), whose
//!   normaliser fio sums over at most [`ZIPF_MAX_TERMS`] terms; Pareto raises a uniform draw
//!   to the power `ln h / ln(1 - h)`.
//! - **normal** averages [`GAUSS_ITERS`] uniform draws over `0..=nranges`, then adds a
//!   uniform deviation of the given percentage of the ranges, halved until it stays inside.
//! - All three scatter the rank over the region with fio's multiplicative hash (Knuth's
//!   golden ratio, `__hash_u64`) and shift it by `rand_off` (random, or the center times
//!   the ranges; normal's center is relative to the middle), modulo the ranges: the hot
//!   blocks are not next to each other. The place is the rank times the I/O's alignment,
//!   as fio's `b * ba`.
//! - **zoned** picks a zone by a uniform percentile, then a uniform place inside it;
//!   **zoned_abs** the same with zones in bytes. A direction without zones is uniform.
//!
//! Deviations: the draws come from the job's own stream, not fio's per-file Tausworthe
//! generators, so the same job gives other offsets with the same distribution (`rand_off`
//! included); normal's uniform draws are 64-bit where fio's are 32-bit (fio cannot reach
//! past 2^32 ranges). fio gives up on an I/O whose drawn place runs past the region
//! (block sizes that differ by direction); here the place wraps around the region's places.
//! fio's Gaussian can loop for ever when a draw lands exactly on `nranges` with a
//! deviation set; here the deviation stops halving at zero. The Zipf normaliser past 10,000
//! terms comes from the Euler–Maclaurin formula instead of fio's term-by-term sum (the
//! same value to about 1e-12), so a job over a large region costs no set-up time.

use elevator_core::RandomStream;
use elevator_fio::{DistributionZone, RandomDistribution};

/// fio's hash of a rank (`__hash_u64`): multiplication by 2^64 / φ.
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;

/// fio sums the Zipf normaliser over at most this many ranges (`ZIPF_MAX_GEN`): past it the
/// distribution's tail is that of a smaller region.
pub const ZIPF_MAX_TERMS: u64 = 10_000_000;

/// Uniform draws averaged into one Gaussian one (fio's `GAUSS_ITERS`).
pub const GAUSS_ITERS: u64 = 12;

/// Terms of the Zipf normaliser summed one by one before the Euler–Maclaurin tail.
const ZETA_EXACT_TERMS: u64 = 10_000;

/// A random job's offset distribution, once its region is known.
#[derive(Clone, Debug)]
pub struct OffsetDistribution {
    kind: Kind,
    /// Ranks are scattered by fio's hash (its `disable_hash` off): so for offsets; a file
    /// choice keeps ranks in order, the hottest ranges side by side.
    hash: bool,
}

#[derive(Clone, Debug)]
enum Kind {
    Zipf(Zipf),
    Pareto {
        nranges: u64,
        power: f64,
        rand_off: u64,
    },
    Normal {
        nranges: u64,
        stddev: i64,
        rand_off: u64,
    },
    /// Per direction, fio's `zone_state_index`: for each percentile 1..=100, the zone's start
    /// and end in percent of the region (`Zoned`) or in bytes (`ZonedAbs`).
    Zoned {
        table: [Vec<(u64, u64)>; 3],
        absolute: bool,
    },
}

#[derive(Clone, Debug)]
struct Zipf {
    nranges: u64,
    theta: f64,
    zetan: f64,
    alpha: f64,
    eta: f64,
    rand_off: u64,
}

impl OffsetDistribution {
    /// The distribution over a region of `region_bytes`, its ranges `range_bytes` long (the
    /// job's smallest block); `None` for the uniform one, which the random map serves.
    /// `rng` draws `rand_off`. A `zoned_abs` distribution whose zones run past the region is
    /// an error (fio stops the job: "zoned_abs sizes exceed file size").
    pub fn new(
        dist: &RandomDistribution,
        region_bytes: u64,
        range_bytes: u64,
        rng: &mut RandomStream,
    ) -> Result<Option<OffsetDistribution>, String> {
        let nranges = region_bytes.div_ceil(range_bytes.max(1)).max(1);
        let centered = |center: Option<f64>, rng: &mut RandomStream| match center {
            Some(c) => (nranges as f64 * c) as u64,
            None => rng.next_u64(),
        };
        let kind = match dist {
            RandomDistribution::Random => return Ok(None),
            RandomDistribution::Zipf { theta, center } => {
                let theta = *theta;
                let zetan = zipf_normaliser(nranges.min(ZIPF_MAX_TERMS), theta);
                let zeta2 = 1.0 + 0.5f64.powf(theta);
                let n = nranges as f64;
                Kind::Zipf(Zipf {
                    nranges,
                    theta,
                    zetan,
                    alpha: 1.0 / (1.0 - theta),
                    eta: (1.0 - (2.0 / n).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
                    rand_off: centered(*center, rng),
                })
            }
            RandomDistribution::Pareto { h, center } => Kind::Pareto {
                nranges,
                power: h.ln() / (1.0 - h).ln(),
                rand_off: centered(*center, rng),
            },
            RandomDistribution::Normal { deviation_percent, center } => {
                let stddev = if *deviation_percent > 0.0 {
                    ((nranges as f64 * deviation_percent / 100.0).ceil() as u64).min(nranges / 2)
                } else {
                    0
                };
                // A center left of the middle is a negative shift; as fio's (x86-64) cast of
                // it to an unsigned 64-bit value, it wraps.
                let rand_off = center.map_or(0, |c| (nranges as f64 * (c - 0.5)) as i64 as u64);
                Kind::Normal { nranges, stddev: stddev as i64, rand_off }
            }
            RandomDistribution::Zoned { zones } => {
                Kind::Zoned { table: zones.clone().map(|z| percentile_table(&z)), absolute: false }
            }
            RandomDistribution::ZonedAbs { zones } => {
                for z in zones {
                    let total: u64 = z.iter().map(|z| z.size).fold(0, u64::saturating_add);
                    if total > region_bytes {
                        return Err(format!(
                            "random_distribution zoned_abs: the zones cover {total} bytes, more than the job's region of {region_bytes}"
                        ));
                    }
                }
                Kind::Zoned { table: zones.clone().map(|z| percentile_table(&z)), absolute: true }
            }
        };
        Ok(Some(OffsetDistribution { kind, hash: true }))
    }

    /// fio's `zipf_disable_hash` / `gauss_disable_hash`, as its file choice sets them: a rank
    /// lands at itself plus the random offset, the hottest ranks side by side.
    pub fn disable_hash(&mut self) {
        self.hash = false;
    }

    /// The place (in `0..slots`) of the next random I/O in direction `d`, where the region
    /// has `slots` places aligned to `align_bytes` for it (fio's `last_block`).
    pub fn next_slot(
        &mut self,
        d: usize,
        slots: u64,
        align_bytes: u64,
        rng: &mut RandomStream,
    ) -> u64 {
        let slots = slots.max(1);
        let place = |rank: u64, rand_off: u64, nranges: u64| {
            if self.hash {
                scatter(rank, rand_off, nranges)
            } else {
                rank.wrapping_add(rand_off) % nranges
            }
        };
        let ranked = match &self.kind {
            Kind::Zipf(z) => place(z.rank(rng.unit()), z.rand_off, z.nranges),
            Kind::Pareto { nranges, power, rand_off } => {
                place(pareto_rank(*nranges, *power, rng.unit()), *rand_off, *nranges)
            }
            Kind::Normal { nranges, stddev, rand_off } => {
                place(gauss_rank(*nranges, *stddev, rng), *rand_off, *nranges)
            }
            Kind::Zoned { table, absolute } => {
                let zones = &table[d];
                if zones.is_empty() {
                    return rng.below(slots);
                }
                let (lo, hi) = zones[rng.below(100) as usize];
                // fio: the zone's first place and its number of places.
                let (first, span) = if *absolute {
                    let first = lo / align_bytes.max(1);
                    (first, (hi / align_bytes.max(1)).saturating_sub(first))
                } else {
                    (lo * slots / 100, slots * (hi - lo) / 100)
                };
                let within = (span as f64 * rng.unit()) as u64;
                return (first + within.min(span.saturating_sub(1))).min(slots - 1);
            }
        };
        ranked % slots
    }
}

impl Zipf {
    /// Gray et al.'s draw for uniform `u`: a rank in `0..nranges`, 0 the most frequent.
    fn rank(&self, u: f64) -> u64 {
        let uz = u * self.zetan;
        let v = if uz < 1.0 {
            1
        } else if uz < 1.0 + 0.5f64.powf(self.theta) {
            2
        } else {
            1 + (self.nranges as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64
        };
        v - 1
    }
}

/// fio's Pareto rank for uniform `u`: `(nranges - 1) u^power`, 0 the most frequent.
fn pareto_rank(nranges: u64, power: f64, u: f64) -> u64 {
    ((nranges - 1) as f64 * u.powf(power)) as u64
}

/// fio's placement of a rank: hashed, shifted by `rand_off`, modulo the ranges.
fn scatter(rank: u64, rand_off: u64, nranges: u64) -> u64 {
    rank.wrapping_mul(GOLDEN_RATIO_64).wrapping_add(rand_off) % nranges
}

/// fio's Gaussian rank: the rounded-up mean of [`GAUSS_ITERS`] uniform draws over
/// `0..=nranges`, plus a uniform deviation in `-stddev/2..stddev/2` halved until the sum
/// lies in `0..nranges`.
fn gauss_rank(nranges: u64, stddev: i64, rng: &mut RandomStream) -> u64 {
    let sum: u64 = (0..GAUSS_ITERS).map(|_| rng.below(nranges + 1)).sum();
    let mean = sum.div_ceil(GAUSS_ITERS);
    if stddev == 0 {
        return mean;
    }
    let mut dev = (stddev as f64 * rng.unit()) as i64 - stddev / 2;
    let inside = |dev: i64| {
        let x = mean as i64 + dev;
        x >= 0 && (x as u64) < nranges
    };
    while dev != 0 && !inside(dev) {
        dev /= 2;
    }
    (mean as i64 + dev) as u64
}

/// fio's `zone_state_index` for one direction: for each percentile, its zone's start and
/// end (cumulative sizes). Empty when the direction has no zones.
fn percentile_table(zones: &[DistributionZone]) -> Vec<(u64, u64)> {
    if zones.is_empty() {
        return Vec::new();
    }
    let mut table = Vec::with_capacity(100);
    let mut start = 0u64;
    for z in zones {
        let end = start.saturating_add(z.size);
        table.extend(std::iter::repeat_n((start, end), z.access_percent as usize));
        start = end;
    }
    // The parser makes the shares add up to 100; keep the table whole whatever.
    table.resize(100, *table.last().unwrap_or(&(0, 0)));
    table
}

/// The Zipf normaliser `sum_{i=1..m} i^-theta`: term by term up to `ZETA_EXACT_TERMS`,
/// then the Euler–Maclaurin formula (integral, end-point and first derivative terms; the
/// next term is below 1e-12 of the sum there).
pub fn zipf_normaliser(m: u64, theta: f64) -> f64 {
    let f = |x: f64| x.powf(-theta);
    if m <= ZETA_EXACT_TERMS {
        return (1..=m).map(|i| f(i as f64)).sum();
    }
    let k = ZETA_EXACT_TERMS as f64;
    let mf = m as f64;
    let head: f64 = (1..ZETA_EXACT_TERMS).map(|i| f(i as f64)).sum();
    let integral = (mf.powf(1.0 - theta) - k.powf(1.0 - theta)) / (1.0 - theta);
    let df = |x: f64| -theta * x.powf(-theta - 1.0);
    head + integral + (f(k) + f(mf)) / 2.0 + (df(mf) - df(k)) / 12.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(dist: RandomDistribution, region_blocks: u64, n: usize) -> Vec<u64> {
        let mut rng = RandomStream::new(1, 0);
        let mut d =
            OffsetDistribution::new(&dist, region_blocks * 4096, 4096, &mut rng).unwrap().unwrap();
        (0..n).map(|_| d.next_slot(0, region_blocks, 4096, &mut rng)).collect()
    }

    /// Draw counts per place, largest first.
    fn ranked_counts(places: &[u64]) -> Vec<u64> {
        let mut per = std::collections::HashMap::new();
        for p in places {
            *per.entry(*p).or_insert(0u64) += 1;
        }
        let mut c: Vec<u64> = per.into_values().collect();
        c.sort_unstable_by(|a, b| b.cmp(a));
        c
    }

    #[test]
    fn the_normaliser_matches_the_plain_sum() {
        for theta in [0.5, 0.8, 1.2, 2.0] {
            let m = 1_000_000u64;
            let plain: f64 = (1..=m).map(|i| (i as f64).powf(-theta)).sum();
            let fast = zipf_normaliser(m, theta);
            assert!(((fast - plain) / plain).abs() < 1e-11, "theta {theta}: {fast} vs {plain}");
        }
    }

    #[test]
    fn zipf_gives_its_two_hottest_ranks_their_exact_share() {
        // Gray's generator is exact for ranks 1 and 2: 1/zeta(n) and 2^-theta/zeta(n).
        let n = 16384;
        let zeta = zipf_normaliser(n, 1.2);
        let counts = ranked_counts(&draws(
            RandomDistribution::Zipf { theta: 1.2, center: None },
            n,
            200_000,
        ));
        let share = |c: u64| c as f64 / 200_000.0;
        assert!((share(counts[0]) - 1.0 / zeta).abs() < 0.005, "{counts:?}");
        assert!((share(counts[1]) - 0.5f64.powf(1.2) / zeta).abs() < 0.004);
    }

    #[test]
    fn hashed_ranks_land_where_fio_puts_them() {
        // fio 3.33, zipf:1.2 over 16384 blocks of 4 KiB: the hottest blocks were 11, 1014,
        // 2017, 3020 (rand_off 11; consecutive ranks 1003 blocks apart, 2^64/φ mod 2^14).
        let n = 16384;
        assert_eq!((0..4).map(|r| scatter(r, 11, n)).collect::<Vec<_>>(), [11, 1014, 2017, 3020]);
    }

    #[test]
    fn pareto_sends_eighty_percent_to_a_fifth() {
        // h = 0.2: P(rank < x n) = x^(ln 0.8 / ln 0.2) = 0.8 at x = 0.2.
        let (n, power) = (10_000u64, 0.2f64.ln() / 0.8f64.ln());
        let mut rng = RandomStream::new(2, 0);
        let hot = (0..100_000).filter(|_| pareto_rank(n, power, rng.unit()) < 2000).count();
        assert!((79_000..=81_000).contains(&hot), "{hot}");
        // Over a power-of-two region the hash is one-to-one: the fifth of the blocks drawn
        // most keeps at least that share.
        let counts = ranked_counts(&draws(
            RandomDistribution::Pareto { h: 0.2, center: None },
            16384,
            100_000,
        ));
        let top: u64 = counts.iter().take(3277).sum();
        assert!((80_000..=84_000).contains(&top), "{top}");
    }

    #[test]
    fn normal_ranks_cluster_at_the_middle() {
        // Unhashed, the mean of 12 uniform draws: mean n/2, deviation n/12.
        let mut rng = RandomStream::new(3, 0);
        let n = 12_000u64;
        let xs: Vec<f64> = (0..50_000).map(|_| gauss_rank(n, 0, &mut rng) as f64).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64).sqrt();
        assert!((mean - 6000.0).abs() < 30.0, "{mean}");
        assert!((sd - 1000.0).abs() < 30.0, "{sd}");
        // A deviation never takes a rank out of the region.
        assert!((0..10_000).all(|_| gauss_rank(10, 5, &mut rng) < 10));
    }

    #[test]
    fn zoned_shares_follow_the_table() {
        let z = |a, s| DistributionZone { access_percent: a, size: s };
        let zones = vec![z(60, 10), z(30, 20), z(8, 30), z(2, 40)];
        let places = draws(
            RandomDistribution::Zoned { zones: [zones.clone(), zones.clone(), zones] },
            10_000,
            100_000,
        );
        let share =
            |lo, hi| places.iter().filter(|&&p| (lo..hi).contains(&p)).count() as f64 / 100_000.0;
        assert!((share(0, 1000) - 0.60).abs() < 0.01);
        assert!((share(1000, 3000) - 0.30).abs() < 0.01);
        assert!((share(3000, 6000) - 0.08).abs() < 0.005);
        assert!((share(6000, 10_000) - 0.02).abs() < 0.003);
    }

    #[test]
    fn zoned_abs_zones_past_the_region_are_refused() {
        let z = DistributionZone { access_percent: 100, size: 8 << 20 };
        let dist = RandomDistribution::ZonedAbs { zones: [vec![z], vec![z], vec![z]] };
        let mut rng = RandomStream::new(1, 0);
        assert!(OffsetDistribution::new(&dist, 4 << 20, 4096, &mut rng).is_err());
        assert!(OffsetDistribution::new(&dist, 8 << 20, 4096, &mut rng).unwrap().is_some());
    }
}
