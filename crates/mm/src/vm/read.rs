//! `read()` through the page cache (`do_generic_file_read`) and `posix_fadvise`.

use elevator_core::{Nanos, Op};

use super::{page_range, Advice, BlockIo, Busy, IoKind, Output, SyscallResult, TaskId, Vm, Wake};
use crate::pages::{FileId, PageState};
use crate::readahead::{ondemand_readahead, CacheView, Readahead, PAGE_BYTES};

/// Pages of one read bio (`BIO_MAX_PAGES`: 1 MiB); the block layer splits further at
/// `max_sectors_kb`.
const BIO_MAX_PAGES: u64 = 256;

/// The page cache of one file as readahead sees it.
struct View<'a> {
    vm: &'a Vm,
    file: FileId,
}

impl CacheView for View<'_> {
    fn next_hole(&self, index: u64, max_scan: u64) -> u64 {
        self.vm.pages.first_hole(self.file, index, index + max_scan).unwrap_or(index + max_scan)
    }
    fn prev_hole(&self, index: u64, max_scan: u64) -> u64 {
        self.vm.pages.prev_hole(self.file, index, max_scan)
    }
    fn max_sane(&self, nr: u64) -> u64 {
        // Half of free plus inactive file pages.
        let cap = self.vm.cfg.cache_pages();
        let t = &self.vm.pages.total;
        let free = cap.saturating_sub(t.cached);
        nr.min((free + t.inactive()) / 2)
    }
}

