//! The Vm driven by a toy device: every I/O takes a fixed time plus its transfer, all in
//! parallel. The device keeps, per page, the version of the data it holds, so tests can
//! check where written data is.

use std::collections::{BTreeMap, HashMap};

use elevator_core::{Nanos, Op, Owner, NS_PER_MS, NS_PER_SEC};

use super::*;
use crate::config::{Kernel, VmConfig};
use crate::pages::PageState;

struct Harness {
    vm: Vm,
    now: Nanos,
    /// In-flight I/O by completion time.
    pending: BTreeMap<(Nanos, u64), BlockIo>,
    seq: u64,
    /// The device serves one I/O at a time: when it is next free.
    busy_until: Nanos,
    latency_ns: Nanos,
    bytes_per_sec: u64,
    ios: Vec<BlockIo>,
    wakes: HashMap<TaskId, Nanos>,
    flushes: Vec<Nanos>,
}

fn machine(kernel: &str, memory_mib: u64) -> VmConfig {
    let kernel = Kernel::parse(kernel).unwrap();
    VmConfig {
        memory_bytes: memory_mib << 20,
        reserved_bytes: 16 << 20,
        ..VmConfig::default_for(kernel)
    }
}

const BDI: BdiSpec = BdiSpec { read_ahead_kb: 128, max_sectors_kb: 512, nr_requests: 128 };

impl Harness {
    fn new(cfg: VmConfig) -> Harness {
        Harness {
            vm: Vm::new(cfg, &[BDI]),
            now: 0,
            pending: BTreeMap::new(),
            seq: 0,
            busy_until: 0,
            latency_ns: NS_PER_MS,
            bytes_per_sec: 100_000_000,
            ios: Vec::new(),
            wakes: HashMap::new(),
            flushes: Vec::new(),
        }
    }

    fn take(&mut self, out: Output) {
        for io in out.ios {
            let start = self.now.max(self.busy_until);
            let at = start + self.latency_ns + io.len_bytes * NS_PER_SEC / self.bytes_per_sec;
            self.busy_until = at;
            self.seq += 1;
            self.pending.insert((at, self.seq), io);
            self.ios.push(io);
        }
        for w in out.wakes {
            self.wakes.insert(w.task, w.at_ns);
        }
        for t in out.runnable {
            let mut more = Output::default();
            self.vm.run(t, self.now, &mut more);
            self.take(more);
        }
    }

    /// Runs device completions and Vm timers up to `until`.
    fn run_until(&mut self, until: Nanos) {
        loop {
            let io = self.pending.keys().next().map(|&(t, _)| t);
            let timer = self.vm.next_timer_ns();
            let next = [io, timer].into_iter().flatten().min();
            let Some(t) = next.filter(|&t| t <= until) else { break };
            self.now = self.now.max(t);
            let mut out = Output::default();
            if io == Some(t) {
                let (_, io) = self.pending.pop_first().unwrap();
                if io.op == Op::Flush {
                    self.flushes.push(t);
                }
                self.vm.io_done(io.tag, t, &mut out);
            } else {
                self.vm.timer(t, &mut out);
            }
            self.take(out);
        }
        self.now = self.now.max(until);
    }

    /// Makes the call and runs until it (or its run) finishes; returns (calls, time).
    fn call(&mut self, task: TaskId, call: Syscall) -> (u64, Nanos) {
        let mut out = Output::default();
        let r = self.vm.syscall(task, call, self.now, &mut out);
        self.take(out);
        match r {
            SyscallResult::Done { count, at_ns } => {
                self.run_until(at_ns);
                (count, at_ns)
            }
            SyscallResult::Blocked { count } => {
                while !self.wakes.contains_key(&task) {
                    let next =
                        [self.pending.keys().next().map(|&(t, _)| t), self.vm.next_timer_ns()]
                            .into_iter()
                            .flatten()
                            .min()
                            .expect("a blocked call has something to wait for");
                    self.run_until(next);
                }
                let at = self.wakes.remove(&task).unwrap();
                self.run_until(at);
                (count + 1, at)
            }
        }
    }
}

fn file(h: &mut Harness, mib: u64, data: bool) -> FileId {
    h.vm.add_file(FileSpec::new(0, 1 << 30, mib << 20, if data { mib << 20 } else { 0 }))
}

#[test]
fn a_sequential_reader_gets_growing_readahead_windows_and_cached_reads_cost_cpu_only() {
    let mut h = Harness::new(machine("2.6.32", 1024));
    let f = file(&mut h, 64, true);
    let t = h.vm.add_task(Owner::process(1));
    let mut left = 1024u64; // 4 MiB in 4 KiB reads
    let mut offset = 0;
    while left > 0 {
        let (n, _) = h.call(t, Syscall::Read { file: f, offset, len: 4096, count: left });
        offset += n * 4096;
        left -= n;
    }
    let sizes: Vec<u64> = h.ios.iter().map(|io| io.len_bytes / 4096).collect();
    assert_eq!(&sizes[..5], &[4, 8, 16, 32, 32], "{sizes:?}");
    assert!(h.ios.iter().all(|io| io.sync && io.op == Op::Read));
    // The marker at page 1020 (28 + 32 x 31) started one more window, [1052, 1084).
    assert_eq!(sizes.iter().sum::<u64>(), 1084, "the last window runs ahead");
    // A second pass is all cache: one call for the whole file.
    let (n, at) = h.call(t, Syscall::Read { file: f, offset: 0, len: 4096, count: 1024 });
    assert_eq!(n, 1024);
    let per = (at - h.now + 1024 * h.vm.config().syscall_cost_ns(4096)) / 1024;
    assert!(per < 10_000, "{per} ns per cached read");
}

/// A task that waits for a read runs the device's queue (`sync_page`); from 2.6.33 to 2.6.38
/// an async readahead started from an uptodate marker page runs it as well.
#[test]
fn waiting_runs_the_queue_and_so_does_async_readahead_in_2_6_33_to_2_6_38() {
    for (kernel, kicks) in
        [("2.6.29", false), ("2.6.32", false), ("2.6.33", true), ("2.6.38", true), ("3.2", false)]
    {
        let mut h = Harness::new(machine(kernel, 1024));
        let f = file(&mut h, 64, true);
        let t = h.vm.add_task(Owner::process(1));
        let mut out = Output::default();
        let read = |offset| Syscall::Read { file: f, offset, len: 4096, count: 1 };
        let r = h.vm.syscall(t, read(0), 0, &mut out);
        assert!(matches!(r, SyscallResult::Blocked { .. }));
        assert_eq!(out.unplug, vec![0], "{kernel}: the reader waits, its queue runs");
        h.take(out);
        h.run_until(NS_PER_SEC);
        // Page 1 carries the marker of the first window ([0, 4), async tail 3).
        let mut out = Output::default();
        let r = h.vm.syscall(t, read(4096), h.now, &mut out);
        assert!(matches!(r, SyscallResult::Done { .. }));
        assert_eq!(out.ios.len(), 1, "{kernel}: the marker started the next window");
        assert_eq!(out.unplug == vec![0], kicks, "{kernel}");
    }
}

