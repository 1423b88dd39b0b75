//! The block layer's event sink: what `blktrace` would have recorded on the simulated device.
//!
//! [`crate::block::BlockQueue`] hands each event it takes part in (a bio queued, split or
//! merged, a request allocated, inserted, issued, completed; the submitter's plug and unplug)
//! to its [`Recorder`], if it has one, as a [`BlockEvent`]. The recorder encodes it at once as
//! a Linux `struct blk_io_trace` record (`elevator_fio::blktrace::Trace`) into a buffer in
//! memory: simulated time in ns, the owner's pid, the device's `dev_t`, CPU 0, one sequence
//! number per record as the kernel's per-CPU counter. The first event of each pid is preceded
//! by a `BLK_TN_PROCESS` note with its command name, as the kernel's `trace_note_tsk` does, so
//! `blkparse` names the jobs. Nothing here does I/O: the caller (`elevator run
//! --write-blktrace`) writes [`BlktraceFile::bytes`] as `DEV.blktrace.0`.
//!
//! The action words follow the kernel's tracepoints (kernel/trace/blktrace.c): bio events (Q,
//! X, M, F, G, S) carry the bio's categories (`R` or `W`, `S` for a sync write, `F` flush, `D`
//! discard, `F` FUA, `M` metadata); request events (I, D, C) add `BLK_TC_FS`; P and U carry
//! no data (the kernel traces them with a read's category, `N` in blkparse). X's payload is
//! the big-endian first sector of the remainder, U's the plug's depth, as the kernel writes
//! them.
//!
//! Bounded: at most [`MAX_BLKTRACE_EVENTS`] records and [`MAX_BLKTRACE_BYTES`] bytes per
//! device; past either the recorder stops and counts what it left out.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use elevator_core::{Nanos, Op, Request, SECTOR_BYTES};
use elevator_fio::blktrace::{
    self as fmt, action, Trace, BLK_TN_PROCESS, RECORD_BYTES, TA_BACKMERGE, TA_COMPLETE,
    TA_FRONTMERGE, TA_GETRQ, TA_INSERT, TA_ISSUE, TA_PLUG, TA_QUEUE, TA_SLEEPRQ, TA_SPLIT,
    TA_UNPLUG_IO, TA_UNPLUG_TIMER, TC_COMPLETE, TC_DISCARD, TC_FLUSH, TC_FS, TC_FUA, TC_ISSUE,
    TC_META, TC_QUEUE, TC_READ, TC_SHIFT, TC_SYNC, TC_WRITE,
};

/// Most records one device's trace holds (process notes included); later events are dropped.
pub const MAX_BLKTRACE_EVENTS: u64 = 4 << 20;
/// Most bytes one device's trace holds.
pub const MAX_BLKTRACE_BYTES: u64 = 256 << 20;
/// `TASK_COMM_LEN`: a process note's payload, the name NUL-padded (at most 15 bytes of it).
pub const COMM_BYTES: usize = 16;

/// What happened, as blktrace's actions name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// `Q`: a bio enters the block layer (after blk-throttle let it go).
    Queue,
    /// `X`: the piece at the event's range was split off; the rest starts at `next_sector`.
    Split { next_sector: u64 },
    /// `M`: merged at the back of a plugged or queued request.
    BackMerge,
    /// `F`: merged in front of one.
    FrontMerge,
    /// `G`: a request was allocated for it.
    GetRq,
    /// `S`: the submitter sleeps for a free request.
    SleepRq,
    /// `I`: the request went into the scheduler.
    Insert,
    /// `D`: the scheduler handed the request to the device.
    Issue,
    /// `C`: the device completed it.
    Complete,
    /// `P`: the submitter's plug list started (on kernels with queue plugging: the queue
    /// plugged).
    Plug,
    /// `U`: the submitter flushed its plug list of `depth` requests; on kernels with queue
    /// plugging, something ran the plugged queue with `depth` requests queued.
    Unplug { depth: u32 },
    /// `UT`: the unplug timer ran the plugged queue (kernels before 2.6.39).
    UnplugTimer { depth: u32 },
}

/// One block-layer event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockEvent {
    pub time_ns: Nanos,
    pub act: Act,
    pub op: Op,
    pub sync: bool,
    pub fua: bool,
    /// `REQ_META` (blkparse's `M`).
    pub meta: bool,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    pub pid: u32,
}

