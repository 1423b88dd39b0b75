//! kyber (Omar Sandoval, Linux 4.12+; `block/kyber-iosched.c` as of 4.18–6.x): a token-based
//! scheduler for fast multi-queue devices that keeps latency near a target by throttling how
//! many requests of each kind may be in the device.
//!
//! - **Domains**: reads, writes (sync writes too), discards and everything else (flushes),
//!   each with its own FIFO of queued requests and its own **token** pool; a request needs a
//!   token of its domain to be dispatched and gives it back on completion. Full depths
//!   (`kyber_depth`): 256, 128, 64, 16.
//! - **Dispatch** (`kyber_dispatch_request`): batches of 16 reads, 8 writes, 1 discard, 1
//!   other (`kyber_batch_size`), then the next domain with a request and a token, round robin.
//! - **Latency histograms** per domain, of *total* latency (queued to completed) and *I/O*
//!   latency (dispatched to completed), in eight buckets of a quarter target each, the last
//!   one open (`add_latency_sample`, `KYBER_LATENCY_SHIFT` 2). Targets: `read_lat_nsec`
//!   2 ms, `write_lat_nsec` 10 ms, discards 5 s; "other" has none.
//! - **Timer** (`kyber_timer_fn`), 100 ms after a completion: a percentile is taken once a
//!   domain has 500 samples or a second has passed since its first (`calculate_percentile`).
//!   If any domain's p90 I/O latency is past its target the device is congested; then every
//!   domain's depth is scaled by its p99 total latency against its target — `depth × (bucket
//!   + 1) / 4`, so a domain at 3/4 of its target shrinks to 3/4 and one at twice its target
//!   doubles — and when there is no congestion only domains whose p99 is past the target
//!   grow (`kyber_resize_domain`, depth clamped to 1..=full).
//!
//! Deviations, and why: the timer runs at the first dispatch or completion after it is due
//! (nothing is in flight to be throttled before then); the per-CPU software queues are one
//! FIFO per domain (a single submitter queue); merges look at the last 8 requests of the
//! domain, as `blk_bio_list_merge` does; the async tag limit (`kyber_limit_depth`, 75 % of the
//! tags) is left to the block layer's request pools.

use std::collections::{BTreeMap, VecDeque};

use elevator_core::{Nanos, Op, Request, RequestId};

use crate::{Dispatch, Merged, Scheduler, TunableError, TunableInfo, TunableSpec};

/// The scheduling domains (`KYBER_READ`, `KYBER_WRITE`, `KYBER_DISCARD`, `KYBER_OTHER`).
pub const DOMAINS: usize = 4;
const READ: usize = 0;
const WRITE: usize = 1;
const DISCARD: usize = 2;
const OTHER: usize = 3;
/// `kyber_depth`: each domain's full token count.
pub const KYBER_DEPTH: [u32; DOMAINS] = [256, 128, 64, 16];
/// `kyber_batch_size`.
pub const KYBER_BATCH_SIZE: [u32; DOMAINS] = [16, 8, 1, 1];
/// Discards' latency target (`kyber_latency_targets[KYBER_DISCARD]`, 5 s).
pub const KYBER_DISCARD_LAT_NS: Nanos = 5_000_000_000;
/// Buckets of a histogram, and how many are within the target.
const LATENCY_BUCKETS: usize = 8;
const GOOD_BUCKETS: usize = 4;
const LATENCY_SHIFT: u32 = 2;
/// The timer runs this long after a completion (`HZ / 10`).
const TIMER_NS: Nanos = 100_000_000;
/// A percentile needs this many samples, or this long since the first (`calculate_percentile`).
const MIN_SAMPLES: u64 = 500;
const SAMPLE_TIMEOUT_NS: Nanos = 1_000_000_000;
/// How many queued requests of a domain a merge looks at (`blk_bio_list_merge`).
const MERGE_SCAN_DEPTH: usize = 8;

