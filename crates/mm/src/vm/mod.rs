//! One machine's page cache in motion: the system calls of its tasks, the block I/O the
//! cache issues, the flusher threads, writer throttling and page reclaim, as a sans-I/O state
//! machine.
//!
//! The driver (the simulator) hands in system calls ([`Vm::syscall`]), completions of the
//! block I/O the Vm asked for ([`Vm::io_done`]) and timer expiries ([`Vm::timer`]), each with
//! `now`; the Vm appends the block I/O to issue and the tasks whose blocked system call
//! finished to an [`Output`]. Nothing here reads a clock or does I/O.
//!
//! A run of `count` identical sequential calls is taken in one step up to the first that
//! would issue I/O, wait or be throttled: a cached `read()` or a `write()` into the cache
//! costs only its CPU time ([`VmConfig::syscall_cost_ns`]), so a 16 GiB dd of 512-byte writes
//! costs what its ratelimit checks and writeback cost, not 33 million steps.
//!
//! - `read`: `do_generic_file_read`: cached pages, the readahead marker, sync and async
//!   readahead ([`crate::readahead`]), waiting for locked pages; `posix_fadvise`.
//! - [`write`]: `generic_perform_write`: reads of partially overwritten pages, dirtying, the
//!   ratelimit check, O_SYNC, `fsync`/`fdatasync`.
//! - `balance`: `balance_dirty_pages`, 2.6.3x and IO-less forms ([`crate::dirty`]).
//! - `flusher`: the per-device flusher thread: background writeback above
//!   `dirty_background_ratio`, periodic writeback of inodes dirty longer than
//!   `dirty_expire_centisecs` every `dirty_writeback_centisecs`, in chunks per inode.
//!
//! Sync and async are decided here, once, as `op_is_sync` would see them: reads, and
//! writes for `fsync`, O_SYNC and O_DIRECT, are sync; flusher and throttled-writer writeback
//! is async. Every I/O carries the [`Owner`] it is issued as: the task's for its reads,
//! fsync and (2.6.3x) throttled writeback, the flusher thread's for background writeback.

mod balance;
mod flusher;
mod journal;
mod read;
mod write;

use std::collections::{BTreeMap, VecDeque};

use elevator_core::{Nanos, Op, Owner, NS_PER_SEC};

use crate::config::VmConfig;
use crate::dirty::{BdiBandwidth, Limits, PropLocal, Proportions};
use crate::dirty_order::DirtyOrder;
use crate::pages::{FileId, IoTag, Pages};
use crate::readahead::{RaCase, RaState, PAGE_BYTES};

pub use balance::Balance;
pub use journal::{JournalId, JournalSpec, JournalStats, JOURNAL_PID_BASE, MIN_JOURNAL_BYTES};

/// A task (process or thread) that makes system calls.
pub type TaskId = u32;

/// Pid of the first flusher thread (`flush-8:0`); one per backing device after it.
pub const FLUSHER_PID_BASE: u32 = 2_000_000;

/// `BLK_BATCH_REQ`: requests a writer woken with a free request may allocate past a full
/// pool (`q->nr_batching`).
pub const NR_BATCHING: u32 = 32;

/// A backing device: what the cache needs to know of the device (or volume) under files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BdiSpec {
    /// `/sys/block/<dev>/queue/read_ahead_kb`.
    pub read_ahead_kb: u32,
    /// Largest request, KiB: writeback counts its requests in units of this.
    pub max_sectors_kb: u32,
    /// Async requests the device's queue takes before writeback waits
    /// (`nr_requests`, `get_request_wait`).
    pub nr_requests: u32,
}

/// A file: where its page 0 is on its device, how large it may grow, how much data it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileSpec {
    pub bdi: u32,
    pub base_bytes: u64,
    pub size_bytes: u64,
    /// Bytes of existing data (reads of pages past it need no I/O, writes past it need no
    /// read of the old block); the file grows as it is written.
    pub data_bytes: u64,
    /// On an ext3 file system: the device byte offsets of its inode's block in the inode
    /// table and of its directory's block (defaults: an inode block of the first group).
    pub inode_bytes: Option<u64>,
    pub dir_bytes: Option<u64>,
}

impl FileSpec {
    /// A file of `size_bytes` at `base_bytes` of `bdi`, holding `data_bytes`.
    pub fn new(bdi: u32, base_bytes: u64, size_bytes: u64, data_bytes: u64) -> FileSpec {
        FileSpec { bdi, base_bytes, size_bytes, data_bytes, inode_bytes: None, dir_bytes: None }
    }
}

/// `posix_fadvise` advice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    Normal,
    Sequential,
    Random,
    WillNeed,
    DontNeed,
}

/// `sync_file_range` flags (`SYNC_FILE_RANGE_WAIT_BEFORE`, `_WRITE`, `_WAIT_AFTER`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncRangeFlags {
    /// Wait for the writeback already under way in the range first.
    pub wait_before: bool,
    /// Start writeback of the range's dirty pages (`WB_SYNC_NONE`: async writes).
    pub write: bool,
    /// Then wait for all writeback in the range.
    pub wait_after: bool,
}

