//! The event loop.
//!
//! Events live in one binary heap ordered by (time, sequence number); the sequence number makes
//! ties resolve in scheduling order, so a run is a pure function of its inputs and seed. Each
//! device and each process keeps at most one *armed* event of each kind: re-arming for an
//! earlier time pushes a new entry and the later one is recognised as stale when it pops.
//!
//! Random streams: stream `k` for process `k` (job clones in file order), then one per device.

mod buffered;
mod build;
mod target;

use crate::topology::DeviceModel;
use elevator_control::iocost::{
    AutopClass, IoCost, IoCostGroup, CGROUP_WEIGHT_DFL, CGROUP_WEIGHT_MAX,
};
use elevator_control::iolatency::{IoLatency, IoLatencyGroup};
use elevator_control::mclock::{Mclock, MclockGroup, MCLOCK_DEPTH_DEFAULT};
use elevator_control::throttle::{
    Throttle, ThrottleGroup, THROTL_SLICE_HD_NS, THROTL_SLICE_SSD_NS,
};
use elevator_control::wbt::Wbt;
use elevator_control::Controller;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use elevator_core::{Cgroup, Nanos, Op};
use elevator_fio::{ExitWhat, JobFile};
use elevator_mm::{Output, Vm};

use crate::block::{Bio, BlockQueue, DiskCounters};
use crate::cpu::{Cpus, SpinDone};
use crate::stack::{LeafIo, RootDone, Stack, NO_NODE, NO_TAG};
use crate::topology::{Route, Topology, VolumeKind};
use crate::workload::{Next, Process, Resume, State};

use build::build_processes;
pub use build::cgroup_table;

/// How a run is set up beyond the job file and topology.
#[derive(Clone, Default)]
pub struct SimOptions {
    pub seed: u64,
    /// Replaces every device's scheduler.
    pub scheduler: Option<String>,
    /// Tunables applied to every device's scheduler after the topology's own.
    pub iosched: Vec<(String, String)>,
    /// Set from outside (Ctrl-C) to end the run where it is: the jobs stop at the simulated
    /// time reached and the results so far are reported. Read every [`WATCH_EVENTS`] events.
    pub stop: Option<Arc<AtomicBool>>,
    /// Called every [`WATCH_EVENTS`] events with where the run is. The simulation itself
    /// never reads a clock; a caller that shows a status line may.
    pub progress: Option<Arc<ProgressFn>>,
    /// Record every device's block-layer events as blktrace records
    /// ([`DeviceResult::blktrace`]). Changes nothing else in the run.
    pub blktrace: bool,
    /// Record every scheduler decision as a JSON line ([`DeviceResult::decisions`]).
    /// Changes nothing else in the run.
    pub trace_decisions: bool,
}

/// A progress callback.
pub type ProgressFn = dyn Fn(&Progress) + Send + Sync;

/// Events between looks at [`SimOptions::stop`] and calls of [`SimOptions::progress`].
pub const WATCH_EVENTS: u64 = 1 << 14;

/// Where a run is, for a status line.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    pub now_ns: Nanos,
    /// Processes started and not finished.
    pub running: u32,
    /// Processes in all.
    pub processes: u32,
    /// Bytes read and written so far, all processes.
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// I/Os read and written so far.
    pub read_ios: u64,
    pub write_ios: u64,
    /// How far the run is, 0 to 1: each process's share of its runtime or of its bytes,
    /// averaged (finished ones count 1).
    pub done_fraction: f64,
}

impl std::fmt::Debug for SimOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimOptions")
            .field("seed", &self.seed)
            .field("scheduler", &self.scheduler)
            .field("iosched", &self.iosched)
            .field("stop", &self.stop)
            .field("progress", &self.progress.is_some())
            .field("blktrace", &self.blktrace)
            .field("trace_decisions", &self.trace_decisions)
            .finish()
    }
}

/// A setup error: the message names the job (and its file and line) and the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimError(pub String);

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SimError {}

/// The outcome of a run: every process with its statistics, every device with its counters.
pub struct SimResult {
    pub processes: Vec<Process>,
    pub devices: Vec<DeviceResult>,
    pub groups: Vec<Cgroup>,
    pub end_ns: Nanos,
    /// Number of requests completed by all devices: the simulator's unit of work.
    pub requests_completed: u64,
    /// Per-group counters of every dm-ioband device group, in topology order.
    pub ioband: Vec<elevator_control::GroupCounters>,
    /// The page cache's counters.
    pub vm: elevator_mm::vm::VmStats,
    /// The iSCSI target machine's page-cache counters, if it has one.
    pub target_vm: Option<elevator_mm::vm::VmStats>,
    /// What fitting the job file to the topology added (devices for `/dev/X` names).
    pub setup_warnings: Vec<String>,
    /// When the run started, ms since the Unix epoch, as the reports print it: 0 (1970, so
    /// that output stays deterministic) unless the caller sets the wall clock's time
    /// (`elevator run --timestamp now`). The simulation never reads a clock.
    pub started_ms: u64,
}

impl SimResult {
    /// What the run should tell its user although nothing failed: a range-bw group whose
    /// guaranteed minimum the device could not deliver, with what it got.
    pub fn warnings(&self) -> Vec<String> {
        let secs = self.end_ns as f64 / 1e9;
        let setup = self.setup_warnings.iter().cloned();
        setup.chain(self.ioband
            .iter()
            .filter_map(|c| {
                let min = c.min_unmet_kbs?;
                let got = if secs > 0.0 { c.bytes as f64 / 1e3 / secs } else { 0.0 };
                Some(format!(
                    "ioband group `{}`: its minimum of {min} KB/s was not met (it got {got:.0} KB/s over the run): the minimums of its device group add up to more than the device delivers for this workload",
                    c.name
                ))
            }))
            .collect()
    }
}

