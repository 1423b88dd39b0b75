//! The parsed form of a job: every option the simulator models, resolved to numbers in the
//! units in its field name.

use elevator_core::Nanos;

/// fio's `rw_sequencer=`: where the I/Os of `rw=randread:N` between two random offsets go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwSequencer {
    /// On from where the last I/O in that direction ended (the default).
    Sequential,
    /// The last I/O's offset again.
    Identical,
}

/// fio's `unified_rw_reporting=`: how a job's directions are reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnifiedRw {
    /// `none` / `0`: read, write and trim apart (the default).
    Split,
    /// `mixed` / `1`: all directions summed, as one `mixed` direction.
    Mixed,
    /// `both` / `2`: apart, and summed besides.
    Both,
}

/// fio's `sync_file_range=`: which of `SYNC_FILE_RANGE_WAIT_BEFORE`, `_WRITE` and
/// `_WAIT_AFTER`, every how many writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncFileRange {
    pub wait_before: bool,
    pub write: bool,
    pub wait_after: bool,
    /// After every this many writes (fio's `sync_file_range_nr`; 0: never).
    pub every: u32,
}

/// fio's steady-state detection (`steadystate=`, `steadystate_duration=`,
/// `steadystate_ramp_time=`): once a second fio samples the job's (or its reporting group's)
/// IOPS and bandwidth, and when the last `duration_s` samples meet the criterion the job
/// stops, as if its runtime were over.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SteadyState {
    /// Judge IOPS (`iops`, `iops_slope`) rather than bandwidth in bytes/s (`bw`, `bw_slope`).
    pub iops: bool,
    /// Judge the least-squares slope of the window (`*_slope`) rather than its largest
    /// deviation from its mean.
    pub slope: bool,
    /// The limit is a percentage of the window's mean (`iops:2%`), not an absolute value.
    pub percent: bool,
    pub limit: f64,
    /// `steadystate_duration=` in whole seconds (fio keeps `ss_dur / 1000000`); 0: off.
    pub duration_s: u64,
    /// `steadystate_ramp_time=`: sampling starts a second after this much of the job.
    pub ramp_ns: Nanos,
}

impl SteadyState {
    /// fio's default criterion, `iops_slope:0.01%`, off until a duration is given.
    pub const DEFAULT: SteadyState = SteadyState {
        iops: true,
        slope: true,
        percent: true,
        limit: 0.01,
        duration_s: 0,
        ramp_ns: 0,
    };

    pub fn enabled(&self) -> bool {
        self.duration_s > 0
    }
}

/// fio's `zonemode=strided` (`setup_strided_zone_mode`): the job's I/O stays in a zone of
/// `range_bytes` from the zone's start until it has moved `size_bytes` there, then goes on
/// at the next zone, `range_bytes + skip_bytes` further on (back to the job's start past the
/// end of the file). Random offsets are drawn within the zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StridedZones {
    /// `zonesize=`: bytes of I/O per zone.
    pub size_bytes: u64,
    /// `zonerange=` (default `zonesize=`): the zone's extent.
    pub range_bytes: u64,
    /// `zoneskip=`: bytes between one zone's end and the next one's start.
    pub skip_bytes: u64,
}

/// The longest `ioscheduler=` name: the kernel's `ELV_NAME_MAX` (16), which no scheduler
/// name reaches.
pub const MAX_IOSCHEDULER_NAME_BYTES: usize = 16;

/// The longest `steadystate_duration=`: a day of one-second samples (fio keeps two arrays
/// of that many; elevator as well).
pub const MAX_SS_DURATION_S: u64 = 86_400;

/// Data direction and pattern, fio's `rw=` (alias `readwrite=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwMode {
    /// `read`: sequential reads.
    Read,
    /// `write`: sequential writes.
    Write,
    /// `trim`: sequential trims.
    Trim,
    /// `randread`.
    RandRead,
    /// `randwrite`.
    RandWrite,
    /// `randtrim`.
    RandTrim,
    /// `rw`, `readwrite`: sequential mixed reads and writes (share set by `rwmixread`).
    ReadWrite,
    /// `randrw`: random mixed reads and writes.
    RandRw,
}

impl RwMode {
    pub fn is_random(self) -> bool {
        matches!(self, RwMode::RandRead | RwMode::RandWrite | RwMode::RandTrim | RwMode::RandRw)
    }

    /// Whether the job mixes reads and writes (`readwrite`, `randrw`).
    pub fn is_mixed(self) -> bool {
        matches!(self, RwMode::ReadWrite | RwMode::RandRw)
    }

    /// Whether the job reads (alone or mixed with writes).
    pub fn reads(self) -> bool {
        matches!(self, RwMode::Read | RwMode::RandRead | RwMode::ReadWrite | RwMode::RandRw)
    }

