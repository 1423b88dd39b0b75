//! How fairly one run's groups shared the device.
//!
//! A group is a cgroup (`cgroup=` in the job file) or, for jobs without one, fio's reporting
//! group. Per group: I/Os, bandwidth, the share of each, and the worst p99 and p99.9
//! completion latency of its jobs. Over the groups: Jain's fairness index of their throughput
//! (bytes per second), `(Σx)² / (n·Σx²)`, which is 1 when all get the same and 1/n when one
//! gets everything; and, when every group has a `cgroup_weight=`, the index of throughput per
//! unit of weight and each group's error: its share of the I/Os minus its share of the
//! weights, in percentage points.

use std::collections::BTreeMap;

use crate::input::{Job, Run};

/// What the groups of a run are.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The cgroup's name, or `group N` for fio's reporting group N.
    pub name: String,
    pub jobs: usize,
    pub ios: u64,
    /// Sum of the jobs' `bw_bytes` over all directions.
    pub bw_bytes: u64,
    /// The `cgroup_weight` all its jobs give; `None` if one has none or they disagree.
    pub weight: Option<u64>,
    /// The largest p99 and p99.9 of its jobs' directions (ns).
    pub p99_ns: Option<u64>,
    pub p999_ns: Option<u64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Share {
    pub group: Group,
    /// Fractions of the run's total, 0..=1.
    pub io_share: f64,
    pub bw_share: f64,
    /// The group's weight over the sum of the weights, when all are known.
    pub weight_share: Option<f64>,
    /// `io_share − weight_share` in percentage points.
    pub error_pp: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Fairness {
    pub shares: Vec<Share>,
    /// Jain's index of the groups' throughput; `None` with fewer than two groups or no I/O.
    pub jain: Option<f64>,
    /// Jain's index of throughput over weight, when every group has a weight.
    pub weighted_jain: Option<f64>,
    /// The largest `|error_pp|`, when every group has a weight.
    pub max_error_pp: Option<f64>,
}

fn group_name(job: &Job) -> String {
    match &job.cgroup {
        Some(c) => c.clone(),
        None => format!("group {}", job.groupid),
    }
}

/// The run's groups, in the order their first job appears.
pub fn groups(run: &Run) -> Vec<Group> {
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut out: Vec<(Group, bool)> = Vec::new(); // (group, weights agree so far)
    for job in &run.jobs {
        let name = group_name(job);
        let i = *index.entry(name.clone()).or_insert_with(|| {
            out.push((
                Group {
                    name,
                    jobs: 0,
                    ios: 0,
                    bw_bytes: 0,
                    weight: job.weight,
                    p99_ns: None,
                    p999_ns: None,
                },
                true,
            ));
            out.len() - 1
        });
        let (g, agree) = &mut out[i];
        g.jobs += 1;
        *agree &= g.weight == job.weight;
        for d in &job.dirs {
            g.ios = g.ios.saturating_add(d.ios);
            g.bw_bytes = g.bw_bytes.saturating_add(d.bw_bytes);
            g.p99_ns = g.p99_ns.max(d.clat.percentile(99.0));
            g.p999_ns = g.p999_ns.max(d.clat.percentile(99.9));
        }
    }
    out.into_iter()
        .map(|(mut g, agree)| {
            if !agree {
                g.weight = None;
            }
            g
        })
        .collect()
}

/// Jain's fairness index of `xs`: 1 for equal values, 1/n when one has everything. `None`
/// for fewer than two values, or when all are zero.
pub fn jain(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let sum: f64 = xs.iter().sum();
    let squares: f64 = xs.iter().map(|x| x * x).sum();
    if squares <= 0.0 {
        return None;
    }
    Some(sum * sum / (xs.len() as f64 * squares))
}

fn fraction(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 / total as f64
    }
}

