//! fio's terse output, version 3 (`--output-format=terse`): one `;`-separated line per job
//! (or reporting group), for scripts that cut fields by number.
//!
//! Fields, as fio 3.33 writes them: `3;VERSION;jobname;groupid;error`; then for reads and for
//! writes (no trims in version 3): `io_kbytes;bw_KiB/s;iops;runtime_ms`, submission,
//! completion and total latency each as `min;max;mean;stddev` in µs with the completion
//! percentiles between them (20 fields `P%=µs`, unused ones `0%=0`), and bandwidth
//! `min;max;agg%;mean;stddev`; `usr%;sys%;ctx;majf;minf` (zeros: no host CPU is simulated);
//! I/O depths 1..>=64; latency buckets 2..1000 µs and 2..>=2000 ms; then per device
//! `name;read_ios;write_ios;read_merges;write_merges;read_ticks;write_ticks;in_queue;util%`.
//! With `unified_rw_reporting=mixed` one summed direction stands for reads and writes; with
//! `both` it follows them.

use elevator_fio::{JobFile, UnifiedRw};

use crate::report::{entries, Entry};
use crate::stats::{DirStats, Summary};
use crate::SimResult;

/// Percentile fields per direction in version 3 (fio's `FIO_IO_U_LIST_MAX_LEN`).
const PERCENTILE_FIELDS: usize = 20;

/// Renders every job's terse line.
pub fn render(result: &SimResult, jobs: &JobFile) -> String {
    let entries = entries(result, jobs);
    let group_bw = super::group_aggregates(&entries);
    let mut disks = String::new();
    for d in super::reported_disks(result, jobs) {
        let c = &d.counters;
        let util =
            if result.end_ns == 0 { 0.0 } else { c.busy_ns as f64 * 100.0 / result.end_ns as f64 };
        disks.push_str(&format!(
            ";{};{};{};{};{};{};{};{};{:.2}%",
            d.name,
            c.ios[0],
            c.ios[1],
            c.merges[0],
            c.merges[1],
            c.ticks_ns[0] / 1_000_000,
            c.ticks_ns[1] / 1_000_000,
            (c.ticks_ns[0] + c.ticks_ns[1]) / 1_000_000,
            util.min(100.0)
        ));
    }
    let mut out = String::new();
    for e in &entries {
        out.push_str(&format!(
            "3;elevator-{};{};{};{}",
            env!("CARGO_PKG_VERSION"),
            e.name,
            e.group_id,
            e.error.as_ref().map_or(0, |x| x.errno)
        ));
        // unified_rw_reporting=mixed: the summed directions only, in the reads' place.
        let dirs = if jobs.jobs[e.job].unified_rw_reporting == UnifiedRw::Mixed { 1 } else { 2 };
        for (d, &total) in group_bw[e.group_id as usize].iter().take(dirs).enumerate() {
            out.push_str(&ddir(e, &jobs.jobs[e.job], d, total));
        }
        // `both`: the summed directions after them (fio's show_mixed_ddir_status_terse).
        if jobs.jobs[e.job].unified_rw_reporting == UnifiedRw::Both {
            let total: f64 = group_bw[e.group_id as usize].iter().sum();
            out.push_str(&ddir(&e.mixed(), &jobs.jobs[e.job], 0, total));
        }
        out.push_str(";0.000000%;0.000000%;0;0;0");
        for share in super::depth_distribution(e) {
            out.push_str(&format!(";{share:.1}%"));
        }
        for share in latency_shares(e) {
            if share.is_nan() {
                // glibc's `%3.2f` of x86's 0.0 / 0.0.
                out.push_str(";-nan%");
            } else {
                out.push_str(&format!(";{share:.2}%"));
            }
        }
        out.push_str(&disks);
        out.push('\n');
    }
    out
}

