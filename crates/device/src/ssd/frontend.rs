//! The host interface's queues and the controller's command processing.
//!
//! Commands wait in **submission queues** until a controller core is free; each takes
//! `controller_overhead_us` of one core (command fetch, FTL lookup, DMA setup), and the cores
//! work in parallel. When a core frees up, the **arbiter** picks the next queue round-robin
//! (NVMe 1.3 §4.11 "round robin arbitration", arbitration burst 1) and takes its oldest
//! command. SATA has one queue (the NCQ tags), so there the arbiter is plain FIFO.
//!
//! **Which submission queue.** Linux gives each CPU its own NVMe submission queue
//! (`blk-mq` hardware contexts), so a request's queue is the CPU it was submitted on. A
//! [`crate::Command`] does not carry a CPU, and adding one would touch every crate; the
//! request id stands in for it: queue = `(id ^ (id >> 32)) mod submission_queues`. The
//! simulator's block layer makes ids from a sequence number and a request slot, so requests
//! spread evenly over the queues, as submitters spread over all CPUs would. Per-queue depth is
//! not enforced separately: the device's total `queue_depth()` is.

use std::collections::VecDeque;

use elevator_core::Nanos;

use crate::Command;

#[derive(Debug)]
pub struct Frontend {
    queues: Vec<VecDeque<(Nanos, Command)>>,
    /// One bit per non-empty queue.
    nonempty: Vec<u64>,
    queued: usize,
    /// Next queue the arbiter looks at.
    rr: usize,
    /// When each controller core is next free.
    cores: Vec<Nanos>,
}

impl Frontend {
    pub fn new(queues: u32, cores: u32) -> Frontend {
        Frontend {
            queues: (0..queues).map(|_| VecDeque::new()).collect(),
            nonempty: vec![0; (queues as usize).div_ceil(64)],
            queued: 0,
            rr: 0,
            cores: vec![0; cores as usize],
        }
    }

    /// The submission queue of a command (see the module documentation).
    #[inline]
    pub fn queue_of(&self, cmd: &Command) -> usize {
        let id = cmd.id.0;
        ((id ^ (id >> 32)) % self.queues.len() as u64) as usize
    }

    pub fn push(&mut self, cmd: Command, now: Nanos) {
        let q = self.queue_of(&cmd);
        self.queues[q].push_back((now, cmd));
        self.nonempty[q / 64] |= 1 << (q % 64);
        self.queued += 1;
    }

    #[inline]
    fn earliest_core(&self) -> (usize, Nanos) {
        let mut best = (0, self.cores[0]);
        for (i, &t) in self.cores.iter().enumerate().skip(1) {
            if t < best.1 {
                best = (i, t);
            }
        }
        best
    }

    /// The first non-empty queue at or after `from`, wrapping around, whose head arrived by
    /// `start`: the bitmap's set bits in round-robin order, a word at a time.
    fn first_ready_from(&self, from: usize, start: Nanos) -> Option<usize> {
        let words = self.nonempty.len();
        let (w0, b0) = (from / 64, from % 64);
        // The first word from bit `b0` up, the other words whole, then the first word's
        // bits below `b0`.
        let masked = |w: usize, mask: u64| (w, self.nonempty[w] & mask);
        let rest = (1..words).map(|i| masked((w0 + i) % words, u64::MAX));
        let tail = (b0 > 0).then(|| masked(w0, (1u64 << b0) - 1));
        std::iter::once(masked(w0, u64::MAX << b0)).chain(rest).chain(tail).find_map(|(w, bits)| {
            let mut b = bits;
            while b != 0 {
                let q = w * 64 + b.trailing_zeros() as usize;
                b &= b - 1;
                if self.queues[q][0].0 <= start {
                    return Some(q);
                }
            }
            None
        })
    }

    /// When the arbiter next starts a command, if any is waiting.
    pub fn next_start(&self) -> Option<Nanos> {
        (self.queued > 0).then(|| self.earliest_core().1)
    }