/// On a congested device the marker is used up and no window goes out
/// (`page_cache_async_readahead`), from 2.6.23 to 4.x; the reader then misses at the next
/// window and reads ahead synchronously from there. 5.0's blk-mq reports no congestion.
#[test]
fn async_readahead_is_deferred_while_the_device_is_congested() {
    for (kernel, deferred) in [("2.6.29", true), ("3.2", true), ("4.19", true), ("5.4", false)] {
        let mut h = Harness::new(machine(kernel, 1024));
        let f = file(&mut h, 64, true);
        let t = h.vm.add_task(Owner::process(1));
        let read = |offset| Syscall::Read { file: f, offset, len: 4096, count: 1 };
        h.call(t, read(0));
        h.run_until(h.now + NS_PER_SEC);
        h.vm.set_read_congested(0, true);
        // Page 1 carries the marker of the first window ([0, 4), async tail 3).
        let mut out = Output::default();
        let r = h.vm.syscall(t, read(4096), h.now, &mut out);
        assert!(matches!(r, SyscallResult::Done { .. }), "{kernel}");
        assert_eq!(out.ios.is_empty(), deferred, "{kernel}: {:?}", out.ios);
        assert_eq!(h.vm.stats.readahead.deferred, u64::from(deferred), "{kernel}");
        h.take(out);
        h.run_until(h.now + NS_PER_SEC);
        // The marker is gone: the pages up to the window's end are hits, no more windows.
        let mut out = Output::default();
        h.vm.syscall(t, read(2 * 4096), h.now, &mut out);
        assert!(out.ios.is_empty() || !deferred, "{kernel}: {:?}", out.ios);
        h.take(out);
        h.run_until(h.now + NS_PER_SEC);
        if deferred {
            // Uncongested again, the miss at page 4 reads ahead synchronously.
            h.vm.set_read_congested(0, false);
            let mut out = Output::default();
            let r = h.vm.syscall(t, read(4 * 4096), h.now, &mut out);
            assert!(matches!(r, SyscallResult::Blocked { .. }), "{kernel}");
            assert!(out.ios.iter().any(|io| io.len_bytes > 4096), "{kernel}: {:?}", out.ios);
            assert_eq!(h.vm.stats.readahead.sync_calls, 2, "{kernel}");
        }
    }
}

#[test]
fn random_readers_read_only_what_they_ask_for_when_advised() {
    let mut h = Harness::new(machine("2.6.32", 1024));
    let f = file(&mut h, 64, true);
    let t = h.vm.add_task(Owner::process(1));
    h.call(t, Syscall::Fadvise { file: f, offset: 0, len: 0, advice: Advice::Random });
    for i in [100u64, 7, 3000, 12000] {
        h.call(t, Syscall::Read { file: f, offset: i * 4096, len: 4096, count: 1 });
    }
    assert!(h.ios.iter().all(|io| io.len_bytes == 4096), "{:?}", h.ios);
}

#[test]
fn a_file_is_cached_only_when_every_page_is_there_and_up_to_date() {
    let mut h = Harness::new(machine("2.6.32", 1024));
    let f = file(&mut h, 4, true);
    let t = h.vm.add_task(Owner::process(1));
    assert!(!h.vm.file_cached(f), "empty");
    h.vm.preload(f, 0, 2 << 20);
    assert!(!h.vm.file_cached(f), "half of it");
    h.vm.preload(f, 2 << 20, 2 << 20);
    assert!(h.vm.file_cached(f), "all of it");
    // One page dropped: not any more.
    h.call(t, Syscall::Fadvise { file: f, offset: 8192, len: 4096, advice: Advice::DontNeed });
    assert!(!h.vm.file_cached(f), "a page dropped");
    // Being read back in (not yet up to date) is not cached either.
    let mut out = Output::default();
    let r = h.vm.syscall(
        t,
        Syscall::Read { file: f, offset: 8192, len: 4096, count: 1 },
        h.now,
        &mut out,
    );
    assert!(matches!(r, SyscallResult::Blocked { .. }));
    assert!(!h.vm.file_cached(f), "a page being read");
    h.take(out);
    h.run_until(h.now + NS_PER_SEC);
    assert!(h.vm.file_cached(f), "read back in");
}

#[test]
fn reading_twice_memory_keeps_the_cache_within_memory() {
    let mut h = Harness::new(machine("2.6.32", 64));
    let f = file(&mut h, 128, true);
    let t = h.vm.add_task(Owner::process(1));
    let pages = 128 * 256;
    let mut offset = 0;
    while offset < pages * 4096 {
        let (n, _) = h.call(t, Syscall::Read { file: f, offset, len: 65536, count: 1 << 20 });
        offset += n * 65536;
    }
    let cap = h.vm.config().cache_pages();
    assert!(h.vm.pages().total.cached <= cap, "{} > {cap}", h.vm.pages().total.cached);
    assert!(h.vm.stats.pages_reclaimed > pages / 2);
}

/// Writes `mib` MiB in `bs`-byte writes as fast as the cache allows; returns the elapsed time.
fn stream_write(h: &mut Harness, t: TaskId, f: FileId, mib: u64, bs: u64) -> Nanos {
    let start = h.now;
    let total = (mib << 20) / bs;
    let mut done = 0;
    while done < total {
        let (n, _) = h.call(
            t,
            Syscall::Write {
                file: f,
                offset: done * bs,
                len: bs,
                count: total - done,
                sync: false,
            },
        );
        done += n;
    }
    h.now - start
}

#[test]
fn a_streaming_writer_is_held_near_the_dirty_limit_in_both_kernel_eras() {
    for kernel in ["2.6.32", "3.2"] {
        let mut h = Harness::new(machine(kernel, 256));
        let f = file(&mut h, 512, false);
        let t = h.vm.add_task(Owner::process(1));
        let took = stream_write(&mut h, t, f, 400, 512);
        let limits = h.vm.limits();
        let peak = h.vm.stats.peak_dirty_pages;
        assert!(peak <= limits.dirty + limits.dirty / 4, "{kernel}: peak {peak} vs {limits:?}");
        assert!(peak >= limits.background, "{kernel}: peak {peak} vs {limits:?}");
        // The device writes 100 MB/s: 400 MiB less what stays dirty takes ~3 s at least.
        let secs = took as f64 / 1e9;
        assert!(secs > 2.5, "{kernel}: {secs} s");
        let writes: Vec<&BlockIo> = h.ios.iter().filter(|io| io.op == Op::Write).collect();
        assert!(writes.iter().all(|io| !io.sync), "writeback is async");
        let by_writer = writes.iter().filter(|io| io.owner.pid == 1).count();
        if kernel == "3.2" {
            assert_eq!(by_writer, 0, "IO-less: only the flusher writes");
            assert!(h.vm.stats.throttle_pauses > 0);
        } else {
            assert!(by_writer > 0, "2.6.32: the throttled writer writes back itself");
        }
    }
}

