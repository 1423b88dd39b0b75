//! BFQ, Budget Fair Queueing (Paolo Valente et al.; `block/bfq-iosched.c`, `bfq-wf2q.c`,
//! Linux 6.x), the core of it: proportional share of the device by *service* (sectors), with
//! per-process queues served one at a time for a budget.
//!
//! - **Queues**: one per process (I/O context) and group for sync I/O, one per group and I/O
//!   priority for async I/O (`bfq_async_queue_prio`: per real-time and best-effort level, one
//!   for the idle class; a task without a class shares best effort's `IOPRIO_BE_NORM` one). The queue in service dispatches its requests in sector order from where the head is
//!   (C-LOOK), taking a request up to `back_seek_max` KiB behind at `back_seek_penalty` times
//!   its distance (`bfq_choose_req`), and the oldest one once per budget if it waited past
//!   `fifo_expire_sync`/`_async` (`bfq_check_fifo`).
//! - **B-WF2Q+** (`bfq-wf2q.c`): each active entity (queue or group) has a start tag `S` and a
//!   finish tag `F = S + budget / weight`; an entity is eligible when `S <= V`, the virtual
//!   time of its parent's service tree, and the eligible entity with the smallest `F` goes
//!   next; `V` advances by `served / Σ active weights` as sectors are served and jumps to the
//!   smallest `S` when nothing is eligible. An entity that becomes active starts at
//!   `max(V, F)` (`__bfq_activate_entity`), so idling earns nothing. Groups (cgroups) are
//!   hierarchical (`CONFIG_BFQ_GROUP_IOSCHED`): a group is an entity of its parent's tree with
//!   its `weight`, and its queues and child groups are scheduled in its own tree; the choice
//!   goes down from the root, tree by tree, to a queue, and service is charged to the queue's
//!   tree and to every ancestor's. When a queue expires its finish tag (and its groups') is
//!   recomputed from what it was charged.
//! - **Budgets** (`__bfq_bfqq_recalc_budget`): a sync queue's next budget follows why it
//!   expired: budget exhausted ×4, timeout (`timeout_sync`) ×2, nothing left to do
//!   (`NO_MORE_REQUESTS`) the service it used, idle past `slice_idle` shrinks by 4 minimum
//!   budgets (or doubles if requests are still in flight); between `max_budget / 32` and
//!   `max_budget`. Async queues always get `max_budget`. A sync queue's budget times out
//!   after `timeout_sync`, 30 times that for an interactively raised queue
//!   (`bfq_set_budget_timeout`: times `entity.weight / orig_weight`); an async queue's too.
//! - **Charging time** (`bfq_bfqq_charge_time`): a queue not weight-raised that expires by
//!   timeout with a third of its budget left, or a slow one (`bfq_bfqq_is_slow`: seeky,
//!   `BFQQ_SEEK_THR`, 19 of the last 32 requests farther than 800 sectors; or, after more
//!   than 20 ms in service, served less than half the largest budget), is charged the
//!   largest budget × the time it held the device (its idling not counted, at most
//!   `timeout_sync`) / `timeout_sync` if that is more than it was served, so random or slow
//!   I/O gets its share of *time*, not of sectors it cannot move. A weight-raised sync
//!   queue's next budget is twice the minimum, whatever ended the last.
//! - **Async charge** (`bfq_serv_to_charge`): an async queue is charged
//!   `bfq_async_charge_factor` (3) times the sectors it moves, against its budget and in the
//!   virtual times, unless it is weight-raised or the scenario is asymmetric
//!   (`bfq_asymmetric_scenario`: busy sync queues of different weights, several classes or
//!   several groups busy) — so writes crowd out sync reads less.
//! - **Preemption** (`bfq_bfqq_handle_idle_busy_switch`): a queue that becomes busy with a
//!   higher class, or a higher weight (a weight-raised one), than the one in service expires
//!   it; queues of different groups compare their groups' weights
//!   (`bfq_bfqq_higher_class_or_weight`). Not modelled: the kernel's other reasons to
//!   preempt (a queue that lost its turn waiting for a request with budget left, one in
//!   service that would not be idled for) and its condition that the root's next entity
//!   change (`next_queue_may_preempt`).
//! - **Idling** (`bfq_better_to_idle`): when the sync queue in service runs dry, the device
//!   is kept for it (waiting for its requests in flight, then for `slice_idle`,
//!   `bfq_arm_slice_timer`) if idling pays in throughput (`idling_boosts_thr_without_issues`:
//!   a disk without command queueing, or a sequential, I/O-bound queue with a short think
//!   time on a disk or on flash that does not queue, while no queue is weight-raised) or is
//!   needed for the service guarantees (`idling_needed_for_service_guarantees`: a raised
//!   queue beside others not raised, an asymmetric scenario, or the only busy queue); else
//!   it expires at once. A seeky queue, not raised, in a symmetric scenario waits only
//!   `BFQ_MIN_TT` (2 ms), a raised one at least 20 ms. With `strict_guarantees` it always
//!   waits.
//! - **Weight raising** (`low_latency`): a sync queue that becomes active after being idle for
//!   `bfq_wr_min_idle_time` (2 s), or is new, gets its weight multiplied by `wr_coeff` 30 for
//!   `wr_duration` (`bfq_wr_duration`: 8 s scaled by a reference rate of 14,000 sectors/s
//!   against the device's measured peak rate, clamped to 3–25 s) — interactive applications
//!   start fast — unless it was created in a **large burst** (`bfq_handle_burst`: 8 queues
//!   created within 180 ms of each other, as the start-up of a parallel job is). A queue whose
//!   backlogs come no sooner than its service at `bfq_wr_max_softrt_rate` (7,000 sectors/s)
//!   allows, with nothing in flight, is **soft real-time** (`bfq_bfqq_softrt_next_start`): it
//!   is raised by `wr_coeff × 100` for `bfq_wr_rt_max_time` (300 ms), renewed at each such
//!   backlog — a player or a periodic logger keeps its latency beside streams.
//!
//! - **ioprio classes** (`bfq_lookup_next_entity`): each tree has a service tree per class,
//!   served real-time first, then best effort, then idle — but the idle class at least every
//!   `BFQ_CL_IDLE_TIMEOUT` (200 ms). A queue of a higher class that becomes busy preempts the
//!   one in service; the idle class is never idled for nor weight-raised. A queue's weight
//!   follows its ioprio level, `(8 − level)` (`bfq_ioprio_to_weight`), so level 0 weighs
//!   twice level 4; a process's new ioprio takes effect when its queue next becomes active.
//!
//! - **Early queue merging** (`bfq_setup_cooperator`, `BFQQ_CLOSE_THR` 8,192 sectors): a sync
//!   queue whose new request lands close to where the queue in service (or another active
//!   queue) is goes on in that queue, unless either has been served for more than
//!   `bfq_merge_time_limit` (100 ms) since its first I/O; a merged queue that turns seeky
//!   splits again. Not on a non-rotational device that queues internally
//!   (`nonrot_with_queueing`): it reorders interleaved I/O itself.
//!
//! - **Injection** (`bfq_select_queue`'s `keep_queue` branch, Linux 5.2+): while the queue in
//!   service is empty and BFQ idles for it (or waits for its requests in flight), requests
//!   of other queues go to the drive: first the same process's async writes, then — when
//!   idling does not simply pay (`idling_boosts_thr_without_issues`: a rotational device
//!   without internal queueing, or a sequential I/O-bound queue with a short think time
//!   unless on flash that queues, and no weight-raised queue busy) — the first busy queue
//!   whose next request fits its budget (`bfq_choose_bfqq_for_injection`), up to the queue
//!   in service's `inject_limit` requests in the drive. The limit adapts
//!   (`bfq_update_inject_limit`): a request of the queue in service that arrives with the
//!   drive empty times the base service time; one that arrives beside injected requests and
//!   takes half as long again lowers the limit, a quicker one raises it (up to one more
//!   than the most requests seen in the drive); a second after it last fell it is reset
//!   (`bfq_reset_inject_limit`). Injected service is charged to the injected queue; one left
//!   empty leaves its tree with its finish tag moved by what it was served. Whether the
//!   device queues internally is measured as the kernel does (`bfq_update_hw_tag`: more
//!   than 3 requests in it over 32 samples); whether it is rotational the driver says
//!   (`set_rotational`).
//!
//! - **Peak rate** (`bfq/peak_rate.rs`): the kernel's estimator over observation intervals
//!   of sampled dispatches, low-pass filtered; it sets the interactive raising's duration and,
//!   with `max_budget = 0`, the largest budget (`bfq_calc_max_budget`: what the device moves in
//!   `timeout_sync`).
//!
//! Deviations, and why: `max_budget` defaults to 16,384 sectors (`bfq_default_max_budget`,
//! the kernel's value before its first estimate), not to auto-tuning (the kernel's sysfs
//! default 0): auto-tuned on the simulated 7200 rpm disk, the start-up beside 5 readers and 5
//! writers in `reproduce modern-isolation` goes from 4.3 s to 8.8 s and the sequential group
//! beside a random reader under BFQ groups loses half its bandwidth, which we have not
//! explained and so do not make the default;
//! injection from a queue's *waker* or *blocked* queues (`bfq_check_waker`, 5.10+) is not
//! modelled, nor the temporary limit of one request after a long plug with no base sample
//! (the idle timer here ends the plug first); idling is decided by think time alone (`may_idle`
//! below), not by `bfq_better_to_idle`'s throughput and guarantee tests; an injected queue's
//! service is charged to its groups' finish tags when one of their queues next expires (or
//! the group empties), as the kernel's `entity->service` of a group not in service waits;
//! queue weights are the kernel's scaled by 2.5 (100 at level 4, BFQ's default for groups,
//! so queues and groups of the root compare as before); virtual times are `f64` (deterministic,
//! IEEE 754); timers are the driver's (`WaitUntil`).

