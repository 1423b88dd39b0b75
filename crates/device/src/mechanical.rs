//! A mechanical disk: seek curve, rotational position, zoned transfer rates, per-command
//! overhead, a read-ahead cache, and drive-side queue reordering (NCQ/TCQ).
//!
//! What it models, and why each part matters to a scheduler:
//! - **Zones.** Tracks hold more sectors near the rim, so the outer zones transfer faster
//!   (a 2009 SATA disk streams ~125 MB/s outside and ~60 MB/s inside). Sectors per track fall
//!   linearly from the outermost to the innermost zone.
//! - **Seeks** cost `a·√(d−1) + b·(d−1) + c` ms for a distance of `d ≥ 1` cylinders (the form
//!   DiskSim and Ruemmler & Wilkes use); writes add a settle time. The constants are fitted to
//!   the datasheet's track-to-track, average (one third of the stroke) and full-stroke times.
//! - **Rotation** is tracked in time: the platter's angle is `(t + phase) mod period`, with a
//!   random phase at power-on. A request waits for its first sector to come round; track
//!   switches inside a transfer cost the head-switch time (track skew hides the rest).
//! - **Overhead**: every command costs controller time; a cache hit costs only that plus the
//!   bus transfer.
//! - **Read-ahead**: after a read the drive keeps reading the following sectors into a cache
//!   segment until the next command arrives (up to `readahead_kib`); a later read of sectors
//!   already read ahead is a cache hit, and one of sectors the head is about to read waits
//!   only until they pass under it. Several segments keep several streams' read-ahead.
//! - **Queueing**: with `queue_depth` > 1 the drive picks the queued command with the shortest
//!   positioning time (SPTF), unless the oldest has waited longer than `max_queue_age_ms`.
//!
//! Deviations: spare sectors and defect slipping are not modelled; writes are written through
//! (no write-back cache); the bus transfer overlaps the media transfer completely except on
//! cache hits. The full-fidelity model of record (DiskSim parameters) is issue 4's.

use std::collections::VecDeque;

use elevator_core::{Nanos, Op, RandomStream, SECTOR_BYTES};
use serde::{Deserialize, Serialize};

use crate::{Command, Completion, Device};

/// log2 of the sectors per bucket of the SPTF loop's cache filter (2 MiB buckets).
const FILTER_SHIFT: u32 = 12;

/// Parameters of a [`MechanicalDisk`]. Times in milliseconds as datasheets give them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskParams {
    /// A one-line name for reports.
    pub name: String,
    pub capacity_bytes: u64,
    pub rpm: u32,
    /// Recording surfaces (heads).
    pub surfaces: u32,
    pub zones: u32,
    /// Sustained media rate in the outermost and innermost zone, MB/s (10^6 bytes).
    pub outer_mb_per_sec: f64,
    pub inner_mb_per_sec: f64,
    pub track_to_track_seek_ms: f64,
    pub average_seek_ms: f64,
    pub full_stroke_seek_ms: f64,
    pub write_settle_ms: f64,
    pub head_switch_ms: f64,
    /// Controller time per command (decoding, cache lookup, status).
    pub command_overhead_ms: f64,
    /// Interface rate, MB/s: what a cache hit is transferred at.
    pub bus_mb_per_sec: f64,
    /// How far the drive reads ahead after a read, KiB; 0 disables read-ahead.
    pub readahead_kib: u64,
    /// Cache segments: how many read-ahead streams the drive remembers.
    pub cache_segments: u32,
    /// Commands the drive accepts at once (NCQ 31; 1 means no command queueing).
    pub queue_depth: u32,
    /// The drive serves a command that has waited this long before any closer one.
    pub max_queue_age_ms: f64,
}