/// A system call, or `count` identical sequential ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syscall {
    /// `count` reads of `len` bytes, the first at `offset`, each after the other.
    Read {
        file: FileId,
        offset: u64,
        len: u64,
        count: u64,
    },
    /// `count` writes likewise; `sync` for O_SYNC/O_DSYNC (each then waits for its data).
    Write {
        file: FileId,
        offset: u64,
        len: u64,
        count: u64,
        sync: bool,
    },
    /// `fsync` (`data_only`: `fdatasync`).
    Fsync {
        file: FileId,
        data_only: bool,
    },
    Fadvise {
        file: FileId,
        offset: u64,
        len: u64,
        advice: Advice,
    },
    /// `sync_file_range(fd, offset, len, flags)` (`len` 0: to the end of the file). No
    /// journal commit and no cache flush: only the range's data pages.
    SyncFileRange {
        file: FileId,
        offset: u64,
        len: u64,
        flags: SyncRangeFlags,
    },
    /// `creat()`: on ext3, the file's inode and directory entry are made (their blocks read
    /// if not cached and other files use them, then journaled); the file starts empty.
    Create {
        file: FileId,
    },
    /// `unlink()`: the file's pages go and its metadata changes.
    Unlink {
        file: FileId,
    },
    /// `open()` of an existing file: on ext3 its inode block is read if not cached.
    Open {
        file: FileId,
    },
}

/// What became of a system call (or run of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyscallResult {
    /// `count` calls finished, the last at `at_ns` (their CPU time included).
    Done { count: u64, at_ns: Nanos },
    /// `count` calls finished, the next one is blocked; a [`Wake`] will say when it ends.
    Blocked { count: u64 },
}

/// A blocked system call finished at `at_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wake {
    pub task: TaskId,
    pub at_ns: Nanos,
}

/// Block I/O the cache asks the driver to issue on backing device `bdi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockIo {
    pub tag: IoTag,
    pub bdi: u32,
    pub op: Op,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    pub sync: bool,
    /// `REQ_META` (see [`elevator_core::Request::meta`]): a read of the file system's
    /// inode or directory blocks (`READ_META`; `READ | REQ_META | REQ_PRIO` from 3.1).
    pub meta: bool,
    /// `REQ_BACKGROUND` (see [`elevator_core::Request::background`]): the flusher's own
    /// background or periodic writeback.
    pub background: bool,
    pub owner: Owner,
}

impl BlockIo {
    /// Whether the request carries `REQ_NOIDLE` (see [`elevator_core::Request::noidle`]): the
    /// page cache's sync writes are `WRITE_SYNC` or `WRITE_SYNC_PLUG`, both of which do.
    /// It follows `sync`, which the Vm decides by kernel era (`Vm::scheduler_sync`).
    pub fn noidle(&self) -> bool {
        self.op == Op::Write && self.sync
    }

    /// Its flags as the block layer takes them.
    pub fn flags(&self) -> elevator_core::BioFlags {
        elevator_core::BioFlags {
            sync: self.sync,
            noidle: self.noidle(),
            meta: self.meta,
            background: self.background,
        }
    }
}

/// What one call of the Vm produced.
#[derive(Clone, Debug, Default)]
pub struct Output {
    pub ios: Vec<BlockIo>,
    pub wakes: Vec<Wake>,
    /// Tasks an I/O completion made runnable: the driver runs each ([`Vm::run`]) after it
    /// has dispatched what the completion freed, as a woken process runs after the
    /// interrupt that woke it.
    pub runnable: Vec<TaskId>,
    /// Devices (bdis) whose request queues a task runs because it now waits for I/O on
    /// them: `sync_page` → `blk_run_backing_dev` in kernels with queue plugging
    /// ([`crate::Kernel::queue_plugging`]). The driver runs each queue; it may repeat.
    pub unplug: Vec<u32>,
}

impl Output {
    /// Asks the driver to run `bdi`'s queue (once, if the last ask was the same).
    pub(super) fn run_queue(&mut self, bdi: u32) {
        if self.unplug.last() != Some(&bdi) {
            self.unplug.push(bdi);
        }
    }
}

/// How readahead decided, machine-wide: calls on a cache miss (`page_cache_sync_readahead`)
/// and on a marker (`..._async_readahead`), and which of `ondemand_readahead`'s cases
/// answered them. Whether a stream's readahead keeps ahead of its reads shows here: a reader
/// that stays behind its windows misses again and again, and context readahead acts only
/// on a miss that is not sequential for the file's own state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadaheadStats {
    pub sync_calls: u64,
    pub async_calls: u64,
    /// Marker hits whose async readahead was skipped on a congested device.
    pub deferred: u64,
    pub initial: u64,
    pub sequential: u64,
    pub marker: u64,
    pub context: u64,
    pub random: u64,
}

impl ReadaheadStats {
    pub(crate) fn count(&mut self, on_marker: bool, case: RaCase) {
        if on_marker {
            self.async_calls += 1;
        } else {
            self.sync_calls += 1;
        }
        match case {
            RaCase::Off => {}
            RaCase::Initial => self.initial += 1,
            RaCase::Sequential => self.sequential += 1,
            RaCase::Marker => self.marker += 1,
            RaCase::Context => self.context += 1,
            RaCase::Random => self.random += 1,
        }
    }
}

