//! The page cache of the iSCSI target machine: `fileio` remote volumes read through it, each
//! target thread a task with its own open file (or all sharing one), so the exported
//! device's readahead, context readahead and `max_sectors_kb` act as on seed 002's target.
//!
//! All `fileio` volumes of a topology are served by one target machine, configured like the
//! initiator's (`[machine]`). Its block I/O goes to the exported devices tagged with
//! [`TARGET_TAG`] so completions come back here.
//!
//! A thread reads a command's data as SCST's `vdisk_exec_read` does: one `vfs_readv` with an
//! iovec per page of the command's scatter-gather buffer, which 2.6's
//! `generic_file_aio_read` serves one segment at a time — a `do_generic_file_read` of one
//! page each. Readahead therefore sees requests of one page (seed 002: "SCST seems to
//! [break] up the client side 64K reads into server side 4K reads (above readahead
//! layer)"): a miss that is not sequential for the thread's own readahead state reads that
//! page alone, and vanilla readahead ramps up from a one-page request where context
//! readahead finds the stream in the cache.

use std::collections::BTreeMap;

use elevator_core::Nanos;
use elevator_mm::pages::FileId;
use elevator_mm::vm::{BdiSpec, FileSpec};
use elevator_mm::{Output, Syscall, SyscallResult, TaskId, Vm};

use super::{Engine, Event};
use crate::stack::TargetRead;
use crate::topology::{Topology, VolumeKind};

/// The tag bit of the target machine's I/O (the initiator's page cache uses the rest).
pub(super) const TARGET_TAG: u32 = 1 << 31;

/// The iovec a target thread reads at a time: one page of the command's buffer.
const IOVEC_BYTES: u64 = 4096;

/// A target thread's command being read, iovec by iovec.
#[derive(Clone, Copy, Debug, Default)]
struct TaskRead {
    file: FileId,
    offset_bytes: u64,
    /// Bytes of the command still to read (the last iovec may be short).
    left_bytes: u64,
}

/// The target machine's page cache and the tasks of the threads of its `fileio` volumes.
pub(super) struct TargetCache {
    vm: Vm,
    out: Output,
    /// The exported device of each `fileio` volume, as a file of the target's cache.
    files: BTreeMap<usize, FileId>,
    /// The task of each (volume, thread).
    tasks: BTreeMap<(usize, u32), TaskId>,
    /// The stack node each task's read answers.
    task_node: Vec<u32>,
    /// Each task's command in progress: the next page to read and how many are left.
    task_read: Vec<TaskRead>,
    armed_ns: Option<Nanos>,
}

impl TargetCache {
    /// The target machine, if any remote volume reads through it.
    pub(super) fn new(topology: &Topology, bdis: &[BdiSpec]) -> Option<TargetCache> {
        let mut vm = None;
        let mut files = BTreeMap::new();
        let mut tasks = BTreeMap::new();
        for (v, volume) in topology.volumes.iter().enumerate() {
            let VolumeKind::Remote(spec) = volume.kind else { continue };
            if !spec.fileio {
                continue;
            }
            let m = topology.machine;
            let vm = vm.get_or_insert_with(|| {
                let mut vm = Vm::new(m.vm, bdis);
                vm.context_readahead = m.context_readahead;
                vm.barriers = m.barriers;
                vm
            });
            let member = volume.members[0];
            let bdi = match member.route {
                crate::topology::Route::Device(d) => d as u32,
                crate::topology::Route::Volume(w) => topology.devices.len() as u32 + w as u32,
            };
            let size = volume.size_bytes;
            let file = vm.add_file(FileSpec::new(bdi, member.start_bytes, size, size));
            files.insert(v, file);
            let first = vm.add_task(spec.thread_owner(0, u32::MAX));
            tasks.insert((v, 0), first);
            for t in 1..spec.threads {
                let task = vm.add_task(spec.thread_owner(t, u32::MAX));
                if spec.shared_readahead {
                    vm.share_open(task, file, first);
                }
                tasks.insert((v, t), task);
            }
        }
        let vm = vm?;
        let n = tasks.len();
        Some(TargetCache {
            vm,
            out: Output::default(),
            files,
            tasks,
            task_node: vec![u32::MAX; n],
            task_read: vec![TaskRead::default(); n],
            armed_ns: None,
        })
    }

    /// Reads the task's command on from where it is, one page-sized iovec per read call: the
    /// calls the cache serves at once go by, and it stops at one that waits (its wake says
    /// when to go on) or at the last. Returns the event that goes on after calls that took
    /// time: the next iovecs, or the command answered.
    fn read_iovecs(
        &mut self,
        task: TaskId,
        now: Nanos,
        out: &mut Output,
    ) -> Option<(Nanos, Event)> {
        let r = &mut self.task_read[task as usize];
        let whole = r.left_bytes / IOVEC_BYTES;
        let (len, count) = if whole > 0 { (IOVEC_BYTES, whole) } else { (r.left_bytes, 1) };
        let call = Syscall::Read { file: r.file, offset: r.offset_bytes, len, count };
        let (done, blocked, at_ns) = match self.vm.syscall(task, call, now, out) {
            SyscallResult::Done { count, at_ns } => (count, false, at_ns),
            SyscallResult::Blocked { count } => (count + 1, true, now),
        };
        let bytes = (done * len).min(r.left_bytes);
        r.offset_bytes += bytes;
        r.left_bytes -= bytes;
        if blocked {
            return None;
        }
        Some((at_ns, self.go_on(task)))
    }

