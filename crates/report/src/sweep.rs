//! A sweep's results (the rows `elevator sweep merge` writes, read by the CLI from Parquet)
//! as charts and a table: what changed along the grid's axes, averaged over seeds.
//!
//! The axes are the columns a grid varies — `scheduler`, `topology`, `job`, `var.NAME`,
//! `tunable.NAME` — that hold more than one value; `seed` is the replicate. For each job and
//! direction, one chart per [`METRICS`] entry: the x-axis is the numeric axis with the most
//! values (else the first axis), its values evenly spaced in order; one line per combination
//! of the other axes, each point the mean over seeds with a min–max whisker. When that makes
//! more lines than [`MAX_CURVES`], one chart per value of the first other axis (small
//! multiples), its lines the combinations of the rest.
//! Then one table row per combination of every axis.
//!
//! Rows, columns and distinct values are bounded ([`MAX_SWEEP_ROWS`], [`MAX_SWEEP_COLUMNS`],
//! [`MAX_AXIS_VALUES`]) before anything is grouped; lines beyond [`chart::MAX_CURVES`] are
//! left out of a chart and the page says so. Every order is sorted, every number printed with
//! a fixed format: the same rows give the same bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use crate::chart::{self, MetricSeries, MAX_CURVES};
use crate::markup::{esc, inline_svg};

/// Most rows one sweep file may hold (a row per run, job and direction).
pub const MAX_SWEEP_ROWS: usize = 200_000;
/// Most columns in one sweep file.
pub const MAX_SWEEP_COLUMNS: usize = 4_096;
/// Most distinct values one axis may take (a chart's x-axis, a legend's lines).
pub const MAX_AXIS_VALUES: usize = 256;

/// A cell: numbers as `f64` (fio's counters fit), everything else as text.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Num(f64),
    Text(String),
}

impl Value {
    fn text(&self) -> String {
        match self {
            Value::Num(x) => fmt_num(*x),
            Value::Text(s) => s.clone(),
        }
    }

    fn num(&self) -> Option<f64> {
        match self {
            Value::Num(x) => Some(*x),
            Value::Text(s) => s.parse().ok(),
        }
    }
}

/// A row: column name → value (absent: null).
pub type Row = BTreeMap<String, Value>;

/// One sweep file: its rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    pub rows: Vec<Row>,
}

impl Sweep {
    /// Checks the bounds; `name` is the file's, for the error.
    pub fn new(name: &str, rows: Vec<Row>) -> Result<Sweep, String> {
        if rows.len() > MAX_SWEEP_ROWS {
            return Err(format!(
                "{name}: {} rows, more than {MAX_SWEEP_ROWS} (MAX_SWEEP_ROWS)",
                rows.len()
            ));
        }
        let columns: BTreeSet<&String> = rows.iter().flat_map(|r| r.keys()).collect();
        if columns.len() > MAX_SWEEP_COLUMNS {
            return Err(format!(
                "{name}: {} columns, more than {MAX_SWEEP_COLUMNS} (MAX_SWEEP_COLUMNS)",
                columns.len()
            ));
        }
        if let Some(r) = rows.iter().find(|r| !r.contains_key("id")) {
            return Err(format!("{name}: a row without an `id` ({} columns)", r.len()));
        }
        Ok(Sweep { rows })
    }

    /// Distinct runs (ids).
    pub fn runs(&self) -> usize {
        self.rows.iter().filter_map(|r| r.get("id")).map(Value::text).collect::<BTreeSet<_>>().len()
    }
}

/// The metrics charted: column, what the axis says, the factor to its unit.
pub const METRICS: [(&str, &str, f64); 4] = [
    ("bw_bytes", "bandwidth (MB/s)", 1e-6),
    ("iops", "IOPS", 1.0),
    ("clat_ns.mean", "mean completion latency (ms)", 1e-6),
    ("clat_ns.percentile.99.000000", "p99 completion latency (ms)", 1e-6),
];

/// The columns a grid varies, in this order when present.
fn is_axis(column: &str) -> bool {
    matches!(column, "scheduler" | "topology" | "job")
        || column.starts_with("var.")
        || column.starts_with("tunable.")
}

/// An axis: its column and its values, sorted (numerically when all are numbers).
#[derive(Clone, Debug, PartialEq)]
struct Axis {
    column: String,
    values: Vec<String>,
    numeric: bool,
}

impl Axis {
    fn short(&self) -> &str {
        self.column.trim_start_matches("var.").trim_start_matches("tunable.")
    }
}