/// The latency fields, 2 µs up to 2000 ms and over, as fio's terse writes them
/// (`stat_calc_lat_nu`, `stat_calc_lat_m`): the text report's shares (at least 0.01 % for a
/// bucket with any), with the nanosecond buckets' share added to the first, unfloored. A job
/// that did no I/O divides nothing by nothing there, NaN, and fio prints it.
fn latency_shares(e: &Entry) -> [f64; 22] {
    let shares = super::latency_distribution(e);
    let data_ios: u64 = e.stats.iter().map(|s| s.total_ios).sum();
    let ns_ios: u64 = e.lat_buckets.counts[..10].iter().sum();
    let mut out: [f64; 22] = std::array::from_fn(|i| shares[10 + i]);
    out[0] += 100.0 * ns_ios as f64 / data_ios as f64;
    out
}

/// `min;max;mean;stddev` in µs.
fn lat_us(s: &Summary) -> String {
    if s.n == 0 {
        return ";0;0;0.000000;0.000000".to_string();
    }
    format!(";{};{};{:.6};{:.6}", s.min / 1000, s.max / 1000, s.mean() / 1e3, s.stddev() / 1e3)
}

fn ddir(e: &Entry, spec: &elevator_fio::JobSpec, d: usize, group_total_bw: f64) -> String {
    let s: &DirStats = &e.stats[d];
    let bw_bytes = e.bw_bytes_per_sec(d);
    let runtime_ms = if s.total_ios > 0 { e.dir_runtime_ns[d] / 1_000_000 } else { 0 };
    let mut out = format!(
        ";{};{};{};{}",
        s.io_bytes / 1024,
        (bw_bytes / 1024.0) as u64,
        e.iops(d) as u64,
        runtime_ms
    );
    out.push_str(&lat_us(&s.slat_ns));
    out.push_str(&lat_us(&s.clat_ns));
    // fio's terse percentiles: of total latency with lat_percentiles, else of completion
    // latency with clat_percentiles, else none.
    let at = |p: f64| {
        if spec.lat_percentiles {
            s.lat_percentile_ns(p)
        } else {
            s.clat_percentile_ns(p)
        }
    };
    let list: &[f64] =
        if spec.lat_percentiles || spec.clat_percentiles { &spec.percentile_list } else { &[] };
    for i in 0..PERCENTILE_FIELDS {
        match list.get(i) {
            Some(&p) => {
                let v = if s.total_ios > 0 { at(p) / 1000 } else { 0 };
                out.push_str(&format!(";{p:.6}%={v}"));
            }
            None => out.push_str(";0%=0"),
        }
    }
    out.push_str(&lat_us(&s.lat_ns));
    let b = &s.bw_kib_samples;
    if b.n == 0 {
        out.push_str(";0;0;0.000000%;0.000000;0.000000");
    } else {
        let agg = share_of_group(b.mean(), group_total_bw);
        out.push_str(&format!(";{};{};{agg:.6}%;{:.6};{:.6}", b.min, b.max, b.mean(), b.stddev()));
    }
    out
}

/// fio's terse `p_of_agg`: the mean bandwidth sample (KiB/s) as a percentage of the group's
/// aggregate (`rs->agg`, bytes/s) in whole KiB/s, at most 100; 100 when the aggregate is
/// zero. Unlike the text and JSON reports' `convert_agg_kbytes_percent`, the mean is not
/// truncated and any aggregate above zero divides.
fn share_of_group(mean_kib: f64, agg_bytes: f64) -> f64 {
    let agg_kib = (agg_bytes as u64 / 1024) as f64;
    if agg_bytes as u64 == 0 {
        100.0
    } else {
        (mean_kib * 100.0 / agg_kib).min(100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::share_of_group;

    #[test]
    fn a_job_s_share_is_over_the_aggregate_in_whole_kib() {
        // 2047 B/s is 1 KiB/s to fio's integer division: a 1.5 KiB/s mean is 150 %, cut to 100.
        assert_eq!(share_of_group(1.5, 2047.0), 100.0);
        assert_eq!(share_of_group(0.5, 2047.0), 50.0);
        // The mean is not truncated (the text report's convert_agg_kbytes_percent truncates it).
        assert_eq!(share_of_group(512.5, 1024.0 * 1025.0), 50.0);
        assert_eq!(share_of_group(10.0, 0.0), 100.0);
    }
}
