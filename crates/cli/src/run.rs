//! `elevator run`: one job file, one topology, one seed → fio-compatible results.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use elevator_fio::{JobFile, Keywords};
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
    /// normal, json, json+ or table; several comma-joined (`json,normal`) print one after
    /// the other.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "normal")]
    pub output_format: Vec<OutputFormat>,
    /// Write the results to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

/// Parses `KEY=VALUE` pairs given with `--iosched`.
pub fn parse_iosched(pairs: &[String]) -> Result<Vec<(String, String)>, String> {
    pairs
        .iter()
        .map(|p| match p.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => {
                Err(format!("--iosched `{p}`: expected KEY=VALUE, e.g. --iosched read_expire=250"))
            }
        })
        .collect()
}

/// Reads a job file (with the process environment for `${VAR}` and the simulated machine's
/// `$pagesize`, `$ncpus`, `$mb_memory`), printing its warnings.
pub fn load_jobs(path: &Path, topology: &Topology) -> Result<JobFile, String> {
    let env = |name: &str| std::env::var(name).ok();
    let vm = &topology.machine.vm;
    let keywords = Keywords { pagesize: 4096, ncpus: vm.cpus, mb_memory: vm.memory_bytes >> 20 };
    let jobs = elevator_fio::parse_file_with(path, &env, &keywords).map_err(|e| e.to_string())?;
    for w in &jobs.warnings {
        eprintln!("elevator: warning: {w}");
    }
    Ok(jobs)
}

/// Reads the topology file, or gives the built-in single SATA disk.
pub fn load_topology(path: Option<&Path>) -> Result<Topology, String> {
    match path {
        Some(path) => Topology::from_file(path),
        None => Ok(Topology::builtin()),
    }
}

/// Writes `text` to `path`, or to standard output.
pub fn emit(text: &str, path: Option<&Path>) -> Result<(), String> {
    match path {
        Some(path) => {
            std::fs::write(path, text).map_err(|e| format!("{}: cannot write: {e}", path.display()))
        }
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

pub fn run(args: &RunArgs) -> Result<(), String> {
    let topology = load_topology(args.topology.as_deref())?;
    let jobs = load_jobs(&args.jobfile, &topology)?;
    let options = SimOptions {
        seed: args.seed,
        scheduler: args.scheduler.clone(),
        iosched: parse_iosched(&args.iosched)?,
    };
    let result = simulate(&jobs, &topology, &options).map_err(|e| e.to_string())?;
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
            OutputFormat::Table => report::table::render(&result, &jobs),
        });
    }
    emit(&text, args.output.as_deref())
}
