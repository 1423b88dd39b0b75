//! The event loop.
//!
//! Events live in one binary heap ordered by (time, sequence number); the sequence number makes
//! ties resolve in scheduling order, so a run is a pure function of its inputs and seed. Each
//! device and each process keeps at most one *armed* event of each kind: re-arming for an
//! earlier time pushes a new entry and the later one is recognised as stale when it pops.
//!
//! Random streams: stream `k` for process `k` (job clones in file order), then one per device.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use elevator_core::{Cgroup, IoPrio, IoPrioClass, Nanos, Op, Owner, RandomStream};
use elevator_fio::{Amount, ExitWhat, JobFile, JobSpec};

use crate::block::{Bio, BlockQueue, DiskCounters};
use crate::files::FileTree;
use crate::stack::{LeafIo, RootDone, Stack, NO_NODE};
use crate::topology::{Route, Topology};
use crate::workload::{Next, Process, Region, State};

/// How a run is set up beyond the job file and topology.
#[derive(Clone, Debug, Default)]
pub struct SimOptions {
    pub seed: u64,
    /// Replaces every device's scheduler.
    pub scheduler: Option<String>,
    /// Tunables applied to every device's scheduler after the topology's own.
    pub iosched: Vec<(String, String)>,
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
}

impl SimResult {
    /// What the run should tell its user although nothing failed: a range-bw group whose
    /// guaranteed minimum the device could not deliver, with what it got.
    pub fn warnings(&self) -> Vec<String> {
        let secs = self.end_ns as f64 / 1e9;
        self.ioband
            .iter()
            .filter_map(|c| {
                let min = c.min_unmet_kbs?;
                let got = if secs > 0.0 { c.bytes as f64 / 1e3 / secs } else { 0.0 };
                Some(format!(
                    "ioband group `{}`: its minimum of {min} KB/s was not met (it got {got:.0} KB/s over the run): the minimums of its device group add up to more than the device delivers for this workload",
                    c.name
                ))
            })
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
    stack: Stack,
    leaves: Vec<LeafIo>,
    roots: Vec<RootDone>,
    armed_stack_ns: Option<Nanos>,
    /// Devices that received work since they were last kicked.
    touched: Vec<bool>,
}

/// Runs a job file on a topology.
pub fn simulate(
    jobs: &JobFile,
    topology: &Topology,
    options: &SimOptions,
) -> Result<SimResult, SimError> {
    let groups = cgroup_table(&jobs.jobs);
    let mut queues = Vec::new();
    for (i, spec) in topology.devices.iter().enumerate() {
        let name = options.scheduler.clone().unwrap_or_else(|| spec.scheduler.clone());
        let mut scheduler = elevator_sched::by_name(&name).map_err(SimError)?;
        if options.scheduler.is_none() {
            for (k, v) in &spec.iosched {
                scheduler
                    .set_tunable(k, v)
                    .map_err(|e| SimError(format!("device `{}`: {e}", spec.name)))?;
            }
        }
        for (k, v) in &options.iosched {
            scheduler.set_tunable(k, v).map_err(|e| SimError(format!("--iosched {k}={v}: {e}")))?;
        }
        for g in groups.iter().skip(1) {
            scheduler.set_group(g);
        }
        let device = spec.model.build(options.seed, 1_000_000 + i as u32);
        queues.push(BlockQueue::new(scheduler, device, spec.nr_requests, spec.max_sectors_kb));
    }
    let procs = build_processes(jobs, topology, &groups, options.seed)?;
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
        stack,
        leaves: Vec::new(),
        roots: Vec::new(),
        armed_stack_ns: None,
        touched: vec![false; topology.devices.len()],
    };
    engine.start_phase(0);
    engine.run();
    let end_ns = engine.now_ns;
    let mut devices = Vec::new();
    let mut requests_completed = 0;
    for (q, spec) in engine.queues.iter_mut().zip(&topology.devices) {
        q.finish(end_ns);
        requests_completed += q.counters.ios.iter().sum::<u64>();
        devices.push(DeviceResult {
            name: spec.name.clone(),
            description: q.device.describe(),
            scheduler: q.scheduler.name().to_string(),
            counters: q.counters.clone(),
            stats: q.device.stats(),
        });
    }
    let ioband = engine.stack.ioband_counters();
    Ok(SimResult { processes: engine.procs, devices, groups, end_ns, requests_completed, ioband })
}

impl Engine {
    fn push(&mut self, at_ns: Nanos, event: Event) {
        self.seq += 1;
        self.heap.push(Reverse((at_ns, self.seq, event)));
    }

