//! An ext3 file system's journal (`fs/jbd`) in ordered mode, and the file-system metadata
//! it carries: what makes writes on ext3 reach the disk when they do, and as what.
//!
//! Every operation that changes metadata joins the **running transaction**: creating a file
//! (its inode block, its directory block, the inode bitmap, the group descriptor), writing
//! (the inode's size and times; for newly allocated blocks the block bitmap of their group
//! and an indirect block per 1024 blocks) and deleting. In `data=ordered` mode every page a
//! `write()` dirties is also filed on the transaction (`ext3_ordered_write_end` →
//! `journal_dirty_data`): its data must be on the disk before the transaction commits.
//!
//! The journal thread (`kjournald`) commits the running transaction [`JournalSpec::
//! commit_interval_ns`] after it began (`commit=`, 5 s), when someone waits for it
//! (`fsync`), or when its metadata fills a quarter of the journal
//! (`j_max_transaction_buffers`). A commit (`journal_commit_transaction`) first writes every
//! ordered data page of the transaction that is still dirty and waits for those already
//! under writeback (phase 2, `journal_submit_data_buffers`), then writes the metadata
//! blocks with their descriptor blocks to the journal area, sequentially from its head
//! (phase 3), then the commit block — with `barrier=1` as a barrier: a cache flush before
//! and after it. The committed metadata blocks are then dirty at their home locations (the
//! checkpoint list, kept here as the block device's own cached pages, [`Journal::
//! meta_file`]), written back by the flusher like any dirty page, or by a checkpoint when
//! the journal runs short of space (`log_do_checkpoint`, before a commit that would leave
//! less than a quarter of it free).
//!
//! The commit's writes are issued as the journal thread, as sync requests (`WRITE_SYNC`,
//! noidle in the eyes of CFQ, AS and deadline) or plain `WRITE`s by kernel era
//! ([`crate::Kernel::jbd_commit_sync`]): async up to 2.6.29, sync only when a task waits
//! for the commit in 2.6.30-2.6.36 and from 3.5, sync always in 2.6.37-3.4. The sync
//! commits of 2.6.37-3.4 are what put a streaming writer's data in the way of reads every
//! five seconds on ext3 (seed 004's 3.2). The commit block is sync from 2.6.30
//! ([`crate::Kernel::jbd_commit_record_sync`]); a checkpoint's writes from 3.1
//! ([`crate::Kernel::jbd_checkpoint_sync`]).
//!
//! `fsync` on ext3 (`ext3_sync_file`) writes and waits for the file's own dirty pages, then,
//! if its inode changed in a transaction not yet committed, forces that commit and waits
//! for it: the commit writes every other file's ordered data too.
//!
//! Deviations, all for what the scheduler sees being unchanged: handles never wait for a
//! locked transaction (`T_LOCKED` lasts only until running handles stop, microseconds
//! here); revoke records, `data=journal` and the journal superblock updates are not
//! modelled; an indirect block is placed at the first data block it maps (ext3 puts it just
//! before); block and inode bitmaps are the group's second and third blocks and the group
//! descriptors the file system's second block.

use std::collections::BTreeSet;

use elevator_core::{Nanos, Op, Owner};

use super::write::WritebackBy;
use super::{BlockIo, Busy, IoKind, Output, SyscallResult, TaskId, Timer, Vm, Wake};
use crate::pages::{FileId, IoTag, PageState};
use crate::readahead::PAGE_BYTES;

/// A journal of the machine.
pub type JournalId = u32;

