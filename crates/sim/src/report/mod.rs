//! Reports of a finished run: fio's JSON ([`json`]), fio's text ([`normal`]) and the seed-000
//! table ([`table`]). All three read the same [`Entry`] list, built once.

pub mod json;
pub mod logs;
pub mod normal;
pub mod num2str;
pub mod table;
pub mod terse;

use elevator_core::Nanos;
use elevator_fio::{JobFile, UnifiedRw};

use crate::engine::DeviceResult;
use crate::stats::{DirStats, LatencyBuckets};
use crate::SimResult;

/// One reported job: a single process, or a whole reporting group under `group_reporting`.
#[derive(Clone)]
pub struct Entry {
    pub name: String,
    pub group_id: u32,
    /// Index of the (first) job section, for its options.
    pub job: usize,
    /// Indices of the processes it covers.
    pub members: Vec<usize>,
    pub first_pid: u32,
    pub stats: [DirStats; 3],
    /// fio's `fsync/fdatasync/sync_file_range` statistics.
    pub sync: crate::stats::SyncStats,
    pub lat_buckets: LatencyBuckets,
    pub depth_hist: [u64; 7],
    /// The longest runtime among the members.
    pub runtime_ns: Nanos,
    /// Per direction, the longest among the members (differs from `runtime_ns` only for a
    /// job with a verify phase, whose writes and reads each have their own).
    pub dir_runtime_ns: [Nanos; 3],
    /// The members' runtimes added up (fio's `job_runtime` under `group_reporting`).
    pub job_runtime_ns: Nanos,
    /// The members' CPU time (spun, `thinktime_spin`) added up.
    pub cpu_ns: Nanos,
    /// The error that ended a member, if one did (fio reports the job's first).
    pub error: Option<crate::workload::JobError>,
    /// The queue depth `latency_target=` settled on (fio's `latency_depth`), if it searched.
    pub latency_depth: Option<u32>,
    /// `steadystate=`: the ring of the member that holds it (fio's `ts->ss_*`, taken from
    /// the group's last job).
    pub steadystate: Option<crate::steadystate::SteadyStateWindow>,
}

impl Entry {
    /// The entry with its directions summed into the first, as fio's `sum_thread_stats` does
    /// for `unified_rw_reporting=mixed`: latencies, samples, bytes and I/Os added up, the
    /// longest direction's runtime.
    pub fn mixed(&self) -> Entry {
        let mut m = self.clone();
        let [first, rest @ ..] = &mut m.stats;
        for other in rest.iter_mut() {
            first.merge(other);
            *other = DirStats::new(0);
        }
        m.dir_runtime_ns = [self.dir_runtime_ns.iter().copied().max().unwrap_or(0), 0, 0];
        m
    }

    /// fio's `usr_cpu`: the members' user time (what they spun) over their runtimes, %.
    pub fn usr_cpu_percent(&self) -> f64 {
        if self.job_runtime_ns == 0 {
            0.0
        } else {
            self.cpu_ns as f64 * 100.0 / self.job_runtime_ns as f64
        }
    }

    /// Bandwidth of one direction in bytes per second over the entry's runtime.
    pub fn bw_bytes_per_sec(&self, d: usize) -> f64 {
        rate(self.stats[d].io_bytes, self.dir_runtime_ns[d])
    }

    /// I/Os per second of direction `d`, over its runtime.
    pub fn iops(&self, d: usize) -> f64 {
        rate(self.stats[d].total_ios, self.dir_runtime_ns[d])
    }
}

/// fio's `rs->agg[ddir]` of each group: its members' bytes of each direction over the
/// longest runtime in that direction among those that moved any (fio's __show_run_stats
/// skips a job with no runtime that way), bytes per second.
pub fn group_aggregates(entries: &[Entry]) -> Vec<[f64; 3]> {
    let groups = entries.iter().map(|e| e.group_id).max().map_or(0, |g| g as usize + 1);
    let mut bytes = vec![[0u64; 3]; groups];
    let mut run = vec![[0 as Nanos; 3]; groups];
    for e in entries {
        let g = e.group_id as usize;
        for d in (0..3).filter(|&d| e.stats[d].io_bytes > 0) {
            bytes[g][d] += e.stats[d].io_bytes;
            run[g][d] = run[g][d].max(e.dir_runtime_ns[d]);
        }
    }
    bytes.iter().zip(&run).map(|(b, r)| std::array::from_fn(|d| rate(b[d], r[d]))).collect()
}