#[test]
fn before_3_2_every_page_written_counts_toward_the_cpu_s_throttle_check() {
    // Rewriting dirty pages dirties nothing new: 3.2's per-task nr_dirtied does not move,
    // but 2.6.3x's balance_dirty_pages_ratelimited counts every page copied (per CPU), so a
    // run of rewrites stops at the check every ratelimit_pages.
    let ratelimit = crate::dirty::legacy_ratelimit_pages((1024 << 20) / 4096, 2);
    let pass = 4 * ratelimit; // pages
    for (kernel, checked) in [("2.6.32", true), ("3.2", false)] {
        let mut h = Harness::new(machine(kernel, 1024));
        let t = h.vm.add_task(Owner::process(1));
        let f = file(&mut h, 64, false);
        stream_write(&mut h, t, f, (pass * 4096) >> 20, 4096);
        let mut out = Output::default();
        let (mut done, mut runs) = (0, 0);
        while done < 8 * pass {
            let at = done % pass;
            let call = Syscall::Write {
                file: f,
                offset: at * 4096,
                len: 4096,
                count: pass - at,
                sync: false,
            };
            match h.vm.syscall(t, call, h.now, &mut out) {
                SyscallResult::Done { count, .. } => done += count,
                other => panic!("{kernel}: {other:?}"),
            }
            runs += 1;
        }
        assert_eq!(runs > 8, checked, "{kernel}: {runs} runs for 8 passes");
    }
}

/// Pages of `f` in each state: (dirty, writeback).
fn dirty_and_writeback(h: &Harness, f: FileId, a: u64, b: u64) -> (u64, u64) {
    let mut n = (0, 0);
    for (s, e) in h.vm.pages().overlapping(f, a, b).iter() {
        let pages = e.end.min(b) - (*s).max(a);
        match e.state {
            PageState::Dirty => n.0 += pages,
            PageState::Writeback { .. } => n.1 += pages,
            _ => {}
        }
    }
    n
}

const SFR_WRITE: SyncRangeFlags =
    SyncRangeFlags { wait_before: false, write: true, wait_after: false };

/// `sync_file_range(WRITE)` starts async writeback of just the range and returns at once;
/// with `WAIT_AFTER` it returns once the range is on the device. No cache flush either way.
#[test]
fn sync_file_range_writes_back_only_its_range() {
    let mut h = Harness::new(machine("2.6.32", 1024));
    let f = file(&mut h, 64, false);
    let t = h.vm.add_task(Owner::process(1));
    stream_write(&mut h, t, f, 4, 4096); // pages 0..1024 dirty
    assert_eq!(dirty_and_writeback(&h, f, 0, 1024), (1024, 0));
    let before = h.ios.len();
    let mut out = Output::default();
    let call = Syscall::SyncFileRange { file: f, offset: 0, len: 1 << 20, flags: SFR_WRITE };
    let r = h.vm.syscall(t, call, h.now, &mut out);
    assert!(matches!(r, SyscallResult::Done { count: 1, .. }), "{r:?}");
    h.take(out);
    let written: u64 = h.ios[before..].iter().map(|io| io.len_bytes / 4096).sum();
    assert_eq!(written, 256, "the first MiB only");
    assert!(h.ios[before..].iter().all(|io| io.op == Op::Write && !io.sync));
    assert_eq!(dirty_and_writeback(&h, f, 0, 256), (0, 256));
    assert_eq!(dirty_and_writeback(&h, f, 256, 1024), (768, 0));
    // WAIT_BEFORE | WRITE | WAIT_AFTER on the second MiB: back once it is all written.
    let flags = SyncRangeFlags { wait_before: true, write: true, wait_after: true };
    let start = h.now;
    let (_, at) =
        h.call(t, Syscall::SyncFileRange { file: f, offset: 1 << 20, len: 1 << 20, flags });
    // 1 MiB at 100 MB/s: at least 10 ms on the toy device.
    assert!(at - start >= 10 * NS_PER_MS, "{} ns", at - start);
    assert_eq!(dirty_and_writeback(&h, f, 256, 512), (0, 0), "on the device");
    assert_eq!(dirty_and_writeback(&h, f, 512, 1024), (512, 0), "the rest untouched");
    assert!(h.flushes.is_empty(), "no cache flush");
    // len 0: to the end of the file.
    h.call(t, Syscall::SyncFileRange { file: f, offset: 2 << 20, len: 0, flags });
    assert_eq!(dirty_and_writeback(&h, f, 0, 1024), (0, 0));
}

/// `WRITE` of a range larger than the request pool sleeps for request slots until all of it
/// is issued (as `get_request_wait` does), then returns; `WAIT_BEFORE` alone waits for what
/// is under writeback and issues nothing.
#[test]
fn sync_file_range_sleeps_for_request_slots_and_waits_before() {
    let small = BdiSpec { nr_requests: 4, max_sectors_kb: 128, ..BDI };
    let mut h = Harness {
        vm: Vm::new(machine("2.6.32", 1024), &[small]),
        ..Harness::new(machine("2.6.32", 1024))
    };
    let f = file(&mut h, 64, false);
    let t = h.vm.add_task(Owner::process(1));
    stream_write(&mut h, t, f, 8, 65536);
    let dirty = dirty_and_writeback(&h, f, 0, 2048).0;
    assert!(dirty > 1024, "{dirty} dirty pages");
    let (_, at) =
        h.call(t, Syscall::SyncFileRange { file: f, offset: 0, len: 8 << 20, flags: SFR_WRITE });
    assert!(at > 0);
    assert_eq!(dirty_and_writeback(&h, f, 0, 2048).0, 0, "every dirty page issued");
    // The last requests are still in flight: WAIT_BEFORE waits for them, writes nothing.
    let before = h.ios.len();
    let wait = SyncRangeFlags { wait_before: true, ..SyncRangeFlags::default() };
    h.call(t, Syscall::SyncFileRange { file: f, offset: 0, len: 0, flags: wait });
    assert_eq!(dirty_and_writeback(&h, f, 0, 2048), (0, 0));
    assert_eq!(h.ios.len(), before);
}

#[test]
fn fsync_puts_everything_on_the_device_then_flushes() {
    let mut h = Harness::new(machine("2.6.32", 512));
    let f = file(&mut h, 64, false);
    let t = h.vm.add_task(Owner::process(1));
    stream_write(&mut h, t, f, 8, 4096);
    assert!(h.vm.pages().file(f).counts.dirty > 0);
    let before = h.ios.len();
    let (_, at) = h.call(t, Syscall::Fsync { file: f, data_only: false });
    assert_eq!(h.vm.pages().file(f).counts.dirty, 0);
    assert_eq!(h.vm.pages().file(f).counts.writeback, 0);
    let fsync_writes: Vec<&BlockIo> =
        h.ios[before..].iter().filter(|io| io.op == Op::Write).collect();
    assert!(!fsync_writes.is_empty() && fsync_writes.iter().all(|io| io.sync));
    assert_eq!(h.flushes.len(), 1, "one cache flush");
    assert!(h.flushes[0] <= at);
}

