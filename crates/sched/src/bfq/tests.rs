use super::*;
use elevator_core::{IoPrio, Owner};

const US: Nanos = 1_000;

fn rq(id: u64, pid: u32, cgroup: u32, op: Op, sector: u64, sectors: u64, now: Nanos) -> Request {
    let mut owner = Owner::process(pid);
    owner.cgroup = cgroup;
    Request::new(RequestId(id), op, sector * 512, sectors * 512, true, owner, now).unwrap()
}

/// Sequential readers (one per `(pid, cgroup)`), each keeping one 128-sector request queued, on
/// a device that moves a sector in 100 ns; returns sectors served per reader over `until`.
fn serve(b: &mut Bfq, readers: &[(u32, u32)], until: Nanos) -> Vec<u64> {
    serve_prio(b, readers, &vec![IoPrio::DEFAULT; readers.len()], until)
}

/// `serve` with each reader's I/O priority.
fn serve_prio(b: &mut Bfq, readers: &[(u32, u32)], prios: &[IoPrio], until: Nanos) -> Vec<u64> {
    let rq = |id, i: usize, op, sector, sectors, now| {
        let (pid, cgroup) = readers[i];
        let mut r = rq(id, pid, cgroup, op, sector, sectors, now);
        r.owner.prio = prios[i];
        r
    };
    let mut id = 0;
    let mut pos: Vec<u64> =
        readers.iter().enumerate().map(|(i, _)| i as u64 * 10_000_000).collect();
    for (i, p) in pos.iter_mut().enumerate() {
        b.insert(rq(id, i, Op::Read, *p, 128, 0), 0);
        id += 1;
        *p += 128;
    }
    let mut served = vec![0u64; readers.len()];
    let mut now = 0;
    while now < until {
        match b.dispatch(now) {
            Dispatch::Request(r) => {
                now += r.sectors() * 100;
                b.completed(&r, now);
                let i = readers.iter().position(|&(p, _)| p == r.owner.pid).unwrap();
                served[i] += r.sectors();
                b.insert(rq(id, i, Op::Read, pos[i], 128, now), now);
                id += 1;
                pos[i] += 128;
            }
            Dispatch::WaitUntil { until_ns } => now = until_ns,
            Dispatch::Empty => panic!("backlogged readers, nothing to dispatch"),
        }
    }
    served
}

#[test]
fn groups_share_the_service_by_weight() {
    let mut b = Bfq::new();
    b.set_tunable("low_latency", "0").unwrap();
    b.set_group(&Cgroup { id: 1, parent: Some(0), path: "heavy".into(), weight: 200 });
    b.set_group(&Cgroup { id: 2, parent: Some(0), path: "light".into(), weight: 100 });
    let served = serve(&mut b, &[(10, 1), (20, 2), (21, 2)], 20_000_000_000);
    let heavy = served[0] as f64;
    let light = (served[1] + served[2]) as f64;
    let share = heavy / (heavy + light);
    assert!((share - 2.0 / 3.0).abs() < 0.05, "heavy group got {share:.3} of {served:?}");
    // Inside the light group its two queues share alike.
    let inner = served[1] as f64 / light;
    assert!((inner - 0.5).abs() < 0.05, "{served:?}");
}

#[test]
fn nested_groups_share_their_parents_service() {
    // root ─ a (100) ─ a/x (100), a/y (100)
    //      └ b (100)
    // Hierarchical: a and b half each, a's half split between x and y; flat scheduling of the
    // three leaves would give each a third.
    let mut b = Bfq::new();
    b.set_tunable("low_latency", "0").unwrap();
    b.set_group(&Cgroup { id: 1, parent: Some(0), path: "a".into(), weight: 100 });
    b.set_group(&Cgroup { id: 2, parent: Some(1), path: "a/x".into(), weight: 100 });
    b.set_group(&Cgroup { id: 3, parent: Some(1), path: "a/y".into(), weight: 100 });
    b.set_group(&Cgroup { id: 4, parent: Some(0), path: "b".into(), weight: 100 });
    let served = serve(&mut b, &[(10, 2), (20, 3), (30, 4)], 20_000_000_000);
    let total: u64 = served.iter().sum();
    let share = |i: usize| served[i] as f64 / total as f64;
    assert!((share(2) - 0.5).abs() < 0.05, "b got {:.3} of {served:?}", share(2));
    assert!((share(0) - 0.25).abs() < 0.04, "a/x got {:.3} of {served:?}", share(0));
    assert!((share(1) - 0.25).abs() < 0.04, "a/y got {:.3} of {served:?}", share(1));
    // A weight in the middle of the tree moves both leaves below it.
    let mut b = Bfq::new();
    b.set_tunable("low_latency", "0").unwrap();
    b.set_group(&Cgroup { id: 1, parent: Some(0), path: "a".into(), weight: 300 });
    b.set_group(&Cgroup { id: 2, parent: Some(1), path: "a/x".into(), weight: 100 });
    b.set_group(&Cgroup { id: 3, parent: Some(1), path: "a/y".into(), weight: 100 });
    b.set_group(&Cgroup { id: 4, parent: Some(0), path: "b".into(), weight: 100 });
    let served = serve(&mut b, &[(10, 2), (20, 3), (30, 4)], 20_000_000_000);
    let total: u64 = served.iter().sum();
    let a = (served[0] + served[1]) as f64 / total as f64;
    assert!((a - 0.75).abs() < 0.05, "a got {a:.3} of {served:?}");
}

