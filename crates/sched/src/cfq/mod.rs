//! CFQ, the Completely Fair Queueing scheduler, as in Linux 2.6.38 `block/cfq-iosched.c`
//! (the version with workload service trees, blkio group scheduling and, from 2.6.37,
//! `group_idle`), rewritten from a reading of that code, with switches for the rules of other
//! releases: `rules_3_2` (3.2 to 3.5), `workload_trees` 0 (2.6.31) and `rules_2_6_32`.
//! 2.6.33–2.6.37 differ from 2.6.38 in rules not modelled: no "idle queue should not be idle"
//! preemption, no whole slice left to a queue preempted before its slice began, no seeky
//! queue losing its idle window when the device outruns it, no `cfq_should_wait_busy` test of
//! queued requests, no `original_prio` test in the workload choice, and (2.6.33) `quantum`
//! in flight per queue, unlimited for the only busy one.
//!
//! # The algorithm
//!
//! Every process (I/O context) gets a **sync queue** per cgroup; async (buffered write)
//! requests go to one **async queue per priority class and level** per cgroup. Each queue keeps
//! its requests twice: sorted by sector (the next one is picked by [`queue::choose_req`], the
//! kernel's `cfq_choose_req`, allowing backward seeks of up to `back_seek_max` at a cost of
//! `back_seek_penalty` × the distance) and in a FIFO with deadline `fifo_expire_sync/async`
//! (looked at once per slice, `cfq_check_fifo`).
//!
//! Queues take turns owning the disk for a **time slice** (`cfq_prio_slice`):
//! `slice + slice / 5 * (4 - prio)` with `slice` = `slice_sync` or `slice_async`, so level 0
//! gets 180 % and level 7 gets 40 % of the base. With `low_latency` the slice is shrunk so
//! that all busy queues of the class fit into the group's share of the 300 ms target latency
//! (`cfq_scaled_cfqq_slice`), but not below `2 * slice_idle` scaled by priority. The slice is
//! started at the first completion of the queue (`slice_new`), as the kernel does.
//!
//! Busy queues wait on **service trees**, one per class (RT, BE) and workload type (SYNC: has
//! an idle window; SYNC_NOIDLE: seeky or slow-thinking sync queues, idled on only as a whole;
//! ASYNC), plus one for the IDLE class (`service_tree_add`), ordered by a key that is the time
//! they were queued plus a priority offset (`cfq_slice_offset`) plus the unused or overrun part
//! of their last slice (`slice_resid`). Within a group, RT trees go before BE before IDLE; the
//! workload type is chosen by the oldest key (`cfq_choose_wl`) and is given a workload slice
//! proportional to the number of its queues (`choose_service_tree`).
//!
//! **Idling** (`cfq_should_idle`, `cfq_arm_slice_timer`): when the active sync queue runs
//! empty and its last request completes, CFQ keeps the disk idle for `slice_idle` waiting for
//! the process's next (probably close) request, if the queue has an idle window — think time
//! (`ttime_mean`, a 7/8 decaying mean) below `slice_idle` and not seeky (more than 4 of the last
//! 32 requests more than 800 sectors from the previous one) — or if it is the last queue of
//! its service tree. Otherwise, with group scheduling, it idles `group_idle` if it is the only
//! busy queue of its group, so that the group keeps its turn. Idling is `Dispatch::WaitUntil`.
//!
//! **Preemption** (`cfq_should_preempt`): a new request for a queue that is not the active
//! one expires the active slice and puts its queue first if: the active queue is IDLE class;
//! the request is sync and the active queue async; (same group only from here) the active
//! slice is used up; the new queue is RT and the active BE; both are SYNC_NOIDLE and the active
//! one is empty; or the active queue is idling and the request is within 8 MiB of the head.
//! RT is never preempted by non-RT, and IDLE never preempts.
//!
//! **Dispatch limits** (`cfq_may_dispatch`): a queue may have `quantum / 2` requests in
//! flight (`quantum` if it is not about to run out of slice, unlimited if it is the only busy
//! queue); async queues wait while sync requests are in flight, idling sync queues wait for
//! in-flight async requests to drain, and with `low_latency` async depth ramps up with the
//! time since the last delayed sync completion. Async queues also end their slice after
//! `2 * slice_async_rq * (8 - prio)` dispatches (`cfq_prio_to_maxrq`).
//!
//! **Groups** (`CONFIG_CFQ_GROUP_IOSCHED`): each cgroup is a `cfq_group` on one group service
//! tree ordered by `vdisktime` (the hierarchy is *flattened*, as in 2.6.33–2.6.38: a child is
//! a peer of its parent, weighted by its own `blkio.weight`). The leftmost group is served
//! (`cfq_choose_cfqg`) with a group slice of `300 ms * weight / total busy weight`
//! (`cfq_group_slice`); when a queue of it expires the group is charged the slice time the
//! queue used (the allocated slice for an async queue of a group with no sync queue), scaled
//! by `500 / weight` (`cfq_group_served`), and the workload state is saved so it resumes. A
//! group that goes empty leaves the tree and comes back behind the last group
//! (`vdisktime = last + CFQ_IDLE_DELAY`, `cfq_group_service_tree_add`, where the 200 ms is
//! added to a vdisktime shifted by `CFQ_SERVICE_SHIFT`: about 49 µs of service). `cfq_should_wait_busy`
//! extends the slice of a group's only queue by one idle period at its last completion so the
//! group is not dequeued between two requests.
//!
//! **IOPS mode** (2.6.36+, `iops_mode()`): with `slice_idle = 0` on a device that queues
//! commands (`hw_tag`, estimated as `cfq_update_hw_tag` does: after 50 samples with more than
//! `CFQ_HW_QUEUE_MIN` = 5 requests queued or in the driver, whether the driver ever held 5 or
//! more), disk time cannot be measured per queue, so a group is charged the number of requests
//! its queue dispatched in the slice instead of the time it used (one request counts as one
//! jiffy, 1 ms, as the kernel adds both to the same `vdisktime`). This is the mode the
//! kernel's blkio documentation recommends for fast devices, and the one the NBD server's
//! weighted exports use.
//!
//! # Tunables (sysfs units)
//!
//! `quantum` 4 requests; `fifo_expire_sync` 125 ms; `fifo_expire_async` 250 ms;
//! `back_seek_max` 16384 KiB; `back_seek_penalty` 2; `slice_sync` 100 ms; `slice_async`
//! 40 ms; `slice_async_rq` 2; `slice_idle` 8 ms; `group_idle` 8 ms; `low_latency` 1;
//! `group_scheduling` 1 (elevator's own: 0 is CFQ built without group scheduling — every
//! request goes to the root group, cgroups and weights are ignored, and `group_idle` is
//! inert, as in a kernel without `CONFIG_CFQ_GROUP_IOSCHED`); `workload_trees` 1 (elevator's
//! own: 0 is 2.6.31's CFQ: one service tree per class, and that era's rules where they differ
//! — `hw_tag` re-decided every 50 samples, a seeky queue waits only `CFQ_MIN_TT` when it
//! idles, no queue idles while any request is in the driver nor stops idling because the
//! slice has less left than the process thinks, `cfq_dispatch_requests`' limits (`quantum`
//! in flight per queue whatever is left of its slice, more only for the only busy queue, no
//! wait for async requests to drain), `cfq_should_preempt` asking first whether the active
//! slice is used up (then any request preempts it), `cfq_slice_offset` counting every busy
//! queue, and seekiness as a context's mean seek distance over 8192 sectors, `CIC_SEEKY`,
//! which also sets how close a request must be to preempt an idling queue, `cfq_rq_close`,
//! without `group_scheduling`, no `cfq_should_wait_busy` (a used-up slice ends), and
//! `wait_request` kept from the first idling to the slice's end, and no rule keeping other
//! classes from preempting a real-time slice); `rules_2_6_32` 0 (elevator's own: 1 with
//! `workload_trees` 0 is v2.6.32's CFQ, 2.6.31's with that release's changes — the slice
//! residual subtracted from the tree key, no idling when the process thinks longer than the
//! slice has left, an idle-window queue waiting for async requests in the driver to drain,
//! `coop_preempt` (a queue that preempted with a close request does so again only as the only
//! busy queue until the tree gives it a slice), and `low_latency`'s first form: an async queue
//! may have one request in flight per `slice_sync` since the last sync completion,
//! `last_end_sync_rq`, and a seeky context keeps its idle window on a queueing device if it
//! thinks for at most `CFQ_MIN_TT`); `low_latency` has no effect with `workload_trees` 0 and
//! `rules_2_6_32` 0 (2.6.31 had no such knob);
//! `queue_merging` 1 (elevator's own: 0 turns off close cooperators, as before 2.6.30; with
//! `workload_trees` 0 it is 2.6.30–32's switch to a close queue, without merging);
//! `rules_3_2` 0 (elevator's own: 1 with `workload_trees` 1 is 3.2's CFQ, below);
//! `rules_2_6_29` 0 (elevator's own: 1 with `workload_trees` 0 is 2.6.29's CFQ — a dispatch
//! clears `wait_request` and stops the idle timer, a request for the idling queue runs it at
//! once whatever its size, the only busy queue dispatches without limit, a used-up slice ends
//! even with `must_dispatch` set (2.6.29 sets it but never reads it), `cfq_rq_close` finds
//! nothing close before the active context's seek mean is valid, and no `REQ_NOIDLE`).
//! 2.6.31's `busy_rt_queues` check in `cfq_select_queue` is left out: a real-time request
//! already preempts any other slice on arrival (`cfq_should_preempt`) without groups.
//!
//! **3.2** (`rules_3_2`): the only busy sync queue has no dispatch limit even beside busy
//! async queues (`promote_sync`, 2.6.39); the last queue of a service tree idles only if the
//! tree's mean think time (`service_tree->ttime`: from a sync completion on the tree to the
//! next sync request on it) is at most `slice_idle`; a group's last queue does not wait busy,
//! nor hold the disk for its group, if the group's think time (every request, with group
//! scheduling) passes `group_idle`; and a process's think time counts its sync requests only.
//! 3.3–3.5 change no rule modelled here (3.5 adds the `target_latency` knob, 300 ms as
//! before).
//!
//! **Close cooperators** (2.6.33+, module `coop`): when the active queue runs empty and another
//! busy sync queue's next request is close to the head, CFQ serves that queue instead of
//! idling and merges the two; a merged queue that turns seeky is split again.
//!
//! # Deviations, and why
//!
//! - Time is nanoseconds, not jiffies; "one jiffy" is 1 ns where it only orders events
//!   (`slice_end = jiffies + 1`) and 1 ms (HZ = 1000) where it is a length
//!   (`cfq_should_wait_busy`'s "one jiffy left").
//! - The device is rotational: no non-rotational shortcuts; `hw_tag` is estimated only to
//!   decide IOPS mode (the kernel also uses it to allow deep queues to keep their idle window).
//! - `REQ_META` ([`Request::meta`]) stands for 3.1+'s `REQ_PRIO` too: ext3 marks the same
//!   reads (inode and directory blocks) with both, so the metadata preemption and
//!   `cfq_choose_req`'s preference act in every era alike.
//! - Groups are created on `set_group` or on first use (weight 500 for an unknown cgroup);
//!   queues are kept for the scheduler's lifetime (the kernel frees them with the I/O context).
//! - `quantum` defaults to 4 as elevator's brief asks (the 2.6.31–2.6.33 value); 2.6.34+
//!   ships 8 with the dispatch limit modelled here (`quantum / 2`, `quantum` early in a
//!   slice). Set `quantum=8` for those kernels. 2.6.33's own limit (`quantum` in flight,
//!   unlimited for the only busy queue) is not modelled.
//! - A change of a process's priority applies to its sync queue at its next request; the
//!   kernel applies it on the next request too, but via the ioc "prio changed" flag.
//! - When requests are queued but every candidate must wait for completions (dispatch limits,
//!   idling on an in-flight request), `dispatch` answers `Dispatch::Empty` (a completion is
//!   coming); while the idle timer runs it answers `WaitUntil` with its expiry. The idle timer
//!   is evaluated lazily: at the next call at or after its expiry.
//! - No `cfq_forced_dispatch`, no idle-class grace period.
//! - A process exits when the driver says so ([`Scheduler::exited`]), at once after its last
//!   request completed; the kernel's `exit_io_context` comes when the task itself is done.
//! - The root group weighs twice `BLKIO_WEIGHT_DEFAULT` (1000) with `workload_trees` 1, as
//!   2.6.33 to 3.5 give it in `cfq_init_queue`, and `BLKIO_WEIGHT_DEFAULT` (500) under 2.6.31's
//!   rules (the io-controller patches that mode stands for had no such doubling), unless a
//!   cgroup setting for the root says otherwise.

