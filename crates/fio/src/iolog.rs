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
//! previous one was issued (`replay_no_stall` drops the delays). elevator replays one file per log: a log naming two
//! files is an error that says so.

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
    /// The file (device) the log's I/O goes to, as written (`/dev/sdb`).
    pub file: String,
    pub entries: Vec<IoLogEntry>,
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
        let mut log =
            IoLog { source: source.to_string(), version, file: String::new(), entries: Vec::new() };
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
            } else if log.file != file {
                return Err(at(format!(
                    "a second file `{file}` (the log began with `{}`): elevator replays one file per log; split it per device",
                    log.file
                )));
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
    fn mistakes_name_the_line_and_the_fix() {
        let cases = [
            ("fio version 1 iolog\n", "t.log:1: not a fio iolog"),
            ("fio version 2 iolog\nsdb read 0\n", "t.log:2: `read` needs a length"),
            ("fio version 2 iolog\nsdb fly 0 512\n", "t.log:2: unknown action `fly`"),
            ("fio version 2 iolog\nsdb read 0 512\nsdc read 0 512\n", "t.log:3: a second file"),
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
