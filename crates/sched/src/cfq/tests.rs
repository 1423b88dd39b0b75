//! Unit tests of CFQ's rules, each against the kernel function it mirrors.

use super::*;
use elevator_core::{IoPrio, Op, Owner, NS_PER_US};
use queue::ThinkTime;

fn rq(id: u64, pid: u32, cgroup: u32, sector: u64, sync: bool, now: Nanos) -> Request {
    let mut owner = Owner::process(pid);
    owner.cgroup = cgroup;
    let op = if sync { Op::Read } else { Op::Write };
    Request::new(RequestId(id), op, sector * 512, 4096, sync, owner, now).unwrap()
}

fn expect_rq(s: &mut Cfq, now: Nanos) -> Request {
    match s.dispatch(now) {
        Dispatch::Request(r) => r,
        other => panic!("expected a request at {now}, got {other:?}"),
    }
}

/// CFQ without `low_latency`, of one era: "0" (`workload_trees` 0) is 2.6.31's, "2.6.32"
/// `workload_trees` 0 with `rules_2_6_32`, "2.6.29" with `rules_2_6_29` (and no cooperators),
/// "1" 2.6.38's, "rules_3_2" 3.2's.
fn cfq_of_era(era: &str) -> Cfq {
    let mut s = Cfq::new();
    s.set_tunable("low_latency", "0").unwrap();
    let (trees, rules_2_6_32, rules_3_2) = match era {
        "2.6.32" => ("0", "1", "0"),
        "rules_3_2" => ("1", "0", "1"),
        "2.6.29" => ("0", "0", "0"),
        _ => (era, "0", "0"),
    };
    s.set_tunable("workload_trees", trees).unwrap();
    s.set_tunable("rules_2_6_32", rules_2_6_32).unwrap();
    s.set_tunable("rules_3_2", rules_3_2).unwrap();
    if era == "2.6.29" {
        s.set_tunable("queue_merging", "0").unwrap();
        s.set_tunable("rules_2_6_29", "1").unwrap();
    }
    s
}

#[test]
fn prio_slice_scales_with_level() {
    let s = Cfq::new();
    assert_eq!(s.prio_slice(true, 0), 180 * NS_PER_MS);
    assert_eq!(s.prio_slice(true, 4), 100 * NS_PER_MS);
    assert_eq!(s.prio_slice(true, 7), 40 * NS_PER_MS);
    assert_eq!(s.prio_slice(false, 4), 40 * NS_PER_MS);
    assert_eq!(s.prio_slice(false, 0), 72 * NS_PER_MS);
}

#[test]
fn a_niced_task_s_queues_follow_task_nice_ioprio_but_its_async_slot_does_not() {
    // cfq_init_prio_data: a task that set no ioprio gets its nice value's level for its
    // queues; cfq_get_queue files its async requests in the best-effort IOPRIO_NORM slot
    // (task_ioprio, task_ioprio_class) whoever shares it.
    let mut s = Cfq::new();
    let niced = |id, pid, sync| {
        let mut r = rq(id, pid, 0, id * 1_000, sync, 0);
        r.owner.prio = IoPrio::of_nice(19);
        r
    };
    s.insert(niced(1, 1, true), 0);
    s.insert(niced(2, 1, false), 0);
    let mut plain = rq(3, 2, 0, 3_000, false, 0);
    plain.owner.prio = IoPrio::DEFAULT;
    s.insert(plain, 0);
    let sync_q = s.sync_map[&(1, 0)];
    assert_eq!((s.queues[sync_q].class, s.queues[sync_q].prio), (BE, 7));
    assert_eq!(s.async_map.len(), 1, "one async queue: {:?}", s.async_map.keys());
    let (&key, &aq) = s.async_map.iter().next().unwrap();
    assert_eq!(key, (0, BE, 4));
    assert_eq!(s.queues[aq].prio, 7, "the niced task created it");
}

#[test]
fn slice_starts_at_first_completion_and_ends_to_next_queue() {
    let mut s = Cfq::new();
    s.set_tunable("low_latency", "0").unwrap();
    let (mut now, mut id) = (0, 0);
    let mut next = [0u64, 1_000_000];
    for (pid, n) in [(1u32, 0usize), (2, 1)] {
        id += 1;
        s.insert(rq(id, pid, 0, next[n], true, now), now);
        next[n] += 8;
    }
    let first = expect_rq(&mut s, now);
    let owner = first.owner.pid;
    now += 100 * NS_PER_US;
    s.completed(&first, now);
    let (_, _, _, slice) = s.active_queue_info().unwrap();
    assert_eq!(slice, 100 * NS_PER_MS, "BE level 4 sync slice");
    // Keep the active process busy: it owns the disk until its slice is used up.
    let mut switched_at = None;
    for _ in 0..5000 {
        let n = (owner - 1) as usize;
        id += 1;
        s.insert(rq(id, owner, 0, next[n], true, now), now);
        next[n] += 8;
        let r = expect_rq(&mut s, now);
        now += 100 * NS_PER_US;
        s.completed(&r, now);
        if r.owner.pid != owner {
            switched_at = Some(now);
            break;
        }
    }
    let t = switched_at.expect("the other queue got its turn");
    assert!((100 * NS_PER_MS..=102 * NS_PER_MS).contains(&t), "switched at {t}");
}

#[test]
fn sequential_reader_gets_idle_window_and_seeky_one_does_not() {
    let mut s = Cfq::new();
    let mut now = 0;
    // Process 1: sequential, think time 0. Process 2: random. Closed loop, one request each.
    let mut rng = 12345u64;
    let mut next_seq = 0u64;
    let mut id = 0u64;
    let mut submit = |s: &mut Cfq, pid: u32, now: Nanos| {
        let sector = if pid == 1 {
            next_seq += 8;
            next_seq
        } else {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (rng >> 20) % 100_000_000
        };
        id += 1;
        s.insert(rq(id, pid, 0, sector, true, now), now);
    };
    submit(&mut s, 1, 0);
    submit(&mut s, 2, 0);
    let mut served = [0u32; 3];
    for _ in 0..20_000 {
        match s.dispatch(now) {
            Dispatch::Request(r) => {
                served[r.owner.pid as usize] += 1;
                now += 200 * NS_PER_US;
                s.completed(&r, now);
                submit(&mut s, r.owner.pid, now);
            }
            Dispatch::WaitUntil { until_ns } => now = until_ns,
            Dispatch::Empty => panic!("stuck"),
        }
    }
    assert!(served[2] > 40, "{served:?}");
    assert_eq!(s.idle_window(1, 0), Some(true));
    assert_eq!(s.idle_window(2, 0), Some(false), "seeky queue loses its idle window");
}

#[test]
fn idles_after_last_request_of_sequential_reader() {
    let mut s = Cfq::new();
    s.insert(rq(1, 1, 0, 0, true, 0), 0);
    s.insert(rq(2, 2, 0, 1 << 30, true, 0), 0);
    let r = expect_rq(&mut s, 0);
    assert_eq!(s.dispatch(0), Dispatch::Empty, "one request in flight, idling on it");
    s.completed(&r, 1000);
    assert_eq!(s.dispatch(1000), Dispatch::WaitUntil { until_ns: 1000 + 8 * NS_PER_MS });
    // A close request from the same process ends the wait.
    s.insert(rq(3, r.owner.pid, 0, r.end_sector(), true, 2000), 2000);
    let r3 = expect_rq(&mut s, 2000);
    assert_eq!(r3.id, RequestId(3));
    // If the process stays silent, the idle timer expires and the other queue runs.
    s.completed(&r3, 3000);
    let until = match s.dispatch(3000) {
        Dispatch::WaitUntil { until_ns } => until_ns,
        other => panic!("{other:?}"),
    };
    let other = expect_rq(&mut s, until);
    assert_ne!(other.owner.pid, r.owner.pid);
}

#[test]
fn an_idling_queue_must_get_a_request_slot_once_a_slice() {
    let mut s = Cfq::new();
    s.insert(rq(1, 1, 0, 0, true, 0), 0);
    s.insert(rq(2, 2, 0, 1 << 30, true, 0), 0);
    let r = expect_rq(&mut s, 0);
    let (me, other) = (r.owner, Owner::process(if r.owner.pid == 1 { 2 } else { 1 }));
    assert!(!s.must_queue(&me, true, 500), "not idling while its request is out");
    s.completed(&r, 1000);
    assert!(matches!(s.dispatch(1000), Dispatch::WaitUntil { .. }));
    assert!(!s.must_queue(&other, true, 1500), "only the queue CFQ idles for");
    assert!(!s.must_queue(&me, false, 1500), "and only its sync requests");
    assert!(s.must_queue(&me, true, 1500), "CFQ idles for it: it must get a slot");
    assert!(!s.must_queue(&me, true, 1600), "once a slice (must_alloc_slice)");
}