mod coop;
pub mod group;
pub mod queue;

use std::collections::BTreeMap;

use elevator_core::hash::FastHashMap;

use elevator_core::{Cgroup, IoPrioClass, Nanos, Request, RequestId, NS_PER_MS};

use group::{tree_index, Group};
pub use group::{GroupStats, IoStat};
use queue::{
    choose_req, Cic, Queue, Queued, SortKey, BE, IDLE, RT, WL_ASYNC, WL_SYNC, WL_SYNC_NOIDLE,
};

use crate::{Dispatch, Merged, Scheduler, TunableError, TunableInfo, TunableSpec};

/// `cfq_target_latency`: 300 ms.
const TARGET_LATENCY: Nanos = 300 * NS_PER_MS;
/// `CFQ_IDLE_DELAY`: HZ / 5.
const IDLE_DELAY: Nanos = 200 * NS_PER_MS;
/// How far behind the last group a group that becomes busy again is put on the group service
/// tree (`cfq_group_service_tree_add`). The kernel adds `CFQ_IDLE_DELAY` (HZ / 5 jiffies) to
/// a vdisktime that counts service shifted left by `CFQ_SERVICE_SHIFT` (12) and scaled by
/// `500 / weight` (`cfq_scale_slice`, from the first group-scheduling CFQ, 2.6.33, on), so the
/// gap is 200 ms / 4096 ≈ 49 µs of service. Our vdisktime counts unshifted ns, so the delay is
/// shifted down here.
const GROUP_DELAY: u64 = IDLE_DELAY >> 12;
/// `CFQ_MIN_TT`: 2 ms.
const MIN_TT: Nanos = 2 * NS_PER_MS;
/// `CFQ_SLICE_SCALE`.
const SLICE_SCALE: Nanos = 5;
/// `BLKIO_WEIGHT_DEFAULT`.
const WEIGHT_DEFAULT: u64 = 500;
/// The root group's weight from 2.6.33 on: `cfqg->weight = 2*BLKIO_WEIGHT_DEFAULT` in
/// `cfq_init_queue` (3.5: `2 * CFQ_WEIGHT_DEFAULT`). Tasks in the root cgroup, the flusher
/// threads among them, weigh as two default groups.
const ROOT_WEIGHT_2_6_33: u32 = 2 * WEIGHT_DEFAULT as u32;
/// `CFQ_HW_QUEUE_MIN`: requests in the driver that show a queueing device.
const HW_QUEUE_MIN: u32 = 5;
/// `PAGE_CACHE_SIZE`.
const PAGE_BYTES: u64 = 4096;

pub const TUNABLES: &[TunableSpec] = &[
    TunableSpec {
        name: "quantum",
        unit: "requests",
        default: 4,
        min: 1,
        max: 1024,
        description:
            "Dispatch depth per queue: quantum/2 normally, up to quantum early in a slice.",
    },
    TunableSpec {
        name: "fifo_expire_sync",
        unit: "ms",
        default: 125,
        min: 1,
        max: 100_000,
        description: "FIFO deadline of sync requests.",
    },
    TunableSpec {
        name: "fifo_expire_async",
        unit: "ms",
        default: 250,
        min: 1,
        max: 100_000,
        description: "FIFO deadline of async requests.",
    },
    TunableSpec {
        name: "back_seek_max",
        unit: "KiB",
        default: 16384,
        min: 0,
        max: 1 << 30,
        description: "Farthest backward seek considered.",
    },
    TunableSpec {
        name: "back_seek_penalty",
        unit: "factor",
        default: 2,
        min: 1,
        max: 1000,
        description: "Cost multiplier of a backward seek.",
    },
    TunableSpec {
        name: "slice_sync",
        unit: "ms",
        default: 100,
        min: 1,
        max: 100_000,
        description: "Base time slice of sync queues.",
    },
    TunableSpec {
        name: "slice_async",
        unit: "ms",
        default: 40,
        min: 1,
        max: 100_000,
        description: "Base time slice of async queues.",
    },
    TunableSpec {
        name: "slice_async_rq",
        unit: "requests",
        default: 2,
        min: 1,
        max: 1024,
        description: "Base number of requests an async queue dispatches per slice.",
    },
    TunableSpec {
        name: "slice_idle",
        unit: "ms",
        default: 8,
        min: 0,
        max: 100_000,
        description: "Idle wait for the next request of a sync queue.",
    },
    TunableSpec {
        name: "group_idle",
        unit: "ms",
        default: 8,
        min: 0,
        max: 100_000,
        description: "Idle wait for the next request of a group's last queue.",
    },
    TunableSpec {
        name: "low_latency",
        unit: "bool",
        default: 1,
        min: 0,
        max: 1,
        description: "Scale slices to the target latency; ramp async depth.",
    },
    TunableSpec {
        name: "group_scheduling",
        unit: "bool",
        default: 1,
        min: 0,
        max: 1,
        description: "elevator: 1 = blkio groups by cgroup, 0 = vanilla CFQ (root group only).",
    },
    TunableSpec {
        name: "workload_trees",
        unit: "bool",
        default: 1,
        min: 0,
        max: 1,
        description: "elevator: 1 = sync/sync-noidle/async service trees (2.6.33+), 0 = 2.6.31: one tree per class and that era's idling rules.",
    },
    TunableSpec {
        name: "queue_merging",
        unit: "bool",
        default: 1,
        min: 0,
        max: 1,
        description: "elevator: 1 = close cooperators are served and their queues merged (2.6.33+; with workload_trees=0, 2.6.30-31's switch without merging), 0 = never (before 2.6.30).",
    },
    TunableSpec {
        name: "rules_3_2",
        unit: "bool",
        default: 0,
        min: 0,
        max: 1,
        description: "elevator: with workload_trees=1, 1 = 3.2's CFQ (the only busy sync queue dispatches without limit, think time per service tree and per group decides idling, a process's think time counts sync requests only), 0 = 2.6.38's.",
    },
    TunableSpec {
        name: "rules_2_6_29",
        unit: "bool",
        default: 0,
        min: 0,
        max: 1,
        description: "elevator: with workload_trees=0 (and rules_2_6_32=0), 1 = 2.6.29's CFQ (a dispatch ends the idle wait, a request for an idling queue runs it at once, the only busy queue dispatches without limit, a used-up slice ends even with a request waiting, no close request before the seek mean is known, no REQ_NOIDLE), 0 = 2.6.31's.",
    },
    TunableSpec {
        name: "rules_2_6_32",
        unit: "bool",
        default: 0,
        min: 0,
        max: 1,
        description: "elevator: with workload_trees=0, 1 = v2.6.32's CFQ (2.6.31's plus low_latency's async depth ramp and seeky idling, the slice residual subtracted, think time against the slice left, async drain, coop_preempt), 0 = 2.6.31's; ignored with workload_trees=1.",
    },
];

#[derive(Clone, Copy, Debug)]
struct Tun {
    quantum: u64,
    fifo_expire: [Nanos; 2],
    back_max_sectors: u64,
    back_penalty: u64,
    slice: [Nanos; 2],
    slice_async_rq: u64,
    slice_idle: Nanos,
    group_idle: Nanos,
    low_latency: bool,
    group_scheduling: bool,
    workload_trees: bool,
    queue_merging: bool,
    rules_2_6_32: bool,
    rules_3_2: bool,
    rules_2_6_29: bool,
}

impl Default for Tun {
    fn default() -> Tun {
        Tun {
            quantum: 4,
            fifo_expire: [250 * NS_PER_MS, 125 * NS_PER_MS],
            back_max_sectors: 16384 * 2,
            back_penalty: 2,
            slice: [40 * NS_PER_MS, 100 * NS_PER_MS],
            slice_async_rq: 2,
            slice_idle: 8 * NS_PER_MS,
            group_idle: 8 * NS_PER_MS,
            low_latency: true,
            group_scheduling: true,
            workload_trees: true,
            queue_merging: true,
            rules_2_6_32: false,
            rules_3_2: false,
            rules_2_6_29: false,
        }
    }
}

