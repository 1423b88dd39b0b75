//! `elevator report INPUT.json... -o report.html`: the JSON of `run`, `compare` and
//! `reproduce` as one self-contained HTML page (see the `elevator-report` crate). `compare`
//! and `reproduce` write the same page themselves with `--report FILE` ([`ReportTo`]).

use std::path::{Path, PathBuf};

use clap::Args;

use crate::run::emit;

/// The page's title when `--title` is not given (and always for `--report`).
pub const DEFAULT_TITLE: &str = "elevator report";

#[derive(Args)]
pub struct ReportArgs {
    /// JSON files written by `elevator run --output-format json|json+`, `elevator compare
    /// --output-format json` or `elevator reproduce NAME --output-format json` (real fio JSON
    /// too), reported in the order given; `-` is standard input.
    #[arg(required = true, value_name = "INPUT.json")]
    pub inputs: Vec<PathBuf>,
    /// The HTML file to write; `-` for standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// The page's title.
    #[arg(long, default_value = DEFAULT_TITLE)]
    pub title: String,
}

pub fn run(args: &ReportArgs) -> Result<(), String> {
    let inputs = elevator_report::load_all(&args.inputs)?;
    let html = elevator_report::render(&args.title, &inputs)?;
    emit(&html, to_file(&args.output))
}

/// `-` is standard output.
fn to_file(path: &Path) -> Option<&Path> {
    (path.as_os_str() != "-").then_some(path)
}

/// `--report FILE` of `compare` and `reproduce`: the page `elevator report` makes of their
/// JSON, byte for byte. The JSON is named as `elevator report` would name it: the `--output`
/// file when the JSON goes there (`--output-format json --output F`: `elevator report F`),
/// else `-` (`... --output-format json | elevator report -`).
pub struct ReportTo<'a> {
    page: &'a Path,
    json_name: String,
}

impl<'a> ReportTo<'a> {
    /// `None` without `--report`. Refuses a page and a text output both on standard output.
    pub fn new(
        report: Option<&'a Path>,
        json: bool,
        output: Option<&Path>,
    ) -> Result<Option<Self>, String> {
        let Some(page) = report else { return Ok(None) };
        if to_file(page).is_none() && output.is_none() {
            return Err("--report -: the page and the results cannot both go to standard \
                        output; give --output FILE"
                .to_string());
        }
        let json_name = match output {
            Some(path) if json => path.display().to_string(),
            _ => "-".to_string(),
        };
        Ok(Some(ReportTo { page, json_name }))
    }

    /// The page for `json` (the text `--output-format json` writes), parsed from that text
    /// exactly as `elevator report` parses a file, so the bytes are the same.
    pub fn render(&self, json: &str) -> Result<String, String> {
        let input = elevator_report::input::parse(&self.json_name, json)?;
        elevator_report::render(DEFAULT_TITLE, &[input])
    }

    pub fn write(&self, html: &str) -> Result<(), String> {
        emit(html, to_file(self.page))
    }
}
