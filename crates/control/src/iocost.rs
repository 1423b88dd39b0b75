//! cgroup v2 `io.cost` + `io.weight` (blk-iocost, `block/blk-iocost.c`, Linux 5.10–6.x): a
//! proportional-share controller that charges every bio its modelled device time and lets each
//! cgroup spend it at the rate its hierarchical weight buys.
//!
//! - **Cost model** (`calc_vtime_cost_builtin`): a bio costs `pages × page` plus, unless it
//!   merges into a queued request, one `seqio` or `randio` (farther than 16 MiB from where the
//!   cgroup's last IO ended). The coefficients come from `io.cost.model`
//!   (`rbps rseqiops rrandiops wbps wseqiops wrandiops`, [`calc_lcoefs`]) or the kernel's
//!   automatic parameters for the device class (HDD, SSD with queue depth 1, SSD, fast SSD;
//!   [`AutopClass`]). One second of device time is 2^37 vtime.
//! - **Vtime**: the device's vtime advances at `vrate` (starting at 100 % of the model);
//!   each cgroup has its own vtime, and a bio of absolute cost `c` advances it by
//!   `c / hweight_inuse`. A bio goes when the cgroup's vtime plus its cost is not ahead of the
//!   device's (`ioc_rqos_throttle`), else it waits on the cgroup's wait queue, woken by a timer
//!   when enough vtime has passed (`iocg_kick_waitq`). A newly active cgroup starts with half
//!   a period of budget (`margins.target`).
//! - **Weights** (`io.weight`, 1–10000, default 100): `hweight_active` is the product of
//!   `weight / sum of active siblings' weights` along the path from the root, counting only
//!   cgroups that issued IO in this or the last period (work conservation). Each period
//!   (`ioc_timer_fn`) a cgroup using less than its share **donates** the surplus
//!   (`hweight_after_donation`, `transfer_surpluses`: its `inuse` weight drops so that its
//!   `hweight_inuse` covers its usage with a 50 % margin, and the others' rise by the global
//!   donation rate); a donor short of budget snaps back within the period
//!   (`adjust_inuse_and_calc_cost`, 25 % steps).
//! - **QoS and vrate** (`io.cost.qos`: `rpct rlat wpct wlat min max`): each period counts the
//!   requests that completed later than `rlat`/`wlat` after their allocation (less their size
//!   cost), and the time requests spent between allocation and the driver (`rq_wait`). Missing
//!   more than `100 − rpct` % of reads (or writes), or `rq_wait` above 5 % of the period, raises
//!   the busy level; meeting targets with 25 % to spare while someone is short of budget lowers
//!   it. vrate moves by `vrate_adj_pct[|busy_level|]` % per period within `[min, max]`
//!   (`ioc_adjust_base_vrate`); vtime thrown away by idle or over-budget cgroups is paid back
//!   by a faster vrate within the period (`ioc_refresh_vrate`). The period is
//!   `max((100 − pct) / 5, 2) × lat`, clamped to 1 ms–1 s (`ioc_refresh_period_us`).
//! - **Debt**: a bio that merges into a request already queued is charged without its base
//!   cost and cannot wait; if the cgroup has no budget it becomes **debt**, paid from future
//!   budget before any waiter goes, and the cgroup's submissions are **delayed** in proportion
//!   to how far the debt runs ahead (`iocg_kick_delay`: 250 µs at 5 periods, up to 250 ms at
//!   250 periods, halving each second). While the device is mostly idle debts are halved
//!   every 100 ms (`ioc_forgive_debts`).
//! - The root cgroup's bios bypass the controller (`!iocg->level`), as do flushes and
//!   discards (no cost).
//!
//! Deviations, and why:
//! - *Donation in nested hierarchies*: the kernel realises the global donation rate (Andy's
//!   method) through per-level `inuse` weights; here a leaf's `hweight_inuse` is its
//!   `hweight_active × inuse/active`, normalised over the active leaves. For cgroups that are
//!   siblings under the root this is the kernel's arithmetic exactly; for nested ones it gives
//!   the same global rate without the per-level bookkeeping.
//! - *Merges* are recognised here, before the block layer's merge: a bio that starts where its
//!   cgroup's last released bio ended, in the same direction, while that bio has not reached
//!   the driver yet, is charged as a merge.
//! - *Allocation time* is the moment this controller releases the bio, *start time* when the
//!   block layer hands it to the driver ([`Controller::dispatched`]); latency and `rq_wait`
//!   are sampled per bio rather than per request.
//! - *Delay* holds the cgroup's next releases rather than its tasks' return to user space.
//! - Vtime is computed from nanoseconds, not microseconds, and kept in 128 bits, so it never
//!   wraps (the kernel compares wrapping 64-bit values).

mod params;

use std::collections::{BTreeMap, VecDeque};

use elevator_core::hash::FastHashMap;
use elevator_core::{Nanos, Op};
pub use params::{
    calc_lcoefs, parse_io_weight_line, parse_weight_line, AutopClass, IoCostModel, IoCostQos,
    LinearCoefs, CGROUP_WEIGHT_DFL, CGROUP_WEIGHT_MAX, CGROUP_WEIGHT_MIN, IOCOST_COEF_MAX,
    IOCOST_LAT_MAX_US, IOC_PAGE_SIZE, LCOEF_RANDIO_PAGES, VRATE_MAX_PPM, VRATE_MIN_PPM,
    VTIME_PER_NSEC, VTIME_PER_SEC, VTIME_PER_USEC,
};

use crate::{Bio, Controller, GroupCounters};

/// Fixed-point one for hierarchical weights (`WEIGHT_ONE`, 1/65536 grain).
pub const WEIGHT_ONE: u64 = 1 << 16;
/// Period bounds, µs (`MIN_PERIOD`, `MAX_PERIOD`).
pub const MIN_PERIOD_US: u64 = 1_000;
pub const MAX_PERIOD_US: u64 = 1_000_000;
/// Budget margins in percent of a period (`MARGIN_MIN_PCT`, `_LOW_PCT`, `_TARGET_PCT`).
const MARGIN_MIN_PCT: u64 = 10;
const MARGIN_LOW_PCT: u64 = 20;
const MARGIN_TARGET_PCT: u64 = 50;
/// A donor short of budget raises its inuse by this share of its weight per step.
const INUSE_ADJ_STEP_PCT: u64 = 25;
/// Timer slack, percent of the period (`TIMER_SLACK_PCT`).
const TIMER_SLACK_PCT: u64 = 1;
/// Out-of-bounds vrate moves back by this much per period (`VRATE_CLAMP_ADJ_PCT`).
const VRATE_CLAMP_ADJ_PCT: u64 = 4;
/// Requests waiting between allocation and the driver for more than this share of the
/// period make the device busy (`RQ_WAIT_BUSY_PCT`); `UNBUSY_THR_PCT` is the hysteresis.
const RQ_WAIT_BUSY_PCT: u64 = 5;
const UNBUSY_THR_PCT: u64 = 75;
/// Debt delay: from `MIN_DELAY` µs at 5 periods of overage to `MAX_DELAY` at 250.
const MIN_DELAY_THR_PCT: i128 = 500;
const MAX_DELAY_THR_PCT: i128 = 25_000;
const MIN_DELAY_US: u64 = 250;
const MAX_DELAY_US: u64 = 250_000;
/// Debts halve when the average usage over `DFGV_PERIOD_US` is under `DFGV_USAGE_PCT`.
const DFGV_USAGE_PCT: u64 = 50;
const DFGV_PERIOD_US: u64 = 100_000;
/// IOs in flight longer than this many periods stop counting as lagging.
const MAX_LAGGING_PERIODS: i128 = 10;
/// An SSD's class changes after its vrate stayed out of bounds this long (`AUTOP_CYCLE_NSEC`).
const AUTOP_CYCLE_NS: Nanos = 10_000_000_000;
/// `vrate_adj_pct[]`, indexed by |busy_level|.
const VRATE_ADJ_PCT: [u64; 52] = [
    0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 2, 4, 4, 4, 4, 4, 4, 4, 4, 8, 8, 8, 8, 8, 8, 8, 16,
];
/// Cgroups one controller handles, and how deep they nest.
pub const IOCOST_GROUPS_MAX: usize = 4096;
pub const IOCOST_DEPTH_MAX: usize = 16;