pub struct DeviceResult {
    pub name: String,
    pub description: String,
    pub scheduler: String,
    pub counters: DiskCounters,
    /// The model's own counters ([`elevator_device::Device::stats`]).
    pub stats: Vec<(&'static str, f64)>,
    /// Its block layer's events as a blktrace file, with [`SimOptions::blktrace`].
    pub blktrace: Option<crate::blktrace::BlktraceFile>,
    /// Its scheduler's decisions, with [`SimOptions::trace_decisions`].
    pub decisions: Option<crate::block::DecisionLog>,
    /// How many requests its scheduler dispatched for each reason, by reason.
    pub decision_counts: Vec<(&'static str, u64)>,
    /// The files of some job that keeps `disk_util` on are on it (directly or under a
    /// volume): the disks fio lists (`init_disk_util`, per job).
    pub holds_job_files: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    Start(u32),
    Issue(u32),
    RuntimeEnd(u32),
    Device(u32),
    Timer(u32),
    /// A group controller in the volume stack asked to be woken (range-bw credit).
    StackTimer,
    /// The page cache asked to be woken (a throttled writer's pause, a flusher's period).
    VmTimer,
    /// A buffered process's system call (made by this page-cache task) returns.
    CallDone(elevator_mm::TaskId),
    /// A page-cache task an I/O completion woke gets to run (after the completion's
    /// dispatch, as a woken process runs after the interrupt).
    VmRun(u32),
    /// A target thread's read through the target's page cache returned (for stack node).
    TargetDone(u32),
    /// The target's page cache asked to be woken.
    TargetTimer,
    /// A target task an I/O completion woke gets to run.
    TargetRun(u32),
    /// A target thread reads its command's next iovecs.
    TargetReadOn(u32),
    /// A spinning process may have had its CPU time (see [`crate::cpu`]).
    CpuDone,
    /// fio's once-a-second steady-state check (`steadystate=`).
    SteadyState,
}

struct Engine {
    now_ns: Nanos,
    seq: u64,
    heap: BinaryHeap<Reverse<(Nanos, u64, Event)>>,
    queues: Vec<BlockQueue>,
    procs: Vec<Process>,
    issue_armed: Vec<Option<Nanos>>,
    phases_left: Vec<u32>,
    current_phase: u32,
    done_bios: Vec<Bio>,
    unblocked: Vec<u32>,
    /// Processes the volume stack let go on (scratch).
    woken: Vec<u32>,
    stack: Stack,
    leaves: Vec<LeafIo>,
    roots: Vec<RootDone>,
    armed_stack_ns: Option<Nanos>,
    /// Devices that received work since they were last kicked.
    touched: Vec<bool>,
    /// The machine's page cache, and which process each of its tasks is.
    vm: Vm,
    vm_out: Output,
    /// Page-cache bios the device's group control held at submission (scratch, see
    /// [`Engine::apply_vm`]) and let go since (see [`Engine::note_page_cache_releases`]).
    page_cache_held: Vec<u32>,
    page_cache_released: Vec<u32>,
    task_proc: Vec<u32>,
    armed_vm_ns: Option<Nanos>,
    /// How many devices come before the volumes in the page cache's device numbering.
    bdi_volumes_base: u32,
    /// The iSCSI target machine's page cache, if a remote volume reads through it.
    target: Option<target::TargetCache>,
    /// The machine's CPUs, shared by the processes that spin (`thinktime_spin`).
    cpus: Cpus,
    /// When the engine wakes next for the CPUs (an earlier event for them is stale).
    armed_cpu_ns: Option<Nanos>,
    spins_done: Vec<SpinDone>,
    /// Per device, how to build a scheduler for an `ioscheduler=` switch.
    sched_setups: Vec<SchedulerSetup>,
    /// Per device, the page caches' backing devices its congestion makes congested: its own
    /// and those of the volumes stacked on it (see [`congestion_bdis`]).
    congestion_bdis: Vec<Vec<u32>>,
}

/// Runs a job file on a topology.
pub fn simulate(
    jobs: &JobFile,
    topology: &Topology,
    options: &SimOptions,
) -> Result<SimResult, SimError> {
    let (fitted_jobs, fitted, setup_warnings) =
        crate::intake::fit(jobs, topology).map_err(SimError)?;
    let (jobs, topology) = (&fitted_jobs, &fitted);
    let groups = cgroup_table(&jobs.jobs);
    let mut queues = Vec::new();
    let mut setups = Vec::new();
    let mut era_warnings = Vec::new();
    for (i, spec) in topology.devices.iter().enumerate() {
        let device = spec.model.build(options.seed, 1_000_000 + i as u32);
        let setup = SchedulerSetup {
            groups: groups.iter().skip(1).cloned().collect(),
            bfq_groups: groups
                .iter()
                .skip(1)
                .map(|g| Cgroup { weight: bfq_group_weight(topology, i, g), ..g.clone() })
                .collect(),
            rotational: device.rotational(),
            tunables: options.iosched.clone(),
            era: topology.machine.kernel_named.then_some(topology.machine.vm.kernel),
        };
        let name = options.scheduler.clone().unwrap_or_else(|| spec.scheduler.clone());
        let own = if options.scheduler.is_none() { &spec.iosched[..] } else { &[] };
        let scheduler = setup.build(&name, own).map_err(|e| match e {
            SetupError::Own(e) => SimError(format!("device `{}`: {e}", spec.name)),
            SetupError::Cli(e) => SimError(e),
        })?;
        if let Some(why) =
            setup.era.and_then(|k| crate::era::scheduler_missing(scheduler.name(), k))
        {
            era_warnings.push(format!("device `{}`: {why}", spec.name));
        }
        let rotational = setup.rotational;
        setups.push(setup);
        let qd = device.queue_depth();
        let mut queue = BlockQueue::new(scheduler, device, spec.nr_requests, spec.max_sectors_kb);
        // queue_should_plug: every queue before 2.6.28's exception for tagged flash.
        queue.set_queue_plugging(
            topology.machine.vm.kernel.queue_plugging() && (rotational || qd <= 1),
        );
        queue.set_request_lists_by_direction(!topology.machine.vm.kernel.request_lists_by_sync());
        let wc = device_write_cache(&spec.model);
        let io = DeviceIo {
            rotational,
            queue_depth: qd,
            write_cache: wc,
            scheduler: queue.scheduler.name(),
        };
        if let Some(c) = cgroup_control(topology, i, &groups, io)? {
            queue.set_control(c);
        }
        queues.push(queue);
    }
    let build::Built { mut procs, vm, task_proc, warnings: build_warnings } =
        build_processes(jobs, topology, &groups, options.seed)?;
    let mut setup_warnings = setup_warnings;
    setup_warnings.extend(era_warnings);
    setup_warnings.extend(build_warnings);
    check_ioschedulers(&mut procs, topology, &setups, options, &mut setup_warnings)?;
    if options.blktrace {
        let names = Arc::new(process_names(&procs, topology));
        for (i, q) in queues.iter_mut().enumerate() {
            let (major, minor) = crate::topology::device_number(i);
            q.set_trace(crate::blktrace::Recorder::new(major, minor, Arc::clone(&names)));
        }
    }
    if options.trace_decisions {
        for (q, spec) in queues.iter_mut().zip(&topology.devices) {
            q.set_decision_log(&spec.name);
        }
    }
    let stack = Stack::new(&topology.volumes, &topology.ioband, &groups).map_err(SimError)?;
    let phases = procs.iter().map(|p| p.phase).max().map_or(0, |m| m + 1);
    let mut phases_left = vec![0u32; phases as usize];
    for p in &procs {
        phases_left[p.phase as usize] += 1;
    }
    let mut engine = Engine {
        now_ns: 0,
        seq: 0,
        heap: BinaryHeap::new(),
        issue_armed: vec![None; procs.len()],
        queues,
        procs,
        phases_left,
        current_phase: 0,
        done_bios: Vec::new(),
        unblocked: Vec::new(),
        woken: Vec::new(),
        stack,
        leaves: Vec::new(),
        roots: Vec::new(),
        armed_stack_ns: None,
        touched: vec![false; topology.devices.len()],
        vm,
        vm_out: Output::default(),
        page_cache_held: Vec::new(),
        page_cache_released: Vec::new(),
        task_proc,
        armed_vm_ns: None,
        bdi_volumes_base: topology.devices.len() as u32,
        target: target::TargetCache::new(topology, &build::bdi_specs(topology)),
        cpus: Cpus::new(topology.machine.vm.cpus),
        armed_cpu_ns: None,
        spins_done: Vec::new(),
        sched_setups: setups,
        congestion_bdis: congestion_bdis(topology),
    };
    // The page cache's writeback draws on the request pools the block layer keeps.
    for (d, q) in engine.queues.iter().enumerate() {
        engine.vm.set_cgroup_pools(d as u32, q.scheduler.groups_active());
    }
    engine.start_phase(0);
    if engine.procs.iter().any(|p| p.ss.is_some()) {
        engine.push(STEADYSTATE_TICK_NS, Event::SteadyState);
    }
    let stopped = engine.run(options);
    let end_ns = engine.now_ns;
    if stopped {
        // Interrupted: every job ends now, with what it has done so far.
        for p in &mut engine.procs {
            if p.state != State::Done && p.state != State::Pending {
                p.finish(end_ns.max(p.ramp_end_ns));
            }
        }
    }
    let mut devices = Vec::new();
    let mut requests_completed = 0;
    let mut holds_job_files = vec![false; topology.devices.len()];
    for p in engine.procs.iter().filter(|p| jobs.jobs[p.job].disk_util) {
        topology.mark_devices_under(p.region.route, &mut holds_job_files);
    }
    for ((q, spec), holds_job_files) in
        engine.queues.iter_mut().zip(&topology.devices).zip(holds_job_files)
    {
        q.finish(end_ns);
        requests_completed += q.counters.ios.iter().sum::<u64>();
        devices.push(DeviceResult {
            name: spec.name.clone(),
            description: q.device.describe(),
            scheduler: q.scheduler.name().to_string(),
            counters: q.counters.clone(),
            stats: q.device.stats(),
            blktrace: q.take_trace().map(crate::blktrace::Recorder::finish),
            decisions: q.take_decision_log(),
            decision_counts: {
                let mut c = std::mem::take(&mut q.decision_counts);
                c.sort();
                c
            },
            holds_job_files,
        });
    }
    let ioband = engine.stack.ioband_counters();
    let vm = engine.vm.stats;
    let target_vm = engine.target.as_ref().map(|t| t.stats());
    Ok(SimResult {
        processes: engine.procs,
        devices,
        groups,
        end_ns,
        requests_completed,
        ioband,
        vm,
        target_vm,
        setup_warnings,
        started_ms: 0,
    })
}

/// fio's `STEADYSTATE_MSEC`: how often the helper thread samples the jobs.
const STEADYSTATE_TICK_NS: Nanos = 1_000_000_000;

impl Engine {
    /// Some job with `steadystate=` has not ended and not reached its steady state.
    fn steadystate_pending(&self) -> bool {
        self.procs
            .iter()
            .any(|p| p.ss.as_ref().is_some_and(|s| !s.attained) && p.state != State::Done)
    }

    /// fio's `steadystate_check`: each running job's IOPS and bandwidth since the last tick
    /// (summed over a reporting group, judged by the group's last job) go into its ring; a
    /// job (or group) whose ring meets its criterion stops as if its runtime were over.
    fn steadystate_tick(&mut self) {
        let now = self.now_ns;
        let (mut group_bw, mut group_iops, mut group_ramp_over) = (0u64, 0u64, 0u32);
        let mut prev_group = None;
        let mut attained = Vec::new();
        for (i, p) in self.procs.iter_mut().enumerate() {
            let (start_ns, group_id) = (p.start_ns, p.group_id);
            let running = matches!(p.state, State::Running | State::Draining) && now > start_ns;
            let Some(ss) = p.ss.as_deref_mut() else { continue };
            if !running || ss.attained {
                continue;
            }
            let ios: u64 = p.stats.iter().map(|s| s.total_ios).sum();
            let bytes: u64 = p.stats.iter().map(|s| s.io_bytes).sum();
            if !ss.group_reporting || prev_group != Some(group_id) {
                (group_bw, group_iops, group_ramp_over) = (0, 0, 0);
            }
            prev_group = Some(group_id);
            // fio's ticks fall just before each whole second of a job's time (its helper thread
            // starts before the jobs), so its `>=` holds one tick after the second it names;
            // here ticks fall on the second, and `>` keeps fio's tick.
            if !ss.ramp_over && now - start_ns > ss.spec.ramp_ns + STEADYSTATE_TICK_NS {
                ss.ramp_over = true;
            }
            // fio's mtime_since: whole milliseconds.
            let rate_ms = (now - ss.prev_ns.unwrap_or(start_ns)) / 1_000_000;
            ss.prev_ns = Some(now);
            if ss.ramp_over && rate_ms > 0 {
                group_bw += 1000 * bytes.saturating_sub(ss.prev_bytes) / rate_ms;
                group_iops += 1000 * ios.saturating_sub(ss.prev_ios) / rate_ms;
                group_ramp_over += 1;
            }
            (ss.prev_ios, ss.prev_bytes) = (ios, bytes);
            let Some(window) = ss.window.as_mut() else { continue };
            if group_ramp_over == 0 {
                continue;
            }
            if window.add(group_iops, group_bw) {
                window.attained = true;
                attained.push((i, ss.group_reporting, group_id));
            }
        }
        // fio_mark_td_terminate for the job, or for every job of its group.
        for (i, grouped, group_id) in attained {
            for j in 0..self.procs.len() {
                let p = &mut self.procs[j];
                if j != i && !(grouped && p.group_id == group_id) {
                    continue;
                }
                if let Some(ss) = p.ss.as_deref_mut().filter(|s| !s.attained) {
                    ss.attained = true;
                    if p.state == State::Running {
                        self.push(now, Event::RuntimeEnd(j as u32));
                    }
                }
            }
        }
        if self.steadystate_pending() {
            self.push(now + STEADYSTATE_TICK_NS, Event::SteadyState);
        }
    }

    fn push(&mut self, at_ns: Nanos, event: Event) {
        self.seq += 1;
        self.heap.push(Reverse((at_ns, self.seq, event)));
    }

    fn start_phase(&mut self, phase: u32) {
        self.current_phase = phase;
        for i in 0..self.procs.len() {
            if self.procs[i].phase == phase {
                // wait_for=: it starts once its waitees are done (fio's waitee_running).
                if !self.waitees_done(i) {
                    self.procs[i].waiting = true;
                    continue;
                }
                let at = self.procs[i].start_time(self.now_ns);
                // Jobs that start together set their schedulers before any of them does
                // I/O (fio's threads switch during their setup, before the files are set up).
                if at == self.now_ns {
                    self.switch_ioscheduler(i as u32);
                }
                self.push(at, Event::Start(i as u32));
            }
        }
    }

    /// Whether every process process `i` waits for (`wait_for=`) is done.
    fn waitees_done(&self, i: usize) -> bool {
        self.procs[i].waitees.iter().all(|&w| self.procs[w as usize].state == State::Done)
    }

    /// fio's `switch_ioscheduler` as job `p` starts: the device its file is on (a
    /// partition's disk) takes the scheduler `ioscheduler=` names. A name the device does
    /// not have fails the job, as writing it to `queue/scheduler` does. The switch waits for
    /// the requests already in the queue, as the kernel freezes the queue to switch.
    fn switch_ioscheduler(&mut self, p: u32) {
        let proc = &mut self.procs[p as usize];
        let Some(name) = proc.ioscheduler.take() else { return };
        let Route::Device(d) = proc.region.route else { return };
        if self.queues[d].scheduler_after_switch() == name {
            return;
        }
        match self.sched_setups[d].build(&name, &[]) {
            Ok(scheduler) => {
                self.vm.set_cgroup_pools(d as u32, scheduler.groups_active());
                self.queues[d].switch_scheduler(scheduler);
                self.touched[d] = true;
                self.kick_touched();
            }
            Err(_) => {
                proc.setup_failed = true;
                proc.error = Some(crate::workload::JobError {
                    errno: crate::workload::EINVAL,
                    func: "iosched_switch",
                    message: format!("fio: unable to set io scheduler to {name}"),
                });
            }
        }
    }

    /// Where the run is, for [`SimOptions::progress`].
    fn progress(&self) -> Progress {
        let mut out = Progress { now_ns: self.now_ns, ..Progress::default() };
        let mut fraction_sum = 0.0;
        for p in &self.procs {
            out.processes += 1;
            if p.state == State::Running || p.state == State::Draining {
                out.running += 1;
            }
            out.read_bytes += p.stats[0].io_bytes;
            out.write_bytes += p.stats[1].io_bytes;
            out.read_ios += p.stats[0].total_ios;
            out.write_ios += p.stats[1].total_ios;
            fraction_sum += match p.state {
                State::Done => 1.0,
                State::Pending => 0.0,
                _ => p.done_fraction(self.now_ns),
            };
        }
        out.done_fraction = if self.procs.is_empty() {
            1.0
        } else {
            (fraction_sum / self.procs.len() as f64).clamp(0.0, 1.0)
        };
        out
    }

    /// Runs events until none are left, or until `options.stop` is set (then `true`).
    fn run(&mut self, options: &SimOptions) -> bool {
        let mut events = 0u64;
        let watching = options.stop.is_some() || options.progress.is_some();
        while let Some(Reverse((at_ns, _, event))) = self.heap.pop() {
            debug_assert!(at_ns >= self.now_ns, "time went backwards");
            events += 1;
            if watching && events.is_multiple_of(WATCH_EVENTS) {
                if let Some(report) = &options.progress {
                    report(&self.progress());
                }
                if options.stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed)) {
                    return true;
                }
            }
            // A steady-state tick with no job left to judge is no event: it must not move the
            // end of the run.
            if matches!(event, Event::SteadyState) && !self.steadystate_pending() {
                continue;
            }
            self.now_ns = at_ns;
            self.note_page_cache_releases();
            match event {
                Event::Start(p) => {
                    if !self.procs[p as usize].terminated {
                        self.switch_ioscheduler(p);
                    }
                    if let Some(stop) = self.procs[p as usize].start(self.now_ns) {
                        self.push(stop, Event::RuntimeEnd(p));
                    }
                    // Its setup failed (ioscheduler=), or another job's exitall ended the run
                    // before it started: fio's thread ends before any I/O.
                    let proc = &mut self.procs[p as usize];
                    if proc.error.is_some() || proc.terminated {
                        proc.runtime_expired();
                        if proc.drained(self.now_ns) {
                            self.process_done(p);
                        }
                        continue;
                    }
                    // Its reporting group reached its steady state before it started (a
                    // start delay): fio's terminate is already set, and the job does nothing.
                    let proc = &mut self.procs[p as usize];
                    if proc.ss.as_ref().is_some_and(|s| s.attained) {
                        proc.runtime_expired();
                        if proc.drained(self.now_ns) {
                            self.process_done(p);
                            continue;
                        }
                    }
                    self.open_buffered(p);
                    if self.procs[p as usize].exit_on_io_done {
                        self.stop_cpuio_if_io_done();
                    }
                    self.issue(p);
                }
                Event::VmTimer => {
                    if self.armed_vm_ns == Some(self.now_ns) {
                        self.armed_vm_ns = None;
                        let mut out = std::mem::take(&mut self.vm_out);
                        self.vm.timer(self.now_ns, &mut out);
                        self.apply_vm(&mut out);
                        self.vm_out = out;
                        self.kick_touched();
                    }
                }
                Event::SteadyState => self.steadystate_tick(),
                Event::CpuDone => {
                    if self.armed_cpu_ns == Some(self.now_ns) {
                        self.armed_cpu_ns = None;
                        self.cpus_done();
                    }
                }
                Event::CallDone(task) => self.call_done(task),
                Event::TargetDone(node) => self.target_done(node),
                Event::TargetTimer => self.target_timer(),
                Event::TargetRun(task) => self.target_run(task),
                Event::TargetReadOn(task) => self.target_read(task),
                Event::VmRun(task) => {
                    let mut out = std::mem::take(&mut self.vm_out);
                    self.vm.run(task, self.now_ns, &mut out);
                    self.apply_vm(&mut out);
                    self.vm_out = out;
                    self.kick_touched();
                }
                Event::Issue(p) => {
                    if self.issue_armed[p as usize] == Some(self.now_ns) {
                        self.issue_armed[p as usize] = None;
                        self.issue(p);
                    }
                }
                Event::RuntimeEnd(p) => {
                    let proc = &mut self.procs[p as usize];
                    proc.runtime_expired();
                    if proc.state == State::Draining && proc.in_flight == 0 && !proc.blocked {
                        if proc.drained(self.now_ns) {
                            self.process_done(p);
                        } else {
                            self.arm_issue(p, self.now_ns);
                        }
                    }
                }
                Event::Device(d) => {
                    if self.queues[d as usize].armed_device_ns == Some(self.now_ns) {
                        self.queues[d as usize].armed_device_ns = None;
                        self.device_event(d);
                    }
                }
                Event::StackTimer => {
                    if self.armed_stack_ns == Some(self.now_ns) {
                        self.armed_stack_ns = None;
                        let mut leaves = std::mem::take(&mut self.leaves);
                        let mut roots = std::mem::take(&mut self.roots);
                        self.stack.timer(self.now_ns, &mut leaves, &mut roots);
                        for root in roots.drain(..) {
                            if root.tag != NO_TAG {
                                self.page_cache_io_done(root.tag);
                                continue;
                            }
                            let (p, op, len) = (root.process, root.op, root.len_bytes);
                            self.bio_done(p, op, len, root.issue_ns, root.issue_ns);
                        }
                        self.send_leaves(&mut leaves);
                        self.leaves = leaves;
                        self.roots = roots;
                        self.kick_touched();
                    }
                }
                Event::Timer(d) => {
                    if self.queues[d as usize].armed_timer_ns == Some(self.now_ns) {
                        self.queues[d as usize].armed_timer_ns = None;
                        // A scheduler's timer runs the queue; a due unplug timer runs it
                        // in kick.
                        self.queues[d as usize].timer_fired(self.now_ns);
                        self.queues[d as usize].throttle_tick(self.now_ns);
                        self.queues[d as usize].kick(self.now_ns);
                        self.arm_device(d);
                    }
                }
            }
        }
        false
    }