#[test]
fn before_2_6_30_fsync_writes_reach_the_scheduler_as_async_writes() {
    for (kernel, sync) in [("2.5.65", false), ("2.6.29", false), ("2.6.30", true)] {
        let mut h = Harness::new(machine(kernel, 512));
        let f = file(&mut h, 64, false);
        let t = h.vm.add_task(Owner::process(1));
        stream_write(&mut h, t, f, 8, 4096);
        let before = h.ios.len();
        h.call(t, Syscall::Fsync { file: f, data_only: false });
        assert_eq!(h.vm.pages().file(f).counts.dirty, 0, "{kernel}");
        let writes: Vec<&BlockIo> =
            h.ios[before..].iter().filter(|io| io.op == Op::Write).collect();
        assert!(!writes.is_empty(), "{kernel}");
        assert!(writes.iter().all(|io| io.sync == sync), "{kernel}: fsync writes sync = {sync}");
    }
}

#[test]
fn partial_overwrites_of_uncached_data_read_the_page_first() {
    let mut h = Harness::new(machine("2.6.32", 512));
    let f = file(&mut h, 4, true);
    let t = h.vm.add_task(Owner::process(1));
    h.call(t, Syscall::Write { file: f, offset: 4096 * 10 + 512, len: 512, count: 1, sync: false });
    assert_eq!(h.ios.len(), 1);
    assert_eq!((h.ios[0].op, h.ios[0].len_bytes), (Op::Read, 4096));
    // Whole-page overwrites read nothing.
    h.call(t, Syscall::Write { file: f, offset: 4096 * 20, len: 8192, count: 1, sync: false });
    assert_eq!(h.ios.len(), 1);
    assert!(matches!(h.vm.pages().get(f, 21).unwrap().1.state, PageState::Dirty));
}

#[test]
fn old_dirty_data_is_written_back_by_the_periodic_flusher() {
    let mut h = Harness::new(machine("2.6.32", 1024));
    h.now = 100 * NS_PER_SEC;
    let f = file(&mut h, 64, false);
    let t = h.vm.add_task(Owner::process(1));
    stream_write(&mut h, t, f, 4, 4096);
    assert_eq!(h.vm.pages().file(f).counts.dirty, 1024);
    h.run_until(h.now + 25 * NS_PER_SEC);
    assert_eq!(h.vm.pages().file(f).counts.dirty, 1024, "young data stays dirty");
    h.run_until(h.now + 15 * NS_PER_SEC);
    assert_eq!(h.vm.pages().file(f).counts.dirty, 0, "30 s old: written back");
    assert!(h.ios.iter().all(|io| io.owner.pid == FLUSHER_PID_BASE));
}

#[test]
fn dontneed_drops_clean_pages_and_starts_writeback() {
    let mut h = Harness::new(machine("2.6.32", 1024));
    let f = file(&mut h, 16, true);
    let t = h.vm.add_task(Owner::process(1));
    h.vm.preload(f, 0, 16 << 20);
    assert_eq!(h.vm.pages().file(f).counts.cached, 4096);
    h.call(t, Syscall::Write { file: f, offset: 0, len: 4096, count: 4, sync: false });
    h.call(t, Syscall::Fadvise { file: f, offset: 0, len: 0, advice: Advice::DontNeed });
    let c = h.vm.pages().file(f).counts;
    assert_eq!(c.cached, 4, "only the pages under writeback stay");
    h.run_until(h.now + NS_PER_SEC);
    assert_eq!(h.vm.pages().file(f).counts.dirty, 0);
}

mod integrity {
    use super::*;
    use proptest::prelude::*;

    /// Runs `ops` on a small machine with a versioned device; checks after every step that
    /// each written page's newest data is dirty in the cache or on the device, and after a
    /// final fsync that all of it is on the device and the flush came after the writes.
    fn check(kernel: &str, ext3: bool, ops: &[(u8, u64, u64)]) -> Result<(), TestCaseError> {
        let mut h = Harness::new(machine(kernel, 32));
        h.bytes_per_sec = 20_000_000;
        if ext3 {
            // The file system around the file; the journal after it.
            h.vm.add_journal(JournalSpec {
                bdi: 0,
                fs_start_bytes: 0,
                fs_len_bytes: 8 << 30,
                journal_start_bytes: 6 << 30,
                journal_bytes: 32 << 20,
                commit_interval_ns: 5 * NS_PER_SEC,
                ordered: true,
                barrier: true,
            });
        }
        let f = file(&mut h, 64, true);
        let t = h.vm.add_task(Owner::process(1));
        let pages = 64 * 256u64;
        let mut latest: HashMap<u64, u64> = HashMap::new(); // page -> version
        let mut on_device: HashMap<u64, u64> = HashMap::new();
        let mut in_flight: HashMap<IoTag, Vec<(u64, u64)>> = HashMap::new();
        for &(kind, at, n) in ops {
            let page = at % (pages - 64);
            match kind % 5 {
                0 | 1 => {
                    let len = n.max(1) * 4096;
                    let (done, _) = h.call_tracking(
                        t,
                        Syscall::Write { file: f, offset: page * 4096, len, count: 1, sync: false },
                        &mut latest,
                        &mut on_device,
                        &mut in_flight,
                    );
                    prop_assert_eq!(done, 1);
                }
                2 => {
                    h.call_tracking(
                        t,
                        Syscall::Read {
                            file: f,
                            offset: page * 4096,
                            len: n.max(1) * 4096,
                            count: 1,
                        },
                        &mut latest,
                        &mut on_device,
                        &mut in_flight,
                    );
                }
                3 => {
                    let until = h.now + n * 50 * NS_PER_MS;
                    h.run_tracking(until, &latest, &mut on_device, &mut in_flight);
                }
                _ => {
                    h.call_tracking(
                        t,
                        Syscall::Fadvise { file: f, offset: 0, len: 0, advice: Advice::DontNeed },
                        &mut latest,
                        &mut on_device,
                        &mut in_flight,
                    );
                }
            }
            for (&p, &v) in &latest {
                let cached_dirty = h.vm.pages().get(f, p).is_some_and(|(_, e)| {
                    matches!(e.state, PageState::Dirty | PageState::Writeback { dirty: true, .. })
                });
                let dev = on_device.get(&p).copied().unwrap_or(0);
                let flying = in_flight.values().flatten().any(|&(q, w)| q == p && w == v);
                prop_assert!(
                    cached_dirty || dev == v || flying,
                    "page {} version {} is neither dirty in the cache nor on the device ({})",
                    p,
                    v,
                    dev
                );
            }
        }
        let flushes_before = h.flushes.len();
        h.call_tracking(
            t,
            Syscall::Fsync { file: f, data_only: false },
            &mut latest,
            &mut on_device,
            &mut in_flight,
        );
        for (&p, &v) in &latest {
            prop_assert_eq!(on_device.get(&p).copied(), Some(v), "page {} after fsync", p);
        }
        prop_assert!(h.flushes.len() > flushes_before, "fsync ends with a cache flush");
        Ok(())
    }

