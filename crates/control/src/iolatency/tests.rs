use super::*;
use elevator_core::{Op, Owner, Request, RequestId};
use std::collections::VecDeque;

const MS: Nanos = 1_000_000;
const S: Nanos = 1_000_000_000;

fn bio(id: u64, cgroup: u32, now: Nanos) -> Bio {
    let mut owner = Owner::process(cgroup + 1);
    owner.cgroup = cgroup;
    Bio {
        device: 0,
        request: Request::new(RequestId(id), Op::Read, 0, 4096, true, owner, now).unwrap(),
    }
}

/// A one-at-a-time FIFO disk of `service_ns` per request; group 1 keeps one request
/// outstanding (a reader), group 2 keeps `batch` outstanding, until `end_ns` (group 1 stops at
/// `reader_end_ns`). Returns group 1's latencies after `warmup_ns` and group 2's completions
/// after it.
fn run(
    c: &mut IoLatency,
    service_ns: Nanos,
    batch: u32,
    reader_end_ns: Nanos,
    warmup_ns: Nanos,
    end_ns: Nanos,
) -> (Vec<Nanos>, u64) {
    let mut id = 0;
    let mut disk: VecDeque<Bio> = VecDeque::new();
    let mut busy_until: Option<Nanos> = None;
    let mut lat = Vec::new();
    let mut batch_done = 0;
    c.submit(bio(id, 1, 0), 0);
    id += 1;
    for _ in 0..batch {
        c.submit(bio(id, 2, 0), 0);
        id += 1;
    }
    let mut now = 0;
    let mut out = Vec::new();
    while now < end_ns {
        out.clear();
        c.release(now, &mut out);
        disk.extend(out.drain(..));
        if busy_until.is_none() && !disk.is_empty() {
            busy_until = Some(now + service_ns);
        }
        let next = [busy_until, c.next_timer_ns()].into_iter().flatten().min().expect("work to do");
        now = next;
        if busy_until == Some(now) {
            let b = disk.pop_front().unwrap();
            c.completed(&b, now);
            busy_until = (!disk.is_empty()).then_some(now + service_ns);
            let cg = b.request.owner.cgroup;
            if now >= warmup_ns {
                if cg == 1 {
                    lat.push(now - b.request.submit_ns);
                } else {
                    batch_done += 1;
                }
            }
            if cg == 2 || now < reader_end_ns {
                c.submit(bio(id, cg, now), now);
                id += 1;
            }
        }
    }
    (lat, batch_done)
}

fn groups(target_ms: Option<u64>) -> Vec<IoLatencyGroup> {
    vec![
        IoLatencyGroup { cgroup: 1, name: "web".into(), target_ns: target_ms.map(|t| t * MS) },
        IoLatencyGroup { cgroup: 2, name: "batch".into(), target_ns: None },
    ]
}

#[test]
fn io_latency_lines_parse_as_the_kernel_takes_them() {
    assert_eq!(parse_io_latency_keys("target=10000"), Ok(Some(10 * MS)));
    assert_eq!(parse_io_latency_keys("target=max"), Ok(None));
    assert!(parse_io_latency_keys("target=abc").unwrap_err().contains("`target=abc`"));
    assert!(parse_io_latency_keys("lat=5").unwrap_err().contains("unknown key"));
    assert!(parse_io_latency_keys("target=0").unwrap_err().contains("1 µs to 60 s"));
}

#[test]
fn the_window_is_sixteen_targets_within_bounds() {
    let c = IoLatency::new(
        vec![
            IoLatencyGroup { cgroup: 1, name: "a".into(), target_ns: Some(MS) },
            IoLatencyGroup { cgroup: 2, name: "b".into(), target_ns: Some(20 * MS) },
            IoLatencyGroup { cgroup: 3, name: "c".into(), target_ns: Some(100 * MS) },
        ],
        64,
        true,
    )
    .unwrap();
    let w: Vec<Nanos> = c.groups.iter().take(3).map(|g| g.window_ns).collect();
    assert_eq!(w, vec![100 * MS, 320 * MS, S]);
}