    /// Lets process `p` issue as much as it may now.
    fn issue(&mut self, p: u32) {
        let now = self.now_ns;
        let pi = p as usize;
        if self.procs[pi].blocked || self.procs[pi].state != State::Running {
            return;
        }
        // A buffered job's tasks are all inside system calls (one task but for an io_uring
        // job's; a libaio job's io_us are more than one).
        if self.procs[pi].buffered.is_some() && self.procs[pi].free_call_slot().is_none() {
            return;
        }
        let route = self.procs[pi].region.route;
        let batch = self.procs[pi].batch;
        let mut in_batch = 0;
        loop {
            match self.procs[pi].next(now) {
                Next::Issue(io) if self.procs[pi].buffered.is_some() => {
                    self.procs[pi].issued(&io, now);
                    // An io_uring job goes on while its reads wait for their pages and its
                    // writes for io-wq; a read the cache served held the thread until it
                    // returned.
                    if !self.buffered_call(p, io) || self.procs[pi].free_call_slot().is_none() {
                        break;
                    }
                }
                Next::Issue(io) => {
                    let mut owner = self.procs[pi].owner;
                    if let Some(prio) = io.prio {
                        owner.prio = prio;
                    }
                    self.procs[pi].issued(&io, now);
                    match route {
                        Route::Device(d) => {
                            self.queues[d].plug_bio(
                                p,
                                NO_NODE,
                                NO_TAG,
                                io.op,
                                io.offset_bytes,
                                io.len_bytes,
                                io.flags(),
                                owner,
                                now,
                            );
                            self.touched[d] = true;
                            in_batch += 1;
                            if in_batch == batch {
                                in_batch = 0;
                                if !self.queues[d].unplug(p, now) {
                                    self.procs[pi].blocked = true;
                                    break;
                                }
                            }
                        }
                        Route::Volume(v) => {
                            let mut leaves = std::mem::take(&mut self.leaves);
                            self.stack.submit(
                                p,
                                NO_TAG,
                                v,
                                io.op,
                                io.offset_bytes,
                                io.len_bytes,
                                io.flags(),
                                owner,
                                now,
                                &mut leaves,
                            );
                            self.send_leaves(&mut leaves);
                            self.leaves = leaves;
                            if self.stack.take_submitter_slept() {
                                // Asleep in dm-ioband until its group drains.
                                self.procs[pi].blocked = true;
                                break;
                            }
                        }
                    }
                }
                Next::WaitUntil(t) => {
                    self.arm_issue(p, t);
                    break;
                }
                Next::Full => break,
                Next::Stop => {
                    if self.procs[pi].in_flight == 0 && in_batch == 0 {
                        if let Some(io) = self.procs[pi].take_end_fsync(now) {
                            self.procs[pi].issued(&io, now);
                            self.buffered_call(p, io);
                            break;
                        }
                        if !self.procs[pi].drained(now) {
                            continue; // its verify phase begins
                        }
                        self.process_done(p);
                    }
                    break;
                }
            }
        }
        if let (Route::Device(d), true) = (route, in_batch > 0) {
            if !self.queues[d].unplug(p, now) {
                self.procs[pi].blocked = true;
            }
        }
        self.kick_touched();
    }