/// The CFQ scheduler. See the module documentation.
#[derive(Debug)]
pub struct Cfq {
    t: Tun,
    /// The last insert ended an idle wait or preempted: the queue runs now
    /// (`Scheduler::take_queue_run`).
    run_queue: bool,
    queues: Vec<Queue>,
    sync_map: FastHashMap<(u32, usize), usize>,
    async_map: FastHashMap<(usize, usize, u8), usize>,
    groups: Vec<Group>,
    /// A cgroup setting gave the root group its weight (else it follows the era).
    root_weight_set: bool,
    group_map: FastHashMap<u32, usize>,
    /// Group service tree: (vdisktime, seq) → group.
    gst: BTreeMap<(u64, u64), usize>,
    /// Busy queues by the sector of their next request, per priority level (`prio_trees`).
    prio_trees: [BTreeMap<u64, usize>; 8],
    min_vdisktime: u64,
    total_weight: u64,
    cics: FastHashMap<u32, Cic>,
    active: Option<usize>,
    serving_prio: usize,
    serving_type: usize,
    workload_expires: Option<Nanos>,
    idle_until: Option<Nanos>,
    /// Why the active queue last changed, why the last queue was picked, whether the last
    /// request came from the FIFO, and the decision reported (`Scheduler::last_decision`).
    expire_cause: &'static str,
    picked: &'static str,
    fifo_hit: bool,
    decision: &'static str,
    rq_queued: usize,
    in_driver: u32,
    /// `hw_tag`: -1 unknown, 0 no command queueing, 1 command queueing.
    hw_tag: i8,
    hw_tag_est_depth: u32,
    hw_tag_samples: u32,
    /// 2.6.31's `hw_tag` (`workload_trees` 0): starts at 1 and is decided again every 50
    /// samples from the peak driver depth seen since the last decision.
    hw_tag_31: bool,
    hw_tag_31_peak: u32,
    hw_tag_31_samples: u32,
    in_flight: [u32; 2],
    busy_queues: u32,
    /// `busy_sync_queues` (2.6.39+): busy queues that are sync.
    busy_sync_queues: u32,
    last_position: u64,
    /// The last completion of a sync request that waited at least `fifo_expire_sync`
    /// (`last_delayed_sync`); `None` before the first, which counts as a second before the
    /// scheduler started (`cfq_init_queue`: `jiffies - HZ`).
    last_delayed_sync: Option<Nanos>,
    /// v2.6.32's `last_end_sync_rq`: the last completion of any sync request (2.6.33+ keeps
    /// only the delayed ones, `last_delayed_sync`).
    last_end_sync_rq: Nanos,
    inflight: FastHashMap<RequestId, (usize, Nanos)>,
    seq: u64,
}

impl Default for Cfq {
    fn default() -> Self {
        Cfq::new()
    }
}

fn class_of(rq: &Request) -> (usize, u8) {
    match rq.owner.prio.class {
        IoPrioClass::RealTime => (RT, rq.owner.prio.level.min(7)),
        IoPrioClass::Idle => (IDLE, 7),
        // No class set: best effort at the level the task's nice value gives
        // (`cfq_init_prio_data`'s `task_nice_ioprio`; 4 at nice 0).
        IoPrioClass::BestEffort | IoPrioClass::None => (BE, rq.owner.prio.level.min(7)),
    }
}

impl Cfq {
    pub fn new() -> Cfq {
        let mut s = Cfq {
            run_queue: false,
            t: Tun::default(),
            queues: Vec::new(),
            sync_map: FastHashMap::default(),
            async_map: FastHashMap::default(),
            groups: vec![Group::new(String::new(), ROOT_WEIGHT_2_6_33, 0)],
            root_weight_set: false,
            group_map: FastHashMap::default(),
            gst: BTreeMap::new(),
            prio_trees: Default::default(),
            min_vdisktime: 0,
            total_weight: 0,
            cics: FastHashMap::default(),
            active: None,
            serving_prio: BE,
            serving_type: WL_SYNC,
            workload_expires: None,
            idle_until: None,
            expire_cause: "first slice",
            picked: "",
            fifo_hit: false,
            decision: "",
            rq_queued: 0,
            in_driver: 0,
            hw_tag: -1,
            hw_tag_est_depth: 0,
            hw_tag_samples: 0,
            hw_tag_31: true,
            hw_tag_31_peak: 0,
            hw_tag_31_samples: 0,
            in_flight: [0; 2],
            busy_queues: 0,
            busy_sync_queues: 0,
            last_position: 0,
            last_delayed_sync: None,
            last_end_sync_rq: 0,
            inflight: FastHashMap::default(),
            seq: 0,
        };
        s.group_map.insert(0, 0);
        s
    }

    /// Per-group blkio statistics, by cgroup path ("" is the root), in group creation order.
    pub fn group_stats(&self) -> Vec<(String, GroupStats)> {
        self.groups
            .iter()
            .map(|g| {
                let mut st = g.stats;
                st.vdisktime = g.vdisktime;
                st.weight = g.weight;
                (g.path.clone(), st)
            })
            .collect()
    }

    /// The slice a queue of this sync-ness and level gets before latency scaling
    /// (`cfq_prio_slice`).
    pub fn prio_slice(&self, sync: bool, prio: u8) -> Nanos {
        let base = self.t.slice[usize::from(sync)];
        let delta = base / SLICE_SCALE;
        (base as i64 + delta as i64 * (4 - i64::from(prio))) as Nanos
    }

    /// Whether the idle timer is running (for tests and drivers).
    pub fn idling_until(&self) -> Option<Nanos> {
        self.idle_until
    }

    /// The active queue's (io_context, sync, idle_window, allocated slice), for tests.
    pub fn active_queue_info(&self) -> Option<(u32, bool, bool, Nanos)> {
        self.active.map(|q| {
            let q = &self.queues[q];
            (q.io_context, q.sync, q.idle_window, q.allocated_slice)
        })
    }

    /// Idle window flag of the sync queue of `io_context` in `cgroup`, for tests.
    pub fn idle_window(&self, io_context: u32, cgroup: u32) -> Option<bool> {
        let g = self.group_idx_lookup(cgroup)?;
        self.sync_map.get(&(io_context, g)).map(|&q| self.queues[q].idle_window)
    }

    /// v2.6.32's rules (`rules_2_6_32` under `workload_trees` 0) rather than 2.6.31's.
    fn v2632(&self) -> bool {
        !self.t.workload_trees && self.t.rules_2_6_32
    }

    /// 2.6.29's rules (`rules_2_6_29` under `workload_trees` 0, unless `rules_2_6_32`).
    fn v2629(&self) -> bool {
        !self.t.workload_trees && self.t.rules_2_6_29 && !self.t.rules_2_6_32
    }

    /// 3.2's rules (`rules_3_2` under `workload_trees` 1) rather than 2.6.38's.
    fn v32(&self) -> bool {
        self.t.workload_trees && self.t.rules_3_2
    }

    /// `iops_mode`: groups are charged requests, not time (no idling on a queueing device).
    pub fn iops_mode(&self) -> bool {
        self.t.slice_idle == 0 && self.hw_tag == 1
    }

    /// `cfq_update_hw_tag`, called at each completion before the driver count drops.
    fn update_hw_tag(&mut self) {
        self.hw_tag_est_depth = self.hw_tag_est_depth.max(self.in_driver);
        if self.hw_tag == 1 {
            return;
        }
        if self.rq_queued <= HW_QUEUE_MIN as usize && self.in_driver <= HW_QUEUE_MIN {
            return;
        }
        // An active queue that could idle and has too few requests might not fill the device.
        if let Some(q) = self.active {
            let qq = &self.queues[q];
            if qq.idle_window
                && (qq.dispatched as usize + qq.sort.len()) < HW_QUEUE_MIN as usize
                && self.in_driver < HW_QUEUE_MIN
            {
                return;
            }
        }
        self.hw_tag_samples += 1;
        if self.hw_tag_samples <= 50 {
            return;
        }
        self.hw_tag = i8::from(self.hw_tag_est_depth >= HW_QUEUE_MIN);
    }

    /// 2.6.31's `cfq_update_hw_tag`: the peak driver depth over 50 samples (taken while
    /// more than `CFQ_HW_QUEUE_MIN` requests are queued or in the driver) decides, and the
    /// estimate starts again.
    fn update_hw_tag_31(&mut self) {
        self.hw_tag_31_peak = self.hw_tag_31_peak.max(self.in_driver);
        if self.rq_queued <= HW_QUEUE_MIN as usize && self.in_driver <= HW_QUEUE_MIN {
            return;
        }
        self.hw_tag_31_samples += 1;
        if self.hw_tag_31_samples < 50 {
            return;
        }
        self.hw_tag_31 = self.hw_tag_31_peak >= HW_QUEUE_MIN;
        self.hw_tag_31_samples = 0;
        self.hw_tag_31_peak = 0;
    }

    fn seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn group_idx_lookup(&self, cgroup: u32) -> Option<usize> {
        if !self.t.group_scheduling {
            return Some(0);
        }
        self.group_map.get(&cgroup).copied()
    }

    fn group_idx(&mut self, cgroup: u32, now: Nanos) -> usize {
        if let Some(g) = self.group_idx_lookup(cgroup) {
            return g;
        }
        let g = self.groups.len();
        self.groups.push(Group::new(format!("#{cgroup}"), Cgroup::DEFAULT_WEIGHT, now));
        self.group_map.insert(cgroup, g);
        g
    }

    fn group_idle(&self) -> Nanos {
        if self.t.group_scheduling {
            self.t.group_idle
        } else {
            0
        }
    }

    /// `cfq_get_queue`: the sync queue of the process, or the async queue of its priority.
    fn queue_for(&mut self, rq: &Request, now: Nanos) -> usize {
        let g = self.group_idx(rq.owner.cgroup, now);
        let (class, prio) = class_of(rq);
        if rq.sync {
            let key = (rq.owner.io_context, g);
            let found = self.sync_map.get(&key).copied();
            if let Some(q) = found.and_then(|q| self.coop_redirect(key, q)) {
                let qq = &mut self.queues[q];
                if (qq.class != class || qq.prio != prio) && !qq.on_rr {
                    qq.class = class;
                    qq.prio = prio;
                    qq.idle_window = qq.idle_window && class != IDLE;
                }
                return q;
            }
            let q = self.queues.len();
            self.queues.push(Queue::new(g, true, class, prio, rq.owner.io_context));
            self.queues[q].process_refs = 1;
            self.sync_map.insert(key, q);
            q
        } else {
            // The async queue's slot is the task's set ioprio, `IOPRIO_NORM` of best effort
            // if it set none (`task_ioprio`, `task_ioprio_class` in cfq_get_queue), whatever
            // its nice value; a queue created by a niced task still takes its level
            // (`cfq_init_prio_data`).
            let slot = if rq.owner.prio.class == IoPrioClass::None {
                elevator_core::IoPrio::NORM_LEVEL
            } else {
                prio
            };
            let key = (g, class, slot);
            if let Some(&q) = self.async_map.get(&key) {
                return q;
            }
            let q = self.queues.len();
            self.queues.push(Queue::new(g, false, class, prio, 0));
            self.async_map.insert(key, q);
            q
        }
    }