    /// Whether the job writes (alone or mixed with reads).
    pub fn writes(self) -> bool {
        matches!(self, RwMode::Write | RwMode::RandWrite | RwMode::ReadWrite | RwMode::RandRw)
    }
}

/// Block sizes for one direction: `bs=`, `bsrange=` or `bssplit=`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockSize {
    Fixed {
        bytes: u64,
    },
    /// `bsrange=min-max`: multiples of `min` as fio draws them (bs_unaligned=0), and `max`.
    Range {
        min_bytes: u64,
        max_bytes: u64,
    },
    /// `bssplit=4k/10:64k/90`: block size and percentage, percentages summing to 100.
    Split {
        parts: Vec<(u64, u32)>,
    },
}

impl BlockSize {
    /// The smallest block this direction issues.
    pub fn min_bytes(&self) -> u64 {
        match self {
            BlockSize::Fixed { bytes } => *bytes,
            BlockSize::Range { min_bytes, .. } => *min_bytes,
            BlockSize::Split { parts } => parts.iter().map(|p| p.0).min().unwrap_or(0),
        }
    }

    /// The largest block this direction issues.
    pub fn max_bytes(&self) -> u64 {
        match self {
            BlockSize::Fixed { bytes } => *bytes,
            BlockSize::Range { max_bytes, .. } => *max_bytes,
            BlockSize::Split { parts } => parts.iter().map(|p| p.0).max().unwrap_or(0),
        }
    }

    /// The block to take where only `left` bytes remain before the end of the file and the
    /// drawn block does not fit: fio (`get_next_buflen`, `fill_io_u`) gives the file up when
    /// not even the smallest block fits, and otherwise draws again until a block does.
    /// Deviation: this takes the largest block that fits rather than drawing among them.
    pub fn fitting(&self, left: u64) -> Option<u64> {
        self.fitting_as(left, false)
    }

    /// [`BlockSize::fitting`], the drawn sizes not aligned down to the smallest when
    /// `unaligned` (`bs_unaligned`): the largest that fits is then `left` itself, up to the
    /// largest size.
    pub fn fitting_as(&self, left: u64, unaligned: bool) -> Option<u64> {
        if unaligned && !matches!(self, BlockSize::Fixed { .. }) {
            let (min, max) = (self.min_bytes(), self.max_bytes());
            return (min > 0 && left >= min).then(|| left.min(max));
        }
        match self {
            BlockSize::Fixed { bytes } => (*bytes <= left).then_some(*bytes),
            BlockSize::Range { min_bytes, max_bytes } => (*min_bytes > 0 && left >= *min_bytes)
                .then(|| left.min(*max_bytes) / min_bytes * min_bytes),
            BlockSize::Split { parts } => {
                parts.iter().filter(|&&(b, p)| p > 0 && b <= left).map(|&(b, _)| b).max()
            }
        }
    }
}

/// `ioengine=`. Only what decides queueing behaviour matters to the simulation: every engine
/// fio knows is one of the named ones or [`IoEngine::Other`] with its class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoEngine {
    /// `sync`: read(2)/write(2) with lseek; one I/O in flight.
    Sync,
    /// `psync`: pread(2)/pwrite(2); one I/O in flight. fio's default.
    Psync,
    /// `vsync`, `pvsync`, `pvsync2`: one I/O in flight.
    Pvsync,
    /// `libaio`: up to `iodepth` in flight.
    Libaio,
    /// `io_uring`: up to `iodepth` in flight.
    IoUring,
    /// Any other engine fio has, by what it means to the block layer.
    Other { name: &'static str, class: EngineClass },
}

/// What an engine means to the block layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineClass {
    /// One I/O in flight per job (sg, mmap, splice, libzbc, the file-operation engines, ...).
    Sync,
    /// Up to `iodepth` in flight (io_uring_cmd, posixaio, xnvme, libblkio, ...).
    Async,
    /// No device: `null` and the engines that do no block I/O (cpuio, exec, page_fault).
    Null,
}

impl IoEngine {
    /// Synchronous engines keep exactly one request in flight whatever `iodepth` says. Of
    /// the engines without a device only `null` (and its C++ twin) queue; cpuio, exec and
    /// page_fault are `FIO_SYNCIO`. See [`JobSpec::engine_is_async`] for `null` at depth 1.
    pub fn is_async(self) -> bool {
        match self {
            IoEngine::Libaio | IoEngine::IoUring => true,
            IoEngine::Other { class: EngineClass::Async, .. } => true,
            IoEngine::Other { class: EngineClass::Null, .. } => self.is_fio_null(),
            _ => false,
        }
    }

    /// fio's `null` engine (or its C++ twin): of the engines without a device, the only
    /// one that queues, and only past `iodepth=1`.
    fn is_fio_null(self) -> bool {
        matches!(self, IoEngine::Other { name: "null" | "cpp_null", .. })
    }

