//! A time-based job runs for its runtime, looping over its region or files, however small
//! its `size` (fio's `keep_running` asks `time_based` before the byte count); without
//! `time_based` the same job stops after one pass.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

const TOPOLOGY: &str = r#"
[[device]]
name = "sda"
model = "hdd"
preset = "sata-7200-2009"
"#;

/// (runtime ns, bytes moved) of a 64 MiB job under `extra` options.
fn run(rw: &str, direct: bool, extra: &str) -> (u64, u64) {
    let text = format!(
        "[j]\nfilename=sda\nrw={rw}\nbs=64k\nsize=64m\ndirect={}\nruntime=2\n{extra}\n",
        u8::from(direct)
    );
    let jobs = elevator_fio::parse_str(&text, "t.fio", Path::new("."), &|_| None).unwrap();
    let topology = Topology::from_str(TOPOLOGY, "t.toml").unwrap();
    let r = simulate(&jobs, &topology, &SimOptions::default()).unwrap();
    let p = &r.processes[0];
    (p.runtime_ns(), p.stats.iter().map(|s| s.io_bytes).sum())
}

#[test]
fn time_based_jobs_loop_until_their_runtime_is_over() {
    for (rw, direct) in [("write", true), ("read", true), ("write", false), ("randwrite", true)] {
        let (once_ns, once_bytes) = run(rw, direct, "");
        assert_eq!(once_bytes, 64 << 20, "{rw}: one pass without time_based");
        assert!(once_ns < 2_000_000_000, "{rw}: the pass ends before the runtime");
        let (ns, bytes) = run(rw, direct, "time_based");
        assert!(ns >= 1_990_000_000, "{rw} direct={direct}: ran {ns} ns of 2 s");
        assert!(bytes > 64 << 20, "{rw} direct={direct}: {bytes} bytes, more than one pass");
    }
}

/// fio's do_io syncs at its end whatever ended its loop (the runtime here), unless the job
/// failed: a buffered time-based writer with `end_fsync` writes its dirty pages back after
/// its runtime, inside its run, whatever its engine (elevator skipped the sync once the
/// runtime had ended the job with a call in progress).
#[test]
fn a_time_based_buffered_writer_syncs_at_its_end_after_the_runtime() {
    for engine in ["psync", "libaio\niodepth=4", "io_uring\niodepth=4"] {
        let text = |sync: u8| format!("time_based\nsize=2g\nioengine={engine}\nend_fsync={sync}");
        let (plain_ns, plain_bytes) = run("write", false, &text(0));
        let (synced_ns, synced_bytes) = run("write", false, &text(1));
        assert_eq!(plain_bytes, synced_bytes, "{engine}");
        // 2 s of writes fill the page cache faster than the disk drains it: the sync
        // writes the rest, hundreds of milliseconds of it.
        assert!(plain_ns < 2_100_000_000, "{engine}: {plain_ns}");
        assert!(synced_ns > plain_ns + 200_000_000, "{engine}: {synced_ns} against {plain_ns}");
    }
}
