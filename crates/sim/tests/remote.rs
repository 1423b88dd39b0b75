//! A remote disk behind a link: seed 002's pipeline. With one request at a time the disk and
//! the link take turns (1/T = 1/T_local + 1/T_remote); with several in flight both stay busy.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

const TOPOLOGY: &str = r#"
[[device]]
name = "disk"
model = "ram"
scheduler = "none"
[device.params]
latency_ns = 0
bandwidth_bytes_per_sec = 100000000
queue_depth = 1
[[volume]]
name = "lun"
target = "iscsi"
over = ["disk"]
bandwidth = "100MB/s"
rtt = "0us"
overhead = "0us"
"#;

/// MB/s read by one sequential reader of 1 MiB blocks at `iodepth`, on `filename`.
fn read_mbs(filename: &str, iodepth: u32) -> f64 {
    let job = format!(
        "[r]\nfilename={filename}\nrw=read\nbs=1m\nsize=512m\ndirect=1\nioengine=libaio\niodepth={iodepth}\n"
    );
    let jobs = elevator_fio::parse_str(&job, "r.fio", Path::new("."), &|_| None).unwrap();
    let topology = Topology::from_str(TOPOLOGY, "remote.toml").unwrap();
    let result = simulate(&jobs, &topology, &SimOptions::default()).unwrap();
    let bytes: u64 = result.processes.iter().map(|p| p.stats[0].io_bytes).sum();
    bytes as f64 / (result.end_ns as f64 / 1e9) / 1e6
}

#[test]
fn one_request_at_a_time_pays_disk_and_link_in_turn() {
    let local = read_mbs("disk", 1);
    let remote = read_mbs("lun", 1);
    assert!((local - 100.0).abs() < 1.0, "local {local}");
    // 1/T = 1/100 + 1/100: half of either link, less a little for the 48-byte headers.
    assert!((remote - 50.0).abs() < 1.0, "remote {remote}");
}

#[test]
fn requests_in_flight_keep_disk_and_link_busy_together() {
    let remote = read_mbs("lun", 4);
    assert!(remote > 95.0, "remote at iodepth 4: {remote}");
}

/// A buffered reader of 64 KiB blocks on the initiator, the target reading through its page
/// cache with `read_ahead_kb` on its disk; returns (MB/s, target's readahead windows, the
/// disk's mean request size in bytes).
fn fileio_read(target_ra_kb: u32, readahead_state: &str) -> (f64, u64, f64) {
    let (mbs, target, mean_request) = fileio_run(target_ra_kb, readahead_state);
    (mbs, target.readahead_windows, mean_request)
}

/// [`fileio_read`]'s run, with all the target's page-cache counters.
fn fileio_run(target_ra_kb: u32, readahead_state: &str) -> (f64, elevator_mm::vm::VmStats, f64) {
    let topology = TOPOLOGY
        .replace(
            "scheduler = \"none\"\n",
            &format!("scheduler = \"none\"\nread_ahead_kb = {target_ra_kb}\n"),
        )
        .replace(
            "overhead = \"0us\"\n",
            &format!(
                "overhead = \"0us\"\ntarget_io = \"fileio\"\nthreads = 4\nreadahead_state = \"{readahead_state}\"\n"
            ),
        );
    let job = "[r]\nfilename=lun\nrw=read\nbs=64k\nsize=256m\n";
    let jobs = elevator_fio::parse_str(job, "r.fio", Path::new("."), &|_| None).unwrap();
    let topology = Topology::from_str(&topology, "remote.toml").unwrap();
    let result = simulate(&jobs, &topology, &SimOptions::default()).unwrap();
    let bytes: u64 = result.processes.iter().map(|p| p.stats[0].io_bytes).sum();
    let target = result.target_vm.expect("the target has a page cache");
    let c = &result.devices[0].counters;
    let mean_request = (c.sectors[0] * 512) as f64 / c.ios[0].max(1) as f64;
    (bytes as f64 / (result.end_ns as f64 / 1e9) / 1e6, target, mean_request)
}

