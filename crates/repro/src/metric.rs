//! What a table column measures: a quantity over a scope of processes of one run.
//!
//! Written `SCOPE.QUANTITY` or `A/B` for a ratio of two such:
//! - scopes: `g0`, `g1`, ... (a reporting group), `job:NAME` (every clone of a job), `all`;
//! - quantities: `nr` (processes), `max_bw` / `min_bw` (per-process KB/s, as the seed tables),
//!   `agg_bw` (KB/s of the scope), `agg_mbs` (MB/s, 10^6), `max_lat` / `avg_lat` (completion
//!   latency), `runtime` (seconds, the longest member), `ios`, `read_ios`, `write_ios`,
//!   `share` (% of all I/Os in the run), `byte_share` (% of all bytes), `over_2s` / `over_10s`
//!   (% of I/Os with completion latency above 2 s / 10 s, as tiobench reports), `timed_ios` /
//!   `timed_share` (I/Os completed before the runtime ran out, and their % of all such: "I/Os
//!   done in 60 seconds", not counting the drain after it), `cpu` (CPU time spun over the
//!   longest member's runtime, % of one CPU), `p90_lat` / `p93_lat` / `p95_lat` / `p99_lat`
//!   (completion-latency percentiles over all the scope's I/Os).

use elevator_sim::workload::Process;
use elevator_sim::SimResult;

#[derive(Clone, Debug, PartialEq)]
pub enum Scope {
    Group(u32),
    Job(String),
    All,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    Nr,
    MaxBw,
    MinBw,
    AggBw,
    AggMbs,
    MaxLat,
    AvgLat,
    Runtime,
    Ios,
    ReadIos,
    WriteIos,
    Share,
    ByteShare,
    Over2s,
    Over10s,
    TimedIos,
    TimedShare,
    /// CPU time spun (`thinktime_spin`) over the longest member's runtime, % of one CPU (as
    /// `time` reports a command's CPU%).
    Cpu,
    /// Completion-latency percentile (90, 95, 99) of all the scope's I/Os.
    PctLat(u8),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Metric {
    Of(Scope, Quantity),
    Ratio(Box<Metric>, Box<Metric>),
}

/// A measured value and how the seed would print it.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    pub number: f64,
    pub text: String,
}

const QUANTITIES: &[(&str, Quantity)] = &[
    ("nr", Quantity::Nr),
    ("max_bw", Quantity::MaxBw),
    ("min_bw", Quantity::MinBw),
    ("agg_bw", Quantity::AggBw),
    ("agg_mbs", Quantity::AggMbs),
    ("max_lat", Quantity::MaxLat),
    ("avg_lat", Quantity::AvgLat),
    ("runtime", Quantity::Runtime),
    ("ios", Quantity::Ios),
    ("read_ios", Quantity::ReadIos),
    ("write_ios", Quantity::WriteIos),
    ("share", Quantity::Share),
    ("byte_share", Quantity::ByteShare),
    ("over_2s", Quantity::Over2s),
    ("over_10s", Quantity::Over10s),
    ("timed_ios", Quantity::TimedIos),
    ("timed_share", Quantity::TimedShare),
    ("cpu", Quantity::Cpu),
    ("p90_lat", Quantity::PctLat(90)),
    ("p93_lat", Quantity::PctLat(93)),
    ("p95_lat", Quantity::PctLat(95)),
    ("p99_lat", Quantity::PctLat(99)),
];

impl Scope {
    /// `g<N>`, `job:<name>` or `all`.
    pub fn parse(text: &str) -> Result<Scope, String> {
        if text == "all" {
            Ok(Scope::All)
        } else if let Some(name) = text.strip_prefix("job:") {
            Ok(Scope::Job(name.to_string()))
        } else if let Some(n) = text.strip_prefix('g').and_then(|n| n.parse().ok()) {
            Ok(Scope::Group(n))
        } else {
            Err(format!("scope `{text}` is not g<N>, job:<name> or all"))
        }
    }

    fn members<'a>(&self, result: &'a SimResult) -> Vec<&'a Process> {
        result.processes.iter().filter(|p| in_scope(p, self, result)).collect()
    }
}

/// All completion latencies of `members` in one histogram, and the largest seen.
fn merged_latency(members: &[&Process]) -> Option<(hdrhistogram::Histogram<u64>, u64)> {
    let mut all: Option<hdrhistogram::Histogram<u64>> = None;
    let mut max_ns = 0;
    for d in members.iter().flat_map(|p| p.stats.iter()) {
        max_ns = max_ns.max(d.clat_ns.max);
        if d.clat_hist.is_empty() {
            continue;
        }
        match all.as_mut() {
            Some(h) => h.add(&d.clat_hist).expect("same histogram bounds"),
            None => all = Some(d.clat_hist.clone()),
        }
    }
    all.map(|h| (h, max_ns))
}

