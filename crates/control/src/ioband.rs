//! dm-ioband (Ryo Tsuruta and Hirokazu Takahashi, VA Linux, 2008–2009; v1.x patches).
//!
//! dm-ioband is a device-mapper target that sits above a partition or volume and shares its
//! bandwidth between *groups* by weight. Several ioband devices on one disk form a *device
//! group* (this module's [`IobandShare`]) whose groups compete with each other.
//!
//! The `weight` and `weight-iosize` policies follow dm-ioband's own code (`dm-ioband-ctl.c` and
//! `dm-ioband-policy.c` of the v1.10 patches, as carried in 2.6.28-based trees; the names below
//! are its names):
//! - **Tokens.** A device group's bucket is `2 × io_limit × DEFAULT_BUCKET (2)` tokens an
//!   epoch, split by weight (`c_token_initial = bucket × weight / total + 1`). A bio costs one
//!   token under `weight`, its size in 512-byte sectors under `weight-iosize` (whose token unit
//!   is a sector, so its bucket is 8 times larger). The token pool (the `token` parameter, in
//!   the policy's tokens; by default 2048 4 KiB bios' worth) over the bucket is how many
//!   epochs of unspent tokens a group may bank (`g_carryover`); tokens left unassigned in an
//!   epoch are handed out as extras in the next (`g_token_extra`).
//! - **Issue at once or hold** (`ioband_map`): a bio whose group holds nothing and has tokens
//!   goes down at once while fewer than `io_limit` bios of its direction are in flight; any
//!   other is held, in arrival order. A group out of tokens takes its next epoch's allowance
//!   when a new global epoch has begun (`is_token_left`); if none has and nothing is in
//!   flight, the conductor is kicked after a jiffy.
//! - **The conductor** (`ioband_conduct`, run at every completion while bios are held): picks
//!   the held group with the highest priority — the share of its epoch's tokens it has left,
//!   `iopriority()` — and issues its bios until it runs out of tokens or room, or until it has
//!   spent `TOKEN_BATCH_UNIT` (20 bios' worth) in a row, when it yields and the choice is made
//!   again. A bio of a direction without room waits on the group's priority list.
//! - **Epochs** (`make_global_epoch`): when no held group can issue, a new epoch begins —
//!   unless the device is busy (`io_throttle` bios in flight) and the *dominant* group (the
//!   really active one with the most tokens: it has spent an eighth of its share, or a
//!   sixteenth of the bucket) still has more than an eighth of its tokens. So dm-ioband only
//!   holds groups back while the device is loaded, and a group that keeps few bios
//!   outstanding never becomes dominant: the epoch turns over without it, the busy groups get
//!   fresh tokens and its unspent ones buy it nothing — the known weakness, which comes out of
//!   these rules rather than being scripted.
//!
//! - **Sleeping submitters** (`prevent_burst_bios`): once a group holds `c_limit` bios
//!   (`2 × io_limit × weight / total / 4 + 1`), a process submitting to it sleeps until the
//!   group has released every bio it holds ([`IobandShare::submitter_sleeps_on`]; the volume
//!   stack parks the process and its bio).
//!
//! Deviations: kernel threads (writeback, volume workers, iSCSI target threads, Xen's
//! blkback) would sleep only while the device group holds `2 × io_limit` bios; they are never
//! stopped here, and neither is a VM disk's backend that is a process (tapdisk) — only a
//! process submitting its own bio sleeps. Urgent (reclaim) bios,
//! suspend and resume do not occur in the simulator. `g_expired`, which the policy records and never reads, is
//! not kept. Seed 001 ran an earlier 1.x release (v1.10's rules are the default); seed 000
//! ran v1.14.0, whose changes [`IobandVersion::V1_14`] lists.
//!
//! - **range-bw** gives each group a `min:max` range in KB/s instead of a weight: credit at
//!   the maximum rate (a limit even on an idle device), and a debt at the minimum rate while
//!   the group is active; a group in debt goes first and holds the others back, and a minimum
//!   the device cannot deliver is reported in the group's counters. (Modelled from the
//!   policy's description, not its code; tokens are refilled at once.)

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

/// Which release of dm-ioband's code the device group runs. v1.14.0 (the last release, for
/// 2.6.31; seed 000 ran it) changed three things the v1.10 rules above do not have:
/// - bios are classed **sync or async** as the block layer classes them (`bio_is_sync`:
///   reads, and writes flagged `BIO_RW_SYNCIO` such as `O_DIRECT` ones), not by direction:
///   `io_limit` bounds each class in flight, and a group's held bios are counted per class;
/// - a bio goes down at once only if its group holds none *of its class*, and a submitter
///   sleeps once its group holds `c_limit` bios of the bio's class, until the group has
///   released every bio of that class (`prevent_burst_bios`, `group_should_block`,
///   `make_issue_list`);
/// - `c_token_initial = bucket × weight / total` and `c_limit = io_limit × weight / total /
///   4`, each at least 1 (`__set_weight`), where v1.10 added one to each and counted
///   `2 × io_limit` for the limit; by default `io_limit` is 3/2 of the queue's
///   `nr_requests` (`ioband_ctr`) and never below `io_throttle`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IobandVersion {
    /// v1.10, as carried in 2.6.28-based trees (seed 001's era).
    #[default]
    V1_10,
    /// v1.14.0 (`dm-ioband-ctl.c` and `dm-ioband-policy.c` of the 2.6.31 patch).
    V1_14,
}

