//! fio job processes: what a job issues, when, and when it is done.
//!
//! One [`Process`] per job clone (`numjobs`), following fio's main loop (`do_io`): pick a data
//! direction (`rw`, `rwmixread`), a block size (`bs`, `bsrange`, `bssplit`) and an offset
//! (sequential from the start of the region, or uniformly random and block-aligned), keep up to
//! `iodepth` I/Os in flight for async engines and one for sync engines, respect `rate` /
//! `rate_iops`, pause `thinktime` after every `thinktime_blocks` I/Os once the queue has
//! drained, and stop after `size` (or `io_size`) bytes, `number_ios` I/Os, or `runtime`.
//!
//! Random offsets follow fio's random map ([`RandomMap`]): each block of the region once per
//! pass, unless `norandommap` (then drawn with replacement); over a file tree (`nrfiles`),
//! each file's own map ([`FileTree::set_random`]). Uniform offsets are fio's own draws
//! (`random_state`, [`Process::set_fio_offsets`]); non-uniform ones (`random_distribution`),
//! block sizes drawn from ranges and `percentage_random`'s choice come from the process's
//! own stream, so they differ from fio's draw for draw.
//!
//! Deviations from fio, on purpose:
//! - over a file tree, offsets within a file are uniform: `random_distribution` and
//!   `percentage_random` act on single regions only;
//! - buffered (`direct=0`) jobs on one region go through the machine's page cache
//!   ([`elevator_mm`]): each I/O is a `read()`/`write()` system call, and runs of identical
//!   sequential calls are handed over together ([`Process::run_len`]); buffered jobs with
//!   `nrfiles` trees or replayed logs are still issued as direct I/O (reads sync, writes
//!   async, as writeback would be);
//! - issuing costs no CPU time: a job issues its next I/O at the instant the previous completes
//!   (plus `thinktime`);
//! - a replayed iolog (`read_iolog=`) is issued as recorded, each action its recorded delay
//!   after the previous one, up to `iodepth` at once; `rate`, `thinktime`, `fsync` and
//!   `time_based` do not apply to it (fio applies some of them to replays too).

use std::collections::VecDeque;

use elevator_core::{
    BioFlags, IoPrio, IoPrioClass, Nanos, Op, Owner, RandomStream, NS_PER_MS, NS_PER_SEC,
};
use elevator_fio::{
    BlockSize, JobSpec, RateProcess, RwMode, RwSequencer, StridedZones, SyncFileRange,
};
use elevator_mm::SyncRangeFlags;

use crate::files::{Attempt, FileIo, FileTree};
use crate::iolog_out::JobLogs;
use crate::offset_distribution::OffsetDistribution;
use crate::random_map::RandomMap;
use crate::stats::{DirStats, LatencyBuckets};

/// Data directions in fio's order: read, write, trim.
pub const DIRECTIONS: [Op; 3] = [Op::Read, Op::Write, Op::Discard];

/// Index of an op in per-direction arrays.
#[inline]
pub fn dir_index(op: Op) -> usize {
    match op {
        Op::Read => 0,
        Op::Write | Op::Flush => 1,
        Op::Discard => 2,
    }
}

/// How fio 3.33 picks the data direction of a mixed job (`rw=readwrite`, `randrw`;
/// `get_rw_ddir`): it keeps a direction until the I/Os issued in it reach a bar, drawing a
/// new one (read with `rwmixread`'s chance, `get_rand_ddir`) at every I/O past the bar;
/// switching sets the bar to the I/Os issued in the direction left times the other
/// direction's share (`set_rwmix_bytes`), which the new direction's count is then compared
/// with. The draws come from fio's own generator, seeded as fio seeds `rwmix_state`, so a job
/// file mixes its reads and writes in the order fio does. A rated job ahead of its rate in
/// the drawn direction goes the other way if that one is behind (`rate_ddir`, in
/// [`Process::next_io`]).
#[derive(Clone, Copy, Debug)]
struct RwMix {
    draws: elevator_fio::rand::Draws,
    /// `td->rwmix_ddir` (0 read, 1 write) and `td->rwmix_issues`.
    dir: usize,
    issues: u64,
    /// The direction fio decided before waiting for its rate (`rate_ddir` sleeps and goes
    /// on with it): the next I/O takes it without a draw.
    decided: Option<usize>,
}

impl RwMix {
    fn new(draws: elevator_fio::rand::Draws) -> RwMix {
        RwMix { draws, dir: 0, issues: 0, decided: None }
    }

    /// A new pass (fio's `clear_io_state`): the bar is 0 again and, where fio reseeds its
    /// generators, the draws start over; the direction and the counts stay.
    fn new_pass(&mut self) {
        self.issues = 0;
        self.draws.new_pass();
    }

    /// The direction of the next I/O, given the I/Os issued so far in each direction.
    fn pick(&mut self, read_percent: u32, issued: &[u64; 3]) -> usize {
        if issued[self.dir] >= self.issues {
            let d = if self.draws.between(1, 100) <= read_percent { 0 } else { 1 };
            if d != self.dir {
                let other_share = mix_share(read_percent, self.dir ^ 1);
                self.issues = issued[self.dir] * u64::from(other_share) / 100;
            }
            self.dir = d;
        }
        self.dir
    }
}

/// Direction `dir`'s percent of a mixed job's I/O (fio's `td->o.rwmix[dir]`).
fn mix_share(read_percent: u32, dir: usize) -> u32 {
    if dir == 0 {
        read_percent
    } else {
        100 - read_percent
    }
}

/// One I/O the process wants to issue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Io {
    pub op: Op,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    pub sync: bool,
    /// This I/O's own priority (`cmdprio_*`), instead of the process's.
    pub prio: Option<IoPrio>,
    /// `REQ_META`: the inode-block read that opens a file of a file tree, as ext3 and ext4
    /// read inodes (`READ_META`, from 3.1 `READ | REQ_META | REQ_PRIO`; ext2's `sb_bread`
    /// does not mark it, which no scheduler but CFQ would see).
    pub meta: bool,
    /// For a flush: which call it is, as fio accounts it.
    pub flush: Option<FlushCall>,
}

/// What a flush I/O stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushCall {
    /// `fsync=N`: fio counts and times it (`total_io_u[DDIR_SYNC]`, `sync_stat`).
    Fsync,
    /// `fdatasync=N`: timed, not counted.
    Fdatasync,
    /// `sync_file_range=`: a sync of `[offset_bytes, + len_bytes)` with these flags (buffered
    /// jobs only); timed, not counted.
    Range(SyncRangeFlags),
    /// `end_fsync`, `fsync_on_close`, the verify phase's sync, a barrier's flush: not
    /// accounted, as in fio.
    Unaccounted,
}

/// Linux's ETIMEDOUT, the error fio gives a job whose I/O exceeds `max_latency`.
pub const ETIMEDOUT: u32 = 110;
/// Linux's EIO, the error fio gives a job below its `rate_min` or `rate_iops_min`.
pub const EIO: u32 = 5;

/// `EINVAL`: fio's error when a device will not take the `ioscheduler=` it was given.
pub const EINVAL: u32 = 22;

/// An error that ended a job, as fio reports it: `err=110 (func=..., error=...)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobError {
    pub errno: u32,
    /// What failed (fio's `func=`).
    pub func: &'static str,
    /// The line fio prints on stderr when it happens.
    pub message: String,
}

impl JobError {
    /// `strerror(errno)`, for the errors elevator gives.
    pub fn strerror(&self) -> &'static str {
        match self.errno {
            ETIMEDOUT => "Connection timed out",
            EIO => "Input/output error",
            EINVAL => "Invalid argument",
            _ => "Unknown error",
        }
    }
}

impl Io {
    /// Its flags as the block layer takes them: a job's own I/O carries no `REQ_NOIDLE` (the
    /// page cache's sync writes do: `BlockIo::flags`).
    pub fn flags(&self) -> BioFlags {
        BioFlags { meta: self.meta, ..BioFlags::sync_if(self.sync) }
    }

    /// A cache flush (fsync, fdatasync, a barrier's flush): no data, sync.
    pub fn flush(call: FlushCall) -> Io {
        Io {
            op: Op::Flush,
            offset_bytes: 0,
            len_bytes: 0,
            sync: true,
            prio: None,
            meta: false,
            flush: Some(call),
        }
    }

    /// A verify read: what the job wrote at `offset_bytes`, read back (sync, as reads are).
    fn verify_read(offset_bytes: u64, len_bytes: u64) -> Io {
        Io {
            op: Op::Read,
            offset_bytes,
            len_bytes,
            sync: true,
            prio: None,
            meta: false,
            flush: None,
        }
    }
}

/// `cmdprio_percentage=`, `cmdprio_class=`, `cmdprio=`: which I/Os get another priority.
#[derive(Clone, Debug)]
pub struct CmdPrio {
    percent: [u32; 3],
    prio: [IoPrio; 3],
    /// `cmdprio_bssplit=`: per direction, (block size, percentage, priority).
    bssplit: [Vec<(u64, u32, IoPrio)>; 3],
    /// Its own stream, so the job's offsets and sizes stay those without cmdprio.
    rng: RandomStream,
}

impl CmdPrio {
    pub fn from_spec(spec: &JobSpec, seed: u64, stream: u32) -> Option<CmdPrio> {
        if spec.cmdprio_percentage.iter().all(|&p| p == 0)
            && spec.cmdprio_bssplit.iter().all(Vec::is_empty)
        {
            return None;
        }
        let of = |class: u8, level: u8| match class {
            1 => IoPrio { class: IoPrioClass::RealTime, level },
            3 => IoPrio { class: IoPrioClass::Idle, level: 7 },
            _ => IoPrio { class: IoPrioClass::BestEffort, level },
        };
        let prio = |d: usize| of(spec.cmdprio_class[d], spec.cmdprio_level[d]);
        let split = |d: usize| {
            spec.cmdprio_bssplit[d]
                .iter()
                .map(|e| {
                    let p = e.prio.map_or(prio(d), |(c, l)| of(c, l));
                    (e.bs_bytes, e.percent, p)
                })
                .collect()
        };
        Some(CmdPrio {
            percent: spec.cmdprio_percentage,
            prio: [prio(0), prio(1), prio(2)],
            bssplit: [split(0), split(1), split(2)],
            rng: RandomStream::new(seed ^ 0xc3d_9010, stream),
        })
    }

    /// The priority of an I/O of direction `d` and `len_bytes`, if it gets one.
    fn pick(&mut self, d: usize, len_bytes: u64) -> Option<IoPrio> {
        let (p, prio) = if self.bssplit[d].is_empty() {
            (self.percent[d], self.prio[d])
        } else {
            // fio's cmdprio: one draw of 0..100 against the block size's entries in turn.
            let draw = self.rng.below(100);
            let mut cumulative = 0;
            for &(bs, p, prio) in &self.bssplit[d] {
                if bs == len_bytes {
                    cumulative += u64::from(p);
                    if draw < cumulative {
                        return Some(prio);
                    }
                }
            }
            return None;
        };
        let p = u64::from(p);
        (p > 0 && self.rng.below(100) < p).then_some(prio)
    }
}

/// `latency_target=`'s state (fio's `latency_qd`, `_low`, `_high`, the window's counts).
#[derive(Clone, Copy, Debug)]
pub struct LatTarget {
    pub target_ns: Nanos,
    pub window_ns: Nanos,
    pub percentile: f64,
    /// The job's `iodepth`, the ceiling of the search.
    pub depth: u32,
    /// The depth in use (fio's `latency_depth` in the JSON).
    pub qd: u32,
    qd_low: u32,
    qd_high: u32,
    window_start_ns: Nanos,
    window_ios: u64,
    window_failed: u64,
    end_run: bool,
}

impl LatTarget {
    fn new_window(&mut self, now_ns: Nanos) {
        self.window_start_ns = now_ns;
        self.window_ios = 0;
        self.window_failed = 0;
    }
}

/// What a process does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    Issue(Io),
    /// Nothing before this time (rate limit or think time).
    WaitUntil(Nanos),
    /// The queue is full (or draining for think time): wait for a completion.
    Full,
    /// The job has issued everything it will.
    Stop,
}

/// How a process goes on after a completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// It issues again at this time.
    At(Nanos),
    /// It thinks (asleep) until this time, and issues nothing before, whatever earlier
    /// wake-up other completions had asked for.
    ThinkUntil(Nanos),
    /// It thinks: spins for `spin_ns` of CPU time (on the machine's shared CPUs, see
    /// [`crate::cpu`]), then sleeps `sleep_ns`.
    Spin { spin_ns: Nanos, sleep_ns: Nanos },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Waiting for its stonewall phase or start delay.
    Pending,
    Running,
    /// Issued its last I/O; waiting for the in-flight ones.
    Draining,
    Done,
}

/// Where a process does its I/O: a byte range of a device or volume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub route: crate::topology::Route,
    pub start_bytes: u64,
    pub len_bytes: u64,
}

/// How a buffered job reaches the page cache: its task and file in the machine's
/// [`elevator_mm::Vm`], where the file's page 0 lies on the job's region, and the fio
/// options that become system calls.
#[derive(Clone, Copy, Debug)]
pub struct Buffered {
    pub task: elevator_mm::TaskId,
    pub file: elevator_mm::pages::FileId,
    /// Route offset of the file's first byte (the region's start).
    pub base_bytes: u64,
    /// O_SYNC / O_DSYNC writes (`sync=`).
    pub sync: bool,
    /// fsync when the job's I/O is done (`end_fsync`, `fsync_on_close`); cleared once issued.
    pub end_fsync: bool,
    /// `fdatasync=` rather than `fsync=` for the periodic syncs.
    pub datasync: bool,
    /// On opening the file: drop its pages (`invalidate`), the advice to give
    /// (`fadvise_hint`), read it in (`pre_read`).
    pub invalidate: bool,
    pub advice: Option<elevator_mm::vm::Advice>,
    pub pre_read: bool,
    /// With `nrfiles` > 1: the page-cache file of the tree's first file (the others follow
    /// it in order), and whether they are created on first open (`create_on_open`).
    pub tree_base: Option<elevator_mm::pages::FileId>,
    pub create: bool,
    /// System calls the job may have in progress at once, each its own task (`task`,
    /// `task + 1`, ...) working through the one open file: `iodepth` for an io_uring job
    /// ([`BufferedCalls::IoUring`]), else 1. An io_uring job's writes are made by one more
    /// task, `task + calls`: io-wq's worker for the file.
    pub calls: u32,
}

/// How a buffered job's system calls reach the page cache, by fio engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferedCalls {
    /// A synchronous engine: one call, one io_u.
    One,
    /// libaio: the kernel runs each call inside `io_submit`, one at a time, while fio keeps
    /// `iodepth` io_us (see `Process::aio_calls`).
    Libaio,
    /// posixaio: glibc's thread for the file descriptor runs the calls one at a time while
    /// fio keeps `iodepth` io_us; fio's submission only queues them (no `slat`).
    PosixAio,
    /// io_uring: each read that finds its pages cached is done inside `io_uring_enter`, on
    /// the submitting thread's CPU; one that does not starts its readahead and waits on the
    /// page without holding the thread (5.9's async buffered reads), so up to `iodepth`
    /// reads wait at once. A write goes to an io-wq worker, and io-wq runs a file's
    /// buffered writes one at a time (hashed by inode): the thread submits and goes on,
    /// the writes queue behind the one running (`Process::uring_writes_queued`). A sync
    /// (IORING_OP_FSYNC, IORING_OP_SYNC_FILE_RANGE: not hashed) runs on a worker of its own,
    /// the call task of its slot.
    IoUring,
}

/// What the last I/O [`Process::next`] returned was, in a file tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeIo {
    /// The first open of file `n` of the tree.
    Open(usize),
    /// Another open of file `n`, which fio closed when it found it finished.
    Reopen(usize),
    /// Data of file `n`.
    Data(usize),
}

/// A system call of a buffered job that has not returned yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingCall {
    pub op: Op,
    pub len_bytes: u64,
    pub start_ns: Nanos,
    /// When the call left the CPU: its return, or, for one that waited (for I/O, or a
    /// throttled writer's pause), the end of the system call's own work before the wait.
    pub cpu_end_ns: Nanos,
}

/// What bounds a job's bytes (`size=`, `io_size=`, `loops=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByteLimits {
    /// One pass's bytes at most: a pass ends here even with offsets left.
    pub pass_bytes: Option<u64>,
    /// All passes' bytes together (fio's `io_bytes_exceeded`: `io_size=`, or `size=`, times
    /// `loops=`); `None` where one pass is the job or the run time bounds it.
    pub job_bytes: Option<u64>,
}

