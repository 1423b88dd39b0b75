//! How fast the simulator runs: simulated requests per wall-clock second for 4 KiB random reads
//! at iodepth 32 on the RAM device and on the default HDD, and the wall time of a 30-second
//! simulated 4 KiB job. Targets (issue 3): ≥ 2 M requests/s on RAM, ≥ 1 M/s on the HDD, the
//! 30-second job well under 0.2 s.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use elevator_sim::{simulate, SimOptions, Topology};

const RAM_TOPOLOGY: &str = r#"
[[device]]
name = "sda"
model = "ram"
scheduler = "none"
[device.params]
queue_depth = 32
"#;

fn job(text: &str) -> elevator_fio::JobFile {
    elevator_fio::parse_str(text, "bench.fio", Path::new("."), &|_| None).expect("bench job parses")
}

fn requests(jobs: &elevator_fio::JobFile, topology: &Topology) -> u64 {
    simulate(jobs, topology, &SimOptions::default()).expect("runs").requests_completed
}

fn bench(c: &mut Criterion) {
    let qd32 = job(
        "[r]\nfilename=sda\nrw=randread\nbs=4k\nioengine=io_uring\niodepth=32\nnumber_ios=200000\n",
    );
    let mut g = c.benchmark_group("simulator");
    g.sample_size(10);

    let ram = Topology::from_str(RAM_TOPOLOGY, "ram").unwrap();
    g.throughput(Throughput::Elements(requests(&qd32, &ram)));
    g.bench_function("ram_randread_4k_qd32", |b| b.iter(|| requests(&qd32, &ram)));

    let hdd = Topology::builtin();
    let qd32_hdd = job(
        "[r]\nfilename=sda\nrw=randread\nbs=4k\nioengine=io_uring\niodepth=32\nnumber_ios=50000\n",
    );
    g.throughput(Throughput::Elements(requests(&qd32_hdd, &hdd)));
    g.bench_function("hdd_randread_4k_qd32", |b| b.iter(|| requests(&qd32_hdd, &hdd)));

    let thirty = job("[s]\nfilename=sda\nrw=read\nbs=4k\ndirect=1\nruntime=30\ntime_based\n");
    g.throughput(Throughput::Elements(requests(&thirty, &hdd)));
    g.bench_function("hdd_seqread_4k_psync_30s", |b| b.iter(|| requests(&thirty, &hdd)));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
