//! What `elevator validate-disk` does per drive, end to end: load the drive directory and
//! its 10,000-request trace, bridge to the HDD model, replay closed-loop, compute the rms
//! demerit, for each of DiskSim 4.0's ten validation drives present (`validate_disk_DRIVE`, the
//! trace read on a second thread as the CLI does; `validate_disk_one_thread_DRIVE`, each step
//! in turn). Target < 50 ms a drive.
//! And the replay alone (`replay_DRIVE`), its throughput in requests per second: target
//! ≥ 2 M requests/s on one core. Skips when the DiskSim data is absent.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use elevator_disksim::*;
use std::path::PathBuf;

fn bench(c: &mut Criterion) {
    let data = validation_drives_dir(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/disksim"),
    );
    for (name, _) in DISKSIM_4_0_RMS_MS {
        let dir = data.join(name);
        if !dir.is_dir() {
            eprintln!("skipping: {} not found", dir.display());
            continue;
        }
        {
            let drv = load_drive(&dir).unwrap();
            let params = hdd_params(&drv).unwrap();
            let trace = load_trace(drv.trace_path.as_ref().unwrap()).unwrap();
            let mut g = c.benchmark_group("replay");
            g.throughput(Throughput::Elements(trace.len() as u64));
            g.bench_function(format!("replay_{name}"), |b| {
                b.iter(|| replay(&params, &trace).unwrap())
            });
            g.finish();
        }
        // As `validate-disk` runs it: the trace read on a second thread while it replays.
        c.bench_function(&format!("validate_disk_{name}"), |b| {
            b.iter(|| {
                let drv = load_drive(&dir).unwrap();
                let params = hdd_params(&drv).unwrap();
                let r = replay_trace_file(&params, drv.trace_path.as_ref().unwrap()).unwrap();
                rms_demerit_ms(&r.measured_ms, &r.simulated_ms, &Buckets::access_time_default())
            })
        });
        // The same, one step after another on one thread: what the second thread saves.
        c.bench_function(&format!("validate_disk_one_thread_{name}"), |b| {
            b.iter(|| {
                let drv = load_drive(&dir).unwrap();
                let params = hdd_params(&drv).unwrap();
                let trace = load_trace(drv.trace_path.as_ref().unwrap()).unwrap();
                let sim = replay(&params, &trace).unwrap();
                let measured: Vec<f64> = trace.iter().map(|r| r.access_time_ms()).collect();
                rms_demerit_ms(&measured, &sim, &Buckets::access_time_default())
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
