//! The JSON files `elevator report` reads, turned into a small model.
//!
//! Three shapes are recognised by their top-level keys:
//! - `jobs`: fio's JSON (`elevator run --output-format json` or `json+`, or real fio's);
//! - `runs`: `elevator compare --output-format json`, `{"runs": [{"scheduler", "result"}]}`
//!   with one fio JSON per scheduler;
//! - `tables`: `elevator reproduce NAME --output-format json`, tables of our rows beside the
//!   published ones.
//!
//! Anything else, or a key missing inside, is an error of one line naming the file, where in
//! it, and the key. Sizes are checked before anything is kept: the file against
//! [`MAX_INPUT_BYTES`], the jobs against [`MAX_JOBS`], histogram bins against [`MAX_BINS`],
//! runs and reproduce rows against [`MAX_RUNS`] and [`MAX_ROWS`], a reproduce row's latency
//! CDF against [`MAX_CDF_POINTS`].
//!
//! The file `-` is standard input (`elevator reproduce NAME --output-format json | elevator
//! report - -o FILE`).

use std::io::Read;
use std::path::Path;

use serde_json::Value;

/// Largest JSON file read (a 30-second json+ run of five jobs is about 33 KB).
pub const MAX_INPUT_BYTES: u64 = 64 << 20;
/// Most jobs in one file, summed over its runs (`elevator run` allows 4096 processes).
pub const MAX_JOBS: usize = 4096;
/// Most runs in one `compare` file.
pub const MAX_RUNS: usize = 256;
/// Most clat histogram bins per job and direction (fio's layout has 64 per power of two).
pub const MAX_BINS: usize = 65_536;
/// Most rows in one `reproduce` file, summed over its tables and variants.
pub const MAX_ROWS: usize = 4096;
/// Most points in one reproduce row's latency CDF (`reproduce` keeps 101: every percent).
pub const MAX_CDF_POINTS: usize = 4096;
/// Most bins of one group's timeline (`elevator run` writes at most 200).
pub const MAX_TIMELINE_BINS: usize = 10_000;
/// Most groups in one run's timeline.
pub const MAX_TIMELINE_GROUPS: usize = 4096;
/// Most decision reasons per device (a scheduler has a few dozen).
pub const MAX_DECISION_REASONS: usize = 1024;

/// One input file.
#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    /// The file as named on the command line.
    pub name: String,
    pub content: Content,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    /// fio JSON (one run) or compare JSON (one run per scheduler).
    Runs(Vec<Run>),
    /// reproduce JSON.
    Reproduce(Experiment),
    /// A sweep's rows (`elevator sweep merge`'s Parquet, read by the CLI).
    Sweep(crate::sweep::Sweep),
}

/// One simulation (or one real fio run): its jobs as fio reports them.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// The scheduler variant for compare runs; `None` for a plain fio JSON.
    pub label: Option<String>,
    /// `device: scheduler` pairs from elevator's `elevator` object (absent in real fio JSON).
    pub devices: Vec<(String, String)>,
    /// elevator's seed, if the file says.
    pub seed: Option<u64>,
    pub jobs: Vec<Job>,
    /// Each device's dispatches by the scheduler's reason (elevator's `devices[].decisions`),
    /// devices without counts left out.
    pub decisions: Vec<(String, Vec<(String, u64)>)>,
    /// Throughput over time per group (elevator's `timeline`), if the file has it.
    pub timeline: Option<Timeline>,
}

/// I/Os and bytes completed per bin of simulated time, per group.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    pub bin_ns: u64,
    /// When the run ended (elevator's `simulated_ns`), so the last bin's rate is over the
    /// part of it that was run.
    pub end_ns: Option<u64>,
    pub groups: Vec<GroupTimeline>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct GroupTimeline {
    /// As the report names groups: the jobs' `cgroup=`, else `group N`.
    pub name: String,
    /// Directions that moved anything: (direction, I/Os per bin, bytes per bin).
    pub dirs: Vec<(Direction, Vec<u64>, Vec<u64>)>,
}

/// One job entry of fio's `jobs[]` (a process, or a whole group with `group_reporting`).
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub name: String,
    /// fio's reporting group.
    pub groupid: u64,
    /// The job's `cgroup=` (job options first, then global options).
    pub cgroup: Option<String>,
    /// The job's `cgroup_weight=`.
    pub weight: Option<u64>,
    /// read, write, trim: always three, in that order.
    pub dirs: Vec<Dir>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Read,
    Write,
    Trim,
}