/// Pid of the first journal thread (`kjournald`); one per file system after it.
pub const JOURNAL_PID_BASE: u32 = 3_000_000;
/// ext3's block group: 32768 blocks of 4 KiB.
pub const GROUP_BYTES: u64 = 128 << 20;
/// Tags in one descriptor block: (4096 - 12-byte header - 16-byte UUID) / 8-byte tags.
pub const TAGS_PER_DESCRIPTOR: u64 = 508;
/// Blocks one indirect block maps (4096 / 4-byte block numbers).
pub const PAGES_PER_INDIRECT: u64 = 1024;
/// ext3's direct blocks in the inode (`EXT3_NDIR_BLOCKS`).
pub const DIRECT_BLOCKS: u64 = 12;
/// The smallest journal jbd accepts (`JFS_MIN_JOURNAL_BLOCKS`, 1024 blocks).
pub const MIN_JOURNAL_BYTES: u64 = 1024 * PAGE_BYTES;
/// The longest commit interval accepted (`commit=`; the kernel takes any, a day is plenty).
pub const MAX_COMMIT_INTERVAL_NS: Nanos = 24 * 3600 * elevator_core::NS_PER_SEC;

/// An ext3 file system on a backing device: where it lies, where its journal is, how it
/// is mounted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JournalSpec {
    pub bdi: u32,
    /// The file system's first byte on the device and its length.
    pub fs_start_bytes: u64,
    pub fs_len_bytes: u64,
    /// The journal area on the device.
    pub journal_start_bytes: u64,
    pub journal_bytes: u64,
    /// `commit=` (5 s, `JBD_DEFAULT_MAX_COMMIT_AGE`).
    pub commit_interval_ns: Nanos,
    /// `data=ordered` (the default); `false` is `data=writeback`.
    pub ordered: bool,
    /// `barrier=1`: the commit block goes between cache flushes.
    pub barrier: bool,
}

impl JournalSpec {
    /// Checks the layout and the mount options against their limits.
    pub fn validate(&self) -> Result<(), String> {
        if self.journal_bytes < MIN_JOURNAL_BYTES {
            return Err(format!(
                "journal of {} bytes is below jbd's minimum of {MIN_JOURNAL_BYTES} (1024 blocks)",
                self.journal_bytes
            ));
        }
        let fs_end = self.fs_start_bytes.saturating_add(self.fs_len_bytes);
        let j_end = self.journal_start_bytes.saturating_add(self.journal_bytes);
        if self.journal_start_bytes < self.fs_start_bytes || j_end > fs_end {
            return Err("the journal must lie inside its file system".into());
        }
        if !(1..=MAX_COMMIT_INTERVAL_NS).contains(&self.commit_interval_ns) {
            return Err("commit interval must be between 1 ns and a day".into());
        }
        Ok(())
    }
}

/// One transaction's contents.
#[derive(Clone, Debug, Default)]
struct Transaction {
    tid: u64,
    /// Files with ordered data in it.
    files: BTreeSet<FileId>,
    /// Metadata blocks (device byte offsets) it changed.
    meta: BTreeSet<u64>,
    /// A task waits for its commit.
    waited: bool,
    began_ns: Nanos,
}

/// Where a commit is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Writing the ordered data (and waiting for data already under writeback).
    Data,
    /// Writing back checkpointed metadata to make room in the journal.
    Checkpoint,
    /// Descriptor and metadata blocks going to the journal.
    Log,
    /// The flush before the commit block (barrier).
    PreFlush,
    Commit,
    /// The flush after it (barrier).
    PostFlush,
}

#[derive(Clone, Debug)]
struct Committing {
    t: Transaction,
    phase: Phase,
    pending: u32,
    sync: bool,
    log_blocks: u64,
}

/// Counters of one journal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JournalStats {
    pub commits: u64,
    pub ordered_pages: u64,
    pub log_blocks: u64,
    pub checkpoints: u64,
}

/// One file system's journal and its thread.
pub(super) struct Journal {
    pub(super) spec: JournalSpec,
    /// The block device's cached pages: the file system's metadata blocks.
    pub(super) meta_file: FileId,
    owner: Owner,
    running: Option<Transaction>,
    committing: Option<Committing>,
    next_tid: u64,
    committed_tid: u64,
    /// A commit of the running transaction is wanted as soon as the current one ends.
    commit_requested: bool,
    /// Tasks waiting for the commit of a transaction.
    waiters: Vec<(u64, TaskId)>,
    /// Next block of the journal area to write, and blocks written since the last
    /// checkpoint freed them.
    head_blocks: u64,
    used_blocks: u64,
    pub(super) stats: JournalStats,
}

