//! `elevator validate-disk --drive DIR`: replays a DiskSim validation trace closed-loop on
//! the HDD model built from the drive's own DiskSim parameters and prints DiskSim's `rms`
//! demerit against the measured access times, with mean, median and 99th percentile of both.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use elevator_disksim::{
    cdf_points, cdf_svg, hdd_params, histogram, load_drive, load_trace, mean, median, p99, replay,
    rms_demerit_ms, Buckets,
};

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Normal,
    Json,
}

#[derive(Args)]
pub struct ValidateDiskArgs {
    /// A DiskSim drive directory (.parv, .diskspecs, .model, .seek, statdefs).
    #[arg(long)]
    pub drive: PathBuf,
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

pub fn run(args: &ValidateDiskArgs) -> Result<(), String> {
    if !args.drive.is_dir() {
        return Err(format!("{}: not a drive directory", args.drive.display()));
    }
    let drive = load_drive(&args.drive).map_err(|e| e.to_string())?;
    let trace_path = match (&args.trace, &drive.trace_path) {
        (Some(t), _) => t.clone(),
        (None, Some(t)) => t.clone(),
        (None, None) => {
            return Err(format!("{}: no .trace file; pass --trace", args.drive.display()))
        }
    };
    let trace = load_trace(&trace_path).map_err(|e| e.to_string())?;
    if trace.is_empty() {
        return Err(format!("{}: no requests", trace_path.display()));
    }
    let params = hdd_params(&drive).map_err(|e| e.to_string())?;
    let sim = replay(&params, &trace).map_err(|e| format!("{}: {e}", trace_path.display()))?;
    let measured: Vec<f64> = trace.iter().map(|r| r.access_time_ms()).collect();
    let buckets = match &drive.statdefs {
        Some(d) => d
            .buckets("Physical access time")
            .or_else(|| d.buckets("Trace access time"))
            .unwrap_or_else(Buckets::access_time_default),
        None => Buckets::access_time_default(),
    };
    let rms = rms_demerit_ms(&measured, &sim, &buckets);
    if let Some(p) = &args.access_times {
        let mut s = String::with_capacity(sim.len() * 8);
        for ms in &sim {
            let _ = writeln!(s, "{:.3}", ms * 1000.0);
        }
        std::fs::write(p, s).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    if let Some(p) = &args.plot {
        let a = cdf_points(&histogram(&measured, &buckets), &buckets);
        let b = cdf_points(&histogram(&sim, &buckets), &buckets);
        let svg = cdf_svg(
            &format!("{}: rms {rms:.6} ms", drive.disk.name),
            "access time (ms)",
            &[("measured", &a), ("simulated", &b)],
        );
        std::fs::write(p, svg).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    let stats = |v: &[f64]| (mean(v), median(v), p99(v));
    let (mm, md, m99) = stats(&measured);
    let (sm, sd, s99) = stats(&sim);
    match args.output_format {
        Format::Normal => {
            println!("drive: {} ({})", drive.disk.name, args.drive.display());
            println!("trace: {} ({} requests)", trace_path.display(), trace.len());
            println!("rms demerit: {rms:.6} ms");
            println!("{:<10} {:>10} {:>10} {:>10}", "", "mean ms", "median ms", "p99 ms");
            println!("{:<10} {mm:>10.3} {md:>10.3} {m99:>10.3}", "measured");
            println!("{:<10} {sm:>10.3} {sd:>10.3} {s99:>10.3}", "simulated");
        }
        Format::Json => {
            let j = serde_json::json!({
                "drive": drive.disk.name,
                "trace": trace_path.display().to_string(),
                "requests": trace.len(),
                "rms_ms": rms,
                "measured": { "mean_ms": mm, "median_ms": md, "p99_ms": m99 },
                "simulated": { "mean_ms": sm, "median_ms": sd, "p99_ms": s99 },
            });
            println!("{}", serde_json::to_string_pretty(&j).expect("json"));
        }
    }
    Ok(())
}
