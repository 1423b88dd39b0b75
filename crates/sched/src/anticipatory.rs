//! The anticipatory I/O scheduler, as in Linux 2.6.x `block/as-iosched.c` (the last version,
//! 2.6.32, before its removal in 2.6.33), rewritten from a reading of that code.
//!
//! # The algorithm
//!
//! Requests are split into two directions by sync-ness (`rq_is_sync`: reads and sync writes
//! are "reads", `REQ_SYNC`; buffered writes are "writes", `REQ_ASYNC`). Each direction keeps a
//! sector-sorted tree and a FIFO with deadline `read_expire` / `write_expire`. The next request
//! of a direction is chosen by `as_choose_req`: the one the head reaches first going forwards
//! from the end of the last dispatched request, where a backward seek of at most `MAXBACK`
//! (1 Gi sectors in the kernel's arithmetic: `1024 * 1024` compared with sectors) costs twice
//! its distance.
//!
//! Directions are served in **batches** (`as_dispatch_request`): a read batch lasts
//! `read_batch_expire`, a write batch `write_batch_expire` or `write_batch_count` requests
//! (adapted after each write batch by `update_write_batch`); when both directions have
//! requests and the batch expired, the other direction gets the next batch. A batch change
//! waits for the previous direction's requests to drain (`changed_batch`), and the batch
//! clock starts when the first request of the new batch completes (`new_batch`). An expired
//! FIFO head (checked at most once per expiry period, `as_fifo_expired`) is served next.
//!
//! **Anticipation**: after a sync request from process P is dispatched, AS does not serve
//! another process's read right away. It waits for P's request to complete (`ANTIC_WAIT_REQ`),
//! then up to `antic_expire` for P's next request (`ANTIC_WAIT_NEXT`, `as_antic_waitnext`) —
//! `Dispatch::WaitUntil` — unless `as_can_break_anticipation` says waiting is pointless: the
//! candidate request is P's own; P has requests queued or in flight; the anticipation time
//! ran out; the candidate is "close" to the head (`as_close_req`: within a window that grows
//! with the time already waited, or nearer than P's mean seek distance); or P's mean think
//! time (`as_update_thinktime`, 7/8-decaying, capped at 20 ms) exceeds `antic_expire`. A
//! newly arriving request that would break anticipation ends it at once (`as_update_rq`).
//!
//! # Tunables (sysfs, milliseconds)
//!
//! `read_expire` 125, `write_expire` 250, `read_batch_expire` 500, `write_batch_expire` 125,
//! `antic_expire` 6 (0 disables anticipation: the scheduler degenerates into deadline with
//! batches).
//!
//! # Deviations, and why
//!
//! - Nanosecond time instead of jiffies; `as_close_req`'s window doubling per jiffy doubles
//!   per whole millisecond waited.
//! - A process exits when the driver says so ([`Scheduler::exited`]), at once after its last
//!   request completed (the kernel's `exit_as_io_context` runs when the task is done);
//!   `exit_prob` and `exit_no_coop` learn from it as the kernel's do. `new_ttime_mean` and
//!   `new_seek_mean` (the priors for processes without history) are kept as the kernel does,
//!   from the first samples of each process.
//! - Merging is a back or front merge into a queued request of the same direction and
//!   operation (the kernel's elevator hash / rbtree lookup).
//! - While waiting for the anticipated process's request to complete or for a batch change
//!   to drain, `dispatch` answers `Empty` (a completion is coming); while waiting for the next
//!   request it answers `WaitUntil` with the anticipation deadline. Timers fire lazily, at the
//!   first call at or after their expiry.

use std::collections::BTreeMap;

use elevator_core::hash::FastHashMap;

use elevator_core::{Nanos, Request, RequestId, NS_PER_MS};

use crate::{Dispatch, Merged, Scheduler, TunableError, TunableInfo, TunableSpec};

const SYNC: usize = 1;
const ASYNC: usize = 0;
/// `MAXBACK`, compared with sector distances.
const MAXBACK_SECTORS: u64 = 1024 * 1024;
const BACK_PENALTY: u64 = 2;
/// `MAX_THINKTIME`: HZ / 50.
const MAX_THINKTIME: Nanos = 20 * NS_PER_MS;
/// Initial `write_batch_count`: the kernel starts at `batch_expire[REQ_ASYNC] / 10` jiffies'
/// worth, 12 at HZ = 1000 and 125 ms.
const INITIAL_WRITE_BATCH: u64 = 12;

