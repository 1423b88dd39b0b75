//! `elevator compare`: one job file, several schedulers, one table.
//!
//! A scheduler is given as `NAME` or `NAME:KEY=VALUE,KEY=VALUE` (for example
//! `cfq:group_scheduling=0` for vanilla CFQ), so variants of one scheduler compare too.

use std::fmt::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use elevator_sim::frontend;
use elevator_sim::report::table::{latency, rows};

use crate::report::ReportTo;
use crate::run::{emit, load_jobs, load_topology};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    /// One row per reporting group, one column block per scheduler.
    Normal,
    /// `{"runs": [{"scheduler": ..., "result": <fio JSON>}, ...]}`.
    Json,
}

#[derive(Args)]
pub struct CompareArgs {
    /// The fio job file.
    pub jobfile: PathBuf,
    /// A scheduler to run, `NAME` or `NAME:KEY=VALUE,...`; give two or more.
    #[arg(long = "scheduler", required = true, value_name = "NAME[:KEY=VALUE,...]")]
    pub schedulers: Vec<String>,
    /// Topology file (TOML). Default: one 7200 rpm SATA disk, NCQ 31.
    #[arg(long)]
    pub topology: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, value_enum, default_value_t = CompareFormat::Normal)]
    pub output_format: CompareFormat,
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Also write the HTML page `elevator report` makes of this comparison's JSON (`-`:
    /// standard output, with --output FILE).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

pub fn run(args: &CompareArgs) -> Result<(), String> {
    let topology = load_topology(args.topology.as_deref())?;
    let jobs = load_jobs(&args.jobfile, &topology)?;
    let report_to = ReportTo::new(
        args.report.as_deref(),
        args.output_format == CompareFormat::Json,
        args.output.as_deref(),
    )?;
    let results = frontend::compare(&jobs, &topology, args.seed, &args.schedulers)?;
    let json = (args.output_format == CompareFormat::Json || report_to.is_some())
        .then(|| frontend::compare_json(&results, &jobs, args.seed, &topology));
    let page = match (&report_to, &json) {
        (Some(r), Some(json)) => Some(r.render(json)?),
        _ => None,
    };
    let text = match (args.output_format, json) {
        (CompareFormat::Json, Some(json)) => json,
        _ => {
            let mut out = String::new();
            let _ = write!(out, "{:<16} {:>3} ", "group", "nr");
            for (variant, _) in &results {
                let _ = write!(out, "| {:^42} ", variant);
            }
            let _ = write!(out, "\n{:<16} {:>3} ", "", "");
            for _ in &results {
                let _ = write!(
                    out,
                    "| {:>10} {:>10} {:>10} {:>9} ",
                    "Max-bandw", "Min-bandw", "Agg-bandw", "Max-lat"
                );
            }
            out.push('\n');
            let per_sched: Vec<_> = results.iter().map(|(_, r)| rows(r, &jobs)).collect();
            for (i, row) in per_sched[0].iter().enumerate() {
                let _ = write!(out, "{:<16} {:>3} ", row.name, row.jobs);
                for rows in &per_sched {
                    let r = &rows[i];
                    let _ = write!(
                        out,
                        "| {:>10} {:>10} {:>10} {:>9} ",
                        format!("{:.0}KB/s", r.max_bw_kib),
                        format!("{:.0}KB/s", r.min_bw_kib),
                        format!("{:.0}KB/s", r.agg_bw_kib),
                        latency(r.max_clat_ns)
                    );
                }
                out.push('\n');
            }
            out
        }
    };
    emit(&text, args.output.as_deref())?;
    match (&report_to, &page) {
        (Some(r), Some(page)) => r.write(page),
        _ => Ok(()),
    }
}