#[test]
fn sync_request_preempts_async_queue() {
    let mut s = Cfq::new();
    for i in 0..8 {
        s.insert(rq(i + 1, 9, 0, i * 8, false, 0), 0);
    }
    let w = expect_rq(&mut s, 0);
    assert!(!w.sync);
    s.insert(rq(100, 1, 0, 5_000_000, true, 10), 10);
    s.completed(&w, 20);
    let r = expect_rq(&mut s, 20);
    assert_eq!(r.id, RequestId(100), "sync preempts async");
}

#[test]
fn rt_queue_preempts_be_queue() {
    let mut s = Cfq::new();
    for i in 0..4 {
        s.insert(rq(i + 1, 1, 0, i * 8, true, 0), 0);
    }
    let a = expect_rq(&mut s, 0);
    let mut rt = rq(50, 2, 0, 9_000_000, true, 5);
    rt.owner.prio = IoPrio { class: IoPrioClass::RealTime, level: 0 };
    s.insert(rt, 5);
    s.completed(&a, 10);
    assert_eq!(expect_rq(&mut s, 10).id, RequestId(50));
}

#[test]
fn group_charge_is_scaled_by_weight() {
    let mut s = Cfq::new();
    s.set_group(&Cgroup { id: 1, parent: Some(0), path: "w1000".into(), weight: 1000 });
    s.set_group(&Cgroup { id: 2, parent: Some(0), path: "w250".into(), weight: 250 });
    s.insert(rq(1, 1, 1, 0, true, 0), 0);
    s.insert(rq(2, 2, 2, 0, true, 0), 0);
    let before: Vec<u64> = s.group_stats().iter().map(|(_, st)| st.vdisktime).collect();
    let mut now = 0;
    let mut served = std::collections::BTreeSet::new();
    while let Dispatch::Request(r) = s.dispatch(now) {
        now += NS_PER_MS;
        s.completed(&r, now);
        served.insert(r.owner.cgroup);
        // Let the idle/wait-busy periods run out so each queue expires.
        if let Dispatch::WaitUntil { until_ns } = s.dispatch(now) {
            now = until_ns;
        }
    }
    assert_eq!(served.len(), 2);
    let stats = s.group_stats();
    for (i, (_, st)) in stats.iter().enumerate().skip(1) {
        let charged = st.vdisktime - before[i];
        // The group left the tree after its slice: vdisktime = charge * 500 / weight (the
        // re-entry offset is applied only when it comes back).
        assert_eq!(charged, st.time_ns * 500 / u64::from(st.weight), "group {i}");
        assert!(st.dequeue >= 1);
    }
}

#[test]
fn vanilla_mode_ignores_cgroups() {
    let mut s = Cfq::new();
    s.set_tunable("group_scheduling", "0").unwrap();
    s.set_group(&Cgroup { id: 1, parent: Some(0), path: "a".into(), weight: 100 });
    s.insert(rq(1, 1, 1, 0, true, 0), 0);
    s.insert(rq(2, 2, 1, 800, true, 0), 0);
    let mut now = 0;
    for _ in 0..10 {
        match s.dispatch(now) {
            Dispatch::Request(r) => s.completed(&r, now + 1),
            Dispatch::WaitUntil { until_ns } => now = until_ns,
            Dispatch::Empty => break,
        }
        now += 1;
    }
    let stats = s.group_stats();
    assert_eq!(stats[0].1.io_serviced.total(), 2, "all I/O charged to the root group");
    assert_eq!(stats[1].1.io_serviced.total(), 0);
}

#[test]
fn tunables_round_trip() {
    let mut s = Cfq::new();
    assert_eq!(s.tunable("slice_idle").unwrap(), "8");
    assert_eq!(s.tunable("back_seek_max").unwrap(), "16384");
    s.set_tunable("slice_sync", "50").unwrap();
    assert_eq!(s.tunable("slice_sync").unwrap(), "50");
    assert!(s.set_tunable("low_latency", "2").is_err());
    assert!(s.set_tunable("nope", "1").is_err());
}

/// Two groups (weights 1000 and 500), one process each keeping 32 random reads outstanding on
/// a device that runs 8 at a time; the heavy group's requests take 4x longer. Returns the
/// requests served per group and whether CFQ switched to IOPS mode.
fn weighted_groups_on_queueing_device(slice_idle: &str) -> ([u64; 3], bool) {
    let mut s = Cfq::new();
    s.set_tunable("slice_idle", slice_idle).unwrap();
    s.set_group(&Cgroup { id: 1, parent: Some(0), path: "heavy".into(), weight: 1000 });
    s.set_group(&Cgroup { id: 2, parent: Some(0), path: "light".into(), weight: 500 });
    let served = served_on_queueing_device(&mut s, [1, 2], [400, 100]);
    eprintln!("slice_idle={slice_idle}: served {served:?}, iops mode {}", s.iops_mode());
    (served, s.iops_mode())
}

/// One process in each of `cgroups` (ids below 3) keeps 32 random reads outstanding for
/// 20 s on a device that runs 8 at a time, each group's taking its `latency_us`; the requests
/// served per cgroup id. Quantum is 2.6.33+'s 8, so that a queue may fill the device's 8
/// slots (`hw_tag` needs more than 5).
fn served_on_queueing_device(s: &mut Cfq, cgroups: [u32; 2], latency_us: [u64; 2]) -> [u64; 3] {
    s.set_tunable("quantum", "8").unwrap();
    let (mut now, mut id, mut rng) = (0u64, 0u64, 42u64);
    let mut submit = |s: &mut Cfq, cg: u32, now: Nanos| {
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        id += 1;
        // Process ids 1 and 2, whatever the group.
        let pid = 1 + cgroups.iter().position(|&c| c == cg).unwrap() as u32;
        s.insert(rq(id, pid, cg, (rng >> 24) % 10_000_000 * 8, true, now), now);
    };
    for cg in cgroups {
        for _ in 0..32 {
            submit(s, cg, 0);
        }
    }
    let mut inflight: Vec<(Nanos, Request)> = Vec::new();
    let mut served = [0u64; 3];
    while now < 20_000 * NS_PER_MS {
        let mut wake = None;
        while inflight.len() < 8 {
            match s.dispatch(now) {
                Dispatch::Request(r) => {
                    let i = cgroups.iter().position(|&c| c == r.owner.cgroup).unwrap();
                    inflight.push((now + latency_us[i] * NS_PER_US, r));
                }
                Dispatch::WaitUntil { until_ns } => {
                    wake = Some(until_ns);
                    break;
                }
                Dispatch::Empty => break,
            }
        }
        let next = inflight.iter().map(|(t, _)| *t).min();
        now = match (next, wake) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => panic!("stuck at {now}"),
        };
        while let Some(i) = inflight.iter().position(|(t, _)| *t <= now) {
            let (_, r) = inflight.swap_remove(i);
            s.completed(&r, now);
            served[r.owner.cgroup as usize] += 1;
            submit(s, r.owner.cgroup, now);
        }
    }
    served
}

/// 2.6.33+ give the root group twice the default weight (`cfq_init_queue`): a task in the
/// root cgroup gets two thirds of the requests beside one in a default-weight group. Under
/// 2.6.31's rules, or once a setting gives the root its weight, it weighs what it is given.
#[test]
fn the_root_group_weighs_twice_the_default_from_2_6_33() {
    let root_share = |s: &mut Cfq| {
        s.set_tunable("slice_idle", "0").unwrap();
        s.set_group(&Cgroup { id: 2, parent: Some(0), path: "g".into(), weight: 500 });
        let served = served_on_queueing_device(s, [0, 2], [100, 100]);
        assert!(s.iops_mode());
        served[0] as f64 / (served[0] + served[2]) as f64
    };
    let mut s = Cfq::new();
    assert_eq!(s.group_stats()[0].1.weight, 1000);
    let share = root_share(&mut s);
    assert!((share - 2.0 / 3.0).abs() < 0.02, "root share {share}");
    let mut s = Cfq::new();
    s.set_group(&Cgroup::root());
    assert_eq!(s.group_stats()[0].1.weight, 500, "a root setting wins");
    let share = root_share(&mut s);
    assert!((share - 0.5).abs() < 0.02, "root share {share} at weight 500");
    let mut s = Cfq::new();
    s.set_tunable("workload_trees", "0").unwrap();
    assert_eq!(s.group_stats()[0].1.weight, 500, "2.6.31's rules");
    s.set_tunable("workload_trees", "1").unwrap();
    assert_eq!(s.group_stats()[0].1.weight, 1000);
}

