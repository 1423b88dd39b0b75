//! Close cooperators (2.6.33+): processes that read one region in turn, such as a server's
//! threads serving one client's stream, each look seeky or idle to CFQ although together
//! they stream. When the active queue runs empty CFQ looks for a busy queue whose next request
//! is within `CFQQ_CLOSE_THR` of where the head is (`cfq_close_cooperator`), serves it at once
//! instead of idling, and schedules the two queues to merge (`cfq_setup_merge`): the next
//! request of the process whose queue has fewer process references goes to the other queue
//! (`cfq_merge_cfqqs`), so the cooperating processes share one queue and one time slice. A
//! merged queue that turns seeky is split again at its next request (`split_cfqq`).
//!
//! Deviations: the per-priority trees of queues by their next request's sector
//! (`prio_trees`) are re-keyed whenever a queue's next request changes (the kernel leaves a
//! node where it was until the queue is resorted, so its tree may be briefly out of order),
//! and hold only queues that could be chosen (sync, not seeky): the kernel files every busy
//! queue and gives up when the nearest one is seeky or async, where this may take a farther
//! one that is still within the threshold (it keeps the per-request cost of random workloads
//! with many queues low);
//! when both neighbours of the head position are close, the nearer one is taken (the kernel
//! takes whichever is the insertion point's parent in its red-black tree).
//!
//! **2.6.30–2.6.31** (`workload_trees=0`): the switch without merging (Jeff Moyer's
//! `cfq_close_cooperator`). Every busy queue but the idle class's is filed, sync or async,
//! seeky or not; "close" is the active context's mean seek distance (`cfq_rq_close`), or
//! `CIC_SEEK_THR` while it has too few samples; the chosen queue is served at once, marked
//! as jumped to (`cfq_mark_cfqq_coop`) and not chosen so again until the service tree gives
//! it a slice; and a queue with a close cooperator does not idle when it runs empty
//! (`cfq_completed_request`'s probe). As from 2.6.33, the nearer neighbour of the head is
//! taken (the kernel looks at the insertion point's parent, then at its other neighbour).
//! `queue_merging=0` (elevator's own) turns the mechanism off, as in kernels before 2.6.30.

use elevator_core::Nanos;

use super::queue::{CLOSE_THR_SECTORS, IDLE, RT};
use super::Cfq;

impl Cfq {
    /// `cfq_prio_tree_add`: files `q` under its next request's sector, or takes it out.
    /// Only queues that could be chosen are filed: from 2.6.33 sync, not seeky, not of the
    /// idle class; in 2.6.30–31 every busy queue but the idle class's.
    pub(super) fn prio_tree_update(&mut self, q: usize) {
        let qq = &self.queues[q];
        let could_be_chosen = if self.t.workload_trees {
            qq.sync && qq.class != IDLE && !qq.seeky()
        } else {
            qq.class != IDLE
        };
        let key = if self.t.queue_merging && qq.on_rr && could_be_chosen {
            qq.next_rq.map(|k| k.0)
        } else {
            None
        };
        if key.is_some() && key == qq.p_key {
            return;
        }
        let prio = usize::from(qq.prio);
        if let Some(old) = qq.p_key {
            if self.prio_trees[prio].get(&old) == Some(&q) {
                self.prio_trees[prio].remove(&old);
            }
        }
        let mut filed = None;
        if let Some(sector) = key {
            // Like the kernel, a second queue with a request at the same sector is not filed.
            if let std::collections::btree_map::Entry::Vacant(v) =
                self.prio_trees[prio].entry(sector)
            {
                v.insert(q);
                filed = Some(sector);
            }
        }
        self.queues[q].p_key = filed;
    }

    /// `cfqq_close`: a queue of `cur`'s priority whose next request is within `close`
    /// sectors of the head.
    fn queue_close(&self, cur: usize, close: u64) -> Option<usize> {
        let tree = &self.prio_trees[usize::from(self.queues[cur].prio)];
        let at = self.last_position;
        if let Some(&q) = tree.get(&at) {
            return Some(q);
        }
        let below = tree.range(..at).next_back().map(|(&s, &q)| (at - s, q));
        let above = tree.range(at..).next().map(|(&s, &q)| (s - at, q));
        let mut best: Option<(u64, usize)> = None;
        for (dist, q) in below.into_iter().chain(above) {
            if dist <= close && best.is_none_or(|(d, _)| dist < d) {
                best = Some((dist, q));
            }
        }
        best.map(|(_, q)| q)
    }

