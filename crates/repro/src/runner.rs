//! Runs an experiment: every table × variant × row value is one simulation.

use std::collections::BTreeMap;

use elevator_sim::{simulate, SimOptions, Topology};
use serde::Serialize;

use crate::metric::{latency_cdf, Metric, Scope};
use crate::scenario::{tunable_text, Experiment, Table, Variant};

#[derive(Clone, Debug, Serialize)]
pub struct ExperimentResult {
    pub name: String,
    pub seed_mail: String,
    pub title: String,
    pub tables: Vec<TableResult>,
}

#[derive(Clone, Debug, Serialize)]
pub struct TableResult {
    pub title: String,
    pub vary: Option<String>,
    pub headers: Vec<String>,
    pub columns: Vec<String>,
    pub variants: Vec<VariantResult>,
    pub note: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct VariantResult {
    pub label: String,
    pub scheduler: String,
    /// The tunables the variant ran with: those the kernel its topology names sets
    /// (`elevator_sim::era`), then the scenario's own, which win.
    pub iosched: BTreeMap<String, String>,
    pub rows: Vec<RowResult>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RowResult {
    /// The value of the varied variable ("" if none).
    pub value: String,
    /// Our numbers, and the same as the seed would print them.
    pub numbers: Vec<f64>,
    pub cells: Vec<String>,
    /// The published row, as printed in the seed mail.
    pub published: Option<String>,
    /// What the run reported beyond its numbers (e.g. a bandwidth minimum not met).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The table's `cdf` scope's completion latency: (ms, fraction at or below), per percent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cdf: Vec<(f64, f64)>,
}

impl ExperimentResult {
    /// `elevator reproduce --output-format json`: every table, row and cell, pretty-printed,
    /// with a final newline.
    pub fn to_json(&self) -> Result<String, String> {
        let mut s = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        s.push('\n');
        Ok(s)
    }
}

/// How many simulations an experiment runs (for progress bars).
pub fn run_count(e: &Experiment) -> usize {
    e.tables.iter().map(|t| Experiment::row_values(t).len() * t.variants.len()).sum()
}

fn topology_for(e: &Experiment, t: &Table, v: Option<&Variant>) -> Result<Topology, String> {
    match v.and_then(|v| v.topology.as_ref()).or(t.topology.as_ref()).or(e.topology.as_ref()) {
        Some(rel) => Topology::from_file(&e.dir.join(rel)),
        None => Ok(Topology::builtin()),
    }
}

/// The scenario's tunables `own` for `scheduler` on `topology`, over those the kernel the
/// topology names sets for it, so that a table says what ran (a deadline row on 2.6.32 ran
/// with `next_rq_pointers=1` though the scenario does not say so).
fn with_era_tunables(
    topology: &Topology,
    scheduler: &str,
    own: BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let machine = &topology.machine;
    let Some(name) = elevator_sched::canonical_name(scheduler).filter(|_| machine.kernel_named)
    else {
        return own;
    };
    let mut all: BTreeMap<String, String> =
        elevator_sim::era::scheduler_defaults(name, machine.vm.kernel)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    all.extend(own);
    all
}

/// Runs every table; `progress(done, total, what)` is called after each simulation.
pub fn run_experiment(
    e: &Experiment,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<ExperimentResult, String> {
    let total = run_count(e);
    let mut done = 0;
    let mut tables = Vec::new();
    for t in &e.tables {
        let table_topology = topology_for(e, t, None)?;
        let metrics: Vec<Metric> =
            t.columns.iter().map(|c| Metric::parse(c)).collect::<Result<_, _>>()?;
        let headers =
            t.headers.clone().unwrap_or_else(|| metrics.iter().map(Metric::header).collect());
        let cdf_scope = t
            .cdf
            .as_deref()
            .map(Scope::parse)
            .transpose()
            .map_err(|err| format!("{}: table `{}`: cdf: {err}", e.name, t.title))?;
        let mut variants = Vec::new();
        for v in &t.variants {
            let own;
            let topology = if v.topology.is_some() {
                own = topology_for(e, t, Some(v))?;
                &own
            } else {
                &table_topology
            };
            let iosched: BTreeMap<String, String> =
                v.iosched.iter().map(|(k, x)| (k.clone(), tunable_text(x))).collect();
            let mut rows = Vec::new();
            for (i, value) in Experiment::row_values(t).iter().enumerate() {
                // Parsed when the scenario loaded, with this row's `${VAR}`s.
                let jobs = t.row_jobs.get(i).ok_or_else(|| {
                    format!("{}: table `{}`: not loaded by Experiment::load", e.name, t.title)
                })?;
                let options = SimOptions {
                    seed: e.seed,
                    scheduler: Some(v.scheduler.clone()),
                    iosched: iosched.iter().map(|(k, x)| (k.clone(), x.clone())).collect(),
                    ..SimOptions::default()
                };
                let result = simulate(jobs, topology, &options).map_err(|err| {
                    format!("{}: table `{}`, {}: {err}", e.name, t.title, v.label)
                })?;
                let values: Vec<_> = metrics.iter().map(|m| m.eval(&result)).collect();
                rows.push(RowResult {
                    value: value.clone(),
                    numbers: values.iter().map(|x| x.number).collect(),
                    cells: values.into_iter().map(|x| x.text).collect(),
                    published: v.published.get(i).cloned(),
                    warnings: result.warnings(),
                    cdf: cdf_scope.as_ref().map(|s| latency_cdf(&result, s)).unwrap_or_default(),
                });
                done += 1;
                progress(done, total, &format!("{} · {} · {}", t.title, v.label, value));
            }
            variants.push(VariantResult {
                label: v.label.clone(),
                scheduler: v.scheduler.clone(),
                iosched: with_era_tunables(topology, &v.scheduler, iosched),
                rows,
            });
        }
        tables.push(TableResult {
            title: t.title.clone(),
            vary: t.vary.clone(),
            headers,
            columns: t.columns.clone(),
            variants,
            note: t.note.clone(),
        });
    }
    Ok(ExperimentResult {
        name: e.name.clone(),
        seed_mail: e.seed_mail.clone(),
        title: e.title.clone(),
        tables,
    })
}
