//! The block layer between submitters and one device: what `blk-mq` does with a bio before a
//! driver sees it.
//!
//! - **Split** (`blk_queue_split`): a bio longer than `max_sectors_kb` becomes several pieces.
//! - **Plug** (`blk_start_plug` / `blk_finish_plug`): bios a process submits in one batch
//!   (fio's `iodepth_batch_submit`) collect in a plug list, where contiguous ones merge
//!   (`blk_attempt_plug_merge`), and go to the scheduler together when the batch ends.
//! - **Merge** into a queued request through the scheduler (`bio_merge`), else **allocate** a
//!   request: at most `nr_requests` sync and `nr_requests` async requests may exist, counted
//!   apart as the 2.6 kernels' `request_list` does (`rl->count[is_sync]`, the era of CFQ, AS and
//!   dm-ioband), so a flood of async writes cannot take a reader's request slots (before
//!   2.6.30, [`BlockQueue::set_request_lists_by_direction`], reads and writes instead:
//!   `rl->count[rw]`, a sync write drawing on the writes' list); while the
//!   scheduler schedules control groups each group has pools of its own (the IO controller
//!   patches' and blk-cgroup's per-group request lists). As `get_request` has it, the
//!   request that fills a pool marks it full and makes its task a "batcher"; a full pool
//!   takes only batchers' requests ([`NR_BATCHING`] each, within [`BATCH_TIME_NS`]) and those
//!   the scheduler says must have one (`elv_may_queue` → `ELV_MQUEUE_MUST`: AS for the
//!   process it anticipates, CFQ once a slice for the queue it idles for), up to half as many
//!   again as `nr_requests`. Anyone else sleeps, in FIFO order, until a completion takes the
//!   pool below `nr_requests`. A task sleeps on one bio: woken, it is a batcher, places its
//!   bios and, if some are left, sleeps again behind those who fell asleep meanwhile, so a
//!   journal thread's thousand commit writes hold a reader up a batch, not all of them.
//! - **Dispatch**: the scheduler is pulled while the device has a free queue slot.
//! - **Queue plugging** (kernels before 2.6.39, [`BlockQueue::set_queue_plugging`]): a
//!   page-cache request (readahead, background writeback) entering an empty scheduler queue
//!   plugs the whole queue (`blk_plug_device`), and nothing is dispatched until it is run:
//!   by a task waiting for one of its pages (`sync_page`, the engine calls
//!   [`BlockQueue::run_queue`]), a sync submitter (direct I/O's `blk_run_address_space`),
//!   the fourth queued request (`unplug_thresh`), a completion (the driver's
//!   `blk_run_queue`), a scheduler that was idling for the request
//!   (`Scheduler::take_queue_run`), a submitter sleeping for a request slot
//!   (`get_request_wait`), or the timer 3 ms on (`unplug_delay`). Seed 002's target: its
//!   async readahead under deadline waits for the next command, under CFQ it goes at once.
//! - **Group control** (cgroup v2 `io.max`, blk-throttle's `blk_throtl_bio`, or `io.latency`,
//!   blk-iolatency's `rq_qos_throttle`): before any of that, a bio may be held by the device's
//!   [`Controller`]; the submitter does not wait for it, and it goes on (split, plug, merge)
//!   when the controller releases it — at once, or later (from the timer, or as others
//!   complete) as the kernel's dispatch work, which submits it as no process. The controller
//!   hears of each bio's completion, and of when it reached the driver.
//!
//! - **Tracing** (`blktrace`): with a [`Recorder`] set, each step above is an event (`Q`, `X`,
//!   `M`/`F`, `G`, `S`, `I`, `D`, `C`, `P`, `U`) recorded at the simulated time; without one,
//!   the hot path pays one `Option` check per step and nothing else.
//!
//! A request remembers its pieces as a linked list through a slab, so merging is O(1) and the
//! hot path allocates nothing once the slabs are warm.

use std::collections::{BTreeMap, VecDeque};

use elevator_control::Controller;
use elevator_core::{BioFlags, Nanos, Op, Owner, Request, RequestId, SECTOR_BYTES};
use elevator_device::{Command, Completion, Device};
use elevator_sched::{Dispatch, Scheduler};

use crate::blktrace::{Act, BlockEvent, Recorder};
use crate::slab::Slab;

const NONE: u32 = u32::MAX;
/// The submitter of a page cache's bios (writeback, readahead): no process of the run.
pub const PAGE_CACHE_PROCESS: u32 = u32::MAX;

/// `q->unplug_delay`: a plugged queue runs by itself after 3 ms.
pub const UNPLUG_DELAY_NS: Nanos = 3_000_000;
/// `q->unplug_thresh`: the fourth queued request runs a plugged queue.
pub const UNPLUG_THRESH: usize = 4;

/// A plugged queue (2.6's `QUEUE_FLAG_PLUGGED`): when its timer runs it, and the request
/// that plugged it (the unplug events are traced on its owner's behalf).
#[derive(Clone, Copy, Debug)]
struct QueuePlug {
    until_ns: Nanos,
    by: Request,
}

/// A bio as the submitter issued it, tracked until all its pieces complete.
#[derive(Clone, Copy, Debug)]
pub struct Bio {
    pub process: u32,
    /// The volume-stack node this piece belongs to, or [`crate::stack::NO_NODE`] for a bio
    /// issued straight to this device.
    pub node: u32,
    /// The page-cache I/O this piece belongs to ([`crate::stack::NO_TAG`] if none).
    pub tag: u32,
    pub op: Op,
    pub len_bytes: u64,
    pub issue_ns: Nanos,
    /// When its last piece reached the scheduler (after any wait for a request).
    pub submit_ns: Nanos,
    pieces_left: u32,
    /// The group controller's id of this bio ([`NO_CTL`] if it did not pass one).
    ctl: u64,
}

