//! mq-deadline in steady state: 10,000 requests queued at random sectors (70 % reads), and one
//! iteration inserts one new request, dispatches one and completes it, so the queue stays at
//! 10,000. Criterion's time per iteration is the cost per request. The clock advances 1 µs per
//! iteration, so deadlines expire along the way and FIFO jumps are part of the mix.
//!
//! A second benchmark also offers each new request for a merge first (`try_merge`, which
//! almost always misses on random sectors), as the block layer does.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use elevator_core::{Nanos, Op, Owner, Request, RequestId, NS_PER_US, SECTOR_BYTES};
use elevator_sched::deadline::Deadline;
use elevator_sched::{Dispatch, Scheduler};

const QUEUED: u64 = 10_000;
const MAX_LEN: u64 = 512 * 1024;

/// xorshift64*: a dependency-free, deterministic request stream.
struct Stream {
    state: u64,
    id: u64,
}

impl Stream {
    fn next_u64(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn request(&mut self, now: Nanos) -> Request {
        self.id += 1;
        let r = self.next_u64();
        let op = if r % 10 < 7 { Op::Read } else { Op::Write };
        // 4 KiB aligned over a 1 TiB device.
        let sector = ((r >> 8) % (1 << 28)) * 8;
        Request::new(
            RequestId(self.id),
            op,
            sector * SECTOR_BYTES,
            8 * SECTOR_BYTES,
            true,
            Owner::process(1),
            now,
        )
        .unwrap()
    }
}

fn setup() -> (Deadline, Stream, Nanos) {
    let mut s = Deadline::new();
    let mut stream = Stream { state: 0x9e37_79b9_7f4a_7c15, id: 0 };
    let mut now = 0;
    for _ in 0..QUEUED {
        let rq = stream.request(now);
        s.insert(rq, now);
        now += 100;
    }
    (s, stream, now)
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("mq-deadline");
    group.throughput(Throughput::Elements(1));

    let (mut s, mut stream, mut now) = setup();
    group.bench_function("insert+dispatch+complete, 10k queued", |b| {
        b.iter(|| {
            now += NS_PER_US;
            let rq = stream.request(now);
            s.insert(rq, now);
            match s.dispatch(now) {
                Dispatch::Request(done) => s.completed(&done, now),
                other => panic!("{other:?}"),
            }
        })
    });
    assert_eq!(s.queued() as u64, QUEUED);

    let (mut s, mut stream, mut now) = setup();
    group.bench_function("try_merge+insert+dispatch+complete, 10k queued", |b| {
        b.iter(|| {
            now += NS_PER_US;
            let rq = stream.request(now);
            if s.try_merge(&rq, MAX_LEN, now).is_none() {
                s.insert(rq, now);
            }
            match s.dispatch(now) {
                Dispatch::Request(done) => s.completed(&done, now),
                other => panic!("{other:?}"),
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
