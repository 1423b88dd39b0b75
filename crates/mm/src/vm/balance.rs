//! `balance_dirty_pages`: a writer past its ratelimit is throttled, in the 2.6.3x form (it
//! writes back itself and naps; before 2.6.24 against the machine's threshold rather than
//! its device's and its own) or the IO-less form of 3.2+ (it sleeps in proportion to what it
//! dirtied). See [`crate::dirty`] for the arithmetic. A writer is throttled against the
//! writeback domain of the file it writes ([`super::Wb`]: its device's, or from 4.2 its
//! cgroup's on the device).

use elevator_core::Nanos;

use super::{Busy, Output, TaskId, Timer, Vm, Wake};
use crate::dirty::{
    dirty_poll_interval, freerun_ceiling, legacy_bdi_thresh, legacy_ratelimit_pages,
    legacy_write_chunk, pos_ratio, Limits, RATELIMIT_CALC_SHIFT,
};

/// A throttled writer's state between steps.
#[derive(Clone, Copy, Debug)]
pub enum Balance {
    /// 2.6.3x: pages written back so far and the chunk to write; the next nap (jiffies);
    /// `left` pages of this round's writeback still to issue (it waits for request slots).
    Legacy { wb: u32, pages_written: u64, write_chunk: u64, pause: u64, left: u64 },
    /// IO-less: asleep; `again` if it must look again on waking (its rate was zero).
    IoLess { wb: u32, pages_dirtied: u64, start_jiffies: u64, again: bool },
}

impl Vm {
    /// Pages the task may dirty before its next check.
    pub(super) fn ratelimit(&self, task: TaskId, wb: u32) -> u64 {
        let exceeded = self.wbs[wb as usize].dirty_exceeded;
        if self.cfg.kernel.io_less_throttling() {
            let r = self.tasks[task as usize].nr_dirtied_pause.max(1);
            if exceeded {
                r.min(32)
            } else {
                r
            }
        } else if exceeded {
            8
        } else {
            legacy_ratelimit_pages(self.cfg.memory_bytes / 4096, self.cfg.cpus)
        }
    }

    /// The writeback domain's share of the machine's recent writeout, which its dirty and
    /// background thresholds are of (`bdi_writeout_fraction`, `wb_calc_thresh`): all of it
    /// for a machine's only domain before its first completion.
    pub(super) fn writeout_share(&mut self, wb: u32) -> (u64, u64) {
        let share = self.completions.fraction(&mut self.wbs[wb as usize].completions);
        if share.0 == 0 && self.wbs.len() == 1 {
            (1, 1)
        } else {
            share
        }
    }

    /// The writeback domain's dirty pages (its device's, before cgroup writeback): dirty
    /// plus under writeback.
    fn wb_dirty(&self, wb: u32) -> (u64, u64) {
        let c = self.pages.bdi_counts(wb);
        (c.dirty, c.writeback)
    }

    /// A writer reached its ratelimit at `now`: returns true if it goes on at once, false
    /// if it is now throttled (a [`Wake`] comes later).
    pub(super) fn balance_start(
        &mut self,
        task: TaskId,
        wb: u32,
        now: Nanos,
        out: &mut Output,
    ) -> bool {
        let t = &mut self.tasks[task as usize];
        let b = if self.cfg.kernel.io_less_throttling() {
            let pages_dirtied = t.nr_dirtied;
            Balance::IoLess { wb, pages_dirtied, start_jiffies: self.jiffies(now), again: true }
        } else {
            let ratelimit = legacy_ratelimit_pages(self.cfg.memory_bytes / 4096, self.cfg.cpus);
            t.nr_dirtied = 0;
            let cpu = self.task_cpu(task);
            let write_chunk = legacy_write_chunk(self.cpu_dirtied[cpu], ratelimit);
            self.cpu_dirtied[cpu] = 0;
            Balance::Legacy { wb, pages_written: 0, write_chunk, pause: 1, left: 0 }
        };
        self.balance_step(task, b, now, out)
    }

    /// A throttled writer's pause ended, or a request slot it waited for freed.
    pub(super) fn balance_resume(
        &mut self,
        task: TaskId,
        b: Balance,
        now: Nanos,
        out: &mut Output,
    ) {
        if self.balance_step(task, b, now, out) {
            out.wakes.push(Wake { task, at_ns: now });
        }
    }

    fn balance_step(&mut self, task: TaskId, b: Balance, now: Nanos, out: &mut Output) -> bool {
        match b {
            Balance::Legacy { wb, pages_written, write_chunk, pause, left } => {
                self.legacy_step(task, wb, pages_written, write_chunk, pause, left, now, out)
            }
            Balance::IoLess { wb, pages_dirtied, start_jiffies, again } => {
                if !again {
                    self.finish_balance(wb, false, now, out);
                    return true;
                }
                self.io_less_step(task, wb, pages_dirtied, start_jiffies, now, out)
            }
        }
    }