/// No group controller saw the bio.
const NO_CTL: u64 = u64::MAX;

#[derive(Clone, Copy, Debug)]
struct Piece {
    bio: u32,
    next: u32,
}

/// A request in the scheduler or the device: its current shape and its pieces.
#[derive(Clone, Copy, Debug)]
struct Entry {
    rq: Request,
    head: u32,
    tail: u32,
}

/// `BLK_BATCH_REQ` (`q->nr_batching`): requests a "batcher" may allocate past a full pool, up
/// to 1.5 × `nr_requests` (`ioc_set_batching`, `ioc_batching`). A task becomes one when it
/// takes the request that fills the pool, and when it wakes with a free one.
pub const NR_BATCHING: u32 = 32;

/// `BLK_BATCH_TIME`: a batcher stays one this long after it became one (or until its
/// [`NR_BATCHING`] requests are spent; a batcher that has spent none stays one).
pub const BATCH_TIME_NS: Nanos = 20_000_000;

/// `ioc_batching`'s test on a batcher's requests `left`, granted at `since_ns`.
fn still_batching(left: u32, since_ns: Nanos, now_ns: Nanos) -> bool {
    left == NR_BATCHING || (left > 0 && now_ns < since_ns + BATCH_TIME_NS)
}

/// A task asleep in `get_request_wait`, and the bios it will place once woken. The task is
/// the bios' issuing thread (`Owner::pid`): page-cache I/O of every task (readahead, the
/// flushers', the journal thread's) comes from the engine's one [`PAGE_CACHE_PROCESS`].
#[derive(Debug)]
struct Sleeper {
    /// The engine's submitter, told when the task has placed all its bios.
    process: u32,
    pid: u32,
    bios: VecDeque<Pending>,
}

/// A request built from a plug entry, waiting for a free request slot.
#[derive(Clone, Copy, Debug)]
struct Pending {
    rq: Request,
    head: u32,
    tail: u32,
}

/// A bio blk-throttle holds, with what `plug_bio` needs when it lets it go.
#[derive(Clone, Copy, Debug)]
struct Throttled {
    ctl: u64,
    process: u32,
    node: u32,
    tag: u32,
    op: Op,
    offset_bytes: u64,
    len_bytes: u64,
    flags: BioFlags,
    owner: Owner,
    issue_ns: Nanos,
}

impl Throttled {
    /// The bio as a request `id` entering the block layer at `submit_ns`.
    fn request(&self, id: RequestId, submit_ns: Nanos) -> Request {
        let (op, off, len) = (self.op, self.offset_bytes, self.len_bytes);
        Request::of_bio(id, op, off, len, self.flags, self.owner, submit_ns)
    }
}

/// Counters in the spirit of `/sys/block/<dev>/stat`, for fio's `disk_util`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskCounters {
    /// Requests completed, per direction (read, write).
    pub ios: [u64; 2],
    /// Bios merged into another request (plug or scheduler), per direction.
    pub merges: [u64; 2],
    /// Sectors completed, per direction.
    pub sectors: [u64; 2],
    /// Sum over requests of time from insert to completion, per direction.
    pub ticks_ns: [u64; 2],
    /// Time with at least one request in the device.
    pub busy_ns: u64,
    /// Time with the sync requests (the reads, before 2.6.30) congested ([`congestion_on`]
    /// reached, [`congestion_off`] not yet crossed back), by the single-queue block layer's
    /// rule whatever the kernel;
    /// only 2.6.23 to 4.x readahead acts on it.
    pub read_congested_ns: u64,
}

