//! Dirty memory: the thresholds of `mm/page-writeback.c` and the arithmetic of writer
//! throttling (`balance_dirty_pages`) in its two forms.
//!
//! **Thresholds** (`get_dirty_limits` / `global_dirty_limits`): `dirty_ratio` and
//! `dirty_background_ratio` percent of the dirtyable memory (free plus file pages), or
//! `dirty_bytes` / `dirty_background_bytes` when set; the background threshold is at most half
//! the dirty one. A backing device's share of the dirty threshold (`bdi_thresh`) follows its
//! share of recent writeback completions, a floating proportion whose period doubles with
//! the threshold (`calc_period_shift`, `lib/proportions.c`).
//!
//! **2.6.3x throttling** (`Balance::Legacy` in `vm`, 2.6.32–3.1): a writer past the ratelimit calls
//! `balance_dirty_pages`; while its device is over `bdi_thresh` (lowered by up to 1/8 for
//! tasks that dirty a lot, `task_dirty_limit`) and the machine over the midpoint of the
//! background and dirty thresholds, the writer itself writes back `write_chunk` pages
//! (1.5 × the ratelimit) and sleeps 1, 2, 4 ... up to 100 ms between tries.
//!
//! **IO-less throttling** ([`pos_ratio`] and [`BdiBandwidth`], 3.2+, as read from 3.10): the
//! writer never writes back; it sleeps `pages_dirtied / task_ratelimit`, where
//! `task_ratelimit = dirty_ratelimit × pos_ratio`: `pos_ratio` is a cubic of how far the dirty
//! pages are from the setpoint between the free-run ceiling and the limit, scaled by the
//! device's own position, and `dirty_ratelimit` tracks the device's write bandwidth divided
//! among its writers, estimated every 200 ms. Pauses are bounded by `MAX_PAUSE` (200 ms) and
//! by how fast the device drains its dirty pages.
//!
//! Integer arithmetic and jiffies as in the kernel, so the control laws behave the same.

/// `RATELIMIT_CALC_SHIFT`: fixed-point fraction bits of the position ratio.
pub const RATELIMIT_CALC_SHIFT: u32 = 10;
/// Dirty pages an idle device is assumed to write per second before it has written any
/// (`INIT_BW`: 100 MB/s).
pub const INIT_BW_PAGES: u64 = 100 << (20 - 12);
/// `DIRTY_POLL_THRESH`: 128 KiB of pages.
pub const DIRTY_POLL_THRESH: u64 = 32;

/// The `vm.dirty_*` sysctls (names and units as in `/proc/sys/vm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirtySysctl {
    pub dirty_ratio: u32,
    pub dirty_background_ratio: u32,
    /// 0 = use the ratio.
    pub dirty_bytes: u64,
    pub dirty_background_bytes: u64,
    pub dirty_expire_centisecs: u32,
    pub dirty_writeback_centisecs: u32,
}

impl DirtySysctl {
    /// The defaults of 2.6.30 and later: 20 % / 10 %, 30 s expiry, 5 s flusher period.
    pub const DEFAULT: DirtySysctl = DirtySysctl {
        dirty_ratio: 20,
        dirty_background_ratio: 10,
        dirty_bytes: 0,
        dirty_background_bytes: 0,
        dirty_expire_centisecs: 3000,
        dirty_writeback_centisecs: 500,
    };
}

/// Background and dirty thresholds, pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub background: u64,
    pub dirty: u64,
}

/// `global_dirty_limits` for `dirtyable` pages; `min_ratio_5` applies 2.6.3x's floor of
/// 5 % on `dirty_ratio`.
pub fn global_dirty_limits(s: &DirtySysctl, dirtyable: u64, min_ratio_5: bool) -> Limits {
    let dirty = if s.dirty_bytes > 0 {
        s.dirty_bytes.div_ceil(4096)
    } else {
        let ratio = if min_ratio_5 { s.dirty_ratio.max(5) } else { s.dirty_ratio };
        u64::from(ratio) * dirtyable / 100
    };
    let mut background = if s.dirty_background_bytes > 0 {
        s.dirty_background_bytes.div_ceil(4096)
    } else {
        u64::from(s.dirty_background_ratio) * dirtyable / 100
    };
    if background >= dirty {
        background = dirty / 2;
    }
    Limits { background, dirty }
}