impl DiskParams {
    /// A 7200 rpm SATA disk of 2009: Seagate Barracuda 7200.12 500 GB (ST3500418AS) data
    /// sheet: 8.5 ms average read seek, 4.16 ms average latency, 125 MB/s max sustained
    /// transfer, 16 MB cache, NCQ, SATA 3 Gb/s; one platter, two heads. Track-to-track
    /// (0.8 ms), full stroke (17 ms) and head switch (1 ms) are typical values of that
    /// generation (Seagate's 7200.11 manual); inner-zone rate from measured transfer curves.
    pub fn sata_7200_2009() -> DiskParams {
        DiskParams {
            name: "7200 rpm SATA HDD (2009)".to_string(),
            capacity_bytes: 500_107_862_016,
            rpm: 7200,
            surfaces: 2,
            zones: 16,
            outer_mb_per_sec: 125.0,
            inner_mb_per_sec: 62.0,
            track_to_track_seek_ms: 0.8,
            average_seek_ms: 8.5,
            full_stroke_seek_ms: 17.0,
            write_settle_ms: 0.5,
            head_switch_ms: 1.0,
            command_overhead_ms: 0.05,
            bus_mb_per_sec: 300.0,
            readahead_kib: 2048,
            cache_segments: 16,
            queue_depth: 31,
            max_queue_age_ms: 500.0,
        }
    }

    /// An early-2000s IDE disk: a 7200 rpm ATA-100 drive of 2002–2003 (Western Digital
    /// WD800JB / Seagate Barracuda ATA IV class): 8.9 ms average seek, 2 MB cache in a few
    /// segments, ~47 MB/s outer and ~27 MB/s inner zone, ATA-100 (100 MB/s) bus, no command
    /// queueing.
    pub fn ide_2003() -> DiskParams {
        DiskParams {
            name: "7200 rpm IDE HDD (2003)".to_string(),
            capacity_bytes: 80_026_361_856,
            rpm: 7200,
            surfaces: 4,
            zones: 16,
            outer_mb_per_sec: 47.0,
            inner_mb_per_sec: 27.0,
            track_to_track_seek_ms: 1.0,
            average_seek_ms: 8.9,
            full_stroke_seek_ms: 21.0,
            write_settle_ms: 0.5,
            head_switch_ms: 1.2,
            command_overhead_ms: 0.1,
            bus_mb_per_sec: 100.0,
            readahead_kib: 512,
            cache_segments: 4,
            queue_depth: 1,
            max_queue_age_ms: 500.0,
        }
    }

    fn check(&self) -> Result<(), String> {
        let positive = [
            ("rpm", f64::from(self.rpm)),
            ("surfaces", f64::from(self.surfaces)),
            ("zones", f64::from(self.zones)),
            ("outer_mb_per_sec", self.outer_mb_per_sec),
            ("inner_mb_per_sec", self.inner_mb_per_sec),
            ("track_to_track_seek_ms", self.track_to_track_seek_ms),
            ("bus_mb_per_sec", self.bus_mb_per_sec),
            ("queue_depth", f64::from(self.queue_depth)),
            ("cache_segments", f64::from(self.cache_segments)),
        ];
        for (name, v) in positive {
            if !(v > 0.0 && v.is_finite()) {
                return Err(format!("{name} must be positive"));
            }
        }
        if !(self.track_to_track_seek_ms <= self.average_seek_ms
            && self.average_seek_ms <= self.full_stroke_seek_ms)
        {
            return Err(
                "seek times must satisfy track_to_track ≤ average ≤ full_stroke".to_string()
            );
        }
        if self.inner_mb_per_sec > self.outer_mb_per_sec {
            return Err("inner_mb_per_sec must not exceed outer_mb_per_sec".to_string());
        }
        if self.capacity_bytes < 1 << 20 {
            return Err("capacity_bytes must be at least 1 MiB".to_string());
        }
        Ok(())
    }
}

/// One recording zone: a band of cylinders with the same sectors per track.
#[derive(Clone, Copy, Debug)]
struct Zone {
    first_lba: u64,
    first_cylinder: u64,
    sectors_per_track: u64,
    /// Global track index of the zone's first track, for the skew.
    first_track: u64,
}

