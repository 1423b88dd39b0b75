//! Setting a run up: the cgroup table, one process per job clone with its region (a device,
//! partition or volume range, or a file of its own), its owner, random stream, file tree,
//! and — for buffered jobs — its task and file in the machine's page cache.

use std::collections::BTreeMap;

use elevator_core::{Cgroup, IoPrio, IoPrioClass, Owner, RandomStream};
use elevator_fio::rand as fio_rand;
use elevator_fio::rand::Draws as FioDraws;
use elevator_fio::{
    Amount, BlockSize, FadviseHint, FileServiceType, JobFile, JobSpec, RwMode, SyncIo,
};
use elevator_mm::pages::FileId;
use elevator_mm::vm::{Advice, BdiSpec, FileSpec, JournalSpec};
use elevator_mm::Vm;

use super::SimError;
use crate::files::FileTree;
use crate::filesystem::JOURNAL_OFFSET_BYTES;
use crate::intake::{host_file_bytes, is_regular_path, NULL_DEVICE};
use crate::iolog_out::IssueLog;
use crate::random_map::{RandomMap, MAX_RANDOM_MAP_BLOCKS};
use crate::steadystate::{SteadyStateJob, SteadyStateWindow};
use crate::topology::{Route, Topology};
use crate::verify::Verify;
use crate::workload::{Buffered, BufferedCalls, ByteLimits, Process, Region};

/// The machine's page cache being set up: its devices (the topology's devices, then its
/// volumes, each with its own readahead), one file per distinct region buffered jobs use,
/// one task per buffered job clone.
struct PageCacheSetup {
    vm: Vm,
    files: BTreeMap<(Route, u64, u64), FileId>,
    task_proc: Vec<u32>,
    devices: u32,
}

impl PageCacheSetup {
    fn new(topology: &Topology) -> PageCacheSetup {
        let bdis = bdi_specs(topology);
        let m = topology.machine;
        let mut vm = Vm::new(m.vm, &bdis);
        vm.context_readahead = m.context_readahead;
        vm.barriers = m.barriers;
        let devices = topology.devices.len() as u32;
        for fs in &topology.filesystems {
            let bdi = match fs.route {
                Route::Device(d) => d as u32,
                Route::Volume(v) => devices + v as u32,
            };
            vm.add_journal(JournalSpec {
                bdi,
                fs_start_bytes: fs.start_bytes,
                fs_len_bytes: fs.len_bytes,
                journal_start_bytes: fs.start_bytes + JOURNAL_OFFSET_BYTES,
                journal_bytes: fs.journal_bytes,
                commit_interval_ns: fs.commit_ns,
                ordered: fs.ordered,
                barrier: fs.barrier.unwrap_or(m.barriers),
            });
        }
        PageCacheSetup {
            vm,
            files: BTreeMap::new(),
            task_proc: Vec::new(),
            devices: topology.devices.len() as u32,
        }
    }

    /// The page-cache side of buffered process `proc` of `spec` on `region` (and its file
    /// tree, if it has one: a page-cache file per tree file).
    fn buffered(
        &mut self,
        spec: &JobSpec,
        region: Region,
        owner: Owner,
        proc: u32,
        tree: Option<&FileTree>,
    ) -> Buffered {
        let bdi = match region.route {
            Route::Device(d) => d as u32,
            Route::Volume(v) => self.devices + v as u32,
        };
        let tree_base = tree.map(|t| {
            let mut first = None;
            for f in &t.files {
                let data = if spec.create_on_open { 0 } else { f.len_bytes };
                let id = self.vm.add_file(FileSpec {
                    inode_bytes: Some(f.meta_offset_bytes),
                    dir_bytes: Some(f.meta_offset_bytes + DIR_BLOCK_OFFSET_BYTES),
                    ..FileSpec::new(bdi, f.data_offset_bytes, f.len_bytes, data)
                });
                first.get_or_insert(id);
            }
            first.expect("a tree has files")
        });
        let key = (region.route, region.start_bytes, region.len_bytes);
        let vm = &mut self.vm;
        let file = *self.files.entry(key).or_insert_with(|| {
            let data_bytes = if spec.file_append { 0 } else { region.len_bytes };
            vm.add_file(FileSpec::new(bdi, region.start_bytes, region.len_bytes, data_bytes))
        });
        let task = self.vm.add_task(owner);
        debug_assert_eq!(task as usize, self.task_proc.len());
        self.task_proc.push(proc);
        let random = matches!(
            spec.rw,
            RwMode::RandRead | RwMode::RandWrite | RwMode::RandTrim | RwMode::RandRw
        );
        let advice = match spec.fadvise_hint {
            FadviseHint::Off => None,
            FadviseHint::Random => Some(Advice::Random),
            FadviseHint::Sequential => Some(Advice::Sequential),
            FadviseHint::Auto => Some(if random { Advice::Random } else { Advice::Sequential }),
        };
        Buffered {
            task,
            file,
            base_bytes: region.start_bytes,
            sync: spec.sync_io != SyncIo::None,
            end_fsync: spec.end_fsync || spec.fsync_on_close,
            datasync: spec.fsync_every == 0 && spec.fdatasync_every > 0,
            // fio's fixup_options: pre_read clears invalidate ("pointless to pre-read and
            // then drop the cache"), at the open and at every later pass alike.
            invalidate: spec.invalidate && !spec.pre_read,
            advice,
            pre_read: spec.pre_read,
            tree_base,
            create: spec.create_on_open,
            calls: 1,
        }
    }

    /// Gives buffered io_uring process `proc` (of `owner`) `calls` call tasks in all, the
    /// first `b.task`'s followers, and after them io-wq's worker for its writes, each
    /// working through its open file (fio's one descriptor: one readahead state).
    fn add_uring_tasks(&mut self, b: &mut Buffered, owner: Owner, proc: u32, calls: u32) {
        for i in 1..=calls {
            let task = self.vm.add_task(owner);
            debug_assert_eq!(task as usize, self.task_proc.len());
            debug_assert_eq!(task, b.task + i);
            self.task_proc.push(proc);
            self.vm.share_open(task, b.file, b.task);
        }
        b.calls = calls;
    }
}