#[test]
fn iops_mode_shares_requests_by_weight() {
    let (served, iops) = weighted_groups_on_queueing_device("0");
    assert!(iops, "slice_idle=0 on a queueing device is IOPS mode");
    let share = served[1] as f64 / (served[1] + served[2]) as f64;
    assert!((share - 2.0 / 3.0).abs() < 0.02, "heavy share {share} of requests, {served:?}");
    // In time mode the same weights share disk *time* 2:1: the slow group gets fewer requests.
    let (served, iops) = weighted_groups_on_queueing_device("8");
    assert!(!iops);
    let share = served[1] as f64 / (served[1] + served[2]) as f64;
    assert!(share < 0.5, "time mode: heavy share {share} of requests, {served:?}");
}

/// 2.6.31 (`workload_trees` 0) keeps one service tree per class: an async queue and a seeky
/// sync queue share the sync tree, and no tree-end idling is done for the seeky one.
#[test]
fn without_workload_trees_every_queue_shares_one_tree_per_class() {
    for (trees, want_async) in [("1", WL_ASYNC), ("0", WL_SYNC)] {
        let mut s = Cfq::new();
        s.set_tunable("workload_trees", trees).unwrap();
        s.insert(rq(1, 1, 0, 0, false, 0), 0); // async write
        s.insert(rq(2, 2, 0, 1 << 30, true, 0), 0); // sync read
        let aq = *s.async_map.values().next().unwrap();
        let sq = *s.sync_map.values().next().unwrap();
        assert_eq!(s.wl(aq), want_async, "workload_trees={trees}");
        // A queue without an idle window (a seeky one) is never idled on in 2.6.31.
        s.queues[sq].idle_window = false;
        if trees == "0" {
            assert!(!s.should_idle(sq));
        }
    }
    assert!(Cfq::new().tunables().iter().any(|t| t.name == "workload_trees"));
}

/// Two processes sharing one stream (a server's threads): each has one block in flight,
/// block k is read by process 1 + k % 2, and a process asks for its next block (k + 2) when
/// block k is done. Returns the scheduler and how long the blocks took in all.
fn interleaved_stream(queue_merging: &str) -> (Cfq, Nanos) {
    let mut s = Cfq::new();
    s.set_tunable("queue_merging", queue_merging).unwrap();
    let mut now = 0;
    // A third, far-away reader keeps a second queue busy in the group.
    s.insert(rq(10_000, 3, 0, 50_000_000, true, now), now);
    s.insert(rq(1, 1, 0, 0, true, now), now);
    s.insert(rq(2, 2, 0, 8, true, now), now);
    let mut in_flight: Vec<(Nanos, Request)> = Vec::new();
    let mut done = 0;
    while done < 64 {
        // The disk takes 100 µs per request, two at a time.
        while in_flight.len() < 2 {
            match s.dispatch(now) {
                Dispatch::Request(r) => in_flight.push((now + 100 * NS_PER_US, r)),
                Dispatch::WaitUntil { until_ns } if in_flight.is_empty() => now = until_ns,
                _ => break,
            }
        }
        in_flight.sort_by_key(|(t, r)| (*t, r.id));
        let (t, r) = in_flight.remove(0);
        now = now.max(t);
        s.completed(&r, now);
        let next = r.sector() + if r.owner.pid == 3 { 8 } else { 16 };
        if r.owner.pid != 3 {
            done += 1;
        }
        s.insert(rq(r.id.0 + 2, r.owner.pid, 0, next, true, now), now);
    }
    (s, now)
}

#[test]
fn close_cooperators_are_served_without_idling_and_merged() {
    let (s, _) = interleaved_stream("1");
    let q1 = s.sync_map[&(1, 0)];
    let q2 = s.sync_map[&(2, 0)];
    assert_eq!(q1, q2, "the two processes share one queue");
    assert!(s.queues[q1].coop);
    assert_eq!(s.queues[q1].process_refs, 2);
    let (s, _) = interleaved_stream("0");
    assert_ne!(s.sync_map[&(1, 0)], s.sync_map[&(2, 0)], "queue_merging=0: never");
}

#[test]
fn a_merged_queue_that_turns_seeky_splits_at_the_next_request() {
    let (mut s, mut now) = interleaved_stream("1");
    let q = s.sync_map[&(1, 0)];
    // The shared queue now seeks all over the disk.
    for k in 0..40u64 {
        s.insert(
            rq(100_000 + k, 1 + (k % 2) as u32, 0, (k * 7_919_993) % 90_000_000, true, now),
            now,
        );
        while let Dispatch::Request(r) = s.dispatch(now) {
            now += 5 * NS_PER_MS;
            s.completed(&r, now);
        }
    }
    // Its slice ended while it was seeky (`split_coop`); the next request of one process
    // took that process out to a queue of its own, and the other keeps the old queue.
    assert_ne!(s.sync_map[&(1, 0)], s.sync_map[&(2, 0)], "split again");
    assert!(s.sync_map.values().any(|&x| x == q));
    assert_eq!(s.queues[q].process_refs, 1);
    assert!(!s.queues[q].coop);
}

/// CFQ of an era in which pid 1's slice has begun (its first read completed at 1 µs) and its
/// second read is queued.
fn pid_1_slice_begun(workload_trees: &str) -> Cfq {
    let mut s = cfq_of_era(workload_trees);
    s.insert(rq(1, 1, 0, 0, true, 0), 0);
    let first = expect_rq(&mut s, 0);
    s.completed(&first, 1000);
    s.insert(rq(2, 1, 0, 8, true, 1000), 1000);
    s
}

/// `cfq_arm_slice_timer`'s "requests in flight" rule, per era: S's slice runs out with one of
/// its requests still at the device; R's first request completes while S's is still out.
fn idles_with_another_queue_s_request_in_flight(workload_trees: &str) -> Dispatch {
    let mut s = pid_1_slice_begun(workload_trees);
    let r2 = expect_rq(&mut s, 1000);
    assert_eq!(r2.owner.pid, 1);
    s.insert(rq(3, 2, 0, 1 << 30, true, 2000), 2000);
    let late = 200 * NS_PER_MS;
    let r3 = expect_rq(&mut s, late);
    assert_eq!(r3.owner.pid, 2, "the slice of pid 1 ran out: pid 2's turn");
    s.completed(&r3, late + 1000);
    s.dispatch(late + 1000)
}

#[test]
fn before_2_6_33_no_queue_idles_while_any_request_is_in_the_driver() {
    // 2.6.33+ (8e550632, "fix corner cases in idling logic"): only the queue's own requests
    // in flight keep it from idling.
    assert_eq!(
        idles_with_another_queue_s_request_in_flight("1"),
        Dispatch::WaitUntil { until_ns: 200 * NS_PER_MS + 1000 + 8 * NS_PER_MS }
    );
    // 2.6.31: `if (cfqd->rq_in_driver) return;` - pid 1's request is still out.
    assert_eq!(idles_with_another_queue_s_request_in_flight("0"), Dispatch::Empty);
}

/// How many of pid 1's four queued reads go out at once while pid 2 has a read queued.
fn sent_at_once_beside_another_busy_queue(workload_trees: &str) -> usize {
    let mut s = cfq_of_era(workload_trees);
    for i in 0..4 {
        s.insert(rq(i + 1, 1, 0, i * 8, true, 0), 0);
    }
    s.insert(rq(10, 2, 0, 1 << 30, true, 0), 0);
    let mut sent = 0;
    while let Dispatch::Request(r) = s.dispatch(0) {
        assert_eq!(r.owner.pid, 1, "pid 1's queue is served first");
        sent += 1;
    }
    sent
}

#[test]
fn before_2_6_33_a_queue_sends_quantum_requests_whatever_its_slice() {
    // 2.6.33+ `cfq_may_dispatch`: quantum / 2 while the slice may run out soon, and a new
    // slice (not started until the first completion) counts as that.
    assert_eq!(sent_at_once_beside_another_busy_queue("1"), 2);
    // 2.6.31 `cfq_dispatch_requests`: up to `quantum` (4), then no more while other queues
    // are busy.
    assert_eq!(sent_at_once_beside_another_busy_queue("0"), 4);
}

/// Whether an idle-class request arriving after the active slice ran out preempts it.
fn idle_class_preempts_a_used_slice(workload_trees: &str) -> bool {
    let mut s = pid_1_slice_begun(workload_trees);
    assert!(s.active.is_some(), "pid 1's slice runs from its first completion");
    let late = 1000 + 200 * NS_PER_MS;
    let mut idle = rq(3, 2, 0, 1 << 30, true, late);
    idle.owner.prio = IoPrio { class: IoPrioClass::Idle, level: 7 };
    s.insert(idle, late);
    // A preemption expires the active slice at once.
    s.active.is_none()
}