/// One job clone.
#[derive(Debug)]
pub struct Process {
    pub name: String,
    /// Index of the job section it came from, and which clone of it it is.
    pub job: usize,
    pub clone: u32,
    pub group_id: u32,
    pub phase: u32,
    /// `wait_for=`: the processes (all clones of the named job) that must be done before
    /// this one starts, and whether it is waiting for them now.
    pub waitees: Vec<u32>,
    pub waiting: bool,
    /// Another job's `exitall` named it before it started: it starts and ends at once.
    pub terminated: bool,
    pub owner: Owner,
    pub region: Region,
    /// Where the passes after the first start (route offset), where fio's `clear_io_state`
    /// finds a different start: a percentage `offset=` of a file the first pass's setup made
    /// or grew counts from the file's new length (`get_start_offset`). The region keeps its
    /// length, and an I/O reaching past `file_end_bytes` ends the pass (fio's fill_io_u).
    later_pass_start: Option<u64>,
    file_end_bytes: u64,
    pub state: State,
    /// Blocked in the block layer waiting for a request (nr_requests).
    pub blocked: bool,
    pub in_flight: u32,
    pub start_ns: Nanos,
    pub ramp_end_ns: Nanos,
    pub end_ns: Nanos,
    pub stats: [DirStats; 3],
    pub lat_buckets: LatencyBuckets,
    /// I/Os and bytes completed over time, for the report's throughput charts.
    pub timeline: crate::timeline::Timeline,
    /// fio's log files, when the job asks for them.
    pub logs: Option<Box<JobLogs>>,
    /// `write_iolog=`: what the job issued.
    pub issue_log: Option<Box<crate::iolog_out::IssueLog>>,
    /// The file of the tree the I/O being issued goes to (0 without a tree), for the log.
    log_file: usize,
    /// Per-I/O priorities, when the job asks for them.
    pub cmdprio: Option<CmdPrio>,
    /// `latency_target=`'s search for the deepest queue that meets it.
    pub lat_target: Option<LatTarget>,
    /// Deepest queue this process reached (fio's IO depths line).
    pub depth_hist: [u64; 7],
    /// I/Os (not flushes) completed after the ramp and before the runtime ran out: "the I/Os
    /// done in 60 seconds" as seed 001 counts them. fio's totals also count the I/Os that were
    /// in flight at the end, which can have waited long in a throttling layer.
    pub ios_in_runtime: u64,
    /// CPU time it spun (`thinktime_spin`), on the machine's shared CPUs.
    pub cpu_ns: Nanos,
    /// A cpuio job: its token I/Os are not reported, its burns are (as fio's cpuio reports
    /// them: reads of no bytes), and with `exit_on_io_done` it stops once no job doing I/O
    /// runs or waits to.
    pub no_io: bool,
    pub exit_on_io_done: bool,
    // Configuration copied from the spec.
    rw: RwMode,
    rwmixread_percent: u32,
    /// A mixed job's data direction, drawn as fio draws it ([`RwMix`]).
    rwmix: RwMix,
    block_size: [BlockSize; 3],
    /// `bs_unaligned`: drawn sizes keep their bytes ([`Process::pick_block_size`]).
    bs_unaligned: bool,
    sync_writes: bool,
    pub max_in_flight: u32,
    /// `iodepth_low`: the depth a full queue drains to before the job fills it again
    /// (`max_in_flight` unless set), and whether it is draining now.
    depth_low: u32,
    draining_to_low: bool,
    /// `iodepth_batch_complete_min`: completions a full queue waits for at least (≥ 1).
    batch_complete_min: u32,
    pub batch: u32,
    /// fio's `exitall` / `exit_what`.
    pub exitall: bool,
    /// fio's `exitall_on_error`: `exitall` when the job ends in an error (not one of its
    /// setup, which ends the thread before fio looks: `setup_failed`).
    pub exitall_on_error: bool,
    pub setup_failed: bool,
    pub exit_what: elevator_fio::ExitWhat,
    /// Per pass (`loops=`): bytes before the pass is done.
    io_limit_bytes: Option<u64>,
    /// All passes together: fio's `io_bytes_exceeded` counts from the job's start against
    /// `io_size=` (`number_ios=`) times `loops=`, so a pass of a job whose `io_size=` is less
    /// than its files goes on past it (up to its files, [`Process::io_limit_bytes`]) and the
    /// next pass does the rest.
    job_limit_bytes: Option<u64>,
    number_ios: Option<u64>,
    /// `io_size=` past the passes `loops=` asks for: fio's `keep_running` starts more
    /// passes while the job has done less (by at least its largest block).
    io_size_bytes: Option<u64>,
    /// fio's `td->loops`: the passes `loops=` asks for (1 for time-based jobs and logs).
    passes: u64,
    /// `loops=`: passes still to run after this one, and the counts when this one began.
    loops_left: u64,
    loops_done: u64,
    /// fio found no offset for the next I/O (`rw=...:N` past the file's end): this pass is
    /// over, however many bytes it did.
    pass_ended: bool,
    loop_start_bytes: u64,
    loop_start_ios: u64,
    runtime_ns: Option<Nanos>,
    time_based: bool,
    startdelay_ns: Nanos,
    ramp_ns: Nanos,
    thinktime_ns: Nanos,
    thinktime_blocks: u32,
    /// `thinktime_blocks_type=issue`: count issued I/Os, not completed ones.
    think_on_issue: bool,
    /// `thinktime_iotime` (0: unset), whether `thinktime_blocks` was given, and when the
    /// job last decided to think (its start, first).
    thinktime_iotime_ns: Nanos,
    thinktime_blocks_set: bool,
    last_think_ns: Nanos,
    /// When the file opening in flight (its inode read, or a buffered job's open call) was
    /// issued. fio's open() blocks the job, so nothing more is issued until it returns, and
    /// it is no I/O of the job's: not counted, logged, timed, nor a block towards think time.
    open_in_flight: Option<Nanos>,
    /// [`Process::issued`] is about to see the opening `next` just returned.
    issuing_open: bool,
    /// An opening drawn while an I/O this process issued this very nanosecond is in flight:
    /// it goes out a nanosecond later, so that its completion is told apart by issue time.
    held_open: Option<FileIo>,
    /// fio's io_u pool as `write_iolog` sees it: a sync reuses a free io_u and logs the
    /// offset it carried last, in the file it carried it for. Free ones are a stack (fio's
    /// `io_u_freelist`, the last one freed on top), each with its last route offset and
    /// file; busy ones by issue time and whether they hold a sync. A direct job's data I/O
    /// in flight also holds a reference to its file of a tree ([`FileTree::issued`]).
    iou_free: Vec<(u64, usize)>,
    iou_busy: Vec<(Nanos, bool, (u64, usize))>,
    /// The bytes issued when a file tree's pass last started over in
    /// [`Process::next_in_files`]: a pass from there that moves nothing starts no other.
    tree_rewound_at_bytes: Option<u64>,
    /// fio's `should_fsync`/`get_rw_ddir`: once the writes are a multiple of `fsync=N` (or
    /// else of `fdatasync=M`), that sync is due before every I/O that does not follow a
    /// sync, until the next write (`io_issues[DDIR_WRITE] % N == 0` and `!last_was_sync`):
    /// in a mixed job every read after the Nth write brings another.
    sync_armed: Option<FlushCall>,
    /// fio's `last_was_sync`: the last I/O fio reaped was a sync. It changes as completions
    /// are reaped, not as I/Os go out, so an engine that queues its syncs (io_uring) sends
    /// one at each turn until a reaped completion says a sync went through, and one that
    /// runs them inline (libaio) skips the sync due while nothing has been reaped since the
    /// last. Cleared by `clear_io_state` at each pass.
    last_reaped_sync: bool,
    /// The engine runs a sync in the submitting thread (fio's libaio: `do_io_u_sync`), so
    /// the job issues nothing while one is in flight.
    sync_blocks: bool,
    /// Data I/Os done but not yet reaped (by issue time, in completion order). fio reaps
    /// only when its queue is full (every io_u busy, done or not), one completion per wait
    /// (`iodepth_batch_complete_max` is `iodepth_batch_complete_min`, 1), and all at a
    /// pass's end; so what completes while the queue is not full (a buffered write, done
    /// as libaio submits it) or while fio runs a sync inline keeps its io_u, and the I/O fio
    /// reaped last (`last_was_sync`) stays what it was. Not kept for a file tree
    /// (deviation: reaped as they complete there).
    unreaped: VecDeque<Nanos>,
    /// A buffered libaio job (fio's libaio engine, `direct=0`): the kernel runs each call
    /// inside `io_submit`, so the job makes one call at a time, but fio keeps `iodepth`
    /// io_us in use and counts each I/O when it reaps it: `slat` the call, `clat` the wait
    /// to be reaped (`aio_calls_done`, beside `unreaped`).
    aio_calls: bool,
    /// Of a buffered libaio job, its calls returned and not yet reaped, in order:
    /// (op, bytes, call start, submitted).
    aio_calls_done: VecDeque<(Op, u64, Nanos, Nanos)>,
    /// A buffered io_uring job ([`BufferedCalls::IoUring`]): its io_us are reaped as
    /// libaio's (`aio_calls`); a read that waited for its pages, and every write, was
    /// submitted before its wait.
    pub uring: bool,
    /// posixaio (`Process::set_posixaio`): glibc runs one request per file descriptor at
    /// a time, queueing the rest behind it, so the job has one in flight below it.
    serial_aio: bool,
    /// Of an io_uring job, its writes submitted behind the one in progress, in order: the
    /// call slot each holds and the I/O.
    pub uring_writes_queued: VecDeque<(u32, Io)>,
    /// The call slot of the io_uring job's write in the page cache (io-wq's worker for the
    /// file is busy with it).
    pub uring_write_slot: Option<u32>,
    /// Syncs in flight.
    flushes_in_flight: u32,
    /// A sync engine: fio counts its do_io bytes only for short I/Os, so a pass goes on to
    /// the sync due after its last write.
    sync_engine: bool,
    /// The end_fsync due as a pass begins went to a file fio opened for it alone.
    reopen_after_flush: bool,
    /// The job's limit ended a pass with `loops=` left: fio runs one more pass, which issues
    /// nothing but ends with end_fsync's syncs (see [`Process::drained`]).
    empty_pass_due: bool,
    /// `end_fsync` / `fsync_on_close` on a job that writes: fio's do_io ends every pass
    /// with an fsync unless the last I/O was one (`should_fsync`), direct or not.
    end_fsync: bool,
    /// The fsyncs still to go out at the job's end (`end_fsync`, `fsync_on_close`): one per
    /// file of the job, in file order, as fio's do_io syncs every file (`for_each_file`).
    end_syncs_owed: usize,
    /// The end fsync in flight went to a file of the tree that fio had closed: fio opened it
    /// for the sync and closes it once the sync returns (`fio_file_fsync`).
    close_after_sync: Option<usize>,
    /// The last I/O issued was a sync (fio's `last_was_sync`, as should_fsync reads it).
    last_was_flush: bool,
    /// When this process last issued an I/O.
    last_issue_ns: Option<Nanos>,
    /// `max_latency` per direction.
    max_latency_ns: [Option<Nanos>; 3],
    /// `rate_min` (bytes/s) and `rate_iops_min` per direction, the `rate_cycle`, and per
    /// direction the bytes and I/Os done at the last check and when (fio's
    /// `last_rate_check_*`).
    rate_min: [Option<u64>; 3],
    rate_iops_min: [Option<u64>; 3],
    rate_cycle_ns: Nanos,
    rate_checked: [(u64, u64, Nanos); 3],
    /// The error that ended the job, as fio reports it (errno, what failed, its message).
    pub error: Option<JobError>,
    /// `ioscheduler=`, until the job starts and switches its device to it.
    pub ioscheduler: Option<String>,
    thinktime_spin_ns: Nanos,
    rate_bytes_per_sec: [Option<u64>; 3],
    rate_iops: [Option<u64>; 3],
    /// `rate_process=poisson`: per direction, when the next I/O is due (from the start), each
    /// I/O moving it on by an exponentially distributed gap.
    poisson_due_ns: Option<[Nanos; 3]>,
    /// `fsync=N` and `fdatasync=M` (0: none), asked in that order as fio's get_rw_ddir
    /// asks them.
    sync_cadence: [(u32, FlushCall); 2],
    /// What the pending flush (`flush_pending`) is.
    pending_flush: FlushCall,
    /// Flushes in flight that fio accounts: (issue time, an fsync).
    syncs_in_flight: Vec<(Nanos, bool)>,
    /// fio's sync statistics.
    pub sync_stats: crate::stats::SyncStats,
    /// `steadystate=`: the job's sampling and maybe its group's ring (set after the build).
    pub ss: Option<Box<crate::steadystate::SteadyStateJob>>,
    /// `sync_file_range=`: its flags and every how many writes; the writes since the last
    /// one, whether it is due, and the span of route offsets written since the last sync
    /// (fio's `first_write`, `last_write`; taken at issue, which is completion for the
    /// buffered psync jobs it matters to) and where the last write started.
    sync_file_range: Option<SyncFileRange>,
    writes_since_sfr: u32,
    sfr_pending: bool,
    written_span: Option<(u64, u64)>,
    last_write_start: u64,
    /// `write_barrier=N`: every N-th write is a barrier (a sync write and a cache flush).
    barrier_every: u32,
    writes_since_barrier: u32,
    // Progress.
    rng: RandomStream,
    next_seq_offset: [u64; 3],
    bytes_issued: u64,
    /// Of those, the reads of `verify=`'s phase between passes (and their count).
    verify_phase_bytes: u64,
    verify_phase_ios: u64,
    ios_issued: u64,
    dir_bytes_issued: [u64; 3],
    dir_ios_issued: [u64; 3],
    since_think: u32,
    thinking: bool,
    /// Writes issued (fio's `io_issues[DDIR_WRITE]`, which the sync cadences divide).
    writes_for_sync: u64,
    flush_pending: bool,
    stop_at_ns: Option<Nanos>,
    /// With `nrfiles` > 1: the files and the progress through them.
    files: Option<FileTree>,
    /// With `read_iolog=`: the log being replayed.
    iolog: Option<Replay>,
    /// Set when the job's I/O goes through the page cache.
    pub buffered: Option<Buffered>,
    /// The tree step of the last I/O returned, and the tree file used last.
    pub tree_io: Option<TreeIo>,
    pub tree_last: Option<usize>,
    /// A sequential pass wrapped back to the start of the region since last asked.
    wrapped: bool,
    /// A pass for `io_size=` (or, over a tree, `time_based`) ended and the next began: fio
    /// closed the files (and opened a single file again), which the `write_iolog` shows.
    reopen_to_log: bool,
    /// fio's random map of the region, for random jobs without `norandommap`.
    random_map: Option<RandomMap>,
    /// `percentage_random` per direction.
    percentage_random: [u32; 3],
    /// `verify=`: the writes to read back once the write phase is done.
    pub verify: Option<Box<crate::verify::Verify>>,
    /// `verify_backlog=` and `verify_backlog_batch=` (0: off, and N), the reads left of the
    /// backlog batch under way (fio's `verify_batch`), and whether the last I/O issued was a
    /// read (fio's `last_ddir`).
    verify_backlog: u64,
    verify_backlog_batch: u64,
    verify_batch_left: u64,
    last_issued_read: bool,
    /// `verify_only`: the writes are gone through without I/O before the verify phase.
    verify_only: bool,
    /// When the write phase ended, if a verify phase followed it, and whether the verify
    /// phase's sync is still in flight.
    writes_ended_ns: Option<Nanos>,
    /// With `loops=`, fio verifies each pass before the next: the write phases and read-backs
    /// done before the last, and when the current write phase began (`None`: at the ramp's
    /// end), for the per-direction runtimes.
    earlier_writes_ns: Nanos,
    earlier_verifies_ns: Nanos,
    writes_began_ns: Option<Nanos>,
    /// The read-back under way is a pass's, and another pass follows it.
    verify_then_loop: bool,
    verify_syncing: bool,
    /// The next buffered call drops the file's cached pages first, `invalidate` or not.
    drop_cache: bool,
    /// `blockalign` per direction, where set (random jobs).
    block_align: [Option<u64>; 3],
    /// `random_distribution=` other than uniform: where random offsets go instead.
    offset_distribution: Option<OffsetDistribution>,
    /// fio's `random_state` for uniform random offsets ([`Process::set_fio_offsets`]);
    /// `None`: the process's own stream.
    fio_offsets: Option<elevator_fio::rand::Draws>,
    /// `rw=...:N` and `rw_sequencer=` (see [`Process::pick_offset_sequenced`]).
    sequencer: Option<Box<Sequencer>>,
    /// `zonemode=strided`, and where the job is in its zones.
    zones: Option<ZoneState>,
    /// The buffered system calls in progress, one place per task of the job
    /// ([`Buffered::calls`]): blocked or still on the CPU.
    pub pending_calls: Vec<Option<PendingCall>>,
}

