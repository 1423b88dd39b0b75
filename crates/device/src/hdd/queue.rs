//! Command queueing (NCQ/TCQ): the commands the drive holds, in arrival order, and the choice
//! of the next one. With depth 1 it is FIFO. Deeper, the drive picks the command with the
//! shortest positioning time (SPTF: seek + settle + rotational wait, cache hits first), as
//! DiskSim's `SPTF_OPT` scheduler does; to bound starvation, a command that has waited longer
//! than the age limit is served next regardless (the oldest such one), which is how drive
//! firmware bounds NCQ latency (commands "age out" after a fixed time). Positions are cached
//! in parallel arrays at submit so one pass over the queue is a short, branch-light loop.

use elevator_core::Nanos;

use super::geometry::Chs;
use crate::Command;

#[derive(Clone, Copy, Debug)]
pub struct Queued {
    pub cmd: Command,
    pub arrived_ns: Nanos,
    pub lbn: u64,
    pub sectors: u64,
    pub chs: Chs,
}

#[derive(Clone, Debug, Default)]
pub struct Queue {
    pub items: Vec<Queued>,
    pub cylinder: Vec<f64>,
    /// The surface, as a number (compared, never computed with).
    pub head: Vec<f64>,
    pub angle_turns: Vec<f64>,
    pub settle_ns: Vec<f64>,
    /// Sectors of each command the write cache holds dirty, or [`OVERLAP_UNKNOWN`]: kept
    /// between choices and forgotten only where the cache changes
    /// ([`Queue::forget_overlap`]), so a full cache costs no lookups per queued command.
    pub wc_overlap: Vec<u64>,
}

/// A [`Queue::wc_overlap`] not looked up since the command came or the cache changed there.
pub const OVERLAP_UNKNOWN: u64 = u64::MAX;

impl Queue {
    pub fn with_capacity(n: usize) -> Queue {
        Queue {
            items: Vec::with_capacity(n),
            cylinder: Vec::with_capacity(n),
            head: Vec::with_capacity(n),
            angle_turns: Vec::with_capacity(n),
            settle_ns: Vec::with_capacity(n),
            wc_overlap: Vec::with_capacity(n),
        }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn push(&mut self, q: Queued, angle_turns: f64, settle_ns: f64) {
        self.cylinder.push(q.chs.cylinder as f64);
        self.head.push(q.chs.head as f64);
        self.angle_turns.push(angle_turns);
        self.settle_ns.push(settle_ns);
        self.wc_overlap.push(OVERLAP_UNKNOWN);
        self.items.push(q);
    }

    pub fn remove(&mut self, i: usize) -> Queued {
        // The last (often the only) command: popped, without six shifting removes.
        if i + 1 == self.items.len() {
            self.cylinder.pop();
            self.head.pop();
            self.angle_turns.pop();
            self.settle_ns.pop();
            self.wc_overlap.pop();
            return self.items.pop().expect("a command at i");
        }
        self.cylinder.remove(i);
        self.head.remove(i);
        self.angle_turns.remove(i);
        self.settle_ns.remove(i);
        self.wc_overlap.remove(i);
        self.items.remove(i)
    }

    /// The write cache changed in sectors `[lbn, lbn + n)`: the commands touching them must
    /// look their overlap up again.
    pub fn forget_overlap(&mut self, lbn: u64, n: u64) {
        for (item, overlap) in self.items.iter().zip(&mut self.wc_overlap) {
            if item.lbn < lbn + n && lbn < item.lbn + item.sectors {
                *overlap = OVERLAP_UNKNOWN;
            }
        }
    }

    /// The index to serve next: FIFO when `fifo`, the oldest if it waited more than
    /// `age_limit_ns`, else the lowest `cost` (ties to the oldest).
    #[inline]
    pub fn pick(
        &self,
        now_ns: Nanos,
        fifo: bool,
        age_limit_ns: Nanos,
        mut cost: impl FnMut(usize) -> f64,
    ) -> usize {
        if fifo || self.items.len() <= 1 {
            return 0;
        }
        if now_ns.saturating_sub(self.items[0].arrived_ns) > age_limit_ns {
            return 0;
        }
        let mut best = (f64::INFINITY, 0);
        for i in 0..self.items.len() {
            let c = cost(i);
            if c < best.0 {
                best = (c, i);
            }
        }
        best.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hdd::writeback::WriteCache;
    use crate::Op;
    use elevator_core::RequestId;
    use proptest::prelude::*;

    fn queued(id: u64, lbn: u64, sectors: u64) -> Queued {
        let cmd = Command {
            id: RequestId(id),
            op: Op::Write,
            offset_bytes: lbn * 512,
            len_bytes: sectors * 512,
            fua: false,
        };
        let chs = Chs { cylinder: 0, head: 0, sector: 0, zone: 0 };
        Queued { cmd, arrived_ns: 0, lbn, sectors, chs }
    }

    #[test]
    fn a_change_forgets_only_the_commands_it_touches() {
        let mut q = Queue::with_capacity(4);
        for (i, lbn) in [0, 8, 16, 40].into_iter().enumerate() {
            q.push(queued(i as u64, lbn, 8), 0.0, 0.0);
        }
        q.wc_overlap.iter_mut().for_each(|o| *o = 0);
        q.forget_overlap(12, 8); // sectors 12..20: the second and third commands
        assert_eq!(q.wc_overlap, [0, OVERLAP_UNKNOWN, OVERLAP_UNKNOWN, 0]);
        q.remove(1);
        assert_eq!(q.wc_overlap, [0, OVERLAP_UNKNOWN, 0]);
        q.forget_overlap(48, 8); // just past the last command
        assert_eq!(q.wc_overlap, [0, OVERLAP_UNKNOWN, 0]);
    }

    proptest! {
        /// Whatever the cache takes in or writes out, an overlap the queue still remembers
        /// (forgetting it where the cache changed, as the drive does) is the cache's.
        #[test]
        fn remembered_overlaps_stay_true(
            cmds in prop::collection::vec((0u64..200, 1u64..24), 1..12),
            changes in prop::collection::vec((any::<bool>(), 0u64..200, 1u64..24), 1..40),
        ) {
            let mut q = Queue::with_capacity(cmds.len());
            for (i, &(lbn, n)) in cmds.iter().enumerate() {
                q.push(queued(i as u64, lbn, n), 0.0, 0.0);
            }
            let mut wc = WriteCache::new(1 << 20, 1 << 19, 8);
            for (insert, lbn, n) in changes {
                if insert {
                    wc.insert(lbn, n);
                } else {
                    wc.clean(lbn, n);
                }
                q.forget_overlap(lbn, n);
                for (item, o) in q.items.iter().zip(&mut q.wc_overlap) {
                    let now = wc.overlap(item.lbn, item.sectors);
                    if *o != OVERLAP_UNKNOWN {
                        prop_assert_eq!(*o, now);
                    }
                    // Half the time the drive looked it up at this choice.
                    if (item.lbn + n) % 2 == 0 {
                        *o = now;
                    }
                    prop_assert_eq!(wc.covers(item.lbn, item.sectors), now == item.sectors);
                }
            }
        }
    }
}