const TUNABLES: &[TunableSpec] = &[
    TunableSpec {
        name: "read_lat_nsec",
        unit: "ns",
        default: 2_000_000,
        min: 1,
        max: 60_000_000_000,
        description: "Target latency of reads; domains are throttled to keep p99 near it.",
    },
    TunableSpec {
        name: "write_lat_nsec",
        unit: "ns",
        default: 10_000_000,
        min: 1,
        max: 60_000_000_000,
        description: "Target latency of writes.",
    },
];

/// `KYBER_TOTAL_LATENCY` and `KYBER_IO_LATENCY`.
const TOTAL: usize = 0;
const IO: usize = 1;

#[derive(Debug, Default, Clone, Copy)]
struct Histogram {
    buckets: [u64; LATENCY_BUCKETS],
}

#[derive(Debug)]
pub struct Kyber {
    /// Why the last request went (`Scheduler::last_decision`).
    decision: &'static str,
    queues: [VecDeque<Request>; DOMAINS],
    depth: [u32; DOMAINS],
    in_flight: [u32; DOMAINS],
    cur_domain: usize,
    batching: u32,
    targets_ns: [Nanos; DOMAINS],
    histograms: [[Histogram; 2]; DOMAINS],
    /// Per domain: when a percentile may be taken with fewer than 500 samples.
    latency_timeout_ns: [Option<Nanos>; DOMAINS],
    timer_ns: Option<Nanos>,
    /// When each dispatched request went to the device.
    dispatched_ns: BTreeMap<RequestId, Nanos>,
    /// Times the timer changed a depth, for tests and reports.
    pub resizes: u64,
}

impl Default for Kyber {
    fn default() -> Kyber {
        Kyber::new()
    }
}

fn domain_of(op: Op) -> usize {
    match op {
        Op::Read => READ,
        Op::Write => WRITE,
        Op::Discard => DISCARD,
        _ => OTHER,
    }
}

impl Kyber {
    pub fn new() -> Kyber {
        Kyber {
            decision: "",
            queues: Default::default(),
            depth: KYBER_DEPTH,
            in_flight: [0; DOMAINS],
            cur_domain: 0,
            batching: 0,
            targets_ns: [TUNABLES[0].default, TUNABLES[1].default, KYBER_DISCARD_LAT_NS, 0],
            histograms: [[Histogram::default(); 2]; DOMAINS],
            latency_timeout_ns: [None; DOMAINS],
            timer_ns: None,
            dispatched_ns: BTreeMap::new(),
            resizes: 0,
        }
    }

    /// The current token depth of each domain (read, write, discard, other).
    pub fn depths(&self) -> [u32; DOMAINS] {
        self.depth
    }

    /// `add_latency_sample`: the bucket of `latency` against the domain's target.
    fn add_sample(&mut self, domain: usize, kind: usize, latency_ns: Nanos) {
        let target = self.targets_ns[domain];
        let bucket = if target == 0 {
            0
        } else {
            let divisor = (target >> LATENCY_SHIFT).max(1);
            ((latency_ns.saturating_sub(1) / divisor) as usize).min(LATENCY_BUCKETS - 1)
        };
        self.histograms[domain][kind].buckets[bucket] += 1;
    }

    /// `calculate_percentile`: the bucket holding the `percentile`, once there are enough
    /// samples (then the histogram starts over), else `None`.
    fn percentile(
        &mut self,
        domain: usize,
        kind: usize,
        percentile: u64,
        now: Nanos,
    ) -> Option<usize> {
        let h = &mut self.histograms[domain][kind];
        let samples: u64 = h.buckets.iter().sum();
        if samples == 0 {
            return None;
        }
        let timeout = *self.latency_timeout_ns[domain].get_or_insert(now + SAMPLE_TIMEOUT_NS);
        if samples < MIN_SAMPLES && now < timeout {
            return None;
        }
        self.latency_timeout_ns[domain] = None;
        let mut left = (samples * percentile).div_ceil(100);
        let mut bucket = LATENCY_BUCKETS - 1;
        for (b, &n) in h.buckets.iter().enumerate().take(LATENCY_BUCKETS - 1) {
            if n >= left {
                bucket = b;
                break;
            }
            left -= n;
        }
        *h = Histogram::default();
        Some(bucket)
    }

