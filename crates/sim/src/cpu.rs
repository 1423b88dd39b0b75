//! The machine's CPUs, as the jobs that spin on them see them (fio's `thinktime_spin`, and
//! the cpuio engine's burns).
//!
//! A job that thinks with `thinktime_spin` first needs that much CPU time, then sleeps the
//! rest of its `thinktime`. Spinning jobs share the machine's `cpus` by processor sharing:
//! with `n` of them on `c` CPUs each runs at `min(1, c / n)` of a CPU — the fluid limit of
//! a time-sharing scheduler's round robin (2.5's O(1) scheduler and CFS alike give CPU-bound
//! tasks of equal nice equal shares). Kept in virtual time, as fair queueing does: the
//! virtual clock advances by one per CPU-nanosecond a spinner receives, and a spin ends when
//! the clock passes its finish tag.
//!
//! Deviations: only spinning is charged to the CPUs. The CPU time of buffered system calls
//! (`[machine] syscall` and `copy_rate`) delays the call that spends it but does not take
//! the CPU from others, and the kernel's own work (interrupts, writeback, reclaim) costs
//! nothing; priorities, interactivity bonuses and timeslice granularity are not modelled.

use elevator_core::Nanos;

/// Virtual-clock units per CPU-nanosecond (fixed point, so shares of a nanosecond are not
/// lost when many jobs share few CPUs).
const UNITS_PER_NS: u128 = 1 << 16;

/// One job's spin in progress.
#[derive(Clone, Copy, Debug)]
struct Spin {
    proc: u32,
    /// When it started, wall time.
    start_ns: Nanos,
    /// The virtual time at which it started, and at which it has had all its CPU time.
    start: u128,
    finish: u128,
    /// How long it sleeps once the spin is over (the rest of its `thinktime`).
    sleep_ns: Nanos,
}

/// The CPUs and the spins on them.
#[derive(Debug)]
pub struct Cpus {
    cpus: u64,
    /// Virtual time at `updated_ns`.
    virtual_now: u128,
    updated_ns: Nanos,
    spins: Vec<Spin>,
}

/// A spin that is over: it started at `start_ns`, its job had `cpu_ns` of CPU time, sleeps
/// `sleep_ns` and goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpinDone {
    pub proc: u32,
    pub start_ns: Nanos,
    pub cpu_ns: Nanos,
    pub sleep_ns: Nanos,
}

impl Cpus {
    /// `cpus` CPUs (at least one), idle.
    pub fn new(cpus: u64) -> Cpus {
        Cpus { cpus: cpus.max(1), virtual_now: 0, updated_ns: 0, spins: Vec::new() }
    }

    /// Job `proc` starts spinning for `spin_ns` of CPU time at `now_ns`, then sleeps
    /// `sleep_ns`.
    pub fn spin(&mut self, proc: u32, spin_ns: Nanos, sleep_ns: Nanos, now_ns: Nanos) {
        self.advance(now_ns);
        let start = self.virtual_now;
        let finish = start + u128::from(spin_ns) * UNITS_PER_NS;
        self.spins.push(Spin { proc, start_ns: now_ns, start, finish, sleep_ns });
    }

    /// How many jobs are spinning.
    pub fn spinning(&self) -> usize {
        self.spins.len()
    }

    /// When the next spin ends, if any spins.
    pub fn next_done_ns(&self) -> Option<Nanos> {
        let first = self.spins.iter().map(|s| s.finish).min()?;
        let left = first.saturating_sub(self.virtual_now);
        let (num, den) = self.rate();
        // Each wall nanosecond adds `UNITS_PER_NS × num / den` virtual units.
        let ns = (left * den).div_ceil(num * UNITS_PER_NS);
        Some(self.updated_ns.saturating_add(ns.min(u128::from(Nanos::MAX)) as Nanos))
    }

    /// Brings the clocks to `now_ns` and returns the spins that are over, in the order they
    /// started.
    pub fn take_done(&mut self, now_ns: Nanos, done: &mut Vec<SpinDone>) {
        self.advance(now_ns);
        let v = self.virtual_now;
        self.spins.retain(|s| {
            if s.finish <= v {
                let cpu_ns = ((s.finish - s.start) / UNITS_PER_NS) as Nanos;
                done.push(SpinDone {
                    proc: s.proc,
                    start_ns: s.start_ns,
                    cpu_ns,
                    sleep_ns: s.sleep_ns,
                });
                false
            } else {
                true
            }
        });
    }

    /// Job `proc` ended (its runtime ran out, or `exitall`): its spin, if any, leaves the
    /// CPUs at `now_ns` and gives its share to the others. Returns the CPU time it had of
    /// that spin.
    pub fn cancel(&mut self, proc: u32, now_ns: Nanos) -> Nanos {
        let Some(i) = self.spins.iter().position(|s| s.proc == proc) else { return 0 };
        self.advance(now_ns);
        let s = self.spins.remove(i);
        ((self.virtual_now.min(s.finish) - s.start) / UNITS_PER_NS) as Nanos
    }

    /// Each spinner's share of a CPU as a fraction `num / den`.
    fn rate(&self) -> (u128, u128) {
        let n = self.spins.len() as u128;
        let c = u128::from(self.cpus);
        if n <= c {
            (1, 1)
        } else {
            (c, n)
        }
    }

