//! A RAM disk with a fixed latency per command plus a transfer time: the device for measuring
//! schedulers and the simulator itself without mechanical effects.

use std::collections::VecDeque;

use elevator_core::{Nanos, NS_PER_SEC};
use serde::{Deserialize, Serialize};

use crate::{Command, Completion, Device};

/// Parameters of a [`RamDevice`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RamParams {
    #[serde(default = "RamParams::default_capacity")]
    pub capacity_bytes: u64,
    /// Fixed cost of every command.
    #[serde(default = "RamParams::default_latency")]
    pub latency_ns: Nanos,
    /// Transfer rate; 0 means transfers are free.
    #[serde(default = "RamParams::default_bandwidth")]
    pub bandwidth_bytes_per_sec: u64,
    #[serde(default = "RamParams::default_queue_depth")]
    pub queue_depth: u32,
}

impl RamParams {
    fn default_capacity() -> u64 {
        64 << 30
    }
    fn default_latency() -> Nanos {
        10_000
    }
    fn default_bandwidth() -> u64 {
        4_000_000_000
    }
    fn default_queue_depth() -> u32 {
        256
    }
}

impl Default for RamParams {
    fn default() -> Self {
        RamParams {
            capacity_bytes: Self::default_capacity(),
            latency_ns: Self::default_latency(),
            bandwidth_bytes_per_sec: Self::default_bandwidth(),
            queue_depth: Self::default_queue_depth(),
        }
    }
}

/// Every command takes `latency_ns + len / bandwidth`, all in parallel (no internal queueing):
/// completions therefore come in order of their finish times, which for equal lengths is
/// submission order.
#[derive(Debug)]
pub struct RamDevice {
    params: RamParams,
    /// Outstanding commands by finish time; kept sorted (insertion is near the back).
    in_flight: VecDeque<Completion>,
}

impl RamDevice {
    pub fn new(params: RamParams) -> RamDevice {
        RamDevice { params, in_flight: VecDeque::new() }
    }

    fn service_ns(&self, len_bytes: u64) -> Nanos {
        let transfer_ns = if self.params.bandwidth_bytes_per_sec == 0 {
            0
        } else {
            (len_bytes as u128 * NS_PER_SEC as u128 / self.params.bandwidth_bytes_per_sec as u128)
                as Nanos
        };
        self.params.latency_ns + transfer_ns
    }
}

impl Device for RamDevice {
    fn describe(&self) -> String {
        format!(
            "RAM device, {} MiB, {} µs per command, queue depth {}",
            self.params.capacity_bytes >> 20,
            self.params.latency_ns as f64 / 1000.0,
            self.params.queue_depth
        )
    }

    fn capacity_bytes(&self) -> u64 {
        self.params.capacity_bytes
    }

    fn queue_depth(&self) -> u32 {
        self.params.queue_depth
    }

    fn rotational(&self) -> bool {
        false
    }

    fn submit(&mut self, cmd: Command, now_ns: Nanos) {
        debug_assert!((self.in_flight.len() as u32) < self.params.queue_depth);
        let done = Completion { id: cmd.id, done_ns: now_ns + self.service_ns(cmd.len_bytes) };
        let pos =
            self.in_flight.iter().rposition(|c| c.done_ns <= done.done_ns).map_or(0, |p| p + 1);
        self.in_flight.insert(pos, done);
    }

    fn next_event_ns(&self) -> Option<Nanos> {
        self.in_flight.front().map(|c| c.done_ns)
    }

    fn advance(&mut self, now_ns: Nanos, completed: &mut Vec<Completion>) {
        while let Some(front) = self.in_flight.front() {
            if front.done_ns > now_ns {
                break;
            }
            completed.push(self.in_flight.pop_front().expect("front exists"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::{Op, RequestId};

    #[test]
    fn fixed_latency_plus_transfer_in_finish_order() {
        let mut d = RamDevice::new(RamParams {
            bandwidth_bytes_per_sec: 1_000_000_000,
            ..RamParams::default()
        });
        d.submit(
            Command {
                id: RequestId(1),
                op: Op::Read,
                offset_bytes: 0,
                len_bytes: 1_000_000,
                fua: false,
            },
            0,
        );
        d.submit(
            Command {
                id: RequestId(2),
                op: Op::Read,
                offset_bytes: 0,
                len_bytes: 4096,
                fua: false,
            },
            0,
        );
        assert_eq!(d.next_event_ns(), Some(10_000 + 4_096));
        let mut done = Vec::new();
        d.advance(2_000_000, &mut done);
        assert_eq!(done.iter().map(|c| c.id.0).collect::<Vec<_>>(), vec![2, 1]);
        assert_eq!(done[1].done_ns, 10_000 + 1_000_000);
        assert_eq!(d.next_event_ns(), None);
    }
}
