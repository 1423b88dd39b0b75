//! Sweep results as a table of rows (a run × job × direction each) and its Parquet form.
//!
//! Columns, in this order: `id`, `job`, `topology`, `scheduler`, `seed`; `var.NAME` per job
//! variable and `tunable.NAME` per scheduler tunable (sorted); `jobname`, `groupid`,
//! `direction`; then the direction's fio fields and the run's `warnings` flattened with dots as the Python package's
//! `fio_rows` does (`io_bytes`, `lat_ns.mean`, `clat_ns.percentile.99.000000`; lists and
//! json+'s `bins` left out), sorted by name. A column's type follows its values: INT64 when
//! all are integers, DOUBLE when numbers, BOOLEAN, else UTF-8 strings; every column is
//! OPTIONAL (a missing value is null). Rows are sorted by id, a run's rows in job and
//! direction order; a run that did no I/O has one row of its spec alone. One row group, no compression, `created_by` fixed: the same rows give
//! the same bytes.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use parquet::basic::{LogicalType, Repetition, Type as PhysicalType};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::record::Field;
use parquet::schema::types::Type;
use serde_json::Value;

use super::grid::RunSpec;

/// `created_by` of every file sweep writes (no version: files do not change with it).
pub const CREATED_BY: &str = "elevator sweep";

/// The spec columns every row starts with, in order.
const SPEC_COLUMNS: &[&str] = &["id", "job", "topology", "scheduler", "seed"];
/// The columns naming a row's job and direction.
const ROW_COLUMNS: &[&str] = &["jobname", "groupid", "direction"];
/// fio's directions, as the Python package's `DIRECTIONS`.
const DIRECTIONS: &[&str] = &["read", "write", "trim"];

#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
}

impl Cell {
    /// The value as JSON: a number, a boolean or a string (a float that is not finite as
    /// `null`, which JSON has no number for).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Cell::Int(x) => serde_json::Value::from(*x),
            Cell::Float(x) => {
                serde_json::Number::from_f64(*x).map_or(serde_json::Value::Null, Into::into)
            }
            Cell::Bool(b) => serde_json::Value::Bool(*b),
            Cell::Str(s) => serde_json::Value::String(s.clone()),
        }
    }

    fn text(&self) -> String {
        match self {
            Cell::Int(i) => i.to_string(),
            Cell::Float(f) => {
                serde_json::Number::from_f64(*f).map_or(f.to_string(), |n| n.to_string())
            }
            Cell::Bool(b) => b.to_string(),
            Cell::Str(s) => s.clone(),
        }
    }

    fn from_json(v: &Value) -> Option<Cell> {
        match v {
            Value::Bool(b) => Some(Cell::Bool(*b)),
            Value::Number(n) => Some(match n.as_i64() {
                Some(i) => Cell::Int(i),
                None => Cell::Float(n.as_f64()?),
            }),
            Value::String(s) => Some(Cell::Str(s.clone())),
            _ => None,
        }
    }
}

/// One row: column name → value (absent: null).
pub type Row = BTreeMap<String, Cell>;

/// The id of a row.
pub fn row_id(row: &Row) -> &str {
    match row.get("id") {
        Some(Cell::Str(s)) => s,
        _ => "",
    }
}

fn flatten(value: &serde_json::Map<String, Value>, prefix: &str, out: &mut Row) {
    for (key, v) in value {
        let name = format!("{prefix}{key}");
        match v {
            Value::Object(m) => {
                if key != "bins" {
                    flatten(m, &format!("{name}."), out);
                }
            }
            Value::Array(_) | Value::Null => {}
            other => {
                if let Some(c) = Cell::from_json(other) {
                    out.insert(name, c);
                }
            }
        }
    }
}

fn truthy(v: Option<&Value>) -> bool {
    v.is_some_and(|v| v.as_f64().is_some_and(|x| x != 0.0))
}