    /// `cfq_close_cooperator`: a sync, non-seeky queue of the same group and class whose next
    /// request is close to where `cur` left the head.
    pub(super) fn close_cooperator(&self, cur: usize) -> Option<usize> {
        let c = &self.queues[cur];
        if !self.t.queue_merging || c.class == IDLE || !c.sync || c.seeky() {
            return None;
        }
        if self.groups[c.group].nr_cfqq == 1 {
            return None;
        }
        let q = self.queue_close(cur, CLOSE_THR_SECTORS)?;
        let n = &self.queues[q];
        if q == cur || n.group != c.group || !n.sync || n.seeky() {
            return None;
        }
        if (n.class == RT) != (c.class == RT) {
            return None;
        }
        Some(q)
    }

    /// 2.6.30–31's `cfq_close_cooperator`: a queue of `cur`'s priority whose next request is
    /// within the active context's mean seek of the head (`cfqq_close`), unless it was
    /// jumped to already; `probe` only asks, otherwise the queue is marked as jumped to.
    pub(super) fn close_cooperator_2631(&mut self, cur: usize, probe: bool) -> Option<usize> {
        if !self.t.queue_merging {
            return None;
        }
        let q = self.queue_close(cur, self.rq_close_sectors_2631(cur))?;
        if q == cur || self.queues[q].jumped_to {
            return None;
        }
        if !probe {
            self.queues[q].jumped_to = true;
        }
        Some(q)
    }

    /// `cfq_setup_merge`: the queue with fewer processes will hand them to the other.
    pub(super) fn setup_merge(&mut self, cfqq: usize, new: usize) {
        if self.queues[new].process_refs == 0 {
            return;
        }
        let mut new = new;
        while let Some(next) = self.queues[new].new_cfqq {
            if next == cfqq {
                return;
            }
            new = next;
        }
        let (refs, new_refs) = (self.queues[cfqq].process_refs, self.queues[new].process_refs);
        if refs == 0 || new_refs == 0 {
            return;
        }
        if new_refs >= refs {
            self.queues[cfqq].new_cfqq = Some(new);
        } else {
            self.queues[new].new_cfqq = Some(cfqq);
        }
    }

    /// At a process's next request (`cfq_set_request`): split a merged queue that went seeky,
    /// or move the process to the queue its own is merging into. Returns the queue to use,
    /// `None` for "give the process a queue of its own".
    pub(super) fn coop_redirect(&mut self, key: (u32, usize), q: usize) -> Option<usize> {
        let mut q = q;
        if self.queues[q].coop && self.queues[q].split_coop {
            if self.queues[q].process_refs == 1 {
                self.queues[q].coop = false;
                self.queues[q].split_coop = false;
            } else {
                self.sync_map.remove(&key);
                self.queues[q].process_refs -= 1;
                return None;
            }
        }
        if let Some(n) = self.queues[q].new_cfqq {
            self.sync_map.insert(key, n);
            self.queues[q].process_refs -= 1;
            self.queues[n].process_refs += 1;
            self.queues[n].coop = true;
            q = n;
        }
        Some(q)
    }

    /// `cfq_select_queue`'s cooperator step: the active queue `q` is empty; if a close
    /// cooperator is busy, expire `q` and serve the cooperator now (from 2.6.33, and
    /// schedule the two queues to merge).
    pub(super) fn switch_to_cooperator(&mut self, q: usize, now: Nanos) -> Option<usize> {
        let n = if self.t.workload_trees {
            let n = self.close_cooperator(q)?;
            if self.queues[q].new_cfqq.is_none() {
                self.setup_merge(q, n);
            }
            n
        } else {
            self.close_cooperator_2631(q, false)?
        };
        self.expire_cause = "close cooperator";
        self.slice_expired(false, now);
        self.set_active(n, now);
        Some(n)
    }
}