/// Machine-wide counters for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VmStats {
    pub pages_read: u64,
    pub pages_written: u64,
    pub readahead_windows: u64,
    pub readahead: ReadaheadStats,
    pub pages_reclaimed: u64,
    pub throttle_pauses: u64,
    pub throttle_ns: u64,
    pub peak_dirty_pages: u64,
    /// ext3 journals, all together: commits, ordered data pages their commits wrote,
    /// journal blocks written, checkpoints forced by a full journal.
    pub journal_commits: u64,
    pub journal_ordered_pages: u64,
    pub journal_log_blocks: u64,
    pub journal_checkpoints: u64,
}

/// Per-open-file state of a task (`struct file`).
#[derive(Clone, Copy, Debug)]
struct OpenFile {
    ra: RaState,
    /// `FMODE_RANDOM` (`POSIX_FADV_RANDOM`).
    random: bool,
}

/// What a blocked task waits for.
#[derive(Clone, Copy, Debug)]
enum Busy {
    /// A read at `pos` of the request `[.., end)` waits for a page.
    Read { file: FileId, pos: u64, end: u64, req_start: u64 },
    /// A write waits for the read of a page it partly overwrites.
    WriteRead { file: FileId, offset: u64, len: u64, sync: bool },
    /// Throttled in `balance_dirty_pages`.
    Balance(Balance),
    /// `fsync` (or an O_SYNC write's sync) of `file` waits for `pending` I/Os; then the
    /// journal commit (ext3) or the flush.
    Sync { pending: u32, flushed: bool, bdi: u32, file: FileId, range: (u64, u64) },
    /// `creat()` (or `open()`: `create` false) waits for a metadata block's read.
    Create { file: FileId, create: bool },
    /// `fsync` on ext3 waits for the commit of transaction `tid`.
    Commit { tid: u64 },
    /// `sync_file_range` of pages `[a, b)` of `file` waits for `pending` I/Os (`stage`:
    /// before or after its own writeback), or for a request slot to issue it.
    RangeSync {
        stage: RangeStage,
        pending: u32,
        file: FileId,
        a: u64,
        b: u64,
        flags: SyncRangeFlags,
    },
}

/// What a `sync_file_range` does next (a blocked one, once its wait is over).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RangeStage {
    /// `WAIT_BEFORE`: wait for the writeback already under way.
    Before,
    /// `WRITE`: issue the dirty pages from page `from` on (`reserved`: after waiting for
    /// the request slot it was granted).
    Write { from: u64, reserved: bool },
    /// `WAIT_AFTER`: wait for all writeback in the range.
    After,
    /// Return to the caller.
    Done,
}

struct Task {
    owner: Owner,
    /// The task's open files: indexes into [`Vm::open_files`] (tasks may share one).
    files: BTreeMap<FileId, u32>,
    /// Pages dirtied since the last throttle check (`current->nr_dirtied`).
    nr_dirtied: u64,
    /// IO-less: pages to dirty before the next check (`nr_dirtied_pause`).
    nr_dirtied_pause: u64,
    /// IO-less: jiffies when the last pause ended (`dirty_paused_when`).
    dirty_paused_when: u64,
    /// 2.6.3x: this task's share of recent dirtying (`task_dirty_limit`).
    dirties: PropLocal,
    busy: Option<Busy>,
    /// When the blocked call started (for its CPU time on completion).
    cpu_ns: Nanos,
}

/// Per-file bookkeeping beyond the pages.
#[derive(Clone, Copy, Debug)]
struct FileMeta {
    spec: FileSpec,
    /// The writeback domain its dirty pages are accounted to and written back by (the
    /// device's root one until a task of another cgroup first dirties it, from 4.2).
    wb: u32,
    /// Its writeback domain was chosen, at its first dirtying (`inode->i_wb`).
    wb_attached: bool,
    /// On its device's writeback queue (`b_io`).
    queued: bool,
    /// The ext3 journal of its file system.
    journal: Option<journal::JournalId>,
    /// The last transaction that changed its inode.
    meta_tid: Option<u64>,
    /// An ext3 file system's metadata blocks ([`journal::Journal::meta_file`]): what is
    /// read of it is inode tables and directories, read as `REQ_META`.
    metadata: bool,
    /// On ext3, its inode and directory entry are in use (it exists): counted in
    /// [`Vm::meta_users`].
    exists: bool,
}

/// A backing device as the cache sees it: its request pool and who waits for it.
struct Bdi {
    spec: BdiSpec,
    /// Async write requests in flight (writeback waits at `nr_requests`).
    async_requests: u32,
    /// Who waits for an async request slot, in order (`get_request_wait` is FIFO):
    /// throttled writers (2.6.3x) and the flushers.
    slot_waiters: VecDeque<SlotWaiter>,
    /// Slots granted to woken writers that have not run yet.
    reserved: u32,
    /// The device's sync (read) requests are congested (`bdi_read_congested`), as the
    /// driver's block layer last said ([`Vm::set_read_congested`]).
    read_congested: bool,
    /// Each cgroup draws on a request pool of its own ([`Vm::set_cgroup_pools`]).
    cgroup_pools: bool,
    /// When a writer last paused in `balance_dirty_pages` for this device (IO-less).
    dirty_sleep_ns: Option<Nanos>,
}

/// A waiter for a request slot of a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotWaiter {
    /// A task, for a request of writeback domain `.1`'s pool.
    Task(TaskId, u32),
    /// The flusher of a writeback domain ([`Wb`]).
    Flusher(u32),
}