/// The block layer of one device.
pub struct BlockQueue {
    pub scheduler: Box<dyn Scheduler>,
    pub device: Box<dyn Device>,
    max_len_bytes: u64,
    nr_requests: u32,
    queue_depth: u32,
    bios: Slab<Bio>,
    pieces: Slab<Piece>,
    entries: Slab<Entry>,
    /// Requests allocated per pool, async and sync (`[sync as usize]`; writes and reads under
    /// [`Self::lists_by_direction`]): in the scheduler or the device. One pool, or one per
    /// cgroup id while the scheduler schedules groups.
    allocated: Vec<[u32; 2]>,
    /// The kernel counts requests by direction, not by sync and async (before 2.6.30).
    lists_by_direction: bool,
    in_device: u32,
    next_seq: u64,
    plug: Vec<Pending>,
    /// Submitters sleeping for a request slot, per pool, async and sync, in the order they
    /// fell asleep (`rl->wait[is_sync]`, an exclusive wait queue), each with the bios it has
    /// yet to place: a task sleeps on one bio and submits the rest after it wakes.
    waiting: Vec<[VecDeque<Sleeper>; 2]>,
    /// Per pool, async and sync: the pool filled up and has not had a request freed below
    /// `nr_requests` since (`blk_queue_full`); only batchers and `ELV_MQUEUE_MUST` allocate.
    full: Vec<[bool; 2]>,
    /// Batchers: task (`Owner::pid`) → requests left to it and when it became one
    /// (`ioc->nr_batch_requests`, `ioc->last_waited`; the kernel keeps them per I/O context
    /// for every queue, elevator per queue).
    batchers: BTreeMap<u32, (u32, Nanos)>,
    completions: Vec<Completion>,
    busy_since_ns: Option<Nanos>,
    pub counters: DiskCounters,
    /// A device event is in the engine's queue for this time.
    pub armed_device_ns: Option<Nanos>,
    /// A scheduler timer is in the engine's queue for this time.
    pub armed_timer_ns: Option<Nanos>,
    /// The scheduler (or blk-throttle) asked to be called again at this time.
    pub wanted_timer_ns: Option<Nanos>,
    /// cgroup v2 `io.max` or `io.latency` on this device, if any cgroup has them here.
    control: Option<Box<dyn Controller>>,
    /// Bios the controller holds, and those it released that have not completed.
    throttled: BTreeMap<u64, Throttled>,
    ctl_below: BTreeMap<u64, elevator_control::Bio>,
    next_throttled: u64,
    released: Vec<elevator_control::Bio>,
    /// Tags of page-cache bios ([`PAGE_CACHE_PROCESS`]) the controller let go since the
    /// engine last looked ([`BlockQueue::take_page_cache_released`]).
    page_cache_released: Vec<u32>,
    /// The event sink (`--write-blktrace`), if the run traces.
    trace: Option<Box<Recorder>>,
    /// The scheduler's decisions (`--trace-decisions`), if the run records them.
    decisions: Option<Box<DecisionLog>>,
    /// How many dispatches each of the scheduler's reasons (`last_decision`) gave, in the
    /// order first seen; at most [`MAX_DECISION_REASONS`].
    pub decision_counts: Vec<(&'static str, u64)>,
    /// The kernel plugs whole queues (before 2.6.39) and the device is rotational.
    queue_plugging: bool,
    /// The queue's plug, while it is plugged.
    queue_plug: Option<QueuePlug>,
    /// The plug being flushed holds page-cache I/O that may plug the queue.
    lazy_submit: bool,
    /// When the scheduler last asked to be called again (its idle or anticipation timer).
    sched_timer_ns: Option<Nanos>,
    /// The scheduler an `ioscheduler=` switch put in, waiting for the queue to empty (the
    /// kernel freezes the queue: no new request enters until those in it completed).
    next_scheduler: Option<Box<dyn Scheduler>>,
    /// Since when the sync requests (the reads, before 2.6.30) have been congested
    /// (`blk_set_queue_congested(q, BLK_RW_SYNC)`), while they are: the root pool's reached
    /// [`congestion_on`] and have not yet fallen below [`congestion_off`].
    congested_since_ns: Option<Nanos>,
    /// The congestion changed since the engine last asked ([`Self::take_congestion_change`]).
    congestion_changed: bool,
}

/// `queue_congestion_on_threshold`: sync requests at which a queue is congested
/// (`blk_queue_congestion_threshold`: 7/8 of `nr_requests`, plus one).
pub fn congestion_on(nr_requests: u32) -> u32 {
    (nr_requests - nr_requests / 8 + 1).min(nr_requests)
}

/// `queue_congestion_off_threshold`: below this many it is not any more (`nr_requests` less
/// an eighth and a sixteenth, less one; at least one).
pub fn congestion_off(nr_requests: u32) -> u32 {
    nr_requests.saturating_sub(nr_requests / 8 + nr_requests / 16 + 1).max(1)
}

/// Most distinct decision reasons counted per device; a scheduler has a few dozen at most.
pub const MAX_DECISION_REASONS: usize = 256;

/// Most bytes of decision lines one device keeps (`--trace-decisions`); past them the log
/// stops and says so.
pub const MAX_DECISION_LOG_BYTES: usize = 256 << 20;

/// One JSON line per request the scheduler dispatched, with its reason
/// (`elevator_sched::trace::decision_line`, the format `elevator ctl trace` writes too).
#[derive(Debug, Default)]
pub struct DecisionLog {
    pub device: String,
    pub text: String,
    /// The log reached [`MAX_DECISION_LOG_BYTES`] and stopped.
    pub truncated: bool,
}

impl BlockQueue {
    pub fn new(
        scheduler: Box<dyn Scheduler>,
        device: Box<dyn Device>,
        nr_requests: u32,
        max_sectors_kb: u32,
    ) -> BlockQueue {
        let queue_depth = device.queue_depth().max(1);
        BlockQueue {
            scheduler,
            device,
            max_len_bytes: u64::from(max_sectors_kb) * 1024,
            nr_requests: nr_requests.max(1),
            queue_depth,
            bios: Slab::new(),
            pieces: Slab::new(),
            entries: Slab::new(),
            allocated: Vec::new(),
            lists_by_direction: false,
            in_device: 0,
            next_seq: 0,
            plug: Vec::new(),
            waiting: Vec::new(),
            full: Vec::new(),
            batchers: BTreeMap::new(),
            completions: Vec::new(),
            busy_since_ns: None,
            counters: DiskCounters::default(),
            armed_device_ns: None,
            armed_timer_ns: None,
            wanted_timer_ns: None,
            control: None,
            throttled: BTreeMap::new(),
            ctl_below: BTreeMap::new(),
            next_throttled: 0,
            page_cache_released: Vec::new(),
            released: Vec::new(),
            trace: None,
            decisions: None,
            decision_counts: Vec::new(),
            queue_plugging: false,
            queue_plug: None,
            lazy_submit: false,
            sched_timer_ns: None,
            next_scheduler: None,
            congested_since_ns: None,
            congestion_changed: false,
        }
    }

    /// Whether the queue's sync requests are congested now (`bdi_read_congested`).
    pub fn read_congested(&self) -> bool {
        self.congested_since_ns.is_some()
    }

    /// The congestion state, if it changed since the last call.
    pub fn take_congestion_change(&mut self) -> Option<bool> {
        std::mem::take(&mut self.congestion_changed).then_some(self.read_congested())
    }

