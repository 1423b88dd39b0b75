//! `elevator run`: one job file, one topology, one seed → fio-compatible results.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use elevator_fio::JobFile;
use elevator_sim::engine::{Progress, ProgressFn};
use elevator_sim::{report, simulate, SimOptions, Topology};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Text shaped like fio's default output.
    Normal,
    /// fio's JSON layout (`--output-format=json`).
    Json,
    /// fio's JSON with completion-latency histograms (`clat_ns.bins`).
    #[value(name = "json+")]
    JsonPlus,
    /// fio's terse line, version 3.
    Terse,
    /// The seed-000 table: per reporting group, jobs, max/min/aggregate bandwidth, max latency.
    Table,
}

#[derive(Args)]
pub struct RunArgs {
    /// The fio job file.
    pub jobfile: PathBuf,
    /// Topology file (TOML). Default: one 7200 rpm SATA disk, NCQ 31, mq-deadline.
    #[arg(long)]
    pub topology: Option<PathBuf>,
    /// Scheduler for every device, replacing the topology's (see `elevator schedulers`).
    #[arg(long)]
    pub scheduler: Option<String>,
    /// Set a scheduler tunable, as /sys/block/<dev>/queue/iosched/KEY; repeatable.
    #[arg(long = "iosched", value_name = "KEY=VALUE")]
    pub iosched: Vec<String>,
    /// Simulation seed: same seed, same output.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// normal, json, json+, terse or table; several comma-joined (`json,normal`) print one after
    /// the other.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "normal")]
    pub output_format: Vec<OutputFormat>,
    /// Write the results to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// fio's status line on stderr while the simulation runs: `auto` when stderr is a
    /// terminal, `always`, or `never`.
    #[arg(long, value_enum, default_value_t = Eta::Auto)]
    pub eta: Eta,
    /// Write each device's block-layer events in blktrace's binary format to DIR/DEV.blktrace.0
    /// (read them with `blkparse -i DEV -D DIR`; DIR is created if missing).
    #[arg(long, value_name = "DIR")]
    pub write_blktrace: Option<PathBuf>,
    /// Write one JSON line per request a scheduler dispatched, with its reason ("batch
    /// continues", "fifo expired", "slice expired", "budget exhausted: next by B-WF2Q+", ...),
    /// to FILE: the format `elevator ctl trace on FILE` writes from the server.
    #[arg(long, value_name = "FILE")]
    pub trace_decisions: Option<PathBuf>,
    /// `now`: the JSON's `timestamp`, `timestamp_ms` and `time` give the wall-clock start of
    /// the run, as fio's do; by default they are the epoch, so output is the same bytes run
    /// after run.
    #[arg(long, value_parser = ["epoch", "now"], default_value = "epoch")]
    pub timestamp: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Eta {
    Auto,
    Always,
    Never,
}

/// Exit status of a run stopped by Ctrl-C (SIGINT) after printing its results, as fio and
/// shells do (128 + 2).
pub const EXIT_INTERRUPTED: i32 = 130;

/// The exit status when a simulated job ended in error (`max_latency`), as fio exits 1.
pub const EXIT_JOB_ERROR: i32 = 1;

/// Wall time between two status lines.
const STATUS_EVERY: Duration = Duration::from_millis(250);

/// The status line: fio's `Jobs: N (f=N): [p%][r=..,w=..][r=..,w=.. IOPS][eta ..]`, rates
/// over simulated time since the previous line, the ETA in wall time.
fn status_printer() -> Arc<ProgressFn> {
    struct Last {
        wall: Instant,
        progress: Progress,
    }
    let start = Instant::now();
    let last = Mutex::new(Last { wall: start, progress: Progress::default() });
    Arc::new(move |p: &Progress| {
        let Ok(mut last) = last.lock() else { return };
        let now = Instant::now();
        if now.duration_since(last.wall) < STATUS_EVERY {
            return;
        }
        let dt_ns = p.now_ns.saturating_sub(last.progress.now_ns).max(1) as f64;
        let per_sec = |a: u64, b: u64| a.saturating_sub(b) as f64 * 1e9 / dt_ns;
        let elapsed = now.duration_since(start).as_secs_f64();
        let eta = if p.done_fraction > 0.0 {
            (elapsed * (1.0 - p.done_fraction) / p.done_fraction) as u64
        } else {
            0
        };
        eprint!(
            "\rJobs: {} (f={}): [{:.1}%][r={},w={}][r={},w={} IOPS][eta {:02}m:{:02}s]\x1b[K",
            p.running,
            p.running,
            p.done_fraction * 100.0,
            human_rate(per_sec(p.read_bytes, last.progress.read_bytes)),
            human_rate(per_sec(p.write_bytes, last.progress.write_bytes)),
            human_count(per_sec(p.read_ios, last.progress.read_ios)),
            human_count(per_sec(p.write_ios, last.progress.write_ios)),
            eta / 60,
            eta % 60,
        );
        last.wall = now;
        last.progress = *p;
    })
}

fn human_rate(bytes_per_sec: f64) -> String {
    let kib = bytes_per_sec / 1024.0;
    if kib < 1024.0 {
        format!("{kib:.0}KiB/s")
    } else {
        format!("{:.1}MiB/s", kib / 1024.0)
    }
}

fn human_count(n: f64) -> String {
    if n < 1000.0 {
        format!("{n:.0}")
    } else {
        format!("{:.1}k", n / 1000.0)
    }
}

pub use elevator_sim::frontend::{load_topology, parse_iosched};

/// Reads a job file (with the process environment for `${VAR}` and the simulated machine's
/// `$pagesize`, `$ncpus`, `$mb_memory`), printing its warnings.
pub fn load_jobs(path: &Path, topology: &Topology) -> Result<JobFile, String> {
    let env = |name: &str| std::env::var(name).ok();
    let jobs = elevator_sim::frontend::load_jobs(path, topology, &env)?;
    for w in &jobs.warnings {
        eprintln!("elevator: warning: {w}");
    }
    Ok(jobs)
}

/// Writes `text` to `path`, or to standard output.
pub fn emit(text: &str, path: Option<&Path>) -> Result<(), String> {
    match path {
        Some(path) => {
            std::fs::write(path, text).map_err(|e| format!("{}: cannot write: {e}", path.display()))
        }
        None => {
            // A reader that stops early (`| head`) is no error, as with fio: the rest is
            // dropped quietly instead of a panic on the broken pipe.
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    Err(format!("standard output: cannot write: {e}"))
                }
                _ => Ok(()),
            }
        }
    }
}

