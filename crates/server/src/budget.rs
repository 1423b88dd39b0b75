//! The server's memory budget (`memory_limit`): every request's payload memory is charged
//! here *before* it is allocated — a write's data before it is received, a read's buffer
//! before the read is issued — and given back when its reply has left (or the connection is
//! gone). A connection whose next request does not fit stops being parsed until memory is
//! given back (back-pressure: its requests wait in the socket), so all workers together
//! never hold more than the limit in payloads. One request is always admitted when nothing
//! is charged, so a limit below the largest request cannot wedge the server.
//!
//! A request is charged what it can really take: a read its I/O buffer (the length rounded
//! up to the buffer pool's power-of-two class), a write its payload plus the I/O buffer it is
//! copied into for the device.

use std::sync::atomic::{AtomicU64, Ordering};

/// The smallest buffer the pool hands out (`buffers.rs`).
const MIN_BUFFER: u64 = 4096;

pub(crate) struct Budget {
    limit: u64,
    used: AtomicU64,
}

impl Budget {
    pub fn new(limit: u64) -> Budget {
        Budget { limit, used: AtomicU64::new(0) }
    }

    /// Charges `n` bytes if they fit (or nothing is charged); `false` otherwise.
    pub fn try_take(&self, n: u64) -> bool {
        if n == 0 {
            return true;
        }
        let mut used = self.used.load(Ordering::SeqCst);
        loop {
            if used != 0 && used.saturating_add(n) > self.limit {
                return false;
            }
            match self.used.compare_exchange_weak(
                used,
                used + n,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }

    pub fn give(&self, n: u64) {
        if n > 0 {
            let before = self.used.fetch_sub(n, Ordering::SeqCst);
            debug_assert!(before >= n, "budget given back more than it lent");
        }
    }

    pub fn used(&self) -> u64 {
        self.used.load(Ordering::SeqCst)
    }
}

/// What a request of `len` payload bytes is charged: see the module docs.
pub(crate) fn charge(is_read: bool, is_write: bool, len: u64) -> u64 {
    let buffer = len.max(MIN_BUFFER).next_power_of_two();
    if is_read {
        buffer
    } else if is_write {
        len + buffer
    } else {
        0
    }
}

/// A default `memory_limit`: an eighth of the machine's memory, between 256 MiB and 4 GiB.
pub(crate) fn default_limit() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(2 << 30, |kb| kb * 1024);
    (total / 8).clamp(256 << 20, 4 << 30)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_within_the_limit_and_always_admits_one() {
        let b = Budget::new(100 << 20);
        assert!(b.try_take(64 << 20));
        assert!(!b.try_take(64 << 20), "past the limit");
        assert!(b.try_take(36 << 20));
        b.give(100 << 20);
        assert_eq!(b.used(), 0);
        assert!(b.try_take(200 << 20), "one request always fits an empty budget");
        assert!(!b.try_take(1));
    }

    #[test]
    fn charges_are_what_the_buffers_take() {
        assert_eq!(charge(true, false, 1), 4096);
        assert_eq!(charge(true, false, (16 << 20) + 1), 32 << 20);
        assert_eq!(charge(false, true, (32 << 20) - 1), (64 << 20) - 1);
        assert_eq!(charge(false, false, 1 << 20), 0);
        let d = default_limit();
        assert!((256 << 20..=4 << 30).contains(&d), "{d}");
    }
}
