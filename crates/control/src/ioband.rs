//! dm-ioband (Ryo Tsuruta and Hirokazu Takahashi, VA Linux, 2008–2009; v1.x patches).
//!
//! dm-ioband is a device-mapper target that sits above a partition or volume and shares its
//! bandwidth between *groups* by weight. Several ioband devices on one disk form a *device
//! group* (this module's [`IobandShare`]) whose groups compete with each other.
//!
//! The mechanism, as the patch's documentation describes it:
//! - **Tokens.** Each group holds tokens in proportion to its weight: an epoch hands out
//!   `token_base` tokens split by weight. A bio costs one token under the `weight` policy, or
//!   its size in 512-byte sectors (scaled so that `token_base` tokens buy `token_base` 4 KiB
//!   bios) under `weight-iosize`.
//! - **Throttling only under load.** While the device group has fewer than `io_throttle` bios
//!   in flight below it, bios pass without spending tokens they don't have: dm-ioband only
//!   intervenes once the device is busy.
//! - **Holding.** A group out of tokens keeps its bios until the epoch ends. An epoch ends when
//!   no group that still has tokens is *active* — has a bio waiting, or keeps at least
//!   `io_throttle` bios in flight: tokens are then refilled, and what a group did not spend
//!   carries over, up to one epoch's worth.
//! - **`io_limit`** caps the bios in flight below the device group; more wait in ioband.
//!
//! The known weakness comes out of these rules rather than being scripted: a group that keeps
//! fewer than `io_throttle` bios outstanding is rarely active, so the epoch ends without it,
//! the busy groups get fresh tokens, and its unspent tokens buy it nothing — it gets no
//! protection.
//!
//! - **Priority.** While the device group is busy, the group with the largest fraction of its
//!   tokens left goes first (dm-ioband's `iopriority()`), so groups spend in step.
//!
//! - **range-bw** gives each group a `min:max` range in KB/s instead of a weight: credit at
//!   the maximum rate (a limit even on an idle device), and a debt at the minimum rate while
//!   the group is active; a group in debt goes first and holds the others back, and a minimum
//!   the device cannot deliver is reported in the group's counters.
//!
//! Deviations: tokens are refilled at once when an
//! epoch ends (dm-ioband does it from the same decision point); while the device group is not
//! busy, waiting groups take turns.

use std::collections::VecDeque;

use elevator_core::{Nanos, Owner, SECTOR_BYTES};
use serde::Deserialize;

use crate::{Bio, Controller, GroupCounters};

/// How bios are charged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum Policy {
    /// One token per bio: shares of requests.
    #[serde(rename = "weight")]
    Weight,
    /// Tokens by size: shares of bytes.
    #[serde(rename = "weight-iosize")]
    WeightIosize,
    /// A bandwidth range per group: at least `min_kbs` while it asks for it, never more than
    /// `max_kbs` (the range-bw policy of dm-ioband 1.10, by Dong-Jae Kang, ETRI).
    #[serde(rename = "range-bw")]
    RangeBw,
}

/// A group's bandwidth range under `range-bw`, in KB/s (1000 bytes per second, as
/// dm-ioband's table takes it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BwRange {
    pub min_kbs: u64,
    pub max_kbs: u64,
}

/// How much bandwidth credit a range-bw group may bank: this long at its rate. Bounds the
/// burst after an idle spell, as the per-period token refill of range-bw does.
pub const RANGE_BW_BURST_NS: u64 = 50_000_000;

/// What decides a bio's group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupType {
    /// Only the device's default group.
    None,
    Pid,
    Pgrp,
    Uid,
    Gid,
    Cgroup,
}

/// dm-ioband's defaults.
pub const DEFAULT_IO_THROTTLE: u32 = 4;
pub const DEFAULT_IO_LIMIT: u32 = 128;
pub const DEFAULT_TOKEN_BASE: u64 = 2048;

