//! Per-job, per-direction statistics in fio's terms: bytes, I/Os, submission / completion /
//! total latency (min, max, mean, stddev), completion-latency percentiles, bandwidth and IOPS
//! samples per `bw_avg_time` window, and fio's latency distribution buckets.

use elevator_core::{Nanos, NS_PER_MS};
use elevator_fio::Sampling;
use hdrhistogram::Histogram;

/// fio's `bw_avg_time` / `iops_avg_time` default: one bandwidth sample per 500 ms.
pub const SAMPLE_WINDOW_NS: Nanos = 500 * NS_PER_MS;

/// One statistic's samples as they are being taken: the amount (bytes or I/Os) of the window
/// ending at `end_ns`, windows of `len_ns` (fio's `bw_sample_time` and `bw_avg_time`, or
/// the IOPS pair); `len_ns` 0 takes a sample per I/O instead (`Sampling::PerIo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Window {
    len_ns: Nanos,
    end_ns: Nanos,
    amount: u64,
}

impl Window {
    fn new(start_ns: Nanos, sampling: Sampling) -> Window {
        let len_ns = match sampling {
            Sampling::Window { ms } => ms.max(1) * NS_PER_MS,
            Sampling::PerIo => 0,
        };
        Window { len_ns, end_ns: start_ns + len_ns, amount: 0 }
    }

    fn sampling(&self) -> Sampling {
        match self.len_ns {
            0 => Sampling::PerIo,
            ns => Sampling::Window { ms: ns / NS_PER_MS },
        }
    }

    /// Closes the window, adding its rate (per second, divided by `unit`) to `out`.
    fn close(&mut self, out: &mut Summary, unit: f64) {
        let per_sec = 1_000_000_000.0 / self.len_ns as f64;
        out.add((self.amount as f64 * per_sec / unit) as u64);
        self.amount = 0;
        self.end_ns += self.len_ns;
    }

    /// Counts `amount` done at `done_ns`, closing the windows that ended before it.
    fn add(&mut self, amount: u64, done_ns: Nanos, out: &mut Summary, unit: f64) {
        while done_ns >= self.end_ns {
            self.close(out, unit);
        }
        self.amount += amount;
    }

    /// Counts `n` I/Os of `amount` each, completing one after another from `first_ns`
    /// (the i-th at `first + (i + 1) × each`), in time proportional to the windows crossed.
    fn add_run(
        &mut self,
        amount: u64,
        n: u64,
        first_ns: Nanos,
        each: Nanos,
        out: &mut Summary,
        unit: f64,
    ) {
        let mut done = 0;
        while done < n {
            // Completions before the current window's end: i with first + (i+1)*each < end.
            let end = self.end_ns;
            let before =
                if end > first_ns + each { ((end - first_ns - 1) / each).min(n) } else { 0 };
            let take = before.saturating_sub(done).min(n - done);
            if take == 0 && first_ns + (done + 1) * each >= end {
                self.close(out, unit);
                continue;
            }
            self.amount += take * amount;
            done += take;
        }
    }
}

/// Completion latencies are histogrammed from 1 ns to 2^44 ns (4.9 hours; longer ones count
/// as that) with two significant digits: 1 % precision, finer than fio's own 1/64-octave
/// buckets, in a fixed 40 KB per histogram.
pub const CLAT_HIST_MAX_NS: u64 = 1 << 44;

/// An empty latency histogram of the layout above.
fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, CLAT_HIST_MAX_NS, 2).expect("valid histogram bounds")
}

/// Upper bounds, in ns, of fio's latency distribution buckets (`latency_ns`, `latency_us`,
/// `latency_ms`); everything above the last falls into `>=2000` ms.
pub const LAT_BUCKET_EDGES_NS: [u64; 31] = {
    let base = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
    let mut edges = [0u64; 31];
    let mut i = 0;
    while i < 10 {
        edges[i] = base[i];
        edges[10 + i] = base[i] * 1_000;
        edges[20 + i] = base[i] * 1_000_000;
        i += 1;
    }
    edges[30] = 2_000_000_000;
    edges
};

