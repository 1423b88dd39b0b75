//! A hard disk drive modelled on DiskSim 4.0's mechanisms, so that it can be validated
//! against DiskSim's traces and so that the effects that decide scheduler outcomes are there:
//!
//! - [`geometry`]: cylinders × surfaces, zoned recording, track and cylinder skew, the
//!   LBN → (cylinder, head, sector) map; optionally DiskSim's sparing schemes and slips.
//! - [`seek`]: seek time from a measured table, the three-point form or `a·√(d−1)+b·(d−1)+c`;
//!   plus head-switch time and write settle (added to any positioning move of a write).
//! - Rotation is tracked continuously: the platter's angle at time `t` is
//!   `((t + phase) mod period) / period`, the phase drawn once from the [`RandomStream`]
//!   handed to [`Hdd::new`]. A command waits for its first sector to come round.
//! - Transfer: per-zone sector time; at each track end the head switches (or seeks one
//!   cylinder) and waits for the next track's first sector, which the skews place just after
//!   the switch time.
//! - Overheads and bus: every command costs the controller overhead (read/write differ). The
//!   bus transfer overlaps the media transfer: a read completes at
//!   `max(media end, first sector under the head + bus time of the whole command)`, a
//!   write-through at `max(media end, overhead end + bus time)` (the host sends the data
//!   during the seek); a cache hit costs overhead + bus time.
//! - [`cache`]: segments with read-ahead after every media read.
//! - [`writeback`]: write-back caching (`write_cache`, on in the presets as drives ship): a
//!   non-FUA write completes after overhead + bus time once it fits in the cache; dirty data
//!   is destaged, the soonest-reached of the oldest extents first, while the drive is idle and
//!   ahead of host commands above three quarters full; a write that does not fit waits for
//!   destaging; a flush destages everything; FUA writes go to the media; reads of wholly
//!   dirty data are cache hits.
//! - [`queue`]: NCQ/TCQ depth; SPTF among queued commands with an age limit; depth 1 = FIFO.
//! - [`controller`]: with `controller` set, DiskSim's controller replaces the overhead, bus,
//!   cache and write-back rules above (see its module docs for where it deviates from
//!   DiskSim); the presets leave it unset and behave exactly as before it existed.
//!
//! Per command the work is O(queue) for the SPTF pass plus O(tracks crossed) for the
//! transfer; the steady state allocates nothing.

pub mod cache;
pub mod controller;
pub mod geometry;
pub mod queue;
pub mod seek;
#[cfg(test)]
mod tests;
pub mod writeback;

use elevator_core::{Nanos, Op, RandomStream, RequestId, SECTOR_BYTES};
use serde::{Deserialize, Serialize};

use crate::limits::{check_bytes_per_sec, check_delay_ms, MAX_DEVICE_DELAY_MS};
use crate::{Command, Completion, Device};
use cache::{Cache, Lookup};
use controller::{DiskSimController, DsState};
use geometry::{Chs, Geometry, Sparing, SurfaceOrder, ZoneSpec};
use queue::{Queue, Queued, OVERLAP_UNKNOWN};
use seek::{SeekCurve, SeekSpec};
use writeback::WriteCache;

/// Parameters of an [`Hdd`]: what a topology file sets. Missing fields take the
/// [`HddParams::sata_7200_2009`] values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HddParams {
    /// Interface name for reports ("SATA", "IDE", "SCSI").
    pub interface: String,
    pub rpm: f64,
    /// Recording surfaces (heads).
    pub surfaces: u64,
    /// Zone table, outermost first, contiguous cylinders.
    pub zones: Vec<ZoneSpec>,
    pub seek: SeekSpec,
    pub head_switch_ms: f64,
    /// Added to every positioning move (seek or head switch) of a write.
    pub write_settle_ms: f64,
    pub read_overhead_ms: f64,
    pub write_overhead_ms: f64,
    pub bus_bytes_per_sec: f64,
    /// Cache segments; 0 disables the cache (and read-ahead).
    pub cache_segments: u32,
    pub segment_size_bytes: u64,
    /// Write-back caching (WCE).
    pub write_cache: bool,
    /// How many of the oldest cached writes the drive chooses among when it destages (the
    /// one its heads reach soonest): 1 writes the cache in arrival order. At most
    /// [`MAX_DESTAGE_CANDIDATES`].
    #[serde(skip_serializing_if = "is_default_destage")]
    pub destage_candidates: u32,
    /// Commands the drive accepts at once; 1 = no queueing (FIFO).
    pub queue_depth: u32,
    /// A queued command older than this is served next, whatever SPTF says.
    pub max_queue_age_ms: f64,
    /// Where the zones keep spare sectors (slips are per zone).
    #[serde(skip_serializing_if = "is_default")]
    pub sparing: Sparing,
    /// Which surface follows which across cylinders.
    #[serde(skip_serializing_if = "is_default")]
    pub surface_order: SurfaceOrder,
    /// The platter's angle at time 0, in turns; none: drawn from the random stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rotation_phase_turns: Option<f64>,
    /// DiskSim's controller (overheads by command and history, per-sector bus, its cache
    /// and read-ahead policies: see [`controller`]); none: the simple controller above.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller: Option<Box<DiskSimController>>,
}