    /// Ends a `balance_dirty_pages`: clears `dirty_exceeded` once under the writeback
    /// domain's threshold and starts its background writeback if the machine is over its
    /// threshold.
    fn finish_balance(&mut self, wb: u32, still_exceeded: bool, now: Nanos, out: &mut Output) {
        if !still_exceeded {
            self.wbs[wb as usize].dirty_exceeded = false;
        }
        if self.pages.total.dirty > self.limits().background {
            self.start_background(wb, now, out);
        }
    }

    /// One pass of the 2.6.32–3.1 loop.
    #[allow(clippy::too_many_arguments)]
    fn legacy_step(
        &mut self,
        task: TaskId,
        wb: u32,
        mut pages_written: u64,
        write_chunk: u64,
        pause: u64,
        mut left: u64,
        now: Nanos,
        out: &mut Output,
    ) -> bool {
        // Writeback of this round still to issue: it waited for a request slot, which it
        // was granted (reserved for it until it ran).
        if left > 0 {
            let b = &mut self.bdis[self.wbs[wb as usize].bdi as usize];
            b.reserved = b.reserved.saturating_sub(1);
            self.batch_allowance = super::NR_BATCHING;
            let sent = self.writeback_wb(wb, left, Some(task), now, out);
            self.batch_allowance = 0;
            pages_written += sent;
            left -= sent;
            if left > 0 && self.pool_full_wb(wb) {
                return self.wait_slot(
                    task,
                    Balance::Legacy { wb, pages_written, write_chunk, pause, left },
                );
            }
        }
        let l = self.limits();
        let (nr_dirty, nr_wb) = (self.pages.total.dirty, self.pages.total.writeback);
        let per_bdi = self.cfg.kernel.per_bdi_dirty_thresholds();
        let (bdi_dirty, bdi_wb) = self.legacy_dirty(wb);
        let thresh = self.legacy_thresh(task, wb, l);
        if bdi_dirty + bdi_wb <= thresh {
            self.finish_balance(wb, false, now, out);
            return true;
        }
        // Throttle only when background writeback cannot catch up (with the per-device
        // thresholds, which ramp up).
        if per_bdi && nr_dirty + nr_wb < (l.background + l.dirty) / 2 {
            self.finish_balance(wb, bdi_dirty + bdi_wb >= thresh, now, out);
            return true;
        }
        self.wbs[wb as usize].dirty_exceeded = true;
        // Before 2.6.24 the writer wrote back whatever was dirty (`if (ps.nr_dirty)`).
        let writes_back = if per_bdi { bdi_dirty > thresh } else { bdi_dirty > 0 };
        if writes_back {
            // The writer writes back up to a chunk itself, as the writer.
            let sent = self.writeback_wb(wb, write_chunk, Some(task), now, out);
            pages_written += sent;
            if sent < write_chunk && self.pool_full_wb(wb) && self.pages.bdi_counts(wb).dirty > 0 {
                left = write_chunk - sent;
                return self.wait_slot(
                    task,
                    Balance::Legacy { wb, pages_written, write_chunk, pause, left },
                );
            }
        }
        let (bdi_dirty, bdi_wb) = self.legacy_dirty(wb);
        let thresh = self.legacy_thresh(task, wb, l);
        if bdi_dirty + bdi_wb <= thresh || pages_written >= write_chunk {
            self.finish_balance(wb, bdi_dirty + bdi_wb >= thresh, now, out);
            return true;
        }
        // Nap, 1, 2, 4 ... jiffies, at most 100 ms.
        let nap = self.jiffies_to_ns(pause);
        self.stats.throttle_pauses += 1;
        self.stats.throttle_ns += nap;
        let next = (pause * 2).min(self.cfg.hz / 10);
        self.tasks[task as usize].busy = Some(Busy::Balance(Balance::Legacy {
            wb,
            pages_written,
            write_chunk,
            pause: next,
            left: 0,
        }));
        self.add_timer(now + nap, Timer::Task(task));
        false
    }

    /// What the throttled writer's threshold is compared with: its device's dirty and
    /// writeback pages, or before 2.6.24 the machine's.
    fn legacy_dirty(&self, wb: u32) -> (u64, u64) {
        if self.cfg.kernel.per_bdi_dirty_thresholds() {
            self.wb_dirty(wb)
        } else {
            (self.pages.total.dirty, self.pages.total.writeback)
        }
    }

    /// The task's device threshold, 2.6.3x; before 2.6.24 the machine's `dirty_thresh`.
    fn legacy_thresh(&mut self, task: TaskId, wb: u32, l: Limits) -> u64 {
        if !self.cfg.kernel.per_bdi_dirty_thresholds() {
            return l.dirty;
        }
        let bdi_share = self.writeout_share(wb);
        let task_share = self.dirties.fraction(&mut self.tasks[task as usize].dirties);
        let (bd, bw) = self.wb_dirty(wb);
        legacy_bdi_thresh(
            l.dirty,
            bdi_share,
            self.pages.total.dirty + self.pages.total.writeback,
            bd + bw,
            task_share,
        )
    }

