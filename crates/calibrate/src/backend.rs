//! What runs a [`Phase`]: the real device ([`crate::uring::UringBackend`]) or a device model
//! ([`SimBackend`]). Both offer the same call, so the prober, the fit and the held-out replay
//! never know which one they drive (TigerBeetle's storage seam), and the whole of calibrate
//! can be tested against simulated drives whose parameters are known.

use std::collections::VecDeque;

use elevator_core::{Nanos, Op, RequestId, NS_PER_MS};
use elevator_device::{Command, Completion, Device};
use serde::{Deserialize, Serialize};

use crate::workload::{Dir, Phase};

/// What a phase measured: each issued I/O's latency (submission to completion, in issue
/// order; I/Os past the time limit are not issued) and the time from the first submission
/// to the last completion.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub lat_ns: Vec<Nanos>,
    pub elapsed_ns: Nanos,
    pub bytes: u64,
}

impl Outcome {
    pub fn issued(&self) -> usize {
        self.lat_ns.len()
    }

    pub fn iops(&self) -> f64 {
        if self.elapsed_ns == 0 {
            return 0.0;
        }
        self.lat_ns.len() as f64 * 1e9 / self.elapsed_ns as f64
    }

    pub fn bytes_per_sec(&self) -> f64 {
        if self.elapsed_ns == 0 {
            return 0.0;
        }
        self.bytes as f64 * 1e9 / self.elapsed_ns as f64
    }

    /// Latencies in µs, sorted.
    pub fn sorted_us(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.lat_ns.iter().map(|&n| n as f64 / 1e3).collect();
        v.sort_by(f64::total_cmp);
        v
    }

    pub fn mean_us(&self) -> f64 {
        if self.lat_ns.is_empty() {
            return f64::NAN;
        }
        self.lat_ns.iter().map(|&n| n as f64).sum::<f64>() / self.lat_ns.len() as f64 / 1e3
    }
}

/// The `q` quantile (0..=1) of sorted values, by nearest rank; NaN when empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
    sorted[i]
}

/// What the block layer above the device says about it (sysfs), where known.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Hints {
    /// Kernel name of the whole device (`vda`, `sda`, `nvme0n1`).
    pub device: Option<String>,
    /// `MAJ:MIN` of the whole device, for the `io.cost.model` line.
    pub devno: Option<String>,
    /// `queue/rotational`.
    pub rotational: Option<bool>,
    /// Hardware queues (`mq/*`) and tags per queue (`mq/0/nr_tags`).
    pub hw_queues: Option<u32>,
    pub hw_queue_depth: Option<u32>,
    pub max_sectors_kb: Option<u32>,
    pub nr_requests: Option<u32>,
    /// The active scheduler (`queue/scheduler`, the bracketed one).
    pub scheduler: Option<String>,
}

/// Runs phases closed-loop on something that stores data.
pub trait Backend {
    /// Bytes addressable from offset 0.
    fn capacity_bytes(&self) -> u64;
    fn hints(&self) -> Hints;
    /// Runs `phase`: keeps `depth` I/Os in flight, issues in order, stops issuing once
    /// `max_ns` have passed since the first submission.
    fn run(&mut self, phase: &Phase) -> Result<Outcome, String>;
}

/// Pieces one I/O may be split into ([`crate::workload::MAX_IO_BYTES`] in 4 KiB pieces).
const PIECES: u64 = crate::workload::MAX_IO_BYTES / 4096;

/// A device model driven closed-loop in virtual time, as the real device is in real time.
/// Requests longer than `max_sectors_kb` go to the device in pieces, as the kernel splits
/// them; one completes when its last piece does. Requests beyond the device's queue depth
/// wait in a FIFO, as in the block layer. Between phases the device idles 1 ms.
pub struct SimBackend {
    dev: Box<dyn Device>,
    now: Nanos,
    max_piece_bytes: u64,
    hints: Hints,
}