/// Where a sector is: its cylinder and when in a turn (ns after the index mark) it passes
/// the head.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Place {
    cylinder: u64,
    angle_ns: u64,
    sector_ns: f64,
    sectors_per_track: u64,
    sector_in_track: u64,
}

#[derive(Clone, Copy, Debug)]
struct Queued {
    cmd: Command,
    arrived_ns: Nanos,
    place: Place,
}

/// A cached range of sectors `[start, end)`; while `streaming_since` is set the drive is
/// still reading ahead into it from `end` at media speed, up to `limit`.
#[derive(Clone, Copy, Debug)]
struct Segment {
    start: u64,
    end: u64,
    limit: u64,
    streaming_since: Option<(Nanos, f64)>,
}

impl Segment {
    /// Sectors valid at `now` (read-ahead in progress counts what has passed the head).
    fn end_at(&self, now: Nanos) -> u64 {
        match self.streaming_since {
            Some((since, sector_ns)) => {
                let more = ((now.saturating_sub(since)) as f64 / sector_ns) as u64;
                (self.end + more).min(self.limit)
            }
            None => self.end,
        }
    }
}

/// A cache segment as the SPTF pass sees it at one instant.
#[derive(Clone, Copy, Debug)]
struct SegmentView {
    start: u64,
    end_now: u64,
    limit: u64,
    streaming: Option<(Nanos, f64)>,
    end: u64,
}

/// The disk.
#[derive(Debug)]
pub struct MechanicalDisk {
    p: DiskParams,
    zones: Vec<Zone>,
    total_sectors: u64,
    cylinders: u64,
    period_ns: f64,
    /// The rotation period and the power-on phase, in whole ns, for integer angle math.
    period_whole_ns: u64,
    phase_whole_ns: u64,
    inv_period: f64,
    seek_a: f64,
    seek_b: f64,
    head_cylinder: u64,
    queue: VecDeque<Queued>,
    /// The queue's cylinders, angles (in turns) and write-settle times, as parallel arrays
    /// for the SPTF loop.
    queue_cylinder: Vec<f64>,
    queue_angle_turns: Vec<f64>,
    queue_settle_ns: Vec<f64>,
    /// The command on the media now and when it completes.
    active: Option<(Command, Nanos)>,
    segments: VecDeque<Segment>,
}

impl MechanicalDisk {
    pub fn new(p: DiskParams, rng: &mut RandomStream) -> Result<MechanicalDisk, String> {
        p.check()?;
        let period_ns = 60e9 / f64::from(p.rpm);
        let total_sectors = p.capacity_bytes / SECTOR_BYTES;
        // Sectors per track from the media rate: one track passes per revolution.
        let spt = |mb: f64| ((mb * 1e6 * period_ns / 1e9) / SECTOR_BYTES as f64).max(1.0);
        let (outer, inner) = (spt(p.outer_mb_per_sec), spt(p.inner_mb_per_sec));
        let zones_n = u64::from(p.zones);
        let heads = u64::from(p.surfaces);
        // Each zone holds an equal share of cylinders; find that share from the capacity.
        let per_cyl_avg: f64 = (0..zones_n)
            .map(|z| {
                (outer + (inner - outer) * z as f64 / (zones_n - 1).max(1) as f64).floor()
                    * heads as f64
            })
            .sum::<f64>()
            / zones_n as f64;
        let cylinders = ((total_sectors as f64 / per_cyl_avg).ceil() as u64).max(zones_n);
        let cyl_per_zone = cylinders.div_ceil(zones_n);
        let mut zones = Vec::new();
        let (mut lba, mut cyl, mut track) = (0u64, 0u64, 0u64);
        for z in 0..zones_n {
            let sectors_per_track =
                (outer + (inner - outer) * z as f64 / (zones_n - 1).max(1) as f64).floor() as u64;
            zones.push(Zone {
                first_lba: lba,
                first_cylinder: cyl,
                sectors_per_track,
                first_track: track,
            });
            lba += cyl_per_zone * heads * sectors_per_track;
            cyl += cyl_per_zone;
            track += cyl_per_zone * heads;
        }
        // Fit a and b of a·√(d−1) + b·(d−1) + c to the average (at a third of the stroke)
        // and full-stroke seek times, with c the track-to-track time.
        let (c, avg, full) = (p.track_to_track_seek_ms, p.average_seek_ms, p.full_stroke_seek_ms);
        let (d1, d2) = ((cylinders as f64 / 3.0 - 1.0).max(1.0), (cylinders as f64 - 1.0).max(2.0));
        let (y1, y2) = (avg - c, full - c);
        let det = d1.sqrt() * d2 - d2.sqrt() * d1;
        let (seek_a, seek_b) = if det.abs() < 1e-12 {
            (y2 / d2.sqrt(), 0.0)
        } else {
            ((y1 * d2 - y2 * d1) / det, (d1.sqrt() * y2 - d2.sqrt() * y1) / det)
        };
        let period_whole_ns = period_ns.round() as u64;
        let phase_whole_ns = rng.below(period_whole_ns);
        Ok(MechanicalDisk {
            segments: VecDeque::with_capacity(p.cache_segments as usize),
            p,
            zones,
            total_sectors,
            cylinders,
            period_ns,
            period_whole_ns,
            phase_whole_ns,
            inv_period: 1.0 / period_whole_ns as f64,
            seek_a: seek_a.max(0.0),
            seek_b: seek_b.max(0.0),
            head_cylinder: 0,
            queue: VecDeque::new(),
            queue_cylinder: Vec::new(),
            queue_angle_turns: Vec::new(),
            queue_settle_ns: Vec::new(),
            active: None,
        })
    }