use std::collections::BTreeMap;

use elevator_core::{Cgroup, IoPrioClass, Nanos, Op, Request, RequestId};

use crate::{Dispatch, Merged, Scheduler, TunableError, TunableInfo, TunableSpec};

mod peak_rate;
use peak_rate::PeakRate;

const MS: Nanos = 1_000_000;
/// `bfq_wr_coeff`.
pub const WR_COEFF: f64 = 30.0;
/// Soft real-time raising: `BFQ_SOFTRT_WEIGHT_FACTOR`, `bfq_wr_rt_max_time` (300 ms) and
/// `bfq_wr_max_softrt_rate` (sectors per second).
const SOFTRT_WEIGHT_FACTOR: f64 = 100.0;
const WR_RT_MAX_TIME_NS: Nanos = 300 * MS;
const WR_MAX_SOFTRT_RATE: u64 = 7_000;
/// Requests this close (sectors) to another queue's position make the queues cooperators
/// (`BFQQ_CLOSE_THR`).
const BFQQ_CLOSE_THR: u64 = 8 * 1024;
/// `bfq_merge_time_limit` (HZ / 10).
const MERGE_TIME_LIMIT_NS: Nanos = 100 * MS;
/// `bfq_wr_min_idle_time`.
const WR_MIN_IDLE_NS: Nanos = 2_000 * MS;
/// `bfq_burst_interval`, `bfq_large_burst_thresh`.
const BURST_INTERVAL_NS: Nanos = 180 * MS;
const LARGE_BURST_THRESH: usize = 8;
/// `BFQQ_SEEK_THR` (sectors) and the seek history: seeky past 19 of 32 samples.
const SEEK_THR_SECTORS: u64 = 800;
const SEEKY_OF_32: u32 = 19;
/// `bfq_wr_duration`'s reference: 8 s at 14,000 sectors/s.
const WR_REF_DURATION_NS: f64 = 8e9;
const WR_REF_RATE_SECTORS_PER_NS: f64 = 14_000.0 / 1e9;
/// A group's weight range (`BFQ_MIN_WEIGHT`, `BFQ_MAX_WEIGHT`) and its default
/// (`BFQ_DEFAULT_GRP_WEIGHT`, `io.bfq.weight`'s `default 100`).
pub const BFQ_MIN_WEIGHT: u32 = 1;
pub const BFQ_MAX_WEIGHT: u32 = 1000;
pub const BFQ_DEFAULT_GRP_WEIGHT: u32 = 100;
/// Groups declared at most (each a `set_group`).
pub const BFQ_GROUPS_MAX: usize = 4096;
/// Queues (processes × groups) at most; past it, new processes share a group's last queue.
pub const BFQ_QUEUES_MAX: usize = 65_536;
/// The ioprio classes' service trees, in the order they are served (`BFQ_IOPRIO_CLASSES`).
/// `bfq_async_charge_factor`: an async queue is charged this many times the sectors it
/// moves while the scenario is symmetric, so writes do not crowd out sync reads.
const ASYNC_CHARGE_FACTOR: u64 = 3;
/// `bfq_default_max_budget`: the largest budget until the peak rate is first measured.
const DEFAULT_MAX_BUDGET: u64 = 16_384;
/// Bounds on the auto-tuned `max_budget` (not the kernel's: it has none; they keep a broken
/// estimate from making budgets of nothing or of the whole device).
const MAX_BUDGET_AUTO_MIN: u64 = 32;
const MAX_BUDGET_AUTO_MAX: u64 = 1 << 24;
/// `bfq_update_hw_tag`: a device that held more than `BFQ_HW_QUEUE_THRESHOLD` requests over
/// `BFQ_HW_QUEUE_SAMPLES` samples queues internally.
const HW_QUEUE_THRESHOLD: usize = 3;
const HW_QUEUE_SAMPLES: u32 = 32;
/// `bfq_requests_within_timer`: arrivals within `slice_idle` of the last completion that make
/// a queue I/O-bound again.
const REQUESTS_WITHIN_TIMER: u32 = 120;
/// `bfq_sample_valid`: the kernel's decayed sample count passes 80 at the third sample.
const TTIME_VALID_SAMPLES: u32 = 3;
/// `BFQQ_SECT_THR_NONROT`: on a non-rotational device at most one request this large
/// (sectors) is injected at a time.
const SECT_THR_NONROT: u64 = 20;
/// `bfq_reset_inject_limit` runs a second after the limit last fell; the limit is sampled
/// at most every 10 ms (`bfq_add_request`).
const INJECT_RESET_NS: Nanos = 1_000 * MS;
const INJECT_SAMPLE_GAP_NS: Nanos = 10 * MS;
const CLASS_RT: usize = 0;
const CLASS_BE: usize = 1;
const CLASS_IDLE: usize = 2;
const CLASSES: usize = 3;
/// The idle class is served at least this often while others are busy
/// (`BFQ_CL_IDLE_TIMEOUT`, HZ / 5).
const CL_IDLE_TIMEOUT_NS: Nanos = 200 * MS;

