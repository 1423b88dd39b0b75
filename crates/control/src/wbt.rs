//! Writeback throttling (blk-wbt, `block/blk-wbt.c` and `blk-rq-qos.c`'s `rq_depth`, Linux
//! 4.10–6.x, Jens Axboe): buffered writeback may have only so many writes in the device at a
//! time, and fewer while reads suffer — CoDel's idea applied to writeback.
//!
//! - **Tracked writes**: every write but `O_DIRECT`'s (`REQ_SYNC | REQ_IDLE`). A tracked write
//!   waits, in arrival order, while the tracked writes in flight have reached its **limit**:
//!   `max_depth` for writeback someone waits for (`REQ_SYNC`, `REQ_META`: fsync), and for any
//!   writeback while a task was throttled in `balance_dirty_pages` within the last second
//!   (`wb_recent_wait`); `wb_background` = `(max_depth + 3) / 4` for background and periodic
//!   writeback (`REQ_BACKGROUND`) — or any, when a read was issued or completed in the last
//!   100 ms (`close_io`); `wb_normal` = `(max_depth + 1) / 2` otherwise.
//! - **Depth**: `max_depth` = `min(16, queue depth)` at scale step 0 (`RWB_DEF_DEPTH`);
//!   step `s > 0` gives `1 + ((depth - 1) >> s)`, step `s < 0` (writes only, no reads to
//!   protect) `1 + ((depth - 1) << -s)` up to 3/4 of the queue depth (`rq_depth_calc_max_depth`).
//! - **Monitoring**: while tracked writes are in flight (or the step is not 0) a window of
//!   100 ms (`RWB_WINDOW_NSEC`; at step `s > 0`, `100 ms × 16 / sqrt((s + 1) × 256)`) collects
//!   the device latency (issue to completion) of every read and the count of writes. At its
//!   end: a read issued more than a window ago still not back, or more than the target ago
//!   with no read completed, or the window's fastest read slower than the target
//!   (`wbt_lat_usec`: 75 ms on a rotational device, 2 ms otherwise) scales down (step + 1,
//!   from a negative step straight to 0); a window with reads and at least three writes and
//!   none too slow scales up (step − 1); writes without reads scale up too (the step goes
//!   negative); five windows in a row without either bring the step back towards 0
//!   (`wb_timer_fn`, `latency_exceeded`).
//! - **Waking**: a completing tracked write wakes the waiters only once the writes in flight
//!   fall to the `wb_normal` limit — to none at all on a device with a volatile write cache
//!   unless a dirtier was throttled recently — and then only if the room is at least half of
//!   `wb_background` (`wbt_rqw_done`); scaling up wakes everyone.
//!
//! Deviations: discards and swap are not told apart (elevator issues neither as
//! writeback); the waiters of a woken queue retry in arrival order at the next release
//! rather than racing; a bio counts once here, where the kernel splits it at
//! `max_sectors_kb` first and throttles each piece (elevator's block layer splits below the
//! controllers: a 1 MiB writeback bio on a 512 KiB queue is two requests in the device).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use elevator_core::{Nanos, Op, NS_PER_SEC};

use crate::{Bio, Controller, GroupCounters};

/// The depth at scale step 0 (`RWB_DEF_DEPTH`).
pub const WBT_DEFAULT_DEPTH: u32 = 16;
/// The monitoring window at step 0 and below (`RWB_WINDOW_NSEC`).
pub const WBT_WINDOW_NS: Nanos = 100_000_000;
/// Writes a window needs, beside one read, for its latency to count (`RWB_MIN_WRITE_SAMPLES`).
pub const WBT_MIN_WRITE_SAMPLES: u64 = 3;
/// Windows in a row without enough samples before the step moves back towards 0
/// (`RWB_UNKNOWN_BUMP`).
pub const WBT_UNKNOWN_BUMP: u32 = 5;
/// `wbt_lat_usec`'s default on a rotational device (75 ms) and on flash (2 ms)
/// (`wbt_default_latency_nsec`).
pub const WBT_LAT_ROTATIONAL_NS: Nanos = 75_000_000;
pub const WBT_LAT_NONROT_NS: Nanos = 2_000_000;
/// The largest `wbt_lat_usec` taken (a minute).
pub const WBT_LAT_MAX_NS: Nanos = 60 * NS_PER_SEC;
/// How long after a dirtier's throttle pause writeback counts as urgent (`wb_recent_wait`:
/// a second, `HZ`).
const RECENT_WAIT_NS: Nanos = NS_PER_SEC;
/// How long after a read's issue or completion writeback keeps to the background limit
/// (`close_io`: `HZ / 10`).
const CLOSE_IO_NS: Nanos = NS_PER_SEC / 10;