/// One ioband device of a share: how it classifies bios, and its groups.
#[derive(Clone, Debug, PartialEq)]
pub struct IobandDevice {
    pub name: String,
    pub group_type: GroupType,
    /// The default group's weight.
    pub weight: u32,
    /// Extra groups: the id the group type matches (a number, or a cgroup id) and a weight.
    pub groups: Vec<(u32, u32)>,
    /// Under `range-bw`: the default group's range, then each extra group's, in order.
    pub ranges: Vec<BwRange>,
}

/// Settings of a whole device group (dm-ioband keeps them in `struct ioband_device`, shared
/// by every ioband device of the group).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShareSettings {
    pub policy: Policy,
    pub token_base: u64,
    /// Bios in flight below which nobody is throttled.
    pub io_throttle: u32,
    /// Bios in flight at which everybody waits.
    pub io_limit: u32,
}

impl Default for ShareSettings {
    fn default() -> Self {
        ShareSettings {
            policy: Policy::Weight,
            token_base: DEFAULT_TOKEN_BASE,
            io_throttle: DEFAULT_IO_THROTTLE,
            io_limit: DEFAULT_IO_LIMIT,
        }
    }
}

#[derive(Debug)]
struct Group {
    name: String,
    device: usize,
    /// `None` for a device's default group.
    key: Option<u32>,
    weight: u32,
    tokens: i64,
    in_flight: u32,
    waiting: VecDeque<Bio>,
    counters: GroupCounters,
    /// range-bw: the range, bytes it may still send under its maximum, bytes of its minimum
    /// it is owed, and whether it fell short of the minimum while it had I/O waiting.
    range: Option<BwRange>,
    max_credit_bytes: f64,
    min_owed_bytes: f64,
    /// Time it was active (had I/O waiting or in flight): what its minimum is measured over.
    active_ns: f64,
}

/// A device group: ioband devices whose groups share one disk's bandwidth.
#[derive(Debug)]
pub struct IobandShare {
    settings: ShareSettings,
    devices: Vec<IobandDevice>,
    groups: Vec<Group>,
    in_flight: u32,
    held: usize,
    next: usize,
    epochs: u64,
    /// range-bw: when credits were last brought up to date.
    credited_ns: Nanos,
}

impl Group {
    /// Whether it got less than its minimum over the time it was active (3 % slack for the
    /// bio in flight at the end). Reported, never silently: the minimums of a device group
    /// can add up to more than the device delivers.
    fn min_unmet(&self, r: &BwRange) -> bool {
        let owed_bytes = r.min_kbs as f64 * 1e3 * self.active_ns / 1e9;
        self.active_ns > 0.0 && (self.counters.bytes as f64) < 0.97 * owed_bytes
    }
}