    /// An async engine that runs a sync in the submitting thread, waiting for it: fio's
    /// libaio (`fio_libaio_queue` hands a sync to `do_io_u_sync`), where io_uring queues it.
    pub fn runs_syncs_inline(self) -> bool {
        matches!(self, IoEngine::Libaio)
    }

    /// An async engine whose requests to one file run one at a time: fio's posixaio, whose
    /// glibc AIO queues a request behind the one running on its descriptor
    /// (`__aio_enqueue_request`).
    pub fn serializes_per_file(self) -> bool {
        matches!(self, IoEngine::Other { name: "posixaio", .. })
    }

    /// `null` and the engines without block I/O: their I/Os complete without a device.
    pub fn is_null(self) -> bool {
        matches!(self, IoEngine::Other { class: EngineClass::Null, .. })
    }

    /// fio's name for the engine.
    pub fn name(self) -> &'static str {
        match self {
            IoEngine::Sync => "sync",
            IoEngine::Psync => "psync",
            IoEngine::Pvsync => "pvsync",
            IoEngine::Libaio => "libaio",
            IoEngine::IoUring => "io_uring",
            IoEngine::Other { name, .. } => name,
        }
    }
}

/// A quantity that may be absolute or a percentage of the target (`size=50%`, `offset=10%`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Amount {
    Bytes(u64),
    Percent(f64),
}

/// `file_service_type=`.
#[derive(Clone, Debug, PartialEq)]
pub enum FileServiceType {
    Random,
    RoundRobin,
    Sequential,
    /// `zipf:THETA` (1.1 by default), `pareto:H` (0.2), `normal` or `gauss:DEV` (0): each
    /// file drawn from fio's non-uniform generator over `nrfiles << 10` ranges, a range's file
    /// being its number `>> 10` (`__get_next_fileno_rand`).
    Distribution(crate::RandomDistribution),
}

/// fio's default `percentile_list`.
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// `rate_process=`: how a rated job spaces its I/Os.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateProcess {
    /// Each I/O when the bytes (or I/Os) so far are due at the rate: evenly spaced.
    Linear,
    /// Exponentially distributed gaps with the rate's mean: a Poisson arrival process.
    Poisson,
}