/// What a window's latency said (`latency_exceeded`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Ok,
    Unknown,
    UnknownWrites,
    Exceeded,
}

/// blk-wbt on one device. See the module docs.
pub struct Wbt {
    /// Throttling (`rwb_enabled`): off by default under BFQ and CFQ
    /// (`WBT_STATE_OFF_DEFAULT`), always on when `wbt_lat_usec` was set (`_ON_MANUAL`).
    enabled: bool,
    manual: bool,
    min_lat_ns: Nanos,
    queue_depth: u32,
    /// The device caches writes (`QUEUE_FLAG_WC`).
    write_cache: bool,
    scale_step: i32,
    scaled_max: bool,
    max_depth: u32,
    wb_normal: u32,
    wb_background: u32,
    unknown_cnt: u32,
    cur_win_ns: Nanos,
    /// The end of the window being monitored, if one is.
    window_end: Option<Nanos>,
    /// This window's reads (count, fastest) and writes (count).
    reads: u64,
    read_min_ns: Nanos,
    writes: u64,
    /// Tracked writes in the device, and those waiting to go, in arrival order.
    inflight: u32,
    waiting: VecDeque<Bio>,
    /// A wake-up was sent: the waiters may try again.
    woken: bool,
    ready: Vec<Bio>,
    /// Reads issued to the device, by request id, and when.
    reads_issued: BTreeMap<u64, Nanos>,
    /// The first read issued and not back (`sync_cookie`, `sync_issue`).
    sync_issue: Option<(u64, Nanos)>,
    dirty_sleep_ns: Option<Nanos>,
    /// When a read last went down and last came back (`last_issue`, `last_comp`).
    last_read_issue_ns: Option<Nanos>,
    last_read_comp_ns: Option<Nanos>,
    /// Tracked request ids in flight (a request is tracked once).
    tracked: BTreeSet<u64>,
    counters: GroupCounters,
}

impl Wbt {
    /// blk-wbt on a device of `queue_depth` with a read latency target of `min_lat_ns`
    /// (`wbt_lat_usec` × 1000), caching writes or not.
    pub fn new(min_lat_ns: Nanos, queue_depth: u32, write_cache: bool) -> Result<Wbt, String> {
        if min_lat_ns == 0 || min_lat_ns > WBT_LAT_MAX_NS {
            return Err(format!(
                "wbt_lat_usec: {} is outside 1 to {} (0 turns writeback throttling off)",
                min_lat_ns / 1000,
                WBT_LAT_MAX_NS / 1000
            ));
        }
        let mut w = Wbt {
            enabled: true,
            manual: false,
            min_lat_ns,
            queue_depth: queue_depth.max(1),
            write_cache,
            scale_step: 0,
            scaled_max: false,
            max_depth: 0,
            wb_normal: 0,
            wb_background: 0,
            unknown_cnt: 0,
            cur_win_ns: WBT_WINDOW_NS,
            window_end: None,
            reads: 0,
            read_min_ns: Nanos::MAX,
            writes: 0,
            inflight: 0,
            waiting: VecDeque::new(),
            woken: false,
            ready: Vec::new(),
            reads_issued: BTreeMap::new(),
            sync_issue: None,
            dirty_sleep_ns: None,
            last_read_issue_ns: None,
            last_read_comp_ns: None,
            tracked: BTreeSet::new(),
            counters: GroupCounters { name: "wbt".to_string(), ..GroupCounters::default() },
        };
        w.calc_max_depth();
        w.calc_limits();
        Ok(w)
    }

