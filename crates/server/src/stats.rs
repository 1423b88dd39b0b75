//! Per-export counters and latency histograms.

use hdrhistogram::Histogram;

pub(crate) struct ExportStats {
    pub name: String,
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    pub trims: u64,
    pub write_zeroes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub errors: u64,
    /// Connections that reached the transmission phase on this export.
    pub connections: u64,
    pub latency_ns: Histogram<u64>,
    pub latency_sum_ns: u64,
}

/// A snapshot of one export's counters; latencies are from request arrival to reply queued.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ExportStatsSnapshot {
    pub name: String,
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    pub trims: u64,
    pub write_zeroes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub errors: u64,
    /// Connections that reached the transmission phase on this export.
    pub connections: u64,
    pub latency_p50_ns: u64,
    pub latency_p90_ns: u64,
    pub latency_p99_ns: u64,
    pub latency_p999_ns: u64,
    pub latency_max_ns: u64,
    /// Requests measured and the sum of their latencies (a Prometheus summary's count/sum).
    pub latency_count: u64,
    pub latency_sum_ns: u64,
}

impl ExportStats {
    pub fn new(name: &str) -> Self {
        ExportStats {
            name: name.to_string(),
            reads: 0,
            writes: 0,
            flushes: 0,
            trims: 0,
            write_zeroes: 0,
            read_bytes: 0,
            write_bytes: 0,
            errors: 0,
            connections: 0,
            latency_ns: Histogram::new_with_bounds(1_000, 600_000_000_000, 3)
                .expect("static histogram bounds are valid"),
            latency_sum_ns: 0,
        }
    }

    pub fn snapshot(&self) -> ExportStatsSnapshot {
        let h = &self.latency_ns;
        ExportStatsSnapshot {
            name: self.name.clone(),
            reads: self.reads,
            writes: self.writes,
            flushes: self.flushes,
            trims: self.trims,
            write_zeroes: self.write_zeroes,
            read_bytes: self.read_bytes,
            write_bytes: self.write_bytes,
            errors: self.errors,
            connections: self.connections,
            latency_p50_ns: h.value_at_quantile(0.5),
            latency_p90_ns: h.value_at_quantile(0.9),
            latency_p99_ns: h.value_at_quantile(0.99),
            latency_p999_ns: h.value_at_quantile(0.999),
            latency_max_ns: h.max(),
            latency_count: h.len(),
            latency_sum_ns: self.latency_sum_ns,
        }
    }
}
