//! On-demand readahead, as `mm/readahead.c` of Linux 2.6.23–3.x does it (Wu Fengguang's
//! algorithm, with 2.6.31's context readahead as an option).
//!
//! The state of one open file is four numbers ([`RaState`]): the current window `start` and
//! `size` in pages, `async_size` (the tail of the window whose first page carries the
//! `PG_readahead` marker: reading that page starts the next window asynchronously) and
//! `prev_pos`, where the last read ended. A read that misses the cache calls
//! [`ondemand_readahead`] synchronously (`page_cache_sync_readahead`); a read that finds the
//! marker calls it asynchronously (`page_cache_async_readahead`, `hit_marker`). The window
//! opens from the request size ([`init_ra_size`]: ×4 for small requests, ×2 for medium, the
//! maximum for large), ramps up ×4 then ×2 per window ([`next_ra_size`]) to `ra_pages`
//! (`read_ahead_kb / 4`), and a read exactly at the expected offset pushes it forward; a
//! marker hit without matching state (interleaved streams on one file) recovers the window
//! size from the cached pages ahead; a miss right after the previous read starts a fresh
//! window; otherwise, with context readahead, the cached history behind the read decides
//! whether it is a stream ([`try_context_readahead`]); a lone small random read is read as
//! is.
//!
//! Page-cache queries go through [`CacheView`] so the algorithm is tested alone against the
//! kernel's arithmetic. Units: pages (the kernel's `pgoff_t`); `prev_pos` in bytes.

/// The page size the model uses everywhere (x86's).
pub const PAGE_BYTES: u64 = 4096;

/// One open file's readahead state (`struct file_ra_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaState {
    /// Where the current window starts, pages.
    pub start: u64,
    /// Its size, pages.
    pub size: u64,
    /// The asynchronous tail: the marker sits at `start + size - async_size`.
    pub async_size: u64,
    /// The maximum window (`ra_pages`): `read_ahead_kb / 4`, doubled by
    /// `POSIX_FADV_SEQUENTIAL`, 0 to turn readahead off.
    pub ra_pages: u64,
    /// Where the previous read ended, bytes; `None` before the first read (the kernel's -1).
    pub prev_pos: Option<u64>,
}

impl RaState {
    pub fn new(ra_pages: u64) -> RaState {
        RaState { start: 0, size: 0, async_size: 0, ra_pages, prev_pos: None }
    }
}

/// What a readahead decision asks the page cache to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readahead {
    /// Nothing (readahead off, or the marker hit went nowhere).
    None,
    /// `ra_submit`: read the missing pages of `[start, start + size)` and mark the page at
    /// `start + size - async_size` (if it is read now) with `PG_readahead`.
    Window { start: u64, size: u64, async_size: u64 },
    /// `__do_page_cache_readahead(offset, req_size, 0)`: read the missing pages of the
    /// request as is, no marker, state untouched.
    Plain { start: u64, size: u64 },
}

/// The page-cache questions readahead asks of one file.
pub trait CacheView {
    /// `radix_tree_next_hole(index, max_scan)`: the first page index in
    /// `[index, index + max_scan)` not in the cache, or `index + max_scan` if all are.
    fn next_hole(&self, index: u64, max_scan: u64) -> u64;
    /// `radix_tree_prev_hole(index, max_scan)`: the first page index at or below `index`
    /// (scanning at most `max_scan` pages down) not in the cache; `index - max_scan` if all
    /// are; `u64::MAX` if the scan ran off page 0 (the kernel's wrap to `ULONG_MAX`).
    fn prev_hole(&self, index: u64, max_scan: u64) -> u64;
    /// `max_sane_readahead(nr)`: no more than half of what is free plus inactive file pages.
    fn max_sane(&self, nr: u64) -> u64;
}

/// `roundup_pow_of_two`.
fn roundup_pow_of_two(x: u64) -> u64 {
    x.max(1).next_power_of_two()
}

/// `get_init_ra_size`: the first window for a request of `size` pages, `max` the limit.
pub fn init_ra_size(size: u64, max: u64) -> u64 {
    let newsize = roundup_pow_of_two(size);
    if newsize <= max / 32 {
        newsize * 4
    } else if newsize <= max / 4 {
        newsize * 2
    } else {
        max
    }
}

/// `get_next_ra_size`: the window after one of `cur` pages.
pub fn next_ra_size(cur: u64, max: u64) -> u64 {
    let newsize = if cur < max / 16 { 4 * cur } else { 2 * cur };
    newsize.min(max)
}

