//! Buffered random reads of a file wholly in the page cache are hits wherever they land;
//! the simulator takes them a run at a time, and the run must report what the same calls
//! made one by one report.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

const TOPOLOGY: &str = "[[device]]\nname = \"sda\"\nmodel = \"hdd\"\npreset = \"sata-7200-2009\"\n";

/// (reads, bytes, mean latency ns, runtime ns) of a 0.3 s random reader of a 64 MiB region,
/// with `extra` options.
fn run(extra: &str) -> (u64, u64, f64, u64) {
    let text = format!(
        "[hits]\nfilename=sda\nrw=randread\nbs=4k\nsize=64m\nruntime=300ms\ntime_based\n{extra}\n"
    );
    let jobs = elevator_fio::parse_str(&text, "t.fio", Path::new("."), &|_| None).unwrap();
    let topology = Topology::from_str(TOPOLOGY, "t.toml").unwrap();
    let r = simulate(&jobs, &topology, &SimOptions::default()).unwrap();
    let p = &r.processes[0];
    let s = &p.stats[0];
    (s.total_ios, s.io_bytes, s.clat_ns.mean(), p.runtime_ns())
}

#[test]
fn a_run_of_random_hits_reports_what_the_calls_one_by_one_do() {
    // pre_read puts the region in the cache before the clock starts: every read is a hit.
    // A rate far above what the calls reach changes nothing but keeps them one by one.
    let runs = run("pre_read=1");
    let one_by_one = run("pre_read=1\nrate_iops=1000000000");
    assert_eq!(runs, one_by_one);
    // 0.3 s of 4 KiB hits at 1 µs a call plus 4 KiB copied at 2 GB/s (the default machine).
    assert_eq!(runs.0, 300_000_000 / 3_048 + 1, "{runs:?}");
    // Without pre_read the reads go to the disk: a few dozen in 0.3 s.
    let cold = run("");
    assert!(cold.0 < 100, "{cold:?}");
}