/// Progress through a replayed fio iolog.
#[derive(Debug)]
struct Replay {
    log: std::sync::Arc<elevator_fio::iolog::IoLog>,
    next: usize,
    /// fio's `replay_no_stall`: issue as fast as the queue depth allows.
    no_stall: bool,
    last_issue_ns: Nanos,
}

/// fio's `rw=...:N` sequencer state (`ddir_seq_nr`, `ddir_seq_add`, `rw_sequencer`), with
/// the file the job's region lies in: fio's arithmetic mixes offsets in the file and in the
/// region (`get_next_seq_offset`), and it is followed here as written.
#[derive(Debug)]
struct Sequencer {
    /// A random offset every `nr`-th I/O (random jobs); 0: never (fio 3.33 reads `:0` so).
    nr: u32,
    /// I/Os until the next random one (fio's `td->ddir_seq_nr`, shared by the directions).
    nr_left: u32,
    /// Bytes skipped (negative: stepped back) after each I/O (sequential jobs).
    add_bytes: i64,
    /// `rw_sequencer=identical`: the I/Os between random ones repeat the last offset.
    identical: bool,
    /// Per direction, where the last I/O started in the file (fio's `last_start`).
    last_start: [Option<u64>; 3],
    /// Route offset of the file's byte 0, and the file's size (fio's `real_file_size`).
    file_base: u64,
    file_bytes: u64,
}

