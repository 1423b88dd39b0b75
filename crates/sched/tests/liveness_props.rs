//! Every scheduler driven through the [`Scheduler`] trait by a fake device that holds up to
//! `depth` requests at once, each served in its own (pseudo-random) time, on a virtual clock —
//! the shape of the NBD server's worker in front of a file, where the scheduler has groups
//! (one per export), several connections per group and a capped dispatch depth.
//!
//! `bfq_never_stalls` (proptest): random groups and weights, processes with random depths,
//! sync reads and async writes, ioprio classes and levels, random tunables that matter for
//! expiry and injection (`slice_idle`, `max_budget`, `low_latency`, `strict_guarantees`,
//! rotational or not), with BFQ's bookkeeping invariants checked after every call.
//! `no_scheduler_stalls` (proptest): the same loads under each scheduler (`by_name`), CFQ with
//! and without group scheduling. Both check:
//! - **liveness**: whenever nothing is in the device and requests are queued, `dispatch`
//!   answers a request or a timer, never `Empty` (the driver would sleep for ever: nothing
//!   else would call it again);
//! - every inserted request is dispatched exactly once (or merged into one that is) and the
//!   run drains, every third process stopping half way and each exiting
//!   (`Scheduler::exited`) at its first completion once stopped.

use std::collections::BTreeMap;

use elevator_core::{
    Cgroup, IoPrio, IoPrioClass, Nanos, Op, Owner, Request, RequestId, NS_PER_MS, NS_PER_US,
};
use elevator_sched::bfq::Bfq;
use elevator_sched::{by_name, Dispatch, Scheduler};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Proc {
    pid: u32,
    cgroup: u32,
    depth: usize,
    random: bool,
    sync: bool,
    think_us: u64,
    prio: IoPrio,
}

/// xorshift64: the device's service times and the processes' offsets.
fn next(rng: &mut u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng
}

struct Outcome {
    dispatched: BTreeMap<u64, usize>,
    inserted: u64,
    /// Requests merged into a queued one (`try_merge`, as the drivers do first).
    merged: u64,
    leftover: usize,
}

