//! cgroup v2 `io.max`: blk-throttle's per-group limits on bytes and I/Os per second, per
//! direction (`block/blk-throttle.c`, Linux 5.x–6.x).
//!
//! Each group and direction has a *slice* (`throtl_slice`: 100 ms on a rotational device,
//! 20 ms on a non-rotational one, `DFL_THROTL_SLICE_HD`/`_SSD`). Within a slice a bio may go
//! when what the slice has dispatched plus the bio fits what the limit allows for the time
//! elapsed, rounded *up* to whole slices (`tg_within_bps_limit`, `tg_within_iops_limit`): so a
//! group that starts a slice may send one slice's worth at once. Otherwise it waits, in FIFO
//! order per direction, for the time the excess takes at the limit, and the slice is extended
//! to cover the wait (`tg_may_dispatch`). Whole slices that have passed are trimmed from the
//! slice's accounting after each dispatch (`throtl_trim_slice`). A direction with nothing
//! queued whose slice has run out starts a fresh one (`throtl_start_new_slice`): what an idle
//! group did not use is not carried over.
//!
//! A bio that arrives with nothing queued in its direction and fits the limits passes at once
//! (`blk_throtl_bio`); one that must wait is queued. Waiting reads and writes are dispatched
//! three reads to one write when both are ready (`throtl_dispatch_tg`: a quantum of 8, 3/4 of
//! it reads).
//!
//! Deviations, and why: groups are flat — a bio is throttled by its own cgroup's limits only,
//! not also by its ancestors' (elevator's groups have no nesting below the root yet). Time is
//! in nanoseconds rather than jiffies, so waits are not rounded up to a jiffy (the kernel's
//! minimum wait of one jiffy is kept as one nanosecond). `io.max`'s `MAJ:MIN` names the device
//! the line applies to; the caller picks the lines of its device.

use std::collections::{BTreeMap, VecDeque};

use elevator_core::{Nanos, Op};

use crate::{Bio, Controller, GroupCounters};

/// `DFL_THROTL_SLICE_HD`: the slice on a rotational device.
pub const THROTL_SLICE_HD_NS: Nanos = 100_000_000;
/// `DFL_THROTL_SLICE_SSD`: the slice on a non-rotational device.
pub const THROTL_SLICE_SSD_NS: Nanos = 20_000_000;
/// `THROTL_GRP_QUANTUM`: bios dispatched from one group in one round, 3/4 of them reads.
pub const THROTL_GRP_QUANTUM: usize = 8;
/// Groups one controller throttles.
pub const THROTTLE_GROUPS_MAX: usize = 4096;

const NS_PER_S: u128 = 1_000_000_000;

/// One group's `io.max` limits; `None` is `max` (no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoMax {
    pub rbps: Option<u64>,
    pub wbps: Option<u64>,
    pub riops: Option<u64>,
    pub wiops: Option<u64>,
}

/// Why an `io.max` line was refused: the key (or `MAJ:MIN`) and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("io.max: `{key}`: {msg}")]
pub struct IoMaxError {
    pub key: String,
    pub msg: String,
}

impl IoMax {
    /// Parses the keys of an `io.max` line (`rbps=2097152 wiops=120 riops=max`), as
    /// `tg_set_limit` does: each of `rbps`, `wbps`, `riops`, `wiops` takes `max` or an integer
    /// of at least 2 (the kernel refuses 0 and 1 with EINVAL); the i/o-per-second ones are
    /// capped at `u32::MAX`. An unknown key is an error. Keys not given keep `current`'s value.
    pub fn parse_keys(words: &str, current: IoMax) -> Result<IoMax, IoMaxError> {
        let mut v = current;
        for tok in words.split_whitespace() {
            let err = |msg: &str| IoMaxError { key: tok.to_string(), msg: msg.to_string() };
            let (key, value) = tok.split_once('=').ok_or_else(|| err("expected KEY=VALUE"))?;
            if !matches!(key, "rbps" | "wbps" | "riops" | "wiops") {
                return Err(err("unknown key; io.max takes rbps, wbps, riops and wiops"));
            }
            let limit = if value == "max" {
                None
            } else {
                let n: u64 = value.parse().map_err(|_| err("expected an integer or `max`"))?;
                if n < 2 {
                    return Err(err("must be at least 2 (or `max`)"));
                }
                Some(n)
            };
            let iops = limit.map(|n| n.min(u64::from(u32::MAX)));
            match key {
                "rbps" => v.rbps = limit,
                "wbps" => v.wbps = limit,
                "riops" => v.riops = iops,
                _ => v.wiops = iops,
            }
        }
        Ok(v)
    }