#[test]
fn wf2q_picks_the_smallest_eligible_finish_and_moves_vtime_to_the_smallest_start() {
    let e =
        |start: f64, finish: f64| Entity { start, finish, weight: 1.0, budget: 1, active: true };
    let ents = [e(5.0, 9.0), e(1.0, 20.0), e(2.0, 8.0)];
    let mut v = 3.0;
    // Eligible at 3: the first is not (S = 5); of the others the smaller F is 8.
    assert_eq!(Bfq::pick([0, 1, 2].into_iter(), |i| ents[i], &mut v), Some(2));
    let mut v = 0.5;
    assert_eq!(Bfq::pick([0].into_iter(), |i| ents[i], &mut v), Some(0));
    assert_eq!(v, 5.0, "nothing eligible: the virtual time jumps to the smallest start");
}

#[test]
fn budgets_follow_why_queues_expire() {
    let mut b = Bfq::new();
    b.set_tunable("low_latency", "0").unwrap();
    let max = b.max_budget();
    let min = b.min_budget();
    // A reader that stops after 40 sectors: NO_MORE_REQUESTS sets the budget to its service.
    b.set_tunable("slice_idle", "0").unwrap();
    b.insert(rq(1, 7, 0, Op::Read, 0, 40, 0), 0);
    let Dispatch::Request(r) = b.dispatch(0) else { panic!() };
    b.completed(&r, 10 * US);
    assert_eq!(b.dispatch(10 * US), Dispatch::Empty);
    assert_eq!(b.queues[0].entity.budget, 40.max(min));
    // A queue that exhausts its budget gets four times it, up to max_budget.
    b.queues[0].entity.budget = min;
    for i in 0..40 {
        b.insert(rq(10 + i, 7, 0, Op::Read, 1000 + i * 64, 64, 20 * US), 20 * US);
    }
    let mut now = 20 * US;
    let mut served = 0;
    while served <= min {
        let Dispatch::Request(r) = b.dispatch(now) else { panic!() };
        served += r.sectors();
        now += US;
        b.completed(&r, now);
    }
    assert!(
        b.queues[0].entity.budget == (min * 4).min(max),
        "budget {}",
        b.queues[0].entity.budget
    );
}

#[test]
fn a_raised_queue_gets_twice_the_minimum_budget() {
    // __bfq_bfqq_recalc_budget: a weight-raised sync queue's next budget is 2 x min_budget,
    // whatever ended the last, for a low latency.
    let mut b = Bfq::new();
    let min = b.min_budget();
    let first = b.max_budget();
    for i in 0..first / 64 + 10 {
        b.insert(rq(i, 7, 0, Op::Read, i * 64, 64, 0), 0);
    }
    assert!(b.raised(0, 0), "a new queue is raised");
    let first = b.queues[0].entity.budget.max(first);
    let mut now = 0;
    let mut served = 0;
    while served <= first {
        let Dispatch::Request(r) = b.dispatch(now) else { panic!() };
        served += r.sectors();
        now += US;
        b.completed(&r, now);
    }
    assert_eq!(b.queues[0].entity.budget, 2 * min, "after {served} sectors");
}

#[test]
fn a_raised_queue_s_budget_times_out_thirty_times_later() {
    // bfq_set_budget_timeout: timeout_sync x entity.weight / orig_weight for an
    // interactively raised queue. Two sequential readers, each request taking 10 ms: without
    // raising the first is timed out after 125 ms; raised, it keeps the device past it.
    for (low_latency, switched) in [("0", true), ("1", false)] {
        let mut b = Bfq::new();
        b.set_tunable("low_latency", low_latency).unwrap();
        let mut pos = [0u64, 50_000_000];
        let mut id = 0;
        for p in 0..2u32 {
            for _ in 0..4 {
                id += 1;
                b.insert(rq(id, p + 1, 0, Op::Read, pos[p as usize], 8, 0), 0);
                pos[p as usize] += 8;
            }
        }
        let mut now = 0;
        let mut pids = Vec::new();
        while now < 300 * MS {
            match b.dispatch(now) {
                Dispatch::Request(r) => {
                    now += 10 * MS;
                    b.completed(&r, now);
                    pids.push(r.owner.pid);
                    let p = r.owner.pid as usize - 1;
                    id += 1;
                    b.insert(rq(id, r.owner.pid, 0, Op::Read, pos[p], 8, now), now);
                    pos[p] += 8;
                }
                Dispatch::WaitUntil { until_ns } => now = until_ns,
                Dispatch::Empty => panic!("backlogged"),
            }
        }
        assert_eq!(
            pids.iter().any(|&p| p != pids[0]),
            switched,
            "low_latency {low_latency}: {pids:?}"
        );
    }
}

