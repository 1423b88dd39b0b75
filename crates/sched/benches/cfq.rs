//! CFQ's (and AS's, kyber's and BFQ's) per-request cost with 1,000 active sync queues in 10 groups: each queue (process) has
//! one request queued at a random sector; one iteration dispatches a request, completes it
//! 1 µs later and lets its process submit the next one. When CFQ idles (`WaitUntil`), the clock
//! jumps to the wake-up time, so slice expiry, idling and group switching are part of the mix.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use elevator_core::{Cgroup, Nanos, Op, Owner, Request, RequestId, NS_PER_US};
use elevator_sched::anticipatory::Anticipatory;
use elevator_sched::bfq::Bfq;
use elevator_sched::cfq::Cfq;
use elevator_sched::kyber::Kyber;
use elevator_sched::{Dispatch, Scheduler};

const QUEUES: u32 = 1_000;
const GROUPS: u32 = 10;

struct Rig<S: Scheduler> {
    s: S,
    now: Nanos,
    id: u64,
    rng: u64,
}

impl<S: Scheduler> Rig<S> {
    fn rq(&mut self, pid: u32) -> Request {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.id += 1;
        let mut owner = Owner::process(pid);
        owner.cgroup = 1 + pid % GROUPS;
        let sector = (self.rng % 1_000_000_000) & !7;
        Request::new(RequestId(self.id), Op::Read, sector * 512, 4096, true, owner, self.now)
            .unwrap()
    }

    fn new(mut s: S) -> Rig<S> {
        for g in 1..=GROUPS {
            s.set_group(&Cgroup { id: g, parent: Some(0), path: format!("g{g}"), weight: 100 * g });
        }
        let mut rig = Rig { s, now: 0, id: 0, rng: 0x1234_5678_9abc_def1 };
        for pid in 1..=QUEUES {
            let rq = rig.rq(pid);
            rig.s.insert(rq, 0);
        }
        rig
    }

    fn step(&mut self) {
        loop {
            match self.s.dispatch(self.now) {
                Dispatch::Request(rq) => {
                    self.now += NS_PER_US;
                    self.s.completed(&rq, self.now);
                    let next = self.rq(rq.owner.pid);
                    self.s.insert(next, self.now);
                    return;
                }
                Dispatch::WaitUntil { until_ns } => self.now = until_ns.max(self.now + 1),
                Dispatch::Empty => self.now += NS_PER_US,
            }
        }
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("cfq");
    g.throughput(Throughput::Elements(1));
    let mut rig = Rig::new(Cfq::new());
    g.bench_function("insert_dispatch_complete_1000_queues_10_groups", |b| b.iter(|| rig.step()));
    // The same without close-cooperator tracking: what the per-priority sector trees cost.
    let mut cfq = Cfq::new();
    cfq.set_tunable("queue_merging", "0").unwrap();
    let mut rig = Rig::new(cfq);
    g.bench_function("insert_dispatch_complete_1000_queues_10_groups_no_queue_merging", |b| {
        b.iter(|| rig.step())
    });
    let mut rig = Rig::new(Anticipatory::new());
    g.bench_function("anticipatory_insert_dispatch_complete_1000_processes", |b| {
        b.iter(|| rig.step())
    });
    g.finish();
    // kyber with the same 1,000 processes' requests: tokens, batches, histograms, timer.
    let mut g = c.benchmark_group("kyber");
    g.throughput(Throughput::Elements(1));
    let mut rig = Rig::new(Kyber::new());
    g.bench_function("insert_dispatch_complete_1000_processes", |b| b.iter(|| rig.step()));
    g.finish();
    // BFQ: 1,000 queues in 10 weighted groups, B-WF2Q+ at both levels.
    let mut g = c.benchmark_group("bfq");
    g.throughput(Throughput::Elements(1));
    let mut rig = Rig::new(Bfq::new());
    g.bench_function("insert_dispatch_complete_1000_queues_10_groups", |b| b.iter(|| rig.step()));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
