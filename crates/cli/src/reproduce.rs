//! `elevator reproduce NAME`: rerun a reference experiment from `scenarios/`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use elevator_repro::{
    find_experiment, list_experiments, render, run_experiment, scenarios_dir, Experiment,
};
use indicatif::{ProgressBar, ProgressStyle};

use crate::report::ReportTo;
use crate::run::emit;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReproduceFormat {
    /// Tables in the seed's layout, published numbers beside.
    Normal,
    /// Every table, row and cell, as numbers and as printed.
    Json,
}

#[derive(Args)]
pub struct ReproduceArgs {
    /// The experiment to run (see --list).
    #[arg(required_unless_present = "list")]
    pub name: Option<String>,
    /// List the experiments and exit; with NAME, that experiment's tables and their variants
    /// (what --table and --variant choose from).
    #[arg(long)]
    pub list: bool,
    /// Directory of scenario files (default: ./scenarios, else the one in the source tree).
    #[arg(long)]
    pub scenarios: Option<PathBuf>,
    /// Run only the tables whose title contains TEXT (ignoring case).
    #[arg(long, value_name = "TEXT")]
    pub table: Option<String>,
    /// Run only the variants whose label contains TEXT (ignoring case), e.g. `CFQ, 3.2`.
    #[arg(long, value_name = "TEXT")]
    pub variant: Option<String>,
    #[arg(long, value_enum, default_value_t = ReproduceFormat::Normal)]
    pub output_format: ReproduceFormat,
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Write each table's latency CDFs (tables with a `cdf` scope) as SVG files into DIR.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Also write the HTML page `elevator report` makes of this experiment's JSON (`-`:
    /// standard output, with --output FILE).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

pub fn run(args: &ReproduceArgs) -> Result<(), String> {
    let dir = scenarios_dir(args.scenarios.as_deref());
    if let (true, Some(name)) = (args.list, args.name.as_deref()) {
        let mut experiment = find_experiment(&dir, name)?;
        experiment.select(args.table.as_deref(), args.variant.as_deref())?;
        println!("{} — seed {}: {}", experiment.name, experiment.seed_mail, experiment.title);
        for t in &experiment.tables {
            let rows = Experiment::row_values(t).len();
            println!("\n{}  ({} row{})", t.title, rows, if rows == 1 { "" } else { "s" });
            for v in &t.variants {
                println!("  {}  [{}]", v.label, v.scheduler);
            }
        }
        return Ok(());
    }
    if args.list {
        for (name, path) in &list_experiments(&dir)? {
            let e = Experiment::load(path)?;
            println!("{name:<20} seed {}  {}", e.seed_mail, e.title);
        }
        return Ok(());
    }
    let mut experiment = find_experiment(&dir, args.name.as_deref().unwrap_or_default())?;
    experiment.select(args.table.as_deref(), args.variant.as_deref())?;
    let report_to = ReportTo::new(
        args.report.as_deref(),
        args.output_format == ReproduceFormat::Json,
        args.output.as_deref(),
    )?;
    let bar = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(elevator_repro::runner::run_count(&experiment) as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let result = run_experiment(&experiment, &mut |done, _, what| {
        bar.set_position(done as u64);
        bar.set_message(what.to_string());
    })?;
    bar.finish_and_clear();
    if let Some(dir) = &args.plot {
        write_plots(&result, dir)?;
    }
    let json = if args.output_format == ReproduceFormat::Json || report_to.is_some() {
        result.to_json()?
    } else {
        String::new()
    };
    let page = report_to.as_ref().map(|r| r.render(&json)).transpose()?;
    let text = match args.output_format {
        ReproduceFormat::Normal => render::text(&result),
        ReproduceFormat::Json => json,
    };
    emit(&text, args.output.as_deref())?;
    match (&report_to, &page) {
        (Some(r), Some(page)) => r.write(page),
        _ => Ok(()),
    }
}

/// One SVG per table that kept CDFs: a curve per variant (and row, if the table has several).
fn write_plots(result: &elevator_repro::ExperimentResult, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    for (k, table) in result.tables.iter().enumerate() {
        let mut labels = Vec::new();
        let mut curves = Vec::new();
        for v in &table.variants {
            for row in v.rows.iter().filter(|r| !r.cdf.is_empty()) {
                labels.push(if v.rows.len() > 1 {
                    format!("{} {}", v.label, row.value)
                } else {
                    v.label.clone()
                });
                curves.push(row.cdf.clone());
            }
        }
        if curves.is_empty() {
            continue;
        }
        let series: Vec<(&str, &[(f64, f64)])> =
            labels.iter().map(String::as_str).zip(curves.iter().map(Vec::as_slice)).collect();
        let svg = elevator_report::chart::ms_cdf(&table.title, "completion latency", &series)?;
        let path = dir.join(format!("{}-{}.svg", result.name, k + 1));
        std::fs::write(&path, svg).map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
        eprintln!("elevator: wrote {}", path.display());
    }
    Ok(())
}