/// One job section, after `[global]` and `numjobs` are applied (clones are *not* expanded:
/// the simulator creates `numjobs` processes from one spec).
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    /// The section name (or `name=` if given).
    pub name: String,
    /// Where the section started, for messages: file path and 1-based line.
    pub source: SourceLocation,
    /// The options written in this job's own section, in order, after `${VAR}` expansion, as
    /// fio's JSON "job options" object shows them.
    pub options: Vec<(String, String)>,
    pub rw: RwMode,
    /// `rwmixread=` percent of reads for mixed modes (default 50); `rwmixwrite=` sets 100 - it.
    pub rwmixread_percent: u32,
    /// Block sizes for reads, writes and trims (`bs=4k,8k,4k`; one value applies to all).
    pub block_size: [BlockSize; 3],
    /// `size=`: bytes of the target this job covers; `None` means the whole target.
    pub size: Option<Amount>,
    /// `offset=`: where the covered region starts.
    pub offset: Amount,
    /// `offset_increment=`: clone `k` of the job (`numjobs`) starts `k` times this further on
    /// (fio's `offset + offset_increment * subjob_number`).
    pub offset_increment: Amount,
    /// `offset_align=`: what an offset computed from a percentage is rounded up to (`None`,
    /// or 0 given: the job's smallest block size).
    pub offset_align: Option<u64>,
    /// `filename=`: a device or partition name of the topology; `None` = the default device.
    pub filename: Option<String>,
    /// `directory=`: where the job's own files live when it has no `filename=`. In elevator a
    /// device, partition or volume of the topology stands for the file system mounted on it;
    /// `None` = the default (first) device.
    pub directory: Option<String>,
    /// `direct=1` (or `buffered=0`).
    pub direct: bool,
    pub ioengine: IoEngine,
    /// `iodepth=` (default 1).
    pub iodepth: u32,
    /// `iodepth_batch_submit=` / `iodepth_batch=` (default 1).
    pub iodepth_batch: u32,
    /// `ba=` / `blockalign=` per direction: where random offsets may start; `None` is the
    /// direction's smallest block (fio's default). Random jobs only; set, it turns the random
    /// map off.
    pub block_align: [Option<u64>; 3],
    /// `bs_unaligned`: a drawn block size (`bsrange=`, `bssplit=`) is not aligned down to
    /// the direction's smallest (fio's get_next_buflen).
    pub bs_unaligned: bool,
    /// `random_generator=lfsr`: random offsets never repeat a block in a pass, map or not
    /// (fio's linear feedback shift register; `tausworthe` draws with replacement unless the
    /// random map keeps track).
    pub lfsr: bool,
    /// `zonemode=strided`: the job's I/O keeps to zones (`zonesize=`, `zonerange=`,
    /// `zoneskip=`).
    pub zones: Option<StridedZones>,
    /// `percentage_random=` per direction (read, write, trim): of a random job's I/Os, the
    /// percentage at random offsets; the others go on from where the last one ended
    /// (default 100).
    pub percentage_random: [u32; 3],
    /// `rw=randread:N` (fio's `ddir_seq_nr`): a random job draws a new offset only every
    /// N-th I/O; in between it goes on as `rw_sequencer` says (default 1: every I/O; 0:
    /// never, as fio 3.33 reads `:0`).
    pub rw_seq_nr: u32,
    /// `rw=read:SIZE` (fio's `ddir_seq_add`): a sequential job skips SIZE bytes (steps back,
    /// if negative) after each I/O (default 0).
    pub rw_seq_add_bytes: i64,
    /// `rw_sequencer=`: what the I/Os between two random offsets of `rw=randread:N` do.
    pub rw_sequencer: RwSequencer,
    /// `random_distribution=`: how random offsets are drawn (uniform by default).
    pub random_distribution: crate::RandomDistribution,
    /// `iodepth_low=`: once the queue is full, let it drain to this depth before filling it
    /// again (0, the default, or more than `iodepth`: keep it full, as fio's fixup_options).
    pub iodepth_low: u32,
    /// `verify=` (anything but `0`): a job that writes reads its data back when the writes
    /// are done (`do_verify`, default on), as fio's verify phase.
    pub verify: bool,
    pub do_verify: bool,
    /// `verify_backlog=N`: verify while writing, once every N writes kept for verifying
    /// (0: only after the writes); `verify_backlog_batch=`: how many of them each time (0:
    /// N).
    pub verify_backlog: u64,
    pub verify_backlog_batch: u64,
    /// `verify_only=1`: a writing job does not write; it goes through its writes without
    /// I/O and reads back what they would have written (fio's `do_dry_run`).
    pub verify_only: bool,
    /// `write_iolog=`: a fio version 3 I/O log of what the job issued, appended to this file
    /// (as fio opens it) when the run ends.
    pub write_iolog: Option<String>,
    /// `percentile_list=`: the latency percentiles reported, sorted (fio's default list
    /// unless set), and the decimals the text report shows them with.
    pub percentile_list: Vec<f64>,
    pub percentile_precision: u32,
    /// `clat_percentiles=` (default on) and `lat_percentiles=` (default off): whether
    /// completion and total latency percentiles are reported.
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    /// `iodepth_batch_complete_min=` (`iodepth_batch_complete=`): a full queue waits for at
    /// least this many completions before it is filled again (default 1; 0 counts as 1 for
    /// a full queue, as fio's wait_for_completions).
    pub iodepth_batch_complete_min: u32,
    /// `numjobs=` (default 1).
    pub numjobs: u32,
    /// `runtime=` (fio's unit: seconds), `None` if unlimited.
    pub runtime_ns: Option<Nanos>,
    pub time_based: bool,
    /// `ramp_time=`: I/O in this first span is not counted.
    pub ramp_time_ns: Nanos,
    /// `startdelay=`.
    pub startdelay_ns: Nanos,
    /// `thinktime=` (fio's unit: microseconds): pause after every `thinktime_blocks` I/Os.
    pub thinktime_ns: Nanos,
    pub thinktime_blocks: u32,
    /// `thinktime_blocks=` was given (fio's `fio_option_is_set`: with `thinktime_iotime`,
    /// the default of 1 does not apply).
    pub thinktime_blocks_set: bool,
    /// `thinktime_iotime=` (fio's unit: seconds): think after this long issuing I/O (or
    /// after `thinktime_blocks`, if given, whichever first); 0 when unset.
    pub thinktime_iotime_ns: Nanos,
    /// `max_latency=` per direction (fio's unit: microseconds): an I/O that takes longer,
    /// issue to completion, ends the job with ETIMEDOUT.
    pub max_latency_ns: [Option<Nanos>; 3],
    /// `thinktime_blocks_type=`: count `thinktime_blocks` in completed I/Os (`complete`, the
    /// default) or in issued ones (`issue`).
    pub thinktime_blocks_on_issue: bool,
    /// `thinktime_spin=` (microseconds): the first part of each think is spent on a CPU
    /// (fio spins), the rest asleep. Spinning jobs share the machine's CPUs.
    pub thinktime_spin_ns: Nanos,
    /// `rate=` in bytes per second for reads, writes, trims; `None` = unlimited.
    pub rate_bytes_per_sec: [Option<u64>; 3],
    /// `rate_iops=` for reads, writes, trims.
    pub rate_iops: [Option<u64>; 3],
    /// `rate_min=` (`ratemin`) in bytes per second and `rate_iops_min=`, per direction: a job
    /// below them over a `rate_cycle` (after 2 s to settle) ends with EIO, as fio's
    /// check_min_rate.
    pub rate_min_bytes_per_sec: [Option<u64>; 3],
    pub rate_iops_min: [Option<u64>; 3],
    /// `rate_cycle=` (`ratecycle`, fio's unit: milliseconds; default 1000).
    pub rate_cycle_ns: Nanos,
    /// `rate_process=`: how rated I/O is spaced (`linear`, the default, or `poisson`).
    pub rate_process: RateProcess,
    pub group_reporting: bool,
    pub new_group: bool,
    pub stonewall: bool,
    /// `cgroup=`: path relative to the cgroup root, e.g. `groupA` or `a/b`.
    pub cgroup: Option<String>,
    /// `ioscheduler=`: the I/O scheduler fio switches the device of each of the job's files
    /// to when the job starts (`switch_ioscheduler`, through `queue/scheduler` in sysfs).
    pub ioscheduler: Option<String>,
    /// `cgroup_weight=` (blkio.weight, 100..=1000 in the cgroup-v1 sense fio uses).
    pub cgroup_weight: Option<u32>,
    /// `prio=` level 0..=7.
    pub prio: Option<u8>,
    /// `nice=` (-20..=19, default 0): fio calls `nice()` before the job starts. Without
    /// `prio=`/`prioclass=` the kernel derives the process's I/O priority from it (class
    /// none, level `(nice + 20) / 5`: `task_nice_ioprio`), which CFQ and BFQ weigh.
    pub nice: i8,
    /// `prioclass=` 0 (none), 1 (RT), 2 (BE), 3 (IDLE); fio accepts 0..=3.
    pub prioclass: Option<u8>,
    /// `randrepeat=` (default true).
    pub randrepeat: bool,
    /// `norandommap`: random offsets are drawn with replacement, instead of each block of
    /// the region once per pass (fio's random map, the default).
    pub norandommap: bool,
    /// `softrandommap`: a job whose random map would be too large goes on without one.
    pub softrandommap: bool,
    /// `randseed=`, if set.
    pub randseed: Option<u64>,
    /// `uid=` / `gid=`: the credentials the job runs as.
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// `nrfiles=` (default 1), `filesize=` (a range `min-max` or one size), and
    /// `file_service_type=`, for small-file workloads.
    pub nrfiles: u32,
    pub filesize: Option<(u64, u64)>,
    pub file_service_type: FileServiceType,
    /// `openfiles=`: at most this many of the files open at once (0, the default, is all of
    /// them, as is anything above `nrfiles`).
    pub open_files: u32,
    /// `file_service_type=…:N`: a chosen file serves N I/Os before the next is chosen
    /// (fio's `file_service_nr`, 1 by default; 0 never switches, as fio's unsigned count).
    pub file_service_nr: u32,
    /// `io_size=` / `io_limit=`: total bytes to transfer, if different from `size`.
    pub io_size_bytes: Option<u64>,
    /// `number_ios=`: stop after this many I/Os.
    pub number_ios: Option<u64>,
    /// `loops=`: run the job this many times over (at least 1): each pass does `io_size`
    /// (or `size`) again from the start, as if the files were opened anew.
    pub loops: u64,
    /// `fsync=N`: an fsync (a device flush for direct I/O) after every N writes (0 = never).
    pub fsync_every: u32,
    /// `write_barrier=N`: every N-th write is a barrier write (sync, then a cache flush: what
    /// fio's sg engine sends as a barrier; the others had no barrier flag to carry).
    pub write_barrier_every: u32,
    /// `fdatasync=N`: the same with fdatasync; `fsync` wins if both are set.
    pub fdatasync_every: u32,
    /// `sync_file_range=FLAGS:N`: `sync_file_range()` over the range written since the
    /// last sync, after every N writes (`fsync` and `fdatasync` win where they fall).
    pub sync_file_range: Option<SyncFileRange>,
    /// `unified_rw_reporting=`.
    pub unified_rw_reporting: UnifiedRw,
    /// `end_fsync`: fsync the file when the job's writes are done (counted in its runtime).
    pub end_fsync: bool,
    /// `fill_device` / `fill_fs`: a job's new file without `size=` grows until its file
    /// system is full (fio writes until ENOSPC, which then is no error).
    pub fill_device: bool,
    /// `wait_for=NAME`: the job starts once every job named NAME (an earlier section, all its
    /// `numjobs` clones) has finished.
    pub wait_for: Option<String>,
    /// `fsync_on_close`: fsync when the file is closed (at the end, as elevator opens each
    /// file once).
    pub fsync_on_close: bool,
    /// `sync=`: writes are O_SYNC / O_DSYNC (each waits for its data to reach the device).
    pub sync_io: SyncIo,
    /// `fadvise_hint=`: the advice fio gives the kernel on opening the file (fio's default
    /// `1`: sequential or random by `rw`).
    pub fadvise_hint: FadviseHint,
    /// `invalidate` (default on): drop the file's cached pages before the job starts.
    pub invalidate: bool,
    /// `pre_read`: read the file into the page cache before the job starts.
    pub pre_read: bool,
    /// `create_on_open`: files are created when the job first opens them, during the run
    /// (on ext3: inode, directory entry and bitmaps through the journal), not laid out
    /// before it.
    pub create_on_open: bool,
    /// `file_append`: write after the end of the file (a new file's data: no old blocks to
    /// read back for partial writes).
    pub file_append: bool,
    /// `exitall`: when a job finishes, stop the jobs that its `exit_what` names. fio keeps it
    /// in a global: one job's `exitall` makes every job's end do it.
    pub exitall: bool,
    /// `disk_util` (default 1): the job's disks are in the report's disk statistics.
    pub disk_util: bool,
    /// `exitall_on_error`: the same when this job ends in an error.
    pub exitall_on_error: bool,
    /// The cpuio engine's `cpuload=` (% of a CPU, 0 = not given; above 100 taken as 100),
    /// `cpuchunks=` (the length of one burn, µs in the file; fio's default 50 ms) and
    /// `exit_on_io_done` (stop once no job doing I/O runs or waits to).
    pub cpuload_percent: u32,
    pub cpuchunks_ns: Nanos,
    pub exit_on_io_done: bool,
    pub exit_what: ExitWhat,
    /// `read_iolog=`: the recorded I/O to replay instead of `rw`/`bs`/`size` (path relative
    /// to the job file); `replay_no_stall` ignores its timing; `replay_redirect=` sends it to
    /// another device than the one it names.
    pub iolog: Option<std::sync::Arc<crate::iolog::IoLog>>,
    pub replay_no_stall: bool,
    pub replay_redirect: Option<String>,
    /// `replay_time_scale`, `replay_scale`, `replay_align`, `replay_skip` (applied to `iolog`
    /// when the job is finished).
    pub replay: crate::iolog::Replay,
    /// `write_lat_log=`, `write_bw_log=`, `write_iops_log=` and their settings.
    pub logs: LogOptions,
    /// `cmdprio_percentage=` per direction: this share of the I/Os (chosen at random) carry
    /// `cmdprio_class=` (default 1, real-time) and level `cmdprio=` (default 0) instead of
    /// the job's own priority.
    pub cmdprio_percentage: [u32; 3],
    pub cmdprio_class: [u8; 3],
    pub cmdprio_level: [u8; 3],
    /// `cmdprio_bssplit=` per direction: I/Os of an entry's block size carry a priority with
    /// the entry's percentage — the entry's own class and level, or `cmdprio_class=` and
    /// `cmdprio=` when it gives none. I/Os of other sizes keep the job's priority.
    pub cmdprio_bssplit: [Vec<CmdPrioSplit>; 3],
    /// `latency_target=` (default unit µs): fio searches the deepest queue, up to `iodepth`,
    /// at which `latency_percentile=` (default 100) of the I/Os of each `latency_window=`
    /// complete within it, then reruns at that depth.
    pub latency_target_ns: Option<u64>,
    pub latency_window_ns: u64,
    pub latency_percentile: f64,
    /// `steadystate=` and its duration and ramp.
    pub steadystate: SteadyState,
    /// `kb_base=`: 1024 (the default) or 1000, which the report's bandwidth samples are
    /// labelled and scaled by (`KiB/s` or `kB/s`).
    pub kb_base: u64,
}

