//! Text output in the shape of fio's `normal` format: a block per job, then the run status of
//! each reporting group, then disk statistics.

use std::fmt::Write;

use elevator_fio::{BlockSize, IoEngine, JobFile, RwMode, UnifiedRw};

use crate::report::num2str::{num2str, Units, SIG_FIGS};
use crate::report::{entries, Entry};
use crate::stats::Summary;
use crate::SimResult;

const DIR_NAMES: [&str; 3] = ["read", "write", "trim"];

/// Renders fio-like text.
pub fn render(result: &SimResult, jobs: &JobFile) -> String {
    let entries = entries(result, jobs);
    let mut out = String::new();
    for spec in &jobs.jobs {
        let bs = |b: &BlockSize| match b {
            BlockSize::Fixed { bytes } => format!("{bytes}B-{bytes}B"),
            BlockSize::Range { min_bytes, max_bytes } => format!("{min_bytes}B-{max_bytes}B"),
            BlockSize::Split { parts } => {
                let min = parts.iter().map(|p| p.0).min().unwrap_or(0);
                let max = parts.iter().map(|p| p.0).max().unwrap_or(0);
                format!("{min}B-{max}B")
            }
        };
        let _ = writeln!(
            out,
            "{}: (g={}): rw={}, bs=(R) {}, (W) {}, (T) {}, ioengine={}, iodepth={}",
            spec.name,
            result
                .processes
                .iter()
                .find(|p| jobs.jobs[p.job].name == spec.name)
                .map_or(0, |p| p.group_id),
            rw_name(spec.rw),
            bs(&spec.block_size[0]),
            bs(&spec.block_size[1]),
            bs(&spec.block_size[2]),
            engine_name(spec.ioengine),
            spec.iodepth
        );
    }
    let _ = writeln!(out, "elevator-{} (simulated)", env!("CARGO_PKG_VERSION"));
    let n = result.processes.len();
    let _ = writeln!(out, "Starting {n} process{}\n", if n > 1 { "es" } else { "" });
    let aggregates = super::group_aggregates(&entries);
    for e in &entries {
        job_block(
            &mut out,
            e,
            &jobs.jobs[e.job],
            aggregates[e.group_id as usize],
            result.started_ms,
        );
    }
    let groups = entries.iter().map(|e| e.group_id).max().map_or(0, |g| g + 1);
    for g in 0..groups {
        let members: Vec<&Entry> = entries.iter().filter(|e| e.group_id == g).collect();
        let _ = writeln!(out, "\nRun status group {g} (all jobs):");
        // unified_rw_reporting: MIXED for summed directions (the entries are summed
        // already); `both` adds a MIXED line over the directions' lines (fio's
        // show_mixed_group_stats).
        let unified =
            |u: UnifiedRw| members.iter().any(|e| jobs.jobs[e.job].unified_rw_reporting == u);
        let mut both: Option<GroupLine> = None;
        let i2p = members.first().is_none_or(|e| jobs.jobs[e.job].kb_base == 1024);
        for (d, name) in ["READ", "WRITE", "TRIM"].iter().enumerate() {
            // fio's __show_run_stats: a job that moved nothing this way has no runtime in
            // it and takes no part in the line (a writer beside readers is not their 0 B/s).
            let movers: Vec<&&Entry> = members.iter().filter(|e| e.stats[d].io_bytes > 0).collect();
            if movers.is_empty() {
                continue;
            }
            let io: u64 = movers.iter().map(|e| e.stats[d].io_bytes).sum();
            let runtimes = movers.iter().map(|e| e.dir_runtime_ns[d]);
            let run = (runtimes.clone().min().unwrap_or(0), runtimes.max().unwrap_or(0));
            let bws: Vec<f64> = movers.iter().map(|e| e.bw_bytes_per_sec(d)).collect();
            let lo = bws.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = bws.iter().cloned().fold(0.0, f64::max);
            // The group's aggregate over the same movers (fio's rs->agg), as each job's `per=`.
            let line = GroupLine { agg: aggregates[g as usize][d], lo, hi, io, run };
            let name = if unified(UnifiedRw::Mixed) && d == 0 { "MIXED" } else { name };
            group_line(&mut out, name, &line, i2p);
            both = Some(match both {
                None => line,
                Some(b) => GroupLine {
                    agg: b.agg + line.agg,
                    lo: b.lo.min(line.lo),
                    hi: b.hi.max(line.hi),
                    io: b.io + line.io,
                    run: (b.run.0.min(line.run.0), b.run.1.max(line.run.1)),
                },
            });
        }
        if let Some(b) = both.filter(|_| unified(UnifiedRw::Both)) {
            group_line(&mut out, "MIXED", &b, i2p);
        }
    }
    let disks = super::reported_disks(result, jobs);
    if !disks.is_empty() {
        let _ = writeln!(out, "\nDisk stats (read/write):");
    }
    for d in disks {
        let c = &d.counters;
        let util =
            if result.end_ns == 0 { 0.0 } else { c.busy_ns as f64 * 100.0 / result.end_ns as f64 };
        let _ = writeln!(
            out,
            "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:.2}%  [{}; {}]",
            d.name,
            c.ios[0],
            c.ios[1],
            c.merges[0],
            c.merges[1],
            c.ticks_ns[0] / 1_000_000,
            c.ticks_ns[1] / 1_000_000,
            (c.ticks_ns[0] + c.ticks_ns[1]) / 1_000_000,
            util,
            d.scheduler,
            d.description
        );
        // What the device model counted inside (an SSD's write amplification and GC).
        if !d.stats.is_empty() {
            let fields: Vec<String> = d
                .stats
                .iter()
                .map(|(k, v)| {
                    if v.fract() == 0.0 && v.abs() < 1e15 {
                        format!("{k}={v:.0}")
                    } else {
                        format!("{k}={v:.3}")
                    }
                })
                .collect();
            let _ = writeln!(out, "    {}", fields.join(", "));
        }
    }
    out
}

