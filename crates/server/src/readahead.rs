//! Server-side readahead for sequential readers (`read_ahead_kb`, as the block layer's queue
//! attribute of that name).
//!
//! Why: a remote client keeps at most its queue depth of reads outstanding, and each one
//! spends part of its life in the network (the reply's transfer, the client's turnaround), so
//! the disk sees fewer reads in flight than the client has — and a disk's bandwidth depends on
//! its depth. Seed 002 (iSCSI) shows it from the other side: a remote sequential reader's
//! throughput rests on the target's readahead. Here the worker reads ahead of each sequential
//! connection into its own buffers (there is no page cache under `O_DIRECT`): a read the client
//! sends later is answered from a finished prefetch at once, or waits for the one in flight.
//!
//! The window follows the kernel's on-demand readahead in outline (`mm/readahead.c`): a
//! read that starts where the connection's previous read ended is sequential; the first such
//! read opens a window of its own size, each further one doubles it, up to the larger of
//! `read_ahead_kb` and the read's size; any other read closes the window. Prefetches are
//! scheduler requests like any read (owned by the connection: CFQ queues and groups see them).
//! Deviation: the kernel marks an async readahead trigger page and reads ahead when it is
//! reached; here the window is topped up on every sequential read.
//!
//! Consistency: a write, trim or write-zeroes that completes over a prefetched range removes
//! the prefetch (or marks it stale if its read is still in flight, so that no read arriving
//! later takes its data). A read the client sent before the write's reply is concurrent with
//! the write (the NBD spec orders nothing between commands in flight) and may see either.

use elevator_core::hash::FastHashMap;
use std::collections::BTreeMap;

/// A connection's sequential-read state.
#[derive(Debug, Default)]
pub(crate) struct ReadStream {
    /// Where the next sequential read would start.
    next: u64,
    /// The current window (0: not sequential).
    window: u64,
    /// End of what was read ahead for this stream.
    ahead_end: u64,
}

impl ReadStream {
    /// A read of `[offset, offset + len)` arrived. Returns the range to read ahead now:
    /// `[start, end)`, at most `max_bytes` (or `len` if larger) past the read, below `limit`.
    pub fn on_read(
        &mut self,
        offset: u64,
        len: u64,
        max_bytes: u64,
        limit: u64,
    ) -> Option<(u64, u64)> {
        let end = offset + len;
        let sequential = offset == self.next && offset > 0;
        self.next = end;
        if !sequential || max_bytes == 0 {
            self.window = 0;
            self.ahead_end = 0;
            return None;
        }
        let cap = max_bytes.max(len);
        self.window = if self.window == 0 { len } else { (self.window * 2).min(cap) };
        let start = self.ahead_end.max(end);
        let stop = (end + self.window).min(limit);
        if start >= stop {
            return None;
        }
        self.ahead_end = stop;
        Some((start, stop))
    }
}

/// A prefetch: in flight (`ready` false) or read.
pub(crate) struct Entry<B, W> {
    pub len: u64,
    /// The scheduler request reading it.
    pub id: u64,
    pub buf: Option<B>,
    /// Overwritten while in flight: answers its waiters, then goes.
    pub stale: bool,
    /// Reads that arrived while it was in flight.
    pub waiters: Vec<W>,
}

/// What a read finds in the cache.
pub(crate) enum Found<B> {
    /// Read: the buffer and the file offset of its first byte.
    Ready(B, u64),
    /// In flight: the read waits for it (`Cache::wait`).
    InFlight(u64),
    Miss,
}

/// The prefetches of one backing file, by file offset.
pub(crate) struct Cache<B, W> {
    entries: BTreeMap<u64, Entry<B, W>>,
    by_id: FastHashMap<u64, u64>,
    bytes: u64,
    max_bytes: u64,
}

impl<B: Clone, W> Cache<B, W> {
    pub fn new(max_bytes: u64) -> Self {
        Cache { entries: BTreeMap::new(), by_id: FastHashMap::default(), bytes: 0, max_bytes }
    }

