//! DiskSim's disk controller (DiskSim 4.0 `src/disksim_diskctlr.c`, `disksim_diskcache.c`),
//! the opt-in alternative to the simple controller of [`super::Hdd`]: what
//! [`DiskSimController`] selects, and what a DiskSim drive's `disksim_disk` block describes.
//! Line numbers below are DiskSim 4.0's.
//!
//! - **Command overheads** depend on the command (read/write), on whether the cache can
//!   serve it (reads: hit/miss; writes: "hit" whenever write-back is on) and on the previous
//!   command's kind, as DiskSim's eight "… over. after …" parameters. Mechanical work starts
//!   once the read-miss (or write) overhead is over (`overhead_done`), or when the mechanism
//!   frees up if that is later, plus the rest of a stopped prefetch's sector (below).
//! - **Bus and reconnection** (`disk_read_arrive`, `disk_write_arrive`,
//!   `disk_buffer_transfer_size`, `disk_request_needs_bus`): a command that can be served at
//!   once (a read hit with the mechanism idle or stoppable, a write with a segment, or any
//!   command on a drive that never disconnects) stays on the bus and moves data after its
//!   overhead plus the data-preparation overhead; any other first disconnects (overhead plus
//!   the disconnect overhead) and reselects (reselect plus data-preparation overheads) once
//!   its data is ready: a read once the *read water mark* of its blocks is in the buffer (a
//!   fraction of the request, or of the segment; at least one block), a write once the
//!   mechanism is its. Data moves one sector at a time, each no earlier than it is in the
//!   buffer and one bus sector after the previous one (per direction: the bus's read and
//!   write block times may differ). When a read's transfer catches up with the media the
//!   drive holds the bus and goes on as each sector arrives if it *holds the bus for the whole
//!   read* (or never disconnects), else it disconnects and reselects at the water mark again.
//!   A read completes with its last sector's transfer plus the read completion overhead. A
//!   write-through write disconnects after its data (the write disconnect overhead) and
//!   reselects once its data is on the media; a write-back write completes once its data is
//!   in the buffer. Both add the write completion overhead.
//! - **Extra write disconnect** (hp_c2247a; `disk_buffer_select_segment`,
//!   `disk_write_arrive`): a write that does not continue the previous write in the most
//!   recently used segment disconnects before any data (its own command, disconnect and
//!   inter-disconnect times), reselects, and later uses the second-disconnect and "other"
//!   reselect overheads; and no sector of any write reaches the media before 10 blocks (or the
//!   whole request, if smaller; 15 blocks for requests of 45 or more) are in the buffer
//!   (`disk_buffer_block_available`).
//! - **Cache**: `cache_segments` segments of `segment_size_bytes`. A read whose first
//!   block is in a segment is a hit (whole or partial: the rest streams in behind the
//!   prefetch or is read from the media). A segment is a window that slides forward as
//!   read-ahead fills it. Written data stays readable if `read_hits_on_write_data`.
//!   Segments are chosen as DiskSim's `disk_buffer_select_{read,write}_segment` do, by
//!   state (empty, clean, dirty, being read ahead) and then least recently used: a miss
//!   takes an empty segment, else the least recently used clean one, and the one being read
//!   ahead only last; a write takes a clean segment it overlaps first and empties the other
//!   clean ones it overlaps (the segment being read ahead keeps its stale data, as in
//!   DiskSim); every command moves its segment to most recently used. With a *separate write
//!   segment* the first segment takes every write and no read (a write waits while it holds
//!   data not yet on the media that the write does not continue). Read-ahead that has
//!   reached its limit leaves its segment clean.
//! - **Read-ahead** after every media read, as far as [`ReadAhead`] says, in the background:
//!   the next command that needs the mechanism stops it, dropping the sector under the head
//!   (DiskSim takes the pending sector event off its queue, `disk_buffer_stopable_access`).
//!   The new command's mechanical work is then delayed by the time that event was still due
//!   (DiskSim adds `disk_seek_stoptime` to the command's delay in `disk_check_hda`): a seek
//!   in progress always ends first, and unless the drive *stops prefetch in the sector* so
//!   do the sector under the head or, during rotational latency, the wait for the first one.
//! - **Zero-latency access** (*immediate buffer read/write*, what `dm_latency_g1` and
//!   `disk_buffer_sector_done` set out to do): heads that land inside a track's run of
//!   wanted blocks start at the next sector boundary and pick up the blocks before it when
//!   they come round, so the track takes one revolution from landing; the blocks read first
//!   reach the bus only when the ones before them have been read. *Reading any free blocks*
//!   does the same over the whole track on a read's first track, and the blocks before the
//!   request that pass under the head join the segment. DiskSim 4.0 itself never gets to
//!   do either (see the DiskSim bridge), so a DiskSim drive leaves them off.
//! - **Write-back** (`write_cache`, DiskSim's fast-write levels 1 and 2): a write completes
//!   once its data is in the buffer; it is written to the media at once in the background
//!   (each track's run starts only when its data is in the buffer; a write that does not
//!   continue the previous one positions for at least the *minimum seek delay*).
//! - **Busy mechanism**: a write going to the media cannot be interrupted, so a command
//!   arriving meanwhile disconnects after its overhead (a read pays the miss overhead even if
//!   its data is cached) and moves its data once the mechanism is free.
//!
//! Where this deviates from DiskSim: commands are served one at a time (DiskSim overlaps a
//! command's bus transfer with the next one's seek; with its validation drives' queue of one
//! this never arises); a partial hit always starts transferring at once ("Immed transfer
//! partial hit" = 1 in every validated drive); read-ahead on a stopped prefetch is not
//! resumed; a write that continues one still going to the media waits for it as for any
//! busy mechanism (DiskSim lets it stop that write and move its data at once,
//! `disk_buffer_stopable_access`: doing so agrees with DiskSim on 18 more of barracuda's
//! 10,000 requests but takes the demerit against the measured trace from 0.340 to 0.346,
//! and cheetah9LP's from 0.1058 to 0.1067); a write longer than its segment is not
//! throttled by the segment's space;
//! zero-latency access and reading free blocks apply to the request's own tracks, not to
//! read-ahead (whose heads arrive where they left off); a zone-relative sector run with
//! slipped sectors inside it is read in order. Whole-revolution waits for write data assume
//! the bus is slower than the media, as in every validated drive.

use std::cell::Cell;

use elevator_core::{Nanos, Op};
use serde::{Deserialize, Serialize};

use super::geometry::Chs;
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