pub const TUNABLES: &[TunableSpec] = &[
    TunableSpec {
        name: "read_expire",
        unit: "ms",
        default: 125,
        min: 1,
        max: 100_000,
        description: "FIFO deadline of sync requests.",
    },
    TunableSpec {
        name: "write_expire",
        unit: "ms",
        default: 250,
        min: 1,
        max: 100_000,
        description: "FIFO deadline of async requests.",
    },
    TunableSpec {
        name: "read_batch_expire",
        unit: "ms",
        default: 500,
        min: 1,
        max: 100_000,
        description: "Length of a read batch when writes wait.",
    },
    TunableSpec {
        name: "write_batch_expire",
        unit: "ms",
        default: 125,
        min: 1,
        max: 100_000,
        description: "Length of a write batch when reads wait.",
    },
    TunableSpec {
        name: "antic_expire",
        unit: "ms",
        default: 6,
        min: 0,
        max: 100_000,
        description: "Longest wait for the anticipated process's next request.",
    },
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnticStatus {
    Off,
    WaitReq,
    WaitNext,
    Finished,
}

/// `struct as_io_context`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Aic {
    pub nr_queued: u32,
    pub nr_dispatched: u32,
    pub io_running: bool,
    pub io_started: bool,
    pub last_end_request: Nanos,
    pub last_request_pos: u64,
    pub ttime_samples: u64,
    pub ttime_total: u64,
    pub ttime_mean: u64,
    pub seek_samples: u64,
    pub seek_total: u64,
    pub seek_mean: u64,
    /// `AS_TASK_RUNNING` cleared: the process exited.
    pub exited: bool,
}

#[derive(Debug)]
struct Entry {
    rq: Request,
    fifo_key: (Nanos, u64),
}

/// The anticipatory scheduler. See the module documentation.
#[derive(Debug)]
pub struct Anticipatory {
    /// Why the last request went (`Scheduler::last_decision`).
    decision: &'static str,
    /// Anticipation ended with a request's arrival: the queue runs now
    /// (`Scheduler::take_queue_run`).
    run_queue: bool,
    fifo_expire: [Nanos; 2],
    batch_expire: [Nanos; 2],
    antic_expire: Nanos,
    sort: [BTreeMap<(u64, u64), Entry>; 2],
    fifo: [BTreeMap<(Nanos, u64), (u64, u64)>; 2],
    next_rq: [Option<(u64, u64)>; 2],
    last_sector: [u64; 2],
    last_check_fifo: [Nanos; 2],
    batch_data_dir: usize,
    changed_batch: bool,
    new_batch: bool,
    current_batch_expires: Nanos,
    write_batch_count: u64,
    current_write_count: u64,
    write_batch_idled: bool,
    antic_status: AnticStatus,
    antic_start: Nanos,
    io_context: Option<u32>,
    ioc_finished: bool,
    nr_dispatched: u32,
    aics: FastHashMap<u32, Aic>,
    inflight: FastHashMap<RequestId, u32>,
    new_ttime_mean: u64,
    new_seek_mean: u64,
    /// How likely a process without think-time history exits while anticipated on, and how
    /// likely an exited process is not saved by a cooperating request (fixed point, 256 is
    /// 1.0; both start at 0).
    exit_prob: u64,
    exit_no_coop: u64,
    queued: usize,
}

impl Default for Anticipatory {
    fn default() -> Self {
        Anticipatory::new()
    }
}

fn dir(rq: &Request) -> usize {
    if rq.sync {
        SYNC
    } else {
        ASYNC
    }
}

impl Anticipatory {
    pub fn new() -> Anticipatory {
        Anticipatory {
            decision: "",
            run_queue: false,
            fifo_expire: [250 * NS_PER_MS, 125 * NS_PER_MS],
            batch_expire: [125 * NS_PER_MS, 500 * NS_PER_MS],
            antic_expire: 6 * NS_PER_MS,
            sort: Default::default(),
            fifo: Default::default(),
            next_rq: [None; 2],
            last_sector: [0; 2],
            last_check_fifo: [0; 2],
            batch_data_dir: SYNC,
            changed_batch: false,
            // The first read batch is timed from its first completion, like any new batch.
            new_batch: true,
            current_batch_expires: 0,
            write_batch_count: INITIAL_WRITE_BATCH,
            current_write_count: 0,
            write_batch_idled: false,
            antic_status: AnticStatus::Off,
            antic_start: 0,
            io_context: None,
            ioc_finished: false,
            nr_dispatched: 0,
            aics: FastHashMap::default(),
            inflight: FastHashMap::default(),
            new_ttime_mean: 0,
            new_seek_mean: 0,
            exit_prob: 0,
            exit_no_coop: 0,
            queued: 0,
        }
    }

    /// The anticipation state, for tests.
    pub fn antic_status(&self) -> AnticStatus {
        self.antic_status
    }

    /// A process's statistics (think time and seek distance), for tests.
    pub fn io_context_stats(&self, io_context: u32) -> Option<Aic> {
        self.aics.get(&io_context).copied()
    }