/// One `cmdprio_bssplit=` entry: `blocksize/percentage[/class/level[/hint]]` (the hint dropped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmdPrioSplit {
    pub bs_bytes: u64,
    pub percent: u32,
    /// `(class, level)`, or `None` for the job's `cmdprio_class=`/`cmdprio=`.
    pub prio: Option<(u8, u8)>,
}

/// fio's per-job log files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// The file-name prefix of each log (`""`: the job's name); `None`: not written.
    pub lat: Option<String>,
    pub bw: Option<String>,
    pub iops: Option<String>,
    /// `log_avg_msec=`: 0 logs every I/O's latency (and samples rates every 500 ms).
    pub avg_msec: u64,
    /// `log_max_value`: a window's maximum instead of its mean.
    pub max_value: bool,
    /// `per_job_logs` (default on): `PREFIX_bw.N.log` per process, else `PREFIX_bw.log`.
    pub per_job: bool,
    /// `bwavgtime=` / `iopsavgtime=` (ms), if given: the window of the bandwidth and IOPS
    /// statistics' samples (see [`LogOptions::bw_sampling`]).
    pub bw_avg_ms: Option<u64>,
    pub iops_avg_ms: Option<u64>,
}

/// How a job's bandwidth or IOPS statistics take their samples (fio's `bw_avg_time` and
/// `iops_avg_time` after `init.c` settles them against the logs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampling {
    /// One sample per window of this many ms: the rate over the window.
    Window { ms: u64 },
    /// One sample per I/O (a `write_bw_log` or `write_iops_log` without `log_avg_msec`,
    /// whatever `bwavgtime=`/`iopsavgtime=` say): the I/O's own rate, `bytes × 10⁶ / latency
    /// ns` for bandwidth, 1 for IOPS.
    PerIo,
}