/// DiskSim's "Extra write disconnect" and its five overheads (ms), seen in one HP drive: a
/// write that does not continue the previous write disconnects before moving any data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraWriteDisconnect {
    /// Command processing before the first disconnect ("Extradisc command overhead"),
    /// in place of the write overhead.
    pub command_ms: f64,
    /// Further processing before that disconnect ("Extradisc disconnect overhead").
    pub disconnect_ms: f64,
    /// From the disconnect to the reconnection ("Extradisc inter-disconnect delay").
    pub inter_disconnect_ms: f64,
    /// The disconnect after the data, in place of the write disconnect overhead
    /// ("Extradisc 2nd disconnect overhead").
    pub second_disconnect_ms: f64,
    /// Added to the command overhead before mechanical work ("Extradisc seek delta").
    pub seek_delta_ms: f64,
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
    /// Before moving data, once connected ("Data preparation overhead").
    pub data_prep_ms: f64,
    /// Between a command's arrival and everything else ("Per-request overhead time").
    pub per_request_ms: f64,
    /// Disconnect after a read's command overhead (or when its transfer runs dry), by the
    /// previous command's kind.
    pub read_disconnect_after_read_ms: f64,
    pub read_disconnect_after_write_ms: f64,
    /// Disconnect of a write (after a write-back write's command overhead when it must wait,
    /// after a write-through write's data).
    pub write_disconnect_ms: f64,
    /// Reselection before a disconnected command moves data or completes. DiskSim uses the
    /// "other" overhead only for writes that suffered an extra disconnect
    /// (`disk_check_bus`, `disksim_diskctlr.c:1363`).
    pub first_reselect_ms: f64,
    pub other_reselect_ms: f64,
    /// Per-sector bus time for reads and writes when it differs from the drive's
    /// `bus_bytes_per_sec` (DiskSim's bus read and write block transfer times).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bus_read_sector_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bus_write_sector_ms: Option<f64>,
    /// Keep the bus from arrival to completion ("Never disconnect").
    pub never_disconnect: bool,
    /// Keep the bus while a read's transfer waits for the media ("Hold bus entire read
    /// xfer"). Writes never outrun their segment here, so "Hold bus entire write xfer"
    /// changes nothing this model does.
    pub hold_bus_read: bool,
    /// Fraction of the request (or, without `water_mark_by_request`, of a segment) in the
    /// buffer before a disconnected read reselects ("High (read) water mark"); at least one
    /// block.
    pub read_water_mark: f64,
    pub water_mark_by_request: bool,
    /// A partial read hit moves its cached blocks at once ("Immed transfer partial hit");
    /// else only if they reach the read water mark, and it disconnects otherwise.
    pub immediate_partial_hit: bool,
    /// The first segment takes every write and no read ("Use separate write segment").
    pub separate_write_segment: bool,
    /// On a read's tracks, read from wherever the heads land, keeping blocks before the
    /// request ("Read any free blocks").
    pub read_any_free_blocks: bool,
    /// Zero-latency reads and writes ("Immediate buffer read/write").
    pub immediate_read: bool,
    pub immediate_write: bool,
    /// A prefetch may be stopped in the middle of a sector ("Stop prefetch in sector").
    pub stop_prefetch_in_sector: bool,
    /// A write that does not continue the previous one positions for at least this long
    /// ("Minimum seek delay").
    pub minimum_seek_delay_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_write_disconnect: Option<ExtraWriteDisconnect>,
    pub read_ahead: ReadAhead,
    /// Blocks read ahead past a request (0: a segment's worth).
    pub max_read_ahead_sectors: u64,
    /// Read-ahead counts past the request (DiskSim "Read-ahead over requested" ≠ 0), else
    /// it fills the request's segment.
    pub read_ahead_over_requested: bool,
    /// A read's own data leaves its segment as the read completes: the segment then starts
    /// where the read ended (DiskSim "Read-ahead over requested" = -1, `keeprequestdata`
    /// -1 in `disk_request_complete`, which does it when the segment serves no other
    /// request; here a segment serves one command at a time).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drop_request_data: bool,
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
            data_prep_ms: 0.0,
            per_request_ms: 0.0,
            read_disconnect_after_read_ms: 0.0,
            read_disconnect_after_write_ms: 0.0,
            write_disconnect_ms: 0.0,
            first_reselect_ms: 0.0,
            other_reselect_ms: 0.0,
            bus_read_sector_ms: None,
            bus_write_sector_ms: None,
            never_disconnect: false,
            hold_bus_read: false,
            read_water_mark: 0.0,
            water_mark_by_request: true,
            immediate_partial_hit: true,
            separate_write_segment: false,
            read_any_free_blocks: false,
            immediate_read: false,
            immediate_write: false,
            stop_prefetch_in_sector: false,
            minimum_seek_delay_ms: 0.0,
            extra_write_disconnect: None,
            read_ahead: ReadAhead::Sectors,
            max_read_ahead_sectors: 0,
            read_ahead_over_requested: true,
            drop_request_data: false,
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

    /// A write's controller overhead (ms): "hit" when write-back is on (DiskSim decides by
    /// the fast-write level alone, `disk_write_arrive`), by the previous command's kind.
    fn write_ms(&self, write_back: bool, after_read: bool) -> f64 {
        match (write_back, after_read) {
            (true, true) => self.write_hit_after_read_ms,
            (true, false) => self.write_hit_after_write_ms,
            (false, true) => self.write_miss_after_read_ms,
            (false, false) => self.write_miss_after_write_ms,
        }
    }

    /// The read water mark in blocks for a read of `n` blocks (DiskSim
    /// `disk_buffer_set_segment`), at least one.
    fn read_water_blocks(&self, n: u64, segment_sectors: u64) -> u64 {
        let w = if self.water_mark_by_request {
            (n.min(segment_sectors) as f64 * self.read_water_mark) as u64
        } else {
            (segment_sectors as f64 * self.read_water_mark + 0.9999999999) as u64
        };
        w.max(1)
    }

    /// Checks every time is finite and ≥ 0 and the water mark a fraction; a separate write
    /// segment needs a second segment for reads (DiskSim refuses it otherwise,
    /// `disk_postpass_perdisk`).
    pub(super) fn validate(&self, segments: u32) -> Result<(), String> {
        let extra = self.extra_write_disconnect.clone().unwrap_or(ExtraWriteDisconnect {
            command_ms: 0.0,
            disconnect_ms: 0.0,
            inter_disconnect_ms: 0.0,
            second_disconnect_ms: 0.0,
            seek_delta_ms: 0.0,
        });
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
            ("data_prep_ms", self.data_prep_ms),
            ("per_request_ms", self.per_request_ms),
            ("read_disconnect_after_read_ms", self.read_disconnect_after_read_ms),
            ("read_disconnect_after_write_ms", self.read_disconnect_after_write_ms),
            ("write_disconnect_ms", self.write_disconnect_ms),
            ("first_reselect_ms", self.first_reselect_ms),
            ("other_reselect_ms", self.other_reselect_ms),
            ("bus_read_sector_ms", self.bus_read_sector_ms.unwrap_or(0.0)),
            ("bus_write_sector_ms", self.bus_write_sector_ms.unwrap_or(0.0)),
            ("minimum_seek_delay_ms", self.minimum_seek_delay_ms),
            ("extra_write_disconnect.command_ms", extra.command_ms),
            ("extra_write_disconnect.disconnect_ms", extra.disconnect_ms),
            ("extra_write_disconnect.inter_disconnect_ms", extra.inter_disconnect_ms),
            ("extra_write_disconnect.second_disconnect_ms", extra.second_disconnect_ms),
            ("extra_write_disconnect.seek_delta_ms", extra.seek_delta_ms),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(format!("controller.{n} must be ≥ 0"));
            }
        }
        if !(0.0..=1.0).contains(&self.read_water_mark) {
            return Err("controller.read_water_mark must be in [0, 1]".into());
        }
        if self.separate_write_segment && segments < 2 {
            return Err("controller.separate_write_segment needs cache_segments ≥ 2".into());
        }
        Ok(())
    }
}

