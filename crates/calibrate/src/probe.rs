//! The probes, after DIXtrac (Schindler and Ganger, 1999: extract a disk's mechanics by timing
//! chosen requests), Seastar's `iotune` (bandwidth and IOPS against queue depth) and the
//! kernel's `tools/cgroup/iocost_coef_gen.py` (sequential and random IOPS and bandwidth).
//!
//! Each probe is one closed-loop [`Phase`] whose time limit is a share of the budget:
//!
//! | probe | what it measures | used for |
//! |---|---|---|
//! | `size-N` | random reads of N bytes at QD1 | per-byte transfer time, command overhead |
//! | `depth-N` | random 4 KiB reads at QD N | internal parallelism (flash), NCQ gain (disk) |
//! | `zone-K` | sequential 1 MiB reads in the K-th eighth | zoned recording (disk) |
//! | `seq-1m` | sequential 1 MiB reads at QD8 | the link or media rate |
//! | `seq-4k` | sequential 4 KiB reads at QD1 | read-ahead in the drive |
//! | `seq-4k-qd64` | sequential 4 KiB reads at QD64 | `rseqiops` |
//! | `seek-D` | a backward walk of steps D + U(0, S), QD1 | seek time against distance; the rotation period from the spread at a quarter of the span |
//! | `write-4k`, `write-4k-sync` | random 4 KiB writes at QD1, plain and `RWF_DSYNC` | write cache (`--write`) |
//! | `raw` | each write followed by a read of it, QD1 | read-after-write from the cache |
//! | `write-depth-64`, `seq-write-1m`, `seq-write-4k-qd64` | write IOPS and bandwidth | `w*` of `io.cost.model` |
//! | `sustained-K` | 128 KiB random writes at QD32, K-th slice | the flash write cliff |
//!
//! Every probe's requests come from a seeded stream, so the simulator can replay exactly the
//! requests the device completed.

use elevator_core::{Nanos, RandomStream, NS_PER_SEC};

use crate::backend::{Backend, Outcome};
use crate::workload::{self, Dir, Io, Phase, ALIGN_BYTES};

/// What a probe is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Warmup,
    /// Random reads of this size at QD1.
    Size(u64),
    /// Random 4 KiB reads at this depth.
    Depth(u32),
    /// Sequential 1 MiB reads in region `index` of [`ZONE_REGIONS`], starting at `start`.
    Zone {
        index: u32,
        start: u64,
    },
    SeqMax,
    Seq4k,
    Seq4kDeep,
    /// A backward walk with this step.
    Seek(u64),
    Write4k,
    Write4kSync,
    ReadAfterWrite,
    WriteDeep,
    SeqWrite,
    SeqWrite4kDeep,
    /// Slice `k` of the sustained random-write run.
    Sustained(u32),
}

/// Regions the target is divided into for the zone probes.
pub const ZONE_REGIONS: u32 = 8;
/// Request sizes of the latency-against-size probes.
pub const SIZES: [u64; 5] = [4096, 16384, 65536, 262144, 1 << 20];
/// Queue depths of the IOPS probes (QD1 is `size-4096`).
pub const DEPTHS: [u32; 6] = [2, 4, 8, 16, 32, 64];
/// Slices of the sustained-write run.
pub const SUSTAINED_SLICES: u32 = 8;
/// The longest budget accepted (a day).
pub const MAX_BUDGET_NS: Nanos = 24 * 3600 * NS_PER_SEC;
/// The shortest budget accepted.
pub const MIN_BUDGET_NS: Nanos = NS_PER_SEC;

/// One probe's requests as issued (cut to what completed) and what they measured.
#[derive(Clone, Debug)]
pub struct Probe {
    pub kind: Kind,
    pub phase: Phase,
    pub outcome: Outcome,
    /// Where each slice's latencies end in `outcome.lat_ns` (one entry for an unsliced
    /// probe): how much the device drifted between slices is what the fit can resolve.
    pub slice_ends: Vec<usize>,
}

