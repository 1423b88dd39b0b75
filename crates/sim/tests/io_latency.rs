//! cgroup v2 `io.latency` in the simulated block layer: a reader with a latency target beside
//! a batch job that floods the device. On flash the reader's p90 is held within the target
//! and the batch keeps most of the device; on a disk (where blk-iolatency judges the mean)
//! the reader's mean is.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

const JOB: &str = "
[global]
direct=1
runtime=20
time_based
filename=sda
size=8G
rw=randread
bs=4k

[web]
ioengine=psync
cgroup=web

[batch]
ioengine=libaio
iodepth=128
cgroup=batch
";

/// (web p90 ns, web mean ns, batch IOPS).
fn run(device: &str, io_latency: Option<&str>) -> (u64, f64, f64) {
    let mut topo = format!("[[device]]\nname = \"sda\"\n{device}\n");
    if let Some(l) = io_latency {
        topo += &format!("[[cgroup]]\npath = \"web\"\n\"io.latency\" = \"{l}\"\n");
    }
    let t = Topology::from_str(&topo, "t.toml").unwrap();
    let jobs = elevator_fio::parse_str(JOB, "j.fio", Path::new("."), &|_| None).unwrap();
    let r = simulate(&jobs, &t, &SimOptions::default()).unwrap();
    let web = &r.processes[0].stats[0];
    let batch = &r.processes[1];
    let iops = batch.stats[0].total_ios as f64 / (batch.runtime_ns() as f64 / 1e9);
    (web.clat_hist.value_at_quantile(0.9), web.clat_ns.mean(), iops)
}

#[test]
fn flash_holds_the_readers_p90_and_the_batch_keeps_the_rest() {
    let ssd = "model = \"ssd\"\npreset = \"sata-ssd-2015\"\nscheduler = \"none\"";
    let (p90_free, _, batch_free) = run(ssd, None);
    let (p90, _, batch) = run(ssd, Some("8:0 target=500"));
    eprintln!("SATA SSD: reader p90 {p90_free} ns alone-target, {p90} ns under target=500; batch {batch:.0} of {batch_free:.0} IOPS");
    assert!(p90_free > 1_000_000, "without a target the reader's p90 is {p90_free} ns");
    assert!(p90 <= 500_000, "reader p90 {p90} ns against a 500 µs target");
    assert!(batch >= 0.9 * batch_free, "batch {batch} IOPS, {batch_free} alone");
}

#[test]
fn a_disk_holds_the_readers_mean() {
    let hdd = "model = \"hdd\"\npreset = \"sata-7200-2009\"\nscheduler = \"mq-deadline\"";
    let (_, mean_free, _) = run(hdd, None);
    let (_, mean, batch) = run(hdd, Some("sda target=20000"));
    eprintln!("disk: reader mean {mean_free:.0} ns without, {mean:.0} ns under target=20000");
    assert!(mean_free > 40e6, "without a target the reader's mean is {mean_free} ns");
    assert!(mean <= 20e6 * 1.05, "reader mean {mean} ns against a 20 ms target");
    assert!(batch > 100.0, "the batch job still runs: {batch} IOPS");
}

#[test]
fn io_latency_and_io_max_stack_on_one_device() {
    // blk-throttle caps the batch at 2000 IOPS before blk-iolatency sees its bios.
    let ssd = "model = \"ssd\"\npreset = \"sata-ssd-2015\"\nscheduler = \"none\"";
    let topo = format!("[[device]]\nname = \"sda\"\n{ssd}\n[[cgroup]]\npath = \"web\"\n\"io.latency\" = \"8:0 target=500\"\n[[cgroup]]\npath = \"batch\"\n\"io.max\" = \"8:0 riops=2000\"\n");
    let t = Topology::from_str(&topo, "t.toml").unwrap();
    let jobs = elevator_fio::parse_str(JOB, "j.fio", Path::new("."), &|_| None).unwrap();
    let r = simulate(&jobs, &t, &SimOptions::default()).unwrap();
    let batch = &r.processes[1];
    let iops = batch.stats[0].total_ios as f64 / (batch.runtime_ns() as f64 / 1e9);
    let p90 = r.processes[0].stats[0].clat_hist.value_at_quantile(0.9);
    eprintln!("io.max riops=2000 under io.latency: batch {iops:.0} IOPS, reader p90 {p90} ns");
    assert!((iops - 2000.0).abs() < 40.0, "batch {iops} IOPS under riops=2000");
    assert!(p90 <= 500_000, "reader p90 {p90} ns against a 500 µs target");
    let bad = "[[device]]\nname = \"sda\"\nmodel = \"ram\"\n[[cgroup]]\npath = \"web\"\n\"io.latency\" = \"8:0 target=abc\"\n";
    let e = Topology::from_str(bad, "t.toml").unwrap_err();
    assert_eq!(
        e,
        "t.toml:6: cgroup `web`: io.latency: `target=abc`: expected microseconds or `max`"
    );
}