    /// The target was set by hand (`wbt_lat_usec`): a scheduler does not turn it off.
    pub fn set_manual(&mut self) {
        self.manual = true;
        self.enabled = true;
    }

    /// Whether it throttles now.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The default read latency target of a device (`wbt_default_latency_nsec`).
    pub fn default_latency_ns(rotational: bool) -> Nanos {
        if rotational {
            WBT_LAT_ROTATIONAL_NS
        } else {
            WBT_LAT_NONROT_NS
        }
    }

    /// The scale step and the depths now: (step, max, normal, background).
    pub fn depths(&self) -> (i32, u32, u32, u32) {
        (self.scale_step, self.max_depth, self.wb_normal, self.wb_background)
    }

    /// `rq_depth_calc_max_depth`; true if the depth hit its ceiling.
    fn calc_max_depth(&mut self) -> bool {
        let mut hit = false;
        if self.queue_depth == 1 {
            if self.scale_step > 0 {
                self.max_depth = 1;
            } else {
                self.max_depth = 2;
                hit = true;
            }
            return hit;
        }
        let mut depth = WBT_DEFAULT_DEPTH.min(self.queue_depth);
        if self.scale_step > 0 {
            depth = 1 + ((depth - 1) >> self.scale_step.min(31));
        } else if self.scale_step < 0 {
            let maxd = 3 * self.queue_depth / 4;
            let shift = (-self.scale_step).min(31) as u32;
            depth =
                1u64.saturating_add(u64::from(depth - 1) << shift).min(u64::from(u32::MAX)) as u32;
            if depth > maxd {
                depth = maxd;
                hit = true;
            }
        }
        self.max_depth = depth;
        hit
    }

    /// `calc_wb_limits`.
    fn calc_limits(&mut self) {
        if self.max_depth <= 2 {
            self.wb_normal = self.max_depth;
            self.wb_background = 1;
        } else {
            self.wb_normal = self.max_depth.div_ceil(2);
            self.wb_background = self.max_depth.div_ceil(4);
        }
    }

    fn scale_up(&mut self) {
        if self.scaled_max {
            return;
        }
        self.scale_step -= 1;
        self.scaled_max = self.calc_max_depth();
        self.calc_limits();
        self.unknown_cnt = 0;
        self.woken = true;
    }

    fn scale_down(&mut self, hard: bool) {
        if self.max_depth == 1 {
            return;
        }
        if self.scale_step < 0 && hard {
            self.scale_step = 0;
        } else {
            self.scale_step += 1;
        }
        self.scaled_max = false;
        self.calc_max_depth();
        self.calc_limits();
        self.unknown_cnt = 0;
    }

    fn recent_wait(&self, now_ns: Nanos) -> bool {
        self.dirty_sleep_ns.is_some_and(|t| now_ns < t + RECENT_WAIT_NS)
    }

    /// `close_io`: a read was issued or completed within the last 100 ms (`HZ / 10`).
    fn close_io(&self, now_ns: Nanos) -> bool {
        [self.last_read_issue_ns, self.last_read_comp_ns]
            .into_iter()
            .flatten()
            .any(|t| now_ns < t + CLOSE_IO_NS)
    }

    /// `get_limit`: `REQ_HIPRIO` (sync, meta) or a recent dirtier's wait get the most;
    /// background writeback, and any writeback near a read, the least; the rest the normal.
    fn limit(&self, bio: &Bio, now_ns: Nanos) -> u32 {
        let r = &bio.request;
        if r.sync || r.meta || self.recent_wait(now_ns) {
            self.max_depth
        } else if r.background || self.close_io(now_ns) {
            self.wb_background
        } else {
            self.wb_normal
        }
    }

