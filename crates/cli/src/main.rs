//! `elevator`: block I/O schedulers in a deterministic disk simulator (and, later, for real).
//!
//! Each subcommand lives in its own module; this file only parses arguments and reports
//! errors: every failure, a bad argument included, prints one line on stderr and exits 1.

// clap prints the argument structs' doc comments as the --help text, where a sysfs path's
// `<dev>` is meant literally, not as HTML.
#![allow(rustdoc::invalid_html_tags)]

mod calibrate;
mod compare;
mod ctl;
mod report;
mod reproduce;
mod run;
mod schedulers;
mod serve;
mod sweep;
mod validate_disk;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Block I/O schedulers and proportional-share controllers, simulated deterministically.
///
/// `elevator run JOB.fio` runs a real fio job file against a simulated disk under a chosen
/// scheduler and prints fio-compatible results. Same inputs and seed, same bytes out.
#[derive(Parser)]
#[command(name = "elevator", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a fio job file on the simulated topology and print fio-style results.
    Run(run::RunArgs),
    /// Run one job file under several schedulers and print the results side by side.
    Compare(compare::CompareArgs),
    /// Rerun a reference experiment (seed mail) from its scenario file and print its tables
    /// beside the published numbers.
    Reproduce(reproduce::ReproduceArgs),
    /// Lay out the JSON of run, compare and reproduce as one self-contained HTML page: latency
    /// CDFs, shares of the I/Os, fairness between groups, published-vs-ours tables.
    Report(report::ReportArgs),
    /// Serve files or block devices over NBD, scheduled by the same schedulers, on io_uring.
    Serve(serve::ServeArgs),
    /// Read and change a running server's scheduler tunables, and read its statistics.
    Ctl(ctl::CtlArgs),
    /// List the schedulers, or the tunables of one (as /sys/block/<dev>/queue/iosched shows them).
    Schedulers(schedulers::SchedulersArgs),
    /// Replay a DiskSim validation trace on the HDD model built from the drive's DiskSim
    /// parameters and print DiskSim's rms demerit against the measured access times.
    ValidateDisk(validate_disk::ValidateDiskArgs),
    /// Probe a block device or a file on one (O_DIRECT, io_uring, read-only unless --write),
    /// fit the HDD or flash model, write a topology, and report the model's error on a
    /// held-out workload, with the io.cost.model line.
    Calibrate(calibrate::CalibrateArgs),
    /// Parameter sweeps: expand a grid file into a plan, run shards of it into Parquet files,
    /// merge the shards.
    Sweep(sweep::SweepArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    let result = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Reproduce(args) => reproduce::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Schedulers(args) => schedulers::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Ctl(args) => ctl::run(&args),
        Command::ValidateDisk(args) => validate_disk::run(&args),
        Command::Calibrate(args) => calibrate::run(&args),
        Command::Sweep(args) => sweep::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("elevator: {message}");
            ExitCode::FAILURE
        }
    }
}

/// `--help` and `--version` print and exit 0; every other argument error is one line on
/// stderr and exit status 1, like any other error (clap's own exit is 2).
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let _ = e.print(); // no subcommand: the help, as an error
        return ExitCode::FAILURE;
    }
    let text = e.render().to_string();
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    eprintln!("elevator: {first} (see --help)");
    ExitCode::FAILURE
}