    fn slice_used(&self, q: usize, now: Nanos) -> bool {
        let q = &self.queues[q];
        !q.slice_new && now >= q.slice_end
    }

    /// `cfq_group_slice`.
    fn group_slice(&self, g: usize) -> Nanos {
        let tw = self.total_weight.max(1);
        TARGET_LATENCY * u64::from(self.groups[g].weight) / tw
    }

    /// The service tree's workload type of queue `q`: every queue is "sync" when the
    /// workload trees are off (2.6.31 kept one service tree per class).
    fn wl(&self, q: usize) -> usize {
        if self.t.workload_trees {
            self.queues[q].workload()
        } else {
            WL_SYNC
        }
    }

    /// `cfq_should_idle`.
    fn should_idle(&self, q: usize) -> bool {
        let qq = &self.queues[q];
        if qq.class == IDLE || self.t.slice_idle == 0 {
            return false;
        }
        if qq.idle_window {
            return true;
        }
        if !self.t.workload_trees {
            return false; // 2.6.31: no idling at the end of a sync-noidle tree
        }
        // The last queue of its tree idles (3.2: unless the tree's think time is big).
        match qq.st {
            Some((tree, _)) => {
                let grp = &self.groups[qq.group];
                grp.trees[tree].len() == 1
                    && qq.sync
                    && !(self.v32() && grp.tree_ttime[tree].big(self.t.slice_idle))
            }
            None => false,
        }
    }

    // ---- service trees ------------------------------------------------------------------

    /// `cfq_service_tree_add`.
    fn service_tree_add(&mut self, q: usize, add_front: bool, now: Nanos) {
        let g = self.queues[q].group;
        let wl = self.wl(q);
        let (class, sync, prio) = {
            let qq = &self.queues[q];
            (qq.class, qq.sync, qq.prio)
        };
        let tree = tree_index(class, wl);
        let key: i64 = if class == IDLE {
            let last = self.groups[g].trees[tree]
                .iter()
                .next_back()
                .filter(|(_, &qq)| qq != q)
                .map(|(k, _)| k.0);
            IDLE_DELAY as i64 + last.unwrap_or(now as i64)
        } else if !add_front {
            // `cfq_slice_offset`: 2.6.33+ counts the group's queues (before this one joins
            // it), 2.6.31 every busy queue (this one included) less one.
            let nr = if self.t.workload_trees {
                i64::from(self.groups[g].nr_cfqq.max(1) - 1)
            } else {
                i64::from(self.busy_queues.max(1) - 1)
            };
            let offset =
                nr * (self.prio_slice(true, 0) as i64 - self.prio_slice(sync, prio) as i64);
            // The part of its last slice the queue left unused (negative: overran). 2.6.32+
            // (b9c8946b, "fix the slice residual sign") subtracts it, so an overrun queue
            // waits longer; 2.6.31 added it.
            let resid = std::mem::take(&mut self.queues[q].slice_resid);
            if self.t.workload_trees || self.v2632() {
                offset + now as i64 - resid
            } else {
                offset + now as i64 + resid
            }
        } else {
            let first = self.groups[g].trees[tree].iter().next().map(|(k, _)| k.0);
            first.unwrap_or(now as i64) - 1_000 * NS_PER_MS as i64
        };
        if let Some((old_tree, old_key)) = self.queues[q].st {
            if old_tree == tree && old_key.0 == key {
                return;
            }
            self.groups[g].trees[old_tree].remove(&old_key);
        }
        let k = (key, self.seq());
        self.groups[g].trees[tree].insert(k, q);
        self.queues[q].st = Some((tree, k));
    }

    /// `cfq_add_cfqq_rr` with `cfq_group_service_tree_add`.
    fn add_rr(&mut self, q: usize, now: Nanos) {
        self.queues[q].on_rr = true;
        self.busy_queues += 1;
        self.busy_sync_queues += u32::from(self.queues[q].sync);
        self.service_tree_add(q, false, now);
        self.prio_tree_update(q);
        let g = self.queues[q].group;
        self.groups[g].nr_cfqq += 1;
        if self.groups[g].on_st.is_none() {
            let vd = match self.gst.iter().next_back() {
                Some((k, _)) => k.0 + GROUP_DELAY,
                None => self.min_vdisktime,
            };
            self.groups[g].vdisktime = vd;
            let k = (vd, self.seq());
            self.gst.insert(k, g);
            self.groups[g].on_st = Some(k);
            self.total_weight += u64::from(self.groups[g].weight);
        }
    }

    /// `cfq_del_cfqq_rr` with `cfq_group_service_tree_del`.
    fn del_rr(&mut self, q: usize) {
        let g = self.queues[q].group;
        if let Some((tree, k)) = self.queues[q].st.take() {
            self.groups[g].trees[tree].remove(&k);
        }
        self.queues[q].on_rr = false;
        self.prio_tree_update(q);
        self.busy_queues -= 1;
        self.busy_sync_queues -= u32::from(self.queues[q].sync);
        let grp = &mut self.groups[g];
        grp.nr_cfqq -= 1;
        if grp.nr_cfqq == 0 {
            if let Some(k) = grp.on_st.take() {
                self.gst.remove(&k);
                self.total_weight -= u64::from(grp.weight);
                grp.stats.dequeue += 1;
                grp.saved_workload_slice = 0;
            }
        }
    }

    // ---- slices ---------------------------------------------------------------------------

    /// `__cfq_set_active_queue`.
    fn set_active(&mut self, q: usize, now: Nanos) {
        let qq = &mut self.queues[q];
        qq.slice_start = None;
        qq.dispatch_start = now;
        qq.allocated_slice = 0;
        qq.slice_end = 0;
        qq.slice_dispatch = 0;
        qq.wait_request = false;
        qq.must_alloc_slice = false;
        qq.must_dispatch = false;
        qq.fifo_expire = false;
        qq.wait_busy = false;
        qq.coop_preempt = false;
        qq.slice_new = true;
        self.idle_until = None;
        self.active = Some(q);
    }

    /// `cfq_group_get_avg_queues`.
    fn avg_queues(&mut self, g: usize, rt: bool) -> u64 {
        let grp = &mut self.groups[g];
        let busy = grp.busy(if rt { RT } else { BE }) as u32;
        let i = usize::from(!rt);
        let avg = grp.busy_queues_avg[i];
        let (lo, hi) = (avg.min(busy), avg.max(busy));
        grp.busy_queues_avg[i] = (3 * hi + lo + 2) / 4;
        u64::from(grp.busy_queues_avg[i].max(1))
    }

    /// `cfq_set_prio_slice` with `cfq_scaled_cfqq_slice`.
    fn set_prio_slice(&mut self, q: usize, now: Nanos) {
        let slice = self.scaled_slice(q);
        let qq = &mut self.queues[q];
        qq.slice_start = Some(now);
        qq.slice_end = now + slice;
        qq.allocated_slice = slice;
    }

    /// `cfq_scaled_cfqq_slice`: the queue's slice, shrunk with `low_latency` so that the busy
    /// queues of its class fit the group's share of the target latency (updates the group's
    /// average busy-queue count, as the kernel does).
    fn scaled_slice(&mut self, q: usize) -> Nanos {
        let (sync, prio, class, g) = {
            let qq = &self.queues[q];
            (qq.sync, qq.prio, qq.class, qq.group)
        };
        let mut slice = self.prio_slice(sync, prio);
        // 2.6.33's slice scaling (2.6.31 had no `low_latency`; 2.6.32's did other things).
        if self.t.low_latency && self.t.workload_trees {
            let iq = self.avg_queues(g, class == RT);
            let sync_slice = self.t.slice[1];
            let expect_latency = sync_slice * iq;
            let group_slice = self.group_slice(g);
            if expect_latency > group_slice {
                let base_low = 2 * self.t.slice_idle;
                let low_slice = slice.min(base_low * slice / sync_slice);
                slice = (slice * group_slice / expect_latency).max(low_slice);
            }
        }
        slice
    }

    /// `cfq_cfqq_slice_usage`.
    fn slice_usage(&self, q: usize, now: Nanos) -> Nanos {
        let qq = &self.queues[q];
        match qq.slice_start {
            Some(s) if s != now => (now - s).min(qq.allocated_slice),
            _ => now.saturating_sub(qq.dispatch_start).max(1),
        }
    }

    /// `cfq_group_served`.
    fn group_served(&mut self, q: usize, now: Nanos) {
        let g = self.queues[q].group;
        let used = self.slice_usage(q, now);
        let mut charge = used;
        let grp = &self.groups[g];
        let nr_sync = grp.nr_cfqq as usize - grp.busy_async() - grp.trees[6].len();
        if self.iops_mode() {
            charge = u64::from(self.queues[q].slice_dispatch) * NS_PER_MS;
        } else if !self.queues[q].sync && nr_sync == 0 {
            charge = self.queues[q].allocated_slice.max(charge);
        }
        let grp = &mut self.groups[g];
        let scaled =
            (u128::from(charge) * u128::from(WEIGHT_DEFAULT) / u128::from(grp.weight)) as u64;
        if let Some(k) = grp.on_st.take() {
            self.gst.remove(&k);
            grp.vdisktime += scaled;
            self.seq += 1;
            let k = (grp.vdisktime, self.seq);
            self.gst.insert(k, g);
            grp.on_st = Some(k);
        } else {
            grp.vdisktime += scaled;
        }
        grp.stats.time_ns += used;
        match self.workload_expires {
            Some(e) if e > now => {
                grp.saved_workload_slice = e - now;
                grp.saved_workload = self.serving_type;
                grp.saved_prio = self.serving_prio;
            }
            _ => grp.saved_workload_slice = 0,
        }
    }

