//! Read congestion (`blk_set_queue_congested` for sync requests) and what it does to async
//! readahead: from 2.6.23 to 4.x `page_cache_async_readahead` sends no window while the
//! device is congested.

use std::path::Path;

use elevator_core::{BioFlags, Op, Owner};
use elevator_device::ram::{RamDevice, RamParams};
use elevator_sim::block::{congestion_off, congestion_on, BlockQueue};
use elevator_sim::stack::{NO_NODE, NO_TAG};
use elevator_sim::{simulate, SimOptions, Topology};

#[test]
fn the_thresholds_are_the_kernel_s() {
    // blk_queue_congestion_threshold for the default nr_requests.
    assert_eq!((congestion_on(128), congestion_off(128)), (113, 103));
    // Small queues: on never above nr_requests, off never below one.
    assert_eq!((congestion_on(4), congestion_off(4)), (4, 3));
    assert_eq!((congestion_on(1), congestion_off(1)), (1, 1));
}

/// A queue that sends one request at a time, so that the rest wait in the scheduler.
fn queue() -> BlockQueue {
    let device =
        RamDevice::new(RamParams { latency_ns: 1_000_000, queue_depth: 1, ..RamParams::default() });
    BlockQueue::new(elevator_sched::by_name("noop").unwrap(), Box::new(device), 128, 512)
}

fn read(q: &mut BlockQueue, p: u32, sync: bool) {
    let at = u64::from(p) << 20;
    q.plug_bio(
        p,
        NO_NODE,
        NO_TAG,
        Op::Read,
        at,
        4096,
        BioFlags::sync_if(sync),
        Owner::process(p),
        0,
    );
    q.unplug(p, 0);
    q.kick(0);
}

/// Congested once the sync requests reach 113, and until they fall below 103; async
/// requests do not count.
#[test]
fn sync_requests_congest_the_queue_with_hysteresis() {
    let mut q = queue();
    for p in 0..200 {
        read(&mut q, p, false);
    }
    assert!(!q.read_congested(), "async requests do not congest reads");
    let mut q = queue();
    for p in 0..112 {
        read(&mut q, p, true);
    }
    assert!(!q.read_congested());
    assert_eq!(q.take_congestion_change(), None);
    read(&mut q, 112, true);
    assert!(q.read_congested(), "the 113th sync request");
    assert_eq!(q.take_congestion_change(), Some(true));
    assert_eq!(q.take_congestion_change(), None, "told once");
    let (mut done, mut unblocked) = (Vec::new(), Vec::new());
    let mut now = 0;
    let mut left = 113;
    while left >= 103 {
        assert!(q.read_congested(), "{left} left");
        now += 1_000_000;
        q.complete(now, &mut done, &mut unblocked);
        q.kick(now);
        left = 113 - done.len();
    }
    assert_eq!(left, 102);
    assert!(!q.read_congested(), "below 103");
    assert_eq!(q.take_congestion_change(), Some(false));
    assert_eq!(q.counters.read_congested_ns, now, "congested from 0 until it cleared");
}

const TOPOLOGY: &str = r#"
[machine]
kernel = "KERNEL"

[[device]]
name = "sda"
model = "hdd"
preset = "sata-7200-2009"
scheduler = "cfq"
"#;

/// 128 buffered sequential readers on one disk keep more than 113 reads queued: on a
/// 2.6.32 machine (under v2.6.32's CFQ) a good share of the marker hits send no window (and
/// the readers miss instead), on 5.4 none is skipped.
#[test]
fn many_streams_on_one_disk_defer_their_async_readahead_until_5_0() {
    let job = "[r]\nfilename=sda\nrw=read\nbs=64k\nsize=8m\nnumjobs=128\noffset_increment=1g\n";
    let jobs = elevator_fio::parse_str(job, "r.fio", Path::new("."), &|_| None).unwrap();
    let run = |kernel: &str| {
        let topology = Topology::from_str(&TOPOLOGY.replace("KERNEL", kernel), "t.toml").unwrap();
        let r = simulate(&jobs, &topology, &SimOptions::default()).unwrap();
        assert!(r.devices[0].counters.read_congested_ns > 0, "{kernel}: congested a while");
        r.vm.readahead
    };
    let old = run("2.6.32");
    assert!(old.deferred > old.async_calls / 10, "{old:?}");
    assert!(old.sync_calls > old.deferred, "each deferral ends in a miss: {old:?}");
    let new = run("5.4");
    assert_eq!(new.deferred, 0, "{new:?}");
    assert_eq!(new.sync_calls, 128, "one miss per stream: {new:?}");
    // Sixteen streams never congest the disk.
    let job16 = job.replace("numjobs=128", "numjobs=16");
    let jobs16 = elevator_fio::parse_str(&job16, "r.fio", Path::new("."), &|_| None).unwrap();
    let topology = Topology::from_str(&TOPOLOGY.replace("KERNEL", "2.6.32"), "t.toml").unwrap();
    let few = simulate(&jobs16, &topology, &SimOptions::default()).unwrap();
    assert_eq!(few.vm.readahead.deferred, 0, "{:?}", few.vm.readahead);
    assert_eq!(few.devices[0].counters.read_congested_ns, 0);
}