/// `ilog2`.
fn ilog2(x: u64) -> u32 {
    63 - x.max(1).leading_zeros()
}

/// A floating proportion (`lib/proportions.c`): each participant's share of recent events,
/// where "recent" halves every `2^(shift-1)` events of all participants.
#[derive(Clone, Copy, Debug)]
pub struct Proportions {
    shift: u32,
    events: u64,
}

/// One participant's events.
#[derive(Clone, Copy, Debug, Default)]
pub struct PropLocal {
    events: u64,
    period: u64,
}

impl Proportions {
    /// With the period of a dirty threshold of `dirty_total` pages (`calc_period_shift`).
    pub fn new(dirty_total: u64) -> Proportions {
        Proportions { shift: (2 + ilog2(dirty_total.saturating_sub(1))).max(2), events: 0 }
    }

    fn norm(&self, l: &mut PropLocal) {
        let half = 1u64 << (self.shift - 1);
        let period = self.events & !(half - 1);
        if l.period != period {
            let bits = (period - l.period) >> (self.shift - 1);
            l.events = if bits >= 64 { 0 } else { l.events >> bits };
            l.period = period;
        }
    }

    /// `n` events of `l`, counted as the kernel counts them one at a time (the local
    /// count halves at each half-period boundary it crosses).
    pub fn inc(&mut self, l: &mut PropLocal, mut n: u64) {
        let half = 1u64 << (self.shift - 1);
        while n > 0 {
            self.norm(l);
            let room = half - (self.events & (half - 1));
            let k = n.min(room);
            l.events += k;
            self.events += k;
            n -= k;
        }
    }

    /// `l`'s share: `(numerator, denominator)`.
    pub fn fraction(&self, l: &mut PropLocal) -> (u64, u64) {
        let half = 1u64 << (self.shift - 1);
        self.norm(l);
        (l.events, half + (self.events & (half - 1)))
    }
}

/// 2.6.3x's `ratelimit_pages`: pages a task dirties between checks: total pages / (CPUs ×
/// 32), at least 16, at most 4 MiB.
pub fn legacy_ratelimit_pages(total_pages: u64, cpus: u64) -> u64 {
    (total_pages / (cpus.max(1) * 32)).clamp(16, 1024)
}

/// 2.6.3x's `sync_writeback_pages`: how much a throttled writer writes back itself.
pub fn legacy_write_chunk(dirtied: u64, ratelimit: u64) -> u64 {
    let d = dirtied.max(ratelimit);
    d + d / 2
}

/// The 2.6.3x device threshold: `bdi_thresh` from the device's writeout share, clipped to
/// what the machine's threshold leaves (`clip_bdi_dirty_limit`) and lowered by up to 1/8 by
/// the task's share of recent dirtying (`task_dirty_limit`, never below half).
pub fn legacy_bdi_thresh(
    dirty: u64,
    bdi_share: (u64, u64),
    machine_dirty_and_writeback: u64,
    bdi_dirty_and_writeback: u64,
    task_share: (u64, u64),
) -> u64 {
    let mut bdi = dirty * bdi_share.0 / bdi_share.1.max(1);
    let avail = dirty.saturating_sub(machine_dirty_and_writeback) + bdi_dirty_and_writeback;
    bdi = bdi.min(avail);
    let inv = (bdi >> 3) * task_share.0 / task_share.1.max(1);
    (bdi - inv.min(bdi)).max(bdi / 2)
}

/// `dirty_freerun_ceiling`: below this no writer is throttled at all (3.2+).
pub fn freerun_ceiling(l: Limits) -> u64 {
    (l.dirty + l.background) / 2
}