#[test]
fn in_2_6_31_any_request_preempts_a_used_up_slice() {
    // 2.6.31 `cfq_should_preempt` asks `cfq_slice_used` before anything else.
    assert!(idle_class_preempts_a_used_slice("0"));
    // 2.6.33+: an idle-class queue never preempts.
    assert!(!idle_class_preempts_a_used_slice("1"));
}

/// The service-tree key of pid 3's queue as it joins pid 1's and pid 2's busy ones at 5 ms,
/// less 5 ms: its `cfq_slice_offset`.
fn third_queue_offset(workload_trees: &str) -> i64 {
    let mut s = cfq_of_era(workload_trees);
    s.insert(rq(1, 1, 0, 0, true, 0), 0);
    s.insert(rq(2, 2, 0, 1 << 20, true, 0), 0);
    let now = 5 * NS_PER_MS;
    let third = rq(3, 3, 0, 1 << 30, true, now);
    let q = s.queue_for(&third, 0);
    s.insert(third, now);
    let (_, key) = s.queues[q].st.expect("on a service tree");
    key.0 - now as i64
}

#[test]
fn before_2_6_33_the_slice_offset_counts_every_busy_queue() {
    // (180 - 100) ms per queue: 2.6.31 counts the busy queues with the new one, less one;
    // 2.6.33+ its group's queues before it joins, less one.
    assert_eq!(third_queue_offset("0"), 160 * NS_PER_MS as i64);
    assert_eq!(third_queue_offset("1"), 80 * NS_PER_MS as i64);
}

/// What CFQ does when pid 1, reading with 5 ms of think time, completes a read with less than
/// 5 ms of its slice left while pid 2 waits with a far read.
fn near_its_slice_end(workload_trees: &str) -> Dispatch {
    let mut s = cfq_of_era(workload_trees);
    s.insert(rq(1, 1, 0, 0, true, 0), 0);
    s.insert(rq(2, 2, 0, 1 << 30, true, 0), 0);
    let mut r = expect_rq(&mut s, 0);
    assert_eq!(r.owner.pid, 1);
    let mut now = 100 * NS_PER_US;
    s.completed(&r, now);
    // The slice runs 100 ms from that first completion.
    let slice_end = now + 100 * NS_PER_MS;
    let think = 5 * NS_PER_MS;
    for id in 3.. {
        now += think;
        s.insert(rq(id, 1, 0, id * 8, true, now), now);
        r = expect_rq(&mut s, now);
        assert_eq!(r.owner.pid, 1, "pid 1 keeps its slice");
        now += 100 * NS_PER_US;
        s.completed(&r, now);
        if slice_end - now < think {
            break;
        }
    }
    s.dispatch(now)
}

#[test]
fn before_2_6_33_a_queue_idles_whatever_is_left_of_its_slice() {
    // 2.6.33+ `cfq_arm_slice_timer`: the think time outlasts the slice, so no idling: pid 2.
    assert!(matches!(near_its_slice_end("1"), Dispatch::Request(r) if r.owner.pid == 2));
    // 2.6.31: it idles for pid 1's next read.
    assert!(matches!(near_its_slice_end("0"), Dispatch::WaitUntil { .. }));
    // v2.6.32 brought the think-time check into `cfq_arm_slice_timer`.
    assert!(matches!(near_its_slice_end("2.6.32"), Dispatch::Request(r) if r.owner.pid == 2));
}

#[test]
fn a_context_s_2_6_31_seek_mean_is_the_kernel_s_fixed_point_arithmetic() {
    // cfq_update_io_seektime, 2.6.31: no distance for the first request; then a 7/8
    // decaying mean, the distance clamped to 4 * mean + 1 GiB while samples <= 60.
    let mut c = Cic::default();
    let at = |id: u64, sector: u64| rq(id, 1, 0, sector, true, 0);
    c.update_seek_2631(&at(1, 1000));
    assert_eq!((c.seek_samples, c.seek_total, c.seek_mean), (32, 0, 0));
    assert_eq!(c.last_request_pos, 1008, "the request's end");
    c.update_seek_2631(&at(2, 1_001_008));
    assert_eq!((c.seek_samples, c.seek_total, c.seek_mean), (60, 32_000_000, 533_333));
    c.update_seek_2631(&at(3, 2_001_016));
    assert_eq!((c.seek_samples, c.seek_total, c.seek_mean), (84, 60_000_000, 714_286));
    assert!(c.seeky_2631() && c.seek_sample_valid());
    // Past 60 samples the clamp is 4 * mean + 32 MiB: a 1 TiB jump counts 2,988,216.
    c.update_seek_2631(&at(4, 1 << 31));
    assert_eq!(c.seek_total, (7 * 60_000_000 + 256 * (4 * 714_286 + 131_072)) / 8);
}

/// 2.6.31 judges seekiness by the context's mean seek (`CIC_SEEKY`, over 8192 sectors), not
/// by how many of the last requests were seeks past 800 sectors: reads 2,000 sectors apart
/// keep their idle window, and CFQ idles for the next one while pid 2 waits.
#[test]
fn in_2_6_31_short_seeks_keep_the_idle_window() {
    let mut s = cfq_of_era("0");
    s.insert(rq(1, 1, 0, 0, true, 0), 0);
    s.insert(rq(100, 2, 0, 1 << 30, true, 0), 0);
    let mut now = 0;
    for k in 0..12u64 {
        if k > 0 {
            s.insert(rq(k + 1, 1, 0, k * 2000, true, now), now);
        }
        let r = expect_rq(&mut s, now);
        assert_eq!(r.owner.pid, 1, "pid 1 keeps the disk");
        now += 500 * NS_PER_US;
        s.completed(&r, now);
        now += 500 * NS_PER_US;
    }
    let q = s.active.expect("pid 1's queue is active");
    assert!(s.queues[q].seeky(), "seeky by the 2.6.33+ history");
    assert!(s.queues[q].idle_window, "not seeky by 2.6.31's mean");
    assert!(matches!(s.dispatch(now), Dispatch::WaitUntil { .. }));
}

/// 2.6.30–31's cooperator switch (`cfq_select_queue` → `cfq_close_cooperator`): pid 1's queue
/// runs empty while pid 2's read waits 8 sectors past the head, so pid 2 is served at once,
/// without idling for pid 1 and without merging the queues; with `queue_merging=0` pid 1
/// keeps the disk. The queue jumped to is marked: the switch goes back to pid 1 (which got
/// its slice from the service tree), but not to pid 2 a second time, and pid 1 then idles.
#[test]
fn in_2_6_31_an_empty_queue_hands_the_disk_to_a_close_queue_without_merging() {
    for merging in ["1", "0"] {
        let mut s = cfq_of_era("0");
        s.set_tunable("queue_merging", merging).unwrap();
        s.insert(rq(1, 1, 0, 0, true, 0), 0);
        s.insert(rq(2, 2, 0, 16, true, 0), 0);
        assert_eq!(expect_rq(&mut s, 0).owner.pid, 1);
        let next = s.dispatch(0);
        if merging == "0" {
            assert!(!matches!(next, Dispatch::Request(_)), "pid 1 keeps the disk: {next:?}");
            continue;
        }
        let Dispatch::Request(r2) = next else { panic!("expected pid 2's read, got {next:?}") };
        assert_eq!(r2.owner.pid, 2);
        let (q1, q2) = (s.sync_map[&(1, 0)], s.sync_map[&(2, 0)]);
        assert_ne!(q1, q2, "no merging before 2.6.33");
        assert!(s.queues[q2].jumped_to && !s.queues[q1].jumped_to);
        // Pid 1's next read is where pid 2's ended: the switch goes back to pid 1.
        s.insert(rq(3, 1, 0, 24, true, 10), 10);
        assert_eq!(expect_rq(&mut s, 10).owner.pid, 1);
        assert!(s.queues[q1].jumped_to);
        // Pid 2 was jumped to already: pid 1, now empty, idles instead.
        s.insert(rq(4, 2, 0, 32, true, 20), 20);
        let next = s.dispatch(20);
        assert!(!matches!(next, Dispatch::Request(_)), "pid 2 is not jumped to twice: {next:?}");
    }
}

