//! cgroup v2 `io.latency` (blk-iolatency, `block/blk-iolatency.c`, Linux 5.x–6.x): a cgroup
//! with a latency target is protected by throttling its peers with looser targets.
//!
//! - Each group with a target keeps statistics over a **window** of
//!   `clamp(16 × target, 100 ms, 1 s)` (`iolatency_set_min_lat_nsec`). On a rotational device
//!   the window *misses* when the mean latency is above the target; on flash when more than a
//!   tenth of the I/Os took longer than the target (`latency_sum_ok`: a p90 target).
//! - On a miss, every peer whose target is looser (a peer without a target is the loosest)
//!   has its allowed queue depth halved (`scale_change(.., false)`: `max_depth >>= 1`, at least
//!   1); a peer already at depth 1 is **delayed** instead (`use_delay`: its next I/O waits for
//!   the overshoot of the window's latency over the target, at most 250 ms, as
//!   `blkcg_maybe_throttle_blkg` caps it).
//! - A window that meets its target, of the group that caused the throttling, **ramps** the
//!   peers back up by `max(qd / 16, 1)` (`scale_amount`) to the device's queue depth `qd`,
//!   first clearing any delay; once all are back they are unthrottled again (no depth limit,
//!   as a group starts) and the throttling ends.
//! - A tighter target that misses takes over the throttling (`scale_lat` is the tightest
//!   target that missed).
//!
//! Latency is measured from the bio's arrival here to its completion (the kernel measures from
//! `bio_issue_init`, before its own throttling). Deviations, and why: groups are flat (peers
//! are all the configured groups and the default group, there is no nesting below the root
//! yet); the kernel's scale cookie, which children compare with their parent's, is applied
//! directly to each peer at the window's end — the same steps without the indirection; the
//! delay is charged to the group's next release rather than to its tasks' return to user
//! space.

use std::collections::{BTreeMap, VecDeque};

use elevator_core::Nanos;

use crate::{Bio, Controller, GroupCounters};

/// Shortest and longest window (`BLKIOLATENCY_MIN_WIN_SIZE`, `_MAX_WIN_SIZE`).
pub const IOLATENCY_WIN_MIN_NS: Nanos = 100_000_000;
pub const IOLATENCY_WIN_MAX_NS: Nanos = 1_000_000_000;
/// Longest delay a throttled group takes at once (`blkcg_maybe_throttle_blkg`'s 250 ms).
pub const IOLATENCY_DELAY_MAX_NS: Nanos = 250_000_000;
/// Largest target accepted (one minute: no device is that slow on purpose).
pub const IOLATENCY_TARGET_MAX_NS: Nanos = 60_000_000_000;
/// Groups one controller handles.
pub const IOLATENCY_GROUPS_MAX: usize = 4096;

/// One group's settings: `target_ns` none for a group without `io.latency`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoLatencyGroup {
    pub cgroup: u32,
    pub name: String,
    pub target_ns: Option<Nanos>,
}

/// Parses the keys of an `io.latency` line after `MAJ:MIN`: `target=<µs>` (or `target=max`
/// to remove it), as `iolatency_set_limit` takes them. The error names the key.
pub fn parse_io_latency_keys(words: &str) -> Result<Option<Nanos>, String> {
    let mut target = None;
    for tok in words.split_whitespace() {
        let (key, value) = tok
            .split_once('=')
            .ok_or_else(|| format!("io.latency: `{tok}`: expected target=USEC"))?;
        if key != "target" {
            return Err(format!("io.latency: `{tok}`: unknown key; io.latency takes target"));
        }
        target = if value == "max" {
            None
        } else {
            let us: u64 = value
                .parse()
                .map_err(|_| format!("io.latency: `{tok}`: expected microseconds or `max`"))?;
            let ns = us.saturating_mul(1000);
            if ns == 0 || ns > IOLATENCY_TARGET_MAX_NS {
                return Err(format!(
                    "io.latency: `{tok}`: the target must be 1 µs to {} s",
                    IOLATENCY_TARGET_MAX_NS / 1_000_000_000
                ));
            }
            Some(ns)
        };
    }
    Ok(target)
}

#[derive(Debug, Default)]
struct Window {
    start_ns: Nanos,
    count: u64,
    sum_ns: u128,
    missed: u64,
}

#[derive(Debug)]
struct Group {
    settings: IoLatencyGroup,
    window_ns: Nanos,
    window: Window,
    /// Requests this group may have below at once (`u32::MAX`: not throttled, as
    /// `iolatency_pd_init` leaves it).
    max_depth: u32,
    in_flight: u32,
    /// No release before this time (`use_delay`).
    delay_until_ns: Nanos,
    queue: VecDeque<(Bio, Nanos)>,
    counters: GroupCounters,
}

