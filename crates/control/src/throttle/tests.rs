use super::*;
use elevator_core::{Owner, Request, RequestId};
use proptest::prelude::*;

const MS: Nanos = 1_000_000;
const S: Nanos = 1_000_000_000;

fn bio(id: u64, cgroup: u32, op: Op, len: u64) -> Bio {
    let mut owner = Owner::process(cgroup + 1);
    owner.cgroup = cgroup;
    Bio { device: 0, request: Request::new(RequestId(id), op, 0, len, true, owner, 0).unwrap() }
}

fn throttle(limits: IoMax) -> Throttle {
    Throttle::new(vec![ThrottleGroup { cgroup: 1, name: "a".into(), limits }], THROTL_SLICE_HD_NS)
        .unwrap()
}

/// Keeps `n` bios of `len` bytes waiting from time 0 and follows the controller's timers
/// until `end_ns`; returns the release time of every bio released.
fn drain(t: &mut Throttle, n: u64, op: Op, len: u64, end_ns: Nanos) -> Vec<Nanos> {
    for id in 0..n {
        t.submit(bio(id, 1, op, len), 0);
    }
    let mut times = Vec::new();
    let mut out = Vec::new();
    let mut now = 0;
    let mut seen = std::collections::BTreeSet::new();
    while now < end_ns {
        out.clear();
        t.release(now, &mut out);
        for b in &out {
            assert!(seen.insert(b.request.id.0), "bio {} released twice", b.request.id.0);
            times.push(now);
        }
        match t.next_timer_ns() {
            Some(at) => {
                assert!(at > now, "the timer must move time on");
                now = at;
            }
            None => break,
        }
    }
    times
}

#[test]
fn io_max_lines_parse_as_the_kernel_takes_them() {
    let (dev, l) = IoMax::parse_line("8:16 rbps=2097152 wiops=120").unwrap();
    assert_eq!(dev, (8, 16));
    assert_eq!(l, IoMax { rbps: Some(2_097_152), wiops: Some(120), ..IoMax::default() });
    assert_eq!(l.to_string(), "rbps=2097152 wbps=max riops=max wiops=120");
    // `max` lifts a limit; keys not given keep theirs.
    let l2 = IoMax::parse_keys("rbps=max riops=5000", l).unwrap();
    assert_eq!(l2, IoMax { riops: Some(5000), wiops: Some(120), ..IoMax::default() });
    // I/Os per second are capped at u32::MAX, as tg_set_limit does.
    let big = IoMax::parse_keys("riops=99999999999", IoMax::default()).unwrap();
    assert_eq!(big.riops, Some(u64::from(u32::MAX)));
}

#[test]
fn bad_io_max_lines_name_the_key() {
    let e = |s: &str| IoMax::parse_line(s).unwrap_err().to_string();
    assert_eq!(e("8:0 rbps=abc"), "io.max: `rbps=abc`: expected an integer or `max`");
    assert!(e("8:0 rbps=1").contains("`rbps=1`: must be at least 2"));
    assert!(e("8:0 rbps=0").contains("`rbps=0`"));
    assert!(e("8:0 bps=100").contains("`bps=100`: unknown key"));
    assert!(e("8:0 riops").contains("`riops`: expected KEY=VALUE"));
    assert!(e("sda rbps=100").contains("`sda`: expected the device as MAJ:MIN"));
    assert!(e("8:x rbps=100").contains("`8:x`"));
}

#[test]
fn an_iops_limit_holds_within_two_percent_over_ten_seconds() {
    let mut t = throttle(IoMax { riops: Some(2000), ..IoMax::default() });
    let times = drain(&mut t, 40_000, Op::Read, 4096, 10 * S);
    let n = times.iter().filter(|&&at| at < 10 * S).count() as f64;
    assert!((n / 10.0 - 2000.0).abs() <= 40.0, "{n} I/Os in 10 s");
    // Never more than the limit allows for the time gone, plus the slice's head start.
    for (k, &at) in times.iter().enumerate() {
        let allowed = 2000 * (at + THROTL_SLICE_HD_NS) / S + 1;
        assert!((k as u64) < allowed, "I/O {k} at {at} ns");
    }
}