/// `cfq_completed_request`'s probe, from 2.6.30 on (`!cfq_close_cooperator(cfqd, cfqq)`):
/// a queue that runs empty while a close queue waits does not idle for itself, and
/// `cfq_select_queue` switches to that queue; with nothing close it idles. In both eras:
/// 2.6.31's cooperators (any busy queue within the context's mean seek) and 2.6.33+'s (a
/// close, sync, non-seeky queue).
#[test]
fn a_queue_with_a_close_cooperator_does_not_idle() {
    for era in ["0", "1"] {
        for (far, idles) in [(16u64, false), (1 << 30, true)] {
            let mut s = cfq_of_era(era);
            s.insert(rq(1, 1, 0, 0, true, 0), 0);
            let r1 = expect_rq(&mut s, 0);
            // Pid 2's read is queued while pid 1's is at the device; pid 1's queue is active.
            s.insert(rq(2, 2, 0, far, true, 10), 10);
            s.completed(&r1, 1000);
            let q1 = s.sync_map[&(1, 0)];
            let why = format!("workload_trees={era}, pid 2's read at sector {far}");
            assert_eq!(s.queues[q1].wait_request, idles, "{why}");
            if !idles {
                assert_eq!(expect_rq(&mut s, 1000).owner.pid, 2, "{why}");
            }
        }
    }
}

/// Whether pid 1, the only busy queue, still holds the disk just after the read that
/// completes past the end of its slice.
fn lone_queue_holds_past_its_slice(workload_trees: &str, group_scheduling: &str) -> bool {
    let mut s = cfq_of_era(workload_trees);
    s.set_tunable("group_scheduling", group_scheduling).unwrap();
    s.insert(rq(1, 1, 0, 0, true, 0), 0);
    let mut r = expect_rq(&mut s, 0);
    let mut now = 100 * NS_PER_US;
    s.completed(&r, now);
    let slice_end = now + 100 * NS_PER_MS;
    for id in 2.. {
        now += NS_PER_MS;
        s.insert(rq(id, 1, 0, id * 8, true, now), now);
        r = expect_rq(&mut s, now);
        now += 100 * NS_PER_US;
        s.completed(&r, now);
        if now > slice_end {
            break;
        }
    }
    s.active.is_some()
}

#[test]
fn before_2_6_33_a_used_up_slice_ends_even_for_the_only_busy_queue() {
    // 2.6.33+ `cfq_should_wait_busy`: the group's last queue keeps the disk a `slice_idle`
    // longer for its next request.
    assert!(lone_queue_holds_past_its_slice("1", "0"));
    // The io-controller patches it came from (group scheduling under 2.6.31's rules).
    assert!(lone_queue_holds_past_its_slice("0", "1"));
    // 2.6.31 `cfq_completed_request`: `if (cfq_slice_used(cfqq)) cfq_slice_expired(...)`.
    assert!(!lone_queue_holds_past_its_slice("0", "0"));
}

/// How far a queue that left `resid_ms` of its last slice unused is keyed from one that used
/// it all, as it joins the service tree.
fn resid_shift(workload_trees: &str, resid_ms: i64) -> i64 {
    let key = |resid: i64| {
        let mut s = cfq_of_era(workload_trees);
        s.insert(rq(1, 1, 0, 0, true, 0), 0);
        let now = 5 * NS_PER_MS;
        let second = rq(2, 2, 0, 1 << 30, true, now);
        let q = s.queue_for(&second, now);
        s.queues[q].slice_resid = resid * NS_PER_MS as i64;
        s.insert(second, now);
        s.queues[q].st.expect("on a service tree").1 .0
    };
    key(resid_ms) - key(0)
}

#[test]
fn the_slice_residual_moves_a_queue_forward_from_2_6_32() {
    let ms = NS_PER_MS as i64;
    // 2.6.32+ (b9c8946b, "fix the slice residual sign"): `rb_key -= slice_resid`, so an
    // unused part brings the queue forward and an overrun puts it back.
    assert_eq!(resid_shift("1", 30), -30 * ms);
    assert_eq!(resid_shift("1", -30), 30 * ms);
    // 2.6.31: `rb_key += cfqq->slice_resid`.
    assert_eq!(resid_shift("0", 30), 30 * ms);
    // v2.6.32, still with one service tree per class.
    assert_eq!(resid_shift("2.6.32", 30), -30 * ms);
}

/// The slice pid 1 gets while 15 other processes have reads queued.
fn slice_among_16(workload_trees: &str, low_latency: &str) -> Nanos {
    let mut s = cfq_of_era(workload_trees);
    s.set_tunable("low_latency", low_latency).unwrap();
    for pid in 1..=16u32 {
        let sector = u64::from(pid) << 24;
        s.insert(rq(u64::from(pid), pid, 0, sector, true, 0), 0);
    }
    let first = expect_rq(&mut s, 0);
    s.completed(&first, NS_PER_MS);
    let q = s.active.expect("a slice runs");
    s.queues[q].slice_end - s.queues[q].slice_start.expect("started")
}

#[test]
fn low_latency_scales_slices_from_2_6_33_only() {
    // 2.6.33's `cfq_scaled_cfqq_slice`: 16 queues of 100 ms want more than 300 ms of latency.
    assert!(slice_among_16("1", "1") < slice_among_16("1", "0"));
    // 2.6.31 had no `low_latency`: the knob changes nothing.
    assert_eq!(slice_among_16("0", "1"), slice_among_16("0", "0"));
    assert_eq!(slice_among_16("0", "0"), 100 * NS_PER_MS);
}

/// pid 1's `wait_request` and `must_dispatch` once the read it idled for arrives, with pid 2
/// busy as well.
fn flags_after_the_awaited_read(workload_trees: &str) -> (bool, bool) {
    let (mut s, q) = pid_1_served_beside_pid_2(workload_trees);
    assert!(s.queues[q].wait_request, "pid 1 idles for its next read");
    s.insert(rq(3, 1, 0, 8, true, 2 * NS_PER_MS), 2 * NS_PER_MS);
    (s.queues[q].wait_request, s.queues[q].must_dispatch)
}

#[test]
fn in_2_6_31_wait_request_lasts_until_the_slice_ends() {
    // 2.6.31 `cfq_rq_enqueued`: runs the queue, marks must_dispatch, and leaves the flag set
    // (so `cfq_should_preempt`'s close test stays open for the rest of the slice).
    assert_eq!(flags_after_the_awaited_read("0"), (true, true));
    // 2.6.33+: the flag is cleared with the timer.
    assert_eq!(flags_after_the_awaited_read("1"), (false, false));
}

/// Whether pid 1's queue idles after its sync write completes, the write marked `REQ_NOIDLE`
/// (fsync's writeback) or not (an `O_DIRECT` write), while pid 2 waits.
fn idles_after_a_sync_write(workload_trees: &str, noidle: bool) -> bool {
    let mut s = cfq_of_era(workload_trees);
    let mut w = rq(1, 1, 0, 0, true, 0);
    w.op = Op::Write;
    w.noidle = noidle;
    s.insert(w, 0);
    s.insert(rq(2, 2, 0, 1 << 30, true, 0), 0);
    let first = expect_rq(&mut s, 0);
    assert_eq!(first.owner.pid, 1);
    s.completed(&first, NS_PER_MS);
    matches!(s.dispatch(NS_PER_MS), Dispatch::WaitUntil { .. })
}

#[test]
fn no_queue_idles_for_a_noidle_write() {
    for era in ["0", "1"] {
        assert!(idles_after_a_sync_write(era, false), "{era}: an O_DIRECT write is idled for");
        // 2.6.31: `!rq_noidle(rq)` in `cfq_completed_request`; 2.6.37+: the queue's next
        // request was `REQ_NOIDLE`, so `cfq_update_idle_window` took its idle window.
        assert!(!idles_after_a_sync_write(era, true), "{era}: fsync's writeback is not");
    }
}

/// How many of pid 1's queued async writes CFQ sends at `at`, once pid 2's one read completed
/// at 1 ms and its idling ended.
fn async_burst_after_a_read(era: &str, low_latency: &str, at: Nanos) -> usize {
    let mut s = cfq_of_era(era);
    s.set_tunable("low_latency", low_latency).unwrap();
    s.insert(rq(1, 2, 0, 1 << 30, true, 0), 0);
    let r = expect_rq(&mut s, 0);
    s.completed(&r, NS_PER_MS);
    for id in 2..34 {
        s.insert(rq(id, 1, 0, id << 12, false, 2 * NS_PER_MS), 2 * NS_PER_MS);
    }
    let sent = pids_sent_at(&mut s, at);
    assert!(sent.iter().all(|&pid| pid == 1), "only pid 1's writes: {sent:?}");
    sent.len()
}

