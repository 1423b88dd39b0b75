//! DiskSim's disk controller (`src/disksim_diskctlr.c`, `disksim_diskcache.c`), the opt-in
//! alternative to the simple controller of [`super::Hdd`]: what [`DiskSimController`]
//! selects, and what a DiskSim drive's `disksim_disk` block describes.
//!
//! - **Command overheads** depend on the command (read/write), on whether the cache can
//!   serve it (hit/miss; with write-back every write is a "hit") and on the previous
//!   command's kind, as DiskSim's eight "… over. after …" parameters. Mechanical work starts
//!   once the overhead is over, or when the mechanism frees up if that is later.
//! - **Bus**: data moves one sector at a time, each no earlier than it is in the buffer
//!   (reads: off the media; DiskSim's read water mark of one sector) and one sector time of
//!   the bus after the previous one. A read completes with its last sector's transfer plus
//!   the read completion overhead; a miss first disconnects and reselects.
//! - **Cache**: `cache_segments` segments of `segment_size_bytes`. A read whose first
//!   block is in a segment is a hit (whole or partial: the rest streams in behind the
//!   prefetch or is read from the media, no earlier than the read-miss overhead after
//!   arrival: DiskSim holds back any mechanical work a read hit starts that long). A segment is a window that slides forward as
//!   read-ahead fills it. Written data stays readable if `read_hits_on_write_data`.
//!   Segments are chosen as DiskSim's `disk_buffer_select_{read,write}_segment` do, by
//!   state (empty, clean, dirty, being read ahead) and then least recently used: a miss
//!   takes an empty segment, else the least recently used clean one, and the one being read
//!   ahead only last; a write takes a clean segment it overlaps first and empties the other
//!   clean ones it overlaps (the segment being read ahead keeps its stale data, as in
//!   DiskSim); every command moves its segment to most recently used. Read-ahead that has
//!   reached its limit leaves its segment clean.
//! - **Read-ahead** after every media read, as far as [`ReadAhead`] says, in the background:
//!   the next command that needs the mechanism stops it at once, dropping the sector under
//!   the head (DiskSim takes the pending sector event off its queue), and the heads are
//!   where it stopped.
//! - **Write-back** (`write_cache`, DiskSim's fast-write levels 1 and 2): a write completes
//!   once its data is in the buffer; it is written to the media at once in the background
//!   (each track's run starts only when its data is in the buffer).
//! - **Busy mechanism**: a write going to the media cannot be interrupted, so a command
//!   arriving meanwhile disconnects after its overhead (a read pays the miss overhead even if
//!   its data is cached) and moves its data once the mechanism is free.
//!
//! Where this deviates from DiskSim: commands are served one at a time (DiskSim overlaps a
//! command's bus transfer with the next one's seek; with its validation drives' queue of one
//! this never arises); a partial hit always starts transferring at once ("Immed transfer
//! partial hit" = 1 in every validated drive); read-ahead on a stopped prefetch is not
//! resumed; a stopped prefetch in the middle of a track switch leaves the heads on the
//! track it was leaving. Whole-revolution waits for write data assume the bus is slower than
//! the media, as in every validated drive.

use elevator_core::{Nanos, Op};
use serde::{Deserialize, Serialize};

use super::{Hdd, HeadState, Queued};

/// How far the drive reads ahead after a media read (DiskSim "Buffer continuous read").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadAhead {
    /// 0: no read-ahead.
    None,
    /// 1: `max_read_ahead_sectors` (or a segment) past the request, not past its track.
    TrackEnd,
    /// 2: the same, not past its cylinder.
    CylinderEnd,
    /// 3: `max_read_ahead_sectors` (or a segment) past the request.
    #[default]
    Sectors,
    /// 4: to the end of the track holding the block after the request, and one track more
    /// if the segment began on an earlier track (DiskSim's "DEC prefetch scheme").
    NextTrack,
}