#[test]
fn an_async_queue_s_budget_times_out_too() {
    // bfq_select_queue's budget timeout holds for every queue: slow async writes (10 ms
    // each) give the device to a waiting reader after timeout_sync, long before the async
    // queue's largest budget is spent.
    let mut b = Bfq::new();
    b.set_tunable("low_latency", "0").unwrap();
    let mut id = 0;
    for i in 0..64 {
        id += 1;
        let w = rq(id, 1, 0, Op::Write, i * 1_000_000, 8, 0);
        let w = Request::new(w.id, Op::Write, w.offset_bytes, w.len_bytes, false, w.owner, 0);
        b.insert(w.unwrap(), 0);
    }
    let mut now = 0;
    let mut first_read = None;
    while now < 300 * MS && first_read.is_none() {
        match b.dispatch(now) {
            Dispatch::Request(r) => {
                if r.op == Op::Read {
                    first_read = Some(now);
                }
                now += 10 * MS;
                b.completed(&r, now);
                if now == 10 * MS {
                    id += 1;
                    b.insert(rq(id, 2, 0, Op::Read, 90_000_000, 8, now), now);
                }
            }
            Dispatch::WaitUntil { until_ns } => now = until_ns,
            Dispatch::Empty => break,
        }
    }
    let t = first_read.expect("the reader is served");
    assert!((125 * MS..=140 * MS).contains(&t), "first read at {} ms", t / MS);
}

#[test]
fn a_slow_queue_is_charged_the_time_it_held_the_device() {
    // bfq_bfqq_charge_time: a sync queue that held the device for more than 20 ms and got
    // less than half the largest budget is slow, and is charged the largest budget times
    // the time it held the device over timeout_sync; its idling is not counted.
    let mut b = Bfq::new();
    b.set_tunable("low_latency", "0").unwrap();
    b.set_tunable("max_budget", "12500").unwrap();
    b.insert(rq(1, 7, 0, Op::Read, 0, 8, 0), 0);
    let Dispatch::Request(r) = b.dispatch(0) else { panic!() };
    let done = 30 * MS;
    b.completed(&r, done);
    // It idles slice_idle for its next request, then expires.
    let Dispatch::WaitUntil { until_ns } = b.dispatch(done) else { panic!("idling") };
    assert_eq!(b.dispatch(until_ns), Dispatch::Empty);
    let e = &b.queues[0].entity;
    // 12500 x 30 / 125 sectors at weight 100, not the 8 it moved.
    assert_eq!(e.finish - e.start, 3000.0 / 100.0, "{e:?}");
}

#[test]
fn new_queues_are_weight_raised_unless_they_come_in_a_large_burst() {
    let mut b = Bfq::new();
    b.insert(rq(1, 1, 0, Op::Read, 0, 8, 0), 0);
    assert_eq!(b.queues[0].entity.weight, 100.0 * WR_COEFF, "a new sync queue is raised");
    let dur = b.wr_duration_ns();
    assert!((3_000_000_000..=25_000_000_000).contains(&dur));
    assert_eq!(b.weight_of(0, dur + 1), 100.0, "raising ends after wr_duration");
    // Nine queues created 10 ms apart: a large burst; none of them (nor the first) is raised.
    let mut b = Bfq::new();
    for i in 0..9u32 {
        let t = u64::from(i) * 10_000_000;
        b.insert(rq(u64::from(i), 100 + i, 0, Op::Read, u64::from(i) * 1_000_000, 8, t), t);
    }
    let now = 90_000_000;
    assert!((0..9).all(|q| b.weight_of(q, now) == 100.0), "a large burst is not raised");
    // A queue that arrives long after the burst is raised again.
    b.insert(rq(99, 500, 0, Op::Read, 5, 8, 5_000_000_000), 5_000_000_000);
    assert_eq!(b.weight_of(9, 5_000_000_001), 100.0 * WR_COEFF);
}

#[test]
fn only_queues_of_the_default_weight_are_raised() {
    // As 6.x (`entity.new_weight == 40` in bfq_bfqq_handle_idle_busy_switch): a weight set
    // by ioprio is the user's, and is not multiplied for a new or long-idle queue.
    let mut b = Bfq::new();
    let mut r = rq(1, 1, 0, Op::Read, 0, 8, 0);
    r.owner.prio = IoPrio::of_nice(19);
    b.insert(r, 0);
    assert_eq!(b.queues[0].entity.weight, 25.0, "level 7 weighs (8 - 7) x 25, not raised");
    let mut r = rq(2, 2, 0, Op::Read, 1_000_000, 8, 0);
    r.owner.prio = IoPrio { class: IoPrioClass::BestEffort, level: 4 };
    b.insert(r, 0);
    assert_eq!(b.queues[1].entity.weight, 100.0 * WR_COEFF, "the default weight is raised");
}

