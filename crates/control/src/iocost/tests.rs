use super::*;
use elevator_core::{Op, Owner, RandomStream, Request, RequestId};
use std::collections::{BTreeSet, VecDeque};

const MS: Nanos = 1_000_000;
const S: Nanos = 1_000_000_000;

fn group(cgroup: u32, weight: u32) -> IoCostGroup {
    IoCostGroup { cgroup, name: format!("g{cgroup}"), parent: None, weight }
}

fn bio(id: u64, cgroup: u32, op: Op, offset_bytes: u64, len_bytes: u64) -> Bio {
    let mut owner = Owner::process(cgroup + 1);
    owner.cgroup = cgroup;
    Bio {
        device: 0,
        request: Request::new(RequestId(id), op, offset_bytes, len_bytes, true, owner, 0).unwrap(),
    }
}

fn qos(words: &str) -> IoCostQos {
    IoCostQos::parse_keys(words, IoCostQos::auto(AutopClass::Hdd)).unwrap()
}

#[test]
fn linear_coefficients_follow_calc_lcoefs() {
    // 1 s of vtime over 100 pages/s is 1/100 s a page; 50 IO/s leaves 1/50 − 1/100 an IO.
    let (page, seq, rand) = calc_lcoefs(100 * 4096, 50, 25);
    assert_eq!(page, VTIME_PER_SEC.div_ceil(100));
    assert_eq!(seq, VTIME_PER_SEC.div_ceil(50) - page);
    assert_eq!(rand, VTIME_PER_SEC.div_ceil(25) - page);
    // An IO rate above the page rate costs nothing beyond its pages.
    assert_eq!(calc_lcoefs(100 * 4096, 1000, 0), (page, 0, 0));
    // The HDD class: a random 4 KiB read is 1/370 s.
    let c = IoCostModel::auto(AutopClass::Hdd).lcoefs();
    let rand_read_us = (c.randio[0] + c.page[0]) / VTIME_PER_USEC;
    assert_eq!(rand_read_us, 1_000_000 / 370);
}

#[test]
fn qos_lines_parse_as_the_kernel_does() {
    let q = qos("enable=1 ctrl=user rpct=95.5 rlat=10000 wpct=90 wlat=20000 min=50 max=150.25");
    assert!(q.enable && q.user);
    assert_eq!((q.rppm, q.rlat_us, q.wppm, q.wlat_us), (955_000, 10_000, 900_000, 20_000));
    assert_eq!((q.min_ppm, q.max_ppm), (500_000, 1_502_500));
    // A parameter makes the settings the user's even after ctrl=auto; ctrl=auto alone does not.
    assert!(qos("ctrl=auto rlat=5").user);
    assert!(!qos("enable=1 ctrl=auto").user);
    // min and max are clamped to 1 %..10000 %.
    assert_eq!(qos("min=0.5").min_ppm, VRATE_MIN_PPM);
    for (bad, word) in [
        ("rpct=abc", "rpct=abc"),
        ("rpct=100.01", "rpct=100.01"),
        ("rpct=9.999", "rpct=9.999"),
        ("rlat=-1", "rlat=-1"),
        ("rlat=60000001", "rlat=60000001"),
        ("ctrl=manual", "ctrl=manual"),
        ("speed=1", "speed=1"),
        ("enable", "enable"),
    ] {
        let e = IoCostQos::parse_keys(bad, IoCostQos::auto(AutopClass::Hdd)).unwrap_err();
        assert!(e.contains(word), "{bad}: {e}");
    }
    let e = IoCostQos::parse_keys("min=200 max=100", IoCostQos::auto(AutopClass::Hdd));
    assert!(e.unwrap_err().contains("above max"));
}

#[test]
fn model_lines_parse_as_the_kernel_does() {
    let m = IoCostModel::parse_keys(
        "ctrl=user model=linear rbps=1000000 rrandiops=100",
        IoCostModel::auto(AutopClass::SsdDfl),
    )
    .unwrap();
    assert!(m.user);
    assert_eq!((m.rbps, m.rrandiops, m.rseqiops), (1_000_000, 100, 8_932));
    for bad in ["model=quadratic", "rbps=1.5", "wiops=3", "rbps=2000000000000", "ctrl=x"] {
        let e = IoCostModel::parse_keys(bad, IoCostModel::auto(AutopClass::Hdd)).unwrap_err();
        assert!(e.contains(bad), "{bad}: {e}");
    }
}

