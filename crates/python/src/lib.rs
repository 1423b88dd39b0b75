//! `elevator._elevator`: the native half of the Python package `elevator` (python/).
//!
//! Each function does what one `elevator` subcommand does with `--output-format json`, through
//! the same library calls (`elevator_sim::frontend`, `elevator_sim::report::json`,
//! `elevator_repro`), and hands back the JSON text the command would print, byte for byte;
//! python/elevator/__init__.py turns it into dicts and DataFrames. Warnings come back as a
//! list of lines (the package issues them with Python's `warnings`); errors are
//! `ElevatorError`, a `ValueError`, with the one line the command prints after `elevator: `.
//!
//! The simulation runs with the GIL released (`Python::detach`). It is still stopped by
//! Ctrl-C: every `WATCH_EVENTS` events the progress hook briefly attaches and runs Python's
//! signal handlers; a `KeyboardInterrupt` stops the run and is raised when it returns.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use elevator_fio::JobFile;
use elevator_sim::engine::Progress;
use elevator_sim::{frontend, report, simulate, SimOptions, Topology};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

create_exception!(
    elevator,
    ElevatorError,
    PyValueError,
    "An input elevator cannot run: the message is the one line `elevator` prints (file, line, key)."
);

/// How job text (not a path) is named in messages.
const JOB_TEXT_NAME: &str = "<job text>";
/// How topology text (not a path) is named in messages.
const TOPOLOGY_TEXT_NAME: &str = "<topology text>";

/// A job file or a topology: a path, or the text itself.
enum Source {
    Path(PathBuf),
    Text(String),
}

impl Source {
    fn new(path: Option<PathBuf>, text: Option<String>, what: &str) -> PyResult<Option<Source>> {
        match (path, text) {
            (Some(p), None) => Ok(Some(Source::Path(p))),
            (None, Some(t)) => Ok(Some(Source::Text(t))),
            (None, None) => Ok(None),
            (Some(_), Some(_)) => Err(PyValueError::new_err(format!(
                "give the {what} as a path or as text, not both"
            ))),
        }
    }
}

/// The inputs of a run or a comparison, read as the command reads them.
fn load(job: &Source, topology: Option<&Source>) -> Result<(Topology, JobFile), String> {
    let topology = match topology {
        None => frontend::load_topology(None)?,
        Some(Source::Path(p)) => frontend::load_topology(Some(p))?,
        Some(Source::Text(t)) => frontend::parse_topology(t, TOPOLOGY_TEXT_NAME)?,
    };
    let env = |name: &str| std::env::var(name).ok();
    let jobs = match job {
        Source::Path(p) => frontend::load_jobs(p, &topology, &env)?,
        Source::Text(t) => frontend::parse_jobs(t, JOB_TEXT_NAME, Path::new("."), &topology, &env)?,
    };
    Ok((topology, jobs))
}

/// Ctrl-C while the GIL is released: the simulation's progress hook runs Python's signal
/// handlers now and then; an exception they raise stops the run and is kept to be raised.
struct Interrupt {
    stop: Arc<AtomicBool>,
    error: Arc<Mutex<Option<PyErr>>>,
}

impl Interrupt {
    fn new() -> Interrupt {
        Interrupt { stop: Arc::new(AtomicBool::new(false)), error: Arc::new(Mutex::new(None)) }
    }

    /// `options` with the stop flag and the hook that sets it.
    fn watch(&self, mut options: SimOptions) -> SimOptions {
        let stop = Arc::clone(&self.stop);
        let error = Arc::clone(&self.error);
        options.stop = Some(Arc::clone(&self.stop));
        options.progress = Some(Arc::new(move |_: &Progress| {
            if let Err(e) = Python::attach(|py| py.check_signals()) {
                if let Ok(mut slot) = error.lock() {
                    slot.get_or_insert(e);
                }
                stop.store(true, Ordering::Relaxed);
            }
        }));
        options
    }

    /// The exception a signal handler raised during the run, if any.
    fn take(&self) -> Option<PyErr> {
        self.error.lock().ok().and_then(|mut e| e.take())
    }
}

/// What a run hands back: the JSON text and the warnings, in the command's order.
type Outcome = (String, Vec<String>);

