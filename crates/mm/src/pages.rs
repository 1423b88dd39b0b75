//! The page cache's contents: for every file, which pages are cached and in what state, kept
//! as extents (runs of pages in one state), never per page or per system call, so a 100 GiB
//! file costs what its distinct runs cost.
//!
//! A page is **reading** (locked, its read in flight), **clean**, **dirty**, or **under
//! writeback** (possibly dirty again since it was sent). Every extent also sits on one of
//! the two LRU lists of Linux's page reclaim (`mm/vmscan.c`, 2.6.28+ split LRU): new pages
//! enter the **inactive** list; a first access sets `PG_referenced`, a second moves them to
//! the **active** list (`mark_page_accessed`); reclaim takes clean pages from the cold end of
//! the inactive list (`shrink_inactive_list`), rotating pages it cannot free (dirty, under
//! I/O) back to its head, and refills the inactive list from the cold end of the active list
//! while the active list is the larger (`inactive_file_is_low`). An extent's place on its
//! list is a generation number: pages added or touched together share one, so a readahead
//! window or a run of written pages is one extent, and adjacent extents alike in every
//! respect merge.
//!
//! Counters (cached, active, dirty, writeback, reading) are kept per file, per backing
//! device and for the machine, as `NR_FILE_DIRTY`, `BDI_RECLAIMABLE` and the others are.

use std::collections::{BTreeMap, BTreeSet};

use elevator_core::Nanos;

/// A file of the simulated machine.
pub type FileId = u32;

/// How many pages share one LRU generation (1 MiB): the resolution of LRU order.
pub const GEN_QUANTUM_PAGES: u64 = 256;
/// An I/O the page cache is waiting for.
pub type IoTag = u32;

/// The state of a run of pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageState {
    /// Its read is in flight (`PG_locked`, not `PG_uptodate`).
    Reading(IoTag),
    Clean,
    Dirty,
    /// Being written back (`PG_writeback`); `dirty` if written again since it was sent.
    Writeback {
        io: IoTag,
        dirty: bool,
    },
}

impl PageState {
    fn is_dirty(self) -> bool {
        matches!(self, PageState::Dirty | PageState::Writeback { dirty: true, .. })
    }
    fn is_writeback(self) -> bool {
        matches!(self, PageState::Writeback { .. })
    }
    /// Uptodate: readable without I/O.
    pub fn uptodate(self) -> bool {
        !matches!(self, PageState::Reading(_))
    }
}

/// Which LRU list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum List {
    Inactive,
    Active,
}

/// A run of pages `[start, end)` alike in state and LRU position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub end: u64,
    pub state: PageState,
    pub list: List,
    pub referenced: bool,
    pub gen: u64,
}

/// Page counts of one scope (a file, a backing device, the machine).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub cached: u64,
    pub active: u64,
    pub dirty: u64,
    pub writeback: u64,
    pub reading: u64,
}

impl Counts {
    /// Adds every count of `c` (`add`) or takes it away.
    fn apply_counts(&mut self, c: &Counts, add: bool) {
        for (x, y) in [
            (&mut self.cached, c.cached),
            (&mut self.active, c.active),
            (&mut self.dirty, c.dirty),
            (&mut self.writeback, c.writeback),
            (&mut self.reading, c.reading),
        ] {
            if add {
                *x += y;
            } else {
                *x -= y;
            }
        }
    }

    fn apply(&mut self, e: &Extent, len: u64, add: bool) {
        let f = |x: &mut u64, on: bool| {
            if on {
                if add {
                    *x += len
                } else {
                    *x -= len
                }
            }
        };
        f(&mut self.cached, true);
        f(&mut self.active, e.list == List::Active);
        f(&mut self.dirty, e.state.is_dirty());
        f(&mut self.writeback, e.state.is_writeback());
        f(&mut self.reading, matches!(e.state, PageState::Reading(_)));
    }

    pub fn inactive(&self) -> u64 {
        self.cached - self.active
    }
}