    /// What follows a task's finished read call: its next iovecs, or, with none left, the
    /// command answered (the task forgets it).
    fn go_on(&mut self, task: TaskId) -> Event {
        if self.task_read[task as usize].left_bytes > 0 {
            return Event::TargetReadOn(task);
        }
        Event::TargetDone(std::mem::replace(&mut self.task_node[task as usize], u32::MAX))
    }

    /// See [`elevator_mm::Vm::set_read_congested`].
    pub(super) fn set_read_congested(&mut self, bdi: u32, congested: bool) {
        self.vm.set_read_congested(bdi, congested);
    }

    /// The target's page-cache counters.
    pub(super) fn stats(&self) -> elevator_mm::vm::VmStats {
        self.vm.stats
    }
}

impl Engine {
    /// Starts the reads target threads asked the stack for.
    pub(super) fn target_reads(&mut self) {
        if self.stack.target_reads.is_empty() {
            return;
        }
        let reads = std::mem::take(&mut self.stack.target_reads);
        let now = self.now_ns;
        let Some(tc) = self.target.as_mut() else {
            unreachable!("fileio volumes have a target cache")
        };
        let mut out = std::mem::take(&mut tc.out);
        let mut events = Vec::new();
        for r in &reads {
            let TargetRead { volume, thread, node, offset_bytes, len_bytes } = *r;
            let task = tc.tasks[&(volume, thread)];
            let file = tc.files[&volume];
            tc.task_node[task as usize] = node;
            tc.task_read[task as usize] = TaskRead { file, offset_bytes, left_bytes: len_bytes };
            if let Some(e) = tc.read_iovecs(task, now, &mut out) {
                events.push(e);
            }
        }
        for (at, e) in events {
            self.push(at, e);
        }
        self.apply_target(&mut out);
    }

    /// Issues what the target's cache asked for and schedules the reads it answered.
    pub(super) fn apply_target(&mut self, out: &mut Output) {
        let now = self.now_ns;
        let mut ios = std::mem::take(&mut out.ios);
        for io in &mut ios {
            io.tag |= TARGET_TAG;
        }
        self.submit_page_cache_ios(&mut ios);
        self.run_waited_queues(&mut out.unplug);
        let tc = self.target.as_mut().expect("a target cache");
        let mut events = Vec::new();
        for w in out.wakes.drain(..) {
            // The iovec it waited for is read: the next one, or the command is done.
            events.push((w.at_ns.max(now), tc.go_on(w.task)));
        }
        for t in out.runnable.drain(..) {
            events.push((now, Event::TargetRun(t)));
        }
        let timer = tc.vm.next_timer_ns().map(|t| t.max(now));
        if let Some(t) = timer {
            if tc.armed_ns.is_none_or(|armed| t < armed) {
                tc.armed_ns = Some(t);
                events.push((t, Event::TargetTimer));
            }
        }
        tc.out = std::mem::take(out);
        for (at, e) in events {
            self.push(at, e);
        }
    }

    /// Block I/O of the target's cache completed.
    pub(super) fn target_io_done(&mut self, tag: u32) {
        let now = self.now_ns;
        let tc = self.target.as_mut().expect("a target cache");
        let mut out = std::mem::take(&mut tc.out);
        tc.vm.io_done(tag & !TARGET_TAG, now, &mut out);
        self.apply_target(&mut out);
    }

    /// A target thread's read returned: the command's data is ready to go back.
    pub(super) fn target_done(&mut self, node: u32) {
        let mut leaves = std::mem::take(&mut self.leaves);
        let root = self.stack.piece_done(node, self.now_ns, &mut leaves);
        debug_assert!(root.is_none(), "a remote command answers over the link");
        self.send_leaves(&mut leaves);
        self.leaves = leaves;
        self.kick_touched();
    }

    pub(super) fn target_timer(&mut self) {
        let now = self.now_ns;
        let tc = self.target.as_mut().expect("a target cache");
        if tc.armed_ns != Some(now) {
            return;
        }
        tc.armed_ns = None;
        let mut out = std::mem::take(&mut tc.out);
        tc.vm.timer(now, &mut out);
        self.apply_target(&mut out);
        self.kick_touched();
    }

    /// A target thread goes on with its command's next iovecs.
    pub(super) fn target_read(&mut self, task: TaskId) {
        let now = self.now_ns;
        let tc = self.target.as_mut().expect("a target cache");
        let mut out = std::mem::take(&mut tc.out);
        if let Some((at, e)) = tc.read_iovecs(task, now, &mut out) {
            self.push(at, e);
        }
        self.apply_target(&mut out);
        self.kick_touched();
    }

    pub(super) fn target_run(&mut self, task: TaskId) {
        let now = self.now_ns;
        let tc = self.target.as_mut().expect("a target cache");
        let mut out = std::mem::take(&mut tc.out);
        tc.vm.run(task, now, &mut out);
        self.apply_target(&mut out);
        self.kick_touched();
    }
}
