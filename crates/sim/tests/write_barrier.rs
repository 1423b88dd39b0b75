//! fio's `write_barrier=N`: every N-th write goes to the media before anything after it, on a
//! disk whose write cache would otherwise absorb it.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

/// MB/s of 4 KiB sequential writes (direct or buffered with an fsync at the end).
fn write_mbs(extra: &str) -> f64 {
    let job = format!(
        "[w]\nfilename=sda\nrw=write\nbs=4k\nsize=16m\nioengine=psync\nend_fsync=1\n{extra}\n"
    );
    let jobs = elevator_fio::parse_str(&job, "w.fio", Path::new("."), &|_| None).unwrap();
    let result = simulate(&jobs, &Topology::builtin(), &SimOptions::default()).unwrap();
    let p = &result.processes[0];
    p.stats[1].io_bytes as f64 / (p.runtime_ns() as f64 / 1e9) / 1e6
}

#[test]
fn barrier_writes_wait_for_the_media() {
    for direct in ["direct=1", "direct=0"] {
        let cached = write_mbs(direct);
        let every = write_mbs(&format!("{direct}\nwrite_barrier=1"));
        let some = write_mbs(&format!("{direct}\nwrite_barrier=64"));
        // Each barrier costs a trip to the platter (milliseconds); the cache absorbs the rest.
        assert!(every < 0.2 * cached, "{direct}: {every} vs {cached} MB/s");
        assert!(every < some && some < cached, "{direct}: {every} < {some} < {cached}");
    }
}