/// One file's cached pages.
#[derive(Clone, Debug, Default)]
pub struct FilePages {
    exts: BTreeMap<u64, Extent>,
    /// Pages carrying `PG_readahead`.
    markers: BTreeSet<u64>,
    /// Starts of the extents in state [`PageState::Dirty`] (writeback finds them without
    /// walking clean ones).
    dirty_starts: BTreeSet<u64>,
    pub counts: Counts,
    /// The accounting domain its counters are also kept in: its backing device's, or a
    /// cgroup's writeback domain on it (the page cache's user decides which).
    pub bdi: u32,
    /// When the file went from clean to dirty (`inode->dirtied_when`).
    pub dirtied_when: Option<Nanos>,
    /// Where cyclic writeback goes on (`mapping->writeback_index`).
    pub writeback_index: u64,
}

/// The page cache of one machine.
#[derive(Clone, Debug, Default)]
pub struct Pages {
    files: Vec<FilePages>,
    /// Every extent by (list, generation): the LRU order.
    lru: BTreeSet<(List, u64, FileId, u64)>,
    next_gen: u64,
    /// Pages added or moved under the current generation: LRU order is kept to
    /// [`GEN_QUANTUM_PAGES`], so pages that arrive together share a generation and merge.
    gen_pages: u64,
    pub total: Counts,
    per_bdi: Vec<Counts>,
    /// [`Pages::modify`]'s list of the pieces of its range, kept to be reused (it runs once
    /// or more per page-cache call; an allocation each time showed in profiles).
    pieces: Vec<(u64, Extent)>,
}

impl Pages {
    pub fn new() -> Pages {
        Pages::default()
    }

    /// Registers a file on backing device `bdi`.
    pub fn add_file(&mut self, bdi: u32) -> FileId {
        self.files.push(FilePages { bdi, ..FilePages::default() });
        self.ensure_domain(bdi);
        (self.files.len() - 1) as FileId
    }

    /// Makes room for the counters of accounting domain `bdi`.
    fn ensure_domain(&mut self, bdi: u32) {
        if self.per_bdi.len() <= bdi as usize {
            self.per_bdi.resize(bdi as usize + 1, Counts::default());
        }
    }

    pub fn file(&self, f: FileId) -> &FilePages {
        &self.files[f as usize]
    }

    pub fn file_mut(&mut self, f: FileId) -> &mut FilePages {
        &mut self.files[f as usize]
    }

    pub fn files(&self) -> usize {
        self.files.len()
    }

    pub fn bdi_counts(&self, bdi: u32) -> Counts {
        self.per_bdi.get(bdi as usize).copied().unwrap_or_default()
    }

    /// Moves file `f`'s pages, as counted, to accounting domain `bdi` (an inode attached to
    /// another writeback domain).
    pub fn move_file(&mut self, f: FileId, bdi: u32) {
        self.ensure_domain(bdi);
        let file = &mut self.files[f as usize];
        let c = file.counts;
        self.per_bdi[file.bdi as usize].apply_counts(&c, false);
        self.per_bdi[bdi as usize].apply_counts(&c, true);
        file.bdi = bdi;
    }

    /// A fresh LRU generation (the head of the lists).
    pub fn new_gen(&mut self) -> u64 {
        self.next_gen += 1;
        self.gen_pages = 0;
        self.next_gen
    }

    /// The generation for `pages` pages arriving at the head of the lists now: the current
    /// one until [`GEN_QUANTUM_PAGES`] have arrived under it. LRU order within one quantum
    /// is by file and offset, which for a stream is its arrival order.
    pub fn gen_for(&mut self, pages: u64) -> u64 {
        if self.next_gen == 0 || self.gen_pages >= GEN_QUANTUM_PAGES {
            self.new_gen();
        }
        self.gen_pages += pages;
        self.next_gen
    }

    /// The extent holding page `p`, if cached: `(start, extent)`.
    pub fn get(&self, f: FileId, p: u64) -> Option<(u64, Extent)> {
        let (&s, &e) = self.files[f as usize].exts.range(..=p).next_back()?;
        (e.end > p).then_some((s, e))
    }

