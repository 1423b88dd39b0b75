//! mq-deadline — placeholder until the full implementation lands.
use crate::noop::Noop;
use crate::{Dispatch, Merged, Scheduler, TunableError, TunableInfo};
use elevator_core::{Nanos, Request};

#[derive(Debug, Default)]
pub struct Deadline {
    inner: Noop,
}
impl Deadline {
    pub fn new() -> Deadline {
        Deadline::default()
    }
}
impl Scheduler for Deadline {
    fn name(&self) -> &'static str {
        "mq-deadline"
    }
    fn try_merge(&mut self, rq: &Request, max: u64, now: Nanos) -> Option<Merged> {
        self.inner.try_merge(rq, max, now)
    }
    fn insert(&mut self, rq: Request, now: Nanos) {
        self.inner.insert(rq, now)
    }
    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        self.inner.dispatch(now)
    }
    fn completed(&mut self, rq: &Request, now: Nanos) {
        self.inner.completed(rq, now)
    }
    fn queued(&self) -> usize {
        self.inner.queued()
    }
    fn tunables(&self) -> Vec<TunableInfo> {
        Vec::new()
    }
    fn set_tunable(&mut self, name: &str, _v: &str) -> Result<(), TunableError> {
        Err(TunableError::unknown(self.name(), name, &[]))
    }
}
