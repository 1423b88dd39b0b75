//! Properties of the block layer, whatever the scheduler and the submission pattern:
//! every bio completes exactly once, bytes are conserved across splits and merges, no command
//! exceeds `max_sectors_kb`, and the device never holds more than its queue depth; also
//! when the queue switches schedulers (`ioscheduler=`) in the middle.

use std::collections::BTreeMap;

use elevator_core::{BioFlags, Nanos, Op, Owner};
use elevator_device::ram::{RamDevice, RamParams};
use elevator_device::recorder::Recorder;
use elevator_sim::block::BlockQueue;
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct BioPlan {
    process: u32,
    write: bool,
    sector: u64,
    sectors: u64,
    /// End the plug after this bio.
    unplug: bool,
    /// End it as page-cache I/O does (may plug the whole queue).
    lazy: bool,
}

fn plans() -> impl Strategy<Value = Vec<BioPlan>> {
    prop::collection::vec(
        (
            0u32..4,
            any::<bool>(),
            0u64..4096,
            1u64..4096,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(process, write, sector, sectors, contiguous, unplug, lazy)| {
                BioPlan {
                    process,
                    write,
                    // Half the bios land on a small grid so that contiguous runs and merges happen.
                    sector: if contiguous { (sector % 64) * 8 } else { sector * 8 },
                    sectors: if contiguous { 8 } else { sectors },
                    unplug,
                    lazy,
                }
            }),
        1..200,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn every_bio_completes_once_and_bytes_are_conserved(
        plan in plans(),
        scheduler in prop::sample::select(vec!["none", "mq-deadline", "kyber", "bfq", "cfq"]),
        nr_requests in 4u32..64,
        queue_depth in 1u32..32,
        max_sectors_kb in prop::sample::select(vec![4u32, 64, 512]),
        queue_plugging in any::<bool>(),
        switch in prop::option::of((0usize..200, prop::sample::select(vec!["none", "mq-deadline", "kyber", "bfq", "cfq", "anticipatory"]))),
    ) {
        let (device, log) =
            Recorder::new(RamDevice::new(RamParams { queue_depth, ..RamParams::default() }));
        let sched = elevator_sched::by_name(scheduler).unwrap();
        let mut q = BlockQueue::new(sched, Box::new(device), nr_requests, max_sectors_kb);
        q.set_queue_plugging(queue_plugging);
        let mut now: Nanos = 0;
        let mut submitted_bytes = 0u64;
        let mut done = Vec::new();
        let mut unblocked = Vec::new();
        let mut per_process: BTreeMap<u32, u64> = BTreeMap::new();
        for (i, b) in plan.iter().enumerate() {
            if let Some((_, to)) = switch.filter(|&(at, _)| at == i) {
                q.switch_scheduler(elevator_sched::by_name(to).unwrap());
                q.kick(now);
            }
            let op = if b.write { Op::Write } else { Op::Read };
            q.plug_bio(b.process, elevator_sim::stack::NO_NODE, elevator_sim::stack::NO_TAG, op, b.sector * 512, b.sectors * 512, BioFlags::SYNC, Owner::process(b.process), now);
            submitted_bytes += b.sectors * 512;
            *per_process.entry(b.process).or_default() += 1;
            if b.unplug || i + 1 == plan.len() {
                if b.lazy {
                    q.unplug_lazy(b.process, now);
                } else {
                    q.unplug(b.process, now);
                }
                q.kick(now);
            }
            // Let time pass now and then so completions interleave with submissions.
            if i % 7 == 0 {
                now += 5_000;
                q.complete(now, &mut done, &mut unblocked);
                q.kick(now);
            }
        }
        // Drain.
        let mut guard = 0;
        while !q.idle() {
            // The device's next event, else the scheduler's timer (idling), as the engine does.
            let next = match (q.device.next_event_ns(), q.wanted_timer_ns) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            now = next.unwrap_or(now + 1_000).max(now);
            q.complete(now, &mut done, &mut unblocked);
            q.kick(now);
            guard += 1;
            prop_assert!(guard < 100_000, "the queue never drained");
        }
        // Every bio exactly once, per process.
        let mut completed: BTreeMap<u32, u64> = BTreeMap::new();
        for bio in &done {
            *completed.entry(bio.process).or_default() += 1;
        }
        prop_assert_eq!(completed, per_process);
        // Bytes conserved: what the device was asked equals what was submitted.
        let log = log.lock().unwrap();
        let device_bytes: u64 = log.commands.iter().map(|c| c.len_bytes).sum();
        prop_assert_eq!(device_bytes, submitted_bytes);
        let done_bytes: u64 = done.iter().map(|b| b.len_bytes).sum();
        prop_assert_eq!(done_bytes, submitted_bytes);
        prop_assert!(log.commands.iter().all(|c| c.len_bytes <= u64::from(max_sectors_kb) * 1024));
        prop_assert!(log.max_outstanding <= queue_depth);
        if let Some((_, to)) = switch.filter(|&(at, _)| at < plan.len()) {
            prop_assert_eq!(q.scheduler.name(), to);
        }
    }
}

/// On a queue of 4 requests, 8 bios of `op` from `flooder` (sync or not), then a sync read
/// from another process: whether the reader got a request without sleeping.
fn reader_gets_a_request_after(q: &mut BlockQueue, op: Op, sync: bool, flooder: Owner) -> bool {
    for i in 0..8u64 {
        q.plug_bio(
            1,
            elevator_sim::stack::NO_NODE,
            elevator_sim::stack::NO_TAG,
            op,
            i << 20,
            4096,
            BioFlags::sync_if(sync),
            flooder,
            0,
        );
    }
    q.unplug(1, 0);
    q.plug_bio(
        2,
        elevator_sim::stack::NO_NODE,
        elevator_sim::stack::NO_TAG,
        Op::Read,
        900 << 20,
        4096,
        BioFlags::SYNC,
        Owner::process(2),
        0,
    );
    q.unplug(2, 0)
}

/// A queue of 4 requests on a device that takes one command at a time.
fn small_queue(scheduler: &str) -> BlockQueue {
    let device = RamDevice::new(RamParams { queue_depth: 1, ..RamParams::default() });
    BlockQueue::new(elevator_sched::by_name(scheduler).unwrap(), Box::new(device), 4, 512)
}

/// Async and sync requests draw from separate `nr_requests` pools (the 2.6 request list), and
/// under a group scheduler each cgroup has its own: a flood of one kind or group does not put
/// another's submitter to sleep.
#[test]
fn request_pools_are_per_class_and_per_group() {
    let run = |scheduler: &str, flood_sync: bool, flood_cgroup: u32| -> bool {
        let mut flooder = Owner::process(1);
        flooder.cgroup = flood_cgroup;
        reader_gets_a_request_after(&mut small_queue(scheduler), Op::Write, flood_sync, flooder)
    };
    assert!(run("mq-deadline", false, 0), "async writes leave the sync pool alone");
    assert!(!run("mq-deadline", true, 0), "sync writes fill the sync pool the reader needs");
    assert!(run("cfq", true, 1), "with CFQ groups, another group's flood uses its own pool");
}

/// Before 2.6.30 the request lists were by direction (`rl->count[rw]`): sync writes (direct
/// I/O, fsync's writeback) fill the writes' list and leave a reader its own, and a read
/// draws on the reads' list whatever its flags.
#[test]
fn before_2_6_30_request_lists_are_by_direction() {
    let run = |by_direction: bool, op: Op, sync: bool| -> bool {
        let mut q = small_queue("mq-deadline");
        q.set_request_lists_by_direction(by_direction);
        reader_gets_a_request_after(&mut q, op, sync, Owner::process(1))
    };
    assert!(run(true, Op::Write, true), "sync writes fill the writes' list");
    assert!(!run(false, Op::Write, true), "from 2.6.30 they fill the sync list");
    assert!(!run(true, Op::Read, false), "async reads fill the reads' list");
    assert!(run(false, Op::Read, false), "from 2.6.30 they fill the async list");
}

/// `elv_may_queue`: the process the anticipatory scheduler waits on gets a request slot even
/// when the pool is full and others sleep for it (up to half again `nr_requests`), so the
/// request AS is waiting for does not sit behind a full pool of others'. Deadline has no
/// such rule: the same read sleeps.
#[test]
fn the_anticipated_process_gets_a_slot_past_a_full_pool() {
    let run = |scheduler: &str| -> bool {
        let device = RamDevice::new(RamParams { queue_depth: 1, ..RamParams::default() });
        let sched = elevator_sched::by_name(scheduler).unwrap();
        let mut q = BlockQueue::new(sched, Box::new(device), 4, 512);
        let bio = |q: &mut BlockQueue, process: u32, offset: u64, now: Nanos| {
            q.plug_bio(
                process,
                elevator_sim::stack::NO_NODE,
                elevator_sim::stack::NO_TAG,
                Op::Read,
                offset,
                4096,
                BioFlags::SYNC,
                Owner::process(process),
                now,
            );
        };
        // Process 1 reads sequentially, one block at a time, thinking 100 us between reads:
        // AS learns to wait for it.
        let (mut done, mut unblocked) = (Vec::new(), Vec::new());
        let mut now = 0;
        for i in 0..20u64 {
            bio(&mut q, 1, i * 4096, now);
            assert!(q.unplug(1, now));
            q.kick(now);
            now += 200_000;
            q.complete(now, &mut done, &mut unblocked);
            now += 100_000;
        }
        assert_eq!(done.len(), 20, "{scheduler}: the reads are done");
        // Process 2 queues four reads far away and fills the pool; process 3's four find it
        // full and sleep.
        for i in 0..4u64 {
            bio(&mut q, 2, (1000 + i) << 20, now);
        }
        assert!(q.unplug(2, now));
        for i in 0..4u64 {
            bio(&mut q, 3, (2000 + i) << 20, now);
        }
        assert!(!q.unplug(3, now));
        q.kick(now);
        // Process 1's next read.
        bio(&mut q, 1, 20 * 4096, now + 10_000);
        q.unplug(1, now + 10_000)
    };
    assert!(run("anticipatory"), "AS lets the process it anticipates past the full pool");
    assert!(!run("mq-deadline"), "deadline puts it to sleep behind the others");
}

/// `get_request_wait`: a task that sleeps for a request slot has one bio asleep; woken, it is
/// a batcher for `NR_BATCHING` requests and sleeps again at the tail of the wait queue. A
/// journal thread with thousands of commit writes therefore keeps a reader who fell asleep
/// after it waiting one batch, not for all of them. Both come through the page cache, the
/// engine's one submitter: the block layer tells the tasks apart by the bios' owners.
#[test]
fn a_woken_submitter_takes_one_batch_then_sleeps_behind_later_sleepers() {
    let device =
        RamDevice::new(RamParams { queue_depth: 1, latency_ns: 1_000_000, ..RamParams::default() });
    let sched = elevator_sched::by_name("none").unwrap();
    let mut q = BlockQueue::new(sched, Box::new(device), 4, 512);
    let page_cache = elevator_sim::block::PAGE_CACHE_PROCESS;
    let bio = |q: &mut BlockQueue, pid: u32, op: Op, offset: u64| {
        q.plug_bio(
            page_cache,
            elevator_sim::stack::NO_NODE,
            7,
            op,
            offset,
            4096,
            BioFlags::SYNC,
            Owner::process(pid),
            0,
        );
    };
    // The journal thread (pid 1) writes 200 blocks far apart (nothing merges): 4 get the
    // pool's requests, the rest sleep with it.
    for i in 0..200u64 {
        bio(&mut q, 1, Op::Write, i << 20);
    }
    assert!(!q.unplug(page_cache, 0));
    // The reader (pid 2) needs one request, and sleeps behind the journal thread.
    bio(&mut q, 2, Op::Read, 900 << 20);
    assert!(!q.unplug(page_cache, 0));
    q.kick(0);
    let (mut done, mut unblocked) = (Vec::new(), Vec::new());
    let mut writes_before_read = None;
    let mut now = 0;
    while done.len() < 201 {
        now += 1_000_000;
        q.complete(now, &mut done, &mut unblocked);
        q.kick(now);
        if writes_before_read.is_none() {
            if let Some(i) = done.iter().position(|b| b.op == Op::Read) {
                writes_before_read = Some(i);
            }
        }
        assert!(now < 1_000_000_000, "every bio completes");
    }
    let n = writes_before_read.expect("the read completes");
    // One batch: the 4 the pool held, and at most 1.5 x 4 requests of the woken writer.
    assert!(n <= 12, "the reader waited for {n} of the journal thread's writes");
}

/// `get_request`: the request that fills the pool marks it full and makes its task a batcher,
/// which may go on past `nr_requests` (up to 1.5 ×) for `BLK_BATCH_TIME` (20 ms) or
/// `NR_BATCHING` requests; anyone else sleeps until the pool drops below `nr_requests`.
#[test]
fn the_task_that_fills_the_pool_batches_for_20_ms() {
    let device = RamDevice::new(RamParams {
        queue_depth: 1,
        latency_ns: 1_000_000_000,
        ..RamParams::default()
    });
    let sched = elevator_sched::by_name("none").unwrap();
    let mut q = BlockQueue::new(sched, Box::new(device), 8, 512);
    let mut n = 0u64;
    let mut read = |q: &mut BlockQueue, pid: u32, now: Nanos| -> bool {
        n += 1;
        q.plug_bio(
            pid,
            elevator_sim::stack::NO_NODE,
            elevator_sim::stack::NO_TAG,
            Op::Read,
            n << 20,
            4096,
            BioFlags::SYNC,
            Owner::process(pid),
            now,
        );
        q.unplug(pid, now)
    };
    // Process 1 takes seven requests, then the eighth, which fills the pool, and a ninth as
    // the batcher it became.
    for _ in 0..9 {
        assert!(read(&mut q, 1, 0));
    }
    assert_eq!(q.allocated(), 9);
    // 10 ms on, it is still a batcher; process 2 is not, and sleeps.
    assert!(read(&mut q, 1, 10_000_000));
    assert!(!read(&mut q, 2, 10_000_000));
    assert_eq!(q.allocated(), 10);
    // 30 ms on, process 1's batch time is over: it sleeps too.
    assert!(!read(&mut q, 1, 30_000_000));
    assert_eq!(q.allocated(), 10);
}
