//! fio's verify phase: a job that writes reads back what it wrote once its writes are done;
//! a buffered job syncs and drops its file from the page cache first (fio's `do_verify`,
//! whatever `invalidate` says), so the reads reach the disk.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, SimResult, Topology};

mod common;

fn run(job: &str) -> SimResult {
    let t = Topology::from_str(common::RAM_DISK_16G, "t.toml").unwrap();
    let jobs = elevator_fio::parse_str(job, "j.fio", Path::new("."), &|_| None).unwrap();
    simulate(&jobs, &t, &SimOptions::default()).unwrap()
}

/// Bytes read from the device, and the job's reads and writes.
fn device_reads_and_job_ios(job: &str) -> (u64, u64, u64) {
    let r = run(job);
    let p = &r.processes[0];
    (r.devices[0].counters.sectors[0] * 512, p.stats[0].total_ios, p.stats[1].total_ios)
}

#[test]
fn written_data_is_read_back_from_the_disk() {
    let base = "[v]\nfilename=sda\nrw=randwrite\nbs=4k\nsize=4m\nverify=crc32c\n";
    for extra in ["direct=1\n", "", "invalidate=0\n"] {
        let (device, reads, writes) = device_reads_and_job_ios(&format!("{base}{extra}"));
        assert_eq!((reads, writes), (1024, 1024), "{extra:?}");
        assert_eq!(device, 4 << 20, "{extra:?}: every block read from the disk");
    }
    // do_verify=0, or a job that does not write: no read-back.
    let (device, reads, _) = device_reads_and_job_ios(&format!("{base}do_verify=0\n"));
    assert_eq!((device, reads), (0, 0));
    let (_, reads, writes) = device_reads_and_job_ios(
        "[v]\nfilename=sda\ndirect=1\nrw=read\nbs=4k\nsize=4m\nverify=md5\n",
    );
    assert_eq!((reads, writes), (1024, 0));
}

#[test]
fn a_timed_job_verifies_after_its_runtime() {
    // The write phase stops at the runtime; the read-back runs to its end after it.
    let r = run("[v]\nfilename=sda\ndirect=1\nrw=write\nbs=4k\nsize=64m\nruntime=1\nverify=md5\nrate_iops=500\n");
    let p = &r.processes[0];
    let writes = p.stats[1].total_ios;
    assert!((495..=505).contains(&writes), "{writes} writes in a second at 500 IOPS");
    assert_eq!(p.stats[0].total_ios, writes, "each written block read back");
    assert!(p.dir_runtime_ns(1) < p.runtime_ns() && p.dir_runtime_ns(0) > 0);
}
