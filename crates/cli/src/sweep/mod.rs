//! `elevator sweep`: parameter sweeps. `plan` expands a grid file into run specs (JSON
//! lines), `run` runs one shard of a plan into a Parquet file (resumable, deterministic),
//! `merge` joins shard files, each run once.

pub mod grid;
pub mod table;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use elevator_sim::{report, simulate, SimOptions};

use crate::run::{emit, load_topology};
use grid::RunSpec;
use table::Row;

#[derive(Args)]
pub struct SweepArgs {
    #[command(subcommand)]
    pub command: SweepCommand,
}

#[derive(Subcommand)]
pub enum SweepCommand {
    /// Expand a grid file (TOML) into a plan: one JSON run spec per line, each with its id.
    Plan {
        /// The grid file.
        grid: PathBuf,
        /// Write the plan here instead of standard output.
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
    },
    /// Run the plan lines of one shard (line index % N == i) into DIR/shard-i-of-N.parquet;
    /// runs already in that file are skipped.
    Run {
        /// The plan (`elevator sweep plan`'s output).
        plan: PathBuf,
        /// This shard, `i/N` with 0 <= i < N.
        #[arg(long, default_value = "0/1")]
        shard: String,
        /// The directory of the shard files.
        #[arg(short = 'o', long)]
        output: PathBuf,
    },
    /// Join shard files (or directories of them) into one, each run once, sorted by id.
    Merge {
        /// Shard files, or directories whose `*.parquet` files are read (in name order).
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// The merged file.
        #[arg(short = 'o', long)]
        output: PathBuf,
    },
    /// Print a sweep file's rows (a shard or a merged file) as JSON, one object a line, in
    /// the file's order; a row's missing values are left out.
    Rows {
        /// The Parquet file.
        file: PathBuf,
        /// Write the rows here instead of standard output.
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
    },
}

/// Wall time between two rewrites of a shard file while it runs.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(60);

pub fn run(args: &SweepArgs) -> Result<(), String> {
    match &args.command {
        SweepCommand::Plan { grid, output } => {
            let runs = grid::plan(grid)?;
            emit(&grid::to_jsonl(&runs), output.as_deref())
        }
        SweepCommand::Run { plan, shard, output } => {
            let shard = parse_shard(shard)?;
            run_shard(plan, shard, output)
        }
        SweepCommand::Merge { inputs, output } => merge(inputs, output),
        SweepCommand::Rows { file, output } => {
            let mut text = String::new();
            for row in table::read(file)? {
                let object: serde_json::Map<String, serde_json::Value> =
                    row.into_iter().map(|(k, v)| (k, v.to_json())).collect();
                text.push_str(&serde_json::Value::Object(object).to_string());
                text.push('\n');
            }
            emit(&text, output.as_deref())
        }
    }
}

/// Parses `i/N` (0 <= i < N).
pub fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let bad =
        |why: &str| format!("--shard `{text}`: {why}; expected i/N with 0 <= i < N, e.g. 0/4");
    let (i, n) = text.split_once('/').ok_or_else(|| bad("no `/`"))?;
    let i: u64 = i.trim().parse().map_err(|_| bad("i is not a number"))?;
    let n: u64 = n.trim().parse().map_err(|_| bad("N is not a number"))?;
    if n == 0 {
        return Err(bad("N is 0"));
    }
    if i >= n {
        return Err(bad("i is not below N"));
    }
    Ok((i, n))
}

/// `DIR/shard-i-of-N.parquet`.
pub fn shard_path(dir: &Path, (i, n): (u64, u64)) -> PathBuf {
    dir.join(format!("shard-{i}-of-{n}.parquet"))
}

/// One run: the fio JSON `elevator run --output-format json` prints for the spec, and the
/// warnings `elevator run` would print (job file's, then the simulation's). `stop` (Ctrl-C)
/// ends the simulation early; the caller then drops the result.
pub fn run_one(
    spec: &RunSpec,
    stop: &Arc<AtomicBool>,
) -> Result<(serde_json::Value, Vec<String>), String> {
    let topology = load_topology(spec.topology_path.as_deref())?;
    let vm = &topology.machine.vm;
    let keywords =
        elevator_fio::Keywords { pagesize: 4096, ncpus: vm.cpus, mb_memory: vm.memory_bytes >> 20 };
    let env = |name: &str| spec.vars.get(name).cloned();
    let jobs = elevator_fio::parse_file_with(&spec.job_path, &env, &keywords)
        .map_err(|e| e.to_string())?;
    let options = SimOptions {
        seed: spec.seed,
        scheduler: Some(spec.scheduler.clone()),
        iosched: spec.iosched(),
        stop: Some(Arc::clone(stop)),
        ..SimOptions::default()
    };
    let result = simulate(&jobs, &topology, &options).map_err(|e| e.to_string())?;
    let text = report::json::render(&result, &jobs, spec.seed, &topology.source);
    let mut warnings: Vec<String> = jobs.warnings.iter().map(ToString::to_string).collect();
    warnings.extend(result.warnings());
    let fio = serde_json::from_str(&text).map_err(|e| format!("the run's JSON: {e}"))?;
    Ok((fio, warnings))
}