/// Writes every device's decision lines to `path`, device after device (each line names its
/// device), warning once for a log that reached its bound.
fn write_decisions(path: &Path, result: &elevator_sim::SimResult) -> Result<(), String> {
    let mut text = String::new();
    for device in &result.devices {
        let Some(log) = &device.decisions else { continue };
        if log.truncated {
            eprintln!(
                "elevator: warning: device `{}`: the decision trace stopped at {} bytes",
                device.name,
                elevator_sim::block::MAX_DECISION_LOG_BYTES
            );
        }
        text.push_str(&log.text);
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes each device's trace as `DIR/DEV.blktrace.0` (blktrace's per-CPU file of CPU 0),
/// warning once for a trace that reached its bounds.
fn write_blktraces(dir: &Path, result: &elevator_sim::SimResult) -> Result<(), String> {
    use elevator_sim::blktrace::{MAX_BLKTRACE_BYTES, MAX_BLKTRACE_EVENTS};
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("{}: cannot create the blktrace directory: {e}", dir.display()))?;
    for device in &result.devices {
        let Some(trace) = &device.blktrace else { continue };
        let name = &device.name;
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            return Err(format!("device `{name}`: not a file name; cannot name its blktrace file"));
        }
        let path = dir.join(format!("{name}.blktrace.0"));
        std::fs::write(&path, &trace.bytes)
            .map_err(|e| format!("{}: cannot write the blktrace: {e}", path.display()))?;
        if trace.dropped > 0 {
            eprintln!(
                "elevator: warning: {}: the trace stops after {} records ({} left out): at most {MAX_BLKTRACE_EVENTS} records and {} MiB per device (MAX_BLKTRACE_EVENTS, MAX_BLKTRACE_BYTES)",
                path.display(),
                trace.records,
                trace.dropped,
                MAX_BLKTRACE_BYTES >> 20
            );
        }
    }
    Ok(())
}