/// Runs `procs` against scheduler `s` on the fake device; `check` is asked after every call
/// (BFQ's bookkeeping invariants, or nothing).
fn run<S: Scheduler + ?Sized>(
    s: &mut S,
    check: &dyn Fn(&S) -> Result<(), String>,
    procs: &[Proc],
    device_depth: usize,
    service_max_ns: Nanos,
    seed: u64,
    duration: Nanos,
) -> Outcome {
    let mut rng = seed | 1;
    let mut now: Nanos = 0;
    let mut id = 0u64;
    let mut out = Outcome { dispatched: BTreeMap::new(), inserted: 0, merged: 0, leftover: 0 };
    // The processes waiting for each request: its own, and those of requests merged into it.
    let mut owner_of: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    // Sequential processes start close together (in pairs 512 KiB apart, the pairs far apart),
    // so that they interleave and BFQ's early queue merging has cooperators to find.
    let mut sector: Vec<u64> = procs
        .iter()
        .map(|p| u64::from(p.pid / 2) * 10_000_000 + u64::from(p.pid % 2) * 1024)
        .collect();
    // (due, request) in the device; (due, process) thinking before its next submission.
    let mut device: Vec<(Nanos, Request)> = Vec::new();
    let mut thinking: Vec<(Nanos, usize)> = Vec::new();
    // Every third process stops half way; each exits at its first completion after it
    // stopped, whatever it has outstanding.
    let stop = |p: usize| if procs[p].pid.is_multiple_of(3) { duration / 2 } else { duration };
    let mut exited = vec![false; procs.len()];
    let submit = |p: usize,
                  now: Nanos,
                  id: &mut u64,
                  rng: &mut u64,
                  sector: &mut [u64],
                  s: &mut S,
                  owner_of: &mut BTreeMap<u64, Vec<usize>>|
     -> bool {
        let pr = &procs[p];
        let at = if pr.random {
            (next(rng) % 100_000_000) & !7
        } else {
            sector[p] += 8;
            sector[p]
        };
        *id += 1;
        let mut owner = Owner::process(pr.pid);
        owner.cgroup = pr.cgroup;
        owner.prio = pr.prio;
        let op = if pr.sync { Op::Read } else { Op::Write };
        let rq = Request::new(RequestId(*id), op, at * 512, 4096, pr.sync, owner, now).unwrap();
        if let Some(m) = s.try_merge(&rq, 128 << 10, now) {
            owner_of.get_mut(&m.into.0).expect("merged into a queued request").push(p);
            check(s).unwrap_or_else(|e| panic!("after merge at {now}: {e}"));
            return true;
        }
        owner_of.insert(*id, vec![p]);
        s.insert(rq, now);
        check(s).unwrap_or_else(|e| panic!("after insert at {now}: {e}"));
        false
    };
    for (p, pr) in procs.iter().enumerate() {
        for _ in 0..pr.depth {
            out.merged +=
                u64::from(submit(p, now, &mut id, &mut rng, &mut sector, s, &mut owner_of));
            out.inserted += 1;
        }
    }
    let mut steps = 0u64;
    loop {
        steps += 1;
        assert!(steps < 5_000_000, "no progress");
        let mut wake: Option<Nanos> = None;
        while device.len() < device_depth {
            let queued = s.queued();
            let d = s.dispatch(now);
            check(s).unwrap_or_else(|e| panic!("after dispatch at {now}: {e}"));
            match d {
                Dispatch::Request(rq) => {
                    *out.dispatched.entry(rq.id.0).or_default() += 1;
                    let service = 1 + next(&mut rng) % service_max_ns;
                    device.push((now + service, rq));
                }
                Dispatch::WaitUntil { until_ns } => {
                    assert!(until_ns > now, "WaitUntil must be in the future");
                    wake = Some(until_ns);
                    break;
                }
                Dispatch::Empty => {
                    assert!(
                        !device.is_empty() || queued == 0,
                        "{queued} queued, nothing in the device, yet Empty at {now} ns"
                    );
                    break;
                }
            }
        }
        let due = device.iter().map(|d| d.0).chain(thinking.iter().map(|t| t.0)).chain(wake).min();
        let Some(t) = due else { break };
        now = t;
        // Completions first, then the submissions due now: each its own call, as a driver.
        while let Some(i) = device.iter().position(|d| d.0 == now) {
            let (_, rq) = device.swap_remove(i);
            s.completed(&rq, now);
            check(s).unwrap_or_else(|e| panic!("after completion at {now}: {e}"));
            for &p in &owner_of[&rq.id.0] {
                if now < stop(p) {
                    thinking.push((now + procs[p].think_us * NS_PER_US, p));
                } else if !std::mem::replace(&mut exited[p], true) {
                    s.exited(procs[p].pid, now);
                    check(s).unwrap_or_else(|e| panic!("after exit at {now}: {e}"));
                }
            }
        }
        while let Some(i) = thinking.iter().position(|t| t.0 == now) {
            let (_, p) = thinking.swap_remove(i);
            out.merged +=
                u64::from(submit(p, now, &mut id, &mut rng, &mut sector, s, &mut owner_of));
            out.inserted += 1;
        }
    }
    out.leftover = s.queued();
    out
}

/// A drawn process: group, depth, random, sync, think time (µs), ioprio.
type Drawn = (u32, usize, bool, bool, u64, IoPrio);

fn proc_strategy() -> impl Strategy<Value = Drawn> {
    let class = prop_oneof![
        6 => Just(IoPrioClass::None),
        1 => Just(IoPrioClass::RealTime),
        1 => Just(IoPrioClass::BestEffort),
        1 => Just(IoPrioClass::Idle),
    ];
    (
        1u32..4,
        1usize..9,
        any::<bool>(),
        prop::bool::weighted(0.8),
        prop_oneof![Just(0u64), 0u64..20_000],
        (class, 0u8..8).prop_map(|(class, level)| IoPrio { class, level }),
    )
}

/// Declares a group per weight (cgroups 1, 2, ...) to `s` and makes the drawn processes,
/// each in one of them.
fn groups_and_procs<S: Scheduler + ?Sized>(
    s: &mut S,
    weights: &[u32],
    drawn: &[Drawn],
) -> Vec<Proc> {
    for (i, w) in weights.iter().enumerate() {
        let id = i as u32 + 1;
        s.set_group(&Cgroup { id, parent: Some(0), path: format!("g{id}"), weight: *w });
    }
    drawn
        .iter()
        .enumerate()
        .map(|(i, &(g, depth, random, sync, think_us, prio))| Proc {
            pid: 100 + i as u32,
            cgroup: g.min(weights.len() as u32),
            depth,
            random,
            sync,
            think_us,
            prio,
        })
        .collect()
}

/// How long the proptests' processes submit (virtual time).
const RUN_NS: Nanos = 300 * NS_PER_MS;