    fn advance(&mut self, now_ns: Nanos) {
        debug_assert!(now_ns >= self.updated_ns);
        let elapsed = u128::from(now_ns.saturating_sub(self.updated_ns));
        let (num, den) = self.rate();
        self.virtual_now += elapsed * UNITS_PER_NS * num / den;
        self.updated_ns = now_ns;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn run(cpus: &mut Cpus) -> Vec<(Nanos, u32)> {
        let mut out = Vec::new();
        let mut done = Vec::new();
        while let Some(t) = cpus.next_done_ns() {
            cpus.take_done(t, &mut done);
            assert!(!done.is_empty(), "woken at {t} for nothing");
            out.extend(done.drain(..).map(|d| (t, d.proc)));
        }
        out
    }

    #[test]
    fn a_lone_spin_takes_its_own_time() {
        let mut c = Cpus::new(1);
        c.spin(7, 10 * MS, 5 * MS, 0);
        let mut done = Vec::new();
        assert_eq!(c.next_done_ns(), Some(10 * MS));
        c.take_done(10 * MS, &mut done);
        assert_eq!(
            done,
            vec![SpinDone { proc: 7, start_ns: 0, cpu_ns: 10 * MS, sleep_ns: 5 * MS }]
        );
        assert_eq!(c.spinning(), 0);
    }

    #[test]
    fn spinners_beyond_the_cpus_share_them() {
        // Four 10 ms spins on one CPU: all end together at 40 ms.
        let mut c = Cpus::new(1);
        for p in 0..4 {
            c.spin(p, 10 * MS, 0, 0);
        }
        assert_eq!(run(&mut c), vec![(40 * MS, 0), (40 * MS, 1), (40 * MS, 2), (40 * MS, 3)]);
        // On two CPUs: at 20 ms.
        let mut c = Cpus::new(2);
        for p in 0..4 {
            c.spin(p, 10 * MS, 0, 0);
        }
        assert!(run(&mut c).iter().all(|&(t, _)| t == 20 * MS));
        // Fewer spinners than CPUs: each at full speed.
        let mut c = Cpus::new(4);
        c.spin(0, 10 * MS, 0, 0);
        c.spin(1, 30 * MS, 0, 0);
        assert_eq!(run(&mut c), vec![(10 * MS, 0), (30 * MS, 1)]);
    }

    proptest::proptest! {
        /// Spins arriving at random times on 1-4 CPUs: each ends exactly once, with exactly
        /// the CPU time it asked for, never sooner than its own length after it started; the
        /// last ends no sooner than the total work spread over all the CPUs after the first
        /// arrival, and no later than the total work after the last arrival.
        #[test]
        fn spins_end_once_and_work_is_conserved(
            cpus in 1u64..=4,
            spins in proptest::collection::vec((0u64..50, 1u64..40), 1..30),
        ) {
            let mut c = Cpus::new(cpus);
            let mut arrivals: Vec<(Nanos, Nanos, u32)> = spins
                .iter()
                .enumerate()
                .map(|(i, &(at, len))| (at * MS, len * MS, i as u32))
                .collect();
            arrivals.sort();
            let mut ended = vec![None; arrivals.len()];
            let mut next = 0;
            let mut done = Vec::new();
            loop {
                let t_spin = c.next_done_ns();
                let t_arrive = arrivals.get(next).map(|a| a.0);
                let t = match (t_spin, t_arrive) {
                    (None, None) => break,
                    (Some(a), Some(b)) => a.min(b),
                    (Some(a), None) | (None, Some(a)) => a,
                };
                c.take_done(t, &mut done);
                for d in done.drain(..) {
                    proptest::prop_assert!(ended[d.proc as usize].is_none(), "ended twice");
                    let asked = arrivals.iter().find(|a| a.2 == d.proc).unwrap().1;
                    proptest::prop_assert_eq!(d.cpu_ns, asked, "the spin had its CPU time");
                    ended[d.proc as usize] = Some(t);
                }
                while next < arrivals.len() && arrivals[next].0 == t {
                    let (at, len, p) = arrivals[next];
                    c.spin(p, len, 0, at);
                    next += 1;
                }
            }
            let total: Nanos = arrivals.iter().map(|a| a.1).sum();
            let last = ended.iter().map(|e| e.expect("every spin ends")).max().unwrap();
            for &(at, len, p) in &arrivals {
                proptest::prop_assert!(ended[p as usize].unwrap() + 1 >= at + len);
            }
            let first = arrivals[0].0;
            proptest::prop_assert!(last + 1 >= first + total / cpus);
            // Busy from the first arrival, the CPUs finish within the total work after the
            // latest arrival at the worst.
            proptest::prop_assert!(last <= arrivals.last().unwrap().0 + total + 1);
        }
    }

    #[test]
    fn a_cancelled_spin_gives_its_share_back() {
        // Two 20 ms spins on one CPU; at 10 ms (5 ms each done) one job ends: the other has
        // 15 ms left alone and ends at 25 ms.
        let mut c = Cpus::new(1);
        c.spin(0, 20 * MS, 0, 0);
        c.spin(1, 20 * MS, 0, 0);
        assert_eq!(c.cancel(1, 10 * MS), 5 * MS);
        assert_eq!(c.cancel(1, 10 * MS), 0, "nothing left to cancel");
        assert_eq!(run(&mut c), vec![(25 * MS, 0)]);
    }

    #[test]
    fn a_late_spin_slows_the_running_one_only_while_both_run() {
        // 0..10 ms alone (10 ms done of 30), then with another 10 ms spin: both at half
        // speed; the short one ends at 30 ms, the long one has 30 - 10 - 10 = 10 ms left,
        // alone again: ends at 40 ms. CPU work is conserved: 40 ms of work in 40 ms.
        let mut c = Cpus::new(1);
        c.spin(0, 30 * MS, 0, 0);
        let mut done = Vec::new();
        c.take_done(10 * MS, &mut done);
        c.spin(1, 10 * MS, 0, 10 * MS);
        assert_eq!(run(&mut c), vec![(30 * MS, 1), (40 * MS, 0)]);
    }
}