/// The completion-latency CDF of a scope's I/Os: (latency in ms, fraction at or below) at
/// every percent, 0 to 100. Empty if the scope did no I/O.
pub fn latency_cdf(result: &SimResult, scope: &Scope) -> Vec<(f64, f64)> {
    let Some((h, max_ns)) = merged_latency(&scope.members(result)) else { return Vec::new() };
    (0..=100)
        .map(|pct| {
            let q = f64::from(pct) / 100.0;
            // The histogram answers with its bucket's top; never above the largest seen.
            (h.value_at_quantile(q).min(max_ns) as f64 / 1e6, q)
        })
        .collect()
}

impl Metric {
    pub fn parse(text: &str) -> Result<Metric, String> {
        if let Some((a, b)) = text.split_once('/') {
            return Ok(Metric::Ratio(Box::new(Metric::parse(a)?), Box::new(Metric::parse(b)?)));
        }
        let (scope, quantity) = text
            .rsplit_once('.')
            .ok_or_else(|| format!("column `{text}`: expected SCOPE.QUANTITY, e.g. g0.agg_bw"))?;
        let scope = Scope::parse(scope).map_err(|e| format!("column `{text}`: {e}"))?;
        let quantity =
            QUANTITIES.iter().find(|(n, _)| *n == quantity).map(|(_, q)| *q).ok_or_else(|| {
                let names: Vec<&str> = QUANTITIES.iter().map(|(n, _)| *n).collect();
                format!(
                    "column `{text}`: unknown quantity `{quantity}`; known: {}",
                    names.join(", ")
                )
            })?;
        Ok(Metric::Of(scope, quantity))
    }

    /// A short header for the column.
    pub fn header(&self) -> String {
        match self {
            Metric::Ratio(a, b) => format!("{}/{}", a.header(), b.header()),
            Metric::Of(_, Quantity::PctLat(p)) => format!("p{p}-latency"),
            Metric::Of(_, q) => match q {
                Quantity::Nr => "nr",
                Quantity::MaxBw => "Max-bandw",
                Quantity::MinBw => "Min-bandw",
                Quantity::AggBw => "Agg-bandw",
                Quantity::AggMbs => "MB/s",
                Quantity::MaxLat => "Max-latency",
                Quantity::AvgLat => "Avg-latency",
                Quantity::Runtime => "Elapsed",
                Quantity::Ios => "IOs",
                Quantity::ReadIos => "Reads",
                Quantity::WriteIos => "Writes",
                Quantity::Share => "Share",
                Quantity::ByteShare => "Byte-share",
                Quantity::Over2s => "Lat%>2s",
                Quantity::Over10s => "Lat%>10s",
                Quantity::TimedIos => "IOs",
                Quantity::TimedShare => "Share",
                Quantity::Cpu => "CPU%",
                Quantity::PctLat(_) => unreachable!("named above"),
            }
            .to_string(),
        }
    }

    pub fn eval(&self, result: &SimResult) -> Value {
        match self {
            Metric::Ratio(a, b) => {
                let (x, y) = (a.eval(result).number, b.eval(result).number);
                let r = if y == 0.0 { 0.0 } else { x / y };
                Value { number: r, text: format!("{r:.2}") }
            }
            Metric::Of(scope, q) => quantity(&scope.members(result), *q, result),
        }
    }
}

fn in_scope(p: &Process, scope: &Scope, _result: &SimResult) -> bool {
    match scope {
        Scope::All => true,
        Scope::Group(g) => p.group_id == *g,
        Scope::Job(name) => &p.name == name,
    }
}

fn bytes(p: &Process) -> u64 {
    p.stats.iter().map(|s| s.io_bytes).sum()
}

fn ios(p: &Process) -> u64 {
    p.stats.iter().map(|s| s.total_ios).sum()
}

fn kib_per_sec(bytes: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        bytes as f64 * 1e9 / ns as f64 / 1024.0
    }
}

/// Latency as the seed tables print it.
pub fn latency_text(ns: u64) -> String {
    if ns < 100_000_000 {
        format!("{}usec", ns / 1_000)
    } else {
        format!("{}msec", ns / 1_000_000)
    }
}

