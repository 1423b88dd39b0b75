//! Text tables in the seed's layout: our rows on the left, the published ones on the right.

use std::fmt::Write;

use crate::runner::ExperimentResult;

pub fn text(r: &ExperimentResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {} — seed {}: {}\n", r.name, r.seed_mail, r.title);
    for t in &r.tables {
        for v in &t.variants {
            let tunables: Vec<String> = v.iosched.iter().map(|(k, x)| format!("{k}={x}")).collect();
            let sched = if tunables.is_empty() {
                v.scheduler.clone()
            } else {
                format!("{} {}", v.scheduler, tunables.join(" "))
            };
            let _ = writeln!(out, "{} — {} [{}]", t.title, v.label, sched);
            let mut widths: Vec<usize> = t.headers.iter().map(|h| h.len()).collect();
            for row in &v.rows {
                for (w, c) in widths.iter_mut().zip(&row.cells) {
                    *w = (*w).max(c.len());
                }
            }
            let line = |cells: &[String]| -> String {
                cells
                    .iter()
                    .zip(&widths)
                    .map(|(c, w)| format!("{c:>w$}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let ours_width = widths.iter().sum::<usize>() + widths.len().saturating_sub(1);
            let _ = writeln!(out, "{:<ours_width$} | published", "elevator (simulated)");
            let _ = writeln!(out, "{} |", line(&t.headers));
            for row in &v.rows {
                let _ = writeln!(
                    out,
                    "{} | {}",
                    line(&row.cells),
                    row.published.as_deref().unwrap_or("-")
                );
            }
            for w in v.rows.iter().flat_map(|r| &r.warnings) {
                let _ = writeln!(out, "  ! {w}");
            }
            out.push('\n');
        }
        if let Some(note) = &t.note {
            let _ = writeln!(out, "Published finding: {note}\n");
        }
    }
    out
}
