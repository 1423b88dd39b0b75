//! The scenario file format.
//!
//! ```toml
//! name = "io-controller"
//! seed_mail = "000"
//! title = "Group I/O control by disk time vs vanilla CFQ"
//! topology = "topologies/array-000.toml"   # relative to this file; omit for the built-in disk
//!
//! [[table]]
//! title = "Sequential readers vs random reader"
//! jobfile = "io-controller/seq-vs-random.fio"
//! vary = "N"                       # ${N} in the job file
//! values = [1, 2, 4, 8, 16, 32]
//! columns = ["g0.nr", "g0.max_bw", "g0.min_bw", "g0.agg_bw", "g0.max_lat",
//!            "g1.nr", "g1.agg_bw", "g1.max_lat"]
//!
//! [[table.variant]]
//! label = "Vanilla CFQ"
//! scheduler = "cfq"
//! iosched = { group_scheduling = 0 }
//! published = ["1 13806KB/s 13806KB/s 13483KB/s 28672usec 1 23KB/s 212msec", ...]
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use elevator_fio::JobFile;
use serde::Deserialize;

use crate::metric::Metric;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    pub name: String,
    /// Which seed mail it reproduces ("000" ... "004").
    pub seed_mail: String,
    pub title: String,
    /// Topology file relative to the scenario file; the built-in disk if absent.
    pub topology: Option<String>,
    /// Simulation seed (default 1).
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(rename = "table")]
    pub tables: Vec<Table>,
    /// Directory of the scenario file, filled in when loaded.
    #[serde(skip)]
    pub dir: PathBuf,
}

fn default_seed() -> u64 {
    1
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    pub title: String,
    /// Job file relative to the scenario file.
    pub jobfile: String,
    /// Topology for this table only.
    pub topology: Option<String>,
    /// The `${VAR}` varied down the rows; without it the table has one row.
    pub vary: Option<String>,
    #[serde(default)]
    pub values: Vec<String>,
    /// Other `${VAR}`s for the job file.
    #[serde(default)]
    pub vars: toml::Table,
    /// More `${VAR}`s per row, parallel to `values` (e.g. a size that depends on N).
    #[serde(default)]
    pub row_vars: Vec<toml::Table>,
    pub columns: Vec<String>,
    /// Column headers; default: from the metrics.
    pub headers: Option<Vec<String>>,
    #[serde(rename = "variant")]
    pub variants: Vec<Variant>,
    /// A sentence on what the published numbers showed, printed under the table.
    pub note: Option<String>,
    /// Whose completion-latency CDF to keep per run (a scope: `job:monitor`, `g1`, `all`),
    /// for `--plot` and the JSON output.
    pub cdf: Option<String>,
    /// The job file as each row reads it (with that row's `${VAR}`s), parsed once when the
    /// scenario loads: the runs use what was checked.
    #[serde(skip)]
    pub row_jobs: Vec<JobFile>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub label: String,
    pub scheduler: String,
    /// Topology for this variant only (e.g. another kernel era's machine).
    pub topology: Option<String>,
    #[serde(default)]
    pub iosched: toml::Table,
    /// Published rows, one per value, as the seed printed them.
    #[serde(default)]
    pub published: Vec<String>,
}