/// fio's `convert_agg_kbytes_percent`: a job's mean bandwidth sample (KiB/s, truncated as fio
/// passes it) as a percentage of its group's aggregate (`agg_bytes`, bytes/s), at most 100;
/// 100 when the aggregate is 1 KiB/s or less.
pub fn percent_of_group(mean_kib: f64, agg_bytes: f64) -> f64 {
    if agg_bytes <= 1024.0 {
        return 100.0;
    }
    (mean_kib.trunc() * 100.0 / (agg_bytes / 1024.0)).min(100.0)
}

/// The devices of the disk statistics (text `Disk stats`, JSON `disk_util`, terse): none
/// unless a job keeps `disk_util` on and has an engine with a device (fio's init_disk_util
/// skips the FIO_DISKLESSIO engines: null, cpuio, exec), and never the null engine's
/// stand-in; and of the others, as fio, only those its jobs' files are on (a volume's
/// files: every device under it, where fio lists the device-mapper device and its slaves).
pub fn reported_disks<'a>(result: &'a SimResult, jobs: &JobFile) -> Vec<&'a DeviceResult> {
    if !jobs.jobs.iter().any(|j| j.disk_util && !j.ioengine.is_null()) {
        return Vec::new();
    }
    result
        .devices
        .iter()
        .filter(|d| d.holds_job_files && d.name != crate::intake::NULL_DEVICE)
        .collect()
}

/// fio's `stat_calc_lat` over a job's latency buckets: each bucket's share of the job's
/// reads, writes and trims in %, at least 0.01 for a bucket with any.
pub fn latency_distribution(e: &Entry) -> [f64; 32] {
    shares_of_data_ios(e, &e.lat_buckets.counts, 0.01)
}

/// Each of `counts` as a percentage of the job's reads, writes and trims
/// (`ddir_rw_sum(total_io_u)`), at least `floor` for a count above zero: fio's
/// `stat_calc_lat` (floor 0.01) and `stat_calc_dist` (floor 0.1).
fn shares_of_data_ios<const N: usize>(e: &Entry, counts: &[u64; N], floor: f64) -> [f64; N] {
    let total: u64 = e.stats.iter().map(|s| s.total_ios).sum();
    std::array::from_fn(|i| {
        let n = counts[i];
        if total == 0 {
            return 0.0;
        }
        let pct = n as f64 * 100.0 / total as f64;
        if pct < floor && n > 0 {
            floor
        } else {
            pct
        }
    })
}

/// fio's I/O depth distribution (`stat_calc_dist` over `io_u_map`): each depth bucket's
/// issues over the job's data I/Os (`ddir_rw_sum(total_io_u)`), so the syncs fio counts at
/// depth one (those not of `end_fsync`) lift the total past 100 % (a psync writer with
/// `fsync=8`: 1=112.4%), and a bucket with any issue shows at least 0.1 %.
pub fn depth_distribution(e: &Entry) -> [f64; 7] {
    shares_of_data_ios(e, &e.depth_hist, 0.1)
}

/// fio's submission and completion distributions (`io_u_submit`, `io_u_complete`) for
/// I/Os that go down `batch` at a time and are reaped one by one, in its buckets (0, 1-4,
/// 5-8, 9-16, 17-32, 33-64, more): all in the batch's bucket, or none for a job that did no
/// I/O.
pub fn batch_distribution(batch: u32, busy: bool) -> [f64; 7] {
    let edges = [0u32, 4, 8, 16, 32, 64];
    let at = edges.iter().position(|&edge| batch <= edge).map_or(6, |i| i.max(1));
    std::array::from_fn(|i| if busy && i == at { 100.0 } else { 0.0 })
}