    /// Whether the current batch is of sync requests.
    pub fn batch_is_sync(&self) -> bool {
        self.batch_data_dir == SYNC
    }

    /// `as_choose_req`: Some(true) for `a`.
    fn choose(&self, a: Option<(u64, u64)>, b: Option<(u64, u64)>, d: usize) -> Option<(u64, u64)> {
        let (ka, kb) = match (a, b) {
            (None, x) | (x, None) => return x,
            (Some(a), Some(b)) => (a, b),
        };
        if ka == kb {
            return Some(ka);
        }
        let last = self.last_sector[d];
        let dist = |s: u64| -> Option<u64> {
            if s >= last {
                Some(s - last)
            } else if s + MAXBACK_SECTORS >= last {
                Some((last - s) * BACK_PENALTY)
            } else {
                None
            }
        };
        let (s1, s2) = (ka.0, kb.0);
        let pick_a = match (dist(s1), dist(s2)) {
            (Some(d1), Some(d2)) => d1 < d2 || (d1 == d2 && s1 >= s2),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => s1 <= s2,
        };
        Some(if pick_a { ka } else { kb })
    }

    /// `as_find_next_rq`.
    fn find_next(&self, d: usize, key: (u64, u64)) -> Option<(u64, u64)> {
        let next = self.sort[d]
            .range(key..)
            .next()
            .or_else(|| self.sort[d].iter().next())
            .map(|(k, _)| *k);
        let prev = self.sort[d].range(..key).next_back().map(|(k, _)| *k);
        self.choose(next, prev, d)
    }

    /// `as_update_iohist` with `as_update_thinktime` and `as_update_seekdist`.
    fn update_iohist(&mut self, rq: &Request, now: Nanos) {
        if !rq.sync {
            return;
        }
        let aic = self.aics.entry(rq.owner.io_context).or_default();
        let in_flight = aic.nr_queued + aic.nr_dispatched;
        if aic.io_running || aic.io_started {
            let mut ttime = 0;
            if aic.io_running && in_flight == 0 {
                ttime = now.saturating_sub(aic.last_end_request).min(MAX_THINKTIME - 1);
            }
            let first_t = aic.ttime_samples == 0;
            aic.ttime_samples = (7 * aic.ttime_samples + 256) / 8;
            aic.ttime_total = (7 * aic.ttime_total + 256 * ttime) / 8;
            aic.ttime_mean = (aic.ttime_total + 128) / aic.ttime_samples;
            let mut sdist = aic.last_request_pos.abs_diff(rq.sector());
            if aic.seek_samples > 0 {
                let cap = if aic.seek_samples < 400 { 2 * 1024 * 1024 } else { 2 * 1024 * 64 };
                sdist = sdist.min(aic.seek_mean * 4 + cap);
            }
            let first_s = aic.seek_samples == 0;
            aic.seek_samples = (7 * aic.seek_samples + 256) / 8;
            aic.seek_total = (7 * aic.seek_total + 256 * sdist) / 8;
            aic.seek_mean = (aic.seek_total + aic.seek_samples / 2) / aic.seek_samples;
            let (tm, sm) = (aic.ttime_mean, aic.seek_mean);
            if first_t {
                self.new_ttime_mean = (3 * self.new_ttime_mean + tm) / 4;
                self.exit_prob = 7 * self.exit_prob / 8;
            }
            if first_s {
                self.new_seek_mean = (3 * self.new_seek_mean + sm) / 4;
            }
        }
        let aic = self.aics.entry(rq.owner.io_context).or_default();
        aic.last_request_pos = rq.end_sector();
        aic.io_started = true;
    }

    /// `as_antic_expired`.
    fn antic_expired(&self, now: Nanos) -> bool {
        now.saturating_sub(self.antic_start) > self.antic_expire
    }

    /// `as_close_req`.
    fn close_req(&self, aic: &Aic, rq: &Request, now: Nanos) -> bool {
        let last = self.last_sector[self.batch_data_dir];
        let next = rq.sector();
        let delay_ms = if self.antic_status == AnticStatus::Off || !self.ioc_finished {
            0
        } else {
            now.saturating_sub(self.antic_start) / NS_PER_MS
        };
        let delta: u64 = if delay_ms == 0 {
            8192
        } else if delay_ms <= 20 && delay_ms * NS_PER_MS <= self.antic_expire {
            8192 << delay_ms
        } else {
            return true;
        };
        if last <= next + (delta >> 1) && next <= last + delta {
            return true;
        }
        let s = last.abs_diff(next);
        if aic.seek_samples == 0 {
            self.new_seek_mean > s
        } else {
            aic.seek_mean > s
        }
    }

