//! The order a file's pages were first dirtied in: what writeback followed before 2.6.6.
//!
//! Until the radix-tree dirty tags (2.6.6), an `address_space` kept its dirty pages on a
//! list, `mapping->dirty_pages`: `__set_page_dirty_nobuffers` moved a page to its head when
//! the page went from clean to dirty, and `mpage_writepages` spliced the list onto
//! `io_pages` and wrote from the tail — the oldest dirtied page first, whatever its offset.
//! A file written at random offsets was therefore written back in the order of the writes,
//! leaving the elevator only its own queue (`nr_requests`) to sort; from 2.6.6 writeback
//! walks the tags in offset order. A sequential writer dirties in offset order, so for it
//! the two agree.
//!
//! Kept as runs `[start, end)` of pages in dirtying order (a run that continues the
//! newest one joins it), so a stream is one entry. Entries are not removed when their pages
//! are cleaned some other way (a ranged `fsync` or `fadvise`, a truncation): a stale entry
//! is dropped when writeback reaches it and finds nothing dirty, and the list is compacted
//! when it outgrows what is dirty ([`DirtyOrder::needs_compaction`]).
//!
//! Deviation: a page dirtied again while under writeback joins the list when that
//! writeback ends, not when it was dirtied (the kernel moved it at once); it only changes
//! its place among pages dirtied meanwhile.

use std::collections::VecDeque;

/// Entries a list may hold beyond twice its file's dirty pages before it is compacted.
pub const COMPACTION_SLACK: usize = 1024;

/// One file's dirty pages in the order they were first dirtied (oldest first).
#[derive(Clone, Debug, Default)]
pub struct DirtyOrder {
    runs: VecDeque<(u64, u64)>,
}

impl DirtyOrder {
    /// Pages `[a, b)` went from clean to dirty (newest).
    pub fn push(&mut self, a: u64, b: u64) {
        if a >= b {
            return;
        }
        match self.runs.back_mut() {
            Some((_, end)) if *end == a => *end = b,
            _ => self.runs.push_back((a, b)),
        }
    }

    /// The oldest run still listed.
    pub fn front(&self) -> Option<(u64, u64)> {
        self.runs.front().copied()
    }

    /// Writeback took the oldest run's pages up to `upto`: the rest stays at the front.
    pub fn consume_front(&mut self, upto: u64) {
        if let Some(front) = self.runs.front_mut() {
            if upto >= front.1 {
                self.runs.pop_front();
            } else {
                front.0 = front.0.max(upto);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.runs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// More entries than `dirty_pages` can account for (each live entry holds at least one
    /// dirty page; the slack keeps compaction rare).
    pub fn needs_compaction(&self, dirty_pages: u64) -> bool {
        self.runs.len() as u64 > dirty_pages.saturating_mul(2) + COMPACTION_SLACK as u64
    }

    /// Keeps only the runs for which `live` says they still hold dirty pages.
    pub fn retain(&mut self, mut live: impl FnMut(u64, u64) -> bool) {
        self.runs.retain(|&(a, b)| live(a, b));
    }

    pub fn clear(&mut self) {
        self.runs.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_one_run_and_random_writes_keep_their_order() {
        let mut d = DirtyOrder::default();
        d.push(0, 4);
        d.push(4, 9);
        assert_eq!(d.len(), 1);
        assert_eq!(d.front(), Some((0, 9)));
        d.push(100, 101);
        d.push(3, 4);
        d.push(50, 51);
        assert_eq!(
            d.runs.iter().copied().collect::<Vec<_>>(),
            [(0, 9), (100, 101), (3, 4), (50, 51)]
        );
    }

    #[test]
    fn consuming_the_front_keeps_what_is_left() {
        let mut d = DirtyOrder::default();
        d.push(10, 20);
        d.push(5, 6);
        d.consume_front(14);
        assert_eq!(d.front(), Some((14, 20)));
        d.consume_front(20);
        assert_eq!(d.front(), Some((5, 6)));
        d.consume_front(6);
        assert!(d.is_empty());
        d.consume_front(1);
        d.push(3, 3);
        assert!(d.is_empty());
    }

    #[test]
    fn compaction_is_asked_for_only_past_the_slack() {
        let mut d = DirtyOrder::default();
        for p in 0..(COMPACTION_SLACK as u64 + 2) {
            d.push(2 * p, 2 * p + 1);
        }
        assert!(!d.needs_compaction(1));
        assert!(d.needs_compaction(0));
        d.retain(|a, _| a % 4 == 0);
        assert_eq!(d.len(), (COMPACTION_SLACK + 2).div_ceil(2));
    }
}