impl Journal {
    fn blocks(&self) -> u64 {
        self.spec.journal_bytes / PAGE_BYTES
    }

    /// The metadata blocks a transaction may gather before it is committed.
    fn max_transaction_blocks(&self) -> u64 {
        self.blocks() / 4
    }
}

/// Journal blocks a transaction with `meta` metadata blocks writes before its commit block.
pub fn log_blocks(meta: u64) -> u64 {
    meta + meta.div_ceil(TAGS_PER_DESCRIPTOR)
}

impl Vm {
    /// Mounts an ext3 file system: its journal, and the cache of its metadata blocks.
    /// `spec` must be valid.
    pub fn add_journal(&mut self, spec: JournalSpec) -> JournalId {
        debug_assert!(spec.validate().is_ok());
        let j = self.journals.len() as JournalId;
        let meta_file = self.add_file(super::FileSpec {
            bdi: spec.bdi,
            base_bytes: spec.fs_start_bytes,
            size_bytes: spec.fs_len_bytes,
            data_bytes: spec.fs_len_bytes,
            inode_bytes: None,
            dir_bytes: None,
        });
        self.files[meta_file as usize].journal = None;
        self.files[meta_file as usize].metadata = true;
        let pid = JOURNAL_PID_BASE + j;
        self.journals.push(Journal {
            spec,
            meta_file,
            owner: Owner::kernel_thread(pid),
            running: None,
            committing: None,
            next_tid: 1,
            committed_tid: 0,
            commit_requested: false,
            waiters: Vec::new(),
            head_blocks: 0,
            used_blocks: 0,
            stats: JournalStats::default(),
        });
        j
    }

    /// The journal of the file system holding byte `base` of device `bdi`, if any.
    pub(super) fn journal_at(&self, bdi: u32, base: u64) -> Option<JournalId> {
        self.journals
            .iter()
            .position(|j| {
                j.spec.bdi == bdi
                    && base >= j.spec.fs_start_bytes
                    && base - j.spec.fs_start_bytes < j.spec.fs_len_bytes
            })
            .map(|j| j as JournalId)
    }

    /// Counters of journal `j`.
    pub fn journal_stats(&self, j: JournalId) -> JournalStats {
        self.journals[j as usize].stats
    }

    /// The running transaction of `j`, begun now if there is none (`start_this_handle`).
    fn running(&mut self, j: JournalId, now: Nanos) -> &mut Transaction {
        let interval = self.journals[j as usize].spec.commit_interval_ns;
        if self.journals[j as usize].running.is_none() {
            let jr = &mut self.journals[j as usize];
            let tid = jr.next_tid;
            jr.next_tid += 1;
            jr.running = Some(Transaction { tid, began_ns: now, ..Transaction::default() });
            self.add_timer(now + interval, Timer::Journal(j));
        }
        self.journals[j as usize].running.as_mut().expect("begun")
    }

    /// Files metadata blocks on the running transaction (a handle's dirtied buffers).
    fn journal_meta(&mut self, j: JournalId, blocks: &[u64], now: Nanos, out: &mut Output) {
        let t = self.running(j, now);
        t.meta.extend(blocks.iter().map(|b| b / PAGE_BYTES * PAGE_BYTES));
        let n = t.meta.len() as u64;
        if n >= self.journals[j as usize].max_transaction_blocks() {
            self.journal_request_commit(j, now, out);
        }
    }

