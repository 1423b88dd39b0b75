//! BFQ's estimate of the device's peak rate (`bfq_update_peak_rate`, `bfq_update_rate_reset`,
//! `bfq_reset_rate_computation` and the late-completion check of `bfq_completed_request`,
//! Linux 6.x), from which `max_budget` (`bfq_calc_max_budget`) and the interactive weight
//! raising's duration (`bfq_wr_duration`) follow.
//!
//! Dispatches are sampled over an observation interval that starts at a dispatch and closes
//! once it has lasted `BFQ_RATE_REF_INTERVAL` (1 s), or earlier when the device went idle for
//! 100 ms or a completion came so late that the device was certainly slow. An interval with at
//! least `BFQ_RATE_MIN_SAMPLES` dispatches over at least `BFQ_RATE_MIN_INTERVAL` gives a rate
//! (sectors dispatched over the interval, extended to the last completion), which enters the
//! estimate through a low-pass filter whose weight grows with how sequential the interval was
//! and how long it lasted; a mostly random interval may only raise the estimate.
//!
//! Rates are `f64` sectors per nanosecond here, where the kernel keeps fixed-point sectors
//! per microsecond shifted by `BFQ_RATE_SHIFT`; the arithmetic is otherwise the kernel's.

use elevator_core::Nanos;

const MS: Nanos = 1_000_000;
/// `BFQ_RATE_MIN_SAMPLES`.
const RATE_MIN_SAMPLES: u32 = 32;
/// `BFQ_RATE_MIN_INTERVAL`.
const RATE_MIN_INTERVAL_NS: Nanos = 300 * MS;
/// `BFQ_RATE_REF_INTERVAL`.
const RATE_REF_INTERVAL_NS: Nanos = 1_000 * MS;
/// `BFQ_MIN_TT`: a dispatch this soon after a completion counts as back to back.
pub(super) const MIN_TT_NS: Nanos = 2 * MS;
/// A dispatch after the device idled this long closes the interval.
const IDLE_CLOSE_NS: Nanos = 100 * MS;
/// `BFQQ_SEEK_THR`: farther than this from the last position is a seek.
const SEEK_THR_SECTORS: u64 = 8 * 100;
/// Rates above 20 M sectors/s are measurement errors.
const RATE_MAX_SECTORS_PER_NS: f64 = 20e6 / 1e9;
/// Below 1 M sectors/s per request (`1 << (BFQ_RATE_SHIFT - 10)` sectors/µs), a completion
/// is late.
const LATE_RATE_SECTORS_PER_NS: f64 = 1.0 / 1024.0 / 1_000.0;

#[derive(Clone, Debug)]
pub(super) struct PeakRate {
    /// The estimate, sectors per ns.
    pub rate: f64,
    samples: u32,
    sequential: u32,
    sectors: u64,
    first_dispatch_ns: Nanos,
    last_dispatch_ns: Nanos,
    last_completion_ns: Nanos,
    delta_from_first_ns: Nanos,
    last_position: u64,
    last_rq_max_sectors: u64,
}

impl PeakRate {
    /// Starts from `initial` sectors per ns (the kernel: two thirds of its reference rate).
    pub fn new(initial: f64) -> PeakRate {
        PeakRate {
            rate: initial,
            samples: 0,
            sequential: 0,
            sectors: 0,
            first_dispatch_ns: 0,
            last_dispatch_ns: 0,
            last_completion_ns: 0,
            delta_from_first_ns: 0,
            last_position: 0,
            last_rq_max_sectors: 0,
        }
    }

    fn reset(&mut self, dispatch: Option<u64>, now: Nanos) {
        match dispatch {
            Some(sectors) => {
                self.first_dispatch_ns = now;
                self.last_dispatch_ns = now;
                self.samples = 1;
                self.sequential = 0;
                self.sectors = sectors;
                self.last_rq_max_sectors = sectors;
            }
            None => self.samples = 0,
        }
    }