    /// Parses a whole `io.max` line, `MAJ:MIN key=value ...`: the device and its limits.
    pub fn parse_line(line: &str) -> Result<((u32, u32), IoMax), IoMaxError> {
        let line = line.trim();
        let (dev, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let bad = || IoMaxError {
            key: dev.to_string(),
            msg: "expected the device as MAJ:MIN".to_string(),
        };
        let (maj, min) = dev.split_once(':').ok_or_else(bad)?;
        let maj: u32 = maj.parse().map_err(|_| bad())?;
        let min: u32 = min.parse().map_err(|_| bad())?;
        Ok(((maj, min), IoMax::parse_keys(rest, IoMax::default())?))
    }
}

impl std::fmt::Display for IoMax {
    /// As `io.max` reads back: every key, `max` where unlimited.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |v: Option<u64>| v.map_or("max".to_string(), |n| n.to_string());
        write!(
            f,
            "rbps={} wbps={} riops={} wiops={}",
            s(self.rbps),
            s(self.wbps),
            s(self.riops),
            s(self.wiops)
        )
    }
}

/// One group's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThrottleGroup {
    /// The interned cgroup (`Owner::cgroup`) whose bios these limits govern.
    pub cgroup: u32,
    pub name: String,
    pub limits: IoMax,
}

/// One direction of one group: its queue and its slice.
#[derive(Debug, Default)]
struct Dir {
    queue: VecDeque<Bio>,
    slice_start_ns: Nanos,
    slice_end_ns: Nanos,
    bytes_disp: u64,
    io_disp: u64,
}

#[derive(Debug)]
struct Group {
    settings: ThrottleGroup,
    dirs: [Dir; 2],
    counters: GroupCounters,
}

impl Group {
    fn limits(&self, write: bool) -> (Option<u64>, Option<u64>) {
        let l = &self.settings.limits;
        if write {
            (l.wbps, l.wiops)
        } else {
            (l.rbps, l.riops)
        }
    }
}

/// The `io.max` controller of one device.
#[derive(Debug)]
pub struct Throttle {
    groups: Vec<Group>,
    by_cgroup: BTreeMap<u32, usize>,
    slice_ns: Nanos,
    /// Bios that passed at once, handed out by the next `release`.
    ready: Vec<Bio>,
    held: usize,
    next_timer_ns: Option<Nanos>,
}

/// Index of a bio's direction: reads (and everything not a write) 0, writes 1.
fn dir_of(bio: &Bio) -> usize {
    usize::from(bio.request.op == Op::Write)
}

impl Throttle {
    /// A controller for `groups` with slices of `slice_ns` ([`THROTL_SLICE_HD_NS`] or
    /// [`THROTL_SLICE_SSD_NS`]). Bios of other cgroups pass unthrottled.
    pub fn new(groups: Vec<ThrottleGroup>, slice_ns: Nanos) -> Result<Throttle, String> {
        if groups.len() > THROTTLE_GROUPS_MAX {
            return Err(format!("{} io.max groups: at most {THROTTLE_GROUPS_MAX}", groups.len()));
        }
        if slice_ns == 0 {
            return Err("throtl_slice must be positive".to_string());
        }
        let mut by_cgroup = BTreeMap::new();
        let mut out = Vec::with_capacity(groups.len());
        for g in groups {
            if by_cgroup.insert(g.cgroup, out.len()).is_some() {
                return Err(format!("group `{}`: its cgroup is configured twice", g.name));
            }
            out.push(Group {
                counters: GroupCounters { name: g.name.clone(), ..GroupCounters::default() },
                settings: g,
                dirs: [Dir::default(), Dir::default()],
            });
        }
        Ok(Throttle {
            groups: out,
            by_cgroup,
            slice_ns,
            ready: Vec::new(),
            held: 0,
            next_timer_ns: None,
        })
    }

    /// New limits for a configured group (`elevator ctl`); the slices go on.
    pub fn set_limits(&mut self, cgroup: u32, limits: IoMax) -> Result<(), String> {
        let &i = self.by_cgroup.get(&cgroup).ok_or("the group has no io.max")?;
        self.groups[i].settings.limits = limits;
        Ok(())
    }

    /// The limits of `cgroup`'s group, if configured.
    pub fn limits(&self, cgroup: u32) -> Option<IoMax> {
        self.by_cgroup.get(&cgroup).map(|&i| self.groups[i].settings.limits)
    }