/// The run drained, and every request was dispatched exactly once or merged into one that was.
fn drained_once(out: &Outcome) -> Result<(), TestCaseError> {
    prop_assert_eq!(out.leftover, 0, "the run drains");
    prop_assert_eq!(out.dispatched.len() as u64 + out.merged, out.inserted);
    prop_assert!(out.dispatched.values().all(|&n| n == 1), "each request dispatched once");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: std::env::var("LIVENESS_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200), ..ProptestConfig::default() })]

    #[test]
    fn bfq_never_stalls(
        weights in prop::collection::vec(1u32..1001, 1..4),
        procs in prop::collection::vec(proc_strategy(), 1..8),
        device_depth in 1usize..9,
        slice_idle in prop_oneof![Just(0u64), Just(8), 1u64..20],
        max_budget in prop_oneof![Just(0u64), Just(2048), 32u64..20_000],
        low_latency in any::<bool>(),
        strict in any::<bool>(),
        rotational in any::<bool>(),
        service_max_us in prop_oneof![Just(20u64), 1u64..3000],
        seed in any::<u64>(),
    ) {
        let mut s = Bfq::new();
        s.set_rotational(rotational);
        s.set_tunable("slice_idle", &slice_idle.to_string()).unwrap();
        s.set_tunable("max_budget", &max_budget.to_string()).unwrap();
        s.set_tunable("low_latency", if low_latency { "1" } else { "0" }).unwrap();
        s.set_tunable("strict_guarantees", if strict { "1" } else { "0" }).unwrap();
        let procs = groups_and_procs(&mut s, &weights, &procs);
        let check = |b: &Bfq| b.check_invariants();
        let out = run(&mut s, &check, &procs, device_depth, service_max_us * NS_PER_US, seed, RUN_NS);
        drained_once(&out)?;
    }

    #[test]
    fn no_scheduler_stalls(
        scheduler in prop::sample::select(
            vec!["none", "mq-deadline", "cfq", "cfq-groups", "cfq-2.6.31", "cfq-2.6.29",
                 "anticipatory", "kyber", "bfq"],
        ),
        weights in prop::collection::vec(1u32..1001, 1..4),
        procs in prop::collection::vec(proc_strategy(), 1..8),
        device_depth in 1usize..9,
        rotational in any::<bool>(),
        service_max_us in prop_oneof![Just(20u64), 1u64..3000],
        seed in any::<u64>(),
    ) {
        let name = ["-groups", "-2.6.31", "-2.6.29"]
            .iter()
            .fold(scheduler, |n, era| n.trim_end_matches(era));
        let mut s = by_name(name).unwrap();
        match scheduler {
            "cfq-groups" => s.set_tunable("group_scheduling", "1").unwrap(),
            // 2.6.31's rules with its cooperator switch, and 2.6.29's without one.
            "cfq-2.6.31" | "cfq-2.6.29" => {
                s.set_tunable("workload_trees", "0").unwrap();
                let merging = if scheduler == "cfq-2.6.31" { "1" } else { "0" };
                s.set_tunable("queue_merging", merging).unwrap();
            }
            _ => {}
        }
        s.set_rotational(rotational);
        let procs = groups_and_procs(&mut *s, &weights, &procs);
        let none = |_: &(dyn Scheduler + 'static)| Ok(());
        let out = run(s.as_mut(), &none, &procs, device_depth, service_max_us * NS_PER_US, seed, RUN_NS);
        drained_once(&out)?;
    }
}

/// The NBD server's fairness test in the simulator's terms: two exports (groups 1000 and
/// 500), one connection each with 32 reads outstanding, 8 dispatch slots, reads served from
/// the page cache in microseconds, `max_budget` 2048, for 1 s of virtual time.
#[test]
fn bfq_never_stalls_two_exports_at_depth_32() {
    for seed in 1..9u64 {
        let mut s = Bfq::new();
        s.set_rotational(false);
        s.set_tunable("max_budget", "2048").unwrap();
        for (id, weight) in [(1, 1000), (2, 500)] {
            s.set_group(&Cgroup { id, parent: Some(0), path: format!("g{id}"), weight });
        }
        let procs: Vec<Proc> = (0..2)
            .map(|i| Proc {
                pid: 100 + i,
                cgroup: i + 1,
                depth: 32,
                random: true,
                sync: true,
                think_us: 0,
                prio: IoPrio::DEFAULT,
            })
            .collect();
        let check = |b: &Bfq| b.check_invariants();
        let out = run(&mut s, &check, &procs, 8, 40 * NS_PER_US, seed, 1_000 * NS_PER_MS);
        assert_eq!(out.leftover, 0);
        assert_eq!(out.dispatched.len() as u64 + out.merged, out.inserted);
    }
}