    /// The inode block of `file` (its own, or one of the first group's inode table).
    fn inode_block(&self, file: FileId) -> u64 {
        let spec = self.files[file as usize].spec;
        match spec.inode_bytes {
            Some(b) => b,
            None => {
                let j = self.files[file as usize].journal.expect("a file on ext3");
                self.journals[j as usize].spec.fs_start_bytes + 4 * PAGE_BYTES
            }
        }
    }

    fn group_start(&self, j: JournalId, bytes: u64) -> u64 {
        let fs = self.journals[j as usize].spec.fs_start_bytes;
        fs + (bytes.saturating_sub(fs)) / GROUP_BYTES * GROUP_BYTES
    }

    /// A `write()` dirtied pages of `file`, growing its data from `old_bytes` to
    /// `new_bytes`: its ordered data, inode, and the metadata of newly allocated blocks join
    /// the running transaction. Costs a few set insertions per 4 MiB written.
    pub(super) fn journal_write(
        &mut self,
        file: FileId,
        old_bytes: u64,
        new_bytes: u64,
        now: Nanos,
        out: &mut Output,
    ) {
        let Some(j) = self.files[file as usize].journal else { return };
        let base = self.files[file as usize].spec.base_bytes;
        let mut blocks = vec![self.inode_block(file)];
        if new_bytes > old_bytes {
            let (a, b) = (old_bytes.div_ceil(PAGE_BYTES), new_bytes.div_ceil(PAGE_BYTES));
            // An indirect block for each run of 1024 blocks begun past the direct ones.
            let first = a.max(DIRECT_BLOCKS);
            if b > first {
                let mut c = (first - DIRECT_BLOCKS) / PAGES_PER_INDIRECT;
                while DIRECT_BLOCKS + c * PAGES_PER_INDIRECT < b {
                    blocks.push(base + (DIRECT_BLOCKS + c * PAGES_PER_INDIRECT) * PAGE_BYTES);
                    c += 1;
                }
            }
            // The block bitmap of each group the new blocks lie in, and the descriptors.
            let mut g = self.group_start(j, base + a * PAGE_BYTES);
            while g < base + b * PAGE_BYTES {
                blocks.push(g + PAGE_BYTES);
                g += GROUP_BYTES;
            }
            blocks.push(self.journals[j as usize].spec.fs_start_bytes + PAGE_BYTES);
        }
        let ordered = self.journals[j as usize].spec.ordered;
        let t = self.running(j, now);
        if ordered {
            t.files.insert(file);
        }
        let tid = t.tid;
        self.files[file as usize].meta_tid = Some(tid);
        self.journal_meta(j, &blocks, now, out);
    }

    /// `creat()` of `file` on ext3: reads its inode and directory blocks if they are not
    /// cached, then changes them, the inode bitmap and the group descriptors.
    pub(super) fn create(
        &mut self,
        task: TaskId,
        file: FileId,
        now: Nanos,
        out: &mut Output,
    ) -> SyscallResult {
        let Some(j) = self.files[file as usize].journal else {
            return SyscallResult::Done { count: 1, at_ns: now + self.cfg.syscall_ns };
        };
        let spec = self.files[file as usize].spec;
        let inode = self.inode_block(file);
        let dir = spec.dir_bytes.unwrap_or(inode);
        // `__ext3_get_inode_loc` with `in_mem`: an inode block whose other inodes are all
        // free is zeroed in memory, not read; a directory block no entry uses yet is one
        // `mkdir` or `ext3_append` just made (`ext3_getblk` with `create`).
        let mut read = Vec::with_capacity(2);
        for b in [dir, inode] {
            if self.meta_users.get(&(b / PAGE_BYTES * PAGE_BYTES)).is_some_and(|&n| n > 0) {
                read.push(b);
            } else {
                self.fresh_meta_block(j, b);
            }
        }
        if self.meta_wait(task, j, &read, file, true, out) {
            return SyscallResult::Blocked { count: 0 };
        }
        self.use_meta_blocks(file, true);
        let group = self.group_start(j, inode);
        let gdt = self.journals[j as usize].spec.fs_start_bytes + PAGE_BYTES;
        self.journal_meta(j, &[inode, dir, group + 2 * PAGE_BYTES, gdt], now, out);
        let tid = self.running(j, now).tid;
        self.files[file as usize].meta_tid = Some(tid);
        let f = &mut self.files[file as usize].spec;
        f.data_bytes = 0;
        SyscallResult::Done { count: 1, at_ns: now + self.cfg.syscall_ns }
    }