/// A cache segment: blocks `[start, end)` (the window slides to the last
/// `segment_sectors`), `write` if it holds written data, dirty (not yet all on the media)
/// until `dirty_until_ns`; `stamp` orders the segments from least to most recently used
/// (DiskSim's segment list); an `empty` segment holds nothing (DiskSim `BUFFER_EMPTY`);
/// `last_write` if the last command to use it was a write (DiskSim's `seg->access`).
#[derive(Clone, Copy, Debug)]
struct Seg {
    start: u64,
    end: u64,
    write: bool,
    empty: bool,
    dirty_until_ns: f64,
    stamp: u64,
    last_write: bool,
}

impl Seg {
    const EMPTY: Seg = Seg {
        start: 0,
        end: 0,
        write: false,
        empty: true,
        dirty_until_ns: 0.0,
        stamp: 0,
        last_write: false,
    };
}

/// Bits of a segment's rank that order by recency (`ds_select_read`): stamps count commands,
/// so they stay far below 2^56; the value (at most 10) sits above them.
const STAMP_BITS: u32 = 56;
const STAMP_MASK: u64 = (1 << STAMP_BITS) - 1;

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
    /// A write to the separate write segment `i`, which holds other data still going to the
    /// media: it may take the segment once that is written.
    Wait(usize),
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
    /// When the read-ahead reaches `limit` (the segment is then clean), and where the heads
    /// are then.
    end_ns: f64,
    end_at: HeadState,
}

/// Where read-ahead stands at a moment: the end of the data read (whole sectors), where the
/// heads are (on the destination track during a seek), when DiskSim's pending event for it
/// is due (a seek's end, the next sector's start or end), and whether it is in a seek.
#[derive(Clone, Copy, Debug)]
struct StreamPos {
    valid: u64,
    at: HeadState,
    pending_ns: f64,
    seeking: bool,
}

/// One track's run of a media walk: blocks `[first, first + len)`, the first in the buffer
/// one `sector_ns` after `start_ns` and each next one `sector_ns` later (`sector_ns` 0: all
/// at `start_ns`, as the blocks a zero-latency access read early); the heads reached the
/// track, `at`, at `arrive_ns` (blocks already in the buffer: none of these matter).
#[derive(Clone, Copy, Debug)]
struct Run {
    first: u64,
    len: u64,
    start_ns: f64,
    sector_ns: f64,
    arrive_ns: f64,
    at: HeadState,
}

impl Run {
    /// When the `k`-th block of the run is in the buffer.
    #[inline]
    fn ready_ns(&self, k: u64) -> f64 {
        self.start_ns + (k + 1) as f64 * self.sector_ns
    }
}

/// How a media walk goes about each track.
#[derive(Clone, Copy, Debug, Default)]
struct WalkOpts {
    /// Zero-latency access (see the module docs).
    immed: bool,
    /// The first positioning takes at least this long (ns).
    min_first_move_ns: f64,
    /// Where the walk's first block lies, if the caller knows (a walk that goes on where
    /// another stopped: [`run_next`](super::geometry::Geometry::run_next) may have found it).
    first_place: Option<Chs>,
}

/// The controller's state.
#[derive(Clone, Debug)]
pub(super) struct DsState {
    pub(super) c: DiskSimController,
    segs: Vec<Seg>,
    segment_sectors: u64,
    /// Segments (at least one: with the cache off, DiskSim still moves a write's data
    /// through a segment), and whether they cache (`cache_segments` > 0: reads may hit and
    /// written data stays).
    segments: usize,
    caching: bool,
    /// The separate write segment (always the first), if any.
    write_seg: Option<usize>,
    stream: Option<Stream>,
    /// The media walk of `stream` from its `next` to its `limit`, walked once as it starts
    /// (or its limit grows) and looked up wherever the read-ahead is asked where it stands.
    stream_runs: Vec<Run>,
    /// The mechanism is busy (foreground or write-back) until then.
    hda_free_ns: f64,
    /// DiskSim's `disk_seek_stoptime`: when the event of a stopped prefetch was due.
    stop_ns: f64,
    last_read: bool,
    stamp: u64,
    bus_read_ns: f64,
    bus_write_ns: f64,
    runs: Vec<Run>,
    /// A read's blocks by when they are in the buffer (scratch).
    avail: Vec<Run>,
    /// The last track whose bounds the read-ahead limit looked up (see [`TrackBounds`]).
    track_memo: Cell<Option<TrackBounds>>,
}

/// The blocks of one track, `[first, end)`, all on (`cylinder`, `head`): a stream reads on
/// along a track, so the read-ahead limit asks for the same track's bounds read after read,
/// and finding them walks the geometry (a thousand instructions on a drive with slips).
/// The geometry never changes, so the answer stays true.
#[derive(Clone, Copy, Debug)]
struct TrackBounds {
    cylinder: u64,
    head: u64,
    first: u64,
    end: u64,
}

