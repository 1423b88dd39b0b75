//! fio's verify phase (`verify=`, `do_verify`): a job that writes reads back what it wrote
//! once its writes are done (fio's `do_verify`, run after `do_io` in `thread_main`), and
//! reports those reads as its reads.
//!
//! Which blocks, in which order, follows fio's `log_io_piece`: a random job with its random
//! map keeps every write in the order written (each block is written once a pass); any other
//! job keeps its writes sorted by offset, a rewrite of the same offset replacing the older
//! one. Before reading, a buffered job syncs its file and drops it from the page cache, so
//! the reads reach the disk.
//!
//! With `verify_backlog=N` the job also verifies while it writes (fio's `check_get_verify`):
//! whenever the pieces kept reach a multiple of N after a write, it reads back
//! `verify_backlog_batch` of them (N by default), the oldest (or lowest) first, each read
//! taking its piece off the list, before it writes on.
//!
//! Deviations: fio also replaces an older piece that a new write overlaps at another offset;
//! here only a write at the same offset does.
//!
//! `verify_only` (the job's dry run of its writes, then this read-back) is the process's:
//! see `Process::next`. Bounded: at most [`MAX_VERIFY_PIECES`] writes are kept for
//! reading back; past that the run warns.

use std::collections::{BTreeMap, VecDeque};

use elevator_core::Nanos;

/// Writes one process keeps for its verify phase (fio keeps an `io_piece` per write, 64 MiB
/// of them here at 16 bytes each).
pub const MAX_VERIFY_PIECES: usize = 1 << 22;

/// What one process will read back, and how far it is.
#[derive(Clone, Debug)]
pub struct Verify {
    /// `(offset, length)` in the order written, when the job has a random map...
    written: VecDeque<(u64, u64)>,
    /// ... else by offset.
    by_offset: BTreeMap<u64, u64>,
    in_written_order: bool,
    /// Writes not kept past [`MAX_VERIFY_PIECES`].
    pub dropped: u64,
    /// Once the read-back has begun: the pieces and the next to read.
    reading: Option<(Vec<(u64, u64)>, usize)>,
    /// When the write phase ended and the read-back began.
    pub began_ns: Option<Nanos>,
}

impl Verify {
    pub fn new(in_written_order: bool) -> Verify {
        Verify {
            written: VecDeque::new(),
            by_offset: BTreeMap::new(),
            in_written_order,
            dropped: 0,
            reading: None,
            began_ns: None,
        }
    }

    /// The job wrote `len` bytes at route offset `offset`.
    pub fn wrote(&mut self, offset: u64, len: u64) {
        if self.kept() >= MAX_VERIFY_PIECES && !self.by_offset.contains_key(&offset) {
            self.dropped += 1;
            return;
        }
        if self.in_written_order {
            self.written.push_back((offset, len));
        } else {
            self.by_offset.insert(offset, len);
        }
    }

    /// Pieces kept and not yet read back (fio's `io_hist_len`).
    pub fn kept(&self) -> usize {
        if self.in_written_order {
            self.written.len()
        } else {
            self.by_offset.len()
        }
    }

    /// Takes the next piece to read back while writing (`get_next_verify`): the oldest, or
    /// the lowest offset.
    pub fn take_next(&mut self) -> Option<(u64, u64)> {
        if self.in_written_order {
            self.written.pop_front()
        } else {
            self.by_offset.pop_first()
        }
    }

    /// Whether the read-back has begun.
    pub fn reading(&self) -> bool {
        self.reading.is_some()
    }

    /// Starts the read-back at `now_ns`.
    pub fn begin(&mut self, now_ns: Nanos) {
        let pieces = if self.in_written_order {
            std::mem::take(&mut self.written).into()
        } else {
            std::mem::take(&mut self.by_offset).into_iter().collect()
        };
        self.reading = Some((pieces, 0));
        self.began_ns = Some(now_ns);
    }

    /// The next piece to read back, if any is left.
    pub fn next_piece(&mut self) -> Option<(u64, u64)> {
        let (pieces, next) = self.reading.as_mut()?;
        let piece = pieces.get(*next).copied()?;
        *next += 1;
        Some(piece)
    }

    /// The read-back is over and another pass writes (`loops=`): what it writes is kept for
    /// the read-back after it.
    pub fn end_pass(&mut self) {
        self.reading = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backlog_takes_the_oldest_or_lowest_pieces_off_the_list() {
        let mut v = Verify::new(true);
        for o in [40, 10, 30] {
            v.wrote(o, 4);
        }
        assert_eq!((v.kept(), v.take_next(), v.kept()), (3, Some((40, 4)), 2));
        v.begin(0);
        assert_eq!(
            (v.next_piece(), v.next_piece(), v.next_piece()),
            (Some((10, 4)), Some((30, 4)), None)
        );
        let mut v = Verify::new(false);
        for o in [40, 10, 30] {
            v.wrote(o, 4);
        }
        assert_eq!((v.take_next(), v.take_next(), v.kept()), (Some((10, 4)), Some((30, 4)), 1));
    }

    #[test]
    fn random_map_jobs_read_back_in_written_order_others_by_offset() {
        let mut v = Verify::new(true);
        for o in [40, 10, 30] {
            v.wrote(o, 4);
        }
        v.begin(7);
        assert_eq!(
            (v.next_piece(), v.next_piece(), v.next_piece()),
            (Some((40, 4)), Some((10, 4)), Some((30, 4)))
        );
        assert_eq!(v.next_piece(), None);
        assert_eq!(v.began_ns, Some(7));
        // Sorted, a rewrite replacing the older piece at its offset.
        let mut v = Verify::new(false);
        for (o, l) in [(40, 4), (10, 4), (40, 8)] {
            v.wrote(o, l);
        }
        assert!(!v.reading());
        v.begin(0);
        assert_eq!(
            (v.next_piece(), v.next_piece(), v.next_piece()),
            (Some((10, 4)), Some((40, 8)), None)
        );
    }
}