    /// `open()` of `file` on ext3: its inode block is read if it is not cached.
    pub(super) fn open_file(
        &mut self,
        task: TaskId,
        file: FileId,
        now: Nanos,
        out: &mut Output,
    ) -> SyscallResult {
        let done = SyscallResult::Done { count: 1, at_ns: now + self.cfg.syscall_ns };
        let Some(j) = self.files[file as usize].journal else { return done };
        let inode = self.inode_block(file);
        if self.meta_wait(task, j, &[inode], file, false, out) {
            return SyscallResult::Blocked { count: 0 };
        }
        done
    }

    /// `unlink()` of `file`: its cached pages go (those under I/O finish first), its inode,
    /// directory block, bitmaps and descriptors change.
    pub(super) fn unlink(&mut self, file: FileId, now: Nanos, out: &mut Output) -> SyscallResult {
        let done = SyscallResult::Done { count: 1, at_ns: now + self.cfg.syscall_ns };
        let pages = self.file_pages(file);
        self.pages.modify(file, 0, pages, |_, e| match e.state {
            PageState::Clean | PageState::Dirty => None,
            _ => Some(*e),
        });
        let spec = self.files[file as usize].spec;
        self.files[file as usize].spec.data_bytes = 0;
        self.dirty_order[file as usize].clear();
        let Some(j) = self.files[file as usize].journal else { return done };
        self.use_meta_blocks(file, false);
        let inode = self.inode_block(file);
        let mut blocks = vec![inode, spec.dir_bytes.unwrap_or(inode)];
        let group = self.group_start(j, inode);
        blocks.push(group + 2 * PAGE_BYTES);
        let mut g = self.group_start(j, spec.base_bytes);
        while g < spec.base_bytes + spec.data_bytes {
            blocks.push(g + PAGE_BYTES);
            g += GROUP_BYTES;
        }
        blocks.push(self.journals[j as usize].spec.fs_start_bytes + PAGE_BYTES);
        self.journal_meta(j, &blocks, now, out);
        done
    }

    /// Counts `file` among the users of its inode and directory blocks (`in_use`), or no
    /// longer; once either way (a `creat()` of a file that exists truncates it and keeps its
    /// inode).
    pub(super) fn use_meta_blocks(&mut self, file: FileId, in_use: bool) {
        if std::mem::replace(&mut self.files[file as usize].exists, in_use) == in_use {
            return;
        }
        let inode = self.inode_block(file);
        let dir = self.files[file as usize].spec.dir_bytes.unwrap_or(inode);
        let blocks =
            if dir / PAGE_BYTES == inode / PAGE_BYTES { &[inode][..] } else { &[inode, dir] };
        for &b in blocks {
            let n = self.meta_users.entry(b / PAGE_BYTES * PAGE_BYTES).or_default();
            *n = if in_use { *n + 1 } else { n.saturating_sub(1) };
        }
    }

    /// A metadata block made in memory: cached (clean until the transaction dirties it)
    /// without a read.
    fn fresh_meta_block(&mut self, j: JournalId, b: u64) {
        let mf = self.journals[j as usize].meta_file;
        let p = (b - self.journals[j as usize].spec.fs_start_bytes) / PAGE_BYTES;
        if self.pages.get(mf, p).is_none() {
            self.alloc(1);
            let gen = self.pages.gen_for(1);
            self.pages.insert(mf, p, p + 1, PageState::Clean, gen);
        }
    }