const TUNABLES: &[TunableSpec] = &[
    TunableSpec {
        name: "slice_idle",
        unit: "ms",
        default: 8,
        min: 0,
        max: 1000,
        description: "How long the queue in service may keep the device idle for its next request.",
    },
    TunableSpec {
        name: "slice_idle_us",
        unit: "us",
        default: 8_000,
        min: 0,
        max: 1_000_000,
        description: "slice_idle in microseconds (one setting: writing either sets both).",
    },
    TunableSpec {
        name: "timeout_sync",
        unit: "ms",
        default: 125,
        min: 1,
        max: 10_000,
        description: "Longest a sync queue is served for one budget.",
    },
    TunableSpec {
        name: "max_budget",
        unit: "sectors",
        default: DEFAULT_MAX_BUDGET,
        min: 0,
        max: 1 << 24,
        description: "Largest budget, in sectors; 0: what the device moves in timeout_sync \
                      at its estimated peak rate (the kernel's default; see the module doc).",
    },
    TunableSpec {
        name: "back_seek_max",
        unit: "KiB",
        default: 16_384,
        min: 0,
        max: 1 << 30,
        description: "How far behind the head a request may be and still be taken.",
    },
    TunableSpec {
        name: "back_seek_penalty",
        unit: "factor",
        default: 2,
        min: 1,
        max: 1024,
        description: "How much a backward seek counts against a forward one.",
    },
    TunableSpec {
        name: "fifo_expire_sync",
        unit: "ms",
        default: 125,
        min: 1,
        max: 100_000,
        description: "Age past which a sync request is served first, once per budget.",
    },
    TunableSpec {
        name: "fifo_expire_async",
        unit: "ms",
        default: 250,
        min: 1,
        max: 100_000,
        description: "Age past which an async request is served first, once per budget.",
    },
    TunableSpec {
        name: "low_latency",
        unit: "bool",
        default: 1,
        min: 0,
        max: 1,
        description: "Weight raising of interactive queues.",
    },
    TunableSpec {
        name: "strict_guarantees",
        unit: "bool",
        default: 0,
        min: 0,
        max: 1,
        description: "Always idle for the queue in service, for exact shares.",
    },
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expiry {
    TooIdle,
    BudgetTimeout,
    BudgetExhausted,
    NoMoreRequests,
    /// A queue of higher weight (a weight-raised one) became busy (`BFQQE_PREEMPTED`).
    Preempted,
}

/// A B-WF2Q+ entity: a queue or a group.
#[derive(Clone, Copy, Debug, Default)]
struct Entity {
    weight: f64,
    start: f64,
    finish: f64,
    budget: u64,
    active: bool,
}

impl Entity {
    /// Finite tags and a positive weight (`Bfq::check_invariants`).
    fn tags_sound(&self) -> bool {
        self.start.is_finite() && self.finish.is_finite() && self.weight > 0.0
    }
}

#[derive(Debug)]
struct Queue {
    key: (u32, u32, bool),
    group: usize,
    /// Its ioprio class's tree (`CLASS_*`) and its weight from the ioprio level.
    class: usize,
    prio_weight: f64,
    entity: Entity,
    requests: Vec<Request>,
    /// Requests dispatched and not completed.
    dispatched: u32,
    /// Sectors served in the current turn.
    served: u64,
    last_end_sector: u64,
    seek_history: u32,
    ttime_mean_ns: f64,
    ttime_samples: u32,
    last_completion_ns: Option<Nanos>,
    last_active_ns: Option<Nanos>,
    wr_until_ns: Option<Nanos>,
    /// The weight-raising factor in force: `wr_coeff` (interactive) or `wr_coeff ×
    /// BFQ_SOFTRT_WEIGHT_FACTOR` (soft real-time).
    wr_factor: f64,
    in_large_burst: bool,
    /// Early queue merging (`bfq_setup_cooperator`): the processes' keys whose requests this
    /// queue serves besides its own, each with the queue it had before.
    coop: Vec<((u32, u32, bool), usize)>,
    /// When the queue dispatched its first request (`first_IO_time`).
    first_io_ns: Option<Nanos>,
    /// `bfq_bfqq_IO_bound`: set at creation, cleared when the queue idles out having used
    /// little of its budget, set again after `bfq_requests_within_timer` quick arrivals.
    io_bound: bool,
    requests_within_timer: u32,
    /// Injection (`bfq_update_inject_limit`): how many requests may be in the drive while
    /// this queue is in service and empty, the total service time of its request with
    /// nothing injected (0: not sampled yet), and when the limit last fell.
    inject_limit: u32,
    last_serv_time_ns: Nanos,
    decrease_time_ns: Option<Nanos>,
    /// Soft real-time detection (`bfq_bfqq_softrt_next_start`): the earliest time a new
    /// backlog counts as isochronous, when the queue last became backlogged from idle and the
    /// sectors it was served since, and whether to compute the next start once its requests
    /// in flight complete (`softrt_update`).
    soft_rt_next_start_ns: Nanos,
    last_idle_bklogged_ns: Nanos,
    service_from_backlogged: u64,
    softrt_update: bool,
}

impl Queue {
    fn sync(&self) -> bool {
        self.key.2
    }

    fn seeky(&self) -> bool {
        self.seek_history.count_ones() > SEEKY_OF_32
    }
}

#[derive(Debug, Default)]
struct Group {
    /// Its entity in its parent's tree (unused for the root).
    entity: Entity,
    /// The group whose tree its entity is in (the root's is itself).
    parent: usize,
    /// The virtual time of each class's tree of this group.
    vtime: [f64; CLASSES],
    /// Active entities of this group's tree: its queues and its child groups.
    active: Vec<Slot>,
    /// When its idle class was last chosen (`bfq_class_idle_last_service`).
    idle_last_service_ns: Nanos,
    /// Service its queues got by injection since one of them last expired (the kernel's
    /// `entity->service` of a group not in service): charged to its finish tag then.
    injected_service: u64,
}

#[derive(Debug)]
struct InService {
    queue: usize,
    start_ns: Nanos,
    /// When its budget times out after `start_ns` (`budget_timeout`).
    timeout_ns: Nanos,
    fifo_checked: bool,
    /// The device idling for it (`wait_request`), if it is.
    idle: Option<Idle>,
}

/// An idle period armed for the queue in service (`bfq_arm_slice_timer`).
#[derive(Clone, Copy, Debug)]
struct Idle {
    /// When it began (`last_idling_start`).
    from_ns: Nanos,
    /// When its timer fires.
    until_ns: Nanos,
}

#[derive(Debug)]
pub struct Bfq {
    tun: [u64; TUNABLES.len()],
    queues: Vec<Queue>,
    by_key: BTreeMap<(u32, u32, bool), usize>,
    /// `bic->bfqq[0]` per I/O context: the async queue its last async request went to.
    async_of: BTreeMap<u32, usize>,
    /// Group 0 is the root; every other group is an entity of its parent's tree, as are the
    /// queues of a group.
    groups: Vec<Group>,
    group_of_cgroup: BTreeMap<u32, usize>,
    in_service: Option<InService>,
    /// The queue of each dispatched request, until it completes.
    dispatched_from: BTreeMap<RequestId, usize>,
    head_sector: u64,
    /// Where the queue in service's last request ended (`in_serv_last_pos`): an injected
    /// request moves the head, not this, so cooperators are found near the queue in service.
    in_serv_last_pos: u64,
    burst: Vec<usize>,
    burst_last_ns: Option<Nanos>,
    large_burst: bool,
    /// The estimated peak rate and the `max_budget` it gives when auto-tuned.
    peak: PeakRate,
    auto_max_budget: u64,
    queued: usize,
    /// Why the queue in service last changed, and why the last request went.
    last_expiry: Option<Expiry>,
    fifo_hit: bool,
    decision: &'static str,
    /// Early queue merging on (always, as in the kernel; off only to compare in tests).
    coop_merging: bool,
    /// The device's `queue/rotational` (`blk_queue_nonrot`), from the driver.
    rotational: bool,
    /// `bfq_update_hw_tag`: whether the device queues internally (`None` until sampled,
    /// taken as yes, the kernel's -1), the most requests seen in it, and samples taken.
    hw_tag: Option<bool>,
    max_rq_in_driver: usize,
    hw_tag_samples: u32,
    /// Injection state of the queue in service (`bfq_data`): a request of another queue
    /// was injected, the next dispatch of the queue in service is to be timed, the request
    /// being timed and since when.
    rqs_injected: bool,
    wait_dispatch: bool,
    waited_rq: Option<RequestId>,
    last_empty_occupied_ns: Nanos,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Queue(usize),
    Group(usize),
}

impl Default for Bfq {
    fn default() -> Bfq {
        Bfq::new()
    }
}

impl Bfq {
    pub fn new() -> Bfq {
        let mut tun = [0; TUNABLES.len()];
        for (t, s) in tun.iter_mut().zip(TUNABLES) {
            *t = s.default;
        }
        Bfq {
            tun,
            queues: Vec::new(),
            by_key: BTreeMap::new(),
            async_of: BTreeMap::new(),
            groups: vec![Group {
                entity: Entity { weight: 100.0, ..Entity::default() },
                ..Group::default()
            }],
            group_of_cgroup: BTreeMap::new(),
            in_service: None,
            dispatched_from: BTreeMap::new(),
            head_sector: 0,
            in_serv_last_pos: 0,
            burst: Vec::new(),
            burst_last_ns: None,
            large_burst: false,
            peak: PeakRate::new(WR_REF_RATE_SECTORS_PER_NS * 2.0 / 3.0),
            auto_max_budget: DEFAULT_MAX_BUDGET,
            queued: 0,
            last_expiry: None,
            fifo_hit: false,
            decision: "",
            coop_merging: true,
            rotational: true,
            hw_tag: None,
            max_rq_in_driver: 0,
            hw_tag_samples: 0,
            rqs_injected: false,
            wait_dispatch: false,
            waited_rq: None,
            last_empty_occupied_ns: 0,
        }
    }

    /// Where tunable `name` is in [`TUNABLES`] (and `tun`).
    fn tunable_index(name: &str) -> Option<usize> {
        TUNABLES.iter().position(|t| t.name == name)
    }

    fn t(&self, name: &str) -> u64 {
        self.tun[Self::tunable_index(name).expect("a tunable")]
    }

    /// `bfq_slice_idle`, kept in nanoseconds by the kernel and shown in milliseconds by
    /// `slice_idle` and in microseconds by `slice_idle_us`; here the microseconds are the
    /// setting.
    fn slice_idle_ns(&self) -> Nanos {
        self.t("slice_idle_us") * 1_000
    }

    fn max_budget(&self) -> u64 {
        match self.t("max_budget") {
            0 => self.auto_max_budget,
            user => user,
        }
    }

    fn min_budget(&self) -> u64 {
        (self.max_budget() / 32).max(1)
    }

    /// `bfq_bfqq_softrt_next_start`: not before the service received since the queue became
    /// backlogged, at `bfq_wr_max_softrt_rate`, has been paid for, nor before an idle slice
    /// (plus 4 ms, the kernel's 4 jiffies) from now.
    fn softrt_next_start(&self, q: usize, now: Nanos) -> Nanos {
        let qu = &self.queues[q];
        let paid = qu.last_idle_bklogged_ns
            + qu.service_from_backlogged.saturating_mul(1_000_000_000) / WR_MAX_SOFTRT_RATE;
        let idle = now + self.slice_idle_ns() + 4 * MS;
        qu.soft_rt_next_start_ns.max(paid).max(idle)
    }

    /// `bfq_wr_duration`: the reference duration scaled by the reference rate over the
    /// estimated peak rate, 3–25 s.
    fn wr_duration_ns(&self) -> Nanos {
        let rate = self.peak.rate.max(f64::MIN_POSITIVE);
        (WR_REF_DURATION_NS * WR_REF_RATE_SECTORS_PER_NS / rate).clamp(3e9, 25e9) as Nanos
    }

    /// `update_thr_responsiveness_params`: with `max_budget` 0 (auto, the kernel's default)
    /// the largest budget is what the device moves in `timeout_sync` at the estimated peak
    /// rate (`bfq_calc_max_budget`).
    fn peak_rate_changed(&mut self) {
        let sectors = self.peak.rate * (self.t("timeout_sync") * MS) as f64;
        self.auto_max_budget = (sectors as u64).clamp(MAX_BUDGET_AUTO_MIN, MAX_BUDGET_AUTO_MAX);
    }

    /// The queue for `rq`, created (with burst handling) if new.
    fn queue_for(&mut self, rq: &Request, now: Nanos) -> usize {
        let group = self.group_of_cgroup.get(&rq.owner.cgroup).copied().unwrap_or(0);
        let sync = rq.sync;
        let key = (group as u32, if sync { rq.owner.io_context } else { async_slot(rq) }, sync);
        if let Some(&q) = self.by_key.get(&key) {
            if let Some(t) = self.cooperator(q, rq, now) {
                self.queues[t].coop.push((key, q));
                self.by_key.insert(key, t);
                return t;
            }
            return q;
        }
        if self.queues.len() >= BFQ_QUEUES_MAX {
            return self.queues.len() - 1;
        }
        let q = self.queues.len();
        let max_budget = self.max_budget();
        let (class, prio_weight) = class_and_weight(rq);
        self.queues.push(Queue {
            key,
            group,
            class,
            prio_weight,
            entity: Entity { weight: 100.0, budget: max_budget, ..Entity::default() },
            requests: Vec::new(),
            dispatched: 0,
            served: 0,
            last_end_sector: 0,
            seek_history: 0,
            ttime_mean_ns: 0.0,
            ttime_samples: 0,
            last_completion_ns: None,
            last_active_ns: None,
            wr_until_ns: None,
            wr_factor: WR_COEFF,
            in_large_burst: false,
            soft_rt_next_start_ns: 0,
            last_idle_bklogged_ns: 0,
            service_from_backlogged: 0,
            softrt_update: false,
            coop: Vec::new(),
            first_io_ns: None,
            io_bound: true,
            requests_within_timer: 0,
            inject_limit: 0,
            last_serv_time_ns: 0,
            decrease_time_ns: None,
        });
        self.by_key.insert(key, q);
        // bfq_handle_burst: queues created close together form a burst.
        if sync {
            if self.burst_last_ns.is_none_or(|t| now > t + BURST_INTERVAL_NS) {
                self.burst.clear();
                self.large_burst = false;
            }
            self.burst_last_ns = Some(now);
            self.burst.push(q);
            if self.large_burst {
                self.queues[q].in_large_burst = true;
            } else if self.burst.len() >= LARGE_BURST_THRESH {
                self.large_burst = true;
                for &b in &self.burst {
                    self.queues[b].in_large_burst = true;
                    self.queues[b].wr_until_ns = None;
                }
            }
        }
        q
    }

    /// A queue's weight: from its ioprio level (100 at the default level 4), times
    /// `wr_coeff` while weight-raised.
    fn weight_of(&self, q: usize, now: Nanos) -> f64 {
        let w = self.queues[q].prio_weight;
        if self.raised(q, now) {
            w * self.queues[q].wr_factor
        } else {
            w
        }
    }

    /// The class of a tree's entity: a group competes as best effort.
    fn slot_class(&self, s: Slot) -> usize {
        match s {
            Slot::Queue(q) => self.queues[q].class,
            Slot::Group(_) => CLASS_BE,
        }
    }

    /// `bfq_setup_cooperator`: an idle sync queue whose new request lands within
    /// `BFQQ_CLOSE_THR` of where the queue in service is (or of an active queue's next
    /// position), in the same group and class, is merged into that queue, so that the
    /// interleaved I/O of cooperating processes (a dump, QEMU's I/O threads) is served as one
    /// stream (`bfq_merge_bfqqs`: the process's new requests go to the merged queue, those it
    /// had queued are served where they are).
    fn cooperator(&self, q: usize, rq: &Request, now: Nanos) -> Option<usize> {
        let qu = &self.queues[q];
        // bfq_too_late_for_merging: a queue served for more than `bfq_merge_time_limit` after
        // its first I/O keeps to itself (it has shown its pattern; merging now costs more).
        let too_late = |t: &Queue| {
            t.service_from_backlogged > 0
                && t.first_io_ns.is_some_and(|f| now > f + MERGE_TIME_LIMIT_NS)
        };
        // Flash that queues internally reorders interleaved I/O itself, and shared queues only
        // make the load uneven (`nonrot_with_queueing`).
        let nonrot_with_queueing = !self.rotational && self.hw_tag.unwrap_or(true);
        if !self.coop_merging
            || nonrot_with_queueing
            || too_late(qu)
            || !qu.sync()
            || qu.in_large_burst
            || !qu.coop.is_empty()
        {
            return None;
        }
        let fits = |t: usize, pos: u64| {
            let tq = &self.queues[t];
            t != q
                && tq.sync()
                && tq.group == qu.group
                && tq.class == qu.class
                && !tq.in_large_burst
                && !too_late(tq)
                && rq.sector().abs_diff(pos) <= BFQQ_CLOSE_THR
        };
        if let Some(s) = self.in_service.as_ref() {
            if fits(s.queue, self.in_serv_last_pos) {
                return Some(s.queue);
            }
        }
        let closest = |candidates: &mut dyn Iterator<Item = usize>| {
            candidates
                .filter(|&t| fits(t, self.queues[t].last_end_sector))
                .min_by_key(|&t| (rq.sector().abs_diff(self.queues[t].last_end_sector), t))
        };
        closest(&mut self.groups[qu.group].active.iter().filter_map(|s| match s {
            Slot::Queue(x) => Some(*x),
            Slot::Group(_) => None,
        }))
    }

    /// Activates queue `q` (it got a request while idle), and its group if needed.
    fn activate(&mut self, q: usize, now: Nanos) {
        let long_idle = self.queues[q].last_active_ns.is_none_or(|t| now >= t + WR_MIN_IDLE_NS);
        let qu = &self.queues[q];
        let may_raise =
            self.t("low_latency") == 1 && qu.sync() && qu.class != CLASS_IDLE && !qu.in_large_burst;
        // bfq_bfqq_handle_idle_busy_switch: isochronous (soft real-time) when the backlog
        // comes no sooner than the rate limit allows, nothing is in flight, the queue is not
        // totally seeky and weighs the default.
        let qu_default_weight = qu.prio_weight == 100.0;
        let soft_rt = may_raise
            && qu.seek_history != u32::MAX
            && now > qu.soft_rt_next_start_ns
            && qu.dispatched == 0
            && qu_default_weight;
        // bfq_update_bfqq_wr_on_rq_arrival: interactive raising starts (or renews) a long
        // period; otherwise a soft real-time queue gets (or switches to) the short, much
        // stronger one, renewed at each isochronous backlog.
        // Interactive raising, like soft real-time raising, is for queues of the default
        // weight only (`entity.new_weight == 40`): a weight set by ioprio is the user's.
        if may_raise && long_idle && qu_default_weight {
            self.queues[q].wr_factor = WR_COEFF;
            self.queues[q].wr_until_ns = Some(now + self.wr_duration_ns());
        } else if soft_rt {
            self.queues[q].wr_factor = WR_COEFF * SOFTRT_WEIGHT_FACTOR;
            self.queues[q].wr_until_ns = Some(now + WR_RT_MAX_TIME_NS);
        }
        let qu = &mut self.queues[q];
        qu.last_idle_bklogged_ns = now;
        qu.service_from_backlogged = 0;
        qu.softrt_update = false;
        let g = self.queues[q].group;
        let c = self.queues[q].class;
        let vtime = self.groups[g].vtime[c];
        let w = self.weight_of(q, now);
        let e = &mut self.queues[q].entity;
        e.weight = w;
        e.start = e.finish.max(vtime);
        e.finish = e.start + e.budget as f64 / e.weight;
        e.active = true;
        let budget = e.budget;
        self.groups[g].active.push(Slot::Queue(q));
        // bfq_activate_requeue_entity goes up the hierarchy: each group that was idle becomes
        // active in its parent's tree, until one already is (or the root).
        let mut g = g;
        while g != 0 && !self.groups[g].entity.active {
            let parent = self.groups[g].parent;
            let vtime = self.groups[parent].vtime[CLASS_BE];
            let ge = &mut self.groups[g].entity;
            ge.start = ge.finish.max(vtime);
            ge.finish = ge.start + budget as f64 / ge.weight;
            ge.active = true;
            self.groups[parent].active.push(Slot::Group(g));
            g = parent;
        }
    }

    /// B-WF2Q+ selection among `slots` with their entities at virtual time `vtime`: the
    /// eligible one with the smallest finish tag, the vtime moved to the smallest start if
    /// none is eligible.
    fn pick<T: Copy>(
        slots: impl Iterator<Item = T> + Clone,
        entity: impl Fn(T) -> Entity,
        vtime: &mut f64,
    ) -> Option<T> {
        let min_start = slots.clone().map(|s| entity(s).start).fold(f64::INFINITY, f64::min);
        if !min_start.is_finite() {
            return None;
        }
        if min_start > *vtime {
            *vtime = min_start;
        }
        let v = *vtime;
        slots
            .filter(|&s| entity(s).start <= v)
            .min_by(|&a, &b| entity(a).finish.total_cmp(&entity(b).finish))
    }

    /// The class to serve next among entities of `classes` (`bfq_lookup_next_entity`): the
    /// highest present, but the idle class once its `CL_IDLE_TIMEOUT` has passed.
    fn next_class(
        classes: impl Iterator<Item = usize>,
        idle_last: &mut Nanos,
        now: Nanos,
    ) -> Option<usize> {
        let mut present = [false; CLASSES];
        for c in classes {
            present[c] = true;
        }
        let mut class = present.iter().position(|&p| p)?;
        if now >= *idle_last + CL_IDLE_TIMEOUT_NS {
            if present[CLASS_IDLE] {
                class = CLASS_IDLE;
            }
            *idle_last = now;
        }
        Some(class)
    }

    /// `bfq_serv_to_charge`: a request's sectors, times `ASYNC_CHARGE_FACTOR` for an async
    /// queue unless it is weight-raised or the scenario is asymmetric.
    fn serv_to_charge(&self, q: usize, sectors: u64, now: Nanos) -> u64 {
        let qu = &self.queues[q];
        let raised = self.raised(q, now);
        if qu.sync() || raised || self.asymmetric() {
            sectors
        } else {
            sectors * ASYNC_CHARGE_FACTOR
        }
    }

    /// `bfq_asymmetric_scenario`: busy sync queues of different weights, more than one
    /// ioprio class busy, or more than one group with pending requests.
    fn asymmetric(&self) -> bool {
        let mut weight = None;
        let mut class = None;
        let mut group = None;
        for (g, grp) in self.groups.iter().enumerate() {
            for slot in &grp.active {
                let Slot::Queue(q) = *slot else { continue };
                let qu = &self.queues[q];
                if *class.get_or_insert(qu.class) != qu.class
                    || *group.get_or_insert(g) != g
                    || (qu.sync() && *weight.get_or_insert(qu.entity.weight) != qu.entity.weight)
                {
                    return true;
                }
            }
        }
        false
    }

    /// `bfq_tot_busy_queues`: queues with requests, or in service.
    fn busy_queues(&self) -> usize {
        let slots = self.groups.iter().flat_map(|g| g.active.iter());
        slots.filter(|s| matches!(s, Slot::Queue(_))).count()
    }

    /// `idling_needed_for_service_guarantees`: a weight-raised queue while others are not
    /// raised or the drive holds 4 requests more than it sent, an asymmetric scenario, or
    /// the only busy queue.
    fn idling_needed_for_service_guarantees(&self, q: usize, wr_busy: usize, now: Nanos) -> bool {
        let busy = self.busy_queues();
        let raised_needs = self.raised(q, now)
            && (wr_busy < busy
                || self.dispatched_from.len() >= self.queues[q].dispatched as usize + 4);
        raised_needs || self.asymmetric() || busy == 1
    }

    /// `bfq_better_to_idle`: whether to keep the device idle for queue `q`, empty, in
    /// service: always with `strict_guarantees`; never without `slice_idle`, for an async
    /// queue or the idle class; otherwise when idling pays in throughput or is needed for
    /// the service guarantees.
    fn better_to_idle(&self, q: usize, now: Nanos) -> bool {
        let qu = &self.queues[q];
        if self.t("strict_guarantees") == 1 {
            return true;
        }
        if self.slice_idle_ns() == 0 || !qu.sync() || qu.class == CLASS_IDLE {
            return false;
        }
        let wr_busy = self.wr_busy_queues(now);
        self.idling_boosts_thr_without_issues(q, wr_busy)
            || self.idling_needed_for_service_guarantees(q, wr_busy, now)
    }

    /// `bfq_arm_slice_timer`'s idle time for queue `q`: `slice_idle`, but only `BFQ_MIN_TT`
    /// (2 ms) for a seeky queue not weight-raised in a symmetric scenario, and at least
    /// 20 ms for a weight-raised one.
    fn idle_slice_ns(&self, q: usize, now: Nanos) -> Nanos {
        let sl = self.slice_idle_ns();
        let raised = self.raised(q, now);
        if self.queues[q].seeky() && !raised && !self.asymmetric() {
            sl.min(peak_rate::MIN_TT_NS)
        } else if raised {
            sl.max(20 * MS)
        } else {
            sl
        }
    }

    /// `bfq_lookup_next_entity` from the root down: in each tree the class to serve, then
    /// its B-WF2Q+ choice, until the choice is a queue.
    fn select_queue(&mut self, now: Nanos) -> Option<usize> {
        let queues = &self.queues;
        let mut g = 0;
        for _ in 0..=BFQ_GROUPS_MAX {
            let groups = &self.groups;
            let class_of = |s: Slot| match s {
                Slot::Queue(q) => queues[q].class,
                Slot::Group(_) => CLASS_BE,
            };
            let ent = |s: Slot| match s {
                Slot::Queue(q) => queues[q].entity,
                Slot::Group(g) => groups[g].entity,
            };
            let mut idle_last = groups[g].idle_last_service_ns;
            let c = Self::next_class(
                groups[g].active.iter().map(|&s| class_of(s)),
                &mut idle_last,
                now,
            )?;
            let mut vtime = groups[g].vtime[c];
            let slots = groups[g].active.iter().copied().filter(|&s| class_of(s) == c);
            let chosen = Self::pick(slots, ent, &mut vtime);
            let group = &mut self.groups[g];
            group.idle_last_service_ns = idle_last;
            group.vtime[c] = vtime;
            match chosen? {
                Slot::Queue(q) => return Some(q),
                Slot::Group(h) => g = h,
            }
        }
        None
    }

    /// Charges `sectors` of service to the class trees above queue `q` (`bfq_bfqq_served`):
    /// the queue's own, then each ancestor group's parent tree.
    fn charge_vtime(&mut self, q: usize, sectors: u64) {
        let mut g = self.queues[q].group;
        let mut c = self.queues[q].class;
        for _ in 0..=BFQ_GROUPS_MAX {
            let wsum = self.weight_sum(g, c);
            self.groups[g].vtime[c] += sectors as f64 / wsum.max(1.0);
            if g == 0 {
                break;
            }
            g = self.groups[g].parent;
            c = CLASS_BE;
        }
    }

    /// The weights of the active entities of class `c` in group `g`'s tree.
    fn weight_sum(&self, g: usize, c: usize) -> f64 {
        self.groups[g]
            .active
            .iter()
            .filter(|&&s| self.slot_class(s) == c)
            .map(|&s| match s {
                Slot::Queue(q) => self.queues[q].entity.weight,
                Slot::Group(g) => self.groups[g].entity.weight,
            })
            .sum()
    }

    fn raised(&self, q: usize, now: Nanos) -> bool {
        self.queues[q].wr_until_ns.is_some_and(|t| now < t)
    }

    /// `bfq_bfqq_has_short_ttime` (`bfq_update_has_short_ttime`): too few think-time samples
    /// to tell, or a mean think time of at most half `slice_idle`.
    fn short_ttime(&self, q: usize) -> bool {
        let qu = &self.queues[q];
        qu.ttime_samples < TTIME_VALID_SAMPLES
            || qu.ttime_mean_ns <= (self.slice_idle_ns() / 2) as f64
    }

    /// `wr_busy_queues`: busy queues weight-raised now.
    fn wr_busy_queues(&self, now: Nanos) -> usize {
        let groups = self.groups.iter().flat_map(|g| g.active.iter());
        groups.filter(|s| matches!(s, Slot::Queue(q) if self.raised(*q, now))).count()
    }

    /// `idling_boosts_thr_without_issues`: idling for `q` pays in throughput on a rotational
    /// device without internal queueing, or for a sequential, I/O-bound queue with a short
    /// think time unless the device is flash that queues — and no weight-raised queue
    /// (`wr_busy`: how many are busy) waits meanwhile.
    fn idling_boosts_thr_without_issues(&self, q: usize, wr_busy: usize) -> bool {
        let hw_tag = self.hw_tag.unwrap_or(true);
        let rot_without_queueing = self.rotational && !hw_tag;
        let qu = &self.queues[q];
        let sequential_and_io_bound = !qu.seeky() && qu.io_bound && self.short_ttime(q);
        let boosts =
            rot_without_queueing || ((self.rotational || !hw_tag) && sequential_and_io_bound);
        boosts && wr_busy == 0
    }

    /// The request to inject while queue `q`, in service, has none (`bfq_select_queue`'s
    /// `keep_queue` branch): the same process's async write if it fits its queue's budget,
    /// else, when idling does not simply pay, one of another queue
    /// (`bfq_choose_bfqq_for_injection`). Returns the queue, the request's index and the
    /// decision's phrase.
    fn injection(&mut self, q: usize, now: Nanos) -> Option<(usize, usize, &'static str)> {
        let fits = |b: &Bfq, c: usize, i: usize| {
            let qu = &b.queues[c];
            b.serv_to_charge(c, qu.requests[i].sectors().max(1), now)
                <= qu.entity.budget.saturating_sub(qu.served)
        };
        let (group, pid) = (self.queues[q].key.0, self.queues[q].key.1);
        // `bic_to_bfqq(bic, false)`: the async queue the process's writes last went to.
        if let Some(&a) = self.async_of.get(&pid).filter(|&&a| self.queues[a].key.0 == group) {
            if let Some(i) = self.closest_request(a) {
                if self.queues[a].requests[i].owner.io_context == pid && fits(self, a, i) {
                    return Some((a, i, "idling: injected the same process's async write"));
                }
            }
        }
        // A raised queue that thinks fast is injected for only while other raised queues wait.
        let wr_busy = self.wr_busy_queues(now);
        let always_inject = !self.raised(q, now) || !self.short_ttime(q);
        if self.idling_boosts_thr_without_issues(q, wr_busy) || (!always_inject && wr_busy <= 1) {
            return None;
        }
        // bfq_choose_bfqq_for_injection: up to the limit of requests in the drive, from the
        // first busy queue whose next request fits its budget (a raised one only, if the
        // queue in service is raised and thinks fast).
        let in_driver = self.dispatched_from.len();
        if in_driver >= self.queues[q].inject_limit as usize {
            return None;
        }
        for g in 0..self.groups.len() {
            for k in 0..self.groups[g].active.len() {
                let Slot::Queue(c) = self.groups[g].active[k] else { continue };
                if c == q || !(always_inject || self.raised(c, now)) {
                    continue;
                }
                let Some(i) = self.closest_request(c) else { continue };
                if !fits(self, c, i) {
                    continue;
                }
                if !self.rotational
                    && self.queues[c].requests[i].sectors() >= SECT_THR_NONROT
                    && in_driver >= 1
                {
                    continue;
                }
                self.rqs_injected = true;
                return Some((c, i, "idling: injected another queue's request"));
            }
        }
        None
    }

    /// Dispatches request `i` of queue `c`, not in service: its service is charged to it and
    /// to the virtual times; a queue left empty leaves its tree (`bfq_del_bfqq_busy`) with
    /// its finish tag moved by what it was served.
    fn dispatch_injected(&mut self, c: usize, i: usize, now: Nanos) -> Request {
        let sectors = self.serv_to_charge(c, self.queues[c].requests[i].sectors().max(1), now);
        let rq = self.take_request(c, i, sectors, now);
        let mut g = self.queues[c].group;
        while g != 0 {
            self.groups[g].injected_service += sectors;
            g = self.groups[g].parent;
        }
        if self.queues[c].requests.is_empty() {
            let qu = &mut self.queues[c];
            qu.entity.finish = qu.entity.start + qu.served as f64 / qu.entity.weight;
            qu.served = 0;
            self.deactivate(c, now);
            let mut g = self.queues[c].group;
            while g != 0 && self.groups[g].active.is_empty() {
                let parent = self.groups[g].parent;
                let grp = &mut self.groups[g];
                grp.entity.finish = grp.entity.start
                    + std::mem::take(&mut grp.injected_service) as f64 / grp.entity.weight;
                self.groups[g].entity.active = false;
                self.groups[parent].active.retain(|&s| s != Slot::Group(g));
                g = parent;
            }
        }
        rq
    }

    /// Takes request `i` off queue `q` for the drive, in service or injected: `sectors` of
    /// service charged against the queue's budget and the virtual times above it, the head
    /// moved to its end, the peak-rate estimator told (`bfq_dispatch_rq_from_bfqq`).
    fn take_request(&mut self, q: usize, i: usize, sectors: u64, now: Nanos) -> Request {
        let rq = self.queues[q].requests.swap_remove(i);
        self.dispatched_from.insert(rq.id, q);
        self.queued -= 1;
        let qu = &mut self.queues[q];
        qu.served += sectors;
        qu.first_io_ns.get_or_insert(now);
        qu.service_from_backlogged += sectors;
        qu.dispatched += 1;
        self.head_sector = rq.sector() + rq.sectors();
        self.charge_vtime(q, sectors);
        let in_driver = self.dispatched_from.len() - 1;
        if self.peak.dispatched(rq.sector(), rq.sectors(), in_driver, now) {
            self.peak_rate_changed();
        }
        rq
    }

    /// `bfq_reset_inject_limit`: forget the sampled service time; start injecting at 0
    /// requests for a queue that thinks fast (an injected request could delay its next one),
    /// at 1 for one that does not.
    fn reset_inject_limit(&mut self, q: usize, now: Nanos) {
        self.waited_rq = None;
        let limit = u32::from(!self.short_ttime(q));
        let qu = &mut self.queues[q];
        qu.last_serv_time_ns = 0;
        qu.inject_limit = limit;
        qu.decrease_time_ns = Some(now);
    }

    /// `bfq_update_inject_limit`, when the timed request of the queue in service completes:
    /// its total service time against the one sampled with nothing injected — half as long
    /// again lowers the limit, shorter raises it (up to the most requests seen in the drive).
    fn update_inject_limit(&mut self, q: usize, in_driver: usize, now: Nanos) {
        let tot = now.saturating_sub(self.last_empty_occupied_ns);
        let max_in_driver = self.max_rq_in_driver;
        let injected = self.rqs_injected;
        let qu = &mut self.queues[q];
        let old = qu.inject_limit;
        if qu.last_serv_time_ns > 0 && injected {
            let threshold = qu.last_serv_time_ns * 3 / 2;
            if tot >= threshold && old > 0 {
                qu.inject_limit -= 1;
                qu.decrease_time_ns = Some(now);
            } else if tot < threshold && old as usize <= max_in_driver {
                qu.inject_limit += 1;
            }
        }
        if (qu.last_serv_time_ns == 0 && in_driver == 1) || tot < qu.last_serv_time_ns {
            if qu.last_serv_time_ns == 0 {
                qu.inject_limit = old.max(1);
            }
            qu.last_serv_time_ns = tot;
        } else if !injected && in_driver == 1 {
            qu.last_serv_time_ns = tot;
        }
        self.waited_rq = None;
        self.rqs_injected = false;
    }

    /// `bfq_update_hw_tag`, at each completion with `in_driver` requests in the drive.
    fn update_hw_tag(&mut self, in_driver: usize) {
        self.max_rq_in_driver = self.max_rq_in_driver.max(in_driver);
        if self.hw_tag == Some(true) || in_driver + self.queued <= HW_QUEUE_THRESHOLD {
            return;
        }
        if let Some(s) = self.in_service.as_ref() {
            let qu = &self.queues[s.queue];
            if self.short_ttime(s.queue)
                && qu.dispatched as usize + qu.requests.len() < HW_QUEUE_THRESHOLD
                && in_driver < HW_QUEUE_THRESHOLD
            {
                return;
            }
        }
        self.hw_tag_samples += 1;
        if self.hw_tag_samples <= HW_QUEUE_SAMPLES {
            return;
        }
        self.hw_tag = Some(self.max_rq_in_driver > HW_QUEUE_THRESHOLD);
        self.max_rq_in_driver = 0;
        self.hw_tag_samples = 0;
    }

    /// `bfq_bfqq_is_slow` for queue `q`, in service as `s`, expiring at `now` for `reason`:
    /// whether it is slow, and for how many milliseconds it held the device since its budget
    /// began (until its idling began, when it expires for having idled too long: the
    /// kernel's `compensate`). A sync queue is slow if seeky; one served for more than 20 ms
    /// also if it got less than half the largest budget. Under 1 ms the time counted is
    /// `slice_idle` on a disk and `BFQ_MIN_TT` (2 ms) on flash.
    fn is_slow(&self, q: usize, s: &InService, reason: Expiry, now: Nanos) -> (bool, u64) {
        let qu = &self.queues[q];
        if !qu.sync() {
            return (false, 0);
        }
        let until = match (reason, s.idle) {
            (Expiry::TooIdle, Some(idle)) => idle.from_ns,
            _ => now,
        };
        let delta_us = until.saturating_sub(s.start_ns) / 1_000;
        let seeky = qu.seeky();
        if delta_us < 1_000 {
            let ms =
                if self.rotational { self.slice_idle_ns() / MS } else { peak_rate::MIN_TT_NS / MS };
            return (seeky, ms);
        }
        let slow = if delta_us > 20_000 { qu.served < self.max_budget() / 2 } else { seeky };
        (slow, delta_us / 1_000)
    }

    /// Expires the queue in service (`bfq_bfqq_expire`).
    fn expire(&mut self, reason: Expiry, now: Nanos) {
        self.expire_as(reason, true, now);
    }

    /// `bfq_bfqq_expire` (`full`) or only its last step, `__bfq_bfqq_expire`, which a
    /// process's exit calls: the queue is charged what it was served and keeps its budget.
    fn expire_as(&mut self, reason: Expiry, full: bool, now: Nanos) {
        let Some(s) = self.in_service.take() else { return };
        self.last_expiry = Some(reason);
        // A merged queue that turned seeky no longer gains from serving its processes
        // together: each goes back to its own queue (`bfq_mark_bfqq_split_coop`).
        if full && !self.queues[s.queue].coop.is_empty() && self.queues[s.queue].seeky() {
            for (key, own) in std::mem::take(&mut self.queues[s.queue].coop) {
                self.by_key.insert(key, own);
            }
        }
        let q = s.queue;
        let timeout_ms = self.t("timeout_sync");
        let served = self.queues[q].served;
        // Soft real-time: a queue that emptied computes when a new backlog would be
        // isochronous, or will when its requests in flight complete.
        if full && self.t("low_latency") == 1 && self.queues[q].requests.is_empty() {
            if self.queues[q].dispatched == 0 {
                self.queues[q].soft_rt_next_start_ns = self.softrt_next_start(q, now);
            } else {
                self.queues[q].softrt_update = true;
            }
        }
        let budget = self.queues[q].entity.budget;
        if full && reason == Expiry::TooIdle && served <= 2 * budget / 10 {
            self.queues[q].io_bound = false;
        }
        // bfq_bfqq_expire: a queue that is not weight-raised and is slow, or timed out with a
        // third of its budget left, is charged the time it held the device
        // (bfq_bfqq_charge_time): the device's largest budget for the whole timeout, that
        // share of it for less, so a queue moving few sectors pays in time.
        let raised = self.raised(q, now);
        let timed_out_early =
            reason == Expiry::BudgetTimeout && budget.saturating_sub(served) >= budget / 3;
        let (slow, delta_ms) = self.is_slow(q, &s, reason, now);
        let charged = if full && !raised && (slow || timed_out_early) {
            let for_time = self.max_budget() * delta_ms.min(timeout_ms) / timeout_ms.max(1);
            served.max(for_time)
        } else {
            served
        };
        // The time charged beyond the sectors served moves the virtual times too, as if served.
        if charged > served {
            self.charge_vtime(q, charged - served);
        }
        // __bfq_bfqq_recalc_budget
        let (min_b, max_b) = (self.min_budget(), self.max_budget());
        let next_budget = if !full {
            budget
        } else if !self.queues[q].sync() {
            max_b
        } else if raised {
            // A weight-raised queue gets a constant, low budget, for a low latency.
            2 * min_b
        } else {
            match reason {
                Expiry::TooIdle if self.queues[q].dispatched > 0 => (budget * 2).min(max_b),
                Expiry::TooIdle if budget > 5 * min_b => budget - 4 * min_b,
                Expiry::TooIdle => min_b,
                Expiry::BudgetTimeout => (budget * 2).min(max_b),
                Expiry::BudgetExhausted => (budget * 4).min(max_b),
                Expiry::NoMoreRequests => served.max(min_b),
                Expiry::Preempted => budget,
            }
        };
        let w = self.weight_of(q, now);
        let g = self.queues[q].group;
        {
            let e = &mut self.queues[q].entity;
            e.finish = e.start + charged as f64 / e.weight;
            e.weight = w;
            e.budget = next_budget.clamp(min_b, max_b);
        }
        self.queues[q].served = 0;
        // Every ancestor group was served what the queue was charged, and what its queues
        // got by injection meanwhile.
        let mut a = g;
        while a != 0 {
            let grp = &mut self.groups[a];
            let service = charged + std::mem::take(&mut grp.injected_service);
            grp.entity.finish = grp.entity.start + service as f64 / grp.entity.weight;
            a = self.groups[a].parent;
        }
        // Requeue or deactivate (`bfq_requeue_bfqq` / `bfq_del_bfqq_busy`).
        if self.queues[q].requests.is_empty() {
            self.deactivate(q, now);
        } else {
            let e = &mut self.queues[q].entity;
            e.start = e.finish;
            e.finish = e.start + e.budget as f64 / e.weight;
        }
        // Up the hierarchy: a group left with nothing active leaves its parent's tree
        // (`bfq_deactivate_entity`); one still busy is requeued with its new finish tag.
        let mut g = g;
        while g != 0 {
            let parent = self.groups[g].parent;
            if self.groups[g].active.is_empty() {
                self.groups[g].entity.active = false;
                self.groups[parent].active.retain(|&s| s != Slot::Group(g));
            } else {
                let ge = &mut self.groups[g].entity;
                ge.start = ge.finish;
                ge.finish = ge.start + next_budget as f64 / ge.weight;
            }
            g = parent;
        }
    }

    fn deactivate(&mut self, q: usize, now: Nanos) {
        self.queues[q].entity.active = false;
        self.queues[q].last_active_ns = Some(now);
        let g = self.queues[q].group;
        self.groups[g].active.retain(|&s| s != Slot::Queue(q));
    }

    /// The bookkeeping that `dispatch` relies on to find work, checked (for tests): a queue
    /// holding requests is in its group's tree or in service; a queue or group is in its
    /// parent's tree exactly when its entity says it is active; an active group has active
    /// entities (or `select_queue` would descend into nothing); the counts of queued and
    /// dispatched requests add up; every tag is a number.
    pub fn check_invariants(&self) -> Result<(), String> {
        let in_service = self.in_service.as_ref().map(|s| s.queue);
        let mut queued = 0;
        for (q, qu) in self.queues.iter().enumerate() {
            queued += qu.requests.len();
            let listed = self.groups[qu.group].active.contains(&Slot::Queue(q));
            if listed != qu.entity.active {
                return Err(format!("queue {q}: active {} but listed {listed}", qu.entity.active));
            }
            if !qu.requests.is_empty() && !qu.entity.active && in_service != Some(q) {
                return Err(format!("queue {q} holds {} requests, inactive", qu.requests.len()));
            }
            let dispatched = self.dispatched_from.values().filter(|&&d| d == q).count();
            if dispatched != qu.dispatched as usize {
                return Err(format!("queue {q}: dispatched {} of {dispatched}", qu.dispatched));
            }
            if !qu.entity.tags_sound() {
                return Err(format!("queue {q}: entity {:?}", qu.entity));
            }
        }
        if queued != self.queued {
            return Err(format!("{queued} requests in queues, {} counted", self.queued));
        }
        for (g, grp) in self.groups.iter().enumerate().skip(1) {
            let listed = self.groups[grp.parent].active.contains(&Slot::Group(g));
            if listed != grp.entity.active {
                return Err(format!("group {g}: active {} but listed {listed}", grp.entity.active));
            }
            if grp.entity.active && grp.active.is_empty() {
                return Err(format!("group {g} is active with nothing active in it"));
            }
            if !grp.entity.tags_sound() {
                return Err(format!("group {g}: entity {:?}", grp.entity));
            }
        }
        for grp in &self.groups {
            if grp.vtime.iter().any(|v| !v.is_finite()) {
                return Err(format!("vtime {:?}", grp.vtime));
            }
        }
        Ok(())
    }

    /// `bfq_choose_req` over the queue's requests from the head position, or the expired FIFO
    /// head once per budget.
    fn next_request(&mut self, q: usize, now: Nanos, fifo_checked: &mut bool) -> Option<usize> {
        let reqs = &self.queues[q].requests;
        if reqs.is_empty() {
            return None;
        }
        if !*fifo_checked {
            *fifo_checked = true;
            let expire = if self.queues[q].sync() {
                self.t("fifo_expire_sync")
            } else {
                self.t("fifo_expire_async")
            } * MS;
            let (i, oldest) = reqs
                .iter()
                .enumerate()
                .min_by_key(|(_, r)| (r.submit_ns, r.id))
                .expect("not empty");
            if now >= oldest.submit_ns + expire {
                self.fifo_hit = true;
                return Some(i);
            }
        }
        self.closest_request(q)
    }

    /// `bfq_choose_req`'s pick among queue `q`'s requests from the head position: a
    /// metadata request (`REQ_META`) first, then the nearest ahead, or behind within
    /// `back_seek_max` at `back_seek_penalty` times the distance.
    fn closest_request(&self, q: usize) -> Option<usize> {
        let head = self.head_sector;
        let back_max = self.t("back_seek_max") * 2;
        let penalty = self.t("back_seek_penalty");
        self.queues[q]
            .requests
            .iter()
            .enumerate()
            .min_by_key(|(_, r)| {
                let s = r.sector();
                let cost = if s >= head {
                    s - head
                } else if head - s <= back_max {
                    (head - s) * penalty
                } else {
                    u64::MAX / 2 + (head - s)
                };
                (!r.meta, cost, r.id)
            })
            .map(|(i, _)| i)
    }
}

/// The decision of a dispatch that started a new queue: why the last one expired, and
/// whether this request was the expired head of the new queue's FIFO.
fn switch_decision(last: Option<Expiry>, fifo: bool) -> &'static str {
    match (last, fifo) {
        (Some(Expiry::BudgetExhausted), false) => "budget exhausted: next by B-WF2Q+",
        (Some(Expiry::BudgetExhausted), true) => "budget exhausted: next by B-WF2Q+, fifo expired",
        (Some(Expiry::BudgetTimeout), false) => "budget timeout: next by B-WF2Q+",
        (Some(Expiry::BudgetTimeout), true) => "budget timeout: next by B-WF2Q+, fifo expired",
        (Some(Expiry::NoMoreRequests), false) => "queue empty: next by B-WF2Q+",
        (Some(Expiry::NoMoreRequests), true) => "queue empty: next by B-WF2Q+, fifo expired",
        (Some(Expiry::TooIdle), false) => "idling ended: next by B-WF2Q+",
        (Some(Expiry::TooIdle), true) => "idling ended: next by B-WF2Q+, fifo expired",
        (Some(Expiry::Preempted), false) => "preempted: next by B-WF2Q+",
        (Some(Expiry::Preempted), true) => "preempted: next by B-WF2Q+, fifo expired",
        (None, false) => "first queue by B-WF2Q+",
        (None, true) => "first queue by B-WF2Q+, fifo expired",
    }
}