    /// `get_request` sets the congestion once an allocation brings the sync requests to
    /// [`congestion_on`]; `__freed_request` clears it once they fall below
    /// [`congestion_off`]. Only the root pool counts (blk-cgroup's per-group request lists
    /// never set it, `blk_rq_should_init_elevator`'s `rl == &q->root_rl`).
    fn update_congestion(&mut self, now_ns: Nanos) {
        let sync = self.allocated.first().map_or(0, |a| a[1]);
        match self.congested_since_ns {
            None if sync >= congestion_on(self.nr_requests) => {
                self.congested_since_ns = Some(now_ns);
                self.congestion_changed = true;
            }
            Some(since) if sync < congestion_off(self.nr_requests) => {
                self.congested_since_ns = None;
                self.counters.read_congested_ns += now_ns.saturating_sub(since);
                self.congestion_changed = true;
            }
            _ => {}
        }
    }

    /// The scheduler the queue runs, or will once a switch under way is done.
    pub fn scheduler_after_switch(&self) -> &str {
        self.next_scheduler.as_ref().unwrap_or(&self.scheduler).name()
    }

    /// `elevator_switch`: the queue freezes (new requests wait as for a free slot) until the
    /// requests in it completed, then runs `next`. An empty queue switches at once.
    pub fn switch_scheduler(&mut self, next: Box<dyn Scheduler>) {
        self.next_scheduler = Some(next);
        if self.allocated() == 0 {
            self.finish_switch();
        }
    }

    /// The queue is empty: the new scheduler takes over, and those who waited to enter are
    /// sorted into its request pools (which may be per cgroup).
    fn finish_switch(&mut self) {
        let Some(next) = self.next_scheduler.take() else { return };
        self.scheduler = next;
        if let Some(c) = self.control.as_mut() {
            c.scheduler_switched(self.scheduler.name());
        }
        self.sched_timer_ns = None;
        self.wanted_timer_ns = None;
        let waiting: Vec<Sleeper> = std::mem::take(&mut self.waiting)
            .into_iter()
            .flat_map(|[a, s]| s.into_iter().chain(a))
            .collect();
        self.allocated.clear();
        self.full.clear();
        for sleeper in waiting {
            for pending in sleeper.bios {
                self.sleep(sleeper.process, pending);
            }
        }
    }

    /// Counts requests by direction (reads, writes) instead of sync and async, as kernels
    /// before 2.6.30 did: the reads' list is then the one whose congestion readers see.
    pub fn set_request_lists_by_direction(&mut self, on: bool) {
        self.lists_by_direction = on;
    }

    /// Turns 2.6.x queue plugging on: the kernel predates on-stack plugging (2.6.39) and
    /// `queue_should_plug` holds for the device.
    pub fn set_queue_plugging(&mut self, on: bool) {
        self.queue_plugging = on;
    }

    /// Runs a plugged queue (`generic_unplug_device`, traced as `U`): the next
    /// [`BlockQueue::kick`] dispatches.
    pub fn run_queue(&mut self, now_ns: Nanos) {
        if let Some(plug) = self.queue_plug.take() {
            self.trace_unplug(&plug, false, now_ns);
        }
    }

    /// `U` (or `UT` from the timer) with the requests the plug held.
    fn trace_unplug(&mut self, plug: &QueuePlug, timer: bool, now_ns: Nanos) {
        let depth = self.scheduler.queued() as u32;
        let act = if timer { Act::UnplugTimer { depth } } else { Act::Unplug { depth } };
        self.trace(act, &plug.by, now_ns);
    }

    /// The engine's timer for this queue fired at `now_ns`: if it was the scheduler's (CFQ's
    /// idle slice timer, AS's anticipation timer), the scheduler runs the queue
    /// (`cfq_kick_queue`, `as_work_handler`: `blk_start_queueing`); an unplug timer made
    /// stale by an earlier unplug (`del_timer`) runs nothing.
    pub fn timer_fired(&mut self, now_ns: Nanos) {
        if self.sched_timer_ns.is_some_and(|t| t <= now_ns) {
            self.sched_timer_ns = None;
            self.run_queue(now_ns);
        }
    }

    /// The last task of I/O context `io_context` exited (`exit_io_context`): the scheduler,
    /// and one waiting to replace it, let go of it. True if the scheduler wants the queue run
    /// now (`cfq_schedule_dispatch` after ending the exited process's slice).
    pub fn task_exited(&mut self, io_context: u32, now_ns: Nanos) -> bool {
        if let Some(next) = self.next_scheduler.as_mut() {
            next.exited(io_context, now_ns);
        }
        let run = self.scheduler.exited(io_context, now_ns);
        if run {
            self.run_queue(now_ns);
        }
        run
    }

    /// Whether the queue is plugged (for tests and traces).
    pub fn plugged(&self) -> bool {
        self.queue_plug.is_some()
    }

    /// Records this block layer's events into `recorder` from now on.
    pub fn set_trace(&mut self, recorder: Recorder) {
        self.trace = Some(Box::new(recorder));
    }

    /// Counts the scheduler's reason for the request it just dispatched. Reasons are static
    /// strings and runs of one reason are the rule, so the last one is tried first.
    fn count_decision(&mut self) {
        let reason = self.scheduler.last_decision();
        let counts = &mut self.decision_counts;
        if let Some(last) = counts.last_mut().filter(|c| std::ptr::eq(c.0, reason)) {
            last.1 += 1;
        } else if let Some(c) = counts.iter_mut().find(|c| c.0 == reason) {
            c.1 += 1;
        } else if counts.len() < MAX_DECISION_REASONS {
            counts.push((reason, 1));
        }
    }

    /// Starts recording the scheduler's decisions for device `device`.
    pub fn set_decision_log(&mut self, device: &str) {
        self.decisions =
            Some(Box::new(DecisionLog { device: device.into(), ..Default::default() }));
    }