/// The most cached writes a drive's destage choice may weigh (each destage costs one
/// positioning estimate per candidate).
pub const MAX_DESTAGE_CANDIDATES: u32 = 256;

/// The drives' usual destage choice (see [`HddParams::destage_candidates`]).
pub const DEFAULT_DESTAGE_CANDIDATES: u32 = writeback::DEFAULT_DESTAGE_CANDIDATES as u32;

fn is_default_destage(v: &u32) -> bool {
    *v == DEFAULT_DESTAGE_CANDIDATES
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

impl Default for HddParams {
    fn default() -> Self {
        HddParams::sata_7200_2009()
    }
}

impl HddParams {
    /// A 7200 rpm SATA disk of 2009, after the Seagate Barracuda 7200.12 500 GB
    /// (ST3500418AS) product manual: 7200 rpm (4.17 ms average latency), 8.5 ms average read
    /// seek, 125 MB/s max sustained (outer zone), 16 MB cache, NCQ (depth 31, the SATA
    /// limit), SATA 3 Gb/s (300 MB/s after 8b/10b), one platter and two heads, 500 GB
    /// (976,773,168 LBAs). Track-to-track 0.8 ms and full stroke 17 ms are the typical values
    /// of that generation's manuals (7200.11: <0.8 / <17 ms is not printed for 7200.12, so
    /// this is reasoning, not a datasheet figure). Inner-zone rate ~60 MB/s from published
    /// transfer-rate curves (about half the outer). Head switch 0.5 ms and overheads 0.1 ms
    /// are typical of DiskSim's validated models of the era scaled to 7200 rpm (assumptions).
    /// 16 segments of 1 MiB. Write cache on, as ATA drives ship (WCE; `hdparm -W`): up to the
    /// whole 16 MiB may hold written data not yet on the media.
    pub fn sata_7200_2009() -> HddParams {
        let period_ns = 60e9 / 7200.0;
        HddParams {
            interface: "SATA".into(),
            rpm: 7200.0,
            surfaces: 2,
            // 125 MB/s → 2035 sectors/track, 60 MB/s → 977; 324,500 cylinders → ~500 GB.
            // Skews cover a head switch (0.5 ms) or one-cylinder seek (0.8 ms) plus the write
            // settle (0.3 ms), as drives lay them out so that sequential writes do not miss
            // a revolution at every track.
            zones: ZoneSpec::linear(324_500, 16, 2035, 977, period_ns, 0.8e6, 1.1e6),
            seek: SeekSpec::ThreePoint {
                single_cylinder_ms: 0.8,
                average_ms: 8.5,
                full_stroke_ms: 17.0,
            },
            head_switch_ms: 0.5,
            write_settle_ms: 0.3,
            read_overhead_ms: 0.1,
            write_overhead_ms: 0.12,
            bus_bytes_per_sec: 300e6,
            cache_segments: 16,
            segment_size_bytes: 1 << 20,
            write_cache: true,
            destage_candidates: DEFAULT_DESTAGE_CANDIDATES,
            queue_depth: 31,
            max_queue_age_ms: 500.0,

            sparing: Sparing::None,
            surface_order: SurfaceOrder::Ascending,
            rotation_phase_turns: None,
            controller: None,
        }
    }

    /// An IDE disk of 2003: the Seagate Barracuda 7200.7 80 GB (ST380011A) product manual:
    /// 7200 rpm, one platter and two heads (80 GB/platter), 58 MB/s maximum sustained
    /// (outer zone), 8.5 ms average read seek, 2 MB cache, Ultra ATA/100, no command
    /// queueing. Inner-zone rate ~31 MB/s (about 0.55 of the outer, as transfer-rate curves
    /// of the generation show: assumption). Track-to-track 1.0 ms, full stroke 18 ms, head
    /// switch 1.0 ms and 0.2 ms command overheads are typical values of the generation
    /// (assumptions); the 2 MB cache is 4 segments of 512 KiB. Write cache on, as shipped,
    /// written to the media in the order the writes came (no reordering of cached writes,
    /// as a drive without command queueing is modelled here; assumption, and what seed 003's
    /// random-write rows need: tiobench's flush of 4 KiB writes runs at ~0.8 MB/s whether
    /// 1 or 16 threads scatter them over the 1 GiB — one positioning per write, however
    /// dense — where a drive choosing the nearest cached write gets faster as they crowd).
    pub fn ide_2003() -> HddParams {
        let period_ns = 60e9 / 7200.0;
        HddParams {
            interface: "IDE".into(),
            rpm: 7200.0,
            surfaces: 2,
            // 58 MB/s → 944 sectors/track, 31 MB/s → 505; 108,000 cylinders → ~80 GB.
            // Skews cover the switch (1.0 ms) plus the write settle (0.5 ms), see above.
            zones: ZoneSpec::linear(108_000, 16, 944, 505, period_ns, 1.5e6, 1.5e6),
            seek: SeekSpec::ThreePoint {
                single_cylinder_ms: 1.0,
                average_ms: 8.5,
                full_stroke_ms: 18.0,
            },
            head_switch_ms: 1.0,
            write_settle_ms: 0.5,
            read_overhead_ms: 0.2,
            write_overhead_ms: 0.25,
            bus_bytes_per_sec: 100e6,
            cache_segments: 4,
            segment_size_bytes: 512 << 10,
            write_cache: true,
            destage_candidates: 1,
            queue_depth: 1,
            max_queue_age_ms: 500.0,

            sparing: Sparing::None,
            surface_order: SurfaceOrder::Ascending,
            rotation_phase_turns: None,
            controller: None,
        }
    }
}

/// Which head is over which cylinder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeadState {
    pub cylinder: u64,
    pub head: u64,
}

