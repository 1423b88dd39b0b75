//! fio's steady-state detection (`steadystate.c`, fio 3.33): once a second the job's IOPS
//! and bandwidth over the last second are sampled, the last `ss_dur` samples kept in a ring,
//! and once the ring is full each new sample tests the criterion — the ring's largest
//! deviation from its mean (`iops`, `bw`) or its least-squares slope (`iops_slope`,
//! `bw_slope`), absolute or as a percentage of the mean — against the limit. When it holds,
//! the job (or its whole reporting group) stops as if its runtime were over.
//!
//! The arithmetic is fio's, quirks included: the slope's sums are updated incrementally in
//! unsigned 64-bit arithmetic, the x values are taken as evenly spaced, and a sample is
//! `1000 * delta / elapsed_ms` in integers. Where elevator differs: fio's helper thread
//! ticks once a second from its own start, a little before the jobs' epoch; here the ticks
//! fall on whole seconds of simulated time, from 0.

use elevator_core::Nanos;
use elevator_fio::SteadyState;

/// One job's part in steady-state detection (fio's `td->ss` bookkeeping): what it had done at
/// the last tick, and, for the job that holds its reporting group's ring (the last job of a
/// group under `group_reporting`, else every job), the ring.
#[derive(Clone, Debug, PartialEq)]
pub struct SteadyStateJob {
    pub spec: SteadyState,
    pub group_reporting: bool,
    /// Sampling has begun (`FIO_SS_RAMP_OVER`): a second after `steadystate_ramp_time`.
    pub ramp_over: bool,
    pub attained: bool,
    /// The last tick (fio's `prev_time`; the job's start before the first) and the I/Os and
    /// bytes done by then.
    pub prev_ns: Option<Nanos>,
    pub prev_ios: u64,
    pub prev_bytes: u64,
    pub window: Option<SteadyStateWindow>,
}

impl SteadyStateJob {
    pub fn new(spec: SteadyState, group_reporting: bool) -> SteadyStateJob {
        SteadyStateJob {
            spec,
            group_reporting,
            ramp_over: spec.ramp_ns == 0,
            attained: false,
            prev_ns: None,
            prev_ios: 0,
            prev_bytes: 0,
            window: None,
        }
    }
}

/// One job's (or reporting group's) ring of samples and the state of its test.
#[derive(Clone, Debug, PartialEq)]
pub struct SteadyStateWindow {
    pub spec: SteadyState,
    /// Ring positions (fio's `head`, `tail`): `tail` is where the next sample goes.
    pub head: usize,
    pub tail: usize,
    pub iops: Vec<u64>,
    pub bw_bytes_per_sec: Vec<u64>,
    pub slope: f64,
    pub deviation: f64,
    pub criterion: f64,
    pub attained: bool,
    pub buffer_full: bool,
    sum_y: u64,
    sum_x: u64,
    sum_x_sq: u64,
    sum_xy: u64,
    oldest_y: u64,
}

impl SteadyStateWindow {
    /// A window for `spec` (whose duration is at least one second).
    pub fn new(spec: SteadyState) -> SteadyStateWindow {
        let dur = spec.duration_s;
        debug_assert!(dur >= 1);
        SteadyStateWindow {
            spec,
            head: 0,
            tail: 0,
            iops: vec![0; dur as usize],
            bw_bytes_per_sec: vec![0; dur as usize],
            slope: 0.0,
            deviation: 0.0,
            criterion: 0.0,
            attained: false,
            buffer_full: false,
            sum_y: 0,
            sum_x: dur * (dur - 1) / 2,
            sum_x_sq: (dur - 1) * dur * (2 * dur - 1) / 6,
            sum_xy: 0,
            oldest_y: 0,
        }
    }

    fn dur(&self) -> usize {
        self.iops.len()
    }

    /// The judged series at ring position `i`.
    fn y(&self, i: usize) -> u64 {
        if self.spec.iops {
            self.iops[i]
        } else {
            self.bw_bytes_per_sec[i]
        }
    }