impl Experiment {
    /// Loads and checks a scenario file.
    pub fn load(path: &Path) -> Result<Experiment, String> {
        let text = read_scenario(path)?;
        let shown = path.display().to_string();
        let mut e: Experiment =
            toml::from_str(&text).map_err(|err| elevator_sim::toml_error(&shown, &text, &err))?;
        e.dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        if e.tables.len() > MAX_TABLES {
            return Err(format!("{shown}: {} tables; at most {MAX_TABLES}", e.tables.len()));
        }
        let mut runs = 0usize;
        for t in &e.tables {
            let (values, variants) = (t.values.len(), t.variants.len());
            if values > MAX_VALUES || variants > MAX_VARIANTS {
                return Err(format!(
                    "{shown}: table `{}`: {values} values and {variants} variants; at most {MAX_VALUES} values and {MAX_VARIANTS} variants",
                    t.title
                ));
            }
            runs += values.max(1) * variants;
        }
        if runs > MAX_RUNS {
            return Err(format!(
                "{shown}: {runs} runs (values × variants over the tables); at most {MAX_RUNS}"
            ));
        }
        for t in &e.tables {
            for c in &t.columns {
                Metric::parse(c)
                    .map_err(|err| format!("{}: table `{}`: {err}", path.display(), t.title))?;
            }
            if t.vary.is_some() && t.values.is_empty() {
                return Err(format!(
                    "{}: table `{}`: `vary` needs `values`",
                    path.display(),
                    t.title
                ));
            }
            if !t.row_vars.is_empty() && t.row_vars.len() != t.values.len() {
                return Err(format!(
                    "{}: table `{}`: {} row_vars for {} values",
                    path.display(),
                    t.title,
                    t.row_vars.len(),
                    t.values.len()
                ));
            }
            if let Some(h) = &t.headers {
                if h.len() != t.columns.len() {
                    return Err(format!(
                        "{}: table `{}`: {} headers for {} columns",
                        path.display(),
                        t.title,
                        h.len(),
                        t.columns.len()
                    ));
                }
            }
        }
        let row_jobs = e.check_names(&text, &shown)?;
        for (t, jobs) in e.tables.iter_mut().zip(row_jobs) {
            t.row_jobs = jobs;
        }
        Ok(e)
    }

    /// Checks what the tables name before anything runs, so that a typo in the last table
    /// fails at once, at its line, rather than after the tables before it have run: each
    /// variant's scheduler and its tunables (as `--scheduler` and `--iosched` would be
    /// checked), that the topology files exist, and that each job file parses with each
    /// row's variables; returns those parsed job files, per table and row.
    fn check_names(&self, text: &str, shown: &str) -> Result<Vec<Vec<JobFile>>, String> {
        let at = |table: Option<usize>, variant: Option<usize>, key: &str| {
            match crate::scenario_lines::key_line(text, table, variant, key) {
                Some(line) => format!("{shown}:{line}"),
                None => shown.to_string(),
            }
        };
        let exists = |rel: &str, table: usize, variant: Option<usize>, key: &str| {
            if self.dir.join(rel).is_file() {
                return Ok(());
            }
            let t = &self.tables[table];
            let place = match variant {
                Some(v) => format!("table `{}`, {}", t.title, t.variants[v].label),
                None => format!("table `{}`", t.title),
            };
            Err(format!("{}: {place}: {key} `{rel}`: no such file", at(Some(table), variant, key)))
        };
        if let Some(rel) = &self.topology {
            if !self.dir.join(rel).is_file() {
                let at = at(None, None, "topology");
                return Err(format!("{at}: topology `{rel}`: no such file"));
            }
        }
        let mut parsed = Vec::with_capacity(self.tables.len());
        for (ti, t) in self.tables.iter().enumerate() {
            exists(&t.jobfile, ti, None, "jobfile")?;
            // The job file as each row will read it: an undefined `${VAR}` or a bad option.
            let mut rows = Vec::new();
            for (i, value) in Experiment::row_values(t).iter().enumerate() {
                let vars = Experiment::row_vars(t, i, value);
                let env = |name: &str| vars.get(name).cloned();
                let jobs =
                    elevator_fio::parse_file(&self.dir.join(&t.jobfile), &env).map_err(|err| {
                        let row = match &t.vary {
                            Some(name) => format!(", {name} = {value}"),
                            None => String::new(),
                        };
                        let at = at(Some(ti), None, "jobfile");
                        format!("{at}: table `{}`{row}: {err}", t.title)
                    })?;
                rows.push(jobs);
            }
            parsed.push(rows);
            if let Some(rel) = &t.topology {
                exists(rel, ti, None, "topology")?;
            }
            for (vi, v) in t.variants.iter().enumerate() {
                let title = &t.title;
                let label = &v.label;
                if let Some(rel) = &v.topology {
                    exists(rel, ti, Some(vi), "topology")?;
                }
                let mut s = elevator_sched::by_name(&v.scheduler).map_err(|err| {
                    format!(
                        "{}: table `{title}`, {label}: {err}",
                        at(Some(ti), Some(vi), "scheduler")
                    )
                })?;
                for (key, value) in &v.iosched {
                    s.set_tunable(key, &tunable_text(value)).map_err(|err| {
                        let at = at(Some(ti), Some(vi), "iosched");
                        format!("{at}: table `{title}`, {label}: iosched {key}: {err}")
                    })?;
                }
            }
        }
        Ok(parsed)
    }

