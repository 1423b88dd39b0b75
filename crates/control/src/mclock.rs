//! mClock (Gulati, Merchant and Varman, "mClock: Handling Throughput Variability for
//! Hypervisor IO Scheduling", OSDI 2010), with dmClock's tag rules for one server.
//!
//! Each group has a **reservation** (a floor, in I/Os per second), a **weight** (its share of
//! what is left) and a **limit** (a ceiling, in I/Os per second). Every request gets three tags
//! when it arrives at time `t`, from the tags of its group's previous request:
//!
//! - `R = max(R' + 1/r, t)` (reservation), `L = max(L' + 1/l, t)` (limit),
//!   `P = max(P' + 1/w, t)` (proportional share; `w` scaled so weight 100 spaces requests 10 ms
//!   apart, which only sets the unit).
//!
//! While the device has room (fewer than `depth` requests below), the scheduler:
//! 1. **Constraint-based phase** — if some group's first request has `R <= now`, releases the
//!    one with the smallest `R`: reservations come first, whatever the weights.
//! 2. **Weight-based phase** — else, among groups whose first request has `L <= now` (under
//!    their limit), releases the smallest `P`, and moves that group's remaining `R` tags back
//!    by `1/r`, so service given by weight does not count against its reservation (the paper's
//!    Algorithm 1).
//! 3. Else it waits: the earliest `R` or `L` among the first requests is the next timer.
//!
//! A group that becomes active again (it had nothing waiting and nothing below) has its P tags
//! synchronised with the active ones: their P tags move back so that the smallest is `now`
//! (the paper's "idle VM reactivation"), so an idle group neither gains credit by idling nor
//! is starved by groups whose P tags ran ahead of real time.
//!
//! The reservation is a floor for a *backlogged* group (one that keeps requests waiting here):
//! a request's tags are set when it arrives and never earlier than its arrival, so a client
//! that keeps only a request or two outstanding and arrives after its reservation came due
//! loses that lag, as in the paper.
//!
//! Deviations, and why: one server, so dmClock's `ρ` and `δ` (requests served elsewhere since
//! the last one here) are both 1 — the tags are mClock's. Every request costs one I/O,
//! whatever its size (mClock's IOPS accounting; the paper's size-scaled cost is not
//! modelled). Tags are kept in nanoseconds as `f64`: IEEE 754 arithmetic rounds the same on
//! every machine, so runs stay deterministic. A request of a cgroup that is not configured belongs to the
//! default group (reservation 0, weight 100, no limit).

use std::collections::{BTreeMap, VecDeque};

use elevator_core::Nanos;

use crate::{Bio, Controller, GroupCounters};

/// Largest reservation or limit accepted, in I/Os per second (ten million: beyond any device).
pub const MCLOCK_IOPS_MAX: u32 = 10_000_000;
/// Weights, as cgroup v2's `io.weight` takes them.
pub const MCLOCK_WEIGHT_MIN: u32 = 1;
pub const MCLOCK_WEIGHT_MAX: u32 = 10_000;
/// The default group's weight, and the one a configuration gives when it names none.
pub const MCLOCK_WEIGHT_DEFAULT: u32 = 100;
/// Requests released below at once unless configured (the host's issue queue in the paper's
/// ESX implementation was 32 deep).
pub const MCLOCK_DEPTH_DEFAULT: u32 = 32;
/// Largest `depth` accepted.
pub const MCLOCK_DEPTH_MAX: u32 = 65_536;
/// Groups one controller schedules.
pub const MCLOCK_GROUPS_MAX: usize = 4096;

const NS_PER_S: f64 = 1e9;

/// One group's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MclockGroup {
    /// The interned cgroup (`Owner::cgroup`) whose requests belong to this group.
    pub cgroup: u32,
    /// Name in counters.
    pub name: String,
    /// I/Os per second guaranteed while the group asks for them (0: none).
    pub reservation_iops: u32,
    /// Share of what reservations leave, 1..=10000.
    pub weight: u32,
    /// I/Os per second never exceeded (0: no limit).
    pub limit_iops: u32,
}