#[test]
fn v2_6_32_low_latency_ramps_async_depth_up_from_the_last_sync_completion() {
    // v2.6.32 `cfq_may_dispatch`: `depth = last_sync / cfq_slice[1]`, at least one request
    // if the queue has none in flight: 1 at 20 ms after the read, 2 at 250 ms.
    assert_eq!(async_burst_after_a_read("2.6.32", "1", 20 * NS_PER_MS), 1);
    assert_eq!(async_burst_after_a_read("2.6.32", "1", 250 * NS_PER_MS), 2);
    // Without `low_latency`, and in 2.6.31, the only busy queue sends 4 × `quantum`.
    assert_eq!(async_burst_after_a_read("2.6.32", "0", 20 * NS_PER_MS), 16);
    assert_eq!(async_burst_after_a_read("0", "1", 20 * NS_PER_MS), 16);
}

/// What CFQ sends when pid 2's read preempts pid 1's async queue with two writes in flight.
fn read_beside_async_writes_in_flight(era: &str) -> Dispatch {
    let mut s = cfq_of_era(era);
    for id in 1..=4 {
        s.insert(rq(id, 1, 0, id << 12, false, 0), 0);
    }
    expect_rq(&mut s, 0);
    expect_rq(&mut s, 0);
    s.insert(rq(9, 2, 0, 1 << 30, true, NS_PER_MS), NS_PER_MS);
    assert_eq!(s.active_queue_info().map(|a| a.0), None, "the read preempted the writes");
    s.dispatch(NS_PER_MS)
}

#[test]
fn v2_6_32_drains_async_writes_before_an_idling_queue_dispatches() {
    // v2.6.32 `cfq_may_dispatch`: `cfq_cfqq_idle_window(cfqq) && rq_in_driver[BLK_RW_ASYNC]`.
    assert!(matches!(read_beside_async_writes_in_flight("2.6.32"), Dispatch::Empty));
    // 2.6.31 sends the read at once.
    assert!(
        matches!(read_beside_async_writes_in_flight("0"), Dispatch::Request(r) if r.owner.pid == 2)
    );
}

/// pid 1's idle window after 20 reads that jump 512 MiB each, `think` apart, on a device
/// `hw_tag` takes for a queueing one (2.6.31's starting guess).
fn seeky_reader_idle_window(era: &str, low_latency: &str, think: Nanos) -> bool {
    let mut s = cfq_of_era(era);
    s.set_tunable("low_latency", low_latency).unwrap();
    let mut now = 0;
    for id in 0..20u64 {
        s.insert(rq(id, 1, 0, (id % 2) << 20, true, now), now);
        let r = expect_rq(&mut s, now);
        now += NS_PER_MS;
        s.completed(&r, now);
        now += think;
    }
    s.idle_window(1, 0).expect("pid 1's queue")
}

#[test]
fn v2_6_32_low_latency_keeps_idling_for_seeky_readers_that_think_little() {
    // 2.6.31 `cfq_update_idle_window`: `hw_tag && CIC_SEEKY(cic)` takes the window.
    assert!(!seeky_reader_idle_window("0", "0", 0));
    assert!(!seeky_reader_idle_window("2.6.32", "0", 0));
    // v2.6.32 with `low_latency`: a seeky context keeps it if it thinks at most `CFQ_MIN_TT`.
    assert!(seeky_reader_idle_window("2.6.32", "1", 0));
    assert!(!seeky_reader_idle_window("2.6.32", "1", 5 * NS_PER_MS));
}

/// Whether pid 2, which preempted idling pid 1 with a close read and was later preempted back
/// the same way, preempts pid 1 again with a close read while pid 3 waits.
fn close_reader_preempts_twice(era: &str) -> bool {
    let mut s = cfq_of_era(era);
    s.insert(rq(1, 1, 0, 0, true, 0), 0);
    s.insert(rq(2, 3, 0, 1 << 30, true, 0), 0);
    let mut now = 0;
    for (id, pid) in [(3u64, 2u32), (4, 1)] {
        let r = expect_rq(&mut s, now);
        now += NS_PER_MS;
        s.completed(&r, now);
        now += NS_PER_MS;
        // Close to where the last read ended: it preempts the idling queue.
        s.insert(rq(id, pid, 0, id * 8, true, now), now);
        assert_eq!(s.active, None, "pid {pid} preempted");
    }
    let r = expect_rq(&mut s, now);
    assert_eq!(r.owner.pid, 1);
    now += NS_PER_MS;
    s.completed(&r, now);
    now += NS_PER_MS;
    s.insert(rq(5, 2, 0, 40, true, now), now);
    s.active.is_none()
}

#[test]
fn v2_6_32_a_close_queue_preempts_once_until_the_tree_serves_it() {
    // v2.6.32 `cfq_should_preempt`: `cfq_rq_close(cfqd, rq) && (!cfq_cfqq_coop(new_cfqq) ||
    // cfqd->busy_queues == 1)`, and the preemption marks the queue `coop`.
    assert!(!close_reader_preempts_twice("2.6.32"));
    // 2.6.31: a close read always preempts an idling queue.
    assert!(close_reader_preempts_twice("0"));
}

/// Whether a best-effort read close to the head preempts a real-time queue idling for its
/// next read.
fn close_read_preempts_real_time(era: &str) -> bool {
    let mut s = cfq_of_era(era);
    let mut first = rq(1, 1, 0, 0, true, 0);
    first.owner.prio = IoPrio { class: IoPrioClass::RealTime, level: 4 };
    s.insert(first, 0);
    let r = expect_rq(&mut s, 0);
    s.completed(&r, NS_PER_MS);
    assert!(matches!(s.dispatch(NS_PER_MS), Dispatch::WaitUntil { .. }), "pid 1 idles");
    s.insert(rq(2, 2, 0, 16, true, 2 * NS_PER_MS), 2 * NS_PER_MS);
    s.active.is_none()
}

#[test]
fn only_2_6_33_keeps_other_classes_from_preempting_a_real_time_slice() {
    assert!(!close_read_preempts_real_time("1"));
    // 2.6.31's and 2.6.32's `cfq_should_preempt` have no such rule.
    assert!(close_read_preempts_real_time("0"));
    assert!(close_read_preempts_real_time("2.6.32"));
}

/// The pids of the requests CFQ sends at `now`, in order, until it sends none.
fn pids_sent_at(s: &mut Cfq, now: Nanos) -> Vec<u32> {
    let mut pids = Vec::new();
    while let Dispatch::Request(r) = s.dispatch(now) {
        pids.push(r.owner.pid);
    }
    pids
}

/// CFQ of `era` once pid 1's first read, queued at 0 beside pid 2's far one, was sent and
/// completed at 1 ms: pid 1's slice has begun (its queue is returned).
fn pid_1_served_beside_pid_2(era: &str) -> (Cfq, usize) {
    let mut s = cfq_of_era(era);
    s.insert(rq(1, 1, 0, 0, true, 0), 0);
    s.insert(rq(2, 2, 0, 1 << 30, true, 0), 0);
    let first = expect_rq(&mut s, 0);
    assert_eq!(first.owner.pid, 1);
    s.completed(&first, NS_PER_MS);
    let q = s.active.expect("pid 1's slice");
    (s, q)
}

/// `s` after pid 1's first read, sent at 0 and completed at 1 ms: pid 1's slice has begun.
fn after_pid_1_s_first_read(mut s: Cfq) -> Cfq {
    s.insert(rq(1, 1, 0, 0, true, 0), 0);
    let r = expect_rq(&mut s, 0);
    s.completed(&r, NS_PER_MS);
    s
}

/// CFQ of 3.2 (`rules_3_2`), without `low_latency`.
fn cfq_3_2() -> Cfq {
    cfq_of_era("rules_3_2")
}

#[test]
fn a_process_s_first_request_is_a_think_time_sample() {
    // `cfq_alloc_io_context` sets `last_end_request = jiffies` with the context, so the
    // first request counts (about 0) and the mean is valid at the third (samples 32, 60, 84).
    let mut s = cfq_of_era("1");
    let mut now = 0;
    for id in 1..=3u64 {
        s.insert(rq(id, 1, 0, id * 8, true, now), now);
        let r = expect_rq(&mut s, now);
        now += NS_PER_MS;
        s.completed(&r, now);
    }
    assert!(s.cics[&1].sample_valid());
}