/// The target's readahead counters say how its windows were decided. One stream's commands
/// go to the four threads in turn: with one readahead state for all, each window follows
/// the last (the expected offset); with one per thread, a thread that finds a marker another
/// thread's window left often has no matching state, and the window comes from the cached
/// pages ahead (the interleaved-reads case). Either way readahead keeps ahead: after the
/// first windows no read misses the cache, so context readahead, which acts only on a miss,
/// has nothing to do.
#[test]
fn the_target_s_readahead_counts_say_how_its_windows_were_decided() {
    let (_, shared, _) = fileio_run(128, "shared");
    let (_, per_thread, _) = fileio_run(128, "per_thread");
    for (state, r) in [("shared", shared.readahead), ("per_thread", per_thread.readahead)] {
        assert_eq!(
            r.sync_calls + r.async_calls,
            r.initial + r.sequential + r.marker + r.context + r.random,
            "{state}: {r:?}"
        );
        assert!(r.sync_calls <= 4 && r.async_calls > 100, "{state}: {r:?}");
    }
    let (s, p) = (shared.readahead, per_thread.readahead);
    assert!(10 * s.marker < s.sequential, "one state: windows follow each other: {s:?}");
    assert!(3 * p.marker > p.async_calls, "a state per thread: marker recoveries: {p:?}");
}

#[test]
fn a_fileio_target_reads_ahead_of_the_commands_with_its_own_readahead() {
    let (_, windows, small) = fileio_read(128, "shared");
    assert!(windows > 0, "the target's page cache reads ahead");
    let (_, _, large) = fileio_read(4096, "shared");
    // A 4 MiB readahead window reaches the disk as requests far larger than the initiator's
    // 128 KiB commands (split only at max_sectors_kb, 512 KiB by default).
    assert!(large > 2.0 * small && large >= 256.0 * 1024.0, "{small} -> {large}");
}

#[test]
fn fileio_reads_every_byte_the_initiator_asked_for() {
    for state in ["shared", "per_thread"] {
        let (mbs, _, _) = fileio_read(128, state);
        assert!(mbs > 10.0, "{state}: {mbs} MB/s");
    }
}

/// SCST's fileio threads read a command with one iovec per page, and 2.6's
/// `generic_file_aio_read` serves iovecs one at a time: readahead sees one-page requests. A
/// random 128 KiB command is no sequential read for the thread's readahead state, so its
/// first page is read alone and the rest ramps up from a one-page request (4, 8, 16 ...
/// pages): the disk sees requests far smaller than the commands (seed 002's "server side 4K
/// reads"), where one 128 KiB read call would read the command as one request.
#[test]
fn a_fileio_thread_reads_a_command_a_page_at_a_time() {
    let topology = TOPOLOGY
        .replace("scheduler = \"none\"\n", "scheduler = \"none\"\nread_ahead_kb = 128\n")
        .replace(
            "overhead = \"0us\"\n",
            "overhead = \"0us\"\ntarget_io = \"fileio\"\nthreads = 1\n",
        );
    let job = "[r]\nfilename=lun\nrw=randread\nbs=128k\nsize=256m\ndirect=1\nnumber_ios=200\n";
    let jobs = elevator_fio::parse_str(job, "r.fio", Path::new("."), &|_| None).unwrap();
    let topology = Topology::from_str(&topology, "remote.toml").unwrap();
    let result = simulate(&jobs, &topology, &SimOptions::default()).unwrap();
    let c = &result.devices[0].counters;
    let mean_request = (c.sectors[0] * 512) as f64 / c.ios[0].max(1) as f64;
    // 2.6.32 (the default kernel): a plugged queue merges an async window with the read
    // that follows it, so a command takes three requests or more, not one.
    assert!(c.ios[0] >= 3 * 200, "{} requests for 200 commands", c.ios[0]);
    assert!(mean_request < 96.0 * 1024.0, "mean request {mean_request} bytes");
}