/// One cgroup as io.cost sees it: its weight on this device and its parent (`None`: a child
/// of the root).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoCostGroup {
    pub cgroup: u32,
    pub name: String,
    pub parent: Option<u32>,
    pub weight: u32,
}

#[derive(Debug)]
struct Waiter {
    bio: Bio,
    abs_cost: u64,
    arrived_ns: Nanos,
}

#[derive(Clone, Copy, Debug)]
struct InFlight {
    /// Index of the cgroup, or `ROOT` for a bio that bypassed.
    group: usize,
    /// Vtime charged (0 for debt and bypass): added to `done_vtime` on completion.
    cost: u64,
    released_ns: Nanos,
    started_ns: Option<Nanos>,
    write: bool,
    pages: u64,
    /// Not a read or write: no latency sample.
    data: bool,
}

const ROOT: usize = 0;

#[derive(Debug)]
struct Iocg {
    name: String,
    parent: usize,
    /// Weights are scaled by `WEIGHT_ONE`, as the kernel keeps them.
    weight: u64,
    active: u64,
    inuse: u64,
    last_inuse: u64,
    saved_margin: i128,
    child_active_sum: u64,
    is_active: bool,
    /// Sector where the cgroup's last IO ended (0: none yet).
    cursor: u64,
    vtime: i128,
    done_vtime: i128,
    abs_vdebt: u64,
    delay_us: u64,
    delay_at_ns: Nanos,
    delay_until_ns: Nanos,
    active_period: u64,
    activated_at_ns: Nanos,
    hwa: u64,
    hwi: u64,
    abs_vusage: u128,
    last_abs_vusage: u128,
    usage_delta_us: u64,
    hweight_after_donation: u64,
    waitq: VecDeque<Waiter>,
    wait_timer_ns: Option<Nanos>,
    /// The last released bio while it has not reached the driver: `(id, end sector, write)`.
    mergeable: Option<(u64, u64, bool)>,
    counters: GroupCounters,
}

impl Iocg {
    fn new(name: String, parent: usize, weight: u32) -> Iocg {
        Iocg {
            counters: GroupCounters { name: name.clone(), ..GroupCounters::default() },
            name,
            parent,
            weight: u64::from(weight) * WEIGHT_ONE,
            active: 0,
            inuse: 0,
            last_inuse: 0,
            saved_margin: 0,
            child_active_sum: 0,
            is_active: false,
            cursor: 0,
            vtime: 0,
            done_vtime: 0,
            abs_vdebt: 0,
            delay_us: 0,
            delay_at_ns: 0,
            delay_until_ns: 0,
            active_period: 0,
            activated_at_ns: 0,
            hwa: WEIGHT_ONE,
            hwi: WEIGHT_ONE,
            abs_vusage: 0,
            last_abs_vusage: 0,
            usage_delta_us: 0,
            hweight_after_donation: 0,
            waitq: VecDeque::new(),
            wait_timer_ns: None,
            mergeable: None,
        }
    }
}

/// What the controller did, for reports and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCostStats {
    pub periods: u64,
    /// Periods that ended busy (vrate lowered) and short (vrate raised).
    pub periods_busy: u64,
    pub periods_short: u64,
    /// Bios charged as debt, and debts halved by forgiveness.
    pub debts: u64,
    pub forgiven: u64,
    /// Times a cgroup donated part of its share.
    pub donations: u64,
}

/// The blk-iocost controller of one device.
#[derive(Debug)]
pub struct IoCost {
    groups: Vec<Iocg>,
    by_cgroup: BTreeMap<u32, usize>,
    queue_depth: u32,
    rotational: bool,
    qos: IoCostQos,
    model: IoCostModel,
    class: AutopClass,
    coefs: LinearCoefs,
    period_us: u64,
    timer_slack_ns: u64,
    margin_min: i128,
    margin_low: i128,
    margin_target: i128,
    vrate_min: u64,
    vrate_max: u64,
    /// vtime per µs: the base rate, and the rate in effect (base plus error compensation).
    vtime_base_rate: u64,
    vtime_rate: u64,
    vtime_err: i128,
    running: bool,
    period_at_ns: Nanos,
    period_at_vtime: i128,
    cur_period: u64,
    busy_level: i32,
    /// `hweight_*` need recomputing; the sum of the active leaves' `hwa × inuse/active`.
    weights_dirty: bool,
    inuse_scaled_sum: u128,
    active_list: Vec<usize>,
    nr_met: [u64; 2],
    nr_missed: [u64; 2],
    rq_wait_ns: u64,
    dfgv_period_at_ns: Nanos,
    dfgv_period_rem_us: u64,
    dfgv_usage_us_sum: u64,
    autop_too_fast_at: Option<Nanos>,
    autop_too_slow_at: Option<Nanos>,
    inflight: FastHashMap<u64, InFlight>,
    ready: Vec<Bio>,
    held: usize,
    next_timer_ns: Option<Nanos>,
    /// A timer may have changed since `next_timer_ns` was computed.
    timers_dirty: bool,
    stats: IoCostStats,
}