#[test]
fn a_raised_queue_of_another_group_does_not_preempt_a_group_of_equal_weight() {
    // bfq_bfqq_higher_class_or_weight compares the groups' weights for queues of different
    // groups: a new (raised) queue of group 2 does not expire group 1's queue in service,
    // while in the same group it does. The queue in service has level 5 (weight 75, so not
    // raised); the newcomer the default weight, raised 30 times.
    for (other_group, preempts) in [(2, false), (1, true)] {
        let mut b = Bfq::new();
        b.set_group(&Cgroup { id: 1, parent: Some(0), path: "a".into(), weight: 100 });
        b.set_group(&Cgroup { id: 2, parent: Some(0), path: "b".into(), weight: 100 });
        let level5 = |mut r: Request| {
            r.owner.prio = IoPrio { class: IoPrioClass::BestEffort, level: 5 };
            r
        };
        b.insert(level5(rq(1, 10, 1, Op::Read, 0, 8, 0)), 0);
        b.insert(level5(rq(2, 10, 1, Op::Read, 8, 8, 0)), 0);
        let Dispatch::Request(first) = b.dispatch(0) else { panic!("a request") };
        assert_eq!(first.owner.pid, 10);
        let t = 1_000_000;
        b.completed(&first, t);
        b.insert(rq(4, 20, other_group, Op::Read, 50_000_000, 8, t), t);
        // Preempted: the queue in service expired (the next choice is B-WF2Q+'s again).
        assert_eq!(b.in_service.is_none(), preempts, "group {other_group}");
    }
}

#[test]
fn an_empty_sync_queue_idles_then_expires() {
    // A sequential, I/O-bound queue on a disk: idling pays (idling_boosts_thr_without_issues;
    // with low_latency both new queues would be raised alike, and a symmetric pair of
    // raised queues is not idled for).
    let mut b = Bfq::new();
    b.set_tunable("low_latency", "0").unwrap();
    b.insert(rq(1, 1, 0, Op::Read, 0, 8, 0), 0);
    let Dispatch::Request(r) = b.dispatch(0) else { panic!() };
    // Its request is in flight: nothing else goes, a completion will call back.
    b.insert(rq(2, 2, 0, Op::Read, 90_000_000, 8, 0), 0);
    assert_eq!(b.dispatch(0), Dispatch::Empty);
    b.completed(&r, 100 * US);
    let idle = 8 * MS;
    assert_eq!(b.dispatch(100 * US), Dispatch::WaitUntil { until_ns: 100 * US + idle });
    // Its next request within slice_idle is served at once.
    b.insert(rq(3, 1, 0, Op::Read, 8, 8, 200 * US), 200 * US);
    assert!(matches!(b.dispatch(200 * US), Dispatch::Request(r) if r.id == RequestId(3)));
}

#[test]
fn idling_follows_bfq_better_to_idle() {
    // Two raised new queues alike: a symmetric scenario, no idling (the first expires as
    // soon as it runs dry); in different cgroups the scenario is asymmetric and BFQ idles,
    // 20 ms at least for a raised queue (bfq_arm_slice_timer).
    for (cgroup, idles) in [(0, false), (1, true)] {
        let mut b = Bfq::new();
        b.set_group(&Cgroup { id: 1, parent: Some(0), path: "a".into(), weight: 100 });
        b.insert(rq(1, 1, 0, Op::Read, 0, 8, 0), 0);
        let Dispatch::Request(r) = b.dispatch(0) else { panic!() };
        b.insert(rq(2, 2, cgroup, Op::Read, 90_000_000, 8, 0), 0);
        let next = b.dispatch(0);
        assert_eq!(matches!(next, Dispatch::Request(_)), !idles, "cgroup {cgroup}: {next:?}");
        if idles {
            b.completed(&r, 100 * US);
            let wait = b.dispatch(100 * US);
            assert_eq!(wait, Dispatch::WaitUntil { until_ns: 100 * US + 20 * MS }, "raised");
        }
    }
}

#[test]
fn tunables_by_their_sysfs_names() {
    let mut b = Bfq::new();
    let names: Vec<String> = b.tunables().into_iter().map(|t| t.name).collect();
    for n in [
        "slice_idle",
        "slice_idle_us",
        "timeout_sync",
        "max_budget",
        "back_seek_max",
        "back_seek_penalty",
        "fifo_expire_sync",
        "fifo_expire_async",
        "low_latency",
        "strict_guarantees",
    ] {
        assert!(names.iter().any(|x| x == n), "{n}");
    }
    assert_eq!(b.tunable("timeout_sync").unwrap(), "125");
    // slice_idle and slice_idle_us are one setting, the ms file rounding down.
    assert_eq!(b.tunable("slice_idle_us").unwrap(), "8000");
    b.set_tunable("slice_idle_us", "2500").unwrap();
    assert_eq!((b.tunable("slice_idle").unwrap(), b.slice_idle_ns()), ("2".into(), 2_500_000));
    b.set_tunable("slice_idle", "3").unwrap();
    assert_eq!(b.tunable("slice_idle_us").unwrap(), "3000");
    b.set_tunable("slice_idle", "0").unwrap();
    assert_eq!(b.slice_idle_ns(), 0);
    assert!(b.set_tunable("low_latency", "2").is_err());
    assert!(b.set_tunable("quantum", "4").unwrap_err().to_string().contains("slice_idle"));
}

