//! The on-drive cache: a few segments, each a contiguous range of sectors, replaced LRU.
//! After a read the drive keeps reading the following sectors into the read's segment
//! (prefetch / read-ahead, DiskSim's "read-ahead over requested") until the segment is full
//! or the next media command preempts it, so a sequential read arriving shortly after is a
//! hit (data already read) or waits only until the head has passed its sectors. Read-ahead
//! advances at the zone's sustained rate (sector time × (spt + track skew) / spt, i.e. head
//! switches folded in). Writes invalidate overlapping cached data; write-back data is kept in
//! a separate dirty list by the state machine and is not served to reads (documented
//! simplification).

/// A cached range `[start, end)`; while `stream` is `Some((since_ns, sector_ns))` the head is
/// still reading ahead into it from `end`, up to `limit`.
#[derive(Clone, Copy, Debug)]
pub struct Segment {
    pub start: u64,
    pub end: u64,
    pub limit: u64,
    pub stream: Option<(f64, f64)>,
}

impl Segment {
    /// End of the valid data at `now`.
    #[inline]
    pub fn end_at(&self, now_ns: f64) -> u64 {
        match self.stream {
            Some((since, sector_ns)) if now_ns > since => {
                (self.end + ((now_ns - since) / sector_ns) as u64).min(self.limit)
            }
            _ => self.end,
        }
    }
}

/// What a lookup found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lookup {
    Miss,
    /// All sectors are in the cache now.
    Hit,
    /// The sectors are being read ahead; the last one is in at this time.
    Streaming {
        ready_ns: f64,
    },
}

/// Bits of the bucket filter over the segments (buckets of 2^`BUCKET_SHIFT` sectors, 2 MiB).
const FILTER_BITS: u32 = 10;
const BUCKET_SHIFT: u32 = 12;

#[inline]
fn bucket_slot(b: u64) -> usize {
    (b.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - FILTER_BITS)) as usize
}

#[derive(Clone, Debug)]
pub struct Cache {
    /// Most recently used first; never longer than `segments`. Changed only through the
    /// methods below, which keep `slots` in step.
    pub segs: Vec<Segment>,
    segments: usize,
    segment_sectors: u64,
    /// Per hashed bucket, how many segments' `[start, limit)` touch it: a read whose first
    /// block's bucket counts zero cannot hit (kept as segments come and go, so a queue pass
    /// need not rebuild it).
    slots: Vec<u32>,
}

impl Cache {
    pub fn new(segments: u32, segment_sectors: u64) -> Cache {
        Cache {
            segs: Vec::with_capacity(segments as usize + 1),
            segments: segments as usize,
            segment_sectors,
            slots: vec![0; 1 << FILTER_BITS],
        }
    }

    /// Counts `s` in (`add`) or out of the bucket filter.
    fn count(&mut self, s: &Segment, add: bool) {
        for b in (s.start >> BUCKET_SHIFT)..=(s.limit.max(s.start + 1) - 1) >> BUCKET_SHIFT {
            let k = bucket_slot(b);
            if add {
                self.slots[k] += 1;
            } else {
                self.slots[k] -= 1;
            }
        }
    }

    /// False if no segment can hold `lbn` (no false negatives).
    #[inline]
    pub fn may_hold(&self, lbn: u64) -> bool {
        self.slots[bucket_slot(lbn >> BUCKET_SHIFT)] != 0
    }

    pub fn enabled(&self) -> bool {
        self.segments > 0 && self.segment_sectors > 0
    }

    #[inline]
    pub fn lookup(&self, lbn: u64, n: u64, now_ns: f64) -> Lookup {
        for s in &self.segs {
            if s.start <= lbn && lbn + n <= s.end_at(now_ns) {
                return Lookup::Hit;
            }
            // A read that starts inside the window being read ahead rides on it: the head
            // keeps streaming past the segment's limit into the read (DiskSim's partial hit
            // on an active prefetch) — if it comes while the prefetch is still going. Once the
            // prefetch has reached its limit the heads stop reading, and whatever lies past
            // the limit has gone by under them: a miss.
            if let Some((since, sector_ns)) = s.stream {
                let active = now_ns < since + (s.limit - s.end) as f64 * sector_ns;
                if s.start <= lbn && lbn <= s.limit && (lbn + n <= s.limit || active) {
                    let ready = since + (lbn + n - s.end) as f64 * sector_ns;
                    return Lookup::Streaming { ready_ns: ready };
                }
            }
        }
        Lookup::Miss
    }

