//! Simulated requests per second of the SSD models: 4 KiB random reads kept at queue depth 32
//! (closed loop) on both presets, and 4 KiB random writes at QD32 on a preconditioned SATA
//! drive (garbage collection running). Target ≥ 1 M requests/s for the reads.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use elevator_core::{Op, RandomStream, RequestId};
use elevator_device::ssd::{Ssd, SsdParams};
use elevator_device::{Command, Completion, Device};

const REQUESTS: u64 = 100_000;

struct Loop {
    d: Ssd,
    rng: RandomStream,
    out: Vec<Completion>,
    id: u64,
    op: Op,
}

impl Loop {
    fn new(p: SsdParams, op: Op) -> Loop {
        let mut l = Loop {
            d: Ssd::new(p).unwrap(),
            rng: RandomStream::new(2, 0),
            out: Vec::new(),
            id: 0,
            op,
        };
        for _ in 0..32 {
            l.submit(0);
        }
        l
    }

    fn submit(&mut self, t: u64) {
        let units = self.d.capacity_bytes() / 4096;
        let cmd = Command {
            id: RequestId(self.id),
            op: self.op,
            offset_bytes: self.rng.below(units) * 4096,
            len_bytes: 4096,
            fua: false,
        };
        self.d.submit(cmd, t);
        self.id += 1;
    }

    fn run(&mut self) -> u64 {
        let mut done = 0;
        while done < REQUESTS {
            let t = self.d.next_event_ns().expect("queue is kept full");
            self.out.clear();
            self.d.advance(t, &mut self.out);
            let n = self.out.len();
            for _ in 0..n {
                self.submit(t);
            }
            done += n as u64;
        }
        done
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("ssd");
    g.throughput(Throughput::Elements(REQUESTS));
    for (name, p, op) in [
        ("sata_random_4k_read_qd32", SsdParams::sata_ssd_2015(), Op::Read),
        ("nvme_random_4k_read_qd32", SsdParams::nvme_pcie3_2018(), Op::Read),
        ("sata_random_4k_write_qd32_gc", SsdParams::sata_ssd_2015(), Op::Write),
    ] {
        let mut l = Loop::new(p, op);
        g.bench_function(name, |b| b.iter(|| l.run()));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
