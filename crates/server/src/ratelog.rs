//! Rate-limited logging: an event that a client can cause at will (a refused or timed-out
//! connection, an accept failing with EMFILE) is logged at most once per interval, with the
//! number of such events since the last line, so an attack cannot fill the log.

use std::time::{Duration, Instant};

pub(crate) struct RateLog {
    what: &'static str,
    interval: Duration,
    last: Option<Instant>,
    /// Events not yet logged.
    count: u64,
}

impl RateLog {
    pub fn new(what: &'static str, interval: Duration) -> RateLog {
        RateLog { what, interval, last: None, count: 0 }
    }

    /// Counts one event; logs (with `detail`, the latest event's) if the interval has passed
    /// since the last line. Returns whether it logged.
    pub fn event(&mut self, now: Instant, detail: &dyn std::fmt::Display) -> bool {
        self.count += 1;
        match self.last {
            Some(t) if now.duration_since(t) < self.interval => false,
            _ => {
                tracing::warn!(count = self.count, latest = %detail, "{}", self.what);
                self.count = 0;
                self.last = Some(now);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_at_most_once_per_interval() {
        let mut r = RateLog::new("refused", Duration::from_secs(1));
        let t0 = Instant::now();
        let logged =
            (0..1000).filter(|i| r.event(t0 + Duration::from_millis(*i as u64 * 3), &"x")).count();
        // 1000 events over 3 s: at t=0, 1.002, 2.004.
        assert_eq!(logged, 3);
        assert!(r.count > 0 && r.count < 400, "events since the last line are counted");
    }
}