impl IoCost {
    /// A controller for `groups` on a device; `qos` and `model` as the root cgroup's
    /// `io.cost.qos` and `io.cost.model` say (`None`: the device class's automatic ones).
    /// Requests of cgroups not listed are the root's and bypass.
    pub fn new(
        groups: Vec<IoCostGroup>,
        qos: Option<IoCostQos>,
        model: Option<IoCostModel>,
        rotational: bool,
        queue_depth: u32,
    ) -> Result<IoCost, String> {
        if groups.len() >= IOCOST_GROUPS_MAX {
            return Err(format!(
                "{} io.cost groups: at most {}",
                groups.len(),
                IOCOST_GROUPS_MAX - 1
            ));
        }
        let class = AutopClass::of_device(rotational, queue_depth);
        let mut by_cgroup = BTreeMap::new();
        for (i, g) in groups.iter().enumerate() {
            if !(CGROUP_WEIGHT_MIN..=CGROUP_WEIGHT_MAX).contains(&g.weight) {
                return Err(format!(
                    "cgroup `{}`: io.weight {} is out of range {CGROUP_WEIGHT_MIN}-{CGROUP_WEIGHT_MAX}",
                    g.name, g.weight
                ));
            }
            if by_cgroup.insert(g.cgroup, i + 1).is_some() {
                return Err(format!("cgroup `{}`: configured twice", g.name));
            }
        }
        let mut out = Vec::with_capacity(groups.len() + 1);
        out.push(Iocg::new("(root)".into(), ROOT, CGROUP_WEIGHT_DFL));
        for g in &groups {
            let parent = match g.parent {
                None => ROOT,
                Some(p) => *by_cgroup.get(&p).ok_or_else(|| {
                    format!("cgroup `{}`: its parent is not an io.cost group", g.name)
                })?,
            };
            out.push(Iocg::new(g.name.clone(), parent, g.weight));
        }
        // Refuse cycles and deep nesting.
        for i in 1..out.len() {
            let (mut p, mut depth) = (i, 0);
            while p != ROOT {
                p = out[p].parent;
                depth += 1;
                if depth > IOCOST_DEPTH_MAX {
                    return Err(format!(
                        "cgroup `{}`: nested deeper than {IOCOST_DEPTH_MAX} (or in a cycle)",
                        out[i].name
                    ));
                }
            }
        }
        let qos = qos.unwrap_or_else(|| IoCostQos { enable: true, ..IoCostQos::auto(class) });
        let model = model.unwrap_or_else(|| IoCostModel::auto(class));
        let mut ioc = IoCost {
            groups: out,
            by_cgroup,
            queue_depth,
            rotational,
            qos,
            model,
            class,
            coefs: LinearCoefs::default(),
            period_us: 0,
            timer_slack_ns: 0,
            margin_min: 0,
            margin_low: 0,
            margin_target: 0,
            vrate_min: 0,
            vrate_max: 0,
            vtime_base_rate: VTIME_PER_USEC,
            vtime_rate: VTIME_PER_USEC,
            vtime_err: 0,
            running: false,
            period_at_ns: 0,
            period_at_vtime: 0,
            cur_period: 0,
            busy_level: 0,
            weights_dirty: true,
            inuse_scaled_sum: 0,
            active_list: Vec::new(),
            nr_met: [0; 2],
            nr_missed: [0; 2],
            rq_wait_ns: 0,
            dfgv_period_at_ns: 0,
            dfgv_period_rem_us: 0,
            dfgv_usage_us_sum: 0,
            autop_too_fast_at: None,
            autop_too_slow_at: None,
            inflight: FastHashMap::default(),
            ready: Vec::new(),
            held: 0,
            next_timer_ns: None,
            timers_dirty: false,
            stats: IoCostStats::default(),
        };
        ioc.refresh_params(0, true);
        Ok(ioc)
    }

    pub fn stats(&self) -> IoCostStats {
        self.stats
    }

    /// vrate in ppm of the model's rate (`cost.vrate` of `io.stat`, ×10⁴).
    pub fn vrate_ppm(&self) -> u64 {
        self.vtime_base_rate * 1_000_000 / VTIME_PER_USEC
    }

    pub fn busy_level(&self) -> i32 {
        self.busy_level
    }

    pub fn period_us(&self) -> u64 {
        self.period_us
    }

    pub fn class(&self) -> AutopClass {
        self.class
    }

    pub fn qos(&self) -> IoCostQos {
        self.qos
    }

    pub fn model(&self) -> IoCostModel {
        self.model
    }

    /// The `hweight_active` and `hweight_inuse` of `cgroup` in 1/65536, if it is active.
    pub fn hweights(&mut self, cgroup: u32) -> Option<(u64, u64)> {
        let gi = *self.by_cgroup.get(&cgroup)?;
        self.refresh_hweights();
        let g = &self.groups[gi];
        g.is_active.then_some((g.hwa, g.hwi))
    }

    /// The cgroup's outstanding debt in absolute vtime.
    pub fn debt(&self, cgroup: u32) -> Option<u64> {
        self.by_cgroup.get(&cgroup).map(|&gi| self.groups[gi].abs_vdebt)
    }

    /// `io.weight` changed (`weight_updated`).
    pub fn set_weight(&mut self, cgroup: u32, weight: u32, now_ns: Nanos) -> Result<(), String> {
        let gi = *self.by_cgroup.get(&cgroup).ok_or("no such io.cost cgroup")?;
        if !(CGROUP_WEIGHT_MIN..=CGROUP_WEIGHT_MAX).contains(&weight) {
            return Err(format!(
                "io.weight {weight} is out of range {CGROUP_WEIGHT_MIN}-{CGROUP_WEIGHT_MAX}"
            ));
        }
        let w = u64::from(weight) * WEIGHT_ONE;
        if w != self.groups[gi].weight && self.groups[gi].active > 0 {
            let inuse = self.groups[gi].inuse;
            self.propagate(gi, w, inuse, true, now_ns);
        }
        self.groups[gi].weight = w;
        Ok(())
    }

    /// `io.cost.qos` or `io.cost.model` changed (`ioc_refresh_params(ioc, true)`).
    pub fn set_params(&mut self, qos: IoCostQos, model: IoCostModel, now_ns: Nanos) {
        self.qos = qos;
        self.model = model;
        self.refresh_params(now_ns, true);
    }

    // ---- time ------------------------------------------------------------------------

    /// The device's vtime now (`ioc_now`).
    fn vnow(&self, now_ns: Nanos) -> i128 {
        // 64-bit arithmetic whenever it cannot overflow (a period's worth at any vrate): the
        // 128-bit division costs more than the rest of a request's accounting.
        if let Some(v) =
            now_ns.checked_sub(self.period_at_ns).and_then(|dt| dt.checked_mul(self.vtime_rate))
        {
            return self.period_at_vtime + i128::from(v / 1000);
        }
        let dt = i128::from(now_ns) - i128::from(self.period_at_ns);
        self.period_at_vtime + dt * i128::from(self.vtime_rate) / 1000
    }

    fn refresh_margins(&mut self) {
        let vrate = i128::from(self.vtime_base_rate);
        let p = i128::from(self.period_us);
        self.margin_min = p * i128::from(MARGIN_MIN_PCT) / 100 * vrate;
        self.margin_low = p * i128::from(MARGIN_LOW_PCT) / 100 * vrate;
        self.margin_target = p * i128::from(MARGIN_TARGET_PCT) / 100 * vrate;
    }

    /// `ioc_refresh_period_us`: a multiple of the looser latency target.
    fn refresh_period_us(&mut self) {
        let q = &self.qos;
        let (ppm, lat) =
            if q.rlat_us >= q.wlat_us { (q.rppm, q.rlat_us) } else { (q.wppm, q.wlat_us) };
        let multi =
            if ppm > 0 { (u64::from(1_000_000 - ppm.min(1_000_000)) / 50_000).max(2) } else { 2 };
        self.period_us = (multi * lat).clamp(MIN_PERIOD_US, MAX_PERIOD_US);
        self.timer_slack_ns = self.period_us * 1000 * TIMER_SLACK_PCT / 100;
        self.refresh_margins();
    }