    fn tracked_write(bio: &Bio) -> bool {
        let r = &bio.request;
        // O_DIRECT writes are sync without REQ_NOIDLE here (REQ_SYNC | REQ_IDLE in 6.x).
        r.op == Op::Write && (!r.sync || r.noidle)
    }

    /// `rwb_arm_timer`.
    fn arm(&mut self, now_ns: Nanos) {
        self.cur_win_ns = if self.scale_step > 0 {
            let root = (((self.scale_step as u64 + 1) << 8) as f64).sqrt() as u64;
            (WBT_WINDOW_NS << 4) / root.max(1)
        } else {
            WBT_WINDOW_NS
        };
        self.window_end = Some(now_ns + self.cur_win_ns);
        self.reads = 0;
        self.read_min_ns = Nanos::MAX;
        self.writes = 0;
    }

    /// `latency_exceeded` for the window that ended at `now_ns`.
    fn status(&self, now_ns: Nanos) -> Status {
        if let Some((_, issued)) = self.sync_issue {
            let lat = now_ns.saturating_sub(issued);
            if lat > self.cur_win_ns || (lat > self.min_lat_ns && self.reads == 0) {
                return Status::Exceeded;
            }
        }
        if self.reads == 0 || self.writes < WBT_MIN_WRITE_SAMPLES {
            if self.writes > 0 || self.recent_wait(now_ns) || self.inflight > 0 {
                return Status::UnknownWrites;
            }
            return Status::Unknown;
        }
        if self.read_min_ns > self.min_lat_ns {
            Status::Exceeded
        } else {
            Status::Ok
        }
    }

    /// `wb_timer_fn`.
    fn window_ended(&mut self, now_ns: Nanos) {
        self.window_end = None;
        match self.status(now_ns) {
            Status::Exceeded => self.scale_down(true),
            Status::Ok | Status::UnknownWrites => self.scale_up(),
            Status::Unknown => {
                self.unknown_cnt += 1;
                if self.unknown_cnt >= WBT_UNKNOWN_BUMP {
                    if self.scale_step > 0 {
                        self.scale_up();
                    } else if self.scale_step < 0 {
                        self.scale_down(false);
                    }
                }
            }
        }
        if self.scale_step != 0 || self.inflight > 0 {
            self.arm(now_ns);
        }
    }

    /// Lets waiters go while they fit under their limits (after a wake-up).
    fn admit(&mut self, now_ns: Nanos) {
        while self.woken {
            let Some(front) = self.waiting.front() else {
                self.woken = false;
                break;
            };
            if self.inflight >= self.limit(front, now_ns) {
                self.woken = false;
                break;
            }
            let bio = self.waiting.pop_front().expect("a waiter");
            self.inflight += 1;
            self.tracked.insert(bio.request.id.0);
            self.ready.push(bio);
        }
    }
}