    /// Extents overlapping `[a, b)`, in order (clipped to the range; none if it is empty).
    pub fn overlapping(&self, f: FileId, a: u64, b: u64) -> Vec<(u64, Extent)> {
        let exts = &self.files[f as usize].exts;
        let mut out = Vec::new();
        if a >= b {
            return out;
        }
        if let Some((_, &e)) = exts.range(..a).next_back() {
            if e.end > a {
                out.push((a, Extent { end: e.end.min(b), ..e }));
            }
        }
        for (&s, &e) in exts.range(a..b) {
            out.push((s, Extent { end: e.end.min(b), ..e }));
        }
        out
    }

    /// The first page at or after `a` (below `b`) not cached, if any.
    pub fn first_hole(&self, f: FileId, a: u64, b: u64) -> Option<u64> {
        let mut p = a;
        for (s, e) in self.overlapping(f, a, b) {
            if s > p {
                return Some(p);
            }
            p = e.end;
        }
        (p < b).then_some(p)
    }

    /// The runs of `[a, b)` not cached.
    pub fn holes(&self, f: FileId, a: u64, b: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut p = a;
        for (s, e) in self.overlapping(f, a, b) {
            if s > p {
                out.push((p, s));
            }
            p = e.end;
        }
        if p < b {
            out.push((p, b));
        }
        out
    }

    /// The last page at or below `p` (scanning at most `max` pages) not cached; see
    /// [`crate::readahead::CacheView::prev_hole`].
    pub fn prev_hole(&self, f: FileId, p: u64, max: u64) -> u64 {
        let (mut i, mut left) = (p, max);
        loop {
            if left == 0 {
                return i;
            }
            let Some((s, _)) = self.get(f, i) else { return i };
            let take = (i - s + 1).min(left);
            left -= take;
            if take == i + 1 {
                return u64::MAX; // walked past page 0
            }
            i -= take;
        }
    }

    fn account(&mut self, f: FileId, e: &Extent, len: u64, add: bool) {
        let file = &mut self.files[f as usize];
        file.counts.apply(e, len, add);
        self.total.apply(e, len, add);
        self.per_bdi[file.bdi as usize].apply(e, len, add);
    }

    /// The run `e` at `s` takes its place in the LRU order and, if dirty, among the runs
    /// writeback finds.
    fn index(&mut self, f: FileId, s: u64, e: &Extent) {
        self.lru.insert((e.list, e.gen, f, s));
        if e.state == PageState::Dirty {
            self.files[f as usize].dirty_starts.insert(s);
        }
    }

    /// The run `e` at `s` leaves the LRU order and the dirty runs.
    fn unindex(&mut self, f: FileId, s: u64, e: &Extent) {
        self.lru.remove(&(e.list, e.gen, f, s));
        if e.state == PageState::Dirty {
            self.files[f as usize].dirty_starts.remove(&s);
        }
    }

    /// New pages `e` at `s` are cached.
    fn link(&mut self, f: FileId, s: u64, e: Extent) {
        self.index(f, s, &e);
        self.account(f, &e, e.end - s, true);
        self.files[f as usize].exts.insert(s, e);
    }

    /// The pages `e` at `s` are dropped from the cache.
    fn unlink(&mut self, f: FileId, s: u64, e: &Extent) {
        self.files[f as usize].exts.remove(&s);
        self.unindex(f, s, e);
        self.account(f, e, e.end - s, false);
    }

    /// Cuts extent `e` at `s` in two at `p` (inside it); returns the second piece. Both keep
    /// the extent's state and LRU place, so only the second one is new to the indexes.
    fn split(&mut self, f: FileId, s: u64, e: Extent, p: u64) -> Extent {
        debug_assert!(s < p && p < e.end);
        let exts = &mut self.files[f as usize].exts;
        exts.get_mut(&s).expect("cached").end = p;
        exts.insert(p, e);
        self.index(f, p, &e);
        e
    }