/// The time a media access takes, broken down (all ns).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Access {
    pub overhead_ns: f64,
    pub seek_ns: f64,
    pub rotation_ns: f64,
    /// Media time from the first sector to the last (including track switches).
    pub transfer_ns: f64,
    pub bus_ns: f64,
    /// Absolute completion time.
    pub done_ns: f64,
    /// Where the heads are afterwards.
    pub end: HeadState,
}

impl Access {
    pub fn service_ns(&self, start_ns: f64) -> f64 {
        self.done_ns - start_ns
    }
}

#[derive(Clone, Copy, Debug)]
struct Active {
    id: RequestId,
    done_ns: Nanos,
}

/// The drive.
#[derive(Debug)]
pub struct Hdd {
    p: HddParams,
    geom: Geometry,
    seek: SeekCurve,
    period_ns: f64,
    inv_period: f64,
    phase_ns: f64,
    /// Per zone: sector time and read-ahead sector time (head switches folded in).
    sector_ns: Vec<f64>,
    readahead_sector_ns: Vec<f64>,
    head_switch_ns: f64,
    settle_ns: f64,
    read_overhead_ns: f64,
    write_overhead_ns: f64,
    bus_ns_per_byte: f64,
    age_limit_ns: Nanos,
    /// Per-command costs of one SPTF pass (kept to avoid allocating).
    cost_scratch: Vec<f64>,
    head: HeadState,
    queue: Queue,
    cache: Cache,
    active: Option<Active>,
    /// Written data not yet on the media (the simple controller's write-back cache).
    wc: WriteCache,
    /// The media is busy until about then and the drive wakes to decide on background
    /// destaging (the simple controller only: cache hits and writes the cache absorbs
    /// complete meanwhile, media commands wait for the media).
    media_wake: Option<Nanos>,
    /// When the heads are free of the work planned so far (destages, media commands).
    media_free_ns: f64,
    /// Where the last destage ended and when: a destage that goes on from there at once
    /// keeps the media streaming.
    last_destage: Option<(u64, f64)>,
    /// DiskSim's controller, when selected.
    ds: Option<Box<DsState>>,
    /// The last block [`Hdd::head_at`] mapped, and its answer.
    last_head_at: Option<(u64, HeadState)>,
}

/// The slowest spindle an HDD model takes (one turn a second).
pub const MIN_HDD_RPM: f64 = 60.0;
/// The fastest spindle an HDD model takes (drives stopped at 15,000 rpm).
pub const MAX_HDD_RPM: f64 = 100_000.0;

/// The deepest command queue an HDD model takes (SCSI's tagged queues stop at 256; NCQ at
/// 32): the queue is allocated up front, so a topology's `queue_depth` is checked first.
pub const MAX_HDD_QUEUE_DEPTH: u32 = 1024;

