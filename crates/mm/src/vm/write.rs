//! `write()` into the page cache (`generic_perform_write`), writeback I/O, `fsync`.

use elevator_core::{Nanos, Op, Owner};

use super::{
    page_range, BlockIo, Busy, IoKind, Output, RangeStage, SlotWaiter, SyncRangeFlags,
    SyscallResult, TaskId, Vm, Wake,
};
use crate::pages::{Extent, FileId, IoTag, PageState};
use crate::readahead::PAGE_BYTES;

/// Pages of one writeback bio (`BIO_MAX_PAGES`, 1 MiB).
const WRITE_BIO_PAGES: u64 = 256;

/// Who writes pages back, which decides how the writes go down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WritebackBy {
    /// The flusher's background or periodic writeback: async writes carry
    /// `REQ_BACKGROUND`.
    Flusher,
    /// A task itself: fsync, `O_SYNC`, `sync_file_range`, fadvise, a writer in
    /// `balance_dirty_pages` before 3.2.
    Task,
    /// The journal thread's commit: not held back by a full request pool here.
    Journal,
}

impl Vm {
    /// `count` sequential writes of `len` at `offset` (`sync`: O_SYNC, one at a time).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write(
        &mut self,
        task: TaskId,
        file: FileId,
        offset: u64,
        len: u64,
        count: u64,
        sync: bool,
        now: Nanos,
        out: &mut Output,
    ) -> SyscallResult {
        let cost = self.cfg.syscall_cost_ns(len);
        let size = self.files[file as usize].spec.size_bytes;
        let room = size.saturating_sub(offset) / len.max(1);
        let count = if sync { 1 } else { count.min(room.max(1)) };
        let (k, crossed) = self.cached_writes(task, file, offset, len, count, now, out);
        if k == 0 {
            return self.write_wait_page(task, file, offset, len, sync, out);
        }
        let t_k = now + k * cost;
        if sync {
            let end = offset + len;
            self.tasks[task as usize].cpu_ns = 0;
            return match self.fsync_range(task, file, offset, end, t_k, out) {
                SyscallResult::Done { at_ns, .. } => SyscallResult::Done { count: 1, at_ns },
                blocked => blocked,
            };
        }
        if crossed {
            let wb = self.files[file as usize].wb;
            self.tasks[task as usize].cpu_ns = 0;
            if !self.balance_start(task, wb, t_k, out) {
                return SyscallResult::Blocked { count: k - 1 };
            }
        }
        SyscallResult::Done { count: k, at_ns: t_k }
    }

    /// The first write touches a page that is being read, or that it overwrites only in
    /// part while its old contents are on the device: read it (as the task), wait.
    fn write_wait_page(
        &mut self,
        task: TaskId,
        file: FileId,
        offset: u64,
        len: u64,
        sync: bool,
        out: &mut Output,
    ) -> SyscallResult {
        let (a, b) = page_range(offset, len);
        let mut tag = None;
        for p in a..b {
            match self.pages.get(file, p) {
                Some((_, e)) => {
                    if let PageState::Reading(t) = e.state {
                        tag = Some(t);
                        break;
                    }
                }
                None => {
                    self.open(task, file);
                    self.read_pages(task, file, p, p + 1, None, out);
                    if let Some((_, e)) = self.pages.get(file, p) {
                        if let PageState::Reading(t) = e.state {
                            tag = Some(t);
                            break;
                        }
                    }
                }
            }
        }
        let tag = tag.expect("a write that cannot go into the cache waits for a read");
        self.wait_on_io(tag, task, out);
        self.tasks[task as usize].busy = Some(Busy::WriteRead { file, offset, len, sync });
        SyscallResult::Blocked { count: 0 }
    }

    /// How many of the writes go straight into the cache, and whether the last of them
    /// reached the task's throttle check (its ratelimit). Dirties their pages.
    #[allow(clippy::too_many_arguments)]
    fn cached_writes(
        &mut self,
        task: TaskId,
        file: FileId,
        offset: u64,
        len: u64,
        count: u64,
        now: Nanos,
        out: &mut Output,
    ) -> (u64, bool) {
        if len == 0 || count == 0 {
            return (0, false);
        }
        let spec = self.files[file as usize].spec;
        let end_all = offset + count * len;
        let (a, b) = page_range(offset, end_all - offset);
        // A page being read stops the run; so does, for writes that cover pages only in
        // part, a page not cached whose old data is on the device (it must be read).
        let mut stop = b;
        if let Some((s, _)) =
            self.pages.overlapping(file, a, b).into_iter().find(|(_, e)| !e.state.uptodate())
        {
            stop = s;
        }
        let aligned = offset.is_multiple_of(PAGE_BYTES) && len.is_multiple_of(PAGE_BYTES);
        if !aligned {
            let data = spec.data_bytes.div_ceil(PAGE_BYTES);
            if let Some(h) = self.pages.first_hole(file, a, stop.min(data)) {
                stop = h;
            }
        }
        let k_max = if stop >= b {
            count
        } else if stop * PAGE_BYTES <= offset {
            0
        } else {
            ((stop * PAGE_BYTES - offset) / len).min(count)
        };
        if k_max == 0 {
            return (0, false);
        }
        // The throttle check comes once the task has dirtied its ratelimit (IO-less: pages
        // it newly dirtied, `current->nr_dirtied`); before 3.2 once its CPU has written
        // `ratelimit_pages` pages, dirty already or not (`bdp_ratelimits`, bumped for every
        // page `generic_perform_write` copies, by whichever task runs there).
        let legacy = !self.cfg.kernel.io_less_throttling();
        let cpu = self.task_cpu(task);
        let done_so_far =
            if legacy { self.cpu_dirtied[cpu] } else { self.tasks[task as usize].nr_dirtied };
        // The file's writeback domain is settled at its first dirtying, before the check.
        self.attach_wb(file, task);
        let wb = self.files[file as usize].wb;
        let budget = self.ratelimit(task, wb).saturating_sub(done_so_far).max(1);
        let pages_per_write = len.div_ceil(PAGE_BYTES).max(1);
        let new_dirty = |vm: &Vm, k: u64| -> u64 {
            if legacy {
                return k * pages_per_write;
            }
            let (pa, pb) = page_range(offset, k * len);
            let dirty: u64 = vm
                .pages
                .overlapping(file, pa, pb)
                .iter()
                .filter(|(_, e)| {
                    matches!(e.state, PageState::Dirty | PageState::Writeback { dirty: true, .. })
                })
                .map(|(s, e)| e.end - s)
                .sum();
            (pb - pa) - dirty
        };
        let (k, crossed) = if new_dirty(self, k_max) < budget {
            (k_max, false)
        } else {
            // The first write whose pages reach the budget.
            let (mut lo, mut hi) = (1, k_max);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if new_dirty(self, mid) >= budget {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            (lo, true)
        };
        let (pa, pb) = page_range(offset, k * len);
        let newly = self.dirty_pages(file, pa, pb, now);
        let f = &mut self.files[file as usize].spec;
        let old_bytes = f.data_bytes;
        f.data_bytes = f.data_bytes.max(offset + k * len);
        // A write past the file's end extends it (`i_size`), and writeback reaches it: a
        // job's region may end before the file does (fio's `rw=write:N` goes on to the end
        // of the file as it finds it), and its pages past the region were dirtied for good.
        f.size_bytes = f.size_bytes.max(f.data_bytes);
        let new_bytes = f.data_bytes;
        if self.files[file as usize].journal.is_some() {
            self.journal_write(file, old_bytes, new_bytes, now, out);
        }
        self.pages.touch(file, pa, pb);
        if len < PAGE_BYTES && k > 1 {
            self.pages.touch(file, pa, pb);
        }
        let t = &mut self.tasks[task as usize];
        t.nr_dirtied += newly;
        if legacy {
            self.cpu_dirtied[cpu] += k * pages_per_write;
            self.dirties.inc(&mut self.tasks[task as usize].dirties, newly);
        }
        (k, crossed)
    }

    /// Marks `[a, b)` dirty (pages not cached are added); returns the newly dirtied count.
    pub(super) fn dirty_pages(&mut self, file: FileId, a: u64, b: u64, now: Nanos) -> u64 {
        let holes = self.pages.holes(file, a, b);
        let before = self.pages.file(file).counts.dirty;
        let listed = self.cfg.kernel.dirty_list_writeback();
        let mut newly_dirty: Vec<(u64, u64)> = Vec::new();
        if !holes.is_empty() {
            let gen = self.pages.gen_for(b - a);
            for &(s, e) in &holes {
                self.alloc(e - s);
                self.pages.insert(file, s, e, PageState::Dirty, gen);
            }
            if listed {
                newly_dirty.extend(holes.iter().copied());
            }
        }
        // The holes just filled are dirty already: a range that was all hole needs no more.
        if holes != [(a, b)] {
            self.pages.modify(file, a, b, |s, e| {
                Some(match e.state {
                    PageState::Clean => {
                        if listed {
                            newly_dirty.push((s, e.end));
                        }
                        Extent { state: PageState::Dirty, ..*e }
                    }
                    PageState::Writeback { io, .. } => {
                        Extent { state: PageState::Writeback { io, dirty: true }, ..*e }
                    }
                    _ => *e,
                })
            });
        }
        if listed {
            newly_dirty.sort_unstable();
            self.list_dirtied(file, &newly_dirty);
        }
        let newly = self.pages.file(file).counts.dirty - before;
        if newly > 0 {
            self.mark_file_dirty(file, now);
            let wb = self.files[file as usize].wb;
            self.wbs[wb as usize].dirtied += newly;
            self.stats.peak_dirty_pages = self.stats.peak_dirty_pages.max(self.pages.total.dirty);
        }
        newly
    }

    /// Pages of `file` went from clean to dirty, in this order: they join the end of its
    /// dirty list (kernels before 2.6.6, [`crate::dirty_order`]).
    fn list_dirtied(&mut self, file: FileId, runs: &[(u64, u64)]) {
        let order = &mut self.dirty_order[file as usize];
        for &(a, b) in runs {
            order.push(a, b);
        }
        let dirty = self.pages.file(file).counts.dirty;
        if order.needs_compaction(dirty) {
            let pages = &self.pages;
            order.retain(|a, b| pages.next_dirty_run(file, a, b, 1).is_some());
        }
    }

    /// The next run of dirty pages writeback takes from `[from, b)`, at most `cap` long:
    /// the next in offset order, or — kernels before 2.6.6, writing a whole file — the
    /// oldest dirtied still dirty (pages the list does not hold, if any, come after it).
    fn next_writeback_run(
        &mut self,
        file: FileId,
        from: u64,
        b: u64,
        cap: u64,
        listed: bool,
    ) -> Option<(u64, u64)> {
        if listed {
            let order = &mut self.dirty_order[file as usize];
            while let Some((s, e)) = order.front() {
                if s >= e.min(b) {
                    order.consume_front(e);
                    continue;
                }
                match self.pages.next_dirty_run(file, s, e.min(b), cap) {
                    Some((rs, re)) => {
                        order.consume_front(re);
                        return Some((rs, re));
                    }
                    None => order.consume_front(e),
                }
            }
            return self.pages.next_dirty_run(file, 0, b, cap);
        }
        self.pages.next_dirty_run(file, from, b, cap)
    }

    /// The file has dirty pages: note when it first got them and queue it for writeback.
    fn mark_file_dirty(&mut self, file: FileId, now: Nanos) {
        let fp = self.pages.file_mut(file);
        if fp.dirtied_when.is_none() {
            fp.dirtied_when = Some(now);
        }
        let meta = &mut self.files[file as usize];
        if !meta.queued {
            meta.queued = true;
            let wb = meta.wb;
            self.wbs[wb as usize].queue.push_back(file);
            self.flusher_arm(wb, now);
        }
    }

    /// Writes back the dirty pages of `[a, b)` of `file` as `issuer` (a task, or the
    /// flusher when `None`), sync or async, up to `max_pages`; returns the tags issued and
    /// the pages sent and the page after the last one sent (`a` if none). Async writeback
    /// stops when the device's request pool is full.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn writeback_pages(
        &mut self,
        file: FileId,
        a: u64,
        b: u64,
        max_pages: u64,
        sync: bool,
        issuer: Option<TaskId>,
        out: &mut Output,
    ) -> (Vec<IoTag>, u64, u64) {
        let wb = self.files[file as usize].wb;
        let owner = match issuer {
            // With cgroup writeback every writeback bio of a file, fsync's too, goes down in
            // the cgroup of the file's writeback domain (`wbc_init_bio`).
            Some(t) if self.cfg.kernel.cgroup_writeback() => {
                Owner { cgroup: self.wbs[wb as usize].cgroup, ..self.tasks[t as usize].owner }
            }
            Some(t) => self.tasks[t as usize].owner,
            None => self.flusher_owner(wb),
        };
        let by = if issuer.is_some() { WritebackBy::Task } else { WritebackBy::Flusher };
        self.writeback_as(file, a, b, max_pages, sync, owner, by, out)
    }

    /// [`Vm::writeback_pages`] issued as `owner` by `by`: async writeback stops at a full
    /// request pool, except the journal thread's commit writes (it sleeps in the block
    /// layer's queue instead, which the driver models).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn writeback_as(
        &mut self,
        file: FileId,
        a: u64,
        b: u64,
        max_pages: u64,
        sync: bool,
        owner: elevator_core::Owner,
        by: WritebackBy,
        out: &mut Output,
    ) -> (Vec<IoTag>, u64, u64) {
        let pooled = by != WritebackBy::Journal;
        let background = by == WritebackBy::Flusher && !sync;
        let spec = self.files[file as usize].spec;
        let bdi = spec.bdi as usize;
        let max_sectors_pages = (u64::from(self.bdis[bdi].spec.max_sectors_kb) / 4).max(1);
        let mut tags = Vec::new();
        let mut sent = 0;
        let mut from = a;
        // The dirty list orders the writeback of a whole file; a range (a ranged fsync,
        // fadvise) is written in offset order and leaves its list entries to go stale.
        let listed = self.cfg.kernel.dirty_list_writeback() && a == 0 && b >= self.file_pages(file);
        let wb = self.files[file as usize].wb;
        while sent < max_pages {
            if pooled && !sync && self.pool_full_wb(wb) {
                // A batcher goes on, up to its allowance and 1.5 x nr_requests.
                let nr_requests = self.bdis[bdi].spec.nr_requests;
                if self.batch_allowance == 0 || self.pool_requests_wb(wb) >= nr_requests * 3 / 2 {
                    break;
                }
                self.batch_allowance -= 1;
            }
            let cap = WRITE_BIO_PAGES.min(max_pages - sent);
            let Some((s, e)) = self.next_writeback_run(file, from, b, cap, listed) else { break };
            let requests = (e - s).div_ceil(max_sectors_pages) as u32;
            let tag =
                self.new_io(IoKind::Write { file, start: s, end: e, requests, sync }, spec.bdi);
            self.pages.modify(file, s, e, |_, x| {
                Some(match x.state {
                    PageState::Dirty => {
                        Extent { state: PageState::Writeback { io: tag, dirty: false }, ..*x }
                    }
                    _ => *x,
                })
            });
            if !sync {
                self.count_async(file, requests, true);
            }
            out.ios.push(BlockIo {
                tag,
                bdi: spec.bdi,
                op: Op::Write,
                offset_bytes: spec.base_bytes + s * PAGE_BYTES,
                len_bytes: (e - s) * PAGE_BYTES,
                sync: self.scheduler_sync(Op::Write, sync),
                meta: false,
                background,
                owner,
            });
            tags.push(tag);
            sent += e - s;
            from = e;
        }
        (tags, sent, from)
    }

    /// Writes back what is dirty in `[a, b)` (fadvise DONTNEED: async, as far as the
    /// request pool allows; O_SYNC and fsync: sync, all of it); returns the tags.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn writeback_range(
        &mut self,
        file: FileId,
        a: u64,
        b: u64,
        sync: bool,
        issuer: Option<TaskId>,
        _now: Nanos,
        out: &mut Output,
    ) -> Vec<IoTag> {
        self.writeback_pages(file, a, b, u64::MAX, sync, issuer, out).0
    }

    /// `fsync` of `[start, end)` bytes (all of it: `0..u64::MAX`): writes the dirty pages
    /// synchronously, waits for them and for pages already under writeback, then flushes
    /// the device's cache.
    pub(super) fn fsync_range(
        &mut self,
        task: TaskId,
        file: FileId,
        start: u64,
        end: u64,
        now: Nanos,
        out: &mut Output,
    ) -> SyscallResult {
        let last = self.file_pages(file);
        let a = start / PAGE_BYTES;
        let b = end.div_ceil(PAGE_BYTES).min(last);
        let mut tags = self.writeback_tags(file, a, b);
        tags.extend(self.writeback_range(file, a, b, true, Some(task), now, out));
        tags.sort_unstable();
        tags.dedup();
        for &t in &tags {
            self.wait_on_io(t, task, out);
        }
        let bdi = self.files[file as usize].spec.bdi;
        self.tasks[task as usize].busy = Some(Busy::Sync {
            pending: tags.len() as u32,
            flushed: false,
            bdi,
            file,
            range: (a, b),
        });
        if tags.is_empty() {
            // With barriers off and nothing to write, resume wakes the task at once.
            self.resume(task, now, out);
        }
        self.returned_at_once(task, out)
    }

    /// `Done` if the call left `task` free with its wake queued in `out` (taken back: the
    /// caller returns at once), else `Blocked`.
    fn returned_at_once(&mut self, task: TaskId, out: &mut Output) -> SyscallResult {
        if self.tasks[task as usize].busy.is_none() {
            if let Some(w) = out.wakes.iter().rposition(|w| w.task == task) {
                let at = out.wakes.remove(w).at_ns;
                return SyscallResult::Done { count: 1, at_ns: at };
            }
        }
        SyscallResult::Blocked { count: 0 }
    }

    /// The I/Os writing back pages of `file` in `[a, b)`, each once.
    fn writeback_tags(&self, file: FileId, a: u64, b: u64) -> Vec<IoTag> {
        let mut tags: Vec<IoTag> = self
            .pages
            .overlapping(file, a, b)
            .iter()
            .filter_map(|(_, e)| match e.state {
                PageState::Writeback { io, .. } => Some(io),
                _ => None,
            })
            .collect();
        tags.sort_unstable();
        tags.dedup();
        tags
    }

    /// `sync_file_range` of `[offset, offset + len)` (`len` 0: to the end of the file), as
    /// `mm/sync.c`: with `WAIT_BEFORE` it waits for the range's writeback under way, with
    /// `WRITE` it starts writeback of the range's dirty pages (`WB_SYNC_NONE`: async
    /// requests, the caller sleeping for a request slot when the pool is full), with
    /// `WAIT_AFTER` it waits for all of the range's writeback. Unlike `fsync` it commits
    /// no journal and flushes no cache.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn sync_file_range(
        &mut self,
        task: TaskId,
        file: FileId,
        offset: u64,
        len: u64,
        flags: SyncRangeFlags,
        now: Nanos,
        out: &mut Output,
    ) -> SyscallResult {
        let end = if len == 0 { u64::MAX } else { offset.saturating_add(len) };
        let a = offset / PAGE_BYTES;
        let b = end.div_ceil(PAGE_BYTES).min(self.file_pages(file)).max(a);
        self.range_sync_step(task, RangeStage::Before, file, a, b, flags, now, out);
        self.returned_at_once(task, out)
    }

    /// Goes on with `sync_file_range` of pages `[a, b)` from `stage` until it must wait
    /// (the task is left busy) or is done (a wake is queued).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn range_sync_step(
        &mut self,
        task: TaskId,
        mut stage: RangeStage,
        file: FileId,
        a: u64,
        b: u64,
        flags: SyncRangeFlags,
        now: Nanos,
        out: &mut Output,
    ) {
        loop {
            let (wait, next) = match stage {
                RangeStage::Before => {
                    let next = RangeStage::Write { from: a, reserved: false };
                    (flags.wait_before, next)
                }
                RangeStage::Write { from, reserved } => {
                    let bdi = self.files[file as usize].spec.bdi;
                    if reserved {
                        let r = &mut self.bdis[bdi as usize].reserved;
                        *r = r.saturating_sub(1);
                    }
                    if flags.write && from < b {
                        self.writeback_pages(file, from, b, u64::MAX, false, Some(task), out);
                        // Stopped by a full pool with dirty pages left: sleep for a slot
                        // (they are found again from `from`: the others are under I/O).
                        let left = self
                            .pages
                            .overlapping(file, from, b)
                            .iter()
                            .any(|(_, e)| e.state == PageState::Dirty);
                        let wb = self.files[file as usize].wb;
                        if left && self.pool_full_wb(wb) {
                            let stage = RangeStage::Write { from, reserved: true };
                            self.tasks[task as usize].busy =
                                Some(Busy::RangeSync { stage, pending: 0, file, a, b, flags });
                            let waiter = SlotWaiter::Task(task, wb);
                            self.bdis[bdi as usize].slot_waiters.push_back(waiter);
                            return;
                        }
                    }
                    stage = RangeStage::After;
                    continue;
                }
                RangeStage::After => (flags.wait_after, RangeStage::Done),
                RangeStage::Done => {
                    let cpu = self.tasks[task as usize].cpu_ns;
                    out.wakes.push(Wake { task, at_ns: now + cpu });
                    return;
                }
            };
            if wait {
                let tags = self.writeback_tags(file, a, b);
                if !tags.is_empty() {
                    for &t in &tags {
                        self.wait_on_io(t, task, out);
                    }
                    let pending = tags.len() as u32;
                    self.tasks[task as usize].busy =
                        Some(Busy::RangeSync { stage: next, pending, file, a, b, flags });
                    return;
                }
            }
            stage = next;
        }
    }

    /// A writeback I/O finished.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_done(
        &mut self,
        tag: IoTag,
        bdi: u32,
        file: FileId,
        start: u64,
        end: u64,
        requests: u32,
        sync: bool,
        held: bool,
        now: Nanos,
        out: &mut Output,
    ) {
        let listed = self.cfg.kernel.dirty_list_writeback();
        let mut redirtied: Vec<(u64, u64)> = Vec::new();
        self.pages.modify(file, start, end, |s, e| {
            Some(match e.state {
                PageState::Writeback { io, dirty } if io == tag => {
                    if dirty && listed {
                        redirtied.push((s, e.end));
                    }
                    Extent { state: if dirty { PageState::Dirty } else { PageState::Clean }, ..*e }
                }
                _ => *e,
            })
        });
        if !redirtied.is_empty() {
            self.list_dirtied(file, &redirtied);
        }
        let pages = end - start;
        self.stats.pages_written += pages;
        let wb = self.files[file as usize].wb;
        self.wbs[wb as usize].written += pages;
        if !sync && !held {
            self.count_async(file, requests, false);
        }
        self.completions.inc(&mut self.wbs[wb as usize].completions, pages);
        if self.pages.file(file).counts.dirty > 0 && !self.files[file as usize].queued {
            self.mark_file_dirty(file, now);
        }
        if !sync {
            self.grant_slots(bdi, now, out);
        }
    }

    /// Room in `bdi`'s request pool: the slots go to the waiters in order (a woken writer's
    /// slot is kept for it until it runs).
    /// With a pool per cgroup a waiter whose pool is still full keeps its place and the
    /// next ones are looked at.
    pub(super) fn grant_slots(&mut self, bdi: u32, now: Nanos, out: &mut Output) {
        let mut i = 0;
        while let Some(&w) = self.bdis[bdi as usize].slot_waiters.get(i) {
            let (SlotWaiter::Task(_, wb) | SlotWaiter::Flusher(wb)) = w;
            if self.pool_full_wb(wb) {
                if !self.bdis[bdi as usize].cgroup_pools {
                    break;
                }
                i += 1;
                continue;
            }
            self.bdis[bdi as usize].slot_waiters.remove(i);
            match w {
                super::SlotWaiter::Task(t, _) => {
                    self.bdis[bdi as usize].reserved += 1;
                    out.runnable.push(t);
                }
                super::SlotWaiter::Flusher(wb) => {
                    self.batch_allowance = super::NR_BATCHING;
                    self.flusher_run(wb, now, out);
                    self.batch_allowance = 0;
                }
            }
        }
    }
}
