//! `elevator calibrate`: a model of a real device, and how wrong it is.
//!
//! 1. [`probe`]: timed request patterns (DIXtrac's, iotune's, `iocost_coef_gen.py`'s) run
//!    closed-loop on the target, within a time budget.
//! 2. [`fit`]: disk or flash, then the HDD or SSD model's parameters from closed forms,
//!    refined by replaying the probes' own requests on the model.
//! 3. [`topology_toml`]: the model as a topology file `elevator run --topology` reads (it is
//!    read back with the simulator's own parser before it is handed out).
//! 4. [`holdout`]: a workload the fit never saw runs on the target and on the model; per
//!    cell, IOPS and bandwidth error and DiskSim's rms demerit of the access-time CDFs.
//! 5. [`IoCost`]: the `io.cost.model` line for the kernel's blk-iocost.
//!
//! Everything above runs against a [`backend::Backend`]: [`uring::UringBackend`] (the real
//! target, `O_DIRECT`, io_uring) or [`backend::SimBackend`] (a device model). The tests
//! calibrate simulated drives of known parameters, so the prober and the fit are checked
//! against ground truth no real device here offers.
//!
//! **Architecture invariant:** only [`uring`] and [`target`] touch the target or the system;
//! the rest is as sans-I/O as the device models it fits, and deterministic given the
//! measurements.

pub mod backend;
pub mod fit;
pub mod holdout;
pub mod probe;
pub mod recording;
pub mod target;
pub mod uring;
pub mod workload;

use elevator_core::{Nanos, NS_PER_SEC};

use backend::{Backend, Hints, SimBackend};
use fit::{Fit, Model};
use holdout::Cell;
use probe::{Kind, Measurements};
use workload::Dir;

/// What to do.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Wall time for probing and the held-out replay together (fitting is extra, seconds).
    pub budget_ns: Nanos,
    /// Writes allowed (they destroy the target's contents).
    pub write: bool,
    /// Seeds every request list.
    pub seed: u64,
    /// The device's name in the topology.
    pub name: String,
    /// What was calibrated, for the topology's header.
    pub source: String,
}

/// Which part of the run a progress report is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Probe,
    Fit,
    Holdout,
}

/// The result.
#[derive(Clone, Debug)]
pub struct Report {
    pub fit: Fit,
    pub measurements: Measurements,
    pub cells: Vec<Cell>,
    pub topology: String,
    pub iocost: IoCost,
    pub hints: Hints,
    pub capacity_bytes: u64,
}

/// Share of the budget the probes get; the held-out replay gets the rest.
pub const PROBE_SHARE: f64 = 0.65;

/// Probes, fits, writes the topology, replays the held-out workload.
pub fn calibrate(
    backend: &mut dyn Backend,
    opts: &Options,
    progress: &mut dyn FnMut(Stage, usize, usize, &str),
) -> Result<Report, String> {
    let budget = opts.budget_ns.clamp(probe::MIN_BUDGET_NS, probe::MAX_BUDGET_NS);
    let capacity = backend.capacity_bytes();
    let hints = backend.hints();
    let probe_ns = (budget as f64 * PROBE_SHARE) as Nanos;
    let plan = probe::plan(capacity, probe_ns, opts.write, opts.seed);
    let measurements =
        probe::run(backend, plan, &mut |i, n, name| progress(Stage::Probe, i, n, name))?;
    progress(Stage::Fit, 0, 1, "fitting");
    let fit = fit::fit(&measurements, &hints)?;
    let max_kb = hints.max_sectors_kb.unwrap_or(512).clamp(4, 1 << 20);
    let topology = topology_toml(opts, &fit, &hints)?;
    let iocost = IoCost::new(&measurements, &fit.model, max_kb)?;
    progress(Stage::Fit, 1, 1, "fitted");
    let cells = holdout::plan(capacity, budget - probe_ns, opts.write, opts.seed);
    let cells = holdout::run(backend, &fit.model, max_kb, cells, &mut |i, n, name| {
        progress(Stage::Holdout, i, n, name)
    })?;
    Ok(Report { fit, measurements, cells, topology, iocost, hints, capacity_bytes: capacity })
}

/// The scheduler elevator runs for the kernel's active one (`none` when elevator has no
/// model of it).
fn scheduler_for(kernel: Option<&str>) -> &'static str {
    match kernel {
        Some("mq-deadline") | Some("deadline") => "mq-deadline",
        Some("cfq") => "cfq",
        _ => "none",
    }
}