/// Parameters of DiskSim's controller (all times in ms, as in DiskSim's files).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DiskSimController {
    pub read_hit_after_read_ms: f64,
    pub read_hit_after_write_ms: f64,
    pub read_miss_after_read_ms: f64,
    pub read_miss_after_write_ms: f64,
    pub write_hit_after_read_ms: f64,
    pub write_hit_after_write_ms: f64,
    pub write_miss_after_read_ms: f64,
    pub write_miss_after_write_ms: f64,
    pub read_completion_ms: f64,
    pub write_completion_ms: f64,
    /// Disconnect after a read miss's command overhead, by the previous command's kind.
    pub read_disconnect_after_read_ms: f64,
    pub read_disconnect_after_write_ms: f64,
    /// Reselection before the first data transfer of a disconnected command.
    pub first_reselect_ms: f64,
    pub read_ahead: ReadAhead,
    /// Blocks read ahead past a request (0: a segment's worth).
    pub max_read_ahead_sectors: u64,
    /// Read-ahead counts past the request (DiskSim "Read-ahead over requested" ≠ 0), else
    /// it fills the request's segment.
    pub read_ahead_over_requested: bool,
    /// A hit on an idle segment starts read-ahead again past it.
    pub read_ahead_on_idle_hit: bool,
    pub read_hits_on_write_data: bool,
    /// A sequential write continues the segment of the write it follows.
    pub combine_sequential_writes: bool,
}

impl Default for DiskSimController {
    fn default() -> Self {
        DiskSimController {
            read_hit_after_read_ms: 0.0,
            read_hit_after_write_ms: 0.0,
            read_miss_after_read_ms: 0.0,
            read_miss_after_write_ms: 0.0,
            write_hit_after_read_ms: 0.0,
            write_hit_after_write_ms: 0.0,
            write_miss_after_read_ms: 0.0,
            write_miss_after_write_ms: 0.0,
            read_completion_ms: 0.0,
            write_completion_ms: 0.0,
            read_disconnect_after_read_ms: 0.0,
            read_disconnect_after_write_ms: 0.0,
            first_reselect_ms: 0.0,
            read_ahead: ReadAhead::Sectors,
            max_read_ahead_sectors: 0,
            read_ahead_over_requested: true,
            read_ahead_on_idle_hit: false,
            read_hits_on_write_data: true,
            combine_sequential_writes: true,
        }
    }
}

impl DiskSimController {
    /// A read miss's controller overhead and disconnect time (ms), by whether the previous
    /// command was a read.
    fn read_miss_ms(&self, after_read: bool) -> (f64, f64) {
        if after_read {
            (self.read_miss_after_read_ms, self.read_disconnect_after_read_ms)
        } else {
            (self.read_miss_after_write_ms, self.read_disconnect_after_write_ms)
        }
    }

    /// A read hit's controller overhead (ms), by whether the previous command was a read.
    fn read_hit_ms(&self, after_read: bool) -> f64 {
        if after_read {
            self.read_hit_after_read_ms
        } else {
            self.read_hit_after_write_ms
        }
    }

    pub(super) fn validate(&self) -> Result<(), String> {
        for (n, v) in [
            ("read_hit_after_read_ms", self.read_hit_after_read_ms),
            ("read_hit_after_write_ms", self.read_hit_after_write_ms),
            ("read_miss_after_read_ms", self.read_miss_after_read_ms),
            ("read_miss_after_write_ms", self.read_miss_after_write_ms),
            ("write_hit_after_read_ms", self.write_hit_after_read_ms),
            ("write_hit_after_write_ms", self.write_hit_after_write_ms),
            ("write_miss_after_read_ms", self.write_miss_after_read_ms),
            ("write_miss_after_write_ms", self.write_miss_after_write_ms),
            ("read_completion_ms", self.read_completion_ms),
            ("write_completion_ms", self.write_completion_ms),
            ("read_disconnect_after_read_ms", self.read_disconnect_after_read_ms),
            ("read_disconnect_after_write_ms", self.read_disconnect_after_write_ms),
            ("first_reselect_ms", self.first_reselect_ms),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(format!("controller.{n} must be ≥ 0"));
            }
        }
        Ok(())
    }
}

/// A cache segment: blocks `[start, end)` (the window slides to the last
/// `segment_sectors`), `write` if it holds written data, dirty (not yet all on the media)
/// until `dirty_until_ns`; `stamp` orders the segments from least to most recently used
/// (DiskSim's segment list); an `empty` segment holds nothing (DiskSim `BUFFER_EMPTY`).
#[derive(Clone, Copy, Debug)]
struct Seg {
    start: u64,
    end: u64,
    write: bool,
    empty: bool,
    dirty_until_ns: f64,
    stamp: u64,
}

