//! The array controller's write-back cache: written data held in (battery-backed)
//! controller memory and destaged to the member disks later.
//!
//! Dirty data is kept per member, in member addresses, as disjoint extents (a write that
//! touches one joins it), each remembering when its oldest data arrived. Destaging follows
//! the rules of the entry-level controllers of the era (LSI/Engenio, sold as IBM DS3000 /
//! DS4000, Sun StorageTek, Dell MD3000): flushing **starts** when dirty data passes
//! [`FLUSH_START_PERCENT`] of the cache and **stops** below [`FLUSH_STOP_PERCENT`] (both 80 %
//! by default there), data older than [`FLUSH_AGE_NS`] is flushed anyway, and a host `FLUSH`
//! (SYNCHRONIZE CACHE) flushes everything. Each member is destaged least recently written
//! data first (LRW: the oldest extent, and a run of written data is one extent), at most
//! [`DESTAGE_DEPTH`] writes in flight per member, each within one segment of the stripe (the
//! chunk; [`LINEAR_SEGMENT_BYTES`] for concatenations), so host reads still find room in the
//! member queues and the disks' own command queueing orders the few in flight. Sorting the whole dirty set by address (IBM's WOW, 2005, in
//! high-end arrays) destages random writes several times faster; entry-level controllers of
//! the era did not. A host write that finds the cache full waits (in arrival order) until
//! destaging frees room.
//!
//! Deviation: data being destaged stays readable and counted until its write completes; a
//! host write over it then is simply dirty again (its bytes may be counted twice for that
//! time). The flush thresholds and age are fixed, documented constants, not parameters.

use std::collections::{BTreeMap, BTreeSet};

use elevator_core::{Nanos, NS_PER_SEC};

/// Destaging starts above this share of the cache dirty (LSI/Engenio default "start
/// flushing" 80 %).
pub const FLUSH_START_PERCENT: u64 = 80;
/// ... and stops below this one (LSI/Engenio default "stop flushing" 80 %).
pub const FLUSH_STOP_PERCENT: u64 = 80;
/// Dirty data older than this is destaged whatever the fill (assumption: controllers of the
/// era flushed on a timer of about ten seconds).
pub const FLUSH_AGE_NS: Nanos = 10 * NS_PER_SEC;
/// Destage writes in flight per member: two keep a disk busy between completions, and a
/// host read queues behind at most two (background flushing yields to host I/O;
/// assumption).
pub const DESTAGE_DEPTH: u32 = 2;
/// The destage unit of a concatenation (a striped array destages per chunk).
pub const LINEAR_SEGMENT_BYTES: u64 = 512 << 10;

/// Names one destage write in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DestageToken {
    start: u64,
    seq: u64,
}

/// One member's dirty data.
#[derive(Clone, Debug, Default)]
struct MemberDirty {
    /// `start → (end, since_ns)`, disjoint and not touching, member byte addresses.
    extents: BTreeMap<u64, (u64, Nanos)>,
    /// `(since_ns, start)` of every extent, oldest first.
    by_age: BTreeSet<(Nanos, u64)>,
    /// Ranges being written to the member now: `(start, destage number) → end` (a range
    /// written again and destaged again can be in flight twice).
    in_flight: BTreeMap<(u64, u64), u64>,
}

impl MemberDirty {
    fn remove(&mut self, s: u64) -> (u64, Nanos) {
        let (e, since) = self.extents.remove(&s).expect("an extent");
        self.by_age.remove(&(since, s));
        (e, since)
    }

    fn put(&mut self, s: u64, e: u64, since: Nanos) {
        self.extents.insert(s, (e, since));
        self.by_age.insert((since, s));
    }

    /// Bytes of `[start, end)` in dirty extents or being destaged.
    fn covered(&self, start: u64, end: u64) -> u64 {
        let mut n = 0;
        for (&s, &(e, _)) in self.extents.range(..end).rev() {
            if e <= start {
                break;
            }
            n += e.min(end) - s.max(start);
        }
        n
    }

    fn in_flight_covers(&self, start: u64, end: u64) -> bool {
        self.in_flight.range(..=(start, u64::MAX)).any(|(&(s, _), &e)| s <= start && e >= end)
    }
}

/// The dirty data of a write-back controller cache.
#[derive(Clone, Debug)]
pub struct WriteBack {
    members: Vec<MemberDirty>,
    /// Dirty bytes, in flight to the members included.
    dirty_bytes: u64,
    capacity_bytes: u64,
    /// Destage writes stay within aligned segments of this size.
    segment_bytes: u64,
    flushing: bool,
    /// A host FLUSH waits for everything dirty before this time.
    flush_before_ns: Option<Nanos>,
    /// Destage writes issued, for reports.
    pub destages: u64,
    pub destaged_bytes: u64,
}