impl Process {
    /// Builds clone `clone` of `spec`. `rng` is the process's own stream.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        spec: &JobSpec,
        job: usize,
        clone: u32,
        group_id: u32,
        phase: u32,
        owner: Owner,
        region: Region,
        limits: ByteLimits,
        rng: RandomStream,
    ) -> Process {
        let max_in_flight = spec.max_in_flight();
        let passes = if spec.time_based || spec.iolog.is_some() { 1 } else { spec.loops.max(1) };
        Process {
            name: spec.name.clone(),
            job,
            clone,
            group_id,
            phase,
            waitees: Vec::new(),
            waiting: false,
            terminated: false,
            owner,
            region,
            later_pass_start: None,
            file_end_bytes: u64::MAX,
            state: State::Pending,
            blocked: false,
            in_flight: 0,
            start_ns: 0,
            ramp_end_ns: 0,
            end_ns: 0,
            stats: fresh_stats(spec),
            lat_buckets: LatencyBuckets::default(),
            timeline: crate::timeline::Timeline::default(),
            cmdprio: CmdPrio::from_spec(spec, u64::from(owner.pid), clone),
            ioscheduler: spec.ioscheduler.clone(),
            lat_target: spec.latency_target_ns.map(|target_ns| LatTarget {
                target_ns,
                window_ns: spec.latency_window_ns,
                percentile: spec.latency_percentile,
                depth: max_in_flight,
                qd: 1,
                qd_low: 1,
                qd_high: max_in_flight,
                window_start_ns: 0,
                window_ios: 0,
                window_failed: 0,
                end_run: false,
            }),
            issue_log: None,
            log_file: 0,
            logs: spec.logs.any().then(|| {
                Box::new(JobLogs::new(
                    spec.logs.lat.is_some(),
                    spec.logs.bw.is_some(),
                    spec.logs.iops.is_some(),
                    spec.logs.avg_msec,
                    spec.logs.max_value,
                    owner.prio.class == elevator_core::IoPrioClass::RealTime,
                ))
            }),
            depth_hist: [0; 7],
            ios_in_runtime: 0,
            cpu_ns: 0,
            no_io: spec.ioengine.name() == "cpuio",
            exit_on_io_done: spec.exit_on_io_done && spec.ioengine.name() == "cpuio",
            rw: spec.rw,
            rwmixread_percent: spec.rwmixread_percent.min(100),
            rwmix: RwMix::new(elevator_fio::rand::Draws::new(0, true)),
            block_size: spec.block_size.clone(),
            sync_writes: spec.direct,
            max_in_flight: if spec.latency_target_ns.is_some() { 1 } else { max_in_flight },
            depth_low: match spec.iodepth_low {
                0 => max_in_flight,
                low => low.min(max_in_flight),
            },
            draining_to_low: false,
            batch_complete_min: spec.iodepth_batch_complete_min.max(1),
            batch: if spec.latency_target_ns.is_some() {
                1
            } else {
                spec.iodepth_batch.clamp(1, max_in_flight)
            },
            exitall: spec.exitall,
            exitall_on_error: spec.exitall_on_error,
            setup_failed: false,
            exit_what: spec.exit_what,
            io_limit_bytes: limits.pass_bytes,
            job_limit_bytes: limits.job_bytes,
            // fio's do_io goes on while time_based whatever io_bytes_exceeded says, and
            // keep_running asks time_based first: number_ios= bounds a time-based job only
            // where verify= breaks the loop on it (fio 3.33's backend.c).
            number_ios: spec.number_ios.filter(|_| !spec.time_based || spec.verify),
            io_size_bytes: spec.io_size_bytes.filter(|_| passes > 1 || limits.job_bytes.is_some()),
            passes,
            loops_left: passes - 1,
            loops_done: 0,
            pass_ended: false,
            loop_start_bytes: 0,
            loop_start_ios: 0,
            runtime_ns: spec.runtime_ns,
            time_based: spec.time_based,
            startdelay_ns: spec.startdelay_ns,
            ramp_ns: spec.ramp_time_ns,
            thinktime_ns: spec.thinktime_ns,
            thinktime_blocks: spec.thinktime_blocks.max(1),
            think_on_issue: spec.thinktime_blocks_on_issue,
            thinktime_iotime_ns: spec.thinktime_iotime_ns,
            thinktime_blocks_set: spec.thinktime_blocks_set,
            last_think_ns: 0,
            open_in_flight: None,
            issuing_open: false,
            held_open: None,
            iou_free: vec![(0, usize::MAX); max_in_flight.max(1) as usize],
            iou_busy: Vec::new(),
            tree_rewound_at_bytes: None,
            sync_armed: None,
            last_reaped_sync: false,
            sync_blocks: spec.ioengine.runs_syncs_inline(),
            unreaped: VecDeque::new(),
            aio_calls: false,
            aio_calls_done: VecDeque::new(),
            uring: false,
            serial_aio: false,
            uring_writes_queued: VecDeque::new(),
            uring_write_slot: None,
            flushes_in_flight: 0,
            sync_engine: !spec.engine_is_async(),
            reopen_after_flush: false,
            empty_pass_due: false,
            end_fsync: (spec.end_fsync || spec.fsync_on_close)
                && spec.rw.writes()
                && spec.iolog.is_none(),
            end_syncs_owed: 0,
            close_after_sync: None,
            last_was_flush: false,
            last_issue_ns: None,
            max_latency_ns: spec.max_latency_ns,
            rate_min: spec.rate_min_bytes_per_sec,
            rate_iops_min: spec.rate_iops_min,
            rate_cycle_ns: spec.rate_cycle_ns.max(1),
            rate_checked: [(0, 0, 0); 3],
            error: None,
            thinktime_spin_ns: spec.thinktime_spin_ns,
            rate_bytes_per_sec: spec.rate_bytes_per_sec,
            rate_iops: spec.rate_iops,
            poisson_due_ns: (spec.rate_process == RateProcess::Poisson).then_some([0; 3]),
            sync_cadence: [
                (spec.fsync_every, FlushCall::Fsync),
                (spec.fdatasync_every, FlushCall::Fdatasync),
            ],
            barrier_every: spec.write_barrier_every,
            pending_flush: FlushCall::Unaccounted,
            syncs_in_flight: Vec::new(),
            sync_stats: crate::stats::SyncStats::default(),
            ss: None,
            sync_file_range: spec.sync_file_range.filter(|s| s.every > 0),
            writes_since_sfr: 0,
            sfr_pending: false,
            written_span: None,
            last_write_start: 0,
            writes_since_barrier: 0,
            rng,
            next_seq_offset: [region.start_bytes; 3],
            bytes_issued: 0,
            verify_phase_bytes: 0,
            verify_phase_ios: 0,
            ios_issued: 0,
            dir_bytes_issued: [0; 3],
            dir_ios_issued: [0; 3],
            since_think: 0,
            thinking: false,
            writes_for_sync: 0,
            flush_pending: false,
            stop_at_ns: None,
            files: None,
            iolog: spec.iolog.clone().map(|log| Replay {
                log,
                next: 0,
                no_stall: spec.replay_no_stall,
                last_issue_ns: 0,
            }),
            buffered: None,
            tree_io: None,
            tree_last: None,
            wrapped: false,
            reopen_to_log: false,
            random_map: None,
            percentage_random: spec.percentage_random,
            verify: None,
            verify_backlog: spec.verify_backlog,
            verify_backlog_batch: spec.verify_backlog_batch,
            verify_batch_left: 0,
            last_issued_read: false,
            verify_only: spec.verify_only && spec.verify && spec.do_verify && spec.rw.writes(),
            writes_ended_ns: None,
            earlier_writes_ns: 0,
            earlier_verifies_ns: 0,
            writes_began_ns: None,
            verify_then_loop: false,
            verify_syncing: false,
            drop_cache: false,
            block_align: spec.block_align,
            bs_unaligned: spec.bs_unaligned,
            offset_distribution: None,
            fio_offsets: None,
            sequencer: (spec.rw_seq_nr != 1 || spec.rw_seq_add_bytes != 0).then(|| {
                Box::new(Sequencer {
                    nr: spec.rw_seq_nr,
                    // fio's first I/O takes a random offset.
                    nr_left: 1,
                    add_bytes: spec.rw_seq_add_bytes,
                    identical: spec.rw_sequencer == RwSequencer::Identical,
                    last_start: [None; 3],
                    file_base: region.start_bytes,
                    file_bytes: region.len_bytes,
                })
            }),
            pending_calls: vec![None],
            // fio fills no offsets for a replay (its log has them), and turns strided zones
            // off for more than one open file.
            zones: spec.zones.filter(|_| spec.iolog.is_none() && spec.nrfiles <= 1).map(|z| {
                ZoneState {
                    spec: z,
                    done_bytes: 0,
                    start: region.start_bytes,
                    file_end: region.start_bytes + region.len_bytes,
                }
            }),
        }
    }

    /// Gives a random job fio's random map of its region (see [`RandomMap`]).
    pub fn set_random_map(&mut self, map: RandomMap) {
        self.random_map = Some(map);
    }

    /// Uniform random offsets come from fio's own generator (`random_state`), as fio draws
    /// them: `last_block * (r / (rand_max + 1.0))`.
    pub fn set_fio_offsets(&mut self, draws: elevator_fio::rand::Draws) {
        self.fio_offsets = Some(draws);
    }

    /// Gives a random job fio's non-uniform offsets (`random_distribution=`); nothing for the
    /// uniform one. The ranges are the job's smallest read or write block (fio's
    /// `__init_rand_distribution`).
    pub fn set_offset_distribution(&mut self, spec: &JobSpec) -> Result<(), String> {
        let range_bytes = spec.block_size[..2].iter().map(random_alignment).min().unwrap_or(512);
        self.offset_distribution = OffsetDistribution::new(
            &spec.random_distribution,
            self.region.len_bytes,
            range_bytes,
            &mut self.rng,
        )?;
        Ok(())
    }

    /// Each data direction's random alignment (fio's `ba[ddir]`: `blockalign=`, else the
    /// direction's smallest block, at least a sector).
    pub fn random_alignments(spec: &JobSpec) -> [u64; 3] {
        std::array::from_fn(|d| direction_alignment(spec.block_align[d], &spec.block_size[d]))
    }

    /// The block a job's random map counts in: its smallest random alignment over the data
    /// directions (fio's `rw_min_bs`).
    pub fn random_map_unit_bytes(spec: &JobSpec) -> u64 {
        spec.block_size.iter().map(random_alignment).min().unwrap_or(512)
    }

    /// `sync_file_range` is not simulated for this job: its I/O does not go through a page
    /// cache (direct, the null engine, a replay: no dirty pages to write back), or it works
    /// in a tree of files (deviation: fio syncs the span in the file last written).
    pub fn drop_sync_file_range(&mut self) {
        self.sync_file_range = None;
    }

    /// Makes the job's I/O go through the page cache: one system call at a time, but for
    /// an io_uring job's, which go `b.calls` at a time. A libaio or io_uring job keeps its
    /// `iodepth` io_us, as fio does (see `aio_calls`); others have one.
    pub fn set_buffered(&mut self, b: Buffered, calls: BufferedCalls) {
        self.buffered = Some(b);
        self.aio_calls = matches!(
            calls,
            BufferedCalls::Libaio | BufferedCalls::PosixAio | BufferedCalls::IoUring
        );
        self.serial_aio = calls == BufferedCalls::PosixAio;
        self.uring = calls == BufferedCalls::IoUring;
        match calls {
            BufferedCalls::One => self.max_in_flight = 1,
            BufferedCalls::Libaio | BufferedCalls::PosixAio => {}
            BufferedCalls::IoUring => {
                debug_assert!(b.calls <= self.max_in_flight);
                self.pending_calls = vec![None; b.calls.max(1) as usize];
            }
        }
        self.batch = 1;
    }

    /// When fio counts buffered call `call`, returned at `now_ns`, as submitted: libaio runs
    /// the whole call inside `io_submit`; io_uring runs a read of cached pages inside
    /// `io_uring_enter`, and returns from one that must wait for its pages once it has
    /// started their I/O and from a write once it has queued it for io-wq; a synchronous
    /// engine has no submission of its own (no `slat`).
    pub fn call_submitted_ns(&self, call: &PendingCall, now_ns: Nanos) -> Nanos {
        match (self.uring, self.aio_calls && !self.serial_aio) {
            (true, _) => call.cpu_end_ns.min(now_ns),
            (false, true) => now_ns,
            (false, false) => call.start_ns,
        }
    }

    /// A direct posixaio job: glibc's one thread for the job's file descriptor
    /// (`__aio_enqueue_request` queues a request behind the one running on its descriptor)
    /// sends the device one request at a time, while fio keeps `iodepth` io_us in use and
    /// reaps them as libaio's; each I/O is counted when reaped. Real fio 3.33, 4 KiB random
    /// reads of a file on this machine's disk: depth 32 gets 1.2x the IOPS of depth 1
    /// (libaio at 32: 6.7x). Deviation: fio's posixaio reaps what its polls find done
    /// rather than only once its queue is full (its depths spread below `iodepth`), and in
    /// a file tree, where glibc would run one request per file, the job keeps `iodepth`.
    pub fn set_posixaio(&mut self) {
        self.aio_calls = true;
        self.serial_aio = true;
    }

    /// A place for a buffered system call: the task to make it with, as an offset from
    /// [`Buffered::task`]; `None` while every task of the job is in a call.
    pub fn free_call_slot(&self) -> Option<u32> {
        self.pending_calls.iter().position(Option::is_none).map(|i| i as u32)
    }

    /// How many system calls like `io` (just returned by [`Process::next`]) the job would
    /// make back to back from `now`, `io` included, each taking `cost_ns` of CPU: more than
    /// one only for plain sequential reads or writes of one block size, with no rate, think
    /// time or replay (or `random_hits`: the caller found [`Process::may_run_random_hits`]
    /// and the file wholly cached), bounded by the job's limits, the end of its region (a
    /// region's worth of calls for random reads), the next fsync and its runtime.
    pub fn run_len(&self, io: &Io, now_ns: Nanos, cost_ns: Nanos, random_hits: bool) -> u64 {
        // Random reads of a file that is wholly in the page cache are hits wherever they
        // land: a run of them costs the same whatever offsets the job draws.
        if random_hits {
            return self.run_bound(io, now_ns, cost_ns, false);
        }
        let sequential = matches!(self.rw, RwMode::Read | RwMode::Write);
        if !sequential || !self.plain_calls(io) {
            return 1;
        }
        self.run_bound(io, now_ns, cost_ns, true)
    }

    /// Whether a run of `io`'s calls could be random hits (if the file is all cached): asked
    /// before the page cache is, as that costs a walk of the file's pages.
    pub fn may_run_random_hits(&self, io: &Io) -> bool {
        self.rw == RwMode::RandRead
            && io.op == Op::Read
            && self.plain_calls(io)
            // Each call takes whole blocks of the map, so none is cut short.
            && self.random_map.as_ref().is_none_or(|m| m.unit_bytes() >= io.len_bytes)
    }

    /// Calls that can be taken a run at a time: buffered, not synchronous, one block size,
    /// no rate, think time, replay, file tree or pending flush.
    fn plain_calls(&self, io: &Io) -> bool {
        matches!(io.op, Op::Read | Op::Write)
            && self.buffered.is_some_and(|b| !b.sync)
            && !self.aio_calls
            && self.files.is_none()
            && self.iolog.is_none()
            && self.issue_log.is_none()
            && self.verify.is_none()
            && self.sequencer.is_none()
            && self.zones.is_none()
            && self.thinktime_ns == 0
            && self.rate_bytes_per_sec.iter().chain(&self.rate_iops).all(Option::is_none)
            && !self.flush_pending
            && matches!(self.block_size[dir_index(io.op)], BlockSize::Fixed { .. })
            && io.len_bytes > 0
    }

    /// How many calls a run may take: the job's limits, the end of the pass, the next
    /// fsync or barrier, the runtime and the ramp.
    fn run_bound(&self, io: &Io, now_ns: Nanos, cost_ns: Nanos, sequential: bool) -> u64 {
        let len = io.len_bytes;
        let region_end = self.region.start_bytes + self.region.len_bytes;
        // A sequential run ends with the pass; a random one after a pass's worth of calls.
        let mut n = if sequential {
            (region_end - io.offset_bytes) / len
        } else {
            (self.region.len_bytes / len).max(1)
        };
        if let Some(limit) = self.io_limit_bytes {
            n = n.min(limit.saturating_sub(self.loop_bytes()) / len + 1);
        }
        if let Some(limit) = self.job_limit_bytes {
            n = n.min(limit.saturating_sub(self.job_bytes()) / len + 1);
        }
        if let Some(limit) = self.job_ios_limit() {
            n = n.min(limit.saturating_sub(self.job_ios()) + 1);
        }
        if let Some(left) = self.writes_to_next_sync().filter(|_| io.op == Op::Write) {
            n = n.min(left + 1);
        }
        if io.op != Op::Write && self.sync_armed.is_some() {
            n = 1; // a sync follows it
        }
        if io.op == Op::Write && self.barrier_every > 0 {
            n = n.min(u64::from(self.barrier_every - self.writes_since_barrier));
        }
        if let Some(sfr) = self.sync_file_range.filter(|_| io.op == Op::Write) {
            // The first call was counted when it was issued (the counter may have wrapped).
            let since = if self.sfr_pending { sfr.every } else { self.writes_since_sfr };
            n = n.min(u64::from(sfr.every - since) + 1);
        }
        if let Some(stop) = self.stop_at_ns {
            n = n.min(stop.saturating_sub(now_ns) / cost_ns.max(1) + 1);
        }
        if now_ns < self.ramp_end_ns {
            n = n.min((self.ramp_end_ns - now_ns) / cost_ns.max(1) + 1);
        }
        n.max(1)
    }

    /// The job made `extra` more calls like `io` right after it.
    pub fn extend_run(&mut self, io: &Io, extra: u64, now_ns: Nanos) {
        if extra == 0 {
            return;
        }
        let d = dir_index(io.op);
        let bytes = extra * io.len_bytes;
        self.bytes_issued += bytes;
        self.ios_issued += extra;
        self.dir_bytes_issued[d] += bytes;
        self.dir_ios_issued[d] += extra;
        let mut last_offset = io.offset_bytes + bytes;
        if self.rw.is_random() {
            // The offsets the job would have drawn for those calls (and marked in its map).
            for _ in 0..extra {
                if let Some((offset, _)) = self.pick_offset(d, io.len_bytes) {
                    last_offset = offset;
                }
            }
        } else {
            self.next_seq_offset[d] = io.offset_bytes + io.len_bytes + bytes;
        }
        // The run's calls reused one io_u: it carries the last one's offset.
        if let Some(busy) = self.iou_busy.last_mut() {
            busy.2 .0 = last_offset;
        }
        // Depths are marked past the ramp only (a run ends with it: `run_bound`).
        if now_ns >= self.ramp_end_ns {
            self.depth_hist[0] += extra;
        }
        if io.op == Op::Write {
            self.count_writes_for_sync(extra);
        }
        if io.op == Op::Write && self.barrier_every > 0 {
            // run_len stops a run before the barrier write, so no barrier falls inside it.
            self.writes_since_barrier += extra as u32;
        }
        if io.op == Op::Write {
            // run_len stops a run at the write a sync_file_range follows.
            self.wrote(io.offset_bytes + io.len_bytes, io.len_bytes, extra);
        }
    }

    /// Records `n` calls of `len_bytes` that completed one after another from `start_ns`,
    /// each taking `each_ns` (statistics only: the job's state moves with the last call's
    /// [`Process::completed`]).
    pub fn record_run(&mut self, op: Op, len_bytes: u64, n: u64, start_ns: Nanos, each_ns: Nanos) {
        if n == 0 || op == Op::Flush {
            return;
        }
        // Calls that completed before the ramp ended are not counted.
        let skip = if start_ns >= self.ramp_end_ns {
            0
        } else {
            ((self.ramp_end_ns - start_ns).div_ceil(each_ns.max(1))).min(n)
        };
        let counted = n - skip;
        if counted == 0 {
            return;
        }
        let first = start_ns + skip * each_ns;
        self.stats[dir_index(op)].record_run(len_bytes, counted, first, each_ns);
        self.timeline.record_run(dir_index(op), len_bytes, counted, first, each_ns);
        self.lat_buckets.add_n(each_ns, counted);
        if let Some(logs) = self.logs.as_mut() {
            // Each call of the run, one after another (bounded by the log's own limit).
            let logged = counted.min(crate::iolog_out::MAX_LOG_SAMPLES as u64 + 1);
            for i in 0..logged {
                let issue = first + i * each_ns;
                logs.record(dir_index(op), len_bytes, issue, issue, issue + each_ns);
            }
            logs.dropped += counted - logged;
        }
        if self.state == State::Running {
            self.ios_in_runtime += counted;
        }
    }

    /// Whether a sequential pass started over at the region's start since last asked.
    pub fn take_wrapped(&mut self) -> bool {
        std::mem::take(&mut self.wrapped)
    }

    /// Whether the next buffered call must drop the file's cached pages whatever
    /// `invalidate` says (the verify phase's `file_invalidate_cache`).
    pub fn take_drop_cache(&mut self) -> bool {
        std::mem::take(&mut self.drop_cache)
    }

    /// Gives the process a tree of files to work through instead of one region.
    pub fn set_files(&mut self, files: FileTree) {
        self.files = Some(files);
    }

    /// When the process starts, given the earliest it may (its stonewall phase's start, or
    /// when its `wait_for=` waitees are done): fio's `run_threads` counts `startdelay` from
    /// the run's start (`utime_since_genesis`), so a job whose delay has passed by then
    /// starts at once.
    pub fn start_time(&self, earliest_ns: Nanos) -> Nanos {
        earliest_ns.max(self.startdelay_ns)
    }

    /// Starts the clock: ramp and runtime count from here. Returns the runtime deadline.
    pub fn start(&mut self, now_ns: Nanos) -> Option<Nanos> {
        self.state = State::Running;
        self.start_ns = now_ns;
        self.last_think_ns = now_ns;
        self.ramp_end_ns = now_ns + self.ramp_ns;
        if let Some(logs) = self.logs.as_mut() {
            logs.start(now_ns);
        }
        if let Some(log) = self.issue_log.as_mut() {
            log.start(now_ns);
        }
        self.stats = self.stats.each_ref().map(|s| s.restarted(self.ramp_end_ns));
        self.stop_at_ns = self.runtime_ns.map(|r| self.ramp_end_ns + r);
        if let Some(r) = self.iolog.as_mut() {
            r.last_issue_ns = now_ns;
        }
        self.stop_at_ns
    }

    /// The runtime is over: issue nothing more.
    pub fn runtime_expired(&mut self) {
        // A verify phase runs to its end, whatever the runtime (fio verifies after do_io).
        if self.state == State::Running && !self.verifying() {
            self.state = State::Draining;
        }
    }

    /// One more block towards `thinktime_blocks`: the job thinks once its queue is empty
    /// (fio's handle_thinktime quiesces first).
    fn count_towards_think(&mut self, now_ns: Nanos) {
        self.since_think += 1;
        // fio's handle_thinktime: with thinktime_iotime, think once that long (and the last
        // think) has gone by since the last think; the blocks count only if given.
        let mut stall = false;
        if self.thinktime_iotime_ns > 0 {
            if now_ns.saturating_sub(self.last_think_ns)
                >= self.thinktime_iotime_ns + self.thinktime_ns
            {
                stall = true;
            } else if !self.thinktime_blocks_set {
                return;
            }
        }
        if stall || self.since_think >= self.thinktime_blocks {
            self.since_think = 0;
            self.thinking = true;
            self.last_think_ns = now_ns;
        }
    }

    /// The depth a full queue must drain to before the job fills it again (fio's
    /// `wait_for_completions`): it reaps at least `iodepth_batch_complete_min` completions,
    /// and again as long as more than `iodepth_low` are in flight. By default (a minimum of
    /// one, `iodepth_low` the queue's depth) one completion is enough.
    fn refill_depth(&self) -> u32 {
        let full = self.max_in_flight;
        let low = self.depth_low.min(full);
        let m = self.batch_complete_min.min(full).max(1);
        let rounds = (full - low).div_ceil(m).max(1);
        full.saturating_sub(rounds.saturating_mul(m))
    }

    /// Whether the job is in its verify phase, reading back what it wrote.
    fn verifying(&self) -> bool {
        self.verify.as_ref().is_some_and(|v| v.reading())
    }

    /// Decides the next I/O at `now_ns`. With `verify_only`, what the job would issue before
    /// its verify phase (its writes, their fsyncs) is counted and not issued, as fio's
    /// `do_dry_run` completes each at once: no time passes and no I/O reaches a device.
    pub fn next(&mut self, now_ns: Nanos) -> Next {
        loop {
            match self.next_io(now_ns) {
                Next::Issue(io) if self.verify_only && !self.verifying() => {
                    // fio's do_dry_run: a depth of one, and the write accounted as done.
                    if now_ns >= self.ramp_end_ns {
                        self.depth_hist[0] += 1;
                    }
                    self.last_reaped_sync = io.op == Op::Flush;
                    if io.op != Op::Flush && now_ns >= self.ramp_end_ns {
                        self.record_io(dir_index(io.op), io.len_bytes, now_ns, now_ns, now_ns);
                    }
                }
                other => return other,
            }
        }
    }

    fn next_io(&mut self, now_ns: Nanos) -> Next {
        if self.state != State::Running {
            return Next::Full;
        }
        if self.end_syncs_owed > 0 {
            if self.in_flight > 0 {
                return Next::Full;
            }
            return Next::Issue(self.next_end_sync());
        }
        if self.verifying() {
            return self.next_verify_read(now_ns);
        }
        if self.stop_at_ns.is_some_and(|stop| now_ns >= stop) {
            self.state = State::Draining;
            return Next::Stop;
        }
        if self.limit_reached() {
            // A pass whose offsets ran out: a time-based job starts another (fio's
            // keep_running), unless the pass did nothing (fio's `td->done`).
            let restart = self.pass_ended && self.time_based;
            let empty = self.pass_ended && self.loop_ios() == 0;
            // fio's next pass would issue nothing once the job's limit is reached, and
            // `io_size=` past `loops=` asks for more passes (keep_running).
            let spent = self.job_limit_reached() && !self.time_based;
            let more = self.loops_left > 0 || self.io_size_left();
            if empty || spent || (!more && !restart) {
                self.empty_pass_due = spent && !empty && self.loops_left > 0;
                // A last pass that ran out of offsets (a sync engine's always does; an async
                // engine's only short of its bytes) found its file done and closed it:
                // end_fsync opens it for the sync (fio_file_fsync) and closes it.
                let closed = self.pass_ended && !empty && self.files.is_none();
                if let (true, true, Some(log)) =
                    (closed, self.should_fsync(), self.issue_log.as_mut())
                {
                    log.reopened(now_ns);
                }
                self.state = State::Draining;
                return Next::Stop;
            }
            // Another pass (loops=): fio waits for this one's I/O first (cleanup_pending_aio),
            // reaping it all: data I/Os not reaped since a sync come after it.
            if self.in_flight > 0 {
                return Next::Full;
            }
            self.reap_unreaped(now_ns);
            // A sync engine's pass asks for one more io_u: the sync due after its last write
            // goes out in this pass, and again as the next begins.
            self.want_cadence_sync();
            if self.flush_pending && self.sync_engine && !restart && self.end_of_pass_turn() {
                self.flush_pending = false;
                return Next::Issue(Io::flush(self.pending_flush));
            }
            // end_fsync: an async engine's pass stops at its bytes with the file open, and
            // fio syncs it there, before clear_io_state closes it (a sync engine's pass found
            // its file done and closed it: the sync goes to it reopened, see next_loop).
            if !restart && !self.sync_engine && self.pass_end_fsync_due() {
                // One that ran out of offsets short of its bytes found its file done and
                // closed it: the sync opens it again (fio_file_fsync).
                if let (true, None, Some(log)) =
                    (self.pass_ended, self.files.as_ref(), self.issue_log.as_mut())
                {
                    log.reopened(now_ns);
                }
                self.end_syncs_owed = self.file_count();
                return Next::Issue(self.next_end_sync());
            }
            // fio's thread_main verifies what a pass wrote before the next pass (do_verify).
            if more && !restart && !self.verify_only && self.begin_verify(now_ns) {
                self.verify_then_loop = true;
                return self.next_verify_read(now_ns);
            }
            // fio closes the files after a pass and opens them for the next (a time-based
            // job's offsets just start again).
            if let (false, Some(log)) = (self.time_based, self.issue_log.as_mut()) {
                log.reopened(now_ns);
            }
            self.next_loop();
            // A tree's end_fsync at a sync engine's pass end: every file, before the next
            // pass's first I/O.
            if self.end_syncs_owed > 0 {
                return Next::Issue(self.next_end_sync());
            }
        }
        if self.open_in_flight.is_some() {
            return Next::Full;
        }
        // A sync run inline (libaio) holds the thread: it reaps nothing until the sync is
        // back, and the sync's own io_u is free by then.
        if self.sync_blocks && self.flushes_in_flight > 0 {
            return Next::Full;
        }
        // fio's queue is full with I/Os it has not reaped: it reaps the oldest (it is done)
        // and goes on.
        if self.in_flight + self.unreaped.len() as u32 >= self.max_in_flight {
            self.reap_oldest(now_ns);
            // A buffered libaio call counted now may end the job (max_latency).
            if self.state != State::Running {
                return Next::Stop;
            }
        }
        // posixaio: the next request waits in glibc's queue for the one running.
        if self.serial_aio && self.in_flight > 0 && !self.thinking {
            return Next::Full;
        }
        if self.thinking || self.in_flight >= self.max_in_flight {
            if self.in_flight >= self.max_in_flight && self.refill_depth() + 1 < self.max_in_flight
            {
                self.draining_to_low = true;
            }
            return Next::Full;
        }
        if self.draining_to_low {
            if self.in_flight > self.refill_depth() {
                return Next::Full;
            }
            self.draining_to_low = false;
        }
        self.want_cadence_sync();
        if self.flush_pending && !self.tree_exhausted() && self.held_open.is_none() {
            // In a file tree the sync takes the turn of the file chosen next; opening it
            // first goes out below, and the sync follows.
            let turn = match self.files.as_mut() {
                None => None,
                Some(files) => loop {
                    match files.sync_turn(&mut self.rng) {
                        FileIo::Busy if self.in_flight > 0 => return Next::Full,
                        FileIo::Busy => files.pass_busy_turns(),
                        other => break Some(other),
                    }
                },
            };
            match turn {
                Some(FileIo::Sync { file }) => self.sync_to(file),
                Some(open) => self.held_open = Some(open),
                None => {}
            }
            if self.held_open.is_none() {
                self.flush_pending = false;
                if std::mem::take(&mut self.reopen_after_flush) {
                    // fio syncs a closed file by opening it and closes it again; the pass
                    // then opens it anew (invalidate drops the now clean pages).
                    self.wrapped = true;
                    self.reopen_to_log = true;
                }
                // Any sync ends the span a sync_file_range covers (fio's io_completed).
                self.written_span = None;
                return Next::Issue(Io::flush(self.pending_flush));
            }
        }
        if self.sfr_pending {
            self.sfr_pending = false;
            return Next::Issue(self.sync_range_io());
        }
        if self.iolog.is_some() {
            return self.next_replayed(now_ns);
        }
        if let Some(read) = self.backlog_verify_read() {
            return read;
        }
        // A draw fio would not have made (no file to try) is taken back.
        let rwmix_before = self.rwmix;
        let mut d = match self.rwmix.decided.take() {
            Some(d) => d,
            None => dir_index(self.pick_direction()),
        };
        if let Some(at) = self.rate_wait(d, now_ns) {
            // fio's rate_ddir: a mixed job ahead of its rate in this direction takes the
            // other if that one is behind, else waits for whichever is due first, and goes
            // on in that direction (no new draw after the wait).
            let o = d ^ 1;
            if !self.rw.is_mixed() || mix_share(self.rwmixread_percent, o) == 0 {
                self.rwmix.decided = self.rw.is_mixed().then_some(d);
                return Next::WaitUntil(at);
            }
            match self.rate_wait(o, now_ns) {
                None => d = o,
                Some(at_o) => {
                    let (at, due) = if at <= at_o { (at, d) } else { (at_o, o) };
                    self.rwmix.dir = due;
                    self.rwmix.decided = Some(due);
                    return Next::WaitUntil(at);
                }
            }
            self.rwmix.dir = d;
        }
        let op = DIRECTIONS[d];
        let bs = self.pick_block_size(d);
        let mut attempt = Attempt::new(d);
        let step = match self.held_open.take() {
            Some(open) => Some(open),
            None => loop {
                match self.next_in_files(&mut attempt, bs) {
                    // fio's do_io on EBUSY: reap a completion first if any I/O is in
                    // flight, else ask again at once (the choice has moved on). fio drew no
                    // direction: no file was there to fill an io_u for.
                    Some(FileIo::Busy) if self.in_flight > 0 => {
                        if !attempt.tried {
                            self.rwmix = rwmix_before;
                        }
                        return Next::Full;
                    }
                    Some(FileIo::Busy) => {
                        if let Some(files) = self.files.as_mut() {
                            files.pass_busy_turns();
                        }
                    }
                    step => break step,
                }
            },
        };
        let opening_step =
            matches!(step, Some(FileIo::Meta { .. } | FileIo::Open { .. } | FileIo::Reopen { .. }));
        if opening_step && self.rw.is_mixed() {
            // fio opens the file before fill_io_u draws: the drawn direction is the data's
            // that follows the opening.
            self.rwmix.decided = Some(attempt.dir);
        }
        if step == Some(FileIo::Done) && !attempt.tried {
            self.rwmix = rwmix_before;
        }
        if opening_step && self.in_flight > 0 && self.last_issue_ns == Some(now_ns) {
            self.held_open = step;
            return Next::WaitUntil(now_ns + 1);
        }
        if let Some(files) = self.files.as_mut() {
            // Drained whether logged or not: a job without write_iolog must not pile them up.
            let (closes, opens) = (files.take_closes(), files.take_opens());
            if let Some(log) = self.issue_log.as_mut() {
                for file in closes {
                    log.closed(now_ns, file);
                }
                for file in opens {
                    log.opened(now_ns, file);
                }
                if std::mem::take(&mut self.reopen_to_log) {
                    log.reopened(now_ns);
                }
                if let Some(
                    FileIo::Meta { file, .. } | FileIo::Open { file } | FileIo::Reopen { file },
                ) = step
                {
                    log.opened(now_ns, file);
                }
            }
        }
        let (op, offset, len, opening) = match step {
            Some(FileIo::Meta { offset_bytes, file }) => {
                self.tree_io = Some(TreeIo::Open(file));
                (Op::Read, offset_bytes, 4096, true)
            }
            Some(FileIo::Reopen { file }) => {
                self.tree_io = Some(TreeIo::Reopen(file));
                let meta = self.files.as_ref().expect("a tree").files[file].meta_offset_bytes;
                (Op::Read, meta, 4096, true)
            }
            Some(FileIo::Open { file }) => {
                // A buffered job's open: the page cache decides what it reads.
                self.tree_io = Some(TreeIo::Open(file));
                let meta = self.files.as_ref().expect("a tree").files[file].meta_offset_bytes;
                (Op::Read, meta, 4096, true)
            }
            Some(FileIo::Data { offset_bytes, len_bytes, file, dir }) => {
                self.tree_io = Some(TreeIo::Data(file));
                self.log_file = file;
                (DIRECTIONS[dir], offset_bytes, len_bytes, false)
            }
            Some(FileIo::Busy | FileIo::Sync { .. }) => {
                unreachable!("a busy choice is asked again above; a sync turn is a flush")
            }
            Some(FileIo::Done) => {
                // The tree is done: the pass is over, and loops= or io_size= may ask for
                // another (as when a single file's offsets run out).
                self.pass_ended = true;
                return self.next(now_ns);
            }
            None => match self.pick_offset(d, bs) {
                // fio's fill_io_u: an I/O past the file's end ends the pass.
                Some((offset, len)) if offset.saturating_add(len) > self.file_end_bytes => {
                    self.pass_ended = true;
                    // A time-based job's next pass too opens the file fio closed here.
                    if self.time_based {
                        if let Some(log) = self.issue_log.as_mut() {
                            log.reopened(now_ns);
                        }
                        self.next_seq_offset = [self.next_pass_start(); 3];
                    }
                    return self.next(now_ns);
                }
                Some((offset, len)) => {
                    if let (true, Some(log)) =
                        (std::mem::take(&mut self.reopen_to_log), self.issue_log.as_mut())
                    {
                        log.reopened(now_ns);
                    }
                    (op, offset, len, false)
                }
                None => {
                    // The pass is over (at most twice: an empty pass stops the job).
                    self.pass_ended = true;
                    return self.next(now_ns);
                }
            },
        };
        if opening {
            // Not counted: an opening is a read, so nothing below for writes applies either.
            self.open_in_flight = Some(now_ns);
            self.issuing_open = true;
        } else {
            self.count_issue(op, len);
        }
        if op == Op::Write {
            if let Some(v) = self.verify.as_mut() {
                v.wrote(offset, len);
            }
        }
        if op == Op::Write {
            self.count_writes_for_sync(1);
        }
        if op == Op::Write {
            self.wrote(offset, len, 1);
        }
        let mut barrier = false;
        if op == Op::Write && self.barrier_every > 0 {
            self.writes_since_barrier += 1;
            if self.writes_since_barrier >= self.barrier_every {
                // A barrier write: on the media before anything after it (FUA + flush).
                self.writes_since_barrier = 0;
                self.want_flush(FlushCall::Unaccounted);
                barrier = true;
            }
        }
        // fio counts I/O units towards `thinktime_blocks`; opening a file is not one.
        if self.thinktime_ns > 0 && self.think_on_issue && !opening {
            self.count_towards_think(now_ns);
        }
        let sync = op != Op::Write || self.sync_writes || barrier;
        let prio = self.cmdprio.as_mut().and_then(|c| c.pick(dir_index(op), len));
        Next::Issue(Io {
            op,
            offset_bytes: offset,
            len_bytes: len,
            sync,
            prio,
            meta: opening,
            flush: None,
        })
    }

    /// The job has done its I/O: a buffered job with `end_fsync`/`fsync_on_close` still
    /// owes its final fsyncs, one per file: the first is returned here, as an I/O to issue;
    /// the rest go out as the job runs on once it has returned ([`Process::drained`]).
    pub fn take_end_fsync(&mut self, now_ns: Nanos) -> Option<Io> {
        // should_fsync: only a job that writes, and not right after a sync; fio asks once,
        // before the syncs.
        let due = self.should_fsync();
        // fio reaps what is left before (a buffered libaio job's last calls): the sync takes
        // the io_u reaped last.
        self.reap_unreaped(now_ns);
        self.owe_end_fsyncs(due).then(|| self.next_end_sync())
    }

    /// A buffered job's `end_fsync`/`fsync_on_close`, taken once: one fsync per file is
    /// owed if `due` (fio's should_fsync). Whether any fsync of the job's end is owed.
    fn owe_end_fsyncs(&mut self, due: bool) -> bool {
        if let Some(b) = self.buffered.as_mut().filter(|b| b.end_fsync) {
            b.end_fsync = false;
            self.end_syncs_owed = if due { self.file_count() } else { 0 };
        }
        self.end_syncs_owed > 0
    }

    /// The next of the fsyncs owed at the job's end, to the next file in order.
    fn next_end_sync(&mut self) -> Io {
        let file = self.file_count() - self.end_syncs_owed;
        self.end_syncs_owed -= 1;
        if let Some(files) = self.files.as_ref() {
            if !files.is_open(file) {
                self.close_after_sync = Some(file);
            }
            self.sync_to(file);
        }
        Io::flush(FlushCall::Unaccounted)
    }

    /// The job's files: a tree's, else its one.
    fn file_count(&self) -> usize {
        self.files.as_ref().map_or(1, |f| f.files.len())
    }

    /// Counts an I/O about to be issued against the job's limits and rates.
    fn count_issue(&mut self, op: Op, len_bytes: u64) {
        let d = dir_index(op);
        self.last_issued_read = op == Op::Read;
        self.bytes_issued += len_bytes;
        self.ios_issued += 1;
        self.dir_bytes_issued[d] += len_bytes;
        self.dir_ios_issued[d] += 1;
        if let Some(mean_ns) = self.poisson_mean_gap_ns(d) {
            // fio's usec_for_io: the next I/O is due an exponential gap after this one's due
            // time, -ln(U) times the mean.
            let gap = mean_ns * -(1.0 - self.rng.unit()).ln();
            if let Some(due) = self.poisson_due_ns.as_mut() {
                due[d] = due[d].saturating_add(gap as Nanos);
            }
        }
    }

    /// `rate_process=poisson`: the mean gap between I/Os of direction `d`, if it is rated.
    /// fio turns the rate into I/Os per second of the direction's smallest block, as its
    /// `rate_bps / min_bs`.
    fn poisson_mean_gap_ns(&self, d: usize) -> Option<f64> {
        self.poisson_due_ns?;
        let min_bs = self.block_size[d].min_bytes().max(1);
        let bytes_per_sec = match (self.rate_bytes_per_sec[d], self.rate_iops[d]) {
            (Some(r), _) if r > 0 => r as f64,
            (_, Some(iops)) if iops > 0 => iops as f64 * min_bs as f64,
            _ => return None,
        };
        Some(NS_PER_SEC as f64 * min_bs as f64 / bytes_per_sec)
    }

    /// The next action of the replayed log, when its delay after the previous one has passed
    /// (fio's `iolog_delay`), unless `replay_no_stall`.
    fn next_replayed(&mut self, now_ns: Nanos) -> Next {
        let r = self.iolog.as_mut().expect("replaying");
        let Some(&e) = r.log.entries.get(r.next) else {
            self.state = State::Draining;
            return Next::Stop;
        };
        let due = r.last_issue_ns.saturating_add(e.delay_ns);
        if !r.no_stall && due > now_ns {
            return Next::WaitUntil(due);
        }
        r.next += 1;
        r.last_issue_ns = now_ns;
        self.count_issue(e.op, e.len_bytes);
        let sync = e.op != Op::Write || self.sync_writes;
        Next::Issue(Io {
            op: e.op,
            offset_bytes: self.region.start_bytes + e.offset_bytes,
            len_bytes: e.len_bytes,
            sync,
            prio: None,
            meta: false,
            flush: None,
        })
    }

    /// `n` more writes went out: the sync due after them, if the count is a multiple of a
    /// cadence (`fsync=` asked before `fdatasync=`), stays armed until the next write
    /// ([`Process::want_cadence_sync`] asks for it at each turn).
    fn count_writes_for_sync(&mut self, n: u64) {
        if self.sync_cadence.iter().all(|&(every, _)| every == 0) {
            return;
        }
        self.writes_for_sync += n;
        let w = self.writes_for_sync;
        self.sync_armed = self
            .sync_cadence
            .iter()
            .find(|&&(every, _)| every > 0 && w.is_multiple_of(u64::from(every)))
            .map(|&(_, call)| call);
    }

    /// fio's get_rw_ddir at a turn: the sync the write count is due for goes first, unless
    /// the last I/O reaped was a sync (`should_fsync`).
    fn want_cadence_sync(&mut self) {
        if let Some(call) = self.sync_armed.filter(|_| !self.last_reaped_sync) {
            self.want_flush(call);
        }
    }

    /// Writes still to go before the next sync a cadence asks for, if any cadence is set.
    fn writes_to_next_sync(&self) -> Option<u64> {
        let w = self.writes_for_sync;
        self.sync_cadence
            .iter()
            .filter(|&&(every, _)| every > 0)
            .map(|&(every, _)| u64::from(every) - w % u64::from(every))
            .min()
    }

    /// A flush is due: `call` (one fio accounts wins over one it does not, where both fall
    /// on the same write).
    fn want_flush(&mut self, call: FlushCall) {
        if !self.flush_pending || call != FlushCall::Unaccounted {
            self.pending_flush = call;
        }
        self.flush_pending = true;
    }

    /// `n` writes of `len` from route offset `offset`, one after another, were issued:
    /// the span a `sync_file_range` covers grows, and one falls due every N writes unless
    /// an fsync falls there too (fio's get_rw_ddir asks fsync and fdatasync first).
    fn wrote(&mut self, offset: u64, len: u64, n: u64) {
        let Some(sfr) = self.sync_file_range else { return };
        let end = offset + n * len;
        self.written_span = Some(match self.written_span {
            Some((a, b)) => (a.min(offset), b.max(end)),
            None => (offset, end),
        });
        self.last_write_start = end - len;
        self.writes_since_sfr += n as u32;
        if self.writes_since_sfr >= sfr.every {
            self.writes_since_sfr = 0;
            if !self.flush_pending && self.sync_armed.is_none() {
                self.sfr_pending = true;
            }
        }
    }

    /// The due `sync_file_range`, over what was written since the last sync.
    fn sync_range_io(&mut self) -> Io {
        let sfr = self.sync_file_range.expect("sync_file_range");
        let (a, b) =
            self.written_span.take().unwrap_or((self.last_write_start, self.last_write_start));
        Io {
            op: Op::Flush,
            offset_bytes: a,
            len_bytes: b - a,
            sync: true,
            prio: None,
            meta: false,
            flush: Some(FlushCall::Range(SyncRangeFlags {
                wait_before: sfr.wait_before,
                write: sfr.write,
                wait_after: sfr.wait_after,
            })),
        }
    }

    /// Records that an I/O went into the block layer.
    pub fn issued(&mut self, io: &Io, now_ns: Nanos) {
        self.in_flight += 1;
        if std::mem::take(&mut self.issuing_open) {
            return;
        }
        self.last_issue_ns = Some(now_ns);
        self.last_was_flush = io.op == Op::Flush;
        if io.op == Op::Flush {
            self.flushes_in_flight += 1;
        }
        // The io_u it goes in: a flush keeps the offset its io_u carried last.
        let iou = self.iou_free.pop().unwrap_or((0, usize::MAX));
        let carried = if io.op == Op::Flush { iou } else { (io.offset_bytes, self.log_file) };
        self.iou_busy.push((now_ns, io.op == Op::Flush, carried));
        let (file, holds) = (self.log_file, self.holds_tree_ref(io.op));
        if let Some(files) = self.files.as_mut().filter(|_| holds) {
            files.issued(file);
        }
        let verifying = self.verifying();
        if let Some(log) = self.issue_log.as_mut() {
            let action = match io.flush {
                Some(FlushCall::Range(_)) => Some("sync_file_range"),
                Some(FlushCall::Fdatasync) => Some("datasync"),
                Some(FlushCall::Fsync | FlushCall::Unaccounted) => Some("sync"),
                None => None,
            };
            match action {
                // The verify phase's sync: fio's do_verify calls fio_io_sync, which the log
                // does not see.
                Some(_) if verifying => {}
                // fio logs the io_u it reused: its last offset (in the file it was for), no
                // length.
                Some(action) => {
                    let (route, file) = iou;
                    let in_file = route.saturating_sub(log.base_bytes(file));
                    let offset = in_file + log.base_bytes(self.log_file);
                    log.issued_action(now_ns, self.log_file, action, offset, 0)
                }
                None => log.issued(now_ns, self.log_file, io.op, io.offset_bytes, io.len_bytes),
            }
        }
        match io.flush {
            Some(FlushCall::Fsync) => self.syncs_in_flight.push((now_ns, true)),
            Some(FlushCall::Fdatasync | FlushCall::Range(_)) => {
                self.syncs_in_flight.push((now_ns, false))
            }
            _ => {}
        }
        // fio marks the depth (`io_u_mark_depth`) at `cur_depth`: the io_us in use, done but
        // not reaped ones included; a sync run outside the job's I/O (end_fsync,
        // fsync_on_close, a barrier's flush) is not marked.
        if io.flush == Some(FlushCall::Unaccounted) && !verifying {
            return;
        }
        // fio's reset_io_stats at the ramp's end clears the map (io_u_map).
        if now_ns < self.ramp_end_ns {
            return;
        }
        let depth = self.in_flight + self.unreaped.len() as u32;
        let bucket = match depth {
            1 => 0,
            2..=3 => 1,
            4..=7 => 2,
            8..=15 => 3,
            16..=31 => 4,
            32..=63 => 5,
            _ => 6,
        };
        self.depth_hist[bucket] += 1;
    }

    /// A cpuio job's burn of `[start_ns, now_ns)` ended: fio counts each burn as a read of
    /// no bytes that took the burn's time.
    pub fn cpuio_cycle_done(&mut self, start_ns: Nanos, now_ns: Nanos) {
        if self.no_io && now_ns >= self.ramp_end_ns {
            self.record_io(0, 0, start_ns, start_ns, now_ns);
        }
    }

    /// Counts one I/O of `len_bytes` in direction `d`, issued at `issue_ns`, submitted at
    /// `submit_ns` and complete at `now_ns`, in the statistics, latency buckets and logs.
    fn record_io(
        &mut self,
        d: usize,
        len_bytes: u64,
        issue_ns: Nanos,
        submit_ns: Nanos,
        now_ns: Nanos,
    ) {
        self.stats[d].record(len_bytes, issue_ns, submit_ns, now_ns);
        // fio's io_u_mark_latency: the completion latency.
        self.lat_buckets.add(now_ns - submit_ns);
        if let Some(logs) = self.logs.as_mut() {
            logs.record(d, len_bytes, issue_ns, submit_ns, now_ns);
        }
        if self.state == State::Running {
            self.ios_in_runtime += 1;
        }
    }

    /// An I/O completed. Returns how the process goes on, if it wants to issue again.
    pub fn completed(
        &mut self,
        op: Op,
        len_bytes: u64,
        issue_ns: Nanos,
        submit_ns: Nanos,
        now_ns: Nanos,
    ) -> Option<Resume> {
        debug_assert!(self.in_flight > 0);
        self.in_flight -= 1;
        if let Some(file) = self.close_after_sync.filter(|_| op == Op::Flush) {
            self.close_after_sync = None;
            if let Some(log) = self.issue_log.as_mut() {
                log.closed(now_ns, file);
            }
        }
        // A buffered job makes one call at a time; a direct job's opening went out alone in
        // its nanosecond.
        let opening = op == Op::Read
            && self.open_in_flight.is_some_and(|t| t == issue_ns || self.buffered.is_some());
        if opening {
            self.open_in_flight = None;
            return self.go_on(now_ns);
        }
        // fio waits for completions only with its queue full (this one counted) or while it
        // reaps down to iodepth_low, and not while inside a sync call: else it reaps this
        // one later (see `unreaped`).
        let full = self.in_flight + 1 + self.unreaped.len() as u32 >= self.max_in_flight
            || self.draining_to_low;
        let in_sync = self.sync_blocks && self.flushes_in_flight > 0;
        // A buffered libaio call is counted when fio reaps it, the oldest first.
        let aio_call = self.aio_calls && op != Op::Flush;
        if aio_call {
            self.unreaped.push_back(issue_ns);
            self.aio_calls_done.push_back((op, len_bytes, issue_ns, submit_ns));
            if full && !in_sync {
                self.reap_oldest(now_ns);
            }
        } else if op != Op::Flush && self.files.is_none() && (in_sync || !full) {
            self.unreaped.push_back(issue_ns);
        } else {
            // Reaped (the job takes each completion as it comes: it waits only when it
            // cannot issue, as fio reaps only then).
            self.last_reaped_sync = op == Op::Flush;
            if op == Op::Flush {
                self.flushes_in_flight = self.flushes_in_flight.saturating_sub(1);
            }
            self.free_iou(op, issue_ns);
        }
        if op == Op::Flush {
            if let Some(i) = self.syncs_in_flight.iter().position(|&(t, _)| t == issue_ns) {
                let (_, fsync) = self.syncs_in_flight.swap_remove(i);
                // fio's should_account: past the ramp, while running.
                if now_ns >= self.ramp_end_ns && self.state == State::Running {
                    self.sync_stats.add(now_ns - issue_ns, fsync);
                }
            }
        }
        if op != Op::Flush && self.state == State::Running {
            self.latency_target_check(op, len_bytes, now_ns - issue_ns, now_ns);
        }
        if op != Op::Flush && !aio_call {
            self.account(op, len_bytes, issue_ns, submit_ns, now_ns);
        }
        if now_ns >= self.ramp_end_ns && self.state == State::Running {
            self.check_min_rate(now_ns);
        }
        // fio's default thinktime_blocks_type=complete: completed blocks count (io_blocks).
        if self.thinktime_ns > 0
            && !self.think_on_issue
            && op != Op::Flush
            && self.state == State::Running
            && !self.verifying()
        {
            self.count_towards_think(now_ns);
        }
        self.go_on(now_ns)
    }

    /// fio's account_io_completion of a read or write issued at `issue_ns`, submitted at
    /// `submit_ns`, reaped at `now_ns`: its statistics past the ramp, and `max_latency`
    /// (lat_fatal): an I/O slower than the limit, issue to reap, ends the job with
    /// ETIMEDOUT; it is still counted.
    fn account(
        &mut self,
        op: Op,
        len_bytes: u64,
        issue_ns: Nanos,
        submit_ns: Nanos,
        now_ns: Nanos,
    ) {
        if now_ns >= self.ramp_end_ns && !self.no_io {
            self.record_io(dir_index(op), len_bytes, issue_ns, submit_ns, now_ns);
            self.timeline.record(dir_index(op), len_bytes, now_ns);
        }
        let lat = now_ns.saturating_sub(issue_ns);
        if let Some(max) = self.max_latency_ns[dir_index(op)].filter(|&m| lat > m) {
            self.latency_fatal(op, len_bytes, lat, max);
        }
    }

    /// The io_u of the I/O issued at `issue_ns` is free again, on top of the free list (a
    /// buffered job's call returns in order: the oldest).
    /// Deviation: I/Os issued in the same nanosecond are matched to their io_us (and files)
    /// in issue order, whichever completes first; a sync only to a sync's io_u (a data I/O
    /// beside it in that nanosecond holds a file, the sync none).
    fn free_iou(&mut self, op: Op, issue_ns: Nanos) {
        let flush = op == Op::Flush;
        let i = self
            .iou_busy
            .iter()
            .position(|&(t, f, _)| t == issue_ns && f == flush)
            .or_else(|| self.iou_busy.iter().position(|&(t, _, _)| t == issue_ns))
            .unwrap_or(0);
        if i < self.iou_busy.len() {
            let (_, _, (offset, file)) = self.iou_busy.remove(i);
            self.iou_free.push((offset, file));
            // An io_u never used for data carries no file (usize::MAX).
            let holds = self.holds_tree_ref(op) && file != usize::MAX;
            if let Some(files) = self.files.as_mut().filter(|_| holds) {
                files.completed(file);
            }
        }
    }

    /// fio reaps the oldest data I/O done and not yet reaped (`unreaped`), if any: its io_u
    /// goes on top of the free list, and a sync is no longer the last I/O reaped. Whether
    /// there was one.
    fn reap_oldest(&mut self, now_ns: Nanos) -> bool {
        let Some(issue_ns) = self.unreaped.pop_front() else { return false };
        if let Some((op, len_bytes, start_ns, end_ns)) = self.aio_calls_done.pop_front() {
            self.account(op, len_bytes, start_ns, end_ns, now_ns);
        }
        // A read or a write: `free_iou` only tells data from syncs.
        self.free_iou(Op::Write, issue_ns);
        self.last_reaped_sync = false;
        true
    }

    /// fio reaps everything at a pass's end, in the order it completed: data I/Os not reaped
    /// since a sync come after it, so `should_fsync` no longer sees that sync last.
    fn reap_unreaped(&mut self, now_ns: Nanos) {
        if self.reap_oldest(now_ns) {
            while self.reap_oldest(now_ns) {}
            self.last_was_flush = false;
        }
    }

    /// How the process goes on after a completion.
    fn go_on(&mut self, now_ns: Nanos) -> Option<Resume> {
        match self.state {
            State::Running if self.thinking => {
                if self.in_flight == 0 {
                    self.thinking = false;
                    Some(if self.thinktime_spin_ns > 0 {
                        Resume::Spin {
                            spin_ns: self.thinktime_spin_ns,
                            sleep_ns: self.thinktime_ns.saturating_sub(self.thinktime_spin_ns),
                        }
                    } else {
                        Resume::ThinkUntil(now_ns + self.thinktime_ns)
                    })
                } else {
                    None
                }
            }
            State::Running => Some(Resume::At(now_ns)),
            State::Draining if self.in_flight == 0 && !self.blocked => {
                if self.drained(now_ns) {
                    None
                } else {
                    Some(Resume::At(now_ns))
                }
            }
            _ => None,
        }
    }

    /// `lat_target_check` and its kin (fio's `io_u.c`): each completion later than the
    /// target fails the window at once (percentile 100) or counts against it; at the end of
    /// each `latency_window` the window succeeds if enough I/Os were in time. A success
    /// doubles the depth (or bisects towards the last failing one), a failure bisects down
    /// towards the last good one; when the depth stops moving the statistics restart and
    /// the job runs one more window at that depth, then ends. Deviation: fio quiesces the
    /// queue when it ramps down; here the deeper I/Os in flight simply drain.
    fn latency_target_check(&mut self, op: Op, len_bytes: u64, latency_ns: Nanos, now_ns: Nanos) {
        let Some(lt) = self.lat_target.as_mut() else { return };
        lt.window_ios += 1;
        if latency_ns > lt.target_ns {
            if lt.percentile >= 100.0 {
                // fio's lat_target_failed: at depth 1 there is nowhere left to go, and the
                // job fails (lat_fatal).
                if lt.qd == 1 {
                    let target = lt.target_ns;
                    self.latency_fatal(op, len_bytes, latency_ns, target);
                    return;
                }
                self.latency_target_failed(now_ns);
                return;
            }
            lt.window_failed += 1;
        }
        if now_ns < lt.window_start_ns + lt.window_ns {
            return;
        }
        let ok = (lt.window_ios - lt.window_failed) as f64 * 100.0 / lt.window_ios.max(1) as f64;
        if ok >= lt.percentile {
            self.latency_target_success(now_ns);
        } else {
            self.latency_target_failed(now_ns);
        }
    }

    /// fio's `check_min_rate`, after each completion: past 2 s from the start, once a
    /// direction has a check to compare with and a `rate_cycle` has gone by, its bytes (with
    /// `rate_min`, else I/Os with `rate_iops_min`) per second since then must reach the
    /// minimum, or the job ends with EIO.
    fn check_min_rate(&mut self, now_ns: Nanos) {
        if self.error.is_some() || now_ns.saturating_sub(self.start_ns) < 2 * NS_PER_SEC {
            return;
        }
        for d in 0..3 {
            let (min_bytes, min_iops) = (self.rate_min[d], self.rate_iops_min[d]);
            if min_bytes.is_none() && min_iops.is_none() || self.stats[d].io_bytes == 0 {
                continue;
            }
            let (bytes, ios) = (self.stats[d].io_bytes, self.stats[d].total_ios);
            let (last_bytes, last_ios, last_ns) = self.rate_checked[d];
            if last_bytes != 0 || last_ios != 0 {
                let spent_ms = now_ns.saturating_sub(last_ns) / NS_PER_MS;
                if spent_ms == 0 || spent_ms * NS_PER_MS < self.rate_cycle_ns {
                    continue;
                }
                let failed = match min_bytes {
                    Some(min) => {
                        let got = (bytes - last_bytes) * 1000 / spent_ms;
                        (got < min).then(|| format!("rate_min={min}B/s not met, got {got}B/s"))
                    }
                    None => {
                        let min = min_iops.unwrap_or(0);
                        let got = (ios - last_ios) * 1000 / spent_ms;
                        (got < min).then(|| format!("rate_iops_min={min} not met, got {got} IOPS"))
                    }
                };
                if let Some(message) = failed {
                    self.error = Some(JobError { errno: EIO, func: "check_min_rate", message });
                    self.state = State::Draining;
                    return;
                }
            }
            self.rate_checked[d] = (bytes, ios, now_ns);
        }
    }

    /// fio's `lat_fatal`: an I/O of `op` took `lat` ns, over `limit`; the job ends with
    /// ETIMEDOUT (the first such error counts).
    fn latency_fatal(&mut self, op: Op, len_bytes: u64, lat: Nanos, limit: Nanos) {
        if self.error.is_some() {
            return;
        }
        self.error = Some(JobError {
            errno: ETIMEDOUT,
            func: "max latency exceeded",
            message: format!(
                "latency of {lat} nsec exceeds specified max ({limit} nsec): {} {len_bytes} bytes",
                crate::iolog_out::fio_ddir_name(op)
            ),
        });
        if self.state == State::Running {
            self.state = State::Draining;
        }
    }

    /// `__lat_target_failed`: bisect down (at depth 1 a window's failure keeps depth 1; an
    /// I/O's, with percentile 100, ends the job in `latency_target_check`).
    fn latency_target_failed(&mut self, now_ns: Nanos) {
        let Some(lt) = self.lat_target.as_mut() else { return };
        if lt.qd > 1 {
            lt.qd_high = lt.qd;
            if lt.qd == lt.qd_low {
                lt.qd_low = (lt.qd_low - 1).max(1);
            }
            lt.qd = ((lt.qd + lt.qd_low) / 2).max(1);
        }
        lt.new_window(now_ns);
        self.max_in_flight = lt.qd;
        self.batch = self.batch.min(lt.qd);
    }

    /// `lat_target_success`: double up to the first failing depth, or bisect towards it; when
    /// the depth holds, restart the statistics for a last run at it, and after that end.
    fn latency_target_success(&mut self, now_ns: Nanos) {
        let Some(lt) = self.lat_target.as_mut() else { return };
        let old = lt.qd;
        lt.qd_low = lt.qd;
        lt.qd = if lt.qd_high != lt.depth { (lt.qd + lt.qd_high) / 2 } else { lt.qd * 2 };
        lt.qd = lt.qd.clamp(1, lt.depth);
        lt.new_window(now_ns);
        self.max_in_flight = lt.qd;
        if lt.qd != old {
            return;
        }
        if lt.end_run {
            self.state = State::Draining;
            return;
        }
        lt.end_run = true;
        // `reset_all_stats`: what is reported is the run at the depth found.
        self.stats = self.stats.each_ref().map(|s| s.restarted(0));
        self.lat_buckets = LatencyBuckets::default();
        self.depth_hist = [0; 7];
        self.ios_in_runtime = 0;
        self.ramp_end_ns = now_ns;
    }

    /// Marks the process done.
    /// The job has drained its I/O. Returns true when it is done; false when its verify
    /// phase begins instead (it runs again, issuing reads).
    #[must_use]
    pub fn drained(&mut self, now_ns: Nanos) -> bool {
        // fio's do_io reaps what is left at its end (io_u_queued_complete): data I/Os not
        // reaped since a sync come after it (`should_fsync`).
        self.reap_unreaped(now_ns);
        // The rest of the fsyncs owed at the job's end, one file after another; or a
        // buffered job's end_fsync, when its last call returned after it had stopped (its
        // runtime ran out, another job's exitall, an io_uring job's calls still in flight
        // at its last I/O), so that it never met take_end_fsync: fio's do_io syncs at its
        // end whatever ended the loop, unless the job failed.
        let due = self.should_fsync();
        if self.end_syncs_owed > 0 || self.owe_end_fsyncs(due) {
            self.state = State::Running;
            return false;
        }
        // A direct job's end_fsync, one per file (a buffered job's go out as take_end_fsync
        // says).
        if self.buffered.is_none() && self.ios_issued > 0 && self.should_fsync() {
            self.end_syncs_owed = self.file_count();
            self.state = State::Running;
            return false;
        }
        // fio's pass after the one the job's limit ended, while loops= are left: its
        // clear_io_state closes the files and its do_io issues nothing, but end_fsync (or
        // fsync_on_close) still syncs every file, opening each for it (fio_file_fsync); a
        // pass without I/O then ends the job (td->done).
        if std::mem::take(&mut self.empty_pass_due) && self.end_fsync {
            self.loops_left = 0;
            if let Some(log) = self.issue_log.as_mut() {
                log.reopened(now_ns);
            }
            if let Some(files) = self.files.as_mut() {
                files.rewind();
            }
            self.end_syncs_owed = self.file_count();
            self.state = State::Running;
            return false;
        }
        if !self.begin_verify(now_ns) {
            self.finish(now_ns);
            return true;
        }
        self.state = State::Running;
        self.stop_at_ns = None;
        self.thinking = false;
        self.draining_to_low = false;
        false
    }

    /// fio's do_verify, if the job verifies and has not begun its read-back: sync the file
    /// and drop it from the cache, then read back, the file closed after the writes and
    /// opened again. Whether a read-back began.
    fn begin_verify(&mut self, now_ns: Nanos) -> bool {
        let Some(v) = self.verify.as_mut().filter(|v| !v.reading()) else { return false };
        v.begin(now_ns);
        if let Some(log) = self.issue_log.as_mut() {
            log.reopened(now_ns);
        }
        self.writes_ended_ns = Some(now_ns);
        if self.buffered.is_some() {
            // The sync first; the cache is dropped once it is done (next_verify_read).
            self.want_flush(FlushCall::Unaccounted);
        }
        true
    }

    /// fio's `check_get_verify` (`verify_backlog=N`): once the pieces kept for verifying reach
    /// a multiple of N after a write, read back `verify_backlog_batch` of them (N by default)
    /// before writing on.
    fn backlog_verify_read(&mut self) -> Option<Next> {
        if self.verify_backlog == 0 {
            return None;
        }
        let v = self.verify.as_mut()?;
        let kept = v.kept() as u64;
        if kept == 0 {
            return None;
        }
        if self.verify_batch_left == 0 {
            if !kept.is_multiple_of(self.verify_backlog) || self.last_issued_read {
                return None;
            }
            self.verify_batch_left = match self.verify_backlog_batch {
                0 => self.verify_backlog,
                n => n,
            };
        }
        let (offset_bytes, len_bytes) = v.take_next()?;
        self.verify_batch_left -= 1;
        // Issued, but not towards the job's size or number_ios: fio's io_issue_bytes_exceeded
        // leaves verify reads out.
        self.dir_bytes_issued[0] += len_bytes;
        self.dir_ios_issued[0] += 1;
        self.last_issued_read = true;
        Some(Next::Issue(Io::verify_read(offset_bytes, len_bytes)))
    }

    /// The next read of the verify phase: after a buffered job's sync has completed, the
    /// written pieces at the job's queue depth.
    fn next_verify_read(&mut self, now_ns: Nanos) -> Next {
        if self.flush_pending {
            self.flush_pending = false;
            self.verify_syncing = true;
            return Next::Issue(Io::flush(FlushCall::Unaccounted));
        }
        if self.verify_syncing {
            if self.in_flight > 0 {
                return Next::Full;
            }
            // Synced: the first read drops the file's cached pages (fio's
            // file_invalidate_cache, whatever `invalidate` says), so the reads reach the disk.
            self.verify_syncing = false;
            self.drop_cache = true;
        }
        if self.in_flight >= self.max_in_flight {
            return Next::Full;
        }
        match self.verify.as_mut().and_then(|v| v.next_piece()) {
            Some((offset_bytes, len_bytes)) => {
                self.count_issue(Op::Read, len_bytes);
                self.verify_phase_bytes += len_bytes;
                self.verify_phase_ios += 1;
                Next::Issue(Io::verify_read(offset_bytes, len_bytes))
            }
            None if self.verify_then_loop => {
                // A pass's read-back: once its reads are done, the next pass writes.
                if self.in_flight > 0 {
                    return Next::Full;
                }
                self.verify_then_loop = false;
                self.verify.as_mut().expect("verifying").end_pass();
                let w = self.writes_ended_ns.expect("a read-back began");
                self.earlier_writes_ns +=
                    w.saturating_sub(self.writes_began_ns.unwrap_or(self.ramp_end_ns));
                self.earlier_verifies_ns += now_ns.saturating_sub(w);
                self.writes_began_ns = Some(now_ns);
                if let Some(log) = self.issue_log.as_mut() {
                    log.reopened(now_ns);
                }
                self.next_loop();
                self.next_io(now_ns)
            }
            None => {
                self.state = State::Draining;
                Next::Stop
            }
        }
    }

    /// The runtime of direction `d`: with a verify phase, writes ran until it began and a
    /// job that only wrote read during it (fio's `update_runtime` per direction); else the
    /// job's runtime.
    pub fn dir_runtime_ns(&self, d: usize) -> Nanos {
        match (self.writes_ended_ns, d) {
            (Some(w), 0) if !self.rw.reads() => {
                self.earlier_verifies_ns + self.end_ns.saturating_sub(w)
            }
            (Some(w), 1) => {
                self.earlier_writes_ns
                    + w.saturating_sub(self.writes_began_ns.unwrap_or(self.ramp_end_ns))
            }
            _ => self.runtime_ns(),
        }
    }

    pub fn finish(&mut self, now_ns: Nanos) {
        self.state = State::Done;
        self.end_ns = now_ns;
        if let Some(logs) = self.logs.as_mut() {
            logs.finish(now_ns);
        }
    }

    /// How far a running process is, 0 to 1: the share of its runtime gone, or of its bytes
    /// issued, whichever is further.
    pub fn done_fraction(&self, now_ns: Nanos) -> f64 {
        let by_time = self.runtime_ns.map_or(0.0, |r| {
            now_ns.saturating_sub(self.ramp_end_ns.saturating_sub(self.ramp_ns)) as f64
                / (r + self.ramp_ns).max(1) as f64
        });
        if let Some(job) = self.job_limit_bytes {
            let by_bytes = self.job_bytes() as f64 / job.max(1) as f64;
            return by_time.max(by_bytes).min(1.0);
        }
        let by_bytes = self.io_limit_bytes.map_or(0.0, |l| {
            let l = l.max(1) as f64;
            let done = (self.loops_done as f64 * l + self.loop_bytes() as f64)
                .min((self.loops_done + 1) as f64 * l);
            done / ((self.loops_done + 1 + self.loops_left) as f64 * l)
        });
        by_time.max(by_bytes).min(1.0)
    }

    /// The measured runtime: from the end of the ramp to the end of the job.
    pub fn runtime_ns(&self) -> Nanos {
        self.end_ns.saturating_sub(self.ramp_end_ns)
    }

    /// The next step through the file tree, if the process has one; a time-based job, or one
    /// whose `io_size` is larger than its files, starts another pass when it has done them all.
    fn next_in_files(&mut self, attempt: &mut Attempt, bs: u64) -> Option<FileIo> {
        let d = attempt.dir;
        // Another pass for time-based jobs, and while io_size= is not yet moved (fio wraps).
        let more = self.io_limit_bytes.is_some_and(|l| self.loop_bytes() < l);
        let follows = self.loops_left > 0 || self.io_size_left() || self.below_job_limit();
        let files = self.files.as_mut()?;
        let (sizes, unaligned) = (&self.block_size[d], self.bs_unaligned);
        let fit = |left| sizes.fitting_as(left, unaligned);
        // A mixed job draws its direction again for each further file tried; any other keeps
        // its one.
        let (mixed, read_percent, issued) =
            (self.rw.is_mixed(), self.rwmixread_percent, self.dir_ios_issued);
        let rwmix = &mut self.rwmix;
        // `new_pass`: fio's clear_io_state came first (the generator starts over).
        let mut redraw = |new_pass: bool| {
            if mixed {
                if new_pass {
                    rwmix.new_pass();
                }
                rwmix.pick(read_percent, &issued)
            } else {
                d
            }
        };
        let mut io = files.next_in(attempt, &mut || redraw(false), bs, fit, follows, &mut self.rng);
        // A pass started here that moved no data gets no other: every file is too small for
        // a block (fio 3.33 loops for ever there under a non-uniform file choice).
        let moved = self.tree_rewound_at_bytes != Some(self.bytes_issued);
        if io == FileIo::Done && (self.time_based || self.runtime_ns.is_some() || more) && moved {
            // fio's thread_main: another do_io after clear_io_state closed the files (and,
            // where fio reseeds, seeded the generators again): the direction is drawn anew.
            self.tree_rewound_at_bytes = Some(self.bytes_issued);
            self.reopen_to_log = true;
            files.new_pass_draws();
            files.rewind();
            *attempt = Attempt::new(redraw(true));
            io = files.next_in(attempt, &mut || redraw(false), bs, fit, follows, &mut self.rng);
        }
        Some(io)
    }

    /// Whether an I/O of `op` holds a reference to its file of a tree while in flight: a
    /// direct job's data I/O (a buffered job's call returns before it chooses again, and a
    /// replayed log does not go through the tree).
    fn holds_tree_ref(&self, op: Op) -> bool {
        op != Op::Flush && self.buffered.is_none() && self.iolog.is_none()
    }

    /// The due sync goes to file `file` of the tree, whose turn it takes.
    fn sync_to(&mut self, file: usize) {
        self.log_file = file;
        self.tree_io = Some(TreeIo::Data(file));
    }

    /// Whether the sync due at a pass's end can go now: in a file tree it takes the turn of
    /// the file chosen next. Deviation: where that file would first have to be opened (or
    /// none can be), the sync waits for the next pass.
    fn end_of_pass_turn(&mut self) -> bool {
        let Some(files) = self.files.as_mut() else { return true };
        match files.sync_turn(&mut self.rng) {
            FileIo::Sync { file } => {
                self.sync_to(file);
                true
            }
            _ => false,
        }
    }

    /// A file tree whose data is all issued, with no pass after this one: fio's do_io stops
    /// at its bytes before it would ask for the sync due after the last write.
    fn tree_exhausted(&self) -> bool {
        let Some(files) = self.files.as_ref() else { return false };
        let more = self.io_limit_bytes.is_some_and(|l| self.loop_bytes() < l);
        !more
            && !self.below_job_limit()
            && !self.time_based
            && self.runtime_ns.is_none()
            && self.loops_left == 0
            && self.loop_bytes() >= files.total_bytes()
    }

    /// fio's do_io ends a pass with end_fsync's fsync when the job writes and its last
    /// I/O was no sync (should_fsync); a time-based job's offsets just start again.
    fn pass_end_fsync_due(&self) -> bool {
        self.should_fsync() && !self.time_based
    }

    /// fio's should_fsync for end_fsync: the job writes and its last I/O was no sync.
    fn should_fsync(&self) -> bool {
        // Data I/Os not reaped since the last sync are reaped as the pass ends, after it.
        self.end_fsync && (!self.last_was_flush || !self.unreaped.is_empty())
    }

    /// The job's largest block in any direction (fio's td_max_bs).
    fn max_block_bytes(&self) -> u64 {
        self.block_size.iter().map(BlockSize::max_bytes).max().unwrap_or(0)
    }

    /// fio's `io_bytes_exceeded`: the job has issued `io_size=` (or `number_ios=`) times
    /// `loops=`, counted over all its passes.
    fn job_limit_reached(&self) -> bool {
        self.job_ios_limit().is_some_and(|n| self.job_ios() >= n)
            || self.job_limit_bytes.is_some_and(|l| self.job_bytes() >= l)
    }

    /// The passes are bounded by `io_size=` (or `size=`) times `loops=` and the job has not
    /// issued that yet: fio's do_io goes on asking for I/O after the last pass's files are
    /// done (finding the sync due and each file done in turn) rather than stopping at its
    /// bytes.
    fn below_job_limit(&self) -> bool {
        self.job_limit_bytes.is_some() && !self.job_limit_reached()
    }

    /// Bytes and I/Os issued towards the job's limits: not the read-back of `verify=`'s
    /// phase (fio's td_io_queue leaves verify-list I/O out of io_issue_bytes).
    fn job_bytes(&self) -> u64 {
        self.bytes_issued - self.verify_phase_bytes
    }

    fn job_ios(&self) -> u64 {
        self.ios_issued - self.verify_phase_ios
    }

    /// `number_ios=` for all passes together (fio's `exceeds_number_ios`).
    fn job_ios_limit(&self) -> Option<u64> {
        self.number_ios.map(|n| n.saturating_mul(self.passes))
    }

    /// fio's `keep_running` once `loops=` is spent: another pass while the job has done
    /// less than its `io_size=` by at least its largest block.
    fn io_size_left(&self) -> bool {
        let max_bs = self.max_block_bytes().max(1);
        self.io_size_bytes.is_some_and(|s| s.saturating_sub(self.job_bytes()) >= max_bs)
    }

    /// Bytes and I/Os issued in this pass (`loops=`).
    fn loop_bytes(&self) -> u64 {
        self.bytes_issued - self.loop_start_bytes
    }

    fn loop_ios(&self) -> u64 {
        self.ios_issued - self.loop_start_ios
    }

    /// `loops=`: this pass is done and another remains; start it as fio's `clear_io_state`
    /// does: from the start of the region, an empty random map, the file opened again (so
    /// `invalidate` drops its pages again), `end_fsync`'s flush first.
    fn next_loop(&mut self) {
        if self.loops_left > 0 {
            self.loops_left -= 1;
            self.loops_done += 1;
        }
        self.pass_ended = false;
        if !self.time_based {
            // A sync engine's do_io asks for I/O once more after the pass's last (it counts
            // its bytes only for short I/Os): the draw finds the random map full and is spent
            // before the pass ends.
            let map_full = self.random_map.as_ref().is_some_and(RandomMap::is_full);
            if let Some(d) = self.fio_offsets.as_mut().filter(|_| self.sync_engine && map_full) {
                d.below(1);
            }
            // clear_io_state: rwmix_issues back to 0, and where fio reseeds (randrepeat,
            // no randseed) the generators seeded again (td_fill_rand_seeds).
            self.rwmix.new_pass();
            if let Some(files) = self.files.as_mut() {
                files.new_pass_draws();
            }
            if let Some(d) = self.fio_offsets.as_mut() {
                d.new_pass();
            }
        }
        if let Some(seq) = self.sequencer.as_mut() {
            seq.last_start = [None; 3];
        }
        self.loop_start_bytes = self.bytes_issued;
        self.loop_start_ios = self.ios_issued;
        self.next_seq_offset = [self.next_pass_start(); 3];
        if let Some(map) = self.random_map.as_mut() {
            map.reset();
        }
        if let Some(files) = self.files.as_mut() {
            files.rewind();
        }
        self.wrapped = true;
        if self.sync_engine && self.pass_end_fsync_due() {
            if self.files.is_some() {
                // Every file of the tree, each opened for its sync if fio closed it.
                self.end_syncs_owed = self.file_count();
            } else {
                self.want_flush(FlushCall::Unaccounted);
                // A pass that ran out of offsets closed its file first: fio's end_fsync
                // opens it for the sync, closes it, and the next pass opens it again.
                self.reopen_after_flush = true;
            }
        }
        if !self.time_based {
            // clear_io_state's reset_io_counters clears last_was_sync: the sync due since the
            // last write comes again first (a time-based job's offsets just start again, with
            // no clear_io_state).
            self.last_reaped_sync = false;
        }
    }

    /// This pass has done its bytes or I/Os.
    fn limit_reached(&self) -> bool {
        if self.pass_ended || self.job_limit_reached() {
            return true;
        }
        match self.io_limit_bytes {
            Some(limit) => self.loop_bytes() >= limit,
            // A sync engine's pass under loops= ends where its offsets run out or at the
            // job's limit (fio's do_io counts only queued I/O against size=).
            None if self.job_limit_bytes.is_some() => false,
            // A replayed log ends with the log, however often it rereads its blocks.
            None => self.pass_is_region() && self.loop_bytes() >= self.region.len_bytes,
        }
    }

    fn pick_direction(&mut self) -> Op {
        match self.rw {
            RwMode::Read | RwMode::RandRead => Op::Read,
            RwMode::Write | RwMode::RandWrite => Op::Write,
            RwMode::Trim | RwMode::RandTrim => Op::Discard,
            RwMode::ReadWrite | RwMode::RandRw => {
                DIRECTIONS[self.rwmix.pick(self.rwmixread_percent, &self.dir_ios_issued)]
            }
        }
    }

    /// The generator of a mixed job's directions (fio's `rwmix_state`), its draws from the
    /// start.
    pub fn seed_rwmix(&mut self, draws: elevator_fio::rand::Draws) {
        self.rwmix = RwMix::new(draws);
    }

    /// The earliest time the rate limits allow another I/O in direction `d`, if later than now.
    fn rate_wait(&self, d: usize, now_ns: Nanos) -> Option<Nanos> {
        if let (Some(due), Some(_)) = (self.poisson_due_ns, self.poisson_mean_gap_ns(d)) {
            let at = self.start_ns.saturating_add(due[d]);
            return (at > now_ns).then_some(at);
        }
        let mut at = now_ns;
        if let Some(rate) = self.rate_bytes_per_sec[d].filter(|&r| r > 0) {
            let t = self.start_ns
                + (self.dir_bytes_issued[d] as u128 * NS_PER_SEC as u128 / rate as u128) as Nanos;
            at = at.max(t);
        }
        if let Some(iops) = self.rate_iops[d].filter(|&r| r > 0) {
            let t = self.start_ns
                + (self.dir_ios_issued[d] as u128 * NS_PER_SEC as u128 / iops as u128) as Nanos;
            at = at.max(t);
        }
        (at > now_ns).then_some(at)
    }

    /// fio 3.33's get_next_buflen: a size drawn (`bsrange=`: min + max × a uniform draw in
    /// [0, 1); `bssplit=`: by the percentages), aligned down to the direction's smallest
    /// size unless `bs_unaligned`, at most its largest. So 4k-10k gives 4k and 8k 40 %
    /// each and 10k 20 %, and `bssplit=4k/50:6k/50` only 4k (fio aligns 6k down).
    fn pick_block_size(&mut self, d: usize) -> u64 {
        let sizes = &self.block_size[d];
        let (min, max) = (sizes.min_bytes(), sizes.max_bytes());
        let drawn = match sizes {
            BlockSize::Fixed { bytes } => return *bytes,
            BlockSize::Range { min_bytes, max_bytes } => min_bytes + self.rng.below(*max_bytes),
            BlockSize::Split { parts } => {
                let total: u64 = parts.iter().map(|&(_, p)| p as u64).sum();
                let mut roll = self.rng.below(total.max(1));
                let mut chosen = parts.last().map_or(4096, |&(b, _)| b);
                for &(bytes, percent) in parts {
                    if roll < percent as u64 {
                        chosen = bytes;
                        break;
                    }
                    roll -= percent as u64;
                }
                chosen
            }
        };
        let aligned = if self.bs_unaligned || min == 0 { drawn } else { drawn - drawn % min };
        aligned.min(max)
    }

    /// A random offset's alignment and how many aligned places an I/O of `len` has.
    fn random_slots(&self, d: usize, len: u64) -> (u64, u64) {
        let align = direction_alignment(self.block_align[d], &self.block_size[d]);
        (align, (self.random_span_bytes() - len) / align + 1)
    }

    /// The next I/O's offset in direction `d` and its length (`len`, unless the random map
    /// cuts it to the free blocks at that offset); `None` when fio would find no offset and
    /// end the pass (only with `rw=...:N`, see [`Process::pick_offset_sequenced`]).
    fn pick_offset(&mut self, d: usize, len: u64) -> Option<(u64, u64)> {
        if self.sequencer.is_some() {
            return self.pick_offset_sequenced(d, len);
        }
        if self.zones.is_some() {
            return self.pick_offset_strided(d, len);
        }
        // percentage_random: fio's should_do_random draws only when it is under 100; the
        // others go on sequentially from the end of the last I/O, outside the random map
        // (IO_U_F_BUSY_OK).
        if self.rw.is_random() && self.should_do_random(d) {
            // A full random map: fio finds no offset and the file is done, and so is a pass
            // that is its region (a sync engine's under loops=, which size= does not cut).
            // So is a job moving io_size= past its region with less than its largest block
            // left: fio's keep_running starts no other pass (as for a sequential job below).
            let map_full = self.random_map.as_ref().is_some_and(RandomMap::is_full);
            if map_full && (self.pass_is_region() || self.io_size_spent_for_a_pass()) {
                return None;
            }
            // A block larger than the region: the largest that fits, if any does.
            let len = if len <= self.region.len_bytes {
                len
            } else {
                self.block_size[d].fitting_as(self.region.len_bytes, self.bs_unaligned)?
            };
            return Some(self.random_offset(d, len));
        }
        let start = self.region.start_bytes;
        let end = start + self.region.len_bytes;
        let mut offset = self.next_seq_offset[d];
        let mut len = len;
        if offset + len > end {
            // fio's fill_io_u: a block past the end of the file is not issued; a smaller one
            // that fits is, else the file is done. A job whose pass is its region ends the
            // pass there; a time-based one, or one moving io_size= or replaying a log, starts
            // the next pass at the region's start.
            match self.block_size[d].fitting_as(end.saturating_sub(offset), self.bs_unaligned) {
                Some(fits) => len = fits,
                None if self.pass_is_region() => return None,
                // fio's keep_running: no other pass for less than the largest block left.
                None if self.io_size_spent_for_a_pass() => return None,
                None => {
                    // keep_running's next pass, whose start fio may find elsewhere.
                    offset = self.next_pass_start();
                    self.wrapped = true;
                    // A time-based job's offsets just start again, unless its start moved:
                    // its region then reaches past the file, whose end closes it first.
                    self.reopen_to_log = !self.time_based || self.later_pass_start.is_some();
                }
            }
        }
        self.next_seq_offset[d] = offset + len;
        Some((offset, len))
    }

    /// Where the next pass starts (route offset): the region moves to where fio's
    /// clear_io_state finds the start then ([`Process::later_pass_start`]).
    fn next_pass_start(&mut self) -> u64 {
        if let Some(start) = self.later_pass_start {
            self.region.start_bytes = start;
        }
        self.region.start_bytes
    }

    /// fio's keep_running: no other pass for less than the largest block left of the job's
    /// `io_size=`.
    fn io_size_spent_for_a_pass(&self) -> bool {
        self.io_limit_bytes
            .is_some_and(|l| l.saturating_sub(self.loop_bytes()) < self.max_block_bytes())
    }

    /// A pass is the region once over: no run time, `io_size=` past the region or log to
    /// go on for (fio's keep_running).
    fn pass_is_region(&self) -> bool {
        self.io_limit_bytes.is_none_or(|l| l <= self.region.len_bytes)
            && self.iolog.is_none()
            && !self.time_based
            && self.runtime_ns.is_none()
    }

    /// fio's `should_do_random`: whether a random job's I/O in direction `d` goes to a random
    /// offset (`percentage_random`; a draw only under 100).
    fn should_do_random(&mut self, d: usize) -> bool {
        self.percentage_random[d] >= 100
            || self.rng.below(100) < u64::from(self.percentage_random[d])
    }

    /// A random offset in direction `d` for an I/O of `len` (cut by the random map).
    fn random_offset(&mut self, d: usize, len: u64) -> (u64, u64) {
        let (rel, len, new_pass) = self.random_rel(d, len);
        // A new pass reopens the file, as a sequential job's wrap does (fio's keep_running
        // runs another do_io after clear_io_state; a time-based job's offsets just start
        // again).
        self.wrapped |= new_pass;
        self.reopen_to_log |= new_pass && !self.time_based;
        let offset = self.region.start_bytes + rel;
        self.next_seq_offset[d] = offset + len;
        (offset, len)
    }

    /// A random place for an I/O of `len` in direction `d`, relative to the extent it is
    /// drawn in ([`Process::random_span_bytes`]), with its length (cut by the random map)
    /// and whether the map was full and started a new pass.
    fn random_rel(&mut self, d: usize, len: u64) -> (u64, u64, bool) {
        let (align, slots) = self.random_slots(d, len);
        let draw = |p: &mut Process| match (p.offset_distribution.as_mut(), p.fio_offsets.as_mut())
        {
            (Some(dist), _) => dist.next_slot(d, slots, align, &mut p.rng),
            (None, Some(fio)) => fio.below(slots),
            (None, None) => p.rng.below(slots),
        };
        let slot = draw(self);
        if self.fio_offsets.is_some() && self.random_map.as_ref().is_some_and(RandomMap::is_full) {
            // fio's draw found no free block. A time-based job's file is reset and fio draws
            // again (get_next_rand_block); any other's pass is over, and the next begins
            // after clear_io_state, which seeds the generator again where fio reseeds.
            self.random_map.as_mut().expect("a map").reset();
            if !self.time_based {
                self.fio_offsets.as_mut().expect("fio's draws").new_pass();
            }
            let slot = draw(self);
            let (rel, len, _) = self.random_map.as_mut().expect("a map").take(slot * align, len);
            return (rel, len, true);
        }
        match self.random_map.as_mut() {
            None => (slot * align, len, false),
            Some(map) => map.take(slot * align, len),
        }
    }

    /// fio 3.33's `get_next_offset` with `rw=...:N` (`get_next_block`, `fill_io_u`): a random
    /// job takes a random offset every N-th I/O (the first among them) and in between goes
    /// on from the last I/O (or repeats its offset, `rw_sequencer=identical`), drawing one
    /// at random when the file's end stops it; a sequential job leaves holes of SIZE (or
    /// steps back). `None` where fio finds no offset: past `size` or the file's end, fio
    /// closes the file and the pass ends.
    fn pick_offset_sequenced(&mut self, d: usize, len: u64) -> Option<(u64, u64)> {
        let seq = self.sequencer.as_mut().expect("a sequencer");
        // fio: `if (o->ddir_seq_nr && !--td->ddir_seq_nr)`; a count of 0 never hits.
        let hit = seq.nr != 0 && {
            seq.nr_left -= 1;
            seq.nr_left == 0
        };
        if hit {
            seq.nr_left = seq.nr;
        }
        let identical = seq.identical;
        let (base, file_bytes) = (seq.file_base, seq.file_bytes);
        let file_offset = self.region.start_bytes - base;
        let io_size = self.region.len_bytes;
        // Where in the file, counted from `file_offset` as fio counts (`None`: at random).
        let pos = if hit {
            if !self.rw.is_random() {
                Some(self.next_seq_pos(d)?)
            } else if self.should_do_random(d) {
                None
            } else {
                self.next_seq_pos(d)
            }
        } else if identical {
            let last = self.sequencer.as_ref().expect("a sequencer").last_start[d];
            Some(last.map_or(0, |s| s.wrapping_sub(file_offset)))
        } else {
            self.next_seq_pos(d)
        };
        let (at, len) = match pos {
            None => {
                let (offset, len) = self.random_offset(d, len);
                (offset - base, len)
            }
            Some(p) => {
                if p >= io_size {
                    return None;
                }
                (p + file_offset, len)
            }
        };
        if at.saturating_add(len) > file_bytes {
            return None;
        }
        self.sequencer.as_mut().expect("a sequencer").last_start[d] = Some(at);
        self.next_seq_offset[d] = base + at + len;
        Some((base + at, len))
    }

    /// fio 3.33's `get_next_seq_offset` for direction `d`, with its arithmetic: the position
    /// after the last I/O, less `file_offset`, plus the `rw=` step, wrapping at the file's
    /// size; `None` once the last I/O reached the file's end.
    fn next_seq_pos(&mut self, d: usize) -> Option<u64> {
        let seq = self.sequencer.as_ref().expect("a sequencer");
        let (base, file_bytes, add) = (seq.file_base, seq.file_bytes, seq.add_bytes);
        let file_offset = self.region.start_bytes - base;
        let io_size = self.region.len_bytes;
        let mut last = self.next_seq_offset[d] - base;
        // A time-based job starts over at the end (and drops the file's cached pages).
        if last >= io_size + file_offset && self.time_based {
            last = file_offset;
            self.wrapped = true;
        }
        if last >= file_bytes {
            self.next_seq_offset[d] = base + last;
            return None;
        }
        let end = io_size.min(file_bytes);
        // Only rewind if we already hit the end (fio's comment).
        if last == file_offset && file_offset != 0 && add < 0 {
            last = end;
        }
        self.next_seq_offset[d] = base + last;
        let mut pos = last.wrapping_sub(file_offset);
        if pos != 0 && add != 0 {
            pos = pos.wrapping_add(add as u64);
            if pos >= file_bytes {
                pos = if add > 0 { file_offset } else { end.wrapping_add(add as u64) };
            }
        }
        Some(pos)
    }

    /// The passes after the first start at `start` (route offset) in a file that ends at
    /// `file_end` ([`Process::later_pass_start`]).
    pub fn set_later_pass_start(&mut self, start: u64, file_end: u64) {
        self.later_pass_start = Some(start);
        self.file_end_bytes = file_end;
    }

    /// Where the job's file lies: byte 0 at route offset `base_bytes`, `len_bytes` long (for
    /// `rw=...:N`, whose arithmetic counts in the file).
    pub fn set_file_extent(&mut self, base_bytes: u64, len_bytes: u64) {
        if let Some(seq) = self.sequencer.as_mut() {
            seq.file_base = base_bytes;
            seq.file_bytes = len_bytes;
        }
        if let Some(z) = self.zones.as_mut() {
            z.file_end = base_bytes + len_bytes;
        }
    }

    /// The extent a random offset is drawn in: the zone under `zonemode=strided`, else the
    /// region.
    pub fn random_span_bytes(&self) -> u64 {
        self.zones.map_or(self.region.len_bytes, |z| z.spec.range_bytes)
    }

    /// Under `zonemode=strided`: fio 3.33's `setup_strided_zone_mode` before each offset
    /// (after `zonesize` bytes in a zone move on `zonerange + zoneskip`, back to the job's
    /// start past the file's end; a sequential position past the zone goes back to its
    /// start; every `zonerange` bytes the file is reset: positions to the zone's start, the
    /// random map emptied), then `get_next_offset` within the zone: a random offset in the
    /// zone, or on from the last I/O; `None` where fio finds none (past `io_size` from the
    /// zone's start, or the file's end) and the pass ends.
    fn pick_offset_strided(&mut self, d: usize, len: u64) -> Option<(u64, u64)> {
        let origin = self.region.start_bytes;
        let z = self.zones.as_mut().expect("strided zones");
        if z.done_bytes >= z.spec.size_bytes {
            z.done_bytes = 0;
            z.start += z.spec.range_bytes + z.spec.skip_bytes;
            if z.start >= z.file_end {
                z.start = origin;
            }
            self.next_seq_offset[d] = z.start;
        }
        let ZoneState { spec, done_bytes, start, file_end } = *z;
        if self.next_seq_offset[d] >= start + spec.range_bytes {
            self.next_seq_offset[d] = start;
        }
        if done_bytes % spec.range_bytes == 0 {
            // fio_file_reset.
            self.next_seq_offset = [start; 3];
            if let Some(map) = self.random_map.as_mut() {
                map.reset();
            }
        }
        let io_size = self.region.len_bytes;
        let (rel, len) = if self.rw.is_random() && self.should_do_random(d) {
            if len > spec.range_bytes {
                return None;
            }
            let (rel, len, _) = self.random_rel(d, len);
            (rel, len)
        } else {
            let mut last = self.next_seq_offset[d];
            if last >= io_size + origin && self.time_based {
                last = start;
            }
            if last >= file_end {
                return None;
            }
            (last - start, len)
        };
        let offset = start + rel;
        if rel >= io_size || offset.saturating_add(len) > file_end {
            return None;
        }
        self.zones.as_mut().expect("strided zones").done_bytes += len;
        self.next_seq_offset[d] = offset + len;
        Some((offset, len))
    }
}