    /// `creat()` or `open()` of `file` needs `blocks`: true if the task now waits for one
    /// to be read (its call resumes when it is).
    #[allow(clippy::too_many_arguments)]
    fn meta_wait(
        &mut self,
        task: TaskId,
        j: JournalId,
        blocks: &[u64],
        file: FileId,
        create: bool,
        out: &mut Output,
    ) -> bool {
        let Some(tag) = self.meta_read(task, j, blocks, out) else { return false };
        self.wait_on_io(tag, task, out);
        self.tasks[task as usize].busy = Some(Busy::Create { file, create });
        self.tasks[task as usize].cpu_ns = self.cfg.syscall_ns;
        true
    }

    /// Starts reads of the metadata blocks not cached; the tag of one to wait for, if any.
    fn meta_read(
        &mut self,
        task: TaskId,
        j: JournalId,
        blocks: &[u64],
        out: &mut Output,
    ) -> Option<IoTag> {
        let mf = self.journals[j as usize].meta_file;
        let base = self.journals[j as usize].spec.fs_start_bytes;
        let mut wait = None;
        for &b in blocks {
            let p = (b - base) / PAGE_BYTES;
            if self.pages.get(mf, p).is_none() {
                self.read_pages(task, mf, p, p + 1, None, out);
            }
            if let Some((_, e)) = self.pages.get(mf, p) {
                if let PageState::Reading(t) = e.state {
                    wait.get_or_insert(t);
                }
            }
        }
        wait
    }

    /// `fsync` of a file on ext3 found its data written: if its inode changed in a
    /// transaction not yet committed, force that commit and wait for it. True if the task
    /// now waits for a commit.
    pub(super) fn fsync_commit(
        &mut self,
        task: TaskId,
        file: FileId,
        now: Nanos,
        out: &mut Output,
    ) -> bool {
        let Some(j) = self.files[file as usize].journal else { return false };
        let Some(tid) = self.files[file as usize].meta_tid else { return false };
        let jr = &mut self.journals[j as usize];
        if tid <= jr.committed_tid {
            return false;
        }
        jr.waiters.push((tid, task));
        if let Some(t) = jr.running.as_mut().filter(|t| t.tid == tid) {
            t.waited = true;
        }
        if let Some(c) = jr.committing.as_mut().filter(|c| c.t.tid == tid) {
            c.t.waited = true;
        }
        self.tasks[task as usize].busy = Some(Busy::Commit { tid });
        if self.journals[j as usize].running.as_ref().is_some_and(|t| t.tid == tid) {
            self.journal_request_commit(j, now, out);
        }
        true
    }

    /// Asks for the running transaction's commit (now, or when the current one ends).
    fn journal_request_commit(&mut self, j: JournalId, now: Nanos, out: &mut Output) {
        if self.journals[j as usize].committing.is_some() {
            self.journals[j as usize].commit_requested = true;
        } else {
            self.commit_start(j, now, out);
        }
    }

    /// The commit timer of `j` fired.
    pub(super) fn journal_timer(&mut self, j: JournalId, now: Nanos, out: &mut Output) {
        let jr = &self.journals[j as usize];
        let due =
            jr.running.as_ref().is_some_and(|t| now >= t.began_ns + jr.spec.commit_interval_ns);
        if due {
            self.journal_request_commit(j, now, out);
        }
    }