    /// `ioc_autop_idx`: an SSD whose vrate stays above 500 % (below 10 %) for 10 s moves to
    /// the faster (slower) class, unless the user set parameters.
    fn autop_class(&mut self, now_ns: Nanos) -> AutopClass {
        let base = AutopClass::of_device(self.rotational, self.queue_depth);
        if base != AutopClass::SsdDfl || self.qos.user || self.model.user {
            return if self.class >= AutopClass::SsdDfl && base == AutopClass::SsdDfl {
                self.class
            } else {
                base
            };
        }
        let idx = self.class.max(AutopClass::SsdDfl);
        let vrate_pct = self.vtime_base_rate * 100 / VTIME_PER_USEC;
        let (too_fast, too_slow) = idx.vrate_pct_bounds();
        if too_fast.is_some_and(|p| p <= vrate_pct) {
            let at = *self.autop_too_fast_at.get_or_insert(now_ns);
            if now_ns - at >= AUTOP_CYCLE_NS {
                return AutopClass::SsdFast;
            }
        } else {
            self.autop_too_fast_at = None;
        }
        if too_slow.is_some_and(|p| p >= vrate_pct) {
            let at = *self.autop_too_slow_at.get_or_insert(now_ns);
            if now_ns - at >= AUTOP_CYCLE_NS {
                return AutopClass::SsdDfl;
            }
        } else {
            self.autop_too_slow_at = None;
        }
        idx
    }

    /// `ioc_refresh_params`.
    fn refresh_params(&mut self, now_ns: Nanos, force: bool) {
        let class = self.autop_class(now_ns);
        if class == self.class && !force {
            return;
        }
        if class != self.class {
            self.vtime_rate = VTIME_PER_USEC;
            self.vtime_base_rate = VTIME_PER_USEC;
        }
        self.class = class;
        self.autop_too_fast_at = None;
        self.autop_too_slow_at = None;
        if !self.qos.user {
            let enable = self.qos.enable;
            self.qos = IoCostQos { enable, ..IoCostQos::auto(class) };
        }
        if !self.model.user {
            self.model = IoCostModel::auto(class);
        }
        self.refresh_period_us();
        self.coefs = self.model.lcoefs();
        self.vrate_min = (u64::from(self.qos.min_ppm) * VTIME_PER_USEC).div_ceil(1_000_000);
        self.vrate_max = u64::from(self.qos.max_ppm) * VTIME_PER_USEC / 1_000_000;
    }

    fn start_period(&mut self, now_ns: Nanos) {
        let vnow = self.vnow(now_ns);
        self.period_at_ns = now_ns;
        self.period_at_vtime = vnow;
    }

    fn period_end_ns(&self) -> Nanos {
        self.period_at_ns + self.period_us * 1000
    }

    // ---- weights ---------------------------------------------------------------------

    /// `__propagate_weights`: sets a leaf's `active` and `inuse` and the active sums above it.
    fn propagate(&mut self, gi: usize, active: u64, inuse: u64, save: bool, now_ns: Nanos) {
        let inuse = if active == 0 { 0 } else { inuse.clamp(1, active) };
        let vnow = if save { self.vnow(now_ns) } else { 0 };
        let g = &mut self.groups[gi];
        g.last_inuse = g.inuse;
        if save {
            g.saved_margin = vnow - g.vtime;
        }
        if active == g.active && inuse == g.inuse {
            return;
        }
        let old_active = g.active;
        g.active = active;
        g.inuse = inuse;
        self.weights_dirty = true;
        let (mut child, mut old, mut new) = (gi, old_active, active);
        while child != ROOT {
            let p = self.groups[child].parent;
            let parent = &mut self.groups[p];
            parent.child_active_sum = parent.child_active_sum + new - old;
            if p == ROOT {
                break;
            }
            let parent_active = if parent.child_active_sum > 0 { parent.weight } else { 0 };
            if parent_active == parent.active {
                break;
            }
            old = parent.active;
            new = parent_active;
            parent.active = parent_active;
            parent.inuse = parent_active;
            child = p;
        }
    }

    /// Recomputes every active leaf's `hweight_active` (`current_hweight`) and
    /// `hweight_inuse` (see the module's deviations) when weights changed.
    fn refresh_hweights(&mut self) {
        if !self.weights_dirty {
            return;
        }
        self.weights_dirty = false;
        let mut sum: u128 = 0;
        for k in 0..self.active_list.len() {
            let gi = self.active_list[k];
            let mut path = [0usize; IOCOST_DEPTH_MAX + 1];
            let (mut n, mut c) = (0, gi);
            while c != ROOT {
                path[n] = c;
                n += 1;
                c = self.groups[c].parent;
            }
            let mut hwa: u64 = WEIGHT_ONE;
            for &c in path[..n].iter().rev() {
                let parent = &self.groups[self.groups[c].parent];
                let active = self.groups[c].active;
                let active_sum = parent.child_active_sum.max(active);
                if active_sum == 0 {
                    continue;
                }
                hwa = (u128::from(hwa) * u128::from(active) / u128::from(active_sum)) as u64;
            }
            let g = &mut self.groups[gi];
            g.hwa = hwa.max(1);
            sum += scaled(g.hwa, g.inuse, g.active);
        }
        self.inuse_scaled_sum = sum.max(1);
        for k in 0..self.active_list.len() {
            let g = &mut self.groups[self.active_list[k]];
            let s = scaled(g.hwa, g.inuse, g.active);
            g.hwi = ((s * u128::from(WEIGHT_ONE) / self.inuse_scaled_sum) as u64).max(1);
        }
    }

    /// `current_hweight_max`: the `hweight_inuse` the cgroup would have with `inuse = active`.
    fn hweight_max(&mut self, gi: usize) -> u64 {
        self.refresh_hweights();
        let g = &self.groups[gi];
        let own = scaled(g.hwa, g.inuse, g.active);
        let full = u128::from(g.hwa) << 32;
        let sum = (self.inuse_scaled_sum - own.min(self.inuse_scaled_sum) + full).max(1);
        ((full * u128::from(WEIGHT_ONE) / sum) as u64).max(1)
    }

    fn hwi(&mut self, gi: usize) -> u64 {
        self.refresh_hweights();
        self.groups[gi].hwi
    }

    fn hwa(&mut self, gi: usize) -> u64 {
        self.refresh_hweights();
        self.groups[gi].hwa
    }

    // ---- activation and charging -----------------------------------------------------

    /// `iocg_activate`. False when the cgroup has active children (the kernel issues an
    /// inner node's own IO as the root's).
    fn activate(&mut self, gi: usize, now_ns: Nanos) -> bool {
        if self.groups[gi].is_active {
            self.groups[gi].active_period = self.cur_period;
            return true;
        }
        if self.groups[gi].child_active_sum > 0 {
            return false;
        }
        let mut p = self.groups[gi].parent;
        while p != ROOT {
            if self.groups[p].is_active {
                return false;
            }
            p = self.groups[p].parent;
        }
        let vtarget = self.vnow(now_ns) - self.margin_target;
        let g = &mut self.groups[gi];
        let delta = vtarget - g.vtime;
        g.vtime += delta;
        g.done_vtime += delta;
        g.active_period = self.cur_period;
        g.is_active = true;
        g.activated_at_ns = now_ns;
        let (weight, inuse) = (g.weight, if g.last_inuse > 0 { g.last_inuse } else { g.weight });
        self.active_list.push(gi);
        self.propagate(gi, weight, inuse, true, now_ns);
        self.timers_dirty = true;
        if !self.running {
            self.running = true;
            self.dfgv_period_at_ns = now_ns;
            self.dfgv_period_rem_us = 0;
            self.start_period(now_ns);
        }
        true
    }

