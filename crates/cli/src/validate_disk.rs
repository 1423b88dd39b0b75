//! `elevator validate-disk --drive DIR`: replays a DiskSim validation trace closed-loop on
//! the HDD model built from the drive's own DiskSim parameters and prints DiskSim's `rms`
//! demerit against the measured access times, with mean, median and 99th percentile of both.
//! `--all DIR` does that for every drive directory under DIR and prints one table beside
//! DiskSim 4.0's own demerits.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::{ArgGroup, Args, ValueEnum};
use elevator_disksim::{
    cdf_points, disksim_abort, disksim_rms_ms, drives_under, hdd_params, histogram, load_drive,
    load_trace, mean, median_p99, replay_trace_file, rms_between_cdfs, Buckets, ReplayFileError,
    TraceReplay,
};

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Normal,
    Json,
}

#[derive(Args)]
#[command(group(ArgGroup::new("drives").required(true).args(["drive", "all"])))]
pub struct ValidateDiskArgs {
    /// A DiskSim drive: its .parv file (beside the .diskspecs, .model, .seek and statdefs it
    /// names, and NAME.trace), or a directory holding only its files.
    #[arg(long, value_name = "DIR|NAME.parv")]
    pub drive: Option<PathBuf>,
    /// Every drive under DIR, as one table beside DiskSim 4.0's own demerits: each
    /// subdirectory holding one .parv file, and each NAME.parv with a validation NAME.trace,
    /// in DIR or a subdirectory of several (DiskSim 4.0's valid/ directory as it is).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["trace", "access_times", "plot"])]
    pub all: Option<PathBuf>,
    /// The validation trace (default: the .trace file in the drive directory).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "normal")]
    pub output_format: Format,
    /// Write each request's simulated access time (µs), one per line, in trace order.
    #[arg(long)]
    pub access_times: Option<PathBuf>,
    /// Draw the measured and simulated access-time CDFs as SVG.
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

/// Mean, median and 99th percentile of access times (ms).
#[derive(Clone, Copy)]
struct Stats {
    mean: f64,
    median: f64,
    p99: f64,
}

impl Stats {
    fn of(v: &[f64]) -> Stats {
        let (median, p99) = median_p99(v);
        Stats { mean: mean(v), median, p99 }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({ "mean_ms": self.mean, "median_ms": self.median, "p99_ms": self.p99 })
    }
}

/// One side of the comparison: its access times' statistics and DiskSim histogram.
struct Side {
    stats: Stats,
    counts: Vec<u64>,
}

impl Side {
    fn of(v: &[f64], buckets: &Buckets) -> Side {
        Side { stats: Stats::of(v), counts: histogram(v, buckets) }
    }

    /// The side's CDF as DiskSim's `rms` reads it.
    fn cdf(&self, buckets: &Buckets) -> Vec<(f64, f64)> {
        cdf_points(&self.counts, buckets)
    }
}

/// One drive validated.
struct Validation {
    /// The drive directory's name (DiskSim's name for the validation drive).
    name: String,
    /// The `disksim_disk` block's name.
    model: String,
    trace: PathBuf,
    rms_ms: f64,
    requests: usize,
    simulated: Vec<f64>,
    buckets: Buckets,
    measured_side: Side,
    simulated_side: Side,
}

impl Validation {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "drive": self.name,
            "model": self.model,
            "trace": self.trace.display().to_string(),
            "requests": self.requests,
            "rms_ms": self.rms_ms,
            "disksim_rms_ms": disksim_rms_ms(&self.name),
            "disksim_aborts_at_request": disksim_abort(&self.name).map(|a| a.aborts_at_request),
            "measured": self.measured_side.stats.json(),
            "simulated": self.simulated_side.stats.json(),
        })
    }
}

/// Loads the drive in `dir`, replays `trace` (default: the drive's own) and computes the
/// demerit.
fn validate(dir: &Path, trace: Option<&Path>) -> Result<Validation, String> {
    if !dir.exists() {
        return Err(format!("{}: no such drive directory or .parv file", dir.display()));
    }
    let drive = load_drive(dir).map_err(|e| e.to_string())?;
    let trace_path = match (trace, &drive.trace_path) {
        (Some(t), _) => t.to_path_buf(),
        (None, Some(t)) => t.clone(),
        (None, None) => {
            return Err(format!(
                "{}: no {} beside it and no single .trace in its directory; pass --trace",
                drive.parv_path.display(),
                drive
                    .parv_path
                    .with_extension("trace")
                    .file_name()
                    .map_or_else(|| "trace".into(), |n| n.to_string_lossy().into_owned()),
            ))
        }
    };
    // The trace's errors come first, then an empty trace, then the drive's parameters, then
    // the replay's (what a load, a check and a replay one after another would say).
    let params = hdd_params(&drive);
    let TraceReplay { measured_ms: measured, simulated_ms: simulated } = match &params {
        Ok(p) => replay_trace_file(p, &trace_path).map_err(|e| match e {
            ReplayFileError::Trace(e) => e.to_string(),
            ReplayFileError::Replay(e) => format!("{}: {e}", trace_path.display()),
        })?,
        Err(_) => TraceReplay {
            measured_ms: load_trace(&trace_path)
                .map_err(|e| e.to_string())?
                .iter()
                .map(|r| r.access_time_ms())
                .collect(),
            simulated_ms: Vec::new(),
        },
    };
    if measured.is_empty() {
        return Err(format!("{}: no requests", trace_path.display()));
    }
    params.map_err(|e| e.to_string())?;
    let buckets = match &drive.statdefs {
        Some(d) => d
            .buckets("Physical access time")
            .or_else(|| d.buckets("Trace access time"))
            .unwrap_or_else(Buckets::access_time_default),
        None => Buckets::access_time_default(),
    };
    // The two sides' statistics and histograms at once, one on another thread: together they
    // are several times the drive's loading.
    let (measured_side, simulated_side) = std::thread::scope(|scope| {
        let m = scope.spawn(|| Side::of(&measured, &buckets));
        let s = Side::of(&simulated, &buckets);
        (m.join().expect("the measured side's statistics do not panic"), s)
    });
    // DiskSim's demerit (`rms_demerit_ms`) of the two histograms.
    let rms_ms = rms_between_cdfs(&measured_side.cdf(&buckets), &simulated_side.cdf(&buckets));
    // DiskSim's name for the drive: its directory's, or its .parv file's without `.parv`.
    let name = if dir.is_file() {
        dir.file_stem().map(|n| n.to_string_lossy().into_owned())
    } else {
        dir.canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
    }
    .unwrap_or_else(|| dir.display().to_string());
    Ok(Validation {
        name,
        model: drive.disk.name.clone(),
        trace: trace_path,
        rms_ms,
        requests: measured.len(),
        simulated,
        buckets,
        measured_side,
        simulated_side,
    })
}