/// Where a `zonemode=strided` job is.
#[derive(Clone, Copy, Debug)]
struct ZoneState {
    spec: StridedZones,
    /// Bytes issued in this zone (fio's `td->zone_bytes`).
    done_bytes: u64,
    /// The zone's first byte, a route address (fio moves the file's `file_offset`).
    start: u64,
    /// The end of the job's file (its `real_file_size`), a route address.
    file_end: u64,
}

/// Empty statistics for the three directions of a job, from time 0: sampling rates as the
/// job says (`bwavgtime`, `iopsavgtime`, its logs), with a histogram of total latencies when
/// it reports their percentiles.
fn fresh_stats(spec: &JobSpec) -> [DirStats; 3] {
    let (bw, iops) = (spec.logs.bw_sampling(), spec.logs.iops_sampling());
    let mut stats = std::array::from_fn(|_| DirStats::sampled(0, bw, iops));
    if spec.lat_percentiles {
        stats.iter_mut().for_each(DirStats::keep_lat_histogram);
    }
    stats
}

/// A random offset's alignment for a block size: its smallest block, at least a sector.
fn random_alignment(bs: &BlockSize) -> u64 {
    bs.min_bytes().max(512)
}

/// A direction's random alignment (fio's `ba[ddir]`): `blockalign=` if given, else
/// [`random_alignment`].
fn direction_alignment(block_align: Option<u64>, bs: &BlockSize) -> u64 {
    block_align.unwrap_or_else(|| random_alignment(bs))
}
