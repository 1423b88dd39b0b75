//! A calibration's measurements, kept: `--record FILE` writes what the device answered to
//! every phase, `--replay FILE` runs the same calibration again from the file, with no
//! device, through the same [`Backend`] seam. A fit can then be re-run, compared or changed
//! on the very numbers a device once gave — its drift between runs out of the way — and a
//! user can send a device's measurements along with a bug report.
//!
//! The file is JSON: the options and hints the run had, then each phase's name, depth and
//! [`Outcome`] in the order the calibration ran them. Replaying asks for the phases in the
//! same order (the plan follows from the capacity, budget, writes and seed stored with
//! them), so a recording made by an elevator with other probes is refused, naming the first
//! phase that differs.

use std::path::Path;

use elevator_core::Nanos;
use serde::{Deserialize, Serialize};

use crate::backend::{Backend, Hints, Outcome};
use crate::probe::{MAX_BUDGET_NS, MIN_BUDGET_NS};
use crate::target::{MAX_TARGET_BYTES, MIN_TARGET_BYTES};
use crate::workload::{Phase, MAX_DEPTH, MAX_PHASE_IOS};
use crate::{Options, Report};

/// The format written; a file of another version is refused.
pub const RECORDING_VERSION: u32 = 1;
/// The largest recording read (a day's budget of 4 KiB probes is far below it).
pub const MAX_RECORDING_BYTES: u64 = 1 << 30;
/// Phases in one recording (a calibration runs a few dozen).
pub const MAX_RECORDED_PHASES: usize = 10_000;
/// The longest latency a recording may hold (an hour; the budget is at most a day).
pub const MAX_RECORDED_LATENCY_NS: Nanos = 3600 * elevator_core::NS_PER_SEC;

/// What one calibration measured, and with which options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    pub version: u32,
    /// What was calibrated (a path), for the topology's header.
    pub source: String,
    /// The device's name in the topology.
    pub name: String,
    pub budget_ns: Nanos,
    pub write: bool,
    pub seed: u64,
    pub capacity_bytes: u64,
    pub hints: Hints,
    /// What the run warned about the target (O_DIRECT, caches below it).
    pub warnings: Vec<String>,
    pub phases: Vec<RecordedPhase>,
}

/// One phase as the device ran it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedPhase {
    pub name: String,
    pub depth: u32,
    pub outcome: Outcome,
}

/// Runs phases on another backend and keeps what they measured.
pub struct Recorder<'a> {
    inner: &'a mut dyn Backend,
    pub phases: Vec<RecordedPhase>,
}

impl<'a> Recorder<'a> {
    pub fn new(inner: &'a mut dyn Backend) -> Recorder<'a> {
        Recorder { inner, phases: Vec::new() }
    }
}

impl Backend for Recorder<'_> {
    fn capacity_bytes(&self) -> u64 {
        self.inner.capacity_bytes()
    }

    fn hints(&self) -> Hints {
        self.inner.hints()
    }

    fn run(&mut self, phase: &Phase) -> Result<Outcome, String> {
        let outcome = self.inner.run(phase)?;
        self.phases.push(RecordedPhase {
            name: phase.name.clone(),
            depth: phase.depth,
            outcome: outcome.clone(),
        });
        Ok(outcome)
    }
}

/// Answers each phase with what the recording says the device answered.
pub struct ReplayBackend {
    rec: Recording,
    next: usize,
    /// The file, for errors.
    path: String,
}

impl ReplayBackend {
    pub fn new(rec: Recording, path: &Path) -> ReplayBackend {
        ReplayBackend { rec, next: 0, path: path.display().to_string() }
    }

    /// Phases recorded but never asked for (a replay should use them all).
    pub fn unused_phases(&self) -> usize {
        self.rec.phases.len() - self.next
    }
}

impl Backend for ReplayBackend {
    fn capacity_bytes(&self) -> u64 {
        self.rec.capacity_bytes
    }

    fn hints(&self) -> Hints {
        self.rec.hints.clone()
    }