impl Controller for Wbt {
    fn name(&self) -> &'static str {
        "wbt"
    }

    fn submit(&mut self, bio: Bio, now_ns: Nanos) {
        self.counters.ios += 1;
        self.counters.bytes += bio.request.len_bytes;
        if !self.enabled || !Self::tracked_write(&bio) {
            if self.enabled && bio.request.op == Op::Read {
                self.last_read_issue_ns = Some(now_ns);
            }
            self.ready.push(bio);
            return;
        }
        if self.waiting.is_empty() && self.inflight < self.limit(&bio, now_ns) {
            self.inflight += 1;
            self.tracked.insert(bio.request.id.0);
            self.ready.push(bio);
        } else {
            self.counters.held += 1;
            self.waiting.push_back(bio);
        }
        if self.window_end.is_none() {
            self.arm(now_ns);
        }
    }

    fn release(&mut self, now_ns: Nanos, out: &mut Vec<Bio>) {
        if self.window_end.is_some_and(|end| now_ns >= end) {
            self.window_ended(now_ns);
        }
        self.admit(now_ns);
        out.append(&mut self.ready);
    }

    fn dispatched(&mut self, bio: &Bio, now_ns: Nanos) {
        if bio.request.op == Op::Read {
            let id = bio.request.id.0;
            self.reads_issued.insert(id, now_ns);
            if self.sync_issue.is_none() {
                self.sync_issue = Some((id, now_ns));
            }
        }
    }

    fn completed(&mut self, bio: &Bio, now_ns: Nanos) {
        let id = bio.request.id.0;
        match bio.request.op {
            Op::Read => {
                if self.enabled {
                    self.last_read_comp_ns = Some(now_ns);
                }
                if let Some(issued) = self.reads_issued.remove(&id) {
                    if self.window_end.is_some() {
                        self.reads += 1;
                        self.read_min_ns = self.read_min_ns.min(now_ns.saturating_sub(issued));
                    }
                }
                if self.sync_issue.is_some_and(|(s, _)| s == id) {
                    self.sync_issue = None;
                }
            }
            Op::Write => {
                if self.window_end.is_some() {
                    self.writes += 1;
                }
                if self.tracked.remove(&id) {
                    self.inflight -= 1;
                    // `wbt_rqw_done`: wake only well below the normal limit.
                    let limit = if self.write_cache && !self.recent_wait(now_ns) {
                        0
                    } else {
                        self.wb_normal
                    };
                    let quiet = self.inflight > 0 && self.inflight >= limit;
                    let room = limit.saturating_sub(self.inflight);
                    if !quiet
                        && !self.waiting.is_empty()
                        && (self.inflight == 0 || room >= self.wb_background / 2)
                    {
                        self.woken = true;
                    }
                }
            }
            _ => {}
        }
    }

    fn next_timer_ns(&self) -> Option<Nanos> {
        self.window_end
    }

    fn held(&self) -> usize {
        self.waiting.len()
    }

    fn counters(&self) -> Vec<GroupCounters> {
        vec![self.counters.clone()]
    }

    fn scheduler_switched(&mut self, name: &str) {
        if self.manual {
            return;
        }
        self.enabled = !matches!(name, "bfq" | "cfq");
        if !self.enabled {
            // Whoever waits goes (`wbt_disable_default` leaves none throttled).
            self.woken = true;
            for bio in self.waiting.drain(..) {
                self.ready.push(bio);
            }
        }
    }

    fn note_dirty_sleep(&mut self, at_ns: Nanos) {
        self.dirty_sleep_ns = Some(self.dirty_sleep_ns.map_or(at_ns, |t| t.max(at_ns)));
    }
}

#[cfg(test)]
mod tests {
    use elevator_core::{BioFlags, Owner, Request, RequestId, NS_PER_MS};

    use super::*;

    fn bio(id: u64, op: Op, flags: BioFlags) -> Bio {
        let r = Request::of_bio(RequestId(id), op, id << 20, 4096, flags, Owner::process(1), 0);
        Bio { device: 0, request: r }
    }

    /// The flusher's background writeback.
    fn writeback(id: u64) -> Bio {
        bio(id, Op::Write, BioFlags { background: true, ..BioFlags::sync_if(false) })
    }

    /// Writeback a task starts itself (`sync_file_range`, fadvise): no `REQ_BACKGROUND`.
    fn task_writeback(id: u64) -> Bio {
        bio(id, Op::Write, BioFlags::sync_if(false))
    }

