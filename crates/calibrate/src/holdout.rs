//! The model's error: a held-out workload — sizes, depths and localities none of the probes
//! used, drawn from its own random stream — runs on the target and, request for request, on
//! the fitted model; per cell, the IOPS and bandwidth error and DiskSim's rms demerit between
//! the two access-time (submission to completion) CDFs, with DiskSim 4.0's access-time
//! buckets (`elevator_disksim::rms`).

use elevator_core::{Nanos, RandomStream};
use elevator_disksim::{cdf_points, histogram, rms_demerit_ms, Buckets};

use crate::backend::{quantile, Backend, Outcome, SimBackend};
use crate::fit::Model;
use crate::workload::{self, Dir, Phase};

/// CDF points: (access time in ms, cumulative fraction).
pub type Cdf = Vec<(f64, f64)>;

/// Makes a cell's request list from its random stream and a request count.
type MakeIos = Box<dyn FnMut(&mut RandomStream, usize) -> Vec<workload::Io>>;

/// One held-out cell's comparison.
#[derive(Clone, Debug)]
pub struct Cell {
    pub name: String,
    pub depth: u32,
    pub real: Outcome,
    pub sim: Outcome,
    pub demerit_ms: f64,
}

impl Cell {
    pub fn iops_error(&self) -> f64 {
        self.sim.iops() / self.real.iops() - 1.0
    }

    pub fn bw_error(&self) -> f64 {
        self.sim.bytes_per_sec() / self.real.bytes_per_sec() - 1.0
    }

    /// Access times in ms of both sides.
    pub fn ms(o: &Outcome) -> Vec<f64> {
        o.lat_ns.iter().map(|&n| n as f64 / 1e6).collect()
    }

    /// The CDF points both sides' demerit is computed from (ms, cumulative).
    pub fn cdfs(&self) -> (Cdf, Cdf) {
        let b = Buckets::access_time_default();
        let f = |o: &Outcome| cdf_points(&histogram(&Cell::ms(o), &b), &b);
        (f(&self.real), f(&self.sim))
    }

    /// Median and 99th percentile, µs, of one side.
    pub fn p50_p99_us(o: &Outcome) -> (f64, f64) {
        let s = o.sorted_us();
        (quantile(&s, 0.5), quantile(&s, 0.99))
    }
}

/// The held-out cells: none of the probes' (size, depth, locality) combinations.
pub fn plan(capacity: u64, total_ns: Nanos, write: bool, seed: u64) -> Vec<Phase> {
    let mut rng = RandomStream::new(seed, 1000);
    let cap = capacity / workload::ALIGN_BYTES * workload::ALIGN_BYTES;
    let mut cells: Vec<(String, u32, MakeIos)> = vec![
        (
            "rand-8k-qd1".into(),
            1,
            Box::new(move |r, n| workload::random(r, Dir::Read, 0, cap, 8192, n)),
        ),
        (
            "rand-4k-qd4".into(),
            4,
            Box::new(move |r, n| workload::random(r, Dir::Read, 0, cap, 4096, n)),
        ),
        (
            "rand-32k-qd16".into(),
            16,
            Box::new(move |r, n| workload::random(r, Dir::Read, 0, cap, 32768, n)),
        ),
        (
            "local-4k-qd2".into(),
            2,
            Box::new(move |r, n| {
                let w = (64u64 << 20).min(cap);
                let s = workload::random_offset(r, 0, cap, w);
                workload::random(r, Dir::Read, s, w, 4096, n)
            }),
        ),
        (
            "seq-128k-qd2".into(),
            2,
            Box::new(move |r, n| {
                let s = workload::random_offset(r, 0, cap / 2, 4096);
                workload::sequential(Dir::Read, s, cap - s, 128 << 10, n)
            }),
        ),
        (
            "mixed-qd8".into(),
            8,
            Box::new(move |r, n| workload::mixed(r, 0, cap, &[4096, 16384, 65536, 262144], 1.0, n)),
        ),
    ];
    if write {
        cells.push((
            "randwrite-4k-qd4".into(),
            4,
            Box::new(move |r, n| workload::random(r, Dir::Write, 0, cap, 4096, n)),
        ));
        cells.push((
            "mixed-rw-qd8".into(),
            8,
            Box::new(move |r, n| workload::mixed(r, 0, cap, &[4096, 16384, 65536], 0.7, n)),
        ));
    }
    let per = total_ns / cells.len() as Nanos;
    cells
        .into_iter()
        .map(|(name, depth, mut make)| {
            let count = ((per / 1000) as usize).clamp(16, workload::MAX_PHASE_IOS);
            Phase::new(name, depth, make(&mut rng, count), per)
        })
        .collect()
}

/// Runs every cell on the target, then the completed prefix of each on a fresh model
/// (cells in the same order, so the model's state carries from cell to cell as the
/// device's does).
pub fn run(
    real: &mut dyn Backend,
    model: &Model,
    max_sectors_kb: u32,
    cells: Vec<Phase>,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<Vec<Cell>, String> {
    let total = cells.len();
    let mut done = Vec::with_capacity(total);
    for (i, phase) in cells.into_iter().enumerate() {
        progress(i, total, &phase.name);
        let outcome = real.run(&phase)?;
        done.push((phase.prefix(outcome.issued()), outcome));
    }
    progress(total, total, "simulating");
    let mut sim = SimBackend::new(model.build()?, max_sectors_kb);
    let buckets = Buckets::access_time_default();
    done.into_iter()
        .map(|(phase, real)| {
            let s = sim.run(&phase)?;
            let demerit_ms = rms_demerit_ms(&Cell::ms(&real), &Cell::ms(&s), &buckets);
            Ok(Cell { name: phase.name.clone(), depth: phase.depth, real, sim: s, demerit_ms })
        })
        .collect()
}
