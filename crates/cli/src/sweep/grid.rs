//! Grid files → plans: the cartesian product of a sweep's axes, one run spec per plan line,
//! each with a content-hash id, everything validated before anything runs.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use elevator_core::text::line_of;
use elevator_sched::TunableError;
use elevator_sim::Topology;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toml::Spanned;

/// Runs one grid may expand to.
pub const MAX_SWEEP_RUNS: u64 = 1_000_000;
/// Size of a grid file.
pub const MAX_GRID_BYTES: u64 = 1 << 20;

/// One axis of values as written.
type Axis = Spanned<Vec<Spanned<toml::Value>>>;

/// A grid file as written (spans for the error messages).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GridFile {
    job: Spanned<String>,
    #[serde(default)]
    topology: Option<Spanned<Vec<Spanned<String>>>>,
    scheduler: Spanned<Vec<Spanned<String>>>,
    seeds: Spanned<Vec<Spanned<i64>>>,
    #[serde(default)]
    vars: BTreeMap<Spanned<String>, Axis>,
    #[serde(default)]
    tunables: BTreeMap<Spanned<String>, Spanned<BTreeMap<Spanned<String>, Axis>>>,
}

/// One run of a sweep: a plan line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// [`RunSpec::compute_id`] of the other fields.
    pub id: String,
    /// The job file as the grid names it, and the path a run opens.
    pub job: String,
    pub job_path: PathBuf,
    /// `builtin` or the topology file as the grid names it, and the path a run opens.
    pub topology: String,
    pub topology_path: Option<PathBuf>,
    pub scheduler: String,
    pub seed: u64,
    /// The job file's `${VAR}`s.
    pub vars: BTreeMap<String, String>,
    /// This run's scheduler tunables (sysfs names), as the grid gives them.
    pub tunables: BTreeMap<String, Value>,
}

/// The part of a run spec its id hashes: everything but the resolved paths (so a plan made
/// from another directory keeps its ids).
#[derive(Serialize)]
struct Canonical<'a> {
    job: &'a str,
    topology: &'a str,
    scheduler: &'a str,
    seed: u64,
    vars: &'a BTreeMap<String, String>,
    tunables: &'a BTreeMap<String, Value>,
}

/// 64-bit FNV-1a of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl RunSpec {
    /// The canonical JSON of the spec: fixed field order, sorted maps, no paths.
    pub fn canonical_json(&self) -> String {
        serde_json::to_string(&Canonical {
            job: &self.job,
            topology: &self.topology,
            scheduler: &self.scheduler,
            seed: self.seed,
            vars: &self.vars,
            tunables: &self.tunables,
        })
        .expect("serializable")
    }

    /// 16 hex digits of FNV-1a over [`RunSpec::canonical_json`].
    pub fn compute_id(&self) -> String {
        format!("{:016x}", fnv1a64(self.canonical_json().as_bytes()))
    }

    /// The tunables as `--iosched` pairs.
    pub fn iosched(&self) -> Vec<(String, String)> {
        self.tunables.iter().map(|(k, v)| (k.clone(), tunable_text(v))).collect()
    }
}

/// A tunable's sysfs text: strings as written, booleans 1/0, numbers as TOML writes them.
pub fn tunable_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => u8::from(*b).to_string(),
        other => other.to_string(),
    }
}

/// The key a value at byte `offset` is written under, with its table (`grid.rw`).
fn key_at(text: &str, offset: usize) -> Option<String> {
    let key = elevator_core::text::toml_key_at(text, offset)?;
    let table = text[..offset].lines().rev().find_map(elevator_core::text::toml_header);
    Some(match table {
        Some(t) => format!("{t}.{key}"),
        None => key,
    })
}

struct Ctx<'a> {
    name: String,
    text: &'a str,
}

impl Ctx<'_> {
    fn err(
        &self,
        span: std::ops::Range<usize>,
        key: &str,
        message: impl std::fmt::Display,
    ) -> String {
        format!("{}:{}: {key}: {message}", self.name, line_of(self.text, span.start))
    }
}

fn non_empty<T>(ctx: &Ctx, axis: &Spanned<Vec<T>>, key: &str) -> Result<(), String> {
    if axis.get_ref().is_empty() {
        return Err(ctx.err(axis.span(), key, "empty axis: give at least one value"));
    }
    Ok(())
}