impl Group {
    fn new(settings: IoLatencyGroup) -> Group {
        let window_ns = settings
            .target_ns
            .map_or(0, |t| (16 * t).clamp(IOLATENCY_WIN_MIN_NS, IOLATENCY_WIN_MAX_NS));
        Group {
            counters: GroupCounters { name: settings.name.clone(), ..GroupCounters::default() },
            settings,
            window_ns,
            window: Window::default(),
            max_depth: u32::MAX,
            in_flight: 0,
            delay_until_ns: 0,
            queue: VecDeque::new(),
        }
    }

    /// Looser than a target of `lat`: throttled when a group with that target misses.
    fn looser_than(&self, lat: Nanos) -> bool {
        self.settings.target_ns.is_none_or(|t| t > lat)
    }
}

/// The `io.latency` controller of one device.
#[derive(Debug)]
pub struct IoLatency {
    groups: Vec<Group>,
    by_cgroup: BTreeMap<u32, usize>,
    default_group: usize,
    /// The device's queue depth (`blk_queue_depth`): a group's depth when unthrottled.
    qd: u32,
    rotational: bool,
    /// The target of the group whose misses throttle the others (`scale_lat`), if any.
    scale_lat_ns: Option<Nanos>,
    held: usize,
    next_timer_ns: Option<Nanos>,
    /// Windows that missed and that met their targets, over all groups.
    pub windows_missed: u64,
    pub windows_met: u64,
}

impl IoLatency {
    /// A controller for `groups` on a device of queue depth `qd`; requests of cgroups not
    /// listed belong to a default group without a target.
    pub fn new(
        groups: Vec<IoLatencyGroup>,
        qd: u32,
        rotational: bool,
    ) -> Result<IoLatency, String> {
        if groups.len() >= IOLATENCY_GROUPS_MAX {
            return Err(format!(
                "{} io.latency groups: at most {}",
                groups.len(),
                IOLATENCY_GROUPS_MAX - 1
            ));
        }
        let qd = qd.max(1);
        let mut by_cgroup = BTreeMap::new();
        let mut out = Vec::with_capacity(groups.len() + 1);
        for g in groups {
            if g.target_ns.is_some_and(|t| t == 0 || t > IOLATENCY_TARGET_MAX_NS) {
                return Err(format!("group `{}`: target out of range", g.name));
            }
            if by_cgroup.insert(g.cgroup, out.len()).is_some() {
                return Err(format!("group `{}`: its cgroup is configured twice", g.name));
            }
            out.push(Group::new(g));
        }
        let default_group = out.len();
        out.push(Group::new(IoLatencyGroup {
            cgroup: u32::MAX,
            name: "default".into(),
            target_ns: None,
        }));
        Ok(IoLatency {
            groups: out,
            by_cgroup,
            default_group,
            qd,
            rotational,
            scale_lat_ns: None,
            held: 0,
            next_timer_ns: None,
            windows_missed: 0,
            windows_met: 0,
        })
    }

    fn group_of(&self, bio: &Bio) -> usize {
        self.by_cgroup.get(&bio.request.owner.cgroup).copied().unwrap_or(self.default_group)
    }

    /// The target of `cgroup`'s group, if it has one.
    pub fn target(&self, cgroup: u32) -> Option<Nanos> {
        self.by_cgroup.get(&cgroup).and_then(|&i| self.groups[i].settings.target_ns)
    }

    /// `io.latency` written again (`iolatency_set_limit`): the group's new target (`None`:
    /// `target=max`). Any throttling in force is lifted (`iolatency_clear_scaling`), to be
    /// found again from the next windows.
    pub fn set_target(&mut self, cgroup: u32, target_ns: Option<Nanos>) -> Result<(), String> {
        let &gi = self.by_cgroup.get(&cgroup).ok_or("no such io.latency group")?;
        if target_ns.is_some_and(|t| t == 0 || t > IOLATENCY_TARGET_MAX_NS) {
            return Err("io.latency: the target is out of range".into());
        }
        let settings = IoLatencyGroup { target_ns, ..self.groups[gi].settings.clone() };
        let (queue, in_flight, counters) = {
            let g = &mut self.groups[gi];
            (std::mem::take(&mut g.queue), g.in_flight, g.counters.clone())
        };
        self.groups[gi] = Group { queue, in_flight, counters, ..Group::new(settings) };
        for g in &mut self.groups {
            g.max_depth = u32::MAX;
            g.delay_until_ns = 0;
        }
        self.scale_lat_ns = None;
        Ok(())
    }

