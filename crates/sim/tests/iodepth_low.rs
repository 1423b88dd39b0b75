//! fio's `iodepth_low`: once an async job has filled its queue to `iodepth`, it lets the
//! queue drain to `iodepth_low` before filling it again (`wait_for_completions`); by
//! default (`iodepth_low` = `iodepth`) it keeps the queue full. `iodepth_batch_complete_min`
//! makes a full queue wait for that many completions at least.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

const TOPOLOGY: &str = "[[device]]\nname = \"sda\"\nmodel = \"hdd\"\npreset = \"sata-7200-2009\"\n";

/// fio's "IO depths" of a 16-deep random reader (depth at each submission: 1, 2-3, 4-7,
/// 8-15, 16-31, ...), and its read IOPS.
fn depths(extra: &str) -> ([u64; 7], f64) {
    let text = format!(
        "[r]\nfilename=sda\ndirect=1\nioengine=libaio\niodepth=16\nrw=randread\nbs=4k\nsize=1g\nruntime=2\ntime_based\n{extra}\n"
    );
    let jobs = elevator_fio::parse_str(&text, "t.fio", Path::new("."), &|_| None).unwrap();
    let topology = Topology::from_str(TOPOLOGY, "t.toml").unwrap();
    let r = simulate(&jobs, &topology, &SimOptions::default()).unwrap();
    let p = &r.processes[0];
    (p.depth_hist, p.stats[0].total_ios as f64 / 2.0)
}

#[test]
fn a_full_queue_drains_to_iodepth_low_before_it_is_filled_again() {
    let (full, full_iops) = depths("");
    // Kept full: after the first fill (depths 1 to 15), every submission finds 15 others out.
    assert_eq!(full[..4], [1, 2, 4, 8], "{full:?}");
    assert!(full[4] > 500, "{full:?}");
    let (low, low_iops) = depths("iodepth_low=4");
    // Refilled from 4: submissions at every depth from 5 to 16, none below 4 after the
    // start, about as many at 4-7 as at 8-15.
    assert!(low[2] > low[4] && low[3] > low[4], "{low:?}");
    assert_eq!(low[0] + low[1], full[0] + full[1], "only the first fill goes through 1-3");
    // The drive's queue runs shallower, and its reordering with it.
    assert!(low_iops < full_iops, "{low_iops} vs {full_iops} IOPS");
    // iodepth_low of 0 or over iodepth is iodepth (fio's fixup_options).
    assert_eq!(depths("iodepth_low=0").0, full);
    assert_eq!(depths("iodepth_low=64").0, full);
}

#[test]
fn a_full_queue_waits_for_a_batch_of_completions() {
    let (full, full_iops) = depths("");
    // iodepth_batch_complete_min=8: a full queue reaps 8 before it refills, so each refill
    // submits at depths 9 to 16: seven in fio's 8-15 bucket for one in 16-31.
    let (batch, batch_iops) = depths("iodepth_batch_complete_min=8");
    assert!((6 * batch[4]..=8 * batch[4]).contains(&batch[3]), "{batch:?}");
    assert_eq!(batch[2], full[2], "none below 8 after the first fill: {batch:?}");
    assert!(batch_iops < full_iops, "{batch_iops} vs {full_iops} IOPS");
    // With iodepth_low=4, batches of 4 reap down to 4 (fio goes on reaping while the
    // depth is above iodepth_low): the same depths as iodepth_low=4 alone.
    assert_eq!(depths("iodepth_low=4\niodepth_batch_complete_min=4").0, depths("iodepth_low=4").0);
    // 0 and 1 are the default.
    assert_eq!(depths("iodepth_batch_complete_min=0").0, full);
    assert_eq!(depths("iodepth_batch_complete=1").0, full);
}
