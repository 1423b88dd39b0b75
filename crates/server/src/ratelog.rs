//! Rate-limited logging: an event that a client can cause at will (a refused or timed-out
//! connection, an accept failing with EMFILE) is logged at most once per interval, with the
//! number of such events since the last line, so an attack cannot fill the log.

use std::time::{Duration, Instant};

pub(crate) struct RateLog {
    what: &'static str,
    interval: Duration,
    last: Option<Instant>,
    /// Events not yet logged, by kind.
    counts: Vec<(&'static str, u64)>,
}

impl RateLog {
    pub fn new(what: &'static str, interval: Duration) -> RateLog {
        RateLog { what, interval, last: None, counts: Vec::new() }
    }

    /// Counts one event of `kind`; logs one line with the counts of every kind since the last
    /// line (and `detail`, the latest event's) if the interval has passed. Returns whether it
    /// logged.
    pub fn event(
        &mut self,
        now: Instant,
        kind: &'static str,
        detail: &dyn std::fmt::Display,
    ) -> bool {
        match self.counts.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => self.counts.push((kind, 1)),
        }
        match self.last {
            Some(t) if now.duration_since(t) < self.interval => false,
            _ => {
                let counts: Vec<String> =
                    self.counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
                tracing::warn!(latest = %detail, "{}: {}", self.what, counts.join(", "));
                self.counts.clear();
                self.last = Some(now);
                true
            }
        }
    }

    /// Logs the events counted since the last line once the interval has passed, so that the
    /// last burst's count is not left unsaid.
    pub fn flush(&mut self, now: Instant) {
        if self.counts.is_empty() || self.next_flush().is_some_and(|t| now < t) {
            return;
        }
        let counts: Vec<String> = self.counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
        tracing::warn!("{}: {}", self.what, counts.join(", "));
        self.counts.clear();
        self.last = Some(now);
    }

    /// When [`RateLog::flush`] has something to say, if ever.
    pub fn next_flush(&self) -> Option<Instant> {
        if self.counts.is_empty() {
            return None;
        }
        self.last.map(|t| t + self.interval)
    }

    #[cfg(test)]
    fn pending(&self) -> u64 {
        self.counts.iter().map(|(_, n)| n).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_at_most_once_per_interval() {
        let mut r = RateLog::new("refused", Duration::from_secs(1));
        let t0 = Instant::now();
        let kinds = ["evicted", "timed out", "accept failed"];
        let logged = (0..1000)
            .filter(|i| r.event(t0 + Duration::from_millis(*i as u64 * 3), kinds[i % 3], &"x"))
            .count();
        // 1000 events of three kinds over 3 s, one line for all: at t=0, 1.002, 2.004.
        assert_eq!(logged, 3);
        assert!(r.pending() > 0 && r.pending() < 400, "events since the last line are counted");
        let end = t0 + Duration::from_millis(3000);
        assert!(r.next_flush().is_some_and(|t| t <= end + Duration::from_secs(1)));
        r.flush(end + Duration::from_secs(1));
        assert_eq!(r.pending(), 0, "the last burst is logged too");
        assert_eq!(r.next_flush(), None);
    }
}
