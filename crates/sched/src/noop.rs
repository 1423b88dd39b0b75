//! `none`: blk-mq without an elevator. Requests go to the device in arrival order; the only
//! thing done to them is merging a new request onto the back or front of a queued, contiguous
//! one (`blk_mq_sched_try_merge` on the software queue). No tunables.

use std::collections::VecDeque;

use elevator_core::{Nanos, Request};

use crate::{Dispatch, Merged, Scheduler, TunableError, TunableInfo};

/// How many of the most recently queued requests a merge looks at. The kernel's software queue
/// merge (`blk_bio_list_merge`) likewise scans only the last 8 entries.
const MERGE_SCAN_DEPTH: usize = 8;

#[derive(Debug, Default)]
pub struct Noop {
    fifo: VecDeque<Request>,
}

impl Noop {
    pub fn new() -> Noop {
        Noop::default()
    }
}

impl Scheduler for Noop {
    fn name(&self) -> &'static str {
        "none"
    }

    fn try_merge(&mut self, rq: &Request, max_len_bytes: u64, _now_ns: Nanos) -> Option<Merged> {
        crate::merge_into_list(self.fifo.iter_mut().rev().take(MERGE_SCAN_DEPTH), rq, max_len_bytes)
    }

    fn insert(&mut self, rq: Request, _now_ns: Nanos) {
        self.fifo.push_back(rq);
    }

    fn dispatch(&mut self, _now_ns: Nanos) -> Dispatch {
        match self.fifo.pop_front() {
            Some(rq) => Dispatch::Request(rq),
            None => Dispatch::Empty,
        }
    }

    fn completed(&mut self, _rq: &Request, _now_ns: Nanos) {}

    fn queued(&self) -> usize {
        self.fifo.len()
    }

    fn tunables(&self) -> Vec<TunableInfo> {
        Vec::new()
    }

    fn set_tunable(&mut self, name: &str, _value: &str) -> Result<(), TunableError> {
        Err(TunableError::unknown(self.name(), name, &[]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::{Op, Owner, RequestId};

    fn rq(id: u64, sector: u64, sectors: u64) -> Request {
        Request::new(
            RequestId(id),
            Op::Read,
            sector * 512,
            sectors * 512,
            true,
            Owner::process(1),
            0,
        )
        .unwrap()
    }

    #[test]
    fn fifo_order_and_back_and_front_merges() {
        let mut s = Noop::new();
        s.insert(rq(1, 100, 8), 0);
        s.insert(rq(2, 0, 8), 0);
        assert_eq!(
            s.try_merge(&rq(3, 108, 8), 1 << 20, 0),
            Some(Merged { into: RequestId(1), front: false })
        );
        assert_eq!(
            s.try_merge(&rq(4, 92, 8), 1 << 20, 0),
            Some(Merged { into: RequestId(1), front: true })
        );
        assert_eq!(s.try_merge(&rq(5, 500, 8), 1 << 20, 0), None);
        assert_eq!(s.try_merge(&rq(6, 116, 8), 24 * 512, 0), None, "merge would exceed the limit");
        match s.dispatch(0) {
            Dispatch::Request(r) => {
                assert_eq!((r.id, r.sector(), r.sectors()), (RequestId(1), 92, 24))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(s.dispatch(0), Dispatch::Request(r) if r.id == RequestId(2)));
        assert_eq!(s.dispatch(0), Dispatch::Empty);
    }
}