    /// Seek time in ns for a distance in cylinders.
    pub fn seek_ns(&self, distance: u64, write: bool) -> f64 {
        if distance == 0 {
            return if write { self.p.write_settle_ms * 1e6 } else { 0.0 };
        }
        let d = (distance - 1) as f64;
        let ms = self.seek_a * d.sqrt() + self.seek_b * d + self.p.track_to_track_seek_ms;
        (ms + if write { self.p.write_settle_ms } else { 0.0 }) * 1e6
    }

    fn place(&self, lba: u64) -> Place {
        let lba = lba.min(self.total_sectors.saturating_sub(1));
        let zi = self.zones.partition_point(|z| z.first_lba <= lba).saturating_sub(1);
        let z = self.zones[zi];
        let within = lba - z.first_lba;
        let track_in_zone = within / z.sectors_per_track;
        let sector = within % z.sectors_per_track;
        let cylinder =
            (z.first_cylinder + track_in_zone / u64::from(self.p.surfaces)).min(self.cylinders - 1);
        let sector_ns = self.period_ns / z.sectors_per_track as f64;
        // Track skew: each track starts `head_switch` later in the rotation than the last.
        let skew = self.p.head_switch_ms * 1e6 / sector_ns;
        let track = z.first_track + track_in_zone;
        let turns = (sector as f64 + skew * track as f64) / z.sectors_per_track as f64;
        let angle_ns = ((turns - turns.floor()) * self.period_ns) as u64 % self.period_whole_ns;
        Place {
            cylinder,
            angle_ns,
            sector_ns,
            sectors_per_track: z.sectors_per_track,
            sector_in_track: sector,
        }
    }

    /// Time from `start_ns` until the first sector of `place` is under the head: overhead,
    /// seek, then the rotation until that sector comes round.
    fn positioning_ns(&self, place: &Place, write: bool, start_ns: f64) -> f64 {
        let seek = self.seek_ns(place.cylinder.abs_diff(self.head_cylinder), write);
        let arrive = start_ns + self.p.command_overhead_ms * 1e6 + seek;
        let head_at = (arrive as u64 + self.phase_whole_ns) % self.period_whole_ns;
        let wait = (place.angle_ns + self.period_whole_ns - head_at) % self.period_whole_ns;
        arrive - start_ns + wait as f64
    }