    /// The decision log, with what it recorded; recording stops.
    pub fn take_decision_log(&mut self) -> Option<DecisionLog> {
        self.decisions.take().map(|d| *d)
    }

    /// The recorder, with what it recorded; tracing stops.
    pub fn take_trace(&mut self) -> Option<Recorder> {
        self.trace.take().map(|r| *r)
    }

    /// Hands an event about `rq` to the recorder, if there is one.
    #[inline]
    fn trace(&mut self, act: Act, rq: &Request, now_ns: Nanos) {
        if let Some(t) = self.trace.as_deref_mut() {
            t.record(&BlockEvent::of(act, rq, now_ns));
        }
    }

    /// Puts a cgroup v2 controller (`io.max`, `io.latency`) on this device.
    pub fn set_control(&mut self, control: Box<dyn Controller>) {
        self.control = Some(control);
    }

    /// Per-cgroup counters of the device's controller, if any.
    pub fn control_counters(&self) -> Vec<elevator_control::GroupCounters> {
        self.control.as_ref().map(|t| t.counters()).unwrap_or_default()
    }

    /// The controller's dispatch work: the bios it lets go now are submitted, each in a plug
    /// of its own, by no process (a sleeper for a request slot is the worker, not the bio's
    /// process). Called from the device's timer and after completions.
    pub fn throttle_tick(&mut self, now_ns: Nanos) {
        for h in self.throttle_release(now_ns) {
            self.plug_bio_at(h, now_ns);
            self.unplug(u32::MAX, now_ns);
        }
    }

    fn throttle_release(&mut self, now_ns: Nanos) -> Vec<Throttled> {
        let Some(t) = self.control.as_mut() else { return Vec::new() };
        let mut out = std::mem::take(&mut self.released);
        t.release(now_ns, &mut out);
        let mut held = Vec::with_capacity(out.len());
        for b in out.drain(..) {
            let id = b.request.id.0;
            let h = self.throttled.remove(&id).expect("the controller holds only ours");
            if h.process == PAGE_CACHE_PROCESS {
                self.page_cache_released.push(h.tag);
            }
            held.push(h);
            self.ctl_below.insert(id, b);
        }
        self.released = out;
        held
    }

    /// Splits a bio into pieces and adds them to the plug, merging with contiguous plugged
    /// requests. Nothing reaches the scheduler until [`BlockQueue::unplug`].
    #[allow(clippy::too_many_arguments)]
    pub fn plug_bio(
        &mut self,
        process: u32,
        node: u32,
        tag: u32,
        op: Op,
        offset_bytes: u64,
        len_bytes: u64,
        flags: BioFlags,
        owner: Owner,
        now_ns: Nanos,
    ) -> bool {
        let mut h = Throttled {
            ctl: NO_CTL,
            process,
            node,
            tag,
            op,
            offset_bytes,
            len_bytes,
            flags,
            owner,
            issue_ns: now_ns,
        };
        if let (Some(t), true) = (self.control.as_mut(), len_bytes > 0) {
            let id = self.next_throttled;
            h.ctl = id;
            self.next_throttled += 1;
            let request = h.request(RequestId(id), now_ns);
            t.submit(elevator_control::Bio { device: 0, request }, now_ns);
            self.throttled.insert(id, h);
            // What goes now joins this submitter's plug.
            for h in self.throttle_release(now_ns) {
                self.plug_bio_at(h, now_ns);
            }
            // Let go at once, it is reported released all the same: the page cache ignores
            // a release of what it never heard was held.
            return self.throttled.contains_key(&id);
        }
        self.plug_bio_at(h, now_ns);
        false
    }

    /// A writer was throttled in `balance_dirty_pages` for this device at `at_ns`: the
    /// device's policies hear of it (writeback throttling's `wb_recent_wait`).
    pub fn note_dirty_sleep(&mut self, at_ns: Nanos) {
        if let Some(c) = self.control.as_mut() {
            c.note_dirty_sleep(at_ns);
        }
    }

    /// Tags of the page-cache bios the controller let go since the last call: they take
    /// request slots now ([`elevator_mm::Vm::io_released`]).
    pub fn take_page_cache_released(&mut self, into: &mut Vec<u32>) {
        into.append(&mut self.page_cache_released);
    }

    /// Splits and plugs a bio issued at `h.issue_ns` (earlier than `now_ns` if blk-throttle
    /// held it).
    fn plug_bio_at(&mut self, h: Throttled, now_ns: Nanos) {
        let Throttled { ctl, process, node, tag, op, offset_bytes, len_bytes, issue_ns, .. } = h;
        let pieces = if len_bytes == 0 { 1 } else { len_bytes.div_ceil(self.max_len_bytes) as u32 };
        let bio = self.bios.insert(Bio {
            node,
            tag,
            process,
            op,
            len_bytes,
            issue_ns,
            submit_ns: now_ns,
            pieces_left: pieces,
            ctl,
        });
        let mut offset = offset_bytes;
        let end = offset_bytes + len_bytes;
        let whole = h.request(RequestId(u64::MAX), now_ns);
        self.trace(Act::Queue, &whole, now_ns);
        for i in 0..pieces {
            let len = (end - offset).min(self.max_len_bytes);
            let piece = self.pieces.insert(Piece { bio, next: NONE });
            let rq = Request { offset_bytes: offset, len_bytes: len, ..whole };
            offset += len;
            if i + 1 < pieces {
                let next_sector = offset / SECTOR_BYTES;
                self.trace(Act::Split { next_sector }, &rq, now_ns);
            }
            if self.plug_merge(&rq, piece, now_ns) {
                continue;
            }
            // Page-cache I/O on kernels that plug whole queues: the queue's plug is traced.
            if self.plug.is_empty() && !self.lazy_submit {
                self.trace(Act::Plug, &rq, now_ns);
            }
            self.plug.push(Pending { rq, head: piece, tail: piece });
        }
    }

