//! `elevator reproduce NAME`: rerun a reference experiment from `scenarios/`.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use elevator_repro::{list_experiments, render, run_experiment, Experiment};
use indicatif::{ProgressBar, ProgressStyle};

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
    /// List the experiments and exit.
    #[arg(long)]
    pub list: bool,
    /// Directory of scenario files (default: ./scenarios, else the one in the source tree).
    #[arg(long)]
    pub scenarios: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = ReproduceFormat::Normal)]
    pub output_format: ReproduceFormat,
    #[arg(long)]
    pub output: Option<PathBuf>,
}

fn scenarios_dir(given: Option<&PathBuf>) -> PathBuf {
    if let Some(dir) = given {
        return dir.clone();
    }
    let here = PathBuf::from("scenarios");
    if here.is_dir() {
        return here;
    }
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios"))
}

pub fn run(args: &ReproduceArgs) -> Result<(), String> {
    let dir = scenarios_dir(args.scenarios.as_ref());
    let experiments = list_experiments(&dir)?;
    if args.list {
        for (name, path) in &experiments {
            let e = Experiment::load(path)?;
            println!("{name:<20} seed {}  {}", e.seed_mail, e.title);
        }
        return Ok(());
    }
    let name = args.name.as_deref().unwrap_or_default();
    let Some((_, path)) = experiments.iter().find(|(n, _)| n == name) else {
        let names: Vec<&str> = experiments.iter().map(|(n, _)| n.as_str()).collect();
        return Err(format!(
            "no experiment `{name}` in {}; experiments: {}",
            dir.display(),
            names.join(", ")
        ));
    };
    let experiment = Experiment::load(path)?;
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
    let text = match args.output_format {
        ReproduceFormat::Normal => render::text(&result),
        ReproduceFormat::Json => {
            let mut s = serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?;
            s.push('\n');
            s
        }
    };
    emit(&text, args.output.as_deref())
}