    impl Harness {
        fn run_tracking(
            &mut self,
            until: Nanos,
            latest: &HashMap<u64, u64>,
            on_device: &mut HashMap<u64, u64>,
            in_flight: &mut HashMap<IoTag, Vec<(u64, u64)>>,
        ) {
            loop {
                let io = self.pending.keys().next().map(|&(t, _)| t);
                let timer = self.vm.next_timer_ns();
                let Some(t) = [io, timer].into_iter().flatten().min().filter(|&t| t <= until)
                else {
                    break;
                };
                self.now = self.now.max(t);
                let mut out = Output::default();
                if io == Some(t) {
                    let (_, io) = self.pending.pop_first().unwrap();
                    if io.op == Op::Flush {
                        self.flushes.push(t);
                    }
                    if let Some(pages) = in_flight.remove(&io.tag) {
                        for (p, v) in pages {
                            on_device.insert(p, v);
                        }
                    }
                    self.vm.io_done(io.tag, t, &mut out);
                } else {
                    self.vm.timer(t, &mut out);
                }
                self.take_tracking(out, latest, in_flight);
            }
            self.now = self.now.max(until);
        }

        fn take_tracking(
            &mut self,
            mut out: Output,
            latest: &HashMap<u64, u64>,
            in_flight: &mut HashMap<IoTag, Vec<(u64, u64)>>,
        ) {
            let file_bytes = (1u64 << 30)..(1u64 << 30) + (64 << 20);
            for io in &out.ios {
                if io.op == Op::Write && file_bytes.contains(&io.offset_bytes) {
                    let first = (io.offset_bytes - (1 << 30)) / 4096;
                    let pages = (first..first + io.len_bytes / 4096)
                        .map(|p| (p, latest.get(&p).copied().unwrap_or(0)))
                        .collect();
                    in_flight.insert(io.tag, pages);
                }
            }
            let runnable = std::mem::take(&mut out.runnable);
            self.take(out);
            for t in runnable {
                let mut more = Output::default();
                self.vm.run(t, self.now, &mut more);
                self.take_tracking(more, latest, in_flight);
            }
        }