/// Running min / max / mean / variance (Welford), in the order samples arrive.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub n: u64,
    pub min: u64,
    pub max: u64,
    mean: f64,
    m2: f64,
}

impl Summary {
    #[inline]
    pub fn add(&mut self, x: u64) {
        if self.n == 0 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        self.n += 1;
        let delta = x as f64 - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (x as f64 - self.mean);
    }

    /// Adds `n` samples of `x`.
    pub fn add_n(&mut self, x: u64, n: u64) {
        if n == 0 {
            return;
        }
        let same = Summary { n, min: x, max: x, mean: x as f64, m2: 0.0 };
        self.merge(&same);
    }

    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Sample standard deviation, as fio reports it.
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            0.0
        } else {
            (self.m2 / (self.n - 1) as f64).sqrt()
        }
    }

    /// Combines two summaries (Chan et al.'s parallel variance).
    pub fn merge(&mut self, other: &Summary) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = other.clone();
            return;
        }
        let n = self.n + other.n;
        let delta = other.mean - self.mean;
        self.m2 += other.m2 + delta * delta * self.n as f64 * other.n as f64 / n as f64;
        self.mean += delta * other.n as f64 / n as f64;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.n = n;
    }
}

/// fio's `add_bw_sample` for a log of every I/O: `bytes × 10⁶ / latency ns` (about KB/s),
/// 0 for an I/O that took no time.
fn per_io_rate(len_bytes: u64, latency_ns: Nanos) -> u64 {
    if latency_ns == 0 {
        0
    } else {
        (u128::from(len_bytes) * 1_000_000 / u128::from(latency_ns)).min(u128::from(u64::MAX))
            as u64
    }
}

/// Statistics of one data direction (read, write or trim) of one job or group.
#[derive(Clone, Debug)]
pub struct DirStats {
    pub io_bytes: u64,
    pub total_ios: u64,
    pub slat_ns: Summary,
    pub clat_ns: Summary,
    pub lat_ns: Summary,
    pub clat_hist: Histogram<u64>,
    /// Total latencies (submission + completion), kept only for jobs that report their
    /// percentiles (`lat_percentiles`): 40 KB more per direction otherwise spent for nothing.
    pub lat_hist: Option<Box<Histogram<u64>>>,
    /// Bandwidth (KiB/s) and IOPS samples, per window or per I/O (`bwavgtime`,
    /// `iopsavgtime`, the logs: [`elevator_fio::LogOptions::bw_sampling`]).
    pub bw_kib_samples: Summary,
    pub iops_samples: Summary,
    bw_window: Window,
    iops_window: Window,
}

impl DirStats {
    /// Statistics from `start_ns`, sampling rates every 500 ms.
    pub fn new(start_ns: Nanos) -> DirStats {
        let every = Sampling::Window { ms: SAMPLE_WINDOW_NS / NS_PER_MS };
        DirStats::sampled(start_ns, every, every)
    }

    /// Statistics from `start_ns` that sample bandwidth and IOPS as given.
    pub fn sampled(start_ns: Nanos, bw: Sampling, iops: Sampling) -> DirStats {
        DirStats {
            io_bytes: 0,
            total_ios: 0,
            slat_ns: Summary::default(),
            clat_ns: Summary::default(),
            lat_ns: Summary::default(),
            clat_hist: latency_histogram(),
            lat_hist: None,
            bw_kib_samples: Summary::default(),
            iops_samples: Summary::default(),
            bw_window: Window::new(start_ns, bw),
            iops_window: Window::new(start_ns, iops),
        }
    }

    /// Empty statistics from `start_ns`, kept and sampled as these are.
    pub fn restarted(&self, start_ns: Nanos) -> DirStats {
        let mut d =
            DirStats::sampled(start_ns, self.bw_window.sampling(), self.iops_window.sampling());
        if self.lat_hist.is_some() {
            d.keep_lat_histogram();
        }
        d
    }

    /// Keeps a histogram of total latencies too (`lat_percentiles`).
    pub fn keep_lat_histogram(&mut self) {
        self.lat_hist.get_or_insert_with(|| Box::new(latency_histogram()));
    }

