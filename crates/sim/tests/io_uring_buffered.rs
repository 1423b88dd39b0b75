//! Buffered reads through io_uring: a read whose pages are cached is done inside
//! `io_uring_enter` on the submitting thread, and one that is not starts its I/O and waits
//! for the pages without holding the thread (5.9's async buffered reads). So an io_uring
//! reader keeps up to `iodepth` reads waiting on the disk at once, where psync and libaio
//! (whose `io_submit` runs each buffered read to its end) have one; and on cached pages all
//! three are bound by the one thread's CPU.

mod common;

/// See [`common::engine_run`]; the buffered jobs' files start cold (`invalidate=1`).
fn run(extra: &str) -> (u64, f64, f64, usize) {
    common::engine_run(&format!("invalidate=1\n{extra}"))
}

#[test]
fn io_uring_keeps_iodepth_cold_reads_waiting_where_psync_and_libaio_keep_one() {
    let psync = run("rw=randread\nioengine=psync");
    let libaio = run("rw=randread\nioengine=libaio\niodepth=16");
    let uring_1 = run("rw=randread\nioengine=io_uring\niodepth=1");
    let uring_16 = run("rw=randread\nioengine=io_uring\niodepth=16");
    // One read at a time: the drive seeks for each.
    assert_eq!(psync.0, uring_1.0, "{psync:?} {uring_1:?}");
    assert!(libaio.0.abs_diff(psync.0) <= 2, "{libaio:?} {psync:?}");
    // Sixteen at once: the drive's queue orders them (NCQ), well over twice the reads.
    assert!(uring_16.0 > 2 * psync.0, "{uring_16:?} against {psync:?}");
    // fio keeps all sixteen io_us busy (depth 16: index 4 of 1, 2, 4, 8, 16, 32, >= 64).
    assert_eq!(uring_16.3, 4, "{uring_16:?}");
    // A read that waits was submitted once it had started its I/O: slat is the system
    // call's own microsecond, clat the wait for the disk.
    assert!(uring_16.1 > 0.0 && uring_16.1 < 10_000.0, "{uring_16:?}");
    assert!(uring_16.2 > 1_000_000.0, "{uring_16:?}");
}

#[test]
fn cached_reads_through_io_uring_are_bound_by_the_thread_as_psync_s() {
    // pre_read puts the region in the cache first: every read is a hit, done inside the
    // submission, one after another on the job's thread.
    let psync = run("rw=randread\npre_read=1\nsize=64m\nioengine=psync");
    let uring = run("rw=randread\npre_read=1\nsize=64m\nioengine=io_uring\niodepth=8");
    assert!(psync.0.abs_diff(uring.0) <= 8, "{psync:?} {uring:?}");
    // Each waits to be reaped behind the seven after it: clat about seven calls, slat one.
    let calls = uring.2 / uring.1;
    assert!((6.0..8.0).contains(&calls), "{uring:?}");
    assert_eq!(uring.3, 3, "depth 8: {uring:?}");
}

#[test]
fn a_sequential_io_uring_reader_reads_as_fast_as_psync() {
    // Readahead keeps the stream ahead of either; depth adds nothing to a drive already
    // streaming.
    let psync = run("rw=read\nioengine=psync");
    let uring = run("rw=read\nioengine=io_uring\niodepth=32");
    let ratio = uring.0 as f64 / psync.0 as f64;
    assert!((0.95..1.05).contains(&ratio), "{uring:?} against {psync:?}");
}

/// io_uring hands a buffered write to an io-wq worker, and io-wq runs a file's writes one at
/// a time (hashed by inode): the job keeps `iodepth` writes submitted, each submitted in
/// the system call's microsecond, done as fast as one writer makes them.
#[test]
fn io_uring_writes_queue_for_the_file_s_worker() {
    let psync = run("rw=randwrite\nsize=16m\nioengine=psync");
    let libaio = run("rw=randwrite\nsize=16m\nioengine=libaio\niodepth=4");
    let uring = run("rw=randwrite\nsize=16m\nioengine=io_uring\niodepth=4");
    // 4 KiB writes into the page cache for 2 s, whichever engine: the same calls (but for
    // the io_us still in flight at the end).
    assert!(psync.0.abs_diff(uring.0) <= 4, "{psync:?} {uring:?}");
    assert_eq!(uring.3, 2, "depth 4: {uring:?}");
    // libaio's slat is the whole call; io_uring's the submission alone, its clat the
    // calls ahead of it at the worker and the wait to be reaped.
    assert!(uring.1 < libaio.1, "{uring:?} {libaio:?}");
    assert!(uring.2 > libaio.2, "{uring:?} {libaio:?}");
}

