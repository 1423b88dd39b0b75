//! Closed-loop replay of a validation trace, as DiskSim's validation runs it: request k+1
//! is issued one think time after request k completes, so nothing ever queues; the
//! simulated access time is completion − issue.

use std::path::Path;
use std::sync::mpsc;

use crate::error::DiskSimError;
use crate::trace::{parse_trace_file, TraceRecord};
use elevator_core::{Op, RandomStream, RequestId, SECTOR_BYTES};
use elevator_device::hdd::{Hdd, HddParams};
use elevator_device::{Command, Completion, Device};

/// Why a replay could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// The parameters do not make a drive.
    #[error("bad drive parameters: {0}")]
    Params(String),
    /// A request reaches past the drive's last block.
    #[error("line {line}: blocks {start}..{end} lie beyond the drive's {capacity} blocks")]
    OutOfRange { line: usize, start: u64, end: u64, capacity: u64 },
}

/// A replay in progress: the drive, and when the next request is issued.
pub struct Replay {
    disk: Hdd,
    capacity_blocks: u64,
    done: Vec<Completion>,
    now_ns: u64,
    /// Requests replayed so far (the next one's id).
    issued: u64,
}

impl Replay {
    /// A fresh drive with `params`, its first request issued at time 0.
    pub fn new(params: &HddParams) -> Result<Replay, ReplayError> {
        let disk =
            Hdd::new(params.clone(), &mut RandomStream::new(0, 0)).map_err(ReplayError::Params)?;
        let capacity_blocks = disk.capacity_bytes() / SECTOR_BYTES;
        Ok(Replay { disk, capacity_blocks, done: Vec::with_capacity(4), now_ns: 0, issued: 0 })
    }

    /// Replays the next requests of the trace, `trace` in order; appends each one's simulated
    /// access time in ms to `out`.
    pub fn run(&mut self, trace: &[TraceRecord], out: &mut Vec<f64>) -> Result<(), ReplayError> {
        for r in trace {
            // Checked: a start block near 2^64 must not wrap around to a small end.
            let end = r.start_block.saturating_add(u64::from(r.size_sectors));
            if end > self.capacity_blocks || r.size_sectors == 0 {
                return Err(ReplayError::OutOfRange {
                    line: r.line,
                    start: r.start_block,
                    end,
                    capacity: self.capacity_blocks,
                });
            }
            let id = RequestId(self.issued);
            self.issued += 1;
            let now = self.now_ns;
            self.disk.submit(
                Command {
                    id,
                    op: if r.is_write { Op::Write } else { Op::Read },
                    offset_bytes: r.start_block * SECTOR_BYTES,
                    len_bytes: u64::from(r.size_sectors) * SECTOR_BYTES,
                    fua: false,
                },
                now,
            );
            let finished = loop {
                let t = self.disk.next_event_ns().expect("a submitted command completes");
                self.done.clear();
                self.disk.advance(t, &mut self.done);
                if let Some(c) = self.done.iter().find(|c| c.id == id) {
                    break c.done_ns;
                }
            };
            out.push((finished - now) as f64 / 1e6);
            self.now_ns = finished + (r.think_time_us * 1e3).round() as u64;
        }
        Ok(())
    }
}

/// Replays `trace` on a drive with `params`; returns each request's simulated access time
/// in ms, in trace order.
pub fn replay(params: &HddParams, trace: &[TraceRecord]) -> Result<Vec<f64>, ReplayError> {
    let mut r = Replay::new(params)?;
    let mut out = Vec::with_capacity(trace.len());
    r.run(trace, &mut out)?;
    Ok(out)
}

/// Records in each chunk the reading thread of [`replay_trace_file`] hands over.
const CHUNK_RECORDS: usize = 256;
/// ... and each later chunk twice the one before, up to this many: a hand-over wakes the
/// other thread, tens of microseconds on a virtual machine, so a 10,000-request trace goes
/// over in 6 chunks instead of 40, while the replay still starts after the first 256.
const MAX_CHUNK_RECORDS: usize = 4096;
/// Chunks read but not yet replayed, at most. Parsing is several times faster than the
/// replay, so the reader is always ahead: two chunks keep it so, and chunks coming back
/// empty are filled again, so that a run touches a few chunks' worth of memory, not the
/// trace's (fresh pages fault, and the faults cost more than the parse).
const CHUNKS_IN_FLIGHT: usize = 2;
/// The shortest line of a typical trace (`R Hit 4 8 1.0 1.0` and a newline is 18 bytes;
/// DiskSim's validation traces run 40–50): the outputs are sized for the file's bytes over
/// this, so that they are not copied as they grow (a guess too small only costs that).
const TYPICAL_MIN_LINE_BYTES: u64 = 16;
/// The most requests the outputs are sized for before the replay (2 × 64 MiB); past it they
/// grow as they fill.
const MAX_PRESIZED_REQUESTS: u64 = 1 << 23;

/// A trace file replayed: each request's measured and simulated access time (ms), in trace
/// order.
#[derive(Debug, Clone, Default)]
pub struct TraceReplay {
    pub measured_ms: Vec<f64>,
    pub simulated_ms: Vec<f64>,
}

