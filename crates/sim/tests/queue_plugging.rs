//! 2.6.x queue plugging (`blk_plug_device`, before 2.6.39): page-cache I/O entering an empty
//! queue waits until something runs the queue; a sync submitter, a fourth request, a waiter
//! (`BlockQueue::run_queue`), a completion, a scheduler idling for the request, or 3 ms.

use std::sync::{Arc, Mutex};

use elevator_core::{BioFlags, Nanos, Op, Owner};
use elevator_device::ram::{RamDevice, RamParams};
use elevator_device::recorder::{Recorder, RecorderLog};
use elevator_sim::block::{BlockQueue, UNPLUG_DELAY_NS};
use elevator_sim::stack::{NO_NODE, NO_TAG};

fn queue(scheduler: &str, plugging: bool) -> (BlockQueue, Arc<Mutex<RecorderLog>>) {
    let (device, log) = Recorder::new(RamDevice::new(RamParams {
        latency_ns: 100_000,
        queue_depth: 32,
        ..RamParams::default()
    }));
    let mut sched = elevator_sched::by_name(scheduler).unwrap();
    // CFQ and AS idle only on disks.
    sched.set_rotational(true);
    let mut q = BlockQueue::new(sched, Box::new(device), 128, 512);
    q.set_queue_plugging(plugging);
    (q, log)
}

/// A 128 KiB read of process `p` at `kib` KiB, through the page cache (lazy) or not.
fn read(q: &mut BlockQueue, p: u32, kib: u64, lazy: bool, now: Nanos) {
    if lazy {
        q.begin_lazy();
    }
    q.plug_bio(
        p,
        NO_NODE,
        NO_TAG,
        Op::Read,
        kib << 10,
        128 << 10,
        BioFlags::SYNC,
        Owner::process(p),
        now,
    );
    if lazy {
        q.unplug_lazy(p, now);
    } else {
        q.unplug(p, now);
    }
    q.kick(now);
}

fn sent(log: &Arc<Mutex<RecorderLog>>) -> usize {
    log.lock().unwrap().commands.len()
}

#[test]
fn readahead_waits_for_the_unplug_timer() {
    let (mut q, log) = queue("mq-deadline", true);
    read(&mut q, 1, 0, true, 0);
    assert!(q.plugged());
    assert_eq!(sent(&log), 0, "a plugged queue sends nothing");
    assert_eq!(q.wanted_timer_ns, Some(UNPLUG_DELAY_NS), "the unplug timer is wanted");
    q.kick(UNPLUG_DELAY_NS - 1);
    assert_eq!(sent(&log), 0);
    q.kick(UNPLUG_DELAY_NS);
    assert_eq!(sent(&log), 1, "3 ms on, the timer runs the queue");
}

#[test]
fn without_queue_plugging_readahead_goes_at_once() {
    let (mut q, log) = queue("mq-deadline", false);
    read(&mut q, 1, 0, true, 0);
    assert!(!q.plugged());
    assert_eq!(sent(&log), 1);
}

#[test]
fn a_waiter_a_sync_submitter_or_a_fourth_request_runs_the_queue() {
    // A task waiting for one of the pages (sync_page).
    let (mut q, log) = queue("mq-deadline", true);
    read(&mut q, 1, 0, true, 0);
    q.run_queue(10);
    q.kick(10);
    assert_eq!(sent(&log), 1);

    // Direct I/O: blk_run_address_space runs everything plugged with it.
    let (mut q, log) = queue("mq-deadline", true);
    read(&mut q, 1, 0, true, 0);
    read(&mut q, 2, 100 << 10, false, 10);
    assert_eq!(sent(&log), 2);

    // unplug_thresh: the fourth queued request.
    let (mut q, log) = queue("mq-deadline", true);
    for (i, mib) in [0u64, 10, 20].into_iter().enumerate() {
        read(&mut q, 1, mib << 10, true, i as Nanos);
    }
    assert_eq!(sent(&log), 0, "three requests stay plugged");
    read(&mut q, 1, 30 << 10, true, 3);
    assert_eq!(sent(&log), 4, "the fourth runs the queue");
}

#[test]
fn a_completion_runs_the_queue() {
    let (mut q, log) = queue("mq-deadline", true);
    read(&mut q, 1, 0, false, 0);
    assert_eq!(sent(&log), 1);
    // Plugged behind a request in flight: the queue's scheduler part was empty.
    read(&mut q, 1, 50 << 10, true, 1_000);
    assert!(q.plugged());
    assert_eq!(sent(&log), 1);
    let done_at = q.device.next_event_ns().unwrap();
    assert!(done_at < UNPLUG_DELAY_NS);
    let (mut done, mut unblocked) = (Vec::new(), Vec::new());
    q.complete(done_at, &mut done, &mut unblocked);
    q.kick(done_at);
    assert_eq!(done.len(), 1);
    assert_eq!(sent(&log), 2, "the driver's completion ran the queue");
}

/// CFQ idling on a process's queue dispatches that process's next request at once
/// (`cfq_rq_enqueued` → `blk_start_queueing`); deadline leaves it to the plug. (AS kicks
/// only when it anticipates, which needs another process's request waiting.)
#[test]
fn cfq_idling_for_the_request_runs_the_plugged_queue() {
    let run = |scheduler: &str| -> bool {
        let (mut q, log) = queue(scheduler, true);
        let (mut done, mut unblocked) = (Vec::new(), Vec::new());
        let mut now = 0;
        let mut at_once = false;
        // A sequential reader: each 128 KiB read 100 us after the previous one completed.
        for i in 0..4u64 {
            let before = sent(&log);
            read(&mut q, 1, i * 128, i > 0, now);
            at_once = sent(&log) == before + 1;
            if !at_once {
                q.run_queue(now); // the reader waits for its page
                q.kick(now);
            }
            let done_at = q.device.next_event_ns().unwrap();
            q.complete(done_at, &mut done, &mut unblocked);
            q.kick(done_at);
            now = done_at + 100_000;
        }
        at_once
    };
    assert!(run("cfq"), "CFQ was idling for this request");
    assert!(!run("mq-deadline"), "deadline waits for the unplug");
}