    /// Media transfer time of `sectors` from `place`, with head switches at track ends.
    fn transfer_ns(&self, place: &Place, sectors: u64) -> f64 {
        let crossings =
            (place.sector_in_track + sectors.saturating_sub(1)) / place.sectors_per_track;
        sectors as f64 * place.sector_ns + crossings as f64 * self.p.head_switch_ms * 1e6
    }

    fn bus_ns(&self, bytes: u64) -> f64 {
        bytes as f64 * 1e3 / self.p.bus_mb_per_sec
    }

    /// Stops read-ahead at `now`: what was read so far stays cached.
    fn stop_readahead(&mut self, now: Nanos) {
        for s in self.segments.iter_mut() {
            if s.streaming_since.is_some() {
                s.end = s.end_at(now);
                s.streaming_since = None;
            }
        }
    }

    /// A cache hit: all of `[lba, lba+n)` is in a segment at `now`.
    fn cached(&self, lba: u64, n: u64, now: Nanos) -> bool {
        self.segments.iter().any(|s| s.start <= lba && lba + n <= s.end_at(now))
    }

    /// If the sectors are being read ahead right now, when the last of them will have been.
    fn streaming_until(&self, lba: u64, n: u64) -> Option<Nanos> {
        self.segments.iter().find_map(|s| {
            let (since, sector_ns) = s.streaming_since?;
            (s.start <= lba && lba + n <= s.limit)
                .then(|| since + ((lba + n).saturating_sub(s.end) as f64 * sector_ns) as Nanos)
        })
    }

    /// Picks the next command: the oldest if it is overdue, else the shortest positioning
    /// time (cache hits first); FIFO when the drive does not queue.
    fn pick(&self, now: Nanos) -> usize {
        if self.p.queue_depth <= 1 || self.queue.len() == 1 {
            return 0;
        }
        let age_limit = (self.p.max_queue_age_ms * 1e6) as Nanos;
        if let Some(oldest) = self.queue.front() {
            if now.saturating_sub(oldest.arrived_ns) > age_limit {
                return 0;
            }
        }
        // Each segment's valid end and read-ahead state at `now`, computed once and sorted by
        // start, so a candidate looks only at the segment that starts at or before it.
        let mut view: Vec<SegmentView> = self
            .segments
            .iter()
            .map(|s| SegmentView {
                start: s.start,
                end_now: s.end_at(now),
                limit: s.limit,
                streaming: s.streaming_since,
                end: s.end,
            })
            .collect();
        view.sort_unstable_by_key(|v| v.start);
        // A direct-mapped filter of the 2 MiB buckets the segments touch: a candidate whose
        // bucket is absent cannot be in the cache, which is nearly every random one.
        let mut buckets = [u64::MAX; 64];
        for v in &view {
            for b in (v.start >> FILTER_SHIFT)..=(v.limit.max(v.start) >> FILTER_SHIFT) {
                buckets[(b & 63) as usize] = b;
            }
        }
        let mut collided = [false; 64];
        for v in &view {
            for b in (v.start >> FILTER_SHIFT)..=(v.limit.max(v.start) >> FILTER_SHIFT) {
                collided[(b & 63) as usize] |= buckets[(b & 63) as usize] != b;
            }
        }
        // Where the platter is when a command started now would finish its overhead.
        let overhead_ns = self.p.command_overhead_ms * 1e6;
        let base_ns = (now + overhead_ns as u64 + self.phase_whole_ns) % self.period_whole_ns;
        // Pass 1, branch-light over parallel arrays: seek + rotation for every candidate.
        let head = self.head_cylinder as f64;
        let base_turns = base_ns as f64 * self.inv_period;
        let period = self.period_whole_ns as f64;
        let (c_ns, a_ns, b_ns) =
            (self.p.track_to_track_seek_ms * 1e6, self.seek_a * 1e6, self.seek_b * 1e6);
        let mut best = (f64::INFINITY, 0);
        for i in 0..self.queue_cylinder.len() {
            let d = (self.queue_cylinder[i] - head).abs();
            let moved = if d >= 1.0 { 1.0 } else { 0.0 };
            let dm1 = (d - 1.0).max(0.0);
            let seek = (a_ns * dm1.sqrt() + b_ns * dm1 + c_ns) * moved + self.queue_settle_ns[i];
            // Turns until the sector comes round after the seek, in [0, 1): x is positive.
            let x = self.queue_angle_turns[i] - base_turns - seek * self.inv_period + 8.0;
            let wait = x - (x as i64) as f64;
            let cost = overhead_ns + seek + wait * period;
            if cost < best.0 {
                best = (cost, i);
            }
        }
        // Pass 2, rarely taken: reads that the cache holds or is reading ahead.
        for (i, q) in self.queue.iter().enumerate() {
            let lba = q.cmd.offset_bytes / SECTOR_BYTES;
            let n = q.cmd.len_bytes / SECTOR_BYTES;
            let bucket = lba >> FILTER_SHIFT;
            let slot = (bucket & 63) as usize;
            if q.cmd.op != Op::Read || n == 0 || !(buckets[slot] == bucket || collided[slot]) {
                continue;
            }
            let k = view.partition_point(|v| v.start <= lba);
            if k == 0 {
                continue;
            }
            let v = view[k - 1];
            let cost = if lba + n <= v.end_now {
                0.0
            } else if let Some((since, sector_ns)) = v.streaming.filter(|_| lba + n <= v.limit) {
                // Being read ahead: positioned once its first sector passes the head.
                let at = since as f64 + (lba + n).saturating_sub(v.end) as f64 * sector_ns;
                (at - n as f64 * q.place.sector_ns - now as f64).max(0.0)
            } else {
                continue;
            };
            if cost < best.0 {
                best = (cost, i);
            }
        }
        best.1
    }