impl BlockEvent {
    /// An event about `rq`'s range on behalf of its owner.
    pub fn of(act: Act, rq: &Request, time_ns: Nanos) -> BlockEvent {
        BlockEvent {
            time_ns,
            act,
            op: rq.op,
            sync: rq.sync,
            fua: rq.fua,
            meta: rq.meta,
            offset_bytes: rq.offset_bytes,
            len_bytes: rq.len_bytes,
            pid: rq.owner.pid,
        }
    }

    /// The record's action word: the kernel's `BLK_TA_*` with the bio's categories.
    pub fn action(&self) -> u32 {
        let what = match self.act {
            Act::Queue => action(TA_QUEUE, TC_QUEUE),
            Act::Split { .. } => action(TA_SPLIT, 0),
            Act::BackMerge => action(TA_BACKMERGE, TC_QUEUE),
            Act::FrontMerge => action(TA_FRONTMERGE, TC_QUEUE),
            Act::GetRq => action(TA_GETRQ, TC_QUEUE),
            Act::SleepRq => action(TA_SLEEPRQ, TC_QUEUE),
            Act::Insert => action(TA_INSERT, TC_QUEUE | TC_FS),
            Act::Issue => action(TA_ISSUE, TC_ISSUE | TC_FS),
            Act::Complete => action(TA_COMPLETE, TC_COMPLETE | TC_FS),
            // The kernel traces these with op 0 (a read) and no data.
            Act::Plug => return action(TA_PLUG, TC_QUEUE | TC_READ),
            Act::Unplug { .. } => return action(TA_UNPLUG_IO, TC_QUEUE | TC_READ),
            Act::UnplugTimer { .. } => return action(TA_UNPLUG_TIMER, TC_QUEUE | TC_READ),
        };
        what | categories(self.op, self.sync, self.fua, self.meta) << TC_SHIFT
    }
}

/// The categories `__blk_add_trace` gives a bio or request: its direction (flushes and
/// discards are writes), `REQ_SYNC` (set on writes only; reads are sync without the flag),
/// `REQ_FUA`, `REQ_META`, and flush or discard.
fn categories(op: Op, sync: bool, fua: bool, meta: bool) -> u32 {
    let mut c = match op {
        Op::Read => TC_READ,
        Op::Write => TC_WRITE,
        Op::Flush => TC_WRITE | TC_FLUSH,
        Op::Discard => TC_WRITE | TC_DISCARD,
    };
    if sync && op != Op::Read {
        c |= TC_SYNC;
    }
    if fua {
        c |= TC_FUA;
    }
    if meta {
        c |= TC_META;
    }
    c
}

/// Command names by pid, for the process notes.
pub type ProcessNames = BTreeMap<u32, String>;

/// One device's finished trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlktraceFile {
    /// The records, as `blktrace` writes `DEV.blktrace.0`.
    pub bytes: Vec<u8>,
    /// Records written (process notes included).
    pub records: u64,
    /// Records left out past [`MAX_BLKTRACE_EVENTS`] or [`MAX_BLKTRACE_BYTES`].
    pub dropped: u64,
}

/// The event sink of one device's block layer: encodes each event as a blktrace record.
#[derive(Clone, Debug)]
pub struct Recorder {
    device: u32,
    names: Arc<ProcessNames>,
    /// Pids whose process note has been written.
    announced: BTreeSet<u32>,
    last_pid: Option<u32>,
    sequence: u32,
    out: BlktraceFile,
    max_records: u64,
    max_bytes: u64,
}

impl Recorder {
    /// A recorder for device `major:minor`, naming processes from `names`.
    pub fn new(major: u32, minor: u32, names: Arc<ProcessNames>) -> Recorder {
        Recorder::with_limits(major, minor, names, MAX_BLKTRACE_EVENTS, MAX_BLKTRACE_BYTES)
    }

    /// The same with other bounds (for tests of the overflow).
    pub fn with_limits(
        major: u32,
        minor: u32,
        names: Arc<ProcessNames>,
        max_records: u64,
        max_bytes: u64,
    ) -> Recorder {
        Recorder {
            device: fmt::dev_t(major, minor),
            names,
            announced: BTreeSet::new(),
            last_pid: None,
            sequence: 0,
            out: BlktraceFile::default(),
            max_records,
            max_bytes,
        }
    }