/// Page-cache tasks of all buffered processes at most: an io_uring job has `iodepth` + 1 of
/// them per process (a few hundred bytes each), so `numjobs` x `iodepth` could ask for
/// hundreds of millions.
pub const MAX_PAGE_CACHE_TASKS: usize = 1 << 18;

/// How a buffered job's system calls go out. io_uring's own concurrency is modelled for jobs
/// that read and write one file: reads wait for pages side by side, writes queue for
/// io-wq's one worker per file, and the syncs of `fsync=`, `fdatasync=` and
/// `sync_file_range=` (IORING_OP_FSYNC, IORING_OP_SYNC_FILE_RANGE, never hashed) each run
/// on a worker of their own beside them. Deviation: an io_uring job that trims, uses
/// `write_barrier=`, replays, verifies, adapts its depth (`latency_target`) or works in a
/// tree of files makes one call at a time.
fn buffered_calls(spec: &JobSpec, tree: bool) -> BufferedCalls {
    use elevator_fio::IoEngine;
    match spec.ioengine {
        IoEngine::Libaio if !tree => BufferedCalls::Libaio,
        e if e.serializes_per_file() && !tree && spec.max_in_flight() > 1 => {
            BufferedCalls::PosixAio
        }
        IoEngine::IoUring
            if !tree
                && !matches!(spec.rw, RwMode::Trim | RwMode::RandTrim)
                && spec.max_in_flight() > 1
                && spec.write_barrier_every == 0
                && spec.iolog.is_none()
                && !spec.verify
                && spec.latency_target_ns.is_none() =>
        {
            BufferedCalls::IoUring
        }
        _ => BufferedCalls::One,
    }
}

/// The page cache's backing devices: the topology's devices, then its volumes.
pub(super) fn bdi_specs(topology: &Topology) -> Vec<BdiSpec> {
    let mut bdis: Vec<BdiSpec> = topology
        .devices
        .iter()
        .map(|d| BdiSpec {
            read_ahead_kb: d.read_ahead_kb,
            max_sectors_kb: d.max_sectors_kb,
            nr_requests: d.nr_requests,
        })
        .collect();
    bdis.extend(topology.volumes.iter().map(|v| BdiSpec {
        read_ahead_kb: v.read_ahead_kb,
        max_sectors_kb: crate::topology::DEFAULT_MAX_SECTORS_KB,
        nr_requests: crate::topology::DEFAULT_NR_REQUESTS,
    }));
    bdis
}

/// Where a tree directory's block lies relative to its inode block: in the group's
/// reserved area after the inode table (see [`crate::files`]).
const DIR_BLOCK_OFFSET_BYTES: u64 = 511 * 4096;

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