impl Hdd {
    pub fn new(p: HddParams, rng: &mut RandomStream) -> Result<Hdd, String> {
        if p.queue_depth > MAX_HDD_QUEUE_DEPTH {
            return Err(format!(
                "queue_depth = {} is past the limit of {MAX_HDD_QUEUE_DEPTH}",
                p.queue_depth
            ));
        }
        if p.queue_depth == 0 {
            return Err("queue_depth must be positive".into());
        }
        if !(p.rpm.is_finite() && (MIN_HDD_RPM..=MAX_HDD_RPM).contains(&p.rpm)) {
            return Err(format!(
                "rpm = {} must be in {MIN_HDD_RPM}..={MAX_HDD_RPM} (MIN_/MAX_HDD_RPM)",
                p.rpm
            ));
        }
        check_bytes_per_sec("bus_bytes_per_sec", p.bus_bytes_per_sec)?;
        if p.destage_candidates == 0 || p.destage_candidates > MAX_DESTAGE_CANDIDATES {
            return Err(format!("destage_candidates must be in 1..={MAX_DESTAGE_CANDIDATES}"));
        }
        // DiskSim's write settle may be negative (writes position faster than reads); only its
        // controller takes that.
        let settle_floor = if p.controller.is_some() { -MAX_DEVICE_DELAY_MS } else { 0.0 };
        check_delay_ms("write_settle_ms", p.write_settle_ms, settle_floor)?;
        for (n, v) in [
            ("head_switch_ms", p.head_switch_ms),
            ("read_overhead_ms", p.read_overhead_ms),
            ("write_overhead_ms", p.write_overhead_ms),
            ("max_queue_age_ms", p.max_queue_age_ms),
        ] {
            check_delay_ms(n, v, 0.0)?;
        }
        let geom = Geometry::with_layout(&p.zones, p.surfaces, p.sparing, p.surface_order)?;
        let seek = SeekCurve::new(&p.seek, geom.cylinders)?;
        let period_ns = 60e9 / p.rpm;
        let sector_ns: Vec<f64> =
            geom.zones.iter().map(|z| period_ns / z.sectors_per_track as f64).collect();
        let readahead_sector_ns = geom
            .zones
            .iter()
            .map(|z| {
                period_ns * (z.sectors_per_track + z.track_skew_sectors) as f64
                    / (z.sectors_per_track * z.sectors_per_track) as f64
            })
            .collect();
        let phase_ns = match p.rotation_phase_turns {
            Some(turns) if turns.is_finite() => turns.rem_euclid(1.0) * period_ns,
            Some(_) => return Err("rotation_phase_turns must be finite".into()),
            None => rng.unit() * period_ns,
        };
        let ds = match &p.controller {
            Some(c) => {
                c.validate(p.cache_segments)?;
                let bus_sector_ns = SECTOR_BYTES as f64 * 1e9 / p.bus_bytes_per_sec;
                Some(Box::new(DsState::new(
                    (**c).clone(),
                    p.cache_segments,
                    p.segment_size_bytes / SECTOR_BYTES,
                    bus_sector_ns,
                )))
            }
            None => None,
        };
        let segment_sectors = p.segment_size_bytes / SECTOR_BYTES;
        Ok(Hdd {
            cache: Cache::new(p.cache_segments, segment_sectors),
            wc: {
                let limit = u64::from(p.cache_segments) * segment_sectors;
                WriteCache::new(limit, limit / 4 * 3, segment_sectors.max(8))
                    .with_candidates(p.destage_candidates as usize)
            },
            queue: Queue::with_capacity(p.queue_depth as usize + 1),
            head_switch_ns: p.head_switch_ms * 1e6,
            settle_ns: p.write_settle_ms * 1e6,
            read_overhead_ns: p.read_overhead_ms * 1e6,
            write_overhead_ns: p.write_overhead_ms * 1e6,
            bus_ns_per_byte: 1e9 / p.bus_bytes_per_sec,
            age_limit_ns: (p.max_queue_age_ms * 1e6) as Nanos,
            cost_scratch: Vec::with_capacity(p.queue_depth as usize),
            period_ns,
            inv_period: 1.0 / period_ns,
            phase_ns,
            sector_ns,
            readahead_sector_ns,
            geom,
            seek,
            head: HeadState::default(),
            active: None,
            media_wake: None,
            media_free_ns: 0.0,
            last_destage: None,
            ds,
            last_head_at: None,
            p,
        })
    }

    pub fn params(&self) -> &HddParams {
        &self.p
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geom
    }

    pub fn seek_curve(&self) -> &SeekCurve {
        &self.seek
    }

    pub fn rotation_period_ns(&self) -> f64 {
        self.period_ns
    }

    /// Where the heads are (not counting read-ahead in progress).
    pub fn head(&self) -> HeadState {
        self.head
    }

    /// Rotational wait from `t_ns` until the angle `target_turns` is under the head.
    #[inline]
    fn rot_wait_ns(&self, t_ns: f64, target_turns: f64) -> f64 {
        // Truncating casts instead of `floor` (a libm call on baseline x86-64): both operands
        // are non-negative here.
        let now = (t_ns + self.phase_ns) * self.inv_period;
        let mut x = target_turns - (now - (now as i64) as f64) + 1.0;
        x -= (x as i64) as f64;
        if x > 1.0 - 1e-9 {
            x = 0.0;
        }
        x * self.period_ns
    }

    /// Bus time of `bytes`.
    pub fn bus_ns(&self, bytes: u64) -> f64 {
        bytes as f64 * self.bus_ns_per_byte
    }

    /// Service time of a cache hit of `bytes`.
    pub fn cache_hit_ns(&self, bytes: u64) -> f64 {
        self.read_overhead_ns + self.bus_ns(bytes)
    }

    /// The pure timing model: a media access of `sectors` from `lbn` started (command
    /// received) at `start_ns` with the heads at `from`, ignoring cache and queue. This is
    /// what DiskSim-style closed-loop validation replays.
    pub fn media_access(
        &self,
        from: HeadState,
        start_ns: f64,
        write: bool,
        lbn: u64,
        sectors: u64,
    ) -> Access {
        self.media_access_at(from, start_ns, write, lbn, sectors, self.geom.map(lbn))
    }