/// `count_history_pages`: cached pages contiguously behind `offset` (at most `max`).
fn count_history_pages(view: &dyn CacheView, offset: u64, max: u64) -> u64 {
    let head = view.prev_hole(offset - 1, max);
    (offset - 1).wrapping_sub(head)
}

/// `try_context_readahead` (2.6.31): a read with cached history behind it is a stream; a
/// stream from the start of the file gets twice its history.
pub fn try_context_readahead(
    ra: &mut RaState,
    view: &dyn CacheView,
    offset: u64,
    req_size: u64,
    max: u64,
) -> bool {
    let mut size = count_history_pages(view, offset, max);
    if size == 0 {
        return false;
    }
    if size >= offset {
        size *= 2;
    }
    ra.start = offset;
    ra.size = init_ra_size(size + req_size, max);
    ra.async_size = ra.size;
    true
}

/// Which of `ondemand_readahead`'s cases decided: what a report counts to show why
/// readahead did or did not keep ahead of a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RaCase {
    /// Readahead is off (`ra_pages` 0): nothing.
    Off,
    /// A fresh window: the start of the file, an oversize read or a sequential miss.
    Initial,
    /// The expected offset: the window ramps up and moves on.
    Sequential,
    /// A marker without matching state (interleaved readers of one file).
    Marker,
    /// The cached history behind the read (2.6.31's context readahead).
    Context,
    /// A lone small random read: read as is.
    Random,
}