/// `bdi_position_ratio` (3.2+, fixed point `1 << RATELIMIT_CALC_SHIFT` = 1.0): how much to
/// scale the writers' rate given the machine's dirty pages `dirty` against `limits` (and
/// the hard `limit`), the device's `bdi_dirty` against its `bdi_thresh`, and its average
/// write bandwidth `write_bw` (pages/s).
pub fn pos_ratio(
    l: Limits,
    limit: u64,
    dirty: u64,
    bdi_thresh: u64,
    bdi_dirty: u64,
    write_bw: u64,
) -> u64 {
    let freerun = freerun_ceiling(l);
    if dirty >= limit {
        return 0;
    }
    let setpoint = (freerun + limit) / 2;
    let x: i64 =
        ((setpoint as i64 - dirty as i64) << RATELIMIT_CALC_SHIFT) / (limit - setpoint + 1) as i64;
    let mut pos: i64 = x;
    pos = (pos * x) >> RATELIMIT_CALC_SHIFT;
    pos = (pos * x) >> RATELIMIT_CALC_SHIFT;
    pos += 1 << RATELIMIT_CALC_SHIFT;
    let mut pos = pos.max(0) as u64;
    let thresh = l.dirty;
    let mut bdi_thresh = bdi_thresh.min(thresh);
    bdi_thresh = bdi_thresh.max((limit - dirty) / 8);
    let xs = (bdi_thresh << 16) / (thresh + 1);
    let bdi_setpoint = (setpoint * xs) >> 16;
    let span = ((thresh - bdi_thresh + 8 * write_bw) * xs) >> 16;
    let x_intercept = bdi_setpoint + span;
    if bdi_dirty < x_intercept - span / 4 {
        pos = pos * (x_intercept - bdi_dirty) / (x_intercept - bdi_setpoint + 1);
    } else {
        pos /= 4;
    }
    let x_intercept = bdi_thresh / 2;
    if bdi_dirty < x_intercept {
        if bdi_dirty > x_intercept / 8 {
            pos = pos * x_intercept / bdi_dirty;
        } else {
            pos *= 8;
        }
    }
    pos
}

/// A device's write bandwidth and throttle rate (3.2+; pages and pages/s).
#[derive(Clone, Copy, Debug)]
pub struct BdiBandwidth {
    pub write_bandwidth: u64,
    pub avg_write_bandwidth: u64,
    pub dirty_ratelimit: u64,
    pub balanced_dirty_ratelimit: u64,
    /// Jiffies of the last estimate, and the counters then.
    pub bw_time_stamp: u64,
    pub dirtied_stamp: u64,
    pub written_stamp: u64,
}

impl BdiBandwidth {
    pub fn new(now_jiffies: u64) -> BdiBandwidth {
        BdiBandwidth {
            write_bandwidth: INIT_BW_PAGES,
            avg_write_bandwidth: INIT_BW_PAGES,
            dirty_ratelimit: INIT_BW_PAGES,
            balanced_dirty_ratelimit: INIT_BW_PAGES,
            bw_time_stamp: now_jiffies,
            dirtied_stamp: 0,
            written_stamp: 0,
        }
    }

    /// `__bdi_update_bandwidth`: at most every 200 ms, from the device's pages `dirtied` and
    /// `written` so far. `throttling` carries the thresholds when a writer is being
    /// balanced (it also updates the throttle rate); `start_jiffies` is when that
    /// `balance_dirty_pages` began (quiet periods are skipped).
    #[allow(clippy::too_many_arguments)]
    pub fn update(
        &mut self,
        hz: u64,
        now: u64,
        dirtied: u64,
        written: u64,
        throttling: Option<(Limits, u64, u64, u64, u64)>,
        start_jiffies: u64,
    ) {
        let interval = (hz / 5).max(1);
        let elapsed = now.saturating_sub(self.bw_time_stamp);
        if elapsed < interval {
            return;
        }
        let quiet = elapsed > hz && self.bw_time_stamp < start_jiffies;
        if !quiet {
            if let Some((l, limit, dirty, bdi_thresh, bdi_dirty)) = throttling {
                self.update_ratelimit(hz, l, limit, dirty, bdi_thresh, bdi_dirty, dirtied, elapsed);
            }
            self.update_write_bandwidth(hz, elapsed, written);
        }
        self.dirtied_stamp = dirtied;
        self.written_stamp = written;
        self.bw_time_stamp = now;
    }

    /// `bdi_update_write_bandwidth`: a 3-second window, then a second smoothing.
    fn update_write_bandwidth(&mut self, hz: u64, elapsed: u64, written: u64) {
        let period = (3 * hz).next_power_of_two();
        let mut avg = self.avg_write_bandwidth;
        let old = self.write_bandwidth;
        let mut bw = (written - self.written_stamp) * hz;
        if elapsed > period {
            bw /= elapsed;
            avg = bw;
        } else {
            bw += old * (period - elapsed);
            bw >>= ilog2(period);
            if avg > old && old >= bw {
                avg -= (avg - old) >> 3;
            }
            if avg < old && old <= bw {
                avg += (old - avg) >> 3;
            }
        }
        self.write_bandwidth = bw;
        self.avg_write_bandwidth = avg;
    }

