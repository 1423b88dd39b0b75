//! Property: a dm-ioband device group, of either release's rules (v1.10, v1.14) and any
//! policy (weight, weight-iosize, range-bw), lets every bio submitted to it go down exactly
//! once, and never stalls:
//! while it holds bios, or a submitter sleeps on one of its groups, a completion or its
//! timer is to come. Submitters that must sleep (`submitter_sleeps_on`) are parked and
//! retried when their wait queue is woken, as the volume stack does.

use std::collections::{BTreeMap, BTreeSet};

use elevator_control::ioband::{
    BwRange, GroupType, IobandDevice, IobandShare, IobandVersion, Policy, ShareSettings,
};
use elevator_control::{Bio, Controller};
use elevator_core::{Nanos, Op, Owner, Request, RequestId};
use proptest::prelude::*;

/// One bio: its ioband device, submitting pid, whether it reads, whether it is sync, pages,
/// gap after the previous bio (ns) and its latency below (ns).
type BioSpec = (u32, u32, bool, bool, u64, u64, u64);

#[derive(Clone, Debug)]
struct Case {
    v1_14: bool,
    policy: Policy,
    io_limit: u32,
    io_throttle: u32,
    weights: Vec<u32>,
    bios: Vec<BioSpec>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        (
            any::<bool>(),
            prop::sample::select(vec![Policy::Weight, Policy::WeightIosize, Policy::RangeBw]),
        ),
        1u32..17,
        1u32..9,
        prop::collection::vec(1u32..201, 1..4),
        prop::collection::vec(
            (
                0u32..3,
                0u32..4,
                any::<bool>(),
                any::<bool>(),
                1u64..33,
                0u64..3_000_000,
                10_000u64..20_000_000,
            ),
            1..300,
        ),
    )
        .prop_map(|((v1_14, policy), io_limit, io_throttle, weights, bios)| Case {
            v1_14,
            policy,
            io_limit,
            io_throttle,
            weights,
            bios,
        })
}

/// The devices of the group: each with a default group and, for pids 2 and 3, a group of
/// their own (`group_type = pid`); under range-bw each group's range is its weight × 100
/// KB/s to twice that.
fn share(c: &Case) -> IobandShare {
    let settings = ShareSettings {
        policy: c.policy,
        token_base: 0,
        io_throttle: c.io_throttle,
        io_limit: c.io_limit,
        version: if c.v1_14 { IobandVersion::V1_14 } else { IobandVersion::V1_10 },
    };
    let devices = c
        .weights
        .iter()
        .enumerate()
        .map(|(d, &w)| {
            let groups = vec![(2, w / 2 + 1), (3, 2 * w)];
            let range =
                |w: u32| BwRange { min_kbs: u64::from(w) * 100, max_kbs: u64::from(w) * 200 };
            let ranges = if c.policy == Policy::RangeBw {
                std::iter::once(w).chain(groups.iter().map(|g| g.1)).map(range).collect()
            } else {
                Vec::new()
            };
            IobandDevice {
                name: format!("ioband{d}"),
                group_type: GroupType::Pid,
                weight: w,
                groups,
                ranges,
            }
        })
        .collect();
    IobandShare::new(settings, devices).unwrap()
}

fn bio(id: u64, spec: &BioSpec, devices: usize) -> Bio {
    let (device, pid, read, sync, pages, _, _) = *spec;
    let op = if read { Op::Read } else { Op::Write };
    let request = Request::new(
        RequestId(id),
        op,
        id * 4096,
        pages * 4096,
        read || sync,
        Owner::process(pid),
        0,
    )
    .unwrap();
    Bio { device: device % devices as u32, request }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("IOBAND_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200),
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_bio_goes_down_once_and_the_group_never_stalls(c in case()) {
        let mut s = share(&c);
        let n = c.bios.len();
        let mut released: BTreeSet<u64> = BTreeSet::new();
        // Bios at the device below, by completion time.
        let mut below: BTreeMap<(Nanos, u64), Bio> = BTreeMap::new();
        // Parked submitters: (wait queue, bio), in the order they fell asleep.
        let mut parked: Vec<(usize, Bio)> = Vec::new();
        let mut out = Vec::new();
        let mut woken = Vec::new();
        let (mut now, mut next, mut arrive_at) = (0, 0usize, c.bios[0].5);
        for _ in 0..50 * n + 1000 {
            // The next event: an arrival, a completion or the group's timer.
            let completion = below.keys().next().map(|&(t, _)| t);
            let at = (next < n).then_some(arrive_at).into_iter()
                .chain(completion)
                .chain(s.next_timer_ns())
                .min();
            let Some(at) = at else { break };
            now = now.max(at);
            if next < n && arrive_at <= now {
                let b = bio(next as u64, &c.bios[next], c.weights.len());
                match s.submitter_sleeps_on(&b) {
                    Some(key) => parked.push((key, b)),
                    None => s.submit(b, now),
                }
                next += 1;
                if next < n {
                    arrive_at = now + c.bios[next].5;
                }
            }
            while let Some((&(t, id), _)) = below.iter().next() {
                if t > now {
                    break;
                }
                let b = below.remove(&(t, id)).unwrap();
                s.completed(&b, now);
            }
            // Release, then let the woken submitters go on while their queue stays open.
            loop {
                s.release(now, &mut out);
                for b in out.drain(..) {
                    let id = b.request.id.0;
                    prop_assert!(released.insert(id), "bio {id} went down twice");
                    below.insert((now + c.bios[id as usize].6, id), b);
                }
                s.take_woken(&mut woken);
                if woken.is_empty() {
                    break;
                }
                for key in woken.drain(..) {
                    let mut k = 0;
                    while k < parked.len() {
                        if parked[k].0 != key {
                            k += 1;
                            continue;
                        }
                        if s.submitter_sleeps_on(&parked[k].1).is_some() {
                            break;
                        }
                        let (_, b) = parked.remove(k);
                        s.submit(b, now);
                    }
                }
            }
            let stalled = (s.held() > 0 || !parked.is_empty())
                && below.is_empty()
                && s.next_timer_ns().is_none()
                && next == n;
            prop_assert!(!stalled, "stalled at {now}: {} held, {} asleep", s.held(), parked.len());
        }
        prop_assert_eq!(released.len(), n, "{} held, {} asleep", s.held(), parked.len());
        prop_assert!(below.is_empty() && parked.is_empty() && s.held() == 0);
    }
}