/// A run's rows: its spec, then one row per job and direction that did I/O in `fio`
/// (`elevator run --output-format json`'s JSON); the run's `warnings`, if any, joined by
/// newlines in a `warnings` column.
pub fn run_rows(spec: &RunSpec, fio: &Value, warnings: &[String]) -> Vec<Row> {
    let mut base = Row::new();
    base.insert("id".into(), Cell::Str(spec.id.clone()));
    base.insert("job".into(), Cell::Str(spec.job.clone()));
    base.insert("topology".into(), Cell::Str(spec.topology.clone()));
    base.insert("scheduler".into(), Cell::Str(spec.scheduler.clone()));
    base.insert("seed".into(), Cell::Int(spec.seed as i64));
    for (k, v) in &spec.vars {
        base.insert(format!("var.{k}"), Cell::Str(v.clone()));
    }
    for (k, v) in &spec.tunables {
        if let Some(c) = Cell::from_json(v) {
            base.insert(format!("tunable.{k}"), c);
        }
    }
    if !warnings.is_empty() {
        base.insert("warnings".into(), Cell::Str(warnings.join("\n")));
    }
    let mut rows = Vec::new();
    for job in fio.get("jobs").and_then(Value::as_array).into_iter().flatten() {
        for direction in DIRECTIONS {
            let Some(stats) = job.get(*direction).and_then(Value::as_object) else { continue };
            if !(truthy(stats.get("total_ios")) || truthy(stats.get("io_bytes"))) {
                continue;
            }
            let mut row = base.clone();
            if let Some(c) = job.get("jobname").and_then(Cell::from_json) {
                row.insert("jobname".into(), c);
            }
            if let Some(c) = job.get("groupid").and_then(Cell::from_json) {
                row.insert("groupid".into(), c);
            }
            row.insert("direction".into(), Cell::Str(direction.to_string()));
            let mut fields = Row::new();
            flatten(stats, "", &mut fields);
            for (k, v) in fields {
                row.entry(k).or_insert(v);
            }
            rows.push(row);
        }
    }
    if rows.is_empty() {
        // A run without I/O still has a row (its spec alone), so a resumed shard skips it.
        rows.push(base);
    }
    rows
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    Float,
    Bool,
    Str,
}

fn rank(name: &str) -> (usize, usize) {
    if let Some(i) = SPEC_COLUMNS.iter().position(|c| *c == name) {
        (0, i)
    } else if name.starts_with("var.") {
        (1, 0)
    } else if name.starts_with("tunable.") {
        (2, 0)
    } else if let Some(i) = ROW_COLUMNS.iter().position(|c| *c == name) {
        (3, i)
    } else {
        (4, 0)
    }
}

/// The columns of `rows` in file order, each with its type.
fn columns(rows: &[Row]) -> Vec<(String, Kind)> {
    let mut kinds: BTreeMap<&str, Kind> = BTreeMap::new();
    for row in rows {
        for (k, v) in row {
            let kind = match v {
                Cell::Int(_) => Kind::Int,
                Cell::Float(_) => Kind::Float,
                Cell::Bool(_) => Kind::Bool,
                Cell::Str(_) => Kind::Str,
            };
            let merged = match (kinds.get(k.as_str()).copied(), kind) {
                (None, k) => k,
                (Some(a), b) if a == b => a,
                (Some(Kind::Int | Kind::Float), Kind::Int | Kind::Float) => Kind::Float,
                _ => Kind::Str,
            };
            kinds.insert(k, merged);
        }
    }
    if kinds.is_empty() {
        // No rows: the file still has the `id` column (a Parquet schema needs a column).
        kinds.insert("id", Kind::Str);
    }
    let mut cols: Vec<(String, Kind)> =
        kinds.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    cols.sort_by(|a, b| (rank(&a.0), &a.0).cmp(&(rank(&b.0), &b.0)));
    cols
}

fn perr(path: &Path, e: impl std::fmt::Display) -> String {
    format!("{}: {e}", path.display())
}