#[test]
fn the_real_time_class_goes_first_and_the_idle_class_is_not_starved() {
    let rt = IoPrio { class: IoPrioClass::RealTime, level: 4 };
    let idle = IoPrio { class: IoPrioClass::Idle, level: 7 };
    let mut b = Bfq::new();
    b.set_tunable("low_latency", "0").unwrap();
    let served = serve_prio(&mut b, &[(10, 0), (20, 0)], &[rt, IoPrio::DEFAULT], 10_000_000_000);
    assert!(served[1] * 20 < served[0], "RT {} sectors, BE {}", served[0], served[1]);
    // The idle class gets a turn every BFQ_CL_IDLE_TIMEOUT: some service, far below BE's.
    // A fixed max_budget: auto-tuned on this 10 M sectors/s device one budget would last
    // the whole timeout_sync, and so would the idle class's turn every 200 ms.
    let mut b = Bfq::new();
    b.set_tunable("low_latency", "0").unwrap();
    b.set_tunable("max_budget", "16384").unwrap();
    let served = serve_prio(&mut b, &[(10, 0), (20, 0)], &[IoPrio::DEFAULT, idle], 10_000_000_000);
    assert!(served[1] > 0, "the idle class starved: {served:?}");
    assert!(served[1] * 5 < served[0], "BE {} sectors, idle {}", served[0], served[1]);
}

#[test]
fn ioprio_levels_weigh_queues() {
    // Level 0 weighs (8 − 0) against level 4's (8 − 4): twice the service.
    let mut b = Bfq::new();
    b.set_tunable("low_latency", "0").unwrap();
    let high = IoPrio { class: IoPrioClass::BestEffort, level: 0 };
    let served = serve_prio(&mut b, &[(10, 0), (20, 0)], &[high, IoPrio::DEFAULT], 20_000_000_000);
    let share = served[0] as f64 / (served[0] + served[1]) as f64;
    assert!((share - 2.0 / 3.0).abs() < 0.05, "level 0 got {share:.3} of {served:?}");
}

/// A backlogged sequential reader and a periodic one (64 sectors every 50 ms, under
/// `bfq_wr_max_softrt_rate`); returns the periodic reader's mean wait from insert to dispatch
/// after `from` ns, and the scheduler.
fn periodic_beside_backlogged(low_latency: &str, until: Nanos, from: Nanos) -> (f64, Bfq) {
    let mut b = Bfq::new();
    b.set_tunable("low_latency", low_latency).unwrap();
    let (mut id, mut now) = (0u64, 0);
    let mut pos = [0u64, 1 << 30];
    let mut next_periodic = 0;
    let mut inserted: BTreeMap<RequestId, Nanos> = BTreeMap::new();
    let (mut waits, mut n) = (0u64, 0u64);
    b.insert(rq(id, 10, 0, Op::Read, pos[0], 128, 0), 0);
    pos[0] += 128;
    while now < until {
        if now >= next_periodic {
            id += 1;
            b.insert(rq(id, 20, 0, Op::Read, pos[1], 64, now), now);
            inserted.insert(RequestId(id), now);
            pos[1] += 64;
            next_periodic += 50_000_000;
        }
        match b.dispatch(now) {
            Dispatch::Request(r) => {
                if let Some(t) = inserted.remove(&r.id) {
                    if now >= from {
                        waits += now - t;
                        n += 1;
                    }
                }
                now += r.sectors() * 100;
                b.completed(&r, now);
                if r.owner.pid == 10 {
                    id += 1;
                    b.insert(rq(id, 10, 0, Op::Read, pos[0], 128, now), now);
                    pos[0] += 128;
                }
            }
            Dispatch::WaitUntil { until_ns } => now = until_ns.min(next_periodic).max(now + 1),
            Dispatch::Empty => now = next_periodic,
        }
    }
    (waits as f64 / n.max(1) as f64, b)
}