    /// The usable prefetch that holds all of `[offset, offset + len)`.
    pub fn find(&self, offset: u64, len: u64) -> Found<B> {
        let Some((&at, e)) = self.entries.range(..=offset).next_back() else { return Found::Miss };
        if e.stale || offset + len > at + e.len {
            return Found::Miss;
        }
        match &e.buf {
            Some(b) => Found::Ready(b.clone(), at),
            None => Found::InFlight(at),
        }
    }

    /// Parks a read on the in-flight prefetch at `at`.
    pub fn wait(&mut self, at: u64, w: W) {
        if let Some(e) = self.entries.get_mut(&at) {
            e.waiters.push(w);
        }
    }

    /// A ready prefetch was read up to `end`: it goes once its last byte is taken (a
    /// sequential reader does not come back).
    pub fn consumed(&mut self, at: u64, end: u64) {
        if self.entries.get(&at).is_some_and(|e| e.buf.is_some() && end >= at + e.len) {
            self.remove(at);
        }
    }

    /// Room for `len` more bytes within the budget: evicts read prefetches, lowest offset
    /// first; false if prefetches in flight alone fill it.
    pub fn make_room(&mut self, len: u64) -> bool {
        while self.bytes + len > self.max_bytes {
            let victim = self.entries.iter().find(|(_, e)| e.buf.is_some()).map(|(&at, _)| at);
            match victim {
                Some(at) => self.remove(at),
                None => return false,
            }
        }
        true
    }

    /// Records a prefetch of `[at, at + len)` read by request `id`.
    pub fn insert(&mut self, at: u64, len: u64, id: u64) {
        self.bytes += len;
        self.by_id.insert(id, at);
        let e = Entry { len, id, buf: None, stale: false, waiters: Vec::new() };
        if let Some(old) = self.entries.insert(at, e) {
            self.bytes -= old.len;
            self.by_id.remove(&old.id);
        }
    }

    /// Whether request `id` is a prefetch.
    pub fn is_prefetch(&self, id: u64) -> bool {
        self.by_id.contains_key(&id)
    }

    /// Request `id` finished: with its data (`Some`: the buffer and the request's actual
    /// range, which a merge may have grown) or failed (`None`: the prefetch goes). Returns the
    /// waiters to answer; a stale prefetch goes after answering them.
    pub fn completed(&mut self, id: u64, data: Option<(B, u64, u64)>) -> Vec<W> {
        let Some(at) = self.by_id.remove(&id) else { return Vec::new() };
        let Some(mut e) = self.entries.remove(&at) else { return Vec::new() };
        self.bytes -= e.len;
        let waiters = std::mem::take(&mut e.waiters);
        if let (Some((buf, offset, len)), false) = (data, e.stale) {
            // A client read front-merged into the request moved its start; if another
            // prefetch (a stale one still in flight, with waiters) holds that key, this one
            // is not kept rather than put over it.
            if offset == at || !self.entries.contains_key(&offset) {
                e.buf = Some(buf);
                e.len = len;
                self.bytes += len;
                self.entries.insert(offset, e);
            }
        }
        waiters
    }

    /// `[lo, hi)` was written: prefetches over it go (read ones) or turn stale (in flight).
    pub fn invalidate(&mut self, lo: u64, hi: u64) {
        let hit: Vec<u64> = self
            .entries
            .range(..hi)
            .filter(|(&at, e)| at + e.len > lo)
            .map(|(&at, _)| at)
            .collect();
        for at in hit {
            if let Some(e) = self.entries.get_mut(&at) {
                if e.buf.is_some() {
                    self.remove(at);
                } else {
                    e.stale = true;
                }
            }
        }
    }