    /// `journal_commit_transaction`, phase 2: the ordered data.
    fn commit_start(&mut self, j: JournalId, now: Nanos, out: &mut Output) {
        let jr = &mut self.journals[j as usize];
        jr.commit_requested = false;
        let Some(t) = jr.running.take() else { return };
        let sync = self.cfg.kernel.jbd_commit_sync(t.waited);
        let owner = jr.owner;
        let files: Vec<FileId> = t.files.iter().copied().collect();
        let mut tags: Vec<IoTag> = Vec::new();
        let mut pages = 0;
        for f in files {
            let last = self.file_pages(f);
            tags.extend(self.pages.overlapping(f, 0, last).iter().filter_map(
                |(_, e)| match e.state {
                    PageState::Writeback { io, .. } => Some(io),
                    _ => None,
                },
            ));
            let (issued, sent, _) =
                self.writeback_as(f, 0, last, u64::MAX, sync, owner, WritebackBy::Journal, out);
            tags.extend(issued);
            pages += sent;
        }
        tags.sort_unstable();
        tags.dedup();
        for &tag in &tags {
            self.ios[tag as usize].as_mut().expect("in flight").journals.push(j);
        }
        let jr = &mut self.journals[j as usize];
        jr.stats.ordered_pages += pages;
        self.stats.journal_ordered_pages += pages;
        jr.committing = Some(Committing {
            t,
            phase: Phase::Data,
            pending: tags.len() as u32,
            sync,
            log_blocks: 0,
        });
        if tags.is_empty() {
            self.commit_next(j, now, out);
        }
    }

    /// An I/O the commit of `j` waited for completed.
    pub(super) fn journal_io_done(&mut self, j: JournalId, now: Nanos, out: &mut Output) {
        let c = self.journals[j as usize].committing.as_mut().expect("a commit waits");
        c.pending -= 1;
        if c.pending == 0 {
            self.commit_next(j, now, out);
        }
    }

    /// Moves the commit of `j` to its next phase.
    fn commit_next(&mut self, j: JournalId, now: Nanos, out: &mut Output) {
        let (phase, sync) = {
            let c = self.journals[j as usize].committing.as_ref().expect("committing");
            (c.phase, c.sync)
        };
        let barrier = self.journals[j as usize].spec.barrier;
        let next = match phase {
            Phase::Data => {
                let jr = &self.journals[j as usize];
                let c = jr.committing.as_ref().expect("committing");
                let need = log_blocks(c.t.meta.len() as u64) + 1;
                if jr.used_blocks + need > jr.blocks() - jr.max_transaction_blocks() {
                    Phase::Checkpoint
                } else {
                    Phase::Log
                }
            }
            Phase::Checkpoint => {
                self.journals[j as usize].used_blocks = 0;
                self.journals[j as usize].stats.checkpoints += 1;
                self.stats.journal_checkpoints += 1;
                Phase::Log
            }
            Phase::Log if barrier => Phase::PreFlush,
            Phase::Log | Phase::PreFlush => Phase::Commit,
            Phase::Commit if barrier => Phase::PostFlush,
            Phase::Commit | Phase::PostFlush => return self.commit_done(j, now, out),
        };
        let tags = match next {
            Phase::Checkpoint => self.checkpoint(j, out),
            Phase::Log => {
                let n = {
                    let c = self.journals[j as usize].committing.as_mut().expect("committing");
                    c.log_blocks = log_blocks(c.t.meta.len() as u64);
                    c.log_blocks
                };
                self.log_write(j, n, sync, out)
            }
            Phase::PreFlush | Phase::PostFlush => {
                vec![self.journal_io(j, Op::Flush, 0, 0, true, out)]
            }
            Phase::Commit => {
                let sync = self.cfg.kernel.jbd_commit_record_sync();
                self.log_write(j, 1, sync, out)
            }
            Phase::Data => unreachable!("the data phase comes first"),
        };
        let c = self.journals[j as usize].committing.as_mut().expect("committing");
        c.phase = next;
        c.pending = tags.len() as u32;
        if tags.is_empty() {
            self.commit_next(j, now, out);
        }
    }

