//! Property tests of `mq-deadline` (`elevator_sched::deadline`), driven through the
//! [`Scheduler`] trait with a virtual clock, the way the simulator drives it.
//!
//! 1. **Conservation** (`every_request_is_dispatched_exactly_once`): random offers (with
//!    merges), dispatches, out-of-order completions, clock jumps and tunable changes, over
//!    every op, priority class, cgroup and FUA flag. Every offered request comes out of
//!    `dispatch` exactly once, itself or inside the request it merged into; bytes are conserved;
//!    no dispatched request exceeds `max_len_bytes`; `queued()` is exact; and the scheduler is
//!    work-conserving: with nothing on the device, a non-empty queue always dispatches.
//!
//! 2. **Starvation bound** (`reads_are_served_within_the_deadline_bound`). Setting: one
//!    priority level, reads and writes arriving continuously, a device serving one request at
//!    a time in a fixed time `T`, the driver dispatching whenever the device is idle. Let
//!    `B = max(fifo_batch, 1)`, `E = read_expire`, and `writes_starved >= 1`.
//!
//!    **Bound.** A read inserted at `t0` that becomes the oldest queued read at time `h`
//!    (`h = t0` if no older read is queued) is dispatched by `max(h, t0 + E) + 2·B·T`.
//!    In particular a read that is the oldest one when its deadline passes waits at most
//!    `E + 2·B·T`.
//!
//!    *Derivation.* Let `d = max(h, t0 + E)`. From `d` on, the read `r` is the FIFO head of the
//!    read direction and has expired, and the device is busy (the scheduler is work-conserving),
//!    so dispatches happen every `T`. Deadlines are only looked at when a batch starts. The
//!    batch in progress at `d` has sent at least one request, so at most `B - 1` more follow.
//!    At the next batch start, if reads are chosen, the expired FIFO head `r` goes first. If
//!    writes are chosen instead (`starved >= writes_starved`), one write batch of at most `B`
//!    requests goes, `starved` is reset to 0, and the batch after it is necessarily a read
//!    batch (`0 >= writes_starved` is false), which starts with `r`. Counting the request on the
//!    device at `d` (done within `T`): `(1 + (B - 1) + B)·T = 2·B·T`.
//!
//!    So the bound is *two* batches past the deadline, not one: the rest of the current batch,
//!    then one write batch. `the_bound_takes_two_batches` builds a case that waits longer than
//!    `E + B·T`. Reads that are *not* the oldest when their deadline passes have no bound of
//!    their own under overload: each read batch after the deadline starts with the FIFO head
//!    and sweeps upward from it, so `r` waits for the older reads ahead of it, whose number
//!    grows without limit when reads arrive faster than they are served. With
//!    `writes_starved = 0` writes win every batch choice and reads can starve outright.

use std::collections::{BTreeMap, BTreeSet};

use elevator_core::{
    IoPrio, IoPrioClass, Nanos, Op, Owner, Request, RequestId, NS_PER_MS, NS_PER_US, SECTOR_BYTES,
};
use elevator_sched::deadline::Deadline;
use elevator_sched::{Dispatch, Scheduler};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// Conservation

#[derive(Clone, Debug)]
enum Action {
    Offer {
        op: u8,
        sector: u64,
        sectors: u64,
        sync: bool,
        fua: bool,
        class: u8,
        cgroup: u32,
    },
    Dispatch,
    /// Complete the in-flight request at this index (modulo their number).
    Complete(usize),
    Advance(Nanos),
    Tune(usize, u64),
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        6 => (0u8..10, 0u64..64, 1u64..=16, any::<bool>(), 0u8..10, 0u8..8, 0u32..2).prop_map(
            |(op, slot, sectors, sync, fua, class, cgroup)| Action::Offer {
                op,
                // A small address space in units of 8 sectors makes contiguity common.
                sector: slot * 8,
                sectors,
                sync,
                fua: fua == 0,
                class,
                cgroup,
            }
        ),
        4 => Just(Action::Dispatch),
        3 => any::<usize>().prop_map(Action::Complete),
        2 => (0u64..20 * NS_PER_MS).prop_map(Action::Advance),
        1 => (0usize..7, 0u64..40).prop_map(|(which, v)| Action::Tune(which, v)),
    ]
}

