//! Simulated requests per second of the HDD model: 4 KiB random reads kept at queue depth 32
//! (closed loop), the hot path of scheduler experiments. Target ≥ 1 M requests/s.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use elevator_core::{Op, RandomStream, RequestId};
use elevator_device::hdd::{Hdd, HddParams};
use elevator_device::{Command, Completion, Device};

const REQUESTS: u64 = 100_000;

fn run(d: &mut Hdd, rng: &mut RandomStream, out: &mut Vec<Completion>, next_id: &mut u64) -> u64 {
    let blocks = d.capacity_bytes() / 4096;
    let mut done = 0;
    while done < REQUESTS {
        let t = d.next_event_ns().expect("queue is kept full");
        out.clear();
        d.advance(t, out);
        for _ in 0..out.len() {
            d.submit(
                Command {
                    id: RequestId(*next_id),
                    op: Op::Read,
                    offset_bytes: rng.below(blocks) * 4096,
                    len_bytes: 4096,
                    fua: false,
                },
                t,
            );
            *next_id += 1;
        }
        done += out.len() as u64;
    }
    done
}

fn bench(c: &mut Criterion) {
    let p = HddParams { queue_depth: 32, ..HddParams::sata_7200_2009() };
    let mut d = Hdd::new(p, &mut RandomStream::new(1, 0)).unwrap();
    let mut rng = RandomStream::new(2, 0);
    let blocks = d.capacity_bytes() / 4096;
    let mut id = 0;
    for _ in 0..32 {
        let cmd = Command {
            id: RequestId(id),
            op: Op::Read,
            offset_bytes: rng.below(blocks) * 4096,
            len_bytes: 4096,
            fua: false,
        };
        d.submit(cmd, 0);
        id += 1;
    }
    let mut out = Vec::with_capacity(64);
    let mut g = c.benchmark_group("hdd");
    g.throughput(Throughput::Elements(REQUESTS));
    g.bench_function("random_4k_read_qd32", |b| {
        b.iter(|| run(&mut d, &mut rng, &mut out, &mut id))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