    /// The writer sleeps in `get_request_wait` until a request slot is granted to it.
    fn wait_slot(&mut self, task: TaskId, b: Balance) -> bool {
        let wb = match b {
            Balance::Legacy { wb, .. } | Balance::IoLess { wb, .. } => wb,
        };
        self.tasks[task as usize].busy = Some(Busy::Balance(b));
        let bdi = self.wbs[wb as usize].bdi;
        self.bdis[bdi as usize].slot_waiters.push_back(super::SlotWaiter::Task(task, wb));
        false
    }

    /// `update_dirty_limit`, every 200 ms: the hard limit follows the threshold up at once
    /// and down by 1/32 of the gap.
    fn update_global_limit(&mut self, now_j: u64, thresh: u64, dirty: u64) {
        if now_j < self.global_limit_stamp + (self.cfg.hz / 5).max(1) {
            return;
        }
        self.global_limit_stamp = now_j;
        let mut limit = self.global_dirty_limit;
        if limit < thresh {
            limit = thresh;
        } else {
            let target = thresh.max(dirty);
            if limit > target {
                limit -= (limit - target) >> 5;
            }
        }
        self.global_dirty_limit = limit;
    }

    /// One pass of the 3.2+ loop; true when the writer goes on.
    fn io_less_step(
        &mut self,
        task: TaskId,
        wb: u32,
        pages_dirtied: u64,
        start_jiffies: u64,
        now: Nanos,
        out: &mut Output,
    ) -> bool {
        let hz = self.cfg.hz;
        let mut now_j = self.jiffies(now);
        let l = self.limits();
        let nr_dirty = self.pages.total.dirty + self.pages.total.writeback;
        if nr_dirty <= freerun_ceiling(l) {
            let t = &mut self.tasks[task as usize];
            t.dirty_paused_when = now_j;
            t.nr_dirtied = 0;
            t.nr_dirtied_pause = dirty_poll_interval(nr_dirty, l.dirty);
            self.finish_balance(wb, false, now, out);
            return true;
        }
        self.start_background(wb, now, out);
        let share = self.writeout_share(wb);
        let bdi_thresh = l.dirty * share.0 / share.1.max(1);
        let (bd, bw) = self.wb_dirty(wb);
        let bdi_dirty = bd + bw;
        let exceeded = bdi_dirty > bdi_thresh && nr_dirty > l.dirty;
        if exceeded {
            self.wbs[wb as usize].dirty_exceeded = true;
        }
        self.update_global_limit(now_j, l.dirty, nr_dirty);
        let limit = l.dirty.max(self.global_dirty_limit);
        let (dirtied, written) = (self.wbs[wb as usize].dirtied, self.wbs[wb as usize].written);
        self.wbs[wb as usize].bw.update(
            hz,
            now_j,
            dirtied,
            written,
            Some((l, limit, nr_dirty, bdi_thresh, bdi_dirty)),
            start_jiffies,
        );
        let bwst = self.wbs[wb as usize].bw;
        let pos = pos_ratio(l, limit, nr_dirty, bdi_thresh, bdi_dirty, bwst.avg_write_bandwidth);
        let task_ratelimit = (bwst.dirty_ratelimit * pos) >> RATELIMIT_CALC_SHIFT;
        let max_pause = bwst.max_pause(hz, bdi_dirty);
        let (min_pause, nr_dirtied_pause) = bwst.min_pause(hz, max_pause, task_ratelimit);
        let pause: i64;
        if let Some(period) = (hz * pages_dirtied).checked_div(task_ratelimit) {
            let period = period as i64;
            let t = &mut self.tasks[task as usize];
            let mut p = period;
            if t.dirty_paused_when != 0 {
                p -= now_j as i64 - t.dirty_paused_when as i64;
            }
            if p < min_pause as i64 {
                if p < -(hz as i64) {
                    t.dirty_paused_when = now_j;
                    t.nr_dirtied = 0;
                } else if period > 0 {
                    t.dirty_paused_when += period as u64;
                    t.nr_dirtied = 0;
                } else if t.nr_dirtied_pause <= pages_dirtied {
                    t.nr_dirtied_pause += pages_dirtied;
                }
                self.finish_balance(wb, exceeded, now, out);
                return true;
            }
            if p > max_pause as i64 {
                now_j += (p as u64 - max_pause).min(max_pause);
                p = max_pause as i64;
            }
            pause = p;
        } else {
            pause = max_pause as i64;
        }
        let pause = pause.max(1) as u64;
        let t = &mut self.tasks[task as usize];
        t.dirty_paused_when = now_j + pause;
        t.nr_dirtied = 0;
        t.nr_dirtied_pause = nr_dirtied_pause.max(1);
        let nap = self.jiffies_to_ns(pause);
        self.stats.throttle_pauses += 1;
        self.stats.throttle_ns += nap;
        let bdi = self.wbs[wb as usize].bdi;
        self.bdis[bdi as usize].dirty_sleep_ns = Some(now);
        self.tasks[task as usize].busy = Some(Busy::Balance(Balance::IoLess {
            wb,
            pages_dirtied,
            start_jiffies,
            again: task_ratelimit == 0,
        }));
        self.add_timer(now + nap, Timer::Task(task));
        false
    }
}
