//! The seed-000 table: per reporting group, the number of jobs, the highest and lowest
//! per-job bandwidth, the group's aggregate bandwidth and the worst completion latency — the
//! columns Vivek Goyal's io-controller reports used (KB/s means KiB/s, as fio 1.x printed).

use std::fmt::Write;

use elevator_fio::JobFile;

use crate::report::rate;
use crate::SimResult;

/// One row of the table: one reporting group.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupRow {
    pub group_id: u32,
    pub name: String,
    pub jobs: usize,
    pub max_bw_kib: f64,
    pub min_bw_kib: f64,
    pub agg_bw_kib: f64,
    pub max_clat_ns: u64,
}

/// Computes the rows from per-process statistics (whatever `group_reporting` says).
pub fn rows(result: &SimResult, jobs: &JobFile) -> Vec<GroupRow> {
    let groups = result.processes.iter().map(|p| p.group_id).max().map_or(0, |g| g + 1);
    let mut out = Vec::new();
    for g in 0..groups {
        let members: Vec<_> = result.processes.iter().filter(|p| p.group_id == g).collect();
        if members.is_empty() {
            continue;
        }
        let bytes = |p: &&crate::workload::Process| p.stats.iter().map(|s| s.io_bytes).sum::<u64>();
        let bws: Vec<f64> =
            members.iter().map(|p| rate(bytes(p), p.runtime_ns()) / 1024.0).collect();
        let total: u64 = members.iter().map(bytes).sum();
        let run_max = members.iter().map(|p| p.runtime_ns()).max().unwrap_or(0);
        out.push(GroupRow {
            group_id: g,
            name: jobs.jobs[members[0].job].name.clone(),
            jobs: members.len(),
            max_bw_kib: bws.iter().cloned().fold(0.0, f64::max),
            min_bw_kib: bws.iter().cloned().fold(f64::INFINITY, f64::min),
            agg_bw_kib: rate(total, run_max) / 1024.0,
            max_clat_ns: members
                .iter()
                .flat_map(|p| p.stats.iter().map(|s| s.clat_ns.max))
                .max()
                .unwrap_or(0),
        });
    }
    out
}

/// Renders the rows in the seed's layout.
pub fn render(result: &SimResult, jobs: &JobFile) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<5} {:<16} {:>3} {:>12} {:>12} {:>12} {:>12}",
        "group", "job", "nr", "Max-bandw", "Min-bandw", "Agg-bandw", "Max-latency"
    );
    for r in rows(result, jobs) {
        let _ = writeln!(
            out,
            "{:<5} {:<16} {:>3} {:>12} {:>12} {:>12} {:>12}",
            r.group_id,
            r.name,
            r.jobs,
            format!("{:.0}KB/s", r.max_bw_kib),
            format!("{:.0}KB/s", r.min_bw_kib),
            format!("{:.0}KB/s", r.agg_bw_kib),
            latency(r.max_clat_ns)
        );
    }
    out
}

/// Latency as the seed prints it: microseconds below 100 ms, milliseconds above.
pub fn latency(ns: u64) -> String {
    if ns < 100_000_000 {
        format!("{} usec", ns / 1_000)
    } else {
        format!("{} msec", ns / 1_000_000)
    }
}