    /// `bdi_update_dirty_ratelimit`.
    #[allow(clippy::too_many_arguments)]
    fn update_ratelimit(
        &mut self,
        hz: u64,
        l: Limits,
        limit: u64,
        dirty: u64,
        bdi_thresh: u64,
        bdi_dirty: u64,
        dirtied: u64,
        elapsed: u64,
    ) {
        let freerun = freerun_ceiling(l);
        let setpoint = (freerun + limit) / 2;
        let write_bw = self.avg_write_bandwidth;
        let mut dirty_ratelimit = self.dirty_ratelimit;
        let dirty_rate = (dirtied - self.dirtied_stamp) * hz / elapsed.max(1);
        let pos = pos_ratio(l, limit, dirty, bdi_thresh, bdi_dirty, write_bw);
        let task_ratelimit = ((dirty_ratelimit * pos) >> RATELIMIT_CALC_SHIFT) + 1;
        let mut balanced = task_ratelimit * write_bw / (dirty_rate | 1);
        balanced = balanced.min(write_bw);
        let mut step = 0;
        if dirty < setpoint {
            let x = self.balanced_dirty_ratelimit.min(balanced).min(task_ratelimit);
            if dirty_ratelimit < x {
                step = x - dirty_ratelimit;
            }
        } else {
            let x = self.balanced_dirty_ratelimit.max(balanced).max(task_ratelimit);
            if dirty_ratelimit > x {
                step = dirty_ratelimit - x;
            }
        }
        let shift = dirty_ratelimit / (2 * step + 1);
        step = if shift >= 64 { 0 } else { step >> shift };
        step = step.div_ceil(8);
        if dirty_ratelimit < balanced {
            dirty_ratelimit += step;
        } else {
            dirty_ratelimit -= step.min(dirty_ratelimit);
        }
        self.dirty_ratelimit = dirty_ratelimit.max(1);
        self.balanced_dirty_ratelimit = balanced;
    }

    /// `bdi_max_pause`: sleep no longer than the device takes to write 1/8 of its dirty
    /// pages, nor `MAX_PAUSE` (200 ms); jiffies.
    pub fn max_pause(&self, hz: u64, bdi_dirty: u64) -> u64 {
        let t = bdi_dirty / (1 + self.avg_write_bandwidth / (1 + hz / 8).next_power_of_two()) + 1;
        t.min((hz / 5).max(1))
    }

    /// `bdi_min_pause`: the pause to aim for and how many pages to dirty before the next
    /// check (`nr_dirtied_pause`); jiffies and pages.
    pub fn min_pause(&self, hz: u64, max_pause: u64, task_ratelimit: u64) -> (u64, u64) {
        let hi = ilog2(self.avg_write_bandwidth) as i64;
        let lo = ilog2(self.dirty_ratelimit) as i64;
        let mut t = (hz / 100).max(1) as i64;
        if hi > lo {
            t += (hi - lo) * (10 * hz as i64) / 1024;
        }
        let mut t = (t as u64).min(1 + max_pause / 2);
        let hz_pow = hz.next_power_of_two();
        let mut pages = self.dirty_ratelimit * t / hz_pow;
        if pages < DIRTY_POLL_THRESH {
            t = max_pause;
            pages = self.dirty_ratelimit * t / hz_pow;
            if pages > DIRTY_POLL_THRESH {
                pages = DIRTY_POLL_THRESH;
                t = hz * DIRTY_POLL_THRESH / self.dirty_ratelimit.max(1);
            }
        }
        let pause = hz * pages / (task_ratelimit + 1);
        if pause > max_pause {
            t = max_pause;
            pages = task_ratelimit * t / hz_pow;
        }
        let min = if pages >= DIRTY_POLL_THRESH { 1 + t / 2 } else { t };
        (min, pages)
    }
}