impl IobandVersion {
    /// `io_limit` when the table gives 0: the queue's `nr_requests` (v1.10) or half as much
    /// again (v1.14: "the block layer accepts I/O requests up to 50% over nr_requests when
    /// the requests are issued from a batcher process"), never below `io_throttle`.
    pub fn default_io_limit(self, nr_requests: u32, io_throttle: u32) -> u32 {
        let limit = match self {
            IobandVersion::V1_10 => nr_requests,
            IobandVersion::V1_14 => nr_requests.saturating_mul(3) / 2,
        };
        limit.max(io_throttle).min(MAX_IO_LIMIT)
    }
}

/// dm-ioband's defaults.
pub const DEFAULT_IO_THROTTLE: u32 = 4;
/// `io_limit` under v1.10 with the default `nr_requests` (128).
pub const DEFAULT_IO_LIMIT: u32 = 128;
/// The default token pool, in 4 KiB units (`DEFAULT_TOKENPOOL`).
pub const DEFAULT_TOKEN_BASE: u64 = 2048;
/// The largest `io_limit` accepted: dm-ioband takes the queue's `nr_requests`, at most a few
/// thousand.
pub const MAX_IO_LIMIT: u32 = 1 << 20;
/// The largest token pool accepted.
pub const MAX_TOKEN_BASE: u64 = 1 << 40;

// dm-ioband-policy.c's constants.
const DEFAULT_BUCKET: i64 = 2;
const IOBAND_IOPRIO_BASE: i64 = 100;
const TOKEN_BATCH_UNIT: i64 = 20;
const PROCEED_THRESHOLD: i64 = 8;
const LOCAL_ACTIVE_RATIO: i64 = 8;
const GLOBAL_ACTIVE_RATIO: i64 = 16;
const OVERCOMMIT_RATE: i64 = 4;
/// One jiffy at HZ = 1000: the delay of the conductor's kick when a group out of tokens
/// finds the device idle.
const JIFFY_NS: Nanos = 1_000_000;
/// Conductor runs one call to `release` may make before it leaves the rest to a timer (each
/// issues a bio or begins an epoch; a bound, not a behaviour).
const MAX_CONDUCTOR_RUNS: u32 = 1 << 16;

/// What releasing a group's bios ended with (`R_OK`, `R_BLOCK`, `R_YIELD`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Released {
    Ok,
    Block,
    Yield,
}

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
    /// The token pool (dm-ioband's `token` parameter), in the policy's tokens (bios, or
    /// sectors under `weight-iosize`); 0 for the default, 2048 4 KiB bios' worth.
    pub token_base: u64,
    /// Bios in flight below which no epoch is held back for a dominant group.
    pub io_throttle: u32,
    /// Bios of one class in flight at which that class waits.
    pub io_limit: u32,
    /// Whose rules: v1.10's or v1.14's.
    pub version: IobandVersion,
}

