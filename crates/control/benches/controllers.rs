//! Accounting cost per request of the cgroup v2 controllers, in steady state: 1,000 processes
//! in 10 cgroups submit random 4 KiB reads, one per iteration; the iteration releases what the
//! controller lets go, reports it dispatched, and completes the oldest request below once 1,000
//! are in flight, or while the controller holds requests back (a device keeping up with the
//! submissions: without it a controller that limits the depth below 1,000, as io.latency
//! does, never saw a completion and its backlog grew for the whole run, so the figure was
//! the backlog's memory growth, 83–301 ns between runs). The clock advances 1 µs per
//! iteration, so periods, windows and slices turn
//! over along the way. Criterion's time per iteration is the cost of one request through
//! submit, release, dispatch and completion (issue 15 asks ≤ 200 ns for io.cost and
//! io.latency).

use std::collections::VecDeque;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use elevator_control::iocost::{AutopClass, IoCost, IoCostGroup, IoCostModel, IoCostQos};
use elevator_control::iolatency::{IoLatency, IoLatencyGroup};
use elevator_control::throttle::{IoMax, Throttle, ThrottleGroup, THROTL_SLICE_SSD_NS};
use elevator_control::{Bio, Controller};
use elevator_core::{Nanos, Op, Owner, Request, RequestId, NS_PER_US};

const GROUPS: u32 = 10;
const PROCESSES: u64 = 1_000;
const IN_FLIGHT: usize = 1_000;

struct Rig {
    c: Box<dyn Controller>,
    state: u64,
    id: u64,
    now: Nanos,
    below: VecDeque<Bio>,
    out: Vec<Bio>,
}

impl Rig {
    fn new(c: Box<dyn Controller>) -> Rig {
        Rig {
            c,
            state: 0x9e37_79b9_7f4a_7c15,
            id: 0,
            now: 0,
            below: VecDeque::new(),
            out: Vec::new(),
        }
    }

    fn step(&mut self) {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let r = self.state.wrapping_mul(0x2545_f491_4f6c_dd1d);
        self.id += 1;
        let pid = (r >> 40) % PROCESSES;
        let mut owner = Owner::process(pid as u32 + 1);
        owner.cgroup = (pid % u64::from(GROUPS)) as u32;
        let offset = ((r >> 8) % (1 << 28)) * 4096;
        let rq = Request::new(RequestId(self.id), Op::Read, offset, 4096, true, owner, self.now);
        self.c.submit(Bio { device: 0, request: rq.unwrap() }, self.now);
        self.c.release(self.now, &mut self.out);
        for b in self.out.drain(..) {
            self.c.dispatched(&b, self.now);
            self.below.push_back(b);
        }
        // The device completes the oldest request when IN_FLIGHT are out, and also while the
        // controller holds any back (one a step: as fast as they come), so that a controller
        // limiting the depth below IN_FLIGHT (io.latency) still sees completions instead of
        // an ever longer backlog.
        while self.below.len() > IN_FLIGHT {
            let b = self.below.pop_front().unwrap();
            self.c.completed(&b, self.now);
        }
        if self.c.held() > 0 {
            if let Some(b) = self.below.pop_front() {
                self.c.completed(&b, self.now);
            }
        }
        // Keep the held set bounded: a controller throttling harder than one request per µs
        // gets its time advanced to the next timer, as the simulator would.
        self.now += NS_PER_US;
        if self.c.held() > 10_000 {
            if let Some(t) = self.c.next_timer_ns() {
                self.now = self.now.max(t);
            }
        }
    }
}

fn iocost() -> Box<dyn Controller> {
    let groups = (0..GROUPS)
        .map(|g| IoCostGroup {
            cgroup: g,
            name: format!("g{g}"),
            parent: None,
            weight: 100 * (g + 1),
        })
        .collect();
    let qos = IoCostQos::parse_keys(
        "enable=1 rpct=95 rlat=1000 wpct=95 wlat=1000",
        IoCostQos::auto(AutopClass::SsdDfl),
    )
    .unwrap();
    // A device of a million 4 KiB reads a second: as fast as the requests come.
    let model = IoCostModel::parse_keys("rbps=4096000000 rseqiops=1000000 rrandiops=1000000 wbps=4096000000 wseqiops=1000000 wrandiops=1000000", IoCostModel::auto(AutopClass::SsdDfl)).unwrap();
    Box::new(IoCost::new(groups, Some(qos), Some(model), false, 1024).unwrap())
}

fn iolatency() -> Box<dyn Controller> {
    let groups = (0..GROUPS)
        .map(|g| IoLatencyGroup {
            cgroup: g,
            name: format!("g{g}"),
            target_ns: (g < 3).then_some(500_000),
        })
        .collect();
    Box::new(IoLatency::new(groups, 1024, false).unwrap())
}

fn iomax() -> Box<dyn Controller> {
    let limits = IoMax::parse_keys("riops=200000 rbps=max", IoMax::default()).unwrap();
    let groups =
        (0..GROUPS).map(|g| ThrottleGroup { cgroup: g, name: format!("g{g}"), limits }).collect();
    Box::new(Throttle::new(groups, THROTL_SLICE_SSD_NS).unwrap())
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("controller_per_request");
    g.throughput(Throughput::Elements(1));
    for (name, make) in [
        ("io.cost", iocost as fn() -> Box<dyn Controller>),
        ("io.latency", iolatency),
        ("io.max", iomax),
    ] {
        let mut rig = Rig::new(make());
        for _ in 0..100_000 {
            rig.step();
        }
        g.bench_function(name, |b| b.iter(|| rig.step()));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