    /// `kyber_timer_fn`.
    fn timer(&mut self, now: Nanos) {
        self.timer_ns = None;
        let mut bad = false;
        for d in 0..DOMAINS {
            if self.percentile(d, IO, 90, now).is_some_and(|p90| p90 >= GOOD_BUCKETS) {
                bad = true;
            }
        }
        for (d, &full) in KYBER_DEPTH.iter().enumerate() {
            let Some(p99) = self.percentile(d, TOTAL, 99, now) else { continue };
            if bad || p99 >= GOOD_BUCKETS {
                let orig = self.depth[d];
                let depth = ((u64::from(orig) * (p99 as u64 + 1)) >> LATENCY_SHIFT) as u32;
                let depth = depth.clamp(1, full);
                if depth != orig {
                    self.depth[d] = depth;
                    self.resizes += 1;
                }
            }
        }
    }

    fn run_timer_if_due(&mut self, now: Nanos) {
        if self.timer_ns.is_some_and(|t| now >= t) {
            self.timer(now);
        }
    }

    /// `kyber_dispatch_cur_domain`: the head of the current domain, if it gets a token.
    fn take(&mut self, d: usize) -> Option<Request> {
        if self.queues[d].is_empty() || self.in_flight[d] >= self.depth[d] {
            return None;
        }
        self.in_flight[d] += 1;
        self.batching += 1;
        self.queues[d].pop_front()
    }
}

impl Scheduler for Kyber {
    fn name(&self) -> &'static str {
        "kyber"
    }

    fn try_merge(&mut self, rq: &Request, max_len_bytes: u64, _now_ns: Nanos) -> Option<Merged> {
        let q = &mut self.queues[domain_of(rq.op)];
        crate::merge_into_list(q.iter_mut().rev().take(MERGE_SCAN_DEPTH), rq, max_len_bytes)
    }

    fn insert(&mut self, rq: Request, _now_ns: Nanos) {
        self.queues[domain_of(rq.op)].push_back(rq);
    }

    fn dispatch(&mut self, now_ns: Nanos) -> Dispatch {
        self.run_timer_if_due(now_ns);
        let found = if self.batching < KYBER_BATCH_SIZE[self.cur_domain] {
            self.take(self.cur_domain)
        } else {
            None
        };
        self.decision = "domain batch continues";
        if found.is_none() {
            self.decision = "next domain with a token";
        }
        let rq = found.or_else(|| {
            self.batching = 0;
            (0..DOMAINS).find_map(|_| {
                self.cur_domain = (self.cur_domain + 1) % DOMAINS;
                self.take(self.cur_domain)
            })
        });
        match rq {
            Some(rq) => {
                self.dispatched_ns.insert(rq.id, now_ns);
                Dispatch::Request(rq)
            }
            // Out of tokens or of requests: a completion frees a token.
            None => Dispatch::Empty,
        }
    }

    fn completed(&mut self, rq: &Request, now_ns: Nanos) {
        let d = domain_of(rq.op);
        self.in_flight[d] = self.in_flight[d].saturating_sub(1);
        let dispatched = self.dispatched_ns.remove(&rq.id).unwrap_or(now_ns);
        self.add_sample(d, TOTAL, now_ns.saturating_sub(rq.submit_ns));
        self.add_sample(d, IO, now_ns.saturating_sub(dispatched));
        self.run_timer_if_due(now_ns);
        if self.timer_ns.is_none() {
            self.timer_ns = Some(now_ns + TIMER_NS);
        }
    }

    fn queued(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }

    fn last_decision(&self) -> &'static str {
        self.decision
    }

    fn tunables(&self) -> Vec<TunableInfo> {
        vec![TUNABLES[0].info(self.targets_ns[READ]), TUNABLES[1].info(self.targets_ns[WRITE])]
    }

    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), TunableError> {
        let i = TUNABLES
            .iter()
            .position(|t| t.name == name)
            .ok_or_else(|| TunableError::unknown(self.name(), name, &self.tunables()))?;
        self.targets_ns[i] = TUNABLES[i].parse(self.name(), value)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