    /// Forgets the extent at `s` as a run of its own once its pages have joined a neighbour
    /// that is alike: the pages stay cached, so the counts do not change.
    fn absorbed(&mut self, f: FileId, s: u64, e: &Extent) {
        self.files[f as usize].exts.remove(&s);
        self.unindex(f, s, e);
    }

    /// Merges the extent `cur` at `s` with its neighbours where they are alike; returns where
    /// the merged extent ends.
    fn merge_around(&mut self, f: FileId, s: u64, cur: Extent) -> u64 {
        let exts = &self.files[f as usize].exts;
        let mut start = s;
        if let Some((&ps, pe)) = exts.range(..s).next_back() {
            if pe.end == s && alike(pe, &cur) {
                self.absorbed(f, s, &cur);
                start = ps;
            }
        }
        let mut end = cur.end;
        if let Some(&ne) = self.files[f as usize].exts.get(&cur.end) {
            if alike(&cur, &ne) {
                self.absorbed(f, cur.end, &ne);
                end = ne.end;
            }
        }
        if start != s || end != cur.end {
            self.files[f as usize].exts.get_mut(&start).expect("cached").end = end;
        }
        end
    }

    /// Gives the pages of the extent at `s` (now `old`) the state and LRU place of `new`
    /// (same pages), touching only the indexes whose keys change.
    fn replace(&mut self, f: FileId, s: u64, old: &Extent, new: Extent) {
        debug_assert_eq!(old.end, new.end);
        if (old.list, old.gen) != (new.list, new.gen) {
            self.lru.remove(&(old.list, old.gen, f, s));
            self.lru.insert((new.list, new.gen, f, s));
        }
        self.account(f, old, old.end - s, false);
        self.account(f, &new, new.end - s, true);
        let file = &mut self.files[f as usize];
        match (old.state == PageState::Dirty, new.state == PageState::Dirty) {
            (true, false) => {
                file.dirty_starts.remove(&s);
            }
            (false, true) => {
                file.dirty_starts.insert(s);
            }
            _ => {}
        }
        *file.exts.get_mut(&s).expect("cached") = new;
    }

    /// Applies `change` to every cached extent piece of `[a, b)`: it returns the new extent
    /// (its `end` is kept) or `None` to drop the pages. Neighbours merge afterwards.
    pub fn modify(
        &mut self,
        f: FileId,
        a: u64,
        b: u64,
        mut change: impl FnMut(u64, &Extent) -> Option<Extent>,
    ) {
        if a >= b {
            return;
        }
        // The extents overlapping [a, b), found with one descent (back from the last one
        // that starts below `b`), the first cut at `a` and the last at `b`.
        let mut pieces = std::mem::take(&mut self.pieces);
        pieces.clear();
        pieces.extend(
            self.files[f as usize]
                .exts
                .range(..b)
                .rev()
                .take_while(|(_, e)| e.end > a)
                .map(|(&s, &e)| (s, e)),
        );
        pieces.reverse();
        if let Some(first) = pieces.first_mut().filter(|(s, _)| *s < a) {
            *first = (a, self.split(f, first.0, first.1, a));
        }
        if let Some(last) = pieces.last_mut().filter(|(_, e)| e.end > b) {
            self.split(f, last.0, last.1, b);
            last.1.end = b;
        }
        // The pieces kept, with their new values, move to the front.
        let mut kept = 0;
        for i in 0..pieces.len() {
            let (s, e) = pieces[i];
            if let Some(mut n) = change(s, &e) {
                n.end = e.end;
                if n != e {
                    self.replace(f, s, &e, n);
                }
                pieces[kept] = (s, n);
                kept += 1;
            } else {
                self.unlink(f, s, &e);
                let file = &mut self.files[f as usize];
                let gone: Vec<u64> = file.markers.range(s..e.end).copied().collect();
                for m in gone {
                    file.markers.remove(&m);
                }
            }
        }
        // A piece the merge of the one before it took in is gone.
        let mut merged_to = 0;
        for &(s, e) in &pieces[..kept] {
            if s >= merged_to {
                merged_to = self.merge_around(f, s, e);
            }
        }
        self.pieces = pieces;
        if self.files[f as usize].counts.dirty == 0 {
            self.files[f as usize].dirtied_when = None;
        }
    }