/// The I/O priority a job's processes run at. fio 3.33 calls `ioprio_set` once `prio=` or
/// `prioclass=` is given, with level 0 if only the class is (the option has no default) and
/// best effort for class 0 or none (`ioprio_value`); otherwise the kernel derives the
/// priority from the nice value (`task_nice_ioprio`).
fn job_prio(spec: &JobSpec) -> IoPrio {
    match (spec.prioclass, spec.prio) {
        (None, None) => IoPrio::of_nice(spec.nice),
        (Some(3), _) => IoPrio { class: IoPrioClass::Idle, level: 7 },
        (Some(1), level) => IoPrio { class: IoPrioClass::RealTime, level: level.unwrap_or(0) },
        (_, level) => IoPrio { class: IoPrioClass::BestEffort, level: level.unwrap_or(0) },
    }
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

/// `percent` % of `of_bytes`, in fio's integer arithmetic for a whole percentage.
fn percent_of(percent: f64, of_bytes: u64) -> u64 {
    if percent.fract() == 0.0 && (0.0..=100.0).contains(&percent) {
        (u128::from(of_bytes) * percent as u128 / 100) as u64
    } else {
        (of_bytes as f64 * percent / 100.0) as u64
    }
}

/// Where clone `clone` of `spec` starts in a target or file of `of_bytes` (fio's
/// `get_start_offset`): `offset=` plus `offset_increment=` once per sub-job before it. fio
/// numbers a job's processes after the first in reverse (`add_job` makes them counting
/// `numjobs` down), so with `numjobs=3` the second process is sub-job 2 and the third 1.
/// Where either is a percentage of `of_bytes` the sum is rounded up to `offset_align=`, else
/// to the job's smallest block size; byte offsets are taken as given.
fn clone_offset(spec: &JobSpec, clone: u32, of_bytes: u64) -> u64 {
    let (step, mut align) = match spec.offset_increment {
        Amount::Percent(p) => (percent_of(p, of_bytes), true),
        Amount::Bytes(b) => (b, false),
    };
    let base = match spec.offset {
        Amount::Percent(p) if p > 0.0 => {
            align = true;
            percent_of(p, of_bytes)
        }
        Amount::Percent(_) => 0,
        Amount::Bytes(b) => b,
    };
    let subjob = if clone == 0 { 0 } else { spec.numjobs.max(1).saturating_sub(clone) };
    let offset = base.saturating_add(u64::from(subjob).saturating_mul(step));
    if !align {
        return offset;
    }
    let min_bs = spec.block_size.iter().map(|b| b.min_bytes()).min().unwrap_or(512);
    let unit = spec.offset_align.unwrap_or(min_bs).max(512);
    offset.div_ceil(unit).saturating_mul(unit)
}

/// Regular files named by `filename=`, by directory and path, as fio's setup grows them. fio
/// sets up one job and clone after another before any runs (`create_serialize`), each
/// finding the file as the ones before left it (a percentage offset counts from that length)
/// and extending it to its own offset and size (`setup_files`): a file shared by `numjobs=`
/// clones with `offset_increment=` holds all their regions.
#[derive(Clone, Debug, Default)]
struct NamedFileGrowth {
    /// Each file's length on this machine before any setup (0: it does not exist).
    found: BTreeMap<String, u64>,
    /// Each file's length as the setups so far left it.
    len_bytes: BTreeMap<String, u64>,
}

impl NamedFileGrowth {
    /// The lengths every job and clone of `jobs` leaves the files at.
    fn of(jobs: &JobFile, topology: &Topology) -> NamedFileGrowth {
        let mut growth = NamedFileGrowth::default();
        for spec in &jobs.jobs {
            let Some(name) = spec.filename.as_deref() else { continue };
            if spec.iolog.is_some() || spec.ioengine.is_null() || !is_regular_path(topology, name) {
                continue;
            }
            let dir = file_system_of(topology, spec.directory.as_deref());
            let key = format!("{dir}\0{name}");
            for clone in 0..spec.numjobs.max(1) {
                growth.set_up(&key, spec, name, clone, single_file_bytes(spec));
            }
        }
        growth
    }

    /// The files again as they were before any setup.
    fn restarted(&self) -> NamedFileGrowth {
        NamedFileGrowth { found: self.found.clone(), len_bytes: BTreeMap::new() }
    }

    /// Sets up clone `clone` of `spec` on file `key` (`name`): its region as fio places it
    /// in the file as it finds it — the offset, with a percentage of that length, and the
    /// length, `job_bytes` or the rest of the file — and the file grows to hold it.
    fn set_up(
        &mut self,
        key: &str,
        spec: &JobSpec,
        name: &str,
        clone: u32,
        job_bytes: Option<u64>,
    ) -> (u64, u64) {
        let real = match self.len_bytes.get(key) {
            Some(&len) => len,
            None => *self
                .found
                .entry(key.to_string())
                .or_insert_with(|| host_file_bytes(spec, name).unwrap_or(0)),
        };
        let offset = clone_offset(spec, clone, real);
        let len = job_bytes.unwrap_or(real.saturating_sub(offset));
        self.len_bytes.insert(key.to_string(), real.max(offset.saturating_add(len)));
        (offset, len)
    }

    /// How long file `key` is after the setups so far (0 if none).
    fn len_of(&self, key: &str) -> u64 {
        self.len_bytes.get(key).copied().unwrap_or(0)
    }
}

/// What [`build_processes`] makes: the processes, the page cache with a task per buffered
/// process (`task_proc`: which process each task is), and what it changed, one warning each.
pub(super) struct Built {
    pub procs: Vec<Process>,
    pub vm: Vm,
    pub task_proc: Vec<u32>,
    pub warnings: Vec<String>,
}

/// Creates every job clone, lays out the files of jobs without `filename`, and assigns
/// reporting groups and stonewall phases as fio does.
pub(super) fn build_processes(
    jobs: &JobFile,
    topology: &Topology,
    groups: &[Cgroup],
    seed: u64,
) -> Result<Built, SimError> {
    let mut procs = Vec::new();
    let mut warnings = Vec::new();
    let mut cache = PageCacheSetup::new(topology);
    let mut group_id = 0u32;
    let mut phase = 0u32;
    // Files of jobs without a filename are allocated one after another from the start of their
    // directory's device (the first device by default), like files written in order on a fresh
    // file system.
    let mut file_cursors: BTreeMap<String, u64> = BTreeMap::new();
    // Regular files named by filename=, by directory and path: where they were placed, how
    // long each is when the next job or clone is set up, and how long it ends.
    let mut named_files: BTreeMap<String, (Route, u64, u64)> = BTreeMap::new();
    let named_final = NamedFileGrowth::of(jobs, topology);
    let mut named_grown = named_final.restarted();
    let mut pid = 1000u32;
    let mut users_of_name: BTreeMap<String, u32> = BTreeMap::new();
    // Each job section's name and processes, for wait_for=.
    let mut sections: Vec<(&str, std::ops::Range<u32>)> = Vec::new();
    for (j, spec) in jobs.jobs.iter().enumerate() {
        let at = &spec.source;
        let waitees = waitees_of(spec, &sections)?;
        let first_proc = procs.len() as u32;
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
        let prio = job_prio(spec);
        let cgroup = cgroup_id(groups, spec.cgroup.as_deref());
        // cgroup v2 io.prio.class of the job's cgroup (blk-ioprio), before any scheduler.
        let prio = match topology
            .io_prio_class
            .iter()
            .find(|(p, _)| cgroup != 0 && groups[cgroup as usize].path == *p)
        {
            Some(&(_, policy)) => policy.apply(prio),
            None => prio,
        };
        // A replayed log goes to the device it names, unless filename= or replay_redirect=
        // say otherwise; it addresses the whole device.
        let filename = match &spec.iolog {
            Some(log) => match spec.replay_redirect.clone().or(spec.filename.clone()) {
                Some(name) => Some(name),
                None if log.other_file.is_some() => {
                    let (other, line) = log.other_file.clone().expect("matched");
                    return Err(SimError(format!(
                        "{}:{line}: job `{}`: the log names a second file `{other}` (it began with `{}`); say where their I/O goes with replay_redirect= (fio then sends every file's I/O there, at its recorded offsets), or split the log per device",
                        log.source, spec.name, log.file
                    )));
                }
                None if log.from_blktrace() => {
                    return Err(SimError(format!(
                        "{at}: job `{}`: the blktrace {} names its device by number ({}); say which device of the topology it replays on with filename= or replay_redirect=",
                        spec.name, log.source, log.file
                    )))
                }
                None => Some(log.file.clone()),
            },
            // Engines without block I/O run on the null device, whatever file they name.
            None if spec.ioengine.is_null() => Some(NULL_DEVICE.to_string()),
            None => spec.filename.clone(),
        };
        // fio 3.33 trims with the BLKDISCARD ioctl (os_trim), which a regular file refuses:
        // the job fails its first trim with ENOTTY (err=25). Deviation: refused up front.
        // The falloc engine trims a file by punching a hole (fallocate), as elevator does.
        let on_file = match &filename {
            Some(name) => spec.iolog.is_none() && is_regular_path(topology, name),
            None => true,
        };
        let ioctl_trims = spec.ioengine.name() != "falloc";
        if on_file && ioctl_trims && matches!(spec.rw, RwMode::Trim | RwMode::RandTrim) {
            return Err(SimError(format!(
                "{at}: job `{}`: rw={} on a regular file: fio trims with the BLKDISCARD ioctl, \
                 which a file refuses (ENOTTY, err=25); name a device or partition",
                spec.name,
                if spec.rw == RwMode::Trim { "trim" } else { "randtrim" }
            )));
        }
        for clone in 0..spec.numjobs.max(1) {
            // `file_base`: the route offset of byte 0 of the job's file or device, which
            // write_iolog's offsets count from (fio logs offsets in the file); `file_bytes`:
            // its size (fio's `real_file_size`).
            // A percentage offset's start in the passes after the first (regular files).
            let mut later_pass_start = None;
            let (route, file_base, file_bytes, region_start, region_len) = match &filename {
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
                    (t.route, t.start_bytes, t.size_bytes, t.start_bytes, t.size_bytes)
                }
                // A regular file: on the file system of its directory's device, shared by
                // every job (and clone) that names it; never touched on the real machine.
                Some(name) if is_regular_path(topology, name) => {
                    let dir = file_system_of(topology, spec.directory.as_deref());
                    let key = format!("{dir}\0{name}");
                    let job_bytes = single_file_bytes(spec).or_else(|| {
                        let fill = spec.fill_device && !named_files.contains_key(&key);
                        fill.then(|| fill_bytes(topology, &file_cursors, &dir, 1)).flatten()
                    });
                    let (offset, len) = named_grown.set_up(&key, spec, name, clone, job_bytes);
                    // The file as this clone's setup left it: fio keeps that length per job
                    // (its fio_file), whatever later setups make of the file.
                    let own_len = named_grown.len_of(&key);
                    let (route, start, size) = match named_files.get(&key) {
                        Some(&placed) => placed,
                        None => {
                            let Some(size) = job_bytes else {
                                return Err(SimError(format!(
                                    "{at}: job `{}`: filename={name} is a regular file, simulated on `{dir}`; it needs size= in bytes (e.g. size=1G), as fio does for a file that does not exist yet",
                                    spec.name
                                )));
                            };
                            // fio makes a new file as long as the job's offset and size, and
                            // each later job or clone extends it to its own (setup_files).
                            let size = named_final.len_of(&key).max(offset.saturating_add(size));
                            let placed = place_file(topology, &mut file_cursors, &dir, size, 0)
                                .map_err(|e| SimError(format!("{at}: job `{}`: {e}", spec.name)))?;
                            named_files.insert(key, placed);
                            placed
                        }
                    };
                    // Each job and clone covers its size= of the file from its own offset on.
                    let offset = offset.min(size);
                    let len = len.min(size - offset);
                    // fio's clear_io_state finds the start again from the file's length then
                    // (get_start_offset): a percentage of a file setup made or grew moves.
                    let percent = matches!(spec.offset, Amount::Percent(_))
                        || matches!(spec.offset_increment, Amount::Percent(_));
                    later_pass_start = percent
                        .then(|| clone_offset(spec, clone, own_len).min(own_len))
                        .filter(|&later| later != offset)
                        .map(|later| (start + later, start + own_len));
                    (route, start, size, start + offset, len)
                }
                Some(name) => {
                    let t = topology
                        .target(name)
                        .map_err(|e| SimError(format!("{at}: job `{}`: {e}", spec.name)))?;
                    let offset = clone_offset(spec, clone, t.size_bytes);
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
                    (t.route, t.start_bytes, t.size_bytes, t.start_bytes + offset, len)
                }
                None => {
                    let dir = file_system_of(topology, spec.directory.as_deref());
                    let fill = || {
                        let clones = spec.numjobs.max(1) - clone;
                        fill_bytes(topology, &file_cursors, &dir, clones)
                            .filter(|_| spec.fill_device)
                    };
                    let Some(size) = single_file_bytes(spec).or_else(fill) else {
                        return Err(SimError(format!(
                            "{at}: job `{}`: without filename= the job works on a file of its own, which needs size= in bytes (e.g. size=1G); or set filename= to a device or partition",
                            spec.name
                        )));
                    };
                    let offset = clone_offset(spec, clone, size);
                    let (route, start, len) =
                        place_file(topology, &mut file_cursors, &dir, size, offset)
                            .map_err(|e| SimError(format!("{at}: job `{}`: {e}", spec.name)))?;
                    (route, start - offset, offset + len, start, len)
                }
            };
            if region_len < 512 {
                return Err(SimError(format!(
                    "{at}: job `{}`: the region to do I/O on is empty",
                    spec.name
                )));
            }
            let min_bs = spec.block_size.iter().map(|b| b.min_bytes()).min().unwrap_or(0);
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
            // A time-based job loops over its files until its runtime is over, however
            // large `size` or `io_size` (fio's keep_running asks time_based first).
            let stream = procs.len() as u32;
            // fio's thread number: the process's place among all jobs' processes, from 1.
            let thread = u64::from(stream) + 1;
            let rng_seed = job_seed(seed, spec);
            let region = Region { route, start_bytes: region_start, len_bytes: region_len };
            let mut rng = RandomStream::new(rng_seed, stream);
            let files = if tree {
                let mut files = FileTree::lay_out(
                    region_start,
                    region_len,
                    spec.nrfiles,
                    spec.filesize,
                    min_bs,
                    spec.file_service_type.clone(),
                    &mut rng,
                    // fio's file_size_state (td_fill_rand_seeds_internal).
                    Some(fio_seed(seed, spec, thread, fio_rand::seed_index::FILE_SIZE)),
                )
                .map_err(|e| SimError(format!("{at}: job `{}`: {e}", spec.name)))?;
                files.set_service_nr(spec.file_service_nr);
                files.set_per_direction(spec.rw == RwMode::ReadWrite);
                if spec.rw.is_random() {
                    // Each file's own random map, as fio keeps one per file; lfsr gives each
                    // block once whatever norandommap says (see the single file's below).
                    let lfsr = spec.lfsr && spec.random_distribution.is_uniform();
                    let unit =
                        (!spec.norandommap || lfsr).then(|| Process::random_map_unit_bytes(spec));
                    let draws = offset_draws(seed, spec, thread);
                    files.set_random(Process::random_alignments(spec), unit, Some(draws));
                    if !spec.random_distribution.is_uniform()
                        || spec.percentage_random.iter().any(|&p| p < 100)
                    {
                        let w = format!(
                            "{at}: job `{}`: random_distribution= and percentage_random= are not applied within the files of a tree (nrfiles): offsets in each file are uniform",
                            spec.name
                        );
                        if !warnings.contains(&w) {
                            warnings.push(w);
                        }
                    }
                }
                if spec.file_service_type == FileServiceType::Random {
                    let seed = fio_seed(seed, spec, thread, fio_rand::seed_index::FILE);
                    files.set_fio_file_draws(FioDraws::new(seed, reseeds_each_pass(spec)));
                }
                files.set_open_limit(spec.open_files);
                // Files that spilled past the region (its metadata beside `size=` bytes of
                // files) take the room after it: the job's own file grows on its file
                // system, a device or file named by filename= must have the room.
                let end = region_start + files.footprint_bytes;
                if end > file_base + file_bytes {
                    let grown = filename.is_none()
                        && grow_file(
                            topology,
                            &mut file_cursors,
                            &file_system_of(topology, spec.directory.as_deref()),
                            file_base + file_bytes,
                            end,
                        );
                    if !grown {
                        return Err(SimError(format!(
                            "{at}: job `{}`: its {} files and their metadata need {} bytes from offset {}, past the end of where they go; lower nrfiles=/filesize= or raise size=",
                            spec.name,
                            spec.nrfiles,
                            files.footprint_bytes,
                            region_start - file_base
                        )));
                    }
                }
                Some(files)
            } else {
                None
            };
            // What a pass moves: a tree's files, else the region.
            let pass_bytes = files.as_ref().map_or(region_len, FileTree::total_bytes);
            // fio's own check (filesetup.c): the smallest block of any direction must fit in
            // the data set, size= or a tree's files' total where that is less (nrfiles=2
            // filesize=4k bs=16k: 8 KiB of data, refused).
            let data_set_bytes = pass_bytes.min(region_len);
            if spec.iolog.is_none() && min_bs > data_set_bytes {
                return Err(SimError(format!(
                    "{at}: job `{}`: blocksize is larger than data set range ({min_bs} > {data_set_bytes} bytes)",
                    spec.name
                )));
            }
            // A job on one file with io_size= past its region whose do_io stops at size=:
            // fio's keep_running runs passes as loops= does (clear_io_state: the file from
            // the start, the generators seeded again, the sync due first), bounded by
            // io_size= in all. A mixed job's offsets run out there; a norandommap job's never
            // do, and only an async engine's do_io counts its bytes against size= — except a
            // random job that writes without a map, which do_io lets run to io_size=.
            let unmapped = spec.rw.is_random() && spec.norandommap;
            let stops_at_size = if unmapped {
                spec.engine_is_async() && !spec.rw.writes()
            } else {
                spec.rw.is_mixed()
            };
            // A job that syncs at the end of each pass (end_fsync, fsync_on_close) and writes
            // runs its passes as loops= passes too: fio's do_io syncs before keep_running
            // starts the next, where the other jobs just wrap (a file tree too: every file is
            // synced at each pass's end). So does one whose later passes start elsewhere (a
            // percentage offset). A random job without a map that runs to io_size= in one
            // pass has no pass end to sync at or move from.
            let passes_end = !unmapped;
            let syncs_per_pass =
                (spec.end_fsync || spec.fsync_on_close) && spec.rw.writes() && passes_end;
            let moves = later_pass_start.is_some() && passes_end;
            let io_size_passes = spec.loops <= 1
                && (!tree || syncs_per_pass)
                && (stops_at_size || syncs_per_pass || moves)
                && spec.io_size_bytes.is_some_and(|s| s > pass_bytes);
            let looping =
                (spec.loops > 1 || io_size_passes) && spec.iolog.is_none() && !spec.time_based;
            // fio's io_bytes_exceeded: io_size= (or size=) times loops, over all passes.
            let job_bytes = looping
                .then(|| spec.io_size_bytes.unwrap_or(pass_bytes).saturating_mul(spec.loops));
            let io_limit = if spec.time_based {
                None
            } else if looping {
                // loops=: a pass ends where its offsets run out, an async engine's also at
                // size= (fio's do_io counts only queued I/O against it); all passes together
                // stop at io_size= (or size=) times loops (job_bytes below).
                spec.engine_is_async().then_some(pass_bytes)
            } else if tree {
                // fio's io_issue_bytes_exceeded: a mixed job stops at size=, with files
                // still holding room in the other direction (each direction has its own
                // position); otherwise the files run out there anyway.
                spec.io_size_bytes.or_else(|| spec.rw.is_mixed().then_some(pass_bytes))
            } else {
                spec.io_size_bytes.or(spec.size.map(|_| region_len))
            };
            // Under a non-uniform file choice files never run out (fio resets them): the job
            // does its size= of I/O, at most its files' total, as fio's size would be.
            let io_limit = match &files {
                Some(t)
                    if t.non_uniform() && io_limit.is_none() && !spec.time_based && !looping =>
                {
                    Some(region_len.min(t.total_bytes()))
                }
                _ => io_limit,
            };
            // fio's null engine has no page cache under it.
            let buffered = !spec.direct && spec.iolog.is_none() && !spec.ioengine.is_null();
            // Unaligned sizes drawn from a range are rarely whole sectors, which O_DIRECT
            // needs: real fio warns and fails the first such I/O with EINVAL.
            let unaligned_range = spec.block_size.iter().any(
                |b| matches!(b, BlockSize::Range { min_bytes, max_bytes } if min_bytes < max_bytes),
            );
            if spec.bs_unaligned && unaligned_range && spec.direct && !spec.ioengine.is_null() {
                return Err(SimError(format!(
                    "{at}: job `{}`: bs_unaligned with bsrange= and direct=1 draws sizes O_DIRECT \
                     refuses (real fio fails the first with EINVAL); drop one of them",
                    spec.name
                )));
            }
            if spec.zones.is_some() && spec.nrfiles <= 1 && spec.iolog.is_none() {
                let clash = if spec.rw_seq_nr != 1 || spec.rw_seq_add_bytes != 0 {
                    Some("rw=...:N")
                } else if spec.verify {
                    Some("verify=")
                } else {
                    None
                };
                if let Some(what) = clash {
                    return Err(SimError(format!(
                        "{at}: job `{}`: zonemode=strided with {what} is not modelled; drop one of them",
                        spec.name
                    )));
                }
            }
            let limits = ByteLimits { pass_bytes: io_limit, job_bytes };
            let mut proc =
                Process::new(spec, j, clone, group_id, phase, owner, region, limits, rng);
            let mix_seed = fio_seed(seed, spec, thread, fio_rand::seed_index::MIX);
            proc.seed_rwmix(FioDraws::new(mix_seed, reseeds_each_pass(spec)));
            // A tree's files draw their offsets themselves (FileTree::set_random).
            if spec.rw.is_random() && files.is_none() {
                proc.set_fio_offsets(offset_draws(seed, spec, thread));
            }
            // fio's null engine makes its file as large as the job's offset and size.
            let file_bytes = if spec.ioengine.is_null() {
                region_start - file_base + region_len
            } else {
                file_bytes
            };
            proc.set_file_extent(file_base, file_bytes);
            if let Some((later, file_end)) = later_pass_start {
                proc.set_later_pass_start(later, file_end);
            }
            // fio's random map: each block once per pass (filesetup.c's init_random_map).
            // random_generator=lfsr gives each block once per pass without a map, whatever
            // norandommap says: a map stands in for the shift register (deviation: the order
            // of the blocks is the map's draws, not the register's sequence).
            let lfsr = spec.lfsr && spec.random_distribution.is_uniform();
            if spec.rw.is_random()
                && (!spec.norandommap || lfsr)
                && files.is_none()
                && spec.iolog.is_none()
            {
                let unit = Process::random_map_unit_bytes(spec);
                // Under zonemode=strided the map covers a zone (init_random_map).
                let blocks = proc.random_span_bytes() / unit;
                if blocks > MAX_RANDOM_MAP_BLOCKS && lfsr {
                    let w = format!(
                        "{at}: job `{}`: random_generator=lfsr over {blocks} blocks, more than the {MAX_RANDOM_MAP_BLOCKS} a map may keep (MAX_RANDOM_MAP_BLOCKS): offsets are drawn with replacement (at this size a block is rarely drawn twice)",
                        spec.name
                    );
                    if !warnings.contains(&w) {
                        warnings.push(w);
                    }
                } else if blocks > MAX_RANDOM_MAP_BLOCKS && !spec.softrandommap {
                    return Err(SimError(format!(
                        "{at}: job `{}`: its random map would cover {blocks} blocks of {unit} bytes, more than the {MAX_RANDOM_MAP_BLOCKS} a map may (MAX_RANDOM_MAP_BLOCKS); set norandommap=1 (offsets drawn with replacement) or softrandommap=1 (go on without a map when it is too large)",
                        spec.name
                    )));
                }
                if (1..=MAX_RANDOM_MAP_BLOCKS).contains(&blocks) {
                    proc.set_random_map(RandomMap::new(unit, blocks));
                }
            }
            // fio's verify phase: what the job wrote, read back when its writes are done.
            if spec.verify && spec.do_verify && spec.rw.writes() {
                // The dry run takes no time: a time-based one would never end (fio's
                // documentation: verify_only does not support time_based).
                if spec.verify_only && spec.time_based {
                    return Err(SimError(format!(
                        "{at}: job `{}`: verify_only does not support time_based (fio's documentation says so): its writes are gone through without I/O, in no time; drop time_based",
                        spec.name
                    )));
                }
                if files.is_some() || spec.iolog.is_some() {
                    return Err(SimError(format!(
                        "{at}: job `{}`: verify= with nrfiles > 1 or read_iolog is not modelled; drop verify= (it only reads the written data back)",
                        spec.name
                    )));
                }
                let in_written_order = spec.rw.is_random() && !spec.norandommap;
                proc.verify = Some(Box::new(Verify::new(in_written_order)));
            }
            if spec.write_iolog.is_some() {
                // The files as fio names them in the log (`f->file_name`): the job's
                // filename, or fio's name for a job's own file (`JOB.CLONE.N`), under
                // `directory=` when it is given and the name is relative.
                let in_dir = |name: String| match spec.directory.as_deref() {
                    Some(dir) if !name.starts_with('/') => format!("{dir}/{name}"),
                    _ => name,
                };
                let log = match &files {
                    Some(tree) => IssueLog::tree(
                        (0..tree.files.len())
                            .map(|i| format!("{}.{clone}.{i}", spec.name))
                            .map(in_dir)
                            .zip(tree.files.iter().map(|f| f.data_offset_bytes))
                            .collect(),
                    ),
                    None => {
                        let name = match &filename {
                            Some(name) if spec.iolog.is_none() => in_dir(name.clone()),
                            Some(name) => name.clone(),
                            None => in_dir(format!("{}.{clone}.0", spec.name)),
                        };
                        IssueLog::new(name, file_base)
                    }
                };
                proc.issue_log = Some(Box::new(log));
            }
            if spec.rw.is_random() && files.is_none() && spec.iolog.is_none() {
                proc.set_offset_distribution(spec)
                    .map_err(|e| SimError(format!("{at}: job `{}`: {e}", spec.name)))?;
            }
            if buffered {
                let me = procs.len() as u32;
                let mut b = cache.buffered(spec, region, owner, me, files.as_ref());
                // Not in a file tree, whose completions are reaped as they come.
                let calls = buffered_calls(spec, files.is_some());
                if calls == BufferedCalls::IoUring {
                    let tasks = cache.task_proc.len() + spec.max_in_flight() as usize + 1;
                    if tasks > MAX_PAGE_CACHE_TASKS {
                        return Err(SimError(format!(
                            "{at}: job `{}`: io_uring through the page cache keeps iodepth={} calls for each of its processes, {tasks} page-cache tasks with the jobs before it: at most {MAX_PAGE_CACHE_TASKS} (lower iodepth or numjobs, or use direct=1)",
                            spec.name,
                            spec.max_in_flight()
                        )));
                    }
                    cache.add_uring_tasks(&mut b, owner, me, spec.max_in_flight());
                }
                proc.set_buffered(b, calls);
            }
            if spec.ioengine.serializes_per_file() && !buffered && files.is_none() {
                proc.set_posixaio();
            }
            if !buffered || files.is_some() {
                proc.drop_sync_file_range();
            }
            if let Some(mut files) = files {
                if buffered {
                    files.announce_opens();
                }
                proc.set_files(files);
            }
            proc.waitees = waitees.clone();
            procs.push(proc);
            pid += 1;
        }
        sections.push((spec.name.as_str(), first_proc..procs.len() as u32));
    }
    if procs.is_empty() {
        return Err(SimError("the job file defines no jobs".to_string()));
    }
    setup_steadystate(jobs, &mut procs)?;
    Ok(Built { procs, vm: cache.vm, task_proc: cache.task_proc, warnings })
}

