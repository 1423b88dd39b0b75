//! fio's per-job log files: `write_lat_log` (`_lat`, `_clat`, `_slat`), `write_bw_log` and
//! `write_iops_log`, with `log_avg_msec`, `log_max_value` and `per_job_logs`.
//!
//! A line is fio 3.33's `time, value, ddir, bs, prio`: milliseconds since the job started,
//! the value (latencies in ns, bandwidth in KiB/s, IOPS), the direction (0 read, 1 write,
//! 2 trim), the block size (0 for a sample averaged over a window) and whether the I/O was
//! real-time class (1) or not (0). As fio 3.33 (`account_io_completion`, `add_log_sample`,
//! `finalize_logs` in its io_u.c and stat.c):
//! - without `log_avg_msec` every log has a line per I/O: its latencies, its bandwidth
//!   (`bytes × 10⁶ / clat_ns`, fio's per-unit rate) and an IOPS line of 1, each with the
//!   I/O's size in the `bs` column;
//! - with it the latency logs average (rounding to nearest, or with `log_max_value` take the
//!   maximum) over windows of that length, and bandwidth (KiB/s) and IOPS are the window's
//!   bytes and I/Os over its length. When the job ends, the latency window still open is
//!   written at the job's end time (fio's `finalize_logs`); a rate window that has not run its
//!   full length is not (fio samples rates only when a window has passed).
//!
//! One deviation: fio stamps a window's line with the time of the I/O or timer that closed
//! it (a millisecond or so after the window's end, varying run to run); here it is the
//! window's end, so the same run gives the same file.
//!
//! Bounded: at most [`MAX_LOG_SAMPLES`] lines per log per process; past it the log stops and
//! the run warns.

use elevator_core::{Nanos, Op, NS_PER_MS, NS_PER_US};

/// Lines one log of one process may hold.
pub const MAX_LOG_SAMPLES: usize = 1 << 22;

/// One line of a log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub time_ms: u64,
    pub value: u64,
    pub ddir: u8,
    pub bs: u64,
    pub prio_rt: u8,
}

/// The kinds of log, in the order fio names them.
pub const LOG_KINDS: [&str; 5] = ["lat", "clat", "slat", "bw", "iops"];

/// Per-direction window accumulators.
#[derive(Clone, Copy, Debug, Default)]
struct Window {
    sum: [u128; 3],
    max: [u64; 3],
    ios: u64,
    bytes: u64,
}

/// What one process logs.
#[derive(Clone, Debug)]
pub struct JobLogs {
    pub lat: bool,
    pub bw: bool,
    pub iops: bool,
    avg_ms: u64,
    max_value: bool,
    prio_rt: u8,
    start_ns: Nanos,
    /// Lines per kind, [`LOG_KINDS`] order.
    pub samples: [Vec<Sample>; 5],
    /// Lines not kept past [`MAX_LOG_SAMPLES`].
    pub dropped: u64,
    lat_window_end_ms: u64,
    rate_window_end_ms: u64,
    lat_windows: [Window; 3],
    rate_windows: [Window; 3],
}

impl JobLogs {
    pub fn new(
        lat: bool,
        bw: bool,
        iops: bool,
        avg_ms: u64,
        max_value: bool,
        prio_rt: bool,
    ) -> Self {
        JobLogs {
            lat,
            bw,
            iops,
            avg_ms,
            max_value,
            prio_rt: u8::from(prio_rt),
            start_ns: 0,
            samples: Default::default(),
            dropped: 0,
            lat_window_end_ms: avg_ms,
            rate_window_end_ms: avg_ms,
            lat_windows: [Window::default(); 3],
            rate_windows: [Window::default(); 3],
        }
    }

    /// The job started at `now_ns`: times count from here.
    pub fn start(&mut self, now_ns: Nanos) {
        self.start_ns = now_ns;
    }

    fn push(&mut self, kind: usize, s: Sample) {
        if self.samples[kind].len() < MAX_LOG_SAMPLES {
            self.samples[kind].push(s);
        } else {
            self.dropped += 1;
        }
    }

