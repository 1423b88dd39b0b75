//! fio's `loops=`: the job runs that many passes, each from the start of its region as if
//! the file were opened anew (`clear_io_state`): its I/O counts, where each pass starts,
//! and the page cache dropped again between passes (`invalidate`). The counts are what real
//! fio 3.33 does with the same options on a 4 MiB file.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, SimResult, Topology};

mod common;

use common::{queued_per_sector, RAM_DISK_16G as TOPOLOGY};

fn run(job: &str) -> SimResult {
    let t = Topology::from_str(TOPOLOGY, "t.toml").unwrap();
    let jobs = elevator_fio::parse_str(job, "j.fio", Path::new("."), &|_| None).unwrap();
    simulate(&jobs, &t, &SimOptions { blktrace: true, ..SimOptions::default() }).unwrap()
}

fn ios(extra: &str) -> u64 {
    let r = run(&format!("[j]\nfilename=sda\ndirect=1\nrw=read\nbs=4k\nsize=4m\n{extra}\n"));
    r.processes[0].stats.iter().map(|s| s.total_ios).sum()
}

#[test]
fn passes_count_as_real_fio_counts_them() {
    assert_eq!(ios(""), 1024);
    assert_eq!(ios("loops=3"), 3072);
    assert_eq!(ios("loops=3\nrw=randread"), 3072);
    // io_size (or size) and number_ios bound all passes together, loops times over.
    assert_eq!(ios("loops=2\nio_size=2m"), 1024);
    assert_eq!(ios("loops=2\nio_size=8m"), 2048);
    assert_eq!(ios("loops=3\nio_size=2m\nrw=randread"), 1536);
    assert_eq!(ios("loops=2\nnumber_ios=100"), 200);
    assert_eq!(ios("loops=2\nnumber_ios=2000"), 2048);
    // A time-based job ignores loops.
    assert_eq!(ios("runtime=1ms\ntime_based\nloops=5"), ios("runtime=1ms\ntime_based"));
}

#[test]
fn each_pass_starts_from_the_start_of_the_region() {
    let r = run("[j]\nfilename=sda\ndirect=1\nrw=read\nbs=4k\nsize=400k\nloops=2\n");
    let per = queued_per_sector(&r);
    assert_eq!(per.len(), 100, "the same 100 blocks");
    assert!(per.values().all(|&n| n == 2), "read once a pass: {per:?}");
    // number_ios=100 twice over: the first pass goes on past 100 (its offsets have not run
    // out) and the second has nothing left, as real fio 3.33 reads 200 blocks once each.
    let r = run("[j]\nfilename=sda\ndirect=1\nrw=read\nbs=4k\nsize=4m\nnumber_ios=100\nloops=2\n");
    let per = queued_per_sector(&r);
    assert_eq!(per.len(), 200, "200 blocks");
    assert!(per.values().all(|&n| n == 1), "each once: {per:?}");
}

#[test]
fn each_pass_opens_the_file_again() {
    // Buffered: fio's invalidate (on by default) drops the file's pages at every open, so
    // the second pass reads the device again; with invalidate=0 it finds them cached.
    let device_bytes = |extra: &str| {
        let r = run(&format!("[j]\nfilename=sda\nrw=read\nbs=4k\nsize=4m\nloops=2\n{extra}\n"));
        r.devices[0].counters.sectors[0] * 512
    };
    assert_eq!(device_bytes(""), 2 * (4 << 20));
    assert_eq!(device_bytes("invalidate=0"), 4 << 20);
}

/// `rw=write:N` goes on past its region to the end of the file (fio's get_next_seq_offset
/// wraps at the file's size, and only `io_size=` stops it): a buffered job's last writes
/// land past its region, which the page cache takes as the file growing. They are written
/// back like the rest, and the job ends (it waited for their writeback for ever once).
#[test]
fn buffered_writes_past_the_region_are_written_back() {
    for rw in ["write:4k", "write:8k", "randwrite:4k"] {
        let r = run(&format!("[j]\nfilename=sda\nrw={rw}\nbs=16k\nsize=64k\nend_fsync=1\n"));
        let written = r.devices[0].counters.sectors[1] * 512;
        let issued = r.processes[0].stats[1].io_bytes;
        assert!(issued > 0, "{rw}");
        assert!(written >= issued, "{rw}: {written} bytes on the device, {issued} written");
    }
}