    /// [`Hdd::media_access`] with `first` = the map of `lbn`, already known.
    fn media_access_at(
        &self,
        from: HeadState,
        start_ns: f64,
        write: bool,
        lbn: u64,
        sectors: u64,
        first: Chs,
    ) -> Access {
        let overhead_ns = if write { self.write_overhead_ns } else { self.read_overhead_ns };
        self.media_access_with(from, start_ns, write, lbn, sectors, first, overhead_ns)
    }

    /// [`Hdd::media_access_at`] with the command overhead given (none when the drive goes on
    /// writing back where its last destage ended).
    #[allow(clippy::too_many_arguments)]
    fn media_access_with(
        &self,
        from: HeadState,
        start_ns: f64,
        write: bool,
        lbn: u64,
        sectors: u64,
        first: Chs,
        overhead_ns: f64,
    ) -> Access {
        let bus_ns = self.bus_ns(sectors * SECTOR_BYTES);
        let t0 = start_ns + overhead_ns;
        let mut acc = Access {
            overhead_ns,
            seek_ns: 0.0,
            rotation_ns: 0.0,
            transfer_ns: 0.0,
            bus_ns,
            done_ns: t0,
            end: from,
        };
        if sectors == 0 {
            return acc;
        }
        let (mut t, mut cur, mut lbn, mut left) = (t0, from, lbn, sectors);
        let mut first_at = t0;
        let mut c = first;
        let mut first = true;
        loop {
            let dist = c.cylinder.abs_diff(cur.cylinder);
            let mut mv = if dist > 0 {
                self.seek.seek_ns(dist).max(if c.head != cur.head {
                    self.head_switch_ns
                } else {
                    0.0
                })
            } else if c.head != cur.head {
                self.head_switch_ns
            } else {
                0.0
            };
            if write && mv > 0.0 {
                mv += self.settle_ns;
            }
            t += mv;
            let wait = self.rot_wait_ns(t, self.geom.angle_turns(&c));
            t += wait;
            if first {
                acc.seek_ns = mv;
                acc.rotation_ns = wait;
                first_at = t;
                first = false;
            } else {
                acc.transfer_ns += mv + wait;
            }
            let (chunk, span, after) = self.geom.run_next(lbn, &c, left);
            let d = span as f64 * self.sector_ns[c.zone];
            t += d;
            acc.transfer_ns += d;
            left -= chunk;
            cur = HeadState { cylinder: c.cylinder, head: c.head };
            if left == 0 {
                break;
            }
            lbn += chunk;
            c = after.unwrap_or_else(|| self.geom.map(lbn));
        }
        acc.end = cur;
        acc.done_ns = if write { t.max(t0 + bus_ns) } else { t.max(first_at + bus_ns) };
        acc
    }

    fn lbn_range(cmd: &Command) -> (u64, u64) {
        let lbn = cmd.offset_bytes / SECTOR_BYTES;
        let end = (cmd.offset_bytes + cmd.len_bytes).div_ceil(SECTOR_BYTES);
        (lbn, end - lbn)
    }

    /// Stops read-ahead at `now`; the heads are where it stopped.
    fn stop_readahead(&mut self, now_ns: f64) {
        if let Some(at) = self.cache.stop_readahead(now_ns) {
            self.head = self.head_at(at);
        }
    }

    /// The heads over block `lbn` (clamped to the disk); the last answer is remembered, as
    /// planning and then stopping read-ahead ask for the same block.
    fn head_at(&mut self, lbn: u64) -> HeadState {
        let lbn = lbn.min(self.geom.total_sectors - 1);
        if let Some((l, h)) = self.last_head_at {
            if l == lbn {
                return h;
            }
        }
        let c = self.geom.map(lbn);
        let h = HeadState { cylinder: c.cylinder, head: c.head };
        self.last_head_at = Some((lbn, h));
        h
    }

    /// The heads' position for planning at `now` (read-ahead moves them).
    fn planning_head(&mut self, now_ns: f64) -> HeadState {
        match self.cache.streaming() {
            Some(s) => {
                let at = s.end_at(now_ns);
                self.head_at(at)
            }
            None => self.head,
        }
    }