/// Bytes (or I/Os) per second.
pub fn rate(amount: u64, runtime_ns: Nanos) -> f64 {
    if runtime_ns == 0 {
        0.0
    } else {
        amount as f64 * 1e9 / runtime_ns as f64
    }
}

/// Builds the entries in fio's order: processes in job order, with the processes of a
/// reporting group merged where their job asks for `group_reporting`.
pub fn entries(result: &SimResult, jobs: &JobFile) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    for (i, p) in result.processes.iter().enumerate() {
        let grouped = jobs.jobs[p.job].group_reporting;
        if grouped {
            if let Some(e) = out
                .iter_mut()
                .find(|e| e.group_id == p.group_id && jobs.jobs[e.job].group_reporting)
            {
                let stats = stats_as_fio_reports(p, jobs);
                for (mine, theirs) in e.stats.iter_mut().zip(stats.iter()) {
                    mine.merge(theirs);
                }
                e.sync.merge(&p.sync_stats);
                e.lat_buckets.merge(&p.lat_buckets);
                for (a, b) in e.depth_hist.iter_mut().zip(p.depth_hist.iter()) {
                    *a += b;
                }
                e.members.push(i);
                e.runtime_ns = e.runtime_ns.max(p.runtime_ns());
                for (d, r) in e.dir_runtime_ns.iter_mut().enumerate() {
                    *r = (*r).max(p.dir_runtime_ns(d));
                }
                e.job_runtime_ns += p.runtime_ns();
                e.cpu_ns += p.cpu_ns;
                if e.error.is_none() {
                    e.error.clone_from(&p.error);
                }
                if let Some(w) = p.ss.as_ref().and_then(|s| s.window.as_ref()) {
                    e.steadystate = Some(w.clone());
                }
                continue;
            }
        }
        out.push(Entry {
            name: p.name.clone(),
            group_id: p.group_id,
            job: p.job,
            members: vec![i],
            first_pid: p.owner.pid,
            stats: stats_as_fio_reports(p, jobs),
            sync: p.sync_stats.clone(),
            lat_buckets: p.lat_buckets.clone(),
            depth_hist: p.depth_hist,
            runtime_ns: p.runtime_ns(),
            dir_runtime_ns: [0, 1, 2].map(|d| p.dir_runtime_ns(d)),
            job_runtime_ns: p.runtime_ns(),
            cpu_ns: p.cpu_ns,
            error: p.error.clone(),
            latency_depth: p.lat_target.map(|l| l.qd),
            steadystate: p.ss.as_ref().and_then(|s| s.window.clone()),
        });
    }
    // unified_rw_reporting=mixed: each job's directions reported as one.
    for e in &mut out {
        if jobs.jobs[e.job].unified_rw_reporting == UnifiedRw::Mixed {
            *e = e.mixed();
        }
    }
    out
}

/// A process's statistics as fio reports them: synchronous engines have no submission
/// latency of their own (fio leaves `slat_ns` empty for psync and its kin).
fn stats_as_fio_reports(p: &crate::workload::Process, jobs: &JobFile) -> [DirStats; 3] {
    let mut stats = p.stats.clone();
    if !jobs.jobs[p.job].engine_is_async() {
        for s in &mut stats {
            s.slat_ns = crate::stats::Summary::default();
        }
    }
    stats
}

/// `ctime(3)`'s text of `secs` since the epoch, in UTC (`Thu Jan  1 00:00:00 1970`), as fio
/// prints its `time` field. Days to a civil date by Howard Hinnant's algorithm.
pub fn ctime(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        year
    )
}

#[cfg(test)]
mod ctime_tests {
    #[test]
    fn ctime_as_the_c_library_prints_it() {
        assert_eq!(super::ctime(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(super::ctime(951_782_400), "Tue Feb 29 00:00:00 2000");
        assert_eq!(super::ctime(1795498245), "Tue Nov 24 05:30:45 2026");
    }
}