/// fio's default `bw_avg_time` and `iops_avg_time`: 500 ms.
pub const DEFAULT_AVG_TIME_MS: u64 = 500;

impl LogOptions {
    /// The prefix slot of `write_lat_log`, `write_bw_log` or `write_iops_log`.
    pub fn slot(&mut self, option: &str) -> &mut Option<String> {
        match option {
            "write_lat_log" => &mut self.lat,
            "write_bw_log" => &mut self.bw,
            _ => &mut self.iops,
        }
    }

    pub fn any(&self) -> bool {
        self.lat.is_some() || self.bw.is_some() || self.iops.is_some()
    }

    /// The bandwidth statistics' sampling: with a bandwidth log of every I/O, every I/O;
    /// else `bwavgtime=` if given, or the log's `log_avg_msec`, or 500 ms.
    pub fn bw_sampling(&self) -> Sampling {
        Self::sampling(self.bw_avg_ms, self.bw.is_some(), self.avg_msec)
    }

    /// The IOPS statistics' sampling, as [`LogOptions::bw_sampling`] with the IOPS log.
    pub fn iops_sampling(&self) -> Sampling {
        Self::sampling(self.iops_avg_ms, self.iops.is_some(), self.avg_msec)
    }

    /// `init.c`: a log averages over `log_avg_msec`, or the smaller of it and the option
    /// when that is given; a log that averages over nothing logs, and samples, every I/O
    /// (`per_unit_log`: the windows are not taken at all); otherwise the statistics' window
    /// is the option, or the log's `log_avg_msec`, or 500 ms.
    fn sampling(own: Option<u64>, logged: bool, log_avg_msec: u64) -> Sampling {
        let log_window = own.map_or(log_avg_msec, |ms| ms.min(log_avg_msec));
        if logged && log_window == 0 {
            return Sampling::PerIo;
        }
        let ms = own.unwrap_or(if logged { log_avg_msec } else { DEFAULT_AVG_TIME_MS });
        Sampling::Window { ms }
    }
}