    /// `cfq_slice_expired`: ends the active queue's slice.
    fn slice_expired(&mut self, timed_out: bool, now: Nanos) {
        let Some(q) = self.active else { return };
        self.idle_until = None;
        // 2.6.38+: a queue preempted before its slice started keeps a whole slice to its
        // credit; before, only a started slice left a residual.
        let unstarted_resid = if timed_out && self.queues[q].slice_new && self.t.workload_trees {
            Some(self.scaled_slice(q) as i64)
        } else {
            None
        };
        {
            let qq = &mut self.queues[q];
            qq.wait_request = false;
            qq.wait_busy = false;
            if let Some(resid) = unstarted_resid {
                qq.slice_resid = resid;
            } else if timed_out && !qq.slice_new {
                qq.slice_resid = qq.slice_end as i64 - now as i64;
            }
            if qq.coop && qq.seeky() {
                qq.split_coop = true;
            }
        }
        self.group_served(q, now);
        if self.queues[q].on_rr && self.queues[q].sort.is_empty() {
            self.del_rr(q);
        }
        if self.queues[q].on_rr {
            self.service_tree_add(q, false, now);
            self.prio_tree_update(q);
        }
        self.active = None;
    }

    /// `cfq_choose_wl`: the workload type whose first queue has waited longest.
    fn choose_wl(&self, g: usize, prio: usize) -> usize {
        let mut best: Option<(i64, usize)> = None;
        for wl in [WL_ASYNC, WL_SYNC_NOIDLE, WL_SYNC] {
            if let Some((k, _)) = self.groups[g].trees[tree_index(prio, wl)].iter().next() {
                if best.is_none_or(|(bk, _)| k.0 < bk) {
                    best = Some((k.0, wl));
                }
            }
        }
        best.map(|b| b.1).unwrap_or(WL_SYNC)
    }

    /// `choose_service_tree`.
    fn choose_service_tree(&mut self, g: usize, now: Nanos) {
        let original = self.serving_prio;
        let grp = &self.groups[g];
        self.serving_prio = if grp.busy(RT) > 0 {
            RT
        } else if grp.busy(BE) > 0 {
            BE
        } else {
            self.serving_prio = IDLE;
            self.workload_expires = Some(now + 1);
            return;
        };
        if !self.t.workload_trees {
            // One tree per class: no workload slices to expire.
            self.serving_type = WL_SYNC;
            self.workload_expires = Some(Nanos::MAX / 2);
            return;
        }
        let count = grp.trees[tree_index(self.serving_prio, self.serving_type)].len();
        if original == self.serving_prio && count > 0 {
            if let Some(e) = self.workload_expires {
                if now <= e {
                    return;
                }
            }
        }
        self.serving_type = self.choose_wl(g, self.serving_prio);
        let grp = &self.groups[g];
        let count = grp.trees[tree_index(self.serving_prio, self.serving_type)].len() as u64;
        let group_slice = self.group_slice(g);
        let busy_now = grp.busy(self.serving_prio) as u64;
        let avg = u64::from(grp.busy_queues_avg[self.serving_prio.min(1)]).max(busy_now).max(1);
        let mut slice = group_slice * count / avg;
        if self.serving_type == WL_ASYNC {
            let tmp = TARGET_LATENCY * grp.busy_async() as u64 / u64::from(self.busy_queues.max(1));
            slice = slice.min(tmp);
            slice = slice * self.t.slice[0] / self.t.slice[1];
        } else {
            slice = slice.max(2 * self.t.slice_idle);
        }
        slice = slice.max(MIN_TT);
        self.workload_expires = Some(now + slice);
    }

    /// `cfq_choose_cfqg` + `cfq_get_next_queue` + `cfq_set_active_queue`.
    fn new_queue(&mut self, now: Nanos) -> Option<usize> {
        let (&(vd, _), &g) = self.gst.iter().next()?;
        self.min_vdisktime = self.min_vdisktime.max(vd);
        let grp = &self.groups[g];
        if grp.saved_workload_slice > 0 {
            self.workload_expires = Some(now + grp.saved_workload_slice);
            self.serving_type = grp.saved_workload;
            self.serving_prio = grp.saved_prio;
        } else {
            self.workload_expires = None;
        }
        self.choose_service_tree(g, now);
        let tree = tree_index(self.serving_prio, self.serving_type);
        let q = self.groups[g].trees[tree].values().next().copied()?;
        // 2.6.30–32's `cfq_set_active_queue`: a slice from the tree clears the jump mark,
        // unless (2.6.32) the queue got it by preempting as a close queue.
        if !self.queues[q].coop_preempt {
            self.queues[q].jumped_to = false;
        }
        self.set_active(q, now);
        self.picked = new_slice_decision(self.expire_cause, self.groups.len() > 1);
        Some(q)
    }

    /// Group idling check of `cfq_select_queue` (`check_group_idle`).
    fn group_idle_wait(&self, q: usize) -> bool {
        let grp = &self.groups[self.queues[q].group];
        self.group_idle() > 0
            && grp.nr_cfqq == 1
            && grp.dispatched > 0
            && !(self.v32() && grp.ttime.big(self.group_idle()))
    }

    /// `cfq_select_queue`.
    fn select_queue(&mut self, now: Nanos) -> Option<usize> {
        let Some(q) = self.active else {
            return self.new_queue(now);
        };
        if self.rq_queued == 0 {
            return None;
        }
        let empty = self.queues[q].sort.is_empty();
        let expire = if self.queues[q].wait_busy && !empty {
            self.expire_cause = "wait_busy ended";
            true
        } else if self.slice_used(q, now) && (!self.queues[q].must_dispatch || self.v2629()) {
            // 2.6.29 sets `must_dispatch` but never reads it: a used-up slice ends.
            self.expire_cause = "slice expired";
            let g = self.queues[q].group;
            if self.waits_busy()
                && self.groups[g].nr_cfqq == 1
                && empty
                && self.queues[q].dispatched > 0
                && self.should_idle(q)
            {
                return None;
            }
            if self.group_idle_wait(q) {
                return None;
            }
            true
        } else {
            if !empty {
                self.picked = "slice continues";
                return Some(q);
            }
            if let Some(n) = self.switch_to_cooperator(q, now) {
                self.picked = "close cooperator queue";
                return Some(n);
            }
            self.expire_cause = "queue empty, no idling";
            if self.idle_until.is_some() {
                return None;
            }
            // 2.6.33+: a seeky queue the device serves faster than the queue refills loses
            // its idle window (not in 2.6.31).
            let deep_rule = self.t.workload_trees;
            let qq = &mut self.queues[q];
            if deep_rule
                && qq.seeky()
                && qq.idle_window
                && (qq.slice_new
                    || qq.slice_end.saturating_sub(now)
                        > now.saturating_sub(qq.slice_start.unwrap_or(now)))
            {
                qq.deep = false;
                qq.idle_window = false;
            }
            if self.queues[q].dispatched > 0 && self.should_idle(q) {
                return None;
            }
            if self.group_idle_wait(q) {
                return None;
            }
            true
        };
        debug_assert!(expire);
        self.slice_expired(false, now);
        self.new_queue(now)
    }

    /// `cfq_slice_used_soon`.
    fn slice_used_soon(&self, q: usize, now: Nanos) -> bool {
        let qq = &self.queues[q];
        qq.slice_new || now + self.t.slice_idle * u64::from(qq.dispatched) > qq.slice_end
    }

    /// `cfq_may_dispatch`.
    fn may_dispatch(&self, q: usize, now: Nanos) -> bool {
        let qq = &self.queues[q];
        if !self.t.workload_trees {
            return self.may_dispatch_single_tree(q, now);
        }
        if self.should_idle(q) && self.in_flight[0] > 0 {
            return false;
        }
        if self.in_flight[1] > 0 && !qq.sync {
            return false;
        }
        let mut max_dispatch = (self.t.quantum / 2).max(1);
        if qq.class == IDLE {
            max_dispatch = 1;
        }
        if u64::from(qq.dispatched) >= max_dispatch {
            if qq.class == IDLE {
                return false;
            }
            // 2.6.39+ (`rules_3_2`): the only busy sync queue is not limited, async queues
            // or not ("a sync queue can preempt async queue").
            let promote_sync = self.v32() && qq.sync && self.busy_sync_queues == 1;
            if self.busy_queues > 1 && self.slice_used_soon(q, now) && !promote_sync {
                return false;
            }
            max_dispatch =
                if self.busy_queues == 1 || promote_sync { u64::MAX } else { self.t.quantum };
        }
        if !qq.sync && self.t.low_latency {
            let since = match self.last_delayed_sync {
                Some(t) => now.saturating_sub(t),
                None => now + 1_000 * NS_PER_MS,
            };
            max_dispatch = max_dispatch.min(self.async_depth(since, u64::from(qq.dispatched)));
        }
        u64::from(qq.dispatched) < max_dispatch
    }

    /// The dispatch limits of the single-tree CFQs (`workload_trees` 0): 2.6.31's
    /// `cfq_dispatch_requests` — an async queue waits while sync requests are in flight; a
    /// queue may have `quantum` requests in flight (an idle-class one, one), and more only as
    /// the only busy queue, up to four times `quantum` — with the changes of 2.6.29 (its loop
    /// stops at `quantum` only `if (cfqd->busy_queues > 1)`: the only busy queue sends all it
    /// has) and of v2.6.32's `cfq_may_dispatch` (an idle-window queue waits for async requests
    /// in the driver to drain; with `low_latency`, [`Self::async_depth`] from the last sync
    /// completion of any kind). None has 2.6.33's halved quantum for a slice about to run out.
    fn may_dispatch_single_tree(&self, q: usize, now: Nanos) -> bool {
        let qq = &self.queues[q];
        let v2632 = self.v2632();
        if v2632 && qq.idle_window && self.in_flight[0] > 0 {
            return false;
        }
        if self.in_flight[1] > 0 && !qq.sync {
            return false;
        }
        let mut max_dispatch = if qq.class == IDLE { 1 } else { self.t.quantum };
        let dispatched = u64::from(qq.dispatched);
        if dispatched >= max_dispatch {
            if self.busy_queues > 1 || (qq.class == IDLE && !self.v2629()) {
                return false;
            }
            max_dispatch = if self.v2629() { u64::MAX } else { 4 * max_dispatch };
        }
        if v2632 && !qq.sync && self.t.low_latency {
            let since = now.saturating_sub(self.last_end_sync_rq);
            max_dispatch = max_dispatch.min(self.async_depth(since, dispatched));
        }
        dispatched < max_dispatch
    }