/// A writeback domain (`struct bdi_writeback`): the dirty inodes of one device that one
/// flusher writes back, with the bandwidth and writeout share that set its writers' dirty
/// threshold. Each device has its root domain, at the device's own index; from 4.2 a cgroup
/// that dirties files on it gets one of its own (cgroup writeback, [`Vm::wb_for`]).
struct Wb {
    /// The device.
    bdi: u32,
    /// The cgroup its writeback is issued in (0: the root).
    cgroup: u32,
    /// Dirty files in writeback order (`b_dirty`/`b_io`/`b_more_io` in one queue).
    queue: VecDeque<FileId>,
    /// Pages dirtied and written back so far (`WB_DIRTIED`, `WB_WRITTEN`).
    dirtied: u64,
    written: u64,
    /// Its async write requests in flight (a share of its device's).
    async_requests: u32,
    bw: BdiBandwidth,
    completions: PropLocal,
    dirty_exceeded: bool,
    flusher: flusher::Flusher,
}

impl Wb {
    fn new(bdi: u32, cgroup: u32) -> Wb {
        Wb {
            bdi,
            cgroup,
            queue: VecDeque::new(),
            dirtied: 0,
            written: 0,
            async_requests: 0,
            bw: BdiBandwidth::new(0),
            completions: PropLocal::default(),
            dirty_exceeded: false,
            flusher: flusher::Flusher::new(),
        }
    }
}

/// What an I/O tag stands for.
#[derive(Clone, Copy, Debug)]
enum IoKind {
    Read { file: FileId, start: u64, end: u64 },
    Write { file: FileId, start: u64, end: u64, requests: u32, sync: bool },
    Flush,
}

#[derive(Clone, Debug)]
struct IoRec {
    kind: IoKind,
    bdi: u32,
    /// Held by the block layer's group control before it took requests
    /// ([`Vm::io_held`]): its request slots are not counted.
    held: bool,
    waiters: Vec<TaskId>,
    /// Journals whose commit waits for it.
    journals: Vec<journal::JournalId>,
}

/// Timed events of the Vm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Timer {
    /// A throttled task's pause ends.
    Task(TaskId),
    /// A writeback domain's flusher's periodic wake-up.
    Flusher(u32),
    /// A journal's commit interval ran out.
    Journal(journal::JournalId),
}

/// The page cache of one machine. See the module docs.
pub struct Vm {
    cfg: VmConfig,
    pages: Pages,
    files: Vec<FileMeta>,
    /// Per file, the order its pages were first dirtied in (kept only by kernels whose
    /// writeback follows it: [`crate::Kernel::dirty_list_writeback`]).
    dirty_order: Vec<DirtyOrder>,
    tasks: Vec<Task>,
    bdis: Vec<Bdi>,
    /// Writeback domains: the devices' root ones first, at their devices' indexes.
    wbs: Vec<Wb>,
    /// The cgroup writeback domains by (device, cgroup).
    wb_of: BTreeMap<(u32, u32), u32>,
    journals: Vec<journal::Journal>,
    /// ext3 inode-table and directory blocks (device byte offsets) by the files that use
    /// them: a block none uses is made in memory when a file is created, not read.
    meta_users: BTreeMap<u64, u32>,
    /// Open files (`struct file`): readahead state, advice.
    open_files: Vec<OpenFile>,
    ios: Vec<Option<IoRec>>,
    free_ios: Vec<IoTag>,
    timers: BTreeMap<(Nanos, u64), Timer>,
    timer_seq: u64,
    /// Writeout completions shared between devices (`vm_completions`) and dirtying shared
    /// between tasks (`vm_dirties`), 2.6.3x.
    completions: Proportions,
    dirties: Proportions,
    /// IO-less: the hard limit following the threshold down slowly (`global_dirty_limit`).
    global_dirty_limit: u64,
    global_limit_stamp: u64,
    /// Pages kept free (`min_free_kbytes`).
    min_free_pages: u64,
    pub stats: VmStats,
    /// Context readahead on (2.6.31+ kernels, unless turned off).
    pub context_readahead: bool,
    /// Issue a cache flush after fsync's writes (`barrier=1`).
    pub barriers: bool,
    /// Pages written on each CPU since its last throttle check (`bdp_ratelimits`, before
    /// 3.2); task `t` runs on CPU `t % cpus`.
    cpu_dirtied: Vec<u64>,
    /// Requests the writer now issuing may take past a full pool: a writer just granted a
    /// request is a "batcher" (`ioc_batching`) for `nr_batching` more, up to 1.5 ×
    /// `nr_requests`.
    batch_allowance: u32,
}