impl Direction {
    pub const ALL: [Direction; 3] = [Direction::Read, Direction::Write, Direction::Trim];

    pub fn key(self) -> &'static str {
        match self {
            Direction::Read => "read",
            Direction::Write => "write",
            Direction::Trim => "trim",
        }
    }
}

/// One direction of one job.
#[derive(Clone, Debug, PartialEq)]
pub struct Dir {
    pub direction: Direction,
    pub ios: u64,
    pub bytes: u64,
    pub bw_bytes: u64,
    pub iops: f64,
    pub clat: Latency,
}

/// Completion latency of one direction, in ns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Latency {
    pub min_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
    /// fio's percentile table: (percent, ns), ascending in percent. Empty without I/Os.
    pub percentiles: Vec<(f64, u64)>,
    /// json+'s histogram: (bucket value in ns, count), ascending. Empty in plain JSON.
    pub bins: Vec<(u64, u64)>,
}

impl Latency {
    /// The value fio gives for percentile `p` (e.g. 99.9), if its table has it.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        self.percentiles.iter().find(|(q, _)| (q - p).abs() < 1e-9).map(|&(_, ns)| ns)
    }
}

/// `elevator reproduce NAME --output-format json`.
#[derive(Clone, Debug, PartialEq)]
pub struct Experiment {
    pub name: String,
    pub seed_mail: String,
    pub title: String,
    pub tables: Vec<Table>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub title: String,
    pub headers: Vec<String>,
    pub note: Option<String>,
    pub variants: Vec<Variant>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    pub label: String,
    pub scheduler: String,
    /// Tunables as `key=value`, in the file's order (the runner writes them sorted).
    pub iosched: Vec<String>,
    pub rows: Vec<Row>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Our cells, as the seed would print them.
    pub cells: Vec<String>,
    /// The published row as printed in the seed mail, if there is one.
    pub published: Option<String>,
    pub warnings: Vec<String>,
    /// The value of the table's varied variable (`""` if none).
    pub value: String,
    /// The completion latency CDF of the table's `cdf` scope: (ms, fraction at or below),
    /// as `reproduce` keeps it (every percent). Empty for tables without a `cdf` scope.
    pub cdf: Vec<(f64, f64)>,
}

/// Reads and parses one file (`-`: standard input). Errors are one line and start with the
/// file's name.
pub fn load(path: &Path) -> Result<Input, String> {
    let name = path.display().to_string();
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .take(MAX_INPUT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{name}: cannot read standard input: {e}"))?;
        return parse_bytes(&name, bytes);
    }
    let file = std::fs::File::open(path).map_err(|e| format!("{name}: cannot read: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("{name}: cannot read: {e}"))?;
    if meta.is_dir() {
        return Err(format!("{name}: is a directory, not a JSON file"));
    }
    if meta.len() > MAX_INPUT_BYTES {
        return Err(too_big(&name));
    }
    let mut bytes = Vec::new();
    // The length may have grown since `metadata`, or the file be a pipe: read one byte past
    // the limit at most.
    file.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{name}: cannot read: {e}"))?;
    parse_bytes(&name, bytes)
}

fn parse_bytes(name: &str, bytes: Vec<u8>) -> Result<Input, String> {
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(too_big(name));
    }
    let text = String::from_utf8(bytes).map_err(|_| format!("{name}: not JSON: not UTF-8"))?;
    parse(name, &text)
}

fn too_big(name: &str) -> String {
    format!("{name}: larger than {} MiB (MAX_INPUT_BYTES)", MAX_INPUT_BYTES >> 20)
}

/// Parses the text of a file called `name` (used in error messages and on the page).
/// `elevator reproduce --report` and `compare --report` hand their JSON text here, so that
/// their page is the one `elevator report` makes of the same text.
pub fn parse(name: &str, text: &str) -> Result<Input, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("{name}: not JSON: {e}"))?;
    let at = At { file: name, path: String::new(), value: &value };
    if !value.is_object() {
        return Err(format!("{name}: expected a JSON object at the top level"));
    }
    let content = if value.get("jobs").is_some() {
        Content::Runs(vec![fio_run(&at, None)?])
    } else if value.get("runs").is_some() {
        let runs = at.array("runs")?;
        if runs.len() > MAX_RUNS {
            return Err(format!("{name}: more than {MAX_RUNS} runs (MAX_RUNS)"));
        }
        let mut out = Vec::with_capacity(runs.len());
        let mut jobs = 0;
        for (i, run) in runs.iter().enumerate() {
            let run = at.child(&format!("runs[{i}]"), run);
            let label = run.string("scheduler")?;
            let result = run.child_key("result")?;
            let parsed = fio_run(&result, Some(label))?;
            jobs += parsed.jobs.len();
            if jobs > MAX_JOBS {
                return Err(format!("{name}: more than {MAX_JOBS} jobs (MAX_JOBS)"));
            }
            out.push(parsed);
        }
        Content::Runs(out)
    } else if value.get("tables").is_some() {
        Content::Reproduce(experiment(&at)?)
    } else {
        return Err(format!(
            "{name}: not elevator JSON: none of the keys `jobs` (run), `runs` (compare), \
             `tables` (reproduce)"
        ));
    };
    Ok(Input { name: name.to_string(), content })
}