pub fn fairness(run: &Run) -> Fairness {
    let groups = groups(run);
    let total_ios: u64 = groups.iter().map(|g| g.ios).fold(0, u64::saturating_add);
    let total_bw: u64 = groups.iter().map(|g| g.bw_bytes).fold(0, u64::saturating_add);
    let weights: Option<Vec<u64>> = groups.iter().map(|g| g.weight.filter(|w| *w > 0)).collect();
    let total_weight: u64 = weights.iter().flatten().sum();
    let throughput: Vec<f64> = groups.iter().map(|g| g.bw_bytes as f64).collect();
    let jain_all = jain(&throughput);
    let weighted_jain = weights.as_ref().and_then(|w| {
        let per_weight: Vec<f64> = throughput.iter().zip(w).map(|(x, w)| x / *w as f64).collect();
        jain(&per_weight)
    });
    let shares: Vec<Share> = groups
        .into_iter()
        .enumerate()
        .map(|(i, group)| {
            let io_share = fraction(group.ios, total_ios);
            let weight_share = weights.as_ref().map(|w| fraction(w[i], total_weight));
            Share {
                io_share,
                bw_share: fraction(group.bw_bytes, total_bw),
                weight_share,
                error_pp: weight_share.map(|w| (io_share - w) * 100.0),
                group,
            }
        })
        .collect();
    let max_error_pp = if weights.is_some() && shares.len() > 1 && total_ios > 0 {
        shares.iter().filter_map(|s| s.error_pp).map(f64::abs).reduce(f64::max)
    } else {
        None
    };
    Fairness {
        shares,
        jain: jain_all,
        weighted_jain: if total_ios > 0 { weighted_jain } else { None },
        max_error_pp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::tests::{fio_json, TestJob};
    use crate::input::{parse, Content};

    fn run(jobs: &[TestJob]) -> Run {
        let Content::Runs(mut runs) = parse("t.json", &fio_json(jobs)).unwrap().content else {
            panic!("not runs")
        };
        runs.remove(0)
    }

    #[test]
    fn jain_of_equal_shares_is_one() {
        for n in 2..10 {
            let j = jain(&vec![3.5; n]).unwrap();
            assert!((j - 1.0).abs() < 1e-12, "n={n}: {j}");
        }
    }

    #[test]
    fn jain_of_one_taking_all_is_one_over_n() {
        for n in 2..10 {
            let mut xs = vec![0.0; n];
            xs[n / 2] = 1234.0;
            let j = jain(&xs).unwrap();
            assert!((j - 1.0 / n as f64).abs() < 1e-12, "n={n}: {j}");
        }
    }

    #[test]
    fn jain_needs_two_values_and_some_throughput() {
        assert_eq!(jain(&[5.0]), None);
        assert_eq!(jain(&[0.0, 0.0]), None);
        let j = jain(&[2.0, 1.0]).unwrap(); // 9 / (2 · 5)
        assert!((j - 0.9).abs() < 1e-12);
    }

    #[test]
    fn jobs_group_by_cgroup_else_reporting_group() {
        let r = run(&[
            ("a", 0, Some("fast"), Some(200), 10),
            ("a", 0, Some("fast"), Some(200), 10),
            ("b", 1, None, None, 5),
            ("c", 1, None, None, 5),
        ]);
        let g = groups(&r);
        assert_eq!(g.len(), 2);
        assert_eq!((g[0].name.as_str(), g[0].jobs, g[0].ios), ("fast", 2, 20));
        assert_eq!((g[1].name.as_str(), g[1].jobs, g[1].ios), ("group 1", 2, 10));
        assert_eq!(g[0].weight, Some(200));
        assert_eq!(g[1].weight, None);
        assert_eq!(g[0].p99_ns, Some(50000));
        assert_eq!(g[0].p999_ns, Some(80000));
        let f = fairness(&r);
        assert_eq!(f.weighted_jain, None);
        assert_eq!(f.max_error_pp, None);
        assert!((f.shares[0].io_share - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn weight_error_is_io_share_minus_weight_share_in_points() {
        // Weights 200:100 ask for 66.7 % : 33.3 %; the I/Os went 60 : 40.
        let r = run(&[("a", 0, Some("hi"), Some(200), 60), ("b", 1, Some("lo"), Some(100), 40)]);
        let f = fairness(&r);
        let e0 = f.shares[0].error_pp.unwrap();
        let e1 = f.shares[1].error_pp.unwrap();
        assert!((e0 - (60.0 - 200.0 / 3.0)).abs() < 1e-9, "{e0}");
        assert!((e1 - (40.0 - 100.0 / 3.0)).abs() < 1e-9, "{e1}");
        assert!((f.max_error_pp.unwrap() - e0.abs()).abs() < 1e-12);
        // Throughput per weight: 60/200 and 40/100 → 0.3, 0.4 → 0.49 / (2 · 0.25) = 0.98.
        assert!((f.weighted_jain.unwrap() - 0.98).abs() < 1e-9);
    }

    #[test]
    fn disagreeing_weights_in_one_group_are_unknown() {
        let r = run(&[("a", 0, Some("g"), Some(200), 1), ("b", 0, Some("g"), Some(100), 1)]);
        assert_eq!(groups(&r)[0].weight, None);
    }
}