impl WriteBack {
    /// A cache of `capacity_bytes` over `members`, destaging within aligned segments of
    /// `segment_bytes` (a multiple of 512).
    pub fn new(members: usize, capacity_bytes: u64, segment_bytes: u64) -> WriteBack {
        WriteBack {
            members: vec![MemberDirty::default(); members],
            dirty_bytes: 0,
            capacity_bytes,
            segment_bytes: segment_bytes.max(512),
            flushing: false,
            flush_before_ns: None,
            destages: 0,
            destaged_bytes: 0,
        }
    }

    pub fn dirty_bytes(&self) -> u64 {
        self.dirty_bytes
    }

    /// Room for `new_bytes` more dirty bytes.
    pub fn fits(&self, new_bytes: u64) -> bool {
        self.dirty_bytes + new_bytes <= self.capacity_bytes
    }

    /// Bytes of the member range that would be new to the cache.
    pub fn new_bytes(&self, member: usize, start: u64, end: u64) -> u64 {
        (end - start) - self.members[member].covered(start, end)
    }

    /// True when the member range is wholly dirty (or being destaged): a read hit.
    pub fn covers(&self, member: usize, start: u64, end: u64) -> bool {
        let m = &self.members[member];
        m.extents.range(..=start).next_back().is_some_and(|(_, &(e, _))| e >= end)
            || m.in_flight_covers(start, end)
    }

    /// Takes written data `[start, end)` of `member` at `now_ns`.
    pub fn insert(&mut self, member: usize, start: u64, end: u64, now_ns: Nanos) {
        if start >= end {
            return;
        }
        let m = &mut self.members[member];
        let (mut s0, mut e0, mut since) = (start, end, now_ns);
        let touching: Vec<u64> = m
            .extents
            .range(..=end)
            .rev()
            .take_while(|(_, &(e, _))| e >= start)
            .map(|(&s, _)| s)
            .collect();
        for s in touching {
            let (e, t) = m.remove(s);
            self.dirty_bytes -= e - s;
            s0 = s0.min(s);
            e0 = e0.max(e);
            since = since.min(t);
        }
        m.put(s0, e0, since);
        self.dirty_bytes += e0 - s0;
    }

    /// Drops dirty data of `[start, end)` (overwritten on the media by a FUA write).
    pub fn clean(&mut self, member: usize, start: u64, end: u64) {
        let m = &mut self.members[member];
        let hit: Vec<u64> = m
            .extents
            .range(..end)
            .rev()
            .take_while(|(_, &(e, _))| e > start)
            .map(|(&s, _)| s)
            .collect();
        for s in hit {
            let (e, since) = m.remove(s);
            self.dirty_bytes -= e - s;
            if s < start {
                m.put(s, start, since);
                self.dirty_bytes += start - s;
            }
            if e > end {
                m.put(end, e, since);
                self.dirty_bytes += e - end;
            }
        }
    }

    /// A host FLUSH arrived at `now_ns`: everything dirty now must reach the media.
    pub fn flush_requested(&mut self, now_ns: Nanos) {
        self.flush_before_ns = Some(self.flush_before_ns.map_or(now_ns, |t| t.max(now_ns)));
    }

    /// True while data dirty before the last FLUSH is still in the cache or in flight.
    pub fn flush_pending(&self) -> bool {
        let Some(before) = self.flush_before_ns else { return false };
        self.members.iter().any(|m| {
            !m.in_flight.is_empty() || m.by_age.first().is_some_and(|&(since, _)| since <= before)
        })
    }

    /// The FLUSH is satisfied: forget it.
    pub fn flush_done(&mut self) {
        self.flush_before_ns = None;
    }

    /// When the oldest dirty data turns [`FLUSH_AGE_NS`] old, if there is any.
    pub fn age_deadline_ns(&self) -> Option<Nanos> {
        self.members
            .iter()
            .filter_map(|m| m.by_age.first().map(|&(since, _)| since))
            .min()
            .map(|since| since + FLUSH_AGE_NS)
    }