/// A place in the document: the file, the path to here (`jobs[2].read`) and the value.
struct At<'a> {
    file: &'a str,
    path: String,
    value: &'a Value,
}

impl<'a> At<'a> {
    fn child(&self, path: &str, value: &'a Value) -> At<'a> {
        let path =
            if self.path.is_empty() { path.to_string() } else { format!("{}.{path}", self.path) };
        At { file: self.file, path, value }
    }

    fn here(&self) -> String {
        if self.path.is_empty() {
            self.file.to_string()
        } else {
            format!("{}: {}", self.file, self.path)
        }
    }

    fn get(&self, key: &str) -> Result<&'a Value, String> {
        self.value.get(key).ok_or_else(|| format!("{}: missing key `{key}`", self.here()))
    }

    fn child_key(&self, key: &str) -> Result<At<'a>, String> {
        let value = self.get(key)?;
        if !value.is_object() {
            return Err(self.wrong(key, "an object"));
        }
        Ok(self.child(key, value))
    }

    fn wrong(&self, key: &str, what: &str) -> String {
        format!("{}: `{key}` is not {what}", self.here())
    }

    fn u64(&self, key: &str) -> Result<u64, String> {
        let v = self.get(key)?;
        v.as_u64()
            .or_else(|| v.as_f64().filter(|x| *x >= 0.0 && x.fract() == 0.0).map(|x| x as u64))
            .ok_or_else(|| self.wrong(key, "a whole number"))
    }

    fn f64(&self, key: &str) -> Result<f64, String> {
        self.get(key)?.as_f64().filter(|x| x.is_finite()).ok_or_else(|| self.wrong(key, "a number"))
    }

    fn string(&self, key: &str) -> Result<String, String> {
        self.get(key)?.as_str().map(str::to_string).ok_or_else(|| self.wrong(key, "a string"))
    }

    fn opt_string(&self, key: &str) -> Result<Option<String>, String> {
        match self.value.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                v.as_str().map(|s| Some(s.to_string())).ok_or_else(|| self.wrong(key, "a string"))
            }
        }
    }

    fn array(&self, key: &str) -> Result<&'a Vec<Value>, String> {
        self.get(key)?.as_array().ok_or_else(|| self.wrong(key, "an array"))
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, String> {
        self.array(key)?
            .iter()
            .map(|v| {
                v.as_str().map(str::to_string).ok_or_else(|| self.wrong(key, "a list of strings"))
            })
            .collect()
    }
}

/// One fio JSON document (top level of `run`'s output, or a compare run's `result`).
fn fio_run(at: &At, label: Option<String>) -> Result<Run, String> {
    let jobs = at.array("jobs")?;
    if jobs.len() > MAX_JOBS {
        return Err(format!("{}: more than {MAX_JOBS} jobs (MAX_JOBS)", at.file));
    }
    let global = at.value.get("global options");
    let mut out = Vec::with_capacity(jobs.len());
    for (i, job) in jobs.iter().enumerate() {
        out.push(fio_job(&at.child(&format!("jobs[{i}]"), job), global)?);
    }
    // elevator's own object: devices and their schedulers, the seed. Real fio has none.
    let mut devices = Vec::new();
    let mut decisions = Vec::new();
    let mut seed = None;
    let mut timeline = None;
    if let Some(e) = at.value.get("elevator") {
        let e = at.child("elevator", e);
        seed = e.value.get("seed").and_then(Value::as_u64);
        if let Some(list) = e.value.get("devices").and_then(Value::as_array) {
            for (i, d) in list.iter().enumerate() {
                let d = e.child(&format!("devices[{i}]"), d);
                let name = d.string("name")?;
                if let Some(counts) = d.value.get("decisions") {
                    let counts = d.child("decisions", counts);
                    decisions.push((name.clone(), decision_counts(&counts)?));
                }
                devices.push((name, d.string("scheduler")?));
            }
        }
        if e.value.get("timeline").is_some() {
            let mut t = parse_timeline(&e.child_key("timeline")?)?;
            t.end_ns = e.value.get("simulated_ns").and_then(Value::as_u64);
            timeline = Some(t);
        }
    }
    Ok(Run { label, devices, seed, jobs: out, decisions, timeline })
}

