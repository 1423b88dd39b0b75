//! The per-device flusher thread (`pdflush` before 2.6.32, `flush-MAJ:MIN` after;
//! `fs/fs-writeback.c`): background writeback while the machine's dirty pages exceed
//! `dirty_background_ratio`, and every `dirty_writeback_centisecs` the periodic ("kupdate")
//! writeback of inodes dirty for longer than `dirty_expire_centisecs`. Dirty inodes are
//! served round-robin in chunks (`MAX_WRITEBACK_PAGES`, 4 MiB, before 3.2; from 3.2 about
//! half a second of the device's write bandwidth, in multiples of 4 MiB,
//! `writeback_chunk_size`), each from where its last writeback stopped (`range_cyclic`).
//! The writes are async and issued as the flusher thread; the flusher waits when the
//! device's request pool is full (`get_request_wait`) and goes on as requests complete.
//!
//! A flusher serves one writeback domain ([`super::Wb`]): the device's, or from 4.2 a
//! cgroup's on the device (cgroup writeback: each `bdi_writeback` has its own work items,
//! run by the `bdi_wq` workers side by side), whose writes go down in that cgroup.

use elevator_core::{Nanos, NS_PER_MS};

use super::{Output, TaskId, Timer, Vm};

/// `MAX_WRITEBACK_PAGES` / `MIN_WRITEBACK_PAGES`: 4 MiB.
pub const WRITEBACK_CHUNK_PAGES: u64 = 1024;

/// One device's flusher.
#[derive(Clone, Copy, Debug)]
pub(super) struct Flusher {
    /// Background writeback asked for (`bdi_start_background_writeback`).
    background: bool,
    /// Periodic writeback under way: inodes dirtied before this time.
    kupdate_before: Option<Nanos>,
    last_old_flush_ns: Nanos,
    /// The periodic wake-up is armed for this time.
    armed: Option<Nanos>,
}

impl Flusher {
    pub(super) fn new() -> Flusher {
        Flusher { background: false, kupdate_before: None, last_old_flush_ns: 0, armed: None }
    }
}

impl Vm {
    fn writeback_interval_ns(&self) -> Nanos {
        u64::from(self.cfg.sysctl.dirty_writeback_centisecs) * 10 * NS_PER_MS
    }

    /// Dirty data appeared in writeback domain `wb`: make sure its flusher wakes within a period.
    pub(super) fn flusher_arm(&mut self, wb: u32, now: Nanos) {
        let interval = self.writeback_interval_ns();
        if interval == 0 || self.wbs[wb as usize].flusher.armed.is_some() {
            return;
        }
        self.wbs[wb as usize].flusher.armed = Some(now + interval);
        self.add_timer(now + interval, Timer::Flusher(wb));
    }

    /// Writeback in progress in `wb` (`writeback_in_progress`).
    fn writeback_in_progress(&self, wb: u32) -> bool {
        let f = &self.wbs[wb as usize].flusher;
        f.background || f.kupdate_before.is_some()
    }

    /// `bdi_start_background_writeback`.
    pub(super) fn start_background(&mut self, wb: u32, now: Nanos, out: &mut Output) {
        if self.writeback_in_progress(wb) {
            return;
        }
        self.wbs[wb as usize].flusher.background = true;
        self.flusher_run(wb, now, out);
    }

    /// The periodic wake-up (`wb_check_old_data_flush`, `wb_check_background_flush`).
    pub(super) fn flusher_wake(&mut self, wb: u32, now: Nanos, out: &mut Output) {
        self.wbs[wb as usize].flusher.armed = None;
        let interval = self.writeback_interval_ns();
        let expire = u64::from(self.cfg.sysctl.dirty_expire_centisecs) * 10 * NS_PER_MS;
        let f = &mut self.wbs[wb as usize].flusher;
        if now >= f.last_old_flush_ns + interval {
            f.last_old_flush_ns = now;
            if self.pages.bdi_counts(wb).dirty > 0 {
                // Nothing can have been dirty longer than the machine has been up.
                f.kupdate_before = now.checked_sub(expire);
            }
        }
        if self.over_bg_thresh(wb) {
            self.wbs[wb as usize].flusher.background = true;
        }
        self.flusher_run(wb, now, out);
        if self.pages.bdi_counts(wb).dirty > 0 || self.writeback_in_progress(wb) {
            self.flusher_arm(wb, now);
        }
    }

    /// `over_bground_thresh` (`wb_over_bg_thresh` from 4.2): the machine's dirty pages are
    /// over the background threshold, or (from 3.2) `wb`'s own over its share of it (its
    /// share of recent writeout, as its dirty threshold's).
    fn over_bg_thresh(&mut self, wb: u32) -> bool {
        let background = self.limits().background;
        if self.pages.total.dirty >= background {
            return true;
        }
        if !self.cfg.kernel.per_bdi_background_threshold() {
            return false;
        }
        let share = self.writeout_share(wb);
        self.pages.bdi_counts(wb).dirty > background * share.0 / share.1.max(1)
    }

    /// The chunk one pass writes.
    fn writeback_chunk(&self, wb: u32) -> u64 {
        if self.cfg.kernel.io_less_throttling() {
            let bw = self.wbs[wb as usize].bw.avg_write_bandwidth;
            let pages = (bw / 2).min(self.global_dirty_limit / 8);
            (pages + WRITEBACK_CHUNK_PAGES) / WRITEBACK_CHUNK_PAGES * WRITEBACK_CHUNK_PAGES
        } else {
            WRITEBACK_CHUNK_PAGES
        }
    }