    /// `blk_attempt_plug_merge`: back or front merge into a plugged request of the same owner.
    fn plug_merge(&mut self, rq: &Request, piece: u32, now_ns: Nanos) -> bool {
        if rq.op == Op::Flush || rq.op == Op::Discard {
            return false;
        }
        for i in (0..self.plug.len()).rev() {
            let p = self.plug[i];
            if p.rq.op != rq.op
                || p.rq.sync != rq.sync
                || p.rq.len_bytes + rq.len_bytes > self.max_len_bytes
            {
                continue;
            }
            if p.rq.end_bytes() == rq.offset_bytes {
                self.pieces.get_mut(p.tail).next = piece;
                let e = &mut self.plug[i];
                e.tail = piece;
                e.rq.len_bytes += rq.len_bytes;
                self.counters.merges[dir(rq.op)] += 1;
                self.trace(Act::BackMerge, rq, now_ns);
                return true;
            }
            if rq.end_bytes() == p.rq.offset_bytes {
                self.pieces.get_mut(piece).next = p.head;
                let e = &mut self.plug[i];
                e.head = piece;
                e.rq.offset_bytes = rq.offset_bytes;
                e.rq.len_bytes += rq.len_bytes;
                self.counters.merges[dir(rq.op)] += 1;
                self.trace(Act::FrontMerge, rq, now_ns);
                return true;
            }
        }
        false
    }

    /// Flushes the plug into the scheduler. Returns false if the submitter had to wait for a
    /// request slot (the rest of its plug waits with it).
    /// A sync submitter's unplug also runs a plugged queue (`blk_run_address_space`).
    pub fn unplug(&mut self, process: u32, now_ns: Nanos) -> bool {
        let placed = self.flush_plug(process, now_ns);
        self.run_queue(now_ns);
        placed
    }

    /// The bios plugged next, up to [`BlockQueue::unplug_lazy`], are page-cache I/O.
    pub fn begin_lazy(&mut self) {
        self.lazy_submit = self.queue_plugging;
    }

    /// Flushes the plug of page-cache I/O (readahead, background writeback): with queue
    /// plugging, a request that finds the scheduler's queue empty plugs the queue.
    pub fn unplug_lazy(&mut self, process: u32, now_ns: Nanos) -> bool {
        self.lazy_submit = self.queue_plugging;
        let placed = self.flush_plug(process, now_ns);
        self.lazy_submit = false;
        if !placed {
            // get_request_wait runs the queue before the submitter sleeps.
            self.run_queue(now_ns);
        }
        placed
    }

    fn flush_plug(&mut self, process: u32, now_ns: Nanos) -> bool {
        let plug = std::mem::take(&mut self.plug);
        if let Some(first) = plug.first().filter(|_| !self.lazy_submit) {
            let depth = plug.len() as u32;
            self.trace(Act::Unplug { depth }, &first.rq, now_ns);
        }
        let mut blocked = false;
        for pending in plug.iter().copied() {
            // Behind its own earlier pieces once one had to sleep.
            if blocked || !self.place(pending, now_ns) {
                blocked = true;
                self.trace(Act::SleepRq, &pending.rq, now_ns);
                self.sleep(process, pending);
            }
        }
        self.plug = plug;
        self.plug.clear();
        !blocked
    }

    /// `ioc_set_batching`: task `pid` may take [`NR_BATCHING`] requests past a full pool.
    fn set_batching(&mut self, pid: u32, now_ns: Nanos) {
        self.batchers.insert(pid, (NR_BATCHING, now_ns));
    }

    /// `ioc_batching`: a batcher that has spent none of its requests, or has some left within
    /// [`BATCH_TIME_NS`] of becoming one.
    fn batching(&self, pid: u32, now_ns: Nanos) -> bool {
        self.batchers.get(&pid).is_some_and(|&(left, since)| still_batching(left, since, now_ns))
    }

    /// An allocation by a batcher spends one of its requests (`ioc->nr_batch_requests--`).
    fn spend_batch(&mut self, pid: u32, now_ns: Nanos) {
        if let Some((left, since)) = self.batchers.get_mut(&pid) {
            if still_batching(*left, *since, now_ns) {
                *left -= 1;
            }
        }
    }

    /// The task issuing `pending` (through `process`) sleeps for a request slot for it, after
    /// its bios already asleep: at the tail of the pool's sleepers unless it is among them.
    fn sleep(&mut self, process: u32, pending: Pending) {
        let (pool, class) = self.pool(&pending.rq);
        let pid = pending.rq.owner.pid;
        let sleepers = &mut self.waiting[pool][class];
        match sleepers.iter_mut().find(|s| s.process == process && s.pid == pid) {
            Some(s) => s.bios.push_back(pending),
            None => sleepers.push_back(Sleeper { process, pid, bios: VecDeque::from([pending]) }),
        }
    }