    /// Hands pieces that came out of the volume stack to their devices' block layers. A piece
    /// that finds no free request waits in that block layer; the volume's worker, not the
    /// process, is what sleeps, so the process is not marked blocked.
    fn send_leaves(&mut self, leaves: &mut Vec<LeafIo>) {
        let now = self.now_ns;
        for leaf in leaves.drain(..) {
            let q = &mut self.queues[leaf.device];
            q.plug_bio(
                u32::MAX,
                leaf.node,
                NO_TAG,
                leaf.op,
                leaf.offset_bytes,
                leaf.len_bytes,
                leaf.flags,
                leaf.owner,
                now,
            );
            q.unplug(u32::MAX, now);
            self.touched[leaf.device] = true;
        }
        // Processes dm-ioband let go on (whatever stack step released their group's bios).
        let mut woken = std::mem::take(&mut self.woken);
        self.stack.take_woken(&mut woken);
        self.unblock(&mut woken);
        self.woken = woken;
        if let Some(t) = self.stack.next_timer_ns() {
            let t = t.max(now + 1);
            if self.armed_stack_ns.is_none_or(|armed| t < armed || armed <= now) {
                self.armed_stack_ns = Some(t);
                self.push(t, Event::StackTimer);
            }
        }
        self.target_reads();
    }