impl MclockGroup {
    /// Applies `reservation_iops=N weight=N limit_iops=N` words (any subset) to `self` and
    /// checks the result; an error names the word.
    pub fn apply_keys(&self, words: &str) -> Result<MclockGroup, String> {
        let mut g = self.clone();
        for tok in words.split_whitespace() {
            let (key, value) = tok
                .split_once('=')
                .ok_or_else(|| format!("mclock: `{tok}`: expected KEY=VALUE"))?;
            let slot = match key {
                "reservation_iops" => &mut g.reservation_iops,
                "weight" => &mut g.weight,
                "limit_iops" => &mut g.limit_iops,
                _ => {
                    return Err(format!(
                        "mclock: `{tok}`: unknown key; mclock takes reservation_iops, weight, limit_iops"
                    ))
                }
            };
            *slot = value.parse().map_err(|_| format!("mclock: `{tok}`: expected an integer"))?;
        }
        g.validate().map_err(|e| format!("mclock: {e}"))?;
        Ok(g)
    }

    /// Checks the settings against the named limits; the message names the key.
    pub fn validate(&self) -> Result<(), String> {
        if !(MCLOCK_WEIGHT_MIN..=MCLOCK_WEIGHT_MAX).contains(&self.weight) {
            return Err(format!(
                "weight {} is outside {MCLOCK_WEIGHT_MIN}..={MCLOCK_WEIGHT_MAX}",
                self.weight
            ));
        }
        for (key, v) in
            [("reservation_iops", self.reservation_iops), ("limit_iops", self.limit_iops)]
        {
            if v > MCLOCK_IOPS_MAX {
                return Err(format!("{key} {v} is above {MCLOCK_IOPS_MAX}"));
            }
        }
        if self.limit_iops != 0 && self.reservation_iops > self.limit_iops {
            return Err(format!(
                "reservation_iops {} is above limit_iops {}",
                self.reservation_iops, self.limit_iops
            ));
        }
        Ok(())
    }
}

/// A request waiting in mClock, with its tags (ns).
#[derive(Clone, Copy, Debug)]
struct Tagged {
    bio: Bio,
    arrived_ns: Nanos,
    r: f64,
    l: f64,
    p: f64,
}

#[derive(Debug)]
struct Group {
    settings: MclockGroup,
    /// Tag spacings (ns per request); infinite for no reservation, zero for no limit.
    r_spacing_ns: f64,
    l_spacing_ns: f64,
    p_spacing_ns: f64,
    /// The tags of the group's latest request.
    last_r: f64,
    last_l: f64,
    last_p: f64,
    queue: VecDeque<Tagged>,
    /// Released below and not completed.
    in_flight: u32,
    counters: GroupCounters,
    /// Requests released in the constraint-based phase (reservation) and by weight.
    by_reservation: u64,
    by_weight: u64,
}

impl Group {
    fn new(settings: MclockGroup) -> Group {
        let per = |iops: u32, none: f64| if iops == 0 { none } else { NS_PER_S / f64::from(iops) };
        Group {
            r_spacing_ns: per(settings.reservation_iops, f64::INFINITY),
            l_spacing_ns: per(settings.limit_iops, 0.0),
            // Weight 100 spaces requests 10 ms apart: P tags are "fair time", only ordered.
            p_spacing_ns: NS_PER_S / f64::from(settings.weight),
            last_r: f64::NEG_INFINITY,
            last_l: f64::NEG_INFINITY,
            last_p: f64::NEG_INFINITY,
            queue: VecDeque::new(),
            in_flight: 0,
            counters: GroupCounters { name: settings.name.clone(), ..GroupCounters::default() },
            by_reservation: 0,
            by_weight: 0,
            settings,
        }
    }
}

/// Where the released requests of one group came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MclockPhases {
    pub by_reservation: u64,
    pub by_weight: u64,
}