/// fio's `td_steadystate_init` and `steadystate_setup`: the jobs of a reporting group must
/// agree on their criterion, and the ring goes to each job, or under `group_reporting` to
/// the last job of its group, which judges the group's summed samples.
fn setup_steadystate(jobs: &JobFile, procs: &mut [Process]) -> Result<(), SimError> {
    // fio compares its `td->ss`, all zeros for a job without a duration; agreeing with the
    // group's first job is agreeing with all of them.
    let effective = |p: &Process| {
        let ss = jobs.jobs[p.job].steadystate;
        ss.enabled().then_some(ss)
    };
    let mut first_of_group: BTreeMap<u32, usize> = BTreeMap::new();
    let mut last_with_ss: BTreeMap<u32, usize> = BTreeMap::new();
    for i in 0..procs.len() {
        let spec = &jobs.jobs[procs[i].job];
        let first = *first_of_group.entry(procs[i].group_id).or_insert(i);
        if effective(&procs[first]) != effective(&procs[i]) {
            return Err(SimError(format!(
                "{}: job `{}`: its steadystate options differ from job `{}`'s in the same reporting group (fio: \"steadystate options must be consistent within reporting groups\")",
                spec.source, spec.name, procs[first].name
            )));
        }
        if spec.steadystate.enabled() {
            procs[i].ss =
                Some(Box::new(SteadyStateJob::new(spec.steadystate, spec.group_reporting)));
            last_with_ss.insert(procs[i].group_id, i);
        }
    }
    for (i, p) in procs.iter_mut().enumerate() {
        let Some(ss) = p.ss.as_deref_mut() else { continue };
        if !ss.group_reporting || last_with_ss[&p.group_id] == i {
            ss.window = Some(SteadyStateWindow::new(ss.spec));
        }
    }
    Ok(())
}