#[test]
fn a_periodic_reader_is_raised_as_soft_real_time() {
    // After its interactive raising (at least 3 s) has ended, the periodic reader stays raised
    // as soft real-time — by the far stronger factor — and preempts the backlogged reader.
    let (wait_rt, b) = periodic_beside_backlogged("1", 10_000_000_000, 5_000_000_000);
    let q = b.by_key[&(0, 20, true)];
    assert_eq!(b.queues[q].wr_factor, WR_COEFF * SOFTRT_WEIGHT_FACTOR);
    let (wait_plain, _) = periodic_beside_backlogged("0", 10_000_000_000, 5_000_000_000);
    eprintln!(
        "periodic reader waits {wait_rt:.0} ns raised as soft-rt, {wait_plain:.0} ns without"
    );
    assert!(wait_rt * 5.0 < wait_plain, "soft-rt wait {wait_rt:.0} ns, without {wait_plain:.0} ns");
}

/// Two processes reading alternate 4 KiB blocks of one region (one at a time each, as psync
/// readers do): with early queue merging one queue serves both, in sector order.
fn interleaved(merging: bool) -> (Vec<u64>, Bfq) {
    let mut b = Bfq::new();
    b.set_tunable("low_latency", "0").unwrap();
    b.coop_merging = merging;
    let mut next = [0u64, 8];
    let mut order = Vec::new();
    let (mut id, mut now) = (0u64, 0);
    for (pid, n) in [(1u32, 0usize), (2, 1)] {
        b.insert(rq(id, pid, 0, Op::Read, next[n], 8, 0), 0);
        next[n] += 16;
        id += 1;
    }
    while order.len() < 200 {
        match b.dispatch(now) {
            Dispatch::Request(r) => {
                order.push(r.sector());
                now += 10 * US;
                b.completed(&r, now);
                let n = r.owner.pid as usize - 1;
                id += 1;
                b.insert(rq(id, r.owner.pid, 0, Op::Read, next[n], 8, now), now);
                next[n] += 16;
            }
            Dispatch::WaitUntil { until_ns } => now = until_ns,
            Dispatch::Empty => now += US,
        }
    }
    (order, b)
}

#[test]
fn cooperating_processes_share_one_queue() {
    let (order, b) = interleaved(true);
    assert_eq!(b.by_key[&(0, 1, true)], b.by_key[&(0, 2, true)], "the two keys share a queue");
    // Served as one stream: every block in turn, no process waiting out the other's budget.
    let tail = &order[order.len() - 50..];
    assert!(tail.windows(2).all(|w| w[1] == w[0] + 8), "{tail:?}");
    let (order, b) = interleaved(false);
    assert_ne!(b.by_key[&(0, 1, true)], b.by_key[&(0, 2, true)]);
    let tail = &order[order.len() - 50..];
    assert!(!tail.windows(2).all(|w| w[1] == w[0] + 8), "without merging each queue takes turns");
}

/// Two submitters `0` and `1`, each keeping four requests of `sectors` queued (made by
/// `make(id, which, sector, now)`, `which`'s issued from its own region on), on a device that
/// moves a sector in 100 ns, for `until`; returns the sectors each moved.
fn serve_two(
    b: &mut Bfq,
    sectors: u64,
    until: Nanos,
    make: impl Fn(u64, usize, u64, Nanos) -> Request,
) -> [u64; 2] {
    let mut pos = [0u64, 50_000_000];
    let mut id = 0;
    for (i, p) in pos.iter_mut().enumerate() {
        for _ in 0..4 {
            b.insert(make(id, i, *p, 0), 0);
            id += 1;
            *p += sectors;
        }
    }
    let mut moved = [0u64; 2];
    let mut now = 0;
    while now < until {
        match b.dispatch(now) {
            Dispatch::Request(r) => {
                now += r.sectors() * 100;
                b.completed(&r, now);
                let i = (r.owner.pid - 10) as usize;
                moved[i] += r.sectors();
                b.insert(make(id, i, pos[i], now), now);
                id += 1;
                pos[i] += sectors;
            }
            Dispatch::WaitUntil { until_ns } => now = until_ns,
            Dispatch::Empty => panic!("backlogged, nothing to dispatch"),
        }
    }
    moved
}

#[test]
fn async_writes_are_charged_three_times_their_sectors() {
    // A sync reader and an async writer, equal weights, both backlogged: charged alike, the
    // reader moves `ASYNC_CHARGE_FACTOR` times the writer's sectors (`bfq_serv_to_charge`).
    let mut b = Bfq::new();
    b.set_tunable("low_latency", "0").unwrap();
    let moved = serve_two(&mut b, 128, 20_000_000_000, |id, i, sector, now| {
        let (op, sync) = if i == 0 { (Op::Read, true) } else { (Op::Write, false) };
        let owner = Owner::process(10 + i as u32);
        Request::new(RequestId(id), op, sector * 512, 128 * 512, sync, owner, now).unwrap()
    });
    let ratio = moved[0] as f64 / moved[1] as f64;
    assert!((ratio - ASYNC_CHARGE_FACTOR as f64).abs() < 0.3, "reader/writer {ratio:.2} {moved:?}");
}