    /// The `${VAR}`s of row `i` of `table`, whose value is `value`: the table's `vars`, then
    /// the row's `row_vars`, then the varied one.
    pub fn row_vars(table: &Table, i: usize, value: &str) -> BTreeMap<String, String> {
        let mut vars: BTreeMap<String, String> =
            table.vars.iter().map(|(k, x)| (k.clone(), tunable_text(x))).collect();
        if let Some(row) = table.row_vars.get(i) {
            vars.extend(row.iter().map(|(k, x)| (k.clone(), tunable_text(x))));
        }
        if let Some(name) = &table.vary {
            vars.insert(name.clone(), value.to_string());
        }
        vars
    }

    /// Keeps the tables whose title contains `table` and, in them, the variants whose label
    /// contains `variant` (either ignoring case; `None` keeps all), so that one table or one
    /// scheduler of an experiment can be rerun alone (`elevator reproduce --table
    /// --variant`). A selection that keeps nothing is an error naming what there is.
    pub fn select(&mut self, table: Option<&str>, variant: Option<&str>) -> Result<(), String> {
        let has = |text: &str, part: Option<&str>| {
            part.is_none_or(|p| text.to_lowercase().contains(&p.to_lowercase()))
        };
        let titles: Vec<String> = self.tables.iter().map(|t| t.title.clone()).collect();
        self.tables.retain(|t| has(&t.title, table));
        if self.tables.is_empty() {
            return Err(format!(
                "no table of `{}` has `{}` in its title; its tables: {}",
                self.name,
                table.unwrap_or_default(),
                titles.join("; ")
            ));
        }
        let mut labels: Vec<String> = Vec::new();
        for t in &mut self.tables {
            for v in &t.variants {
                if !labels.contains(&v.label) {
                    labels.push(v.label.clone());
                }
            }
            t.variants.retain(|v| has(&v.label, variant));
        }
        self.tables.retain(|t| !t.variants.is_empty());
        if self.tables.is_empty() {
            return Err(format!(
                "no variant of the tables chosen has `{}` in its label; their variants: {}",
                variant.unwrap_or_default(),
                labels.join("; ")
            ));
        }
        Ok(())
    }

    /// The values down a table's rows (one empty value if nothing varies).
    pub fn row_values(table: &Table) -> Vec<String> {
        if table.vary.is_some() {
            table.values.clone()
        } else {
            vec![String::new()]
        }
    }
}

/// Bytes of scenario text read.
pub const MAX_SCENARIO_BYTES: u64 = 1 << 20;
/// Tables in one scenario, values down one table, variants across one.
pub const MAX_TABLES: usize = 64;
pub const MAX_VALUES: usize = 256;
pub const MAX_VARIANTS: usize = 64;
/// Simulation runs one scenario asks for (values × variants, over its tables).
pub const MAX_RUNS: usize = 4096;

/// A tunable's value as sysfs would be written: booleans as 0 and 1.
pub(crate) fn tunable_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Boolean(b) => u8::from(*b).to_string(),
        other => other.to_string(),
    }
}

fn read_scenario(path: &Path) -> Result<String, String> {
    elevator_sim::read_bounded(path, MAX_SCENARIO_BYTES)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))
}

