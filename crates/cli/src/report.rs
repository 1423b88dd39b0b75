//! `elevator report INPUT... -o report.html`: the JSON of `run`, `compare` and `reproduce`,
//! and the Parquet of `sweep merge`, as one self-contained HTML page (see the
//! `elevator-report` crate, which knows no Parquet: sweep files are read here, with the
//! sweep's own reader, and handed over as rows). `compare` and `reproduce` write the same
//! page themselves with `--report FILE` ([`ReportTo`]).

use std::path::{Path, PathBuf};

use std::io::Read;

use clap::Args;
use elevator_report::input::Content;
use elevator_report::sweep::{Sweep, Value};
use elevator_report::Input;

use crate::sweep::table::{self, Cell};

use crate::run::emit;

/// The page's title when `--title` is not given (and always for `--report`).
pub const DEFAULT_TITLE: &str = "elevator report";

#[derive(Args)]
pub struct ReportArgs {
    /// JSON files written by `elevator run --output-format json|json+`, `elevator compare
    /// --output-format json` or `elevator reproduce NAME --output-format json` (real fio JSON
    /// too), and Parquet files of `elevator sweep run|merge` (known by their `PAR1` magic),
    /// reported in the order given; `-` is standard input (JSON).
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The HTML file to write; `-` for standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// The page's title.
    #[arg(long, default_value = DEFAULT_TITLE)]
    pub title: String,
}

/// Largest sweep Parquet file read (a 1,000-run sweep's merged file is about 1 MB).
pub const MAX_SWEEP_FILE_BYTES: u64 = 512 << 20;

pub fn run(args: &ReportArgs) -> Result<(), String> {
    let inputs = args.inputs.iter().map(|p| load(p)).collect::<Result<Vec<_>, _>>()?;
    let html = elevator_report::render(&args.title, &inputs)?;
    emit(&html, to_file(&args.output))
}

/// One input: a sweep's Parquet (by its magic bytes), else JSON as the report crate reads it.
fn load(path: &Path) -> Result<Input, String> {
    if path.as_os_str() == "-" || !is_parquet(path) {
        return elevator_report::load(path);
    }
    let name = path.display().to_string();
    let len = std::fs::metadata(path).map_err(|e| format!("{name}: cannot read: {e}"))?.len();
    if len > MAX_SWEEP_FILE_BYTES {
        return Err(format!(
            "{name}: larger than {} MiB (MAX_SWEEP_FILE_BYTES)",
            MAX_SWEEP_FILE_BYTES >> 20
        ));
    }
    let rows = table::read(path)?
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|(k, c)| {
                    let v = match c {
                        Cell::Int(i) => Value::Num(i as f64),
                        Cell::Float(f) => Value::Num(f),
                        Cell::Bool(b) => Value::Text(b.to_string()),
                        Cell::Str(s) => Value::Text(s),
                    };
                    (k, v)
                })
                .collect()
        })
        .collect();
    Ok(Input { name: name.clone(), content: Content::Sweep(Sweep::new(&name, rows)?) })
}

/// Whether `path` starts with Parquet's magic `PAR1` (unreadable files are left to the JSON
/// reader, whose error names them).
fn is_parquet(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok()
        && &magic == b"PAR1"
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