    /// Tells the page caches of each device whose sync requests became congested, or stopped
    /// being (the block layer's `blk_set_queue_congested` / `blk_clear_queue_congested`).
    /// A stacked device is congested while any device below it is (`dm_table_any_congested`).
    /// The page caches hear it between calls: a task's own readahead in one call does not
    /// congest its later reads in that call (deviation).
    fn tell_congestion(&mut self) {
        for d in 0..self.queues.len() {
            if self.queues[d].take_congestion_change().is_none() {
                continue;
            }
            for &bdi in &self.congestion_bdis[d] {
                let below = |dev: usize| self.congestion_bdis[dev].contains(&bdi);
                let congested =
                    (0..self.queues.len()).any(|e| below(e) && self.queues[e].read_congested());
                self.vm.set_read_congested(bdi, congested);
                if let Some(t) = self.target.as_mut() {
                    t.set_read_congested(bdi, congested);
                }
            }
        }
    }

    /// Dispatches on every device that received work, and arms its events.
    fn kick_touched(&mut self) {
        self.tell_congestion();
        for d in 0..self.queues.len() {
            if std::mem::take(&mut self.touched[d]) {
                self.queues[d].kick(self.now_ns);
                self.arm_device(d as u32);
            }
        }
    }

    fn arm_issue(&mut self, p: u32, at_ns: Nanos) {
        let slot = &mut self.issue_armed[p as usize];
        if slot.is_none_or(|t| at_ns < t) {
            *slot = Some(at_ns);
            self.push(at_ns, Event::Issue(p));
        }
    }

    /// Makes sure the engine wakes for the device's next event and the scheduler's timer.
    fn arm_device(&mut self, d: u32) {
        let q = &mut self.queues[d as usize];
        if let Some(t) = q.device.next_event_ns() {
            if q.armed_device_ns.is_none_or(|armed| t < armed) {
                q.armed_device_ns = Some(t);
                self.push(t, Event::Device(d));
            }
        }
        let q = &mut self.queues[d as usize];
        if let Some(t) = q.wanted_timer_ns {
            if q.armed_timer_ns.is_none_or(|armed| t < armed) {
                q.armed_timer_ns = Some(t);
                self.push(t, Event::Timer(d));
            }
        }
    }