/// Where scenarios are looked for when no directory is given: `./scenarios` if there is
/// one, else the source tree's (the one this crate was built from).
pub fn scenarios_dir(given: Option<&Path>) -> PathBuf {
    if let Some(dir) = given {
        return dir.to_path_buf();
    }
    let here = PathBuf::from("scenarios");
    if here.is_dir() {
        return here;
    }
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios"))
}

/// The experiment called `name` in `dir`; an unknown name is an error listing the known ones.
pub fn find_experiment(dir: &Path, name: &str) -> Result<Experiment, String> {
    let experiments = list_experiments(dir)?;
    let Some((_, path)) = experiments.iter().find(|(n, _)| n == name) else {
        let names: Vec<&str> = experiments.iter().map(|(n, _)| n.as_str()).collect();
        return Err(format!(
            "no experiment `{name}` in {}; experiments: {}",
            dir.display(),
            names.join(", ")
        ));
    };
    Experiment::load(path)
}

/// Every `*.toml` scenario directly under `dir` that is an experiment, sorted by name. A
/// `.toml` that cannot be read or parsed is an error, not left out.
pub fn list_experiments(dir: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: cannot list scenarios: {e}", dir.display()))?;
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        let text = read_scenario(&path)?;
        let shown = path.display().to_string();
        let doc: toml::Table =
            toml::from_str(&text).map_err(|err| elevator_sim::toml_error(&shown, &text, &err))?;
        if !doc.contains_key("table") {
            continue; // a topology file, not an experiment
        }
        let e = Experiment::load(&path)?;
        out.push((e.name.clone(), path));
    }
    out.sort();
    // Two files of one name would leave which one runs to the order of the directory.
    if let Some(w) = out.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(format!(
            "{} and {} are both experiment `{}`: give one of them another `name`",
            w[0].1.display(),
            w[1].1.display(),
            w[0].0
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scenario directory with `files` (name, text) and a job file.
    fn dir_with(tag: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("elevator-scenario-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("j.fio"), "[r]\nrw=read\nsize=1m\n").unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        dir
    }

    const TWO_TABLES: &str = r#"
name = "x"
seed_mail = "000"
title = "t"
[[table]]
title = "Readers alone"
jobfile = "j.fio"
columns = ["all.agg_bw"]
[[table.variant]]
label = "CFQ"
scheduler = "cfq"
[[table.variant]]
label = "deadline"
scheduler = "mq-deadline"
[[table]]
title = "Readers beside writers"
jobfile = "j.fio"
columns = ["all.agg_bw"]
[[table.variant]]
label = "noop"
scheduler = "none"
"#;

    #[test]
    fn select_keeps_the_tables_and_variants_named() {
        let dir = dir_with("select", &[("x.toml", TWO_TABLES)]);
        let e = find_experiment(&dir, "x").unwrap();
        let titles = |e: &Experiment| e.tables.iter().map(|t| t.title.clone()).collect::<Vec<_>>();
        let mut one = e.clone();
        one.select(Some("BESIDE"), None).unwrap();
        assert_eq!(titles(&one), ["Readers beside writers"]);
        // A variant filter drops the tables left with none.
        let mut cfq = e.clone();
        cfq.select(None, Some("cfq")).unwrap();
        assert_eq!(titles(&cfq), ["Readers alone"]);
        assert_eq!(cfq.tables[0].variants.len(), 1);
        let err = e.clone().select(Some("zz"), None).unwrap_err();
        assert!(err.contains("Readers alone; Readers beside writers"), "{err}");
        let err = e.clone().select(Some("alone"), Some("noop")).unwrap_err();
        assert!(err.contains("their variants: CFQ; deadline"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn two_files_of_one_name_are_an_error() {
        let dir = dir_with("twins", &[("a.toml", TWO_TABLES), ("b.toml", TWO_TABLES)]);
        let err = find_experiment(&dir, "x").unwrap_err();
        assert!(
            err.contains("a.toml and") && err.contains("b.toml are both experiment `x`"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