    /// `calc_vtime_cost_builtin`.
    fn abs_cost(&self, gi: usize, bio: &Bio, is_merge: bool) -> u64 {
        let rq = &bio.request;
        let d = match rq.op {
            Op::Read => 0,
            Op::Write => 1,
            Op::Flush | Op::Discard => return 0,
        };
        let pages = (rq.sectors() >> 3).max(1);
        let cursor = self.groups[gi].cursor;
        let seek_pages = if cursor > 0 { rq.sector().abs_diff(cursor) >> 3 } else { 0 };
        let mut cost = 0;
        if !is_merge {
            cost += if seek_pages > LCOEF_RANDIO_PAGES {
                self.coefs.randio[d]
            } else {
                self.coefs.seqio[d]
            };
        }
        cost + pages * self.coefs.page[d]
    }

    /// `adjust_inuse_and_calc_cost`: a donor whose margin has worn down takes its weight back
    /// in 25 % steps until the bio fits.
    fn adjust_inuse_and_calc_cost(&mut self, gi: usize, abs_cost: u64, now_ns: Nanos) -> u64 {
        let vnow = self.vnow(now_ns);
        let mut hwi = self.hwi(gi);
        let mut cost = abs_cost_to_cost(abs_cost, hwi);
        let g = &self.groups[gi];
        let vtime = g.vtime;
        let margin = vnow - vtime - i128::from(cost);
        if g.abs_vdebt > 0
            || margin >= g.saved_margin
            || margin >= self.margin_low
            || g.inuse == g.active
        {
            return cost;
        }
        let step = (g.active * INUSE_ADJ_STEP_PCT).div_ceil(100);
        let mut inuse = g.inuse;
        loop {
            inuse += step;
            let active = self.groups[gi].active;
            self.propagate(gi, active, inuse, true, now_ns);
            hwi = self.hwi(gi);
            cost = abs_cost_to_cost(abs_cost, hwi);
            if vtime + i128::from(cost) <= vnow || self.groups[gi].inuse == active {
                break;
            }
        }
        cost
    }

    fn commit(&mut self, gi: usize, bio: Bio, abs_cost: u64, cost: u64, now_ns: Nanos) {
        let g = &mut self.groups[gi];
        g.vtime += i128::from(cost);
        g.abs_vusage += u128::from(abs_cost);
        self.release_now(gi, bio, cost, now_ns);
    }

    /// Hands a bio down and remembers it until it completes.
    fn release_now(&mut self, gi: usize, bio: Bio, cost: u64, now_ns: Nanos) {
        let rq = &bio.request;
        let data = matches!(rq.op, Op::Read | Op::Write);
        self.inflight.insert(
            rq.id.0,
            InFlight {
                group: gi,
                cost,
                released_ns: now_ns,
                started_ns: None,
                write: rq.op == Op::Write,
                pages: rq.sectors() >> 3,
                data,
            },
        );
        let g = &mut self.groups[gi];
        if gi != ROOT {
            g.counters.ios += 1;
            g.counters.bytes += rq.len_bytes;
            if data {
                g.mergeable = Some((rq.id.0, rq.end_sector(), rq.op == Op::Write));
            }
        }
        self.ready.push(bio);
    }

    /// `iocg_incur_debt`: debt handling owns inuse; the cgroup donates all it can.
    fn incur_debt(&mut self, gi: usize, abs_cost: u64, now_ns: Nanos) {
        if self.groups[gi].abs_vdebt == 0 && abs_cost > 0 {
            let active = self.groups[gi].active;
            self.propagate(gi, active, 0, false, now_ns);
        }
        let g = &mut self.groups[gi];
        g.abs_vdebt += abs_cost;
        g.abs_vusage += u128::from(abs_cost);
        self.stats.debts += 1;
    }

    fn pay_debt(&mut self, gi: usize, abs_vpay: u64, now_ns: Nanos) {
        let g = &mut self.groups[gi];
        g.abs_vdebt -= abs_vpay.min(g.abs_vdebt);
        if g.abs_vdebt == 0 {
            let (active, last) = (g.active, g.last_inuse);
            self.propagate(gi, active, last, false, now_ns);
        }
    }

    /// `iocg_kick_delay`: the delay grows with how far the debt runs ahead of the device and
    /// halves every second.
    fn kick_delay(&mut self, gi: usize, now_ns: Nanos) -> bool {
        let hwa = self.hwa(gi);
        let vnow = self.vnow(now_ns);
        let vperiod = i128::from(self.period_us) * i128::from(self.vtime_base_rate);
        let g = &mut self.groups[gi];
        let tdelta_s = (now_ns - g.delay_at_ns.min(now_ns)) / 1_000_000_000;
        let mut delay = if g.delay_us > 0 { g.delay_us >> tdelta_s.min(63) } else { 0 };
        let vover = g.vtime + i128::from(abs_cost_to_cost(g.abs_vdebt, hwa)) - vnow;
        let vover_pct = 100 * vover / vperiod.max(1);
        let new_delay = if vover_pct <= MIN_DELAY_THR_PCT {
            0
        } else if vover_pct >= MAX_DELAY_THR_PCT {
            MAX_DELAY_US
        } else {
            MIN_DELAY_US
                + ((MAX_DELAY_US - MIN_DELAY_US) as i128 * (vover_pct - MIN_DELAY_THR_PCT)
                    / (MAX_DELAY_THR_PCT - MIN_DELAY_THR_PCT)) as u64
        };
        if new_delay > delay {
            g.delay_us = new_delay;
            g.delay_at_ns = now_ns;
            delay = new_delay;
            g.delay_until_ns = g.delay_until_ns.max(now_ns + new_delay * 1000);
        }
        if delay >= MIN_DELAY_US {
            true
        } else {
            g.delay_us = 0;
            false
        }
    }

    /// `iocg_kick_waitq`: pays debt from the budget, then wakes waiters in order while the
    /// budget lasts, and sets the wake-up timer for the next.
    fn kick_waitq(&mut self, gi: usize, pay_debt: bool, now_ns: Nanos) {
        let hwa = self.hwa(gi);
        let vnow = self.vnow(now_ns);
        let mut vbudget = vnow - self.groups[gi].vtime;
        if pay_debt && self.groups[gi].abs_vdebt > 0 && vbudget > 0 {
            let abs_vbudget = cost_to_abs_cost(vbudget.min(i128::from(u64::MAX)) as u64, hwa);
            let abs_vpay = abs_vbudget.min(self.groups[gi].abs_vdebt);
            let vpay = abs_cost_to_cost(abs_vpay, hwa);
            let g = &mut self.groups[gi];
            g.vtime += i128::from(vpay);
            g.done_vtime += i128::from(vpay);
            self.pay_debt(gi, abs_vpay, now_ns);
            vbudget -= i128::from(vpay);
        }
        if self.groups[gi].abs_vdebt > 0 || self.groups[gi].delay_us > 0 {
            self.kick_delay(gi, now_ns);
        }
        if self.groups[gi].abs_vdebt > 0 {
            let vdebt = abs_cost_to_cost(self.groups[gi].abs_vdebt, hwa);
            vbudget = (vbudget - i128::from(vdebt)).min(0);
        }
        let hwi = self.hwi(gi);
        self.timers_dirty = true;
        if self.groups[gi].delay_until_ns > now_ns && !self.groups[gi].waitq.is_empty() {
            self.groups[gi].wait_timer_ns = Some(self.groups[gi].delay_until_ns);
            return;
        }
        while let Some(w) = self.groups[gi].waitq.front() {
            let cost = abs_cost_to_cost(w.abs_cost, hwi);
            vbudget -= i128::from(cost);
            if vbudget < 0 {
                break;
            }
            let w = self.groups[gi].waitq.pop_front().expect("front exists");
            self.held -= 1;
            if now_ns > w.arrived_ns {
                self.groups[gi].counters.held += 1;
            }
            self.commit(gi, w.bio, w.abs_cost, cost, now_ns);
        }
        if self.groups[gi].waitq.is_empty() {
            self.groups[gi].wait_timer_ns = None;
            return;
        }
        let vshortage = (-vbudget).max(1) as u128;
        let us = vshortage.div_ceil(u128::from(self.vtime_base_rate.max(1)));
        let us = us.min(u128::from(u64::MAX / 4_000)) as u64;
        self.groups[gi].wait_timer_ns = Some(now_ns + us * 1000 + self.timer_slack_ns);
    }