    fn device_event(&mut self, d: u32) {
        let now = self.now_ns;
        let mut done = std::mem::take(&mut self.done_bios);
        let mut unblocked = std::mem::take(&mut self.unblocked);
        let mut leaves = std::mem::take(&mut self.leaves);
        self.queues[d as usize].complete(now, &mut done, &mut unblocked);
        self.tell_congestion();
        for bio in done.drain(..) {
            let (p, tag, op, len_bytes, issue_ns, submit_ns) = if bio.node == NO_NODE {
                (bio.process, bio.tag, bio.op, bio.len_bytes, bio.issue_ns, bio.submit_ns)
            } else {
                match self.stack.piece_done(bio.node, now, &mut leaves) {
                    Some(root) => (
                        root.process,
                        root.tag,
                        root.op,
                        root.len_bytes,
                        root.issue_ns,
                        root.issue_ns,
                    ),
                    None => continue,
                }
            };
            if tag != NO_TAG {
                self.page_cache_io_done(tag);
                continue;
            }
            self.bio_done(p, op, len_bytes, issue_ns, submit_ns);
        }
        self.send_leaves(&mut leaves);
        self.unblock(&mut unblocked);
        self.done_bios = done;
        self.unblocked = unblocked;
        self.leaves = leaves;
        self.touched[d as usize] = true;
        self.kick_touched();
    }

    /// Processes that slept for a request slot or in dm-ioband go on.
    fn unblock(&mut self, unblocked: &mut Vec<u32>) {
        let now = self.now_ns;
        for p in unblocked.drain(..) {
            if p == u32::MAX {
                continue; // a volume's piece, not a process
            }
            let proc = &mut self.procs[p as usize];
            proc.blocked = false;
            if proc.state == State::Draining && proc.in_flight == 0 && proc.drained(now) {
                self.process_done(p);
            } else {
                self.arm_issue(p, now);
            }
        }
    }

    /// A bio of process `p` is complete: account it and let the process go on.
    fn bio_done(&mut self, p: u32, op: Op, len_bytes: u64, issue_ns: Nanos, submit_ns: Nanos) {
        let proc = &mut self.procs[p as usize];
        let wake = proc.completed(op, len_bytes, issue_ns, submit_ns, self.now_ns);
        if proc.state == State::Done {
            self.process_done(p);
        } else if let Some(r) = wake {
            self.resume(p, r);
        }
    }

    /// Process `p` goes on after a completion: at once, after a sleep, or after a spin on
    /// the CPUs.
    fn resume(&mut self, p: u32, r: Resume) {
        match r {
            Resume::At(at) => self.arm_issue(p, at),
            Resume::ThinkUntil(at) => {
                // Wake-ups armed earlier (by completions before the think began) lapse: an
                // Issue event fires only at the time armed last.
                self.issue_armed[p as usize] = Some(at);
                self.push(at, Event::Issue(p));
            }
            Resume::Spin { spin_ns, sleep_ns } => {
                self.cpus.spin(p, spin_ns, sleep_ns, self.now_ns);
                self.arm_cpus();
            }
        }
    }

    /// Makes sure the engine wakes when the next spin ends.
    fn arm_cpus(&mut self) {
        if let Some(t) = self.cpus.next_done_ns() {
            if self.armed_cpu_ns.is_none_or(|armed| t != armed) {
                self.armed_cpu_ns = Some(t);
                self.push(t, Event::CpuDone);
            }
        }
    }

    /// fio's cpuio `exit_on_io_done`: once no job doing I/O runs or waits to run, the
    /// cpuio jobs that asked stop.
    fn stop_cpuio_if_io_done(&mut self) {
        if self.procs.iter().any(|q| !q.no_io && q.state != State::Done) {
            return;
        }
        self.stop_running(|_, q| q.exit_on_io_done);
    }

    /// Stops every running process `which` names as its runtime would: it issues nothing
    /// more, and ends once nothing of it is in flight.
    fn stop_running(&mut self, which: impl Fn(u32, &Process) -> bool) {
        let now = self.now_ns;
        let mut finished = Vec::new();
        for (i, q) in self.procs.iter_mut().enumerate() {
            if q.state != State::Running || !which(i as u32, q) {
                continue;
            }
            q.runtime_expired();
            if q.in_flight == 0 && !q.blocked {
                q.finish(now);
                finished.push(i as u32);
            }
        }
        for i in finished {
            self.process_done(i);
        }
    }

    /// Spins are over: their processes sleep the rest of their think time.
    fn cpus_done(&mut self) {
        let mut done = std::mem::take(&mut self.spins_done);
        self.cpus.take_done(self.now_ns, &mut done);
        for d in done.drain(..) {
            let proc = &mut self.procs[d.proc as usize];
            proc.cpu_ns += d.cpu_ns;
            proc.cpuio_cycle_done(d.start_ns, self.now_ns);
            self.arm_issue(d.proc, self.now_ns + d.sleep_ns);
        }
        self.spins_done = done;
        self.arm_cpus();
    }

    fn process_done(&mut self, p: u32) {
        // The job's process exits (`exit_io_context`): a scheduler idling or anticipating for
        // it lets go, and runs its queue if it says so.
        let io_context = self.procs[p as usize].owner.io_context;
        let mut run = false;
        for d in 0..self.queues.len() {
            if self.queues[d].task_exited(io_context, self.now_ns) {
                self.touched[d] = true;
                run = true;
            }
        }
        if run {
            self.kick_touched();
        }
        if self.cpus.spinning() > 0 {
            self.procs[p as usize].cpu_ns += self.cpus.cancel(p, self.now_ns);
            self.arm_cpus();
        }
        if !self.procs[p as usize].no_io {
            self.stop_cpuio_if_io_done();
        }
        // fio's `exitall` sets a global (str_exitall_cb: exitall_on_terminate): once any job
        // of the file has it, every job's end stops the others it names, not only its own.
        let exitall_on_terminate = self.procs.iter().any(|q| q.exitall);
        let me = &self.procs[p as usize];
        if exitall_on_terminate || (me.exitall_on_error && me.error.is_some() && !me.setup_failed) {
            self.exit_others(p);
        }
        // Jobs that waited for this one (wait_for=) start, their start delay permitting.
        for i in 0..self.procs.len() {
            if self.procs[i].waiting && self.waitees_done(i) {
                self.procs[i].waiting = false;
                let at = self.procs[i].start_time(self.now_ns);
                self.push(at, Event::Start(i as u32));
            }
        }
        let phase = self.procs[p as usize].phase as usize;
        self.phases_left[phase] -= 1;
        let mut next = self.current_phase;
        while (next as usize) < self.phases_left.len() && self.phases_left[next as usize] == 0 {
            next += 1;
        }
        if next != self.current_phase && (next as usize) < self.phases_left.len() {
            self.start_phase(next);
        } else {
            self.current_phase = next;
        }
    }
}

impl Engine {
    /// fio's `exitall`: stop issuing in every running process that `exit_what` names; each
    /// finishes when its in-flight I/O completes.
    fn exit_others(&mut self, p: u32) {
        let (what, group, phase) = {
            let me = &self.procs[p as usize];
            (me.exit_what, me.group_id, me.phase)
        };
        let named = |i: u32, q: &Process| {
            i != p
                && match what {
                    ExitWhat::Group => q.group_id == group,
                    ExitWhat::Stonewall => q.phase == phase,
                    ExitWhat::All => true,
                }
        };
        self.stop_running(named);
        // Those not started yet never start (fio's run_threads: "never got a chance to
        // start, killed by other thread").
        for (i, q) in self.procs.iter_mut().enumerate() {
            if q.state == State::Pending && named(i as u32, q) {
                q.terminated = true;
            }
        }
    }
}

