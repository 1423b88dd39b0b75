//! Controllers stacked on one device, as the kernel layers them: blk-throttle (`io.max`) in
//! `submit_bio`, then the rq-qos policies in turn (`io.latency`, `io.cost`, writeback
//! throttling). A bio enters the
//! first layer; what one layer releases is submitted to the next at the same instant; what
//! the last releases goes down. Every layer hears of every dispatch and completion (each saw
//! every bio).

use elevator_core::Nanos;

use crate::{Bio, Controller, GroupCounters};

/// Layers one stack holds (three kinds of cgroup v2 controller, mClock and wbt to stack).
pub const STACK_LAYERS_MAX: usize = 8;

pub struct Stack {
    layers: Vec<Box<dyn Controller>>,
    scratch: Vec<Bio>,
}

impl Stack {
    /// `layers` in the order a bio meets them.
    pub fn new(layers: Vec<Box<dyn Controller>>) -> Result<Stack, String> {
        if layers.is_empty() || layers.len() > STACK_LAYERS_MAX {
            return Err(format!("a controller stack has 1 to {STACK_LAYERS_MAX} layers"));
        }
        Ok(Stack { layers, scratch: Vec::new() })
    }

    pub fn layers(&self) -> impl Iterator<Item = &dyn Controller> {
        self.layers.iter().map(|l| l.as_ref())
    }
}

impl Controller for Stack {
    fn name(&self) -> &'static str {
        "stack"
    }

    fn submit(&mut self, bio: Bio, now_ns: Nanos) {
        self.layers[0].submit(bio, now_ns);
    }

    fn release(&mut self, now_ns: Nanos, out: &mut Vec<Bio>) {
        let last = self.layers.len() - 1;
        for i in 0..last {
            let mut passed = std::mem::take(&mut self.scratch);
            self.layers[i].release(now_ns, &mut passed);
            for bio in passed.drain(..) {
                self.layers[i + 1].submit(bio, now_ns);
            }
            self.scratch = passed;
        }
        self.layers[last].release(now_ns, out);
    }

    fn dispatched(&mut self, bio: &Bio, now_ns: Nanos) {
        for l in &mut self.layers {
            l.dispatched(bio, now_ns);
        }
    }

    fn completed(&mut self, bio: &Bio, now_ns: Nanos) {
        for l in &mut self.layers {
            l.completed(bio, now_ns);
        }
    }

    fn next_timer_ns(&self) -> Option<Nanos> {
        self.layers.iter().filter_map(|l| l.next_timer_ns()).min()
    }

    fn held(&self) -> usize {
        self.layers.iter().map(|l| l.held()).sum()
    }

    /// Each layer's counters, the group names prefixed with the layer's name.
    fn counters(&self) -> Vec<GroupCounters> {
        let mut out = Vec::new();
        for l in &self.layers {
            for mut c in l.counters() {
                c.name = format!("{}:{}", l.name(), c.name);
                out.push(c);
            }
        }
        out
    }

    fn note_dirty_sleep(&mut self, at_ns: Nanos) {
        for l in &mut self.layers {
            l.note_dirty_sleep(at_ns);
        }
    }

    fn scheduler_switched(&mut self, name: &str) {
        for l in &mut self.layers {
            l.scheduler_switched(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::throttle::{IoMax, Throttle, ThrottleGroup, THROTL_SLICE_SSD_NS};
    use elevator_core::{Op, Owner, Request, RequestId};

    fn throttle(riops: &str) -> Box<dyn Controller> {
        let limits = IoMax::parse_keys(riops, IoMax::default()).unwrap();
        let g = ThrottleGroup { cgroup: 1, name: "g".into(), limits };
        Box::new(Throttle::new(vec![g], THROTL_SLICE_SSD_NS).unwrap())
    }

    #[test]
    fn the_tighter_layer_limits_and_every_bio_goes_down_once() {
        let mut s = Stack::new(vec![throttle("riops=200"), throttle("riops=50")]).unwrap();
        let mut owner = Owner::process(1);
        owner.cgroup = 1;
        for id in 0..1000 {
            let request = Request::new(RequestId(id), Op::Read, id * 4096, 4096, true, owner, 0);
            s.submit(Bio { device: 0, request: request.unwrap() }, 0);
        }
        let (mut now, mut out, mut seen) = (0, Vec::new(), std::collections::BTreeSet::new());
        let end = 10_000_000_000;
        while now < end {
            s.release(now, &mut out);
            for b in out.drain(..) {
                assert!(seen.insert(b.request.id.0), "released twice");
                s.dispatched(&b, now);
                s.completed(&b, now);
            }
            now = s.next_timer_ns().unwrap_or(end).max(now + 1);
        }
        // 10 s at 50 IO/s, give or take the first slice.
        assert!((495..=510).contains(&seen.len()), "{} released", seen.len());
        assert_eq!(s.held() + seen.len(), 1000);
        assert!(Stack::new(Vec::new()).is_err());
    }
}
