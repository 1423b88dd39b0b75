//! The drive's write-back cache (WCE on, as ATA and SCSI drives ship): written data the host
//! has been told is done but that is not yet on the media.
//!
//! Dirty data is kept as disjoint extents of sectors; a write that touches or overlaps an
//! extent joins it (overwritten sectors take no extra room), so a sequential stream is one
//! extent that is destaged as full, contiguous media writes. Each extent remembers when its
//! oldest data arrived, and destaging looks only at the few oldest (by default
//! [`DEFAULT_DESTAGE_CANDIDATES`]; the drive's parameter)
//! extents — the drive's internal queue of writes to retire — picking among them the one the
//! heads reach soonest (the caller supplies that cost), and writing at most
//! [`WriteCache::destage_limit_sectors`] of it at a time so a read waits for one chunk, not a
//! whole stream.
//!
//! When destaging happens is the drive's policy ([`super::Hdd`]): when it is idle, ahead of
//! host commands once the dirty data passes the high-water mark, and before a write that
//! does not fit (the host then waits for the media, which is what a full cache feels like).
//! `FLUSH CACHE` destages everything; a FUA write goes to the media and cleans what it
//! overwrites. Reads of data that is wholly dirty in the cache are served from it.

use std::collections::{BTreeMap, BTreeSet};

/// How many of the oldest dirty extents a drive considers for its next destage, unless its
/// parameters say otherwise.
pub const DEFAULT_DESTAGE_CANDIDATES: usize = 16;

/// The dirty data of the drive's cache.
#[derive(Clone, Debug)]
pub struct WriteCache {
    /// `start → (end, age)`: disjoint, non-touching extents of dirty sectors.
    extents: BTreeMap<u64, (u64, u64)>,
    /// `(age, start)`: the extents from oldest to newest data (pieces of one split extent
    /// share its age).
    by_age: BTreeSet<(u64, u64)>,
    next_age: u64,
    dirty_sectors: u64,
    limit_sectors: u64,
    high_water_sectors: u64,
    chunk_sectors: u64,
    candidates: usize,
}

impl WriteCache {
    /// A write cache of `limit_sectors`; destaging runs ahead of host commands from
    /// `high_water_sectors` on and writes at most `chunk_sectors` per media access.
    pub fn new(limit_sectors: u64, high_water_sectors: u64, chunk_sectors: u64) -> WriteCache {
        WriteCache {
            extents: BTreeMap::new(),
            by_age: BTreeSet::new(),
            next_age: 0,
            dirty_sectors: 0,
            limit_sectors,
            high_water_sectors: high_water_sectors.min(limit_sectors),
            chunk_sectors: chunk_sectors.max(1),
            candidates: DEFAULT_DESTAGE_CANDIDATES,
        }
    }

    /// Destages choose among the `n` oldest extents (at least one).
    pub fn with_candidates(mut self, n: usize) -> WriteCache {
        self.candidates = n.max(1);
        self
    }

    pub fn dirty_sectors(&self) -> u64 {
        self.dirty_sectors
    }

    pub fn is_empty(&self) -> bool {
        self.extents.is_empty()
    }

    pub fn limit_sectors(&self) -> u64 {
        self.limit_sectors
    }

    /// The most one destage writes.
    pub fn destage_limit_sectors(&self) -> u64 {
        self.chunk_sectors
    }

    /// Dirty data at or above the high-water mark: destage ahead of host commands.
    pub fn over_high_water(&self) -> bool {
        self.dirty_sectors > 0 && self.dirty_sectors >= self.high_water_sectors
    }

    /// Dirty sectors of `[lbn, lbn + n)` already in the cache (they take no new room).
    pub fn overlap(&self, lbn: u64, n: u64) -> u64 {
        let end = lbn + n;
        let mut covered = 0;
        for (&s, &(e, _)) in self.extents.range(..end).rev() {
            if e <= lbn {
                break;
            }
            covered += e.min(end) - s.max(lbn);
        }
        covered
    }

    /// Room for a write of `[lbn, lbn + n)` without destaging first.
    pub fn fits(&self, lbn: u64, n: u64) -> bool {
        self.has_room(n) || self.fits_over(n, self.overlap(lbn, n))
    }

    /// Room for `n` new sectors, whatever they overwrite.
    pub fn has_room(&self, n: u64) -> bool {
        self.dirty_sectors + n <= self.limit_sectors
    }

    /// Room for a write of `n` sectors, `overlap` of them dirty already.
    pub fn fits_over(&self, n: u64, overlap: u64) -> bool {
        self.dirty_sectors + n - overlap <= self.limit_sectors
    }

    /// True when every sector of `[lbn, lbn + n)` is dirty in the cache (a read hit); for
    /// `n > 0`, exactly when [`WriteCache::overlap`] is `n` (extents never touch).
    pub fn covers(&self, lbn: u64, n: u64) -> bool {
        match self.extents.range(..=lbn).next_back() {
            Some((_, &(e, _))) => e >= lbn + n,
            None => false,
        }
    }