#[test]
fn a_bps_limit_holds_within_two_percent_over_ten_seconds() {
    let bps = 10 << 20;
    let mut t = throttle(IoMax { rbps: Some(bps), ..IoMax::default() });
    let times = drain(&mut t, 4000, Op::Read, 64 << 10, 10 * S);
    let bytes = times.iter().filter(|&&at| at < 10 * S).count() as f64 * 65536.0;
    let rate = bytes / 10.0;
    assert!((rate - bps as f64).abs() / bps as f64 <= 0.02, "{rate} B/s");
}

#[test]
fn an_idle_group_carries_no_credit_over() {
    let mut t = throttle(IoMax { riops: Some(100), ..IoMax::default() });
    let mut out = Vec::new();
    // One I/O, then 5 s of nothing, then a burst of 100: one slice's worth (10) goes at once,
    // not the 500 that 5 idle seconds would have earned.
    t.submit(bio(0, 1, Op::Read, 4096), 0);
    t.release(0, &mut out);
    assert_eq!(out.len(), 1);
    out.clear();
    for id in 1..=100 {
        t.submit(bio(id, 1, Op::Read, 4096), 5 * S);
    }
    t.release(5 * S, &mut out);
    assert_eq!(out.len(), 10, "one slice of 100 ms at 100 IOPS");
    assert_eq!(t.held(), 90);
    assert!(t.next_timer_ns().unwrap() > 5 * S);
}

#[test]
fn directions_are_limited_apart_and_other_groups_pass() {
    let mut t = throttle(IoMax { wiops: Some(10), ..IoMax::default() });
    let mut out = Vec::new();
    for id in 0..5 {
        t.submit(bio(id, 1, Op::Write, 4096), 0);
    }
    for id in 5..10 {
        t.submit(bio(id, 1, Op::Read, 4096), 0);
        t.submit(bio(id + 100, 7, Op::Write, 4096), 0);
    }
    t.release(0, &mut out);
    // Reads of group 1 and everything of the unconfigured group 7 pass; one slice's worth
    // (1) of group 1's writes.
    let writes_of_1 =
        out.iter().filter(|b| b.request.owner.cgroup == 1 && b.request.op == Op::Write).count();
    assert_eq!(writes_of_1, 1);
    assert_eq!(out.len(), 1 + 5 + 5);
    assert_eq!(t.held(), 4);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the limits and arrivals, every bio is released once, and no direction ever
    /// runs ahead of its limit by more than one slice's worth (and one bio).
    #[test]
    fn every_bio_once_and_never_past_the_limit(
        riops in 2u64..5000,
        rbps in 10_000u64..50_000_000,
        arrivals in proptest::collection::vec((0u64..3000, 1u64..64), 1..300),
    ) {
        let mut t = throttle(IoMax { riops: Some(riops), rbps: Some(rbps), ..IoMax::default() });
        let mut arrivals: Vec<(Nanos, u64)> = arrivals.into_iter().map(|(ms, k)| (ms * MS, k * 4096)).collect();
        arrivals.sort();
        let mut released: Vec<(Nanos, u64)> = Vec::new();
        let mut out = Vec::new();
        let mut i = 0;
        let mut now = 0;
        loop {
            while i < arrivals.len() && arrivals[i].0 <= now {
                t.submit(bio(i as u64, 1, Op::Read, arrivals[i].1), now);
                i += 1;
            }
            out.clear();
            t.release(now, &mut out);
            for b in &out {
                released.push((now, b.request.len_bytes));
            }
            let next_arrival = arrivals.get(i).map(|a| a.0);
            now = match (next_arrival, t.next_timer_ns()) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) { Some(x) => x, None => break },
            };
        }
        prop_assert_eq!(released.len(), arrivals.len());
        prop_assert_eq!(t.held(), 0);
        // Over any prefix: I/Os and bytes within the limit for the time since the first
        // arrival, plus one slice's head start and the last bio.
        let start = arrivals[0].0;
        let (mut ios, mut bytes) = (0u64, 0u64);
        for &(at, len) in &released {
            ios += 1;
            bytes += len;
            let span = u128::from(at - start + THROTL_SLICE_HD_NS);
            let ios_max = (u128::from(riops) * span / u128::from(S)) as u64 + 1;
            let bytes_max = (u128::from(rbps) * span / u128::from(S)) as u64 + len;
            prop_assert!(ios <= ios_max, "{ios} I/Os by {at} ns, limit {riops}");
            prop_assert!(bytes <= bytes_max, "{bytes} B by {at} ns, limit {rbps}");
        }
    }
}