    /// `low_latency`'s async depth (`cfq_may_dispatch`, v2.6.32 on): one request in flight per
    /// `slice_sync` since the last sync completion that counts, `since_ns` ago; one if the
    /// queue has none in flight.
    fn async_depth(&self, since_ns: Nanos, dispatched: u64) -> u64 {
        let depth = since_ns / self.t.slice[1];
        if depth == 0 && dispatched == 0 {
            1
        } else {
            depth
        }
    }

    /// `cfq_check_fifo`: the FIFO head if it expired, checked once per slice.
    fn check_fifo(&mut self, q: usize, now: Nanos) -> Option<SortKey> {
        let qq = &mut self.queues[q];
        if qq.fifo_expire {
            return None;
        }
        qq.fifo_expire = true;
        let (&(t, _), &key) = qq.fifo.iter().next()?;
        self.fifo_hit = now >= t;
        (now >= t).then_some(key)
    }

    /// `cfq_find_next_rq`: after removing `key`, the best of its successor (or the first) and
    /// its predecessor.
    /// Distances are measured from `from`: 2.6.33+ passes the removed request's start
    /// (`blk_rq_pos(last)`); 2.6.31 and 2.6.32 use `last_position`, where the request the
    /// driver took before this one ended (this one is not yet activated).
    fn find_next_rq(&self, q: usize, key: SortKey, from: u64) -> Option<SortKey> {
        let qq = &self.queues[q];
        let next = qq.sort.range(key..).next().or_else(|| qq.sort.iter().next()).map(|(k, _)| *k);
        let prev = qq.sort.range(..key).next_back().map(|(k, _)| *k);
        let a = next.map(|k| &qq.sort[&k].rq);
        let b = prev.map(|k| &qq.sort[&k].rq);
        let pick = choose_req(a, b, from, self.t.back_max_sectors, self.t.back_penalty)?;
        if pick {
            next
        } else {
            prev
        }
    }

    /// `cfq_dispatch_request` + the post-dispatch checks of `cfq_dispatch_requests`.
    fn dispatch_from(&mut self, q: usize, now: Nanos) -> Option<Request> {
        if !self.may_dispatch(q, now) {
            return None;
        }
        let key = match self.check_fifo(q, now) {
            Some(k) => k,
            None => self.queues[q].next_rq?,
        };
        let queued = self.queues[q].sort.remove(&key)?;
        self.queues[q].fifo.remove(&queued.fifo_key);
        // cfq_remove_request.
        if queued.rq.meta {
            self.queues[q].meta_pending -= 1;
        }
        if self.queues[q].next_rq == Some(key) {
            self.queues[q].next_rq = None;
        }
        let rq = queued.rq;
        let from = if self.t.workload_trees { rq.sector() } else { self.last_position };
        self.last_position = rq.end_sector();
        self.queues[q].next_rq = self.find_next_rq(q, key, from);
        self.prio_tree_update(q);
        self.rq_queued -= 1;
        let sync = self.queues[q].sync;
        let g = self.queues[q].group;
        self.queues[q].dispatched += 1;
        self.groups[g].dispatched += 1;
        self.in_driver += 1;
        self.in_flight[usize::from(sync)] += 1;
        self.inflight.insert(rq.id, (q, now));
        let st = &mut self.groups[g].stats;
        let read = rq.op.is_read();
        st.sectors += rq.sectors();
        st.io_service_bytes.add(read, rq.sync, rq.len_bytes);
        st.io_serviced.add(read, rq.sync, 1);
        st.io_wait_time_ns.add(read, rq.sync, now.saturating_sub(queued.insert_ns));
        if self.v2629() {
            // 2.6.29's `cfq_dispatch_requests`: `cfq_clear_cfqq_wait_request(cfqq);
            // del_timer(&cfqd->idle_slice_timer);` before each batch.
            self.queues[q].wait_request = false;
            self.idle_until = None;
        }
        let qq = &mut self.queues[q];
        qq.slice_dispatch += 1;
        qq.must_dispatch = false;
        let maxrq = 2 * self.t.slice_async_rq * (8 - u64::from(qq.prio));
        if self.busy_queues > 1
            && ((!qq.sync && u64::from(qq.slice_dispatch) >= maxrq) || qq.class == IDLE)
        {
            qq.slice_end = now + 1;
            self.expire_cause = "async or idle quota dispatched";
            self.slice_expired(false, now);
        }
        Some(rq)
    }

    /// `cfq_idle_slice_timer`, run when the timer's expiry has been reached.
    fn advance(&mut self, now: Nanos) {
        let Some(t) = self.idle_until else { return };
        if now < t {
            return;
        }
        self.idle_until = None;
        let Some(q) = self.active else { return };
        // `cfq_idle_slice_timer` leaves `wait_request` set, in every era (see `insert`).
        if self.queues[q].must_dispatch {
            return;
        }
        if !self.slice_used(q, now) {
            if self.busy_queues == 0 || !self.queues[q].sort.is_empty() {
                return;
            }
            self.queues[q].deep = false;
        }
        self.expire_cause = "idling ended";
        self.slice_expired(false, now);
    }

    /// `cfq_arm_slice_timer`.
    fn arm_slice_timer(&mut self, q: usize, now: Nanos) {
        let mut group_idle = false;
        if !self.should_idle(q) {
            if self.group_idle() > 0 {
                group_idle = true;
            } else {
                return;
            }
        }
        let qq = &self.queues[q];
        // 2.6.33+ waits for this queue's requests in flight; 2.6.31 for any in the driver.
        let in_flight = if self.t.workload_trees { qq.dispatched } else { self.in_driver };
        if in_flight > 0 {
            return;
        }
        // 2.6.32+: no idling when the process thinks longer than the slice has left (not in
        // 2.6.31).
        if let Some(cic) = self.cics.get(&qq.io_context).filter(|_| qq.sync) {
            if (self.t.workload_trees || self.v2632())
                && cic.sample_valid()
                && qq.slice_end.saturating_sub(now) < cic.ttime_mean
            {
                return;
            }
        }
        if group_idle && self.groups[qq.group].nr_cfqq > 1 {
            return;
        }
        self.queues[q].wait_request = true;
        let mut sl = if group_idle { self.group_idle() } else { self.t.slice_idle };
        // 2.6.31: a seeky context that idles waits only `CFQ_MIN_TT` for its next request.
        if !self.t.workload_trees && !group_idle {
            let cic = self.cics.get(&self.queues[q].io_context).copied().unwrap_or_default();
            if cic.seek_sample_valid() && cic.seeky_2631() {
                sl = sl.min(MIN_TT);
            }
        }
        self.idle_until = Some(now + sl);
    }

    /// Whether a group's last queue is kept waiting for its next request at the end of its
    /// slice (`cfq_should_wait_busy` and `cfq_select_queue`'s "allow the group to get
    /// backlogged"): 2.6.33's CFQ took it from the io-controller patches, whose group
    /// scheduling `group_scheduling` 1 stands for under `workload_trees` 0. 2.6.31's CFQ
    /// without groups has neither rule: a slice that is used up ends.
    fn waits_busy(&self) -> bool {
        self.t.workload_trees || self.t.group_scheduling
    }

    /// `cfq_should_wait_busy`.
    fn should_wait_busy(&self, q: usize, now: Nanos) -> bool {
        let qq = &self.queues[q];
        if !self.waits_busy() || !qq.sort.is_empty() || self.groups[qq.group].nr_cfqq > 1 {
            return false;
        }
        // 3.2: "the only queue in the group, but think time is big".
        if self.v32() && self.groups[qq.group].ttime.big(self.group_idle()) {
            return false;
        }
        if self.slice_used(q, now) {
            return true;
        }
        if let Some(cic) = self.cics.get(&qq.io_context).filter(|_| qq.sync) {
            if cic.sample_valid() && qq.slice_end.saturating_sub(now) < cic.ttime_mean {
                return true;
            }
        }
        // "Only one jiffy left": at HZ = 1000, at most 1 ms.
        (1..=NS_PER_MS).contains(&qq.slice_end.saturating_sub(now))
    }

    /// `cfq_should_preempt`: v2.6.32 marks a queue that preempts with a close request `coop`
    /// (`jumped_to`, see `insert`), and such a queue preempts by closeness again only as the
    /// only busy queue; before, a close request always preempts.
    fn should_preempt(&self, new_q: usize, rq: &Request, now: Nanos) -> Preempt {
        match self.preempt_rule(new_q, rq, now) {
            Preempt::AsCloseQueue if !self.v2632() => Preempt::Yes,
            Preempt::AsCloseQueue if self.queues[new_q].jumped_to && self.busy_queues != 1 => {
                Preempt::No
            }
            p => p,
        }
    }

    /// `cfq_should_preempt`'s rules, the last (the request is close to the head of the idling
    /// active queue) answered as `AsCloseQueue`.
    fn preempt_rule(&self, new_q: usize, rq: &Request, now: Nanos) -> Preempt {
        let Some(a) = self.active else { return Preempt::No };
        let (nq, aq) = (&self.queues[new_q], &self.queues[a]);
        // 2.6.31 asks first whether the active slice is used up: then any queue preempts,
        // an idle-class one or one against a real-time slice too.
        if !self.t.workload_trees && self.slice_used(a, now) {
            return Preempt::Yes;
        }
        if nq.class == IDLE {
            return Preempt::No;
        }
        if aq.class == IDLE {
            return Preempt::Yes;
        }
        // 2.6.33+ (with the group rules): no preemption of a real-time slice by another
        // class; 2.6.31's and 2.6.32's rules below let a sync or close request preempt it.
        if self.t.workload_trees && aq.class == RT && nq.class != RT {
            return Preempt::No;
        }
        if rq.sync && !aq.sync {
            return Preempt::Yes;
        }
        if nq.group != aq.group {
            return Preempt::No;
        }
        if self.slice_used(a, now) {
            return Preempt::Yes;
        }
        // "So both queues are sync. Let the new request get disk time if it's a metadata
        // request and the current queue is doing regular IO" (3.1+: `REQ_PRIO`).
        if rq.meta && aq.meta_pending == 0 {
            return Preempt::Yes;
        }
        if nq.class == RT && aq.class != RT {
            return Preempt::Yes;
        }
        if self.t.workload_trees
            && nq.workload() == WL_SYNC_NOIDLE
            && self.serving_type == WL_SYNC_NOIDLE
            && nq.st.is_some_and(|(t, _)| self.groups[nq.group].trees[t].len() == 2)
            && aq.sort.is_empty()
        {
            return Preempt::Yes;
        }
        // 2.6.38+: "an idle queue should not be idle now" — an empty active queue that does
        // not idle for itself (it waits for its group, `group_idle`, or its tree grew).
        if self.t.workload_trees && aq.sort.is_empty() && !self.should_idle(a) {
            return Preempt::Yes;
        }
        if !aq.wait_request {
            return Preempt::No;
        }
        // `cfq_rq_close`: 2.6.31 measures "close" by the active context's mean seek.
        let close = if self.t.workload_trees {
            queue::CLOSE_THR_SECTORS
        } else {
            self.rq_close_sectors_2631(a)
        };
        // 2.6.29's `cfq_rq_close`: "if (!sample_valid(cic->seek_samples)) return 0;".
        let seek_known =
            || self.cics.get(&self.queues[a].io_context).is_some_and(|c| c.seek_sample_valid());
        if self.v2629() && !seek_known() {
            return Preempt::No;
        }
        if rq.sector().abs_diff(self.last_position) <= close {
            Preempt::AsCloseQueue
        } else {
            Preempt::No
        }
    }