impl IobandShare {
    pub fn new(settings: ShareSettings, devices: Vec<IobandDevice>) -> Result<IobandShare, String> {
        if devices.is_empty() {
            return Err("an ioband share needs at least one device".to_string());
        }
        if settings.token_base == 0 {
            return Err("token_base must be at least 1".to_string());
        }
        if settings.io_limit == 0 {
            return Err("io_limit must be at least 1".to_string());
        }
        let mut groups = Vec::new();
        for (d, dev) in devices.iter().enumerate() {
            if dev.weight == 0 || dev.groups.iter().any(|&(_, w)| w == 0) {
                return Err(format!("ioband device `{}`: weights must be at least 1", dev.name));
            }
            let want = if settings.policy == Policy::RangeBw { 1 + dev.groups.len() } else { 0 };
            if dev.ranges.len() != want {
                return Err(format!(
                    "ioband device `{}`: {}",
                    dev.name,
                    if want == 0 {
                        "bandwidth ranges apply only to the range-bw policy".to_string()
                    } else {
                        format!("range-bw needs a min:max range for each of its {want} groups")
                    }
                ));
            }
            if let Some(r) = dev.ranges.iter().find(|r| r.max_kbs == 0 || r.min_kbs > r.max_kbs) {
                return Err(format!(
                    "ioband device `{}`: range {}:{} KB/s: the maximum must be at least 1 and at least the minimum",
                    dev.name, r.min_kbs, r.max_kbs
                ));
            }
            if dev.group_type == GroupType::None && !dev.groups.is_empty() {
                return Err(format!(
                    "ioband device `{}`: extra groups need a group_type other than none",
                    dev.name
                ));
            }
            let mut add = |name: String, key: Option<u32>, weight: u32| {
                let range = dev
                    .ranges
                    .get(groups.iter().filter(|g: &&Group| g.device == d).count())
                    .copied();
                groups.push(Group {
                    range,
                    max_credit_bytes: 0.0,
                    min_owed_bytes: 0.0,
                    active_ns: 0.0,
                    counters: GroupCounters { name: name.clone(), ..GroupCounters::default() },
                    name,
                    device: d,
                    key,
                    weight,
                    tokens: 0,
                    in_flight: 0,
                    waiting: VecDeque::new(),
                });
            };
            add(dev.name.clone(), None, dev.weight);
            for &(key, weight) in &dev.groups {
                add(format!("{}:{key}", dev.name), Some(key), weight);
            }
        }
        let mut share = IobandShare {
            settings,
            devices,
            groups,
            in_flight: 0,
            held: 0,
            next: 0,
            epochs: 0,
            credited_ns: 0,
        };
        share.refill();
        Ok(share)
    }

    fn epoch_tokens(&self, g: &Group) -> i64 {
        let total: u64 = self.groups.iter().map(|g| u64::from(g.weight)).sum();
        (self.settings.token_base * u64::from(g.weight) / total.max(1)).max(1) as i64
    }

    /// A new epoch: every group gets its share again, keeping at most one epoch's unspent
    /// tokens (dm-ioband's carry-over).
    fn refill(&mut self) {
        for i in 0..self.groups.len() {
            let add = self.epoch_tokens(&self.groups[i]);
            let g = &mut self.groups[i];
            g.tokens = (g.tokens.max(0) + add).min(2 * add);
        }
        self.epochs += 1;
    }

    fn cost(&self, bio: &Bio) -> i64 {
        match self.settings.policy {
            Policy::Weight | Policy::RangeBw => 1,
            // A 4 KiB bio costs one token; larger ones proportionally more.
            Policy::WeightIosize => {
                bio.request.len_bytes.div_ceil(SECTOR_BYTES).div_ceil(8).max(1) as i64
            }
        }
    }

    fn classify(&self, bio: &Bio) -> usize {
        let device = bio.device as usize;
        let dev = &self.devices[device];
        let owner: &Owner = bio.owner();
        let key = match dev.group_type {
            GroupType::None => None,
            GroupType::Pid => Some(owner.pid),
            GroupType::Pgrp => Some(owner.pgrp),
            GroupType::Uid => Some(owner.uid),
            GroupType::Gid => Some(owner.gid),
            GroupType::Cgroup => Some(owner.cgroup),
        };
        let extra = key
            .and_then(|k| self.groups.iter().position(|g| g.device == device && g.key == Some(k)));
        extra.unwrap_or_else(|| {
            self.groups
                .iter()
                .position(|g| g.device == device && g.key.is_none())
                .expect("every device has a default group")
        })
    }

    /// While the device group is not busy anyone may issue: the next waiting group in turn.
    fn next_waiting(&self) -> Option<usize> {
        let n = self.groups.len();
        (0..n).map(|k| (self.next + k) % n).find(|&i| !self.groups[i].waiting.is_empty())
    }

