//! fio I/O logs (`read_iolog=`): a recorded sequence of I/Os to replay instead of a generated
//! workload, in fio's own text formats.
//!
//! ```text
//! fio version 2 iolog            fio version 3 iolog
//! /dev/sdb add                   0 /dev/sdb add
//! /dev/sdb open                  0 /dev/sdb open
//! /dev/sdb read 0 4096           12 /dev/sdb read 0 4096
//! /dev/sdb wait 0 1500           15 /dev/sdb write 8192 4096
//! /dev/sdb write 8192 4096       20 /dev/sdb close
//! /dev/sdb close
//! ```
//!
//! Actions: `read`, `write`, `trim` and `sync`/`datasync` (a flush) carry an offset and a
//! length in bytes; `add`, `open` and `close` manage files; version 2's `wait` delays the next
//! action by its length field in microseconds; version 3 lines start with a timestamp in
//! microseconds since the run began (fio 3.31 and later write `utime_since_now` there and
//! replay the differences as microseconds; a timestamp earlier than the one before counts as
//! no delay, as fio's `delay_since_ttime`). As in fio, each action waits its delay after the
//! previous one was issued (`replay_no_stall` drops the delays). A log may name several files
//! (fio's logs of an `nrfiles` job do): with `replay_redirect=` every file's I/O goes to the
//! one target, at its recorded offsets, as fio sends it; without, elevator replays a log of
//! one file (or device) and says so for the others.

use std::path::Path;

use elevator_core::{Nanos, Op, NS_PER_US};

/// One replayed action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoLogEntry {
    pub op: Op,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    /// How long after the previous action was issued this one may be issued.
    pub delay_ns: Nanos,
    /// Line in the log (record number in a blktrace), for messages.
    pub line: u32,
}

/// A parsed log: the one file it names and its actions in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoLog {
    /// Where it was read from, for messages.
    pub source: String,
    /// 2 or 3 for fio's text logs, 0 for a blktrace.
    pub version: u8,
    /// The file (device) the log's I/O goes to, as written (`/dev/sdb`): the first it names.
    pub file: String,
    /// The first other file the log names, and its line: such a log replays only where
    /// `replay_redirect=` sends every file's I/O.
    pub other_file: Option<(String, u32)>,
    pub entries: Vec<IoLogEntry>,
}

/// How a log is replayed: fio's `replay_time_scale`, `replay_scale`, `replay_align` and
/// `replay_skip`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replay {
    /// Recorded gaps run at this percentage of the recorded rate (100: as recorded).
    pub time_scale_percent: u32,
    /// Offsets are divided by this (1: as recorded).
    pub scale: u64,
    /// Offsets aligned down to this power of two (0 or 1: as recorded).
    pub align_bytes: u64,
    /// Directions left out of a blktrace replay: read, write, trim, sync.
    pub skip: [bool; 4],
}

impl Default for Replay {
    fn default() -> Replay {
        Replay { time_scale_percent: 100, scale: 1, align_bytes: 0, skip: [false; 4] }
    }
}

impl Replay {
    fn skips(&self, op: Op) -> bool {
        match op {
            Op::Read => self.skip[0],
            Op::Write => self.skip[1],
            Op::Discard => self.skip[2],
            Op::Flush => self.skip[3],
        }
    }
}

/// The longest stretch of recorded time one replay may span: a simulated day. A delay or a
/// timestamp of 2^64−1 would otherwise have the simulator run its periodic timers (the
/// flusher's, throttling's) for centuries of simulated time.
pub const MAX_REPLAY_SPAN_NS: Nanos = 86_400 * 1_000_000_000;

impl IoLog {
    /// Reads and parses a log file: a fio text log, or a blktrace binary trace.
    pub fn load(path: &Path) -> Result<IoLog, String> {
        let bytes = std::fs::read(path)
            .map_err(|e| format!("{}: cannot read the iolog: {e}", path.display()))?;
        let source = path.display().to_string();
        if crate::blktrace::looks_like_blktrace(&bytes) {
            let log = crate::blktrace::parse(&bytes, &source)?;
            log.check_span()?;
            return Ok(log);
        }
        let text = String::from_utf8(bytes).map_err(|_| {
            format!("{source}: neither a fio iolog (text) nor a blktrace (binary) file")
        })?;
        IoLog::parse(&text, &source)
    }