    /// Records one completed I/O.
    #[inline]
    pub fn record(&mut self, len_bytes: u64, issue_ns: Nanos, submit_ns: Nanos, done_ns: Nanos) {
        self.io_bytes += len_bytes;
        self.total_ios += 1;
        let slat = submit_ns - issue_ns;
        let clat = done_ns - submit_ns;
        if self.bw_window.len_ns == 0 {
            self.bw_kib_samples.add(per_io_rate(len_bytes, clat));
        } else {
            self.bw_window.add(len_bytes, done_ns, &mut self.bw_kib_samples, 1024.0);
        }
        if self.iops_window.len_ns == 0 {
            self.iops_samples.add(1);
        } else {
            self.iops_window.add(1, done_ns, &mut self.iops_samples, 1.0);
        }
        self.slat_ns.add(slat);
        self.clat_ns.add(clat);
        self.lat_ns.add(slat + clat);
        self.clat_hist.saturating_record(clat.max(1));
        if let Some(h) = self.lat_hist.as_mut() {
            h.saturating_record((slat + clat).max(1));
        }
    }

    /// Records `n` I/Os of `len_bytes`, each with completion latency `each_ns`, completing
    /// one after another from `first_issue_ns` (the i-th at `first + (i + 1) × each`), in
    /// time proportional to the windows crossed, not to `n`.
    pub fn record_run(&mut self, len_bytes: u64, n: u64, first_issue_ns: Nanos, each_ns: Nanos) {
        if n == 0 {
            return;
        }
        let each = each_ns.max(1);
        let (first, bw, iops) = (first_issue_ns, &mut self.bw_kib_samples, &mut self.iops_samples);
        if self.bw_window.len_ns == 0 {
            bw.add_n(per_io_rate(len_bytes, each_ns), n);
        } else {
            self.bw_window.add_run(len_bytes, n, first, each, bw, 1024.0);
        }
        if self.iops_window.len_ns == 0 {
            iops.add_n(1, n);
        } else {
            self.iops_window.add_run(1, n, first, each, iops, 1.0);
        }
        self.io_bytes += n * len_bytes;
        self.total_ios += n;
        self.slat_ns.add_n(0, n);
        self.clat_ns.add_n(each_ns, n);
        self.lat_ns.add_n(each_ns, n);
        let _ = self.clat_hist.record_n(each_ns.clamp(1, CLAT_HIST_MAX_NS), n);
        if let Some(h) = self.lat_hist.as_mut() {
            let _ = h.record_n(each_ns.clamp(1, CLAT_HIST_MAX_NS), n);
        }
    }

    /// Adds another job's statistics into this one (group reporting).
    pub fn merge(&mut self, other: &DirStats) {
        self.io_bytes += other.io_bytes;
        self.total_ios += other.total_ios;
        self.slat_ns.merge(&other.slat_ns);
        self.clat_ns.merge(&other.clat_ns);
        self.lat_ns.merge(&other.lat_ns);
        self.clat_hist.add(&other.clat_hist).expect("histograms of the same precision merge");
        if let Some(theirs) = &other.lat_hist {
            self.keep_lat_histogram();
            let ours = self.lat_hist.as_mut().expect("just kept");
            ours.add(theirs.as_ref()).expect("histograms of the same precision merge");
        }
        self.bw_kib_samples.merge(&other.bw_kib_samples);
        self.iops_samples.merge(&other.iops_samples);
    }

    /// The total latency at `percentile` (ns); 0 unless the histogram is kept.
    pub fn lat_percentile_ns(&self, percentile: f64) -> u64 {
        match &self.lat_hist {
            Some(h) if self.total_ios > 0 => h.value_at_percentile(percentile),
            _ => 0,
        }
    }

    /// The completion latency at `percentile`, as fio prints it (ns).
    pub fn clat_percentile_ns(&self, percentile: f64) -> u64 {
        if self.total_ios == 0 {
            0
        } else {
            self.clat_hist.value_at_percentile(percentile)
        }
    }
}