    fn start_phase(&mut self, phase: u32) {
        self.current_phase = phase;
        for i in 0..self.procs.len() {
            if self.procs[i].phase == phase {
                let at = self.procs[i].start_time(self.now_ns);
                self.push(at, Event::Start(i as u32));
            }
        }
    }

    fn run(&mut self) {
        while let Some(Reverse((at_ns, _, event))) = self.heap.pop() {
            debug_assert!(at_ns >= self.now_ns, "time went backwards");
            self.now_ns = at_ns;
            match event {
                Event::Start(p) => {
                    if let Some(stop) = self.procs[p as usize].start(self.now_ns) {
                        self.push(stop, Event::RuntimeEnd(p));
                    }
                    self.issue(p);
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
                        proc.finish(self.now_ns);
                        self.process_done(p);
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
                        self.queues[d as usize].kick(self.now_ns);
                        self.arm_device(d);
                    }
                }
            }
        }
    }

    /// Lets process `p` issue as much as it may now.
    fn issue(&mut self, p: u32) {
        let now = self.now_ns;
        let pi = p as usize;
        if self.procs[pi].blocked || self.procs[pi].state != State::Running {
            return;
        }
        let route = self.procs[pi].region.route;
        let batch = self.procs[pi].batch;
        let mut in_batch = 0;
        loop {
            match self.procs[pi].next(now) {
                Next::Issue(io) => {
                    let owner = self.procs[pi].owner;
                    self.procs[pi].issued();
                    match route {
                        Route::Device(d) => {
                            self.queues[d].plug_bio(
                                p,
                                NO_NODE,
                                io.op,
                                io.offset_bytes,
                                io.len_bytes,
                                io.sync,
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
                                v,
                                io.op,
                                io.offset_bytes,
                                io.len_bytes,
                                io.sync,
                                owner,
                                now,
                                &mut leaves,
                            );
                            self.send_leaves(&mut leaves);
                            self.leaves = leaves;
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
                        self.procs[pi].finish(now);
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
                leaf.op,
                leaf.offset_bytes,
                leaf.len_bytes,
                leaf.sync,
                leaf.owner,
                now,
            );
            q.unplug(u32::MAX, now);
            self.touched[leaf.device] = true;
        }
        if let Some(t) = self.stack.next_timer_ns() {
            let t = t.max(now + 1);
            if self.armed_stack_ns.is_none_or(|armed| t < armed || armed <= now) {
                self.armed_stack_ns = Some(t);
                self.push(t, Event::StackTimer);
            }
        }
    }

    /// Dispatches on every device that received work, and arms its events.
    fn kick_touched(&mut self) {
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
        for bio in done.drain(..) {
            let (p, op, len_bytes, issue_ns, submit_ns) = if bio.node == NO_NODE {
                (bio.process, bio.op, bio.len_bytes, bio.issue_ns, bio.submit_ns)
            } else {
                match self.stack.piece_done(bio.node, now, &mut leaves) {
                    Some(root) => {
                        (root.process, root.op, root.len_bytes, root.issue_ns, root.issue_ns)
                    }
                    None => continue,
                }
            };
            self.bio_done(p, op, len_bytes, issue_ns, submit_ns);
        }
        self.send_leaves(&mut leaves);
        for p in unblocked.drain(..) {
            if p == u32::MAX {
                continue; // a volume's piece, not a process
            }
            let proc = &mut self.procs[p as usize];
            proc.blocked = false;
            if proc.state == State::Draining && proc.in_flight == 0 {
                proc.finish(now);
                self.process_done(p);
            } else {
                self.arm_issue(p, now);
            }
        }
        self.done_bios = done;
        self.unblocked = unblocked;
        self.leaves = leaves;
        self.touched[d as usize] = true;
        self.kick_touched();
    }

    /// A bio of process `p` is complete: account it and let the process go on.
    fn bio_done(&mut self, p: u32, op: Op, len_bytes: u64, issue_ns: Nanos, submit_ns: Nanos) {
        let proc = &mut self.procs[p as usize];
        let wake = proc.completed(op, len_bytes, issue_ns, submit_ns, self.now_ns);
        if proc.state == State::Done {
            self.process_done(p);
        } else if let Some(at) = wake {
            self.arm_issue(p, at);
        }
    }

    fn process_done(&mut self, p: u32) {
        if self.procs[p as usize].exitall {
            self.exit_others(p);
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
        let now = self.now_ns;
        let mut finished = Vec::new();
        for (i, other) in self.procs.iter_mut().enumerate() {
            let named = match what {
                ExitWhat::Group => other.group_id == group,
                ExitWhat::Stonewall => other.phase == phase,
                ExitWhat::All => true,
            };
            if i as u32 == p || !named || other.state != State::Running {
                continue;
            }
            other.runtime_expired();
            if other.in_flight == 0 && !other.blocked {
                other.finish(now);
                finished.push(i as u32);
            }
        }
        for i in finished {
            self.process_done(i);
        }
    }
}

/// Interns the jobs' cgroup paths: id 0 is the root; every ancestor of a path gets an id before
/// the path itself. A job's `cgroup_weight` sets its leaf's weight (the last job to name a
/// weight for a path wins, as the last write to `blkio.weight` would).
pub fn cgroup_table(jobs: &[JobSpec]) -> Vec<Cgroup> {
    let mut groups = vec![Cgroup::root()];
    for job in jobs {
        let Some(path) = job.cgroup.as_deref() else { continue };
        let mut parent = 0u32;
        let mut prefix = String::new();
        for part in path.split('/').filter(|s| !s.is_empty()) {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            parent = match groups.iter().position(|g| g.path == prefix) {
                Some(i) => i as u32,
                None => {
                    let id = groups.len() as u32;
                    groups.push(Cgroup {
                        id,
                        parent: Some(parent),
                        path: prefix.clone(),
                        weight: Cgroup::DEFAULT_WEIGHT,
                    });
                    id
                }
            };
        }
        if let Some(w) = job.cgroup_weight {
            groups[parent as usize].weight = w;
        }
    }
    groups
}

fn cgroup_id(groups: &[Cgroup], path: Option<&str>) -> u32 {
    let Some(path) = path else { return 0 };
    let trimmed: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let joined = trimmed.join("/");
    groups.iter().position(|g| g.path == joined).map_or(0, |i| i as u32)
}

fn amount_bytes(amount: Amount, of_bytes: u64) -> u64 {
    match amount {
        Amount::Bytes(b) => b,
        Amount::Percent(p) => ((of_bytes as f64 * p / 100.0) as u64) / 512 * 512,
    }
}

/// Creates every job clone, lays out the files of jobs without `filename`, and assigns
/// reporting groups and stonewall phases as fio does.
fn build_processes(
    jobs: &JobFile,
    topology: &Topology,
    groups: &[Cgroup],
    seed: u64,
) -> Result<Vec<Process>, SimError> {
    let mut procs = Vec::new();
    let mut group_id = 0u32;
    let mut phase = 0u32;
    // Files of jobs without a filename are allocated one after another from the start of their
    // directory's device (the first device by default), like files written in order on a fresh
    // file system.
    let mut file_cursors: BTreeMap<String, u64> = BTreeMap::new();
    let mut pid = 1000u32;
    let mut users_of_name: BTreeMap<String, u32> = BTreeMap::new();
    for (j, spec) in jobs.jobs.iter().enumerate() {
        let at = &spec.source;
        if j > 0 && (spec.stonewall || spec.new_group) {
            group_id += 1;
        }
        if j > 0 && spec.stonewall {
            phase += 1;
        }
        if spec.time_based && spec.runtime_ns.is_none() {
            return Err(SimError(format!(
                "{at}: job `{}`: time_based needs a runtime (fio would run forever); add runtime=",
                spec.name
            )));
        }
        let prio = match spec.prioclass {
            Some(1) => IoPrio { class: IoPrioClass::RealTime, level: spec.prio.unwrap_or(4) },
            Some(2) => IoPrio { class: IoPrioClass::BestEffort, level: spec.prio.unwrap_or(4) },
            Some(3) => IoPrio { class: IoPrioClass::Idle, level: 7 },
            _ => match spec.prio {
                Some(level) => IoPrio { class: IoPrioClass::BestEffort, level },
                None => IoPrio::DEFAULT,
            },
        };
        let cgroup = cgroup_id(groups, spec.cgroup.as_deref());
        // A replayed log goes to the device it names, unless filename= or replay_redirect=
        // say otherwise; it addresses the whole device.
        let filename = match &spec.iolog {
            Some(log) => match spec.replay_redirect.clone().or(spec.filename.clone()) {
                Some(name) => Some(name),
                None if log.from_blktrace() => {
                    return Err(SimError(format!(
                        "{at}: job `{}`: the blktrace {} names its device by number ({}); say which device of the topology it replays on with filename= or replay_redirect=",
                        spec.name, log.source, log.file
                    )))
                }
                None => Some(log.file.clone()),
            },
            None => spec.filename.clone(),
        };
        for clone in 0..spec.numjobs.max(1) {
            let (route, region_start, region_len) = match &filename {
                Some(name) if spec.iolog.is_some() => {
                    let log = spec.iolog.as_ref().expect("matched");
                    let t = topology.target(name).map_err(|e| {
                        SimError(format!("{at}: job `{}`: iolog {}: {e}", spec.name, log.source))
                    })?;
                    if let Some(e) = log
                        .entries
                        .iter()
                        .find(|e| e.offset_bytes.saturating_add(e.len_bytes) > t.size_bytes)
                    {
                        return Err(SimError(format!(
                            "{}:{}: job `{}`: {} bytes at offset {} reach past the end of `{name}` ({} bytes); replay_redirect= it to a larger device",
                            log.source, e.line, spec.name, e.len_bytes, e.offset_bytes, t.size_bytes
                        )));
                    }
                    *users_of_name.entry(name.clone()).or_default() += 1;
                    (t.route, t.start_bytes, t.size_bytes)
                }
                Some(name) => {
                    let t = topology
                        .target(name)
                        .map_err(|e| SimError(format!("{at}: job `{}`: {e}", spec.name)))?;
                    let offset = amount_bytes(spec.offset, t.size_bytes);
                    if offset >= t.size_bytes {
                        return Err(SimError(format!("{at}: job `{}`: offset {offset} is past the end of `{name}` ({} bytes)", spec.name, t.size_bytes)));
                    }
                    let len =
                        spec.size.map_or(t.size_bytes - offset, |s| amount_bytes(s, t.size_bytes));
                    if offset + len > t.size_bytes {
                        return Err(SimError(format!(
                            "{at}: job `{}`: offset + size ({} bytes) reaches past the end of `{name}` ({} bytes); reduce size=",
                            spec.name,
                            offset + len,
                            t.size_bytes
                        )));
                    }
                    *users_of_name.entry(name.clone()).or_default() += 1;
                    (t.route, t.start_bytes + offset, len)
                }
                None => {
                    let Some(Amount::Bytes(size)) = spec.size else {
                        return Err(SimError(format!(
                            "{at}: job `{}`: without filename= the job works on a file of its own, which needs size= in bytes (e.g. size=1G); or set filename= to a device or partition",
                            spec.name
                        )));
                    };
                    let dir =
                        spec.directory.clone().unwrap_or_else(|| topology.devices[0].name.clone());
                    let t = topology.target(&dir).map_err(|e| {
                        SimError(format!("{at}: job `{}`: directory={dir}: {e}", spec.name))
                    })?;
                    let cursor = file_cursors.entry(dir.clone()).or_default();
                    let start = *cursor + amount_bytes(spec.offset, size);
                    if start + size > t.size_bytes {
                        return Err(SimError(format!(
                            "{at}: job `{}`: its files do not fit on `{dir}` ({} bytes); reduce size= or numjobs=",
                            spec.name, t.size_bytes
                        )));
                    }
                    *cursor = start + size;
                    (t.route, t.start_bytes + start, size)
                }
            };
            if region_len < 512 {
                return Err(SimError(format!(
                    "{at}: job `{}`: the region to do I/O on is empty",
                    spec.name
                )));
            }
            let owner = Owner {
                job: j as u32,
                pid,
                pgrp: pid,
                uid: spec.uid.unwrap_or(0),
                gid: spec.gid.unwrap_or(0),
                io_context: pid,
                cgroup,
                prio,
            };
            let tree = spec.nrfiles > 1;
            let io_limit = if tree {
                spec.io_size_bytes
            } else {
                spec.io_size_bytes.or(spec.size.map(|_| region_len))
            };
            let stream = procs.len() as u32;
            let rng_seed = job_seed(seed, spec);
            let region = Region { route, start_bytes: region_start, len_bytes: region_len };
            let mut rng = RandomStream::new(rng_seed, stream);
            let files = if tree {
                let files = FileTree::lay_out(
                    region_start,
                    region_len,
                    spec.nrfiles,
                    spec.filesize,
                    spec.file_service_type,
                    &mut rng,
                )
                .map_err(|e| SimError(format!("{at}: job `{}`: {e}", spec.name)))?;
                Some(files)
            } else {
                None
            };
            let mut proc =
                Process::new(spec, j, clone, group_id, phase, owner, region, io_limit, rng);
            if let Some(files) = files {
                proc.set_files(files);
            }
            procs.push(proc);
            pid += 1;
        }
    }
    if procs.is_empty() {
        return Err(SimError("the job file defines no jobs".to_string()));
    }
    Ok(procs)
}

/// fio seeds a job's generators from `randseed` (default 0x89) when `randrepeat` is set. The
/// simulation seed is mixed in so `--seed` varies random jobs; a job's explicit `randseed`
/// takes precedence over both. With `randrepeat=0` fio would seed from the clock: elevator
/// stays deterministic and uses the simulation seed alone.
fn job_seed(seed: u64, spec: &JobSpec) -> u64 {
    match spec.randseed {
        Some(s) => s,
        None if spec.randrepeat => seed ^ 0x89,
        None => seed.rotate_left(17) ^ 0x5eed,
    }
}
