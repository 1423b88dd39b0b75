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

use elevator_core::Op;

use crate::iolog::{IoLog, IoLogEntry};

const MAGIC: u32 = 0x6561_7400;
const VERSION: u32 = 0x07;
const RECORD_BYTES: usize = 48;
const TA_QUEUE: u32 = 1;
const TC_SHIFT: u32 = 16;
const TC_WRITE: u32 = 1 << 1;
const TC_FLUSH: u32 = 1 << 2;
const TC_PC: u32 = 1 << 9;
const TC_NOTIFY: u32 = 1 << 10;
const TC_DISCARD: u32 = 1 << 13;

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
    let little = bytes.len() >= 4
        && u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) & 0xffff_ff00 == MAGIC;
    // Fixed-width fields in the trace's byte order; callers check the record fits first.
    let field = |at: usize, n: usize| -> u64 {
        let b = &bytes[at..at + n];
        let fold = |acc: u64, &x: &u8| acc << 8 | u64::from(x);
        if little {
            b.iter().rev().fold(0, fold)
        } else {
            b.iter().fold(0, fold)
        }
    };
    let u16_at = |at: usize| field(at, 2) as u16;
    let u32_at = |at: usize| field(at, 4) as u32;
    let u64_at = |at: usize| field(at, 8);
    let mut log =
        IoLog { source: source.to_string(), version: 0, file: String::new(), entries: Vec::new() };
    let mut device: Option<u32> = None;
    let mut last_ns: Option<u64> = None;
    let mut at = 0usize;
    let mut record = 0u32;
    while at < bytes.len() {
        record += 1;
        let here = |msg: String| format!("{source}: record {record} (byte {at}): {msg}");
        if bytes.len() - at < RECORD_BYTES {
            return Err(here(format!(
                "truncated: {} bytes left of a {RECORD_BYTES}-byte record",
                bytes.len() - at
            )));
        }
        let magic = u32_at(at);
        if magic & 0xffff_ff00 != MAGIC {
            return Err(here(format!("bad magic {magic:#010x}: not a blktrace record")));
        }
        if magic & 0xff != VERSION {
            return Err(here(format!(
                "blktrace version {} (elevator reads version {VERSION}, `struct blk_io_trace`)",
                magic & 0xff
            )));
        }
        let time_ns = u64_at(at + 8);
        let sector = u64_at(at + 16);
        let len = u64::from(u32_at(at + 24));
        let action = u32_at(at + 28);
        let dev = u32_at(at + 36);
        let pdu_len = usize::from(u16_at(at + 46));
        let next = at + RECORD_BYTES + pdu_len;
        if next > bytes.len() {
            return Err(here(format!("its {pdu_len}-byte payload runs past the end of the file")));
        }
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
    r.extend((MAGIC | VERSION).to_le_bytes());
    r.extend(0u32.to_le_bytes());
    r.extend(time_ns.to_le_bytes());
    r.extend(sector.to_le_bytes());
    r.extend(bytes.to_le_bytes());
    r.extend(action.to_le_bytes());
    r.extend(4242u32.to_le_bytes());
    r.extend(dev.to_le_bytes());
    r.extend(0u32.to_le_bytes());
    r.extend(0u16.to_le_bytes());
    r.extend((pdu.len() as u16).to_le_bytes());
    r.extend(pdu);
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