/// The size of a job's one regular file: `filesize=` when given (a range's lower end: fio
/// draws a size in the range, a run here must not depend on a draw it does not replay), else
/// `size=` in bytes. fio's amount of I/O, `size=`, is then at most the file (`setup_files`
/// caps it at the files' total), so `size=999G` beside `filesize=128G` is a 128 GiB file.
/// With `nrfiles=` above 1 the files are a tree inside `size=` ([`FileTree`]), each
/// `filesize=` long.
fn single_file_bytes(spec: &JobSpec) -> Option<u64> {
    match (spec.filesize.filter(|_| spec.nrfiles <= 1), spec.size) {
        (Some((low, _)), _) => Some(low),
        (None, Some(Amount::Bytes(size))) => Some(size),
        (None, _) => None,
    }
}

/// The device, partition or volume whose file system holds a job's files: its `directory=`
/// when that names one, the default (first) device otherwise — a regular directory such as
/// `/data1` is on the default device's file system.
fn file_system_of(topology: &Topology, directory: Option<&str>) -> String {
    match directory {
        Some(dir) if topology.target(dir).is_ok() => dir.to_string(),
        _ => topology.devices[0].name.clone(),
    }
}

/// Lays out a file of `size` bytes after the previous files on `dir` (files begin after a
/// file system's journal), `offset` bytes into it: its route, first byte and length.
fn place_file(
    topology: &Topology,
    file_cursors: &mut BTreeMap<String, u64>,
    dir: &str,
    size: u64,
    offset: u64,
) -> Result<(Route, u64, u64), String> {
    let t = topology.target(dir).map_err(|e| format!("directory={dir}: {e}"))?;
    let cursor = file_cursors.entry(dir.to_string()).or_insert(fs_data_start(topology, &t));
    let start = cursor.saturating_add(offset);
    if start.saturating_add(size) > t.size_bytes {
        return Err(format!(
            "its files do not fit on `{dir}` ({} bytes); reduce size= or numjobs=",
            t.size_bytes
        ));
    }
    *cursor = start + size;
    Ok((t.route, t.start_bytes + start, size))
}