    // ---- the period timer ------------------------------------------------------------

    /// `iocg_is_idle`: nothing issued this period and nothing in flight.
    fn is_idle(&self, gi: usize) -> bool {
        let g = &self.groups[gi];
        g.active_period != self.cur_period && g.done_vtime == g.vtime
    }

    /// `ioc_check_iocgs`: kicks waiters and debtors, deactivates idle cgroups.
    fn check_iocgs(&mut self, now_ns: Nanos) -> u32 {
        let mut nr_debtors = 0;
        let list = self.active_list.clone();
        let mut keep = Vec::with_capacity(list.len());
        for &gi in &list {
            let g = &self.groups[gi];
            let busy = !g.waitq.is_empty() || g.abs_vdebt > 0 || g.delay_us > 0;
            if busy {
                self.kick_waitq(gi, true, now_ns);
                let g = &self.groups[gi];
                if g.abs_vdebt > 0 || g.delay_us > 0 {
                    nr_debtors += 1;
                }
                keep.push(gi);
            } else if self.is_idle(gi) {
                let vnow = self.vnow(now_ns);
                let excess = vnow - self.groups[gi].vtime - self.margin_target;
                if excess > 0 {
                    let old_hwi = self.hwi(gi);
                    self.vtime_err -= excess * i128::from(old_hwi) / i128::from(WEIGHT_ONE);
                }
                self.propagate(gi, 0, 0, false, now_ns);
                self.groups[gi].is_active = false;
                self.groups[gi].mergeable = None;
            } else {
                keep.push(gi);
            }
        }
        // `propagate` marked the weights stale for each cgroup it deactivated.
        self.active_list = keep;
        nr_debtors
    }

    /// `hweight_after_donation`.
    fn hweight_after_donation(
        &mut self,
        gi: usize,
        old_hwi: u64,
        hwm: u64,
        usage: u64,
        now_ns: Nanos,
    ) -> u64 {
        let vnow = self.vnow(now_ns);
        let g = &self.groups[gi];
        if g.abs_vdebt > 0 {
            return 1;
        }
        if !g.waitq.is_empty() || g.vtime > vnow - self.margin_min {
            return hwm;
        }
        let excess = vnow - g.vtime - self.margin_target;
        if excess > 0 {
            let g = &mut self.groups[gi];
            g.vtime += excess;
            g.done_vtime += excess;
            self.vtime_err -= excess * i128::from(old_hwi) / i128::from(WEIGHT_ONE);
        }
        let vtime = self.groups[gi].vtime;
        let w1 = i128::from(WEIGHT_ONE);
        let delta = w1 * (vnow - vtime) / (vnow - self.period_at_vtime).max(1);
        let target = w1 * i128::from(MARGIN_TARGET_PCT) / 100;
        let new_hwi = w1 * i128::from(usage) / (w1 - target + delta).max(1);
        new_hwi.clamp(1, i128::from(hwm)) as u64
    }

    /// `transfer_surpluses`, for the leaves: each donor's inuse is set so that its
    /// `hweight_inuse` is its after-donation target, the others gaining at one global rate.
    fn transfer_surpluses(&mut self, donors: &[usize], now_ns: Nanos) {
        self.refresh_hweights();
        let w1 = u128::from(WEIGHT_ONE);
        let mut after_sum: u128 = 0;
        let mut over_sum: u128 = 0;
        for &gi in donors {
            let g = &self.groups[gi];
            after_sum += u128::from(g.hweight_after_donation);
            if g.hweight_after_donation > g.hwa {
                over_sum += u128::from(g.hweight_after_donation);
            }
        }
        if after_sum >= w1 && over_sum > 0 {
            let over_target = over_sum.saturating_sub(after_sum - (w1 - 1));
            for &gi in donors {
                let g = &mut self.groups[gi];
                if g.hweight_after_donation > g.hwa {
                    g.hweight_after_donation =
                        (u128::from(g.hweight_after_donation) * over_target / over_sum) as u64;
                }
            }
        }
        let t_after: u128 =
            donors.iter().map(|&gi| u128::from(self.groups[gi].hweight_after_donation)).sum();
        let non_donor_sum: u128 = self
            .active_list
            .iter()
            .filter(|gi| !donors.contains(gi))
            .map(|&gi| {
                let g = &self.groups[gi];
                scaled(g.hwa, g.inuse, g.active)
            })
            .sum();
        if t_after >= w1 || non_donor_sum == 0 {
            return;
        }
        // The sum of `hwa × inuse/active` that makes the non-donors' share `1 − t'`.
        let total = non_donor_sum * w1 / (w1 - t_after);
        for &gi in donors {
            let g = &self.groups[gi];
            if g.abs_vdebt > 0 {
                continue;
            }
            let want = total * u128::from(g.hweight_after_donation) / w1;
            let inuse = (want * u128::from(g.active)).div_ceil(u128::from(g.hwa) << 32);
            let inuse = inuse.min(u128::from(g.active)) as u64;
            let active = g.active;
            self.propagate(gi, active, inuse, true, now_ns);
            self.stats.donations += 1;
        }
    }

