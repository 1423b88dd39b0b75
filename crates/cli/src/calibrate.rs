//! `elevator calibrate TARGET`: probes a block device or a file on one (O_DIRECT, io_uring,
//! read-only unless `--write`), fits the HDD or flash model, writes a topology file, replays
//! a held-out workload on both and prints the model's error and the `io.cost.model` line.
//! The work is `elevator_calibrate`'s; this module parses arguments and prints.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};
use elevator_calibrate::fit::{Facts, Model};
use elevator_calibrate::holdout::Cell;
use elevator_calibrate::probe::{MAX_BUDGET_NS, MIN_BUDGET_NS};
use elevator_calibrate::recording::{Recorder, Recording, ReplayBackend};
use elevator_calibrate::target::{self, Kind};
use elevator_calibrate::uring::UringBackend;
use elevator_calibrate::{calibrate, Options, Report, Stage};
use indicatif::{ProgressBar, ProgressStyle};

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Normal,
    Json,
}

#[derive(Args)]
pub struct CalibrateArgs {
    /// A block device or a file on one (at least 64 MiB, written: no holes).
    #[arg(required_unless_present = "replay")]
    pub target: Option<PathBuf>,
    /// Wall time for probing and the held-out replay (e.g. 60s, 5m; 1s to 24h).
    #[arg(long, default_value = "60s")]
    pub budget: String,
    /// Allow writes: write-cache, read-after-write and sustained-write probes. They
    /// overwrite the target's contents.
    #[arg(long)]
    pub write: bool,
    /// Also write everything the device answered (every phase's latencies) to FILE, as JSON,
    /// for `--replay`.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Calibrate again from a `--record` file instead of a device: the same fit, held-out
    /// error and topology, from the numbers the device gave then.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["target", "write", "budget", "seed", "record"])]
    pub replay: Option<PathBuf>,
    /// Where to write the fitted topology.
    #[arg(long, default_value = "calibrated.toml")]
    pub topology: PathBuf,
    /// The device's name in the topology (default: the kernel's name of the disk, else cal0).
    #[arg(long)]
    pub name: Option<String>,
    /// Seeds every request list (same seed, same requests).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Draw each held-out cell's access-time CDFs, device and model, as SVG in DIR.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "normal")]
    pub output_format: Format,
}

/// `60`, `60s`, `1.5m`, `2min`, `1h`, `500ms`: nanoseconds within the accepted range.
pub fn parse_budget(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let err = || format!("--budget `{text}`: expected a duration such as 60s, 5m or 1h");
    let v: f64 = num.parse().map_err(|_| err())?;
    let scale = match unit.trim() {
        "" | "s" | "sec" => 1e9,
        "ms" => 1e6,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return Err(err()),
    };
    let ns = v * scale;
    if !ns.is_finite() || ns < MIN_BUDGET_NS as f64 || ns > MAX_BUDGET_NS as f64 {
        return Err(format!("--budget `{text}` must lie between 1s and 24h"));
    }
    Ok(ns as u64)
}

pub fn run(args: &CalibrateArgs) -> Result<(), String> {
    if let Some(n) = &args.name {
        if n.is_empty()
            || n.len() > 64
            || !n.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(format!("--name `{n}`: up to 64 letters, digits, '-', '_' or '.'"));
        }
    }
    let (report, warnings, opts) = match &args.replay {
        Some(path) => replay(args, path)?,
        None => measure(args)?,
    };
    std::fs::write(&args.topology, &report.topology)
        .map_err(|e| format!("{}: {e}", args.topology.display()))?;
    if let Some(dir) = &args.plot {
        plot(dir, &report.cells)?;
    }
    match args.output_format {
        Format::Normal => print!("{}", normal(args, &opts, &report, &warnings)),
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&json(args, &opts, &report, &warnings)).expect("json")
        ),
    }
    Ok(())
}