impl DsState {
    pub(super) fn new(
        c: DiskSimController,
        segments: u32,
        segment_sectors: u64,
        bus_sector_ns: f64,
    ) -> DsState {
        let mut segs = Vec::with_capacity(segments as usize);
        let write_seg = (c.separate_write_segment && segments >= 2).then(|| {
            segs.push(Seg::EMPTY);
            0
        });
        DsState {
            bus_read_ns: c.bus_read_sector_ms.map_or(bus_sector_ns, |ms| ms * 1e6),
            bus_write_ns: c.bus_write_sector_ms.map_or(bus_sector_ns, |ms| ms * 1e6),
            c,
            segs,
            segment_sectors: segment_sectors.max(1),
            segments: (segments as usize).max(1),
            caching: segments > 0,
            write_seg,
            stream: None,
            stream_runs: Vec::new(),
            hda_free_ns: 0.0,
            stop_ns: 0.0,
            last_read: true,
            stamp: 0,
            runs: Vec::new(),
            avail: Vec::new(),
            track_memo: Cell::new(None),
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
    /// Appends the runs to `runs`; returns when the last block is done, where the heads are,
    /// and where the block after the last lies if that came out on the way.
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
        opts: WalkOpts,
    ) -> (f64, HeadState, Option<Chs>) {
        let (mut t, mut cur, mut lbn, mut left) = (t_ns, from, lbn, n);
        let mut first = true;
        // The next track's first block, when the run before found it.
        let mut next = opts.first_place;
        while left > 0 {
            let c = next.take().unwrap_or_else(|| self.geom.map(lbn));
            let dist = c.cylinder.abs_diff(cur.cylinder);
            let switch = if c.head != cur.head { self.head_switch_ns } else { 0.0 };
            let mut mv = if dist > 0 { self.seek.seek_ns(dist).max(switch) } else { switch };
            // DiskSim adds the write settle (which may be negative) to any non-zero move
            // (`dm_seek_time_g1`); a move shorter than nothing is no move.
            if write && mv > 0.0 {
                mv = (mv + self.settle_ns).max(0.0);
            }
            if first {
                mv = mv.max(opts.min_first_move_ns);
                first = false;
            }
            t += mv;
            let arrive = t;
            let wait = self.rot_wait_ns(t, self.geom.angle_turns(&c));
            let (len, span, after) = self.geom.run_next(lbn, &c, left);
            next = after;
            let st = self.sector_ns[c.zone];
            let sector_ns = span as f64 * st / len as f64;
            let e = earliest(lbn, len, sector_ns);
            cur = HeadState { cylinder: c.cylinder, head: c.head };
            if opts.immed && wait > 0.0 && span == len {
                // Sectors the heads are past the run's first one; they start at the next
                // sector boundary if that lies inside the run.
                let past = (self.period_ns - wait) / st;
                let k = past.ceil() as u64;
                let landing = arrive + (k as f64 - past) * st;
                // A write's run must all be in the buffer by then (`earliest` is 0 for reads).
                let all_in = if e > 0.0 { e + (len - 1) as f64 * sector_ns } else { e };
                if k >= 1 && k < len && all_in <= landing {
                    let round = t + wait;
                    runs.push(Run {
                        first: lbn,
                        len: k,
                        start_ns: round,
                        sector_ns,
                        arrive_ns: arrive,
                        at: cur,
                    });
                    runs.push(Run {
                        first: lbn + k,
                        len: len - k,
                        start_ns: round + k as f64 * st,
                        sector_ns: 0.0,
                        arrive_ns: arrive,
                        at: cur,
                    });
                    t = round + k as f64 * st;
                    lbn += len;
                    left -= len;
                    continue;
                }
            }
            t += wait;
            if e > t {
                t += ((e - t) / self.period_ns).ceil() * self.period_ns;
            }
            runs.push(Run { first: lbn, len, start_ns: t, sector_ns, arrive_ns: arrive, at: cur });
            t += span as f64 * st;
            lbn += len;
            left -= len;
        }
        (t, cur, next)
    }

    /// Where read-ahead `s` (the current one, whose walk is `stream_runs`) stands at `t_ns`.
    fn stream_at(&self, s: &Stream, t_ns: f64) -> StreamPos {
        if s.limit <= s.next || t_ns <= s.t_ns {
            return StreamPos { valid: s.next, at: s.at, pending_ns: s.t_ns, seeking: false };
        }
        let (end_t, end_at) = (s.end_ns, s.end_at);
        if end_t <= t_ns {
            return StreamPos { valid: s.limit, at: end_at, pending_ns: end_t, seeking: false };
        }
        let runs = &self.ds().stream_runs;
        for r in runs.iter() {
            if t_ns >= r.start_ns + r.len as f64 * r.sector_ns && t_ns >= r.arrive_ns {
                continue;
            }
            let at = r.at;
            if t_ns < r.arrive_ns {
                return StreamPos { valid: r.first, at, pending_ns: r.arrive_ns, seeking: true };
            }
            if t_ns < r.start_ns {
                // The first sector event is due as the run's first sector arrives.
                return StreamPos { valid: r.first, at, pending_ns: r.start_ns, seeking: false };
            }
            let end = r.start_ns + r.len as f64 * r.sector_ns;
            if t_ns < end {
                // DiskSim drops the sector under the head (its event is taken off the queue).
                let k = (((t_ns - r.start_ns) / r.sector_ns) as u64).min(r.len - 1);
                return StreamPos {
                    valid: r.first + k,
                    at,
                    pending_ns: r.ready_ns(k),
                    seeking: false,
                };
            }
        }
        StreamPos { valid: s.limit, at: end_at, pending_ns: end_t, seeking: false }
    }

    /// Stops read-ahead at `t_ns` (a command needs the mechanism): the heads are where it
    /// stopped; the mechanism is busy until a seek in progress ends if the drive stops
    /// prefetch in the sector, else the next command's mechanical work waits for the event
    /// DiskSim took off its queue.
    fn ds_stop_stream(&mut self, t_ns: f64) {
        let Some(s) = self.ds().stream else { return };
        let p = self.stream_at(&s, t_ns);
        let st = self.ds_mut();
        st.stream = None;
        st.segs[s.seg].end = p.valid;
        // A seek in progress always ends first; a sector in progress only without "stop
        // prefetch in sector" (`disk_buffer_stopable_access`, `disksim_diskctlr.c:3899`).
        if p.seeking || !st.c.stop_prefetch_in_sector {
            st.stop_ns = p.pending_ns;
        }
        self.head = p.at;
    }

    /// When mechanical work for a command arriving at `t_ns` may start, if its overhead is
    /// over at `overhead_done_ns` (DiskSim `disk_check_hda`: once the mechanism is free, the
    /// rest of the overhead plus the rest of a stopped prefetch's event).
    fn mech_start(&self, t_ns: f64, overhead_done_ns: f64) -> f64 {
        let st = self.ds();
        let free = t_ns.max(st.hda_free_ns);
        free + (overhead_done_ns - free).max(0.0) + (st.stop_ns - free).max(0.0)
    }

    /// One past the last block of the track (`cylinder`: of the cylinder) holding `lbn`,
    /// which maps to `c0`.
    fn track_end(&self, lbn: u64, c0: &Chs, cylinder: bool) -> u64 {
        let total = self.geom.total_sectors;
        let (mut l, mut c) = (lbn, *c0);
        loop {
            let (n, _, after) = self.geom.run_next(l, &c, total - l);
            l += n;
            if l >= total {
                return total;
            }
            c = after.unwrap_or_else(|| self.geom.map(l));
            if c.cylinder != c0.cylinder || (!cylinder && c.head != c0.head) {
                return l;
            }
        }
    }

    /// The first block and one past the last of the track holding `lbn`, which maps to `c`:
    /// [`Hdd::track_end`] and [`Geometry::track_first_block_at`], remembered for the last track
    /// asked about.
    ///
    /// [`Geometry::track_first_block_at`]: super::geometry::Geometry::track_first_block_at
    fn track_bounds(&self, lbn: u64, c: &Chs) -> (u64, u64) {
        let memo = &self.ds().track_memo;
        if let Some(t) = memo.get() {
            if t.cylinder == c.cylinder && t.head == c.head && t.first <= lbn && lbn < t.end {
                return (t.first, t.end);
            }
        }
        let end = self.track_end(lbn, c, false);
        let first = self.geom.track_first_block_at(lbn, c);
        memo.set(Some(TrackBounds { cylinder: c.cylinder, head: c.head, first, end }));
        (first, end)
    }

    /// The first block of the track holding `lbn` (DiskSim `dm_get_track_boundaries`). The
    /// physical sector of `lbn` is no measure of it: slipped and spare sectors are not blocks.
    fn track_start(&self, lbn: u64) -> u64 {
        self.geom.track_first_block(lbn)
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
            ReadAhead::TrackEnd => {
                plain().min(self.track_end(end - 1, &self.geom.map(end - 1), false))
            }
            ReadAhead::CylinderEnd => {
                plain().min(self.track_end(end - 1, &self.geom.map(end - 1), true))
            }
            ReadAhead::NextTrack => {
                let c = self.geom.map(end);
                let (track_start, track_end) = self.track_bounds(end, &c);
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

    /// Starts read-ahead into segment `seg` from `next` (which lies at `place`, if known),
    /// heads at `at` free at `t_ns`.
    fn ds_start_stream(
        &mut self,
        seg: usize,
        (next, place): (u64, Option<Chs>),
        t_ns: f64,
        at: HeadState,
        limit: u64,
    ) {
        let stream = (limit > next).then(|| {
            let mut s = Stream { seg, next, t_ns, at, limit, end_ns: t_ns, end_at: at };
            self.ds_walk_stream(&mut s, place);
            s
        });
        self.ds_mut().stream = stream;
    }

    /// Walks read-ahead `s` (whose first block lies at `place`, if known) to its limit into
    /// `stream_runs`: when it ends and where.
    fn ds_walk_stream(&mut self, s: &mut Stream, place: Option<Chs>) {
        let mut runs = std::mem::take(&mut self.ds_mut().stream_runs);
        runs.clear();
        let opts = WalkOpts { first_place: place, ..WalkOpts::default() };
        let (end_ns, end_at, _) = self.walk(
            s.at,
            s.t_ns,
            false,
            s.next,
            s.limit - s.next,
            &mut runs,
            |_, _, _| 0.0,
            opts,
        );
        (s.end_ns, s.end_at) = (end_ns, end_at);
        self.ds_mut().stream_runs = runs;
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
    /// ahead 1; a dirty segment the read does not hit is not usable, nor is the separate
    /// write segment.
    fn ds_select_read(&self, t_ns: f64, lbn: u64, n: u64) -> Choice {
        let st = self.ds();
        let size = st.segment_sectors;
        let hits_on_writes = st.c.read_hits_on_write_data;
        // What the segments' states ask of the stream, asked once.
        let stream = st.stream;
        let stream_seg = stream.map_or(usize::MAX, |x| x.seg);
        let stream_end = stream.map_or(0, |x| self.stream_at(&x, t_ns).valid);
        let reading_seg = stream.filter(|x| t_ns < x.end_ns).map_or(usize::MAX, |x| x.seg);
        let write_seg = st.write_seg.unwrap_or(usize::MAX);
        // Segment `i`'s valid data ends at `end`; the read hits it if its first block is in
        // the last segment's worth before that end.
        let end_hit = |i: usize, s: &Seg| {
            let end = if i == stream_seg { stream_end } else { s.end };
            (end, lbn >= s.start.max(end.saturating_sub(size)) && lbn < end)
        };
        // Each segment's rank: its value, then the least recently used first; 0: not usable.
        // One comparison per segment and few branches: this loop runs for every command.
        let rank =
            |value: u64, stamp: u64| (value << STAMP_BITS) | (STAMP_MASK - stamp.min(STAMP_MASK));
        // A slot never used is an empty segment at the head of DiskSim's list.
        let mut best_rank = if st.segs.len() < st.segments { rank(3, 0) } else { 0 };
        let mut best = usize::MAX;
        for (i, s) in st.segs.iter().enumerate() {
            let (end, hit) = end_hit(i, s);
            let reading = i == reading_seg;
            let dirty = !reading && s.write && t_ns < s.dirty_until_ns;
            let value: u64 = if s.empty {
                3
            } else if hit {
                let v = if dirty {
                    if hits_on_writes {
                        10
                    } else {
                        0
                    }
                } else if reading {
                    9
                } else if hits_on_writes || !s.write {
                    8
                } else {
                    0
                };
                if v == 0 || end >= lbn + n {
                    v
                } else {
                    v - 4
                }
            } else if reading {
                1
            } else if dirty {
                0
            } else {
                2
            };
            let r = if value == 0 || i == write_seg { 0 } else { rank(value, s.stamp) };
            if r > best_rank {
                best_rank = r;
                best = i;
            }
        }
        let Some(s) = st.segs.get(best) else { return Choice::Take(None) };
        match end_hit(best, s) {
            (end, true) if !s.empty => Choice::Hit { i: best, avail: end },
            _ => Choice::Take(Some(best)),
        }
    }

    /// DiskSim's `disk_buffer_select_write_segment` for a write of `[lbn, lbn + n)` arriving
    /// at `t_ns`: a dirty segment it continues 7 (with combined sequential writes), a clean
    /// (or dirty, once written: DiskSim waits for it) segment it overlaps 4, an empty one 3,
    /// the least recently used clean one 2, the one being read ahead 1. With a separate write
    /// segment, only that one.
    fn ds_select_write(&self, t_ns: f64, lbn: u64, n: u64) -> Choice {
        let st = self.ds();
        let size = st.segment_sectors;
        let end = lbn + n;
        let appends =
            |s: &Seg| st.c.combine_sequential_writes && s.end == lbn && lbn - s.start < size;
        if let Some(w) = st.write_seg {
            let s = &st.segs[w];
            return match self.seg_state(w, t_ns) {
                SegState::Dirty if appends(s) => Choice::Append(w),
                SegState::Dirty => Choice::Wait(w),
                _ => Choice::Take(Some(w)),
            };
        }
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
                SegState::Dirty if appends(s) => (7, Choice::Append(i)),
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

    /// Takes segment `slot` (`None`: an unused slot, else the least recently used segment
    /// other than the separate write segment) for new data from `start`, as the most recently
    /// used.
    fn ds_take(&mut self, slot: Option<usize>, start: u64, write: bool) -> usize {
        let st = self.ds_mut();
        st.stamp += 1;
        let seg = Seg {
            start,
            end: start,
            write,
            empty: false,
            dirty_until_ns: 0.0,
            stamp: st.stamp,
            last_write: write,
        };
        let i = match slot {
            Some(i) => i,
            None if st.segs.len() < st.segments => {
                st.segs.push(seg);
                return st.segs.len() - 1;
            }
            None => (0..st.segs.len())
                .filter(|&i| Some(i) != st.write_seg)
                .min_by_key(|&i| st.segs[i].stamp)
                .expect("segments"),
        };
        st.segs[i] = seg;
        i
    }

    /// Moves segment `i` to most recently used, by a command that `writes` or not.
    fn ds_touch(&mut self, i: usize, writes: bool) {
        let st = self.ds_mut();
        st.stamp += 1;
        st.segs[i].stamp = st.stamp;
        st.segs[i].last_write = writes;
    }

    /// Serves one command from `now` under DiskSim's controller; returns its completion.
    pub(super) fn serve_disksim(&mut self, q: &Queued, now: Nanos) -> Nanos {
        let t = now as f64 + self.ds().c.per_request_ms * 1e6;
        let (lbn, n) = (q.lbn, q.sectors);
        // Read-ahead that has reached its limit is over: its segment is clean.
        if self.ds().stream.is_some_and(|s| s.end_ns <= t) {
            self.ds_stop_stream(t);
        }
        let done = match q.cmd.op {
            Op::Read if n > 0 && self.ds().caching => self.ds_read(t, lbn, n),
            Op::Read => self.ds_read_uncached(t, lbn, n),
            Op::Write if n > 0 => self.ds_write(t, lbn, n, q.cmd.fua),
            Op::Write | Op::Discard => {
                let st = self.ds();
                t + st.c.write_ms(true, st.last_read) * 1e6
            }
            Op::Flush => {
                let st = self.ds();
                t.max(st.hda_free_ns) + st.c.write_completion_ms * 1e6
            }
        };
        self.ds_mut().last_read = q.cmd.op == Op::Read;
        done.ceil() as Nanos
    }

    /// A read with the cache off: it disconnects (unless the drive never does), reads, and
    /// reselects once its water mark is in.
    fn ds_read_uncached(&mut self, t: f64, lbn: u64, n: u64) -> f64 {
        self.ds_stop_stream(t);
        let st = self.ds();
        let (ovh, disc) = st.c.read_miss_ms(st.last_read);
        let connect = if st.c.never_disconnect {
            Connect::At(t + (ovh + st.c.data_prep_ms) * 1e6)
        } else {
            Connect::After(t + (ovh + disc) * 1e6)
        };
        let start = self.mech_start(t, t + ovh * 1e6);
        let mut avail = std::mem::take(&mut self.ds_mut().avail);
        avail.clear();
        let (_, end_t, end_at, _) = self.ds_media_read(start, lbn, n, lbn, &mut avail);
        self.head = end_at;
        self.ds_mut().hda_free_ns = end_t;
        let done = self.read_bus(connect, &avail, n);
        self.ds_mut().avail = avail;
        done
    }

    /// Reads `[from, lbn + n)` (the rest of a read of `[lbn, lbn + n)`) from the media from
    /// `start` with the heads where they are, appending when each block is in the buffer to
    /// `avail`. Returns where the segment's data begins (before `lbn` if the drive reads free
    /// blocks), when the media access ends and where the heads are.
    fn ds_media_read(
        &mut self,
        start: f64,
        lbn: u64,
        n: u64,
        from: u64,
        avail: &mut Vec<Run>,
    ) -> (u64, f64, HeadState, Option<Chs>) {
        let c = &self.ds().c;
        let opts =
            WalkOpts { immed: c.immediate_read || c.read_any_free_blocks, ..WalkOpts::default() };
        let free_blocks = c.read_any_free_blocks;
        let mut runs = std::mem::take(&mut self.ds_mut().runs);
        runs.clear();
        let (end_t, end_at, after) = self.walk(
            self.head,
            start,
            false,
            from,
            lbn + n - from,
            &mut runs,
            |_, _, _| 0.0,
            opts,
        );
        // Blocks before the request that pass under the heads on its first track join the
        // segment (DiskSim `disk_buffer_sector_done` with "Read any free blocks").
        let mut seg_start = from;
        if free_blocks && from == lbn {
            if let Some(r) = runs.first() {
                let wait_sectors = ((r.start_ns - r.arrive_ns) / r.sector_ns.max(1e-9)) as u64;
                let zero_latency = runs.get(1).is_some_and(|r2| r2.sector_ns == 0.0);
                let before = from - self.track_start(from);
                seg_start = from - if zero_latency { before } else { before.min(wait_sectors) };
            }
        }
        avail.extend_from_slice(&runs);
        self.ds_mut().runs = runs;
        (seg_start, end_t, end_at, after)
    }

    /// DiskSim's read transfer for blocks `[0, n)` of a read, in the buffer as `avail` says
    /// (in block order), connected as `connect` says: each block moves one bus sector after
    /// the previous one and no earlier than it is in the buffer; when the buffer runs dry the
    /// drive holds the bus (or never disconnects) or disconnects and reselects at the water
    /// mark. Returns the completion (read completion overhead included).
    fn read_bus(&self, connect: Connect, avail: &[Run], n: u64) -> f64 {
        let st = self.ds();
        let c = &st.c;
        let bus = st.bus_read_ns;
        let hold = c.hold_bus_read || c.never_disconnect;
        let (_, disc_ms) = c.read_miss_ms(st.last_read);
        let disc = disc_ms * 1e6;
        let reselect = (c.first_reselect_ms + c.data_prep_ms) * 1e6;
        let wm = c.read_water_blocks(n, st.segment_sectors);
        // When block k is in the buffer.
        let ready = |k: u64| -> f64 {
            let mut k = k;
            for r in avail {
                if k < r.len {
                    return r.ready_ns(k);
                }
                k -= r.len;
            }
            avail.last().map_or(0.0, |r| r.ready_ns(r.len - 1))
        };
        let reconnect = |at: f64, k: u64| at.max(ready((k + wm - 1).min(n - 1))) + reselect;
        let mut b = match connect {
            Connect::At(b) => b,
            Connect::After(at) => reconnect(at, 0),
        };
        let mut k = 0;
        let smooth = hold || (disc == 0.0 && reselect == 0.0 && wm == 1);
        for r in avail {
            if smooth {
                b = bus_after(b, r.len, r.start_ns, r.sector_ns, bus);
                k += r.len;
                continue;
            }
            for j in 0..r.len {
                let at = r.ready_ns(j);
                if at > b {
                    b = reconnect(b + disc, k);
                }
                b += bus;
                k += 1;
            }
        }
        debug_assert_eq!(k, n);
        b + c.read_completion_ms * 1e6
    }

    fn ds_read(&mut self, t: f64, lbn: u64, n: u64) -> f64 {
        let choice = self.ds_select_read(t, lbn, n);
        let end = lbn + n;
        let hit = match choice {
            Choice::Hit { i, avail } => Some((i, avail)),
            _ => None,
        };
        // Read-ahead into another segment stops as the command arrives (DiskSim
        // `disk_activate_read`); into the segment it hits, it goes on.
        let streaming = self.ds().stream.filter(|s| Some(s.seg) == hit.map(|h| h.0));
        if streaming.is_none() {
            self.ds_stop_stream(t);
        }
        let st = self.ds();
        let c = &st.c;
        let busy = st.hda_free_ns > t;
        let (miss_ovh, disc) = c.read_miss_ms(st.last_read);
        let prep = c.data_prep_ms;
        // A partial hit moves its cached blocks at once only if the drive says so or they
        // reach the read water mark (`disk_read_arrive`).
        let enough = hit.is_some_and(|(_, have)| {
            c.immediate_partial_hit
                || have >= end
                || have - lbn >= c.read_water_blocks(n, st.segment_sectors).min(n)
        });
        // Served at once (DiskSim READY_TO_TRANSFER) or after a disconnect.
        let connect = if c.never_disconnect || (enough && !busy) {
            let ovh = if hit.is_some() { c.read_hit_ms(st.last_read) } else { miss_ovh };
            Connect::At(t + (ovh + prep) * 1e6)
        } else if hit.is_some() {
            // A hit waiting for the mechanism reselects once the mechanism is its.
            Connect::After((t + (miss_ovh + disc) * 1e6).max(st.hda_free_ns))
        } else {
            Connect::After(t + (miss_ovh + disc) * 1e6)
        };
        // DiskSim (`disk_read_arrive`) holds back any mechanical work a read starts, a hit
        // included (the rest of a partial hit, read-ahead), until its read-miss overhead is
        // over.
        let overhead_done = t + miss_ovh * 1e6;
        let mut avail = std::mem::take(&mut self.ds_mut().avail);
        avail.clear();
        let (seg, done) = match hit {
            None => {
                let Choice::Take(slot) = choice else { unreachable!("reads do not append") };
                let start = self.mech_start(t, overhead_done);
                let (seg_start, end_t, end_at, after) =
                    self.ds_media_read(start, lbn, n, lbn, &mut avail);
                self.head = end_at;
                self.ds_mut().hda_free_ns = end_t;
                let seg = self.ds_take(slot, seg_start, false);
                self.ds_mut().segs[seg].end = end;
                let limit = self.read_ahead_limit(lbn, n, seg_start);
                self.ds_start_stream(seg, (end, after), end_t, end_at, limit);
                (seg, self.read_bus(connect, &avail, n))
            }
            Some((i, have)) => {
                self.ds_touch(i, false);
                let seg_start = self.ds().segs[i].start;
                let cached = have.min(end) - lbn;
                avail.push(Run {
                    first: lbn,
                    len: cached,
                    start_ns: 0.0,
                    sector_ns: 0.0,
                    arrive_ns: 0.0,
                    at: HeadState::default(),
                });
                if end <= have {
                    if streaming.is_none() && self.ds().c.read_ahead_on_idle_hit {
                        let limit = self.read_ahead_limit(lbn, n, seg_start);
                        let from = self.ds().segs[i].end;
                        let start = self.mech_start(t, overhead_done);
                        let head = self.head;
                        self.ds_start_stream(i, (from, None), start, head, limit);
                    }
                } else if let Some(s) = streaming {
                    // The rest comes in behind the read-ahead, which goes on past the request.
                    let mut runs = std::mem::take(&mut self.ds_mut().runs);
                    runs.clear();
                    let opts = WalkOpts::default();
                    self.walk(
                        s.at,
                        s.t_ns,
                        false,
                        s.next,
                        end - s.next,
                        &mut runs,
                        |_, _, _| 0.0,
                        opts,
                    );
                    for r in &runs {
                        let lo = r.first.max(have);
                        let hi = (r.first + r.len).min(end);
                        if lo < hi {
                            let start_ns = r.start_ns + (lo - r.first) as f64 * r.sector_ns;
                            avail.push(Run { first: lo, len: hi - lo, start_ns, ..*r });
                        }
                    }
                    self.ds_mut().runs = runs;
                } else {
                    // The rest from the media, then read-ahead past it.
                    let start = self.mech_start(t, overhead_done);
                    let (_, end_t, end_at, after) =
                        self.ds_media_read(start, lbn, n, have, &mut avail);
                    self.head = end_at;
                    self.ds_mut().hda_free_ns = end_t;
                    self.ds_mut().segs[i].end = end;
                    let limit = self.read_ahead_limit(lbn, n, seg_start);
                    self.ds_start_stream(i, (end, after), end_t, end_at, limit);
                }
                if let Some(s) = streaming {
                    let limit = self.read_ahead_limit(lbn, n, seg_start).max(end);
                    if let Some(mut cur) = self.ds().stream {
                        cur.limit = cur.limit.max(limit).max(s.limit);
                        self.ds_walk_stream(&mut cur, None);
                        self.ds_mut().stream = Some(cur);
                    }
                }
                (i, self.read_bus(connect, &avail, n))
            }
        };
        self.ds_mut().avail = avail;
        // The next command comes after this one completes, so the segment can drop the
        // read's data now; read-ahead goes on filling it past `end`.
        if self.ds().c.drop_request_data {
            let s = &mut self.ds_mut().segs[seg];
            s.start = s.start.max(end);
        }
        done
    }

    fn ds_write(&mut self, t: f64, lbn: u64, n: u64, fua: bool) -> f64 {
        // The segment is chosen as the command arrives, before it stops any read-ahead.
        let choice = self.ds_select_write(t, lbn, n);
        let end = lbn + n;
        let target = match choice {
            Choice::Append(i) | Choice::Take(Some(i)) | Choice::Hit { i, .. } | Choice::Wait(i) => {
                Some(i)
            }
            Choice::Take(None) => None,
        };
        // DiskSim flags a write for an extra disconnect when it does not continue the write
        // before it in the most recently used segment (`disk_buffer_select_segment`).
        let extra = match (self.ds().c.extra_write_disconnect.clone(), target) {
            (Some(x), Some(i)) if !self.ds().c.never_disconnect => {
                let st = self.ds();
                let s = &st.segs[i];
                let mru = s.stamp == st.stamp && !s.empty;
                (mru && s.last_write && s.end != lbn && !matches!(choice, Choice::Wait(_)))
                    .then_some(x)
            }
            _ => None,
        };
        // Overlapping data elsewhere is dropped (DiskSim `disk_buffer_set_segment` empties
        // clean overlapping segments; the one being read ahead keeps what it read).
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
        let c = &st.c;
        let ovh = c.write_ms(write_back, st.last_read) * 1e6;
        let prep = c.data_prep_ms * 1e6;
        let bus = st.bus_write_ns;
        // A write waiting for its segment, or arriving while an earlier one is still going to
        // the media, disconnects; its data comes over once the mechanism is free (DiskSim: a
        // write access cannot be stopped, so the new command does not get the buffer before).
        let busy = st.hda_free_ns > t;
        // A write that must wait does not take the extra disconnect (`disk_write_arrive`).
        let extra = extra.filter(|_| !busy);
        let (data_from, overhead_done) = match &extra {
            Some(x) => (
                t + (x.command_ms + x.disconnect_ms + x.inter_disconnect_ms) * 1e6
                    + (c.first_reselect_ms * 1e6 + prep),
                t + (x.command_ms + x.seek_delta_ms) * 1e6,
            ),
            _ if c.never_disconnect || !busy => (t + ovh + prep, t + ovh),
            _ => {
                let disc = if write_back { c.write_disconnect_ms * 1e6 } else { 0.0 };
                ((t + ovh + disc).max(st.hda_free_ns) + c.first_reselect_ms * 1e6 + prep, t + ovh)
            }
        };
        let appends = matches!(choice, Choice::Append(_));
        let i = match choice {
            Choice::Append(i) => {
                self.ds_touch(i, true);
                i
            }
            Choice::Take(slot) => self.ds_take(slot, lbn, true),
            Choice::Wait(i) => self.ds_take(Some(i), lbn, true),
            Choice::Hit { .. } => unreachable!("writes append or take"),
        };
        let size = self.ds().segment_sectors;
        let st = self.ds_mut();
        st.segs[i].end = end;
        st.segs[i].start = st.segs[i].start.max(end.saturating_sub(size));
        // The media: each run once its data is in the buffer; with extra write disconnects,
        // not before 10 blocks (or the request; 15 from 45 blocks) are in
        // (`disk_buffer_block_available`).
        let start = self.mech_start(t, overhead_done);
        let c = &self.ds().c;
        let threshold = match c.extra_write_disconnect {
            Some(_) if n < 45 => n.min(10),
            Some(_) => 15,
            None => 0,
        };
        let opts = WalkOpts {
            immed: c.immediate_write,
            min_first_move_ns: if appends { 0.0 } else { c.minimum_seek_delay_ms * 1e6 },
            first_place: None,
        };
        let mut runs = std::mem::take(&mut self.ds_mut().runs);
        runs.clear();
        let ready = |first: u64, len: u64, sector_ns: f64| {
            let k0 = (first - lbn + 1).max(threshold) as f64;
            let k1 = (first - lbn + len).max(threshold) as f64;
            (data_from + k0 * bus).max(data_from + k1 * bus - (len - 1) as f64 * sector_ns)
        };
        let (end_t, end_at, _) = self.walk(self.head, start, true, lbn, n, &mut runs, ready, opts);
        self.head = end_at;
        let st = self.ds_mut();
        st.runs = runs;
        st.hda_free_ns = end_t;
        st.segs[i].dirty_until_ns = end_t;
        // With the cache off the segment only carried the data: DiskSim leaves it empty
        // (`seg->state = enablecache ? BUFFER_CLEAN : BUFFER_EMPTY`, disksim_diskctlr.c:761;
        // here at once rather than when the write completes).
        st.segs[i].empty |= !st.caching;
        let in_buffer = data_from + n as f64 * bus;
        if write_back {
            in_buffer + st.c.write_completion_ms * 1e6
        } else {
            // Disconnect after the data, reselect once it is on the media.
            let (disc, reselect) = match &extra {
                Some(x) => (x.second_disconnect_ms, st.c.other_reselect_ms),
                None => (st.c.write_disconnect_ms, st.c.first_reselect_ms),
            };
            (in_buffer + disc * 1e6).max(end_t) + (reselect + st.c.write_completion_ms) * 1e6
        }
    }
}

/// How a read first gets the bus: connected from a moment, or reselecting after a
/// disconnect that ends at a moment (once its water mark is in the buffer).
#[derive(Clone, Copy, Debug)]
enum Connect {
    At(f64),
    After(f64),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hdd::geometry::ZoneSpec;
    use crate::hdd::seek::SeekSpec;
    use crate::hdd::HddParams;
    use crate::{Command, Completion, Device};
    use elevator_core::{RandomStream, RequestId, SECTOR_BYTES};

    /// One zone of 20-sector tracks at 6000 rpm (0.5 ms a sector), a fast bus, DiskSim's
    /// controller as `c` sets it up.
    fn drive(c: DiskSimController) -> Hdd {
        let p = HddParams {
            interface: "SCSI".into(),
            rpm: 6000.0,
            surfaces: 2,
            zones: vec![ZoneSpec::plain(0, 9, 20)],
            seek: SeekSpec::Constant { ms: 1.0 },
            head_switch_ms: 0.2,
            write_settle_ms: 0.0,
            bus_bytes_per_sec: 512.0 / 0.01e-3,
            cache_segments: 2,
            segment_size_bytes: 64 * SECTOR_BYTES,
            queue_depth: 1,
            rotation_phase_turns: Some(0.0),
            controller: Some(Box::new(c)),
            ..HddParams::default()
        };
        Hdd::new(p, &mut RandomStream::new(1, 0)).unwrap()
    }

    #[test]
    fn remembered_track_bounds_are_the_walked_ones() {
        // Spare sectors per cylinder with slips and a remapped defect: tracks of 17 to 20
        // blocks, one block living on another track.
        let mut d = drive(DiskSimController::default());
        let mut zone = ZoneSpec::plain(0, 9, 20);
        zone.spares = 3;
        zone.slips = vec![5, 47, 48, 130];
        zone.defects = vec![(200, 330)];
        d.geom = crate::hdd::geometry::Geometry::with_layout(
            &[zone],
            2,
            crate::hdd::geometry::Sparing::SectorsPerCylinder,
            Default::default(),
        )
        .unwrap();
        let total = d.geom.total_sectors;
        // Along the disk, back again, and jumping: the memo answers within its track only.
        let order = (0..total).chain((0..total).rev()).chain((0..total).map(|i| i * 37 % total));
        let walked = |d: &Hdd, lbn: u64| {
            let c = d.geom.map(lbn);
            (d.geom.track_first_block_at(lbn, &c), d.track_end(lbn, &c, false))
        };
        for lbn in order {
            assert_eq!(d.track_bounds(lbn, &d.geom.map(lbn)), walked(&d, lbn), "block {lbn}");
        }
        // Every block after every other block of its track: the remapped block sits on a
        // track of other blocks without being in their run.
        for a in 0..total {
            for b in 0..total {
                let (ca, cb) = (d.geom.map(a), d.geom.map(b));
                if (ca.cylinder, ca.head) == (cb.cylinder, cb.head) {
                    d.track_bounds(a, &ca);
                    assert_eq!(d.track_bounds(b, &cb), walked(&d, b), "block {b} after {a}");
                }
            }
        }
    }

    /// Reads `n` blocks from `lbn` at `now`; returns the access time in ms.
    fn read(d: &mut Hdd, id: u64, lbn: u64, n: u64, now: u64) -> f64 {
        let cmd = Command {
            id: RequestId(id),
            op: Op::Read,
            offset_bytes: lbn * SECTOR_BYTES,
            len_bytes: n * SECTOR_BYTES,
            fua: false,
        };
        d.submit(cmd, now);
        let mut out: Vec<Completion> = Vec::new();
        while out.is_empty() {
            let t = d.next_event_ns().unwrap();
            d.advance(t, &mut out);
        }
        (out[0].done_ns - now) as f64 / 1e6
    }

    #[test]
    fn zero_latency_reads_start_where_the_heads_land() {
        let plain = DiskSimController { read_ahead: ReadAhead::None, ..Default::default() };
        let immed = DiskSimController { immediate_read: true, ..plain.clone() };
        // The heads reach cylinder 1 (1 ms seek) at sector 2 of its first track: a read of
        // the whole track waits 18 sectors for sector 0 and reads 20, or reads 18 at once and
        // the first two when they come round (one revolution from landing); the 18 reach the
        // bus (0.01 ms a block) after those two.
        let a = read(&mut drive(plain), 0, 40, 20, 0);
        let b = read(&mut drive(immed), 0, 40, 20, 0);
        assert!((a - (1.0 + 9.0 + 10.0 + 0.01)).abs() < 0.001, "{a}");
        assert!((b - (1.0 + 10.0 + 0.01 + 0.18)).abs() < 0.001, "{b}");
        // A read that starts after the landing point gains nothing.
        let c = DiskSimController {
            immediate_read: true,
            read_ahead: ReadAhead::None,
            ..Default::default()
        };
        let plain = DiskSimController { read_ahead: ReadAhead::None, ..Default::default() };
        assert_eq!(read(&mut drive(c), 0, 45, 5, 0), read(&mut drive(plain), 0, 45, 5, 0));
    }

    #[test]
    fn reading_free_blocks_keeps_the_blocks_before_a_read() {
        let c = DiskSimController {
            read_any_free_blocks: true,
            read_ahead: ReadAhead::None,
            read_hit_after_read_ms: 0.1,
            read_miss_after_read_ms: 0.5,
            ..Default::default()
        };
        let mut d = drive(c.clone());
        // Landing at sector 2 (after the seek and 0.5 ms overhead: 3 sectors), waiting for
        // sector 10: sectors 3..9 pass under the heads and join the segment.
        read(&mut d, 0, 50, 4, 0);
        let hit = read(&mut d, 1, 44, 4, 30_000_000);
        assert!(hit < 0.2, "{hit}");
        let mut d = drive(DiskSimController { read_any_free_blocks: false, ..c });
        read(&mut d, 0, 50, 4, 0);
        assert!(read(&mut d, 1, 44, 4, 30_000_000) > 1.0);
    }

    #[test]
    fn a_read_can_drop_its_own_data_from_its_segment() {
        // Read-ahead of 16 blocks past a read fills a quarter of the 64-block segment.
        let c = DiskSimController {
            read_ahead: ReadAhead::Sectors,
            max_read_ahead_sectors: 16,
            read_hit_after_read_ms: 0.1,
            read_miss_after_read_ms: 0.5,
            ..Default::default()
        };
        // A read of 4 blocks, then once its read-ahead has filled the segment, the same 4
        // again and the 4 after them: kept, the first re-read hits; dropped, it goes to the
        // media, while the blocks read ahead past it still hit.
        for (drop, first_hits) in [(false, true), (true, false)] {
            let mut d = drive(DiskSimController { drop_request_data: drop, ..c.clone() });
            read(&mut d, 0, 50, 4, 0);
            let again = read(&mut d, 1, 50, 4, 100_000_000);
            assert_eq!(again < 0.2, first_hits, "drop {drop}: {again} ms");
            let mut d = drive(DiskSimController { drop_request_data: drop, ..c.clone() });
            read(&mut d, 0, 50, 4, 0);
            let ahead = read(&mut d, 1, 54, 4, 100_000_000);
            assert!(ahead < 0.2, "drop {drop}: {ahead} ms");
        }
    }
}