    /// Merges or inserts a request (`__make_request`: `elv_merge`, else `get_request`); false
    /// if the task gets no request slot and must sleep.
    fn place(&mut self, pending: Pending, now_ns: Nanos) -> bool {
        if self.next_scheduler.is_some() {
            // Frozen for a scheduler switch (blk_queue_enter waits).
            return false;
        }
        let mut rq = pending.rq;
        rq.submit_ns = now_ns;
        if rq.op != Op::Flush {
            if let Some(merged) = self.scheduler.try_merge(&rq, self.max_len_bytes, now_ns) {
                let into = (merged.into.0 & 0xffff_ffff) as u32;
                let tail = self.entries.get(into).tail;
                self.pieces.get_mut(tail).next = pending.head;
                self.entries.get_mut(into).tail = pending.tail;
                self.counters.merges[dir(rq.op)] += 1;
                let act = if merged.front { Act::FrontMerge } else { Act::BackMerge };
                self.trace(act, &rq, now_ns);
                self.mark_submitted(pending.head, now_ns);
                return true;
            }
        }
        let (pool, class) = self.pool(&rq);
        // get_request: the request that fills the pool marks it full and makes its task a
        // batcher; a full pool takes only batchers' requests and those the scheduler says
        // must have one (elv_may_queue's ELV_MQUEUE_MUST), up to half as many again as
        // nr_requests.
        let must = self.scheduler.must_queue(&rq.owner, rq.sync, now_ns);
        let pid = rq.owner.pid;
        let allocated = self.allocated[pool][class];
        if allocated + 1 >= self.nr_requests {
            if !self.full[pool][class] {
                self.set_batching(pid, now_ns);
                self.full[pool][class] = true;
            } else if !must && !self.batching(pid, now_ns) {
                return false;
            }
        }
        if allocated >= self.nr_requests + self.nr_requests / 2 {
            return false;
        }
        self.spend_batch(pid, now_ns);
        self.allocated[pool][class] += 1;
        if pool == 0 && class == 1 {
            self.update_congestion(now_ns);
        }
        let slot = self.entries.insert(Entry { rq, head: pending.head, tail: pending.tail });
        self.next_seq += 1;
        rq.id = RequestId((self.next_seq << 32) | u64::from(slot));
        self.entries.get_mut(slot).rq = rq;
        self.mark_submitted(pending.head, now_ns);
        self.trace(Act::GetRq, &rq, now_ns);
        if self.lazy_submit && self.queue_plug.is_none() && self.scheduler.queued() == 0 {
            // blk_plug_device: the queue was empty.
            self.queue_plug = Some(QueuePlug { until_ns: now_ns + UNPLUG_DELAY_NS, by: rq });
            self.trace(Act::Plug, &rq, now_ns);
        }
        self.trace(Act::Insert, &rq, now_ns);
        self.scheduler.insert(rq, now_ns);
        if self.scheduler.take_queue_run()
            || (self.queue_plug.is_some() && self.scheduler.queued() >= UNPLUG_THRESH)
        {
            self.run_queue(now_ns);
        }
        true
    }

    fn mark_submitted(&mut self, head: u32, now_ns: Nanos) {
        let mut p = head;
        while p != NONE {
            let piece = *self.pieces.get(p);
            self.bios.get_mut(piece.bio).submit_ns = now_ns;
            p = piece.next;
        }
    }

    /// Pulls requests from the scheduler while the device has room. Sets `wanted_timer_ns` if
    /// the scheduler asked to be called back.
    pub fn kick(&mut self, now_ns: Nanos) {
        self.wanted_timer_ns = None;
        if let Some(plug) = self.queue_plug {
            if now_ns < plug.until_ns {
                // Plugged: nothing goes until something runs the queue or the timer does.
                self.wanted_timer_ns = Some(plug.until_ns);
            } else {
                self.queue_plug = None; // blk_unplug_timeout
                self.trace_unplug(&plug, true, now_ns);
            }
        }
        if self.queue_plug.is_none() {
            // The scheduler is asked afresh: a timer it wanted before is its no more.
            self.sched_timer_ns = None;
        }
        while self.queue_plug.is_none() && self.in_device < self.queue_depth {
            match self.scheduler.dispatch(now_ns) {
                Dispatch::Request(rq) => {
                    let slot = (rq.id.0 & 0xffff_ffff) as u32;
                    let entry = self.entries.get_mut(slot);
                    debug_assert_eq!(
                        entry.rq.id, rq.id,
                        "dispatched a request the block layer does not know"
                    );
                    entry.rq = rq;
                    self.trace(Act::Issue, &rq, now_ns);
                    self.count_decision();
                    if let Some(d) = self.decisions.as_deref_mut() {
                        if d.text.len() < MAX_DECISION_LOG_BYTES {
                            let s = &self.scheduler;
                            elevator_sched::trace::decision_line(
                                &mut d.text,
                                now_ns,
                                &d.device,
                                s.name(),
                                s.last_decision(),
                                &rq,
                                s.queued(),
                            );
                        } else {
                            d.truncated = true;
                        }
                    }
                    self.in_device += 1;
                    if self.busy_since_ns.is_none() {
                        self.busy_since_ns = Some(now_ns);
                    }
                    self.device.submit(
                        Command {
                            id: rq.id,
                            op: rq.op,
                            offset_bytes: rq.offset_bytes,
                            len_bytes: rq.len_bytes,
                            fua: rq.fua,
                        },
                        now_ns,
                    );
                    if let Some(c) = self.control.as_mut() {
                        // The controller's bios in this request reach the driver now.
                        let mut p = self.entries.get(slot).head;
                        while p != NONE {
                            let piece = *self.pieces.get(p);
                            let ctl = self.bios.get(piece.bio).ctl;
                            if let Some(b) = self.ctl_below.get(&ctl) {
                                c.dispatched(b, now_ns);
                            }
                            p = piece.next;
                        }
                    }
                }
                Dispatch::WaitUntil { until_ns } => {
                    self.wanted_timer_ns = Some(until_ns.max(now_ns));
                    self.sched_timer_ns = self.wanted_timer_ns;
                    break;
                }
                Dispatch::Empty => break,
            }
        }
        if let Some(t) = self.control.as_ref().and_then(|t| t.next_timer_ns()) {
            let t = t.max(now_ns);
            self.wanted_timer_ns = Some(self.wanted_timer_ns.map_or(t, |w| w.min(t)));
        }
    }

