//! A shared resource (a flash channel, the host link) as a calendar of busy intervals.
//!
//! The device plans every operation when its command is dispatched: each transfer takes the
//! **earliest gap** of the resource at or after the moment its data is ready ("first come,
//! first reserved", with later requests allowed to use gaps left by earlier ones). A bus that
//! serves whichever transfer is ready would idle no longer than this; the difference is a
//! transfer that is ready inside a gap too short for it, which here waits for the next gap
//! where a real bus would have started it and delayed the later one. Dies, whose commands a
//! controller queues in order, are simpler busy-until clocks in the device itself.

use std::collections::VecDeque;

use elevator_core::Nanos;

/// Busy intervals `[start, end)`, sorted, disjoint and never touching (touching ones merge).
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    busy: VecDeque<(Nanos, Nanos)>,
}

impl Timeline {
    /// Forgets intervals that end by `now`: nothing is ever reserved before the present.
    #[inline]
    pub fn prune(&mut self, now: Nanos) {
        while self.busy.front().is_some_and(|&(_, e)| e <= now) {
            self.busy.pop_front();
        }
    }

    /// Reserves `dur` at the earliest gap starting at or after `ready`; returns the start.
    pub fn reserve(&mut self, ready: Nanos, dur: Nanos) -> Nanos {
        if dur == 0 {
            return ready;
        }
        let mut i = self.busy.partition_point(|&(_, e)| e <= ready);
        let mut t = ready;
        while i < self.busy.len() {
            let (s, e) = self.busy[i];
            if t + dur <= s {
                break;
            }
            t = t.max(e);
            i += 1;
        }
        let end = t + dur;
        let joins_prev = i > 0 && self.busy[i - 1].1 == t;
        let joins_next = i < self.busy.len() && self.busy[i].0 == end;
        match (joins_prev, joins_next) {
            (true, true) => {
                self.busy[i - 1].1 = self.busy[i].1;
                self.busy.remove(i);
            }
            (true, false) => self.busy[i - 1].1 = end,
            (false, true) => self.busy[i].0 = t,
            (false, false) => self.busy.insert(i, (t, end)),
        }
        t
    }

    /// Busy intervals (for tests).
    pub fn intervals(&self) -> impl Iterator<Item = (Nanos, Nanos)> + '_ {
        self.busy.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fills_gaps_and_merges() {
        let mut t = Timeline::default();
        assert_eq!(t.reserve(100, 10), 100);
        assert_eq!(t.reserve(0, 10), 0);
        assert_eq!(t.reserve(5, 10), 10, "after the first interval, in the gap");
        assert_eq!(t.reserve(0, 200), 110, "no gap is long enough before the end");
        assert_eq!(t.intervals().collect::<Vec<_>>(), vec![(0, 20), (100, 310)]);
        t.prune(20);
        assert_eq!(t.intervals().count(), 1);
    }

    proptest! {
        /// Reservations never overlap, never start before they are ready, and take the
        /// earliest gap.
        #[test]
        fn reservations_are_disjoint_and_earliest(reqs in prop::collection::vec((0u64..1000, 1u64..50), 1..60)) {
            let mut t = Timeline::default();
            let mut got: Vec<(Nanos, Nanos)> = Vec::new();
            for (ready, dur) in reqs {
                let s = t.reserve(ready, dur);
                prop_assert!(s >= ready);
                for &(a, b) in &got {
                    prop_assert!(s + dur <= a || b <= s, "overlap");
                }
                // No earlier start in [ready, s) would have fitted.
                for cand in ready..s {
                    prop_assert!(got.iter().any(|&(a, b)| cand < b && a < cand + dur));
                }
                got.push((s, s + dur));
            }
            let ivs: Vec<_> = t.intervals().collect();
            for w in ivs.windows(2) {
                prop_assert!(w[0].1 < w[1].0);
            }
            prop_assert_eq!(ivs.iter().map(|(a, b)| b - a).sum::<u64>(), got.iter().map(|(a, b)| b - a).sum::<u64>());
        }
    }
}