/// Everything the probes measured.
#[derive(Clone, Debug, Default)]
pub struct Measurements {
    pub capacity_bytes: u64,
    pub probes: Vec<Probe>,
    pub wrote: bool,
}

impl Probe {
    /// The standard deviation of its slices' mean latencies, in µs (0 for fewer than two
    /// non-empty slices): how far the device's own speed moved while it was probed.
    pub fn slice_spread_us(&self) -> f64 {
        let mut start = 0;
        let means: Vec<f64> = self
            .slice_ends
            .iter()
            .filter_map(|&end| {
                let lat = &self.outcome.lat_ns[start..end];
                start = end;
                (!lat.is_empty())
                    .then(|| lat.iter().map(|&x| x as f64).sum::<f64>() / lat.len() as f64 / 1e3)
            })
            .collect();
        if means.len() < 2 {
            return 0.0;
        }
        let mean = means.iter().sum::<f64>() / means.len() as f64;
        let var = means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (means.len() - 1) as f64;
        var.sqrt()
    }

    /// How far its mean latency may have moved with the device's drift, in µs: the standard
    /// error over its slices (a slice's spread over √n), 0 for fewer than two. The fit
    /// compares a model with the probe's mean, not with any one slice.
    pub fn mean_spread_us(&self) -> f64 {
        let n = self.slice_ends.len();
        if n < 2 {
            return 0.0;
        }
        self.slice_spread_us() / (n as f64).sqrt()
    }
}

impl Measurements {
    pub fn get(&self, kind: Kind) -> Option<&Probe> {
        self.probes.iter().find(|p| p.kind == kind && p.outcome.issued() > 0)
    }

    pub fn all(&self, pred: impl Fn(Kind) -> bool) -> impl Iterator<Item = &Probe> {
        self.probes.iter().filter(move |p| pred(p.kind) && p.outcome.issued() > 0)
    }

    /// Every I/O range the probes read, for the page-cache check (a sample).
    pub fn read_ranges(&self, max: usize) -> Vec<(u64, u64)> {
        self.probes
            .iter()
            .flat_map(|p| p.phase.ios.iter().filter(|io| io.dir == Dir::Read))
            .step_by(7)
            .take(max)
            .map(|io| (io.offset_bytes, io.len_bytes))
            .collect()
    }
}

