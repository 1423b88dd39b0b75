//! blktrace binary traces as replayable logs, the way fio's `read_iolog=` takes a file written
//! by `blktrace -d DEV -o trace` (after `blkparse -i trace -d trace.bin` joins the per-CPU
//! files): every queue (`Q`) event of a file-system request becomes one action, with the time
//! since the previous one as its delay. Other events (merges, issues, completions, notes) are
//! skipped, as fio does.
//!
//! The record is `struct blk_io_trace` (48 bytes, then `pdu_len` bytes of payload): magic and
//! version, sequence, time in ns, sector, bytes, action, pid, device, cpu, error, pdu_len. The
//! action's low 16 bits say what happened (`__BLK_TA_QUEUE` = 1), the high 16 bits the
//! request's categories (`BLK_TC_READ`, `WRITE`, `FLUSH`, `DISCARD`, `NOTIFY`, `PC`, ...).
//! Traces in either byte order are read (the magic tells). A trace of several devices is
//! refused: elevator replays one device per log.
//!
//! The format's constants (`struct blk_io_trace`'s layout, the kernel's action and category
//! codes) are public, with [`Trace::write`] to encode a record and [`records`] to read them all:
//! `elevator run --write-blktrace` writes its traces with them (`elevator_sim::blktrace`).

use elevator_core::Op;

use crate::iolog::{IoLog, IoLogEntry};

/// `BLK_IO_TRACE_MAGIC`: the high 24 bits of a record's first word.
pub const MAGIC: u32 = 0x6561_7400;
/// `BLK_IO_TRACE_VERSION`: the low 8 bits of the first word.
pub const VERSION: u32 = 0x07;
/// `sizeof(struct blk_io_trace)`: the fixed part of a record; `pdu_len` bytes follow it.
pub const RECORD_BYTES: usize = 48;

// `enum blktrace_act` (include/uapi/linux/blktrace_api.h): the action word's low 16 bits.
/// `Q`: a bio enters the block layer.
pub const TA_QUEUE: u32 = 1;
/// `M`: a bio merged at the back of a request.
pub const TA_BACKMERGE: u32 = 2;
/// `F`: a bio merged in front of a request.
pub const TA_FRONTMERGE: u32 = 3;
/// `G`: a request was allocated.
pub const TA_GETRQ: u32 = 4;
/// `S`: the submitter sleeps for a request.
pub const TA_SLEEPRQ: u32 = 5;
/// `R`: a request went back to the queue.
pub const TA_REQUEUE: u32 = 6;
/// `D`: a request went to the driver.
pub const TA_ISSUE: u32 = 7;
/// `C`: the driver completed a request.
pub const TA_COMPLETE: u32 = 8;
/// `P`: the submitter's plug list started.
pub const TA_PLUG: u32 = 9;
/// `U`: the plug list was flushed by the submitter (payload: its depth, big-endian u64).
pub const TA_UNPLUG_IO: u32 = 10;
/// `UT`: the plug list was flushed by the timer.
pub const TA_UNPLUG_TIMER: u32 = 11;
/// `I`: a request was inserted into the scheduler.
pub const TA_INSERT: u32 = 12;
/// `X`: a bio was split (payload: the remainder's first sector, big-endian u64).
pub const TA_SPLIT: u32 = 13;

// `enum blktrace_notify`: the low 16 bits of a `BLK_TC_NOTIFY` record.
/// A process's command name (`comm`, 16 bytes) for its pid.
pub const TN_PROCESS: u32 = 0;
/// The wall-clock time the trace started.
pub const TN_TIMESTAMP: u32 = 1;
/// A text message.
pub const TN_MESSAGE: u32 = 2;