    fn pick(&mut self, now: Nanos) -> usize {
        let fifo = self.p.queue_depth <= 1;
        if fifo || self.queue.len() <= 1 {
            return 0;
        }
        let now_f = now as f64;
        if now.saturating_sub(self.queue.items[0].arrived_ns) > self.age_limit_ns {
            return 0;
        }
        let head = self.planning_head(now_f);
        let base = (now_f + self.read_overhead_ns + self.phase_ns) * self.inv_period;
        let base_turns = base - (base as i64) as f64;
        // Pass 1, branch-light over the parallel arrays: seek (or head switch) + settle +
        // rotational wait for every queued command, the seek curve's form hoisted out.
        let q = &self.queue;
        let head_cyl = head.cylinder as f64;
        let mut costs = std::mem::take(&mut self.cost_scratch);
        costs.clear();
        match &self.seek {
            &SeekCurve::Formula { a_ns, b_ns, c_ns } => {
                // The same arithmetic as the other arm's `positioning`, written over the
                // parallel arrays without branches or integer conversions so that it
                // vectorises: x truncated as |x| rounded by the 2^52 trick, less one if that
                // rounded up, with x's sign (exactly `(x as i64) as f64` for |x| < 2^52).
                const TWO52: f64 = 4_503_599_627_370_496.0;
                let (hs, inv, period) = (self.head_switch_ns, self.inv_period, self.period_ns);
                let head_f = head.head as f64;
                let n = q.len();
                costs.resize(n, 0.0);
                let lanes = q.cylinder[..n]
                    .iter()
                    .zip(&q.head[..n])
                    .zip(&q.angle_turns[..n])
                    .zip(&q.settle_ns[..n]);
                for (cost, (((&cyl, &hd), &ang), &set)) in costs.iter_mut().zip(lanes) {
                    let d = (cyl - head_cyl).abs();
                    let x = (d - 1.0).max(0.0);
                    let seek = if d >= 1.0 { a_ns * x.sqrt() + b_ns * x + c_ns } else { 0.0 };
                    let switch = if hd != head_f { hs } else { 0.0 };
                    let mv = if seek > 0.0 { seek } else { switch };
                    let mv = if mv > 0.0 { mv + set } else { mv };
                    let x = ang - base_turns - mv * inv + 2.0;
                    let ax = x.abs();
                    let r = (ax + TWO52) - TWO52;
                    let tr = (if r > ax { r - 1.0 } else { r }).copysign(x);
                    // Floor, not truncation: a move of more than about two turns still waits
                    // a fraction of a turn in [0, 1), never a negative one.
                    let fl = if tr > x { tr - 1.0 } else { tr };
                    *cost = mv + (x - fl) * period;
                }
            }
            curve => {
                let positioning = |i: usize, seek_ns: f64| -> f64 {
                    let mv = if seek_ns > 0.0 {
                        seek_ns
                    } else if q.items[i].chs.head != head.head {
                        self.head_switch_ns
                    } else {
                        0.0
                    };
                    let mv = if mv > 0.0 { mv + q.settle_ns[i] } else { mv };
                    // Turns to wait after the move: always in [0, 1).
                    let x = q.angle_turns[i] - base_turns - mv * self.inv_period + 2.0;
                    mv + (x - x.floor()) * self.period_ns
                };
                costs.extend((0..q.len()).map(|i| {
                    positioning(i, curve.seek_ns(q.items[i].chs.cylinder.abs_diff(head.cylinder)))
                }));
            }
        }
        // Writes the write cache takes at once cost nothing to position, and neither do
        // reads of data dirty in it. What each command overlaps is remembered between
        // choices (the queue forgets it where the cache changes).
        if self.p.write_cache {
            let (wc, q) = (&self.wc, &mut self.queue);
            for ((item, overlap), cost) in q.items.iter().zip(&mut q.wc_overlap).zip(&mut costs) {
                let mut overlap = || {
                    if *overlap == OVERLAP_UNKNOWN {
                        *overlap = wc.overlap(item.lbn, item.sectors);
                    }
                    *overlap
                };
                let absorbed = match item.cmd.op {
                    Op::Write => {
                        !item.cmd.fua
                            && (wc.has_room(item.sectors) || wc.fits_over(item.sectors, overlap()))
                    }
                    Op::Read => item.sectors > 0 && !wc.is_empty() && overlap() == item.sectors,
                    _ => false,
                };
                if absorbed {
                    *cost = -1.0;
                }
            }
        }
        let q = &self.queue;
        // Pass 2, rarely taken: a read the cache holds or is reading ahead costs what the
        // cache says instead.
        if self.cache.enabled() {
            for (i, item) in q.items.iter().enumerate() {
                if item.cmd.op != Op::Read {
                    continue;
                }
                // A candidate in a bucket no segment touches cannot hit.
                if !self.cache.may_hold(item.lbn) {
                    continue;
                }
                costs[i] = match self.cache.lookup(item.lbn, item.sectors, now_f) {
                    Lookup::Hit => -1.0,
                    // Positioning cost, like a miss's: until its first sector passes under
                    // the head (its transfer is not part of the choice).
                    Lookup::Streaming { ready_ns } => {
                        let transfer =
                            item.sectors as f64 * self.readahead_sector_ns[item.chs.zone];
                        (ready_ns - transfer - now_f).max(0.0)
                    }
                    Lookup::Miss => continue,
                };
            }
        }
        // A flush is no queued command (ATA FLUSH CACHE is not NCQ: libata holds it until
        // the commands before it are done, and those after it until it is): the choice is
        // among the commands that came before the first flush, the flush once it is oldest.
        let before_flush =
            q.items.iter().position(|it| it.cmd.op == Op::Flush).unwrap_or(costs.len());
        // The lowest cost; ties to the oldest.
        let mut best = (f64::INFINITY, 0usize);
        for (i, &c) in costs[..before_flush].iter().enumerate() {
            if c < best.0 {
                best = (c, i);
            }
        }
        self.cost_scratch = costs;
        best.1
    }