    /// One I/O of direction `ddir` completed at `done_ns`.
    pub fn record(
        &mut self,
        ddir: usize,
        bs: u64,
        issue_ns: Nanos,
        submit_ns: Nanos,
        done_ns: Nanos,
    ) {
        let t_ms = done_ns.saturating_sub(self.start_ns) / NS_PER_MS;
        let slat = submit_ns.saturating_sub(issue_ns);
        let clat = done_ns.saturating_sub(submit_ns);
        let values = [slat + clat, clat, slat];
        if self.lat {
            if self.avg_ms == 0 {
                for (kind, value) in values.into_iter().enumerate() {
                    let s = Sample {
                        time_ms: t_ms,
                        value,
                        ddir: ddir as u8,
                        bs,
                        prio_rt: self.prio_rt,
                    };
                    self.push(kind, s);
                }
            } else {
                while t_ms >= self.lat_window_end_ms {
                    self.close_lat_window();
                }
                let w = &mut self.lat_windows[ddir];
                for (k, v) in values.into_iter().enumerate() {
                    w.sum[k] += u128::from(v);
                    w.max[k] = w.max[k].max(v);
                }
                w.ios += 1;
            }
        }
        if self.avg_ms == 0 {
            let prio_rt = self.prio_rt;
            let ddir = ddir as u8;
            if self.bw {
                // fio's per-unit rate: bytes over the completion latency, in bytes per ms.
                let value = if clat > 0 {
                    u64::try_from(u128::from(bs) * 1_000_000 / u128::from(clat)).unwrap_or(u64::MAX)
                } else {
                    0
                };
                self.push(3, Sample { time_ms: t_ms, value, ddir, bs, prio_rt });
            }
            if self.iops {
                self.push(4, Sample { time_ms: t_ms, value: 1, ddir, bs, prio_rt });
            }
        } else if self.bw || self.iops {
            while t_ms >= self.rate_window_end_ms {
                self.close_rate_window();
            }
            let w = &mut self.rate_windows[ddir];
            w.ios += 1;
            w.bytes += bs;
        }
    }

    fn close_lat_window(&mut self) {
        self.write_lat_windows(self.lat_window_end_ms);
        self.lat_window_end_ms += self.avg_ms;
    }

    /// The open latency windows as lines stamped `t` ms: fio's `__add_stat_to_log`, whose
    /// mean is rounded to nearest.
    fn write_lat_windows(&mut self, t: u64) {
        for ddir in 0..3 {
            let w = std::mem::take(&mut self.lat_windows[ddir]);
            if w.ios == 0 {
                continue;
            }
            for k in 0..3 {
                let n = u128::from(w.ios);
                let value = if self.max_value { w.max[k] } else { ((w.sum[k] + n / 2) / n) as u64 };
                let s =
                    Sample { time_ms: t, value, ddir: ddir as u8, bs: 0, prio_rt: self.prio_rt };
                self.push(k, s);
            }
        }
    }

    fn close_rate_window(&mut self) {
        let window_ms = self.avg_ms;
        let t = self.rate_window_end_ms;
        for ddir in 0..3 {
            let w = std::mem::take(&mut self.rate_windows[ddir]);
            if w.ios == 0 {
                continue;
            }
            let prio_rt = self.prio_rt;
            if self.bw {
                let kib_s = w.bytes * 1000 / 1024 / window_ms;
                self.push(3, Sample { time_ms: t, value: kib_s, ddir: ddir as u8, bs: 0, prio_rt });
            }
            if self.iops {
                let iops = w.ios * 1000 / window_ms;
                self.push(4, Sample { time_ms: t, value: iops, ddir: ddir as u8, bs: 0, prio_rt });
            }
        }
        self.rate_window_end_ms += window_ms;
    }

    /// The job ended at `end_ns`: the windows that ran their length are written out, then the
    /// latency windows still open at the end time; a rate window cut short is dropped.
    pub fn finish(&mut self, end_ns: Nanos) {
        if self.avg_ms == 0 {
            return;
        }
        let t_ms = end_ns.saturating_sub(self.start_ns) / NS_PER_MS;
        if self.lat {
            while self.lat_window_end_ms <= t_ms {
                self.close_lat_window();
            }
            self.write_lat_windows(t_ms);
        }
        if self.bw || self.iops {
            while self.rate_window_end_ms <= t_ms {
                self.close_rate_window();
            }
        }
    }
}