fn run_shard(plan: &Path, shard: (u64, u64), dir: &Path) -> Result<(), String> {
    let runs = grid::read_plan(plan)?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    let path = shard_path(dir, shard);
    let mut rows: Vec<Row> = if path.exists() { table::read(&path)? } else { Vec::new() };
    let done: BTreeSet<String> = rows.iter().map(|r| table::row_id(r).to_string()).collect();
    let mine: Vec<&RunSpec> = runs
        .iter()
        .enumerate()
        .filter(|(i, r)| *i as u64 % shard.1 == shard.0 && !done.contains(&r.id))
        .map(|(_, r)| r)
        .collect();
    let total = mine.len();
    let skipped =
        runs.iter().enumerate().filter(|(i, _)| *i as u64 % shard.1 == shard.0).count() - total;
    let stop = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&stop))
        .map_err(|e| format!("cannot watch for Ctrl-C: {e}"))?;
    let mut last_write = Instant::now();
    let mut dirty = !path.exists();
    let mut ran = 0;
    for (k, spec) in mine.into_iter().enumerate() {
        let outcome = run_one(spec, &stop);
        if stop.load(Ordering::Relaxed) {
            // The interrupted run's results are partial: leave it for the next `sweep run`.
            if dirty {
                table::sort(&mut rows);
                table::write(&path, &rows)?;
            }
            eprintln!(
                "elevator: interrupted: {ran} of {total} runs added to {}; run again to resume",
                path.display()
            );
            std::process::exit(crate::run::EXIT_INTERRUPTED);
        }
        let (fio, warnings) = match outcome {
            Ok(done) => done,
            Err(e) => {
                if dirty {
                    table::sort(&mut rows);
                    table::write(&path, &rows)?;
                }
                return Err(format!("run {} ({} of {total} in this shard): {e}", spec.id, k + 1));
            }
        };
        rows.extend(table::run_rows(spec, &fio, &warnings));
        dirty = true;
        ran += 1;
        if last_write.elapsed() >= CHECKPOINT_EVERY {
            table::sort(&mut rows);
            table::write(&path, &rows)?;
            last_write = Instant::now();
            dirty = false;
        }
    }
    if dirty {
        table::sort(&mut rows);
        table::write(&path, &rows)?;
    }
    eprintln!(
        "elevator: sweep: shard {}/{}: ran {ran}, skipped {skipped} already in {}",
        shard.0,
        shard.1,
        path.display()
    );
    Ok(())
}

fn merge(inputs: &[PathBuf], output: &Path) -> Result<(), String> {
    let mut files = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(input)
                .map_err(|e| format!("{}: cannot read: {e}", input.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
                .collect();
            if found.is_empty() {
                return Err(format!("{}: no *.parquet files to merge", input.display()));
            }
            found.sort();
            files.extend(found);
        } else {
            files.push(input.clone());
        }
    }
    let mut seen = BTreeSet::new();
    let mut rows = Vec::new();
    for file in &files {
        let file_rows = table::read(file)?;
        let ids: BTreeSet<String> =
            file_rows.iter().map(|r| table::row_id(r).to_string()).collect();
        for row in file_rows {
            if !seen.contains(table::row_id(&row)) {
                rows.push(row);
            }
        }
        seen.extend(ids);
    }
    table::sort(&mut rows);
    table::write(output, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_specs() {
        assert_eq!(parse_shard("0/1"), Ok((0, 1)));
        assert_eq!(parse_shard("3/4"), Ok((3, 4)));
        let want = |text: &str, why: &str| {
            format!("--shard `{text}`: {why}; expected i/N with 0 <= i < N, e.g. 0/4")
        };
        assert_eq!(parse_shard("3/2"), Err(want("3/2", "i is not below N")));
        assert_eq!(parse_shard("2/2"), Err(want("2/2", "i is not below N")));
        assert_eq!(parse_shard("0/0"), Err(want("0/0", "N is 0")));
        assert_eq!(parse_shard("x/2"), Err(want("x/2", "i is not a number")));
        assert_eq!(parse_shard("1/y"), Err(want("1/y", "N is not a number")));
        assert_eq!(parse_shard("-1/2"), Err(want("-1/2", "i is not a number")));
        assert_eq!(parse_shard("1"), Err(want("1", "no `/`")));
        assert_eq!(shard_path(Path::new("d"), (1, 3)), PathBuf::from("d/shard-1-of-3.parquet"));
    }
}