/// `sync=`: how writes are opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncIo {
    /// `0` / `none`: plain buffered writes.
    None,
    /// `1` / `sync`: O_SYNC.
    Sync,
    /// `dsync`: O_DSYNC.
    Dsync,
}

/// `fadvise_hint=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FadviseHint {
    /// `0`: no advice.
    Off,
    /// `1` (default): POSIX_FADV_SEQUENTIAL for sequential jobs, RANDOM for random ones.
    Auto,
    Sequential,
    Random,
}

/// `exit_what=`: which jobs `exitall` stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitWhat {
    /// The jobs of the same reporting group (fio's default).
    Group,
    /// The jobs running in the same stonewall phase.
    Stonewall,
    /// Every job.
    All,
}

impl JobSpec {
    /// Whether the job's engine queues I/Os (and so has a submission latency): fio's null
    /// engine makes itself `FIO_SYNCIO` at `iodepth=1` (`null_init`), so a null job at depth
    /// one reports no `slat` and no submit/complete batches, like psync.
    pub fn engine_is_async(&self) -> bool {
        self.ioengine.is_async() && !self.null_at_depth_one()
    }

    /// Whether fio counts the job's submit and complete batches (the `submit`/`complete`
    /// lines): `td_io_queue` counts one of each per I/O for an engine without a `commit`
    /// hook, commit and getevents count them for the rest, and the null engine at depth one
    /// has the hook but completes every I/O in `queue`, so it counts none (all 0.0%).
    pub fn counts_batches(&self) -> bool {
        !self.null_at_depth_one()
    }

    fn null_at_depth_one(&self) -> bool {
        self.ioengine.is_fio_null() && self.iodepth == 1
    }

    /// I/Os one process of the job may have in flight: `iodepth` for an async engine, one
    /// for a synchronous one (fio ignores `iodepth` there).
    pub fn max_in_flight(&self) -> u32 {
        if self.engine_is_async() {
            self.iodepth.max(1)
        } else {
            1
        }
    }