    /// True for a blktrace, which names its device by number (`8,16`), not by name.
    pub fn from_blktrace(&self) -> bool {
        self.version == 0
    }

    /// Parses log text; `source` names it in messages.
    pub fn parse(text: &str, source: &str) -> Result<IoLog, String> {
        let mut lines = text.lines().enumerate();
        let version = match lines.next().map(|(_, l)| l.trim()) {
            Some("fio version 2 iolog") => 2,
            Some("fio version 3 iolog") => 3,
            _ => {
                return Err(format!(
                    "{source}:1: not a fio iolog: the first line must be `fio version 2 iolog` or `fio version 3 iolog` (version 1 logs and blktrace files are not read)"
                ))
            }
        };
        let mut log = IoLog {
            source: source.to_string(),
            version,
            file: String::new(),
            other_file: None,
            entries: Vec::new(),
        };
        let mut pending_delay_ns: Nanos = 0;
        let mut last_us: u64 = 0;
        for (i, raw) in lines {
            let line = (i + 1) as u32;
            let at = |msg: String| format!("{source}:{line}: {msg}");
            let mut words = raw.split_whitespace();
            if raw.trim().is_empty() {
                continue;
            }
            if version == 3 {
                let us: u64 = words.next().and_then(|w| w.parse().ok()).ok_or_else(|| {
                    at("a version 3 line starts with a timestamp in microseconds".into())
                })?;
                pending_delay_ns = pending_delay_ns
                    .saturating_add(us.saturating_sub(last_us).saturating_mul(NS_PER_US));
                last_us = us;
            }
            let (Some(file), Some(action)) = (words.next(), words.next()) else {
                return Err(at("expected `FILE ACTION [OFFSET LENGTH]`".into()));
            };
            if log.file.is_empty() {
                log.file = file.to_string();
            } else if log.file != file && log.other_file.is_none() {
                log.other_file = Some((file.to_string(), line));
            }
            let mut number = |what: &str| -> Result<u64, String> {
                words
                    .next()
                    .ok_or_else(|| at(format!("`{action}` needs {what}")))?
                    .parse()
                    .map_err(|_| at(format!("{what} of `{action}` is not a whole number")))
            };
            let op = match action {
                "add" | "open" | "close" => continue,
                "read" => Op::Read,
                "write" => Op::Write,
                "trim" => Op::Discard,
                "sync" | "datasync" => Op::Flush,
                "wait" if version == 2 => {
                    let _offset = number("an offset")?;
                    let us = number("a delay in µs")?;
                    pending_delay_ns = pending_delay_ns.saturating_add(us.saturating_mul(NS_PER_US));
                    continue;
                }
                other => {
                    return Err(at(format!(
                        "unknown action `{other}`; fio logs use add, open, close, read, write, trim, sync, datasync{}",
                        if version == 2 { ", wait" } else { "" }
                    )))
                }
            };
            let (offset_bytes, len_bytes) = if op == Op::Flush {
                // fio writes `sync 0 0`; tolerate the bare form too.
                (0, 0)
            } else {
                let offset = number("an offset in bytes")?;
                let len = number("a length in bytes")?;
                if len == 0 || offset % 512 != 0 || len % 512 != 0 {
                    return Err(at(format!(
                        "{action} {offset} {len}: offsets and lengths must be non-zero multiples of 512 bytes (the sector size)"
                    )));
                }
                (offset, len)
            };
            log.entries.push(IoLogEntry {
                op,
                offset_bytes,
                len_bytes,
                delay_ns: std::mem::take(&mut pending_delay_ns),
                line,
            });
        }
        if log.entries.is_empty() {
            return Err(format!("{source}: the iolog has no read, write, trim or sync actions"));
        }
        log.check_span()?;
        Ok(log)
    }

