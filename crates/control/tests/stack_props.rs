//! Property: every bio submitted to any stack of controllers (io.max, mClock, io.latency,
//! io.cost, in the kernel's order) is released exactly once and, once completed below,
//! leaves nothing held — whatever the groups, settings, sizes and device latencies. A stack
//! that holds bios always has a timer or a completion to come (it never stalls).

use std::collections::BTreeSet;

use elevator_control::iocost::{AutopClass, IoCost, IoCostGroup, IoCostModel, IoCostQos};
use elevator_control::iolatency::{IoLatency, IoLatencyGroup};
use elevator_control::mclock::{Mclock, MclockGroup};
use elevator_control::stack::Stack;
use elevator_control::throttle::{IoMax, Throttle, ThrottleGroup, THROTL_SLICE_SSD_NS};
use elevator_control::{Bio, Controller};
use elevator_core::{Nanos, Op, Owner, Request, RequestId};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Case {
    layers: [bool; 4],
    groups: u32,
    riops: u32,
    reservation: u32,
    limit: u32,
    target_us: u64,
    rlat_us: u64,
    model_us: u64,
    bios: Vec<(u32, bool, u64, u64, u64, u64)>, // group, write, offset 4k, pages, gap ns, latency ns
}

fn case() -> impl Strategy<Value = Case> {
    (
        any::<[bool; 4]>(),
        1u32..6,
        2u32..5000,
        (0u32..3000, 0u32..5000),
        100u64..50_000,
        (100u64..100_000, 20u64..5000),
        prop::collection::vec(
            (
                0u32..7,
                any::<bool>(),
                0u64..1 << 20,
                1u64..64,
                0u64..3_000_000,
                10_000u64..20_000_000,
            ),
            1..400,
        ),
    )
        .prop_map(
            |(
                layers,
                groups,
                riops,
                (reservation, limit),
                target_us,
                (rlat_us, model_us),
                bios,
            )| {
                Case {
                    layers,
                    groups,
                    riops,
                    reservation,
                    limit,
                    target_us,
                    rlat_us,
                    model_us,
                    bios,
                }
            },
        )
}

fn stack(c: &Case) -> Stack {
    let mut layers: Vec<Box<dyn Controller>> = Vec::new();
    let names = |g: u32| format!("g{g}");
    if c.layers[0] || !c.layers.iter().any(|&l| l) {
        let limits =
            IoMax::parse_keys(&format!("riops={} wbps=4194304", c.riops), IoMax::default())
                .unwrap();
        let groups =
            (0..c.groups).map(|g| ThrottleGroup { cgroup: g, name: names(g), limits }).collect();
        layers.push(Box::new(Throttle::new(groups, THROTL_SLICE_SSD_NS).unwrap()));
    }
    if c.layers[1] {
        let limit = if c.limit == 0 { 0 } else { c.limit.max(c.reservation) };
        let groups = (0..c.groups)
            .map(|g| MclockGroup {
                cgroup: g,
                name: names(g),
                reservation_iops: c.reservation,
                weight: 1 + g * 100,
                limit_iops: limit,
            })
            .collect();
        layers.push(Box::new(Mclock::new(groups, 8).unwrap()));
    }
    if c.layers[2] {
        let groups = (0..c.groups)
            .map(|g| IoLatencyGroup {
                cgroup: g,
                name: names(g),
                target_ns: (g == 0).then_some(c.target_us * 1000),
            })
            .collect();
        layers.push(Box::new(IoLatency::new(groups, 16, false).unwrap()));
    }
    if c.layers[3] {
        let groups = (0..c.groups)
            .map(|g| IoCostGroup { cgroup: g, name: names(g), parent: None, weight: 1 + g * 1000 })
            .collect();
        let qos = IoCostQos::parse_keys(
            &format!("enable=1 rpct=90 rlat={} wpct=90 wlat={}", c.rlat_us, c.rlat_us),
            IoCostQos::auto(AutopClass::SsdDfl),
        )
        .unwrap();
        let iops = 1_000_000 / c.model_us;
        let model = IoCostModel::parse_keys(&format!("rbps=100000000 rseqiops={iops} rrandiops={iops} wbps=100000000 wseqiops={iops} wrandiops={iops}"), IoCostModel::auto(AutopClass::SsdDfl)).unwrap();
        layers.push(Box::new(IoCost::new(groups, Some(qos), Some(model), false, 16).unwrap()));
    }
    Stack::new(layers).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn every_bio_goes_down_once_and_nothing_stays_held(c in case()) {
        let mut s = stack(&c);
        let mut now: Nanos = 0;
        let mut below: Vec<(Nanos, Bio)> = Vec::new();
        let mut released = BTreeSet::new();
        let mut completed = 0usize;
        let mut out = Vec::new();
        let mut next = 0usize;
        let mut latency_of = std::collections::BTreeMap::new();
        let mut steps = 0u64;
        while completed < c.bios.len() {
            steps += 1;
            prop_assert!(steps < 10_000_000, "no progress");
            if next < c.bios.len() {
                let (g, write, off, pages, _, lat) = c.bios[next];
                // Group c.groups.. is unconfigured: the root's.
                let mut owner = Owner::process(g + 1);
                owner.cgroup = g.min(c.groups);
                let op = if write { Op::Write } else { Op::Read };
                let rq = Request::new(RequestId(next as u64), op, off * 4096, pages * 4096, true, owner, now).unwrap();
                latency_of.insert(next as u64, lat);
                s.submit(Bio { device: 0, request: rq }, now);
                next += 1;
            }
            s.release(now, &mut out);
            for b in out.drain(..) {
                prop_assert!(released.insert(b.request.id.0), "bio {} released twice", b.request.id.0);
                s.dispatched(&b, now);
                below.push((now + latency_of[&b.request.id.0], b));
            }
            below.sort_by_key(|(t, b)| (*t, b.request.id.0));
            let gap = (next < c.bios.len()).then(|| now + c.bios[next].4);
            let due = [below.first().map(|(t, _)| *t), s.next_timer_ns(), gap].into_iter().flatten().min();
            let Some(t) = due else {
                prop_assert!(false, "{} bios held with no timer, completion or arrival to come", s.held());
                unreachable!()
            };
            now = t.max(now);
            while below.first().is_some_and(|(t, _)| *t <= now) {
                let (_, b) = below.remove(0);
                s.completed(&b, now);
                completed += 1;
            }
        }
        prop_assert_eq!(released.len(), c.bios.len());
        prop_assert_eq!(s.held(), 0);
    }
}