/// `{reason: count}`, at most [`MAX_DECISION_REASONS`].
fn decision_counts(at: &At) -> Result<Vec<(String, u64)>, String> {
    let map = at.value.as_object().ok_or_else(|| format!("{}: not an object", at.here()))?;
    if map.len() > MAX_DECISION_REASONS {
        return Err(format!(
            "{}: more than {MAX_DECISION_REASONS} reasons (MAX_DECISION_REASONS)",
            at.here()
        ));
    }
    map.keys().map(|k| Ok((k.clone(), at.u64(k)?))).collect()
}

/// elevator's `timeline`: `bin_ns` and per group its directions' `ios` and `bytes` per bin.
fn parse_timeline(at: &At) -> Result<Timeline, String> {
    let bin_ns = at.u64("bin_ns")?;
    if bin_ns == 0 {
        return Err(at.wrong("bin_ns", "positive"));
    }
    let list = at.array("groups")?;
    if list.len() > MAX_TIMELINE_GROUPS {
        return Err(format!(
            "{}: more than {MAX_TIMELINE_GROUPS} groups (MAX_TIMELINE_GROUPS)",
            at.here()
        ));
    }
    let mut groups = Vec::with_capacity(list.len());
    for (i, g) in list.iter().enumerate() {
        let g = at.child(&format!("groups[{i}]"), g);
        let mut dirs = Vec::new();
        for (dir, key) in
            [(Direction::Read, "read"), (Direction::Write, "write"), (Direction::Trim, "trim")]
        {
            if g.value.get(key).is_none() {
                continue;
            }
            let d = g.child_key(key)?;
            let series = |k: &str| -> Result<Vec<u64>, String> {
                let a = d.array(k)?;
                if a.len() > MAX_TIMELINE_BINS {
                    return Err(format!(
                        "{}: `{k}` has more than {MAX_TIMELINE_BINS} bins (MAX_TIMELINE_BINS)",
                        d.here()
                    ));
                }
                a.iter()
                    .map(|v| v.as_u64().ok_or_else(|| d.wrong(k, "a list of whole numbers")))
                    .collect()
            };
            let (ios, bytes) = (series("ios")?, series("bytes")?);
            if ios.len() != bytes.len() {
                return Err(format!("{}: `ios` and `bytes` differ in length", d.here()));
            }
            dirs.push((dir, ios, bytes));
        }
        groups.push(GroupTimeline { name: g.string("group")?, dirs });
    }
    Ok(Timeline { bin_ns, end_ns: None, groups })
}

fn option<'v>(options: Option<&'v Value>, key: &str) -> Option<&'v str> {
    options.and_then(|o| o.get(key)).and_then(Value::as_str)
}

fn fio_job(at: &At, global: Option<&Value>) -> Result<Job, String> {
    if !at.value.is_object() {
        return Err(format!("{}: not an object", at.here()));
    }
    let name = at.string("jobname")?;
    let groupid = at.u64("groupid")?;
    let options = at.value.get("job options");
    let lookup = |key: &str| option(options, key).or_else(|| option(global, key));
    let cgroup = lookup("cgroup").map(str::to_string);
    let weight =
        match lookup("cgroup_weight") {
            None => None,
            Some(w) => Some(w.trim().parse::<u64>().map_err(|_| {
                format!("{}: `cgroup_weight` is not a whole number: {w:?}", at.here())
            })?),
        };
    let mut dirs = Vec::with_capacity(3);
    for d in Direction::ALL {
        dirs.push(fio_dir(&at.child_key(d.key())?, d)?);
    }
    Ok(Job { name, groupid, cgroup, weight, dirs })
}