/// The axes of `sweep`: axis columns with more than one value. Errors past
/// [`MAX_AXIS_VALUES`].
fn axes(name: &str, sweep: &Sweep) -> Result<Vec<Axis>, String> {
    let mut values: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for row in &sweep.rows {
        for (column, value) in row {
            if is_axis(column) {
                let set = values.entry(column).or_default();
                set.insert(value.text());
                if set.len() > MAX_AXIS_VALUES {
                    return Err(format!(
                        "{name}: column `{column}` has more than {MAX_AXIS_VALUES} values \
                         (MAX_AXIS_VALUES)"
                    ));
                }
            }
        }
    }
    let mut out: Vec<Axis> = values
        .into_iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(column, v)| {
            let mut values: Vec<String> = v.into_iter().collect();
            let numeric = values.iter().all(|s| s.parse::<f64>().is_ok());
            if numeric {
                values.sort_by(|a, b| {
                    a.parse::<f64>().unwrap_or(0.0).total_cmp(&b.parse::<f64>().unwrap_or(0.0))
                });
            }
            Axis { column: column.to_string(), values, numeric }
        })
        .collect();
    let rank = |c: &str| match c {
        "scheduler" => 0,
        "topology" => 1,
        "job" => 2,
        _ => 3,
    };
    out.sort_by(|a, b| rank(&a.column).cmp(&rank(&b.column)).then(a.column.cmp(&b.column)));
    Ok(out)
}

/// The x-axis: the numeric var/tunable axis with the most values, else the first axis.
fn x_axis(axes: &[Axis]) -> Option<usize> {
    let numeric = axes
        .iter()
        .enumerate()
        .filter(|(_, a)| a.numeric)
        .max_by_key(|(i, a)| (a.values.len(), std::cmp::Reverse(*i)))
        .map(|(i, _)| i);
    numeric.or(if axes.is_empty() { None } else { Some(0) })
}

/// Mean, min and max of `xs` (not empty).
fn stats(xs: &[f64]) -> (f64, f64, f64) {
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, min, max)
}

/// A number as the page prints it: integers plain, others with three significant decimals.
fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else if x.abs() >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    }
}

/// `(job, direction)` of a row, if it has a direction (a run without I/O has none).
fn key(row: &Row) -> Option<(String, String)> {
    let job = row.get("jobname").map_or_else(String::new, Value::text);
    Some((job, row.get("direction")?.text()))
}

/// The value of each axis in `axes` for `row` (`-` when the row lacks it).
fn coords(row: &Row, axes: &[&Axis]) -> Vec<String> {
    axes.iter().map(|a| row.get(&a.column).map_or_else(|| "-".to_string(), Value::text)).collect()
}

/// A series label: `scheduler=bfq fifo_batch=16`.
fn label(axes: &[&Axis], values: &[String]) -> String {
    if axes.is_empty() {
        return "all runs".to_string();
    }
    axes.iter().zip(values).map(|(a, v)| format!("{}={v}", a.short())).collect::<Vec<_>>().join(" ")
}

/// How many charts [`section`] draws for `sweep` (it draws them and counts: the charts
/// depend on the axes, the metrics present and the faceting, and one place decides those).
pub fn chart_count(sweep: &Sweep) -> usize {
    let mut out = String::new();
    match section(&mut out, "", sweep) {
        Ok(()) => out.matches("<svg").count(),
        Err(_) => 0,
    }
}

