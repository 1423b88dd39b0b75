//! The report page: one self-contained HTML document.
//!
//! Inline CSS and inline SVG only: no JavaScript, no external URL (links are to anchors in
//! the page). Every number is printed with a fixed format, inputs appear in the order given,
//! and nothing depends on the clock or on hash-map order, so the same inputs give the same
//! bytes.
//!
//! Per run (a fio JSON file, or each scheduler of a compare file): a latency CDF chart (when
//! some job completed I/O), a share-of-the-I/Os chart (when the run did any I/O), a table
//! per job and direction, and a table of the groups' fairness. A compare file gets a summary
//! of its runs first. A reproduce file gets its tables, our row above the published one, and
//! for each table with a `cdf` scope a chart of the latency CDFs `reproduce` kept (the ones
//! `reproduce --plot` draws).

use std::fmt::Write;

use crate::chart::{self, Bar, Curve, MARKED, MAX_CURVES};
use crate::fairness::{fairness, Fairness};
use crate::input::{Content, Experiment, Input, Job, Run, Table};
pub use crate::markup::esc;
use crate::markup::inline_svg;

const CSS: &str = "\
body{font-family:sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #4e79a7;padding-bottom:.2em;margin-top:2em}
h3{margin-top:1.5em}code{background:#f4f4f4;padding:0 .2em}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.9em}
caption{text-align:left;font-weight:bold;padding:.3em 0}
th,td{border:1px solid #ccc;padding:.2em .5em}th{background:#f0f3f7;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.published td,tr.published th{background:#fbf7ee;color:#555}
.charts{display:flex;flex-wrap:wrap;gap:1em}
figure{margin:0}figure svg{max-width:100%;height:auto;border:1px solid #ddd}
figcaption{font-size:.85em;color:#555;max-width:760px}
.meta,.note{color:#555}.warn{color:#a33}
ul.legend{list-style:none;padding:0;margin:.3em 0;columns:2;font-size:.95em}
ul.legend span{display:inline-block;width:1.4em;height:.35em;margin-right:.4em;vertical-align:middle}
";

/// The page for `inputs`, titled `title`.
pub fn render(title: &str, inputs: &[Input]) -> Result<String, String> {
    let mut out = String::new();
    let t = esc(title);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{t}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<h1>{t}</h1>\n"
    );
    let _ = writeln!(out, "<p class=\"meta\">Made by <code>elevator report</code> from:</p>\n<ul>");
    for (i, input) in inputs.iter().enumerate() {
        let _ = writeln!(
            out,
            "<li><a href=\"#input-{}\"><code>{}</code></a>: {}</li>",
            i + 1,
            esc(&input.name),
            kind(input)
        );
    }
    out.push_str("</ul>\n");
    for (i, input) in inputs.iter().enumerate() {
        let _ = writeln!(
            out,
            "<section id=\"input-{}\">\n<h2><code>{}</code></h2>",
            i + 1,
            esc(&input.name)
        );
        match &input.content {
            Content::Runs(runs) => {
                if runs.len() > 1 {
                    summary(&mut out, runs);
                }
                for run in runs {
                    run_section(&mut out, run)?;
                }
            }
            Content::Reproduce(e) => experiment(&mut out, e)?,
            Content::Sweep(s) => crate::sweep::section(&mut out, &input.name, s)?,
        }
        out.push_str("</section>\n");
    }
    out.push_str("</body>\n</html>\n");
    Ok(out)
}

/// How many charts [`render`] draws for `inputs`: per run, a CDF chart if a job completed
/// I/O with a latency distribution, a share chart if the run did any I/O, and bandwidth and
/// IOPS over time if it has a timeline with I/O in it; per reproduce table, a CDF chart if
/// some row kept a latency CDF.
pub fn chart_count(inputs: &[Input]) -> usize {
    inputs
        .iter()
        .map(|i| match &i.content {
            Content::Runs(runs) => runs
                .iter()
                .map(|r| {
                    usize::from(!curves(r).is_empty())
                        + usize::from(total_ios(r) > 0)
                        + 2 * usize::from(!timeline_series(r).is_empty())
                })
                .sum(),
            Content::Reproduce(e) => {
                e.tables.iter().filter(|t| !table_curves(t).is_empty()).count()
            }
            Content::Sweep(s) => crate::sweep::chart_count(s),
        })
        .sum()
}

fn kind(input: &Input) -> String {
    match &input.content {
        Content::Runs(runs) if runs.len() == 1 && runs[0].label.is_none() => {
            format!("fio JSON, {}", count(runs[0].jobs.len(), "job"))
        }
        Content::Runs(runs) => format!("elevator compare, {}", count(runs.len(), "scheduler")),
        Content::Reproduce(e) => {
            format!("elevator reproduce {} (seed {})", esc(&e.name), esc(&e.seed_mail))
        }
        Content::Sweep(s) => {
            format!("elevator sweep, {}, {}", count(s.runs(), "run"), count(s.rows.len(), "row"))
        }
    }
}

/// `1 job`, `5 jobs`.
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// A latency in ns with a unit: `850 ns`, `12.3 µs`, `16.71 ms`, `1.234 s`.
pub fn fmt_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

fn fmt_opt_ns(ns: Option<u64>) -> String {
    ns.map_or_else(|| "–".to_string(), |ns| fmt_ns(ns as f64))
}

fn fmt_pct(fraction: f64) -> String {
    format!("{:.1} %", fraction * 100.0)
}

fn fmt_opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map_or_else(|| "–".to_string(), f)
}

fn total_ios(run: &Run) -> u64 {
    run.jobs.iter().flat_map(|j| &j.dirs).map(|d| d.ios).fold(0, u64::saturating_add)
}

/// Job names made unique: clones of a `numjobs=` job share a name, so they are numbered.
fn job_labels(run: &Run) -> Vec<String> {
    let mut out = Vec::with_capacity(run.jobs.len());
    for (i, job) in run.jobs.iter().enumerate() {
        let twins = run.jobs.iter().filter(|j| j.name == job.name).count();
        if twins > 1 {
            let k = run.jobs[..i].iter().filter(|j| j.name == job.name).count() + 1;
            out.push(format!("{} #{k}", job.name));
        } else {
            out.push(job.name.clone());
        }
    }
    out
}

fn busy_dirs(job: &Job) -> impl Iterator<Item = &crate::input::Dir> {
    job.dirs.iter().filter(|d| d.ios > 0)
}

/// One CDF curve per job and direction with I/O and a latency distribution.
fn curves(run: &Run) -> Vec<Curve> {
    let labels = job_labels(run);
    let mut out = Vec::new();
    for (job, label) in run.jobs.iter().zip(&labels) {
        let several = busy_dirs(job).count() > 1;
        for d in busy_dirs(job) {
            let points = chart::cdf_points(&d.clat);
            if points.is_empty() {
                continue;
            }
            let markers = MARKED
                .iter()
                .filter_map(|&(p, _)| d.clat.percentile(p).map(|ns| (p, ns)))
                .collect();
            let label =
                if several { format!("{label} {}", d.direction.key()) } else { label.clone() };
            out.push(Curve { label, points, markers });
        }
    }
    out
}

fn run_title(run: &Run) -> String {
    match &run.label {
        Some(l) => format!("Scheduler <code>{}</code>", esc(l)),
        None => "Run".to_string(),
    }
}

fn summary(out: &mut String, runs: &[Run]) {
    out.push_str(
        "<table>\n<caption>Summary</caption>\n<tr><th>scheduler</th><th>I/Os</th>\
         <th>Jain's index</th><th>weighted Jain's index</th><th>largest weight error</th></tr>\n",
    );
    for run in runs {
        let f = fairness(run);
        let _ = writeln!(
            out,
            "<tr><th>{}</th><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(run.label.as_deref().unwrap_or("")),
            total_ios(run),
            fmt_opt(f.jain, |x| format!("{x:.4}")),
            fmt_opt(f.weighted_jain, |x| format!("{x:.4}")),
            fmt_opt(f.max_error_pp, |x| format!("{x:.1} pp")),
        );
    }
    out.push_str("</table>\n");
}

fn run_section(out: &mut String, run: &Run) -> Result<(), String> {
    let _ = writeln!(out, "<h3>{}</h3>", run_title(run));
    let mut meta = Vec::new();
    if !run.devices.is_empty() {
        let devices: Vec<String> = run
            .devices
            .iter()
            .map(|(d, s)| format!("<code>{}</code> under <code>{}</code>", esc(d), esc(s)))
            .collect();
        meta.push(format!("Devices: {}.", devices.join(", ")));
    }
    if let Some(seed) = run.seed {
        meta.push(format!("Seed {seed}."));
    }
    meta.push(format!("{}, {} I/Os.", count(run.jobs.len(), "job"), total_ios(run)));
    let _ = writeln!(out, "<p class=\"meta\">{}</p>", meta.join(" "));

    let f = fairness(run);
    let curves = curves(run);
    let with_ios = total_ios(run) > 0;
    let timeline = timeline_series(run);
    if !curves.is_empty() || with_ios || !timeline.is_empty() {
        out.push_str("<div class=\"charts\">\n");
    }
    if !curves.is_empty() {
        let svg = chart::latency_cdf("Completion latency", &curves)?;
        let more = if curves.len() > MAX_CURVES {
            format!(" The first {MAX_CURVES} of {} curves are drawn.", curves.len())
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "<figure>\n{}\n<figcaption>Completion latency CDF per job and direction, from {}; \
             markers at p50 (circle), p99 (triangle) and p99.9 (cross).{more}</figcaption>\n\
             </figure>",
            inline_svg(&svg),
            if run.jobs.iter().flat_map(|j| &j.dirs).any(|d| !d.clat.bins.is_empty()) {
                "json+'s histogram bins"
            } else {
                "fio's percentiles (json+ gives the whole histogram)"
            },
        );
    }
    if with_ios {
        let bars: Vec<Bar> = f
            .shares
            .iter()
            .map(|s| Bar {
                label: s.group.name.clone(),
                share: s.io_share,
                weight_share: s.weight_share,
            })
            .collect();
        let svg = chart::share_bars("Share of the I/Os per group", &bars)?;
        let more = if bars.len() > chart::MAX_BARS {
            format!(" The first {} of {} groups are drawn.", chart::MAX_BARS, bars.len())
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "<figure>\n{}\n<figcaption>Each group's share of the run's I/Os{}.{more}</figcaption>\n\
             </figure>",
            inline_svg(&svg),
            if bars.iter().any(|b| b.weight_share.is_some()) {
                "; the black line is its share of the weights (<code>cgroup_weight</code>)"
            } else {
                ""
            },
        );
    }
    if !timeline.is_empty() {
        let bin_s = run.timeline.as_ref().map_or(1.0, |t| t.bin_ns as f64 / 1e9);
        let more = if timeline.len() > MAX_CURVES {
            format!(" The first {MAX_CURVES} of {} groups are drawn.", timeline.len())
        } else {
            String::new()
        };
        for (title, unit, bandwidth) in [
            ("Bandwidth over time per group", "MB/s", true),
            ("IOPS over time per group", "I/Os per second", false),
        ] {
            let series: Vec<(String, Vec<f64>)> = timeline
                .iter()
                .map(|(name, iops, mbps)| {
                    (name.clone(), if bandwidth { mbps } else { iops }.clone())
                })
                .collect();
            let svg = chart::time_lines(title, unit, bin_s, &series)?;
            let _ = writeln!(
                out,
                "<figure>\n{}\n<figcaption>{title}, all directions, in bins of {} of simulated \
                 time.{more}</figcaption>\n</figure>",
                inline_svg(&svg),
                fmt_ns(bin_s * 1e9),
            );
        }
    }
    if !curves.is_empty() || with_ios || !timeline.is_empty() {
        out.push_str("</div>\n");
    }
    jobs_table(out, run);
    fairness_table(out, &f);
    decisions_table(out, run);
    Ok(())
}

/// Each timeline group with I/O: its name, IOPS and MB/s per bin, over all directions. A bin
/// the run ended inside is divided by the part of it that was run.
fn timeline_series(run: &Run) -> Vec<(String, Vec<f64>, Vec<f64>)> {
    let Some(t) = &run.timeline else { return Vec::new() };
    let width_s = |k: usize| {
        let start = k as u64 * t.bin_ns;
        let end =
            t.end_ns.filter(|&e| e > start).map_or(start + t.bin_ns, |e| e.min(start + t.bin_ns));
        (end - start) as f64 / 1e9
    };
    t.groups
        .iter()
        .filter_map(|g| {
            let len = g.dirs.iter().map(|d| d.1.len()).max()?;
            let (mut ios, mut bytes) = (vec![0u64; len], vec![0u64; len]);
            for (_, i, b) in &g.dirs {
                for k in 0..i.len() {
                    ios[k] = ios[k].saturating_add(i[k]);
                    bytes[k] = bytes[k].saturating_add(b[k]);
                }
            }
            let iops = (0..len).map(|k| ios[k] as f64 / width_s(k)).collect();
            let mbps = (0..len).map(|k| bytes[k] as f64 / 1e6 / width_s(k)).collect();
            ios.iter().any(|&x| x > 0).then(|| (g.name.clone(), iops, mbps))
        })
        .collect()
}

/// Each device's dispatches by the scheduler's reason, most frequent first.
fn decisions_table(out: &mut String, run: &Run) {
    for (device, counts) in &run.decisions {
        let total: u64 = counts.iter().map(|c| c.1).sum();
        if total == 0 {
            continue;
        }
        let mut rows: Vec<&(String, u64)> = counts.iter().collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let _ = writeln!(
            out,
            "<table>\n<caption>Scheduler decisions on <code>{}</code></caption>\n\
             <tr><th>reason</th><th>dispatches</th><th>share</th></tr>",
            esc(device)
        );
        for (reason, n) in rows {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{n}</td><td>{}</td></tr>",
                esc(reason),
                fmt_pct(*n as f64 / total as f64)
            );
        }
        out.push_str("</table>\n");
    }
}

fn jobs_table(out: &mut String, run: &Run) {
    out.push_str(
        "<table>\n<caption>Jobs</caption>\n<tr><th>job</th><th>group</th><th>dir</th>\
         <th>I/Os</th><th>MiB</th><th>KiB/s</th><th>IOPS</th><th>mean clat</th><th>p50</th>\
         <th>p99</th><th>p99.9</th><th>max</th></tr>\n",
    );
    let labels = job_labels(run);
    for (job, label) in run.jobs.iter().zip(&labels) {
        let group = match &job.cgroup {
            Some(c) => format!("<code>{}</code>", esc(c)),
            None => format!("{}", job.groupid),
        };
        let mut any = false;
        for d in busy_dirs(job) {
            any = true;
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{group}</td><td>{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{:.1}</td><td class=\"num\">{:.0}</td><td class=\"num\">{:.1}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                esc(label),
                d.direction.key(),
                d.ios,
                d.bytes as f64 / 1048576.0,
                d.bw_bytes as f64 / 1024.0,
                d.iops,
                fmt_ns(d.clat.mean_ns),
                fmt_opt_ns(d.clat.percentile(50.0)),
                fmt_opt_ns(d.clat.percentile(99.0)),
                fmt_opt_ns(d.clat.percentile(99.9)),
                fmt_ns(d.clat.max_ns as f64),
            );
        }
        if !any {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{group}</td><td>–</td><td class=\"num\">0</td>\
                 <td colspan=\"8\">no I/O completed</td></tr>",
                esc(label)
            );
        }
    }
    out.push_str("</table>\n");
}

fn fairness_table(out: &mut String, f: &Fairness) {
    out.push_str(
        "<table>\n<caption>Fairness between groups</caption>\n<tr><th>group</th><th>jobs</th>\
         <th>I/Os</th><th>share of I/Os</th><th>KiB/s</th><th>share of bandwidth</th>\
         <th>weight</th><th>share of weights</th><th>error</th><th>worst p99</th>\
         <th>worst p99.9</th></tr>\n",
    );
    for s in &f.shares {
        let g = &s.group;
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{:.0}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(&g.name),
            g.jobs,
            g.ios,
            fmt_pct(s.io_share),
            g.bw_bytes as f64 / 1024.0,
            fmt_pct(s.bw_share),
            g.weight.map_or_else(|| "–".to_string(), |w| w.to_string()),
            fmt_opt(s.weight_share, fmt_pct),
            fmt_opt(s.error_pp, |x| format!("{x:+.1} pp")),
            fmt_opt_ns(g.p99_ns),
            fmt_opt_ns(g.p999_ns),
        );
    }
    out.push_str("</table>\n");
    let n = f.shares.len();
    let mut lines = Vec::new();
    if n < 2 {
        lines.push("One group: no fairness between groups to measure.".to_string());
    } else {
        lines.push(match f.jain {
            Some(j) => format!(
                "Jain's fairness index of the {n} groups' throughput: <b>{j:.4}</b> \
                 (1 = equal, 1/{n} = one group has everything)."
            ),
            None => "Jain's fairness index: no group did any I/O.".to_string(),
        });
        let weighted = f.shares.iter().all(|s| s.weight_share.is_some());
        lines.push(match (f.weighted_jain, f.max_error_pp) {
            (Some(w), Some(e)) => format!(
                "Of throughput per unit of <code>cgroup_weight</code>: <b>{w:.4}</b>. \
                 Largest weight error (share of I/Os − share of weights): <b>{e:.1} pp</b>."
            ),
            _ if weighted => "No weight error: no group did any I/O.".to_string(),
            _ => "No weight error: not every group has one <code>cgroup_weight</code>.".to_string(),
        });
    }
    lines.push(
        "Groups are cgroups (<code>cgroup=</code>), else fio's reporting groups; worst p99 is \
         the largest p99 among the group's jobs."
            .to_string(),
    );
    let _ = writeln!(out, "<p class=\"note\">{}</p>", lines.join("<br>\n"));
}