fn fio_dir(at: &At, direction: Direction) -> Result<Dir, String> {
    let clat = at.child_key("clat_ns")?;
    let mut percentiles = Vec::new();
    if let Some(p) = clat.value.get("percentile") {
        let p = clat.child("percentile", p);
        let map = p.value.as_object().ok_or_else(|| clat.wrong("percentile", "an object"))?;
        for (k, v) in map {
            let percent: f64 = k
                .parse()
                .ok()
                .filter(|x: &f64| (0.0..=100.0).contains(x))
                .ok_or_else(|| format!("{}: key `{k}` is not a percentage", p.here()))?;
            let ns = v.as_u64().ok_or_else(|| p.wrong(k, "a whole number"))?;
            percentiles.push((percent, ns));
        }
        percentiles.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let mut bins = Vec::new();
    if let Some(b) = clat.value.get("bins") {
        let b = clat.child("bins", b);
        let map = b.value.as_object().ok_or_else(|| clat.wrong("bins", "an object"))?;
        if map.len() > MAX_BINS {
            return Err(format!("{}: more than {MAX_BINS} bins (MAX_BINS)", b.here()));
        }
        for (k, v) in map {
            let ns: u64 =
                k.parse().map_err(|_| format!("{}: key `{k}` is not a latency in ns", b.here()))?;
            bins.push((ns, v.as_u64().ok_or_else(|| b.wrong(k, "a whole number"))?));
        }
        bins.sort_unstable();
    }
    Ok(Dir {
        direction,
        ios: at.u64("total_ios")?,
        bytes: at.u64("io_bytes")?,
        bw_bytes: at.u64("bw_bytes")?,
        iops: at.f64("iops")?,
        clat: Latency {
            min_ns: clat.u64("min")?,
            max_ns: clat.u64("max")?,
            mean_ns: clat.f64("mean")?,
            percentiles,
            bins,
        },
    })
}

/// A reproduce row's `cdf`: `[[ms, fraction], ...]`, absent for tables without a `cdf` scope.
fn cdf(r: &At) -> Result<Vec<(f64, f64)>, String> {
    let Some(v) = r.value.get("cdf") else { return Ok(Vec::new()) };
    let list = v.as_array().ok_or_else(|| r.wrong("cdf", "an array"))?;
    if list.len() > MAX_CDF_POINTS {
        return Err(format!(
            "{}: cdf: more than {MAX_CDF_POINTS} points (MAX_CDF_POINTS)",
            r.here()
        ));
    }
    list.iter()
        .enumerate()
        .map(|(i, p)| {
            let pair = p.as_array().filter(|a| a.len() == 2);
            let num = |k: usize| pair.and_then(|a| a[k].as_f64()).filter(|x| x.is_finite());
            match (num(0), num(1)) {
                (Some(ms), Some(f)) if ms >= 0.0 && (0.0..=1.0).contains(&f) => Ok((ms, f)),
                _ => Err(format!(
                    "{}: cdf[{i}] is not a pair [latency in ms, fraction from 0 to 1]",
                    r.here()
                )),
            }
        })
        .collect()
}

fn experiment(at: &At) -> Result<Experiment, String> {
    let tables = at.array("tables")?;
    let mut rows = 0usize;
    let mut out = Vec::with_capacity(tables.len().min(MAX_ROWS));
    for (i, t) in tables.iter().enumerate() {
        let t = at.child(&format!("tables[{i}]"), t);
        let mut variants = Vec::new();
        for (j, v) in t.array("variants")?.iter().enumerate() {
            let v = t.child(&format!("variants[{j}]"), v);
            let iosched = v
                .child_key("iosched")?
                .value
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, x)| match x.as_str() {
                            Some(s) => format!("{k}={s}"),
                            None => format!("{k}={x}"),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let list = v.array("rows")?;
            rows += list.len();
            if rows > MAX_ROWS {
                return Err(format!("{}: more than {MAX_ROWS} rows (MAX_ROWS)", at.file));
            }
            let mut parsed = Vec::with_capacity(list.len());
            for (k, r) in list.iter().enumerate() {
                let r = v.child(&format!("rows[{k}]"), r);
                parsed.push(Row {
                    cells: r.strings("cells")?,
                    published: r.opt_string("published")?,
                    warnings: if r.value.get("warnings").is_some() {
                        r.strings("warnings")?
                    } else {
                        Vec::new()
                    },
                    value: r.opt_string("value")?.unwrap_or_default(),
                    cdf: cdf(&r)?,
                });
            }
            variants.push(Variant {
                label: v.string("label")?,
                scheduler: v.string("scheduler")?,
                iosched,
                rows: parsed,
            });
        }
        out.push(Table {
            title: t.string("title")?,
            headers: t.strings("headers")?,
            note: t.opt_string("note")?,
            variants,
        });
    }
    Ok(Experiment {
        name: at.string("name")?,
        seed_mail: at.string("seed_mail")?,
        title: at.string("title")?,
        tables: out,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A test job: `(name, groupid, cgroup, weight, read ios)`.
    pub(crate) type TestJob<'a> = (&'a str, u64, Option<&'a str>, Option<u64>, u64);

    /// A fio JSON document with the given jobs.
    pub(crate) fn fio_json(jobs: &[TestJob]) -> String {
        let dir = |ios: u64| {
            let mut v = serde_json::json!({
                "io_bytes": ios * 4096, "bw_bytes": ios * 4096 / 10, "iops": ios as f64 / 10.0,
                "total_ios": ios,
                "clat_ns": { "min": 1000, "max": 90000, "mean": 5000.5 },
            });
            if ios > 0 {
                v["clat_ns"]["percentile"] = serde_json::json!({
                    "1.000000": 1000, "50.000000": 4000, "99.000000": 50000,
                    "99.900000": 80000, "99.990000": 90000,
                });
            }
            v
        };
        let jobs: Vec<Value> = jobs
            .iter()
            .map(|&(name, groupid, cgroup, weight, ios)| {
                let mut options = serde_json::Map::new();
                if let Some(c) = cgroup {
                    options.insert("cgroup".into(), c.into());
                }
                if let Some(w) = weight {
                    options.insert("cgroup_weight".into(), w.to_string().into());
                }
                serde_json::json!({
                    "jobname": name, "groupid": groupid, "job options": options,
                    "read": dir(ios), "write": dir(0), "trim": dir(0),
                })
            })
            .collect();
        serde_json::to_string(&serde_json::json!({ "jobs": jobs })).unwrap()
    }

    #[test]
    fn fio_json_parses_into_jobs_and_directions() {
        let text = fio_json(&[("a", 0, Some("g1"), Some(200), 10), ("b", 1, None, None, 5)]);
        let input = parse("x.json", &text).unwrap();
        let Content::Runs(runs) = input.content else { panic!("not runs") };
        assert_eq!(runs.len(), 1);
        let jobs = &runs[0].jobs;
        assert_eq!(jobs[0].name, "a");
        assert_eq!(jobs[0].cgroup.as_deref(), Some("g1"));
        assert_eq!(jobs[0].weight, Some(200));
        assert_eq!(jobs[1].weight, None);
        assert_eq!(jobs[0].dirs[0].ios, 10);
        assert_eq!(jobs[0].dirs[0].clat.percentile(99.9), Some(80000));
        assert_eq!(jobs[0].dirs[1].clat.percentiles, vec![]);
    }

    #[test]
    fn a_missing_key_is_named_with_its_place_and_file() {
        let text = fio_json(&[("a", 0, None, None, 10)]).replace("\"total_ios\"", "\"ios\"");
        let e = parse("runs/x.json", &text).unwrap_err();
        assert_eq!(e, "runs/x.json: jobs[0].read: missing key `total_ios`");
        let e = parse("y.json", r#"{"runs": [{"result": {}}]}"#).unwrap_err();
        assert_eq!(e, "y.json: runs[0]: missing key `scheduler`");
        let e = parse("z.json", r#"{"tables": [{"title": "t", "headers": []}]}"#).unwrap_err();
        assert_eq!(e, "z.json: tables[0]: missing key `variants`");
    }

    #[test]
    fn unknown_shapes_and_malformed_text_are_one_line_errors_naming_the_file() {
        for text in ["{\"jobs\": [", "[1, 2]", "{\"hello\": 1}", "", "{\"jobs\": {}}"] {
            let e = parse("bad.json", text).unwrap_err();
            assert!(e.starts_with("bad.json: "), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn percentiles_and_bins_come_out_sorted() {
        let text = r#"{"jobs": [{"jobname": "j", "groupid": 0,
          "read": {"io_bytes": 8192, "bw_bytes": 1, "iops": 1.0, "total_ios": 2,
            "clat_ns": {"min": 1, "max": 9, "mean": 5.0,
              "percentile": {"99.000000": 9, "1.000000": 1},
              "bins": {"900": 1, "100": 1}}},
          "write": {"io_bytes": 0, "bw_bytes": 0, "iops": 0, "total_ios": 0,
            "clat_ns": {"min": 0, "max": 0, "mean": 0}},
          "trim": {"io_bytes": 0, "bw_bytes": 0, "iops": 0, "total_ios": 0,
            "clat_ns": {"min": 0, "max": 0, "mean": 0}}}]}"#;
        let Content::Runs(runs) = parse("j.json", text).unwrap().content else { panic!() };
        let clat = &runs[0].jobs[0].dirs[0].clat;
        assert_eq!(clat.percentiles, vec![(1.0, 1), (99.0, 9)]);
        assert_eq!(clat.bins, vec![(100, 1), (900, 1)]);
    }

    #[test]
    fn too_many_jobs_is_refused() {
        let job = r#"{"jobname": "j"}"#;
        let text = format!("{{\"jobs\": [{}]}}", vec![job; MAX_JOBS + 1].join(","));
        let e = parse("many.json", &text).unwrap_err();
        assert_eq!(e, format!("many.json: more than {MAX_JOBS} jobs (MAX_JOBS)"));
    }

    #[test]
    fn reproduce_json_parses_into_tables() {
        let text = r#"{"name": "n", "seed_mail": "001", "title": "T", "tables": [
          {"title": "t1", "vary": null, "headers": ["a", "b"], "columns": ["x", "y"],
           "note": "n1", "variants": [{"label": "L", "scheduler": "cfq",
             "iosched": {"slice_idle": "0"},
             "rows": [{"value": "", "numbers": [1, 2], "cells": ["1", "2"],
                       "published": "3 4", "warnings": ["w"]},
                      {"value": "", "numbers": [1, 2], "cells": ["1", "2"],
                       "published": null}]}]}]}"#;
        let Content::Reproduce(e) = parse("r.json", text).unwrap().content else { panic!() };
        assert_eq!(e.seed_mail, "001");
        let v = &e.tables[0].variants[0];
        assert_eq!(v.iosched, vec!["slice_idle=0".to_string()]);
        assert_eq!(v.rows[0].published.as_deref(), Some("3 4"));
        assert_eq!(v.rows[0].warnings, vec!["w".to_string()]);
        assert_eq!(v.rows[1].published, None);
        assert_eq!(v.rows[0].cdf, vec![]);
    }

    #[test]
    fn reproduce_cdfs_are_read_and_checked() {
        let row = |cdf: &str| {
            format!(
                r#"{{"name": "n", "seed_mail": "1", "title": "T", "tables": [{{"title": "t",
                  "headers": [], "variants": [{{"label": "L", "scheduler": "cfq",
                  "iosched": {{}}, "rows": [{{"value": "4", "cells": [], "cdf": {cdf}}}]}}]}}]}}"#
            )
        };
        let Content::Reproduce(e) =
            parse("r.json", &row("[[0.5, 0.0], [2, 1.0]]")).unwrap().content
        else {
            panic!()
        };
        let r = &e.tables[0].variants[0].rows[0];
        assert_eq!(r.cdf, vec![(0.5, 0.0), (2.0, 1.0)]);
        assert_eq!(r.value, "4");
        for bad in ["[[1, 2]]", "[[1]]", "[[-1, 0.5]]", "[\"x\"]", "{}"] {
            let e = parse("r.json", &row(bad)).unwrap_err();
            assert!(e.starts_with("r.json: tables[0].variants[0].rows[0]: "), "{bad}: {e}");
        }
        let many = format!("[{}]", vec!["[1, 0.5]"; MAX_CDF_POINTS + 1].join(","));
        let e = parse("r.json", &row(&many)).unwrap_err();
        assert!(e.ends_with("(MAX_CDF_POINTS)"), "{e}");
    }

    #[test]
    fn a_file_over_the_limit_is_refused_before_parsing() {
        let dir = std::env::temp_dir().join(format!("elevator-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("big.json");
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(MAX_INPUT_BYTES + 1).unwrap();
        let e = load(&path).unwrap_err();
        assert!(e.ends_with("larger than 64 MiB (MAX_INPUT_BYTES)"), "{e}");
        assert!(e.starts_with(&path.display().to_string()), "{e}");
        std::fs::remove_file(&path).unwrap();
    }
}