/// Rejects a value given twice on one axis (two runs with one id).
fn no_duplicates<T: PartialEq + std::fmt::Display>(
    ctx: &Ctx,
    values: &[(T, std::ops::Range<usize>)],
    key: &str,
) -> Result<(), String> {
    for (i, (v, span)) in values.iter().enumerate() {
        if values[..i].iter().any(|(w, _)| w == v) {
            return Err(ctx.err(span.clone(), key, format!("`{v}` is given twice")));
        }
    }
    Ok(())
}

fn scalar_json(ctx: &Ctx, v: &Spanned<toml::Value>, key: &str) -> Result<Value, String> {
    Ok(match v.get_ref() {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Float(f) if f.is_finite() => Value::from(*f),
        _ => {
            return Err(ctx.err(
                v.span(),
                key,
                "expected a string, an integer, a finite float or a boolean",
            ))
        }
    })
}

/// Reads, validates and expands a grid file into its runs, in the grid's axis order
/// (topology, scheduler, its tunables, vars, seed; the last axis varies fastest).
pub fn plan(path: &Path) -> Result<Vec<RunSpec>, String> {
    let name = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| format!("{name}: cannot read: {e}"))?;
    if meta.len() > MAX_GRID_BYTES {
        return Err(format!(
            "{name}: {} bytes, more than a grid file may have ({MAX_GRID_BYTES}, MAX_GRID_BYTES)",
            meta.len()
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: cannot read: {e}"))?;
    let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
    plan_text(&text, &name, &dir)
}

/// [`plan`] of grid text; `name` labels messages, relative paths resolve against `dir`.
pub fn plan_text(text: &str, name: &str, dir: &Path) -> Result<Vec<RunSpec>, String> {
    let ctx = Ctx { name: name.to_string(), text };
    let grid: GridFile = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        let line = line_of(text, offset);
        let message: Vec<&str> =
            e.message().lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        let message = message.join("; ");
        match e.span().and_then(|s| key_at(text, s.start)) {
            Some(key)
                if ["invalid type", "invalid value", "invalid length"]
                    .iter()
                    .any(|m| message.starts_with(m)) =>
            {
                format!("{name}:{line}: {key}: {message}")
            }
            _ => format!("{name}:{line}: {message}"),
        }
    })?;

    // Axes, checked one by one.
    non_empty(&ctx, &grid.scheduler, "scheduler")?;
    let mut schedulers = Vec::new();
    for s in grid.scheduler.get_ref() {
        elevator_sched::by_name(s.get_ref()).map_err(|e| ctx.err(s.span(), "scheduler", e))?;
        schedulers.push((canonical_scheduler(s.get_ref()), s.span()));
    }
    no_duplicates(&ctx, &schedulers, "scheduler")?;

    non_empty(&ctx, &grid.seeds, "seeds")?;
    let mut seeds = Vec::new();
    for s in grid.seeds.get_ref() {
        let seed = u64::try_from(*s.get_ref())
            .map_err(|_| ctx.err(s.span(), "seeds", format!("`{}` is negative", s.get_ref())))?;
        seeds.push((seed, s.span()));
    }
    no_duplicates(&ctx, &seeds, "seeds")?;

    let mut topologies: Vec<(String, Option<PathBuf>)> = Vec::new();
    match &grid.topology {
        None => topologies.push(("builtin".into(), None)),
        Some(axis) => {
            non_empty(&ctx, axis, "topology")?;
            let mut seen = Vec::new();
            for t in axis.get_ref() {
                seen.push((t.get_ref().clone(), t.span()));
                if t.get_ref() == "builtin" {
                    topologies.push(("builtin".into(), None));
                    continue;
                }
                let p = dir.join(t.get_ref());
                Topology::from_file(&p).map_err(|e| ctx.err(t.span(), "topology", e))?;
                topologies.push((t.get_ref().clone(), Some(p)));
            }
            no_duplicates(&ctx, &seen, "topology")?;
        }
    }

    let mut vars: Vec<(String, Vec<String>)> = Vec::new();
    for (k, axis) in &grid.vars {
        let key = format!("vars.{}", k.get_ref());
        non_empty(&ctx, axis, &key)?;
        let mut values = Vec::new();
        for v in axis.get_ref() {
            let text = match scalar_json(&ctx, v, &key)? {
                Value::String(s) => s,
                other => tunable_text(&other),
            };
            values.push((text, v.span()));
        }
        no_duplicates(&ctx, &values, &key)?;
        vars.push((k.get_ref().clone(), values.into_iter().map(|(v, _)| v).collect()));
    }

    // Tunable axes per scheduler, each value tried on a fresh scheduler.
    let mut tunables: BTreeMap<String, Vec<(String, Vec<Value>)>> = BTreeMap::new();
    for (sched, table) in &grid.tunables {
        let sched_name = sched.get_ref();
        if !schedulers.iter().any(|(s, _)| *s == canonical_scheduler(sched_name)) {
            return Err(ctx.err(
                sched.span(),
                &format!("tunables.{sched_name}"),
                format!("scheduler `{sched_name}` is not on the `scheduler` axis"),
            ));
        }
        let mut axes = Vec::new();
        for (k, axis) in table.get_ref() {
            let key = format!("tunables.{sched_name}.{}", k.get_ref());
            non_empty(&ctx, axis, &key)?;
            let mut values = Vec::new();
            for v in axis.get_ref() {
                let value = scalar_json(&ctx, v, &key)?;
                let mut s = elevator_sched::by_name(sched_name)
                    .map_err(|e| ctx.err(sched.span(), &key, e))?;
                s.set_tunable(k.get_ref(), &tunable_text(&value)).map_err(|e| {
                    let span = match e {
                        TunableError::Unknown { .. } => k.span(),
                        TunableError::Invalid { .. } => v.span(),
                    };
                    ctx.err(span, &key, e)
                })?;
                values.push((value, v.span()));
            }
            let shown: Vec<(String, std::ops::Range<usize>)> =
                values.iter().map(|(v, s)| (v.to_string(), s.clone())).collect();
            no_duplicates(&ctx, &shown, &key)?;
            axes.push((k.get_ref().clone(), values.into_iter().map(|(v, _)| v).collect()));
        }
        if tunables.insert(canonical_scheduler(sched_name), axes).is_some() {
            return Err(ctx.err(
                sched.span(),
                &format!("tunables.{sched_name}"),
                "a second table for the same scheduler (under another of its names)",
            ));
        }
    }

    // Count before expanding anything.
    let var_combos = axis_product(vars.iter().map(|(_, v)| v.len()));
    let mut total: Option<u64> = Some(0);
    for (s, _) in &schedulers {
        let t = tunables.get(s).map(|a| axis_product(a.iter().map(|(_, v)| v.len())));
        let n = axis_product([topologies.len(), seeds.len()])
            .zip(var_combos)
            .and_then(|(a, b)| a.checked_mul(b))
            .and_then(|a| a.checked_mul(t.unwrap_or(Some(1))?));
        total = total.zip(n).and_then(|(a, b)| a.checked_add(b));
    }
    match total {
        Some(n) if n <= MAX_SWEEP_RUNS => {}
        _ => {
            return Err(format!(
                "{name}: the grid expands to {} runs, more than a sweep may have ({MAX_SWEEP_RUNS}, MAX_SWEEP_RUNS)",
                total.map_or("too many".to_string(), |n| n.to_string())
            ))
        }
    }

    // The job file with each combination of its variables: parses, uses every grid
    // variable, and every ${VAR} it uses is in the grid.
    let job_path = dir.join(grid.job.get_ref());
    let var_sets = product(&vars.iter().map(|(k, v)| (k.clone(), v.clone())).collect::<Vec<_>>());
    let mut used = BTreeSet::new();
    let mut warned = BTreeSet::new();
    for set in &var_sets {
        let seen = RefCell::new(BTreeSet::new());
        let env = |n: &str| {
            seen.borrow_mut().insert(n.to_string());
            set.get(n).cloned()
        };
        let parsed = elevator_fio::parse_file(&job_path, &env);
        let seen = seen.into_inner();
        if let Some(undefined) = seen.iter().find(|n| !set.contains_key(*n)) {
            return Err(ctx.err(
                grid.job.span(),
                "job",
                format!("the job file uses `${{{undefined}}}`, which [vars] does not define (a sweep reads no environment)"),
            ));
        }
        let jobs = parsed.map_err(|e| ctx.err(grid.job.span(), "job", e))?;
        for w in &jobs.warnings {
            let w = w.to_string();
            if warned.insert(w.clone()) {
                eprintln!("elevator: warning: {w}");
            }
        }
        used.extend(seen);
    }
    for k in grid.vars.keys() {
        if !used.contains(k.get_ref()) {
            return Err(ctx.err(
                k.span(),
                &format!("vars.{}", k.get_ref()),
                format!("the job file never uses `${{{}}}`", k.get_ref()),
            ));
        }
    }

    let mut runs = Vec::new();
    for (topology, topology_path) in &topologies {
        for (scheduler, _) in &schedulers {
            let axes: Vec<(String, Vec<Value>)> =
                tunables.get(scheduler).cloned().unwrap_or_default();
            for tune in product(&axes) {
                for set in &var_sets {
                    for (seed, _) in &seeds {
                        let mut spec = RunSpec {
                            id: String::new(),
                            job: grid.job.get_ref().clone(),
                            job_path: job_path.clone(),
                            topology: topology.clone(),
                            topology_path: topology_path.clone(),
                            scheduler: scheduler.clone(),
                            seed: *seed,
                            vars: set.clone(),
                            tunables: tune.clone(),
                        };
                        spec.id = spec.compute_id();
                        runs.push(spec);
                    }
                }
            }
        }
    }
    Ok(runs)
}