    /// `ioc_timer_fn`: the end of a period.
    fn timer_fn(&mut self, now_ns: Nanos) {
        let ppm_rthr = 1_000_000 - u64::from(self.qos.rppm.min(1_000_000));
        let ppm_wthr = 1_000_000 - u64::from(self.qos.wppm.min(1_000_000));
        let missed_ppm: [u64; 2] = std::array::from_fn(|rw| {
            let n = self.nr_met[rw] + self.nr_missed[rw];
            if n > 0 {
                (self.nr_missed[rw] * 1_000_000).div_ceil(n)
            } else {
                0
            }
        });
        let rq_wait_pct = self.rq_wait_ns * 100 / (self.period_us * 1000).max(1);
        self.nr_met = [0; 2];
        self.nr_missed = [0; 2];
        self.rq_wait_ns = 0;
        self.stats.periods += 1;

        let vnow = self.vnow(now_ns);
        let period_vtime = vnow - self.period_at_vtime;
        let nr_debtors = if period_vtime > 0 { self.check_iocgs(now_ns) } else { 0 };

        let mut nr_shortages = 0u32;
        let mut nr_lagging = 0u32;
        let mut usage_us_sum = 0u64;
        let mut donors = Vec::new();
        let rate = u128::from(self.vtime_base_rate.max(1));
        // The kernel reads each cgroup's hweights as they were when the period ended: the
        // inuse changes below take effect together (`commit_weights`).
        self.refresh_hweights();
        let snapshot: Vec<(usize, u64, u64)> = self
            .active_list
            .iter()
            .map(|&gi| (gi, self.groups[gi].hwa, self.groups[gi].hwi))
            .collect();
        for (gi, hwa, hwi) in snapshot {
            // `iocg_flush_stat_one`.
            let g = &mut self.groups[gi];
            let delta = g.abs_vusage - g.last_abs_vusage;
            g.last_abs_vusage = g.abs_vusage;
            g.usage_delta_us = (delta / rate).min(u128::from(u64::MAX)) as u64;
            let (vdone, vtime, mut usage_us) = (g.done_vtime, g.vtime, g.usage_delta_us);
            if (ppm_rthr != 1_000_000 || ppm_wthr != 1_000_000)
                && self.groups[gi].delay_us == 0
                && vtime > vdone
                && vtime > vnow - MAX_LAGGING_PERIODS * period_vtime
                && vdone < vnow - period_vtime
            {
                nr_lagging += 1;
            }
            usage_us_sum += usage_us;
            let waiting = !self.groups[gi].waitq.is_empty();
            if hwi < hwa || (!waiting && vtime < vnow - self.margin_low) {
                if vdone != vtime {
                    let inflight = cost_to_abs_cost((vtime - vdone).max(0) as u64, hwi);
                    usage_us = usage_us.max(inflight.div_ceil(self.vtime_base_rate.max(1)));
                }
                let since = if self.groups[gi].activated_at_ns > self.period_at_ns {
                    self.groups[gi].activated_at_ns
                } else {
                    self.period_at_ns
                };
                let usage_dur_us = ((now_ns - since.min(now_ns)) / 1000).max(1);
                let usage = (u128::from(usage_us) * u128::from(WEIGHT_ONE))
                    .div_ceil(u128::from(usage_dur_us))
                    .clamp(1, u128::from(WEIGHT_ONE)) as u64;
                let hwm = self.hweight_max(gi);
                let new_hwi = self.hweight_after_donation(gi, hwi, hwm, usage, now_ns);
                if new_hwi < hwm && hwa >= 2 {
                    let g = &mut self.groups[gi];
                    g.hweight_after_donation = new_hwi;
                    donors.push(gi);
                } else {
                    let active = self.groups[gi].active;
                    if self.groups[gi].abs_vdebt == 0 {
                        self.propagate(gi, active, active, true, now_ns);
                    }
                    nr_shortages += 1;
                }
            } else {
                nr_shortages += 1;
            }
        }
        if !donors.is_empty() && nr_shortages > 0 {
            self.transfer_surpluses(&donors, now_ns);
        }

        if rq_wait_pct > RQ_WAIT_BUSY_PCT || missed_ppm[0] > ppm_rthr || missed_ppm[1] > ppm_wthr {
            self.busy_level = self.busy_level.max(0) + 1;
            self.stats.periods_busy += 1;
        } else if rq_wait_pct <= RQ_WAIT_BUSY_PCT * UNBUSY_THR_PCT / 100
            && missed_ppm[0] <= ppm_rthr * UNBUSY_THR_PCT / 100
            && missed_ppm[1] <= ppm_wthr * UNBUSY_THR_PCT / 100
        {
            if nr_shortages > 0 {
                self.busy_level = self.busy_level.min(0);
                if nr_lagging == 0 {
                    self.busy_level -= 1;
                    self.stats.periods_short += 1;
                }
            } else {
                self.busy_level = 0;
            }
        } else {
            self.busy_level = 0;
        }
        self.busy_level = self.busy_level.clamp(-1000, 1000);
        self.adjust_base_vrate(nr_lagging);
        self.refresh_params(now_ns, false);
        self.forgive_debts(usage_us_sum, nr_debtors, now_ns);

        self.cur_period += 1;
        if !self.active_list.is_empty() {
            self.start_period(now_ns);
        } else {
            self.start_period(now_ns);
            self.busy_level = 0;
            self.vtime_err = 0;
            self.running = false;
        }
        self.refresh_vrate(now_ns);
        self.timers_dirty = true;
    }

    /// `ioc_adjust_base_vrate`.
    fn adjust_base_vrate(&mut self, nr_lagging: u32) {
        if self.busy_level == 0 || (self.busy_level < 0 && nr_lagging > 0) {
            return;
        }
        let mut vrate = self.vtime_base_rate;
        if vrate < self.vrate_min {
            vrate = (vrate * (100 + VRATE_CLAMP_ADJ_PCT) / 100).min(self.vrate_min);
        } else if vrate > self.vrate_max {
            vrate = (vrate * (100 - VRATE_CLAMP_ADJ_PCT) / 100).max(self.vrate_max);
        } else {
            let idx = (self.busy_level.unsigned_abs() as usize).min(VRATE_ADJ_PCT.len() - 1);
            let adj = VRATE_ADJ_PCT[idx];
            let pct = if self.busy_level > 0 { 100 - adj } else { 100 + adj };
            vrate = (vrate * pct).div_ceil(100).clamp(self.vrate_min, self.vrate_max);
        }
        self.vtime_base_rate = vrate.max(1);
        self.refresh_margins();
    }

    /// `ioc_refresh_vrate`: pays back vtime thrown away within the coming period.
    fn refresh_vrate(&mut self, now_ns: Nanos) {
        let base = i128::from(self.vtime_base_rate);
        let vperiod = i128::from(self.period_us) * base;
        let pleft_us = (i128::from(self.period_end_ns()) - i128::from(now_ns)) / 1000;
        if pleft_us > 0 {
            let vcomp = (-self.vtime_err / pleft_us).clamp(-(base >> 1), base);
            self.vtime_err += vcomp * pleft_us;
            self.vtime_rate = (base + vcomp).max(1) as u64;
        } else {
            self.vtime_rate = self.vtime_base_rate;
        }
        self.vtime_err = self.vtime_err.clamp(-vperiod, vperiod);
    }

    /// `ioc_forgive_debts`.
    fn forgive_debts(&mut self, usage_us_sum: u64, nr_debtors: u32, now_ns: Nanos) {
        if nr_debtors == 0 {
            self.dfgv_period_at_ns = now_ns;
            self.dfgv_period_rem_us = 0;
            self.dfgv_usage_us_sum = 0;
            return;
        }
        let usage =
            if self.busy_level > 0 { usage_us_sum.max(self.period_us) } else { usage_us_sum };
        self.dfgv_usage_us_sum += usage;
        if now_ns < self.dfgv_period_at_ns + DFGV_PERIOD_US * 1000 {
            return;
        }
        let dur_us = ((now_ns - self.dfgv_period_at_ns) / 1000).max(1);
        let usage_pct = 100 * self.dfgv_usage_us_sum / dur_us;
        self.dfgv_period_at_ns = now_ns;
        self.dfgv_usage_us_sum = 0;
        if usage_pct > DFGV_USAGE_PCT {
            self.dfgv_period_rem_us = 0;
            return;
        }
        let total = dur_us + self.dfgv_period_rem_us;
        let nr_cycles = (total / DFGV_PERIOD_US).min(63);
        self.dfgv_period_rem_us = total % DFGV_PERIOD_US;
        for k in 0..self.active_list.len() {
            let gi = self.active_list[k];
            let g = &mut self.groups[gi];
            if g.abs_vdebt == 0 && g.delay_us == 0 {
                continue;
            }
            if g.abs_vdebt > 0 {
                g.abs_vdebt = (g.abs_vdebt >> nr_cycles).max(1);
            }
            if g.delay_us > 0 {
                g.delay_us = (g.delay_us >> nr_cycles).max(1);
                g.delay_until_ns = g.delay_until_ns.min(now_ns + g.delay_us * 1000);
            }
            self.stats.forgiven += 1;
            self.kick_waitq(gi, true, now_ns);
        }
    }