/// One line of a group's run status: aggregate, slowest and fastest job, bytes, runtimes.
#[derive(Clone, Copy)]
struct GroupLine {
    agg: f64,
    lo: f64,
    hi: f64,
    io: u64,
    run: (u64, u64),
}

/// fio's `show_group_stats` line; `i2p`: binary units first (`kb_base=1024`).
fn group_line(out: &mut String, name: &str, l: &GroupLine, i2p: bool) {
    let rate = |bytes_per_sec: f64, pow2| {
        num2str(bytes_per_sec as u64, SIG_FIGS, 1, pow2, Units::BytePerSec)
    };
    let size = |pow2| num2str(l.io, SIG_FIGS, 1, pow2, Units::Byte);
    let _ = writeln!(
        out,
        "{name:>7}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
        rate(l.agg, i2p),
        rate(l.agg, !i2p),
        rate(l.lo, i2p),
        rate(l.hi, i2p),
        rate(l.lo, !i2p),
        rate(l.hi, !i2p),
        size(i2p),
        size(!i2p),
        l.run.0 / 1_000_000,
        l.run.1 / 1_000_000
    );
}

/// A job's report; `agg` its group's aggregate bandwidth per direction (bytes/s).
/// `started_ms`: the run's wall-clock start (0 unless `--timestamp now`), whose `ctime` fio
/// prints after the pid, as the JSON report's `time` has it.
fn job_block(
    out: &mut String,
    e: &Entry,
    spec: &elevator_fio::JobSpec,
    agg: [f64; 3],
    started_ms: u64,
) {
    let _ = writeln!(
        out,
        "{}: (groupid={}, jobs={}): err={}: pid={}: {}",
        e.name,
        e.group_id,
        e.members.len(),
        // fio: `err= 0`, or `err=110 (file:..., func=..., error=...)`.
        e.error.as_ref().map_or_else(
            || " 0".to_string(),
            |x| format!("{} (func={}, error={})", x.errno, x.func, x.strerror())
        ),
        e.first_pid,
        super::ctime(started_ms / 1000)
    );
    if let Some((_, d)) = spec.options.iter().find(|(k, _)| k == "description") {
        let _ = writeln!(out, "  Description  : [{d}]");
    }
    let unified = spec.unified_rw_reporting;
    for (d, name) in DIR_NAMES.iter().enumerate() {
        if e.stats[d].total_ios == 0 {
            continue;
        }
        let name = if unified == UnifiedRw::Mixed { "mixed" } else { name };
        dir_block(out, e, d, name, spec, agg[d]);
    }
    // unified_rw_reporting=both: the directions summed besides (fio's show_mixed_ddir_status).
    if unified == UnifiedRw::Both {
        let m = e.mixed();
        if m.stats[0].total_ios > 0 {
            dir_block(out, &m, 0, "mixed", spec, agg.iter().sum());
        }
    }
    latency_lines(out, &super::latency_distribution(e));
    // fio's sync block (show_ddir_status for DDIR_SYNC): latencies and their percentiles.
    if e.sync.lat_ns.n > 0 {
        out.push_str("  fsync/fdatasync/sync_file_range:\n");
        lat_line(out, "sync", &e.sync.lat_ns);
        let list = &spec.percentile_list;
        let values: Vec<u64> = list.iter().map(|&p| e.sync.percentile_ns(p)).collect();
        percentile_block(out, "sync", list, &values, spec.percentile_precision as usize);
    }
    // fio's cpu line: user time is what the job spun (`thinktime_spin`); the simulator
    // keeps no system time, context switches or faults.
    let usr = e.usr_cpu_percent();
    let _ = writeln!(out, "  cpu          : usr={usr:.2}%, sys=0.00%, ctx=0, majf=0, minf=0");
    let total: u64 = e.depth_hist.iter().sum();
    let depths = super::depth_distribution(e);
    let pct = |i: usize| depths[i];
    let _ = writeln!(
        out,
        "  IO depths    : 1={:.1}%, 2={:.1}%, 4={:.1}%, 8={:.1}%, 16={:.1}%, 32={:.1}%, >=64={:.1}%",
        pct(0),
        pct(1),
        pct(2),
        pct(3),
        pct(4),
        pct(5),
        pct(6)
    );
    let batch = if spec.engine_is_async() { spec.iodepth_batch.max(1) } else { 1 };
    for (name, b) in [("submit", batch), ("complete", 1)] {
        let d = super::batch_distribution(b, total > 0 && spec.counts_batches());
        let _ = writeln!(
            out,
            "     {name:<9} : 0={:.1}%, 4={:.1}%, 8={:.1}%, 16={:.1}%, 32={:.1}%, 64={:.1}%, >=64={:.1}%",
            d[0], d[1], d[2], d[3], d[4], d[5], d[6]
        );
    }
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},{} short=0,0,0,0 dropped=0,0,0,0",
        e.stats[0].total_ios, e.stats[1].total_ios, e.stats[2].total_ios, e.sync.fsyncs
    );
    // fio 3.33 prints it for every job (its depth is the job's iodepth unless
    // latency_target searched for one); target and window in µs.
    let _ = writeln!(
        out,
        "     latency   : target={}, window={}, percentile={:.2}%, depth={}",
        spec.latency_target_ns.map_or(0, |t| t / 1000),
        spec.latency_window_ns / 1000,
        spec.latency_percentile,
        e.latency_depth.unwrap_or(spec.iodepth)
    );
    // fio's show_ss_normal.
    if let Some(w) = &e.steadystate {
        let (bw, iops) = w.means();
        let (kb, i2p) = (spec.kb_base, spec.kb_base == 1024);
        let bw_in = |pow2| num2str(bw / kb, SIG_FIGS, kb, pow2, Units::BytePerSec);
        let _ = writeln!(
            out,
            "  steadystate  : attained={}, bw={} ({}), iops={}, {}{}={:.3}{}",
            if w.attained { "yes" } else { "no" },
            bw_in(i2p),
            bw_in(!i2p),
            num2str(iops, SIG_FIGS, 1, false, Units::None),
            if w.spec.iops { "iops" } else { "bw" },
            if w.spec.slope { " slope" } else { " mean dev" },
            w.criterion,
            if w.spec.percent { "%" } else { "" }
        );
    }
}

