//! A device wrapper that records what reaches the device: every command in submission order
//! and the most that were outstanding at once, as blktrace's issue ("D") events would show.
//! The layers above (block layer, arrays, volumes) are tested by what they send down.

use std::sync::{Arc, Mutex};

use elevator_core::Nanos;

use crate::{Command, Completion, Device};

/// What a [`Recorder`] saw.
#[derive(Clone, Debug, Default)]
pub struct RecorderLog {
    pub commands: Vec<Command>,
    pub max_outstanding: u32,
}

/// Passes everything through to `inner` and notes it in a shared [`RecorderLog`].
pub struct Recorder<D> {
    inner: D,
    log: Arc<Mutex<RecorderLog>>,
    outstanding: u32,
}

impl<D: Device> Recorder<D> {
    /// Wraps `inner`; the returned log can be read while the recorder is owned elsewhere.
    pub fn new(inner: D) -> (Recorder<D>, Arc<Mutex<RecorderLog>>) {
        let log = Arc::new(Mutex::new(RecorderLog::default()));
        (Recorder { inner, log: log.clone(), outstanding: 0 }, log)
    }
}

impl<D: Device> Device for Recorder<D> {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }
    fn queue_depth(&self) -> u32 {
        self.inner.queue_depth()
    }
    fn rotational(&self) -> bool {
        self.inner.rotational()
    }
    fn submit(&mut self, cmd: Command, now_ns: Nanos) {
        self.outstanding += 1;
        {
            let mut log = self.log.lock().expect("recorder log");
            log.commands.push(cmd);
            log.max_outstanding = log.max_outstanding.max(self.outstanding);
        }
        self.inner.submit(cmd, now_ns);
    }
    fn next_event_ns(&self) -> Option<Nanos> {
        self.inner.next_event_ns()
    }
    fn stats(&self) -> Vec<(&'static str, f64)> {
        self.inner.stats()
    }
    fn advance(&mut self, now_ns: Nanos, completed: &mut Vec<Completion>) {
        let before = completed.len();
        self.inner.advance(now_ns, completed);
        self.outstanding -= (completed.len() - before) as u32;
    }
}