/// One curve per variant (and row, when the variant has several) whose row kept a CDF, as
/// `reproduce --plot` draws them; p50 and p99 are marked where the CDF has them.
fn table_curves(t: &Table) -> Vec<Curve> {
    let mut out = Vec::new();
    for v in &t.variants {
        for row in v.rows.iter().filter(|r| !r.cdf.is_empty()) {
            let label = if v.rows.len() > 1 {
                format!("{} {}", v.label, row.value)
            } else {
                v.label.clone()
            };
            let points = chart::cdf_line(&row.cdf);
            let markers = MARKED
                .iter()
                .filter_map(|&(p, _)| {
                    points
                        .iter()
                        .find(|&&(_, f)| (f * 100.0 - p).abs() < 1e-6)
                        .map(|&(ns, _)| (p, ns.round() as u64))
                })
                .collect();
            out.push(Curve { label, points, markers });
        }
    }
    out
}

fn experiment(out: &mut String, e: &Experiment) -> Result<(), String> {
    let _ = writeln!(
        out,
        "<h3>Seed {}: {}</h3>\n<p class=\"meta\">Experiment <code>{}</code>: our rows \
         (simulated) above the published ones, column for column as printed in the seed mail.</p>",
        esc(&e.seed_mail),
        esc(&e.title),
        esc(&e.name)
    );
    for t in &e.tables {
        repro_table(out, t)?;
    }
    Ok(())
}