/// The probe plan: each entry a kind, its phase and its share of the probing time.
pub fn plan(capacity: u64, probe_ns: Nanos, write: bool, seed: u64) -> Vec<(Kind, Phase)> {
    let mut rng = RandomStream::new(seed, 1);
    let mut out = Vec::new();
    let cap = capacity / ALIGN_BYTES * ALIGN_BYTES;
    // Read probes take up to all of the time without --write, half with.
    let read_share = if write { 0.5 } else { 1.0 };
    let mut add = |kind: Kind, share: f64, depth: u32, make: &mut dyn FnMut(usize) -> Vec<Io>| {
        let limit = (probe_ns as f64 * share) as Nanos;
        let name = name_of(kind);
        // As many I/Os as a very fast device completes in the limit (1 µs each at least).
        let count = ((limit / 1000) as usize).clamp(16, workload::MAX_PHASE_IOS);
        out.push((kind, Phase::new(name, depth, make(count), limit)));
    };
    let r = read_share;
    add(Kind::Warmup, 0.01 * r, 1, &mut |n| {
        workload::random(&mut rng.clone(), Dir::Read, 0, cap, 4096, n.min(200))
    });
    for &s in &SIZES {
        let mut g = RandomStream::new(seed, 10 + s.trailing_zeros());
        let slices = if s == 4096 { KEY_SLICES } else { 1 };
        for _ in 0..slices {
            add(Kind::Size(s), 0.04 * r / f64::from(slices), 1, &mut |n| {
                workload::random(&mut g, Dir::Read, 0, cap, s, n)
            });
        }
    }
    for &d in &DEPTHS {
        let mut g = RandomStream::new(seed, 40 + d);
        let slices = if d == 32 { KEY_SLICES } else { 1 };
        for _ in 0..slices {
            add(Kind::Depth(d), 0.03 * r / f64::from(slices), d, &mut |n| {
                workload::random(&mut g, Dir::Read, 0, cap, 4096, n)
            });
        }
    }
    let region = cap / u64::from(ZONE_REGIONS) / ALIGN_BYTES * ALIGN_BYTES;
    for k in 0..ZONE_REGIONS {
        let start = u64::from(k) * region;
        add(Kind::Zone { index: k, start }, 0.02 * r, 4, &mut |n| {
            workload::sequential(Dir::Read, start, region, 1 << 20, n)
        });
    }
    let per = cap / u64::from(KEY_SLICES) / ALIGN_BYTES * ALIGN_BYTES;
    for k in 0..u64::from(KEY_SLICES) {
        add(Kind::SeqMax, 0.04 * r / f64::from(KEY_SLICES), 8, &mut |n| {
            workload::sequential(Dir::Read, k * per, cap - k * per, 1 << 20, n)
        });
    }
    let s4 = workload::random_offset(&mut rng, 0, cap, 64 << 20);
    add(Kind::Seq4k, 0.02 * r, 1, &mut |n| workload::sequential(Dir::Read, s4, 64 << 20, 4096, n));
    let s64 = workload::random_offset(&mut rng, 0, cap, 256 << 20);
    add(Kind::Seq4kDeep, 0.02 * r, 64, &mut |n| {
        workload::sequential(Dir::Read, s64, (256 << 20).min(cap), 4096, n)
    });
    let spread = seek_spread(cap);
    for (i, d) in seek_distances(cap).into_iter().enumerate() {
        let mut g = RandomStream::new(seed, 100 + i as u32);
        add(Kind::Seek(d), 0.025 * r, 1, &mut |n| {
            workload::seek_walk(&mut g, cap, d, spread, 4096, n)
        });
    }
    if write {
        let mut g = RandomStream::new(seed, 200);
        add(Kind::Write4k, 0.04, 1, &mut |n| workload::random(&mut g, Dir::Write, 0, cap, 4096, n));
        add(Kind::Write4kSync, 0.04, 1, &mut |n| {
            workload::random(&mut g, Dir::WriteSync, 0, cap, 4096, n)
        });
        add(Kind::ReadAfterWrite, 0.04, 1, &mut |n| {
            let w = workload::random(&mut g, Dir::Write, 0, cap, 4096, n / 2);
            w.iter().flat_map(|io| [*io, Io { dir: Dir::Read, ..*io }]).collect()
        });
        add(Kind::WriteDeep, 0.03, 64, &mut |n| {
            workload::random(&mut g, Dir::Write, 0, cap, 4096, n)
        });
        add(Kind::SeqWrite, 0.04, 4, &mut |n| workload::sequential(Dir::Write, 0, cap, 1 << 20, n));
        let sw = workload::random_offset(&mut g, 0, cap, 256 << 20);
        add(Kind::SeqWrite4kDeep, 0.02, 64, &mut |n| {
            workload::sequential(Dir::Write, sw, (256 << 20).min(cap), 4096, n)
        });
        // The sustained run: at most twice the capacity written.
        let per_slice = ((2 * cap) / u64::from(SUSTAINED_SLICES) / (128 << 10)) as usize;
        for k in 0..SUSTAINED_SLICES {
            add(Kind::Sustained(k), 0.30 / f64::from(SUSTAINED_SLICES), 32, &mut |n| {
                workload::random(&mut g, Dir::Write, 0, cap, 128 << 10, n.min(per_slice.max(16)))
            });
        }
    }
    spread_key_slices(out)
}

/// Slices the key probes (4 KiB at QD1 and QD32, sequential 1 MiB) are cut into.
pub const KEY_SLICES: u32 = 4;