    /// `get_limit`: a task's own writeback gets the normal depth (8 of 16), the flusher's
    /// background writeback a quarter (4) — and so does the task's within 100 ms of a read
    /// going down or coming back (`close_io`).
    #[test]
    fn a_task_s_writeback_gets_the_normal_limit_unless_a_read_is_close() {
        let admitted = |w: &mut Wbt, bios: Vec<Bio>, at: Nanos| {
            let mut out = Vec::new();
            for b in bios {
                w.submit(b, at);
            }
            w.release(at, &mut out);
            out.len()
        };
        let mut w = Wbt::new(WBT_LAT_ROTATIONAL_NS, 31, false).unwrap();
        assert_eq!(admitted(&mut w, (0..12).map(task_writeback).collect(), 0), 8, "wb_normal");
        let mut w = Wbt::new(WBT_LAT_ROTATIONAL_NS, 31, false).unwrap();
        assert_eq!(admitted(&mut w, (0..12).map(writeback).collect(), 0), 4, "wb_background");
        // A read issued at 0: task writeback until 100 ms later keeps to the background
        // limit, then has the normal one again.
        let mut w = Wbt::new(WBT_LAT_ROTATIONAL_NS, 31, false).unwrap();
        assert_eq!(admitted(&mut w, vec![bio(100, Op::Read, BioFlags::SYNC)], 0), 1);
        let near = 99 * NS_PER_MS;
        assert_eq!(admitted(&mut w, (0..3).map(task_writeback).collect(), near), 3);
        assert_eq!(admitted(&mut w, (3..12).map(task_writeback).collect(), near), 1, "4 in all");
        // A read that came back at 150 ms keeps it close until 250 ms.
        for (at_ms, want) in [(240, 4), (260, 8)] {
            let mut w = Wbt::new(WBT_LAT_ROTATIONAL_NS, 31, false).unwrap();
            admitted(&mut w, vec![bio(100, Op::Read, BioFlags::SYNC)], 0);
            w.completed(&bio(100, Op::Read, BioFlags::SYNC), 150 * NS_PER_MS);
            let at = at_ms * NS_PER_MS;
            assert_eq!(
                admitted(&mut w, (0..12).map(task_writeback).collect(), at),
                want,
                "{at_ms}"
            );
        }
    }

    #[test]
    fn depths_follow_rq_depth_calc_max_depth() {
        let mut w = Wbt::new(WBT_LAT_ROTATIONAL_NS, 31, true).unwrap();
        assert_eq!(w.depths(), (0, 16, 8, 4));
        w.scale_down(true);
        assert_eq!(w.depths(), (1, 8, 4, 2));
        w.scale_down(true);
        assert_eq!(w.depths(), (2, 4, 2, 1));
        w.scale_up();
        w.scale_up();
        w.scale_up();
        // Step -1: 1 + (15 << 1) = 31, over 3/4 of the queue depth: 23, and no further.
        assert_eq!(w.depths(), (-1, 23, 12, 6));
        w.scale_up();
        assert_eq!(w.depths().0, -1, "scaled to the maximum");
        // A hard throttle from a negative step goes straight to 0.
        w.scale_down(true);
        assert_eq!(w.depths(), (0, 16, 8, 4));
        let one = Wbt::new(WBT_LAT_ROTATIONAL_NS, 1, false).unwrap();
        assert_eq!(one.depths(), (0, 2, 2, 1));
        assert!(Wbt::new(0, 31, true).is_err());
    }

    #[test]
    fn background_writeback_waits_and_a_write_cache_wakes_it_only_when_drained() {
        let mut w = Wbt::new(WBT_LAT_ROTATIONAL_NS, 31, true).unwrap();
        let mut out = Vec::new();
        for id in 0..10 {
            w.submit(writeback(id), 0);
        }
        // O_DIRECT writes and reads pass, whatever waits.
        w.submit(bio(100, Op::Write, BioFlags::SYNC), 0);
        w.submit(bio(101, Op::Read, BioFlags::SYNC), 0);
        w.release(0, &mut out);
        let ids: Vec<u64> = out.iter().map(|b| b.request.id.0).collect();
        assert_eq!(ids, [0, 1, 2, 3, 100, 101], "wb_background = 4 in flight");
        assert_eq!(w.held(), 6);
        // Completions do not wake the waiters until none is left in flight.
        for id in 0..3 {
            w.completed(&writeback(id), NS_PER_MS);
            let mut more = Vec::new();
            w.release(NS_PER_MS, &mut more);
            assert!(more.is_empty(), "{id}");
        }
        w.completed(&writeback(3), NS_PER_MS);
        out.clear();
        w.release(NS_PER_MS, &mut out);
        assert_eq!(out.len(), 4);
        // Right after a dirtier was throttled, writeback may use the whole depth (16), and a
        // completion wakes the waiters below the normal limit (8). Newcomers queue behind
        // the two still waiting.
        w.note_dirty_sleep(NS_PER_MS);
        for id in 20..40 {
            w.submit(writeback(id), NS_PER_MS);
        }
        out.clear();
        w.release(NS_PER_MS, &mut out);
        assert!(out.is_empty(), "no wake-up yet");
        w.completed(&writeback(4), 2 * NS_PER_MS);
        w.release(2 * NS_PER_MS, &mut out);
        let ids: Vec<u64> = out.iter().map(|b| b.request.id.0).collect();
        assert_eq!(ids.len(), 13, "3 in flight + 13 = max_depth 16: {ids:?}");
        assert_eq!(&ids[..3], &[8, 9, 20], "in arrival order");
    }