#[test]
fn max_budget_zero_follows_the_peak_rate() {
    // The test device moves 10 M sectors/s; a sequential reader lets BFQ measure it, and
    // max_budget = 0 makes the largest budget what it moves in timeout_sync (125 ms).
    let mut b = Bfq::new();
    b.set_tunable("low_latency", "0").unwrap();
    b.set_tunable("max_budget", "0").unwrap();
    assert_eq!(b.max_budget(), DEFAULT_MAX_BUDGET, "the kernel's value before an estimate");
    serve(&mut b, &[(10, 0)], 10_000_000_000);
    let want = 10e6 * 0.125;
    let got = b.max_budget() as f64;
    assert!((got - want).abs() < want * 0.05, "max_budget {got} sectors, want about {want}");
    // wr_duration scales inversely: at 700 × the reference rate, the 3 s floor.
    assert_eq!(b.wr_duration_ns(), 3_000_000_000);
}

/// A sequential reader (pid 1) thinking 1.05 ms between its requests beside a backlogged random
/// reader (pid 2) of another cgroup (an asymmetric scenario, where BFQ idles for the thinker
/// for its service guarantees), on a device that answers every request in 100 µs with any
/// number in flight. Returns the sectors each moved by `until` and how many requests were
/// injected.
fn thinker_beside_backlog(rotational: bool, until: Nanos) -> ([u64; 2], usize) {
    let mut b = Bfq::new();
    b.set_tunable("low_latency", "0").unwrap();
    b.set_rotational(rotational);
    b.set_group(&Cgroup { id: 1, parent: Some(0), path: "random".into(), weight: 100 });
    let (mut id, mut now) = (0u64, 0);
    let (mut a_pos, mut b_pos) = (0u64, 1u64);
    let mut random_pos = || {
        b_pos = (b_pos * 48_271) % 2_147_483_647;
        1_000_000 + (b_pos % 100_000_000) / 8 * 8
    };
    for _ in 0..4 {
        b.insert(rq(id, 2, 1, Op::Read, random_pos(), 8, 0), 0);
        id += 1;
    }
    let mut a_next = Some(0);
    let mut in_flight: Vec<(Nanos, Request)> = Vec::new();
    let (mut moved, mut injected) = ([0u64; 2], 0);
    loop {
        if a_next == Some(now) {
            b.insert(rq(id, 1, 0, Op::Read, a_pos, 8, now), now);
            (id, a_pos, a_next) = (id + 1, a_pos + 8, None);
        }
        let timer = loop {
            match b.dispatch(now) {
                Dispatch::Request(r) => {
                    injected += usize::from(b.last_decision().contains("injected"));
                    in_flight.push((now + 100 * US, r));
                }
                Dispatch::WaitUntil { until_ns } => break Some(until_ns),
                Dispatch::Empty => break None,
            }
        };
        let done = in_flight.iter().map(|f| f.0).min();
        let t = [done, a_next, timer].into_iter().flatten().min().expect("something to wait for");
        if t >= until {
            return (moved, injected);
        }
        now = t;
        while let Some(i) = in_flight.iter().position(|f| f.0 == now) {
            let (_, r) = in_flight.swap_remove(i);
            b.completed(&r, now);
            moved[r.owner.pid as usize - 1] += r.sectors();
            if r.owner.pid == 1 {
                a_next = Some(now + 1_050 * US);
            } else {
                b.insert(rq(id, 2, 1, Op::Read, random_pos(), 8, now), now);
                id += 1;
            }
        }
    }
}

#[test]
fn flash_idling_for_a_thinking_queue_injects_the_others_requests() {
    // On flash that queues, idling for the thinker only wastes the drive: the random reader's
    // requests go in its think time (`bfq_choose_bfqq_for_injection`), up to the adaptive
    // limit; on a disk, idling for a sequential reader pays, and nothing is injected.
    let (flash, injected) = thinker_beside_backlog(false, 2_000_000_000);
    let (disk, none) = thinker_beside_backlog(true, 2_000_000_000);
    assert_eq!(none, 0, "a disk idles for the sequential reader");
    assert!(injected > 1_000, "{injected} injected on flash");
    assert!(flash[1] > 2 * disk[1], "the random reader moved {} against {}", flash[1], disk[1]);
    // The thinker keeps (nearly) its pace: the injected requests take no more than the
    // limit allows from its service time.
    assert!(flash[0] * 10 >= disk[0] * 9, "thinker moved {} against {}", flash[0], disk[0]);
}