    /// While it is busy, the waiting group with tokens whose priority is highest: the largest
    /// fraction of its epoch's tokens left (dm-ioband's `iopriority()`). Spending in that order
    /// keeps every group's fraction left in step, so the groups run out together and a window
    /// that cuts an epoch short still sees the weights. Ties go to the next group in turn.
    fn highest_priority_waiting(&self) -> Option<usize> {
        let n = self.groups.len();
        let mut best: Option<(usize, i64, i64)> = None;
        for k in 0..n {
            let i = (self.next + k) % n;
            let g = &self.groups[i];
            if g.waiting.is_empty() || g.tokens <= 0 {
                continue;
            }
            let initial = self.epoch_tokens(g);
            let better = match best {
                None => true,
                // tokens / initial > best_tokens / best_initial, without division.
                Some((_, t, e)) => {
                    i128::from(g.tokens) * i128::from(e) > i128::from(t) * i128::from(initial)
                }
            };
            if better {
                best = Some((i, g.tokens, initial));
            }
        }
        best.map(|(i, _, _)| i)
    }

    /// range-bw: credits every group with the bytes its range earned since the last update.
    /// A group's maximum credit is capped at [`RANGE_BW_BURST_NS`] worth. What it is owed of
    /// its minimum accrues while it is active (I/O waiting or in flight; an idle group is
    /// owed nothing), capped at twice that burst.
    fn credit(&mut self, now_ns: Nanos) {
        let dt = now_ns.saturating_sub(self.credited_ns) as f64;
        self.credited_ns = self.credited_ns.max(now_ns);
        for g in &mut self.groups {
            let Some(r) = g.range else { continue };
            let per_ns = |kbs: u64| kbs as f64 * 1e3 / 1e9;
            let burst = |kbs: u64| (per_ns(kbs) * RANGE_BW_BURST_NS as f64).max(65536.0);
            let next = g.waiting.front().map_or(0.0, |b| b.request.len_bytes as f64);
            g.max_credit_bytes =
                (g.max_credit_bytes + per_ns(r.max_kbs) * dt).min(burst(r.max_kbs).max(next));
            if g.waiting.is_empty() && g.in_flight == 0 {
                g.min_owed_bytes = 0.0;
            } else {
                g.active_ns += dt;
                let cap = 2.0 * burst(r.min_kbs);
                g.min_owed_bytes = (g.min_owed_bytes + per_ns(r.min_kbs) * dt).min(cap);
            }
        }
    }

    /// range-bw: while the device group has room, a group owed its minimum goes first (the
    /// one owed most). Other groups within their maximum go in turn, but only while no active
    /// group is behind its minimum by more than a bio (or nothing is in flight at all):
    /// holding them back is what lets a group with few bios outstanding reach its floor. A
    /// group over its maximum waits for its credit to grow, even on an idle device.
    fn release_range_bw(&mut self, now_ns: Nanos, out: &mut Vec<Bio>) {
        self.credit(now_ns);
        let n = self.groups.len();
        while self.in_flight < self.settings.io_limit {
            let fits = |g: &Group| {
                g.waiting.front().is_some_and(|b| b.request.len_bytes as f64 <= g.max_credit_bytes)
            };
            let owed = (0..n)
                .filter(|&i| fits(&self.groups[i]) && self.groups[i].min_owed_bytes > 0.0)
                .max_by(|&a, &b| {
                    self.groups[a].min_owed_bytes.total_cmp(&self.groups[b].min_owed_bytes)
                });
            let behind = self.groups.iter().any(|g| g.min_owed_bytes > 4096.0);
            let open = !behind || self.in_flight == 0;
            let turn = || (0..n).map(|k| (self.next + k) % n).find(|&i| fits(&self.groups[i]));
            let Some(i) = owed.or_else(|| if open { turn() } else { None }) else {
                break;
            };
            let bio = self.groups[i].waiting.pop_front().expect("fits() saw a bio");
            let bytes = bio.request.len_bytes;
            let g = &mut self.groups[i];
            g.max_credit_bytes -= bytes as f64;
            g.min_owed_bytes = (g.min_owed_bytes - bytes as f64).max(0.0);
            self.send(i, bio, out);
        }
    }