    /// Adds the pages `[a, b)` (none of which may be cached) in `state`, on the inactive
    /// list at generation `gen`.
    pub fn insert(&mut self, f: FileId, a: u64, b: u64, state: PageState, gen: u64) {
        debug_assert!(self.overlapping(f, a, b).is_empty(), "pages already cached");
        if a >= b {
            return;
        }
        let e = Extent { end: b, state, list: List::Inactive, referenced: false, gen };
        self.link(f, a, e);
        self.merge_around(f, a, e);
    }

    pub fn set_marker(&mut self, f: FileId, p: u64) {
        self.files[f as usize].markers.insert(p);
    }

    /// Takes (clears) the first `PG_readahead` marker in `[a, b)`, if any.
    pub fn take_marker(&mut self, f: FileId, a: u64, b: u64) -> Option<u64> {
        let m = *self.files[f as usize].markers.range(a..b).next()?;
        self.files[f as usize].markers.remove(&m);
        Some(m)
    }

    pub fn has_marker(&self, f: FileId, a: u64, b: u64) -> bool {
        self.files[f as usize].markers.range(a..b).next().is_some()
    }

    /// The first page of `[a, b)` carrying `PG_readahead`.
    pub fn first_marker(&self, f: FileId, a: u64, b: u64) -> Option<u64> {
        if a >= b {
            return None;
        }
        self.files[f as usize].markers.range(a..b).next().copied()
    }

    /// `mark_page_accessed` over `[a, b)`: unreferenced pages become referenced,
    /// referenced inactive pages move to the head of the active list.
    pub fn touch(&mut self, f: FileId, a: u64, b: u64) {
        let gen = self.gen_for(b.saturating_sub(a));
        self.modify(f, a, b, |_, e| {
            Some(match (e.list, e.referenced) {
                (_, false) => Extent { referenced: true, ..*e },
                (List::Inactive, true) => {
                    Extent { list: List::Active, referenced: false, gen, ..*e }
                }
                (List::Active, true) => *e,
            })
        });
    }

    /// Page reclaim: frees up to `want` clean pages from the cold end of the inactive list
    /// (refilling it from the active list while that is larger), rotating pages it cannot
    /// free; returns how many it freed. At most `scan_limit` extents are looked at.
    pub fn reclaim(&mut self, want: u64, scan_limit: usize) -> u64 {
        let mut freed = 0;
        let mut scanned = 0;
        while freed < want && scanned < scan_limit {
            // inactive_file_is_low: deactivate from the cold end of the active list.
            if self.total.active > self.total.inactive() {
                if let Some(&(List::Active, _, f, s)) =
                    self.lru.range((List::Active, 0, 0, 0)..).next()
                {
                    let gen = self.new_gen();
                    let e = self.files[f as usize].exts[&s];
                    let take = (e.end - s).min(want.max(32));
                    self.modify(f, s, s + take, |_, e| {
                        Some(Extent { list: List::Inactive, referenced: false, gen, ..*e })
                    });
                    scanned += 1;
                    continue;
                }
            }
            let Some(&(List::Inactive, _, f, s)) = self.lru.iter().next() else { break };
            scanned += 1;
            let e = self.files[f as usize].exts[&s];
            if e.state == PageState::Clean {
                let take = (e.end - s).min(want - freed);
                self.modify(f, s, s + take, |_, _| None);
                freed += take;
            } else {
                // Dirty or under I/O: back to the head of the inactive list.
                let gen = self.gen_for(e.end - s);
                self.modify(f, s, e.end, |_, e| Some(Extent { gen, ..*e }));
            }
        }
        freed
    }