    /// Records one event (and its process's note the first time the pid shows up).
    pub fn record(&mut self, e: &BlockEvent) {
        if self.last_pid != Some(e.pid) {
            self.last_pid = Some(e.pid);
            if self.announced.insert(e.pid) {
                self.note_process(e.pid, e.time_ns);
            }
        }
        let (sector, bytes) = match e.act {
            Act::Plug | Act::Unplug { .. } | Act::UnplugTimer { .. } => (0, 0),
            _ => (e.offset_bytes / SECTOR_BYTES, e.len_bytes.min(u64::from(u32::MAX)) as u32),
        };
        let pdu = match e.act {
            Act::Split { next_sector } => Some(next_sector.to_be_bytes()),
            Act::Unplug { depth } | Act::UnplugTimer { depth } => {
                Some(u64::from(depth).to_be_bytes())
            }
            _ => None,
        };
        let pdu: &[u8] = match &pdu {
            Some(p) => p,
            None => &[],
        };
        if !self.fits(pdu.len()) {
            return;
        }
        self.sequence = self.sequence.wrapping_add(1);
        let t = Trace {
            sequence: self.sequence,
            time_ns: e.time_ns,
            sector,
            bytes,
            action: e.action(),
            pid: e.pid,
            device: self.device,
            cpu: 0,
            error: 0,
        };
        t.write(pdu, &mut self.out.bytes);
        self.out.records += 1;
    }

    /// `trace_note_tsk`: the pid's command name, NUL-padded to `TASK_COMM_LEN`. A pid without
    /// a name gets no note (blkparse then shows it as a number only).
    fn note_process(&mut self, pid: u32, time_ns: Nanos) {
        let Some(name) = self.names.get(&pid) else { return };
        let mut comm = [0u8; COMM_BYTES];
        let mut n = name.len().min(COMM_BYTES - 1);
        while !name.is_char_boundary(n) {
            n -= 1;
        }
        comm[..n].copy_from_slice(&name.as_bytes()[..n]);
        if !self.fits(COMM_BYTES) {
            return;
        }
        let t =
            Trace { time_ns, action: BLK_TN_PROCESS, pid, device: self.device, ..Trace::default() };
        t.write(&comm, &mut self.out.bytes);
        self.out.records += 1;
    }

    /// True if one more record with `pdu_len` bytes of payload is within bounds; counts it
    /// as dropped otherwise.
    fn fits(&mut self, pdu_len: usize) -> bool {
        let bytes = (self.out.bytes.len() + RECORD_BYTES + pdu_len) as u64;
        if self.out.records >= self.max_records || bytes > self.max_bytes {
            self.out.dropped += 1;
            return false;
        }
        true
    }