/// DiskSim's segment states (`disksim_diskcache.c`) as far as choosing a segment sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SegState {
    Empty,
    Clean,
    /// Written data not yet on the media (`BUFFER_DIRTY` / `BUFFER_WRITING`).
    Dirty,
    /// Being read ahead into (`BUFFER_READING`).
    Reading,
}

/// What choosing a segment for a command found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Choice {
    /// The command's first block is in segment `i`, whose valid data ends at `avail`.
    Hit { i: usize, avail: u64 },
    /// A write continuing the dirty segment `i` (DiskSim `BUFFER_APPEND`).
    Append(usize),
    /// No data: segment `i` (`None`: a slot never used yet) is to be taken.
    Take(Option<usize>),
}

/// Read-ahead in progress into segment `seg`: the heads, at `at` and free at `t_ns`, go on
/// reading from `next` up to `limit`.
#[derive(Clone, Copy, Debug)]
struct Stream {
    seg: usize,
    next: u64,
    t_ns: f64,
    at: HeadState,
    limit: u64,
    /// When the read-ahead reaches `limit` (the segment is then clean).
    end_ns: f64,
}

/// One track's run of a media walk: blocks `[first, first + len)`, the first starting
/// under the head at `start_ns`, one every `sector_ns`.
#[derive(Clone, Copy, Debug)]
struct Run {
    first: u64,
    len: u64,
    start_ns: f64,
    sector_ns: f64,
}

/// The controller's state.
#[derive(Clone, Debug)]
pub(super) struct DsState {
    pub(super) c: DiskSimController,
    segs: Vec<Seg>,
    segment_sectors: u64,
    segments: usize,
    stream: Option<Stream>,
    /// The mechanism is busy (foreground or write-back) until then.
    hda_free_ns: f64,
    last_read: bool,
    stamp: u64,
    bus_sector_ns: f64,
    runs: Vec<Run>,
}

impl DsState {
    pub(super) fn new(
        c: DiskSimController,
        segments: u32,
        segment_sectors: u64,
        bus_sector_ns: f64,
    ) -> DsState {
        DsState {
            c,
            segs: Vec::with_capacity(segments as usize),
            segment_sectors: segment_sectors.max(1),
            segments: segments as usize,
            stream: None,
            hda_free_ns: 0.0,
            last_read: true,
            stamp: 0,
            bus_sector_ns,
            runs: Vec::new(),
        }
    }
}

/// Bus completion after `b_ns` for a run whose blocks are ready one every `sector_ns` from
/// `start_ns + sector_ns`, `bus_ns` per block: each block goes after it is ready and after
/// the previous one (the latest of the two chains' ends, since readiness is linear).
#[inline]
fn bus_after(b_ns: f64, len: u64, start_ns: f64, sector_ns: f64, bus_ns: f64) -> f64 {
    let l = len as f64;
    (b_ns + l * bus_ns)
        .max(start_ns + sector_ns + l * bus_ns)
        .max(start_ns + l * sector_ns + bus_ns)
}

impl Hdd {
    fn ds(&self) -> &DsState {
        self.ds.as_deref().expect("DiskSim controller")
    }

    fn ds_mut(&mut self) -> &mut DsState {
        self.ds.as_deref_mut().expect("DiskSim controller")
    }