    /// `as_can_break_anticipation`.
    fn can_break_anticipation(&mut self, rq: Option<&Request>, now: Nanos) -> bool {
        let Some(ioc) = self.io_context else { return true };
        if rq.is_some_and(|r| r.owner.io_context == ioc) {
            return true;
        }
        if self.ioc_finished && self.antic_expired(now) {
            return true;
        }
        let Some(&aic) = self.aics.get(&ioc) else { return false };
        if aic.nr_queued > 0 || aic.nr_dispatched > 0 {
            return true;
        }
        if let Some(r) = rq {
            if r.sync && self.close_req(&aic, r, now) {
                // A close request of another process saves the exited one's anticipation.
                if aic.exited {
                    if aic.ttime_samples == 0 {
                        self.exit_prob = (7 * self.exit_prob + 256) / 8;
                    }
                    self.exit_no_coop = 7 * self.exit_no_coop / 8;
                }
                return true;
            }
        }
        if aic.exited {
            if aic.ttime_samples == 0 {
                self.exit_prob = (7 * self.exit_prob + 256) / 8;
            }
            if self.exit_no_coop > 128 {
                return true;
            }
        }
        if aic.ttime_samples == 0 {
            self.new_ttime_mean > self.antic_expire
                || self.exit_prob * self.exit_no_coop > 128 * 256
        } else {
            aic.ttime_mean > self.antic_expire
        }
    }

    /// `as_can_anticipate`.
    fn can_anticipate(&mut self, rq: Option<&Request>, now: Nanos) -> bool {
        self.io_context.is_some()
            && self.antic_status != AnticStatus::Finished
            && !self.can_break_anticipation(rq, now)
    }

    fn antic_waitnext(&mut self) {
        self.antic_status = AnticStatus::WaitNext;
    }

    /// `as_antic_waitreq`.
    fn antic_waitreq(&mut self) {
        if self.antic_status == AnticStatus::Off {
            if self.io_context.is_none() || self.ioc_finished {
                self.antic_waitnext();
            } else {
                self.antic_status = AnticStatus::WaitReq;
            }
        }
    }

    /// `as_antic_stop`.
    fn antic_stop(&mut self) {
        if matches!(self.antic_status, AnticStatus::WaitReq | AnticStatus::WaitNext) {
            self.antic_status = AnticStatus::Finished;
            // kblockd_schedule_work(antic_work): as_work_handler runs the queue.
            self.run_queue = true;
        }
    }

    /// `as_antic_timeout`, evaluated lazily.
    fn advance(&mut self, now: Nanos) {
        if self.antic_status == AnticStatus::WaitNext && now >= self.antic_start + self.antic_expire
        {
            self.antic_status = AnticStatus::Finished;
            // The anticipated process sent nothing in time: one without history counts
            // towards `exit_prob`, an exited one towards `exit_no_coop`.
            if let Some(aic) = self.io_context.and_then(|ioc| self.aics.get(&ioc)) {
                if aic.ttime_samples == 0 {
                    self.exit_prob = (7 * self.exit_prob + 256) / 8;
                }
                if aic.exited {
                    self.exit_no_coop = (7 * self.exit_no_coop + 256) / 8;
                }
            }
        }
    }

    /// `as_fifo_expired`.
    fn fifo_expired(&mut self, d: usize, now: Nanos) -> bool {
        if now.abs_diff(self.last_check_fifo[d]) < self.fifo_expire[d] {
            return false;
        }
        self.last_check_fifo[d] = now;
        match self.fifo[d].keys().next() {
            Some(&(t, _)) => now > t,
            None => false,
        }
    }

    /// `as_batch_expired`.
    fn batch_expired(&self, now: Nanos) -> bool {
        if self.changed_batch || self.new_batch {
            return false;
        }
        if self.batch_data_dir == SYNC {
            now > self.current_batch_expires
        } else {
            now > self.current_batch_expires || self.current_write_count == 0
        }
    }

    /// `update_write_batch`.
    fn update_write_batch(&mut self, now: Nanos) {
        let batch = self.batch_expire[ASYNC] as i64;
        let write_time = (now as i64 - self.current_batch_expires as i64 + batch).max(0);
        if write_time > batch && !self.write_batch_idled {
            if write_time > batch * 3 {
                self.write_batch_count /= 2;
            } else {
                self.write_batch_count = self.write_batch_count.saturating_sub(1);
            }
        } else if write_time < batch && self.current_write_count == 0 {
            if batch > write_time * 3 {
                self.write_batch_count *= 2;
            } else {
                self.write_batch_count += 1;
            }
        }
        self.write_batch_count = self.write_batch_count.max(1);
    }

    fn fifo_head(&self, d: usize) -> Option<(u64, u64)> {
        self.fifo[d].values().next().copied()
    }