    /// A job with fio's defaults: `rw=read`, `bs=4k`, `ioengine=psync`, `iodepth=1`,
    /// `rwmixread=50`, `randrepeat=1`, `thinktime_blocks=1`, `nrfiles=1`,
    /// `file_service_type=roundrobin`, buffered I/O, no limits.
    pub fn new_default(name: &str, source: SourceLocation) -> JobSpec {
        let bs = BlockSize::Fixed { bytes: 4096 };
        JobSpec {
            name: name.to_string(),
            source,
            options: Vec::new(),
            rw: RwMode::Read,
            rwmixread_percent: 50,
            block_size: [bs.clone(), bs.clone(), bs],
            size: None,
            offset: Amount::Bytes(0),
            offset_increment: Amount::Bytes(0),
            offset_align: None,
            filename: None,
            directory: None,
            direct: false,
            ioengine: IoEngine::Psync,
            iodepth: 1,
            iodepth_batch: 1,
            iodepth_low: 0,
            iodepth_batch_complete_min: 1,
            write_iolog: None,
            verify: false,
            do_verify: true,
            verify_backlog: 0,
            verify_backlog_batch: 0,
            verify_only: false,
            percentile_list: DEFAULT_PERCENTILES.to_vec(),
            percentile_precision: 2,
            clat_percentiles: true,
            lat_percentiles: false,
            percentage_random: [100; 3],
            rw_seq_nr: 1,
            rw_seq_add_bytes: 0,
            rw_sequencer: RwSequencer::Sequential,
            block_align: [None; 3],
            bs_unaligned: false,
            random_distribution: crate::RandomDistribution::Random,
            numjobs: 1,
            runtime_ns: None,
            time_based: false,
            ramp_time_ns: 0,
            startdelay_ns: 0,
            thinktime_ns: 0,
            thinktime_blocks: 1,
            thinktime_blocks_set: false,
            thinktime_iotime_ns: 0,
            thinktime_blocks_on_issue: false,
            max_latency_ns: [None; 3],
            thinktime_spin_ns: 0,
            rate_bytes_per_sec: [None; 3],
            rate_iops: [None; 3],
            rate_process: RateProcess::Linear,
            rate_min_bytes_per_sec: [None; 3],
            rate_iops_min: [None; 3],
            rate_cycle_ns: 1_000_000_000,
            group_reporting: false,
            new_group: false,
            stonewall: false,
            cgroup: None,
            ioscheduler: None,
            zones: None,
            lfsr: false,
            cgroup_weight: None,
            prio: None,
            nice: 0,
            prioclass: None,
            randrepeat: true,
            norandommap: false,
            softrandommap: false,
            randseed: None,
            uid: None,
            gid: None,
            nrfiles: 1,
            filesize: None,
            file_service_type: FileServiceType::RoundRobin,
            file_service_nr: 1,
            open_files: 0,
            io_size_bytes: None,
            number_ios: None,
            loops: 1,
            fsync_every: 0,
            write_barrier_every: 0,
            fdatasync_every: 0,
            sync_file_range: None,
            unified_rw_reporting: UnifiedRw::Split,
            end_fsync: false,
            fill_device: false,
            wait_for: None,
            fsync_on_close: false,
            sync_io: SyncIo::None,
            fadvise_hint: FadviseHint::Auto,
            invalidate: true,
            pre_read: false,
            create_on_open: false,
            file_append: false,
            exitall: false,
            disk_util: true,
            exitall_on_error: false,
            cpuload_percent: 0,
            cpuchunks_ns: 50_000 * 1_000,
            exit_on_io_done: false,
            exit_what: ExitWhat::Group,
            iolog: None,
            replay_no_stall: false,
            replay_redirect: None,
            replay: crate::iolog::Replay::default(),
            logs: LogOptions { per_job: true, ..LogOptions::default() },
            cmdprio_percentage: [0; 3],
            cmdprio_class: [1; 3],
            cmdprio_level: [0; 3],
            cmdprio_bssplit: Default::default(),
            latency_target_ns: None,
            latency_window_ns: 0,
            latency_percentile: 100.0,
            steadystate: SteadyState::DEFAULT,
            kb_base: 1024,
        }
    }
}

/// A place in a job file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLocation {
    pub file: String,
    pub line: u32,
}

impl std::fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A warning about the job file: an option fio has that elevator does not model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub location: SourceLocation,
    pub option: String,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: option `{}`: {}", self.location, self.option, self.message)
    }
}

/// An error in a job file. The message names the file, line and option and says how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub location: SourceLocation,
    pub option: Option<String>,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.option {
            Some(option) => write!(f, "{}: option `{}`: {}", self.location, option, self.message),
            None => write!(f, "{}: {}", self.location, self.message),
        }
    }
}

impl std::error::Error for ParseError {}

/// A parsed job file.
#[derive(Clone, Debug, PartialEq)]
pub struct JobFile {
    pub jobs: Vec<JobSpec>,
    /// Options of `[global]` sections, in order, for fio's JSON "global options".
    pub global_options: Vec<(String, String)>,
    pub warnings: Vec<Diagnostic>,
}