    /// The media walk of blocks `[lbn, lbn + n)` with the heads at `from`, free at `t_ns`:
    /// per track, position (seek or head switch, plus write settle for a write), wait for the
    /// run's first block, and read or write it; a run may not start before `earliest` says.
    /// Appends the runs to `runs`; returns when the last block is done and where the heads are.
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        from: HeadState,
        t_ns: f64,
        write: bool,
        lbn: u64,
        n: u64,
        runs: &mut Vec<Run>,
        earliest: impl Fn(u64, u64, f64) -> f64,
    ) -> (f64, HeadState) {
        let (mut t, mut cur, mut lbn, mut left) = (t_ns, from, lbn, n);
        while left > 0 {
            let c = self.geom.map(lbn);
            let dist = c.cylinder.abs_diff(cur.cylinder);
            let switch = if c.head != cur.head { self.head_switch_ns } else { 0.0 };
            let mut mv = if dist > 0 { self.seek.seek_ns(dist).max(switch) } else { switch };
            if write && mv > 0.0 {
                mv += self.settle_ns;
            }
            t += mv;
            t += self.rot_wait_ns(t, self.geom.angle_turns(&c));
            let (len, span) = self.geom.run(lbn, &c, left);
            let st = self.sector_ns[c.zone];
            let sector_ns = span as f64 * st / len as f64;
            let e = earliest(lbn, len, sector_ns);
            if e > t {
                t += ((e - t) / self.period_ns).ceil() * self.period_ns;
            }
            runs.push(Run { first: lbn, len, start_ns: t, sector_ns });
            t += span as f64 * st;
            cur = HeadState { cylinder: c.cylinder, head: c.head };
            lbn += len;
            left -= len;
        }
        (t, cur)
    }

    /// Where read-ahead `s` stands at `t_ns`: the end of the data read (whole sectors),
    /// when the heads are free, and where they are.
    fn stream_at(&self, s: &Stream, t_ns: f64, runs: &mut Vec<Run>) -> (u64, f64, HeadState) {
        runs.clear();
        if s.limit <= s.next || t_ns <= s.t_ns {
            return (s.next, s.t_ns.max(t_ns), s.at);
        }
        let (end_t, end_at) =
            self.walk(s.at, s.t_ns, false, s.next, s.limit - s.next, runs, |_, _, _| 0.0);
        if end_t <= t_ns {
            return (s.limit, end_t, end_at);
        }
        let mut at = s.at;
        for r in runs.iter() {
            if t_ns < r.start_ns {
                return (r.first, t_ns, at);
            }
            let c = self.geom.map(r.first);
            at = HeadState { cylinder: c.cylinder, head: c.head };
            let end = r.start_ns + r.len as f64 * r.sector_ns;
            if t_ns < end {
                // DiskSim drops the sector under the head (its event is taken off the queue).
                let k = (((t_ns - r.start_ns) / r.sector_ns) as u64).min(r.len);
                return (r.first + k, t_ns, at);
            }
        }
        (s.limit, end_t, end_at)
    }

    /// Stops read-ahead at `t_ns` (a command needs the mechanism).
    fn ds_stop_stream(&mut self, t_ns: f64) {
        let Some(s) = self.ds().stream else { return };
        let mut runs = std::mem::take(&mut self.ds_mut().runs);
        let (end, free, at) = self.stream_at(&s, t_ns, &mut runs);
        let st = self.ds_mut();
        st.runs = runs;
        st.stream = None;
        st.segs[s.seg].end = end;
        st.hda_free_ns = st.hda_free_ns.max(free);
        self.head = at;
    }

    /// The end of valid data in segment `i` at `t_ns`.
    fn seg_end_at(&self, i: usize, t_ns: f64, runs: &mut Vec<Run>) -> u64 {
        match self.ds().stream {
            Some(s) if s.seg == i => self.stream_at(&s, t_ns, runs).0,
            _ => self.ds().segs[i].end,
        }
    }

    /// One past the last block of the track (`cylinder`: of the cylinder) holding `lbn`.
    fn track_end(&self, lbn: u64, cylinder: bool) -> u64 {
        let total = self.geom.total_sectors;
        let c0 = self.geom.map(lbn);
        let mut l = lbn;
        loop {
            let c = self.geom.map(l);
            if c.cylinder != c0.cylinder || (!cylinder && c.head != c0.head) {
                return l;
            }
            l += self.geom.run(l, &c, total - l).0;
            if l >= total {
                return total;
            }
        }
    }

    /// The first block of the track holding `lbn` (DiskSim `dm_get_track_boundaries`). The
    /// physical sector of `lbn` is no measure of it: slipped and spare sectors are not blocks.
    fn track_start(&self, lbn: u64) -> u64 {
        let c0 = self.geom.map(lbn);
        let mut l = lbn;
        while l > 0 {
            let c = self.geom.map(l - 1);
            if c.cylinder != c0.cylinder || c.head != c0.head {
                break;
            }
            l -= 1;
        }
        l
    }

    /// Where read-ahead after a read of `[lbn, lbn + n)` into a segment starting at
    /// `seg_start` stops (DiskSim `disk_buffer_get_max_readahead` and the track/cylinder
    /// limits of `disk_initiate_seek`).
    fn read_ahead_limit(&self, lbn: u64, n: u64, seg_start: u64) -> u64 {
        let st = self.ds();
        let end = lbn + n;
        let total = self.geom.total_sectors;
        if end >= total {
            return total;
        }
        let size = st.segment_sectors;
        let plain = || {
            if st.c.max_read_ahead_sectors > 0 {
                end + st.c.max_read_ahead_sectors
            } else if st.c.read_ahead_over_requested {
                end + size
            } else {
                (lbn + size).max(end)
            }
        };
        let limit = match st.c.read_ahead {
            ReadAhead::None => end,
            ReadAhead::Sectors => plain(),
            ReadAhead::TrackEnd => plain().min(self.track_end(end - 1, false)),
            ReadAhead::CylinderEnd => plain().min(self.track_end(end - 1, true)),
            ReadAhead::NextTrack => {
                let track_end = self.track_end(end, false);
                let track_start = self.track_start(end);
                if seg_start < track_start {
                    let spt = self.geom.zones[self.geom.map(lbn).zone].sectors_per_track;
                    track_end + spt
                } else {
                    track_end
                }
            }
        };
        limit.min(total)
    }

    /// Starts read-ahead into segment `seg` from `next`, heads at `at` free at `t_ns`.
    fn ds_start_stream(&mut self, seg: usize, next: u64, t_ns: f64, at: HeadState, limit: u64) {
        let stream = (limit > next).then(|| {
            let mut s = Stream { seg, next, t_ns, at, limit, end_ns: t_ns };
            s.end_ns = self.stream_end_ns(&s);
            s
        });
        self.ds_mut().stream = stream;
    }

    /// When read-ahead `s` reaches its limit.
    fn stream_end_ns(&self, s: &Stream) -> f64 {
        let mut runs = Vec::new();
        self.walk(s.at, s.t_ns, false, s.next, s.limit - s.next, &mut runs, |_, _, _| 0.0).0
    }

    /// Segment `i` as choosing a segment at `t_ns` sees it.
    fn seg_state(&self, i: usize, t_ns: f64) -> SegState {
        let st = self.ds();
        let s = &st.segs[i];
        if s.empty {
            SegState::Empty
        } else if st.stream.is_some_and(|x| x.seg == i && t_ns < x.end_ns) {
            SegState::Reading
        } else if s.write && t_ns < s.dirty_until_ns {
            SegState::Dirty
        } else {
            SegState::Clean
        }
    }

    /// DiskSim's `disk_buffer_select_read_segment` for a read of `[lbn, lbn + n)` arriving
    /// at `t_ns`. Each segment gets a value and the highest wins, ties to the least recently
    /// used: the first block in a dirty segment 10, in the one being read ahead 9, in a clean
    /// one 8 (4 less each if the segment does not hold the whole request yet); else an empty
    /// segment 3, the least recently used clean one 2, and only then the one being read
    /// ahead 1; a dirty segment the read does not hit is not usable.
    fn ds_select_read(&self, t_ns: f64, lbn: u64, n: u64, runs: &mut Vec<Run>) -> Choice {
        let st = self.ds();
        let size = st.segment_sectors;
        let hits_on_writes = st.c.read_hits_on_write_data;
        // A slot never used is an empty segment at the head of DiskSim's list.
        let mut best = if st.segs.len() < st.segments {
            (3, 0, Choice::Take(None))
        } else {
            (0, u64::MAX, Choice::Take(None))
        };
        for i in 0..st.segs.len() {
            let s = st.segs[i];
            let state = self.seg_state(i, t_ns);
            let (value, choice) = if state == SegState::Empty {
                (3, Choice::Take(Some(i)))
            } else {
                let end = self.seg_end_at(i, t_ns, runs);
                if lbn < s.start.max(end.saturating_sub(size)) || lbn >= end {
                    let v = match state {
                        SegState::Clean => 2,
                        SegState::Reading => 1,
                        _ => continue,
                    };
                    (v, Choice::Take(Some(i)))
                } else {
                    let v = match state {
                        SegState::Dirty if hits_on_writes => 10,
                        SegState::Reading => 9,
                        SegState::Clean if hits_on_writes || !s.write => 8,
                        _ => continue,
                    };
                    (if end >= lbn + n { v } else { v - 4 }, Choice::Hit { i, avail: end })
                }
            };
            if value > best.0 || (value == best.0 && s.stamp < best.1) {
                best = (value, s.stamp, choice);
            }
        }
        best.2
    }

    /// DiskSim's `disk_buffer_select_write_segment` for a write of `[lbn, lbn + n)` arriving
    /// at `t_ns`: a dirty segment it continues 7 (with combined sequential writes), a clean
    /// (or dirty, once written: DiskSim waits for it) segment it overlaps 4, an empty one 3,
    /// the least recently used clean one 2, the one being read ahead 1.
    fn ds_select_write(&self, t_ns: f64, lbn: u64, n: u64) -> Choice {
        let st = self.ds();
        let size = st.segment_sectors;
        let end = lbn + n;
        let mut best = if st.segs.len() < st.segments {
            (3, 0, Choice::Take(None))
        } else {
            (0, u64::MAX, Choice::Take(None))
        };
        for (i, s) in st.segs.iter().enumerate() {
            let overlaps = s.start < end && lbn < s.end;
            let (value, choice) = match self.seg_state(i, t_ns) {
                SegState::Empty => (3, Choice::Take(Some(i))),
                SegState::Reading => (1, Choice::Take(Some(i))),
                SegState::Dirty
                    if st.c.combine_sequential_writes && s.end == lbn && lbn - s.start < size =>
                {
                    (7, Choice::Append(i))
                }
                SegState::Dirty | SegState::Clean if overlaps => (4, Choice::Take(Some(i))),
                SegState::Clean => (2, Choice::Take(Some(i))),
                SegState::Dirty => continue,
            };
            if value > best.0 || (value == best.0 && s.stamp < best.1) {
                best = (value, s.stamp, choice);
            }
        }
        best.2
    }

    /// Takes segment `slot` (`None`: an unused slot, else the least recently used segment)
    /// for new data from `start`, as the most recently used.
    fn ds_take(&mut self, slot: Option<usize>, start: u64, write: bool) -> usize {
        let st = self.ds_mut();
        st.stamp += 1;
        let seg =
            Seg { start, end: start, write, empty: false, dirty_until_ns: 0.0, stamp: st.stamp };
        let i = match slot {
            Some(i) => i,
            None if st.segs.len() < st.segments => {
                st.segs.push(seg);
                return st.segs.len() - 1;
            }
            None => (0..st.segs.len()).min_by_key(|&i| st.segs[i].stamp).expect("segments"),
        };
        st.segs[i] = seg;
        i
    }

    fn ds_touch(&mut self, i: usize) {
        let st = self.ds_mut();
        st.stamp += 1;
        st.segs[i].stamp = st.stamp;
    }

    /// Serves one command from `now` under DiskSim's controller; returns its completion.
    pub(super) fn serve_disksim(&mut self, q: &Queued, now: Nanos) -> Nanos {
        let t = now as f64;
        let (lbn, n) = (q.lbn, q.sectors);
        // Read-ahead that has reached its limit is over: its segment is clean.
        if self.ds().stream.is_some_and(|s| s.end_ns <= t) {
            self.ds_stop_stream(t);
        }
        let done = match q.cmd.op {
            Op::Read if n > 0 && self.ds().segments > 0 => self.ds_read(t, lbn, n),
            Op::Read => self.ds_read_uncached(t, lbn, n),
            Op::Write if n > 0 => self.ds_write(t, lbn, n, q.cmd.fua),
            Op::Write | Op::Discard => {
                let c = &self.ds().c;
                t + if self.ds().last_read {
                    c.write_hit_after_read_ms
                } else {
                    c.write_hit_after_write_ms
                } * 1e6
            }
            Op::Flush => {
                let st = self.ds();
                t.max(st.hda_free_ns) + st.c.write_completion_ms * 1e6
            }
        };
        self.ds_mut().last_read = q.cmd.op == Op::Read;
        done.ceil() as Nanos
    }

    /// A read with the cache off: overhead, media, bus.
    fn ds_read_uncached(&mut self, t: f64, lbn: u64, n: u64) -> f64 {
        let (start, bus_from) = self.ds_miss_times(t);
        self.ds_media_read(start, bus_from, lbn, n, lbn).0
    }

    /// When a read miss arriving at `t` may start on the media (after its overhead, once the
    /// mechanism is free) and when its data may go on the bus (overhead, disconnect and
    /// reselection later).
    fn ds_miss_times(&self, t: f64) -> (f64, f64) {
        let st = self.ds();
        let (ovh, disc) = st.c.read_miss_ms(st.last_read);
        let bus_from = t + (ovh + disc + st.c.first_reselect_ms) * 1e6;
        let start = (t + ovh * 1e6).max(st.hda_free_ns);
        (start, bus_from)
    }

    /// Reads `[lbn, lbn + n)` from the media from `start` with the heads where they are;
    /// the bus is free from `bus_from`. Returns (done, media end, heads).
    fn ds_media_read(
        &mut self,
        start: f64,
        bus_from: f64,
        lbn: u64,
        n: u64,
        from: u64,
    ) -> (f64, f64, HeadState) {
        let mut runs = std::mem::take(&mut self.ds_mut().runs);
        runs.clear();
        let (end_t, end_at) =
            self.walk(self.head, start, false, from, lbn + n - from, &mut runs, |_, _, _| 0.0);
        let bus = self.ds().bus_sector_ns;
        let mut b = bus_from;
        for r in &runs {
            b = bus_after(b, r.len, r.start_ns, r.sector_ns, bus);
        }
        let st = self.ds_mut();
        st.runs = runs;
        st.hda_free_ns = end_t;
        self.head = end_at;
        let done = b + self.ds().c.read_completion_ms * 1e6;
        (done, end_t, end_at)
    }

    fn ds_read(&mut self, t: f64, lbn: u64, n: u64) -> f64 {
        let mut runs = std::mem::take(&mut self.ds_mut().runs);
        let choice = self.ds_select_read(t, lbn, n, &mut runs);
        self.ds_mut().runs = runs;
        let bus = self.ds().bus_sector_ns;
        let busy = self.ds().hda_free_ns > t;
        let Choice::Hit { i, avail } = choice else {
            // Miss: stop read-ahead, overhead, disconnect, media, reselect, bus.
            let Choice::Take(slot) = choice else { unreachable!("reads do not append") };
            self.ds_stop_stream(t);
            let (start, bus_from) = self.ds_miss_times(t);
            let (done, end_t, end_at) = self.ds_media_read(start, bus_from, lbn, n, lbn);
            let seg = self.ds_take(slot, lbn, false);
            self.ds_mut().segs[seg].end = lbn + n;
            let limit = self.read_ahead_limit(lbn, n, lbn);
            self.ds_start_stream(seg, lbn + n, end_t, end_at, limit);
            return done;
        };
        // Hit, whole or partial: the hit overhead, then the bus.
        self.ds_touch(i);
        let st = self.ds();
        let bus_from = if busy {
            let (ovh, disc) = st.c.read_miss_ms(st.last_read);
            (t + (ovh + disc) * 1e6).max(st.hda_free_ns) + st.c.first_reselect_ms * 1e6
        } else {
            t + st.c.read_hit_ms(st.last_read) * 1e6
        };
        // DiskSim (`disk_read_arrive`) holds back any mechanical work a read starts, a hit
        // included (the rest of a partial hit, read-ahead), until its read-miss overhead is
        // over, while a hit's transfer starts after the shorter hit overhead.
        let mech_from = t + st.c.read_miss_ms(st.last_read).0 * 1e6;
        let end = lbn + n;
        let seg_start = st.segs[i].start;
        let streaming = st.stream.filter(|s| s.seg == i);
        let done = if end <= avail {
            if streaming.is_none() && st.c.read_ahead_on_idle_hit {
                let limit = self.read_ahead_limit(lbn, n, seg_start);
                self.ds_stop_stream(t);
                let from = self.ds().segs[i].end;
                let start = bus_from.max(mech_from).max(self.ds().hda_free_ns);
                let head = self.head;
                self.ds_start_stream(i, from, start, head, limit);
            } else if streaming.is_none() {
                // A hit elsewhere takes the mechanism from read-ahead (DiskSim
                // `disk_activate_read` stops an access on another segment).
                self.ds_stop_stream(t);
            }
            bus_from + n as f64 * bus
        } else if let Some(s) = streaming {
            // The rest comes in behind the read-ahead, which goes on past the request.
            let mut runs = std::mem::take(&mut self.ds_mut().runs);
            runs.clear();
            self.walk(s.at, s.t_ns, false, s.next, end - s.next, &mut runs, |_, _, _| 0.0);
            let mut b = bus_from + (avail - lbn) as f64 * bus;
            for r in &runs {
                let lo = r.first.max(avail);
                let hi = (r.first + r.len).min(end);
                if lo < hi {
                    let start = r.start_ns + (lo - r.first) as f64 * r.sector_ns;
                    b = bus_after(b, hi - lo, start, r.sector_ns, bus);
                }
            }
            self.ds_mut().runs = runs;
            b + self.ds().c.read_completion_ms * 1e6
        } else {
            // The rest from the media, then read-ahead past it; read-ahead into another
            // segment stops as the command arrives.
            self.ds_stop_stream(t);
            let start = bus_from.max(mech_from).max(self.ds().hda_free_ns);
            let b0 = bus_from + (avail - lbn) as f64 * bus;
            let (done, end_t, end_at) = self.ds_media_read(start, b0, lbn, n, avail);
            self.ds_mut().segs[i].end = end;
            let limit = self.read_ahead_limit(lbn, n, seg_start);
            self.ds_start_stream(i, end, end_t, end_at, limit);
            return done;
        };
        if let Some(s) = streaming {
            let limit = self.read_ahead_limit(lbn, n, seg_start).max(end);
            if let Some(mut cur) = self.ds().stream {
                cur.limit = cur.limit.max(limit).max(s.limit);
                cur.end_ns = self.stream_end_ns(&cur);
                self.ds_mut().stream = Some(cur);
            }
        }
        done
    }

    fn ds_write(&mut self, t: f64, lbn: u64, n: u64, fua: bool) -> f64 {
        // The segment is chosen as the command arrives, before it stops any read-ahead.
        let choice = self.ds_select_write(t, lbn, n);
        let end = lbn + n;
        // Overlapping data elsewhere is dropped (DiskSim `disk_buffer_set_segment` empties
        // clean overlapping segments; the one being read ahead keeps what it read).
        let target = match choice {
            Choice::Append(i) | Choice::Take(Some(i)) | Choice::Hit { i, .. } => Some(i),
            Choice::Take(None) => None,
        };
        for i in 0..self.ds().segs.len() {
            let state = self.seg_state(i, t);
            let s = &mut self.ds_mut().segs[i];
            if Some(i) != target
                && matches!(state, SegState::Clean | SegState::Dirty)
                && s.start < end
                && lbn < s.end
            {
                s.empty = true;
            }
        }
        self.ds_stop_stream(t);
        let write_back = self.p.write_cache && !fua;
        let st = self.ds();
        let ovh = match (write_back, st.last_read) {
            (true, true) => st.c.write_hit_after_read_ms,
            (true, false) => st.c.write_hit_after_write_ms,
            (false, true) => st.c.write_miss_after_read_ms,
            (false, false) => st.c.write_miss_after_write_ms,
        } * 1e6;
        let bus = st.bus_sector_ns;
        // A write arriving while an earlier one is still going to the media disconnects;
        // its data comes over once the mechanism is free (DiskSim: a write access cannot be
        // stopped, so the new command does not get the buffer before).
        let mut data_from = t + ovh;
        if st.hda_free_ns > t {
            data_from = data_from.max(st.hda_free_ns) + st.c.first_reselect_ms * 1e6;
        }
        // The write's own data stays readable.
        let i = match choice {
            Choice::Append(i) => {
                self.ds_touch(i);
                i
            }
            Choice::Take(slot) => self.ds_take(slot, lbn, true),
            Choice::Hit { .. } => unreachable!("writes append or take"),
        };
        let size = self.ds().segment_sectors;
        let st = self.ds_mut();
        st.segs[i].end = end;
        st.segs[i].start = st.segs[i].start.max(end.saturating_sub(size));
        // The media: each run once its data is in the buffer.
        let start = (t + ovh).max(st.hda_free_ns);
        let mut runs = std::mem::take(&mut st.runs);
        runs.clear();
        let ready = |first: u64, len: u64, sector_ns: f64| {
            let k0 = (first - lbn + 1) as f64;
            let k1 = (first - lbn + len) as f64;
            (data_from + k0 * bus).max(data_from + k1 * bus - (len - 1) as f64 * sector_ns)
        };
        let (end_t, end_at) = self.walk(self.head, start, true, lbn, n, &mut runs, ready);
        self.head = end_at;
        let st = self.ds_mut();
        st.runs = runs;
        st.hda_free_ns = end_t;
        st.segs[i].dirty_until_ns = end_t;
        let in_buffer = data_from + n as f64 * bus;
        if write_back {
            in_buffer + st.c.write_completion_ms * 1e6
        } else {
            end_t.max(in_buffer) + st.c.write_completion_ms * 1e6
        }
    }
}