    fn run(&mut self, phase: &Phase) -> Result<Outcome, String> {
        let i = self.next;
        let Some(p) = self.rec.phases.get(i) else {
            return Err(format!(
                "{}: the recording ends before phase {i} (`{}`): it was made by an elevator with other probes",
                self.path, phase.name
            ));
        };
        if p.name != phase.name || p.depth != phase.depth {
            return Err(format!(
                "{}: phase {i} is `{}` at depth {} in the recording, `{}` at depth {} here: it was made by an elevator with other probes",
                self.path, p.name, p.depth, phase.name, phase.depth
            ));
        }
        if p.outcome.lat_ns.len() > phase.ios.len() {
            return Err(format!(
                "{}: phase {i} (`{}`) holds {} latencies for {} requests",
                self.path,
                p.name,
                p.outcome.lat_ns.len(),
                phase.ios.len()
            ));
        }
        self.next += 1;
        Ok(p.outcome.clone())
    }
}

impl Recording {
    /// What a calibration run with `opts` measured (`report`, the phases a [`Recorder`]
    /// kept) and warned about.
    pub fn new(
        opts: &Options,
        report: &Report,
        warnings: Vec<String>,
        phases: Vec<RecordedPhase>,
    ) -> Recording {
        Recording {
            version: RECORDING_VERSION,
            source: opts.source.clone(),
            name: opts.name.clone(),
            budget_ns: opts.budget_ns,
            write: opts.write,
            seed: opts.seed,
            capacity_bytes: report.capacity_bytes,
            hints: report.hints.clone(),
            warnings,
            phases,
        }
    }

    /// The options the recorded run had (its device name replaced by `name`, if given), which
    /// make a calibration ask for the recorded phases again.
    pub fn options(&self, name: Option<&str>) -> Options {
        Options {
            budget_ns: self.budget_ns,
            write: self.write,
            seed: self.seed,
            name: name.unwrap_or(&self.name).to_string(),
            source: self.source.clone(),
        }
    }

    /// Writes the recording as JSON.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string(self).map_err(|e| format!("{}: {e}", path.display()))?;
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Reads a recording, checking every count, size and time against its limit.
    pub fn load(path: &Path) -> Result<Recording, String> {
        let at = path.display();
        let len = std::fs::metadata(path).map_err(|e| format!("{at}: {e}"))?.len();
        if len > MAX_RECORDING_BYTES {
            return Err(format!(
                "{at}: {len} bytes, more than a recording may hold ({MAX_RECORDING_BYTES})"
            ));
        }
        let text = std::fs::read_to_string(path).map_err(|e| format!("{at}: {e}"))?;
        let rec: Recording = serde_json::from_str(&text)
            .map_err(|e| format!("{at}:{}:{}: {e}", e.line(), e.column()))?;
        rec.check().map_err(|e| format!("{at}: {e}"))?;
        Ok(rec)
    }

    fn check(&self) -> Result<(), String> {
        if self.version != RECORDING_VERSION {
            return Err(format!(
                "version {}: this elevator reads recordings of version {RECORDING_VERSION}",
                self.version
            ));
        }
        if !(MIN_BUDGET_NS..=MAX_BUDGET_NS).contains(&self.budget_ns) {
            return Err(format!("budget_ns {} lies outside 1 s to 24 h", self.budget_ns));
        }
        if !(MIN_TARGET_BYTES..=MAX_TARGET_BYTES).contains(&self.capacity_bytes) {
            return Err(format!(
                "capacity_bytes {} lies outside {MIN_TARGET_BYTES} to {MAX_TARGET_BYTES} (what calibrate measures)",
                self.capacity_bytes
            ));
        }
        if self.phases.len() > MAX_RECORDED_PHASES {
            return Err(format!("{} phases, more than {MAX_RECORDED_PHASES}", self.phases.len()));
        }
        for (i, p) in self.phases.iter().enumerate() {
            let o = &p.outcome;
            if p.depth == 0 || p.depth > MAX_DEPTH {
                return Err(format!(
                    "phase {i} (`{}`): depth {} outside 1 to {MAX_DEPTH}",
                    p.name, p.depth
                ));
            }
            if o.lat_ns.len() > MAX_PHASE_IOS {
                return Err(format!(
                    "phase {i} (`{}`): more than {MAX_PHASE_IOS} latencies",
                    p.name
                ));
            }
            if let Some(bad) = o.lat_ns.iter().find(|&&l| l > MAX_RECORDED_LATENCY_NS) {
                return Err(format!(
                    "phase {i} (`{}`): a latency of {bad} ns, more than an hour",
                    p.name
                ));
            }
            if o.elapsed_ns > MAX_BUDGET_NS {
                return Err(format!(
                    "phase {i} (`{}`): elapsed_ns {} beyond a day",
                    p.name, o.elapsed_ns
                ));
            }
        }
        Ok(())
    }
}