/// An unplug removes the plug's timer (`del_timer`): a timer armed for an earlier plug does
/// not run a later one.
#[test]
fn a_stale_unplug_timer_runs_nothing() {
    let (mut q, log) = queue("mq-deadline", true);
    read(&mut q, 1, 0, true, 0);
    q.run_queue(0); // a waiter
    q.kick(0);
    assert_eq!(sent(&log), 1);
    read(&mut q, 1, 50 << 10, true, 1_000_000);
    assert!(q.plugged());
    // The engine's timer for the first plug fires.
    q.timer_fired(UNPLUG_DELAY_NS);
    q.kick(UNPLUG_DELAY_NS);
    assert_eq!(sent(&log), 1, "the second plug has until 4 ms");
    q.timer_fired(UNPLUG_DELAY_NS + 1_000_000);
    q.kick(UNPLUG_DELAY_NS + 1_000_000);
    assert_eq!(sent(&log), 2);
}

/// Through the engine: a buffered sequential reader alone on a disk. On 3.2 (on-stack
/// plugging only) every request goes to the idle drive as it is inserted; on 2.6.29 under
/// deadline the readahead ahead of the reader waits plugged — until the reader needs it, a
/// completion, or the 3 ms timer, never longer (here nearly every request waits, up to
/// 0.5 ms, and half as many reach the drive: the reader's own read merges into the plugged
/// one) — and under CFQ, which idles for the reader's next request, it goes at once.
#[test]
fn the_engine_plugs_readahead_on_2_6_kernels_for_at_most_the_unplug_delay() {
    use elevator_fio::blktrace::{
        records, TA_INSERT, TA_ISSUE, TA_PLUG, TA_UNPLUG_IO, TA_UNPLUG_TIMER, TC_NOTIFY, TC_SHIFT,
    };
    use elevator_sim::{simulate, SimOptions, Topology};
    use std::collections::BTreeMap;

    // Each request's wait from insert to issue, and the trace's plugs and unplugs.
    let waits = |kernel: &str, scheduler: &str| -> (Vec<Nanos>, usize, usize) {
        let topo = format!(
            "[machine]\nkernel = \"{kernel}\"\n[[device]]\nname = \"sda\"\nmodel = \"hdd\"\npreset = \"sata-7200-2009\"\nscheduler = \"{scheduler}\"\n"
        );
        let t = Topology::from_str(&topo, "t.toml").unwrap();
        let job = "[reader]\nfilename=sda\nrw=read\nbs=64k\nsize=1G\nruntime=1\ntime_based\nfadvise_hint=0\nthinktime=200\n";
        let jobs =
            elevator_fio::parse_str(job, "j.fio", std::path::Path::new("."), &|_| None).unwrap();
        let r =
            simulate(&jobs, &t, &SimOptions { seed: 1, blktrace: true, ..SimOptions::default() })
                .unwrap();
        let file = r.devices[0].blktrace.as_ref().unwrap();
        let mut inserted = BTreeMap::new();
        let mut waits = Vec::new();
        let (mut plugs, mut unplugs) = (0, 0);
        for (tr, _) in records(&file.bytes, "sda").unwrap() {
            if tr.action >> TC_SHIFT & TC_NOTIFY != 0 {
                continue;
            }
            match tr.action & 0xffff {
                TA_INSERT => {
                    inserted.insert(tr.sector, tr.time_ns);
                }
                TA_ISSUE => waits.push(tr.time_ns - inserted.remove(&tr.sector).unwrap()),
                TA_PLUG => plugs += 1,
                TA_UNPLUG_IO | TA_UNPLUG_TIMER => unplugs += 1,
                _ => {}
            }
        }
        assert!(waits.len() > 100, "{kernel} {scheduler}: {} requests", waits.len());
        (waits, plugs, unplugs)
    };
    let plugged = |w: &[Nanos]| w.iter().filter(|&&x| x > 0).count();
    let (new, _, _) = waits("3.2", "mq-deadline");
    assert_eq!(plugged(&new), 0, "3.2 does not plug whole queues");
    let (old, plugs, unplugs) = waits("2.6.29", "mq-deadline");
    // blktrace as those kernels wrote it: a P when the queue plugs, a U (or UT) when it runs
    // (the last plug may still hold at the end of the run), no per-submitter plugs.
    assert_eq!(plugs, old.len(), "one plug per request here: {plugs} for {}", old.len());
    assert!(plugs - unplugs <= 1, "{plugs} plugs, {unplugs} unplugs");
    assert!(
        plugged(&old) * 4 > old.len(),
        "2.6.29, deadline: {} of {} waited",
        plugged(&old),
        old.len()
    );
    assert!(old.iter().all(|&w| w <= UNPLUG_DELAY_NS), "a plug outlived its timer: {old:?}");
    let (cfq, _, _) = waits("2.6.29", "cfq");
    assert!(plugged(&cfq) < plugged(&old), "CFQ's idling runs the queue for the reader");
}