/// Moves the slices of each key probe apart, evenly over the plan, so that what they
/// measure is the device over the whole probing time rather than one moment of it (a shared
/// or virtual disk's speed drifts by tens of percent within minutes).
fn spread_key_slices(plan: Vec<(Kind, Phase)>) -> Vec<(Kind, Phase)> {
    let key = |k: Kind| matches!(k, Kind::Size(4096) | Kind::Depth(32) | Kind::SeqMax);
    let (mut keys, rest): (Vec<_>, Vec<_>) = plan.into_iter().partition(|(k, _)| key(*k));
    // Round-robin over the three kinds: slice i of each kind together.
    keys.sort_by_key(|(k, _)| match k {
        Kind::Size(_) => 0,
        Kind::Depth(_) => 1,
        _ => 2,
    });
    let per_kind = KEY_SLICES as usize;
    let mut rounds: Vec<Vec<(Kind, Phase)>> = (0..per_kind).map(|_| Vec::new()).collect();
    for (i, kp) in keys.into_iter().enumerate() {
        rounds[i % per_kind].push(kp);
    }
    let gap = rest.len().div_ceil(per_kind).max(1);
    let mut out = Vec::new();
    let mut rest = rest.into_iter();
    let mut warm = true;
    for round in rounds {
        // The warm-up stays first.
        if warm {
            out.extend(rest.next());
            warm = false;
        }
        out.extend(round);
        out.extend(rest.by_ref().take(gap));
    }
    out.extend(rest);
    out
}

/// The random part of every seek-walk step: 8 MiB (more than a track of any drive, so the
/// rotational position is random), less on small targets.
pub fn seek_spread(capacity: u64) -> u64 {
    ((capacity / 64).min(8 << 20) / ALIGN_BYTES * ALIGN_BYTES).max(ALIGN_BYTES)
}

/// Fixed parts of the seek-walk steps: 0, then from 4 × the spread ×4 each up to half the
/// target, a quarter of the target (the rotation probe) and nearly the full stroke.
pub fn seek_distances(capacity: u64) -> Vec<u64> {
    let spread = seek_spread(capacity);
    let mut v = vec![0];
    let mut d = 4 * spread;
    while d <= capacity / 2 {
        v.push(d);
        d *= 4;
    }
    v.push(capacity / 4 / ALIGN_BYTES * ALIGN_BYTES);
    v.push(capacity.saturating_sub(2 * spread) / ALIGN_BYTES * ALIGN_BYTES);
    v.sort_unstable();
    v.dedup();
    v
}

pub fn name_of(kind: Kind) -> String {
    match kind {
        Kind::Warmup => "warmup".into(),
        Kind::Size(s) => format!("size-{}k", s >> 10),
        Kind::Depth(d) => format!("depth-{d}"),
        Kind::Zone { index, .. } => format!("zone-{index}"),
        Kind::SeqMax => "seq-1m".into(),
        Kind::Seq4k => "seq-4k".into(),
        Kind::Seq4kDeep => "seq-4k-qd64".into(),
        Kind::Seek(d) => format!("seek-{}k", d >> 10),
        Kind::Write4k => "write-4k".into(),
        Kind::Write4kSync => "write-4k-sync".into(),
        Kind::ReadAfterWrite => "read-after-write".into(),
        Kind::WriteDeep => "write-depth-64".into(),
        Kind::SeqWrite => "seq-write-1m".into(),
        Kind::SeqWrite4kDeep => "seq-write-4k-qd64".into(),
        Kind::Sustained(k) => format!("sustained-{k}"),
    }
}