/// `elevator run JOB [--topology T] [--scheduler S] [--iosched K=V]... --seed N
/// --output-format json` (json+ with `plus`): the JSON text and the warnings. fio's log files
/// (`write_lat_log=` and the like) are written in the current directory, as the command does.
#[pyfunction]
#[pyo3(signature = (*, job_path=None, job_text=None, topology_path=None, topology_text=None,
                    scheduler=None, iosched=Vec::new(), seed=1, plus=false))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    job_path: Option<PathBuf>,
    job_text: Option<String>,
    topology_path: Option<PathBuf>,
    topology_text: Option<String>,
    scheduler: Option<String>,
    iosched: Vec<String>,
    seed: u64,
    plus: bool,
) -> PyResult<Outcome> {
    let job = Source::new(job_path, job_text, "job file")?
        .ok_or_else(|| PyValueError::new_err("a job file (path or text) is needed"))?;
    let topology = Source::new(topology_path, topology_text, "topology")?;
    let interrupt = Interrupt::new();
    let outcome = py.detach(|| -> Result<Outcome, String> {
        let (topology, jobs) = load(&job, topology.as_ref())?;
        let mut warnings: Vec<String> = jobs.warnings.iter().map(|w| w.to_string()).collect();
        let options = interrupt.watch(SimOptions {
            seed,
            scheduler,
            iosched: frontend::parse_iosched(&iosched)?,
            ..SimOptions::default()
        });
        let result = simulate(&jobs, &topology, &options).map_err(|e| e.to_string())?;
        warnings.extend(result.warnings());
        let text = if plus {
            report::json::render_plus(&result, &jobs, seed, &topology.source)
        } else {
            report::json::render(&result, &jobs, seed, &topology.source)
        };
        for (name, text) in report::logs::files(&result, &jobs) {
            std::fs::write(&name, text)
                .map_err(|e| format!("{name}: cannot write the log: {e}"))?;
        }
        let dropped = report::logs::dropped(&result);
        if dropped > 0 {
            warnings.push(format!(
                "{dropped} log lines past {} per log were not written (MAX_LOG_SAMPLES); use log_avg_msec=",
                elevator_sim::iolog_out::MAX_LOG_SAMPLES
            ));
        }
        Ok((text, warnings))
    });
    if let Some(e) = interrupt.take() {
        return Err(e);
    }
    outcome.map_err(ElevatorError::new_err)
}

/// `elevator compare JOB --scheduler A --scheduler B ... --output-format json`: the JSON text
/// (`{"runs": [{"scheduler", "result"}]}`) and the warnings.
#[pyfunction]
#[pyo3(signature = (*, schedulers, job_path=None, job_text=None, topology_path=None,
                    topology_text=None, seed=1))]
fn compare(
    py: Python<'_>,
    schedulers: Vec<String>,
    job_path: Option<PathBuf>,
    job_text: Option<String>,
    topology_path: Option<PathBuf>,
    topology_text: Option<String>,
    seed: u64,
) -> PyResult<Outcome> {
    let job = Source::new(job_path, job_text, "job file")?
        .ok_or_else(|| PyValueError::new_err("a job file (path or text) is needed"))?;
    let topology = Source::new(topology_path, topology_text, "topology")?;
    if schedulers.is_empty() {
        return Err(PyValueError::new_err("give at least one scheduler to compare"));
    }
    py.detach(|| -> Result<Outcome, String> {
        let (topology, jobs) = load(&job, topology.as_ref())?;
        let mut warnings: Vec<String> = jobs.warnings.iter().map(|w| w.to_string()).collect();
        let runs = frontend::compare(&jobs, &topology, seed, &schedulers)?;
        warnings.extend(runs.iter().flat_map(|(_, r)| r.warnings()));
        Ok((frontend::compare_json(&runs, &jobs, seed, &topology), warnings))
    })
    .map_err(ElevatorError::new_err)
}

/// `elevator reproduce NAME --output-format json [--scenarios DIR] [--table T] [--variant V]`:
/// the JSON text.
#[pyfunction]
#[pyo3(signature = (name, *, scenarios=None, table=None, variant=None))]
fn reproduce(
    py: Python<'_>,
    name: String,
    scenarios: Option<PathBuf>,
    table: Option<String>,
    variant: Option<String>,
) -> PyResult<String> {
    py.detach(|| -> Result<String, String> {
        let dir = elevator_repro::scenarios_dir(scenarios.as_deref());
        let mut experiment = elevator_repro::find_experiment(&dir, &name)?;
        experiment.select(table.as_deref(), variant.as_deref())?;
        elevator_repro::run_experiment(&experiment, &mut |_, _, _| {})?.to_json()
    })
    .map_err(ElevatorError::new_err)
}

/// The experiments under `scenarios/` (`elevator reproduce --list`): (name, seed mail, title).
#[pyfunction]
#[pyo3(signature = (*, scenarios=None))]
fn experiments(scenarios: Option<PathBuf>) -> PyResult<Vec<(String, String, String)>> {
    let dir = elevator_repro::scenarios_dir(scenarios.as_deref());
    let list = || -> Result<Vec<(String, String, String)>, String> {
        let mut out = Vec::new();
        for (name, path) in elevator_repro::list_experiments(&dir)? {
            let e = elevator_repro::Experiment::load(&path)?;
            out.push((name, e.seed_mail, e.title));
        }
        Ok(out)
    };
    list().map_err(ElevatorError::new_err)
}

#[pymodule]
fn _elevator(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ElevatorError", m.py().get_type::<ElevatorError>())?;
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce, m)?)?;
    m.add_function(wrap_pyfunction!(experiments, m)?)?;
    Ok(())
}