fn quantity(members: &[&Process], q: Quantity, result: &SimResult) -> Value {
    let bw = |text: f64| Value { number: text, text: format!("{text:.0}KB/s") };
    let runtime_max = members.iter().map(|p| p.runtime_ns()).max().unwrap_or(0);
    match q {
        Quantity::Nr => Value { number: members.len() as f64, text: members.len().to_string() },
        Quantity::MaxBw => {
            bw(members.iter().map(|p| kib_per_sec(bytes(p), p.runtime_ns())).fold(0.0, f64::max))
        }
        Quantity::MinBw => {
            let v = members
                .iter()
                .map(|p| kib_per_sec(bytes(p), p.runtime_ns()))
                .fold(f64::INFINITY, f64::min);
            bw(if v.is_finite() { v } else { 0.0 })
        }
        Quantity::AggBw => bw(kib_per_sec(members.iter().map(|p| bytes(p)).sum(), runtime_max)),
        Quantity::AggMbs => {
            let mbs =
                kib_per_sec(members.iter().map(|p| bytes(p)).sum(), runtime_max) * 1024.0 / 1e6;
            Value { number: mbs, text: format!("{mbs:.1}") }
        }
        Quantity::MaxLat => {
            let ns = members
                .iter()
                .flat_map(|p| p.stats.iter().map(|s| s.clat_ns.max))
                .max()
                .unwrap_or(0);
            Value { number: ns as f64, text: latency_text(ns) }
        }
        Quantity::AvgLat => {
            let (sum, n) =
                members.iter().flat_map(|p| p.stats.iter()).fold((0.0, 0u64), |(s, n), d| {
                    (s + d.clat_ns.mean() * d.clat_ns.n as f64, n + d.clat_ns.n)
                });
            let ns = if n == 0 { 0.0 } else { sum / n as f64 };
            Value { number: ns, text: format!("{:.3}ms", ns / 1e6) }
        }
        Quantity::Runtime => {
            let s = members.iter().map(|p| p.end_ns.saturating_sub(p.start_ns)).max().unwrap_or(0)
                as f64
                / 1e9;
            Value { number: s, text: format!("{s:.1}s") }
        }
        Quantity::Cpu => {
            let runtime =
                members.iter().map(|p| p.end_ns.saturating_sub(p.start_ns)).max().unwrap_or(0);
            let cpu: u64 = members.iter().map(|p| p.cpu_ns).sum();
            let pct = if runtime == 0 { 0.0 } else { cpu as f64 * 100.0 / runtime as f64 };
            Value { number: pct, text: format!("{pct:.1}%") }
        }
        Quantity::Ios | Quantity::ReadIos | Quantity::WriteIos => {
            let n: u64 = members
                .iter()
                .map(|p| match q {
                    Quantity::ReadIos => p.stats[0].total_ios,
                    Quantity::WriteIos => p.stats[1].total_ios,
                    _ => ios(p),
                })
                .sum();
            Value { number: n as f64, text: n.to_string() }
        }
        Quantity::Share | Quantity::ByteShare => {
            let of = |p: &Process| if q == Quantity::Share { ios(p) } else { bytes(p) };
            let mine: u64 = members.iter().map(|p| of(p)).sum();
            let all: u64 = result.processes.iter().map(of).sum();
            let pct = if all == 0 { 0.0 } else { mine as f64 * 100.0 / all as f64 };
            Value { number: pct, text: format!("{pct:.1}%") }
        }
        Quantity::TimedIos => {
            let n: u64 = members.iter().map(|p| p.ios_in_runtime).sum();
            Value { number: n as f64, text: n.to_string() }
        }
        Quantity::TimedShare => {
            let mine: u64 = members.iter().map(|p| p.ios_in_runtime).sum();
            let all: u64 = result.processes.iter().map(|p| p.ios_in_runtime).sum();
            let pct = if all == 0 { 0.0 } else { mine as f64 * 100.0 / all as f64 };
            Value { number: pct, text: format!("{pct:.1}%") }
        }
        Quantity::PctLat(pct) => {
            // The histogram answers with its bucket's top; never above the largest seen.
            let ns = merged_latency(members)
                .map_or(0, |(h, max_ns)| h.value_at_quantile(f64::from(pct) / 100.0).min(max_ns));
            Value { number: ns as f64, text: latency_text(ns) }
        }
        Quantity::Over2s | Quantity::Over10s => {
            let limit_ns = if q == Quantity::Over2s { 2_000_000_000 } else { 10_000_000_000 };
            let (over, total) =
                members.iter().flat_map(|p| p.stats.iter()).fold((0u64, 0u64), |(o, t), d| {
                    let n = d.clat_hist.len();
                    let below = if n == 0 { 0 } else { d.clat_hist.count_between(0, limit_ns) };
                    (o + n.saturating_sub(below), t + n)
                });
            let pct = if total == 0 { 0.0 } else { over as f64 * 100.0 / total as f64 };
            Value { number: pct, text: format!("{pct:.2}") }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_scopes_quantities_and_ratios() {
        assert_eq!(
            Metric::parse("g1.agg_bw").unwrap(),
            Metric::Of(Scope::Group(1), Quantity::AggBw)
        );
        assert_eq!(
            Metric::parse("job:seq.nr").unwrap(),
            Metric::Of(Scope::Job("seq".into()), Quantity::Nr)
        );
        assert!(matches!(Metric::parse("g0.read_ios/g1.write_ios").unwrap(), Metric::Ratio(..)));
        assert!(Metric::parse("g0.speed").unwrap_err().contains("unknown quantity `speed`"));
        assert!(Metric::parse("x.nr").unwrap_err().contains("scope `x`"));
        assert!(Metric::parse("nr").is_err());
    }
}