    /// `cfq_completed_request`'s probe (2.6.30 on): an empty queue does not idle while a
    /// close cooperator waits, since `cfq_select_queue` will switch to it.
    fn has_close_cooperator(&mut self, q: usize) -> bool {
        if self.t.workload_trees {
            self.close_cooperator(q).is_some()
        } else {
            self.close_cooperator_2631(q, true).is_some()
        }
    }

    /// 2.6.31's `cfq_rq_close` distance while `q` is active: its context's mean seek, or
    /// `CIC_SEEK_THR` until the context has enough samples.
    fn rq_close_sectors_2631(&self, q: usize) -> u64 {
        match self.cics.get(&self.queues[q].io_context).filter(|c| c.seek_sample_valid()) {
            Some(c) => c.seek_mean,
            None => queue::CIC_SEEK_THR_SECTORS,
        }
    }

    /// `cfq_preempt_queue`.
    fn preempt_queue(&mut self, q: usize, now: Nanos) {
        let old_type = self.active.map(|a| self.wl(a));
        self.expire_cause = "preempted";
        self.slice_expired(true, now);
        if old_type != Some(self.wl(q)) {
            let g = self.queues[q].group;
            self.groups[g].saved_workload_slice = 0;
        }
        self.service_tree_add(q, true, now);
        self.queues[q].slice_end = 0;
        self.queues[q].slice_new = true;
    }

    /// `cfq_update_idle_window`.
    fn update_idle_window(&mut self, q: usize) {
        let slice_idle = self.t.slice_idle;
        let v2632 = self.v2632();
        let cic = self.cics.get(&self.queues[q].io_context).copied().unwrap_or_default();
        let qq = &mut self.queues[q];
        if !qq.sync || qq.class == IDLE {
            return;
        }
        if qq.sort.len() >= 4 {
            qq.deep = true;
        }
        // 2.6.37+: a queue whose next request is marked `REQ_NOIDLE` has no idle window
        // (2.6.33-2.6.36's `noidle_tree_requires_idle` is not modelled).
        if self.t.workload_trees && qq.next_rq.is_some_and(|k| qq.sort[&k].rq.noidle) {
            qq.idle_window = false;
            return;
        }
        // 2.6.31 (`workload_trees` 0): a seeky queue never idles on a device that queues
        // commands (`hw_tag`), and keeps its idle window on one that does not; 2.6.32 keeps it
        // on such a device too with `low_latency`; 2.6.33+ keeps idling for seeky queues that
        // keep a deep queue.
        let seeky_no_idle = if self.t.workload_trees {
            !qq.deep && qq.seeky()
        } else {
            !(v2632 && self.t.low_latency) && self.hw_tag_31 && cic.seeky_2631()
        };
        // 2.6.32: a seeky context keeps its idle window only if it thinks for at most
        // `CFQ_MIN_TT`.
        let think_limit =
            if v2632 && cic.seek_sample_valid() && cic.seeky_2631() { MIN_TT } else { slice_idle };
        if slice_idle == 0 || seeky_no_idle {
            qq.idle_window = false;
        } else if cic.sample_valid() {
            qq.idle_window = cic.ttime_mean <= think_limit;
        }
    }
}

/// `cfq_should_preempt`'s answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Preempt {
    No,
    Yes,
    /// Yes, by the last rule: the request is close to the head of the idling active queue.
    AsCloseQueue,
}