/// Runs the plan on `backend`, calling `progress(done, total, name)` before each phase.
pub fn run(
    backend: &mut dyn Backend,
    plan: Vec<(Kind, Phase)>,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<Measurements, String> {
    let total = plan.len();
    let wrote = plan.iter().any(|(_, p)| p.ios.iter().any(|io| io.dir != Dir::Read));
    let mut probes: Vec<Probe> = Vec::with_capacity(total);
    for (i, (kind, phase)) in plan.into_iter().enumerate() {
        progress(i, total, &phase.name);
        let outcome = backend.run(&phase)?;
        let phase = phase.prefix(outcome.issued());
        // Slices of one probe become one: their requests and latencies in order, their
        // times and bytes added up.
        match probes.iter_mut().find(|p| p.kind == kind) {
            Some(p) => {
                p.phase.ios.extend(phase.ios);
                p.outcome.lat_ns.extend(outcome.lat_ns);
                p.outcome.elapsed_ns += outcome.elapsed_ns;
                p.outcome.bytes += outcome.bytes;
                p.slice_ends.push(p.outcome.lat_ns.len());
            }
            None => {
                let slice_ends = vec![outcome.lat_ns.len()];
                probes.push(Probe { kind, phase, outcome, slice_ends });
            }
        }
    }
    progress(total, total, "done");
    Ok(Measurements { capacity_bytes: backend.capacity_bytes(), probes, wrote })
}

/// A probe of `kind` that measured `lat_us` (µs), its slices ending at `ends`, for tests.
#[cfg(test)]
pub(crate) fn test_probe(kind: Kind, lat_us: &[u64], ends: &[usize]) -> Probe {
    Probe {
        kind,
        phase: Phase::new("p", 1, Vec::new(), NS_PER_SEC),
        outcome: Outcome {
            lat_ns: lat_us.iter().map(|&u| u * 1000).collect(),
            elapsed_ns: 1,
            bytes: 0,
        },
        slice_ends: ends.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_spread_is_the_deviation_of_the_slice_means() {
        let probe = |lat_us: &[u64], ends: &[usize]| test_probe(Kind::Size(4096), lat_us, ends);
        // Slice means 70, 80, 90, 80 µs: sample deviation sqrt(200 / 3).
        let p = probe(&[60, 80, 80, 90, 70, 90, 80], &[2, 3, 4, 7]);
        assert!((p.slice_spread_us() - (200.0f64 / 3.0).sqrt()).abs() < 1e-9);
        assert_eq!(probe(&[60, 80], &[2]).slice_spread_us(), 0.0, "one slice: no spread");
        // The mean of four slices moves by half a slice's spread.
        assert!((p.mean_spread_us() - (200.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-9);
        assert_eq!(probe(&[60, 80], &[2]).mean_spread_us(), 0.0);
    }

    #[test]
    fn key_probes_are_sliced_across_the_plan() {
        let p = plan(1 << 30, 30 * NS_PER_SEC, false, 1);
        assert_eq!(p[0].0, Kind::Warmup);
        let at: Vec<usize> = p
            .iter()
            .enumerate()
            .filter(|(_, (k, _))| *k == Kind::Depth(32))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(at.len(), KEY_SLICES as usize);
        assert!(at[KEY_SLICES as usize - 1] - at[0] > p.len() / 2, "{at:?} of {}", p.len());
    }

    #[test]
    fn the_plan_fits_the_target_and_its_budget() {
        let cap = 1u64 << 30;
        for write in [false, true] {
            let p = plan(cap, 30 * NS_PER_SEC, write, 1);
            let total: Nanos = p.iter().map(|(_, ph)| ph.max_ns).sum();
            assert!(total <= 30 * NS_PER_SEC, "{total}");
            for (_, ph) in &p {
                assert!(!ph.ios.is_empty());
                for io in &ph.ios {
                    assert!(io.offset_bytes + io.len_bytes <= cap, "{} {io:?}", ph.name);
                }
                let writes = ph.name.contains("write") || ph.name.starts_with("sustained");
                assert_eq!(ph.ios.iter().any(|io| io.dir != Dir::Read), writes, "{}", ph.name);
                assert!(write || !writes);
            }
        }
    }
}