impl Vm {
    /// `count` sequential reads of `len` at `offset`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn read(
        &mut self,
        task: TaskId,
        file: FileId,
        offset: u64,
        len: u64,
        count: u64,
        now: Nanos,
        out: &mut Output,
    ) -> SyscallResult {
        let cost = self.cfg.syscall_cost_ns(len);
        let k = self.cached_reads(task, file, offset, len, count);
        if k > 0 {
            return SyscallResult::Done { count: k, at_ns: now + k * cost };
        }
        self.open(task, file);
        self.tasks[task as usize].cpu_ns = cost;
        let end = offset + len;
        match self.read_step(task, file, offset, end, offset, now, out) {
            Some(()) => SyscallResult::Done { count: 1, at_ns: now + cost },
            None => SyscallResult::Blocked { count: 0 },
        }
    }

    /// How many of the reads can be served from the cache outright: every page they touch
    /// is uptodate and none carries the readahead marker (pages past the file's data need
    /// nothing). Marks those pages accessed.
    fn cached_reads(
        &mut self,
        task: TaskId,
        file: FileId,
        offset: u64,
        len: u64,
        count: u64,
    ) -> u64 {
        if len == 0 || count == 0 {
            return 0;
        }
        let end = offset.saturating_add(count.saturating_mul(len));
        let (a, b) = page_range(offset, end - offset);
        let b_data = b.min(self.data_pages(file));
        // The first page that needs work: not cached, not uptodate, or marked.
        let mut stop = b_data.max(a);
        if a < b_data {
            if let Some(h) = self.pages.first_hole(file, a, b_data) {
                stop = h;
            }
            if let Some((s, _)) =
                self.pages.overlapping(file, a, stop).into_iter().find(|(_, e)| !e.state.uptodate())
            {
                stop = s;
            }
            if let Some(m) = self.pages.first_marker(file, a, stop) {
                stop = m;
            }
        }
        if stop >= b_data {
            stop = b; // the rest lies past the data
        }
        let covered = (stop * PAGE_BYTES).saturating_sub(offset);
        let k = (covered / len).min(count);
        if k == 0 {
            return 0;
        }
        let last = offset + k * len;
        let (pa, pb) = page_range(offset, last - offset);
        let pb = pb.min(b_data);
        if pa < pb {
            self.pages.touch(file, pa, pb);
            if len < PAGE_BYTES && k > 1 {
                // Several reads of one page: each marks it accessed again.
                self.pages.touch(file, pa, pb);
            }
        }
        self.open(task, file).ra.prev_pos = Some(last);
        k
    }

    /// Goes on with a blocked read.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn read_resume(
        &mut self,
        task: TaskId,
        file: FileId,
        pos: u64,
        end: u64,
        req_start: u64,
        now: Nanos,
        out: &mut Output,
    ) {
        if self.read_step(task, file, pos, end, req_start, now, out).is_some() {
            let cpu = self.tasks[task as usize].cpu_ns;
            out.wakes.push(Wake { task, at_ns: now + cpu });
        }
    }

    /// `do_generic_file_read` from `pos`: returns `Some` when the read is complete, `None`
    /// if it waits for a page (the task is then busy).
    #[allow(clippy::too_many_arguments)]
    fn read_step(
        &mut self,
        task: TaskId,
        file: FileId,
        mut pos: u64,
        end: u64,
        req_start: u64,
        now: Nanos,
        out: &mut Output,
    ) -> Option<()> {
        let last_index = end.div_ceil(PAGE_BYTES);
        let data = self.data_pages(file);
        let _ = req_start;
        loop {
            let index = pos / PAGE_BYTES;
            if pos >= end || index >= data {
                break;
            }
            let req = last_index - index;
            let Some((_, e)) = self.pages.get(file, index) else {
                // page_cache_sync_readahead, then readpage if still missing.
                self.sync_readahead(task, file, index, req, now, out);
                if self.pages.get(file, index).is_none() {
                    self.read_pages(task, file, index, index + 1, None, out);
                }
                continue;
            };
            if self.pages.take_marker(file, index, index + 1).is_some() {
                self.async_readahead(task, file, index, req, out);
                if e.state.uptodate() && self.cfg.kernel.async_readahead_runs_queue() {
                    out.run_queue(self.files[file as usize].spec.bdi);
                }
            }
            if let PageState::Reading(tag) = e.state {
                self.wait_on_io(tag, task, out);
                self.tasks[task as usize].busy = Some(Busy::Read { file, pos, end, req_start });
                return None;
            }
            // Uptodate: consume up to the extent's end, the request's end or a marker.
            let mut stop = e.end.min(last_index).min(data);
            if let Some(m) = self.pages.first_marker(file, index + 1, stop) {
                stop = m;
            }
            self.pages.touch(file, index, stop);
            pos = end.min(stop * PAGE_BYTES);
        }
        self.open(task, file).ra.prev_pos = Some(end);
        Some(())
    }

    /// `page_cache_sync_readahead`.
    fn sync_readahead(
        &mut self,
        task: TaskId,
        file: FileId,
        index: u64,
        req: u64,
        now: Nanos,
        out: &mut Output,
    ) {
        let _ = now;
        let of = *self.open(task, file);
        if of.ra.ra_pages == 0 {
            return;
        }
        if of.random {
            // FMODE_RANDOM: read the request, nothing more.
            self.read_pages(task, file, index, index + req, None, out);
            return;
        }
        let mut ra = of.ra;
        let (decision, case) = {
            let view = View { vm: self, file };
            ondemand_readahead(&mut ra, &view, false, index, req, self.context_readahead)
        };
        self.stats.readahead.count(false, case);
        self.open(task, file).ra = ra;
        self.apply_readahead(task, file, decision, out);
    }

    /// `page_cache_async_readahead`: the marker was found.
    fn async_readahead(
        &mut self,
        task: TaskId,
        file: FileId,
        index: u64,
        req: u64,
        out: &mut Output,
    ) {
        let of = *self.open(task, file);
        if of.ra.ra_pages == 0 {
            return;
        }
        // The marker is used up (the caller took it) whether or not a window goes out.
        let bdi = self.files[file as usize].spec.bdi as usize;
        if self.cfg.kernel.async_readahead_defers_on_congestion() && self.bdis[bdi].read_congested {
            self.stats.readahead.deferred += 1;
            return;
        }
        let mut ra = of.ra;
        let (decision, case) = {
            let view = View { vm: self, file };
            ondemand_readahead(&mut ra, &view, true, index, req, self.context_readahead)
        };
        self.stats.readahead.count(true, case);
        self.open(task, file).ra = ra;
        self.apply_readahead(task, file, decision, out);
    }

    fn apply_readahead(&mut self, task: TaskId, file: FileId, r: Readahead, out: &mut Output) {
        match r {
            Readahead::None => {}
            Readahead::Window { start, size, async_size } => {
                self.stats.readahead_windows += 1;
                let mut marker = start + size - async_size;
                if !self.cfg.kernel.on_demand_readahead() && size > 1 {
                    // Before 2.6.23 the ahead window went out when the reader asked for the
                    // current window's second page (mm/readahead.c, 2.5-2.6.22).
                    marker += 1;
                }
                self.read_pages(task, file, start, start + size, Some(marker), out);
            }
            Readahead::Plain { start, size } => {
                self.read_pages(task, file, start, start + size, None, out)
            }
        }
    }

    /// `__do_page_cache_readahead`: reads the missing pages of `[a, b)` (within the file's
    /// data) as the task, one bio per run of missing pages; the page `marker`, if read now,
    /// gets `PG_readahead`.
    pub(super) fn read_pages(
        &mut self,
        task: TaskId,
        file: FileId,
        a: u64,
        b: u64,
        marker: Option<u64>,
        out: &mut Output,
    ) {
        let b = b.min(self.data_pages(file));
        if a >= b {
            return;
        }
        let holes = self.pages.holes(file, a, b);
        if holes.is_empty() {
            return;
        }
        let gen = self.pages.gen_for(b - a);
        let owner = self.tasks[task as usize].owner;
        let spec = self.files[file as usize].spec;
        // Inode and directory blocks: `READ_META` (`ext3_bread`, `__ext3_get_inode_loc`).
        let meta = self.files[file as usize].metadata;
        for (s, e) in holes {
            let mut p = s;
            while p < e {
                let q = e.min(p + BIO_MAX_PAGES);
                self.alloc(q - p);
                let tag = self.new_io(IoKind::Read { file, start: p, end: q }, spec.bdi);
                self.pages.insert(file, p, q, PageState::Reading(tag), gen);
                if let Some(m) = marker.filter(|&m| (p..q).contains(&m)) {
                    self.pages.set_marker(file, m);
                }
                out.ios.push(BlockIo {
                    tag,
                    bdi: spec.bdi,
                    op: Op::Read,
                    offset_bytes: spec.base_bytes + p * PAGE_BYTES,
                    len_bytes: (q - p) * PAGE_BYTES,
                    sync: true,
                    meta,
                    background: false,
                    owner,
                });
                p = q;
            }
        }
    }

    /// `posix_fadvise`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fadvise(
        &mut self,
        task: TaskId,
        file: FileId,
        offset: u64,
        len: u64,
        advice: Advice,
        now: Nanos,
        out: &mut Output,
    ) {
        let bdi = self.files[file as usize].spec.bdi;
        let default_ra = u64::from(self.bdis[bdi as usize].spec.read_ahead_kb) / 4;
        let len = if len == 0 { self.files[file as usize].spec.size_bytes } else { len };
        let (a, b) = page_range(offset, len.min(u64::MAX - offset));
        let b = b.min(self.file_pages(file));
        match advice {
            Advice::Normal => {
                let of = self.open(task, file);
                of.ra.ra_pages = default_ra;
                of.random = false;
            }
            Advice::Sequential => {
                let of = self.open(task, file);
                of.ra.ra_pages = 2 * default_ra;
                of.random = false;
            }
            Advice::Random => self.open(task, file).random = true,
            Advice::WillNeed => {
                // force_page_cache_readahead: the range, in 2 MiB pieces, no marker.
                self.open(task, file);
                self.read_pages(task, file, a, b, None, out);
            }
            Advice::DontNeed => {
                // Start writeback of the dirty pages (WB_SYNC_NONE), then drop what is
                // clean and not under I/O (invalidate_mapping_pages).
                self.writeback_range(file, a, b, false, Some(task), now, out);
                self.pages.modify(file, a, b, |_, e| {
                    if e.state == PageState::Clean {
                        None
                    } else {
                        Some(*e)
                    }
                });
            }
        }
    }
}