    /// Every extent of file `f` (start, extent), for writeback and tests.
    pub fn extents(&self, f: FileId) -> impl Iterator<Item = (u64, &Extent)> + '_ {
        self.files[f as usize].exts.iter().map(|(&s, e)| (s, e))
    }

    /// The first dirty run at or after page `from` (below `limit`): `(start, end)`, the
    /// run ending at the first page that is not dirty and not already under writeback, or
    /// once it is `max_len` pages long.
    pub fn next_dirty_run(
        &self,
        f: FileId,
        from: u64,
        limit: u64,
        max_len: u64,
    ) -> Option<(u64, u64)> {
        if from >= limit {
            return None;
        }
        let file = &self.files[f as usize];
        // The dirty extent holding `from`, or the first one after it.
        let start = match file.exts.range(..=from).next_back() {
            Some((&s, e)) if e.end > from && e.state == PageState::Dirty => s,
            _ => *file.dirty_starts.range(from..limit).next()?,
        };
        let begin = start.max(from);
        let mut end = file.exts[&start].end;
        // Dirty extents that follow without a gap extend the run.
        while end < limit && end - begin < max_len {
            match file.exts.get(&end) {
                Some(e) if e.state == PageState::Dirty => end = e.end,
                _ => break,
            }
        }
        Some((begin, end.min(limit).min(begin.saturating_add(max_len))))
    }
}