#[test]
fn the_idle_timer_leaves_wait_request_set() {
    // `cfq_idle_slice_timer` (2.6.34, 3.2) kicks the queue for the request that came while
    // it idled and clears no flag: the close-request preemption stays open.
    let mut s = after_pid_1_s_first_read(cfq_of_era("1"));
    let q = s.active.expect("pid 1 idles");
    // A one-page read with no other queue busy: `must_dispatch`, the timer keeps running.
    s.insert(rq(2, 1, 0, 8, true, 2 * NS_PER_MS), 2 * NS_PER_MS);
    assert!(s.queues[q].must_dispatch && s.idling_until().is_some());
    let at = s.idling_until().unwrap();
    let r = expect_rq(&mut s, at);
    assert_eq!(r.owner.pid, 1);
    assert!(s.queues[q].wait_request);
}

#[test]
fn async_depth_is_not_held_back_before_any_sync_request_completed() {
    // `cfq_init_queue`: `last_delayed_sync = jiffies - HZ`, so at start `low_latency` lets
    // the only busy async queue send its writes at once.
    let mut s = cfq_of_era("1");
    s.set_tunable("low_latency", "1").unwrap();
    for id in 1..=8 {
        s.insert(rq(id, 1, 0, id << 12, false, NS_PER_MS), NS_PER_MS);
    }
    assert_eq!(pids_sent_at(&mut s, NS_PER_MS).len(), 8);
}

/// Whether pid 2's far read ends pid 1's slice while pid 1, empty and with no idling of its
/// own (`slice_idle` 0), waits `group_idle` for its group.
fn far_read_ends_a_group_idle(era: &str) -> bool {
    let mut s = cfq_of_era(era);
    s.set_tunable("slice_idle", "0").unwrap();
    let mut s = after_pid_1_s_first_read(s);
    assert!(s.idling_until().is_some(), "pid 1's group idles");
    s.insert(rq(2, 2, 0, 1 << 30, true, 2 * NS_PER_MS), 2 * NS_PER_MS);
    s.active.is_none()
}

#[test]
fn from_2_6_38_a_queue_that_should_not_idle_is_preempted() {
    // 2.6.38+ `cfq_should_preempt`: "An idle queue should not be idle now for some reason".
    assert!(far_read_ends_a_group_idle("1"));
    assert!(far_read_ends_a_group_idle("rules_3_2"));
}

#[test]
fn from_2_6_38_a_queue_preempted_before_its_slice_began_keeps_a_whole_slice() {
    // `__cfq_slice_expired`: `if (cfq_cfqq_slice_new(cfqq)) cfqq->slice_resid =
    // cfq_scaled_cfqq_slice(cfqd, cfqq);`, subtracted from its key as it goes back.
    let mut s = cfq_of_era("1");
    for id in 1..=4 {
        s.insert(rq(id, 1, 0, id << 12, false, 0), 0);
    }
    let w = expect_rq(&mut s, 0);
    assert!(!w.sync);
    let now = NS_PER_MS;
    s.insert(rq(9, 2, 0, 1 << 30, true, now), now);
    let aq = s.async_map.values().copied().next().expect("the async queue");
    // Two busy queues: the offset is one (180 - 40) ms step; less the async slice of 40 ms.
    let key = s.queues[aq].st.expect("still busy").1 .0;
    assert_eq!(key, (now + 140 * NS_PER_MS - 40 * NS_PER_MS) as i64);
}

/// How many of pid 1's 16 queued reads CFQ sends at once while an async queue is busy too.
fn lone_sync_queue_burst(s: &mut Cfq) -> usize {
    s.set_tunable("quantum", "8").unwrap();
    for id in 1..=16 {
        s.insert(rq(id, 1, 0, id << 3, true, 0), 0);
    }
    // A nanosecond later, so that the async queue's key is the later one.
    s.insert(rq(99, 2, 0, 1 << 30, false, 1), 1);
    let sent = pids_sent_at(s, 1);
    assert!(sent.iter().all(|&pid| pid == 1), "only pid 1's reads: {sent:?}");
    sent.len()
}

#[test]
fn from_2_6_39_the_only_busy_sync_queue_dispatches_without_limit() {
    // 2.6.39+ `cfq_may_dispatch`: `promote_sync` when `busy_sync_queues == 1`.
    assert_eq!(lone_sync_queue_burst(&mut cfq_3_2()), 16);
    // 2.6.38: `quantum / 2` at the start of a slice beside another busy queue.
    assert_eq!(lone_sync_queue_burst(&mut cfq_of_era("1")), 4);
}

/// Whether a seeky reader alone on its service tree, thinking 12 ms between reads, is idled
/// for after a read (no groups).
fn idles_for_a_slow_seeky_reader(mut s: Cfq) -> bool {
    s.set_tunable("group_scheduling", "0").unwrap();
    let mut now = 0;
    let mut idled = false;
    for id in 0..20u64 {
        s.insert(rq(id, 1, 0, (id % 2) << 24, true, now), now);
        let r = expect_rq(&mut s, now);
        now += NS_PER_MS;
        s.completed(&r, now);
        idled = matches!(s.dispatch(now), Dispatch::WaitUntil { .. });
        now += 12 * NS_PER_MS;
    }
    idled
}

#[test]
fn in_3_2_a_tree_whose_think_time_is_long_is_not_idled_on() {
    // 3.2 `cfq_should_idle`: the last queue of its tree idles only if `!cfq_io_thinktime_big(
    // cfqd, &service_tree->ttime, false)`.
    assert!(idles_for_a_slow_seeky_reader(cfq_of_era("1")));
    assert!(!idles_for_a_slow_seeky_reader(cfq_3_2()));
}

/// Whether pid 1's queue, alone in the root group and used up, waits busy at its slice's end
/// (`cfq_should_wait_busy`) and holds the disk for its group (`check_group_idle` in
/// `cfq_select_queue`), with the group's mean think time `group_think`.
fn lone_queue_waits_for_its_group(s: Cfq, group_think: Nanos) -> (bool, bool) {
    let mut s = after_pid_1_s_first_read(s);
    let q = s.active.expect("pid 1's slice");
    s.groups[0].ttime = ThinkTime { samples: 200, total: 0, mean: group_think, last_end: 0 };
    let end = s.queues[q].slice_end;
    let wait_busy = s.should_wait_busy(q, end);
    s.groups[0].dispatched = 1;
    (wait_busy, s.group_idle_wait(q))
}

#[test]
fn in_3_2_a_group_whose_think_time_is_long_is_not_waited_for() {
    // 3.2 `cfq_should_wait_busy`: "the only queue in the group, but think time is big";
    // `cfq_select_queue`: `!cfq_io_thinktime_big(cfqd, &cfqq->cfqg->ttime, true)`.
    let long = 12 * NS_PER_MS;
    assert_eq!(lone_queue_waits_for_its_group(cfq_of_era("1"), long), (true, true));
    assert_eq!(lone_queue_waits_for_its_group(cfq_3_2(), long), (false, false));
    assert_eq!(lone_queue_waits_for_its_group(cfq_3_2(), NS_PER_MS), (true, true));
}

#[test]
fn in_3_2_async_writes_are_not_think_time_samples() {
    // 3.2 `cfq_update_io_thinktime`: `if (cfq_cfqq_sync(cfqq))` around the process's update.
    for (mut s, want) in [(cfq_of_era("1"), true), (cfq_3_2(), false)] {
        for id in 1..=4 {
            s.insert(rq(id, 1, 0, id << 12, false, 0), 0);
        }
        assert_eq!(s.cics[&1].ttime_samples > 0, want);
    }
}

#[test]
fn the_sync_noidle_preemption_asks_what_tree_is_served() {
    // `cfq_should_preempt`: `cfqd->serving_type == SYNC_NOIDLE_WORKLOAD && cfqq_type(new_cfqq)
    // == SYNC_NOIDLE_WORKLOAD && new_cfqq->service_tree->count == 2 && RB_EMPTY_ROOT(...)`:
    // the tree being served, not the type the active queue has now (its idle window may have
    // turned on since the tree was chosen).
    let mut s = after_pid_1_s_first_read(cfq_of_era("1"));
    assert!(s.idling_until().is_some(), "pid 1 idles, its idle window on");
    s.serving_type = WL_SYNC_NOIDLE;
    for (id, pid) in [(2u64, 3u32), (3, 2)] {
        let far = rq(id, pid, 0, u64::from(pid) << 30, true, 2 * NS_PER_MS);
        let q = s.queue_for(&far, 2 * NS_PER_MS);
        s.queues[q].idle_window = false;
        s.insert(far, 2 * NS_PER_MS);
    }
    assert!(s.active.is_none(), "the second sync-noidle queue preempted");
}