/// The sweep's section of the page.
pub fn section(out: &mut String, name: &str, sweep: &Sweep) -> Result<(), String> {
    let axes = axes(name, sweep)?;
    let _ = writeln!(
        out,
        "<p class=\"meta\">{} runs, {} rows; axes: {}.</p>",
        sweep.runs(),
        sweep.rows.len(),
        if axes.is_empty() {
            "none (every run has the same settings)".to_string()
        } else {
            axes.iter()
                .map(|a| format!("<code>{}</code> ({} values)", esc(&a.column), a.values.len()))
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    let keys: BTreeSet<(String, String)> = sweep.rows.iter().filter_map(key).collect();
    let Some(xi) = x_axis(&axes) else {
        out.push_str("<p class=\"note\">No axis varies: nothing to chart.</p>\n");
        return Ok(());
    };
    let x = &axes[xi];
    let others: Vec<&Axis> =
        axes.iter().enumerate().filter(|(i, _)| *i != xi).map(|(_, a)| a).collect();
    let all: Vec<&Axis> = axes.iter().collect();
    for (job, dir) in &keys {
        let rows: Vec<&Row> = sweep
            .rows
            .iter()
            .filter(|r| key(r).as_ref() == Some(&(job.clone(), dir.clone())))
            .collect();
        let _ = writeln!(
            out,
            "<h3>Job <code>{}</code>, {}</h3>\n<div class=\"charts\">",
            esc(job),
            esc(dir)
        );
        for (metric, what, factor) in METRICS {
            if !rows.iter().any(|r| r.contains_key(metric)) {
                continue;
            }
            // More lines than colours: one chart per value of the first other axis (small
            // multiples), its lines the combinations of the rest.
            let lines = others.iter().map(|a| a.values.len()).product::<usize>();
            let (facet, rest): (Option<&Axis>, Vec<&Axis>) = match others.split_first() {
                Some((first, rest)) if lines > MAX_CURVES => (Some(*first), rest.to_vec()),
                _ => (None, others.clone()),
            };
            let facets: Vec<Option<&String>> = match facet {
                Some(f) => f.values.iter().map(Some).collect(),
                None => vec![None],
            };
            for facet_value in facets {
                let in_facet = |r: &Row| match (facet, facet_value) {
                    (Some(f), Some(v)) => r.get(&f.column).map(Value::text).as_ref() == Some(v),
                    _ => true,
                };
                let facet_rows: Vec<&Row> = rows.iter().copied().filter(|r| in_facet(r)).collect();
                let title = match (facet, facet_value) {
                    (Some(f), Some(v)) => format!("{job} {dir}: {what}, {}={v}", f.short()),
                    _ => format!("{job} {dir}: {what}"),
                };
                chart_of(out, &facet_rows, metric, what, factor, x, &rest, &title)?;
            }
        }
        out.push_str("</div>\n");
        table(out, job, dir, &rows, &all);
    }
    Ok(())
}

/// One chart of `metric` along `x` over `rows`, a line per combination of `lines`, and its
/// caption with the legend.
#[allow(clippy::too_many_arguments)]
fn chart_of(
    out: &mut String,
    rows: &[&Row],
    metric: &str,
    what: &str,
    factor: f64,
    x: &Axis,
    lines: &[&Axis],
    title: &str,
) -> Result<(), String> {
    // line → x position → samples over seeds
    let mut points: BTreeMap<Vec<String>, BTreeMap<usize, Vec<f64>>> = BTreeMap::new();
    for r in rows {
        let (Some(v), Some(xv)) = (r.get(metric).and_then(Value::num), r.get(&x.column)) else {
            continue;
        };
        let Some(xpos) = x.values.iter().position(|s| *s == xv.text()) else { continue };
        points.entry(coords(r, lines)).or_default().entry(xpos).or_default().push(v * factor);
    }
    let dropped = points.len().saturating_sub(MAX_CURVES);
    let series: Vec<MetricSeries> = points
        .iter()
        .take(MAX_CURVES)
        .map(|(values, by_x)| MetricSeries {
            label: label(lines, values),
            points: by_x
                .iter()
                .map(|(&xpos, samples)| {
                    let (mean, min, max) = stats(samples);
                    (xpos, mean, min, max)
                })
                .collect(),
        })
        .collect();
    let svg = chart::metric_lines(title, x.short(), what, &x.values, &series)?;
    let _ = write!(
        out,
        "<figure>{}<figcaption>{} against <code>{}</code>, mean over seeds, whiskers min–max",
        inline_svg(&svg),
        esc(what),
        esc(&x.column)
    );
    if dropped > 0 {
        let _ = write!(out, "; {dropped} more lines not drawn (MAX_CURVES {MAX_CURVES})");
    }
    out.push_str(".<ul class=\"legend\">");
    for (i, s) in series.iter().enumerate() {
        let _ = write!(
            out,
            "<li><span style=\"background:{}\"></span>{}</li>",
            chart::color_hex(i),
            esc(&s.label)
        );
    }
    out.push_str("</ul></figcaption></figure>\n");
    Ok(())
}

/// One row per combination of every axis: seeds, then mean (min–max) of each metric.
fn table(out: &mut String, job: &str, dir: &str, rows: &[&Row], axes: &[&Axis]) {
    let mut cells: BTreeMap<Vec<String>, Vec<&Row>> = BTreeMap::new();
    for r in rows {
        cells.entry(coords(r, axes)).or_default().push(r);
    }
    let _ = write!(
        out,
        "<table>\n<caption>{} {}: mean over seeds (min–max)</caption>\n<tr>",
        esc(job),
        esc(dir)
    );
    for a in axes {
        let _ = write!(out, "<th>{}</th>", esc(a.short()));
    }
    out.push_str("<th>seeds</th>");
    for (_, what, _) in METRICS {
        let _ = write!(out, "<th>{}</th>", esc(what));
    }
    out.push_str("</tr>\n");
    // Numeric axes sort by number, others by text.
    let mut ordered: Vec<_> = cells.iter().collect();
    ordered.sort_by(|(a, _), (b, _)| {
        for ((x, y), axis) in a.iter().zip(b.iter()).zip(axes) {
            let o = if axis.numeric {
                x.parse::<f64>().unwrap_or(0.0).total_cmp(&y.parse::<f64>().unwrap_or(0.0))
            } else {
                x.cmp(y)
            };
            if o.is_ne() {
                return o;
            }
        }
        std::cmp::Ordering::Equal
    });
    for (values, rs) in ordered {
        out.push_str("<tr>");
        for v in values {
            let _ = write!(out, "<td>{}</td>", esc(v));
        }
        let _ = write!(out, "<td class=\"num\">{}</td>", rs.len());
        for (metric, _, factor) in METRICS {
            let xs: Vec<f64> = rs
                .iter()
                .filter_map(|r| r.get(metric).and_then(Value::num))
                .map(|v| v * factor)
                .collect();
            if xs.is_empty() {
                out.push_str("<td class=\"num\">–</td>");
            } else {
                let (mean, min, max) = stats(&xs);
                let _ = write!(
                    out,
                    "<td class=\"num\">{} ({}–{})</td>",
                    fmt_num(mean),
                    fmt_num(min),
                    fmt_num(max)
                );
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, sched: &str, qd: &str, seed: f64, bw: f64) -> Row {
        let mut r = BTreeMap::new();
        r.insert("id".into(), Value::Text(id.into()));
        r.insert("scheduler".into(), Value::Text(sched.into()));
        r.insert("var.QD".into(), Value::Text(qd.into()));
        r.insert("seed".into(), Value::Num(seed));
        r.insert("jobname".into(), Value::Text("r".into()));
        r.insert("direction".into(), Value::Text("read".into()));
        r.insert("bw_bytes".into(), Value::Num(bw));
        r
    }

    fn sweep() -> Sweep {
        let mut rows = Vec::new();
        for (i, (s, qd)) in [
            ("bfq", "1"),
            ("bfq", "16"),
            ("none", "1"),
            ("none", "16"),
            ("bfq", "4"),
            ("none", "4"),
        ]
        .iter()
        .enumerate()
        {
            for seed in [1.0, 2.0] {
                rows.push(row(&format!("{i}-{seed}"), s, qd, seed, 1e6 * (i as f64 + seed)));
            }
        }
        Sweep::new("s.parquet", rows).unwrap()
    }

    #[test]
    fn axes_are_the_varied_columns_with_numbers_sorted_as_numbers() {
        let a = axes("s", &sweep()).unwrap();
        assert_eq!(
            a.iter().map(|a| a.column.as_str()).collect::<Vec<_>>(),
            ["scheduler", "var.QD"]
        );
        assert_eq!(a[1].values, ["1", "4", "16"]);
        assert_eq!(x_axis(&a), Some(1), "the numeric axis is the x-axis");
    }

    #[test]
    fn one_chart_per_metric_present_and_a_table_of_means_over_seeds() {
        let s = sweep();
        assert_eq!(chart_count(&s), 1, "only bw_bytes is present");
        let mut out = String::new();
        section(&mut out, "s", &s).unwrap();
        assert_eq!(out.matches("<svg").count(), 1);
        // bfq at QD 1 (i = 0): seeds give 1 and 2 MB/s.
        assert!(
            out.contains(
                "<td>bfq</td><td>1</td><td class=\"num\">2</td><td class=\"num\">1.500 (1–2)</td>"
            ),
            "{out}"
        );
        let mut again = String::new();
        section(&mut again, "s", &s).unwrap();
        assert_eq!(out, again);
    }

    #[test]
    fn bounds_are_errors_of_one_line() {
        let mut r = row("x", "bfq", "1", 1.0, 1.0);
        for i in 0..=MAX_SWEEP_COLUMNS {
            r.insert(format!("c{i}"), Value::Num(0.0));
        }
        let e = Sweep::new("big.parquet", vec![r]).unwrap_err();
        assert!(
            e.starts_with("big.parquet: ") && e.contains("MAX_SWEEP_COLUMNS") && !e.contains('\n'),
            "{e}"
        );
        let rows: Vec<_> = (0..=MAX_AXIS_VALUES)
            .map(|i| row(&i.to_string(), &format!("s{i}"), "1", 1.0, 1.0))
            .collect();
        let e = section(&mut String::new(), "w.parquet", &Sweep::new("w.parquet", rows).unwrap())
            .unwrap_err();
        assert!(e.contains("MAX_AXIS_VALUES"), "{e}");
    }
}