    /// Starts the next queued command at `now`, if the drive is idle.
    fn start_next(&mut self, now: Nanos) {
        if self.active.is_some() || self.queue.is_empty() {
            return;
        }
        let i = self.pick(now);
        let q = self.queue.remove(i).expect("picked index is in the queue");
        self.queue_cylinder.remove(i);
        self.queue_angle_turns.remove(i);
        self.queue_settle_ns.remove(i);
        let done = self.service(&q, now);
        self.active = Some((q.cmd, done));
    }

    /// Serves one command starting at `now`; returns its completion time.
    fn service(&mut self, q: &Queued, now: Nanos) -> Nanos {
        let cmd = q.cmd;
        let lba = cmd.offset_bytes / SECTOR_BYTES;
        let n = cmd.len_bytes / SECTOR_BYTES;
        let overhead = self.p.command_overhead_ms * 1e6;
        match cmd.op {
            Op::Flush => return now + overhead as Nanos,
            Op::Read if n > 0 && self.cached(lba, n, now) => {
                return now + (overhead + self.bus_ns(cmd.len_bytes)) as Nanos;
            }
            Op::Read if n > 0 => {
                if let Some(at) = self.streaming_until(lba, n) {
                    // The head is reading these sectors ahead anyway: wait for them.
                    let done = (at as f64).max(now as f64 + overhead) as Nanos;
                    self.extend_readahead_after(lba + n, done, q.place);
                    return done;
                }
            }
            _ => {}
        }
        self.stop_readahead(now);
        if cmd.op.is_write() {
            // Written data replaces whatever the cache held for those sectors.
            self.segments.retain(|s| lba + n <= s.start || s.end <= lba);
        }
        let write = cmd.op.is_write();
        let position = self.positioning_ns(&q.place, write, now as f64);
        let transfer = self.transfer_ns(&q.place, n);
        let done = (now as f64 + position + transfer) as Nanos;
        let end = self.place(lba + n.max(1) - 1);
        self.head_cylinder = end.cylinder;
        if cmd.op == Op::Read {
            self.extend_readahead_after(lba + n, done, q.place);
        }
        done
    }

