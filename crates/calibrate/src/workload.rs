//! The request lists the prober and the held-out replay issue: each a [`Phase`], a list of
//! I/Os run closed-loop at a fixed queue depth. Every list is drawn from a seeded
//! [`RandomStream`], so the real device and the simulator see the same requests, and a
//! second run sees the same requests again.

use elevator_core::{Nanos, RandomStream};

/// Alignment of every offset and length: 4 KiB, what O_DIRECT needs on any logical block
/// size up to 4096 and what a flash drive maps.
pub const ALIGN_BYTES: u64 = 4096;
/// The longest single I/O a phase may ask for.
pub const MAX_IO_BYTES: u64 = 4 << 20;
/// The most I/Os one phase may list (its time limit usually stops it sooner).
pub const MAX_PHASE_IOS: usize = 1 << 20;
/// The deepest queue a phase may keep.
pub const MAX_DEPTH: u32 = 1024;

/// Direction of one I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
    /// A write that completes only once on stable media (`RWF_DSYNC`; FUA to the model).
    WriteSync,
}

/// One I/O: byte range and direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Io {
    pub dir: Dir,
    pub offset_bytes: u64,
    pub len_bytes: u64,
}

/// A closed-loop run: `ios` issued in order, `depth` in flight, stopping early once
/// `max_ns` have passed since the first was issued.
#[derive(Clone, Debug)]
pub struct Phase {
    pub name: String,
    pub depth: u32,
    pub ios: Vec<Io>,
    pub max_ns: Nanos,
}

impl Phase {
    pub fn new(name: impl Into<String>, depth: u32, ios: Vec<Io>, max_ns: Nanos) -> Phase {
        let mut ios = ios;
        ios.truncate(MAX_PHASE_IOS);
        debug_assert!(ios.iter().all(|io| io.offset_bytes % ALIGN_BYTES == 0
            && io.len_bytes % ALIGN_BYTES == 0
            && io.len_bytes > 0
            && io.len_bytes <= MAX_IO_BYTES));
        Phase { name: name.into(), depth: depth.clamp(1, MAX_DEPTH), ios, max_ns }
    }

    /// The same phase cut to its first `n` I/Os (what the other side completed).
    pub fn prefix(&self, n: usize) -> Phase {
        Phase {
            name: self.name.clone(),
            depth: self.depth,
            ios: self.ios[..n.min(self.ios.len())].to_vec(),
            max_ns: Nanos::MAX,
        }
    }

    pub fn max_len_bytes(&self) -> u64 {
        self.ios.iter().map(|io| io.len_bytes).max().unwrap_or(0)
    }
}

/// A uniformly random aligned offset for an I/O of `len` within `[start, start + span)`.
pub fn random_offset(rng: &mut RandomStream, start: u64, span: u64, len: u64) -> u64 {
    let slots = (span.saturating_sub(len) / ALIGN_BYTES).max(1);
    start + rng.below(slots) * ALIGN_BYTES
}

/// `count` random I/Os of `len` within `[start, start + span)`.
pub fn random(
    rng: &mut RandomStream,
    dir: Dir,
    start: u64,
    span: u64,
    len: u64,
    count: usize,
) -> Vec<Io> {
    (0..count.min(MAX_PHASE_IOS))
        .map(|_| Io { dir, offset_bytes: random_offset(rng, start, span, len), len_bytes: len })
        .collect()
}

/// `count` back-to-back I/Os of `len` from `start`, wrapping within `[start, start + span)`.
pub fn sequential(dir: Dir, start: u64, span: u64, len: u64, count: usize) -> Vec<Io> {
    let per_pass = (span / len).max(1);
    (0..count.min(MAX_PHASE_IOS) as u64)
        .map(|k| Io { dir, offset_bytes: start + (k % per_pass) * len, len_bytes: len })
        .collect()
}

/// A backward walk: each I/O after the first is `distance` plus a uniform `0..spread` bytes
/// before the previous one, or after it where there is no room before (and, where there is
/// room neither way, at the farther end). Backward, so that no step lands in a drive's
/// read-ahead of the previous one; spread over more than a track, so that the rotational
/// position of each target is uniform and the mean rotational latency is half a turn (a fixed
/// step shorter than a track would always wait almost a whole turn).
pub fn seek_walk(
    rng: &mut RandomStream,
    span: u64,
    distance: u64,
    spread: u64,
    len: u64,
    count: usize,
) -> Vec<Io> {
    let top = span.saturating_sub(len) / ALIGN_BYTES * ALIGN_BYTES;
    let mut x = random_offset(rng, 0, span, len);
    let mut out = Vec::with_capacity(count.min(MAX_PHASE_IOS));
    for _ in 0..count.min(MAX_PHASE_IOS) {
        out.push(Io { dir: Dir::Read, offset_bytes: x, len_bytes: len });
        let j =
            if spread >= ALIGN_BYTES { rng.below(spread / ALIGN_BYTES) * ALIGN_BYTES } else { 0 };
        let step = (distance + j).clamp(ALIGN_BYTES, top.max(ALIGN_BYTES));
        x = if x >= step {
            x - step
        } else if x + step <= top {
            x + step
        } else if x > top - x {
            0
        } else {
            top
        };
    }
    out
}

/// Random I/Os with sizes drawn from `sizes` and reads with probability `read_fraction`.
pub fn mixed(
    rng: &mut RandomStream,
    start: u64,
    span: u64,
    sizes: &[u64],
    read_fraction: f64,
    count: usize,
) -> Vec<Io> {
    (0..count.min(MAX_PHASE_IOS))
        .map(|_| {
            let len = sizes[rng.below(sizes.len() as u64) as usize];
            let dir = if rng.unit() < read_fraction { Dir::Read } else { Dir::Write };
            Io { dir, offset_bytes: random_offset(rng, start, span, len), len_bytes: len }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_stay_inside_and_aligned() {
        let mut rng = RandomStream::new(1, 0);
        let span = 64 << 20;
        for io in random(&mut rng, Dir::Read, 0, span, 1 << 20, 1000)
            .into_iter()
            .chain(sequential(Dir::Read, 4096, span - 4096, 128 << 10, 1000))
            .chain(seek_walk(&mut rng, span, 1 << 20, 4 << 20, 4096, 1000))
            .chain(mixed(&mut rng, 0, span, &[4096, 65536], 0.5, 1000))
        {
            assert!(io.offset_bytes + io.len_bytes <= span, "{io:?}");
            assert_eq!(io.offset_bytes % ALIGN_BYTES, 0);
        }
    }

    #[test]
    fn a_walk_steps_back_by_about_the_distance() {
        let mut rng = RandomStream::new(2, 0);
        let span = 1 << 30;
        let w = seek_walk(&mut rng, span, 8 << 20, 512 << 10, 4096, 200);
        let mut n = 0;
        for p in w.windows(2) {
            {
                let d = p[0].offset_bytes.abs_diff(p[1].offset_bytes);
                assert!((8 << 20..(8 << 20) + (512 << 10)).contains(&d), "{d}");
                n += 1;
            }
        }
        assert_eq!(n, 199);
    }
}