    /// The next destage write for `member` at `now_ns`, if the rules call for one and the
    /// member has fewer than [`DESTAGE_DEPTH`] in flight: its member range and the token to
    /// hand to [`WriteBack::destaged`].
    pub fn next_destage(
        &mut self,
        member: usize,
        in_flight: u32,
        now_ns: Nanos,
    ) -> Option<(u64, u64, DestageToken)> {
        let start_at = self.capacity_bytes / 100 * FLUSH_START_PERCENT;
        let stop_at = self.capacity_bytes / 100 * FLUSH_STOP_PERCENT;
        if self.dirty_bytes > start_at {
            self.flushing = true;
        } else if self.dirty_bytes <= stop_at {
            self.flushing = false;
        }
        if in_flight >= DESTAGE_DEPTH {
            return None;
        }
        let m = &mut self.members[member];
        let oldest = m.by_age.first().map(|&(since, _)| since)?;
        let aged = now_ns >= oldest.saturating_add(FLUSH_AGE_NS);
        let flush = self.flush_before_ns.is_some_and(|b| oldest <= b);
        if !(self.flushing || aged || flush) {
            return None;
        }
        // Least recently written first.
        let &(_, s) = m.by_age.first().expect("has an oldest");
        let (e, since) = m.remove(s);
        let end = e.min((s / self.segment_bytes + 1) * self.segment_bytes);
        if end < e {
            m.put(end, e, since);
        }
        let token = DestageToken { start: s, seq: self.destages };
        m.in_flight.insert((s, token.seq), end);
        self.destages += 1;
        self.destaged_bytes += end - s;
        Some((s, end, token))
    }

    /// The destage `token` on `member` is on the media.
    pub fn destaged(&mut self, member: usize, token: DestageToken) {
        let end = self.members[member]
            .in_flight
            .remove(&(token.start, token.seq))
            .expect("a destage in flight");
        self.dirty_bytes -= end - token.start;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_merge_and_reads_of_them_hit() {
        let mut w = WriteBack::new(2, 1 << 20, 65536);
        w.insert(0, 4096, 8192, 10);
        w.insert(0, 8192, 16384, 20);
        assert_eq!(w.dirty_bytes(), 12288);
        assert!(w.covers(0, 4096, 16384) && !w.covers(1, 4096, 8192) && !w.covers(0, 0, 8192));
        assert_eq!(w.new_bytes(0, 0, 8192), 4096);
        w.clean(0, 6144, 10240);
        assert_eq!(w.dirty_bytes(), 8192);
        assert!(!w.covers(0, 4096, 16384) && w.covers(0, 10240, 16384));
    }

    #[test]
    fn destaging_starts_at_the_threshold_oldest_first_and_frees_room() {
        let cap = 1 << 20;
        let mut w = WriteBack::new(1, cap, 65536);
        // Below 80 %: nothing to do until the data ages.
        w.insert(0, 100_000, 104_096, 0);
        w.insert(0, 900_000, 904_096, 1);
        assert_eq!(w.next_destage(0, 0, 1), None);
        let aged = w.next_destage(0, 0, FLUSH_AGE_NS).unwrap();
        assert_eq!((aged.0, aged.1), (100_000, 104_096), "the oldest");
        assert!(w.covers(0, 100_000, 104_096), "readable while it is written");
        w.destaged(0, aged.2);
        assert_eq!(w.dirty_bytes(), 4096);
        // Past 80 %: flushing, oldest first, in chunks.
        w.insert(0, 0, 850_000, 5);
        assert!(w.dirty_bytes() > cap / 100 * 80);
        let a = w.next_destage(0, 0, 6).unwrap();
        assert_eq!((a.0, a.1), (900_000, 904_096), "written at time 1");
        let b = w.next_destage(0, 1, 6).unwrap();
        assert_eq!((b.0, b.1), (0, 65536), "then a segment of the newer run");
        w.destaged(0, a.2);
        let c = w.next_destage(0, 1, 6).unwrap();
        assert_eq!((c.0, c.1), (65536, 131072));
        assert_eq!(w.next_destage(0, DESTAGE_DEPTH, 6), None, "depth limit");
    }

    #[test]
    fn a_flush_destages_what_was_dirty_before_it() {
        let mut w = WriteBack::new(2, 1 << 30, 65536);
        w.insert(0, 0, 4096, 1);
        w.insert(1, 0, 4096, 1);
        w.flush_requested(2);
        assert!(w.flush_pending());
        let a = w.next_destage(0, 0, 3).unwrap();
        let b = w.next_destage(1, 0, 3).unwrap();
        w.insert(0, 8192, 12288, 4); // newer: not part of the flush
        assert!(w.flush_pending());
        w.destaged(0, a.2);
        w.destaged(1, b.2);
        assert!(!w.flush_pending());
        w.flush_done();
        assert_eq!(w.next_destage(0, 0, 5), None);
    }
}