impl Vm {
    /// A machine with `cfg` over the backing devices `bdis`. `cfg` must be valid.
    pub fn new(cfg: VmConfig, bdis: &[BdiSpec]) -> Vm {
        debug_assert!(cfg.validate().is_ok());
        let limits = Self::limits_for(&cfg);
        // min_free_kbytes = sqrt(16 * lowmem KiB), 128 KiB ..= 64 MiB.
        let kib = cfg.memory_bytes / 1024;
        let min_free_kib = ((16 * kib) as f64).sqrt() as u64;
        let wbs = (0..bdis.len() as u32).map(|b| Wb::new(b, 0)).collect();
        let bdis = bdis
            .iter()
            .map(|&spec| Bdi {
                spec,
                async_requests: 0,
                slot_waiters: VecDeque::new(),
                reserved: 0,
                read_congested: false,
                cgroup_pools: false,
                dirty_sleep_ns: None,
            })
            .collect();
        Vm {
            context_readahead: cfg.kernel.context_readahead(),
            barriers: true,
            pages: Pages::new(),
            files: Vec::new(),
            dirty_order: Vec::new(),
            tasks: Vec::new(),
            bdis,
            wbs,
            wb_of: BTreeMap::new(),
            journals: Vec::new(),
            meta_users: BTreeMap::new(),
            open_files: Vec::new(),
            ios: Vec::new(),
            free_ios: Vec::new(),
            timers: BTreeMap::new(),
            timer_seq: 0,
            completions: Proportions::new(limits.dirty),
            dirties: Proportions::new(limits.dirty),
            global_dirty_limit: limits.dirty,
            global_limit_stamp: 0,
            min_free_pages: min_free_kib.clamp(128, 65536) / 4,
            batch_allowance: 0,
            cpu_dirtied: vec![0; cfg.cpus as usize],
            stats: VmStats::default(),
            cfg,
        }
    }

    pub fn config(&self) -> &VmConfig {
        &self.cfg
    }

    pub fn pages(&self) -> &Pages {
        &self.pages
    }

    /// What `file` was registered as (its data size as it is now).
    pub fn file_spec(&self, file: FileId) -> FileSpec {
        self.files[file as usize].spec
    }

    /// Whether every page of `file` is cached and up to date, so that any read of it is a
    /// hit (the count is checked first; the walk for holes only when it says so).
    pub fn file_cached(&self, file: FileId) -> bool {
        let pages = self.file_pages(file);
        let c = self.pages.file(file).counts;
        c.reading == 0 && c.cached >= pages && self.pages.first_hole(file, 0, pages).is_none()
    }

    /// The block layer says whether device `bdi`'s sync requests are congested (its
    /// `blk_set_queue_congested` / `blk_clear_queue_congested`; for a stacked device, any
    /// member's). Async readahead reads it ([`Kernel::async_readahead_defers_on_congestion`]).
    ///
    /// [`Kernel::async_readahead_defers_on_congestion`]: crate::Kernel::async_readahead_defers_on_congestion
    pub fn set_read_congested(&mut self, bdi: u32, congested: bool) {
        if let Some(b) = self.bdis.get_mut(bdi as usize) {
            b.read_congested = congested;
        }
    }

    /// The block layer gives each cgroup its own pool of `nr_requests` on device `bdi`, as
    /// the driver's block layer does while the scheduler schedules groups (blk-cgroup's
    /// per-group request lists, 3.6 to 4.x; the IO controller patches'; for BFQ on blk-mq,
    /// whose 5.16+ `bfq_limit_depth` caps each cgroup at its weight's share of the tags, the
    /// same approximation): a cgroup's writeback then waits only for its own slots. Each
    /// writeback domain counts its requests against the pool of its cgroup.
    pub fn set_cgroup_pools(&mut self, bdi: u32, on: bool) {
        if let Some(b) = self.bdis.get_mut(bdi as usize) {
            b.cgroup_pools = on;
        }
    }

    /// When a writer last paused in `balance_dirty_pages` on device `bdi` (IO-less
    /// throttling; `wb->dirty_sleep`): writeback throttling lets writeback go faster for a
    /// second after it (`wb_recent_wait`).
    pub fn dirty_sleep_ns(&self, bdi: u32) -> Option<Nanos> {
        self.bdis.get(bdi as usize).and_then(|b| b.dirty_sleep_ns)
    }

    /// Registers a file.
    pub fn add_file(&mut self, spec: FileSpec) -> FileId {
        let f = self.pages.add_file(spec.bdi);
        let journal = self.journal_at(spec.bdi, spec.base_bytes);
        self.files.push(FileMeta {
            spec,
            wb: spec.bdi,
            wb_attached: false,
            queued: false,
            journal,
            meta_tid: None,
            metadata: false,
            exists: false,
        });
        self.dirty_order.push(DirtyOrder::default());
        // A file with data exists before the run: its inode and directory entry are in use.
        if journal.is_some() && spec.data_bytes > 0 {
            self.use_meta_blocks(f, true);
        }
        f
    }

    /// Registers a task issuing its I/O as `owner`.
    pub fn add_task(&mut self, owner: Owner) -> TaskId {
        self.tasks.push(Task {
            owner,
            files: BTreeMap::new(),
            nr_dirtied: 0,
            nr_dirtied_pause: crate::dirty::DIRTY_POLL_THRESH,
            dirty_paused_when: 0,
            dirties: PropLocal::default(),
            busy: None,
            cpu_ns: 0,
        });
        (self.tasks.len() - 1) as TaskId
    }

    /// Puts `[offset, offset + len)` of `file` in the cache, clean, at no cost (fio's
    /// `pre_read`, done before the job's clock starts).
    pub fn preload(&mut self, file: FileId, offset: u64, len: u64) {
        let (a, b) = page_range(offset, len);
        let b = b.min(self.file_pages(file));
        let holes = self.pages.holes(file, a, b);
        let gen = self.pages.gen_for(b - a);
        for (s, e) in holes {
            self.alloc(e - s);
            self.pages.insert(file, s, e, crate::pages::PageState::Clean, gen);
        }
    }