/// The processes `wait_for=` makes a job wait for: every clone of the one earlier section of
/// that name, checked as fio's `wait_for_ok` checks it (not itself, known, not twice).
fn waitees_of(
    spec: &JobSpec,
    earlier: &[(&str, std::ops::Range<u32>)],
) -> Result<Vec<u32>, SimError> {
    let Some(waitee) = spec.wait_for.as_deref() else { return Ok(Vec::new()) };
    let at = &spec.source;
    if waitee == spec.name {
        return Err(SimError(format!(
            "{at}: job `{}`: a job cannot wait for itself (wait_for={waitee})",
            spec.name
        )));
    }
    let mut named = earlier.iter().filter(|(name, _)| *name == waitee);
    match (named.next(), named.next()) {
        (Some((_, procs)), None) => Ok(procs.clone().collect()),
        (None, _) => Err(SimError(format!(
            "{at}: job `{}`: waitee job `{waitee}` unknown (wait_for= names a job defined before this one, as fio requires)",
            spec.name
        ))),
        (Some(_), Some(_)) => Err(SimError(format!(
            "{at}: job `{}`: multiple waitees `{waitee}` found; give the job sections distinct names to use wait_for=",
            spec.name
        ))),
    }
}

/// Where files begin on the file system of `t` (after its journal; 0 without one).
fn fs_data_start(topology: &Topology, t: &crate::topology::Target) -> u64 {
    topology
        .filesystems
        .iter()
        .find(|fs| fs.route == t.route && fs.start_bytes == t.start_bytes)
        .map_or(0, |fs| fs.data_start_bytes())
}