    fn remove(&mut self, at: u64) {
        if let Some(e) = self.entries.remove(&at) {
            self.bytes -= e.len;
            self.by_id.remove(&e.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: u64 = 1 << 20;

    #[test]
    fn window_opens_on_the_second_sequential_read_and_doubles_to_the_cap() {
        let mut s = ReadStream::default();
        assert_eq!(s.on_read(0, M, 4 * M, 100 * M), None, "offset 0 is no evidence yet");
        assert_eq!(s.on_read(M, M, 4 * M, 100 * M), Some((2 * M, 3 * M)));
        assert_eq!(s.on_read(2 * M, M, 4 * M, 100 * M), Some((3 * M, 5 * M)));
        assert_eq!(s.on_read(3 * M, M, 4 * M, 100 * M), Some((5 * M, 8 * M)));
        assert_eq!(s.on_read(4 * M, M, 4 * M, 100 * M), Some((8 * M, 9 * M)), "capped at 4M");
        assert_eq!(s.on_read(50 * M, M, 4 * M, 100 * M), None, "a jump closes the window");
        assert_eq!(s.on_read(51 * M, M, 4 * M, 52 * M), None, "nothing past the limit");
    }

    #[test]
    fn reads_larger_than_the_setting_still_read_one_ahead_and_zero_disables() {
        let mut s = ReadStream::default();
        s.on_read(8 * M, 2 * M, 128 << 10, u64::MAX);
        assert_eq!(s.on_read(10 * M, 2 * M, 128 << 10, u64::MAX), Some((12 * M, 14 * M)));
        let mut off = ReadStream::default();
        off.on_read(M, M, 0, u64::MAX);
        assert_eq!(off.on_read(2 * M, M, 0, u64::MAX), None);
    }

    #[test]
    fn cache_serves_waits_consumes_and_invalidates() {
        let mut c: Cache<&'static str, u32> = Cache::new(3 * M);
        assert!(c.make_room(M));
        c.insert(2 * M, M, 7);
        assert!(matches!(c.find(2 * M + 4096, 4096), Found::InFlight(a) if a == 2 * M));
        assert!(matches!(c.find(3 * M - 4096, 8192), Found::Miss), "runs past its end");
        c.wait(2 * M, 1);
        assert_eq!(c.completed(7, Some(("buf", 2 * M, M))), vec![1]);
        assert!(matches!(c.find(2 * M, M), Found::Ready("buf", a) if a == 2 * M));
        c.consumed(2 * M, 2 * M + 4096);
        assert!(matches!(c.find(2 * M, M), Found::Ready(..)), "not all of it was taken");
        c.invalidate(3 * M - 1, 3 * M);
        assert!(matches!(c.find(2 * M, M), Found::Miss), "a write over its last byte");
        // In flight when written: stale, answers its waiters, then goes.
        c.insert(5 * M, M, 8);
        c.wait(5 * M, 2);
        c.invalidate(4 * M, 5 * M + 1);
        assert!(matches!(c.find(5 * M, 4096), Found::Miss));
        assert_eq!(c.completed(8, Some(("old", 5 * M, M))), vec![2]);
        assert!(matches!(c.find(5 * M, 4096), Found::Miss));
        assert_eq!(c.bytes, 0);
    }

    #[test]
    fn a_prefetch_grown_onto_another_key_never_displaces_it() {
        let mut c: Cache<&'static str, u32> = Cache::new(8 * M);
        c.insert(0, M, 1);
        c.wait(0, 10);
        c.invalidate(0, 1); // stale, still in flight, with a waiter
        c.insert(M, M, 2);
        // Request 2 grew down to 0 (a client read of [0, M) merged into it).
        assert!(c.completed(2, Some(("merged", 0, 2 * M))).is_empty());
        assert_eq!(c.completed(1, Some(("old", 0, M))), vec![10], "the waiter is answered");
        assert!(matches!(c.find(0, 1), Found::Miss));
        assert_eq!(c.bytes, 0);
    }

    #[test]
    fn budget_evicts_read_prefetches_but_never_in_flight_ones() {
        let mut c: Cache<u8, u32> = Cache::new(2 * M);
        c.insert(0, M, 1);
        c.insert(M, M, 2);
        assert!(!c.make_room(M), "both in flight");
        c.completed(1, Some((0, 0, M)));
        assert!(c.make_room(M));
        assert!(matches!(c.find(0, 1), Found::Miss));
        assert!(c.is_prefetch(2) && !c.is_prefetch(1));
        assert!(c.completed(2, None).is_empty());
        assert_eq!(c.bytes, 0);
    }
}