pub fn run(args: &ValidateDiskArgs) -> Result<(), String> {
    match (&args.drive, &args.all) {
        (_, Some(dir)) => run_all(dir, args.output_format),
        (Some(dir), None) => run_one(dir, args),
        (None, None) => Err("pass --drive DIR or --all DIR".into()),
    }
}

fn run_one(dir: &Path, args: &ValidateDiskArgs) -> Result<(), String> {
    let v = validate(dir, args.trace.as_deref())?;
    if let Some(p) = &args.access_times {
        let mut s = String::with_capacity(v.simulated.len() * 8);
        for ms in &v.simulated {
            let _ = writeln!(s, "{:.3}", ms * 1000.0);
        }
        std::fs::write(p, s).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    if let Some(p) = &args.plot {
        let a = v.measured_side.cdf(&v.buckets);
        let b = v.simulated_side.cdf(&v.buckets);
        let svg = elevator_report::chart::ms_cdf(
            &format!("{}: rms {:.6} ms", v.model, v.rms_ms),
            "access time",
            &[("measured", &a), ("simulated", &b)],
        )?;
        std::fs::write(p, svg).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    let (m, s) = (v.measured_side.stats, v.simulated_side.stats);
    match args.output_format {
        Format::Normal => {
            println!("drive: {} ({})", v.model, dir.display());
            println!("trace: {} ({} requests)", v.trace.display(), v.requests);
            println!("rms demerit: {:.6} ms", v.rms_ms);
            println!("{:<10} {:>10} {:>10} {:>10}", "", "mean ms", "median ms", "p99 ms");
            println!("{:<10} {:>10.3} {:>10.3} {:>10.3}", "measured", m.mean, m.median, m.p99);
            println!("{:<10} {:>10.3} {:>10.3} {:>10.3}", "simulated", s.mean, s.median, s.p99);
        }
        Format::Json => {
            let j = serde_json::json!({
                "drive": v.model,
                "trace": v.trace.display().to_string(),
                "requests": v.requests,
                "rms_ms": v.rms_ms,
                "measured": m.json(),
                "simulated": s.json(),
            });
            println!("{}", serde_json::to_string_pretty(&j).expect("json"));
        }
    }
    Ok(())
}

fn run_all(dir: &Path, format: Format) -> Result<(), String> {
    let results = drives_under(dir)
        .map_err(|e| e.to_string())?
        .iter()
        .map(|d| validate(d, None))
        .collect::<Result<Vec<_>, _>>()?;
    match format {
        Format::Normal => {
            println!(
                "{:<12} {:>9} {:>9}  {:>17}  {:>17}  {:>17}",
                "drive", "rms ms", "DiskSim", "mean ours/meas", "median ours/meas", "p99 ours/meas"
            );
            let mut beaten = 0;
            let mut known = 0;
            for v in &results {
                let (m, s) = (v.measured_side.stats, v.simulated_side.stats);
                let disksim = match disksim_rms_ms(&v.name) {
                    Some(d) => {
                        known += 1;
                        if elevator_disksim::at_or_below_published(v.rms_ms, d) {
                            beaten += 1;
                        }
                        format!("{d:.3}")
                    }
                    None if disksim_abort(&v.name).is_some() => "aborts".into(),
                    None => "-".into(),
                };
                let pair = |a: f64, b: f64| format!("{a:.3} / {b:.3}");
                println!(
                    "{:<12} {:>9.4} {:>9}  {:>17}  {:>17}  {:>17}",
                    v.name,
                    v.rms_ms,
                    disksim,
                    pair(s.mean, m.mean),
                    pair(s.median, m.median),
                    pair(s.p99, m.p99)
                );
            }
            println!(
                "{} drives; at or below DiskSim 4.0's demerit, to the three decimals it published, on \
                 {beaten} of the {known}",
                results.len()
            );
            for v in &results {
                if let Some(a) = disksim_abort(&v.name) {
                    println!(
                        "{}: DiskSim 4.0 aborts at request {} (runvalid leaves the drive out); its \
                         demerit on the {} before is {:.6} ms",
                        v.name,
                        a.aborts_at_request,
                        a.aborts_at_request - 1,
                        a.rms_before_ms
                    );
                }
            }
        }
        Format::Json => {
            let j = serde_json::json!({
                "drives": results.iter().map(Validation::json).collect::<Vec<_>>(),
            });
            println!("{}", serde_json::to_string_pretty(&j).expect("json"));
        }
    }
    Ok(())
}