/// `fill_device`: the bytes of `dir`'s file system after the files placed there so far,
/// shared by the `clones` jobs still to place theirs (fio writes a new file until ENOSPC;
/// jobs that fill one file system together share it). Deviation: each gets its share as
/// its file's size at the start, rather than racing for the space.
fn fill_bytes(
    topology: &Topology,
    file_cursors: &BTreeMap<String, u64>,
    dir: &str,
    clones: u32,
) -> Option<u64> {
    let t = topology.target(dir).ok()?;
    let cursor = file_cursors.get(dir).copied().unwrap_or_else(|| fs_data_start(topology, &t));
    Some(t.size_bytes.saturating_sub(cursor) / u64::from(clones.max(1)) / 512 * 512)
}

/// Moves the end of the file that ends at `old_end` on `dir` (the last placed there) to
/// `new_end`, if the file system has the room: false otherwise.
fn grow_file(
    topology: &Topology,
    file_cursors: &mut BTreeMap<String, u64>,
    dir: &str,
    old_end: u64,
    new_end: u64,
) -> bool {
    let Ok(t) = topology.target(dir) else { return false };
    match file_cursors.get_mut(dir) {
        Some(cursor)
            if t.start_bytes + *cursor == old_end && new_end - t.start_bytes <= t.size_bytes =>
        {
            *cursor = new_end - t.start_bytes;
            true
        }
        _ => false,
    }
}