/// Per device, the backing devices (the page cache's numbering: devices, then volumes) whose
/// congestion follows it: the device's own, and every volume that reaches it through
/// linear, striped and dm-ioband layers. A remote disk's or a guest's volume has a request
/// queue of its own on its machine, which this model does not keep: it is never congested
/// (deviation); the target machine's cache reads the exported device's own numbering.
fn congestion_bdis(topology: &Topology) -> Vec<Vec<u32>> {
    let n = topology.devices.len();
    let mut bdis: Vec<Vec<u32>> = (0..n).map(|d| vec![d as u32]).collect();
    // The devices below volume `w`, through the layers that pass congestion on.
    fn below(topology: &Topology, w: usize, depth: usize, out: &mut Vec<usize>) {
        let v = &topology.volumes[w];
        if depth > topology.volumes.len()
            || matches!(v.kind, VolumeKind::Remote(_) | VolumeKind::Guest { .. })
        {
            return;
        }
        for m in &v.members {
            match m.route {
                Route::Device(d) => out.push(d),
                Route::Volume(u) => below(topology, u, depth + 1, out),
            }
        }
    }
    for w in 0..topology.volumes.len() {
        let mut devices = Vec::new();
        below(topology, w, 0, &mut devices);
        devices.sort_unstable();
        devices.dedup();
        for d in devices {
            bdis[d].push((n + w) as u32);
        }
    }
    bdis
}

/// Command names for blktrace's process notes: each job clone's pid its job's name (fio names
/// its processes so), the kernel threads theirs: the per-device flushers as `flush-MAJ:MIN`
/// (volumes are device-mapper's 253:N), ext3's journal threads `kjournald`, an iSCSI target's
/// threads `scstdN` (SCST's), a guest disk's host process `blkback`.
fn process_names(procs: &[Process], topology: &Topology) -> crate::blktrace::ProcessNames {
    let mut names = crate::blktrace::ProcessNames::new();
    let devices = topology.devices.len() as u32;
    for bdi in 0..devices + topology.volumes.len() as u32 {
        let (major, minor) = if bdi < devices {
            crate::topology::device_number(bdi as usize)
        } else {
            (253, bdi - devices)
        };
        names.insert(elevator_mm::vm::FLUSHER_PID_BASE + bdi, format!("flush-{major}:{minor}"));
    }
    for j in 0..topology.filesystems.len() as u32 {
        names.insert(elevator_mm::vm::JOURNAL_PID_BASE + j, "kjournald".to_string());
    }
    for v in &topology.volumes {
        match v.kind {
            VolumeKind::Remote(r) => {
                for t in 0..r.threads {
                    names.insert(r.pid_base + t, format!("scstd{t}"));
                }
            }
            VolumeKind::Guest { pid: Some(pid), .. } => {
                names.insert(pid, "blkback".to_string());
            }
            _ => {}
        }
    }
    for p in procs {
        names.insert(p.owner.pid, p.name.clone());
    }
    names
}

/// `ioscheduler=` before the run: under `--scheduler` the command line's scheduler stays
/// (a warning says so); a job on a volume (device-mapper, a remote LUN) leaves it as it is,
/// as fio does where `queue/scheduler` reads `none` ("io scheduler is not tunable"); a
/// scheduler the device has must take `--iosched`'s tunables, or the run does not start.
fn check_ioschedulers(
    procs: &mut [Process],
    topology: &Topology,
    setups: &[SchedulerSetup],
    options: &SimOptions,
    warnings: &mut Vec<String>,
) -> Result<(), SimError> {
    for p in procs.iter_mut() {
        let Some(name) = p.ioscheduler.clone() else { continue };
        let warning = match (&options.scheduler, p.region.route) {
            (Some(cli), _) => Some(format!(
                "job `{}`: ioscheduler={name} left out: --scheduler {cli} sets every device's",
                p.name
            )),
            (None, Route::Volume(v)) => Some(format!(
                "job `{}`: ioscheduler={name}: `{}` is a volume with no I/O scheduler of its own; left as it is (fio: io scheduler is not tunable)",
                p.name, topology.volumes[v].name
            )),
            (None, Route::Device(d)) => {
                if let Err(SetupError::Cli(e)) = setups[d].build(&name, &[]) {
                    return Err(SimError(format!(
                        "job `{}`: ioscheduler={name} on `{}`: {e}",
                        p.name, topology.devices[d].name
                    )));
                }
                None
            }
        };
        if let Some(w) = warning {
            p.ioscheduler = None;
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
    }
    Ok(())
}

/// What a device's scheduler is built with: at the start, and again when a job's
/// `ioscheduler=` switches the device to another (the kernel's `elevator_switch` starts the
/// new one afresh, with its default tunables).
struct SchedulerSetup {
    /// The cgroups below the root, with their weights under BFQ beside.
    groups: Vec<Cgroup>,
    bfq_groups: Vec<Cgroup>,
    rotational: bool,
    /// `--iosched`, set on whatever scheduler the device runs.
    tunables: Vec<(String, String)>,
    /// The kernel the topology named, whose release's tunables come first ([`crate::era`]).
    era: Option<elevator_mm::Kernel>,
}

/// Why a scheduler could not be built: its name or a tunable of the device's own (topology),
/// or one of `--iosched`.
enum SetupError {
    Own(String),
    Cli(String),
}

impl SchedulerSetup {
    /// Scheduler `name` with the device's `own` tunables, then `--iosched`'s.
    fn build(
        &self,
        name: &str,
        own: &[(String, String)],
    ) -> Result<Box<dyn elevator_sched::Scheduler>, SetupError> {
        let mut scheduler = elevator_sched::by_name(name).map_err(SetupError::Own)?;
        if let Some(kernel) = self.era {
            for (k, v) in crate::era::scheduler_defaults(scheduler.name(), kernel) {
                scheduler.set_tunable(k, v).map_err(|e| SetupError::Own(e.to_string()))?;
            }
        }
        for (k, v) in own {
            scheduler.set_tunable(k, v).map_err(|e| SetupError::Own(e.to_string()))?;
        }
        for (k, v) in &self.tunables {
            scheduler
                .set_tunable(k, v)
                .map_err(|e| SetupError::Cli(format!("--iosched {k}={v}: {e}")))?;
        }
        let groups = if scheduler.name() == "bfq" { &self.bfq_groups } else { &self.groups };
        for g in groups {
            scheduler.set_group(g);
        }
        scheduler.set_rotational(self.rotational);
        Ok(scheduler)
    }
}

/// A cgroup's weight under BFQ on device `d`: its `io.bfq.weight` there, else fio's
/// `cgroup_weight=`, else BFQ's default (`BFQ_DEFAULT_GRP_WEIGHT`, 100 — not CFQ's 500).
fn bfq_group_weight(topology: &Topology, d: usize, g: &Cgroup) -> u32 {
    let set = topology.io_bfq_weight.iter().find(|w| w.path == g.path).and_then(|w| w.on(d));
    let from_job = (g.weight != Cgroup::DEFAULT_WEIGHT).then_some(g.weight);
    set.or(from_job).unwrap_or(elevator_sched::bfq::BFQ_DEFAULT_GRP_WEIGHT)
}

/// What the block layer's policies need to know of a device.
#[derive(Clone, Copy)]
struct DeviceIo<'a> {
    rotational: bool,
    queue_depth: u32,
    /// It reports a volatile write cache (`QUEUE_FLAG_WC`).
    write_cache: bool,
    scheduler: &'a str,
}