#[test]
fn the_inject_limit_follows_the_total_service_time() {
    // bfq_update_inject_limit: with injection, a request of the queue in service that takes
    // half as long again as with the drive to itself lowers the limit; a quicker one raises
    // it, and lowers the base value.
    let mut b = Bfq::new();
    b.insert(rq(0, 1, 0, Op::Read, 0, 8, 0), 0);
    b.max_rq_in_driver = 4;
    b.queues[0].last_serv_time_ns = 10 * MS;
    b.queues[0].inject_limit = 2;
    b.rqs_injected = true;
    b.last_empty_occupied_ns = 100 * MS;
    b.update_inject_limit(0, 2, 120 * MS);
    assert_eq!(b.queues[0].inject_limit, 1);
    assert_eq!(b.queues[0].decrease_time_ns, Some(120 * MS));
    assert!(!b.rqs_injected, "a sample consumed");
    b.rqs_injected = true;
    b.last_empty_occupied_ns = 200 * MS;
    b.update_inject_limit(0, 2, 208 * MS);
    assert_eq!(b.queues[0].inject_limit, 2);
    assert_eq!(b.queues[0].last_serv_time_ns, 8 * MS);
    // Unsampled (base 0) with only the timed request in the drive: the base is taken and
    // injection starts at one request.
    b.queues[0].last_serv_time_ns = 0;
    b.queues[0].inject_limit = 0;
    b.last_empty_occupied_ns = 300 * MS;
    b.update_inject_limit(0, 1, 309 * MS);
    assert_eq!((b.queues[0].inject_limit, b.queues[0].last_serv_time_ns), (1, 9 * MS));
}

/// `bfq_choose_req`: within a queue a metadata read (`REQ_META`) goes before a regular one
/// however far it is from the head.
#[test]
fn a_queue_sends_its_metadata_read_first() {
    let mut b = Bfq::new();
    b.insert(rq(1, 1, 0, Op::Read, 0, 8, 0), 0);
    let first = match b.dispatch(0) {
        Dispatch::Request(r) => r,
        other => panic!("{other:?}"),
    };
    b.completed(&first, 100 * US);
    b.insert(rq(2, 1, 0, Op::Read, 8, 8, 100 * US), 100 * US);
    let mut far = rq(3, 1, 0, Op::Read, 1 << 30, 8, 100 * US);
    far.meta = true;
    b.insert(far, 100 * US);
    match b.dispatch(100 * US) {
        Dispatch::Request(r) => assert_eq!(r.id, RequestId(3)),
        other => panic!("{other:?}"),
    }
}

/// `bfq_exit_bfqq`: when the process BFQ idles for exits, its queue's turn ends at once
/// (`__bfq_bfqq_expire`, its budget kept) and the next queue is served.
#[test]
fn the_exit_of_the_process_idled_for_ends_its_turn() {
    for (exiting, want_now) in [(1, true), (3, false)] {
        // Not raised: a sequential reader on a disk is idled for (see
        // an_empty_sync_queue_idles_then_expires).
        let mut b = Bfq::new();
        b.set_tunable("low_latency", "0").unwrap();
        b.insert(rq(1, 1, 0, Op::Read, 0, 8, 0), 0);
        b.insert(rq(2, 2, 0, Op::Read, 1 << 30, 8, 0), 0);
        let first = match b.dispatch(0) {
            Dispatch::Request(r) => r,
            other => panic!("{other:?}"),
        };
        assert_eq!(first.owner.pid, 1);
        b.completed(&first, 100 * US);
        assert!(matches!(b.dispatch(100 * US), Dispatch::WaitUntil { .. }), "idling for pid 1");
        let budget = b.queues[b.by_key[&(0, 1, true)]].entity.budget;
        assert_eq!(b.exited(exiting, 100 * US), want_now);
        match b.dispatch(100 * US) {
            Dispatch::Request(r) => {
                assert!(want_now);
                assert_eq!(r.owner.pid, 2);
                assert_eq!(b.queues[b.by_key[&(0, 1, true)]].entity.budget, budget);
            }
            other => assert!(!want_now, "{other:?}"),
        }
        b.check_invariants().unwrap();
    }
}

/// `bfq_async_queue_prio`: async writes of best-effort level 0 and level 7 go to two queues
/// of their group, weighed 200 and 25, so the first gets most of the disk; a task without a
/// class shares the level-4 queue.
#[test]
fn async_writes_of_different_priorities_get_queues_of_their_own() {
    let mut b = Bfq::new();
    let prios = [
        IoPrio { class: elevator_core::IoPrioClass::BestEffort, level: 0 },
        IoPrio { class: elevator_core::IoPrioClass::BestEffort, level: 7 },
    ];
    let served = serve_two(&mut b, 256, 10_000_000_000, |id, i, sector, now| {
        let mut owner = Owner::process(10 + i as u32);
        owner.prio = prios[i];
        Request::new(RequestId(id), Op::Write, sector * 512, 256 * 512, false, owner, now).unwrap()
    });
    assert!(b.by_key.contains_key(&(0, 8, false)) && b.by_key.contains_key(&(0, 15, false)));
    assert!(served[0] > 4 * served[1], "level 0 against level 7: {served:?}");
    let mut none = Owner::process(30);
    none.prio = IoPrio::DEFAULT;
    let r = Request::new(RequestId(1 << 40), Op::Write, 0, 4096, false, none, 0).unwrap();
    assert_eq!(async_slot(&r), 12, "IOPRIO_BE_NORM");
}