/// The topology file for the fitted model: one device, the kernel's queue settings, every
/// model parameter spelled out. Checked by reading it back with the simulator's parser.
pub fn topology_toml(opts: &Options, fit: &Fit, hints: &Hints) -> Result<String, String> {
    let params = match &fit.model {
        Model::Hdd(p) => toml::Table::try_from(p),
        Model::Ssd(p) => toml::Table::try_from(p),
    }
    .map_err(|e| format!("serialising the model: {e}"))?;
    let mut dev = toml::Table::new();
    dev.insert("name".into(), opts.name.clone().into());
    dev.insert("model".into(), fit.model.kind_name().into());
    dev.insert("scheduler".into(), scheduler_for(hints.scheduler.as_deref()).into());
    dev.insert(
        "nr_requests".into(),
        i64::from(hints.nr_requests.unwrap_or(128).clamp(1, 1 << 16)).into(),
    );
    dev.insert(
        "max_sectors_kb".into(),
        i64::from(hints.max_sectors_kb.unwrap_or(512).clamp(4, 1 << 20)).into(),
    );
    dev.insert("params".into(), toml::Value::Table(params));
    let mut root = toml::Table::new();
    root.insert("device".into(), toml::Value::Array(vec![toml::Value::Table(dev)]));
    let body = toml::to_string(&root).map_err(|e| format!("serialising the topology: {e}"))?;
    let mut text = format!(
        "# Fitted by `elevator calibrate` to {} (seed {}, budget {} s{}).\n",
        opts.source,
        opts.seed,
        opts.budget_ns / NS_PER_SEC,
        if opts.write { ", --write" } else { "" }
    );
    text.push_str(&format!("# {}\n", fit.facts.rotational_verdict));
    for n in &fit.notes {
        text.push_str(&format!("# {n}\n"));
    }
    text.push('\n');
    text.push_str(&body);
    elevator_sim::Topology::from_str(&text, "calibrated topology")
        .map_err(|e| format!("the fitted topology does not load: {e}"))?;
    Ok(text)
}

/// One `io.cost.model` coefficient and where it came from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Coef {
    pub value: f64,
    pub measured: bool,
}

/// The linear cost model of blk-iocost (Documentation/admin-guide/cgroup-v2.rst,
/// `io.cost.model`), measured as `tools/cgroup/iocost_coef_gen.py` does: sequential reads of
/// large blocks (`rbps`), sequential and random 4 KiB reads at depth 64 (`rseqiops`,
/// `rrandiops`), and the same for writes. Write coefficients come from the model when
/// `--write` was not given.
#[derive(Clone, Debug, PartialEq)]
pub struct IoCost {
    pub rbps: Coef,
    pub rseqiops: Coef,
    pub rrandiops: Coef,
    pub wbps: Coef,
    pub wseqiops: Coef,
    pub wrandiops: Coef,
}

impl IoCost {
    fn new(m: &Measurements, model: &Model, max_kb: u32) -> Result<IoCost, String> {
        let cap = m.capacity_bytes;
        let n = fit::FIT_IOS;
        let mut rng = elevator_core::RandomStream::new(0, 2000);
        let phases = [
            (
                Kind::SeqMax,
                workload::Phase::new(
                    "rbps",
                    8,
                    workload::sequential(Dir::Read, 0, cap, 1 << 20, n),
                    Nanos::MAX,
                ),
            ),
            (
                Kind::Seq4kDeep,
                workload::Phase::new(
                    "rseqiops",
                    64,
                    workload::sequential(Dir::Read, 0, cap, 4096, n),
                    Nanos::MAX,
                ),
            ),
            (
                Kind::Depth(64),
                workload::Phase::new(
                    "rrandiops",
                    64,
                    workload::random(&mut rng, Dir::Read, 0, cap, 4096, n),
                    Nanos::MAX,
                ),
            ),
            (
                Kind::SeqWrite,
                workload::Phase::new(
                    "wbps",
                    8,
                    workload::sequential(Dir::Write, 0, cap, 1 << 20, n),
                    Nanos::MAX,
                ),
            ),
            (
                Kind::SeqWrite4kDeep,
                workload::Phase::new(
                    "wseqiops",
                    64,
                    workload::sequential(Dir::Write, 0, cap, 4096, n),
                    Nanos::MAX,
                ),
            ),
            (
                Kind::WriteDeep,
                workload::Phase::new(
                    "wrandiops",
                    64,
                    workload::random(&mut rng, Dir::Write, 0, cap, 4096, n),
                    Nanos::MAX,
                ),
            ),
        ];
        let mut sim = SimBackend::new(model.build()?, max_kb);
        let mut coef = Vec::with_capacity(6);
        for (i, (kind, phase)) in phases.iter().enumerate() {
            let bps = i % 3 == 0;
            let value = match m.get(*kind) {
                Some(p) => Coef {
                    value: if bps { p.outcome.bytes_per_sec() } else { p.outcome.iops() },
                    measured: true,
                },
                None => {
                    let o = sim.run(phase)?;
                    Coef { value: if bps { o.bytes_per_sec() } else { o.iops() }, measured: false }
                }
            };
            coef.push(value);
        }
        Ok(IoCost {
            rbps: coef[0],
            rseqiops: coef[1],
            rrandiops: coef[2],
            wbps: coef[3],
            wseqiops: coef[4],
            wrandiops: coef[5],
        })
    }

    /// The line to write to `/sys/fs/cgroup/io.cost.model`.
    pub fn line(&self, devno: Option<&str>) -> String {
        format!(
            "{} ctrl=user model=linear rbps={:.0} rseqiops={:.0} rrandiops={:.0} wbps={:.0} wseqiops={:.0} wrandiops={:.0}",
            devno.unwrap_or("MAJ:MIN"),
            self.rbps.value,
            self.rseqiops.value,
            self.rrandiops.value,
            self.wbps.value,
            self.wseqiops.value,
            self.wrandiops.value
        )
    }

    /// The names of the coefficients taken from the model rather than measured.
    pub fn from_model(&self) -> Vec<&'static str> {
        [
            ("rbps", self.rbps),
            ("rseqiops", self.rseqiops),
            ("rrandiops", self.rrandiops),
            ("wbps", self.wbps),
            ("wseqiops", self.wseqiops),
            ("wrandiops", self.wrandiops),
        ]
        .into_iter()
        .filter(|(_, c)| !c.measured)
        .map(|(n, _)| n)
        .collect()
    }
}