impl Default for ShareSettings {
    fn default() -> Self {
        ShareSettings {
            policy: Policy::Weight,
            token_base: 0,
            io_throttle: DEFAULT_IO_THROTTLE,
            io_limit: DEFAULT_IO_LIMIT,
            version: IobandVersion::V1_10,
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
    /// Tokens left (negative: debt), the epoch's share, the epoch it last took, and what it
    /// spent since (`c_token`, `c_token_initial`, `c_my_epoch`, `c_consumed`).
    token: i64,
    token_initial: i64,
    my_epoch: u64,
    consumed: i64,
    /// Held bios at which its submitters sleep (`c_limit`), and whether they do
    /// (`is_group_blocked`): until the group has released every bio it holds (v1.10), or
    /// every bio of the class they wait on (v1.14, per class).
    limit: i64,
    sleeping: [bool; 2],
    /// Held bios per class (`c_blocked[sync]`).
    held_class: [usize; 2],
    /// range-bw: its bios in flight (the weight policies count per direction, `issued`).
    in_flight: u32,
    /// Held bios, in arrival order (`c_blocked_bios`).
    waiting: VecDeque<Bio>,
    /// Held bios of a class that had no room, and that class (`c_prio_bios`).
    prio: VecDeque<Bio>,
    prio_class: usize,
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
    /// range-bw: when credits were last brought up to date.
    credited_ns: Nanos,
    /// Bios in flight per direction, read and write (`g_issued`).
    issued: [u32; 2],
    epoch: u64,
    /// Tokens an epoch (`g_token_bucket`), epochs a group may bank (`g_carryover`), tokens
    /// of this epoch not yet taken (`g_token_left`) and last epoch's leftover
    /// (`g_token_extra`).
    bucket: i64,
    carryover: i64,
    token_left: i64,
    token_extra: i64,
    /// Tokens per 4 KiB: 1, or 8 under `weight-iosize` (`g_token_unit` as a shift).
    unit_shift: u32,
    dominant: Option<usize>,
    /// The group issuing in a row, and the tokens at which it yields (`g_current`,
    /// `g_yield_mark`).
    current: Option<usize>,
    yield_mark: i64,
    /// Bios `submit` let through at once, for the next `release`.
    ready: Vec<Bio>,
    /// A completion (or the conductor itself) asked for the conductor.
    conduct_due: bool,
    /// When the delayed kick runs the conductor.
    kick_at_ns: Option<Nanos>,
    /// Groups that released their last held bio while their submitters slept.
    woken: Vec<usize>,
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
        if settings.token_base > MAX_TOKEN_BASE {
            return Err(format!("token_base must be at most {MAX_TOKEN_BASE}"));
        }
        if settings.io_limit == 0 || settings.io_limit > MAX_IO_LIMIT {
            return Err(format!("io_limit must be between 1 and {MAX_IO_LIMIT}"));
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
                    token: 0,
                    token_initial: 1,
                    my_epoch: 0,
                    consumed: 0,
                    limit: 1,
                    sleeping: [false; 2],
                    held_class: [0; 2],
                    in_flight: 0,
                    waiting: VecDeque::new(),
                    prio: VecDeque::new(),
                    prio_class: 0,
                });
            };
            add(dev.name.clone(), None, dev.weight);
            for &(key, weight) in &dev.groups {
                add(format!("{}:{key}", dev.name), Some(key), weight);
            }
        }
        // policy_weight_init / w2_policy_weight_init: the bucket and pool, then each
        // group's share (set_weight).
        let unit_shift = if settings.policy == Policy::WeightIosize { 3 } else { 0 };
        // io_limit <= 2^20 and the pool <= 2^40 keep every product below in an i64.
        let bucket = (2 * i64::from(settings.io_limit) * DEFAULT_BUCKET) << unit_shift;
        let pool = if settings.token_base == 0 {
            (DEFAULT_TOKEN_BASE as i64) << unit_shift
        } else {
            settings.token_base as i64
        };
        let total: i64 = groups.iter().map(|g| i64::from(g.weight)).sum();
        let io_limit = i64::from(settings.io_limit);
        for g in &mut groups {
            let weight = i64::from(g.weight);
            (g.token_initial, g.limit) = match settings.version {
                IobandVersion::V1_10 => (
                    bucket * weight / total + 1,
                    2 * io_limit * weight / total / OVERCOMMIT_RATE + 1,
                ),
                IobandVersion::V1_14 => (
                    (bucket * weight / total).max(1),
                    (io_limit * weight / total).max(1) / OVERCOMMIT_RATE,
                ),
            };
            g.limit = g.limit.max(1);
            g.token = g.token_initial;
        }
        Ok(IobandShare {
            settings,
            devices,
            groups,
            in_flight: 0,
            held: 0,
            next: 0,
            credited_ns: 0,
            issued: [0; 2],
            epoch: 0,
            bucket,
            carryover: pool.max(bucket) / bucket,
            token_left: bucket,
            token_extra: 0,
            unit_shift,
            dominant: None,
            current: None,
            yield_mark: 0,
            ready: Vec::new(),
            conduct_due: false,
            kick_at_ns: None,
            woken: Vec::new(),
        })
    }

    /// Tokens a bio costs: one, or its sectors under `weight-iosize`.
    fn cost(&self, bio: &Bio) -> i64 {
        match self.settings.policy {
            Policy::WeightIosize => (bio.request.len_bytes / SECTOR_BYTES) as i64,
            Policy::Weight | Policy::RangeBw => 1,
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

    /// The class dm-ioband counts the bio in: its direction under v1.10 (`bio_data_dir`: 1
    /// for anything but a read, flushes and discards included), under v1.14 whether it is
    /// sync (`bio_is_sync`: 1 for reads and sync writes, `BLK_RW_SYNC`).
    fn class(&self, bio: &Bio) -> usize {
        let read = bio.request.op.is_read();
        usize::from(match self.settings.version {
            IobandVersion::V1_10 => !read,
            IobandVersion::V1_14 => read || bio.request.sync,
        })
    }

    /// The held bios that decide whether a bio of `class` goes down at once and whether its
    /// submitter sleeps: all group `i` holds (v1.10), or those of the class (v1.14); and
    /// the index of the flag its submitters sleep on.
    fn held_for(&self, i: usize, class: usize) -> (usize, usize) {
        match self.settings.version {
            IobandVersion::V1_10 => (self.blocked(i), 0),
            IobandVersion::V1_14 => (self.groups[i].held_class[class], class),
        }
    }

    /// Bios held by group `i` (`c_blocked`).
    fn blocked(&self, i: usize) -> usize {
        self.groups[i].waiting.len() + self.groups[i].prio.len()
    }

    /// Room below for a bio of this class (`room_for_bio_rw`, `room_for_bio_sync`).
    fn room_class(&self, class: usize) -> bool {
        self.issued[class] < self.settings.io_limit
    }

    /// Room for either class (`room_for_bio`).
    fn room(&self) -> bool {
        self.room_class(0) || self.room_class(1)
    }

    /// The tokens group `i` has, counting the epochs it may still take (`get_token`).
    fn get_token(&self, i: usize) -> i64 {
        let g = &self.groups[i];
        let allowance = ((self.epoch - g.my_epoch) as i64).min(self.carryover);
        g.token + g.token_initial * allowance
    }

    /// `iopriority`: the share of an epoch's tokens left, in percent, plus one.
    fn iopriority(&self, i: usize) -> i64 {
        self.get_token(i) * IOBAND_IOPRIO_BASE / self.groups[i].token_initial + 1
    }

    /// `is_token_left` (the policy's `g_can_submit`): 0 if group `i` may not issue, else its
    /// priority. A group out of tokens takes the epochs that began since it last did (at
    /// most `carryover` of them) and its part of last epoch's leftover.
    fn can_submit(&mut self, i: usize) -> i64 {
        if self.groups[i].token > 0 {
            return self.iopriority(i);
        }
        let allowance = ((self.epoch - self.groups[i].my_epoch) as i64).min(self.carryover);
        if allowance == 0 {
            return 0;
        }
        self.groups[i].my_epoch = self.epoch;
        let initial = self.groups[i].token_initial;
        let mut delta = initial * allowance;
        self.token_left -= delta;
        delta += self.token_extra * initial / (self.bucket - self.token_extra / 2);
        let g = &mut self.groups[i];
        g.token += delta;
        g.consumed = 0;
        if self.current == Some(i) {
            self.yield_mark += delta;
        }
        if self.groups[i].token > 0 {
            self.iopriority(i)
        } else {
            0
        }
    }

    /// `consume_token`: spends `count` tokens of group `i` (a debt if it has fewer), notes
    /// the dominant group, and asks for a yield once the group has issued a batch in a row.
    fn consume_token(&mut self, i: usize, count: i64) -> Released {
        let (consumed, initial) = (self.groups[i].consumed, self.groups[i].token_initial);
        let active = consumed * LOCAL_ACTIVE_RATIO >= initial
            || consumed * GLOBAL_ACTIVE_RATIO >= self.bucket;
        if active && self.dominant.is_none_or(|d| self.get_token(i) > self.get_token(d)) {
            self.dominant = Some(i);
        }
        let g = &self.groups[i];
        if self.epoch == g.my_epoch
            && g.token > 0
            && g.token - count <= 0
            && self.dominant == Some(i)
        {
            self.dominant = None;
        }
        if self.current != Some(i) {
            self.current = Some(i);
            self.yield_mark = self.groups[i].token - (TOKEN_BATCH_UNIT << self.unit_shift);
        }
        let g = &mut self.groups[i];
        g.token -= count;
        g.consumed += count;
        if g.token <= self.yield_mark {
            self.current = None;
            return Released::Yield;
        }
        Released::Ok
    }

    /// `make_global_epoch` (the policy's `g_restart_bios`): a new epoch, unless the device is
    /// busy and the dominant group still has more than an eighth of its tokens.
    fn make_global_epoch(&mut self) -> bool {
        if let Some(d) = self.dominant {
            let busy = self.issued[0] + self.issued[1] >= self.settings.io_throttle;
            if self.iopriority(d) * PROCEED_THRESHOLD > IOBAND_IOPRIO_BASE && busy {
                return false;
            }
        }
        self.epoch += 1;
        self.token_extra = self.token_left.max(0);
        self.token_left = self.bucket;
        self.dominant = None;
        true
    }

    /// A held bio of group `i` goes down (`make_issue_list` and `prepare_to_issue`).
    fn issue_held(&mut self, i: usize, bio: Bio, out: &mut Vec<Bio>) -> Released {
        self.held -= 1;
        let class = self.class(&bio);
        self.groups[i].held_class[class] -= 1;
        let (held, flag) = self.held_for(i, class);
        if held == 0 && self.groups[i].sleeping[flag] {
            self.groups[i].sleeping[flag] = false;
            self.woken.push(2 * i + flag);
        }
        self.groups[i].counters.held += 1;
        let r = self.prepare_to_issue(i, &bio);
        out.push(bio);
        r
    }

    /// `prepare_to_issue`: bio `bio` of group `i` goes down now, at once or from the hold.
    fn prepare_to_issue(&mut self, i: usize, bio: &Bio) -> Released {
        self.issued[self.class(bio)] += 1;
        let c = &mut self.groups[i].counters;
        c.ios += 1;
        c.bytes += bio.request.len_bytes;
        let count = self.cost(bio);
        self.consume_token(i, count)
    }

    /// `release_bios`: group `i`'s bios of the class that waited for room first, then
    /// the others in order, while it has tokens and there is room.
    fn release_bios(&mut self, i: usize, out: &mut Vec<Bio>) -> Released {
        let class = self.groups[i].prio_class;
        while !self.groups[i].prio.is_empty() {
            if self.can_submit(i) == 0 {
                return Released::Block;
            }
            if !self.room_class(class) {
                break;
            }
            let bio = self.groups[i].prio.pop_front().expect("checked non-empty");
            let r = self.issue_held(i, bio, out);
            if r != Released::Ok {
                return r;
            }
        }
        while !self.groups[i].waiting.is_empty() {
            if self.can_submit(i) == 0 {
                return Released::Block;
            }
            if !self.room() {
                return Released::Ok;
            }
            let bio = self.groups[i].waiting.pop_front().expect("checked non-empty");
            let class = self.class(&bio);
            if !self.room_class(class) {
                let g = &mut self.groups[i];
                if g.prio.is_empty() {
                    g.prio_class = class;
                }
                g.prio.push_back(bio);
                continue;
            }
            let r = self.issue_held(i, bio, out);
            if r != Released::Ok {
                return r;
            }
        }
        Released::Ok
    }

    /// `choose_best_group`: of the groups holding bios that could go, the one with the
    /// highest priority (the first of equals).
    fn choose_best_group(&mut self) -> Option<usize> {
        let (mut best, mut highest) = (None, 0);
        for i in 0..self.groups.len() {
            let g = &self.groups[i];
            if self.blocked(i) == 0 || !self.room() {
                continue;
            }
            if g.waiting.is_empty() && !self.room_class(g.prio_class) {
                continue;
            }
            let pri = self.can_submit(i);
            if pri > highest {
                (best, highest) = (Some(i), pri);
            }
        }
        best
    }

    /// One run of `ioband_conduct`; true if it queued itself again.
    fn conduct(&mut self, out: &mut Vec<Bio>) -> bool {
        let before = out.len();
        let mut again = false;
        if self.held > 0 {
            if let Some(i) = self.choose_best_group() {
                again = self.release_bios(i, out) == Released::Yield;
            }
        }
        if self.held > 0
            && self.room_class(0)
            && self.room_class(1)
            && out.len() == before
            && self.make_global_epoch()
        {
            again = true;
        }
        again
    }

    /// The weight policies' `release`: what `submit` let through, then the conductor while
    /// it is due.
    fn release_weight(&mut self, now_ns: Nanos, out: &mut Vec<Bio>) {
        out.append(&mut self.ready);
        if self.kick_at_ns.is_some_and(|t| t <= now_ns) {
            self.kick_at_ns = None;
            self.conduct_due = true;
        }
        let mut runs = 0;
        while self.conduct_due {
            if runs == MAX_CONDUCTOR_RUNS {
                self.kick_at_ns = Some(now_ns + 1);
                break;
            }
            runs += 1;
            self.conduct_due = self.conduct(out);
        }
    }

    /// The weight policies' `submit` (`ioband_map`).
    fn submit_weight(&mut self, bio: Bio, now_ns: Nanos) {
        let i = self.classify(&bio);
        let class = self.class(&bio);
        if self.held_for(i, class).0 == 0 && self.room_class(class) {
            if self.can_submit(i) > 0 {
                self.prepare_to_issue(i, &bio);
                self.ready.push(bio);
                return;
            }
            if self.held == 0 && self.issued == [0, 0] && self.kick_at_ns.is_none() {
                self.kick_at_ns = Some(now_ns + JIFFY_NS);
            }
        }
        self.groups[i].waiting.push_back(bio);
        self.groups[i].held_class[class] += 1;
        self.held += 1;
    }

    /// Epochs begun so far (for tests and reports).
    pub fn epochs(&self) -> u64 {
        self.epoch
    }

    /// The wait queue a process submitting `bio` must sleep on before ioband takes it, if it
    /// must (`prevent_burst_bios` → `group_should_block`): its group holds `c_limit` bios
    /// (of the bio's class, under v1.14), or did and has not yet released them all. The key
    /// is `2 × group + class` (class 0 under v1.10). Only processes sleep so; kernel threads
    /// (writeback, a volume's worker) are held back only when the device group holds
    /// `2 × io_limit` bios in all (v1.10) or `io_limit` of a class (v1.14), which the caller
    /// does not model. Never under range-bw.
    pub fn submitter_sleeps_on(&mut self, bio: &Bio) -> Option<usize> {
        if self.settings.policy == Policy::RangeBw {
            return None;
        }
        let i = self.classify(bio);
        let (held, flag) = self.held_for(i, self.class(bio));
        if !self.groups[i].sleeping[flag] && held as i64 >= self.groups[i].limit {
            self.groups[i].sleeping[flag] = true;
        }
        self.groups[i].sleeping[flag].then_some(2 * i + flag)
    }

    /// Appends the wait queues (as [`submitter_sleeps_on`](Self::submitter_sleeps_on) keys
    /// them) whose sleeping submitters may go on, and forgets them.
    pub fn take_woken(&mut self, out: &mut Vec<usize>) {
        out.append(&mut self.woken);
    }

    /// How many bios group `i` may hold before its submitters sleep (`c_limit`), and its
    /// tokens (for tests).
    #[cfg(test)]
    fn limit_and_token(&self, i: usize) -> (i64, i64) {
        (self.groups[i].limit, self.groups[i].token)
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
}

impl Controller for IobandShare {
    fn name(&self) -> &'static str {
        "ioband"
    }

    fn submit(&mut self, bio: Bio, now_ns: Nanos) {
        if self.settings.policy != Policy::RangeBw {
            self.submit_weight(bio, now_ns);
            return;
        }
        let g = self.classify(&bio);
        self.groups[g].waiting.push_back(bio);
        self.held += 1;
    }

    fn release(&mut self, now_ns: Nanos, out: &mut Vec<Bio>) {
        if self.settings.policy == Policy::RangeBw {
            self.release_range_bw(now_ns, out);
        } else {
            self.release_weight(now_ns, out);
        }
    }

    fn completed(&mut self, bio: &Bio, _now_ns: Nanos) {
        if self.settings.policy != Policy::RangeBw {
            // ioband_end_io: the conductor runs while bios are held.
            let class = self.class(bio);
            let dir = &mut self.issued[class];
            debug_assert!(*dir > 0, "completion without a release");
            *dir = dir.saturating_sub(1);
            self.conduct_due |= self.held > 0;
            return;
        }
        debug_assert!(self.in_flight > 0, "completion without a release");
        self.in_flight = self.in_flight.saturating_sub(1);
        let g = self.classify(bio);
        self.groups[g].in_flight = self.groups[g].in_flight.saturating_sub(1);
    }

    fn next_timer_ns(&self) -> Option<Nanos> {
        if self.settings.policy != Policy::RangeBw {
            return self.kick_at_ns;
        }
        if self.in_flight >= self.settings.io_limit {
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
        let zero_limit = ShareSettings { io_limit: 0, ..ShareSettings::default() };
        assert!(IobandShare::new(zero_limit, vec![device("a", 1)]).is_err());
        let huge = ShareSettings { token_base: MAX_TOKEN_BASE + 1, ..ShareSettings::default() };
        assert!(IobandShare::new(huge, vec![device("a", 1)]).is_err());
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
    fn shares_and_limits_follow_set_weight() {
        // io_limit 128: a bucket of 512 tokens an epoch (4096 sectors under weight-iosize),
        // split 3:1, plus one; c_limit = 256 × weight / total / 4 + 1.
        let s = share(Policy::Weight, vec![device("a", 3), device("b", 1)]);
        assert_eq!((s.limit_and_token(0), s.limit_and_token(1)), ((49, 385), (17, 129)));
        assert_eq!(s.carryover, 4, "the default pool, 2048, is four buckets");
        let s = share(Policy::WeightIosize, vec![device("a", 1), device("b", 1)]);
        assert_eq!(s.limit_and_token(0), (33, 2049));
        assert_eq!(s.carryover, 4);
    }

    #[test]
    fn a_group_out_of_tokens_waits_for_the_next_epoch_and_banks_at_most_the_carryover() {
        // A pool of one bucket (512 tokens) with weights 511:1: `b` gets 2 tokens an epoch.
        let settings = ShareSettings { token_base: 512, ..ShareSettings::default() };
        let mut s = IobandShare::new(settings, vec![device("a", 511), device("b", 1)]).unwrap();
        assert_eq!((s.carryover, s.limit_and_token(1).1), (1, 2));
        let mut out = Vec::new();
        for i in 0..5 {
            s.submit(bio(i, 1, 2, 4096), 0);
        }
        s.release(0, &mut out);
        assert_eq!(out.len(), 2, "two tokens, two bios at once; the rest held");
        assert_eq!(s.held(), 3);
        // Both complete: nothing in flight, no dominant group, so the conductor begins an
        // epoch and `b` takes one epoch's tokens (2: the carry-over is one bucket) and its
        // part of the tokens nobody took last epoch (512 × 2 / (512 - 256) = 4).
        for b in std::mem::take(&mut out) {
            s.completed(&b, 1);
        }
        s.release(1, &mut out);
        assert_eq!((out.len(), s.epochs()), (3, 1));
        assert_eq!(s.counters()[1].held, 3, "the bios issued from the hold are counted");
        assert_eq!(s.limit_and_token(1).1, 3);
    }

    #[test]
    fn a_dominant_group_with_tokens_left_holds_the_epoch_while_the_device_is_busy() {
        // Equal weights, 4 KiB reads: 257 tokens each an epoch, 128 reads in flight at most.
        let mut s = share(Policy::Weight, vec![device("a", 1), device("b", 1)]);
        let mut out = Vec::new();
        let mut id = 0;
        let mut submit = |s: &mut IobandShare, dev: u32, n: u64| {
            for _ in 0..n {
                s.submit(bio(id, dev, dev + 1, 4096), 0);
                id += 1;
            }
        };
        submit(&mut s, 0, 40);
        submit(&mut s, 1, 300);
        s.release(0, &mut out);
        let count = |out: &[Bio], d: u32| out.iter().filter(|b| b.device == d).count();
        assert_eq!((count(&out, 0), count(&out, 1)), (40, 88), "until reads fill io_limit");
        // `b` spends the rest of its share as its bios complete: 88, then 81.
        let b_round = |s: &mut IobandShare, out: &mut Vec<Bio>| {
            let done: Vec<Bio> = out.iter().filter(|b| b.device == 1).copied().collect();
            out.retain(|b| b.device != 1);
            done.iter().for_each(|b| s.completed(b, 1));
            let mut next = Vec::new();
            s.release(1, &mut next);
            let n = next.len();
            out.extend(next);
            n
        };
        assert_eq!(b_round(&mut s, &mut out), 88);
        assert_eq!(b_round(&mut s, &mut out), 81);
        // `a` issues once more: it has spent more than an eighth of its share, so it is the
        // dominant group, with most of its tokens left and the device busy: `b` waits.
        submit(&mut s, 0, 1);
        s.release(1, &mut out);
        assert_eq!(b_round(&mut s, &mut out), 0);
        assert_eq!(s.epochs(), 0, "no new epoch while the dominant group has tokens left");
        // Once `a` has nothing in flight the device is not busy: a new epoch, and `b` sends
        // its last 43 bios.
        let a_bios = std::mem::take(&mut out);
        a_bios.iter().for_each(|b| s.completed(b, 2));
        s.release(2, &mut out);
        assert_eq!((s.epochs(), out.len()), (1, 43));
    }

    #[test]
    fn submitters_sleep_at_c_limit_until_the_group_holds_nothing() {
        // io_limit 8, two equal groups: c_limit = 16 × 1 / 2 / 4 + 1 = 3.
        let settings = ShareSettings { io_limit: 8, ..ShareSettings::default() };
        let mut s = IobandShare::new(settings, vec![device("a", 1), device("b", 1)]).unwrap();
        assert_eq!(s.limit_and_token(0).0, 3);
        let mut out = Vec::new();
        for i in 0..11 {
            let b = bio(i, 0, 1, 4096);
            assert!(s.submitter_sleeps_on(&b).is_none(), "bio {i}: the group holds fewer than 3");
            s.submit(b, 0);
        }
        s.release(0, &mut out);
        assert_eq!((out.len(), s.held()), (8, 3), "8 reads in flight fill io_limit; 3 held");
        let next = bio(99, 0, 1, 4096);
        assert!(s.submitter_sleeps_on(&next).is_some(), "3 held: the next submitter sleeps");
        assert!(s.submitter_sleeps_on(&bio(100, 1, 2, 4096)).is_none(), "the other group's do not");
        // Two completions let two held bios go: still asleep until the group holds none.
        let mut woken = Vec::new();
        for b in &out[..2] {
            s.completed(b, 1);
        }
        s.release(1, &mut Vec::new());
        s.take_woken(&mut woken);
        assert!(woken.is_empty() && s.submitter_sleeps_on(&next).is_some());
        s.completed(&out[2], 2);
        s.release(2, &mut Vec::new());
        s.take_woken(&mut woken);
        assert_eq!(woken, vec![0]);
        assert!(s.submitter_sleeps_on(&next).is_none());
    }
    /// A write of `len` bytes from process `pid`, sync (`O_DIRECT`) or not (writeback).
    fn write(id: u64, device: u32, pid: u32, len: u64, sync: bool) -> Bio {
        let request =
            Request::new(RequestId(id), Op::Write, 0, len, sync, Owner::process(pid), 0).unwrap();
        Bio { device, request }
    }

    fn v1_14(policy: Policy, io_limit: u32) -> ShareSettings {
        ShareSettings {
            policy,
            io_limit,
            version: IobandVersion::V1_14,
            ..ShareSettings::default()
        }
    }

    #[test]
    fn v1_14_shares_tokens_and_limits_without_the_added_one() {
        // Seed 000's table: weight-iosize, two ioband devices of weight 100, io_limit 192 (3/2
        // of nr_requests 128). bucket = 192 × 2 × 2 << 3 = 6144 sectors; each group's share
        // 3072 (v1.10: 3073); c_limit = 192 × 100 / 200 / 4 = 24 (v1.10: 2 × 192 × 100 /
        // 200 / 4 + 1 = 49); the pool of 2048 pages is 16384 sectors, 2 epochs' worth.
        assert_eq!(IobandVersion::V1_14.default_io_limit(128, 4), 192);
        assert_eq!(IobandVersion::V1_10.default_io_limit(128, 4), 128);
        assert_eq!(IobandVersion::V1_14.default_io_limit(2, 4), 4, "never below io_throttle");
        let devices = vec![device("a", 100), device("b", 100)];
        let s = IobandShare::new(v1_14(Policy::WeightIosize, 192), devices.clone()).unwrap();
        assert_eq!((s.limit_and_token(0), s.bucket, s.carryover), ((24, 3072), 6144, 2));
        let old = ShareSettings {
            policy: Policy::WeightIosize,
            io_limit: 192,
            ..ShareSettings::default()
        };
        let s = IobandShare::new(old, devices).unwrap();
        assert_eq!(s.limit_and_token(0), (49, 3073));
        // A group's limit and tokens never fall to 0, however small its weight.
        let s = IobandShare::new(v1_14(Policy::Weight, 4), vec![device("a", 1), device("b", 999)])
            .unwrap();
        assert_eq!(s.limit_and_token(0), (1, 1));
    }

    #[test]
    fn v1_14_counts_o_direct_writes_with_reads_and_writeback_apart() {
        // io_limit 4. Under v1.14 sync writes fill the sync class, so a read waits while
        // writeback still goes; under v1.10 the same writes fill the write direction and
        // the read goes.
        for (version, read_goes, writeback_goes) in
            [(IobandVersion::V1_14, false, true), (IobandVersion::V1_10, true, false)]
        {
            let settings = ShareSettings { io_limit: 4, version, ..ShareSettings::default() };
            let mut s = IobandShare::new(settings, vec![device("a", 1)]).unwrap();
            let mut out = Vec::new();
            for i in 0..4 {
                s.submit(write(i, 0, 1, 4096, true), 0);
            }
            s.release(0, &mut out);
            assert_eq!(out.len(), 4, "{version:?}: four O_DIRECT writes go down");
            s.submit(bio(10, 0, 2, 4096), 0);
            s.submit(write(11, 0, 3, 4096, false), 0);
            out.clear();
            s.release(0, &mut out);
            let went: Vec<u64> = out.iter().map(|b| b.request.id.0).collect();
            assert_eq!(went.contains(&10), read_goes, "{version:?}: the read, {went:?}");
            assert_eq!(went.contains(&11), writeback_goes, "{version:?}: writeback, {went:?}");
        }
    }

    #[test]
    fn v1_14_submitters_sleep_per_class() {
        // io_limit 8, two equal groups: c_limit = 8 × 1 / 2 / 4 = 1. Eight reads fill the
        // sync class and one more is held: the group holds its c_limit of sync bios, so the
        // next reader sleeps, a writeback submitter does not, and the reader wakes (wait
        // queue 2 × group + 1, the sync class) once the group has released its sync bios.
        let mut s =
            IobandShare::new(v1_14(Policy::Weight, 8), vec![device("a", 1), device("b", 1)])
                .unwrap();
        assert_eq!(s.limit_and_token(0).0, 1);
        let mut out = Vec::new();
        for i in 0..9 {
            s.submit(bio(i, 0, 1, 4096), 0);
        }
        s.release(0, &mut out);
        assert_eq!((out.len(), s.held()), (8, 1));
        let reader = bio(99, 0, 1, 4096);
        assert_eq!(s.submitter_sleeps_on(&reader), Some(1));
        assert_eq!(s.submitter_sleeps_on(&write(100, 0, 1, 4096, false)), None);
        s.completed(&out[0], 1);
        s.release(1, &mut Vec::new());
        let mut woken = Vec::new();
        s.take_woken(&mut woken);
        assert_eq!(woken, vec![1]);
        assert_eq!(s.submitter_sleeps_on(&reader), None);
    }
}
