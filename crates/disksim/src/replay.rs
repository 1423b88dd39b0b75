//! Closed-loop replay of a validation trace, as DiskSim's validation runs it: request k+1
//! is issued one think time after request k completes, so nothing ever queues; the
//! simulated access time is completion − issue.

use crate::trace::TraceRecord;
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

/// Replays `trace` on a drive with `params`; returns each request's simulated access time
/// in ms, in trace order.
pub fn replay(params: &HddParams, trace: &[TraceRecord]) -> Result<Vec<f64>, ReplayError> {
    let mut disk =
        Hdd::new(params.clone(), &mut RandomStream::new(0, 0)).map_err(ReplayError::Params)?;
    let capacity = disk.capacity_bytes() / SECTOR_BYTES;
    let mut out = Vec::with_capacity(trace.len());
    let mut done: Vec<Completion> = Vec::with_capacity(4);
    let mut now: u64 = 0;
    for (i, r) in trace.iter().enumerate() {
        // Checked: a start block near 2^64 must not wrap around to a small end.
        let end = r.start_block.saturating_add(u64::from(r.size_sectors));
        if end > capacity || r.size_sectors == 0 {
            return Err(ReplayError::OutOfRange {
                line: r.line,
                start: r.start_block,
                end,
                capacity,
            });
        }
        let id = RequestId(i as u64);
        disk.submit(
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
            let t = disk.next_event_ns().expect("a submitted command completes");
            done.clear();
            disk.advance(t, &mut done);
            if let Some(c) = done.iter().find(|c| c.id == id) {
                break c.done_ns;
            }
        };
        out.push((finished - now) as f64 / 1e6);
        now = finished + (r.think_time_us * 1e3).round() as u64;
    }
    Ok(out)
}