    /// After a read of sectors up to `end_lba` finishing at `done`, the drive reads ahead.
    fn extend_readahead_after(&mut self, end_lba: u64, done: Nanos, place: Place) {
        let limit = (end_lba + self.p.readahead_kib * 1024 / SECTOR_BYTES).min(self.total_sectors);
        if self.p.readahead_kib == 0 || limit <= end_lba {
            return;
        }
        // Continue an existing segment that ends here, else start a new one (LRU eviction).
        let at = self.segments.iter().position(|s| s.end_at(done) >= end_lba && s.start < end_lba);
        let mut seg = match at {
            Some(i) => self.segments.remove(i).expect("position is valid"),
            None => Segment { start: end_lba, end: end_lba, limit, streaming_since: None },
        };
        seg.end = end_lba.max(seg.end_at(done)).min(limit);
        seg.limit = limit;
        let window = self.p.readahead_kib * 1024 / SECTOR_BYTES;
        seg.start = seg.start.max(seg.end.saturating_sub(window));
        seg.streaming_since = Some((done, place.sector_ns));
        for s in self.segments.iter_mut() {
            if s.streaming_since.is_some() {
                s.end = s.end_at(done);
                s.streaming_since = None;
            }
        }
        self.segments.push_front(seg);
        self.segments.truncate(self.p.cache_segments as usize);
    }
}

impl Device for MechanicalDisk {
    fn describe(&self) -> String {
        let queueing = if self.p.queue_depth > 1 {
            format!("NCQ {}", self.p.queue_depth)
        } else {
            "no queueing".to_string()
        };
        format!("{}, {} GB, {}", self.p.name, self.p.capacity_bytes / 1_000_000_000, queueing)
    }

    fn capacity_bytes(&self) -> u64 {
        self.total_sectors * SECTOR_BYTES
    }

    fn queue_depth(&self) -> u32 {
        self.p.queue_depth
    }

    fn rotational(&self) -> bool {
        true
    }

    fn submit(&mut self, cmd: Command, now_ns: Nanos) {
        let place = self.place(cmd.offset_bytes / SECTOR_BYTES);
        self.queue.push_back(Queued { cmd, arrived_ns: now_ns, place });
        self.queue_cylinder.push(place.cylinder as f64);
        self.queue_angle_turns.push(place.angle_ns as f64 / self.period_whole_ns as f64);
        self.queue_settle_ns.push(if cmd.op.is_write() {
            self.p.write_settle_ms * 1e6
        } else {
            0.0
        });
        self.start_next(now_ns);
    }

    fn next_event_ns(&self) -> Option<Nanos> {
        self.active.map(|(_, done)| done)
    }