    /// `wb_writeback` for the work queued on `wb`, as far as the request pool allows.
    pub(super) fn flusher_run(&mut self, wb: u32, now: Nanos, out: &mut Output) {
        loop {
            let over_bg = self.pages.bdi_counts(wb).dirty > 0 && self.over_bg_thresh(wb);
            let f = &mut self.wbs[wb as usize].flusher;
            if f.background && !over_bg {
                f.background = false;
            }
            let before = f.kupdate_before;
            if let Some(b) = before {
                if !self.has_old_dirty(wb, b) {
                    self.wbs[wb as usize].flusher.kupdate_before = None;
                }
            }
            let f = self.wbs[wb as usize].flusher;
            if !f.background && f.kupdate_before.is_none() {
                return;
            }
            if self.pool_full_wb(wb) {
                // Queue for a slot behind whoever waits already.
                let b = &mut self.bdis[self.wbs[wb as usize].bdi as usize];
                if !b.slot_waiters.contains(&super::SlotWaiter::Flusher(wb)) {
                    b.slot_waiters.push_back(super::SlotWaiter::Flusher(wb));
                }
                return;
            }
            let chunk = self.writeback_chunk(wb);
            let filter = if f.background { None } else { f.kupdate_before };
            let sent = self.writeback_queue(wb, chunk, None, filter, now, out);
            if sent == 0 {
                return;
            }
        }
    }

    /// A dirty inode of `wb` dirtied before `before`.
    fn has_old_dirty(&self, wb: u32, before: Nanos) -> bool {
        self.wbs[wb as usize].queue.iter().any(|&f| {
            self.pages.file(f).dirtied_when.is_some_and(|w| w <= before)
                && self.pages.file(f).counts.dirty > 0
        })
    }

    /// `writeback_inodes_wb` as a throttled writer (2.6.3x): up to `max_pages`.
    pub(super) fn writeback_wb(
        &mut self,
        wb: u32,
        max_pages: u64,
        issuer: Option<TaskId>,
        now: Nanos,
        out: &mut Output,
    ) -> u64 {
        self.writeback_queue(wb, max_pages, issuer, None, now, out)
    }

    /// Writes back up to `max_pages` from the dirty inodes of `wb`, in queue order, each
    /// from its `writeback_index` round to where it started; an inode that still has dirty
    /// pages when the quota runs out goes to the back (`requeue_io`). `before` limits it to
    /// inodes dirtied before that time.
    fn writeback_queue(
        &mut self,
        wb: u32,
        max_pages: u64,
        issuer: Option<TaskId>,
        before: Option<Nanos>,
        now: Nanos,
        out: &mut Output,
    ) -> u64 {
        let mut sent = 0;
        let mut visits = self.wbs[wb as usize].queue.len();
        while sent < max_pages && visits > 0 {
            visits -= 1;
            let Some(file) = self.wbs[wb as usize].queue.pop_front() else { break };
            let fp = self.pages.file(file);
            if fp.counts.dirty == 0 {
                self.files[file as usize].queued = false;
                continue;
            }
            if before.is_some_and(|b| fp.dirtied_when.is_some_and(|w| w > b)) {
                self.wbs[wb as usize].queue.push_back(file);
                continue;
            }
            let last = self.file_pages(file);
            // Before 2.6.6 writeback took the whole dirty list, from its oldest page.
            let start = if self.cfg.kernel.dirty_list_writeback() {
                0
            } else {
                fp.writeback_index.min(last)
            };
            let quota = max_pages - sent;
            let (_, mut done, mut stopped) =
                self.writeback_pages(file, start, last, quota, false, issuer, out);
            if done < quota && start > 0 && !self.pool_full_wb(wb) {
                let (_, b, at) =
                    self.writeback_pages(file, 0, start, quota - done, false, issuer, out);
                if b > 0 {
                    stopped = at;
                }
                done += b;
            }
            sent += done;
            // The next pass goes on where this one stopped.
            self.pages.file_mut(file).writeback_index = if stopped >= last { 0 } else { stopped };
            let still_dirty = self.pages.next_dirty_run(file, 0, last, 1).is_some();
            if still_dirty || self.pages.file(file).counts.dirty > 0 {
                self.wbs[wb as usize].queue.push_back(file);
            } else {
                self.files[file as usize].queued = false;
            }
            if done == 0 && self.pool_full_wb(wb) {
                break;
            }
        }
        let _ = now;
        sent
    }

    /// The request pool `wb`'s writeback draws on is full: its device's, or its cgroup's
    /// own on that device ([`Vm::set_cgroup_pools`]).
    pub(super) fn pool_full_wb(&self, wb: u32) -> bool {
        let b = &self.bdis[self.wbs[wb as usize].bdi as usize];
        self.pool_requests_wb(wb) + b.reserved >= b.spec.nr_requests
    }

    /// Requests in flight in the pool `wb`'s writeback draws on.
    pub(super) fn pool_requests_wb(&self, wb: u32) -> u32 {
        let w = &self.wbs[wb as usize];
        let b = &self.bdis[w.bdi as usize];
        if b.cgroup_pools {
            w.async_requests
        } else {
            b.async_requests
        }
    }
}