/// fio's sync statistics (`sync_stat`, `io_u_sync_plat`, `total_io_u[DDIR_SYNC]`): the
/// latency, issue to completion, of the job's `fsync=`, `fdatasync=` and `sync_file_range=`
/// calls, and how many were fsyncs (fio counts only those). `end_fsync`, `fsync_on_close`,
/// the verify phase's sync and a barrier's flush are not accounted, as in fio.
#[derive(Clone, Debug, Default)]
pub struct SyncStats {
    pub fsyncs: u64,
    pub lat_ns: Summary,
    /// Made on the first sync: most jobs never sync.
    hist: Option<Box<Histogram<u64>>>,
}

impl SyncStats {
    /// A sync of `lat_ns` completed (`fsync`: an fsync, not fdatasync or sync_file_range).
    pub fn add(&mut self, lat_ns: Nanos, fsync: bool) {
        self.fsyncs += u64::from(fsync);
        self.lat_ns.add(lat_ns);
        let h = self.hist.get_or_insert_with(|| Box::new(latency_histogram()));
        let _ = h.record(lat_ns.clamp(1, CLAT_HIST_MAX_NS));
    }

    pub fn merge(&mut self, other: &SyncStats) {
        self.fsyncs += other.fsyncs;
        self.lat_ns.merge(&other.lat_ns);
        if let Some(theirs) = &other.hist {
            let ours = self.hist.get_or_insert_with(|| Box::new(latency_histogram()));
            ours.add(theirs.as_ref()).expect("histograms of the same precision merge");
        }
    }

    /// The sync latency at `percentile` (ns), 0 without syncs.
    pub fn percentile_ns(&self, percentile: f64) -> u64 {
        self.hist.as_ref().map_or(0, |h| h.value_at_percentile(percentile))
    }

    /// The latencies as json+'s `bins`.
    pub fn bins(&self) -> Vec<(u64, u64)> {
        self.hist.as_deref().map(fio_bins).unwrap_or_default()
    }
}

/// fio's latency histogram layout (`stat.h`): values below 2 × [`FIO_PLAT_VAL`] have a bucket
/// each; above, every power of two is cut into [`FIO_PLAT_VAL`] equal buckets, so a bucket is
/// at most 1/64 (1.6 %) of its value wide. json+'s `bins` are keyed by each bucket's
/// representative value and list the non-empty ones in ascending order.
pub const FIO_PLAT_BITS: u32 = 6;
/// Buckets per power of two.
pub const FIO_PLAT_VAL: u64 = 1 << FIO_PLAT_BITS;
/// Groups of [`FIO_PLAT_VAL`] buckets: values up to 2^34 ns (17 s) are told apart.
pub const FIO_PLAT_GROUP_NR: u64 = 29;
/// Buckets in all; the last also takes every longer value.
pub const FIO_PLAT_NR: u64 = FIO_PLAT_GROUP_NR * FIO_PLAT_VAL;

/// The bucket of a latency value: the value's top [`FIO_PLAT_BITS`] + 1 bits pick it.
pub fn fio_plat_val_to_idx(value: u64) -> u64 {
    let msb = if value == 0 { 0 } else { 63 - u64::from(value.leading_zeros()) };
    if msb <= u64::from(FIO_PLAT_BITS) {
        return value;
    }
    // Bits below the top PLAT_BITS + 1 only say where in the power of two the value is.
    let error_bits = msb - u64::from(FIO_PLAT_BITS);
    let base = (error_bits + 1) << FIO_PLAT_BITS;
    let offset = (FIO_PLAT_VAL - 1) & (value >> error_bits);
    (base + offset).min(FIO_PLAT_NR - 1)
}

/// A bucket's representative value: its own value below 2 × [`FIO_PLAT_VAL`], its middle
/// above (rounded down, as fio's integer conversion does).
pub fn fio_plat_idx_to_val(idx: u64) -> u64 {
    if idx < (FIO_PLAT_VAL << 1) {
        return idx;
    }
    let error_bits = (idx >> FIO_PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + u64::from(FIO_PLAT_BITS));
    let k = idx % FIO_PLAT_VAL;
    // (k + 0.5) * 2^error_bits, in integers.
    base + ((2 * k + 1) << error_bits) / 2
}