fn alike(a: &Extent, b: &Extent) -> bool {
    a.state == b.state && a.list == b.list && a.referenced == b.referenced && a.gen == b.gen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pages_with_file() -> (Pages, FileId) {
        let mut p = Pages::new();
        let f = p.add_file(0);
        (p, f)
    }

    #[test]
    fn empty_and_reversed_ranges_are_empty() {
        let mut p = Pages::new();
        let f = p.add_file(0);
        let g = p.new_gen();
        p.insert(f, 10, 20, PageState::Clean, g);
        assert!(p.overlapping(f, 15, 15).is_empty());
        assert!(p.overlapping(f, 18, 12).is_empty());
        assert_eq!(p.first_hole(f, 30, 5), None);
        assert!(p.holes(f, 30, 5).is_empty());
    }

    #[test]
    fn extents_split_merge_and_count() {
        let (mut p, f) = pages_with_file();
        let g = p.new_gen();
        p.insert(f, 0, 100, PageState::Reading(7), g);
        assert_eq!(p.total.reading, 100);
        // Part of the read completes... no: reads complete whole; make it clean.
        p.modify(f, 0, 100, |_, e| Some(Extent { state: PageState::Clean, ..*e }));
        assert_eq!((p.total.cached, p.total.reading), (100, 0));
        assert_eq!(p.extents(f).count(), 1, "one run");
        // Dirty the middle: three extents; clean it again: back to one.
        p.modify(f, 40, 60, |_, e| Some(Extent { state: PageState::Dirty, ..*e }));
        assert_eq!(p.extents(f).count(), 3);
        assert_eq!(p.total.dirty, 20);
        assert_eq!(p.bdi_counts(0).dirty, 20);
        assert_eq!(p.file(f).counts.dirty, 20);
        p.modify(f, 40, 60, |_, e| Some(Extent { state: PageState::Clean, ..*e }));
        assert_eq!(p.extents(f).count(), 1);
        assert_eq!(p.holes(f, 90, 120), vec![(100, 120)]);
        assert_eq!(p.first_hole(f, 0, 150), Some(100));
        assert_eq!(p.first_hole(f, 0, 100), None);
    }

    #[test]
    fn a_second_touch_activates() {
        let (mut p, f) = pages_with_file();
        let g = p.new_gen();
        p.insert(f, 0, 10, PageState::Clean, g);
        p.touch(f, 0, 5);
        assert_eq!(p.total.active, 0);
        p.touch(f, 0, 3);
        assert_eq!(p.total.active, 3);
        assert!(p.get(f, 4).unwrap().1.referenced);
    }

    #[test]
    fn reclaim_takes_clean_cold_pages_and_spares_dirty_ones() {
        let (mut p, f) = pages_with_file();
        let g1 = p.new_gen();
        p.insert(f, 0, 10, PageState::Dirty, g1);
        let g2 = p.new_gen();
        p.insert(f, 10, 30, PageState::Clean, g2);
        let g3 = p.new_gen();
        p.insert(f, 30, 40, PageState::Clean, g3);
        let freed = p.reclaim(25, 100);
        assert_eq!(freed, 25);
        assert_eq!(p.total.cached, 15);
        assert_eq!(p.total.dirty, 10, "dirty pages stay");
        assert!(p.get(f, 35).is_some() && p.get(f, 20).is_none());
    }

    /// The indexes (LRU order, dirty starts, counts) say what the extents say. (Alike
    /// neighbours may stay apart: merging looks one extent to each side of a change.)
    fn check_indexes(p: &Pages) {
        let mut lru = BTreeSet::new();
        let mut total = Counts::default();
        for (f, file) in p.files.iter().enumerate() {
            let mut counts = Counts::default();
            let mut dirty_starts = BTreeSet::new();
            let mut prev: Option<(u64, Extent)> = None;
            for (&s, e) in &file.exts {
                assert!(e.end > s, "empty extent at {s}");
                if let Some((ps, pe)) = prev {
                    assert!(pe.end <= s, "extents at {ps} and {s} overlap");
                }
                lru.insert((e.list, e.gen, f as FileId, s));
                counts.apply(e, e.end - s, true);
                total.apply(e, e.end - s, true);
                if e.state == PageState::Dirty {
                    dirty_starts.insert(s);
                }
                prev = Some((s, *e));
            }
            assert_eq!(file.counts, counts, "file {f}");
            assert_eq!(file.dirty_starts, dirty_starts, "file {f}");
        }
        assert_eq!(p.lru, lru);
        assert_eq!(p.total, total);
    }

    proptest::proptest! {
        /// Random inserts, state changes, touches and reclaims over two files keep the
        /// indexes in step with the extents.
        #[test]
        fn indexes_follow_the_extents(
            ops in proptest::collection::vec((0u8..6, 0u32..2, 0u64..64, 1u64..12), 1..120),
        ) {
            let mut p = Pages::new();
            p.add_file(0);
            p.add_file(1);
            for (op, f, a, len) in ops {
                let b = a + len;
                match op {
                    0 => {
                        let gen = p.gen_for(len);
                        for (s, e) in p.holes(f, a, b) {
                            p.insert(f, s, e, PageState::Clean, gen);
                        }
                    }
                    1 => p.modify(f, a, b, |_, e| Some(Extent { state: PageState::Dirty, ..*e })),
                    2 => p.modify(f, a, b, |_, e| {
                        Some(match e.state {
                            PageState::Dirty => Extent { state: PageState::Writeback { io: 1, dirty: false }, ..*e },
                            PageState::Writeback { .. } => Extent { state: PageState::Clean, ..*e },
                            _ => *e,
                        })
                    }),
                    3 => p.touch(f, a, b),
                    4 => {
                        p.reclaim(len, 8);
                    }
                    _ => p.modify(f, a, b, |s, e| (s % 3 != 0).then_some(*e)),
                }
                check_indexes(&p);
            }
        }
    }

    #[test]
    fn dirty_runs_and_history() {
        let (mut p, f) = pages_with_file();
        let g = p.new_gen();
        p.insert(f, 0, 10, PageState::Dirty, g);
        p.insert(f, 10, 20, PageState::Writeback { io: 1, dirty: false }, g);
        p.insert(f, 20, 25, PageState::Dirty, g);
        assert_eq!(p.next_dirty_run(f, 0, 100, 1000), Some((0, 10)));
        assert_eq!(p.next_dirty_run(f, 5, 100, 1000), Some((5, 10)));
        assert_eq!(p.next_dirty_run(f, 0, 100, 4), Some((0, 4)));
        assert_eq!(p.next_dirty_run(f, 10, 100, 1000), Some((20, 25)));
        assert_eq!(p.next_dirty_run(f, 25, 100, 1000), None);
        assert_eq!(p.prev_hole(f, 24, 100), u64::MAX, "cached down to page 0");
        assert_eq!(p.prev_hole(f, 24, 10), 14);
        assert_eq!(p.prev_hole(f, 30, 10), 30);
    }
}