    fn advance(&mut self, now_ns: Nanos, completed: &mut Vec<Completion>) {
        while let Some((cmd, done)) = self.active {
            if done > now_ns {
                break;
            }
            self.active = None;
            completed.push(Completion { id: cmd.id, done_ns: done });
            self.start_next(done);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::RequestId;

    fn disk(p: DiskParams) -> MechanicalDisk {
        MechanicalDisk::new(p, &mut RandomStream::new(1, 0)).unwrap()
    }

    fn read(id: u64, lba: u64, sectors: u64) -> Command {
        Command {
            id: RequestId(id),
            op: Op::Read,
            offset_bytes: lba * 512,
            len_bytes: sectors * 512,
            fua: false,
        }
    }

    /// Runs commands one at a time (closed loop, no think time); returns the total time.
    fn closed_loop(d: &mut MechanicalDisk, cmds: &[Command]) -> Nanos {
        let mut now = 0;
        let mut done = Vec::new();
        for &c in cmds {
            d.submit(c, now);
            now = d.next_event_ns().unwrap();
            d.advance(now, &mut done);
        }
        assert_eq!(done.len(), cmds.len());
        now
    }

    #[test]
    fn seek_curve_meets_its_datasheet_points() {
        let d = disk(DiskParams::sata_7200_2009());
        assert!((d.seek_ns(1, false) / 1e6 - 0.8).abs() < 1e-9);
        let third = d.seek_ns(d.cylinders / 3, false) / 1e6;
        assert!((third - 8.5).abs() < 0.05, "average seek {third}");
        assert!((d.seek_ns(d.cylinders - 1, false) / 1e6 - 17.0).abs() < 0.05);
        assert!(d.seek_ns(10, true) > d.seek_ns(10, false));
    }

    #[test]
    fn random_4k_reads_at_qd1_give_70_to_100_iops() {
        let mut d = disk(DiskParams::sata_7200_2009());
        let mut rng = RandomStream::new(9, 0);
        let sectors = d.capacity_bytes() / 512 - 8;
        let cmds: Vec<Command> =
            (0..2000).map(|i| read(i, rng.below(sectors / 8) * 8, 8)).collect();
        let iops = cmds.len() as f64 / (closed_loop(&mut d, &cmds) as f64 / 1e9);
        assert!((70.0..=100.0).contains(&iops), "QD1 random read IOPS {iops}");
    }

    #[test]
    fn sequential_large_reads_reach_the_outer_media_rate() {
        let mut d = disk(DiskParams::sata_7200_2009());
        let cmds: Vec<Command> = (0..200).map(|i| read(i, i * 2048, 2048)).collect();
        let mb_s = 200.0 * 1_048_576.0 / (closed_loop(&mut d, &cmds) as f64 / 1e9) / 1e6;
        assert!((110.0..=130.0).contains(&mb_s), "sequential 1 MiB reads at {mb_s} MB/s");
    }

    #[test]
    fn read_ahead_serves_back_to_back_small_reads() {
        let mut d = disk(DiskParams::sata_7200_2009());
        let cmds: Vec<Command> = (0..2000).map(|i| read(i, i * 8, 8)).collect();
        let mb_s = 2000.0 * 4096.0 / (closed_loop(&mut d, &cmds) as f64 / 1e9) / 1e6;
        assert!(mb_s > 40.0, "sequential 4 KiB QD1 reads at {mb_s} MB/s");
    }

    #[test]
    fn ncq_reorders_for_more_iops_and_keeps_an_age_limit() {
        let mut rng = RandomStream::new(3, 0);
        let mut run = |p: DiskParams| {
            let mut d = disk(p);
            let sectors = d.capacity_bytes() / 512 - 8;
            let (mut now, mut next, mut done) = (0, 0u64, Vec::new());
            let mut worst: Nanos = 0;
            let mut issued_at = std::collections::BTreeMap::new();
            while next < 31 {
                issued_at.insert(next, 0);
                d.submit(read(next, rng.below(sectors / 8) * 8, 8), 0);
                next += 1;
            }
            while done.len() < 3000 {
                now = d.next_event_ns().unwrap();
                let before = done.len();
                d.advance(now, &mut done);
                for c in &done[before..] {
                    worst = worst.max(c.done_ns - issued_at[&c.id.0]);
                    issued_at.insert(next, now);
                    d.submit(read(next, rng.below(sectors / 8) * 8, 8), now);
                    next += 1;
                }
            }
            (done.len() as f64 / (now as f64 / 1e9), worst)
        };
        let (qd31, worst) = run(DiskParams::sata_7200_2009());
        let (qd1, _) = run(DiskParams { queue_depth: 1, ..DiskParams::sata_7200_2009() });
        assert!(qd31 > 1.5 * qd1, "NCQ {qd31} IOPS vs FIFO {qd1}");
        assert!(worst < 600_000_000, "a command waited {worst} ns despite the 500 ms age limit");
    }

    #[test]
    fn bad_parameters_are_refused() {
        let bad = DiskParams { average_seek_ms: 30.0, ..DiskParams::sata_7200_2009() };
        assert!(MechanicalDisk::new(bad, &mut RandomStream::new(1, 0)).is_err());
        let bad = DiskParams { rpm: 0, ..DiskParams::sata_7200_2009() };
        assert!(MechanicalDisk::new(bad, &mut RandomStream::new(1, 0))
            .unwrap_err()
            .contains("rpm"));
    }
}