    /// Starts the next command if a core is free by `limit`: returns when it started and the
    /// command. The core is busy for `overhead_ns`.
    pub fn start_next(&mut self, limit: Nanos, overhead_ns: Nanos) -> Option<(Nanos, Command)> {
        if self.queued == 0 {
            return None;
        }
        let (core, free) = self.earliest_core();
        // Every queued command arrived by `limit` (they are pushed at the present), so the
        // start is when the core frees up or, if it was idle, when the oldest head arrived.
        let n = self.queues.len();
        let mut start = free;
        if free > limit {
            return None;
        }
        let mut oldest = Nanos::MAX;
        for (w, &bits) in self.nonempty.iter().enumerate() {
            let mut b = bits;
            while b != 0 {
                let q = w * 64 + b.trailing_zeros() as usize;
                b &= b - 1;
                oldest = oldest.min(self.queues[q][0].0);
            }
        }
        start = start.max(oldest);
        if start > limit {
            return None;
        }
        // Round-robin from `rr` over queues whose head has arrived by `start` (the oldest
        // head has, so one is found).
        let q = self.first_ready_from(self.rr, start).expect("the oldest head has arrived");
        let (_, cmd) = self.queues[q].pop_front().expect("non-empty");
        if self.queues[q].is_empty() {
            self.nonempty[q / 64] &= !(1 << (q % 64));
        }
        self.queued -= 1;
        self.rr = (q + 1) % n;
        self.cores[core] = start + overhead_ns;
        Some((start, cmd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::{Op, RequestId};

    fn cmd(id: u64) -> Command {
        Command { id: RequestId(id), op: Op::Read, offset_bytes: 0, len_bytes: 4096, fua: false }
    }

    #[test]
    fn round_robin_between_queues_fifo_within() {
        let mut f = Frontend::new(4, 1);
        // Queue 0 gets three commands, queue 1 one, all at time 0; one core busy 10 ns each.
        for id in [0, 4, 8, 1] {
            f.push(cmd(id), 0);
        }
        let mut order = Vec::new();
        while let Some((t, c)) = f.start_next(1000, 10) {
            order.push((t, c.id.0));
        }
        assert_eq!(order, vec![(0, 0), (10, 1), (20, 4), (30, 8)]);
        assert_eq!(f.next_start(), None);
    }

    #[test]
    fn cores_work_in_parallel_and_wait_for_arrivals() {
        let mut f = Frontend::new(1, 2);
        f.push(cmd(0), 5);
        f.push(cmd(1), 5);
        f.push(cmd(2), 5);
        assert_eq!(f.start_next(5, 10).unwrap().0, 5);
        assert_eq!(f.start_next(5, 10).unwrap().0, 5);
        assert_eq!(f.start_next(5, 10), None, "both cores busy until 15");
        assert_eq!(f.next_start(), Some(15));
        assert_eq!(f.start_next(15, 10).unwrap().0, 15);
    }

    proptest::proptest! {
        /// The arbiter takes the queues in round-robin order from `rr`, the first whose head
        /// has arrived, over any number of queues (the bitmap search against a plain scan).
        #[test]
        fn the_arbiter_is_round_robin_over_arrived_heads(
            queues in 1u32..200,
            pushes in proptest::collection::vec((0u64..100_000, 0u64..50), 1..80),
        ) {
            let mut f = Frontend::new(queues, 1);
            let mut model: Vec<VecDeque<(Nanos, u64)>> = vec![VecDeque::new(); queues as usize];
            let mut pushes = pushes;
            pushes.sort_by_key(|&(_, at)| at);
            for &(id, at) in &pushes {
                let c = cmd(id);
                model[f.queue_of(&c)].push_back((at, id));
                f.push(c, at);
            }
            let (mut rr, mut core) = (0usize, 0u64);
            while let Some((start, c)) = f.start_next(u64::MAX / 2, 3) {
                let oldest = model.iter().filter_map(|q| q.front().map(|h| h.0)).min().unwrap();
                let want_start = core.max(oldest);
                let n = model.len();
                let q = (0..n).map(|i| (rr + i) % n)
                    .find(|&q| model[q].front().is_some_and(|h| h.0 <= want_start))
                    .unwrap();
                let (_, id) = model[q].pop_front().unwrap();
                proptest::prop_assert_eq!((start, c.id.0), (want_start, id));
                rr = (q + 1) % n;
                core = want_start + 3;
            }
            proptest::prop_assert!(model.iter().all(VecDeque::is_empty));
        }
    }
}