    /// `as_move_to_dispatch`.
    fn move_to_dispatch(&mut self, d: usize, key: (u64, u64)) -> Request {
        let e = self.sort[d].remove(&key).expect("queued request");
        self.fifo[d].remove(&e.fifo_key);
        let rq = e.rq;
        self.last_sector[d] = rq.end_sector();
        if d == SYNC {
            self.io_context = Some(rq.owner.io_context);
        } else {
            self.io_context = None;
            self.current_write_count = self.current_write_count.saturating_sub(1);
        }
        self.ioc_finished = false;
        self.next_rq[d] = self.find_next(d, key);
        self.queued -= 1;
        if rq.sync {
            let aic = self.aics.entry(rq.owner.io_context).or_default();
            aic.nr_queued = aic.nr_queued.saturating_sub(1);
            aic.nr_dispatched += 1;
        }
        self.nr_dispatched += 1;
        self.inflight.insert(rq.id, rq.owner.io_context);
        rq
    }

    /// `as_dispatch_request`: the direction and request to dispatch, or why not.
    fn dispatch_request(&mut self, now: Nanos) -> Result<(usize, (u64, u64)), Dispatch> {
        let reads = !self.fifo[SYNC].is_empty();
        let writes = !self.fifo[ASYNC].is_empty();
        if self.batch_data_dir == ASYNC && !reads && (self.current_write_count == 0 || !writes) {
            self.write_batch_idled = true;
        }
        if !(reads || writes) {
            return Err(Dispatch::Empty);
        }
        match self.antic_status {
            AnticStatus::WaitReq => return Err(Dispatch::Empty),
            AnticStatus::WaitNext => {
                return Err(Dispatch::WaitUntil { until_ns: self.antic_start + self.antic_expire })
            }
            _ => {}
        }
        if self.changed_batch {
            return Err(Dispatch::Empty);
        }
        let mut chosen: Option<(usize, (u64, u64))> = None;
        let mut fifo_forced = false;
        if !(reads && writes && self.batch_expired(now)) {
            let d = self.batch_data_dir;
            let key = self.next_rq[d];
            if d == SYNC && self.antic_expire > 0 {
                if self.fifo_expired(SYNC, now) {
                    fifo_forced = true;
                } else {
                    let rq = key.and_then(|k| self.sort[d].get(&k)).map(|e| e.rq);
                    if self.can_anticipate(rq.as_ref(), now) {
                        self.antic_waitreq();
                        return Err(match self.antic_status {
                            AnticStatus::WaitNext => Dispatch::WaitUntil {
                                until_ns: self.antic_start + self.antic_expire,
                            },
                            _ => Dispatch::Empty,
                        });
                    }
                }
            }
            if !fifo_forced {
                if let Some(k) = key {
                    if reads && !writes {
                        self.current_batch_expires = now + self.batch_expire[SYNC];
                    }
                    self.decision = if self.antic_status == AnticStatus::Finished {
                        "anticipation ended: batch continues"
                    } else {
                        "batch continues"
                    };
                    chosen = Some((d, k));
                }
            }
        }
        if chosen.is_none() && !fifo_forced {
            if reads && !(writes && self.batch_data_dir == SYNC) {
                if self.batch_data_dir == ASYNC {
                    self.changed_batch = true;
                }
                self.batch_data_dir = SYNC;
                self.last_check_fifo[SYNC] = now;
                self.decision = "new read batch";
                chosen = Some((SYNC, self.fifo_head(SYNC).expect("reads queued")));
            } else {
                if self.batch_data_dir == SYNC {
                    self.changed_batch = true;
                    self.new_batch = false;
                }
                self.batch_data_dir = ASYNC;
                self.current_write_count = self.write_batch_count;
                self.write_batch_idled = false;
                self.last_check_fifo[ASYNC] = now;
                self.decision = "new write batch";
                chosen = Some((ASYNC, self.fifo_head(ASYNC).expect("writes queued")));
            }
        }
        let d = self.batch_data_dir;
        let mut pick = chosen.map(|c| c.1);
        if fifo_forced || self.fifo_expired(d, now) {
            pick = self.fifo_head(d).or(pick);
            self.decision = "fifo expired";
        }
        if self.changed_batch {
            if self.nr_dispatched > 0 {
                return Err(Dispatch::Empty);
            }
            if d == ASYNC {
                self.current_batch_expires = now + self.batch_expire[ASYNC];
            } else {
                self.new_batch = true;
            }
            self.changed_batch = false;
        }
        match pick {
            Some(k) => Ok((d, k)),
            None => Err(Dispatch::Empty),
        }
    }
}

impl Scheduler for Anticipatory {
    fn take_queue_run(&mut self) -> bool {
        std::mem::take(&mut self.run_queue)
    }