/// fio's `FIO_RANDSEED`: under `randrepeat` a random job's offsets are seeded with it times
/// the job's thread number, whatever `randseed` says (`td_fill_rand_seeds_internal`), moved
/// by the simulation seed as [`fio_seed`]'s are (the default `--seed 1` is fio's own).
const FIO_RANDSEED: u64 = 0xb189_9bed;

/// fio's `random_state` for the process with thread number `thread`: seeded at
/// `FIO_RAND_BLOCK_OFF`, or under `randrepeat` at `FIO_RANDSEED` times the thread number
/// (`td_fill_rand_seeds_internal`), again each pass where fio reseeds
/// ([`reseeds_each_pass`]).
fn offset_draws(seed: u64, spec: &JobSpec, thread: u64) -> FioDraws {
    let block_seed = if spec.randrepeat {
        (FIO_RANDSEED ^ (seed ^ 1)).wrapping_mul(thread)
    } else {
        fio_seed(seed, spec, thread, fio_rand::seed_index::BLOCK)
    };
    FioDraws::new(block_seed, reseeds_each_pass(spec))
}

/// Whether fio seeds a job's generators again at each pass (`clear_io_state` under
/// `rand_repeatable`): with `randrepeat` (the default) unless `randseed=` is set, which
/// fio's `fixup_options` takes to override `randrepeat` — after `setup_random_seeds` has
/// seeded the first pass as `randrepeat` says, so only the later passes see it.
fn reseeds_each_pass(spec: &JobSpec) -> bool {
    spec.randrepeat && spec.randseed.is_none()
}

/// The seed fio gives generator `index` of the process with thread number `thread` when
/// `randrepeat` holds or `randseed` is set (fio's `setup_random_seeds`), from `randseed`
/// (default 0x89) — moved by the simulation seed, so that `--seed` varies these draws too:
/// the default `--seed 1` is fio's own seeding. With `randrepeat=0` and no `randseed` fio
/// seeds from the system; elevator stays deterministic with [`job_seed`]'s mix.
fn fio_seed(seed: u64, spec: &JobSpec, thread: u64, index: u64) -> u64 {
    match spec.randseed {
        Some(s) => fio_rand::job_seed(s, thread, index),
        None if spec.randrepeat => {
            fio_rand::job_seed(fio_rand::DEFAULT_RANDSEED ^ (seed ^ 1), thread, index)
        }
        None => job_seed(seed, spec).wrapping_mul(thread).wrapping_add(index),
    }
}

/// fio seeds a job's generators from `randseed` (default 0x89) when `randrepeat` is set. The
/// simulation seed is mixed in so `--seed` varies random jobs; a job's explicit `randseed`
/// takes precedence over both. With `randrepeat=0` fio would seed from the clock: elevator
/// stays deterministic and uses the simulation seed alone.
fn job_seed(seed: u64, spec: &JobSpec) -> u64 {
    match spec.randseed {
        Some(s) => s,
        None if spec.randrepeat => seed ^ fio_rand::DEFAULT_RANDSEED,
        None => seed.rotate_left(17) ^ 0x5eed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_priorities_are_what_fio_and_the_kernel_set() {
        let spec = |prioclass: Option<u8>, prio: Option<u8>, nice: i8| {
            let mut s = elevator_fio::parse_str(
                "[j]\nrw=read\nsize=1m\n",
                "j.fio",
                std::path::Path::new("."),
                &|_| None,
            )
            .unwrap()
            .jobs
            .remove(0);
            (s.prioclass, s.prio, s.nice) = (prioclass, prio, nice);
            job_prio(&s)
        };
        use IoPrioClass::{BestEffort, Idle, RealTime};
        let p = |class, level| IoPrio { class, level };
        assert_eq!(spec(None, None, 0), IoPrio::DEFAULT);
        assert_eq!(spec(None, None, 19), p(IoPrioClass::None, 7));
        assert_eq!(spec(None, Some(6), 19), p(BestEffort, 6));
        // A class alone: level 0 (fio's prio has no default), class 0 is best effort.
        assert_eq!(spec(Some(1), None, 0), p(RealTime, 0));
        assert_eq!(spec(Some(2), None, 0), p(BestEffort, 0));
        assert_eq!(spec(Some(0), None, 0), p(BestEffort, 0));
        assert_eq!(spec(Some(0), Some(3), 0), p(BestEffort, 3));
        assert_eq!(spec(Some(3), Some(2), 0), p(Idle, 7));
    }
}