/// The sector of pid 1's next request once its read at sector 1000 is sent, with reads
/// queued 38 sectors ahead of its start (30 past its end) and 10 behind.
fn next_after_1000(era: &str) -> u64 {
    let mut s = cfq_of_era(era);
    s.last_position = 1000;
    for (id, sector) in [(1, 1000), (2, 1038), (3, 990)] {
        s.insert(rq(id, 1, 0, sector, true, 0), 0);
    }
    let r = expect_rq(&mut s, 0);
    assert_eq!(r.sector(), 1000);
    let q = s.active.expect("pid 1's slice");
    s.queues[q].next_rq.expect("two reads left").0
}

#[test]
fn the_next_request_is_chosen_from_where_the_sent_one_starts() {
    // 2.6.33+ `cfq_find_next_rq`: `cfq_choose_req(cfqd, next, prev, blk_rq_pos(last))`: from
    // sector 1000, 990 behind costs 2 x 10 and 1038 ahead 38.
    assert_eq!(next_after_1000("1"), 990);
    // 2.6.31: from `last_position`, the end of the request the driver took before (1000
    // here, set above), the same choice.
    assert_eq!(next_after_1000("0"), 990);
}

/// How many of pid 1's 32 queued reads CFQ sends at once, pid 1 the only busy queue.
fn lone_queue_burst(era: &str) -> usize {
    let mut s = cfq_of_era(era);
    for id in 1..=32 {
        s.insert(rq(id, 1, 0, id << 3, true, 0), 0);
    }
    pids_sent_at(&mut s, 0).len()
}

#[test]
fn in_2_6_29_the_only_busy_queue_dispatches_without_limit() {
    // 2.6.29 `cfq_dispatch_requests`: `if (cfqq->dispatched >= max_dispatch &&
    // cfqd->busy_queues > 1) break;`; 2.6.31 stops the only busy queue at 4 x `quantum`.
    assert_eq!(lone_queue_burst("2.6.29"), 32);
    assert_eq!(lone_queue_burst("0"), 16);
}

/// Whether pid 1, alone and idling after its first read, is still idling (the timer runs)
/// once a one-page read of its own arrives.
fn idles_on_after_a_small_read(era: &str) -> bool {
    let mut s = after_pid_1_s_first_read(cfq_of_era(era));
    assert!(s.idling_until().is_some(), "pid 1 idles");
    s.insert(rq(2, 1, 0, 8, true, 2 * NS_PER_MS), 2 * NS_PER_MS);
    s.idling_until().is_some()
}

#[test]
fn in_2_6_29_a_request_for_the_idling_queue_runs_it_at_once() {
    // 2.6.29 `cfq_rq_enqueued`: "let it rip immediately": `del_timer(...)`,
    // `blk_start_queueing(...)`; 2.6.30+ waits for a one-page request with no other queue busy.
    assert!(!idles_on_after_a_small_read("2.6.29"));
    assert!(idles_on_after_a_small_read("0"));
}

/// pid 1's `wait_request` once the read it idled for has been sent, pid 2 busy as well.
fn waits_after_sending_the_awaited_read(era: &str) -> bool {
    let (mut s, q) = pid_1_served_beside_pid_2(era);
    s.insert(rq(3, 1, 0, 8, true, 2 * NS_PER_MS), 2 * NS_PER_MS);
    let r = expect_rq(&mut s, 2 * NS_PER_MS);
    assert_eq!(r.owner.pid, 1);
    s.queues[q].wait_request
}

#[test]
fn in_2_6_29_a_dispatch_ends_the_wait() {
    // 2.6.29 `cfq_dispatch_requests`: `cfq_clear_cfqq_wait_request(cfqq)` before each batch;
    // 2.6.31 keeps the flag until the slice ends.
    assert!(!waits_after_sending_the_awaited_read("2.6.29"));
    assert!(waits_after_sending_the_awaited_read("0"));
}

/// Whether pid 2's read 16 sectors from the head preempts pid 1, idling after its only read
/// (so its context has no seek mean yet).
fn close_read_preempts_before_a_seek_mean(era: &str) -> bool {
    let mut s = after_pid_1_s_first_read(cfq_of_era(era));
    s.insert(rq(2, 2, 0, 24, true, 2 * NS_PER_MS), 2 * NS_PER_MS);
    s.active.is_none()
}

#[test]
fn in_2_6_29_no_request_is_close_before_the_seek_mean_is_known() {
    // 2.6.29 `cfq_rq_close`: `if (!sample_valid(cic->seek_samples)) return 0;`; 2.6.31
    // measures against `CIC_SEEK_THR` until then.
    assert!(!close_read_preempts_before_a_seek_mean("2.6.29"));
    assert!(close_read_preempts_before_a_seek_mean("0"));
}

#[test]
fn before_2_6_30_no_write_is_marked_noidle() {
    // `REQ_NOIDLE` came with 2.6.30 (aeb6fafb); 2.6.29's `cfq_completed_request` idles after
    // any sync request.
    assert!(idles_after_a_sync_write("2.6.29", true));
}

/// Which pid CFQ serves once pid 1's read arrives just as its slice is used up, pid 2 busy.
fn served_after_a_late_read(era: &str) -> u32 {
    let (mut s, q) = pid_1_served_beside_pid_2(era);
    let now = 2 * NS_PER_MS;
    s.queues[q].slice_end = now;
    s.insert(rq(3, 1, 0, 8, true, now), now);
    expect_rq(&mut s, now).owner.pid
}

#[test]
fn in_2_6_29_a_used_up_slice_ends_even_with_a_request_waiting() {
    // 2.6.29 `cfq_select_queue`: `if (cfq_slice_used(cfqq)) goto expire;` (`must_dispatch`
    // is set but never read); 2.6.31: `&& !cfq_cfqq_must_dispatch(cfqq)`.
    assert_eq!(served_after_a_late_read("2.6.29"), 2);
    assert_eq!(served_after_a_late_read("0"), 1);
}

/// `cfq_should_preempt`: a metadata read (`REQ_META`; 3.1+ `REQ_PRIO`) of another process
/// takes the disk from a sync queue doing regular I/O, in every era; a regular read does
/// not, nor does a metadata read when the active queue has metadata of its own queued.
#[test]
fn a_metadata_read_preempts_a_queue_doing_regular_io() {
    for era in ["2.6.29", "0", "2.6.32", "1", "rules_3_2"] {
        for (meta, own_meta, want) in [(true, false, 3), (false, false, 1), (true, true, 1)] {
            let (mut s, _) = pid_1_served_beside_pid_2(era);
            let mut own = rq(10, 1, 0, 8, true, NS_PER_MS);
            own.meta = own_meta;
            s.insert(own, NS_PER_MS);
            let mut other = rq(11, 3, 0, 1 << 31, true, NS_PER_MS);
            other.meta = meta;
            s.insert(other, NS_PER_MS);
            let r = expect_rq(&mut s, NS_PER_MS);
            assert_eq!(r.owner.pid, want, "{era}: meta {meta}, active queue's meta {own_meta}");
        }
    }
}

/// `cfq_choose_req`: within a queue a metadata read goes before a regular one however far
/// it is from the head.
#[test]
fn a_queue_sends_its_metadata_read_first() {
    for era in ["2.6.29", "0", "2.6.32", "1", "rules_3_2"] {
        let mut s = after_pid_1_s_first_read(cfq_of_era(era));
        s.insert(rq(10, 1, 0, 16, true, NS_PER_MS), NS_PER_MS);
        let mut far = rq(11, 1, 0, 1 << 30, true, NS_PER_MS);
        far.meta = true;
        s.insert(far, NS_PER_MS);
        assert_eq!(expect_rq(&mut s, NS_PER_MS).id, RequestId(11), "{era}");
        assert_eq!(s.queues[s.active.unwrap()].meta_pending, 0, "{era}");
    }
}

/// `cfq_exit_cfqq`: when the process CFQ idles for exits, its slice ends at once and the
/// next queue is served, in every era; an exit of another process changes nothing.
#[test]
fn the_exit_of_the_process_idled_for_ends_its_slice() {
    for era in ["2.6.29", "0", "2.6.32", "1", "rules_3_2"] {
        for (exiting, want_now) in [(1, true), (3, false)] {
            let (mut s, q) = pid_1_served_beside_pid_2(era);
            assert!(
                matches!(s.dispatch(NS_PER_MS), Dispatch::WaitUntil { .. }),
                "{era}: idling for pid 1"
            );
            assert_eq!(s.exited(exiting, NS_PER_MS), want_now, "{era}");
            match s.dispatch(NS_PER_MS) {
                Dispatch::Request(r) => {
                    assert!(want_now, "{era}");
                    assert_eq!(r.owner.pid, 2, "{era}");
                    assert_ne!(s.active, Some(q));
                }
                other => assert!(!want_now, "{era}: {other:?}"),
            }
        }
    }
}