        fn call_tracking(
            &mut self,
            task: TaskId,
            call: Syscall,
            latest: &mut HashMap<u64, u64>,
            on_device: &mut HashMap<u64, u64>,
            in_flight: &mut HashMap<IoTag, Vec<(u64, u64)>>,
        ) -> (u64, Nanos) {
            // A write's data is the next version from the moment it is in the cache.
            if let Syscall::Write { offset, len, .. } = call {
                let v = latest.values().max().copied().unwrap_or(0) + 1;
                for p in offset / 4096..(offset + len).div_ceil(4096) {
                    latest.insert(p, v);
                }
            }
            let mut out = Output::default();
            let r = self.vm.syscall(task, call, self.now, &mut out);
            self.take_tracking(out, latest, in_flight);
            match r {
                SyscallResult::Done { count, at_ns } => {
                    self.run_tracking(at_ns, latest, on_device, in_flight);
                    (count, at_ns)
                }
                SyscallResult::Blocked { count } => {
                    while !self.wakes.contains_key(&task) {
                        let next =
                            [self.pending.keys().next().map(|&(t, _)| t), self.vm.next_timer_ns()]
                                .into_iter()
                                .flatten()
                                .min()
                                .expect("something to wait for");
                        self.run_tracking(next, latest, on_device, in_flight);
                    }
                    let at = self.wakes.remove(&task).unwrap();
                    self.run_tracking(at, latest, on_device, in_flight);
                    (count + 1, at)
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn written_data_is_in_the_cache_or_on_the_device(
            ops in prop::collection::vec((0u8..5, 0u64..20_000, 0u64..64), 1..60),
            kernel in prop::sample::select(vec!["2.5.65", "2.6.32", "3.2"]),
            ext3 in any::<bool>(),
        ) {
            check(kernel, ext3, &ops)?;
        }
    }
}

mod ext3 {
    use super::*;

    const FS_START: u64 = 0;
    const JOURNAL_AT: u64 = 6 << 30;

    fn mount(h: &mut Harness, journal_bytes: u64, barrier: bool) -> JournalId {
        h.vm.add_journal(JournalSpec {
            bdi: 0,
            fs_start_bytes: FS_START,
            fs_len_bytes: 8 << 30,
            journal_start_bytes: JOURNAL_AT,
            journal_bytes,
            commit_interval_ns: 5 * NS_PER_SEC,
            ordered: true,
            barrier,
        })
    }

    fn journal_ios(h: &Harness) -> Vec<BlockIo> {
        h.ios.iter().copied().filter(|io| io.owner.pid == JOURNAL_PID_BASE).collect()
    }

    fn in_journal(io: &BlockIo) -> bool {
        (JOURNAL_AT..JOURNAL_AT + (128 << 20)).contains(&io.offset_bytes)
    }

    #[test]
    fn a_commit_writes_ordered_data_then_the_log_then_the_commit_block_between_flushes() {
        // The periodic commit nobody waits for: sync only in 2.6.37-3.4.
        let eras = [
            ("2.5.65", false),
            ("2.6.29", false),
            ("2.6.32", false),
            ("2.6.36", false),
            ("2.6.37", true),
            ("3.2", true),
            ("3.5", false),
        ];
        for (kernel, data_sync) in eras {
            let mut h = Harness::new(machine(kernel, 1024));
            mount(&mut h, 128 << 20, true);
            let f = file(&mut h, 64, false);
            let t = h.vm.add_task(Owner::process(1));
            stream_write(&mut h, t, f, 8, 4096);
            h.run_until(6 * NS_PER_SEC);
            let ios = journal_ios(&h);
            let data: Vec<&BlockIo> = ios.iter().filter(|io| !in_journal(io)).collect();
            let data_bytes: u64 =
                data.iter().filter(|io| io.op == Op::Write).map(|io| io.len_bytes).sum();
            assert_eq!(data_bytes, 8 << 20, "{kernel}: the commit writes the ordered data");
            assert!(
                data.iter().filter(|io| io.op == Op::Write).all(|io| io.sync == data_sync),
                "{kernel}: commit data sync = {data_sync}"
            );
            // Then the log (descriptor + metadata), a flush, the commit block, a flush.
            let log: Vec<&BlockIo> =
                ios.iter().filter(|io| io.op == Op::Write && in_journal(io)).collect();
            assert_eq!(log.len(), 2, "{kernel}: log write and commit block");
            assert!(log[0].len_bytes >= 3 * 4096, "inode, indirect, bitmap, descriptor");
            assert_eq!(log[1].len_bytes, 4096);
            assert_eq!(log[1].offset_bytes, log[0].offset_bytes + log[0].len_bytes);
            assert_eq!(log[0].sync, data_sync, "{kernel}: the log blocks go as the data does");
            // The commit block: `sync_dirty_buffer`, WRITE_SYNC from 2.6.30.
            let record_sync = !matches!(kernel, "2.5.65" | "2.6.29");
            assert_eq!(log[1].sync, record_sync, "{kernel}: commit block");
            assert_eq!(h.flushes.len(), 2, "{kernel}: barrier flushes around the commit block");
            assert_eq!(h.vm.journal_stats(0).commits, 1);
            assert_eq!(h.vm.pages().file(f).counts.dirty, 0);
        }
    }

    #[test]
    fn fsync_on_ext3_forces_a_commit_that_writes_every_files_ordered_data() {
        // A commit someone waits for is sync from 2.6.30 (`t_synchronous_commit`).
        for (kernel, sync) in [("2.6.29", false), ("2.6.32", true), ("3.5", true)] {
            let mut h = Harness::new(machine(kernel, 1024));
            mount(&mut h, 128 << 20, false);
            let a = file(&mut h, 64, false);
            let b = h.vm.add_file(FileSpec::new(0, 2 << 30, 64 << 20, 0));
            let t = h.vm.add_task(Owner::process(1));
            let u = h.vm.add_task(Owner::process(2));
            stream_write(&mut h, u, b, 4, 4096);
            stream_write(&mut h, t, a, 1, 4096);
            assert!(h.vm.pages().file(b).counts.dirty > 0);
            let (_, at) = h.call(t, Syscall::Fsync { file: a, data_only: false });
            assert!(at < NS_PER_SEC, "{kernel}: the commit is forced, not waited for: {at}");
            assert_eq!(h.vm.pages().file(a).counts.dirty, 0);
            assert_eq!(h.vm.pages().file(b).counts.dirty, 0, "ordered mode writes b's data too");
            let commit_writes: Vec<BlockIo> = journal_ios(&h)
                .into_iter()
                .filter(|io| io.op == Op::Write && io.owner != Owner::process(1))
                .collect();
            assert!(!commit_writes.is_empty(), "{kernel}");
            assert!(
                commit_writes.iter().all(|io| io.sync == sync),
                "{kernel}: sync = {sync}: {commit_writes:?}"
            );
            assert_eq!(h.vm.journal_stats(0).commits, 1);
            // Nothing new to commit: a second fsync needs no commit.
            h.call(t, Syscall::Fsync { file: a, data_only: false });
            assert_eq!(h.vm.journal_stats(0).commits, 1);
        }
    }

    /// A 2.6.32 machine with ext3 mounted, and an empty file's spec on it whose inode and
    /// directory blocks are at 16 and 32 MiB.
    fn ext3_with_empty_file_spec() -> (Harness, FileSpec) {
        let mut h = Harness::new(machine("2.6.32", 1024));
        mount(&mut h, 128 << 20, false);
        let spec = FileSpec {
            inode_bytes: Some(16 << 20),
            dir_bytes: Some(32 << 20),
            ..FileSpec::new(0, 64 << 20, 1 << 20, 0)
        };
        (h, spec)
    }

    #[test]
    fn creating_a_file_reads_its_metadata_once_and_the_flusher_checkpoints_it() {
        let (mut h, spec) = ext3_with_empty_file_spec();
        // A file that exists (it has data) uses both blocks, so they must be read.
        h.vm.add_file(FileSpec { data_bytes: 1 << 20, base_bytes: 80 << 20, ..spec });
        let f = h.vm.add_file(spec);
        let g = h.vm.add_file(FileSpec { ..spec });
        let t = h.vm.add_task(Owner::process(1));
        let (_, at) = h.call(t, Syscall::Create { file: f });
        let reads: Vec<BlockIo> = h.ios.iter().copied().filter(|io| io.op == Op::Read).collect();
        assert_eq!(reads.len(), 2, "inode and directory blocks");
        assert!(reads.iter().all(|io| io.sync && io.meta && io.owner.pid == 1), "READ_META");
        assert!(at >= 2 * NS_PER_MS, "the create waited for its reads");
        let (_, at2) = h.call(t, Syscall::Create { file: g });
        assert!(at2 - at < NS_PER_MS, "cached metadata: no wait");
        // Committed after 5 s; the metadata is then dirty at home until the flusher's
        // periodic writeback takes it (30 s expiry).
        h.run_until(6 * NS_PER_SEC);
        assert_eq!(h.vm.journal_stats(0).commits, 1);
        assert!(h.vm.pages().total.dirty > 0, "checkpoint list");
        h.run_until(45 * NS_PER_SEC);
        assert_eq!(h.vm.pages().total.dirty, 0, "written home by the flusher");
    }

    /// `__ext3_get_inode_loc`'s `in_mem` case: an inode block whose other inodes are all
    /// free is made in memory, as is a directory block no entry uses yet; a fresh file
    /// system's creates read nothing.
    #[test]
    fn creating_a_file_in_unused_metadata_blocks_reads_nothing() {
        let (mut h, spec) = ext3_with_empty_file_spec();
        let (f, g) = (h.vm.add_file(spec), h.vm.add_file(spec));
        let t = h.vm.add_task(Owner::process(1));
        let (_, at) = h.call(t, Syscall::Create { file: f });
        let (_, at2) = h.call(t, Syscall::Create { file: g });
        assert!(h.ios.iter().all(|io| io.op != Op::Read), "{:?}", h.ios);
        assert!(at < NS_PER_MS && at2 - at < NS_PER_MS);
        // The blocks are cached and, once committed, dirty: the commit writes them.
        h.run_until(6 * NS_PER_SEC);
        assert_eq!(h.vm.journal_stats(0).commits, 1);
        assert!(h.vm.pages().total.dirty > 0);
    }

    /// A file counts once among its blocks' users however often it is created; unlinked, it
    /// no longer does.
    #[test]
    fn a_file_uses_its_metadata_blocks_once() {
        let (mut h, spec) = ext3_with_empty_file_spec();
        let users = |h: &Harness| h.vm.meta_users.get(&(16 << 20)).copied().unwrap_or(0);
        let a = h.vm.add_file(FileSpec { data_bytes: 4096, ..spec });
        let b = h.vm.add_file(spec);
        assert_eq!(users(&h), 1, "a exists");
        let t = h.vm.add_task(Owner::process(1));
        h.call(t, Syscall::Create { file: a });
        assert_eq!(users(&h), 1, "creat() of a file that exists truncates it");
        h.call(t, Syscall::Create { file: b });
        assert_eq!(users(&h), 2);
        h.call(t, Syscall::Unlink { file: a });
        h.call(t, Syscall::Unlink { file: a });
        assert_eq!(users(&h), 1);
    }

    #[test]
    fn a_small_journal_checkpoints_before_it_fills() {
        let mut h = Harness::new(machine("2.6.32", 1024));
        mount(&mut h, MIN_JOURNAL_BYTES_FOR_TEST, false);
        let t = h.vm.add_task(Owner::process(1));
        // 3000 files in distinct inode blocks: ~6000 metadata blocks over several commits.
        for i in 0..3000u64 {
            let f = h.vm.add_file(FileSpec {
                inode_bytes: Some((16 << 20) + i * 4096),
                dir_bytes: Some((48 << 20) + i * 4096),
                ..FileSpec::new(0, (64 << 20) + i * 4096, 4096, 0)
            });
            h.call(t, Syscall::Create { file: f });
        }
        h.run_until(h.now + 20 * NS_PER_SEC);
        let s = h.vm.journal_stats(0);
        assert!(s.commits >= 2, "{s:?}");
        assert!(s.checkpoints >= 1, "{s:?}");
    }

    const MIN_JOURNAL_BYTES_FOR_TEST: u64 = 1024 * 4096;
}

#[test]
fn before_2_6_6_writeback_follows_the_order_pages_were_dirtied_in() {
    // Pages dirtied at scattered offsets, in this order (the second write of page 40 does
    // not move it: it was dirty already).
    let order = [40u64, 7, 300, 12, 200, 40, 3];
    for (kernel, want) in [
        ("2.5.65", vec![40u64, 7, 300, 12, 200, 3]),
        ("2.6.32", {
            let mut v = vec![40u64, 7, 300, 12, 200, 3];
            v.sort_unstable();
            v
        }),
    ] {
        let mut h = Harness::new(machine(kernel, 512));
        let f = file(&mut h, 64, true);
        let t = h.vm.add_task(Owner::process(1));
        for p in order {
            let w = Syscall::Write { file: f, offset: p * 4096, len: 4096, count: 1, sync: false };
            h.call(t, w);
        }
        let before = h.ios.len();
        h.call(t, Syscall::Fsync { file: f, data_only: false });
        let pages: Vec<u64> = h.ios[before..]
            .iter()
            .filter(|io| io.op == Op::Write)
            .map(|io| (io.offset_bytes - (1 << 30)) / 4096)
            .collect();
        assert_eq!(pages, want, "{kernel}");
        assert_eq!(h.vm.pages().file(f).counts.dirty, 0, "{kernel}: all of it written");
    }
}

#[test]
fn before_2_6_6_a_stream_is_written_back_in_big_runs_all_the_same() {
    let mut h = Harness::new(machine("2.5.65", 512));
    let f = file(&mut h, 64, false);
    let t = h.vm.add_task(Owner::process(1));
    stream_write(&mut h, t, f, 8, 4096);
    let before = h.ios.len();
    h.call(t, Syscall::Fsync { file: f, data_only: false });
    let writes: Vec<&BlockIo> = h.ios[before..].iter().filter(|io| io.op == Op::Write).collect();
    assert!(writes.windows(2).all(|w| w[0].offset_bytes < w[1].offset_bytes), "in offset order");
    assert!(writes.iter().all(|io| io.len_bytes >= 64 << 10), "in whole bios");
    assert_eq!(h.vm.pages().file(f).counts.dirty, 0);
}

#[test]
fn before_2_6_24_a_writer_is_throttled_against_the_machine_s_limit_alone() {
    // The same sysctls on both: 2.6.32 lowers a lone heavy writer's threshold by up to an
    // eighth (`task_dirty_limit`), so dirtying 95 % of the limit makes it write back
    // itself; 2.5.65 compares the machine's dirty pages with `dirty_thresh` and lets it be.
    for (kernel, throttled) in [("2.5.65", false), ("2.6.32", true)] {
        let mut cfg = machine(kernel, 512);
        cfg.sysctl.dirty_ratio = 40;
        cfg.sysctl.dirty_background_ratio = 10;
        let mut h = Harness::new(cfg);
        h.bytes_per_sec = 1_000_000; // a slow device: background writeback cleans little
        let limit_mib = (h.vm.limits().dirty * 4096) >> 20;
        let f = file(&mut h, 512, false);
        let t = h.vm.add_task(Owner::process(1));
        stream_write(&mut h, t, f, limit_mib * 95 / 100, 1 << 20);
        let by_writer = h.ios.iter().filter(|io| io.op == Op::Write && io.owner.pid == 1).count();
        assert_eq!(by_writer > 0, throttled, "{kernel}: {by_writer} writes by the writer");
    }
}

/// A writer in a cgroup (`Owner::cgroup`).
fn task_in(h: &mut Harness, pid: u32, cgroup: u32) -> TaskId {
    h.vm.add_task(Owner { cgroup, ..Owner::process(pid) })
}

/// From 4.2 (cgroup writeback) a file's writeback is issued in the cgroup of the task that
/// first dirtied it, and stays there when another cgroup writes to it; before, the flusher
/// writes everything in the root cgroup.
#[test]
fn from_4_2_writeback_goes_down_in_the_cgroup_that_first_dirtied_the_file() {
    for (kernel, cgwb) in [("4.1", false), ("4.2", true), ("6.1", true)] {
        let mut h = Harness::new(machine(kernel, 1024));
        let f = h.vm.add_file(FileSpec::new(0, 1 << 30, 8 << 20, 0));
        let g = h.vm.add_file(FileSpec::new(0, 2 << 30, 8 << 20, 0));
        let (a, b) = (task_in(&mut h, 1, 7), task_in(&mut h, 2, 9));
        stream_write(&mut h, a, f, 1, 4096);
        stream_write(&mut h, b, g, 1, 4096);
        // b writes into a's file too (its second MiB): a's cgroup keeps it.
        let mut done = 0;
        while done < 256 {
            let offset = (1 << 20) + done * 4096;
            let call =
                Syscall::Write { file: f, offset, len: 4096, count: 256 - done, sync: false };
            done += h.call(b, call).0;
        }
        // The periodic flusher writes all of it after dirty_expire_centisecs.
        h.run_until(h.now + 40 * NS_PER_SEC);
        let cgroups = |file_base: u64, len: u64| -> Vec<u32> {
            let mut c: Vec<u32> = h
                .ios
                .iter()
                .filter(|io| io.op == Op::Write && io.offset_bytes >= file_base)
                .filter(|io| io.offset_bytes < file_base + len)
                .map(|io| io.owner.cgroup)
                .collect();
            c.dedup();
            c
        };
        let (fb, gb) = (h.vm.file_spec(f).base_bytes, h.vm.file_spec(g).base_bytes);
        let (fc, gc) = (cgroups(fb, 8 << 20), cgroups(gb, 8 << 20));
        if cgwb {
            assert_eq!((fc, gc), (vec![7], vec![9]), "{kernel}");
        } else {
            assert_eq!((fc, gc), (vec![0], vec![0]), "{kernel}");
        }
        assert!(h.ios.iter().all(|io| io.owner.pid == FLUSHER_PID_BASE), "{kernel}");
        assert_eq!(h.vm.pages().total.dirty, 0, "{kernel}: all of it written");
    }
}

/// Writeback that the block layer holds (blk-throttle, `io.max`) takes no request slots:
/// a flusher stopped by a pool full of held writes goes on once they are said to be held,
/// and the writes count again when they are let go.
#[test]
fn writes_the_block_layer_holds_leave_their_request_slots_to_others() {
    let mut h = Harness::new(machine("6.1", 4096));
    let f = file(&mut h, 256, false);
    let t = task_in(&mut h, 1, 7);
    stream_write(&mut h, t, f, 256, 1 << 20);
    let requests = |ios: &[BlockIo]| -> u32 {
        ios.iter().map(|io| io.len_bytes.div_ceil(512 << 10) as u32).sum()
    };
    // Background writeback: the flusher fills the pool (128 requests of 512 KiB) and waits.
    let wb = h.vm.files[f as usize].wb;
    assert_ne!(wb, 0, "the file is written back by its cgroup's domain");
    let mut out = Output::default();
    h.vm.start_background(wb, h.now, &mut out);
    let first = out.ios;
    assert_eq!(requests(&first), 128, "the flusher stops at a full pool");
    assert_eq!(h.vm.bdis[0].async_requests, 128);
    // The block layer holds them all: their slots go to the waiting flusher.
    let mut more = Output::default();
    for io in &first {
        h.vm.io_held(io.tag, 0, &mut more);
    }
    let again = requests(&more.ios);
    assert!(again >= 128, "held writes freed their slots: {again} more requests");
    assert_eq!(h.vm.bdis[0].async_requests, again);
    // Let go, they count again.
    for io in &first {
        h.vm.io_released(io.tag);
    }
    assert_eq!(h.vm.bdis[0].async_requests, again + 128);
    // Each completion frees its slots once: what the flusher sends meanwhile is all that
    // is left in the pool.
    let mut later = Vec::new();
    for io in first.iter().chain(&more.ios) {
        let mut o = Output::default();
        h.vm.io_done(io.tag, h.now, &mut o);
        later.extend(o.ios);
    }
    assert_eq!(h.vm.bdis[0].async_requests, requests(&later));
}

/// From 3.2 a device whose own dirty pages pass its share of the background threshold is
/// written back while the machine is under the threshold (`over_bground_thresh`); 3.0
/// waits for the machine's.
#[test]
fn from_3_2_a_device_over_its_share_of_the_background_threshold_is_written_back() {
    for (kernel, expected) in [("3.0", false), ("3.2", true)] {
        let mut h = Harness::new(machine(kernel, 1024));
        h.vm = Vm::new(machine(kernel, 1024), &[BDI, BDI]);
        let f = h.vm.add_file(FileSpec::new(0, 1 << 30, 64 << 20, 0));
        let g = h.vm.add_file(FileSpec::new(1, 1 << 30, 64 << 20, 0));
        let t = h.vm.add_task(Owner::process(1));
        // Device 0 has written back much (its share of writeout is nearly all).
        h.call(t, Syscall::Write { file: f, offset: 0, len: 1 << 20, count: 32, sync: false });
        h.call(t, Syscall::Fsync { file: f, data_only: false });
        // Device 1 gets 24 MiB dirty: over its share, under the machine's threshold.
        h.call(t, Syscall::Write { file: g, offset: 0, len: 1 << 20, count: 24, sync: false });
        assert!(h.vm.pages().total.dirty < h.vm.limits().background, "{kernel}");
        h.run_until(h.now + 6 * NS_PER_SEC);
        let written = h.ios.iter().any(|io| io.bdi == 1 && io.op == Op::Write);
        assert_eq!(written, expected, "{kernel}");
    }
}

/// With a request pool per cgroup (a scheduler that schedules groups), a cgroup's
/// writeback that filled its own pool does not hold up another cgroup's flusher; with one
/// pool per device it does.
#[test]
fn with_a_pool_per_cgroup_one_cgroup_s_writeback_leaves_the_others_room() {
    for per_cgroup in [false, true] {
        let mut h = Harness::new(machine("6.1", 4096));
        h.vm.set_cgroup_pools(0, per_cgroup);
        let f = h.vm.add_file(FileSpec::new(0, 1 << 30, 256 << 20, 0));
        let g = h.vm.add_file(FileSpec::new(0, 2 << 30, 256 << 20, 0));
        let (a, b) = (task_in(&mut h, 1, 7), task_in(&mut h, 2, 9));
        stream_write(&mut h, a, f, 128, 1 << 20);
        stream_write(&mut h, b, g, 128, 1 << 20);
        // Nothing completes: the first flusher fills the pool it draws on.
        let (wa, wb) = (h.vm.files[f as usize].wb, h.vm.files[g as usize].wb);
        let mut out = Output::default();
        h.vm.start_background(wa, h.now, &mut out);
        let first: usize = out.ios.len();
        assert_eq!(h.vm.wbs[wa as usize].async_requests, 128);
        let mut out = Output::default();
        h.vm.start_background(wb, h.now, &mut out);
        let second = out.ios.len();
        assert!(first > 0);
        if per_cgroup {
            assert_eq!(second, first, "cgroup 9's flusher has a pool of its own");
        } else {
            assert_eq!(second, 0, "one pool: cgroup 9's flusher waits");
        }
    }
}

/// With cgroup writeback a task's own writeback of a file (fsync) goes down in the cgroup of
/// the file's writeback domain, not the task's (`wbc_init_bio`); before 4.2, in the task's.
#[test]
fn fsync_writes_go_down_in_the_cgroup_that_owns_the_file_from_4_2() {
    for (kernel, expected) in [("4.1", 9), ("6.1", 7)] {
        let mut h = Harness::new(machine(kernel, 1024));
        let f = h.vm.add_file(FileSpec::new(0, 1 << 30, 8 << 20, 0));
        let (a, b) = (task_in(&mut h, 1, 7), task_in(&mut h, 2, 9));
        stream_write(&mut h, a, f, 1, 4096);
        h.call(b, Syscall::Fsync { file: f, data_only: false });
        let writes: Vec<u32> =
            h.ios.iter().filter(|io| io.op == Op::Write).map(|io| io.owner.cgroup).collect();
        assert!(!writes.is_empty(), "{kernel}");
        assert!(writes.iter().all(|&c| c == expected), "{kernel}: {writes:?}");
        assert!(h.ios.iter().filter(|io| io.op == Op::Write).all(|io| io.owner.pid == 2));
    }
}