    /// Takes one second's sample; true when the window now meets the criterion (fio's
    /// `steadystate_slope` / `steadystate_deviation`).
    pub fn add(&mut self, iops: u64, bw_bytes_per_sec: u64) -> bool {
        let dur = self.dur();
        self.iops[self.tail] = iops;
        self.bw_bytes_per_sec[self.tail] = bw_bytes_per_sec;
        let new_val = self.y(self.tail);
        if self.buffer_full || self.tail.wrapping_sub(self.head) == dur - 1 {
            if !self.buffer_full {
                // First time through: the sums over the whole ring.
                self.sum_y = 0;
                for i in 0..dur {
                    self.sum_y = self.sum_y.wrapping_add(self.y(i));
                    if self.spec.slope {
                        let j = (self.head + i) % dur;
                        self.sum_xy = self.sum_xy.wrapping_add((i as u64).wrapping_mul(self.y(j)));
                    }
                }
                self.buffer_full = true;
            } else {
                self.sum_y = self.sum_y.wrapping_sub(self.oldest_y).wrapping_add(new_val);
                if self.spec.slope {
                    self.sum_xy = self
                        .sum_xy
                        .wrapping_sub(self.sum_y)
                        .wrapping_add((dur as u64).wrapping_mul(new_val));
                }
            }
            self.oldest_y = self.y(self.head);
            let mean = self.sum_y as f64 / dur as f64;
            let met = if self.spec.slope {
                let n = dur as f64;
                self.slope = (self.sum_xy as f64 - self.sum_x as f64 * self.sum_y as f64 / n)
                    / (self.sum_x_sq as f64 - self.sum_x as f64 * self.sum_x as f64 / n);
                self.criterion =
                    if self.spec.percent { 100.0 * self.slope / mean } else { self.slope };
                self.criterion.abs() < self.spec.limit
            } else {
                self.deviation =
                    (0..dur).map(|i| (self.y(i) as f64 - mean).abs()).fold(0.0, f64::max);
                self.criterion =
                    if self.spec.percent { 100.0 * self.deviation / mean } else { self.deviation };
                self.criterion < self.spec.limit
            };
            if met {
                return true;
            }
        }
        self.tail = (self.tail + 1) % dur;
        if self.tail <= self.head {
            self.head = (self.head + 1) % dur;
        }
        false
    }

    /// The samples oldest first, as fio's JSON lists them (`show_thread_status_json`): from
    /// `head`, or from the one before it once the ring has wrapped without attaining.
    pub fn ordered(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let dur = self.dur();
        let first = if self.attained || !self.buffer_full {
            self.head
        } else if self.head == 0 {
            dur - 1
        } else {
            self.head - 1
        };
        (0..dur).map(move |l| {
            let k = (first + l) % dur;
            (self.bw_bytes_per_sec[k], self.iops[k])
        })
    }

    /// The mean of the kept samples, in integers (`steadystate_bw_mean`, `_iops_mean`).
    pub fn means(&self) -> (u64, u64) {
        let n = self.dur() as u64;
        let bw = self.bw_bytes_per_sec.iter().fold(0u64, |a, &b| a.wrapping_add(b));
        let iops = self.iops.iter().fold(0u64, |a, &b| a.wrapping_add(b));
        (bw / n, iops / n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(iops: bool, slope: bool, percent: bool, limit: f64, dur: u64) -> SteadyState {
        SteadyState { iops, slope, percent, limit, duration_s: dur, ramp_ns: 0 }
    }

    #[test]
    fn a_steady_series_is_attained_when_the_ring_first_fills() {
        let mut w = SteadyStateWindow::new(spec(true, false, true, 2.0, 5));
        for s in [1001, 1000, 1001, 1000] {
            assert!(!w.add(s, s * 4096));
        }
        assert!(w.add(1000, 4_096_000));
        // fio's own run of this (null engine, rate_iops=1000): criterion 0.059976 %.
        assert!((w.criterion - 0.059_976).abs() < 1e-5, "{}", w.criterion);
        assert!((w.deviation - 0.6).abs() < 1e-12);
        assert_eq!(w.means().1, 1000);
    }

    #[test]
    fn a_rising_series_has_its_slope_and_is_not_steady() {
        let mut w = SteadyStateWindow::new(spec(true, true, false, 0.5, 4));
        for (i, s) in [10, 20, 30].into_iter().enumerate() {
            assert!(!w.add(s, 0), "sample {i}: the ring is not full");
        }
        assert!(!w.add(40, 0));
        assert!((w.slope - 10.0).abs() < 1e-9);
        // The incremental sums agree with a fresh fit of the last four: 20..50.
        assert!(!w.add(50, 0));
        assert!((w.slope - 10.0).abs() < 1e-9, "{}", w.slope);
        // Flat from here: the slope (7, then 3) falls under the limit once the ring is flat.
        for _ in 0..2 {
            assert!(!w.add(50, 0));
        }
        assert!(w.add(50, 0));
        assert_eq!(w.slope, 0.0);
    }

    #[test]
    fn the_json_order_starts_at_the_oldest_sample() {
        let mut w = SteadyStateWindow::new(spec(false, false, false, 0.0, 3));
        for s in 1..=4 {
            assert!(!w.add(0, s));
        }
        // Ring now holds 4, 2, 3 with head 2 (past the oldest, 2): fio lists from head - 1.
        let bw: Vec<u64> = w.ordered().map(|(bw, _)| bw).collect();
        assert_eq!(bw, [2, 3, 4]);
    }
}