/// One direction's block of a job's report: rates, latencies, percentiles, samples.
fn dir_block(
    out: &mut String,
    e: &Entry,
    d: usize,
    name: &str,
    spec: &elevator_fio::JobSpec,
    agg: f64,
) {
    let s = &e.stats[d];
    // fio's show_ddir_status, through num2str. fio divides by the runtime in whole ms; a
    // simulated job may run for less than one, so the rates here are over the exact runtime.
    let runt_ms = e.dir_runtime_ns[d] / 1_000_000;
    let (bw, iops) = (e.bw_bytes_per_sec(d) as u64, e.iops(d) as u64);
    let i2p = spec.kb_base == 1024;
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={} ({})({}/{}msec){}",
        num2str(iops, SIG_FIGS, 1, false, Units::None),
        num2str(bw, SIG_FIGS, 1, i2p, Units::BytePerSec),
        num2str(bw, SIG_FIGS, 1, !i2p, Units::BytePerSec),
        num2str(s.io_bytes, SIG_FIGS, 1, i2p, Units::Byte),
        runt_ms,
        // fio 3.33's zbd_write_status, on every write line (no zoned devices here: 0).
        if name == "write" { "; 0 zone resets" } else { "" }
    );
    lat_line(out, "slat", &s.slat_ns);
    lat_line(out, "clat", &s.clat_ns);
    lat_line(out, " lat", &s.lat_ns);
    let list = &spec.percentile_list;
    let precision = spec.percentile_precision as usize;
    if spec.clat_percentiles {
        let values: Vec<u64> = list.iter().map(|&p| s.clat_percentile_ns(p)).collect();
        percentile_block(out, "clat", list, &values, precision);
    }
    if spec.lat_percentiles {
        let values: Vec<u64> = list.iter().map(|&p| s.lat_percentile_ns(p)).collect();
        percentile_block(out, "lat", list, &values, precision);
    }
    bw_samples_line(out, &s.bw_kib_samples, agg, spec.kb_base);
    let i = &s.iops_samples;
    if i.n > 0 {
        let _ = writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.02}, stdev={:5.02}, samples={}",
            i.min,
            i.max,
            i.mean(),
            i.stddev(),
            i.n
        );
    }
}

