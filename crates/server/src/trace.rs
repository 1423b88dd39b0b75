//! `elevator ctl trace on FILE`: each worker appends one JSON line per request its scheduler
//! dispatches (`elevator_sched::trace::decision_line`, the simulator's `--trace-decisions`
//! format), until `elevator ctl trace off`.
//!
//! Lines collect in a buffer and go to the file in whole lines, one `write` per
//! `TRACE_BUF_BYTES`, so several workers appending to one file (opened `O_APPEND`) never
//! interleave inside a line. The worker writes from its own thread: a trace slows the
//! server a little, as blktrace does. Bounded: past `TRACE_MAX_BYTES` the trace stops with
//! one warning.

use std::fs::File;
use std::io::Write;

use elevator_core::{Nanos, Request};

/// The most one worker writes to one trace.
pub(crate) const TRACE_MAX_BYTES: u64 = 1 << 30;
/// Lines are written once this much has collected (and when the trace ends).
const TRACE_BUF_BYTES: usize = 64 << 10;

pub(crate) struct DecisionTrace {
    file: File,
    buf: String,
    written: u64,
    stopped: bool,
}

impl DecisionTrace {
    pub(crate) fn new(file: File) -> DecisionTrace {
        DecisionTrace {
            file,
            buf: String::with_capacity(TRACE_BUF_BYTES),
            written: 0,
            stopped: false,
        }
    }

    pub(crate) fn record(
        &mut self,
        now_ns: Nanos,
        device: &str,
        scheduler: &str,
        decision: &str,
        rq: &Request,
        queued: usize,
    ) {
        if self.stopped {
            return;
        }
        elevator_sched::trace::decision_line(
            &mut self.buf,
            now_ns,
            device,
            scheduler,
            decision,
            rq,
            queued,
        );
        if self.buf.len() >= TRACE_BUF_BYTES {
            self.flush();
        }
    }

    pub(crate) fn flush(&mut self) {
        if self.buf.is_empty() || self.stopped {
            return;
        }
        if self.written + self.buf.len() as u64 > TRACE_MAX_BYTES {
            tracing::warn!(limit = TRACE_MAX_BYTES, "decision trace full; it stops here");
            self.stopped = true;
            self.buf = String::new();
            return;
        }
        if let Err(e) = self.file.write_all(self.buf.as_bytes()) {
            tracing::warn!(error = %e, "decision trace write failed; it stops here");
            self.stopped = true;
        }
        self.written += self.buf.len() as u64;
        self.buf.clear();
    }
}

impl Drop for DecisionTrace {
    fn drop(&mut self) {
        self.flush();
    }
}