    /// A request of `sectors` at `sector` was dispatched at `now` with `in_driver` others
    /// in flight. True when the estimate changed.
    pub fn dispatched(&mut self, sector: u64, sectors: u64, in_driver: usize, now: Nanos) -> bool {
        let mut changed = false;
        if self.samples == 0 {
            self.reset(Some(sectors), now);
        } else if now.saturating_sub(self.last_dispatch_ns) > IDLE_CLOSE_NS && in_driver == 0 {
            changed = self.update_and_reset(Some(sectors), now);
        } else {
            self.samples += 1;
            let back_to_back =
                in_driver > 0 || now.saturating_sub(self.last_completion_ns) < MIN_TT_NS;
            if back_to_back && sector.abs_diff(self.last_position) <= SEEK_THR_SECTORS {
                self.sequential += 1;
            }
            self.sectors += sectors;
            self.last_rq_max_sectors = if !self.samples.is_multiple_of(32) {
                self.last_rq_max_sectors.max(sectors)
            } else {
                sectors
            };
            self.delta_from_first_ns = now.saturating_sub(self.first_dispatch_ns);
            if self.delta_from_first_ns >= RATE_REF_INTERVAL_NS {
                changed = self.update_and_reset(Some(sectors), now);
            }
        }
        self.last_position = sector + sectors;
        self.last_dispatch_ns = now;
        changed
    }

    /// A request completed at `now`. True when the estimate changed.
    pub fn completed(&mut self, now: Nanos) -> bool {
        let delta = now.saturating_sub(self.last_completion_ns);
        let mut changed = false;
        if delta > MIN_TT_NS
            && (self.last_rq_max_sectors as f64) / (delta as f64) < LATE_RATE_SECTORS_PER_NS
        {
            changed = self.update_and_reset(None, now);
        }
        self.last_completion_ns = now;
        changed
    }

    /// `bfq_update_rate_reset`: the interval's rate into the estimate if the interval is
    /// long and full enough, then a new interval (from `dispatch`, or at the next one).
    fn update_and_reset(&mut self, dispatch: Option<u64>, now: Nanos) -> bool {
        let mut changed = false;
        if self.samples >= RATE_MIN_SAMPLES && self.delta_from_first_ns >= RATE_MIN_INTERVAL_NS {
            let delta = self
                .delta_from_first_ns
                .max(self.last_completion_ns.saturating_sub(self.first_dispatch_ns));
            let rate = self.sectors as f64 / delta.max(1) as f64;
            let random = self.sequential < (3 * self.samples) >> 2;
            if !(random && rate <= self.rate) && rate <= RATE_MAX_SECTORS_PER_NS {
                let weight = (9 * self.sequential) / self.samples;
                let weight = (u64::from(weight) * self.delta_from_first_ns / RATE_REF_INTERVAL_NS)
                    .min(8) as f64;
                let divisor = 10.0 - weight;
                self.rate = self.rate * (divisor - 1.0) / divisor + rate / divisor;
                changed = true;
            }
        }
        self.reset(dispatch, now);
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sequential_stream_pulls_the_estimate_to_its_rate() {
        // 256-sector requests back to back, one every 1 ms: 256,000 sectors/s.
        let mut p = PeakRate::new(14_000.0 * 2.0 / 3.0 / 1e9);
        let mut now = 0;
        for i in 0..20_000u64 {
            p.dispatched(i * 256, 256, 1, now);
            now += MS;
            p.completed(now);
        }
        let per_s = p.rate * 1e9;
        assert!((per_s - 256_000.0).abs() < 2_560.0, "{per_s}");
    }

    #[test]
    fn short_or_sparse_intervals_leave_it_alone() {
        let start = 20_000.0 / 1e9;
        let mut p = PeakRate::new(start);
        // Ten requests, then the device idles: too few samples to judge.
        for i in 0..10u64 {
            p.dispatched(i * 8, 8, 0, i * 200 * MS);
            p.completed(i * 200 * MS + MS);
        }
        assert_eq!(p.rate, start);
        // Random requests slower than the estimate cannot lower it.
        let mut now = 3_000 * MS;
        for i in 0..2_000u64 {
            p.dispatched((i * 7_919_993) % 100_000_000, 8, 0, now);
            now += 10 * MS;
            p.completed(now);
        }
        assert_eq!(p.rate, start);
    }
}