/// Why [`replay_trace_file`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayFileError {
    /// The trace could not be read or parsed.
    #[error(transparent)]
    Trace(#[from] DiskSimError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
}

/// [`load_trace`](crate::load_trace) then [`replay`], with the reading and parsing on a
/// second thread, chunk by chunk ahead of the replay, which goes on here as chunks arrive:
/// a validation run then takes about as long as its replay. The result is the same, errors
/// included: a trace error anywhere in the file wins over a replay error (the reader goes on
/// to the file's end), and the drive is built with the first request, so an empty trace
/// replays (to nothing) whatever the parameters.
pub fn replay_trace_file(params: &HddParams, path: &Path) -> Result<TraceReplay, ReplayFileError> {
    let (tx, rx) = mpsc::sync_channel::<Vec<TraceRecord>>(CHUNKS_IN_FLIGHT);
    // Replayed chunks go back to the reader, empty, to be filled again.
    let (back_tx, back_rx) = mpsc::channel::<Vec<TraceRecord>>();
    std::thread::scope(|scope| {
        let reader = scope.spawn(move || -> Result<(), DiskSimError> {
            let fresh = || back_rx.try_recv().unwrap_or_else(|_| Vec::with_capacity(CHUNK_RECORDS));
            let mut chunk = fresh();
            // Each chunk twice the last, up to MAX_CHUNK_RECORDS.
            let mut chunk_records = CHUNK_RECORDS;
            // Once the replay has stopped, the rest is still parsed, for its errors.
            let mut replaying = true;
            parse_trace_file(path, |r| {
                if replaying {
                    chunk.push(r);
                    if chunk.len() == chunk_records {
                        let full = std::mem::replace(&mut chunk, fresh());
                        replaying = tx.send(full).is_ok();
                        chunk_records = (chunk_records * 2).min(MAX_CHUNK_RECORDS);
                    }
                }
            })?;
            if replaying && !chunk.is_empty() {
                let _ = tx.send(chunk);
            }
            Ok(())
        });
        let expected = std::fs::metadata(path).map_or(0, |m| m.len() / TYPICAL_MIN_LINE_BYTES);
        let expected = expected.min(MAX_PRESIZED_REQUESTS) as usize;
        let mut out = TraceReplay {
            measured_ms: Vec::with_capacity(expected),
            simulated_ms: Vec::with_capacity(expected),
        };
        let mut replayed = Ok(());
        let mut drive: Option<Replay> = None;
        for mut chunk in rx.iter() {
            let r = match drive.as_mut() {
                Some(r) => r,
                None => match Replay::new(params) {
                    Ok(r) => drive.insert(r),
                    Err(e) => {
                        replayed = Err(e);
                        break;
                    }
                },
            };
            out.measured_ms.extend(chunk.iter().map(TraceRecord::access_time_ms));
            if let Err(e) = r.run(&chunk, &mut out.simulated_ms) {
                replayed = Err(e);
                break;
            }
            chunk.clear();
            // The reader may be done and gone; the chunk is then dropped here.
            let _ = back_tx.send(chunk);
        }
        // The reader's sends fail from here on, if it is not done.
        drop(rx);
        reader.join().expect("the trace reader does not panic")?;
        replayed?;
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace file of `lines` in a fresh scratch directory.
    fn trace_file(name: &str, lines: &[String]) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("elevator-replay-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.trace");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    }

    /// `n` small reads, one every 4 KiB, as a DiskSim validation trace has them.
    fn reads(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("R Miss {} 8 5000.0 100.0", i * 8)).collect()
    }

    #[test]
    fn a_trace_error_past_the_first_chunks_wins_over_an_earlier_replay_error() {
        let params = HddParams::default();
        let blocks = Replay::new(&params).unwrap().capacity_blocks;
        let mut lines = reads(3 * CHUNK_RECORDS);
        lines[10] = format!("R Miss {blocks} 8 5000.0 100.0");
        let replay_only = trace_file("replay", &lines);
        match replay_trace_file(&params, &replay_only) {
            Err(ReplayFileError::Replay(ReplayError::OutOfRange { line: 11, .. })) => {}
            other => panic!("{other:?}"),
        }
        // The reader goes on past the chunks the replay never took, for their errors.
        let last = lines.len() - 1;
        lines[last] = "R Miss 8 eight 5000.0 100.0".into();
        let both = trace_file("both", &lines);
        match replay_trace_file(&params, &both) {
            Err(ReplayFileError::Trace(DiskSimError::Syntax { line, .. })) => {
                assert_eq!(line, lines.len())
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn chunks_replay_as_one_trace_does() {
        let params = HddParams::default();
        // Not a whole number of chunks: the last one is short.
        let lines = reads(2 * CHUNK_RECORDS + 17);
        let path = trace_file("chunks", &lines);
        let trace = crate::load_trace(&path).unwrap();
        let got = replay_trace_file(&params, &path).unwrap();
        assert_eq!(got.simulated_ms, replay(&params, &trace).unwrap());
        assert_eq!(got.measured_ms.len(), lines.len());
        let empty = trace_file("empty", &[]);
        let none = replay_trace_file(&params, &empty).unwrap();
        assert!(none.measured_ms.is_empty() && none.simulated_ms.is_empty());
    }
}