/// Whether a device model reports a volatile write cache: a disk with its write cache on,
/// an array whose members' caches are on (a controller's battery-backed cache is not
/// volatile).
fn device_write_cache(model: &DeviceModel) -> bool {
    match model {
        DeviceModel::Hdd { params, .. } => params.write_cache,
        DeviceModel::Array { member, cache, .. } => cache.is_none() && device_write_cache(member),
        DeviceModel::Ram(_) | DeviceModel::Ssd { .. } => false,
    }
}

/// Writeback throttling on device `d`, if it is set up: the device's `wbt_lat_usec` when set
/// (0: none; set by hand, no scheduler turns it off), else the kernel's default target where
/// a named kernel sets it up ([`crate::era::wbt_set_up`]), off for now under BFQ and CFQ.
fn wbt_of(
    topology: &Topology,
    d: usize,
    io: DeviceIo,
    io_cost: bool,
) -> Result<Option<Wbt>, String> {
    let Some((target_ns, manual)) = wbt_target_ns(topology, d, io, io_cost)? else {
        return Ok(None);
    };
    let mut w = Wbt::new(target_ns, io.queue_depth, io.write_cache)?;
    if manual {
        w.set_manual();
    } else {
        w.scheduler_switched(io.scheduler);
    }
    Ok(Some(w))
}

/// [`wbt_of`]'s target, and whether it was set by hand.
fn wbt_target_ns(
    topology: &Topology,
    d: usize,
    io: DeviceIo,
    io_cost: bool,
) -> Result<Option<(Nanos, bool)>, String> {
    let m = &topology.machine;
    let kernel = m.vm.kernel;
    match topology.devices[d].wbt_lat_usec {
        Some(0) => Ok(None),
        Some(usec) => {
            if let Some(why) = m.kernel_named.then(|| crate::era::wbt_missing(kernel)).flatten() {
                return Err(format!("wbt_lat_usec: {why}"));
            }
            Ok(Some((usec * 1000, true)))
        }
        None => {
            let blk_mq = matches!(
                topology.devices[d].model,
                DeviceModel::Ssd { ref params, .. } if params.interface == elevator_device::ssd::Interface::Nvme
            );
            let on = m.kernel_named && crate::era::wbt_set_up(kernel, blk_mq, io_cost);
            Ok(on.then(|| (Wbt::default_latency_ns(io.rotational), false)))
        }
    }
}

/// The cgroup v2 controllers of device `d`, layered as the kernel layers them: blk-throttle
/// for `io.max` (in `submit_bio`), then the rq-qos policies blk-iolatency for `io.latency` and
/// blk-iocost for `io.cost` (when the root's `io.cost.qos` enables it on the device), for the
/// cgroups jobs run in. mClock (not a kernel controller) sits right after blk-throttle.
fn cgroup_control(
    topology: &Topology,
    d: usize,
    groups: &[elevator_core::Cgroup],
    io: DeviceIo,
) -> Result<Option<Box<dyn Controller>>, SimError> {
    let DeviceIo { rotational, queue_depth, .. } = io;
    let id_of = |path: &str| groups.iter().position(|g| g.path == path).map(|i| i as u32);
    let name = &topology.devices[d].name;
    let fail = |e: String| SimError(format!("device `{name}`: {e}"));
    let mut layers: Vec<Box<dyn Controller>> = Vec::new();
    let limited: Vec<ThrottleGroup> = topology
        .io_max
        .iter()
        .filter(|l| l.device == d)
        .filter_map(|l| {
            let cgroup = id_of(&l.path)?;
            Some(ThrottleGroup { cgroup, name: l.path.clone(), limits: l.limits })
        })
        .collect();
    if !limited.is_empty() {
        let slice = if rotational { THROTL_SLICE_HD_NS } else { THROTL_SLICE_SSD_NS };
        layers.push(Box::new(Throttle::new(limited, slice).map_err(fail)?));
    }
    let mclock: Vec<MclockGroup> = topology
        .mclock
        .iter()
        .filter(|m| m.device == d)
        .filter_map(|m| {
            let cgroup = id_of(&m.path)?;
            Some(MclockGroup {
                cgroup,
                name: m.path.clone(),
                reservation_iops: m.reservation_iops,
                weight: m.weight,
                limit_iops: m.limit_iops,
            })
        })
        .collect();
    if !mclock.is_empty() {
        // mClock orders only what it holds: it keeps at most MCLOCK_DEPTH_DEFAULT requests
        // below it (the server's default queue depth), fewer on a shallower device.
        let depth = queue_depth.clamp(1, MCLOCK_DEPTH_DEFAULT);
        layers.push(Box::new(Mclock::new(mclock, depth).map_err(fail)?));
    }
    let targets: Vec<IoLatencyGroup> = topology
        .io_latency
        .iter()
        .filter(|l| l.device == d)
        .filter_map(|l| {
            let cgroup = id_of(&l.path)?;
            Some(IoLatencyGroup { cgroup, name: l.path.clone(), target_ns: Some(l.target_ns) })
        })
        .collect();
    if !targets.is_empty() {
        layers.push(Box::new(IoLatency::new(targets, queue_depth, rotational).map_err(fail)?));
    }
    let mut io_cost = false;
    if let Some(files) = topology.io_cost.iter().find(|c| c.device == d) {
        let class = AutopClass::of_device(rotational, queue_depth);
        let (qos, model) = files.settings(class).map_err(fail)?;
        io_cost = qos.enable;
        if qos.enable {
            let weight_of = |g: &elevator_core::Cgroup| {
                let set = topology.io_weight.iter().find(|w| w.path == g.path);
                // fio's `cgroup_weight=` is the cgroup's weight when io.weight does not say.
                let from_job = (g.weight != Cgroup::DEFAULT_WEIGHT).then_some(g.weight);
                set.and_then(|w| w.on(d))
                    .or(from_job)
                    .unwrap_or(CGROUP_WEIGHT_DFL)
                    .clamp(1, CGROUP_WEIGHT_MAX)
            };
            let members: Vec<IoCostGroup> = groups
                .iter()
                .enumerate()
                .skip(1)
                .map(|(i, g)| IoCostGroup {
                    cgroup: i as u32,
                    name: g.path.clone(),
                    parent: g.parent.filter(|&p| p != 0),
                    weight: weight_of(g),
                })
                .collect();
            let c = IoCost::new(members, Some(qos), Some(model), rotational, queue_depth)
                .map_err(fail)?;
            layers.push(Box::new(c));
        }
    }
    if let Some(w) = wbt_of(topology, d, io, io_cost).map_err(fail)? {
        layers.push(Box::new(w));
    }
    Ok(match layers.len() {
        0 => None,
        1 => layers.pop(),
        _ => Some(Box::new(elevator_control::stack::Stack::new(layers).map_err(fail)?)),
    })
}