/// Writes `rows` (already in their final order) to `path` through `path.tmp` and a rename,
/// so a kill never leaves a truncated file behind.
pub fn write(path: &Path, rows: &[Row]) -> Result<(), String> {
    let cols = columns(rows);
    let fields = cols
        .iter()
        .map(|(name, kind)| {
            let (physical, logical) = match kind {
                Kind::Int => (PhysicalType::INT64, None),
                Kind::Float => (PhysicalType::DOUBLE, None),
                Kind::Bool => (PhysicalType::BOOLEAN, None),
                Kind::Str => (PhysicalType::BYTE_ARRAY, Some(LogicalType::String)),
            };
            Type::primitive_type_builder(name, physical)
                .with_repetition(Repetition::OPTIONAL)
                .with_logical_type(logical)
                .build()
                .map(Arc::new)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| perr(path, e))?;
    let schema =
        Type::group_type_builder("sweep").with_fields(fields).build().map_err(|e| perr(path, e))?;
    let props = WriterProperties::builder()
        .set_created_by(CREATED_BY.to_string())
        .set_max_row_group_size(rows.len().max(1))
        .build();
    let tmp = path.with_extension("parquet.tmp");
    let file = File::create(&tmp).map_err(|e| perr(&tmp, format!("cannot write: {e}")))?;
    let mut writer = SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props))
        .map_err(|e| perr(&tmp, e))?;
    let mut group = writer.next_row_group().map_err(|e| perr(&tmp, e))?;
    let mut i = 0;
    while let Some(mut col) = group.next_column().map_err(|e| perr(&tmp, e))? {
        let (name, kind) = &cols[i];
        i += 1;
        let def: Vec<i16> = rows.iter().map(|r| i16::from(r.contains_key(name))).collect();
        let present = rows.iter().filter_map(|r| r.get(name));
        let written = match kind {
            Kind::Int => {
                let v: Vec<i64> =
                    present.map(|c| if let Cell::Int(x) = c { *x } else { 0 }).collect();
                col.typed::<Int64Type>().write_batch(&v, Some(&def), None)
            }
            Kind::Float => {
                let v: Vec<f64> = present
                    .map(|c| match c {
                        Cell::Int(x) => *x as f64,
                        Cell::Float(x) => *x,
                        _ => 0.0,
                    })
                    .collect();
                col.typed::<DoubleType>().write_batch(&v, Some(&def), None)
            }
            Kind::Bool => {
                let v: Vec<bool> = present.map(|c| matches!(c, Cell::Bool(true))).collect();
                col.typed::<BoolType>().write_batch(&v, Some(&def), None)
            }
            Kind::Str => {
                let v: Vec<ByteArray> =
                    present.map(|c| ByteArray::from(c.text().into_bytes())).collect();
                col.typed::<ByteArrayType>().write_batch(&v, Some(&def), None)
            }
        };
        written.map_err(|e| perr(&tmp, e))?;
        col.close().map_err(|e| perr(&tmp, e))?;
    }
    group.close().map_err(|e| perr(&tmp, e))?;
    writer.close().map_err(|e| perr(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| perr(path, format!("cannot write: {e}")))
}

/// Reads a file [`write()`](fn@write) wrote: its rows in file order, nulls left out.
pub fn read(path: &Path) -> Result<Vec<Row>, String> {
    let file = File::open(path).map_err(|e| perr(path, format!("cannot read: {e}")))?;
    let reader = SerializedFileReader::new(file).map_err(|e| perr(path, e))?;
    let mut rows = Vec::new();
    for row in reader.get_row_iter(None).map_err(|e| perr(path, e))? {
        let row = row.map_err(|e| perr(path, e))?;
        let mut out = Row::new();
        for (name, field) in row.get_column_iter() {
            let cell = match field {
                Field::Null => continue,
                Field::Bool(b) => Cell::Bool(*b),
                Field::Long(x) => Cell::Int(*x),
                Field::Int(x) => Cell::Int(i64::from(*x)),
                Field::Double(x) => Cell::Float(*x),
                Field::Float(x) => Cell::Float(f64::from(*x)),
                Field::Str(s) => Cell::Str(s.clone()),
                other => {
                    return Err(perr(path, format!("column `{name}`: unexpected value {other}")))
                }
            };
            out.insert(name.clone(), cell);
        }
        if !matches!(out.get("id"), Some(Cell::Str(_))) {
            return Err(perr(path, "a row without an `id`: not a sweep file"));
        }
        rows.push(out);
    }
    Ok(rows)
}