    /// Group `i`'s bio goes down: the counters, the in-flight counts and whose turn is next.
    fn send(&mut self, i: usize, bio: Bio, out: &mut Vec<Bio>) {
        let busy = self.in_flight >= self.settings.io_throttle;
        let g = &mut self.groups[i];
        g.in_flight += 1;
        g.counters.ios += 1;
        g.counters.bytes += bio.request.len_bytes;
        if busy {
            g.counters.held += 1;
        }
        self.held -= 1;
        self.in_flight += 1;
        self.next = (i + 1) % self.groups.len();
        out.push(bio);
    }

    /// Epochs so far (for tests and reports).
    pub fn epochs(&self) -> u64 {
        self.epochs
    }
}

impl Controller for IobandShare {
    fn name(&self) -> &'static str {
        "ioband"
    }

    fn submit(&mut self, bio: Bio, _now_ns: Nanos) {
        let g = self.classify(&bio);
        self.groups[g].waiting.push_back(bio);
        self.held += 1;
    }

    fn release(&mut self, now_ns: Nanos, out: &mut Vec<Bio>) {
        if self.settings.policy == Policy::RangeBw {
            self.release_range_bw(now_ns, out);
            return;
        }
        while self.in_flight < self.settings.io_limit {
            let busy = self.in_flight >= self.settings.io_throttle;
            let pick = if busy { self.highest_priority_waiting() } else { self.next_waiting() };
            let Some(i) = pick else {
                // Nothing may go. If no group that has tokens is active, the epoch is over.
                let waiting = self.groups.iter().any(|g| !g.waiting.is_empty());
                let throttle = self.settings.io_throttle;
                let tokened_active = self
                    .groups
                    .iter()
                    .any(|g| g.tokens > 0 && (!g.waiting.is_empty() || g.in_flight >= throttle));
                if waiting && !tokened_active {
                    self.refill();
                    continue;
                }
                break;
            };
            let bio = self.groups[i].waiting.pop_front().expect("picked groups are waiting");
            self.groups[i].tokens -= self.cost(&bio);
            self.send(i, bio, out);
        }
    }

    fn completed(&mut self, bio: &Bio, _now_ns: Nanos) {
        debug_assert!(self.in_flight > 0, "completion without a release");
        self.in_flight = self.in_flight.saturating_sub(1);
        let g = self.classify(bio);
        self.groups[g].in_flight = self.groups[g].in_flight.saturating_sub(1);
    }

    fn next_timer_ns(&self) -> Option<Nanos> {
        if self.settings.policy != Policy::RangeBw || self.in_flight >= self.settings.io_limit {
            return None;
        }
        // The earliest time a waiting group has earned the bytes of its next bio.
        self.groups
            .iter()
            .filter_map(|g| {
                let bio = g.waiting.front()?;
                let r = g.range?;
                // A group held back for another's minimum waits for a completion, not time.
                let short = bio.request.len_bytes as f64 - g.max_credit_bytes;
                if short <= 0.0 {
                    return None;
                }
                let wait_ns = (short * 1e6 / r.max_kbs as f64).ceil() as Nanos;
                Some(self.credited_ns + wait_ns.max(1))
            })
            .min()
    }

    fn held(&self) -> usize {
        self.held
    }

    fn counters(&self) -> Vec<GroupCounters> {
        self.groups
            .iter()
            .map(|g| GroupCounters {
                name: g.name.clone(),
                min_unmet_kbs: g.range.filter(|r| g.min_unmet(r)).map(|r| r.min_kbs),
                ..g.counters.clone()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::{Op, Request, RequestId};

    fn device(name: &str, weight: u32) -> IobandDevice {
        IobandDevice {
            name: name.to_string(),
            group_type: GroupType::None,
            weight,
            groups: Vec::new(),
            ranges: Vec::new(),
        }
    }

    fn share(policy: Policy, devices: Vec<IobandDevice>) -> IobandShare {
        IobandShare::new(ShareSettings { policy, ..ShareSettings::default() }, devices).unwrap()
    }

    fn bio(id: u64, device: u32, pid: u32, len: u64) -> Bio {
        Bio {
            device,
            request: Request::new(RequestId(id), Op::Read, 0, len, true, Owner::process(pid), 0)
                .unwrap(),
        }
    }

    /// A synthetic disk that serves `per_tick` bios per tick, oldest first; each device group
    /// keeps `outstanding[d]` bios submitted at all times. Returns completed I/Os and bytes.
    fn drive(
        share: &mut IobandShare,
        outstanding: &[u32],
        sizes: &[u64],
        ticks: u32,
    ) -> (Vec<u64>, Vec<u64>) {
        let n = outstanding.len();
        let (mut ios, mut bytes) = (vec![0u64; n], vec![0u64; n]);
        let mut in_device: VecDeque<Bio> = VecDeque::new();
        let mut pending = vec![0u32; n];
        let mut id = 0;
        let mut out = Vec::new();
        for t in 0..ticks {
            for d in 0..n {
                while pending[d] < outstanding[d] {
                    share.submit(bio(id, d as u32, d as u32, sizes[d]), u64::from(t));
                    id += 1;
                    pending[d] += 1;
                }
            }
            share.release(u64::from(t), &mut out);
            in_device.extend(out.drain(..));
            for _ in 0..4 {
                let Some(b) = in_device.pop_front() else { break };
                share.completed(&b, u64::from(t));
                let d = b.device as usize;
                pending[d] -= 1;
                ios[d] += 1;
                bytes[d] += b.request.len_bytes;
            }
        }
        (ios, bytes)
    }

    fn shares(x: &[u64]) -> Vec<f64> {
        let total: u64 = x.iter().sum();
        x.iter().map(|&v| v as f64 * 100.0 / total as f64).collect()
    }

    #[test]
    fn weights_40_20_10_against_50_100_200_processes() {
        let mut s = share(Policy::Weight, vec![device("a", 40), device("b", 20), device("c", 10)]);
        let (ios, _) = drive(&mut s, &[50, 100, 200], &[4096; 3], 20_000);
        let got = shares(&ios);
        for (g, want) in got.iter().zip([57.1, 28.6, 14.3]) {
            assert!((g - want).abs() <= 1.0, "shares {got:?}");
        }
    }

    #[test]
    fn equal_weights_give_equal_shares() {
        let mut s = share(Policy::Weight, vec![device("a", 10), device("b", 10), device("c", 10)]);
        let (ios, _) = drive(&mut s, &[50, 100, 200], &[4096; 3], 20_000);
        assert!(shares(&ios).iter().all(|g| (g - 33.3).abs() <= 1.0), "{:?}", shares(&ios));
    }

    #[test]
    fn weight_iosize_shares_bytes_not_requests() {
        let mut s = share(Policy::WeightIosize, vec![device("small", 10), device("big", 10)]);
        let (ios, bytes) = drive(&mut s, &[32, 32], &[4096, 65536], 20_000);
        let (b, i) = (shares(&bytes), shares(&ios));
        assert!((b[0] - 50.0).abs() < 2.0, "byte shares {b:?}");
        assert!(i[0] > 85.0, "the 4 KiB group issues many more requests: {i:?}");
    }

    #[test]
    fn a_group_with_little_outstanding_io_gets_no_protection() {
        let mut s = share(Policy::Weight, vec![device("light", 50), device("heavy", 50)]);
        let (ios, _) = drive(&mut s, &[1, 64], &[4096; 2], 20_000);
        let got = shares(&ios);
        assert!(got[0] < 10.0, "the light group should fall far below its 50 % weight: {got:?}");
    }

    #[test]
    fn io_limit_caps_bios_in_flight() {
        let settings = ShareSettings { io_limit: 8, ..ShareSettings::default() };
        let mut s = IobandShare::new(settings, vec![device("a", 10)]).unwrap();
        for i in 0..20 {
            s.submit(bio(i, 0, 1, 4096), 0);
        }
        let mut out = Vec::new();
        s.release(0, &mut out);
        assert_eq!((out.len(), s.held()), (8, 12));
        s.completed(&out[0], 1);
        out.clear();
        s.release(1, &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn groups_by_pid_within_one_device() {
        let dev = IobandDevice {
            group_type: GroupType::Pid,
            groups: vec![(7, 20), (8, 10)],
            ..device("vm", 10)
        };
        let mut s = share(Policy::Weight, vec![dev]);
        s.submit(bio(1, 0, 7, 4096), 0);
        s.submit(bio(2, 0, 8, 4096), 0);
        s.submit(bio(3, 0, 9, 4096), 0);
        let mut out = Vec::new();
        s.release(0, &mut out);
        let names: Vec<String> =
            s.counters().into_iter().filter(|c| c.ios > 0).map(|c| c.name).collect();
        assert_eq!(names, vec!["vm", "vm:7", "vm:8"]);
    }

    #[test]
    fn bad_configurations_are_refused() {
        let zero_tokens = ShareSettings { token_base: 0, ..ShareSettings::default() };
        assert!(IobandShare::new(zero_tokens, vec![device("a", 1)]).is_err());
        let ok = ShareSettings::default();
        assert!(IobandShare::new(ok, vec![device("a", 0)]).unwrap_err().contains("weights"));
        let dev = IobandDevice { groups: vec![(1, 10)], ..device("a", 1) };
        assert!(IobandShare::new(ok, vec![dev]).unwrap_err().contains("group_type"));
    }

    /// A synthetic disk serving one bio every `service_ns`, oldest first; group `d` keeps
    /// `outstanding[d]` 4 KiB bios submitted. Returns each group's KB/s over `secs`.
    fn drive_timed(
        share: &mut IobandShare,
        outstanding: &[u32],
        service_ns: u64,
        secs: u64,
    ) -> Vec<f64> {
        let n = outstanding.len();
        let mut bytes = vec![0u64; n];
        let mut pending = vec![0u32; n];
        let mut in_device: VecDeque<Bio> = VecDeque::new();
        let (mut id, mut out) = (0, Vec::new());
        let end = secs * 1_000_000_000;
        let mut now = 0;
        while now < end {
            for d in 0..n {
                while pending[d] < outstanding[d] {
                    share.submit(bio(id, d as u32, d as u32, 4096), now);
                    id += 1;
                    pending[d] += 1;
                }
            }
            share.release(now, &mut out);
            in_device.extend(out.drain(..));
            if let Some(b) = in_device.pop_front() {
                share.completed(&b, now);
                pending[b.device as usize] -= 1;
                bytes[b.device as usize] += b.request.len_bytes;
            }
            now += service_ns;
        }
        bytes.iter().map(|&b| b as f64 / 1e3 / secs as f64).collect()
    }

    fn ranged(name: &str, min_kbs: u64, max_kbs: u64) -> IobandDevice {
        IobandDevice { ranges: vec![BwRange { min_kbs, max_kbs }], ..device(name, 1) }
    }

    #[test]
    fn range_bw_holds_each_group_inside_its_range() {
        // 4 KiB every 100 µs: a 40,960 KB/s device.
        let devices = vec![
            ranged("capped", 0, 4000),
            ranged("floor", 8000, 40000),
            ranged("greedy", 0, 40000),
        ];
        let mut s = share(Policy::RangeBw, devices);
        let kbs = drive_timed(&mut s, &[16, 2, 16], 100_000, 4);
        assert!(kbs[0] <= 4000.0 * 1.02 && kbs[0] > 3500.0, "capped group: {kbs:?}");
        assert!(kbs[1] >= 8000.0 * 0.98, "the floor group gets its minimum: {kbs:?}");
        assert!(kbs.iter().sum::<f64>() > 40960.0 * 0.95, "the device stays busy: {kbs:?}");
        assert!(s.counters().iter().all(|c| c.min_unmet_kbs.is_none()));
    }

    #[test]
    fn range_bw_reports_minimums_the_device_cannot_meet() {
        let devices = vec![ranged("a", 30000, 40000), ranged("b", 30000, 40000)];
        let mut s = share(Policy::RangeBw, devices);
        let kbs = drive_timed(&mut s, &[16, 16], 100_000, 2);
        assert!(kbs.iter().sum::<f64>() <= 41000.0, "{kbs:?}");
        let unmet: Vec<_> = s.counters().into_iter().filter_map(|c| c.min_unmet_kbs).collect();
        assert!(!unmet.is_empty(), "60,000 KB/s of minimums on a 40,960 KB/s device is reported");
    }

    #[test]
    fn range_bw_asks_for_a_timer_when_every_group_is_over_its_maximum() {
        let mut s = share(Policy::RangeBw, vec![ranged("a", 0, 1000)]);
        let mut out = Vec::new();
        for i in 0..4 {
            s.submit(bio(i, 0, 1, 4096), 0);
        }
        s.release(0, &mut out);
        assert!(out.is_empty(), "no credit at time 0");
        let t = s.next_timer_ns().expect("a timer");
        // 4096 bytes at 1,000 KB/s: 4.096 ms.
        assert!((4_000_000..=4_200_000).contains(&t), "{t}");
        s.release(t, &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn range_bw_needs_a_range_per_group() {
        let ok = ShareSettings { policy: Policy::RangeBw, ..ShareSettings::default() };
        assert!(IobandShare::new(ok, vec![device("a", 1)]).unwrap_err().contains("min:max"));
        assert!(IobandShare::new(ok, vec![ranged("a", 10, 5)])
            .unwrap_err()
            .contains("at least the minimum"));
        let weight = ShareSettings::default();
        assert!(IobandShare::new(weight, vec![ranged("a", 1, 5)])
            .unwrap_err()
            .contains("only to the range-bw"));
    }

    #[test]
    fn tokens_are_spent_per_bio_and_carry_over_at_most_one_epoch() {
        // token_base 8 over weights 3:1: 6 and 2 tokens an epoch.
        let settings = ShareSettings { token_base: 8, io_throttle: 1, ..ShareSettings::default() };
        let mut s = IobandShare::new(settings, vec![device("a", 3), device("b", 1)]).unwrap();
        assert_eq!((s.groups[0].tokens, s.groups[1].tokens), (6, 2));
        let mut out = Vec::new();
        // One bio of `a` in flight makes the device group busy; `b` spends its 2 tokens on
        // 2 of its 5 bios and then waits, while `a` (tokens left, a bio in flight) is not
        // active enough to end the epoch... until `a` has nothing in flight.
        s.submit(bio(1, 0, 1, 4096), 0);
        for i in 0..5 {
            s.submit(bio(10 + i, 1, 2, 4096), 0);
        }
        s.release(0, &mut out);
        let from_b = out.iter().filter(|b| b.device == 1).count();
        assert_eq!(from_b, 2, "b may send its 2 tokens' worth while a is active");
        assert_eq!((s.groups[0].tokens, s.groups[1].tokens), (5, 0));
        // `a` completes and goes idle: no group with tokens is active, so epochs turn over
        // while `b` waits (two more here, for its last 3 bios); `a` banks what it did not
        // spend, but never more than two epochs' worth (5 + 6 + 6 capped at 12).
        let first = out.iter().find(|b| b.device == 0).copied().unwrap();
        s.completed(&first, 1);
        out.clear();
        s.release(1, &mut out);
        assert_eq!(out.len(), 3);
        assert!(out.iter().all(|b| b.device == 1));
        assert_eq!(s.epochs(), 3);
        assert_eq!(s.groups[0].tokens, 12, "carry-over is capped at one extra epoch");
    }
}