    /// The allowed depth of `cgroup`'s group now (`u32::MAX`: not throttled).
    pub fn max_depth(&self, cgroup: u32) -> Option<u32> {
        self.by_cgroup.get(&cgroup).map(|&i| self.groups[i].max_depth)
    }

    /// The end of group `gi`'s window at `now`: `iolatency_check_latencies`.
    fn check_window(&mut self, gi: usize, now: Nanos) {
        let g = &mut self.groups[gi];
        let Some(target) = g.settings.target_ns else { return };
        if now < g.window.start_ns + g.window_ns {
            return;
        }
        let w = std::mem::replace(&mut g.window, Window { start_ns: now, ..Window::default() });
        if w.count == 0 {
            return;
        }
        let mean = (w.sum_ns / u128::from(w.count)) as Nanos;
        let ok = if self.rotational { mean <= target } else { w.missed < (w.count / 10).max(1) };
        if ok {
            self.windows_met += 1;
            if self.scale_lat_ns == Some(target) {
                self.scale(target, true, 0, now);
            }
        } else {
            self.windows_missed += 1;
            if self.scale_lat_ns.is_none_or(|lat| lat >= target) {
                self.scale_lat_ns = Some(target);
                self.scale(target, false, mean.saturating_sub(target), now);
            }
        }
    }

    /// Scales every group looser than `lat` down (halving, then delaying by `overshoot_ns`)
    /// or up (by `max(qd / 16, 1)`, first lifting any delay).
    fn scale(&mut self, lat: Nanos, up: bool, overshoot_ns: Nanos, now: Nanos) {
        let qd = self.qd;
        let step = (qd >> 4).max(1);
        let mut all_back = true;
        for g in self.groups.iter_mut().filter(|g| g.looser_than(lat)) {
            // `scale_change`: a depth above the device's counts as the device's.
            let depth = g.max_depth.min(qd);
            if up {
                if g.delay_until_ns > now {
                    g.delay_until_ns = now;
                } else if depth + step >= qd {
                    g.max_depth = u32::MAX;
                } else {
                    g.max_depth = depth + step;
                }
            } else if depth > 1 {
                g.max_depth = (depth >> 1).max(1);
            } else {
                g.delay_until_ns = now + overshoot_ns.clamp(1, IOLATENCY_DELAY_MAX_NS);
            }
            all_back &= g.max_depth == u32::MAX;
        }
        if up && all_back {
            self.scale_lat_ns = None;
        }
    }
}

impl Controller for IoLatency {
    fn name(&self) -> &'static str {
        "io.latency"
    }

    fn submit(&mut self, bio: Bio, now_ns: Nanos) {
        let gi = self.group_of(&bio);
        self.groups[gi].queue.push_back((bio, now_ns));
        self.held += 1;
    }

    fn release(&mut self, now_ns: Nanos, out: &mut Vec<Bio>) {
        let mut next: Option<Nanos> = None;
        for g in self.groups.iter_mut() {
            if g.queue.is_empty() {
                continue;
            }
            if g.delay_until_ns > now_ns {
                next = Some(next.map_or(g.delay_until_ns, |n| n.min(g.delay_until_ns)));
                continue;
            }
            while g.in_flight < g.max_depth {
                let Some((bio, arrived)) = g.queue.pop_front() else { break };
                if now_ns > arrived {
                    g.counters.held += 1;
                }
                g.in_flight += 1;
                g.counters.ios += 1;
                g.counters.bytes += bio.request.len_bytes;
                self.held -= 1;
                out.push(bio);
            }
        }
        self.next_timer_ns = next;
    }

    fn completed(&mut self, bio: &Bio, now_ns: Nanos) {
        let gi = self.group_of(bio);
        let g = &mut self.groups[gi];
        g.in_flight = g.in_flight.saturating_sub(1);
        if let Some(target) = g.settings.target_ns {
            if g.window.count == 0 && g.window.start_ns == 0 {
                g.window.start_ns = bio.request.submit_ns;
            }
            let lat = now_ns.saturating_sub(bio.request.submit_ns);
            g.window.count += 1;
            g.window.sum_ns += u128::from(lat);
            g.window.missed += u64::from(lat > target);
            self.check_window(gi, now_ns);
        }
    }

    fn next_timer_ns(&self) -> Option<Nanos> {
        self.next_timer_ns
    }

    fn held(&self) -> usize {
        self.held
    }

    fn counters(&self) -> Vec<GroupCounters> {
        self.groups.iter().map(|g| g.counters.clone()).collect()
    }
}

#[cfg(test)]
mod tests;