// `enum blktrace_cat`: the action word's high 16 bits (shifted by `TC_SHIFT`).
pub const TC_SHIFT: u32 = 16;
pub const TC_READ: u32 = 1 << 0;
pub const TC_WRITE: u32 = 1 << 1;
pub const TC_FLUSH: u32 = 1 << 2;
pub const TC_SYNC: u32 = 1 << 3;
pub const TC_QUEUE: u32 = 1 << 4;
pub const TC_REQUEUE: u32 = 1 << 5;
pub const TC_ISSUE: u32 = 1 << 6;
pub const TC_COMPLETE: u32 = 1 << 7;
pub const TC_FS: u32 = 1 << 8;
pub const TC_PC: u32 = 1 << 9;
pub const TC_NOTIFY: u32 = 1 << 10;
pub const TC_AHEAD: u32 = 1 << 11;
pub const TC_META: u32 = 1 << 12;
pub const TC_DISCARD: u32 = 1 << 13;
pub const TC_DRV_DATA: u32 = 1 << 14;
pub const TC_FUA: u32 = 1 << 15;

/// The kernel's `BLK_TA_*` / `BLK_TN_*` action words: what happened, with the category the
/// kernel adds for it (the request's own categories are or-ed in by the tracer).
pub const fn action(what: u32, category: u32) -> u32 {
    what | category << TC_SHIFT
}

/// `BLK_TN_PROCESS`.
pub const BLK_TN_PROCESS: u32 = action(TN_PROCESS, TC_NOTIFY);

/// A device number as the kernel's `dev_t` in a record: `MKDEV(major, minor)`.
pub const fn dev_t(major: u32, minor: u32) -> u32 {
    major << 20 | (minor & 0xf_ffff)
}

/// The fixed part of one record, `struct blk_io_trace` without its payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    pub sequence: u32,
    pub time_ns: u64,
    pub sector: u64,
    pub bytes: u32,
    pub action: u32,
    pub pid: u32,
    pub device: u32,
    pub cpu: u32,
    pub error: u16,
}

impl Trace {
    /// Appends the record with `pdu` as its payload, native little-endian as blktrace writes
    /// it on x86-64: `magic|version, sequence, time, sector, bytes, action, pid, device, cpu,
    /// error, pdu_len`, then the payload. A payload is at most `u16::MAX` bytes.
    pub fn write(&self, pdu: &[u8], out: &mut Vec<u8>) {
        debug_assert!(pdu.len() <= usize::from(u16::MAX), "a blktrace payload is at most 64 KiB");
        let mut r = [0u8; RECORD_BYTES];
        r[0..4].copy_from_slice(&(MAGIC | VERSION).to_le_bytes());
        r[4..8].copy_from_slice(&self.sequence.to_le_bytes());
        r[8..16].copy_from_slice(&self.time_ns.to_le_bytes());
        r[16..24].copy_from_slice(&self.sector.to_le_bytes());
        r[24..28].copy_from_slice(&self.bytes.to_le_bytes());
        r[28..32].copy_from_slice(&self.action.to_le_bytes());
        r[32..36].copy_from_slice(&self.pid.to_le_bytes());
        r[36..40].copy_from_slice(&self.device.to_le_bytes());
        r[40..44].copy_from_slice(&self.cpu.to_le_bytes());
        r[44..46].copy_from_slice(&self.error.to_le_bytes());
        r[46..48].copy_from_slice(&(pdu.len() as u16).to_le_bytes());
        out.extend_from_slice(&r);
        out.extend_from_slice(pdu);
    }
}

/// Reads every record of a trace (either byte order) with its payload; `source` names the
/// file in messages.
pub fn records<'a>(bytes: &'a [u8], source: &str) -> Result<Vec<(Trace, &'a [u8])>, String> {
    let mut out = Vec::new();
    let mut at = 0usize;
    let mut record = 0u32;
    while at < bytes.len() {
        record += 1;
        let (t, pdu) = read_record(bytes, at)
            .map_err(|msg| format!("{source}: record {record} (byte {at}): {msg}"))?;
        at += RECORD_BYTES + pdu.len();
        out.push((t, pdu));
    }
    Ok(out)
}