    /// The CPU task `t` runs on (tasks are spread round-robin; the model has no scheduler).
    fn task_cpu(&self, t: TaskId) -> usize {
        t as usize % self.cpu_dirtied.len()
    }

    /// The thresholds for the machine now.
    fn limits(&self) -> Limits {
        Self::limits_for(&self.cfg)
    }

    fn limits_for(cfg: &VmConfig) -> Limits {
        crate::dirty::global_dirty_limits(
            &cfg.sysctl,
            cfg.cache_pages(),
            !cfg.kernel.io_less_throttling(),
        )
    }

    fn jiffies(&self, now: Nanos) -> u64 {
        (now as u128 * self.cfg.hz as u128 / NS_PER_SEC as u128) as u64
    }

    fn jiffies_to_ns(&self, j: u64) -> Nanos {
        (j as u128 * NS_PER_SEC as u128 / self.cfg.hz as u128) as Nanos
    }

    /// Pages in the file's address space (its allocated size).
    fn file_pages(&self, f: FileId) -> u64 {
        self.files[f as usize].spec.size_bytes.div_ceil(PAGE_BYTES)
    }

    /// Pages holding data (reads past them need no I/O).
    fn data_pages(&self, f: FileId) -> u64 {
        self.files[f as usize].spec.data_bytes.div_ceil(PAGE_BYTES)
    }

    /// Makes room for `n` new pages, reclaiming clean ones if free memory runs low.
    fn alloc(&mut self, n: u64) {
        let cap = self.cfg.cache_pages();
        let used = self.pages.total.cached;
        let want_free = n + self.min_free_pages;
        if cap.saturating_sub(used) < want_free {
            // Reclaim a batch beyond the need (kswapd works to the high watermark).
            let need = want_free - cap.saturating_sub(used) + 32;
            let freed = self.pages.reclaim(need, 64 + need as usize / 32);
            self.stats.pages_reclaimed += freed;
        }
    }

    /// `task` sleeps until I/O `tag` completes (`wait_on_page_locked`,
    /// `wait_on_page_writeback`, `wait_on_buffer`): waiting runs the I/O's queue.
    pub(super) fn wait_on_io(&mut self, tag: IoTag, task: TaskId, out: &mut Output) {
        let rec = self.ios[tag as usize].as_mut().expect("an I/O in flight");
        rec.waiters.push(task);
        out.run_queue(rec.bdi);
    }

    fn new_io(&mut self, kind: IoKind, bdi: u32) -> IoTag {
        let rec = IoRec { kind, bdi, held: false, waiters: Vec::new(), journals: Vec::new() };
        match self.free_ios.pop() {
            Some(t) => {
                self.ios[t as usize] = Some(rec);
                t
            }
            None => {
                self.ios.push(Some(rec));
                (self.ios.len() - 1) as IoTag
            }
        }
    }

    fn add_timer(&mut self, at: Nanos, t: Timer) {
        self.timer_seq += 1;
        self.timers.insert((at, self.timer_seq), t);
    }

    /// The writeback domain of cgroup `cgroup` on device `bdi`, made on first use
    /// (`wb_get_create`): the device's root one for the root cgroup.
    fn wb_for(&mut self, bdi: u32, cgroup: u32) -> u32 {
        if cgroup == 0 {
            return bdi;
        }
        if let Some(&wb) = self.wb_of.get(&(bdi, cgroup)) {
            return wb;
        }
        let wb = self.wbs.len() as u32;
        self.wbs.push(Wb::new(bdi, cgroup));
        self.wb_of.insert((bdi, cgroup), wb);
        wb
    }

    /// `inode_attach_wb`, at a file's first dirtying by `task`: with cgroup writeback
    /// ([`crate::Kernel::cgroup_writeback`]) the file joins the writeback domain of the
    /// task's cgroup on its device, which writes it back from then on. Deviation: the kernel
    /// takes the cgroup its first dirtied page is charged to (whoever read it in, if it was
    /// cached), and later moves an inode that another cgroup mostly writes to that cgroup's
    /// domain (`inode_switch_wbs`); here the first writer's cgroup keeps it.
    pub(super) fn attach_wb(&mut self, file: FileId, task: TaskId) {
        let meta = &self.files[file as usize];
        if meta.wb_attached || meta.metadata || !self.cfg.kernel.cgroup_writeback() {
            return;
        }
        let (bdi, cgroup) = (meta.spec.bdi, self.tasks[task as usize].owner.cgroup);
        let wb = self.wb_for(bdi, cgroup);
        let meta = &mut self.files[file as usize];
        meta.wb_attached = true;
        if meta.wb != wb {
            debug_assert!(!meta.queued, "a file is attached before it is first dirty");
            meta.wb = wb;
            self.pages.move_file(file, wb);
        }
    }

    /// The owner of the flusher of writeback domain `wb`: the device's flusher thread, in
    /// the domain's cgroup.
    fn flusher_owner(&self, wb: u32) -> Owner {
        let w = &self.wbs[wb as usize];
        Owner { cgroup: w.cgroup, ..Owner::kernel_thread(FLUSHER_PID_BASE + w.bdi) }
    }

    /// When the Vm next wants [`Vm::timer`] called.
    pub fn next_timer_ns(&self) -> Option<Nanos> {
        self.timers.keys().next().map(|&(t, _)| t)
    }