fn repro_table(out: &mut String, t: &Table) -> Result<(), String> {
    let _ = writeln!(out, "<h4>{}</h4>", esc(&t.title));
    let curves = table_curves(t);
    if !curves.is_empty() {
        let svg = chart::latency_cdf(&t.title, &curves)?;
        let more = if curves.len() > MAX_CURVES {
            format!(" The first {MAX_CURVES} of {} curves are drawn.", curves.len())
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "<div class=\"charts\">\n<figure>\n{}\n<figcaption>Completion latency CDF of the \
             table's <code>cdf</code> scope per variant{}, at every percent as \
             <code>reproduce</code> keeps it; markers at p50 (circle) and p99 (triangle).{more}\
             </figcaption>\n</figure>\n</div>",
            inline_svg(&svg),
            if t.variants.iter().any(|v| v.rows.len() > 1) { " and row" } else { "" },
        );
    }
    let width = t.headers.len().max(1);
    for v in &t.variants {
        let sched = if v.iosched.is_empty() {
            esc(&v.scheduler)
        } else {
            format!("{} {}", esc(&v.scheduler), esc(&v.iosched.join(" ")))
        };
        let _ = write!(
            out,
            "<table>\n<caption>{} <span class=\"meta\">[{sched}]</span></caption>\n<tr><th></th>",
            esc(&v.label)
        );
        for h in &t.headers {
            let _ = write!(out, "<th>{}</th>", esc(h));
        }
        out.push_str("</tr>\n");
        for row in &v.rows {
            out.push_str("<tr class=\"ours\"><th>elevator</th>");
            for k in 0..width.max(row.cells.len()) {
                let c = row.cells.get(k).map_or("", String::as_str);
                let _ = write!(out, "<td class=\"num\">{}</td>", esc(c));
            }
            out.push_str("</tr>\n");
            if let Some(p) = &row.published {
                out.push_str("<tr class=\"published\"><th>published</th>");
                let cells: Vec<&str> = p.split_whitespace().collect();
                if cells.len() <= width {
                    for k in 0..width {
                        let _ = write!(
                            out,
                            "<td class=\"num\">{}</td>",
                            esc(cells.get(k).copied().unwrap_or(""))
                        );
                    }
                } else {
                    let _ = write!(out, "<td colspan=\"{width}\">{}</td>", esc(p));
                }
                out.push_str("</tr>\n");
            }
        }
        out.push_str("</table>\n");
        let warnings: Vec<&String> = v.rows.iter().flat_map(|r| &r.warnings).collect();
        if !warnings.is_empty() {
            out.push_str("<ul class=\"warn\">\n");
            for w in warnings {
                let _ = writeln!(out, "<li>{}</li>", esc(w));
            }
            out.push_str("</ul>\n");
        }
    }
    if let Some(note) = &t.note {
        let _ = writeln!(out, "<p class=\"note\">Published finding: {}</p>", esc(note));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::parse;
    use crate::input::tests::fio_json;

    fn inputs() -> Vec<Input> {
        let run = fio_json(&[
            ("seq", 0, Some("fast"), Some(200), 60),
            ("seq", 0, Some("fast"), Some(200), 20),
            ("rand <&>", 1, Some("slow"), Some(100), 20),
            ("idle", 2, None, None, 0),
        ]);
        let result: serde_json::Value = serde_json::from_str(&run).unwrap();
        let compare = serde_json::json!({ "runs": [
            { "scheduler": "cfq", "result": result },
            { "scheduler": "bfq:slice_idle=0", "result": result },
        ]});
        let repro = r#"{"name": "n", "seed_mail": "001", "title": "T <x>", "tables": [
          {"title": "t1", "headers": ["a", "b"], "note": "n1",
           "variants": [{"label": "L", "scheduler": "cfq", "iosched": {"quantum": "8"},
             "rows": [{"cells": ["1", "2 KB/s"], "published": "3 4", "warnings": ["w!"]},
                      {"cells": ["5", "6"], "published": "7 8 9"},
                      {"cells": ["5", "6"], "published": null}]}]}]}"#;
        vec![
            parse("run.json", &run).unwrap(),
            parse("compare.json", &compare.to_string()).unwrap(),
            parse("repro.json", repro).unwrap(),
        ]
    }

    #[test]
    fn the_page_is_the_same_bytes_every_time() {
        let a = render("Report", &inputs()).unwrap();
        let b = render("Report", &inputs()).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn charts_come_one_per_kind_per_run() {
        let inputs = inputs();
        let html = render("Report", &inputs).unwrap();
        // Three runs (one fio, two compare), each with a CDF and a share chart.
        assert_eq!(chart_count(&inputs), 6);
        assert_eq!(html.matches("<svg").count(), 6);
        assert_eq!(html.matches("</svg>").count(), 6);
    }

    #[test]
    fn the_page_is_self_contained_and_escaped() {
        let html = render("A & B", &inputs()).unwrap();
        assert!(!html.to_lowercase().contains("<script"));
        assert!(!html.contains("http://") && !html.contains("https://"), "external URL");
        assert!(html.contains("<title>A &amp; B</title>"));
        assert!(html.contains("rand &lt;&amp;&gt;"));
        assert!(!html.contains("rand <&>"));
        assert!(html.contains("Seed 001: T &lt;x&gt;"));
        assert!(!html.contains("<?xml"));
    }

    #[test]
    fn the_page_has_jobs_fairness_and_published_rows() {
        let html = render("R", &inputs()).unwrap();
        // numjobs clones are told apart; a job without I/O says so.
        assert!(html.contains("seq #1") && html.contains("seq #2"));
        assert!(html.contains("no I/O completed"));
        // Groups: fast (80 I/Os), slow (20), group 2 (0): weights unknown for the last.
        assert!(html.contains("<td>fast</td><td class=\"num\">2</td><td class=\"num\">80</td><td class=\"num\">80.0 %</td>"));
        assert!(html.contains("No weight error"));
        // Published cells line up under the headers; too many cells span the row.
        assert!(html.contains("<tr class=\"published\"><th>published</th><td class=\"num\">3</td><td class=\"num\">4</td></tr>"));
        assert!(html.contains("<td colspan=\"2\">7 8 9</td>"));
        assert!(html.contains("<li>w!</li>"));
        assert!(html.contains("Published finding: n1"));
        assert!(html.contains("[cfq quantum=8]"));
        assert!(html.contains("<caption>Summary</caption>"));
    }

    #[test]
    fn a_timeline_draws_bandwidth_and_iops_and_decisions_make_a_table() {
        let run = fio_json(&[("a", 0, Some("fast"), None, 60), ("b", 1, Some("slow"), None, 20)]);
        let mut v: serde_json::Value = serde_json::from_str(&run).unwrap();
        v["elevator"] = serde_json::json!({
            "seed": 1, "simulated_ns": 250_000_000u64,
            "devices": [{"name": "sda", "scheduler": "bfq",
                         "decisions": {"budget continues": 75, "queue <empty>": 5}}],
            "timeline": {"bin_ns": 100_000_000u64, "groups": [
                {"group": "fast", "read": {"ios": [30, 20, 10], "bytes": [3, 2, 1]}},
                {"group": "slow", "write": {"ios": [10, 10], "bytes": [1, 1]}}]}
        });
        let inputs = vec![parse("t.json", &v.to_string()).unwrap()];
        let html = render("R", &inputs).unwrap();
        assert_eq!(chart_count(&inputs), 4, "CDF, shares, bandwidth, IOPS");
        assert_eq!(html.matches("<svg").count(), 4);
        assert!(
            html.contains("Bandwidth over time per group") && html.contains("bins of 100.00 ms")
        );
        // The last bin was half run: 10 I/Os in 50 ms is 200 IOPS, not 100.
        let Content::Runs(runs) = &inputs[0].content else { panic!() };
        let series = timeline_series(&runs[0]);
        assert_eq!(series[0].1, vec![300.0, 200.0, 200.0]);
        assert!(html.contains("<caption>Scheduler decisions on <code>sda</code></caption>"));
        assert!(html.contains("<tr><td>budget continues</td><td>75</td><td>93.8 %</td></tr>"));
        assert!(html.contains("queue &lt;empty&gt;"));
        // Too many bins is a one-line error naming where.
        v["elevator"]["timeline"]["groups"][0]["read"]["ios"] =
            serde_json::json!(vec![0; crate::input::MAX_TIMELINE_BINS + 1]);
        let e = parse("t.json", &v.to_string()).unwrap_err();
        assert!(
            e.starts_with("t.json: elevator.timeline.groups[0].read: `ios` has more than"),
            "{e}"
        );
    }

    #[test]
    fn reproduce_tables_with_cdfs_get_one_chart_each() {
        let cdf: Vec<(f64, f64)> =
            (0..=100).map(|p| (0.1 + f64::from(p), f64::from(p) / 100.0)).collect();
        let cdf = serde_json::to_value(&cdf).unwrap();
        let text = serde_json::json!({"name": "n", "seed_mail": "004", "title": "T", "tables": [
          {"title": "with <cdf>", "headers": ["a"], "variants": [
            {"label": "CFQ", "scheduler": "cfq", "iosched": {},
             "rows": [{"value": "1", "cells": ["1"], "cdf": cdf},
                      {"value": "2", "cells": ["2"], "cdf": cdf}]},
            {"label": "deadline", "scheduler": "mq-deadline", "iosched": {},
             "rows": [{"value": "1", "cells": ["1"], "cdf": cdf},
                      {"value": "2", "cells": ["2"]}]}]},
          {"title": "without", "headers": ["a"], "variants": [
            {"label": "CFQ", "scheduler": "cfq", "iosched": {},
             "rows": [{"value": "", "cells": ["1"]}]}]}]});
        let inputs = vec![parse("r.json", &text.to_string()).unwrap()];
        let html = render("R", &inputs).unwrap();
        assert_eq!(chart_count(&inputs), 1);
        assert_eq!(html.matches("<svg").count(), 1);
        // A curve per variant and row that kept a CDF, labelled with the row's value.
        for label in ["CFQ 1", "CFQ 2", "deadline 1"] {
            assert!(html.contains(&format!("\n{label}\n</text>")), "no curve `{label}`");
        }
        assert!(!html.contains("\ndeadline 2\n</text>"));
        assert!(html.contains("\nwith &lt;cdf&gt;\n</text>"));
        assert!(html.contains("per variant and row, at every percent"));
        // The chart sits under its table's heading, before the next table's.
        let chart = html.find("<svg").unwrap();
        assert!(html.find("<h4>with &lt;cdf&gt;</h4>").unwrap() < chart);
        assert!(chart < html.find("<h4>without</h4>").unwrap());
    }

    #[test]
    fn latencies_have_fixed_formats() {
        assert_eq!(fmt_ns(850.0), "850 ns");
        assert_eq!(fmt_ns(12_345.0), "12.3 µs");
        assert_eq!(fmt_ns(16_711_679.0), "16.71 ms");
        assert_eq!(fmt_ns(1_234_567_890.0), "1.235 s");
    }
}