    /// Refuses a log whose recorded time passes [`MAX_REPLAY_SPAN_NS`], naming the action
    /// (line, or blktrace record) where it does.
    fn check_span(&self) -> Result<(), String> {
        let mut total: Nanos = 0;
        for e in &self.entries {
            total = total.saturating_add(e.delay_ns);
            if total > MAX_REPLAY_SPAN_NS {
                let at = if self.from_blktrace() {
                    format!("{}: record {}", self.source, e.line)
                } else {
                    format!("{}:{}", self.source, e.line)
                };
                return Err(format!(
                    "{at}: the log's recorded time passes {} s here (a delay or timestamp too large); a replay spans at most one simulated day",
                    MAX_REPLAY_SPAN_NS / 1_000_000_000
                ));
            }
        }
        Ok(())
    }

    /// The log as fio replays it with `replay_time_scale`, `replay_scale`, `replay_align` and
    /// `replay_skip` (iolog.c's `read_iolog`, blktrace.c's `store_ipo`, `handle_trace`):
    /// - recorded gaps (version 3 timestamps, blktrace times; not version 2's `wait`s) times
    ///   100 / `time_scale_percent`;
    /// - offsets divided by `scale`, then aligned down to `align` (a power of two), and in any
    ///   case to a sector, which the simulator needs (fio keeps odd offsets);
    /// - from a blktrace, lengths rounded up to `align`, and the directions in `skip` (read,
    ///   write, trim, sync) left out with their gaps (fio 3.33 skips only in blktrace replays).
    ///
    /// Refuses a result that spans more than [`MAX_REPLAY_SPAN_NS`].
    pub fn adjusted(&self, replay: &Replay) -> Result<IoLog, String> {
        let mut log = self.clone();
        let timed = log.version != 2;
        let sector = elevator_core::SECTOR_BYTES;
        let align = replay.align_bytes.max(1);
        let blktrace = log.from_blktrace();
        log.entries.retain(|e| !(blktrace && replay.skips(e.op)));
        for e in &mut log.entries {
            if timed && replay.time_scale_percent != 100 {
                let scaled =
                    e.delay_ns as u128 * 100 / u128::from(replay.time_scale_percent.max(1));
                e.delay_ns = Nanos::try_from(scaled).unwrap_or(Nanos::MAX);
            }
            if e.op != Op::Flush {
                e.offset_bytes = e.offset_bytes / replay.scale.max(1) / align * align;
                e.offset_bytes -= e.offset_bytes % sector;
                if blktrace && replay.align_bytes > 1 {
                    e.len_bytes = e.len_bytes.div_ceil(align) * align;
                }
            }
        }
        log.check_span()?;
        Ok(log)
    }