    /// Runs the timers due at `now`.
    pub fn timer(&mut self, now: Nanos, out: &mut Output) {
        while let Some(entry) = self.timers.first_entry() {
            if entry.key().0 > now {
                break;
            }
            match entry.remove() {
                Timer::Task(t) => self.resume(t, now, out),
                Timer::Flusher(b) => self.flusher_wake(b, now, out),
                Timer::Journal(j) => self.journal_timer(j, now, out),
            }
        }
    }

    /// A system call of `task` at `now`.
    pub fn syscall(
        &mut self,
        task: TaskId,
        call: Syscall,
        now: Nanos,
        out: &mut Output,
    ) -> SyscallResult {
        debug_assert!(self.tasks[task as usize].busy.is_none(), "one call at a time");
        match call {
            Syscall::Read { file, offset, len, count } => {
                self.read(task, file, offset, len, count, now, out)
            }
            Syscall::Write { file, offset, len, count, sync } => {
                self.write(task, file, offset, len, count, sync, now, out)
            }
            Syscall::Fsync { file, data_only: _ } => {
                let cost = self.cfg.syscall_ns;
                self.tasks[task as usize].cpu_ns = cost;
                self.fsync_range(task, file, 0, u64::MAX, now, out)
            }
            Syscall::Fadvise { file, offset, len, advice } => {
                self.fadvise(task, file, offset, len, advice, now, out);
                SyscallResult::Done { count: 1, at_ns: now + self.cfg.syscall_ns }
            }
            Syscall::SyncFileRange { file, offset, len, flags } => {
                self.tasks[task as usize].cpu_ns = self.cfg.syscall_ns;
                self.sync_file_range(task, file, offset, len, flags, now, out)
            }
            Syscall::Create { file } => self.create(task, file, now, out),
            Syscall::Unlink { file } => self.unlink(file, now, out),
            Syscall::Open { file } => self.open_file(task, file, now, out),
        }
    }

    /// Block I/O `tag` completed at `now`.
    pub fn io_done(&mut self, tag: IoTag, now: Nanos, out: &mut Output) {
        let rec = self.ios[tag as usize].take().expect("a live I/O");
        self.free_ios.push(tag);
        match rec.kind {
            IoKind::Read { file, start, end } => {
                self.pages.modify(file, start, end, |_, e| {
                    Some(match e.state {
                        crate::pages::PageState::Reading(t) if t == tag => {
                            crate::pages::Extent { state: crate::pages::PageState::Clean, ..*e }
                        }
                        _ => *e,
                    })
                });
                self.stats.pages_read += end - start;
            }
            IoKind::Write { file, start, end, requests, sync } => {
                let held = rec.held;
                self.write_done(tag, rec.bdi, file, start, end, requests, sync, held, now, out);
            }
            IoKind::Flush => {}
        }
        for t in rec.waiters {
            self.io_waited(t, out);
        }
        for j in rec.journals {
            self.journal_io_done(j, now, out);
        }
    }

    /// The block layer holds I/O `tag` before it becomes requests: blk-throttle (`io.max`)
    /// queues bios of a cgroup over its limit and issues them later, and a writeback bio
    /// held there takes no request from the pool (`blk_throtl_bio` runs before
    /// `get_request`). Its slots go to whoever waits for one until [`Vm::io_released`].
    pub fn io_held(&mut self, tag: IoTag, now: Nanos, out: &mut Output) {
        let Some(rec) = self.ios.get_mut(tag as usize).and_then(Option::as_mut) else { return };
        let IoKind::Write { file, requests, sync: false, .. } = rec.kind else { return };
        if rec.held {
            return;
        }
        rec.held = true;
        let bdi = rec.bdi;
        self.count_async(file, requests, false);
        self.grant_slots(bdi, now, out);
    }

    /// The block layer let held I/O `tag` go: it takes its requests now (past a full pool,
    /// as the bio waits for them in the block layer, not in the page cache). Said of an I/O
    /// not held (let go at once, or done), it changes nothing.
    pub fn io_released(&mut self, tag: IoTag) {
        let Some(rec) = self.ios.get_mut(tag as usize).and_then(Option::as_mut) else { return };
        let IoKind::Write { file, requests, .. } = rec.kind else { return };
        if !rec.held {
            return;
        }
        rec.held = false;
        self.count_async(file, requests, true);
    }

    /// Counts `requests` async requests of `file`'s writeback in (`add`) or out of flight,
    /// on its device and its writeback domain.
    pub(super) fn count_async(&mut self, file: FileId, requests: u32, add: bool) {
        let meta = &self.files[file as usize];
        let (bdi, wb) = (meta.spec.bdi as usize, meta.wb as usize);
        let (b, w) = (&mut self.bdis[bdi].async_requests, &mut self.wbs[wb].async_requests);
        if add {
            *b += requests;
            *w += requests;
        } else {
            *b -= requests.min(*b);
            *w -= requests.min(*w);
        }
    }