/// A log's text, as fio writes it.
pub fn render(samples: &[Sample]) -> String {
    let mut out = String::with_capacity(samples.len() * 24);
    for s in samples {
        out.push_str(&format!("{}, {}, {}, {}, {}\n", s.time_ms, s.value, s.ddir, s.bs, s.prio_rt));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_io_without_averaging_and_windows_with_it() {
        let mut l = JobLogs::new(true, true, true, 0, false, false);
        l.start(0);
        l.record(0, 4096, 0, 1_000, 3 * NS_PER_MS);
        l.record(1, 8192, 0, 0, 600 * NS_PER_MS);
        l.finish(600 * NS_PER_MS);
        assert_eq!(render(&l.samples[0]), "3, 3000000, 0, 4096, 0\n600, 600000000, 1, 8192, 0\n");
        assert_eq!(render(&l.samples[2]), "3, 1000, 0, 4096, 0\n600, 0, 1, 8192, 0\n");
        // fio's per-unit rate: 4096 B over a 2.999 ms completion, 8192 B over 600 ms.
        assert_eq!(render(&l.samples[3]), "3, 1365, 0, 4096, 0\n600, 13, 1, 8192, 0\n");
        assert_eq!(render(&l.samples[4]), "3, 1, 0, 4096, 0\n600, 1, 1, 8192, 0\n");

        let mut l = JobLogs::new(true, false, false, 100, false, true);
        l.start(0);
        l.record(0, 4096, 0, 0, 10 * NS_PER_MS);
        l.record(0, 4096, 0, 0, 30 * NS_PER_MS);
        l.finish(30 * NS_PER_MS);
        // The window still open is written at the end time.
        assert_eq!(render(&l.samples[1]), "30, 20000000, 0, 0, 1\n");
    }

    #[test]
    fn rate_windows_only_when_whole_and_means_rounded() {
        let mut l = JobLogs::new(true, true, true, 1000, false, false);
        l.start(0);
        l.record(0, 4096, 0, 0, 500 * NS_PER_MS);
        l.record(0, 4096, 0, 0, 1500 * NS_PER_MS + 1);
        l.record(0, 4096, 0, 0, 2500 * NS_PER_MS);
        l.finish(2600 * NS_PER_MS);
        // (1500 ms + 1 ns) alone in its window: no rounding down to 1.5 s.
        assert_eq!(
            render(&l.samples[1]),
            "1000, 500000000, 0, 0, 0\n2000, 1500000001, 0, 0, 0\n2600, 2500000000, 0, 0, 0\n"
        );
        // Two whole windows of one 4 KiB read; the cut third is not a sample.
        assert_eq!(render(&l.samples[3]), "1000, 4, 0, 0, 0\n2000, 4, 0, 0, 0\n");
        assert_eq!(render(&l.samples[4]), "1000, 1, 0, 0, 0\n2000, 1, 0, 0, 0\n");
    }
}

/// fio's name for an I/O's direction (`io_ddir_name`), as its logs and messages print it.
pub fn fio_ddir_name(op: Op) -> &'static str {
    match op {
        Op::Read => "read",
        Op::Write => "write",
        Op::Discard => "trim",
        Op::Flush => "sync",
    }
}

/// Lines one process's `write_iolog` may hold; past it the log stops and the run warns.
pub const MAX_IOLOG_LINES: usize = MAX_LOG_SAMPLES;

/// The length a line of [`IssueLog`] holds for a file action (`close`, `open`): no offset
/// or length is written.
const FILE_ACTION: u64 = u64::MAX;

/// One file of an [`IssueLog`].
#[derive(Clone, Debug)]
struct LoggedFile {
    /// The name the log's lines give the file, as fio's `f->file_name`.
    name: String,
    /// Route offset of the file's byte 0: offsets are logged relative to it, as fio logs
    /// offsets in the file.
    base_bytes: u64,
    open: bool,
}