/// The record at byte `at`: its fixed part and its payload.
fn read_record(bytes: &[u8], at: usize) -> Result<(Trace, &[u8]), String> {
    if bytes.len() - at < RECORD_BYTES {
        return Err(format!(
            "truncated: {} bytes left of a {RECORD_BYTES}-byte record",
            bytes.len() - at
        ));
    }
    let r = &bytes[at..at + RECORD_BYTES];
    let le =
        |i: usize, n: usize| r[i..i + n].iter().rev().fold(0u64, |acc, &x| acc << 8 | u64::from(x));
    let be = |i: usize, n: usize| r[i..i + n].iter().fold(0u64, |acc, &x| acc << 8 | u64::from(x));
    let little = le(0, 4) as u32 & 0xffff_ff00 == MAGIC;
    let field = |i: usize, n: usize| if little { le(i, n) } else { be(i, n) };
    let magic = field(0, 4) as u32;
    if magic & 0xffff_ff00 != MAGIC {
        return Err(format!("bad magic {magic:#010x}: not a blktrace record"));
    }
    if magic & 0xff != VERSION {
        return Err(format!(
            "blktrace version {} (elevator reads version {VERSION}, `struct blk_io_trace`)",
            magic & 0xff
        ));
    }
    let t = Trace {
        sequence: field(4, 4) as u32,
        time_ns: field(8, 8),
        sector: field(16, 8),
        bytes: field(24, 4) as u32,
        action: field(28, 4) as u32,
        pid: field(32, 4) as u32,
        device: field(36, 4) as u32,
        cpu: field(40, 4) as u32,
        error: field(44, 2) as u16,
    };
    let pdu_len = field(46, 2) as usize;
    let end = at + RECORD_BYTES + pdu_len;
    if end > bytes.len() {
        return Err(format!("its {pdu_len}-byte payload runs past the end of the file"));
    }
    Ok((t, &bytes[at + RECORD_BYTES..end]))
}

/// True if `bytes` start like a blktrace file.
pub fn looks_like_blktrace(bytes: &[u8]) -> bool {
    bytes.len() >= 4 && {
        let le = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let be = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        le & 0xffff_ff00 == MAGIC || be & 0xffff_ff00 == MAGIC
    }
}

/// Parses a blktrace binary file; `source` names it in messages, which give the byte offset of
/// the record at fault.
pub fn parse(bytes: &[u8], source: &str) -> Result<IoLog, String> {
    let mut log = IoLog {
        source: source.to_string(),
        version: 0,
        file: String::new(),
        other_file: None,
        entries: Vec::new(),
    };
    let mut device: Option<u32> = None;
    let mut last_ns: Option<u64> = None;
    let mut at = 0usize;
    let mut record = 0u32;
    while at < bytes.len() {
        record += 1;
        let here = |msg: String| format!("{source}: record {record} (byte {at}): {msg}");
        let (t, pdu) = read_record(bytes, at).map_err(here)?;
        let next = at + RECORD_BYTES + pdu.len();
        let (time_ns, sector, len, action, dev) =
            (t.time_ns, t.sector, u64::from(t.bytes), t.action, t.device);
        let categories = action >> TC_SHIFT;
        let is_queue = action & 0xffff == TA_QUEUE && categories & (TC_NOTIFY | TC_PC) == 0;
        if is_queue {
            match device {
                None => device = Some(dev),
                Some(d) if d != dev => {
                    return Err(here(format!(
                        "a second device ({},{}; the trace began with {},{}): elevator replays one device per trace; trace one device (blktrace -d) or split it with blkparse",
                        dev >> 20,
                        dev & 0xfffff,
                        d >> 20,
                        d & 0xfffff
                    )))
                }
                Some(_) => {}
            }
            let op = if categories & TC_DISCARD != 0 {
                Op::Discard
            } else if len == 0 && categories & TC_FLUSH != 0 {
                Op::Flush
            } else if categories & TC_WRITE != 0 {
                Op::Write
            } else {
                Op::Read
            };
            if op == Op::Flush || len > 0 {
                if op != Op::Flush && len % 512 != 0 {
                    return Err(here(format!("a {len}-byte request is not whole sectors")));
                }
                let delay_ns = last_ns.map_or(0, |l| time_ns.saturating_sub(l));
                last_ns = Some(time_ns);
                let (offset_bytes, len_bytes) =
                    if op == Op::Flush { (0, 0) } else { (sector.saturating_mul(512), len) };
                log.entries.push(IoLogEntry {
                    op,
                    offset_bytes,
                    len_bytes,
                    delay_ns,
                    line: record,
                });
            }
        }
        at = next;
    }
    let Some(dev) = device else {
        return Err(format!(
            "{source}: the blktrace has no queue (Q) events of file-system requests to replay"
        ));
    };
    log.file = format!("{},{}", dev >> 20, dev & 0xfffff);
    Ok(log)
}