    /// `tg_may_dispatch` for `len_bytes` in direction `d` of group `gi` at `now`: `Ok` if it
    /// may go, else `Err(when it may)`. A used-up slice of a direction with nothing queued
    /// starts afresh; otherwise the slice is extended to cover at least one more slice, and
    /// then the wait.
    fn may_dispatch(
        &mut self,
        gi: usize,
        d: usize,
        len_bytes: u64,
        now: Nanos,
    ) -> Result<(), Nanos> {
        let slice = self.slice_ns;
        let g = &mut self.groups[gi];
        let (bps, iops) = g.limits(d == 1);
        let dir = &mut g.dirs[d];
        if bps.is_none() && iops.is_none() {
            return Ok(());
        }
        let used = !(dir.slice_start_ns..=dir.slice_end_ns).contains(&now);
        if used && dir.queue.is_empty() {
            // throtl_start_new_slice: nothing an idle group left unused carries over.
            (dir.slice_start_ns, dir.slice_end_ns, dir.bytes_disp, dir.io_disp) =
                (now, now + slice, 0, 0);
        } else if dir.slice_end_ns < now + slice {
            dir.slice_end_ns = now + slice;
        }
        let elapsed = now - dir.slice_start_ns;
        let mut wait: Nanos = 0;
        if let Some(bps) = bps {
            // tg_within_bps_limit: the elapsed time rounded up to slices, one at the start.
            let rnd = if elapsed == 0 { slice } else { elapsed.div_ceil(slice) * slice };
            let allowed = (u128::from(bps) * u128::from(rnd) / NS_PER_S) as u64;
            if dir.bytes_disp + len_bytes > allowed {
                let extra = dir.bytes_disp + len_bytes - allowed;
                let w = (u128::from(extra) * NS_PER_S / u128::from(bps)) as u64;
                wait = wait.max(w.max(1) + (rnd - elapsed));
            }
        }
        if let Some(iops) = iops {
            // tg_within_iops_limit: rounded up past now; else wait for the next slice.
            let rnd = (elapsed + 1).div_ceil(slice) * slice;
            let allowed = (u128::from(iops) * u128::from(rnd) / NS_PER_S) as u64;
            if allowed == 0 || dir.io_disp + 1 > allowed {
                wait = wait.max(rnd - elapsed);
            }
        }
        if wait == 0 {
            return Ok(());
        }
        if dir.slice_end_ns < now + wait {
            dir.slice_end_ns = now + wait;
        }
        Err(now + wait)
    }

    /// Charges a dispatched bio and trims whole passed slices (`throtl_charge_bio`,
    /// `throtl_trim_slice`).
    fn charge(&mut self, gi: usize, d: usize, len_bytes: u64, now: Nanos) {
        let slice = self.slice_ns;
        let g = &mut self.groups[gi];
        let (bps, iops) = g.limits(d == 1);
        g.counters.ios += 1;
        g.counters.bytes += len_bytes;
        let dir = &mut g.dirs[d];
        dir.bytes_disp += len_bytes;
        dir.io_disp += 1;
        if !(dir.slice_start_ns..=dir.slice_end_ns).contains(&now) {
            return;
        }
        dir.slice_end_ns = now + slice;
        let nr = (now - dir.slice_start_ns) / slice;
        if nr == 0 {
            return;
        }
        let span = u128::from(slice * nr);
        if let Some(bps) = bps {
            let trim = (u128::from(bps) * span / NS_PER_S) as u64;
            dir.bytes_disp = dir.bytes_disp.saturating_sub(trim);
        }
        if let Some(iops) = iops {
            let trim = (u128::from(iops) * span / NS_PER_S) as u64;
            dir.io_disp = dir.io_disp.saturating_sub(trim);
        }
        dir.slice_start_ns += slice * nr;
    }
}

impl Controller for Throttle {
    fn name(&self) -> &'static str {
        "io.max"
    }

    fn submit(&mut self, bio: Bio, now_ns: Nanos) {
        let Some(&gi) = self.by_cgroup.get(&bio.request.owner.cgroup) else {
            self.ready.push(bio);
            return;
        };
        let d = dir_of(&bio);
        if self.groups[gi].dirs[d].queue.is_empty()
            && self.may_dispatch(gi, d, bio.request.len_bytes, now_ns).is_ok()
        {
            self.charge(gi, d, bio.request.len_bytes, now_ns);
            self.ready.push(bio);
            return;
        }
        let g = &mut self.groups[gi];
        g.dirs[d].queue.push_back(bio);
        g.counters.held += 1;
        self.held += 1;
    }

    fn release(&mut self, now_ns: Nanos, out: &mut Vec<Bio>) {
        out.append(&mut self.ready);
        let mut next: Option<Nanos> = None;
        for gi in 0..self.groups.len() {
            // Rounds of THROTL_GRP_QUANTUM, 3/4 reads, while either direction can go.
            loop {
                let mut moved = 0;
                for (d, quota) in [(0, THROTL_GRP_QUANTUM * 3 / 4), (1, THROTL_GRP_QUANTUM / 4)] {
                    for _ in 0..quota {
                        let Some(len) =
                            self.groups[gi].dirs[d].queue.front().map(|b| b.request.len_bytes)
                        else {
                            break;
                        };
                        match self.may_dispatch(gi, d, len, now_ns) {
                            Ok(()) => {
                                self.charge(gi, d, len, now_ns);
                                let bio =
                                    self.groups[gi].dirs[d].queue.pop_front().expect("a head");
                                self.held -= 1;
                                out.push(bio);
                                moved += 1;
                            }
                            Err(at) => {
                                next = Some(next.map_or(at, |n| n.min(at)));
                                break;
                            }
                        }
                    }
                }
                if moved == 0 {
                    break;
                }
            }
        }
        self.next_timer_ns = if self.held > 0 { next } else { None };
    }

    fn completed(&mut self, _bio: &Bio, _now_ns: Nanos) {}

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