/// `ondemand_readahead`: the readahead for a read of `req_size` pages at page `offset`
/// that missed the cache (`hit_marker` false) or found the `PG_readahead` marker (true),
/// and which of its cases decided. Updates `ra` as the kernel does; `prev_pos` is the
/// caller's to update after the read.
pub fn ondemand_readahead(
    ra: &mut RaState,
    view: &dyn CacheView,
    hit_marker: bool,
    offset: u64,
    req_size: u64,
    context_readahead: bool,
) -> (Readahead, RaCase) {
    // With readahead off the caller reads the missing page alone (`readpage`).
    let max = view.max_sane(ra.ra_pages);
    if max == 0 {
        return (Readahead::None, RaCase::Off);
    }
    let initial = |ra: &mut RaState| {
        ra.start = offset;
        ra.size = init_ra_size(req_size, max);
        ra.async_size = if ra.size > req_size { ra.size - req_size } else { ra.size };
    };
    let case = 'readit: {
        // Start of file.
        if offset == 0 {
            initial(ra);
            break 'readit RaCase::Initial;
        }
        // The expected offset: assume sequential access, ramp up and push the window.
        if offset == ra.start + ra.size - ra.async_size || offset == ra.start + ra.size {
            ra.start += ra.size;
            ra.size = next_ra_size(ra.size, max);
            ra.async_size = ra.size;
            break 'readit RaCase::Sequential;
        }
        // A marker without matching state (interleaved reads): the pages ahead tell how
        // far the stream had read.
        if hit_marker {
            let start = view.next_hole(offset + 1, max);
            if start == 0 || start - offset > max {
                return (Readahead::None, RaCase::Marker);
            }
            ra.start = start;
            ra.size = start - offset; // the old async_size
            ra.size += req_size;
            ra.size = next_ra_size(ra.size, max);
            ra.async_size = ra.size;
            break 'readit RaCase::Marker;
        }
        // Oversize read.
        if req_size > max {
            initial(ra);
            break 'readit RaCase::Initial;
        }
        // Sequential cache miss.
        let prev_page = ra.prev_pos.map_or(u64::MAX, |p| p / PAGE_BYTES);
        if offset.wrapping_sub(prev_page) <= 1 {
            initial(ra);
            break 'readit RaCase::Initial;
        }
        // The cached history may reveal a stream the state lost track of.
        if context_readahead && try_context_readahead(ra, view, offset, req_size, max) {
            break 'readit RaCase::Context;
        }
        // A standalone small random read: read as is, leave the state alone.
        return (Readahead::Plain { start: offset, size: req_size }, RaCase::Random);
    };
    // Will this read hit the marker it makes? Then merge the next window into this one.
    if offset == ra.start && ra.size == ra.async_size {
        ra.async_size = next_ra_size(ra.size, max);
        ra.size += ra.async_size;
    }
    (Readahead::Window { start: ra.start, size: ra.size, async_size: ra.async_size }, case)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// A file whose cached pages are listed, with plenty of free memory.
    struct Pages(BTreeSet<u64>);

    impl CacheView for Pages {
        fn next_hole(&self, index: u64, max_scan: u64) -> u64 {
            (index..index + max_scan).find(|p| !self.0.contains(p)).unwrap_or(index + max_scan)
        }
        fn prev_hole(&self, index: u64, max_scan: u64) -> u64 {
            let mut i = index;
            for _ in 0..max_scan {
                if !self.0.contains(&i) {
                    return i;
                }
                if i == 0 {
                    return u64::MAX;
                }
                i -= 1;
            }
            i
        }
        fn max_sane(&self, nr: u64) -> u64 {
            nr
        }
    }

    fn window(r: Readahead) -> (u64, u64, u64) {
        match r {
            Readahead::Window { start, size, async_size } => (start, size, async_size),
            other => panic!("expected a window, got {other:?}"),
        }
    }

    #[test]
    fn window_sizes_follow_the_kernel_arithmetic() {
        // 128 KiB maximum (32 pages): x4 up to max/32 (1 page), x2 up to max/4 (8 pages)
        // after rounding up to a power of two, the maximum above.
        assert_eq!(init_ra_size(1, 32), 4);
        assert_eq!(init_ra_size(2, 32), 4);
        assert_eq!(init_ra_size(3, 32), 8);
        assert_eq!(init_ra_size(8, 32), 16);
        assert_eq!(init_ra_size(9, 32), 32);
        assert_eq!(init_ra_size(16, 32), 32);
        // 4 MiB maximum (1024 pages): up to 32 pages x4, up to 256 x2.
        assert_eq!(init_ra_size(16, 1024), 64);
        assert_eq!(init_ra_size(32, 1024), 128);
        assert_eq!(init_ra_size(64, 1024), 128);
        assert_eq!(init_ra_size(256, 1024), 512);
        assert_eq!(init_ra_size(257, 1024), 1024);
        // Ramp-up: x4 below max/16, x2 above, capped.
        assert_eq!(next_ra_size(4, 32), 8);
        assert_eq!(next_ra_size(1, 32), 4);
        assert_eq!(next_ra_size(16, 32), 32);
        assert_eq!(next_ra_size(32, 1024), 128);
        assert_eq!(next_ra_size(64, 1024), 128);
        assert_eq!(next_ra_size(512, 1024), 1024);
    }

    /// dd of 4 KiB pages from the start of a file with the 128 KiB default: the kernel's
    /// well-known sequence (traced with the readahead tracepoints): 4/3, then the marker
    /// hit at page 1 pushes 8/8 at 4, then 16/16 at 12, then 32/32 at 28, 32/32 at 60...
    #[test]
    fn a_sequential_reader_ramps_up_to_the_maximum() {
        let mut cached = Pages(BTreeSet::new());
        let mut ra = RaState::new(32);
        let mut windows = Vec::new();
        for page in 0..200u64 {
            let missing = !cached.0.contains(&page);
            let marker =
                windows.iter().any(|&(s, z, a): &(u64, u64, u64)| page == s + z - a) && !missing;
            let r = if missing {
                ondemand_readahead(&mut ra, &cached, false, page, 1, false).0
            } else if marker && !windows.iter().any(|&(s, _, _)| s > page) {
                ondemand_readahead(&mut ra, &cached, true, page, 1, false).0
            } else {
                Readahead::None
            };
            if let Readahead::Window { start, size, async_size } = r {
                windows.push((start, size, async_size));
                cached.0.extend(start..start + size);
            }
            ra.prev_pos = Some((page + 1) * PAGE_BYTES);
        }
        assert_eq!(
            &windows[..6],
            &[(0, 4, 3), (4, 8, 8), (12, 16, 16), (28, 32, 32), (60, 32, 32), (92, 32, 32)]
        );
    }

    #[test]
    fn a_large_first_read_merges_the_next_window_into_its_own() {
        // A 64 KiB read at page 0, 128 KiB max: 16 pages -> init 32, async 16; the read
        // starts where the window does and covers the marker? No: size != async_size.
        let cached = Pages(BTreeSet::new());
        let mut ra = RaState::new(32);
        assert_eq!(
            window(ondemand_readahead(&mut ra, &cached, false, 0, 16, false).0),
            (0, 32, 16)
        );
        // An oversize read of 64 pages at 100: the maximum, whose async tail equals the
        // size, so the next window is merged in: 32 + 32.
        let mut ra = RaState::new(32);
        ra.prev_pos = Some(10 * PAGE_BYTES);
        assert_eq!(
            window(ondemand_readahead(&mut ra, &cached, false, 100, 64, false).0),
            (100, 64, 32)
        );
    }

    #[test]
    fn random_reads_are_read_as_is_unless_history_says_stream() {
        let mut cached = Pages(BTreeSet::new());
        let mut ra = RaState::new(32);
        ra.prev_pos = Some(500 * PAGE_BYTES);
        assert_eq!(
            ondemand_readahead(&mut ra, &cached, false, 1000, 1, true).0,
            Readahead::Plain { start: 1000, size: 1 }
        );
        // Context readahead: 8 pages cached right behind page 1000 (another thread's
        // stream): a window of init(8 + 1) = 32, all of it asynchronous, so the read at its
        // start merges the next one in: 32 + 32.
        cached.0.extend(992..1000);
        assert_eq!(
            window(ondemand_readahead(&mut ra, &cached, false, 1000, 1, true).0),
            (1000, 64, 32)
        );
        // Without it (before 2.6.31), the same read is plain.
        let mut ra = RaState::new(32);
        ra.prev_pos = Some(500 * PAGE_BYTES);
        assert_eq!(
            ondemand_readahead(&mut ra, &cached, false, 1000, 1, false).0,
            Readahead::Plain { start: 1000, size: 1 }
        );
        // History from page 0: twice the history, init(80 + 1) = 256, merged with the next
        // window of 512.
        let mut ra = RaState::new(1024);
        ra.prev_pos = Some(5000 * PAGE_BYTES);
        let from_zero = Pages((0..40).collect());
        assert_eq!(
            window(ondemand_readahead(&mut ra, &from_zero, false, 40, 1, true).0),
            (40, 768, 512)
        );
    }

    /// Each of `ondemand_readahead`'s cases is named as it decides.
    #[test]
    fn each_case_is_named() {
        let empty = Pages(BTreeSet::new());
        let case = |ra: &mut RaState, cached: &Pages, marker: bool, at: u64, ctx: bool| {
            ondemand_readahead(ra, cached, marker, at, 1, ctx).1
        };
        let mut ra = RaState::new(32);
        assert_eq!(case(&mut ra, &empty, false, 0, false), RaCase::Initial, "start of file");
        assert_eq!(case(&mut ra, &empty, true, 1, false), RaCase::Sequential, "expected offset");
        let mut off = RaState::new(0);
        assert_eq!(case(&mut off, &empty, false, 7, false), RaCase::Off);
        let mut lost = RaState::new(32);
        lost.start = 5000;
        let ahead = Pages((100..132).collect());
        assert_eq!(case(&mut lost, &ahead, true, 100, false), RaCase::Marker, "interleaved");
        let mut ra = RaState::new(32);
        ra.prev_pos = Some(500 * PAGE_BYTES);
        assert_eq!(case(&mut ra, &empty, false, 1000, true), RaCase::Random);
        let behind = Pages((992..1000).collect());
        assert_eq!(case(&mut ra, &behind, false, 1000, true), RaCase::Context);
        let mut ra = RaState::new(32);
        ra.prev_pos = Some(999 * PAGE_BYTES);
        assert_eq!(case(&mut ra, &empty, false, 1000, false), RaCase::Initial, "sequential miss");
    }

    #[test]
    fn interleaved_streams_recover_from_the_marker() {
        // Pages 100..132 cached with the marker at 100 from another reader's window; this
        // reader's state points elsewhere. Hitting the marker at 100 with 1 page: next hole
        // at 132, so the old async size was 32, +1, ramped: 64 capped to 32.
        let cached = Pages((100..132).collect());
        let mut ra = RaState::new(32);
        ra.start = 5000;
        ra.size = 8;
        ra.async_size = 8;
        assert_eq!(
            window(ondemand_readahead(&mut ra, &cached, true, 100, 1, false).0),
            (132, 32, 32)
        );
    }

    #[test]
    fn readahead_off_reads_nothing_extra() {
        let cached = Pages(BTreeSet::new());
        let mut ra = RaState::new(0);
        assert_eq!(ondemand_readahead(&mut ra, &cached, false, 0, 1, true).0, Readahead::None);
    }
}