/// fio's bandwidth sample line (`show_ddir_status`), if there are samples: KiB/s (`kB/s`
/// under `kb_base=1000`), MiB/s once the mean passes `kb_base`², and the job's share of its
/// group's aggregate `agg` (bytes/s).
fn bw_samples_line(out: &mut String, s: &Summary, agg: f64, kb_base: u64) {
    if s.n == 0 {
        return;
    }
    let per = super::percent_of_group(s.mean(), agg);
    let base = kb_base as f64;
    let (mut min, mut max, mut mean, mut dev) = (s.min, s.max, s.mean(), s.stddev());
    let mut unit = if kb_base == 1024 { "KiB" } else { "kB" };
    if mean > base * base {
        (min, max) = ((min as f64 / base) as u64, (max as f64 / base) as u64);
        (mean, dev) = (mean / base, dev / base);
        unit = "MiB";
    }
    let _ = writeln!(
        out,
        "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={per:3.2}%, avg={mean:5.02}, stdev={dev:5.02}, samples={}",
        s.n
    );
}

/// fio's `display_lat`: in µs or ms only when the minimum, the maximum and the deviation
/// all call for it (`nsec_to_usec`, `nsec_to_msec`); min and max through num2str.
fn lat_line(out: &mut String, name: &str, s: &Summary) {
    if s.n == 0 {
        return;
    }
    let (min, max, dev) = (s.min, s.max, s.stddev());
    let div = if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        1_000_000
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        1000
    } else {
        1
    };
    let unit = match div {
        1_000_000 => "msec",
        1000 => "usec",
        _ => "nsec",
    };
    let _ = writeln!(
        out,
        "    {name} ({unit}): min={}, max={}, avg={:5.02}, stdev={:5.02}",
        num2str(min / div, 6, 1, false, Units::None),
        num2str(max / div, 6, 1, false, Units::None),
        s.mean() / div as f64,
        dev / div as f64
    );
}