impl SimBackend {
    pub fn new(dev: Box<dyn Device>, max_sectors_kb: u32) -> SimBackend {
        let hints = Hints {
            rotational: Some(dev.rotational()),
            hw_queues: Some(1),
            hw_queue_depth: Some(dev.queue_depth()),
            max_sectors_kb: Some(max_sectors_kb),
            ..Hints::default()
        };
        SimBackend { dev, now: 0, max_piece_bytes: u64::from(max_sectors_kb.max(4)) << 10, hints }
    }

    pub fn with_hints(mut self, hints: Hints) -> SimBackend {
        self.hints = hints;
        self
    }

    pub fn device(&self) -> &dyn Device {
        self.dev.as_ref()
    }
}

impl Backend for SimBackend {
    fn capacity_bytes(&self) -> u64 {
        self.dev.capacity_bytes()
    }

    fn hints(&self) -> Hints {
        self.hints.clone()
    }

    fn run(&mut self, phase: &Phase) -> Result<Outcome, String> {
        let cap = self.dev.capacity_bytes();
        if let Some(io) = phase.ios.iter().find(|io| io.offset_bytes + io.len_bytes > cap) {
            return Err(format!(
                "{}: I/O at {}+{} beyond the model's {cap} bytes",
                phase.name, io.offset_bytes, io.len_bytes
            ));
        }
        let start = self.now;
        let qd = self.dev.queue_depth().max(1) as usize;
        let n = phase.ios.len();
        let mut lat = vec![0; n];
        let mut submitted_at = vec![0; n];
        let mut pieces_left = vec![0u32; n];
        // Pieces waiting for a device slot: (io index, piece number, offset, len). A piece's
        // command id is `index · PIECES + piece`.
        let mut waiting: VecDeque<(usize, u64, u64, u64)> = VecDeque::new();
        let mut on_device = 0usize;
        let mut next = 0usize;
        let mut in_flight = 0usize;
        let mut done_count = 0usize;
        let mut bytes = 0u64;
        let mut completions: Vec<Completion> = Vec::with_capacity(64);
        let mut last_done = start;
        loop {
            // Issue while the queue has room and time remains.
            while in_flight < phase.depth as usize
                && next < n
                && self.now.saturating_sub(start) < phase.max_ns
            {
                let io = phase.ios[next];
                submitted_at[next] = self.now;
                let mut off = io.offset_bytes;
                let end = io.offset_bytes + io.len_bytes;
                while off < end {
                    let len = (end - off).min(self.max_piece_bytes);
                    waiting.push_back((next, u64::from(pieces_left[next]), off, len));
                    pieces_left[next] += 1;
                    off += len;
                }
                debug_assert!(u64::from(pieces_left[next]) <= PIECES);
                bytes += io.len_bytes;
                next += 1;
                in_flight += 1;
            }
            while on_device < qd {
                let Some((i, piece, off, len)) = waiting.pop_front() else { break };
                let io = phase.ios[i];
                self.dev.submit(
                    Command {
                        id: RequestId(i as u64 * PIECES + piece),
                        op: if io.dir == Dir::Read { Op::Read } else { Op::Write },
                        offset_bytes: off,
                        len_bytes: len,
                        fua: io.dir == Dir::WriteSync,
                    },
                    self.now,
                );
                on_device += 1;
            }
            if in_flight == 0 {
                break;
            }
            let Some(t) = self.dev.next_event_ns() else {
                return Err(format!("{}: the model stalled with I/O outstanding", phase.name));
            };
            self.now = self.now.max(t);
            completions.clear();
            self.dev.advance(self.now, &mut completions);
            for c in &completions {
                let i = (c.id.0 / PIECES) as usize;
                if i >= next || pieces_left[i] == 0 {
                    return Err(format!("{}: unknown completion {}", phase.name, c.id.0));
                }
                on_device -= 1;
                pieces_left[i] -= 1;
                if pieces_left[i] == 0 {
                    lat[i] = c.done_ns - submitted_at[i];
                    in_flight -= 1;
                    done_count += 1;
                    last_done = last_done.max(c.done_ns);
                }
            }
        }
        debug_assert_eq!(done_count, next);
        lat.truncate(next);
        let elapsed = last_done - start;
        self.now = last_done + NS_PER_MS;
        Ok(Outcome { lat_ns: lat, elapsed_ns: elapsed, bytes })
    }
}