#[test]
fn weight_lines_parse_as_the_kernel_does() {
    assert_eq!(parse_io_weight_line("default 200").unwrap(), (None, Some(200)));
    assert_eq!(parse_io_weight_line("300").unwrap(), (None, Some(300)));
    assert_eq!(parse_io_weight_line("8:16 50").unwrap(), (Some("8:16"), Some(50)));
    assert_eq!(parse_io_weight_line("8:16 default").unwrap(), (Some("8:16"), None));
    for bad in ["0", "10001", "default x", "8:0 -3", ""] {
        assert!(parse_io_weight_line(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_period_is_a_multiple_of_the_looser_target() {
    let mk = |q: &str| {
        let c = IoCost::new(vec![group(1, 100)], Some(qos(q)), None, true, 32).unwrap();
        c.period_us()
    };
    assert_eq!(mk("enable=1 rpct=95 rlat=10000 wlat=5000"), 20_000);
    assert_eq!(mk("enable=1 rpct=50 rlat=10000 wlat=5000"), 100_000);
    assert_eq!(mk("enable=1 rpct=0 rlat=10 wlat=10"), MIN_PERIOD_US);
    assert_eq!(mk("enable=1 rpct=0 rlat=900000 wlat=10"), MAX_PERIOD_US);
    // Automatic parameters of an HDD: 250 ms targets, no percentile: 500 ms periods.
    let c = IoCost::new(vec![group(1, 100)], None, None, true, 32).unwrap();
    assert_eq!((c.period_us(), c.class()), (500_000, AutopClass::Hdd));
    let c = IoCost::new(vec![group(1, 100)], None, None, false, 1).unwrap();
    assert_eq!(c.class(), AutopClass::SsdQd1);
}

#[test]
fn bad_groups_are_refused() {
    assert!(IoCost::new(vec![group(1, 0)], None, None, true, 32).is_err());
    assert!(IoCost::new(vec![group(1, 100), group(1, 50)], None, None, true, 32).is_err());
    let orphan = IoCostGroup { parent: Some(9), ..group(1, 100) };
    assert!(IoCost::new(vec![orphan], None, None, true, 32).unwrap_err().contains("parent"));
}

/// A device that takes up to `qd` requests (they are then *started*) and serves them one at a
/// time in `service_ns` each, FIFO, and clients that keep `depth[g]` requests of group `g`
/// outstanding (random 4 KiB reads) — or, when `think_ns[g]` is set, submit one request,
/// wait for it, think, and submit again. Returns the completions per group in
/// `[warmup, end)`, checking that every request is released and completed exactly once;
/// `lat_ns` keeps each request's time from release to completion (what io.cost's QoS sees).
struct Rig {
    ioc: IoCost,
    qd: usize,
    started: VecDeque<(Nanos, Bio)>,
    next_id: u64,
    rng: RandomStream,
    fifo: VecDeque<Bio>,
    busy_until: Option<(Nanos, Bio)>,
    released: BTreeSet<u64>,
    released_at: std::collections::BTreeMap<u64, Nanos>,
    completed: BTreeSet<u64>,
    think_until: Vec<Option<Nanos>>,
    lat_ns: Vec<Vec<Nanos>>,
}

impl Rig {
    fn new(ioc: IoCost, groups: usize, qd: usize) -> Rig {
        Rig {
            ioc,
            qd,
            started: VecDeque::new(),
            next_id: 0,
            rng: RandomStream::new(7, 0),
            fifo: VecDeque::new(),
            busy_until: None,
            released: BTreeSet::new(),
            released_at: std::collections::BTreeMap::new(),
            completed: BTreeSet::new(),
            think_until: vec![None; groups],
            lat_ns: vec![Vec::new(); groups],
        }
    }

    fn submit(&mut self, g: u32, now: Nanos) {
        let offset = self.rng.below(1 << 20) * 4096;
        let mut b = bio(self.next_id, g, Op::Read, offset, 4096);
        b.request.submit_ns = now;
        self.next_id += 1;
        self.ioc.submit(b, now);
    }

    fn run(
        &mut self,
        depth: &[u32],
        think_ns: &[Option<Nanos>],
        service_ns: Nanos,
        warmup: Nanos,
        end: Nanos,
    ) -> Vec<u64> {
        for (g, &n) in depth.iter().enumerate() {
            for _ in 0..n {
                self.submit(g as u32, 0);
            }
        }
        let mut done = vec![0u64; depth.len()];
        let mut now = 0;
        let mut out = Vec::new();
        while now < end {
            out.clear();
            self.ioc.release(now, &mut out);
            for b in out.drain(..) {
                assert!(self.released.insert(b.request.id.0), "released twice");
                self.released_at.insert(b.request.id.0, now);
                self.fifo.push_back(b);
            }
            while self.started.len() + usize::from(self.busy_until.is_some()) < self.qd {
                let Some(b) = self.fifo.pop_front() else { break };
                self.ioc.dispatched(&b, now);
                self.started.push_back((now, b));
            }
            if self.busy_until.is_none() {
                if let Some((_, b)) = self.started.pop_front() {
                    self.busy_until = Some((now + service_ns, b));
                }
            }
            let mut next = self.ioc.next_timer_ns().unwrap_or(Nanos::MAX);
            if let Some((t, _)) = self.busy_until {
                next = next.min(t);
            }
            for t in self.think_until.iter().flatten() {
                next = next.min(*t);
            }
            assert!(next < Nanos::MAX, "stalled with {} held", self.ioc.held());
            now = next.max(now);
            if let Some((t, b)) = self.busy_until {
                if t <= now {
                    self.busy_until = None;
                    self.ioc.completed(&b, now);
                    assert!(self.completed.insert(b.request.id.0), "completed twice");
                    let g = b.request.owner.cgroup as usize;
                    if now >= warmup {
                        done[g] += 1;
                        let at = self.released_at[&b.request.id.0];
                        self.lat_ns[g].push(now - at);
                    }
                    match think_ns[g] {
                        Some(think) => self.think_until[g] = Some(now + think),
                        None => self.submit(g as u32, now),
                    }
                }
            }
            for g in 0..self.think_until.len() {
                if self.think_until[g].is_some_and(|t| t <= now) {
                    self.think_until[g] = None;
                    self.submit(g as u32, now);
                }
            }
        }
        done
    }
}

/// A model that says a random 4 KiB read takes `us` µs.
fn model_us(us: u64) -> IoCostModel {
    let iops = 1_000_000 / us;
    IoCostModel::parse_keys(
        &format!("rbps=400000000 rseqiops={iops} rrandiops={iops} wbps=400000000 wseqiops={iops} wrandiops={iops}"),
        IoCostModel::auto(AutopClass::Hdd),
    )
    .unwrap()
}

#[test]
fn weights_are_honoured_when_both_groups_saturate() {
    for (w0, w1) in [(200, 100), (100, 100), (500, 100)] {
        let ioc = IoCost::new(
            vec![group(0, w0), group(1, w1)],
            Some(qos("enable=1 rpct=95 rlat=5000 wpct=95 wlat=5000")),
            Some(model_us(1000)),
            true,
            1,
        )
        .unwrap();
        let mut rig = Rig::new(ioc, 2, 32);
        let done = rig.run(&[16, 16], &[None, None], MS, 2 * S, 12 * S);
        let share = done[0] as f64 / (done[0] + done[1]) as f64;
        let want = f64::from(w0) / f64::from(w0 + w1);
        assert!((share - want).abs() < 0.05 * want, "{w0}:{w1}: share {share:.3}, want {want:.3}");
        // The device stays busy: the controller throttles, it does not waste.
        let total = (done[0] + done[1]) as f64 / 10.0;
        assert!(total > 900.0, "{w0}:{w1}: {total} IO/s of 1000");
    }
}

#[test]
fn an_idle_group_donates_its_share() {
    // Group 0 (weight 400) reads once every 20 ms; group 1 (weight 100) saturates. Group 1
    // gets the device's time that group 0 leaves, not just its 20 %.
    let ioc = IoCost::new(
        vec![group(0, 400), group(1, 100)],
        Some(qos("enable=1 rpct=95 rlat=5000 wpct=95 wlat=5000")),
        Some(model_us(1000)),
        true,
        1,
    )
    .unwrap();
    let mut rig = Rig::new(ioc, 2, 32);
    let done = rig.run(&[1, 16], &[Some(20 * MS), None], MS, 2 * S, 12 * S);
    let g1_per_s = done[1] as f64 / 10.0;
    assert!(g1_per_s > 850.0, "group 1 got {g1_per_s} IO/s of the ~950 group 0 leaves");
    assert!(rig.ioc.stats().donations > 0);
    // Group 0 still gets its every request served quickly.
    let worst = rig.lat_ns[0].iter().max().copied().unwrap_or(0);
    assert!(worst < 100 * MS, "group 0's worst latency {} ms", worst / MS);
}

#[test]
fn missed_latency_targets_slow_vrate_down() {
    // A 5 ms read target at the 90th percentile on a device whose queue makes reads wait
    // longer: the controller lowers vrate until the queue drains.
    let ioc = IoCost::new(
        vec![group(0, 100)],
        Some(qos("enable=1 rpct=90 rlat=5000 wpct=90 wlat=5000")),
        Some(model_us(250)),
        true,
        1,
    )
    .unwrap();
    let mut rig = Rig::new(ioc, 1, 32);
    rig.run(&[32], &[None], MS, 5 * S, 20 * S);
    assert!(rig.ioc.stats().periods_busy > 10);
    let vrate = rig.ioc.vrate_ppm();
    assert!(vrate < 400_000, "vrate {vrate} ppm: the model says 4× faster than the device");
}

#[test]
fn a_latency_target_protects_a_reader_from_a_noisy_neighbour() {
    // Group 0 reads one block at a time; group 1 keeps 32 reads outstanding. Both weigh the
    // same. Without io.cost the device's queue holds 32 of group 1's reads ahead of each of
    // group 0's; with a 5 ms p95 target vrate drops until the queue is short.
    let run = |enable: &str| {
        let ioc = IoCost::new(
            vec![group(0, 100), group(1, 100)],
            Some(qos(&format!("{enable} rpct=95 rlat=5000 wpct=95 wlat=5000 min=50 max=100"))),
            Some(model_us(1000)),
            true,
            32,
        )
        .unwrap();
        let mut rig = Rig::new(ioc, 2, 32);
        let done = rig.run(&[1, 32], &[None, None], MS, 5 * S, 25 * S);
        let mut lat = rig.lat_ns[0].clone();
        lat.sort_unstable();
        (lat[lat.len() * 95 / 100], done)
    };
    let (p95_off, _) = run("enable=0");
    let (p95_on, done) = run("enable=1");
    eprintln!("p95 off {} µs, on {} µs, done {done:?}", p95_off / 1000, p95_on / 1000);
    assert!(p95_off > 30 * MS);
    assert!(p95_on < p95_off / 2);
}

#[test]
fn a_short_group_raises_vrate_when_targets_are_met() {
    // The model says 4 ms a read, the device takes 1: one group, throttled while the device
    // idles, with latencies well under target: vrate climbs.
    let ioc = IoCost::new(
        vec![group(0, 100)],
        Some(qos("enable=1 rpct=90 rlat=50000")),
        Some(model_us(4000)),
        true,
        1,
    )
    .unwrap();
    let mut rig = Rig::new(ioc, 1, 32);
    let done = rig.run(&[4], &[None], MS, 20 * S, 30 * S);
    assert!(rig.ioc.stats().periods_short > 10);
    assert!(rig.ioc.vrate_ppm() > 2_000_000, "vrate {} ppm", rig.ioc.vrate_ppm());
    assert!(done[0] > 5000, "{} reads in 10 s", done[0]);
}

#[test]
fn merges_over_budget_become_debt_and_are_paid_back() {
    let mut ioc =
        IoCost::new(vec![group(0, 100)], Some(qos("enable=1")), Some(model_us(1000)), true, 32)
            .unwrap();
    let mut out = Vec::new();
    // Spend the starting budget with random reads, then a contiguous run of merges.
    let mut id = 0;
    for k in 0..400u64 {
        ioc.submit(bio(id, 0, Op::Read, k * (1 << 30), 4096), 0);
        id += 1;
    }
    ioc.release(0, &mut out);
    let first_wave = out.len();
    assert!(first_wave < 400, "the budget ran out");
    let last = out.last().unwrap().request;
    for k in 0..64u64 {
        let off = last.end_sector() * 512 + k * 65536;
        ioc.submit(bio(id, 0, Op::Read, off, 65536), 0);
        id += 1;
    }
    out.clear();
    ioc.release(0, &mut out);
    assert_eq!(out.len(), 64, "merges never wait");
    assert!(ioc.debt(0).unwrap() > 0);
    assert!(ioc.stats().debts > 0);
}

#[test]
fn every_request_completes_exactly_once_and_nothing_stays_held() {
    for seed in 0..20u64 {
        let mut rng = RandomStream::new(seed, 1);
        let groups: Vec<IoCostGroup> =
            (0..4).map(|g| group(g, 1 + rng.below(1000) as u32)).collect();
        let q =
            qos(&format!("enable=1 rpct={} rlat={}", rng.below(100), 1000 + rng.below(100_000)));
        let mut ioc =
            IoCost::new(groups, Some(q), Some(model_us(200 + rng.below(5000))), seed % 2 == 0, 8)
                .unwrap();
        let mut now = 0;
        let mut inflight: Vec<(Nanos, Bio)> = Vec::new();
        let mut released = BTreeSet::new();
        let mut completed = 0usize;
        let n = 2000u64;
        let mut out = Vec::new();
        let mut submitted = 0;
        while completed < n as usize {
            if submitted < n && rng.below(3) > 0 {
                let g = rng.below(5) as u32; // group 4 is the root's: it bypasses
                let op = if rng.below(4) == 0 { Op::Write } else { Op::Read };
                let off =
                    if rng.below(2) == 0 { submitted * 4096 } else { rng.below(1 << 24) * 4096 };
                ioc.submit(bio(submitted, g, op, off, 4096 * (1 + rng.below(32))), now);
                submitted += 1;
            }
            out.clear();
            ioc.release(now, &mut out);
            for b in out.drain(..) {
                assert!(released.insert(b.request.id.0), "seed {seed}: released twice");
                ioc.dispatched(&b, now);
                inflight.push((now + 100_000 + rng.below(10_000_000), b));
            }
            inflight.sort_by_key(|(t, b)| (*t, b.request.id.0));
            let next_done = inflight.first().map(|(t, _)| *t);
            let step = if submitted < n { Some(now + rng.below(2_000_000)) } else { None };
            let next = [next_done, ioc.next_timer_ns(), step].into_iter().flatten().min();
            let Some(next) = next else {
                panic!("seed {seed}: stalled with {} held", ioc.held());
            };
            now = next.max(now);
            while inflight.first().is_some_and(|(t, _)| *t <= now) {
                let (_, b) = inflight.remove(0);
                ioc.completed(&b, now);
                completed += 1;
            }
        }
        assert_eq!(released.len(), n as usize, "seed {seed}");
        assert_eq!(ioc.held(), 0, "seed {seed}");
    }
}

#[test]
fn nested_groups_split_their_parents_share() {
    // a (200) and b (100) under the root; a1 and a2 (100 each) under a: 1/3, 1/3, 1/3.
    let groups = vec![
        IoCostGroup { cgroup: 0, name: "a".into(), parent: None, weight: 200 },
        IoCostGroup { cgroup: 1, name: "b".into(), parent: None, weight: 100 },
        IoCostGroup { cgroup: 2, name: "a/a1".into(), parent: Some(0), weight: 100 },
        IoCostGroup { cgroup: 3, name: "a/a2".into(), parent: Some(0), weight: 100 },
    ];
    let q = qos("enable=1 rpct=95 rlat=5000 wpct=95 wlat=5000");
    let ioc = IoCost::new(groups, Some(q), Some(model_us(1000)), true, 1).unwrap();
    let mut rig = Rig::new(ioc, 4, 32);
    let done = rig.run(&[0, 16, 16, 16], &[None; 4], MS, 2 * S, 12 * S);
    let total = (done[1] + done[2] + done[3]) as f64;
    for (g, &n) in done.iter().enumerate().skip(1) {
        let share = n as f64 / total;
        assert!((share - 1.0 / 3.0).abs() < 0.02, "group {g}: {share:.3}");
    }
    assert_eq!(rig.ioc.hweights(2).map(|(a, _)| a), Some(WEIGHT_ONE / 3));
}
