//! Each process's throughput over simulated time, for `elevator report`'s bandwidth and IOPS
//! charts (`elevator.timeline` in the JSON): I/Os and bytes completed per bin and direction.
//! Bins start [`FIRST_BIN_NS`] wide and double (neighbours merged) whenever the run outgrows
//! [`MAX_TIMELINE_BINS`], so a process keeps at most that many however long it runs.

use elevator_core::Nanos;

/// The first bins' width: 100 ms.
pub const FIRST_BIN_NS: Nanos = 100_000_000;
/// Most bins a timeline holds; past it the bins double in width.
pub const MAX_TIMELINE_BINS: usize = 200;

/// I/Os (`[0..3]`, read/write/trim) and bytes (`[3..6]`) completed in one bin.
pub type Bin = [u64; 6];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeline {
    bin_ns: Nanos,
    bins: Vec<Bin>,
}

impl Default for Timeline {
    fn default() -> Timeline {
        Timeline { bin_ns: FIRST_BIN_NS, bins: Vec::new() }
    }
}

impl Timeline {
    pub fn bin_ns(&self) -> Nanos {
        self.bin_ns
    }

    pub fn bins(&self) -> &[Bin] {
        &self.bins
    }

    /// Doubles the bins' width until `bin_ns` is reached (a power-of-two multiple of the
    /// current width).
    pub fn coarsen_to(&mut self, bin_ns: Nanos) {
        while self.bin_ns < bin_ns {
            self.bin_ns *= 2;
            self.bins = self
                .bins
                .chunks(2)
                .map(|pair| {
                    let mut b = pair[0];
                    if let Some(c) = pair.get(1) {
                        for (x, y) in b.iter_mut().zip(c) {
                            *x += y;
                        }
                    }
                    b
                })
                .collect();
        }
    }

    /// The index of the bin holding `t_ns`, the bins coarsened and grown to hold it.
    fn bin_of(&mut self, t_ns: Nanos) -> usize {
        while t_ns / self.bin_ns >= MAX_TIMELINE_BINS as u64 {
            self.coarsen_to(self.bin_ns * 2);
        }
        let i = (t_ns / self.bin_ns) as usize;
        if self.bins.len() <= i {
            self.bins.resize(i + 1, [0; 6]);
        }
        i
    }

    /// One I/O of `bytes` in direction `dir` completed at `t_ns`.
    pub fn record(&mut self, dir: usize, bytes: u64, t_ns: Nanos) {
        let i = self.bin_of(t_ns);
        self.bins[i][dir] += 1;
        self.bins[i][3 + dir] += bytes;
    }

    /// `n` I/Os of `bytes` each that completed one after another, at `first_ns + k × each_ns`
    /// for k = 1..=n, each counted in its own bin.
    pub fn record_run(&mut self, dir: usize, bytes: u64, n: u64, first_ns: Nanos, each_ns: Nanos) {
        if n == 0 {
            return;
        }
        let each_ns = each_ns.max(1);
        let last_ns = first_ns + n * each_ns;
        self.bin_of(last_ns);
        // Completions strictly before `t`.
        let before =
            |t: Nanos| if t <= first_ns { 0 } else { ((t - first_ns - 1) / each_ns).min(n) };
        let bin_ns = self.bin_ns;
        for i in ((first_ns + each_ns) / bin_ns) as usize..=(last_ns / bin_ns) as usize {
            let start = i as u64 * bin_ns;
            let k = before(start + bin_ns) - before(start);
            self.bins[i][dir] += k;
            self.bins[i][3 + dir] += k * bytes;
        }
    }

    /// Adds `other`'s counts (both brought to the wider of the two bin widths).
    pub fn add(&mut self, other: &Timeline) {
        let mut other = other.clone();
        let wide = self.bin_ns.max(other.bin_ns);
        self.coarsen_to(wide);
        other.coarsen_to(wide);
        if self.bins.len() < other.bins.len() {
            self.bins.resize(other.bins.len(), [0; 6]);
        }
        for (a, b) in self.bins.iter_mut().zip(&other.bins) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_double_past_the_limit_and_keep_every_io() {
        let mut t = Timeline::default();
        for k in 0..1_000u64 {
            t.record(0, 4096, k * 50_000_000); // 20 a second for 50 s
        }
        assert!(t.bins().len() <= MAX_TIMELINE_BINS);
        assert_eq!(t.bin_ns(), 4 * FIRST_BIN_NS, "50 s in 200 bins of 400 ms");
        assert_eq!(t.bins().iter().map(|b| b[0]).sum::<u64>(), 1_000);
        assert_eq!(t.bins().iter().map(|b| b[3]).sum::<u64>(), 4_096_000);
        assert!(t.bins()[..t.bins().len() - 1].iter().all(|b| b[0] == 8), "{:?}", t.bins());
    }

    #[test]
    fn a_run_of_calls_lands_in_the_bins_its_completions_fall_in() {
        let mut run = Timeline::default();
        run.record_run(1, 512, 1_000, 30_000_000, 1_000_000);
        let mut one = Timeline::default();
        for k in 1..=1_000u64 {
            one.record(1, 512, 30_000_000 + k * 1_000_000);
        }
        assert_eq!(run, one);
    }

    #[test]
    fn adding_timelines_of_different_widths() {
        let mut a = Timeline::default();
        a.record(0, 1, 0);
        let mut b = Timeline::default();
        b.record(0, 1, 100 * 1_000_000_000);
        a.add(&b);
        assert_eq!(a.bin_ns(), b.bin_ns());
        assert_eq!(a.bins().iter().map(|x| x[0]).sum::<u64>(), 2);
    }
}