/// fio's `show_latencies`: the latency distribution's non-empty buckets, five to a line, in
/// ns, µs and ms.
fn latency_lines(out: &mut String, shares: &[f64; 32]) {
    const EDGES: [&str; 10] = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"];
    let ms_edges: Vec<&str> = EDGES.iter().copied().chain(["2000", ">=2000"]).collect();
    let ranges: [(&str, &[&str], &[f64]); 3] = [
        ("nsec", &EDGES, &shares[..10]),
        ("usec", &EDGES, &shares[10..20]),
        ("msec", &ms_edges, &shares[20..]),
    ];
    for (unit, edges, values) in ranges {
        let shown: Vec<String> = edges
            .iter()
            .zip(values)
            .filter(|(_, &v)| v > 0.0)
            .map(|(edge, v)| format!("{edge}={v:3.2}%"))
            .collect();
        for line in shown.chunks(5) {
            let _ = writeln!(out, "  lat ({unit})   : {}", line.join(", "));
        }
    }
}

/// fio picks the unit from the largest value: nsec, usec or msec.
/// fio's `show_clat_percentiles`: the unit from the smallest and largest value (msec when
/// the smallest is over 2 ms and the largest over 100 ms, usec over 2 µs and 100 µs, nsec
/// otherwise; values rounded up into it), each percentile with `precision` decimals, as
/// many to a line as fit in 80 columns.
fn percentile_block(
    out: &mut String,
    pre: &str,
    list: &[f64],
    values_ns: &[u64],
    precision: usize,
) {
    let (Some(&minv), Some(&maxv)) = (values_ns.iter().min(), values_ns.iter().max()) else {
        return;
    };
    let (unit, scale_down) = if minv > 2_000_000 && maxv > 99_999_999 {
        ("msec", 2)
    } else if minv > 2000 && maxv > 99_999 {
        ("usec", 1)
    } else {
        ("nsec", 0)
    };
    let divisor = 1000u64.pow(scale_down);
    let time_width = 5.max((maxv / divisor).max(1).ilog10() as usize + 1);
    let per_line = (80 - 7) / (precision + 10 + time_width);
    let _ = write!(out, "    {pre} percentiles ({unit}):\n     |");
    for (j, (&p, &v)) in list.iter().zip(values_ns).enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let v = (0..scale_down).fold(v, |v, _| v.div_ceil(1000));
        let last = j == list.len() - 1;
        let _ = write!(
            out,
            " {p:width$.precision$}th=[{v:time_width$}]{}",
            if last { '\n' } else { ',' },
            width = precision + 3
        );
        if !last && j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// fio's own spelling of `rw=`.
fn rw_name(rw: RwMode) -> &'static str {
    match rw {
        RwMode::Read => "read",
        RwMode::Write => "write",
        RwMode::Trim => "trim",
        RwMode::RandRead => "randread",
        RwMode::RandWrite => "randwrite",
        RwMode::RandTrim => "randtrim",
        RwMode::ReadWrite => "rw",
        RwMode::RandRw => "randrw",
    }
}

/// fio's own spelling of `ioengine=`.
fn engine_name(engine: IoEngine) -> &'static str {
    engine.name()
}
