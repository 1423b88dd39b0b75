//! fio's `thinktime_blocks_type`: whether `thinktime_blocks` counts completed I/Os
//! (`complete`, the default) or issued ones (`issue`). fio's do_io checks after each
//! submission (and the reap a full queue forces); when the count is reached it quiesces the
//! queue and thinks. An 8-deep job thinking every 4 blocks therefore issues 8 + 3 = 11 I/Os
//! per think counting completions when they come one at a time (the fourth is reaped after
//! the eleventh submission), 8 when the device completes the full queue at once (as fio's null
//! engine does: real fio 3.33 thinks after each 8 there), and 4 counting issues.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

mod common;

use common::queued_times_ns;

/// I/Os queued between thinks (gaps of more than 5 ms).
fn bursts(kind: &str) -> Vec<usize> {
    let t = Topology::from_str("[[device]]\nname = \"sda\"\nmodel = \"ssd\"\n", "t.toml").unwrap();
    let job = format!(
        "[t]\nfilename=sda\ndirect=1\nrw=randread\nbs=4k\nsize=64m\nioengine=libaio\niodepth=8\n\
         thinktime=10ms\nthinktime_blocks=4\nthinktime_blocks_type={kind}\nnumber_ios=200\n"
    );
    let jobs = elevator_fio::parse_str(&job, "j.fio", Path::new("."), &|_| None).unwrap();
    let r = simulate(&jobs, &t, &SimOptions { blktrace: true, ..SimOptions::default() }).unwrap();
    let times = queued_times_ns(&r);
    let mut out = vec![1];
    for w in times.windows(2) {
        if w[1] - w[0] > 5_000_000 {
            out.push(1);
        } else {
            *out.last_mut().unwrap() += 1;
        }
    }
    out
}

#[test]
fn completions_or_issues_trigger_the_think() {
    // Counting completions the queue is full before the fourth completes: 8 I/Os per think
    // when the SSD completes a full queue at once, up to 11 when completions trickle in.
    let complete = bursts("complete");
    assert!(complete[..10].iter().all(|&n| (8..=11).contains(&n)), "{complete:?}");
    assert_eq!(complete[0], 11, "the first fill completes one at a time: {complete:?}");
    let issue = bursts("issue");
    assert!(issue[..10].iter().all(|&n| n == 4), "{issue:?}");
}