    /// A task that waited for an I/O may go on: it becomes runnable.
    fn io_waited(&mut self, t: TaskId, out: &mut Output) {
        match self.tasks[t as usize].busy {
            Some(Busy::Sync { pending, flushed, bdi, file, range }) => {
                let pending = pending - 1;
                self.tasks[t as usize].busy =
                    Some(Busy::Sync { pending, flushed, bdi, file, range });
                if pending == 0 {
                    out.runnable.push(t);
                }
            }
            Some(Busy::RangeSync { stage, pending, file, a, b, flags }) => {
                let pending = pending - 1;
                self.tasks[t as usize].busy =
                    Some(Busy::RangeSync { stage, pending, file, a, b, flags });
                if pending == 0 {
                    out.runnable.push(t);
                }
            }
            Some(_) => out.runnable.push(t),
            None => {}
        }
    }

    /// Runs a task [`Output::runnable`] named, at `now`.
    pub fn run(&mut self, t: TaskId, now: Nanos, out: &mut Output) {
        self.resume(t, now, out);
    }

    /// Whether a block I/O of `op` that someone waits for (`sync`) reaches the scheduler as a
    /// sync request on this machine's kernel: writes only from 2.6.30
    /// ([`crate::Kernel::sync_write_requests`]).
    fn scheduler_sync(&self, op: Op, sync: bool) -> bool {
        sync && (op != Op::Write || self.cfg.kernel.sync_write_requests())
    }

    /// Goes on with task `t`'s blocked call at `now`.
    fn resume(&mut self, t: TaskId, now: Nanos, out: &mut Output) {
        let Some(busy) = self.tasks[t as usize].busy.take() else { return };
        match busy {
            Busy::Read { file, pos, end, req_start } => {
                self.read_resume(t, file, pos, end, req_start, now, out)
            }
            Busy::WriteRead { file, offset, len, sync } => {
                match self.write(t, file, offset, len, 1, sync, now, out) {
                    SyscallResult::Done { at_ns, .. } => out.wakes.push(Wake { task: t, at_ns }),
                    SyscallResult::Blocked { .. } => {}
                }
            }
            Busy::Balance(b) => self.balance_resume(t, b, now, out),
            Busy::Create { file, create } => match if create {
                self.create(t, file, now, out)
            } else {
                self.open_file(t, file, now, out)
            } {
                SyscallResult::Done { at_ns, .. } => {
                    let at_ns = at_ns.max(now + self.tasks[t as usize].cpu_ns);
                    out.wakes.push(Wake { task: t, at_ns })
                }
                SyscallResult::Blocked { .. } => {}
            },
            Busy::Commit { tid } => self.tasks[t as usize].busy = Some(Busy::Commit { tid }),
            Busy::RangeSync { stage, pending, file, a, b, flags } => {
                debug_assert_eq!(pending, 0);
                self.range_sync_step(t, stage, file, a, b, flags, now, out);
            }
            Busy::Sync { pending, flushed, bdi, file, range } => {
                debug_assert_eq!(pending, 0);
                // WB_SYNC_ALL waits for pages under writeback and then writes those that
                // were dirtied again meanwhile.
                let again = if flushed {
                    Vec::new()
                } else {
                    self.writeback_range(file, range.0, range.1, true, Some(t), now, out)
                };
                if !again.is_empty() {
                    for &tag in &again {
                        self.wait_on_io(tag, t, out);
                    }
                    let pending = again.len() as u32;
                    self.tasks[t as usize].busy =
                        Some(Busy::Sync { pending, flushed, bdi, file, range });
                } else if !flushed && self.fsync_commit(t, file, now, out) {
                    // ext3: the commit (with its barrier) ends the fsync.
                } else if !flushed && self.barriers {
                    let tag = self.new_io(IoKind::Flush, bdi);
                    self.wait_on_io(tag, t, out);
                    out.ios.push(BlockIo {
                        tag,
                        bdi,
                        op: Op::Flush,
                        offset_bytes: 0,
                        len_bytes: 0,
                        sync: true,
                        meta: false,
                        background: false,
                        owner: self.tasks[t as usize].owner,
                    });
                    self.tasks[t as usize].busy =
                        Some(Busy::Sync { pending: 1, flushed: true, bdi, file, range });
                } else {
                    let cpu = self.tasks[t as usize].cpu_ns;
                    out.wakes.push(Wake { task: t, at_ns: now + cpu });
                }
            }
        }
    }

    /// The open-file state of `task` for `file`, created with the device's readahead.
    fn open(&mut self, task: TaskId, file: FileId) -> &mut OpenFile {
        let i = match self.tasks[task as usize].files.get(&file) {
            Some(&i) => i,
            None => {
                let bdi = self.files[file as usize].spec.bdi;
                let ra_pages = u64::from(self.bdis[bdi as usize].spec.read_ahead_kb) / 4;
                self.open_files.push(OpenFile { ra: RaState::new(ra_pages), random: false });
                let i = (self.open_files.len() - 1) as u32;
                self.tasks[task as usize].files.insert(file, i);
                i
            }
        };
        &mut self.open_files[i as usize]
    }

    /// Makes `task` use the same open file (readahead state) for `file` as `with`: threads
    /// reading through one `struct file`, as an iSCSI target's threads may.
    pub fn share_open(&mut self, task: TaskId, file: FileId, with: TaskId) {
        self.open(with, file);
        let i = self.tasks[with as usize].files[&file];
        self.tasks[task as usize].files.insert(file, i);
    }
}

/// The pages `[a, b)` a byte range touches.
fn page_range(offset: u64, len: u64) -> (u64, u64) {
    (offset / PAGE_BYTES, (offset + len).div_ceil(PAGE_BYTES))
}

#[cfg(test)]
mod tests;