/// A request's ioprio class tree and queue weight: `bfq_ioprio_to_weight`'s
/// `(8 − level) × 10`, scaled so that the default level 4 weighs BFQ's default 100.
/// Which of its group's async queues `rq` goes to (`bfq_async_queue_prio`): real-time levels
/// 0-7, best-effort levels 8-15 (a task without a class: `IOPRIO_BE_NORM`, 12), idle 16.
fn async_slot(rq: &Request) -> u32 {
    let level = u32::from(rq.owner.prio.level.min(7));
    match rq.owner.prio.class {
        IoPrioClass::RealTime => level,
        IoPrioClass::BestEffort => 8 + level,
        IoPrioClass::None => 8 + u32::from(elevator_core::IoPrio::NORM_LEVEL),
        IoPrioClass::Idle => 16,
    }
}

fn class_and_weight(rq: &Request) -> (usize, f64) {
    let class = match rq.owner.prio.effective_class() {
        IoPrioClass::RealTime => CLASS_RT,
        IoPrioClass::Idle => CLASS_IDLE,
        IoPrioClass::BestEffort | IoPrioClass::None => CLASS_BE,
    };
    let level = f64::from(rq.owner.prio.level.min(7));
    (class, (8.0 - level) * 25.0)
}

impl Scheduler for Bfq {
    fn name(&self) -> &'static str {
        "bfq"
    }

    fn try_merge(&mut self, rq: &Request, max_len_bytes: u64, now_ns: Nanos) -> Option<Merged> {
        if rq.op == Op::Flush {
            return None;
        }
        let q = self.queue_for(rq, now_ns);
        crate::merge_into_list(self.queues[q].requests.iter_mut(), rq, max_len_bytes)
    }

    fn insert(&mut self, rq: Request, now_ns: Nanos) {
        let q = self.queue_for(&rq, now_ns);
        if !rq.sync {
            self.async_of.insert(rq.owner.io_context, q);
        }
        let idle_queue =
            !self.queues[q].entity.active && self.in_service.as_ref().is_none_or(|s| s.queue != q);
        let slice_idle_ns = self.slice_idle_ns();
        let qu = &mut self.queues[q];
        if idle_queue {
            // An ioprio change takes effect when the queue next becomes active
            // (`bfq_check_ioprio_change`, `__bfq_entity_update_weight_prio`).
            (qu.class, qu.prio_weight) = class_and_weight(&rq);
        }
        // Think time: from the queue's last completion with nothing queued to this arrival.
        let after_hole = qu.requests.is_empty() && qu.dispatched == 0;
        if after_hole {
            if let Some(t) = qu.last_completion_ns {
                let tt = now_ns.saturating_sub(t) as f64;
                qu.ttime_mean_ns = (qu.ttime_mean_ns * 7.0 + tt) / 8.0;
                qu.ttime_samples = qu.ttime_samples.saturating_add(1);
            }
        }
        // bfq_bfqq_handle_idle_busy_switch: a queue that keeps coming back within
        // `slice_idle` of its last completion is I/O-bound again.
        if idle_queue && !qu.io_bound {
            let quick = qu.last_completion_ns.is_some_and(|t| now_ns < t + slice_idle_ns);
            qu.requests_within_timer = if quick { qu.requests_within_timer + 1 } else { 0 };
            qu.io_bound = qu.requests_within_timer >= REQUESTS_WITHIN_TIMER;
        }
        // bfq_add_request: a sync arrival after a hole resets the injection limit a second
        // after it last fell, and for the queue in service starts timing its total service
        // time — the base value with the drive empty, or its value under injection.
        if after_hole && rq.sync {
            if self.queues[q].decrease_time_ns.is_none_or(|t| now_ns >= t + INJECT_RESET_NS) {
                self.reset_inject_limit(q, now_ns);
            }
            let in_driver = self.dispatched_from.len();
            let qu = &self.queues[q];
            if self.in_service.as_ref().is_some_and(|s| s.queue == q)
                && (in_driver == 0 || (qu.last_serv_time_ns > 0 && self.rqs_injected))
                && qu.decrease_time_ns.is_none_or(|t| now_ns >= t + INJECT_SAMPLE_GAP_NS)
            {
                self.last_empty_occupied_ns = now_ns;
                self.wait_dispatch = true;
                if in_driver == 0 {
                    self.rqs_injected = false;
                }
            }
        }
        let qu = &mut self.queues[q];
        let far = rq.sector().abs_diff(qu.last_end_sector) > SEEK_THR_SECTORS;
        qu.seek_history = (qu.seek_history << 1) | u32::from(far);
        qu.last_end_sector = rq.sector() + rq.sectors();
        qu.requests.push(rq);
        self.queued += 1;
        if !self.queues[q].entity.active && self.in_service.as_ref().is_none_or(|s| s.queue != q) {
            self.activate(q, now_ns);
            // bfq_bfqq_handle_idle_busy_switch: a queue of higher weight (weight-raised) that
            // becomes busy preempts the one in service.
            // So does a queue of a higher class (`bfq_bfqq_higher_class_or_weight`).
            // Queues of different groups compare their groups' weights, a queue of the root
            // group its own (`entity.parent->weight`).
            if let Some(s) = self.in_service.as_ref() {
                let (new, cur) = (&self.queues[q], &self.queues[s.queue]);
                let weight = |qu: &Queue| match qu.group {
                    g if g == 0 || new.group == cur.group => qu.entity.weight,
                    g => self.groups[g].entity.weight,
                };
                if new.class < cur.class || (new.class == cur.class && weight(new) > weight(cur)) {
                    self.expire(Expiry::Preempted, now_ns);
                }
            }
        }
    }

    fn dispatch(&mut self, now_ns: Nanos) -> Dispatch {
        let mut switched = false;
        loop {
            if self.in_service.is_none() {
                switched = true;
                let Some(q) = self.select_queue(now_ns) else { return Dispatch::Empty };
                // bfq_set_budget_timeout: timeout_sync, times the raising factor of an
                // interactively raised queue (entity.weight / orig_weight; 1 for a soft
                // real-time one).
                let qu = &self.queues[q];
                let coeff = if self.raised(q, now_ns) && qu.wr_factor == WR_COEFF {
                    WR_COEFF as u64
                } else {
                    1
                };
                self.in_service = Some(InService {
                    queue: q,
                    start_ns: now_ns,
                    timeout_ns: self.t("timeout_sync") * MS * coeff,
                    fifo_checked: false,
                    idle: None,
                });
            }
            let s = self.in_service.as_ref().expect("in service");
            let q = s.queue;
            if now_ns >= s.start_ns + s.timeout_ns {
                self.expire(Expiry::BudgetTimeout, now_ns);
                continue;
            }
            let mut fifo_checked = s.fifo_checked;
            self.fifo_hit = false;
            match self.next_request(q, now_ns, &mut fifo_checked) {
                Some(i) => {
                    let sectors =
                        self.serv_to_charge(q, self.queues[q].requests[i].sectors().max(1), now_ns);
                    let left = self.queues[q].entity.budget.saturating_sub(self.queues[q].served);
                    if self.queues[q].served > 0 && sectors > left {
                        self.expire(Expiry::BudgetExhausted, now_ns);
                        continue;
                    }
                    let s = self.in_service.as_mut().expect("in service");
                    s.fifo_checked = fifo_checked;
                    s.idle = None;
                    let rq = self.take_request(q, i, sectors, now_ns);
                    self.in_serv_last_pos = self.head_sector;
                    if self.wait_dispatch {
                        self.wait_dispatch = false;
                        self.waited_rq = Some(rq.id);
                    }
                    self.decision = match (switched, self.fifo_hit) {
                        (false, false) => "budget continues",
                        (false, true) => "budget continues, fifo expired",
                        (true, fifo) => switch_decision(self.last_expiry.take(), fifo),
                    };
                    return Dispatch::Request(rq);
                }
                None => {
                    // Once idling (`wait_request`) it idles until its timer; otherwise only
                    // when better (`bfq_bfqq_must_idle`).
                    let idling = self.in_service.as_ref().is_some_and(|s| s.idle.is_some());
                    if !idling && !self.better_to_idle(q, now_ns) {
                        self.expire(Expiry::NoMoreRequests, now_ns);
                        continue;
                    }
                    let idle_ns = self.idle_slice_ns(q, now_ns);
                    let qu = &self.queues[q];
                    // Wait for its requests in flight before idling (a completion calls
                    // back), or idle for its next request — injecting meanwhile.
                    let wait = if qu.dispatched > 0 {
                        Dispatch::Empty
                    } else {
                        let s = self.in_service.as_mut().expect("in service");
                        match s.idle {
                            // strict_guarantees without slice_idle: the timer fires at once.
                            None if idle_ns == 0 => {
                                self.expire(Expiry::TooIdle, now_ns);
                                continue;
                            }
                            None => {
                                let until_ns = now_ns + idle_ns;
                                s.idle = Some(Idle { from_ns: now_ns, until_ns });
                                Dispatch::WaitUntil { until_ns }
                            }
                            Some(Idle { until_ns, .. }) if now_ns < until_ns => {
                                Dispatch::WaitUntil { until_ns }
                            }
                            Some(_) => {
                                self.expire(Expiry::TooIdle, now_ns);
                                continue;
                            }
                        }
                    };
                    if let Some((c, i, why)) = self.injection(q, now_ns) {
                        self.decision = why;
                        return Dispatch::Request(self.dispatch_injected(c, i, now_ns));
                    }
                    return wait;
                }
            }
        }
    }

    /// `bfq_exit_icq` → `bfq_exit_bfqq` on the context's sync and async queues: the one in
    /// service ends its turn by `__bfq_bfqq_expire` (charged what it was served, its budget
    /// kept: `BFQQE_BUDGET_EXHAUSTED` only names the reason).
    fn exited(&mut self, io_context: u32, now_ns: Nanos) -> bool {
        let async_q = self.async_of.remove(&io_context);
        let Some(s) = self.in_service.as_ref().map(|s| s.queue) else { return false };
        let own = async_q == Some(s)
            || self.by_key.iter().any(|(&(_, ioc, sync), &q)| sync && ioc == io_context && q == s);
        if own {
            self.expire_as(Expiry::BudgetExhausted, false, now_ns);
        }
        own
    }

    fn completed(&mut self, rq: &Request, now_ns: Nanos) {
        if self.peak.completed(now_ns) {
            self.peak_rate_changed();
        }
        let in_driver = self.dispatched_from.len();
        self.update_hw_tag(in_driver);
        if self.waited_rq == Some(rq.id) {
            if let Some(&q) = self.dispatched_from.get(&rq.id) {
                self.update_inject_limit(q, in_driver, now_ns);
            }
        }
        if let Some(q) = self.dispatched_from.remove(&rq.id) {
            let qu = &mut self.queues[q];
            qu.dispatched = qu.dispatched.saturating_sub(1);
            qu.last_completion_ns = Some(now_ns);
            if qu.requests.is_empty() && qu.dispatched == 0 && !qu.entity.active {
                qu.last_active_ns = Some(now_ns);
            }
            if qu.softrt_update && qu.dispatched == 0 && qu.requests.is_empty() {
                qu.softrt_update = false;
                self.queues[q].soft_rt_next_start_ns = self.softrt_next_start(q, now_ns);
            }
        }
    }

    fn set_group(&mut self, group: &Cgroup) {
        if group.id == 0 {
            return;
        }
        let weight = f64::from(group.weight.clamp(BFQ_MIN_WEIGHT, BFQ_MAX_WEIGHT));
        // A parent not declared (or past the limit) puts the group under the root.
        let parent = group.parent.and_then(|p| self.group_of_cgroup.get(&p).copied()).unwrap_or(0);
        match self.group_of_cgroup.get(&group.id) {
            Some(&g) => self.groups[g].entity.weight = weight,
            None if self.groups.len() < BFQ_GROUPS_MAX => {
                self.group_of_cgroup.insert(group.id, self.groups.len());
                self.groups.push(Group {
                    entity: Entity { weight, ..Entity::default() },
                    parent,
                    ..Group::default()
                });
            }
            None => {}
        }
    }

    fn groups_active(&self) -> bool {
        self.groups.len() > 1
    }

    fn set_rotational(&mut self, rotational: bool) {
        self.rotational = rotational;
    }

    fn queued(&self) -> usize {
        self.queued
    }

    fn last_decision(&self) -> &'static str {
        self.decision
    }

    fn tunables(&self) -> Vec<TunableInfo> {
        TUNABLES.iter().zip(self.tun).map(|(t, v)| t.info(v)).collect()
    }

    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), TunableError> {
        let i = Self::tunable_index(name)
            .ok_or_else(|| TunableError::unknown(self.name(), name, &self.tunables()))?;
        let v = TUNABLES[i].parse(self.name(), value)?;
        self.tun[i] = v;
        // slice_idle and slice_idle_us are one setting (bfq_slice_idle_store and
        // bfq_slice_idle_us_store both write bfq_slice_idle); the ms file shows it rounded
        // down, as bfq_slice_idle_show divides by NSEC_PER_MSEC.
        let at = |n: &str| Self::tunable_index(n).expect("a tunable");
        match name {
            "slice_idle" => self.tun[at("slice_idle_us")] = v * 1_000,
            "slice_idle_us" => self.tun[at("slice_idle")] = v / 1_000,
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