#[test]
fn peers_are_throttled_until_the_target_is_met_and_keep_the_rest() {
    // 5 ms a request: with 31 batch requests queued the reader would wait ~160 ms.
    let mut free = IoLatency::new(groups(None), 32, true).unwrap();
    let (lat, _) = run(&mut free, 5 * MS, 31, 20 * S, 2 * S, 20 * S);
    let mean_free = lat.iter().sum::<u64>() / lat.len() as u64;
    assert!(mean_free > 100 * MS, "without a target the reader waits {mean_free} ns");

    let mut c = IoLatency::new(groups(Some(20)), 32, true).unwrap();
    let (lat, batch) = run(&mut c, 5 * MS, 31, 20 * S, 5 * S, 20 * S);
    let mean = lat.iter().sum::<u64>() / lat.len() as u64;
    assert!(mean <= 20 * MS, "reader mean {mean} ns against a 20 ms target");
    // The disk stays busy: what the reader does not use goes to the batch group.
    let total = lat.len() as u64 + batch;
    assert!(total as f64 >= 0.95 * (15 * S / (5 * MS)) as f64, "{total} requests in 15 s");
    assert!(batch > lat.len() as u64, "batch {batch}, reader {}", lat.len());
    assert!(c.max_depth(2).unwrap() < 32 && c.windows_missed > 0);
    assert_eq!(free.max_depth(2), Some(u32::MAX), "a group starts unthrottled");
}

#[test]
fn peers_ramp_back_up_once_the_protected_group_is_quiet_or_met() {
    let mut c = IoLatency::new(groups(Some(20)), 32, true).unwrap();
    // The reader stops at 10 s; its last windows meet the target (no I/O is no miss, and
    // windows without I/O do not scale), so a met window must bring the batch back up.
    let _ = run(&mut c, 5 * MS, 31, 10 * S, 0, 10 * S);
    let throttled = c.max_depth(2).unwrap();
    assert!(throttled < 32, "batch depth {throttled} while the reader runs");
    // A loose target that is met every window lifts the throttling step by step.
    let mut c2 = IoLatency::new(groups(Some(500)), 32, true).unwrap();
    let _ = run(&mut c2, 5 * MS, 31, 10 * S, 0, 10 * S);
    assert_eq!(c2.max_depth(2), Some(u32::MAX));
    assert_eq!(c2.windows_missed, 0);
}

#[test]
fn flash_counts_a_tenth_of_late_ios_as_a_miss() {
    // Non-rotational: the window misses when more than a tenth of the I/Os are late, so the
    // reader's p90 settles within one service time (5 ms) of the target.
    let mut c = IoLatency::new(groups(Some(20)), 32, false).unwrap();
    let (lat, _) = run(&mut c, 5 * MS, 31, 20 * S, 5 * S, 20 * S);
    let mut sorted = lat.clone();
    sorted.sort_unstable();
    let p90 = sorted[sorted.len() * 9 / 10];
    assert!(p90 <= 25 * MS, "reader p90 {p90} ns against a 20 ms target");
}

#[test]
fn a_new_target_takes_effect_and_lifts_throttling() {
    let groups = vec![
        IoLatencyGroup { cgroup: 1, name: "web".into(), target_ns: Some(1_000_000) },
        IoLatencyGroup { cgroup: 2, name: "batch".into(), target_ns: None },
    ];
    let mut c = IoLatency::new(groups, 32, false).unwrap();
    assert_eq!(c.target(1), Some(1_000_000));
    c.set_target(1, Some(250_000)).unwrap();
    assert_eq!(c.target(1), Some(250_000));
    assert_eq!(c.max_depth(2), Some(u32::MAX));
    c.set_target(1, None).unwrap();
    assert_eq!(c.target(1), None);
    assert!(c.set_target(9, None).is_err());
    assert!(c.set_target(1, Some(0)).is_err());
}
