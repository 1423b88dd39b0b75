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
    let mut group_bw = Vec::<[f64; 3]>::new();
    for e in &entries {
        let g = e.group_id as usize;
        if group_bw.len() <= g {
            group_bw.resize(g + 1, [0.0; 3]);
        }
        for (d, total) in group_bw[g].iter_mut().enumerate() {
            *total += e.bw_bytes_per_sec(d);
        }
    }
    let mut disks = String::new();
    for d in &result.devices {
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
        let lat_total: u64 = e.lat_buckets.counts.iter().sum();
        for n in &e.lat_buckets.counts[10..32] {
            out.push_str(&format!(";{:.2}%", pct(*n, lat_total)));
        }
        out.push_str(&disks);
        out.push('\n');
    }
    out
}

fn pct(n: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        n as f64 * 100.0 / total as f64
    }
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
    let agg = if group_total_bw > 0.0 { bw_bytes * 100.0 / group_total_bw } else { 0.0 };
    let b = &s.bw_kib_samples;
    out.push_str(&format!(";{};{};{:.6}%;{:.6};{:.6}", b.min, b.max, agg, b.mean(), b.stddev()));
    out
}