/// The mClock controller of one device (or of one NBD server's backing file).
#[derive(Debug)]
pub struct Mclock {
    groups: Vec<Group>,
    by_cgroup: BTreeMap<u32, usize>,
    /// Index of the default group in `groups`.
    default_group: usize,
    depth: u32,
    in_flight: u32,
    held: usize,
    next_timer_ns: Option<Nanos>,
}

impl Mclock {
    /// A controller for `groups` that keeps at most `depth` requests below it. A default group
    /// (reservation 0, weight 100, no limit) takes the requests of every other cgroup.
    pub fn new(groups: Vec<MclockGroup>, depth: u32) -> Result<Mclock, String> {
        if !(1..=MCLOCK_DEPTH_MAX).contains(&depth) {
            return Err(format!("mclock depth {depth} is outside 1..={MCLOCK_DEPTH_MAX}"));
        }
        if groups.len() >= MCLOCK_GROUPS_MAX {
            return Err(format!(
                "{} mclock groups: at most {}",
                groups.len(),
                MCLOCK_GROUPS_MAX - 1
            ));
        }
        let mut by_cgroup = BTreeMap::new();
        let mut out = Vec::with_capacity(groups.len() + 1);
        for g in groups {
            g.validate().map_err(|e| format!("group `{}`: {e}", g.name))?;
            if by_cgroup.insert(g.cgroup, out.len()).is_some() {
                return Err(format!("group `{}`: its cgroup is configured twice", g.name));
            }
            out.push(Group::new(g));
        }
        let default_group = out.len();
        out.push(Group::new(MclockGroup {
            cgroup: u32::MAX,
            name: "default".to_string(),
            reservation_iops: 0,
            weight: MCLOCK_WEIGHT_DEFAULT,
            limit_iops: 0,
        }));
        Ok(Mclock {
            groups: out,
            by_cgroup,
            default_group,
            depth,
            in_flight: 0,
            held: 0,
            next_timer_ns: None,
        })
    }

    /// Changes a configured group's reservation, weight and limit (`elevator ctl`); queued
    /// requests keep their tags, the next ones are spaced by the new settings.
    pub fn set_group(&mut self, settings: MclockGroup) -> Result<(), String> {
        settings.validate().map_err(|e| format!("group `{}`: {e}", settings.name))?;
        let Some(&i) = self.by_cgroup.get(&settings.cgroup) else {
            return Err(format!("group `{}` is not configured", settings.name));
        };
        let g = &mut self.groups[i];
        let fresh = Group::new(settings.clone());
        g.r_spacing_ns = fresh.r_spacing_ns;
        g.l_spacing_ns = fresh.l_spacing_ns;
        g.p_spacing_ns = fresh.p_spacing_ns;
        g.settings = settings;
        Ok(())
    }

    /// The settings of the group of `cgroup`, if configured.
    pub fn group(&self, cgroup: u32) -> Option<&MclockGroup> {
        self.by_cgroup.get(&cgroup).map(|&i| &self.groups[i].settings)
    }

    /// Requests released below and not completed.
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Per group (configured ones first, the default group last): how its released requests
    /// were chosen.
    pub fn phases(&self) -> Vec<MclockPhases> {
        self.groups
            .iter()
            .map(|g| MclockPhases { by_reservation: g.by_reservation, by_weight: g.by_weight })
            .collect()
    }

    fn group_of(&self, bio: &Bio) -> usize {
        self.by_cgroup.get(&bio.request.owner.cgroup).copied().unwrap_or(self.default_group)
    }

    /// The paper's idle-group reactivation: move the active groups' P tags back so the
    /// smallest is `now`, when group `gi` becomes active.
    fn reactivate(&mut self, gi: usize, now: f64) {
        let min_p = self
            .groups
            .iter()
            .enumerate()
            .filter(|(i, g)| *i != gi && !g.queue.is_empty())
            .map(|(_, g)| g.queue[0].p)
            .fold(f64::INFINITY, f64::min);
        if !min_p.is_finite() || min_p <= now {
            return;
        }
        let shift = min_p - now;
        for (i, g) in self.groups.iter_mut().enumerate() {
            if i == gi || g.queue.is_empty() {
                continue;
            }
            for t in g.queue.iter_mut() {
                t.p -= shift;
            }
            g.last_p -= shift;
        }
    }