    /// Runs the device to `now_ns`; completed bios are appended to `done`, and processes that
    /// were waiting for a request slot and now got all of theirs to `unblocked`.
    pub fn complete(&mut self, now_ns: Nanos, done: &mut Vec<Bio>, unblocked: &mut Vec<u32>) {
        let mut completions = std::mem::take(&mut self.completions);
        self.device.advance(now_ns, &mut completions);
        if !completions.is_empty() {
            // The driver's completion runs the queue (blk_run_queue removes the plug).
            self.run_queue(now_ns);
        }
        for c in completions.drain(..) {
            let c_done = c.done_ns;
            let slot = (c.id.0 & 0xffff_ffff) as u32;
            let entry = self.entries.remove(slot);
            debug_assert_eq!(entry.rq.id, c.id);
            self.trace(Act::Complete, &entry.rq, c_done);
            self.scheduler.completed(&entry.rq, c.done_ns);
            let (pool, class) = self.pool(&entry.rq);
            self.allocated[pool][class] -= 1;
            if self.allocated[pool][class] < self.nr_requests {
                // __freed_request: blk_clear_queue_full (and wake a sleeper, below).
                self.full[pool][class] = false;
            }
            if pool == 0 && class == 1 {
                self.update_congestion(now_ns);
            }
            self.in_device -= 1;
            let d = dir(entry.rq.op);
            self.counters.ios[d] += 1;
            self.counters.sectors[d] += entry.rq.len_bytes / SECTOR_BYTES;
            self.counters.ticks_ns[d] += c.done_ns.saturating_sub(entry.rq.submit_ns);
            let mut p = entry.head;
            while p != NONE {
                let piece = self.pieces.remove(p);
                let bio = self.bios.get_mut(piece.bio);
                bio.pieces_left -= 1;
                if bio.pieces_left == 0 {
                    let bio = self.bios.remove(piece.bio);
                    if let Some(b) = self.ctl_below.remove(&bio.ctl) {
                        let c = self.control.as_mut().expect("controlled bios have a controller");
                        c.completed(&b, c_done);
                    }
                    done.push(bio);
                }
                p = piece.next;
            }
        }
        self.completions = completions;
        if self.next_scheduler.is_some() && self.allocated() == 0 {
            self.finish_switch();
        }
        if self.in_device == 0 {
            if let Some(since) = self.busy_since_ns.take() {
                self.counters.busy_ns += now_ns - since;
            }
        }
        // Wake sleepers of each pool in FIFO order while slots are free (`__freed_request`
        // wakes one exclusive waiter per request freed below `nr_requests`). A woken task is a
        // batcher (get_request_wait's ioc_set_batching): it places its bios, up to
        // NR_BATCHING requests, and sleeps again at the tail if some are left.
        for pool in 0..self.waiting.len() {
            for class in [1, 0] {
                let mut turns = self.waiting[pool][class].len();
                while turns > 0 && self.allocated[pool][class] < self.nr_requests {
                    turns -= 1;
                    let Some(mut sleeper) = self.waiting[pool][class].pop_front() else { break };
                    self.set_batching(sleeper.pid, now_ns);
                    while let Some(&pending) = sleeper.bios.front() {
                        if !self.place(pending, now_ns) {
                            break;
                        }
                        sleeper.bios.pop_front();
                    }
                    let process = sleeper.process;
                    if sleeper.bios.is_empty() {
                        let still = self
                            .waiting
                            .iter()
                            .flatten()
                            .any(|w| w.iter().any(|s| s.process == process));
                        if !still {
                            unblocked.push(process);
                        }
                    } else {
                        self.waiting[pool][class].push_back(sleeper);
                    }
                }
            }
        }
        if self.control.is_some() {
            // The controller may let more go now that some of its bios completed.
            self.throttle_tick(now_ns);
        }
    }

    /// Requests allocated (in scheduler or device), every pool together.
    pub fn allocated(&self) -> u32 {
        self.allocated.iter().map(|a| a[0] + a[1]).sum()
    }

    /// The request pool and class (async 0, sync 1; before 2.6.30 writes 0, reads 1) a request
    /// draws from; makes sure it exists.
    fn pool(&mut self, rq: &Request) -> (usize, usize) {
        let pool = if self.scheduler.groups_active() { rq.owner.cgroup as usize } else { 0 };
        if pool >= self.allocated.len() {
            self.allocated.resize(pool + 1, [0; 2]);
            self.full.resize(pool + 1, [false; 2]);
            self.waiting.resize_with(pool + 1, Default::default);
        }
        let class = if self.lists_by_direction { rq.op.is_read() } else { rq.sync };
        (pool, usize::from(class))
    }

    /// True when nothing is queued, in flight or waiting.
    pub fn idle(&self) -> bool {
        self.allocated() == 0
            && self.waiting.iter().flatten().all(VecDeque::is_empty)
            && self.plug.is_empty()
            && self.throttled.is_empty()
    }

    /// Closes the busy-time account at the end of the simulation.
    pub fn finish(&mut self, now_ns: Nanos) {
        if let Some(since) = self.busy_since_ns.take() {
            self.counters.busy_ns += now_ns - since;
        }
        if let Some(since) = self.congested_since_ns.take() {
            self.counters.read_congested_ns += now_ns.saturating_sub(since);
        }
    }
}

#[inline]
fn dir(op: Op) -> usize {
    usize::from(op.is_write())
}