    fn refresh_next_timer(&mut self) {
        self.timers_dirty = false;
        let mut next = self.running.then(|| self.period_end_ns());
        for &gi in &self.active_list {
            if let Some(t) = self.groups[gi].wait_timer_ns {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        self.next_timer_ns = next;
    }

    fn group_of(&self, bio: &Bio) -> usize {
        self.by_cgroup.get(&bio.request.owner.cgroup).copied().unwrap_or(ROOT)
    }
}

/// `hwa × inuse / active`, in 2^-32 units of `hwa` (0 for an inactive cgroup).
fn scaled(hwa: u64, inuse: u64, active: u64) -> u128 {
    if active == 0 {
        return 0;
    }
    (u128::from(hwa) << 32) * u128::from(inuse) / u128::from(active)
}

/// `abs_cost_to_cost`: the lower the share, the dearer each IO. Rounds up.
fn abs_cost_to_cost(abs_cost: u64, hw_inuse: u64) -> u64 {
    let hw = hw_inuse.max(1);
    if let Some(scaled) = abs_cost.checked_mul(WEIGHT_ONE) {
        return scaled.div_ceil(hw);
    }
    let c = (u128::from(abs_cost) * u128::from(WEIGHT_ONE)).div_ceil(u128::from(hw));
    c.min(u128::from(u64::MAX)) as u64
}

/// `cost_to_abs_cost`. Rounds up.
fn cost_to_abs_cost(cost: u64, hw_inuse: u64) -> u64 {
    (u128::from(cost) * u128::from(hw_inuse)).div_ceil(u128::from(WEIGHT_ONE)) as u64
}

impl Controller for IoCost {
    fn name(&self) -> &'static str {
        "io.cost"
    }

    /// `ioc_rqos_throttle` (and `ioc_rqos_merge` for a bio that will merge).
    fn submit(&mut self, bio: Bio, now_ns: Nanos) {
        let gi = self.group_of(&bio);
        if !self.qos.enable || gi == ROOT {
            self.release_now(ROOT, bio, 0, now_ns);
            return;
        }
        let rq = bio.request;
        let is_merge = self.groups[gi]
            .mergeable
            .is_some_and(|(_, end, write)| end == rq.sector() && write == (rq.op == Op::Write));
        let abs_cost = self.abs_cost(gi, &bio, is_merge);
        if abs_cost == 0 || !self.activate(gi, now_ns) {
            self.release_now(gi, bio, 0, now_ns);
            if self.timers_dirty {
                self.refresh_next_timer();
            }
            return;
        }
        self.groups[gi].cursor = rq.end_sector();
        let vtime = self.groups[gi].vtime;
        let cost = self.adjust_inuse_and_calc_cost(gi, abs_cost, now_ns);
        let vnow = self.vnow(now_ns);
        let fits = vtime + i128::from(cost) <= vnow;
        let g = &self.groups[gi];
        if is_merge {
            if fits && g.abs_vdebt == 0 {
                self.commit(gi, bio, abs_cost, cost, now_ns);
            } else {
                self.incur_debt(gi, abs_cost, now_ns);
                self.kick_delay(gi, now_ns);
                self.release_now(gi, bio, 0, now_ns);
            }
            if self.timers_dirty {
                self.refresh_next_timer();
            }
            return;
        }
        if g.waitq.is_empty() && g.abs_vdebt == 0 && g.delay_until_ns <= now_ns && fits {
            self.commit(gi, bio, abs_cost, cost, now_ns);
            if self.timers_dirty {
                self.refresh_next_timer();
            }
            return;
        }
        if g.abs_vdebt == 0 && g.inuse != g.active {
            let active = g.active;
            self.propagate(gi, active, active, true, now_ns);
        }
        self.groups[gi].waitq.push_back(Waiter { bio, abs_cost, arrived_ns: now_ns });
        self.held += 1;
        self.kick_waitq(gi, true, now_ns);
        self.refresh_next_timer();
    }

    fn release(&mut self, now_ns: Nanos, out: &mut Vec<Bio>) {
        // Nothing is due before the earliest timer: hand over what is ready.
        if !self.timers_dirty && self.next_timer_ns.is_none_or(|t| t > now_ns) {
            out.append(&mut self.ready);
            return;
        }
        if self.running && now_ns >= self.period_end_ns() {
            self.timer_fn(now_ns);
        }
        for k in 0..self.active_list.len() {
            let gi = self.active_list[k];
            if self.groups[gi].wait_timer_ns.is_some_and(|t| t <= now_ns) {
                self.kick_waitq(gi, true, now_ns);
            }
        }
        out.append(&mut self.ready);
        self.refresh_next_timer();
    }

    fn dispatched(&mut self, bio: &Bio, now_ns: Nanos) {
        let id = bio.request.id.0;
        if let Some(f) = self.inflight.get_mut(&id) {
            f.started_ns.get_or_insert(now_ns);
            let g = &mut self.groups[f.group];
            if g.mergeable.is_some_and(|(m, _, _)| m == id) {
                g.mergeable = None;
            }
        }
    }

    /// `ioc_rqos_done_bio` and `ioc_rqos_done`.
    fn completed(&mut self, bio: &Bio, now_ns: Nanos) {
        let id = bio.request.id.0;
        let Some(f) = self.inflight.remove(&id) else { return };
        let g = &mut self.groups[f.group];
        g.done_vtime += i128::from(f.cost);
        if g.mergeable.is_some_and(|(m, _, _)| m == id) {
            g.mergeable = None;
        }
        if !self.qos.enable || !f.data {
            return;
        }
        let rw = usize::from(f.write);
        let on_q_ns = now_ns.saturating_sub(f.released_ns);
        let size_ns = f.pages * self.coefs.page[rw] / VTIME_PER_NSEC;
        let lat_us = if f.write { self.qos.wlat_us } else { self.qos.rlat_us };
        if on_q_ns <= size_ns || on_q_ns - size_ns <= lat_us * 1000 {
            self.nr_met[rw] += 1;
        } else {
            self.nr_missed[rw] += 1;
        }
        let started = f.started_ns.unwrap_or(f.released_ns);
        self.rq_wait_ns += started.saturating_sub(f.released_ns);
    }

    fn next_timer_ns(&self) -> Option<Nanos> {
        self.next_timer_ns
    }

    fn held(&self) -> usize {
        self.held
    }

    fn counters(&self) -> Vec<GroupCounters> {
        self.groups[1..].iter().map(|g| g.counters.clone()).collect()
    }
}

#[cfg(test)]
mod tests;