fn build(id: u64, a: &Action, now: Nanos) -> Request {
    let Action::Offer { op, sector, sectors, sync, fua, class, cgroup } = *a else {
        unreachable!()
    };
    let op = match op {
        0..=4 => Op::Read,
        5..=7 => Op::Write,
        8 => Op::Discard,
        _ => Op::Flush,
    };
    let (offset, len) = if op == Op::Flush { (0, 0) } else { (sector, sectors) };
    let mut owner = Owner::process(1 + cgroup);
    owner.cgroup = cgroup;
    owner.prio = match class {
        0 => IoPrio { class: IoPrioClass::RealTime, level: 0 },
        1 => IoPrio { class: IoPrioClass::Idle, level: 7 },
        2 => IoPrio { class: IoPrioClass::BestEffort, level: 4 },
        _ => IoPrio::DEFAULT,
    };
    let mut rq = Request::new(
        RequestId(id),
        op,
        offset * SECTOR_BYTES,
        len * SECTOR_BYTES,
        sync || op == Op::Read,
        owner,
        now,
    )
    .unwrap();
    rq.fua = fua && op == Op::Write;
    rq
}

struct Harness {
    s: Deadline,
    now: Nanos,
    max_len: u64,
    qd: usize,
    next_id: u64,
    offered_bytes: u64,
    dispatched_bytes: u64,
    /// Queued (inserted, not dispatched) request id -> ids merged into it, itself first.
    queued: BTreeMap<u64, Vec<(u64, u64, u64)>>,
    /// Every offered id -> the id it was dispatched as (itself or its merge target).
    dispatched_as: BTreeMap<u64, u64>,
    offered: BTreeSet<u64>,
    in_flight: Vec<Request>,
}

impl Harness {
    fn dispatch(&mut self) -> bool {
        let queued_before = self.s.queued();
        match self.s.dispatch(self.now) {
            Dispatch::Request(rq) => {
                let parts = self.queued.remove(&rq.id.0).expect("dispatched a request not queued");
                let total: u64 = parts.iter().map(|p| p.2).sum();
                assert_eq!(rq.len_bytes, total, "bytes of {:?} vs parts {parts:?}", rq.id);
                let lo = parts.iter().map(|p| p.1).min().unwrap();
                let hi = parts.iter().map(|p| p.1 + p.2).max().unwrap();
                assert_eq!((rq.offset_bytes, rq.end_bytes()), (lo, hi), "range of {:?}", rq.id);
                assert!(rq.len_bytes <= self.max_len, "{:?} exceeds max_len", rq.id);
                for (id, _, _) in parts {
                    assert!(self.dispatched_as.insert(id, rq.id.0).is_none(), "{id} twice");
                }
                self.dispatched_bytes += rq.len_bytes;
                self.in_flight.push(rq);
                assert_eq!(self.s.queued(), queued_before - 1);
                true
            }
            Dispatch::Empty => {
                // Work conservation: only a request on the device may hold the queue back.
                assert!(
                    queued_before == 0 || !self.in_flight.is_empty(),
                    "{queued_before} queued, nothing in flight, yet Empty"
                );
                false
            }
            Dispatch::WaitUntil { .. } => panic!("mq-deadline never idles"),
        }
    }

