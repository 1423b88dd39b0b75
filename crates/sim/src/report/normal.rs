//! Text output in the shape of fio's `normal` format: a block per job, then the run status of
//! each reporting group, then disk statistics.

use std::fmt::Write;

use elevator_fio::{BlockSize, IoEngine, JobFile, RwMode, UnifiedRw};

use crate::report::{entries, rate, Entry};
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
    let _ = writeln!(out, "Starting {} processes\n", result.processes.len());
    let aggregates = super::group_aggregates(&entries);
    for e in &entries {
        job_block(&mut out, e, &jobs.jobs[e.job], aggregates[e.group_id as usize]);
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
        for (d, name) in ["READ", "WRITE", "TRIM"].iter().enumerate() {
            let io: u64 = members.iter().map(|e| e.stats[d].io_bytes).sum();
            if io == 0 {
                continue;
            }
            let run_max = members.iter().map(|e| e.runtime_ns).max().unwrap_or(0);
            let run = (members.iter().map(|e| e.runtime_ns).min().unwrap_or(0), run_max);
            let bws: Vec<f64> = members.iter().map(|e| e.bw_bytes_per_sec(d)).collect();
            let lo = bws.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = bws.iter().cloned().fold(0.0, f64::max);
            let line = GroupLine { agg: rate(io, run_max), lo, hi, io, run };
            let name = if unified(UnifiedRw::Mixed) && d == 0 { "MIXED" } else { name };
            group_line(&mut out, name, &line);
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
            group_line(&mut out, "MIXED", &b);
        }
    }
    let _ = writeln!(out, "\nDisk stats (read/write):");
    for d in &result.devices {
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

fn group_line(out: &mut String, name: &str, l: &GroupLine) {
    let _ = writeln!(
        out,
        "{name:>7}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
        bin_rate(l.agg),
        dec_rate(l.agg),
        bin_rate(l.lo),
        bin_rate(l.hi),
        dec_rate(l.lo),
        dec_rate(l.hi),
        bin_size(l.io),
        dec_size(l.io),
        l.run.0 / 1_000_000,
        l.run.1 / 1_000_000
    );
}

/// A job's report; `agg` its group's aggregate bandwidth per direction (bytes/s).
fn job_block(out: &mut String, e: &Entry, spec: &elevator_fio::JobSpec, agg: [f64; 3]) {
    let _ = writeln!(
        out,
        "{}: (groupid={}, jobs={}): err={}: pid={}",
        e.name,
        e.group_id,
        e.members.len(),
        // fio: `err= 0`, or `err=110 (file:..., func=..., error=...)`.
        e.error.as_ref().map_or_else(
            || " 0".to_string(),
            |x| format!("{} (func={}, error={})", x.errno, x.func, x.strerror())
        ),
        e.first_pid
    );
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
    let pct =
        |i: usize| if total == 0 { 0.0 } else { e.depth_hist[i] as f64 * 100.0 / total as f64 };
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
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},{} short=0,0,0,0 dropped=0,0,0,0",
        e.stats[0].total_ios, e.stats[1].total_ios, e.stats[2].total_ios, e.sync.fsyncs
    );
    // fio's show_ss_normal.
    if let Some(w) = &e.steadystate {
        let (bw, iops) = w.means();
        let _ = writeln!(
            out,
            "  steadystate  : attained={}, bw={} ({}), iops={}, {}{}={:.3}{}",
            if w.attained { "yes" } else { "no" },
            bin_rate(bw as f64),
            dec_rate(bw as f64),
            short_count(iops as f64),
            if w.spec.iops { "iops" } else { "bw" },
            if w.spec.slope { " slope" } else { " mean dev" },
            w.criterion,
            if w.spec.percent { "%" } else { "" }
        );
    }
    out.push('\n');
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
    let iops = e.iops(d);
    let bw = e.bw_bytes_per_sec(d);
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={} ({})({}/{}msec)",
        short_count(iops),
        bin_rate(bw),
        dec_rate(bw),
        bin_size(s.io_bytes),
        e.dir_runtime_ns[d] / 1_000_000
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

fn lat_line(out: &mut String, name: &str, s: &Summary) {
    if s.n == 0 {
        return;
    }
    let (unit, div) = unit_for(s.max);
    let d = div as f64;
    let _ = writeln!(
        out,
        "    {name} ({unit}): min={}, max={}, avg={:.2}, stdev={:.2}",
        s.min / div,
        s.max / div,
        s.mean() / d,
        s.stddev() / d
    );
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

fn unit_for(max_ns: u64) -> (&'static str, u64) {
    if max_ns >= 10_000_000 {
        ("msec", 1_000_000)
    } else if max_ns >= 10_000 {
        ("usec", 1_000)
    } else {
        ("nsec", 1)
    }
}

fn short_count(x: f64) -> String {
    if x >= 10_000.0 {
        format!("{:.0}k", x / 1000.0)
    } else {
        format!("{x:.0}")
    }
}

fn bin_rate(bytes_per_sec: f64) -> String {
    format!("{}/s", bin_size(bytes_per_sec as u64))
}

fn dec_rate(bytes_per_sec: f64) -> String {
    format!("{}/s", dec_size(bytes_per_sec as u64))
}

fn bin_size(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 * 10.0 {
        format!("{:.1}GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 * 10.0 {
        format!("{:.1}MiB", b / (1u64 << 20) as f64)
    } else if b >= 10.0 * 1024.0 {
        format!("{:.1}KiB", b / 1024.0)
    } else {
        format!("{bytes}B")
    }
}

fn dec_size(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e10 {
        format!("{:.1}GB", b / 1e9)
    } else if b >= 1e7 {
        format!("{:.1}MB", b / 1e6)
    } else if b >= 1e4 {
        format!("{:.1}kB", b / 1e3)
    } else {
        format!("{bytes}B")
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
