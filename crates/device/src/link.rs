//! A network link between an initiator and a remote target (iSCSI, NBD, AoE): what turns a
//! local disk into a remote one.
//!
//! Each direction is a full-duplex pipe that carries one message at a time at `bandwidth`:
//! a message waits until the direction is free, occupies it for `bytes / bandwidth`, and
//! arrives half a round trip after its last byte left. A command also costs the target its
//! per-request processing (`overhead`), paid on arrival. This is the pipeline of seed 002:
//! with one request at a time a read costs the disk's time *plus* the link's time
//! (`1/T = 1/T_local + 1/T_remote`), and only requests that overlap keep both busy.
//!
//! Deviation: TCP windows, slow start and Nagle are not modelled; `bandwidth` is the payload
//! rate after Ethernet/IP/TCP/iSCSI framing (1 GbE with a 1500-byte MTU carries
//! 1448/1538 ≈ 94 % of 125 MB/s, about 117 MB/s).

use elevator_core::Nanos;
use serde::{Deserialize, Serialize};

/// Bytes of an iSCSI basic header segment: every command and every response carries one.
pub const PDU_HEADER_BYTES: u64 = 48;

/// What a topology sets for a link.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkParams {
    /// Payload rate of each direction, bytes per second.
    pub bandwidth_bytes_per_sec: f64,
    /// Round-trip time of an empty message.
    pub rtt_ns: Nanos,
    /// Target-side processing per command (PDU parsing, SCSI emulation, task switch).
    pub overhead_ns: Nanos,
}

impl LinkParams {
    /// Gigabit Ethernet on a switched LAN, as in seed 002's testbed (2009): 117 MB/s of
    /// payload (see the module note), 100 µs round trip (typical of GbE NICs with interrupt
    /// coalescing and one switch; assumption) and 20 µs of target processing per command
    /// (SCST's in-kernel path; assumption).
    pub fn gigabit_ethernet() -> LinkParams {
        LinkParams { bandwidth_bytes_per_sec: 117e6, rtt_ns: 100_000, overhead_ns: 20_000 }
    }

    /// Checks that the link can carry anything.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.bandwidth_bytes_per_sec.is_finite() && self.bandwidth_bytes_per_sec > 0.0) {
            return Err(format!(
                "link bandwidth {} bytes/s must be a positive number (e.g. bandwidth = \"1Gbit\")",
                self.bandwidth_bytes_per_sec
            ));
        }
        Ok(())
    }
}

impl Default for LinkParams {
    fn default() -> Self {
        LinkParams::gigabit_ethernet()
    }
}

/// One direction of a link: when it is next free.
#[derive(Clone, Copy, Debug, Default)]
struct Pipe {
    free_at_ns: Nanos,
}

impl Pipe {
    /// Sends `bytes` no earlier than `now_ns`; returns when the last byte has left.
    fn send(&mut self, now_ns: Nanos, bytes: u64, bandwidth: f64) -> Nanos {
        let start = self.free_at_ns.max(now_ns);
        let wire_ns = (bytes as f64 * 1e9 / bandwidth).ceil() as Nanos;
        self.free_at_ns = start + wire_ns;
        self.free_at_ns
    }
}

/// A full-duplex link: commands go out on one pipe, responses come back on the other.
#[derive(Clone, Debug)]
pub struct Link {
    params: LinkParams,
    to_target: Pipe,
    to_initiator: Pipe,
    /// Bytes carried each way, for reports.
    pub bytes_to_target: u64,
    pub bytes_to_initiator: u64,
}

impl Link {
    pub fn new(params: LinkParams) -> Link {
        Link {
            params,
            to_target: Pipe::default(),
            to_initiator: Pipe::default(),
            bytes_to_target: 0,
            bytes_to_initiator: 0,
        }
    }

    pub fn params(&self) -> &LinkParams {
        &self.params
    }

    /// A command with `data_bytes` of payload (a write's data; 0 for a read) leaves the
    /// initiator at `now_ns`; returns when the target starts on it.
    pub fn command(&mut self, now_ns: Nanos, data_bytes: u64) -> Nanos {
        let bytes = PDU_HEADER_BYTES + data_bytes;
        self.bytes_to_target += bytes;
        let sent = self.to_target.send(now_ns, bytes, self.params.bandwidth_bytes_per_sec);
        sent + self.params.rtt_ns / 2 + self.params.overhead_ns
    }

    /// The target answers at `now_ns` with `data_bytes` (a read's data; 0 for a write);
    /// returns when the initiator has the whole response.
    pub fn response(&mut self, now_ns: Nanos, data_bytes: u64) -> Nanos {
        let bytes = PDU_HEADER_BYTES + data_bytes;
        self.bytes_to_initiator += bytes;
        let sent = self.to_initiator.send(now_ns, bytes, self.params.bandwidth_bytes_per_sec);
        sent + self.params.rtt_ns / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn link() -> Link {
        Link::new(LinkParams { bandwidth_bytes_per_sec: 100e6, rtt_ns: 100_000, overhead_ns: 0 })
    }

    #[test]
    fn a_response_costs_wire_time_plus_half_a_round_trip() {
        let mut l = link();
        // 64 KiB + header at 100 MB/s = 655.84 µs, then 50 µs of flight.
        let done = l.response(0, 65536);
        assert_eq!(done, 655_840 + 50_000);
        assert_eq!(l.command(0, 0), 480 + 50_000);
    }

    #[test]
    fn responses_queue_behind_each_other_but_not_behind_commands() {
        let mut l = link();
        let a = l.response(0, 100_000 - PDU_HEADER_BYTES); // 1 ms on the wire
        let b = l.response(0, 100_000 - PDU_HEADER_BYTES);
        assert_eq!(b - a, 1_000_000, "the second waits for the first");
        let c = l.command(0, 0);
        assert!(c < a, "the other direction is free");
        assert_eq!(l.bytes_to_initiator, 200_000);
    }

    proptest! {
        /// Every message arrives no earlier than it was sent plus its wire time and half the
        /// round trip, and in the order it was sent.
        #[test]
        fn messages_arrive_in_order_and_never_early(
            sends in proptest::collection::vec((0u64..1_000_000, 0u64..1 << 20), 1..50),
        ) {
            let mut l = link();
            let mut now = 0;
            let mut last = 0;
            for (gap, bytes) in sends {
                now += gap;
                let at = l.response(now, bytes);
                let wire = ((PDU_HEADER_BYTES + bytes) as f64 * 1e9 / 100e6) as u64;
                prop_assert!(at >= now + wire + 50_000);
                prop_assert!(at >= last);
                last = at;
            }
        }
    }
}