impl DirStats {
    /// The completion latencies as fio's json+ `bins`: (bucket value in ns, count), ascending.
    pub fn clat_bins(&self) -> Vec<(u64, u64)> {
        fio_bins(&self.clat_hist)
    }

    /// [`DirStats::clat_bins`] for total latencies, when their histogram is kept.
    pub fn lat_bins(&self) -> Vec<(u64, u64)> {
        self.lat_hist.as_deref().map(fio_bins).unwrap_or_default()
    }
}

/// A latency histogram regrouped into fio's buckets (json+'s `bins`).
fn fio_bins(hist: &Histogram<u64>) -> Vec<(u64, u64)> {
    let mut bins: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    for v in hist.iter_recorded() {
        let ns = hist.median_equivalent(v.value_iterated_to());
        *bins.entry(fio_plat_val_to_idx(ns)).or_default() += v.count_at_value();
    }
    bins.into_iter().map(|(idx, n)| (fio_plat_idx_to_val(idx), n)).collect()
}

/// Which of fio's latency buckets each I/O's total latency fell into.
#[derive(Clone, Debug, Default)]
pub struct LatencyBuckets {
    pub counts: [u64; 32],
}

impl LatencyBuckets {
    #[inline]
    pub fn add(&mut self, lat_ns: u64) {
        let i = LAT_BUCKET_EDGES_NS.partition_point(|&edge| edge < lat_ns);
        self.counts[i] += 1;
    }

    /// Adds `n` latencies of `lat_ns`.
    #[inline]
    pub fn add_n(&mut self, lat_ns: u64, n: u64) {
        let i = LAT_BUCKET_EDGES_NS.partition_point(|&edge| edge < lat_ns);
        self.counts[i] += n;
    }

    pub fn merge(&mut self, other: &LatencyBuckets) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
    }
}

#[cfg(test)]
mod fio_plat_tests {
    use super::*;

