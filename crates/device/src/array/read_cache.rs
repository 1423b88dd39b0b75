//! The array controller's read cache and sequential read-ahead: it detects sequential read
//! streams (a read that starts where a recent one ended) and reads ahead a window beyond
//! each, across the stripe, so that a stream coming back after other streams moved the
//! disks' heads finds its next chunks in controller memory. Clean data is replaced least
//! recently used within what the dirty data leaves of the cache.

use elevator_core::RequestId;

/// A read-ahead in flight: its array range and the host reads (id, bytes) waiting for it.
pub type Fetch = (u64, u64, Vec<(RequestId, u64)>);

#[derive(Clone, Copy, Debug)]
struct Extent {
    start: u64,
    end: u64,
    last_used: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Stream {
    /// Where the stream's next read is expected, and how far it has been fetched.
    next: u64,
    fetched_to: u64,
    last_used: u64,
}

/// Clean cached data and the streams being followed.
#[derive(Clone, Debug)]
pub struct ReadCache {
    read_ahead_bytes: u64,
    max_streams: u32,
    extents: Vec<Extent>,
    cached_bytes: u64,
    /// Read-aheads in flight.
    pub fetching: Vec<Fetch>,
    streams: Vec<Stream>,
    clock: u64,
}

impl ReadCache {
    pub fn new(read_ahead_bytes: u64, max_streams: u32) -> ReadCache {
        ReadCache {
            read_ahead_bytes,
            max_streams,
            extents: Vec::new(),
            cached_bytes: 0,
            fetching: Vec::new(),
            streams: Vec::new(),
            clock: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.extents.is_empty()
    }

    /// True when `[start, end)` is cached (and marks it used).
    pub fn holds(&mut self, start: u64, end: u64) -> bool {
        self.clock += 1;
        let clock = self.clock;
        match self.extents.iter_mut().find(|e| e.start <= start && end <= e.end) {
            Some(e) => {
                e.last_used = clock;
                true
            }
            None => false,
        }
    }

    /// Caches `[start, end)`, keeping at most `room_bytes` of clean data.
    pub fn insert(&mut self, start: u64, end: u64, room_bytes: u64) {
        self.clock += 1;
        self.extents.push(Extent { start, end, last_used: self.clock });
        self.cached_bytes += end - start;
        self.shrink_to(room_bytes);
    }

    /// Drops least recently used data until at most `room_bytes` are cached.
    pub fn shrink_to(&mut self, room_bytes: u64) {
        while self.cached_bytes > room_bytes && !self.extents.is_empty() {
            let lru =
                (0..self.extents.len()).min_by_key(|&i| self.extents[i].last_used).unwrap_or(0);
            let e = self.extents.swap_remove(lru);
            self.cached_bytes -= e.end - e.start;
        }
    }

    /// Drops cached data overlapping `[start, end)` (written since).
    pub fn invalidate(&mut self, start: u64, end: u64) {
        let mut freed = 0;
        self.extents.retain(|e| {
            let keep = end <= e.start || e.end <= start;
            if !keep {
                freed += e.end - e.start;
            }
            keep
        });
        self.cached_bytes -= freed;
    }

    /// Follows the read `[start, end)`; returns a range to read ahead, if the read continues a
    /// stream whose fetched data runs out within half a window.
    pub fn follow(&mut self, start: u64, end: u64, capacity: u64) -> Option<(u64, u64)> {
        self.clock += 1;
        let ra = self.read_ahead_bytes;
        let found =
            self.streams.iter().position(|s| s.next <= start && start <= s.fetched_to.max(s.next));
        let Some(i) = found else {
            let fresh = Stream { next: end, fetched_to: end, last_used: self.clock };
            if self.streams.len() < self.max_streams as usize {
                self.streams.push(fresh);
            } else {
                let lru =
                    (0..self.streams.len()).min_by_key(|&i| self.streams[i].last_used).unwrap_or(0);
                self.streams[lru] = fresh;
            }
            return None;
        };
        let s = &mut self.streams[i];
        s.next = end;
        s.last_used = self.clock;
        s.fetched_to = s.fetched_to.max(end);
        if ra == 0 || s.fetched_to >= end + ra / 2 || s.fetched_to >= capacity {
            return None;
        }
        let from = s.fetched_to;
        let to = (from + ra).min(capacity);
        s.fetched_to = to;
        Some((from, to))
    }
}