/// Encodes one little-endian record with process id 4242 and no sequence number: for tests
/// and tools that write traces. `action` is the full action word (what | categories << 16).
pub fn encode(time_ns: u64, sector: u64, bytes: u32, action: u32, dev: u32, pdu: &[u8]) -> Vec<u8> {
    let mut r = Vec::with_capacity(RECORD_BYTES + pdu.len());
    Trace { time_ns, sector, bytes, action, pid: 4242, device: dev, ..Trace::default() }
        .write(pdu, &mut r);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(time_ns: u64, sector: u64, bytes: u32, action: u32, dev: u32, pdu: &[u8]) -> Vec<u8> {
        encode(time_ns, sector, bytes, action, dev, pdu)
    }

    const Q: u32 = TA_QUEUE | (1 << 4) << TC_SHIFT;
    const READ: u32 = 1 << TC_SHIFT;
    const WRITE: u32 = TC_WRITE << TC_SHIFT;
    const SDB: u32 = 8 << 20 | 16;

    #[test]
    fn queue_events_become_actions_with_delays() {
        let mut t = Vec::new();
        t.extend(record(0, 0, 0, TC_NOTIFY << TC_SHIFT, SDB, b"dd\0\0"));
        t.extend(record(1_000, 2048, 4096, Q | READ, SDB, &[]));
        t.extend(record(1_500, 2048, 4096, 7 | READ, SDB, &[])); // an issue (D): skipped
        t.extend(record(5_000, 4096, 8192, Q | WRITE, SDB, &[]));
        t.extend(record(6_000, 0, 0, Q | (TC_WRITE | TC_FLUSH) << TC_SHIFT, SDB, &[]));
        t.extend(record(9_000, 100, 4096, Q | (TC_WRITE | TC_DISCARD) << TC_SHIFT, SDB, &[]));
        assert!(looks_like_blktrace(&t));
        let log = parse(&t, "t.bin").unwrap();
        assert_eq!(log.file, "8,16");
        let got: Vec<(Op, u64, u64, u64)> =
            log.entries.iter().map(|e| (e.op, e.offset_bytes, e.len_bytes, e.delay_ns)).collect();
        assert_eq!(
            got,
            vec![
                (Op::Read, 2048 * 512, 4096, 0),
                (Op::Write, 4096 * 512, 8192, 4_000),
                (Op::Flush, 0, 0, 1_000),
                (Op::Discard, 100 * 512, 4096, 3_000),
            ]
        );
    }

    #[test]
    fn damaged_traces_say_where() {
        let good = record(1_000, 8, 4096, Q | READ, SDB, &[]);
        let e = parse(&good[..40], "t.bin").unwrap_err();
        assert!(e.contains("t.bin: record 1 (byte 0): truncated"), "{e}");
        let mut two = good.clone();
        two.extend(record(2_000, 8, 4096, Q | READ, 8 << 20 | 32, &[]));
        let e = parse(&two, "t.bin").unwrap_err();
        assert!(e.contains("record 2 (byte 48): a second device (8,32"), "{e}");
        let mut bad = good.clone();
        bad.extend([0u8; 48]); // a second record of zeros
        let e = parse(&bad, "t.bin").unwrap_err();
        assert!(e.contains("record 2 (byte 48): bad magic"), "{e}");
        let e = parse(&record(0, 0, 0, TC_NOTIFY << TC_SHIFT, SDB, &[]), "t.bin").unwrap_err();
        assert!(e.contains("no queue (Q) events"), "{e}");
    }

    /// One record, byte for byte as `struct blk_io_trace` lies on x86-64 (little-endian, no
    /// padding), and back through the reader.
    #[test]
    fn a_record_is_struct_blk_io_trace() {
        let t = Trace {
            sequence: 0x0102_0304,
            time_ns: 0x1112_1314_1516_1718,
            sector: 0x2122_2324_2526_2728,
            bytes: 0x3132_3334,
            action: action(TA_ISSUE, TC_ISSUE | TC_WRITE | TC_SYNC | TC_FS),
            pid: 0x4142_4344,
            device: dev_t(8, 16),
            cpu: 0x5152_5354,
            error: 0x6162,
        };
        let mut out = Vec::new();
        t.write(b"xyz", &mut out);
        #[rustfmt::skip]
        let want: Vec<u8> = [
            &[0x07, 0x74, 0x61, 0x65][..],                       // magic | version
            &[0x04, 0x03, 0x02, 0x01],                           // sequence
            &[0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11],   // time
            &[0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21],   // sector
            &[0x34, 0x33, 0x32, 0x31],                           // bytes
            &[0x07, 0x00, 0x4a, 0x01],                           // action: D, WS|issue|fs
            &[0x44, 0x43, 0x42, 0x41],                           // pid
            &[0x10, 0x00, 0x80, 0x00],                           // device 8,16
            &[0x54, 0x53, 0x52, 0x51],                           // cpu
            &[0x62, 0x61],                                       // error
            &[0x03, 0x00],                                       // pdu_len
            b"xyz",
        ]
        .concat();
        assert_eq!(out, want);
        assert_eq!(out.len(), RECORD_BYTES + 3);
        let back = records(&out, "t.bin").unwrap();
        assert_eq!(back, vec![(t, &b"xyz"[..])]);
        // Big-endian traces read the same.
        let mut be = out.clone();
        for (at, n) in [
            (0, 4),
            (4, 4),
            (8, 8),
            (16, 8),
            (24, 4),
            (28, 4),
            (32, 4),
            (36, 4),
            (40, 4),
            (44, 2),
            (46, 2),
        ] {
            be[at..at + n].reverse();
        }
        assert_eq!(records(&be, "t.bin").unwrap(), vec![(t, &b"xyz"[..])]);
        let e = records(&out[..50], "t.bin").unwrap_err();
        assert!(e.contains("record 1 (byte 0): its 3-byte payload runs past"), "{e}");
    }

    #[test]
    fn kernel_action_words() {
        // BLK_TA_QUEUE, BLK_TA_ISSUE, BLK_TA_COMPLETE, BLK_TN_PROCESS as blktrace_api.h has them.
        assert_eq!(action(TA_QUEUE, TC_QUEUE), 0x0010_0001);
        assert_eq!(action(TA_ISSUE, TC_ISSUE), 0x0040_0007);
        assert_eq!(action(TA_COMPLETE, TC_COMPLETE), 0x0080_0008);
        assert_eq!(action(TA_SPLIT, 0), 13);
        assert_eq!(BLK_TN_PROCESS, 0x0400_0000);
        assert_eq!(dev_t(8, 0), 0x0080_0000);
    }

    proptest::proptest! {
        /// Whatever the bytes, a trace parses or is refused with a message: never a panic.
        #[test]
        fn any_bytes_parse_or_fail_cleanly(
            mut bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..400),
            magic in proptest::bool::ANY,
        ) {
            if magic && bytes.len() >= 4 {
                bytes[..4].copy_from_slice(&(MAGIC | VERSION).to_le_bytes());
            }
            let _ = parse(&bytes, "fuzz.bin");
        }
    }
}