/// Orders rows by id, keeping each run's rows in their order.
pub fn sort(rows: &mut [Row]) {
    rows.sort_by(|a, b| row_id(a).cmp(row_id(b)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec() -> RunSpec {
        let mut s = RunSpec {
            id: String::new(),
            job: "j.fio".into(),
            job_path: "j.fio".into(),
            topology: "builtin".into(),
            topology_path: None,
            scheduler: "mq-deadline".into(),
            seed: 7,
            vars: [("BS".to_string(), "4k".to_string())].into(),
            tunables: [("fifo_batch".to_string(), json!(16))].into(),
        };
        s.id = s.compute_id();
        s
    }

    #[test]
    fn rows_per_job_and_direction_with_io_flattened_like_fio_rows() {
        let fio = json!({"jobs": [
            {"jobname": "a", "groupid": 0,
             "read": {"io_bytes": 4096, "total_ios": 1, "iops": 2.5,
                      "clat_ns": {"percentile": {"99.000000": 1000}, "bins": {"1": 1}},
                      "lat_ns": {"mean": 12.5, "N": 1}, "list": [1, 2]},
             "write": {"io_bytes": 0, "total_ios": 0},
             "trim": {"io_bytes": 0, "total_ios": 0}},
            {"jobname": "b", "groupid": 1, "write": {"io_bytes": 8192, "total_ios": 2}}
        ]});
        let rows = run_rows(&spec(), &fio, &[]);
        assert_eq!(rows.len(), 2);
        let a = &rows[0];
        assert_eq!(a["direction"], Cell::Str("read".into()));
        assert_eq!(a["clat_ns.percentile.99.000000"], Cell::Int(1000));
        assert_eq!(a["lat_ns.mean"], Cell::Float(12.5));
        assert_eq!(a["iops"], Cell::Float(2.5));
        assert_eq!(a["var.BS"], Cell::Str("4k".into()));
        assert_eq!(a["tunable.fifo_batch"], Cell::Int(16));
        assert_eq!(a["seed"], Cell::Int(7));
        assert!(!a.contains_key("list") && !a.keys().any(|k| k.contains("bins")));
        assert_eq!(rows[1]["direction"], Cell::Str("write".into()));
        // A run without I/O keeps one row: its spec.
        let none = run_rows(&spec(), &json!({"jobs": []}), &["w1".into(), "w2".into()]);
        assert_eq!(none.len(), 1);
        assert_eq!(row_id(&none[0]), spec().id);
        assert_eq!(none[0]["warnings"], Cell::Str("w1\nw2".into()));
        assert!(!rows[0].contains_key("warnings"));
    }

    #[test]
    fn parquet_round_trip_is_lossless_and_deterministic() {
        let dir = std::env::temp_dir().join(format!("elevator-table-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut rows = vec![Row::new(), Row::new(), Row::new()];
        rows[0].insert("id".into(), Cell::Str("b".into()));
        rows[0].insert("x".into(), Cell::Int(1));
        rows[0].insert("mixed".into(), Cell::Int(3));
        rows[1].insert("id".into(), Cell::Str("a".into()));
        rows[1].insert("x".into(), Cell::Int(-2));
        rows[1].insert("mixed".into(), Cell::Float(0.1));
        rows[1].insert("flag".into(), Cell::Bool(true));
        rows[2].insert("id".into(), Cell::Str("c".into()));
        rows[2].insert("s".into(), Cell::Int(5));
        rows[2].insert("t".into(), Cell::Str("5".into()));
        sort(&mut rows);
        let path = dir.join("t.parquet");
        write(&path, &rows).unwrap();
        let back = read(&path).unwrap();
        assert_eq!(back.iter().map(row_id).collect::<Vec<_>>(), ["a", "b", "c"]);
        // Integers beside floats become DOUBLE; everything else keeps its type.
        assert_eq!(back[1]["mixed"], Cell::Float(3.0));
        assert_eq!(back[0]["mixed"], Cell::Float(0.1));
        assert_eq!(back[0]["flag"], Cell::Bool(true));
        assert!(!back[1].contains_key("flag"), "nulls are left out");
        assert_eq!(back[2]["s"], Cell::Int(5));
        let first = std::fs::read(&path).unwrap();
        write(&path, &back).unwrap();
        assert_eq!(first, std::fs::read(&path).unwrap(), "read then written: same bytes");
        // No rows: an `id` column and nothing else.
        write(&path, &[]).unwrap();
        assert!(read(&path).unwrap().is_empty());
        assert!(!dir.join("t.parquet.tmp").exists());
    }
}