    /// The group whose first request goes next, and whether by reservation.
    fn pick(&self, now: f64) -> Option<(usize, bool)> {
        let mut best_r: Option<(f64, usize)> = None;
        let mut best_p: Option<(f64, usize)> = None;
        for (i, g) in self.groups.iter().enumerate() {
            let Some(h) = g.queue.front() else { continue };
            if h.r <= now && best_r.is_none_or(|(r, _)| h.r < r) {
                best_r = Some((h.r, i));
            }
            if h.l <= now && best_p.is_none_or(|(p, _)| h.p < p) {
                best_p = Some((h.p, i));
            }
        }
        best_r.map(|(_, i)| (i, true)).or(best_p.map(|(_, i)| (i, false)))
    }
}

impl Controller for Mclock {
    fn name(&self) -> &'static str {
        "mclock"
    }

    fn submit(&mut self, bio: Bio, now_ns: Nanos) {
        let now = now_ns as f64;
        let gi = self.group_of(&bio);
        if self.groups[gi].queue.is_empty() && self.groups[gi].in_flight == 0 {
            self.reactivate(gi, now);
        }
        let g = &mut self.groups[gi];
        // No reservation: never eligible by reservation (and no -inf + inf = NaN).
        let r = if g.r_spacing_ns.is_finite() {
            (g.last_r + g.r_spacing_ns).max(now)
        } else {
            f64::INFINITY
        };
        let l = (g.last_l + g.l_spacing_ns).max(now);
        let p = (g.last_p + g.p_spacing_ns).max(now);
        (g.last_r, g.last_l, g.last_p) = (r, l, p);
        g.queue.push_back(Tagged { bio, arrived_ns: now_ns, r, l, p });
        self.held += 1;
    }

    fn release(&mut self, now_ns: Nanos, out: &mut Vec<Bio>) {
        let now = now_ns as f64;
        self.next_timer_ns = None;
        while self.in_flight < self.depth {
            let Some((gi, by_reservation)) = self.pick(now) else { break };
            let g = &mut self.groups[gi];
            let t = g.queue.pop_front().expect("picked groups have a request");
            if by_reservation {
                g.by_reservation += 1;
            } else {
                g.by_weight += 1;
                // Service by weight does not count against the reservation (Algorithm 1).
                if g.r_spacing_ns.is_finite() {
                    for q in g.queue.iter_mut() {
                        q.r -= g.r_spacing_ns;
                    }
                    g.last_r -= g.r_spacing_ns;
                }
            }
            g.counters.ios += 1;
            g.counters.bytes += t.bio.request.len_bytes;
            if now_ns > t.arrived_ns {
                g.counters.held += 1;
            }
            g.in_flight += 1;
            self.held -= 1;
            self.in_flight += 1;
            out.push(t.bio);
        }
        if self.in_flight < self.depth && self.held > 0 {
            // Nothing eligible now: the earliest R or L tag among the first requests.
            let next = self
                .groups
                .iter()
                .filter_map(|g| g.queue.front())
                .map(|h| h.r.min(h.l))
                .fold(f64::INFINITY, f64::min);
            if next.is_finite() {
                self.next_timer_ns = Some((next.ceil() as Nanos).max(now_ns + 1));
            }
        }
    }

    fn completed(&mut self, bio: &Bio, _now_ns: Nanos) {
        debug_assert!(self.in_flight > 0, "a completion without a release");
        self.in_flight = self.in_flight.saturating_sub(1);
        let gi = self.group_of(bio);
        let g = &mut self.groups[gi];
        g.in_flight = g.in_flight.saturating_sub(1);
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