    fn step(&mut self, a: &Action) {
        match a {
            Action::Offer { .. } => {
                self.next_id += 1;
                let rq = build(self.next_id, a, self.now);
                self.offered.insert(rq.id.0);
                self.offered_bytes += rq.len_bytes;
                if let Some(m) = self.s.try_merge(&rq, self.max_len, self.now) {
                    let parts =
                        self.queued.get_mut(&m.into.0).expect("merged into a request not queued");
                    let (first_off, first_end) = {
                        let lo = parts.iter().map(|p| p.1).min().unwrap();
                        let hi = parts.iter().map(|p| p.1 + p.2).max().unwrap();
                        (lo, hi)
                    };
                    if m.front {
                        assert_eq!(rq.end_bytes(), first_off, "front merge not contiguous");
                    } else {
                        assert_eq!(rq.offset_bytes, first_end, "back merge not contiguous");
                    }
                    assert_ne!(rq.op, Op::Flush);
                    assert!(!rq.fua);
                    parts.push((rq.id.0, rq.offset_bytes, rq.len_bytes));
                } else {
                    self.queued.insert(rq.id.0, vec![(rq.id.0, rq.offset_bytes, rq.len_bytes)]);
                    self.s.insert(rq, self.now);
                }
                assert_eq!(self.s.queued(), self.queued.len());
            }
            Action::Dispatch => {
                if self.in_flight.len() < self.qd {
                    self.dispatch();
                }
            }
            Action::Complete(i) => {
                if !self.in_flight.is_empty() {
                    let rq = self.in_flight.swap_remove(i % self.in_flight.len());
                    self.s.completed(&rq, self.now);
                }
            }
            Action::Advance(ns) => self.now += ns,
            Action::Tune(which, v) => {
                let (name, value) = match which {
                    0 => ("fifo_batch", v % 20),
                    1 => ("writes_starved", v % 4),
                    2 => ("front_merges", v % 2),
                    3 => ("read_expire", *v),
                    4 => ("write_expire", v * 3),
                    5 => ("next_rq_pointers", v % 2),
                    _ => ("prio_aging_expire", v * 2),
                };
                self.s.set_tunable(name, &value.to_string()).unwrap();
            }
        }
    }
}