    /// Stops any read-ahead at `now`; returns the LBN the head stopped at (the next sector
    /// it would have read), if it was reading ahead.
    pub fn stop_readahead(&mut self, now_ns: f64) -> Option<u64> {
        let s = self.streaming_mut()?;
        s.end = s.end_at(now_ns);
        s.stream = None;
        Some(s.end)
    }

    /// The segment being read ahead into: only the most recently used one can be, since
    /// [`Cache::read_done`] stops read-ahead before it puts a segment first.
    #[inline]
    pub fn streaming(&self) -> Option<&Segment> {
        debug_assert!(self.segs.iter().skip(1).all(|s| s.stream.is_none()));
        self.segs.first().filter(|s| s.stream.is_some())
    }

    fn streaming_mut(&mut self) -> Option<&mut Segment> {
        debug_assert!(self.segs.iter().skip(1).all(|s| s.stream.is_none()));
        self.segs.first_mut().filter(|s| s.stream.is_some())
    }

    /// Drops cached data overlapping `[lbn, lbn+n)`.
    pub fn invalidate(&mut self, lbn: u64, n: u64) {
        let mut i = 0;
        while i < self.segs.len() {
            let s = self.segs[i];
            if lbn + n <= s.start || s.end.max(s.limit) <= lbn || s.end <= lbn {
                i += 1;
            } else {
                self.count(&s, false);
                self.segs.remove(i);
            }
        }
    }

    /// After a media read of `[lbn, end)` finishing at `done`, the drive reads ahead from
    /// `end` at `sector_ns` per sector into that read's segment, up to `total_sectors`.
    pub fn read_done(
        &mut self,
        lbn: u64,
        end: u64,
        done_ns: f64,
        sector_ns: f64,
        total_sectors: u64,
    ) {
        if !self.enabled() {
            return;
        }
        self.stop_readahead(done_ns);
        // Reuse a segment this read continues (sequential stream), else take the LRU one.
        let i = self.segs.iter().position(|s| s.start <= lbn && lbn <= s.end);
        let mut seg = match i {
            Some(i) => {
                let seg = self.segs.remove(i);
                self.count(&seg, false);
                seg
            }
            None => Segment { start: lbn, end, limit: end, stream: None },
        };
        seg.end = seg.end.max(end);
        seg.start = seg.start.max(seg.end.saturating_sub(self.segment_sectors));
        seg.limit = (seg.start + self.segment_sectors).max(seg.end).min(total_sectors);
        // Keep streaming: slide the window so at least half a segment lies ahead.
        let ahead = self.segment_sectors / 2;
        if seg.limit < seg.end + ahead {
            seg.limit = (seg.end + ahead).min(total_sectors);
            seg.start = seg.limit.saturating_sub(self.segment_sectors).min(lbn);
        }
        seg.stream = (seg.limit > seg.end).then_some((done_ns, sector_ns));
        self.count(&seg, true);
        self.segs.insert(0, seg);
        while self.segs.len() > self.segments {
            let old = self.segs.pop().expect("longer than segments");
            self.count(&old, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_ahead_fills_over_time_and_stops() {
        let mut c = Cache::new(2, 100);
        c.read_done(0, 8, 1000.0, 10.0, 10_000);
        assert_eq!(c.lookup(0, 8, 1000.0), Lookup::Hit);
        assert_eq!(c.lookup(8, 8, 1000.0), Lookup::Streaming { ready_ns: 1080.0 });
        assert_eq!(c.lookup(8, 8, 1080.0), Lookup::Hit);
        // The prefetch reaches its limit (sector 100, the segment full) at 1000 + 92 × 10 ns:
        // a read past the limit rides on it before then, misses after.
        assert_eq!(c.lookup(96, 8, 1900.0), Lookup::Streaming { ready_ns: 1960.0 });
        assert_eq!(c.lookup(96, 8, 1930.0), Lookup::Miss);
        assert_eq!(c.lookup(90, 8, 1930.0), Lookup::Hit);
        assert_eq!(c.stop_readahead(1040.0), Some(12));
        assert_eq!(c.lookup(8, 8, 5000.0), Lookup::Miss);
        assert_eq!(c.lookup(0, 12, 5000.0), Lookup::Hit);
        c.invalidate(0, 1);
        assert_eq!(c.lookup(0, 1, 5000.0), Lookup::Miss);
    }
}