/// One line: `(µs since the start, file, action, offset, length)`.
type Line = (u64, u32, &'static str, u64, u64);

/// `write_iolog=`: what one process issued, as a fio version 3 I/O log (fio's `log_io_u`,
/// `log_file`): a line per issued I/O, `TIME FILE ACTION OFFSET LENGTH`, the time in
/// microseconds since the job started and the offset within the file (or device) the I/O
/// went to. Every file is `add`ed at the start. A job's one file is `open`ed at the start,
/// `close`d and `open`ed between passes and before the verify phase; the files of an
/// `nrfiles` tree are opened as the job first goes to each, and closed when the job finds
/// one done (fio's `set_io_u_file`), between passes, and at the end. Flushes are `sync`
/// lines (`datasync` for fdatasync, `sync_file_range`), with the offset the io_u fio reused
/// for them carried last (see `Process::issued`). Real fio, and elevator for logs of one
/// file, replay it with `read_iolog=`.
#[derive(Clone, Debug)]
pub struct IssueLog {
    files: Vec<LoggedFile>,
    /// The files are a tree: opened as the job goes to them, not all at the start.
    tree: bool,
    start_ns: Nanos,
    lines: Vec<Line>,
    /// Lines not kept past [`MAX_IOLOG_LINES`].
    pub dropped: u64,
}

impl IssueLog {
    /// The log of a job with one file (or device), `name`d as fio names it, whose byte 0 is
    /// at route offset `base_bytes`.
    pub fn new(name: String, base_bytes: u64) -> IssueLog {
        let file = LoggedFile { name, base_bytes, open: true };
        IssueLog { files: vec![file], tree: false, start_ns: 0, lines: Vec::new(), dropped: 0 }
    }

    /// The log of a job with a tree of files: `(name, route offset of byte 0)` each.
    pub fn tree(files: Vec<(String, u64)>) -> IssueLog {
        let files = files
            .into_iter()
            .map(|(name, base_bytes)| LoggedFile { name, base_bytes, open: false })
            .collect();
        IssueLog { files, tree: true, start_ns: 0, lines: Vec::new(), dropped: 0 }
    }

    /// The job starts: times count from here.
    pub fn start(&mut self, now_ns: Nanos) {
        self.start_ns = now_ns;
    }

    /// The job issued `op` to `file` (0 for a job of one file) at route offset
    /// `offset_bytes`; a file of a tree not yet open is opened first.
    pub fn issued(
        &mut self,
        now_ns: Nanos,
        file: usize,
        op: Op,
        offset_bytes: u64,
        len_bytes: u64,
    ) {
        // A flush carries no offset or length.
        let (offset, len) = if op == Op::Flush { (0, 0) } else { (offset_bytes, len_bytes) };
        self.issued_action(now_ns, file, fio_ddir_name(op), offset, len);
    }

    /// The job issued `action` (fio's name for it) to `file` at route offset `offset_bytes`
    /// (0 for none), `len_bytes` long.
    pub fn issued_action(
        &mut self,
        now_ns: Nanos,
        file: usize,
        action: &'static str,
        offset_bytes: u64,
        len_bytes: u64,
    ) {
        let Some(f) = self.files.get(file) else { return };
        let offset = offset_bytes.saturating_sub(f.base_bytes);
        self.opened(now_ns, file);
        self.push(now_ns, file, action, offset, len_bytes);
    }

    fn push(&mut self, now_ns: Nanos, file: usize, action: &'static str, offset: u64, len: u64) {
        if self.lines.len() >= MAX_IOLOG_LINES {
            self.dropped += 1;
            return;
        }
        let us = now_ns.saturating_sub(self.start_ns) / NS_PER_US;
        self.lines.push((us, file as u32, action, offset, len));
    }

    /// The job opened `file` (a no-op if it is open).
    pub fn opened(&mut self, now_ns: Nanos, file: usize) {
        if self.files.get(file).is_some_and(|f| !f.open) {
            self.files[file].open = true;
            self.push(now_ns, file, "open", 0, FILE_ACTION);
        }
    }

    /// Where `file`'s byte 0 lies on the job's route (0 for a file it does not log).
    pub fn base_bytes(&self, file: usize) -> u64 {
        self.files.get(file).map_or(0, |f| f.base_bytes)
    }

    /// The job closed `file` (a no-op if it is not open).
    pub fn closed(&mut self, now_ns: Nanos, file: usize) {
        if self.files.get(file).is_some_and(|f| f.open) {
            self.files[file].open = false;
            self.push(now_ns, file, "close", 0, FILE_ACTION);
        }
    }

    /// The job closed its files and, with one file, opened it again at `now_ns` (fio's
    /// `close_files` between passes, and before the verify phase reads back); a tree's
    /// files are opened again as the job goes to them.
    pub fn reopened(&mut self, now_ns: Nanos) {
        for file in 0..self.files.len() {
            self.closed(now_ns, file);
        }
        if !self.tree {
            self.opened(now_ns, 0);
        }
    }

    /// The log's text, the files still open closed at `end_ns`.
    pub fn render(&self, end_ns: Nanos) -> String {
        let mut out = String::from("fio version 3 iolog\n");
        for f in &self.files {
            out.push_str(&format!("0 {} add\n", f.name));
        }
        if !self.tree {
            out.push_str(&format!("0 {} open\n", self.files[0].name));
        }
        for &(us, file, action, offset, len) in &self.lines {
            let f = &self.files[file as usize].name;
            if len == FILE_ACTION {
                out.push_str(&format!("{us} {f} {action}\n"));
            } else {
                out.push_str(&format!("{us} {f} {action} {offset} {len}\n"));
            }
        }
        let end_us = end_ns.saturating_sub(self.start_ns) / NS_PER_US;
        for f in self.files.iter().filter(|f| f.open) {
            out.push_str(&format!("{end_us} {} close\n", f.name));
        }
        out
    }
}