    /// Writes `n` blocks at the journal's head (two writes where it wraps).
    fn log_write(&mut self, j: JournalId, n: u64, sync: bool, out: &mut Output) -> Vec<IoTag> {
        let mut tags = Vec::new();
        let mut left = n;
        while left > 0 {
            let jr = &self.journals[j as usize];
            let head = jr.head_blocks % jr.blocks();
            let run = left.min(jr.blocks() - head);
            let offset = jr.spec.journal_start_bytes + head * PAGE_BYTES;
            tags.push(self.journal_io(j, Op::Write, offset, run * PAGE_BYTES, sync, out));
            let jr = &mut self.journals[j as usize];
            jr.head_blocks = (head + run) % jr.blocks();
            jr.used_blocks += run;
            jr.stats.log_blocks += run;
            self.stats.journal_log_blocks += run;
            left -= run;
        }
        tags
    }

    /// One I/O of the journal thread that the commit waits for.
    fn journal_io(
        &mut self,
        j: JournalId,
        op: Op,
        offset_bytes: u64,
        len_bytes: u64,
        sync: bool,
        out: &mut Output,
    ) -> IoTag {
        let bdi = self.journals[j as usize].spec.bdi;
        let tag = self.new_io(IoKind::Flush, bdi);
        self.ios[tag as usize].as_mut().expect("new").journals.push(j);
        let owner = self.journals[j as usize].owner;
        let sync = self.scheduler_sync(op, sync);
        let background = false;
        let meta = false;
        out.ios.push(BlockIo {
            tag,
            bdi,
            op,
            offset_bytes,
            len_bytes,
            sync,
            meta,
            background,
            owner,
        });
        tag
    }

    /// `log_do_checkpoint`: writes back the dirty metadata at home and waits for it.
    fn checkpoint(&mut self, j: JournalId, out: &mut Output) -> Vec<IoTag> {
        let mf = self.journals[j as usize].meta_file;
        let owner = self.journals[j as usize].owner;
        let last = self.file_pages(mf);
        let mut tags: Vec<IoTag> = self
            .pages
            .overlapping(mf, 0, last)
            .iter()
            .filter_map(|(_, e)| match e.state {
                PageState::Writeback { io, .. } => Some(io),
                _ => None,
            })
            .collect();
        let sync = self.cfg.kernel.jbd_checkpoint_sync();
        tags.extend(
            self.writeback_as(mf, 0, last, u64::MAX, sync, owner, WritebackBy::Journal, out).0,
        );
        tags.sort_unstable();
        tags.dedup();
        for &tag in &tags {
            self.ios[tag as usize].as_mut().expect("in flight").journals.push(j);
        }
        tags
    }

    /// The commit record is on the disk: the metadata goes to the checkpoint list (dirty at
    /// home), waiters wake, and a commit asked for meanwhile starts.
    fn commit_done(&mut self, j: JournalId, now: Nanos, out: &mut Output) {
        let c = self.journals[j as usize].committing.take().expect("committing");
        let mf = self.journals[j as usize].meta_file;
        let base = self.journals[j as usize].spec.fs_start_bytes;
        for &b in &c.t.meta {
            let p = (b - base) / PAGE_BYTES;
            self.dirty_pages(mf, p, p + 1, now);
        }
        let jr = &mut self.journals[j as usize];
        jr.committed_tid = c.t.tid;
        jr.stats.commits += 1;
        self.stats.journal_commits += 1;
        let tid = c.t.tid;
        let mut woken = Vec::new();
        jr.waiters.retain(|&(w, task)| {
            if w <= tid {
                woken.push(task);
                false
            } else {
                true
            }
        });
        for task in woken {
            if matches!(self.tasks[task as usize].busy, Some(Busy::Commit { .. })) {
                self.tasks[task as usize].busy = None;
                let cpu = self.tasks[task as usize].cpu_ns;
                out.wakes.push(Wake { task, at_ns: now + cpu });
            }
        }
        let jr = &self.journals[j as usize];
        let due = jr
            .running
            .as_ref()
            .is_some_and(|t| t.waited || now >= t.began_ns + jr.spec.commit_interval_ns);
        if jr.commit_requested || due {
            self.commit_start(j, now, out);
        }
    }
}