/// Probes the target, fits, replays the held-out workload on it; with `--record`, keeps
/// what it answered.
fn measure(args: &CalibrateArgs) -> Result<(Report, Vec<String>, Options), String> {
    let Some(path) = &args.target else { unreachable!("clap asks for TARGET without --replay") };
    let budget_ns = parse_budget(&args.budget)?;
    let target = target::open(path, args.write)?;
    let warnings = target.warnings.clone();
    let kind = target.kind;
    let name =
        args.name.clone().or_else(|| target.hints.device.clone()).unwrap_or_else(|| "cal0".into());
    let mut backend = UringBackend::new(target, args.write)?;
    let opts = Options {
        budget_ns,
        write: args.write,
        seed: args.seed,
        name,
        source: path.display().to_string(),
    };
    let bar = ProgressBar::new(1);
    bar.set_style(
        ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(250));
    let mut progress = |stage, i, n, what: &str| {
        let s = match stage {
            Stage::Probe => "probing",
            Stage::Fit => "fitting",
            Stage::Holdout => "held-out replay",
        };
        bar.set_length(n as u64);
        bar.set_position(i as u64);
        bar.set_message(format!("{s}: {what}"));
    };
    let (report, phases) = if args.record.is_some() {
        let mut recorder = Recorder::new(&mut backend);
        let report = calibrate(&mut recorder, &opts, &mut progress);
        (report, recorder.phases)
    } else {
        (calibrate(&mut backend, &opts, &mut progress), Vec::new())
    };
    bar.finish_and_clear();
    let report = report?;
    let mut warnings = warnings;
    warnings.extend(direct_io_checks(&backend, &report, kind));
    if let Some(file) = &args.record {
        Recording::new(&opts, &report, warnings.clone(), phases).save(file)?;
    }
    Ok((report, warnings, opts))
}

/// Calibrates from a recording: no device, the same phases answered as the device did.
fn replay(args: &CalibrateArgs, path: &Path) -> Result<(Report, Vec<String>, Options), String> {
    let rec = Recording::load(path)?;
    let opts = rec.options(args.name.as_deref());
    let warnings = rec.warnings.clone();
    let mut backend = ReplayBackend::new(rec, path);
    let report = calibrate(&mut backend, &opts, &mut |_, _, _, _| {})?;
    if backend.unused_phases() > 0 {
        return Err(format!(
            "{}: {} phases recorded past those this calibration asks for: it was made by an elevator with other probes",
            path.display(),
            backend.unused_phases()
        ));
    }
    Ok((report, warnings, opts))
}

/// Whether O_DIRECT kept the reads out of this machine's page cache, and whether the reads
/// were faster than a medium can be (a cache below: the host's, under a virtual disk).
fn direct_io_checks(backend: &UringBackend, r: &Report, kind: Kind) -> Vec<String> {
    let mut w = Vec::new();
    let t = backend.target();
    let ranges = r.measurements.read_ranges(256);
    match target::page_cache_resident(&t.file, t.size_bytes, &ranges) {
        Some(f) if f > 0.01 => w.push(format!(
            "O_DIRECT was not honoured: {:.0} % of the pages read are in this machine's page cache, so the file system served the probes through it; the model is of the cache, not the device",
            f * 100.0
        )),
        Some(_) => {}
        None => w.push("could not check the page cache (mmap refused): O_DIRECT assumed honoured".into()),
    }
    let qd1 = r.fit.facts.qd1_4k_read_us;
    if matches!(r.fit.model, Model::Ssd(_)) && qd1 < 40.0 {
        w.push(format!(
            "4 KiB reads at QD1 take {qd1:.1} µs, faster than NAND flash reads (tens of µs and more): a cache answers below this system ({}), such as a hypervisor's page cache under a virtual disk; the model is of what this system sees, and will move with that cache",
            if kind == Kind::File { "under the file's device" } else { "under the device" }
        ));
    }
    w
}

fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:+.1}%", x * 100.0)
    } else {
        "-".into()
    }
}

fn facts_text(f: &Facts) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "  4 KiB random read, QD1: {:.1} µs", f.qd1_4k_read_us);
    let iops: Vec<String> = f.iops_by_depth.iter().map(|(d, i)| format!("QD{d} {i:.0}")).collect();
    let _ = writeln!(s, "  4 KiB random-read IOPS: {}", iops.join(", "));
    let _ =
        writeln!(s, "  sequential 1 MiB reads, QD8: {:.1} MB/s", f.seq_read_bytes_per_sec / 1e6);
    let z: Vec<String> = f.zone_bytes_per_sec.iter().map(|b| format!("{:.0}", b / 1e6)).collect();
    let _ = writeln!(s, "  sequential MB/s by region, outer to inner: {}", z.join(" "));
    let sk: Vec<String> =
        f.seek_curve_us.iter().map(|(d, t)| format!("{}M {:.2}", d >> 20, t / 1e3)).collect();
    let _ = writeln!(s, "  read time (ms) against walk step: {}", sk.join(", "));
    if let Some(r) = f.rotation_ms {
        let _ = writeln!(s, "  rotation: {r:.2} ms ({:.0} rpm)", 60e3 / r);
    }
    if let (Some(w), Some(ws)) = (f.write_4k_us, f.write_4k_sync_us) {
        let _ = writeln!(
            s,
            "  4 KiB write, QD1: {w:.1} µs, with RWF_DSYNC {ws:.1} µs: write cache {}",
            if f.write_cache == Some(true) { "on" } else { "off" }
        );
    }
    if let Some(r) = f.read_after_write_us {
        let _ = writeln!(
            s,
            "  read right after writing it: {r:.1} µs (random read {:.1} µs)",
            f.qd1_4k_read_us
        );
    }
    if !f.sustained_bytes_per_sec.is_empty() {
        let v: Vec<String> =
            f.sustained_bytes_per_sec.iter().map(|b| format!("{:.0}", b / 1e6)).collect();
        let _ = writeln!(s, "  sustained 128 KiB random writes, MB/s per slice: {}", v.join(" "));
    }
    s
}