/// `dirty_poll_interval` (3.2+): pages to dirty before the next check while under the
/// free-run ceiling, about the square root of the room left.
pub fn dirty_poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1 << (ilog2(thresh - dirty) >> 1)
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_follow_the_sysctls() {
        let s = DirtySysctl::DEFAULT;
        // 4 GiB of dirtyable pages: 20 % and 10 %.
        let l = global_dirty_limits(&s, 1 << 20, true);
        assert_eq!(l, Limits { background: 104_857, dirty: 209_715 });
        // Background above dirty is halved; dirty_bytes wins over the ratio.
        let s2 = DirtySysctl { dirty_background_ratio: 30, ..s };
        assert_eq!(global_dirty_limits(&s2, 1000, true), Limits { background: 100, dirty: 200 });
        let s3 = DirtySysctl { dirty_bytes: 40 << 20, ..s };
        assert_eq!(global_dirty_limits(&s3, 1 << 20, true).dirty, 10_240);
        // 2.6.3x floors dirty_ratio at 5 %.
        let s4 = DirtySysctl { dirty_ratio: 1, dirty_background_ratio: 0, ..s };
        assert_eq!(global_dirty_limits(&s4, 1000, true).dirty, 50);
        assert_eq!(global_dirty_limits(&s4, 1000, false).dirty, 10);
    }

    #[test]
    fn proportions_follow_recent_events() {
        let mut g = Proportions::new(1024); // shift 2 + 9 = 11: half-period 1024 events
        let (mut a, mut b) = (PropLocal::default(), PropLocal::default());
        g.inc(&mut a, 3000);
        let (n, d) = g.fraction(&mut a);
        assert!(n as f64 / d as f64 > 0.7, "{n}/{d}");
        // b now takes all events: a's share decays by half every half-period.
        g.inc(&mut b, 4096);
        let (na, da) = g.fraction(&mut a);
        let (nb, db) = g.fraction(&mut b);
        assert!(na * 4 < da && nb * 2 > db, "a {na}/{da} b {nb}/{db}");
    }

    #[test]
    fn legacy_arithmetic() {
        // 4 GiB, 2 CPUs: 1M pages / 64 = 16384, capped at 1024 (4 MiB).
        assert_eq!(legacy_ratelimit_pages(1 << 20, 2), 1024);
        assert_eq!(legacy_ratelimit_pages(100, 2), 16);
        assert_eq!(legacy_write_chunk(8, 1024), 1536);
        // A lone device and a lone writer: its threshold less 1/8.
        assert_eq!(legacy_bdi_thresh(8000, (1, 1), 0, 0, (1, 1)), 7000);
        // Two devices half and half, the other one holding most of the machine's dirt.
        assert_eq!(legacy_bdi_thresh(8000, (1, 2), 7000, 500, (0, 1)), 1500);
    }

    #[test]
    fn the_position_ratio_is_one_at_the_setpoint_and_zero_at_the_limit() {
        let l = Limits { background: 1000, dirty: 2000 };
        // freerun 1500, setpoint (1500 + 2000) / 2 = 1750.
        let one = 1 << RATELIMIT_CALC_SHIFT;
        let at = pos_ratio(l, 2000, 1750, 2000, 1750, 25_600);
        assert!((at as i64 - one).abs() <= one / 16, "{at}");
        assert!(pos_ratio(l, 2000, 1600, 2000, 1600, 25_600) > at);
        assert!(pos_ratio(l, 2000, 1950, 2000, 1950, 25_600) < at);
        assert_eq!(pos_ratio(l, 2000, 2000, 2000, 2000, 25_600), 0);
    }

    #[test]
    fn bandwidth_tracks_what_was_written() {
        let hz = 1000;
        let mut b = BdiBandwidth::new(0);
        // 50 MB/s for 20 s, sampled every 200 ms: the average approaches 12,800 pages/s.
        let mut written = 0;
        for i in 1..=100u64 {
            written += 12_800 / 5;
            b.update(hz, i * 200, 0, written, None, 0);
        }
        let bw = b.avg_write_bandwidth as f64;
        assert!((bw - 12_800.0).abs() / 12_800.0 < 0.1, "{bw}");
        let (min, pages) = b.min_pause(hz, b.max_pause(hz, 10_000), 12_800);
        assert!(min >= 1 && pages >= 1, "{min} {pages}");
        assert_eq!(dirty_poll_interval(0, 1 << 16), 256);
    }
}