proptest! {
    // 256 cases by default; PROPTEST_CASES overrides.
    #![proptest_config(ProptestConfig::default())]

    /// Property 1 of the module documentation.
    #[test]
    fn every_request_is_dispatched_exactly_once(
        actions in prop::collection::vec(action(), 1..400),
        max_len_sectors in prop::sample::select(vec![16u64, 24, 64, 256]),
        qd in 1usize..8,
    ) {
        let mut h = Harness {
            s: Deadline::new(),
            now: 0,
            max_len: max_len_sectors * SECTOR_BYTES,
            qd,
            next_id: 0,
            offered_bytes: 0,
            dispatched_bytes: 0,
            queued: BTreeMap::new(),
            dispatched_as: BTreeMap::new(),
            offered: BTreeSet::new(),
            in_flight: Vec::new(),
        };
        for a in &actions {
            h.step(a);
        }
        // Drain: the device finishes everything, the driver pulls until empty.
        let mut rounds = 0;
        loop {
            for rq in std::mem::take(&mut h.in_flight) {
                h.s.completed(&rq, h.now);
            }
            h.now += NS_PER_MS;
            if !h.dispatch() {
                break;
            }
            rounds += 1;
            prop_assert!(rounds < 10_000);
        }
        prop_assert_eq!(h.s.queued(), 0);
        prop_assert!(h.queued.is_empty());
        prop_assert_eq!(h.offered_bytes, h.dispatched_bytes);
        let dispatched: BTreeSet<u64> = h.dispatched_as.keys().copied().collect();
        prop_assert_eq!(dispatched, h.offered.clone());
        for rq in std::mem::take(&mut h.in_flight) {
            h.s.completed(&rq, h.now);
        }
        for level in h.s.stats() {
            prop_assert_eq!(level.inserted, level.dispatched);
            prop_assert_eq!(level.dispatched, level.completed);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Starvation bound

#[derive(Clone, Copy, Debug)]
struct Params {
    fifo_batch: u64,
    writes_starved: u64,
    read_expire_ms: u64,
    write_expire_ms: u64,
    service_ns: Nanos,
    /// The `next_rq` rule of kernels before 6.5.
    next_rq_pointers: u64,
}

#[derive(Clone, Copy, Debug)]
struct Arrival {
    at: Nanos,
    read: bool,
    sector: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct ReadLife {
    inserted: Nanos,
    oldest_since: Option<Nanos>,
    dispatched: Option<Nanos>,
}

/// Runs a queue-depth-1 device with a fixed service time; returns each read's life.
fn run_fixed_device(p: Params, arrivals: &[Arrival]) -> BTreeMap<u64, ReadLife> {
    let mut s = Deadline::new();
    for (name, v) in [
        ("fifo_batch", p.fifo_batch),
        ("writes_starved", p.writes_starved),
        ("read_expire", p.read_expire_ms),
        ("write_expire", p.write_expire_ms),
        ("next_rq_pointers", p.next_rq_pointers),
    ] {
        s.set_tunable(name, &v.to_string()).unwrap();
    }
    let mut reads: BTreeMap<u64, ReadLife> = BTreeMap::new();
    // Queued reads by insertion order: the first is the oldest.
    let mut queued_reads: BTreeSet<u64> = BTreeSet::new();
    let mut device: Option<(Request, Nanos)> = None;
    let mut next = 0;
    loop {
        let arrival_at = arrivals.get(next).map(|a| a.at);
        let done_at = device.map(|d| d.1);
        let now = match (arrival_at, done_at) {
            (None, None) => break,
            (Some(a), Some(d)) => a.min(d),
            (Some(a), None) => a,
            (None, Some(d)) => d,
        };
        if done_at == Some(now) {
            let (rq, _) = device.take().unwrap();
            s.completed(&rq, now);
        }
        while next < arrivals.len() && arrivals[next].at == now {
            let a = arrivals[next];
            let id = next as u64;
            next += 1;
            let op = if a.read { Op::Read } else { Op::Write };
            let rq = Request::new(
                RequestId(id),
                op,
                a.sector * SECTOR_BYTES,
                8 * SECTOR_BYTES,
                true,
                Owner::process(1),
                now,
            )
            .unwrap();
            s.insert(rq, now);
            if a.read {
                reads.insert(id, ReadLife { inserted: now, ..ReadLife::default() });
                queued_reads.insert(id);
            }
        }
        if device.is_none() {
            match s.dispatch(now) {
                Dispatch::Request(rq) => {
                    if rq.op == Op::Read {
                        reads.get_mut(&rq.id.0).unwrap().dispatched = Some(now);
                        queued_reads.remove(&rq.id.0);
                    }
                    device = Some((rq, now + p.service_ns));
                }
                Dispatch::Empty => assert_eq!(s.queued(), 0, "work conservation"),
                Dispatch::WaitUntil { .. } => unreachable!(),
            }
        }
        if let Some(&oldest) = queued_reads.first() {
            reads.get_mut(&oldest).unwrap().oldest_since.get_or_insert(now);
        }
    }
    reads
}

/// The bound of the module documentation: the latest time read `r` may be dispatched.
fn latest_dispatch(p: Params, r: &ReadLife) -> Option<Nanos> {
    let oldest_since = r.oldest_since?;
    let deadline = r.inserted + p.read_expire_ms * NS_PER_MS;
    Some(oldest_since.max(deadline) + 2 * p.fifo_batch.max(1) * p.service_ns)
}

fn arrivals() -> impl Strategy<Value = (Params, Vec<Arrival>)> {
    (0u64..=16, 1u64..=4, 1u64..=20, 1u64..=60, 100u64..=2000, 0u64..=1).prop_flat_map(
        |(fifo_batch, writes_starved, read_expire_ms, write_expire_ms, service_us, pointers)| {
            let p = Params {
                fifo_batch,
                writes_starved,
                read_expire_ms,
                write_expire_ms,
                service_ns: service_us * NS_PER_US,
                next_rq_pointers: pointers,
            };
            // Gaps average ~1.2 service times per arrival, some bursts, some lulls, so the
            // queue fills up and reads expire while both directions keep arriving.
            let arrival = (0u64..=38, 0u8..10, 0u64..100_000);
            prop::collection::vec(arrival, 50..500).prop_map(move |raw| {
                let mut at = 0;
                let list = raw
                    .into_iter()
                    .map(|(gap, dir, slot)| {
                        at += gap * p.service_ns / 16;
                        Arrival { at, read: dir < 5, sector: slot * 8 }
                    })
                    .collect();
                (p, list)
            })
        },
    )
}

proptest! {
    // 256 cases by default; PROPTEST_CASES overrides.
    #![proptest_config(ProptestConfig::default())]

    /// Property 2: every read that becomes the oldest queued read at `h` is dispatched by
    /// `max(h, t0 + read_expire) + 2·max(fifo_batch, 1)·T` (derivation in the module docs).
    #[test]
    fn reads_are_served_within_the_deadline_bound((p, list) in arrivals()) {
        let reads = run_fixed_device(p, &list);
        for (id, r) in &reads {
            let dispatched = r.dispatched.expect("every read is dispatched");
            if let Some(latest) = latest_dispatch(p, r) {
                prop_assert!(
                    dispatched <= latest,
                    "read {} inserted at {} oldest since {:?} dispatched at {} > bound {} ({:?})",
                    id, r.inserted, r.oldest_since, dispatched, latest, p
                );
            }
        }
    }
}

/// A case where a read that is the oldest at its deadline waits longer than `E + B·T` (one
/// batch past the deadline), and within `E + 2·B·T`: the current read batch must end, then a
/// starved write batch goes, before the read batch that starts with the expired read.
#[test]
fn the_bound_takes_two_batches() {
    let t = NS_PER_MS;
    let p = Params {
        fifo_batch: 4,
        writes_starved: 1,
        read_expire_ms: 8,
        write_expire_ms: 1000,
        service_ns: t,
        next_rq_pointers: 0,
    };
    let mut list = Vec::new();
    // Timeline (T = 1 ms): the fresh scheduler's phantom write batch sends writes at 0..3 ms,
    // a read batch sends the four early reads at 4..7 (sweep position 5024), writes go at
    // 8..11. The victim (sector 0, below the sweep) arrives at 4.5 ms, expires at 12.5 ms: just
    // after the read batch at 12..15 started sweeping upward through newer reads. The write
    // batch at 16..19 goes next, and the victim leads the read batch at 20 ms: a wait of
    // 15.5 ms, against E + B·T = 12 ms and E + 2·B·T = 16 ms.
    for i in 0..64 {
        list.push(Arrival { at: 0, read: false, sector: 1_000_000 + 8 * i });
    }
    for i in 0..4 {
        list.push(Arrival { at: 0, read: true, sector: 5_000 + 8 * i });
    }
    list.push(Arrival { at: 4 * t + t / 2, read: true, sector: 0 });
    for i in 0..64 {
        list.push(Arrival { at: 4 * t + t / 2 + 1 + i, read: true, sector: 10_000 + 8 * i });
    }
    list.sort_by_key(|a| a.at);
    let reads = run_fixed_device(p, &list);
    let victim = list.iter().position(|a| a.read && a.sector == 0).unwrap() as u64;
    let r = reads[&victim];
    let wait = r.dispatched.unwrap() - r.inserted;
    let e = p.read_expire_ms * NS_PER_MS;
    let b = p.fifo_batch;
    assert!(r.oldest_since.unwrap() <= r.inserted + e, "the victim is the oldest at its deadline");
    assert_eq!(wait, 15 * t + t / 2);
    assert!(wait > e + b * t, "wait {wait} should exceed E + B·T = {}", e + b * t);
    assert!(wait <= e + 2 * b * t, "wait {wait} exceeds E + 2·B·T = {}", e + 2 * b * t);
}