/// A scheduler's own name for one of its aliases (`deadline` → `mq-deadline`), so that both
/// spellings give one run and one id.
fn canonical_scheduler(name: &str) -> String {
    elevator_sched::canonical_name(name).unwrap_or(name).to_string()
}

/// The product of axis lengths; `None` past `u64`.
fn axis_product(lens: impl IntoIterator<Item = usize>) -> Option<u64> {
    lens.into_iter().try_fold(1u64, |acc, n| acc.checked_mul(n as u64))
}

/// The cartesian product of named axes, the last varying fastest.
fn product<T: Clone>(axes: &[(String, Vec<T>)]) -> Vec<BTreeMap<String, T>> {
    let mut out = vec![BTreeMap::new()];
    for (k, values) in axes {
        out = out
            .into_iter()
            .flat_map(|m| {
                values.iter().map(move |v| {
                    let mut m = m.clone();
                    m.insert(k.clone(), v.clone());
                    m
                })
            })
            .collect();
    }
    out
}

/// The plan as JSON lines.
pub fn to_jsonl(runs: &[RunSpec]) -> String {
    let mut out = String::new();
    for r in runs {
        out.push_str(&serde_json::to_string(r).expect("serializable"));
        out.push('\n');
    }
    out
}

/// Reads a plan written by [`to_jsonl`]; every id is checked against its spec.
pub fn read_plan(path: &Path) -> Result<Vec<RunSpec>, String> {
    let name = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| format!("{name}: cannot read: {e}"))?;
    // A plan line is a few hundred bytes; allow 4 KiB per run.
    let max = MAX_SWEEP_RUNS * 4096;
    if meta.len() > max {
        return Err(format!("{name}: {} bytes, more than a plan may have ({max})", meta.len()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: cannot read: {e}"))?;
    let mut runs = Vec::new();
    let mut ids = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let spec: RunSpec = serde_json::from_str(line)
            .map_err(|e| format!("{name}:{}: not a plan line: {e}", i + 1))?;
        if spec.compute_id() != spec.id {
            return Err(format!(
                "{name}:{}: id `{}` does not match the run's spec (expected `{}`)",
                i + 1,
                spec.id,
                spec.compute_id()
            ));
        }
        if !ids.insert(spec.id.clone()) {
            return Err(format!("{name}:{}: run `{}` is in the plan twice", i + 1, spec.id));
        }
        runs.push(spec);
    }
    if runs.len() as u64 > MAX_SWEEP_RUNS {
        return Err(format!("{name}: more than {MAX_SWEEP_RUNS} runs (MAX_SWEEP_RUNS)"));
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: &str = "[r]\nrw=randread\nbs=4k\nsize=${N}m\nruntime=1\n";

    /// A directory with `job.fio` (which uses `${N}`) and `grid.toml` holding `grid`.
    fn setup(tag: &str, grid: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("elevator-grid-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("job.fio"), JOB).unwrap();
        let path = dir.join("grid.toml");
        std::fs::write(&path, grid).unwrap();
        path
    }

    /// The error of planning `grid`, with the temporary directory replaced by `D`.
    fn error(tag: &str, grid: &str) -> String {
        let path = setup(tag, grid);
        let dir = path.parent().unwrap().display().to_string();
        plan(&path).expect_err("invalid grid").replace(&dir, "D")
    }

    const FULL: &str = r#"job = "job.fio"
scheduler = ["mq-deadline", "bfq"]
seeds = [1, 2, 3]
[vars]
N = ["1", "4", "16"]
[tunables.mq-deadline]
read_expire = [100, 500]
fifo_batch = [1, 16]
"#;

    #[test]
    fn fnv1a_known_values() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn expands_the_cartesian_product_with_tunables_per_scheduler() {
        let runs = plan(&setup("full", FULL)).unwrap();
        // mq-deadline: 2 × 2 tunable values; bfq: none; × 3 values of N × 3 seeds.
        assert_eq!(runs.len(), (4 + 1) * 3 * 3);
        let mq = runs.iter().filter(|r| r.scheduler == "mq-deadline").count();
        assert_eq!(mq, 36);
        assert!(runs
            .iter()
            .filter(|r| r.scheduler == "bfq")
            .all(|r| r.tunables.is_empty() && r.topology == "builtin"));
        let ids: BTreeSet<&str> = runs.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids.len(), runs.len(), "ids are unique");
        // The last axis (seeds) varies fastest.
        assert_eq!(runs.iter().take(3).map(|r| r.seed).collect::<Vec<_>>(), vec![1, 2, 3]);
    }

    #[test]
    fn ids_and_bytes_are_stable() {
        let a = to_jsonl(&plan(&setup("stable-a", FULL)).unwrap());
        let b = to_jsonl(&plan(&setup("stable-b", FULL)).unwrap());
        // The directories differ, so the paths do; the ids do not.
        let ids = |t: &str| -> Vec<String> {
            t.lines().map(|l| serde_json::from_str::<RunSpec>(l).unwrap().id).collect()
        };
        assert_eq!(ids(&a), ids(&b));
        assert_eq!(a, to_jsonl(&plan(&setup("stable-a", FULL)).unwrap()));
        let first: RunSpec = serde_json::from_str(a.lines().next().unwrap()).unwrap();
        assert_eq!(
            first.canonical_json(),
            r#"{"job":"job.fio","topology":"builtin","scheduler":"mq-deadline","seed":1,"vars":{"N":"1"},"tunables":{"fifo_batch":1,"read_expire":100}}"#
        );
        assert_eq!(first.id, format!("{:016x}", fnv1a64(first.canonical_json().as_bytes())));
        assert_eq!(first.id, "f0695d21c83055f7");
    }

    #[test]
    fn aliases_are_the_scheduler_itself() {
        let grid = FULL.replace("[\"mq-deadline\", \"bfq\"]", "[\"deadline\", \"bfq\"]");
        let aliased =
            plan(&setup("alias-ok", &grid.replace("tunables.mq-deadline", "tunables.deadline")))
                .unwrap();
        let full = plan(&setup("alias-full", FULL)).unwrap();
        let ids = |runs: &[RunSpec]| runs.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&aliased), ids(&full));
        assert_eq!(aliased[0].scheduler, "mq-deadline");
    }

    #[test]
    fn validation_errors_name_file_line_and_key() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "tunable",
                "job = \"job.fio\"\nscheduler = [\"mq-deadline\"]\nseeds = [1]\n[vars]\nN = [\"1\"]\n[tunables.mq-deadline]\nread_expyre = [100]\n",
                "D/grid.toml:7: tunables.mq-deadline.read_expyre: scheduler `mq-deadline` has no tunable `read_expyre`; its tunables are: read_expire, write_expire, writes_starved, front_merges, async_depth, fifo_batch, prio_aging_expire, next_rq_pointers",
            ),
            (
                "range",
                "job = \"job.fio\"\nscheduler = [\"mq-deadline\"]\nseeds = [1]\n[vars]\nN = [\"1\"]\n[tunables.mq-deadline]\nfront_merges = [0, 2]\n",
                "D/grid.toml:7: tunables.mq-deadline.front_merges: mq-deadline tunable `front_merges`: `2` is not valid, expected an integer in 0..=1 (bool)",
            ),
            (
                "sched",
                "job = \"job.fio\"\nscheduler = [\"mq-deadline\", \"deadlin\"]\nseeds = [1]\n[vars]\nN = [\"1\"]\n",
                "D/grid.toml:2: scheduler: unknown scheduler `deadlin`; known schedulers: none, mq-deadline, cfq, anticipatory, bfq, kyber",
            ),
            (
                "alias",
                "job = \"job.fio\"\nscheduler = [\"mq-deadline\", \"deadline\"]\nseeds = [1]\n[vars]\nN = [\"1\"]\n",
                "D/grid.toml:2: scheduler: `mq-deadline` is given twice",
            ),
            (
                "notaxis",
                "job = \"job.fio\"\nscheduler = [\"bfq\"]\nseeds = [1]\n[vars]\nN = [\"1\"]\n[tunables.mq-deadline]\nfifo_batch = [1]\n",
                "D/grid.toml:6: tunables.mq-deadline: scheduler `mq-deadline` is not on the `scheduler` axis",
            ),
            (
                "empty",
                "job = \"job.fio\"\nscheduler = [\"bfq\"]\nseeds = []\n[vars]\nN = [\"1\"]\n",
                "D/grid.toml:3: seeds: empty axis: give at least one value",
            ),
            (
                "emptyvar",
                "job = \"job.fio\"\nscheduler = [\"bfq\"]\nseeds = [1]\n[vars]\nN = []\n",
                "D/grid.toml:5: vars.N: empty axis: give at least one value",
            ),
            (
                "toml",
                "job = \"job.fio\"\nscheduler = [\"bfq\"\nseeds = [1]\n",
                "D/grid.toml:3: invalid array; expected `]`",
            ),
            (
                "type",
                "job = \"job.fio\"\nscheduler = [\"bfq\"]\nseeds = [\n  1,\n  \"a\",\n]\n",
                "D/grid.toml:5: seeds: invalid type: string \"a\", expected i64",
            ),
            (
                "tabletype",
                "job = \"job.fio\"\nscheduler = [\"bfq\"]\nseeds = [1]\n[vars]\nN = \"1\"\n",
                "D/grid.toml:5: vars.N: invalid type: string \"1\", expected a sequence",
            ),
            (
                "unknownkey",
                "job = \"job.fio\"\nschedulers = [\"bfq\"]\nseeds = [1]\n",
                "D/grid.toml:2: unknown field `schedulers`, expected one of `job`, `topology`, `scheduler`, `seeds`, `vars`, `tunables`",
            ),
            (
                "unused",
                "job = \"job.fio\"\nscheduler = [\"bfq\"]\nseeds = [1]\n[vars]\nN = [\"1\"]\nM = [\"2\"]\n",
                "D/grid.toml:6: vars.M: the job file never uses `${M}`",
            ),
            (
                "undefined",
                "job = \"job.fio\"\nscheduler = [\"bfq\"]\nseeds = [1]\n",
                "D/grid.toml:1: job: the job file uses `${N}`, which [vars] does not define (a sweep reads no environment)",
            ),
            (
                "negative",
                "job = \"job.fio\"\nscheduler = [\"bfq\"]\nseeds = [1, -2]\n[vars]\nN = [\"1\"]\n",
                "D/grid.toml:3: seeds: `-2` is negative",
            ),
            (
                "twice",
                "job = \"job.fio\"\nscheduler = [\"bfq\"]\nseeds = [1, 2, 1]\n[vars]\nN = [\"1\"]\n",
                "D/grid.toml:3: seeds: `1` is given twice",
            ),
            (
                "nojob",
                "job = \"nope.fio\"\nscheduler = [\"bfq\"]\nseeds = [1]\n",
                "D/grid.toml:1: job: D/nope.fio:0: cannot open job file `D/nope.fio`: No such file or directory",
            ),
        ];
        let mut wrong = String::new();
        for (tag, grid, expected) in cases {
            let got = error(tag, grid);
            if !got.starts_with(expected) || got.contains('\n') {
                wrong.push_str(&format!("{tag}:\n got: {got}\nwant: {expected}\n"));
            }
        }
        assert!(wrong.is_empty(), "{wrong}");
    }

    #[test]
    fn the_number_of_runs_is_bounded() {
        let seeds: Vec<String> = (0..1001).map(|s| s.to_string()).collect();
        let ns: Vec<String> = (0..1000).map(|s| format!("\"{s}\"")).collect();
        let grid = format!(
            "job = \"job.fio\"\nscheduler = [\"bfq\"]\nseeds = [{}]\n[vars]\nN = [{}]\n",
            seeds.join(","),
            ns.join(",")
        );
        assert_eq!(
            error("many", &grid),
            "D/grid.toml: the grid expands to 1001000 runs, more than a sweep may have (1000000, MAX_SWEEP_RUNS)"
        );
    }
}