    fn start_next(&mut self, now: Nanos) {
        // The simple controller destages in the background while the media is free and no
        // host command waits, and ahead of host commands once the dirty data passes the
        // high-water mark (DiskSim's controller has its own rules).
        let now_f = now as f64;
        if self.ds.is_none()
            && self.media_free_ns <= now_f
            && !self.wc.is_empty()
            && (self.queue.is_empty() || self.wc.over_high_water())
        {
            self.media_free_ns = self.destage_one(now_f);
        }
        if self.active.is_none() && !self.queue.is_empty() {
            let i = self.pick(now);
            let q = self.queue.remove(i);
            let done =
                if self.ds.is_some() { self.serve_disksim(&q, now) } else { self.serve(&q, now) };
            self.active = Some(Active { id: q.cmd.id, done_ns: done.max(now) });
        }
        // Wake when the media frees to go on destaging (without losing the rotation a
        // stream of destages would otherwise lose).
        if self.ds.is_none() && !self.wc.is_empty() && self.media_free_ns > now_f {
            let wake = self.media_free_ns.ceil() as Nanos;
            if self.media_wake.is_none_or(|w| w < wake) {
                self.media_wake = Some(wake);
            }
        }
    }

    /// Positioning time (seek or head switch, write settle, rotational wait) from `from` at
    /// `t_ns` to the start of `lbn`, for a write the drive plans itself (no command
    /// overhead: that is the host command's).
    fn write_positioning_ns(&self, from: HeadState, t_ns: f64, lbn: u64) -> f64 {
        let c = self.geom.map(lbn);
        let dist = c.cylinder.abs_diff(from.cylinder);
        let mut mv = if dist > 0 { self.seek.seek_ns(dist) } else { 0.0 };
        if c.head != from.head {
            mv = mv.max(self.head_switch_ns);
        }
        if mv > 0.0 {
            mv += self.settle_ns;
        }
        mv + self.rot_wait_ns(t_ns + mv, self.geom.angle_turns(&c))
    }

    /// Writes the next chunk of dirty data to the media from `t_ns` (the one the heads reach
    /// soonest among the oldest extents); returns when it is on the media. A destage is
    /// internal work: it pays positioning, settle and transfer, not a host command's
    /// overhead, and one that goes on where the last ended, with the media still
    /// streaming, starts at that instant.
    fn destage_one(&mut self, t_ns: f64) -> f64 {
        self.stop_readahead(t_ns);
        let head = self.head;
        let streaming =
            self.last_destage.filter(|&(_, end_ns)| end_ns + 1.0 >= t_ns).map(|(l, _)| l);
        let Some((lbn, n)) = self.wc.next_destage(|s| {
            if Some(s) == streaming {
                -1.0
            } else {
                self.write_positioning_ns(head, t_ns, s)
            }
        }) else {
            return t_ns;
        };
        // Going on from the last destage: from the instant it ended (not `t_ns`, which the
        // event clock rounded up to a whole nanosecond).
        let start = match (streaming == Some(lbn), self.last_destage) {
            (true, Some((_, end_ns))) => end_ns,
            _ => t_ns,
        };
        let a = self.media_access_with(head, start, true, lbn, n, self.geom.map(lbn), 0.0);
        self.head = a.end;
        self.cache_clean(lbn, n);
        let end = start + a.overhead_ns + a.seek_ns + a.rotation_ns + a.transfer_ns;
        self.last_destage = Some((lbn + n, end));
        end
    }

    /// Sectors `[lbn, lbn + n)` are dirty in the write cache now. Every change to the write
    /// cache goes through here or [`Hdd::cache_clean`], so the queue can forget what it
    /// remembered of those sectors.
    fn cache_dirty(&mut self, lbn: u64, n: u64) {
        self.wc.insert(lbn, n);
        self.queue.forget_overlap(lbn, n);
    }

    /// Sectors `[lbn, lbn + n)` are not dirty in the write cache (destaged, written through
    /// or discarded).
    fn cache_clean(&mut self, lbn: u64, n: u64) {
        self.wc.clean(lbn, n);
        self.queue.forget_overlap(lbn, n);
    }