fn model_text(m: &Model) -> String {
    match m {
        Model::Ssd(p) => format!(
            "{:?} flash: {} queue(s) × {}, controller {} core(s) × {:.2} µs, page read {:.2} µs, program {:.0} µs, host link {:.0} MB/s, channels {} × {:.0} MB/s",
            p.interface,
            p.submission_queues,
            p.queue_depth,
            p.controller_cores,
            p.controller_overhead_us,
            p.page_read_us,
            p.page_program_us,
            p.host_bytes_per_sec / 1e6,
            p.channels,
            p.channel_bytes_per_sec / 1e6
        ),
        Model::Hdd(p) => {
            let outer = p.zones.first().map_or(0, |z| z.sectors_per_track);
            let inner = p.zones.last().map_or(0, |z| z.sectors_per_track);
            format!(
                "disk: {:.0} rpm, {} zones ({outer} → {inner} sectors/track), overhead {:.3} ms, queue depth {}, write cache {}",
                p.rpm,
                p.zones.len(),
                p.read_overhead_ms,
                p.queue_depth,
                if p.write_cache { "on" } else { "off" }
            )
        }
    }
}

fn normal(args: &CalibrateArgs, opts: &Options, r: &Report, warnings: &[String]) -> String {
    let mut s = String::new();
    let h = &r.hints;
    let _ = writeln!(
        s,
        "target: {} ({:.2} GiB{}), O_DIRECT, {}{}",
        opts.source,
        r.capacity_bytes as f64 / (1u64 << 30) as f64,
        match (&h.device, &h.devno) {
            (Some(d), Some(n)) => format!(", on {d} {n}"),
            _ => String::new(),
        },
        if opts.write { "read-write" } else { "read-only" },
        match &args.replay {
            Some(p) => format!(", replayed from {}", p.display()),
            None => String::new(),
        }
    );
    let _ = writeln!(s, "verdict: {}", r.fit.facts.rotational_verdict);
    let _ = writeln!(s, "measured:");
    s.push_str(&facts_text(&r.fit.facts));
    let _ = writeln!(s, "model: {}", model_text(&r.fit.model));
    for n in &r.fit.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    let _ = writeln!(s, "fit, model against the probes:");
    for r in &r.fit.residuals {
        let _ = writeln!(
            s,
            "  {:<18} {:>8} {:>12.1} {:>12.1} {:>8}",
            r.probe,
            r.quantity,
            r.measured,
            r.model,
            pct(r.model / r.measured - 1.0)
        );
    }
    let _ = writeln!(s, "topology: {}", args.topology.display());
    let _ = writeln!(
        s,
        "held-out replay, device vs model (demerit: DiskSim's rms of the access-time CDFs):"
    );
    let _ = writeln!(
        s,
        "  {:<16} {:>3} {:>7} {:>10} {:>10} {:>7} {:>9} {:>9} {:>7} {:>9} {:>17} {:>17}",
        "cell",
        "QD",
        "I/Os",
        "IOPS dev",
        "IOPS mod",
        "err",
        "MB/s dev",
        "MB/s mod",
        "err",
        "demerit",
        "p50 µs dev/mod",
        "p99 µs dev/mod"
    );
    for c in &r.cells {
        let (a50, a99) = Cell::p50_p99_us(&c.real);
        let (b50, b99) = Cell::p50_p99_us(&c.sim);
        let _ = writeln!(
            s,
            "  {:<16} {:>3} {:>7} {:>10.0} {:>10.0} {:>7} {:>9.1} {:>9.1} {:>7} {:>7.3}ms {:>17} {:>17}",
            c.name,
            c.depth,
            c.real.issued(),
            c.real.iops(),
            c.sim.iops(),
            pct(c.iops_error()),
            c.real.bytes_per_sec() / 1e6,
            c.sim.bytes_per_sec() / 1e6,
            pct(c.bw_error()),
            c.demerit_ms,
            format!("{a50:.0}/{b50:.0}"),
            format!("{a99:.0}/{b99:.0}")
        );
    }
    let _ = writeln!(s, "io.cost.model: {}", r.iocost.line(h.devno.as_deref()));
    let from_model = r.iocost.from_model();
    if !from_model.is_empty() {
        let _ = writeln!(
            s,
            "  ({} from the model, not measured: give --write to measure)",
            from_model.join(", ")
        );
    }
    for w in warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

fn json(
    args: &CalibrateArgs,
    opts: &Options,
    r: &Report,
    warnings: &[String],
) -> serde_json::Value {
    let f = &r.fit.facts;
    let cells: Vec<serde_json::Value> = r
        .cells
        .iter()
        .map(|c| {
            let (a50, a99) = Cell::p50_p99_us(&c.real);
            let (b50, b99) = Cell::p50_p99_us(&c.sim);
            serde_json::json!({
                "cell": c.name, "depth": c.depth, "ios": c.real.issued(),
                "iops_device": c.real.iops(), "iops_model": c.sim.iops(), "iops_error": c.iops_error(),
                "bytes_per_sec_device": c.real.bytes_per_sec(), "bytes_per_sec_model": c.sim.bytes_per_sec(),
                "bw_error": c.bw_error(), "demerit_ms": c.demerit_ms,
                "p50_us_device": a50, "p50_us_model": b50, "p99_us_device": a99, "p99_us_model": b99,
            })
        })
        .collect();
    let params = match &r.fit.model {
        Model::Hdd(p) => serde_json::to_value(p),
        Model::Ssd(p) => serde_json::to_value(p),
    }
    .unwrap_or(serde_json::Value::Null);
    serde_json::json!({
        "target": opts.source,
        "replayed_from": args.replay.as_ref().map(|p| p.display().to_string()),
        "capacity_bytes": r.capacity_bytes,
        "write": opts.write,
        "device": r.hints.device, "devno": r.hints.devno,
        "verdict": f.rotational_verdict,
        "model": r.fit.model.kind_name(),
        "params": params,
        "notes": r.fit.notes,
        "residuals": r.fit.residuals.iter().map(|x| serde_json::json!({
            "probe": x.probe, "quantity": x.quantity, "measured": x.measured, "model": x.model,
        })).collect::<Vec<_>>(),
        "measured": {
            "qd1_4k_read_us": f.qd1_4k_read_us,
            "iops_by_depth": f.iops_by_depth,
            "seq_read_bytes_per_sec": f.seq_read_bytes_per_sec,
            "zone_bytes_per_sec": f.zone_bytes_per_sec,
            "seek_curve_us": f.seek_curve_us,
            "rotation_ms": f.rotation_ms,
            "write_4k_us": f.write_4k_us,
            "write_4k_sync_us": f.write_4k_sync_us,
            "read_after_write_us": f.read_after_write_us,
            "write_cache": f.write_cache,
            "sustained_bytes_per_sec": f.sustained_bytes_per_sec,
        },
        "topology": args.topology.display().to_string(),
        "holdout": cells,
        "iocost_model": r.iocost.line(r.hints.devno.as_deref()),
        "iocost_from_model": r.iocost.from_model(),
        "warnings": warnings,
    })
}

fn plot(dir: &Path, cells: &[Cell]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for c in cells {
        let (a, b) = c.cdfs();
        let svg = elevator_report::chart::ms_cdf(
            &format!("{} (QD{}): demerit {:.3} ms", c.name, c.depth, c.demerit_ms),
            "access time",
            &[("device", &a), ("model", &b)],
        )?;
        let p = dir.join(format!("{}.svg", c.name));
        std::fs::write(&p, svg).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::NS_PER_SEC;

    #[test]
    fn budgets() {
        assert_eq!(parse_budget("60s"), Ok(60 * NS_PER_SEC));
        assert_eq!(parse_budget("90"), Ok(90 * NS_PER_SEC));
        assert_eq!(parse_budget("2m"), Ok(120 * NS_PER_SEC));
        assert_eq!(parse_budget("1.5s"), Ok(1_500_000_000));
        assert!(parse_budget("0.5s").is_err());
        assert!(parse_budget("25h").is_err());
        assert!(parse_budget("fast").is_err());
        assert!(parse_budget("-3s").is_err());
    }
}