pub fn run(args: &RunArgs) -> Result<(), String> {
    let topology = load_topology(args.topology.as_deref())?;
    let jobs = load_jobs(&args.jobfile, &topology)?;
    let stop = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&stop))
        .map_err(|e| format!("cannot watch for Ctrl-C: {e}"))?;
    let show_status = match args.eta {
        Eta::Always => true,
        Eta::Never => false,
        Eta::Auto => std::io::stderr().is_terminal(),
    };
    let options = SimOptions {
        seed: args.seed,
        scheduler: args.scheduler.clone(),
        iosched: parse_iosched(&args.iosched)?,
        stop: Some(Arc::clone(&stop)),
        progress: show_status.then(status_printer),
        blktrace: args.write_blktrace.is_some(),
        trace_decisions: args.trace_decisions.is_some(),
    };
    let started_ms = if args.timestamp == "now" {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    } else {
        0
    };
    let result = simulate(&jobs, &topology, &options).map_err(|e| e.to_string());
    if show_status {
        eprint!("\r\x1b[K");
    }
    let mut result = result?;
    result.started_ms = started_ms;
    let interrupted = stop.load(Ordering::Relaxed);
    if interrupted {
        eprintln!("elevator: interrupted: the results so far");
    }
    for w in result.warnings() {
        eprintln!("elevator: warning: {w}");
    }
    let mut text = String::new();
    for format in &args.output_format {
        text.push_str(&match format {
            OutputFormat::Normal => report::normal::render(&result, &jobs),
            OutputFormat::Json => report::json::render(&result, &jobs, args.seed, &topology.source),
            OutputFormat::JsonPlus => {
                report::json::render_plus(&result, &jobs, args.seed, &topology.source)
            }
            OutputFormat::Terse => report::terse::render(&result, &jobs),
            OutputFormat::Table => report::table::render(&result, &jobs),
        });
    }
    // fio prints a job's error as it happens, and exits 1 when a job failed.
    let mut failed = false;
    for p in &result.processes {
        if let Some(x) = &p.error {
            eprintln!("elevator: job `{}`: {}", p.name, x.message);
            eprintln!(
                "elevator: job `{}` (pid {}): err={}, func={}, error={}",
                p.name,
                p.owner.pid,
                x.errno,
                x.func,
                x.strerror()
            );
            failed = true;
        }
    }
    emit(&text, args.output.as_deref())?;
    // fio's log files, in the current directory as fio writes them.
    for (name, text) in report::logs::files(&result, &jobs) {
        std::fs::write(&name, text).map_err(|e| format!("{name}: cannot write the log: {e}"))?;
    }
    // write_iolog: appended to, as fio opens it.
    for (name, text) in report::logs::iolog_files(&result, &jobs) {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&name)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(|e| format!("{name}: cannot write the I/O log: {e}"))?;
    }
    let dropped = report::logs::iolog_dropped(&result);
    if dropped > 0 {
        eprintln!(
            "elevator: warning: {dropped} write_iolog lines past {} per job were not written (MAX_IOLOG_LINES)",
            elevator_sim::iolog_out::MAX_IOLOG_LINES
        );
    }
    let unverified: u64 =
        result.processes.iter().filter_map(|p| p.verify.as_ref()).map(|v| v.dropped).sum();
    if unverified > 0 {
        eprintln!(
            "elevator: warning: {unverified} writes past {} per job were not read back by verify (MAX_VERIFY_PIECES)",
            elevator_sim::verify::MAX_VERIFY_PIECES
        );
    }
    let dropped = report::logs::dropped(&result);
    if dropped > 0 {
        eprintln!(
            "elevator: warning: {dropped} log lines past {} per log were not written (MAX_LOG_SAMPLES); use log_avg_msec=",
            elevator_sim::iolog_out::MAX_LOG_SAMPLES
        );
    }
    if let Some(dir) = &args.write_blktrace {
        write_blktraces(dir, &result)?;
    }
    if let Some(path) = &args.trace_decisions {
        write_decisions(path, &result)?;
    }
    if interrupted {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        std::process::exit(EXIT_INTERRUPTED);
    }
    if failed {
        // As fio's exit status when a job ended in error; the report is complete.
        use std::io::Write;
        let _ = std::io::stdout().flush();
        std::process::exit(EXIT_JOB_ERROR);
    }
    Ok(())
}