/// An io_uring writer that syncs every N writes (`fsync=`): io_uring's fsync runs on an io-wq
/// worker of its own (not hashed with the file's writes), so the job keeps `iodepth` io_us
/// busy, writes and syncs side by side (real fio 3.33 on a file here, buffered, `fsync=32
/// iodepth=16`: depth 16 = 132 %, slat 3 us). Before, such a job made one call at a time,
/// as psync (depth 1 = 103 %).
#[test]
fn an_io_uring_writer_syncs_beside_its_writes() {
    let run = |engine: &str| {
        let p = common::engine_process(&format!("rw=randwrite\nsize=256m\nfsync=32\n{engine}"));
        (p.stats[1].total_ios, p.sync_stats.fsyncs, common::busiest_depth(&p))
    };
    let psync = run("ioengine=psync");
    let uring = run("ioengine=io_uring\niodepth=16");
    // psync: one sync after each 32 writes, all at depth one.
    assert!(psync.1.abs_diff(psync.0 / 32) <= 1, "{psync:?}");
    assert_eq!(psync.2, 0, "{psync:?}");
    // io_uring: sixteen io_us busy, a sync at least every 32 writes.
    assert_eq!(uring.2, 4, "depth 16: {uring:?}");
    assert!(uring.1 + 1 >= uring.0 / 32, "{uring:?}");
    // The writes go on while the syncs wait for the disk: more of them than psync's.
    assert!(uring.0 as f64 > 1.15 * psync.0 as f64, "{uring:?} against {psync:?}");
}

/// `sync_file_range=` through io_uring (IORING_OP_SYNC_FILE_RANGE, also never hashed): the
/// same, `iodepth` io_us busy (real fio 3.33 here, buffered sequential writes,
/// `sync_file_range=write:32 iodepth=16`: depth 16 = 125.6 %).
#[test]
fn an_io_uring_writer_ranges_its_syncs_beside_its_writes() {
    let uring = run("rw=write\nsize=256m\nioengine=io_uring\niodepth=16\nsync_file_range=write:32");
    assert_eq!(uring.3, 4, "depth 16: {uring:?}");
}

/// A time-based reader starts its file over again and again, and each new pass drops the
/// file's pages (`invalidate`) while other reads of the job are still waiting: the drop is
/// the call of a task of the job that is free, not of one inside a read (the page cache's
/// one-call-at-a-time check failed here).
#[test]
fn an_io_uring_reader_drops_its_cache_at_each_pass_beside_its_waiting_reads() {
    let uring = run("rw=read\nsize=1m\nbs=16k\nioengine=io_uring\niodepth=32");
    let psync = run("rw=read\nsize=1m\nbs=16k\nioengine=psync");
    // Many passes of 64 reads each, the same cold file every time.
    assert!(uring.0 > 64 * 10 && psync.0 > 64 * 10, "{uring:?} {psync:?}");
}

/// Each io_uring process through the page cache has `iodepth` + 1 tasks: a job file asking
/// for more than the named limit in all is refused in one line naming the job.
#[test]
fn too_many_io_uring_page_cache_tasks_are_refused() {
    let text = "[j]\nfilename=sda\nbs=4k\nsize=16m\nioengine=io_uring\niodepth=65536\nnumjobs=8\n";
    let jobs =
        elevator_fio::parse_str(text, "t.fio", std::path::Path::new("."), &|_| None).unwrap();
    let topology = elevator_sim::Topology::from_str(common::HDD, "t.toml").unwrap();
    let e = elevator_sim::simulate(&jobs, &topology, &elevator_sim::SimOptions::default())
        .err()
        .expect("refused");
    let e = e.to_string();
    assert!(e.contains("job `j`") && e.contains("at most 262144"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}
