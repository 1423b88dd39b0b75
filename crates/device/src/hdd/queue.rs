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
}

impl Queue {
    pub fn with_capacity(n: usize) -> Queue {
        Queue {
            items: Vec::with_capacity(n),
            cylinder: Vec::with_capacity(n),
            head: Vec::with_capacity(n),
            angle_turns: Vec::with_capacity(n),
            settle_ns: Vec::with_capacity(n),
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
        self.items.push(q);
    }

    pub fn remove(&mut self, i: usize) -> Queued {
        self.cylinder.remove(i);
        self.head.remove(i);
        self.angle_turns.remove(i);
        self.settle_ns.remove(i);
        self.items.remove(i)
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