    /// Accepts written sectors `[lbn, lbn + n)`; they join any extent they touch.
    pub fn insert(&mut self, lbn: u64, n: u64) {
        if n == 0 {
            return;
        }
        let (mut start, mut end) = (lbn, lbn + n);
        let mut age = self.next_age;
        self.next_age += 1;
        // Every extent that overlaps or touches [start, end) is absorbed.
        let touching: Vec<u64> = self
            .extents
            .range(..=end)
            .rev()
            .take_while(|(_, &(e, _))| e >= start)
            .map(|(&s, _)| s)
            .collect();
        for s in touching {
            let (e, a) = self.extents.remove(&s).expect("listed");
            self.by_age.remove(&(a, s));
            self.dirty_sectors -= e - s;
            start = start.min(s);
            end = end.max(e);
            age = age.min(a);
        }
        self.extents.insert(start, (end, age));
        self.by_age.insert((age, start));
        self.dirty_sectors += end - start;
    }

    /// Forgets dirty sectors of `[lbn, lbn + n)` (destaged, written through by FUA, or trimmed).
    pub fn clean(&mut self, lbn: u64, n: u64) {
        let end = lbn + n;
        let hit: Vec<u64> = self
            .extents
            .range(..end)
            .rev()
            .take_while(|(_, &(e, _))| e > lbn)
            .map(|(&s, _)| s)
            .collect();
        for s in hit {
            let (e, a) = self.extents.remove(&s).expect("listed");
            self.by_age.remove(&(a, s));
            self.dirty_sectors -= e - s;
            if s < lbn {
                self.put(s, lbn, a);
            }
            if e > end {
                self.put(end, e, a);
            }
        }
    }

    fn put(&mut self, s: u64, e: u64, age: u64) {
        self.extents.insert(s, (e, age));
        self.by_age.insert((age, s));
        self.dirty_sectors += e - s;
    }

    /// The next destage: among the oldest few extents (the drive's candidates), the one with the
    /// lowest `cost(start)`; returns the chunk `(lbn, sectors)` to write, from its start.
    pub fn next_destage(&self, mut cost: impl FnMut(u64) -> f64) -> Option<(u64, u64)> {
        let mut best: Option<(f64, u64)> = None;
        for &(_, s) in self.by_age.iter().take(self.candidates) {
            let c = cost(s);
            if best.is_none_or(|(b, _)| c < b) {
                best = Some((c, s));
            }
        }
        let (_, s) = best?;
        let (e, _) = self.extents[&s];
        Some((s, (e - s).min(self.chunk_sectors)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_merge_and_overwrites_take_no_room() {
        let mut w = WriteCache::new(100, 75, 8);
        w.insert(10, 5);
        w.insert(15, 5); // touches: one extent
        assert_eq!(w.dirty_sectors(), 10);
        assert!(w.covers(10, 10) && !w.covers(9, 2) && !w.covers(18, 4));
        assert!(w.fits(12, 90), "overlapping sectors are already counted");
        assert!(!w.fits(50, 91));
        w.insert(12, 4);
        assert_eq!(w.dirty_sectors(), 10);
        w.insert(40, 2);
        w.insert(20, 20); // bridges both
        assert_eq!(w.dirty_sectors(), 32);
        assert!(w.covers(10, 32));
    }

    #[test]
    fn destage_takes_the_cheapest_of_the_oldest_in_chunks() {
        let mut w = WriteCache::new(1000, 750, 8);
        w.insert(100, 20);
        w.insert(500, 4);
        w.insert(300, 4);
        // Cost: distance from sector 290.
        let d = |s: u64| (s as f64 - 290.0).abs();
        assert_eq!(w.next_destage(d), Some((300, 4)));
        w.clean(300, 4);
        assert_eq!(w.next_destage(|s| (s as f64 - 90.0).abs()), Some((100, 8)));
        w.clean(100, 8);
        assert_eq!(w.dirty_sectors(), 16);
        assert!(w.covers(108, 12));
        w.clean(110, 5); // a FUA write through the middle
        assert_eq!(w.dirty_sectors(), 11);
        assert!(w.covers(108, 2) && w.covers(115, 5) && !w.covers(110, 1));
    }

    #[test]
    fn one_candidate_destages_in_arrival_order() {
        let mut w = WriteCache::new(1000, 750, 8).with_candidates(1);
        w.insert(500, 4);
        w.insert(100, 4);
        w.insert(300, 4);
        // The heads are at 300: a choosing drive would take 300 first.
        let near_300 = |s: u64| (s as f64 - 300.0).abs();
        for want in [500, 100, 300] {
            assert_eq!(w.next_destage(near_300), Some((want, 4)));
            w.clean(want, 4);
        }
        assert!(w.is_empty());
        assert_eq!(WriteCache::new(10, 5, 1).with_candidates(0).candidates, 1);
    }

    #[test]
    fn high_water_and_empty() {
        let mut w = WriteCache::new(100, 50, 8);
        assert!(!w.over_high_water() && w.is_empty());
        w.insert(0, 49);
        assert!(!w.over_high_water());
        w.insert(60, 1);
        assert!(w.over_high_water());
        w.clean(0, 1000);
        assert!(w.is_empty() && w.dirty_sectors() == 0);
    }
}