/// The decision of a new slice: why the last one ended, and whether a group was chosen first
/// (by the smallest `vdisktime`).
fn new_slice_decision(cause: &'static str, groups: bool) -> &'static str {
    match (cause, groups) {
        ("slice expired", false) => "slice expired: new slice",
        ("slice expired", true) => "slice expired: group chosen by vdisktime",
        ("idling ended", false) => "idling ended: new slice",
        ("idling ended", true) => "idling ended: group chosen by vdisktime",
        ("queue empty, no idling", false) => "queue empty, no idling: new slice",
        ("queue empty, no idling", true) => "queue empty, no idling: group chosen by vdisktime",
        ("wait_busy ended", false) => "wait_busy ended: new slice",
        ("wait_busy ended", true) => "wait_busy ended: group chosen by vdisktime",
        ("preempted", false) => "preempted: new slice",
        ("preempted", true) => "preempted: group chosen by vdisktime",
        ("async or idle quota dispatched", false) => "async or idle quota dispatched: new slice",
        ("async or idle quota dispatched", true) => {
            "async or idle quota dispatched: group chosen by vdisktime"
        }
        (_, false) => "new slice",
        (_, true) => "group chosen by vdisktime",
    }
}

impl Scheduler for Cfq {
    fn name(&self) -> &'static str {
        "cfq"
    }

    /// `cfq_may_queue`: a sync queue CFQ is idling for may allocate a request once per slice
    /// whatever the pool holds (`must_alloc_slice`).
    fn must_queue(&mut self, owner: &elevator_core::Owner, sync: bool, now_ns: Nanos) -> bool {
        self.advance(now_ns);
        if !sync {
            return false;
        }
        let Some(g) = self.group_idx_lookup(owner.cgroup) else { return false };
        let Some(&q) = self.sync_map.get(&(owner.io_context, g)) else { return false };
        let qq = &mut self.queues[q];
        if qq.wait_request && !qq.must_alloc_slice {
            qq.must_alloc_slice = true;
            return true;
        }
        false
    }

    fn try_merge(&mut self, rq: &Request, max_len_bytes: u64, now_ns: Nanos) -> Option<Merged> {
        self.advance(now_ns);
        if rq.op == elevator_core::Op::Flush {
            return None;
        }
        let g = self.group_idx_lookup(rq.owner.cgroup)?;
        let q = if rq.sync {
            *self.sync_map.get(&(rq.owner.io_context, g))?
        } else {
            let (class, prio) = class_of(rq);
            *self.async_map.get(&(g, class, prio))?
        };
        let qq = &mut self.queues[q];
        let ok = |x: &Request| {
            x.op == rq.op && x.sync == rq.sync && x.len_bytes + rq.len_bytes <= max_len_bytes
        };
        // Back merge: the queued request ending where `rq` starts.
        if let Some((_, prev)) = qq.sort.range(..(rq.sector(), 0)).next_back() {
            if prev.rq.end_bytes() == rq.offset_bytes && ok(&prev.rq) {
                let key = (prev.rq.sector(), prev.rq.id.0);
                let e = qq.sort.get_mut(&key)?;
                e.rq.len_bytes += rq.len_bytes;
                return Some(Merged { into: e.rq.id, front: false });
            }
        }
        // Front merge: the queued request starting where `rq` ends.
        let end = rq.end_sector();
        let hit =
            qq.sort.range((end, 0)..(end + 1, 0)).map(|(k, v)| (*k, v)).find(|(_, v)| ok(&v.rq));
        if let Some((key, _)) = hit {
            let mut e = qq.sort.remove(&key)?;
            e.rq.offset_bytes = rq.offset_bytes;
            e.rq.len_bytes += rq.len_bytes;
            let nk = (e.rq.sector(), e.rq.id.0);
            qq.fifo.insert(e.fifo_key, nk);
            let id = e.rq.id;
            qq.sort.insert(nk, e);
            if qq.next_rq == Some(key) {
                qq.next_rq = Some(nk);
                self.prio_tree_update(q);
            }
            return Some(Merged { into: id, front: true });
        }
        None
    }

    fn insert(&mut self, rq: Request, now_ns: Nanos) {
        let now = now_ns;
        self.advance(now);
        let q = self.queue_for(&rq, now);
        let sync = self.queues[q].sync;
        let fifo_key = (now + self.t.fifo_expire[usize::from(sync)], rq.id.0);
        let key = (rq.sector(), rq.id.0);
        {
            let qq = &mut self.queues[q];
            qq.fifo.insert(fifo_key, key);
            qq.sort.insert(key, Queued { rq, insert_ns: now, fifo_key });
            // cfq_rq_enqueued.
            if rq.meta {
                qq.meta_pending += 1;
            }
        }
        self.rq_queued += 1;
        // cfq_add_rq_rb: keep next_rq the best candidate from the head.
        let cur = self.queues[q].next_rq;
        let pick = {
            let qq = &self.queues[q];
            let a = cur.and_then(|k| qq.sort.get(&k)).map(|e| &e.rq);
            choose_req(
                a,
                Some(&rq),
                self.last_position,
                self.t.back_max_sectors,
                self.t.back_penalty,
            )
        };
        if pick != Some(true) || cur.is_none() {
            self.queues[q].next_rq = Some(key);
        }
        if !self.queues[q].on_rr {
            self.add_rr(q, now);
        } else if self.queues[q].next_rq != cur {
            self.prio_tree_update(q);
        }
        // cfq_rq_enqueued: 3.2 (`rules_3_2`) counts a process's think time on its sync
        // requests only, and keeps one for the queue's service tree (sync requests) and one
        // for its group (every request, with group scheduling).
        let slice_idle = self.t.slice_idle;
        let v32 = self.v32();
        if v32 {
            let (g, sync, st) = (self.queues[q].group, self.queues[q].sync, self.queues[q].st);
            let group_idle = self.group_idle();
            let grp = &mut self.groups[g];
            if let (true, Some((tree, _))) = (sync, st) {
                grp.tree_ttime[tree].update(now, slice_idle);
            }
            if self.t.group_scheduling {
                grp.ttime.update(now, group_idle);
            }
        }
        let cic = self.cics.entry(rq.owner.io_context).or_default();
        if !sync {
            cic.async_queue = Some(q);
        }
        if !v32 || sync {
            cic.update_thinktime(now, slice_idle);
        }
        cic.update_seek_2631(&rq);
        self.queues[q].update_seek(&rq);
        self.update_idle_window(q);
        if self.active == Some(q) {
            if self.queues[q].wait_request {
                // 2.6.29 lets any request "rip immediately"; 2.6.30+ only one larger than a
                // page or beside other busy queues.
                let now_or_soon = rq.len_bytes > PAGE_BYTES || self.busy_queues > 1 || self.v2629();
                if now_or_soon {
                    self.idle_until = None;
                    self.run_queue = true;
                }
                // 2.6.31 keeps the flag until the slice ends (only `__cfq_set_active_queue`
                // and `__cfq_slice_expired` clear it) and always lets the request go at the
                // queue's next dispatch whatever its slice says; 2.6.33+ clears the flag when
                // it runs the queue now and marks `must_dispatch` only otherwise.
                if self.t.workload_trees && now_or_soon {
                    self.queues[q].wait_request = false;
                } else {
                    self.queues[q].must_dispatch = true;
                }
            }
        } else {
            let preempt = self.should_preempt(q, &rq, now);
            if preempt == Preempt::AsCloseQueue {
                self.queues[q].coop_preempt = true;
                self.queues[q].jumped_to = true;
            }
            if preempt != Preempt::No {
                self.preempt_queue(q, now);
                self.run_queue = true;
            }
        }
    }

    fn take_queue_run(&mut self) -> bool {
        std::mem::take(&mut self.run_queue)
    }

    fn dispatch(&mut self, now_ns: Nanos) -> Dispatch {
        let now = now_ns;
        self.advance(now);
        if self.rq_queued == 0 {
            return match self.idle_until {
                Some(t) => Dispatch::WaitUntil { until_ns: t },
                None => Dispatch::Empty,
            };
        }
        self.fifo_hit = false;
        if let Some(q) = self.select_queue(now) {
            if let Some(rq) = self.dispatch_from(q, now) {
                self.decision = if self.fifo_hit { "fifo expired" } else { self.picked };
                return Dispatch::Request(rq);
            }
        }
        if let Some(t) = self.idle_until {
            return Dispatch::WaitUntil { until_ns: t };
        }
        if self.in_driver == 0 {
            // Nothing in flight will wake us: wait for the slice decision.
            if let Some(q) = self.active {
                let e = self.queues[q].slice_end;
                if e > now {
                    return Dispatch::WaitUntil { until_ns: e };
                }
            }
            return Dispatch::WaitUntil { until_ns: now + 1 };
        }
        Dispatch::Empty
    }

    /// `cfq_exit_io_context` → `cfq_exit_cfqq` on the context's async and sync queues
    /// (every era from 2.6.29 to 3.5): the active one's slice ends now, without a residual
    /// (`__cfq_slice_expired(cfqd, cfqq, 0)`), and the context lets go of its sync queue
    /// (a merged queue loses a process reference).
    fn exited(&mut self, io_context: u32, now_ns: Nanos) -> bool {
        self.advance(now_ns);
        // The context lets go of its queues: its sync ones (one per group it used) and the
        // async one it last used.
        let mut sync = Vec::new();
        self.sync_map.retain(|&(ioc, _), &mut q| {
            if ioc == io_context {
                sync.push(q);
            }
            ioc != io_context
        });
        let async_q = self.cics.get_mut(&io_context).and_then(|c| c.async_queue.take());
        for &q in &sync {
            let qq = &mut self.queues[q];
            qq.process_refs = qq.process_refs.saturating_sub(1);
        }
        let expire = self.active.is_some_and(|a| sync.contains(&a) || async_q == Some(a));
        if expire {
            self.expire_cause = "process exited";
            self.slice_expired(false, now_ns);
        }
        expire
    }

    fn completed(&mut self, rq: &Request, now_ns: Nanos) {
        let now = now_ns;
        self.advance(now);
        let Some((q, dispatch_ns)) = self.inflight.remove(&rq.id) else { return };
        self.update_hw_tag();
        if !self.t.workload_trees {
            self.update_hw_tag_31();
        }
        let sync = self.queues[q].sync;
        let g = self.queues[q].group;
        self.in_driver -= 1;
        self.queues[q].dispatched -= 1;
        self.groups[g].dispatched -= 1;
        self.in_flight[usize::from(sync)] -= 1;
        self.groups[g].stats.io_service_time_ns.add(
            rq.op.is_read(),
            rq.sync,
            now.saturating_sub(dispatch_ns),
        );
        if self.v32() {
            let qq = &self.queues[q];
            let tree = match qq.st {
                Some((tree, _)) => tree,
                None => tree_index(qq.class, self.wl(q)),
            };
            let group_scheduling = self.t.group_scheduling;
            let grp = &mut self.groups[g];
            if sync {
                grp.tree_ttime[tree].last_end = now;
            }
            if group_scheduling {
                grp.ttime.last_end = now;
            }
        }
        if sync {
            self.last_end_sync_rq = now;
            self.cics.entry(rq.owner.io_context).or_default().last_end_request = Some(now);
            if rq.submit_ns + self.t.fifo_expire[1] <= now {
                self.last_delayed_sync = Some(now);
            }
        }
        if self.active == Some(q) {
            let empty = self.queues[q].sort.is_empty();
            if self.queues[q].slice_new {
                self.set_prio_slice(q, now);
                self.queues[q].slice_new = false;
            }
            if self.should_wait_busy(q, now) {
                let extend =
                    if self.t.slice_idle > 0 { self.t.slice_idle } else { self.group_idle() };
                self.queues[q].slice_end = now + extend;
                self.queues[q].wait_busy = true;
            }
            if self.slice_used(q, now) || self.queues[q].class == IDLE {
                self.expire_cause = "slice expired";
                self.slice_expired(true, now);
            } else if sync
                && empty
                && (self.t.workload_trees || self.v2629() || !rq.noidle)
                && !self.has_close_cooperator(q)
            {
                // 2.6.31 idles for no request marked `REQ_NOIDLE` (`!rq_noidle(rq)`); 2.6.37+
                // takes the idle window away when such a request is queued (below).
                self.arm_slice_timer(q, now);
            }
        }
    }

    fn set_group(&mut self, group: &Cgroup) {
        let g = match self.group_map.get(&group.id) {
            Some(&g) => g,
            None => {
                let g = self.groups.len();
                // Configured before the run: created at time 0.
                self.groups.push(Group::new(group.path.clone(), group.weight, 0));
                self.group_map.insert(group.id, g);
                g
            }
        };
        let grp = &mut self.groups[g];
        grp.path = group.path.clone();
        if g == 0 {
            self.root_weight_set = true;
        }
        self.set_weight(g, group.weight.max(1));
    }

    fn queued(&self) -> usize {
        self.rq_queued
    }

    fn tunables(&self) -> Vec<TunableInfo> {
        TUNABLES.iter().map(|s| s.info(self.get(s.name))).collect()
    }

    fn groups_active(&self) -> bool {
        self.t.group_scheduling
    }

    fn last_decision(&self) -> &'static str {
        self.decision
    }

    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), TunableError> {
        let spec = TUNABLES
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| TunableError::unknown("cfq", name, &self.tunables()))?;
        let v = spec.parse("cfq", value)?;
        let t = &mut self.t;
        match name {
            "quantum" => t.quantum = v,
            "fifo_expire_sync" => t.fifo_expire[1] = v * NS_PER_MS,
            "fifo_expire_async" => t.fifo_expire[0] = v * NS_PER_MS,
            "back_seek_max" => t.back_max_sectors = v * 2,
            "back_seek_penalty" => t.back_penalty = v,
            "slice_sync" => t.slice[1] = v * NS_PER_MS,
            "slice_async" => t.slice[0] = v * NS_PER_MS,
            "slice_async_rq" => t.slice_async_rq = v,
            "slice_idle" => t.slice_idle = v * NS_PER_MS,
            "group_idle" => t.group_idle = v * NS_PER_MS,
            "low_latency" => t.low_latency = v == 1,
            "group_scheduling" => t.group_scheduling = v == 1,
            "workload_trees" => t.workload_trees = v == 1,
            "queue_merging" => t.queue_merging = v == 1,
            "rules_2_6_32" => t.rules_2_6_32 = v == 1,
            "rules_3_2" => t.rules_3_2 = v == 1,
            "rules_2_6_29" => t.rules_2_6_29 = v == 1,
            _ => unreachable!(),
        }
        if name == "workload_trees" && !self.root_weight_set {
            let w = if v == 1 { ROOT_WEIGHT_2_6_33 } else { Cgroup::DEFAULT_WEIGHT };
            self.set_weight(0, w);
        }
        Ok(())
    }
}

impl Cfq {
    /// Gives group `g` weight `w`, keeping the busy groups' total in step.
    fn set_weight(&mut self, g: usize, w: u32) {
        let grp = &mut self.groups[g];
        if grp.on_st.is_some() {
            self.total_weight = self.total_weight - u64::from(grp.weight) + u64::from(w);
        }
        grp.weight = w;
    }

    fn get(&self, name: &str) -> u64 {
        let t = &self.t;
        match name {
            "quantum" => t.quantum,
            "fifo_expire_sync" => t.fifo_expire[1] / NS_PER_MS,
            "fifo_expire_async" => t.fifo_expire[0] / NS_PER_MS,
            "back_seek_max" => t.back_max_sectors / 2,
            "back_seek_penalty" => t.back_penalty,
            "slice_sync" => t.slice[1] / NS_PER_MS,
            "slice_async" => t.slice[0] / NS_PER_MS,
            "slice_async_rq" => t.slice_async_rq,
            "slice_idle" => t.slice_idle / NS_PER_MS,
            "group_idle" => t.group_idle / NS_PER_MS,
            "low_latency" => u64::from(t.low_latency),
            "group_scheduling" => u64::from(t.group_scheduling),
            "workload_trees" => u64::from(t.workload_trees),
            "queue_merging" => u64::from(t.queue_merging),
            "rules_2_6_32" => u64::from(t.rules_2_6_32),
            "rules_3_2" => u64::from(t.rules_3_2),
            "rules_2_6_29" => u64::from(t.rules_2_6_29),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests;
