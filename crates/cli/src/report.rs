//! `elevator report INPUT.json... -o report.html`: the JSON of `run`, `compare` and
//! `reproduce` as one self-contained HTML page (see the `elevator-report` crate).

use std::path::PathBuf;

use clap::Args;

use crate::run::emit;

#[derive(Args)]
pub struct ReportArgs {
    /// JSON files written by `elevator run --output-format json|json+`, `elevator compare
    /// --output-format json` or `elevator reproduce NAME --output-format json` (real fio JSON
    /// too), reported in the order given.
    #[arg(required = true, value_name = "INPUT.json")]
    pub inputs: Vec<PathBuf>,
    /// The HTML file to write; `-` for standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// The page's title.
    #[arg(long, default_value = "elevator report")]
    pub title: String,
}

pub fn run(args: &ReportArgs) -> Result<(), String> {
    let inputs = elevator_report::load_all(&args.inputs)?;
    let html = elevator_report::render(&args.title, &inputs)?;
    let to = (args.output.as_os_str() != "-").then_some(args.output.as_path());
    emit(&html, to)
}