    /// Submits background writeback `ids` at 0 and returns how many go down at once.
    fn send(w: &mut Wbt, ids: std::ops::Range<u64>) -> usize {
        let mut out = Vec::new();
        for id in ids {
            w.submit(writeback(id), 0);
        }
        w.release(0, &mut out);
        out.len()
    }

    #[test]
    fn bfq_and_cfq_turn_it_off_unless_set_by_hand() {
        let mut w = Wbt::new(WBT_LAT_ROTATIONAL_NS, 31, true).unwrap();
        assert_eq!((send(&mut w, 0..6), w.held()), (4, 2));
        // Switching to BFQ lets the waiters go and throttles nothing after.
        w.scheduler_switched("bfq");
        assert_eq!((send(&mut w, 10..30), w.held()), (22, 0));
        // Back under mq-deadline it throttles again (the writes sent under BFQ are not
        // counted: the kernel did not track them either).
        w.scheduler_switched("mq-deadline");
        send(&mut w, 40..50);
        assert!(w.held() > 0, "{} held", w.held());
        // Set by hand, it stays on under CFQ.
        let mut m = Wbt::new(WBT_LAT_ROTATIONAL_NS, 31, true).unwrap();
        m.set_manual();
        m.scheduler_switched("cfq");
        assert!(m.enabled());
    }

    #[test]
    fn slow_reads_scale_the_depth_down_and_fast_ones_back_up() {
        let mut w = Wbt::new(WBT_LAT_ROTATIONAL_NS, 31, true).unwrap();
        let mut out = Vec::new();
        let mut window = |w: &mut Wbt, start: Nanos, read_lat: Nanos, id: u64| {
            for i in 0..4 {
                w.submit(writeback(id + i), start);
            }
            let read = bio(id + 10, Op::Read, BioFlags::SYNC);
            w.submit(read, start);
            w.release(start, &mut out);
            w.dispatched(&read, start);
            w.completed(&read, start + read_lat);
            for i in 0..4 {
                w.completed(&writeback(id + i), start + 1);
            }
            let end = w.next_timer_ns().expect("a window while writes are in flight");
            w.release(end, &mut out);
            end
        };
        let t = window(&mut w, 0, 90 * NS_PER_MS, 0);
        assert_eq!(w.depths().0, 1, "the fastest read took 90 ms > 75 ms");
        let t = window(&mut w, t, 10 * NS_PER_MS, 100);
        assert_eq!(w.depths().0, 0, "reads within the target: back up");
        // A read that has not come back for longer than a window counts as exceeded.
        w.submit(writeback(200), t);
        let read = bio(300, Op::Read, BioFlags::SYNC);
        w.submit(read, t);
        w.release(t, &mut out);
        w.dispatched(&read, t);
        let end = w.next_timer_ns().unwrap();
        w.release(end + WBT_WINDOW_NS, &mut out);
        assert_eq!(w.depths().0, 1);
    }
}