    /// The trace so far.
    pub fn finish(self) -> BlktraceFile {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::{Owner, RequestId};
    use elevator_fio::blktrace::{records, TC_NOTIFY};

    fn rq(op: Op, offset_bytes: u64, len_bytes: u64, sync: bool, pid: u32) -> Request {
        Request::new(RequestId(0), op, offset_bytes, len_bytes, sync, Owner::process(pid), 0)
            .expect("an aligned test request")
    }

    fn names() -> Arc<ProcessNames> {
        Arc::new(ProcessNames::from([
            (1000, "reader".to_string()),
            (1001, "a-very-long-job-name".to_string()),
        ]))
    }

    /// A queue event's record, byte for byte (preceded by its process's note).
    #[test]
    fn a_queue_event_is_one_record_after_a_process_note() {
        let mut r = Recorder::new(8, 16, names());
        let read = rq(Op::Read, 2048 * 512, 4096, true, 1000);
        r.record(&BlockEvent::of(Act::Queue, &read, 1_500_000_123));
        let f = r.finish();
        assert_eq!((f.records, f.dropped), (2, 0));
        let note = &f.bytes[..RECORD_BYTES + COMM_BYTES];
        #[rustfmt::skip]
        let want_note: Vec<u8> = [
            &[0x07, 0x74, 0x61, 0x65][..],                         // magic | version
            &[0, 0, 0, 0],                                         // no sequence
            &1_500_000_123u64.to_le_bytes(),                       // time
            &[0; 8], &[0; 4],                                      // sector, bytes
            &[0x00, 0x00, 0x00, 0x04],                             // BLK_TN_PROCESS
            &1000u32.to_le_bytes(),                                // pid
            &[0x10, 0x00, 0x80, 0x00],                             // 8,16
            &[0; 4], &[0; 2],                                      // cpu, error
            &[16, 0],                                              // pdu_len
            b"reader\0\0\0\0\0\0\0\0\0\0",
        ]
        .concat();
        assert_eq!(note, &want_note[..]);
        #[rustfmt::skip]
        let want_q: Vec<u8> = [
            &[0x07, 0x74, 0x61, 0x65][..],
            &1u32.to_le_bytes(),                                   // first sequence number
            &1_500_000_123u64.to_le_bytes(),
            &2048u64.to_le_bytes(),                                // sector
            &4096u32.to_le_bytes(),                                // bytes
            &[0x01, 0x00, 0x11, 0x00],                             // Q | (queue|read) << 16
            &1000u32.to_le_bytes(),
            &[0x10, 0x00, 0x80, 0x00],
            &[0; 4], &[0; 2], &[0; 2],
        ]
        .concat();
        assert_eq!(&f.bytes[RECORD_BYTES + COMM_BYTES..], &want_q[..]);
    }

    /// Every kind of event through the reader of `elevator_fio::blktrace`: the fields come
    /// back, and its replay parser sees the queue events as the bios they were.
    #[test]
    fn events_round_trip_through_the_reader() {
        let mut r = Recorder::new(8, 0, names());
        let w = rq(Op::Write, 1 << 20, 1 << 20, true, 1001);
        let piece = rq(Op::Write, 1 << 20, 512 << 10, true, 1001);
        let read = rq(Op::Read, 8192, 4096, true, 1000);
        let events = [
            (Act::Queue, w, 10),
            (Act::Split { next_sector: 3072 }, piece, 10),
            (Act::Plug, piece, 10),
            (Act::Queue, read, 20),
            (Act::BackMerge, read, 20),
            (Act::Unplug { depth: 2 }, piece, 30),
            (Act::GetRq, piece, 30),
            (Act::Insert, piece, 30),
            (Act::Issue, piece, 40),
            (Act::Complete, piece, 50),
        ];
        for (act, rq, t) in events {
            r.record(&BlockEvent::of(act, &rq, t));
        }
        let f = r.finish();
        let recs = records(&f.bytes, "sda.blktrace.0").unwrap();
        assert_eq!(recs.len(), events.len() + 2, "two process notes");
        let notes: Vec<(u32, &[u8])> = recs
            .iter()
            .filter(|(t, _)| t.action >> TC_SHIFT & TC_NOTIFY != 0)
            .map(|(t, pdu)| (t.pid, *pdu))
            .collect();
        // comm is at most 15 bytes and a NUL.
        assert_eq!(
            notes,
            vec![(1001, &b"a-very-long-job\0"[..]), (1000, &b"reader\0\0\0\0\0\0\0\0\0\0"[..])]
        );
        // (sequence, action, sector, bytes, pid, time, payload)
        type Fields = (u32, u32, u64, u32, u32, u64, Vec<u8>);
        let got: Vec<Fields> = recs
            .iter()
            .filter(|(t, _)| t.action >> TC_SHIFT & TC_NOTIFY == 0)
            .map(|(t, pdu)| {
                assert_eq!((t.device, t.cpu, t.error), (8 << 20, 0, 0));
                (t.sequence, t.action, t.sector, t.bytes, t.pid, t.time_ns, pdu.to_vec())
            })
            .collect();
        let ws = (TC_WRITE | TC_SYNC) << TC_SHIFT;
        let r_ = TC_READ << TC_SHIFT;
        let fs = TC_FS << TC_SHIFT;
        let be = |n: u64| n.to_be_bytes().to_vec();
        assert_eq!(
            got,
            vec![
                (1, 0x0010_0001 | ws, 2048, 1 << 20, 1001, 10, vec![]),
                (2, 13 | ws, 2048, 512 << 10, 1001, 10, be(3072)),
                (3, 0x0010_0009 | r_, 0, 0, 1001, 10, vec![]),
                (4, 0x0010_0001 | r_, 16, 4096, 1000, 20, vec![]),
                (5, 0x0010_0002 | r_, 16, 4096, 1000, 20, vec![]),
                (6, 0x0010_000a | r_, 0, 0, 1001, 30, be(2)),
                (7, 0x0010_0004 | ws, 2048, 512 << 10, 1001, 30, vec![]),
                (8, 0x0010_000c | ws | fs, 2048, 512 << 10, 1001, 30, vec![]),
                (9, 0x0040_0007 | ws | fs, 2048, 512 << 10, 1001, 40, vec![]),
                (10, 0x0080_0008 | ws | fs, 2048, 512 << 10, 1001, 50, vec![]),
            ]
        );
        // fio's replay reader takes the queue events: the 1 MiB write, then the read.
        let log = elevator_fio::blktrace::parse(&f.bytes, "sda.blktrace.0").unwrap();
        assert_eq!(log.file, "8,0");
        let replay: Vec<(Op, u64, u64, u64)> =
            log.entries.iter().map(|e| (e.op, e.offset_bytes, e.len_bytes, e.delay_ns)).collect();
        assert_eq!(replay, vec![(Op::Write, 1 << 20, 1 << 20, 0), (Op::Read, 8192, 4096, 10)]);
    }

    #[test]
    fn flushes_discards_fua_and_meta_carry_their_categories() {
        let cm = |op, sync, fua, meta| {
            BlockEvent {
                time_ns: 0,
                act: Act::Issue,
                op,
                sync,
                fua,
                meta,
                offset_bytes: 0,
                len_bytes: 0,
                pid: 1,
            }
            .action()
        };
        let c = |op, sync, fua| cm(op, sync, fua, false);
        assert_eq!(c(Op::Read, true, false) >> TC_SHIFT, TC_READ | TC_ISSUE | TC_FS);
        assert_eq!(
            cm(Op::Read, true, false, true) >> TC_SHIFT,
            TC_READ | TC_META | TC_ISSUE | TC_FS
        );
        assert_eq!(c(Op::Write, false, false) >> TC_SHIFT, TC_WRITE | TC_ISSUE | TC_FS);
        assert_eq!(
            c(Op::Flush, true, false) >> TC_SHIFT,
            TC_WRITE | TC_FLUSH | TC_SYNC | TC_ISSUE | TC_FS
        );
        assert_eq!(
            c(Op::Discard, false, false) >> TC_SHIFT,
            TC_WRITE | TC_DISCARD | TC_ISSUE | TC_FS
        );
        assert_eq!(
            c(Op::Write, true, true) >> TC_SHIFT,
            TC_WRITE | TC_SYNC | TC_FUA | TC_ISSUE | TC_FS
        );
    }

    /// Past its bounds the recorder writes nothing more and counts what it left out.
    #[test]
    fn overflow_stops_and_counts() {
        let read = rq(Op::Read, 0, 4096, true, 1000);
        let mut r = Recorder::with_limits(8, 0, names(), 3, u64::MAX);
        for t in 0..10 {
            r.record(&BlockEvent::of(Act::Queue, &read, t));
        }
        let f = r.finish();
        assert_eq!((f.records, f.dropped), (3, 8));
        assert_eq!(records(&f.bytes, "t").unwrap().len(), 3);
        let mut r = Recorder::with_limits(8, 0, names(), u64::MAX, 200);
        for t in 0..10 {
            r.record(&BlockEvent::of(Act::Queue, &read, t));
        }
        let f = r.finish();
        // A note of 64 bytes and two records of 48: 160 ≤ 200 < 208.
        assert_eq!((f.records, f.dropped, f.bytes.len()), (3, 8, 160));
    }

    /// A pid nobody named gets no note; its events are still recorded.
    #[test]
    fn unnamed_pids_get_no_note() {
        let mut r = Recorder::new(8, 0, names());
        r.record(&BlockEvent::of(Act::Queue, &rq(Op::Read, 0, 512, true, 77), 5));
        let f = r.finish();
        assert_eq!(f.records, 1);
        assert_eq!(records(&f.bytes, "t").unwrap()[0].0.pid, 77);
    }
}