    /// The highest byte any action touches.
    pub fn end_bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.offset_bytes.saturating_add(e.len_bytes)).max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_2_with_waits() {
        let log = IoLog::parse(
            "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb read 0 4096\n\
             /dev/sdb wait 0 1500\n/dev/sdb write 8192 4096\n/dev/sdb sync 0 0\n/dev/sdb close\n",
            "t.log",
        )
        .unwrap();
        assert_eq!(log.file, "/dev/sdb");
        let e = &log.entries;
        assert_eq!(e.len(), 3);
        assert_eq!(
            (e[0].op, e[0].offset_bytes, e[0].len_bytes, e[0].delay_ns),
            (Op::Read, 0, 4096, 0)
        );
        assert_eq!((e[1].op, e[1].delay_ns, e[1].line), (Op::Write, 1_500_000, 6));
        assert_eq!(e[2].op, Op::Flush);
        assert_eq!(log.end_bytes(), 12288);
    }

    #[test]
    fn version_3_timestamps_become_delays() {
        let log = IoLog::parse(
            "fio version 3 iolog\n0 sdb add\n0 sdb open\n12000 sdb read 0 4096\n15000 sdb trim 4096 8192\n9000 sdb read 0 512\n9500 sdb read 0 512\n",
            "t.log",
        )
        .unwrap();
        let d: Vec<Nanos> = log.entries.iter().map(|e| e.delay_ns).collect();
        // Microseconds; a step back in time is no delay (fio's delay_since_ttime).
        assert_eq!(d, vec![12_000_000, 3_000_000, 0, 500_000]);
        assert_eq!(log.entries[1].op, Op::Discard);
    }

    #[test]
    fn replay_options_scale_time_and_offsets() {
        let v3 = IoLog::parse(
            "fio version 3 iolog\n0 sdb add\n1000 sdb read 1048576 4096\n3000 sdb write 12800 4096\n",
            "t.log",
        )
        .unwrap();
        let faster = Replay { time_scale_percent: 200, ..Replay::default() };
        let d: Vec<Nanos> =
            v3.adjusted(&faster).unwrap().entries.iter().map(|e| e.delay_ns).collect();
        assert_eq!(d, [500_000, 1_000_000]);
        // Offsets divided, aligned down (and to a sector in any case); lengths kept.
        let smaller = Replay { scale: 4, align_bytes: 4096, ..Replay::default() };
        let e = v3.adjusted(&smaller).unwrap().entries;
        assert_eq!((e[0].offset_bytes, e[1].offset_bytes, e[1].len_bytes), (262_144, 0, 4096));
        let e = v3.adjusted(&Replay { scale: 3, ..Replay::default() }).unwrap().entries;
        assert_eq!(e[0].offset_bytes, 349_184, "1048576 / 3 down to a sector");
        // Version 2's waits are not recorded times: not scaled.
        let v2 = IoLog::parse("fio version 2 iolog\nsdb wait 0 1000\nsdb read 0 512\n", "t.log")
            .unwrap();
        assert_eq!(v2.adjusted(&faster).unwrap().entries[0].delay_ns, 1_000_000);
        // A blktrace replay leaves out the skipped directions (and their gaps) and rounds
        // lengths up to the alignment.
        let mut bt = v3.clone();
        bt.version = 0;
        let skip =
            Replay { skip: [false, true, false, false], align_bytes: 8192, ..Replay::default() };
        let e = bt.adjusted(&skip).unwrap().entries;
        assert_eq!(e.len(), 1);
        assert_eq!((e[0].op, e[0].len_bytes), (Op::Read, 8192));
        // Slowed down past a simulated day: refused.
        let slow = IoLog::parse(
            "fio version 3 iolog\n0 sdb read 0 512\n86000000000 sdb read 0 512\n",
            "t.log",
        )
        .unwrap();
        assert!(slow.adjusted(&Replay { time_scale_percent: 50, ..Replay::default() }).is_err());
    }

    #[test]
    fn a_log_of_several_files_keeps_every_action_and_names_the_second_file() {
        let text = "fio version 3 iolog\n0 d/t.0.0 add\n0 d/t.0.1 add\n1 d/t.0.0 open\n\
                    2 d/t.0.0 read 0 4096\n3 d/t.0.1 open\n4 d/t.0.1 read 0 4096\n";
        let log = IoLog::parse(text, "t.log").unwrap();
        assert_eq!(log.file, "d/t.0.0");
        assert_eq!(log.other_file, Some(("d/t.0.1".to_string(), 3)));
        assert_eq!(log.entries.len(), 2);
    }

    #[test]
    fn mistakes_name_the_line_and_the_fix() {
        let cases = [
            ("fio version 1 iolog\n", "t.log:1: not a fio iolog"),
            ("fio version 2 iolog\nsdb read 0\n", "t.log:2: `read` needs a length"),
            ("fio version 2 iolog\nsdb fly 0 512\n", "t.log:2: unknown action `fly`"),
            ("fio version 2 iolog\nsdb read 100 512\n", "multiples of 512"),
            ("fio version 3 iolog\nsdb read 0 512\n", "starts with a timestamp"),
            ("fio version 2 iolog\nsdb open\n", "no read, write, trim or sync"),
        ];
        for (text, expect) in cases {
            let e = IoLog::parse(text, "t.log").unwrap_err();
            assert!(e.contains(expect), "{text:?}: {e}");
        }
    }

    proptest::proptest! {
        /// Whatever the text after a valid header, a log parses or is refused: never a panic.
        #[test]
        fn any_text_parses_or_fails_cleanly(
            body in "(([0-9]{1,22} )?[a-z/]{1,8} [a-z]{1,8}( [0-9]{1,22}){0,2}\n){0,20}",
            v3 in proptest::bool::ANY,
        ) {
            let header = if v3 { "fio version 3 iolog\n" } else { "fio version 2 iolog\n" };
            let _ = IoLog::parse(&format!("{header}{body}"), "fuzz.log");
        }
    }
}