    /// Serves one host command from `now`; returns its completion time.
    fn serve(&mut self, q: &Queued, now: Nanos) -> Nanos {
        let now_f = now as f64;
        // Media work starts once a background destage in progress is over.
        let media_t = now_f.max(self.media_free_ns);
        let (lbn, n) = (q.lbn, q.sectors);
        let done = match q.cmd.op {
            Op::Discard => {
                self.cache_clean(lbn, n);
                now_f + self.write_overhead_ns
            }
            Op::Flush => {
                let mut t = media_t.max(now_f + self.write_overhead_ns);
                while !self.wc.is_empty() {
                    t = self.destage_one(t);
                }
                self.media_free_ns = t;
                t
            }
            Op::Read => {
                let look = if n > 0 && self.wc.covers(lbn, n) {
                    Lookup::Hit
                } else if self.cache.enabled() && n > 0 {
                    self.cache.lookup(lbn, n, now_f)
                } else {
                    Lookup::Miss
                };
                match look {
                    Lookup::Hit => now_f + self.cache_hit_ns(n * SECTOR_BYTES),
                    Lookup::Streaming { ready_ns } => {
                        let done = ready_ns.max(now_f + self.cache_hit_ns(n * SECTOR_BYTES));
                        let z = self.geom.zone_of(lbn + n - 1, q.chs.zone);
                        let ra = self.readahead_sector_ns[z];
                        self.cache.read_done(lbn, lbn + n, done, ra, self.geom.total_sectors);
                        done
                    }
                    Lookup::Miss => {
                        self.stop_readahead(media_t);
                        let a = self.media_access_at(self.head, media_t, false, lbn, n, q.chs);
                        self.head = a.end;
                        self.media_free_ns = a.done_ns;
                        if n > 0 {
                            let z = self.geom.zone_of(lbn + n - 1, q.chs.zone);
                            let ra = self.readahead_sector_ns[z];
                            // Read-ahead starts when the last sector is off the media.
                            let media_end = a.done_ns.min(
                                media_t + a.overhead_ns + a.seek_ns + a.rotation_ns + a.transfer_ns,
                            );
                            self.cache.read_done(
                                lbn,
                                lbn + n,
                                media_end,
                                ra,
                                self.geom.total_sectors,
                            );
                        }
                        a.done_ns
                    }
                }
            }
            Op::Write => {
                self.cache.invalidate(lbn, n);
                if self.p.write_cache && !q.cmd.fua && n <= self.wc.limit_sectors() {
                    // Into the cache; a full cache first destages until the write fits.
                    let mut t = now_f + self.write_overhead_ns;
                    if !self.wc.fits(lbn, n) {
                        t = t.max(media_t);
                        while !self.wc.fits(lbn, n) {
                            t = self.destage_one(t);
                        }
                        self.media_free_ns = t;
                    }
                    self.cache_dirty(lbn, n);
                    t + self.bus_ns(n * SECTOR_BYTES)
                } else {
                    // FUA (or no write cache): to the media, which also makes any cached
                    // copy of these sectors clean.
                    self.cache_clean(lbn, n);
                    self.stop_readahead(media_t);
                    let a = self.media_access_at(self.head, media_t, true, lbn, n, q.chs);
                    self.head = a.end;
                    self.media_free_ns = a.done_ns;
                    a.done_ns
                }
            }
        };
        done.ceil() as Nanos
    }
}

impl Device for Hdd {
    fn describe(&self) -> String {
        let q = if self.p.queue_depth > 1 {
            format!("NCQ {}", self.p.queue_depth)
        } else {
            "no queueing".to_string()
        };
        format!(
            "{} rpm {} HDD, {} GB, {}",
            self.p.rpm.round() as u64,
            self.p.interface,
            self.capacity_bytes() / 1_000_000_000,
            q
        )
    }

    fn capacity_bytes(&self) -> u64 {
        self.geom.total_sectors * SECTOR_BYTES
    }

    fn queue_depth(&self) -> u32 {
        self.p.queue_depth
    }

    fn rotational(&self) -> bool {
        true
    }

    fn submit(&mut self, cmd: Command, now_ns: Nanos) {
        let (lbn, sectors) = Self::lbn_range(&cmd);
        // DiskSim's controller serving one command at a time places it itself, and the queue
        // never chooses: the place would go unused (mapping it was a tenth of a validation replay).
        let (chs, angle) = if self.ds.is_some() && self.p.queue_depth <= 1 {
            (Chs::UNPLACED, 0.0)
        } else {
            let chs = self.geom.map(lbn);
            (chs, self.geom.angle_turns(&chs))
        };
        let settle = if cmd.op.is_write() { self.settle_ns } else { 0.0 };
        self.queue.push(Queued { cmd, arrived_ns: now_ns, lbn, sectors, chs }, angle, settle);
        self.start_next(now_ns);
    }

    fn next_event_ns(&self) -> Option<Nanos> {
        match (self.active.map(|a| a.done_ns), self.media_wake) {
            (Some(a), Some(d)) => Some(a.min(d)),
            (a, d) => a.or(d),
        }
    }

    fn advance(&mut self, now_ns: Nanos, completed: &mut Vec<Completion>) {
        while let Some(t) = self.next_event_ns() {
            if t > now_ns {
                break;
            }
            if self.media_wake.is_some_and(|w| w <= t) {
                self.media_wake = None;
            }
            if let Some(a) = self.active.filter(|a| a.done_ns == t) {
                self.active = None;
                completed.push(Completion { id: a.id, done_ns: t });
            }
            self.start_next(t);
        }
    }
}