    #[test]
    fn buckets_follow_fios_layout() {
        // Exact below 128, then 64 buckets per power of two.
        assert_eq!(fio_plat_val_to_idx(0), 0);
        assert_eq!(fio_plat_val_to_idx(127), 127);
        assert_eq!(fio_plat_val_to_idx(128), 128);
        assert_eq!(fio_plat_val_to_idx(129), 128);
        assert_eq!(fio_plat_val_to_idx(130), 129);
        assert_eq!(fio_plat_val_to_idx(256), 192);
        assert_eq!(fio_plat_val_to_idx(u64::MAX), FIO_PLAT_NR - 1);
        assert_eq!(fio_plat_idx_to_val(127), 127);
        assert_eq!(fio_plat_idx_to_val(128), 129);
        assert_eq!(fio_plat_idx_to_val(192), 258);
        // Every bucket's value maps back to the bucket, and values only grow.
        let mut last = 0;
        for idx in 1..FIO_PLAT_NR {
            let v = fio_plat_idx_to_val(idx);
            assert!(v > last, "{idx}");
            assert_eq!(fio_plat_val_to_idx(v), idx, "{idx}");
            last = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_matches_two_pass_and_merges() {
        let xs = [3u64, 9, 4, 12, 7, 7, 1];
        let mut s = Summary::default();
        xs.iter().for_each(|&x| s.add(x));
        let mean = xs.iter().sum::<u64>() as f64 / xs.len() as f64;
        let var =
            xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (xs.len() - 1) as f64;
        assert!((s.mean() - mean).abs() < 1e-9 && (s.stddev() - var.sqrt()).abs() < 1e-9);
        let (mut a, mut b) = (Summary::default(), Summary::default());
        xs[..3].iter().for_each(|&x| a.add(x));
        xs[3..].iter().for_each(|&x| b.add(x));
        a.merge(&b);
        assert_eq!((a.n, a.min, a.max), (7, 1, 12));
        assert!((a.mean() - mean).abs() < 1e-9 && (a.stddev() - var.sqrt()).abs() < 1e-9);
    }

    #[test]
    fn windows_produce_bandwidth_samples() {
        let mut d = DirStats::new(0);
        for i in 0..10u64 {
            d.record(4096, i * 100 * NS_PER_MS, i * 100 * NS_PER_MS, i * 100 * NS_PER_MS + 1);
        }
        // Two whole windows of 5 I/Os each closed by the 10th I/O at 900 ms? Only the first.
        assert_eq!(d.bw_kib_samples.n, 1);
        assert_eq!(d.iops_samples.min, 10);
        assert_eq!(d.bw_kib_samples.min, 40);
    }

    /// `bwavgtime` and `iopsavgtime` each have their own window; a per-I/O log samples
    /// every I/O's own rate.
    #[test]
    fn bandwidth_and_iops_sample_in_their_own_windows_or_per_io() {
        let (bw, iops) = (Sampling::Window { ms: 250 }, Sampling::Window { ms: 100 });
        let mut d = DirStats::sampled(0, bw, iops);
        let mut per_io = DirStats::sampled(0, Sampling::PerIo, Sampling::PerIo);
        // An I/O of 4 KiB every millisecond for a second, each taking 40 µs.
        for i in 0..1000u64 {
            let at = i * NS_PER_MS;
            d.record(4096, at, at, at + 40_000);
            per_io.record(4096, at, at, at + 40_000);
        }
        // Windows closed by the last completion (999.04 ms): 3 of 250 ms, 9 of 100 ms.
        assert_eq!((d.bw_kib_samples.n, d.iops_samples.n), (3, 9));
        assert_eq!((d.bw_kib_samples.min, d.iops_samples.min), (4000, 1000));
        assert_eq!((per_io.bw_kib_samples.n, per_io.iops_samples.n), (1000, 1000));
        assert_eq!(per_io.bw_kib_samples.max, 4096 * 1_000_000 / 40_000);
        assert_eq!(per_io.iops_samples.max, 1);
        // A fresh start keeps the sampling.
        let again = d.restarted(5);
        assert_eq!(
            (again.bw_window.len_ns, again.iops_window.len_ns),
            (250 * NS_PER_MS, 100 * NS_PER_MS)
        );
        let mut run = DirStats::sampled(0, bw, iops);
        // Completions at 1, 2, ... 1000 ms: the last closes the windows ending at 1 s.
        run.record_run(4096, 1000, 0, NS_PER_MS);
        assert_eq!((run.bw_kib_samples.n, run.iops_samples.n), (4, 10));
    }

    #[test]
    fn a_run_records_like_its_ios_one_by_one() {
        let (mut one, mut run) = (DirStats::new(0), DirStats::new(0));
        let each = 7 * NS_PER_MS;
        for i in 0..500u64 {
            one.record(4096, 1000 + i * each, 1000 + i * each, 1000 + (i + 1) * each);
        }
        run.record_run(4096, 500, 1000, each);
        assert_eq!((run.total_ios, run.io_bytes), (one.total_ios, one.io_bytes));
        assert_eq!(run.bw_kib_samples.n, one.bw_kib_samples.n);
        assert_eq!(run.bw_kib_samples.min, one.bw_kib_samples.min);
        assert_eq!(run.bw_kib_samples.max, one.bw_kib_samples.max);
        assert_eq!((run.bw_window, run.iops_window), (one.bw_window, one.iops_window));
        assert_eq!(run.clat_ns.max, each);
        assert!((run.clat_ns.mean() - one.clat_ns.mean()).abs() < 1e-6);
        assert_eq!(run.clat_percentile_ns(99.0), one.clat_percentile_ns(99.0));
    }

    #[test]
    fn latency_buckets_follow_fio_edges() {
        let mut b = LatencyBuckets::default();
        b.add(2); // <= 2 ns
        b.add(3_000); // <= 4 µs
        b.add(5_000_000_000); // >= 2 s
        assert_eq!((b.counts[0], b.counts[11], b.counts[31]), (1, 1, 1));
    }
}