    /// `as_may_queue`: the process AS is anticipating may always allocate a request.
    fn must_queue(&mut self, owner: &elevator_core::Owner, _sync: bool, now_ns: Nanos) -> bool {
        self.advance(now_ns);
        matches!(self.antic_status, AnticStatus::WaitReq | AnticStatus::WaitNext)
            && self.io_context == Some(owner.io_context)
    }

    fn name(&self) -> &'static str {
        "anticipatory"
    }

    fn try_merge(&mut self, rq: &Request, max_len_bytes: u64, now_ns: Nanos) -> Option<Merged> {
        self.advance(now_ns);
        if rq.op == elevator_core::Op::Flush {
            return None;
        }
        let d = dir(rq);
        let ok = |x: &Request| {
            x.op == rq.op
                && x.owner.io_context == rq.owner.io_context
                && x.len_bytes + rq.len_bytes <= max_len_bytes
        };
        if let Some((&k, e)) = self.sort[d].range(..(rq.sector(), 0)).next_back() {
            if e.rq.end_bytes() == rq.offset_bytes && ok(&e.rq) {
                let e = self.sort[d].get_mut(&k)?;
                e.rq.len_bytes += rq.len_bytes;
                return Some(Merged { into: e.rq.id, front: false });
            }
        }
        let end = rq.end_sector();
        let hit =
            self.sort[d].range((end, 0)..(end + 1, 0)).find(|(_, e)| ok(&e.rq)).map(|(k, _)| *k);
        if let Some(k) = hit {
            let mut e = self.sort[d].remove(&k)?;
            e.rq.offset_bytes = rq.offset_bytes;
            e.rq.len_bytes += rq.len_bytes;
            let nk = (e.rq.sector(), e.rq.id.0);
            self.fifo[d].insert(e.fifo_key, nk);
            let id = e.rq.id;
            self.sort[d].insert(nk, e);
            if self.next_rq[d] == Some(k) {
                self.next_rq[d] = Some(nk);
            }
            return Some(Merged { into: id, front: true });
        }
        None
    }

    fn insert(&mut self, rq: Request, now_ns: Nanos) {
        let now = now_ns;
        self.advance(now);
        let d = dir(&rq);
        self.update_iohist(&rq, now);
        if rq.sync {
            self.aics.entry(rq.owner.io_context).or_default().nr_queued += 1;
        }
        let key = (rq.sector(), rq.id.0);
        let fifo_key = (now + self.fifo_expire[d], rq.id.0);
        self.sort[d].insert(key, Entry { rq, fifo_key });
        self.fifo[d].insert(fifo_key, key);
        self.queued += 1;
        // as_update_rq
        self.next_rq[d] = self.choose(Some(key), self.next_rq[d], d);
        if matches!(self.antic_status, AnticStatus::WaitReq | AnticStatus::WaitNext)
            && self.can_break_anticipation(Some(&rq), now)
        {
            self.antic_stop();
        }
    }

    fn dispatch(&mut self, now_ns: Nanos) -> Dispatch {
        self.advance(now_ns);
        match self.dispatch_request(now_ns) {
            Ok((d, key)) => {
                self.antic_status = AnticStatus::Off;
                Dispatch::Request(self.move_to_dispatch(d, key))
            }
            Err(wait) => wait,
        }
    }

    /// `exit_as_io_context`: `AS_TASK_RUNNING` is cleared; anticipation on the process
    /// breaks when `as_can_break_anticipation` next looks (with `exit_no_coop` high, or the
    /// timeout), as in the kernel.
    fn exited(&mut self, io_context: u32, now_ns: Nanos) -> bool {
        self.advance(now_ns);
        if let Some(aic) = self.aics.get_mut(&io_context) {
            aic.exited = true;
        }
        false
    }

    fn completed(&mut self, rq: &Request, now_ns: Nanos) {
        let now = now_ns;
        self.advance(now);
        let Some(ioc) = self.inflight.remove(&rq.id) else { return };
        if self.changed_batch && self.nr_dispatched == 1 {
            self.current_batch_expires = now + self.batch_expire[self.batch_data_dir];
            self.changed_batch = false;
            if self.batch_data_dir == SYNC {
                self.new_batch = true;
            }
        }
        self.nr_dispatched -= 1;
        if self.new_batch && self.batch_data_dir == dir(rq) {
            self.update_write_batch(now);
            self.current_batch_expires = now + self.batch_expire[SYNC];
            self.new_batch = false;
        }
        if self.io_context == Some(ioc) && rq.sync {
            self.antic_start = now;
            self.ioc_finished = true;
            if self.antic_status == AnticStatus::WaitReq {
                self.antic_waitnext();
            }
        }
        if rq.sync {
            let aic = self.aics.entry(ioc).or_default();
            aic.nr_dispatched = aic.nr_dispatched.saturating_sub(1);
            aic.last_end_request = now;
            aic.io_running = true;
        }
    }

    fn last_decision(&self) -> &'static str {
        self.decision
    }

    fn queued(&self) -> usize {
        self.queued
    }

    fn tunables(&self) -> Vec<TunableInfo> {
        let v = [
            self.fifo_expire[SYNC],
            self.fifo_expire[ASYNC],
            self.batch_expire[SYNC],
            self.batch_expire[ASYNC],
            self.antic_expire,
        ];
        TUNABLES.iter().zip(v).map(|(s, v)| s.info(v / NS_PER_MS)).collect()
    }

    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), TunableError> {
        let spec = TUNABLES
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| TunableError::unknown("anticipatory", name, &self.tunables()))?;
        let v = spec.parse("anticipatory", value)? * NS_PER_MS;
        match name {
            "read_expire" => self.fifo_expire[SYNC] = v,
            "write_expire" => self.fifo_expire[ASYNC] = v,
            "read_batch_expire" => self.batch_expire[SYNC] = v,
            "write_batch_expire" => self.batch_expire[ASYNC] = v,
            _ => self.antic_expire = v,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::{Op, Owner, NS_PER_US};

    fn rq(id: u64, pid: u32, sector: u64, sync: bool, now: Nanos) -> Request {
        let op = if sync { Op::Read } else { Op::Write };
        Request::new(RequestId(id), op, sector * 512, 4096, sync, Owner::process(pid), now).unwrap()
    }

    fn expect_rq(s: &mut Anticipatory, now: Nanos) -> Request {
        match s.dispatch(now) {
            Dispatch::Request(r) => r,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    /// Process 1 reads sequentially with a short think time; process 2 has a far request queued.
    fn warm_up(s: &mut Anticipatory) -> (Nanos, u64) {
        let mut now = 0;
        s.insert(rq(1000, 2, 50_000_000, true, 0), 0);
        let mut last = 0;
        for i in 0..20u64 {
            s.insert(rq(i + 1, 1, i * 8, true, now), now);
            let r = expect_rq(s, now);
            assert_eq!(r.owner.pid, 1, "anticipation keeps serving process 1 (step {i})");
            now += 200 * NS_PER_US;
            s.completed(&r, now);
            now += 100 * NS_PER_US; // think time
            last = i;
        }
        (now, last)
    }

    #[test]
    fn anticipates_for_sequential_reader_and_breaks_on_its_request() {
        let mut s = Anticipatory::new();
        let (now, last) = warm_up(&mut s);
        let st = s.io_context_stats(1).unwrap();
        assert!(st.ttime_mean < 6 * NS_PER_MS);
        // Nothing from process 1 queued: AS waits for it rather than seeking to process 2.
        match s.dispatch(now) {
            Dispatch::WaitUntil { until_ns } => assert!(until_ns > now),
            other => panic!("{other:?}"),
        }
        assert_eq!(s.antic_status(), AnticStatus::WaitNext);
        s.insert(rq(500, 1, (last + 1) * 8, true, now + 10), now + 10);
        assert_eq!(s.antic_status(), AnticStatus::Finished);
        assert_eq!(expect_rq(&mut s, now + 10).id, RequestId(500));
    }

    #[test]
    fn the_anticipated_process_must_get_a_request_slot() {
        let mut s = Anticipatory::new();
        let (now, last) = warm_up(&mut s);
        let p1 = elevator_core::Owner::process(1);
        let p2 = elevator_core::Owner::process(2);
        assert!(!s.must_queue(&p1, true, now), "not waiting yet");
        assert!(matches!(s.dispatch(now), Dispatch::WaitUntil { .. }));
        assert!(s.must_queue(&p1, true, now + 10), "AS waits for process 1");
        assert!(!s.must_queue(&p2, true, now + 10), "only for process 1");
        // Its request ends the wait, and with it the exemption.
        s.insert(rq(500, 1, (last + 1) * 8, true, now + 10), now + 10);
        assert!(!s.must_queue(&p1, true, now + 10));
        // So does the wait's timeout.
        let mut s = Anticipatory::new();
        let (now, _) = warm_up(&mut s);
        assert!(matches!(s.dispatch(now), Dispatch::WaitUntil { .. }));
        assert!(!s.must_queue(&p1, true, now + 7 * NS_PER_MS));
    }

    #[test]
    fn anticipation_times_out() {
        let mut s = Anticipatory::new();
        let (now, _) = warm_up(&mut s);
        let until = match s.dispatch(now) {
            Dispatch::WaitUntil { until_ns } => until_ns,
            other => panic!("{other:?}"),
        };
        assert_eq!(expect_rq(&mut s, until).owner.pid, 2);
    }

    #[test]
    fn no_anticipation_for_slow_thinker() {
        let mut s = Anticipatory::new();
        let mut now = 0;
        s.insert(rq(1000, 2, 50_000_000, true, 0), 0);
        let mut served_2 = false;
        for i in 0..30u64 {
            s.insert(rq(i + 1, 1, i * 8, true, now), now);
            loop {
                match s.dispatch(now) {
                    Dispatch::Request(r) => {
                        now += 200 * NS_PER_US;
                        served_2 |= r.owner.pid == 2;
                        s.completed(&r, now);
                        if r.owner.pid == 1 {
                            break;
                        }
                    }
                    Dispatch::WaitUntil { until_ns } => now = until_ns,
                    Dispatch::Empty => panic!("stuck"),
                }
            }
            now += 15 * NS_PER_MS; // think time > antic_expire
        }
        assert!(s.io_context_stats(1).unwrap().ttime_mean > 6 * NS_PER_MS);
        assert!(served_2);
        // Now the far request of another process is not held back.
        s.insert(rq(2000, 3, 90_000_000, true, now), now);
        assert_eq!(expect_rq(&mut s, now).owner.pid, 3);
    }

    #[test]
    fn batches_switch_between_reads_and_writes() {
        let mut s = Anticipatory::new();
        s.set_tunable("antic_expire", "0").unwrap();
        for i in 0..200u64 {
            s.insert(rq(i + 1, 1, i * 8, true, 0), 0);
            s.insert(rq(1000 + i, 2, 10_000_000 + i * 8, false, 0), 0);
        }
        let mut now = 0;
        let mut dirs = Vec::new();
        while s.queued() > 0 {
            match s.dispatch(now) {
                Dispatch::Request(r) => {
                    dirs.push(r.sync);
                    now += 5 * NS_PER_MS;
                    s.completed(&r, now);
                }
                Dispatch::WaitUntil { until_ns } => now = until_ns,
                Dispatch::Empty => now += NS_PER_US,
            }
        }
        let switches = dirs.windows(2).filter(|w| w[0] != w[1]).count();
        assert!(switches >= 2, "reads and writes alternate in batches: {switches}");
        // The first read batch lasts about read_batch_expire (500 ms at 5 ms a request).
        let first_run = dirs.iter().take_while(|&&d| d).count();
        assert!((90..=110).contains(&first_run), "first read batch {first_run}");
    }

    #[test]
    fn expired_fifo_head_jumps_the_sort_order() {
        let mut s = Anticipatory::new();
        s.set_tunable("antic_expire", "0").unwrap();
        s.insert(rq(1, 1, 1_000_000, true, 0), 0);
        let mut now = 0;
        let mut id = 10;
        let mut served_old_at = None;
        for _ in 0..400 {
            id += 1;
            s.insert(rq(id, 2, id * 8, true, now), now);
            let r = expect_rq(&mut s, now);
            now += NS_PER_MS;
            s.completed(&r, now);
            if r.id == RequestId(1) {
                served_old_at = Some(now);
                break;
            }
        }
        let t = served_old_at.expect("the old request is served");
        assert!(t <= 260 * NS_PER_MS, "served at {t}");
    }

    /// `exit_prob` and `exit_no_coop`: AS at first anticipates for a one-request process that
    /// has exited (it cannot know better) and times out; once timeouts on exited processes
    /// have pushed `exit_no_coop` past a half, a request of another process ends the
    /// anticipation on an exited one at once.
    #[test]
    fn learns_that_exited_processes_send_nothing_more() {
        let mut s = Anticipatory::new();
        let (mut now, mut id) = (0, 0);
        let mut waited = Vec::new();
        for round in 0..10u32 {
            let pid = 100 + round;
            id += 1;
            s.insert(rq(id, pid, 8, true, now), now);
            let r = expect_rq(&mut s, now);
            now += NS_PER_MS;
            s.completed(&r, now);
            s.exited(pid, now);
            id += 1;
            s.insert(rq(id, 1, 1 << 30, true, now), now);
            let at = match s.dispatch(now) {
                Dispatch::Request(r) => r,
                Dispatch::WaitUntil { until_ns } => {
                    now = until_ns;
                    expect_rq(&mut s, now)
                }
                other => panic!("{other:?}"),
            };
            assert_eq!(at.owner.pid, 1);
            waited.push(s.antic_status() == AnticStatus::Off && now > r.submit_ns + NS_PER_MS);
            now += NS_PER_MS;
            s.completed(&at, now);
            now += 50 * NS_PER_MS;
        }
        assert!(waited[0], "{waited:?}");
        let learned = waited.iter().position(|&w| !w).expect("learns within 10 exits");
        assert!(waited[learned..].iter().all(|&w| !w), "{waited:?}");
        assert!(s.exit_no_coop > 128, "{}", s.exit_no_coop);
    }
}
