//! Buffered jobs: their I/O as system calls into the machine's page cache
//! ([`elevator_mm::Vm`]), and the block I/O the cache issues, routed like any other.

use elevator_core::{Nanos, Op};
use elevator_mm::vm::Advice;
use elevator_mm::{Output, Syscall, SyscallResult};

use super::{Engine, Event};
use crate::stack::NO_NODE;
use crate::workload::{FlushCall, Io, PendingCall, State, TreeIo};

impl Engine {
    /// The page-cache device number of a route (devices first, then volumes).
    fn route_of_bdi(&self, bdi: u32) -> crate::topology::Route {
        if bdi < self.bdi_volumes_base {
            crate::topology::Route::Device(bdi as usize)
        } else {
            crate::topology::Route::Volume((bdi - self.bdi_volumes_base) as usize)
        }
    }

    /// A buffered job opens its file as fio does: drop its cached pages (`invalidate`),
    /// advise the kernel (`fadvise_hint`), read it in (`pre_read`). None of it is timed.
    pub(super) fn open_buffered(&mut self, p: u32) {
        let Some(b) = self.procs[p as usize].buffered else { return };
        let mut out = std::mem::take(&mut self.vm_out);
        let now = self.now_ns;
        let len = self.procs[p as usize].region.len_bytes;
        let mut advise = |vm: &mut elevator_mm::Vm, advice| {
            let call = Syscall::Fadvise { file: b.file, offset: 0, len, advice };
            vm.syscall(b.task, call, now, &mut out);
        };
        if b.invalidate {
            advise(&mut self.vm, Advice::DontNeed);
        }
        if let Some(a) = b.advice {
            advise(&mut self.vm, a);
        }
        if b.pre_read {
            self.vm.preload(b.file, 0, len);
        }
        self.apply_vm(&mut out);
        self.vm_out = out;
    }

    /// A buffered job's next I/O `io` (and the run of identical calls after it) as a
    /// system call, made by a task of the job that is not in one. Whether the job's thread
    /// is free to go on: the call waits (for I/O or a throttled writer's pause) or went to
    /// an io_uring worker, rather than running on the thread's CPU.
    pub(super) fn buffered_call(&mut self, p: u32, io: Io) -> bool {
        let pi = p as usize;
        let slot = self.procs[pi].free_call_slot().expect("a task free for the call");
        if !(self.procs[pi].uring && io.op == Op::Write) {
            return self.make_call(p, slot, io, None);
        }
        // io_uring: the write goes to io-wq, whose worker for the file takes it when the
        // writes before it are done.
        let now = self.now_ns;
        let proc = &mut self.procs[pi];
        if proc.uring_write_slot.is_some() {
            let cpu_end_ns = now + self.vm.config().syscall_ns;
            let (op, len_bytes) = (io.op, io.len_bytes);
            proc.pending_calls[slot as usize] =
                Some(PendingCall { op, len_bytes, start_ns: now, cpu_end_ns });
            proc.uring_writes_queued.push_back((slot, io));
        } else {
            proc.uring_write_slot = Some(slot);
            self.make_call(p, slot, io, Some(now));
        }
        true
    }

    /// An io_uring job's write finished: its worker takes the next queued, if any.
    fn next_uring_write(&mut self, p: u32) {
        let proc = &mut self.procs[p as usize];
        proc.uring_write_slot = None;
        let Some((slot, io)) = proc.uring_writes_queued.pop_front() else { return };
        let submitted_ns = proc.pending_calls[slot as usize].expect("a queued write").start_ns;
        proc.pending_calls[slot as usize] = None;
        proc.uring_write_slot = Some(slot);
        self.make_call(p, slot, io, Some(submitted_ns));
    }

    /// Makes call `io` in the job's call `slot`: with the slot's task now, or, for an
    /// io_uring write that io-wq's worker runs now, with the worker's task, submitted at
    /// `submitted_ns`. Whether it waits (see [`Engine::buffered_call`]).
    fn make_call(&mut self, p: u32, slot: u32, io: Io, submitted_ns: Option<Nanos>) -> bool {
        let pi = p as usize;
        let b = self.procs[pi].buffered.expect("buffered");
        let task = if submitted_ns.is_some() { b.task + b.calls } else { b.task + slot };
        let now = self.now_ns;
        let cost = self.vm.config().syscall_cost_ns(io.len_bytes);
        let mut out = std::mem::take(&mut self.vm_out);
        // fio reopens the file for every pass (a time-based job's, `loops=`, `io_size` over
        // `size`; a random job's when its map is full): `invalidate` drops its pages again
        // (the read-latency monitor's "dump it from cache and start again").
        let reopened = self.procs[pi].take_wrapped() && b.invalidate;
        if self.procs[pi].take_drop_cache() || reopened {
            let len = self.procs[pi].region.len_bytes;
            let call = Syscall::Fadvise { file: b.file, offset: 0, len, advice: Advice::DontNeed };
            // By the task making this call: the job's others may be inside theirs.
            self.vm.syscall(task, call, now, &mut out);
        }
        // In a file tree the call goes to the tree's file; a flush to the last one used.
        let tree_io = self.procs[pi].tree_io.take();
        let (file, base) = match (b.tree_base, tree_io) {
            (Some(first), Some(TreeIo::Open(n) | TreeIo::Reopen(n) | TreeIo::Data(n))) => {
                self.procs[pi].tree_last = Some(n);
                let f = first + n as u32;
                (f, self.vm.file_spec(f).base_bytes)
            }
            (Some(first), None) => {
                let f = first + self.procs[pi].tree_last.unwrap_or(0) as u32;
                (f, self.vm.file_spec(f).base_bytes)
            }
            (None, _) => (b.file, b.base_bytes),
        };
        // A flush carries no offset; every other call lies inside the job's region.
        let offset = io.offset_bytes.saturating_sub(base);
        // Calls of a run of random hits made before the one the page cache serves.
        let mut hits_before = 0;
        let call = match io.op {
            // Opened again: the file exists (create_on_open created it the first time).
            _ if matches!(tree_io, Some(TreeIo::Reopen(_))) => Syscall::Open { file },
            _ if matches!(tree_io, Some(TreeIo::Open(_))) => {
                if b.create {
                    Syscall::Create { file }
                } else {
                    Syscall::Open { file }
                }
            }
            Op::Read | Op::Write => {
                let cached = self.procs[pi].may_run_random_hits(&io) && self.vm.file_cached(file);
                let count = self.procs[pi].run_len(&io, now, cost, cached);
                if cached {
                    // Random hits: the page cache serves one call; the run's others, hits
                    // too wherever they land, are counted here, before it.
                    // Deviation: their pages are not marked accessed, nor their readahead
                    // markers seen (reading a cached page starts no I/O either way).
                    hits_before = count - 1;
                    Syscall::Read { file, offset, len: io.len_bytes, count: 1 }
                } else if io.op == Op::Read {
                    Syscall::Read { file, offset, len: io.len_bytes, count }
                } else {
                    Syscall::Write { file, offset, len: io.len_bytes, count, sync: b.sync }
                }
            }
            Op::Flush => match io.flush {
                // fio makes no call for an empty span (do_sync_file_range): no flags, no work.
                Some(FlushCall::Range(flags)) => Syscall::SyncFileRange {
                    file,
                    offset,
                    len: io.len_bytes,
                    flags: if io.len_bytes > 0 { flags } else { Default::default() },
                },
                _ => Syscall::Fsync { file, data_only: b.datasync },
            },
            Op::Discard => {
                // Trimming a file punches a hole: its pages go, nothing is written.
                Syscall::Fadvise { file, offset, len: io.len_bytes, advice: Advice::DontNeed }
            }
        };
        let r = self.vm.syscall(task, call, now, &mut out);
        let proc = &mut self.procs[pi];
        let waits = match r {
            SyscallResult::Done { count, at_ns } => {
                let before = count - 1 + hits_before;
                proc.extend_run(&io, before, now);
                proc.record_run(io.op, io.len_bytes, before, now, cost);
                let start = now + before * cost;
                let (start_ns, cpu_end_ns) = match submitted_ns {
                    Some(t) => (t, t + self.vm.config().syscall_ns),
                    None => (start, at_ns + hits_before * cost),
                };
                proc.pending_calls[slot as usize] =
                    Some(PendingCall { op: io.op, len_bytes: io.len_bytes, start_ns, cpu_end_ns });
                self.push(at_ns + hits_before * cost, Event::CallDone(task));
                false
            }
            SyscallResult::Blocked { count } => {
                proc.extend_run(&io, count, now);
                proc.record_run(io.op, io.len_bytes, count, now, cost);
                let start = submitted_ns.unwrap_or(now + count * cost);
                proc.pending_calls[slot as usize] = Some(PendingCall {
                    op: io.op,
                    len_bytes: io.len_bytes,
                    start_ns: start,
                    cpu_end_ns: start + self.vm.config().syscall_ns,
                });
                true
            }
        };
        self.apply_vm(&mut out);
        self.vm_out = out;
        waits
    }

    /// Sends a page cache's block I/O down to its devices and volumes (its tags come back
    /// with the completions).
    pub(super) fn submit_page_cache_ios(&mut self, ios: &mut Vec<elevator_mm::BlockIo>) {
        let now = self.now_ns;
        let mut leaves = Vec::new();
        let mut stacked = false;
        for io in ios.drain(..) {
            match self.route_of_bdi(io.bdi) {
                crate::topology::Route::Device(d) => {
                    // Readahead and background writeback leave the queue plugged; sync
                    // writes and flushes run it (WRITE_SYNC's unplug bit).
                    let lazy = match io.op {
                        elevator_core::Op::Read => true,
                        elevator_core::Op::Write => !io.sync,
                        _ => false,
                    };
                    let q = &mut self.queues[d];
                    // The initiator's page cache, not the iSCSI target's.
                    let initiator = io.tag & super::target::TARGET_TAG == 0;
                    if initiator {
                        if let Some(at) = self.vm.dirty_sleep_ns(io.bdi) {
                            q.note_dirty_sleep(at);
                        }
                    }
                    if lazy {
                        q.begin_lazy();
                    }
                    let held = q.plug_bio(
                        crate::block::PAGE_CACHE_PROCESS,
                        NO_NODE,
                        io.tag,
                        io.op,
                        io.offset_bytes,
                        io.len_bytes,
                        io.flags(),
                        io.owner,
                        now,
                    );
                    if lazy {
                        q.unplug_lazy(u32::MAX, now);
                    } else {
                        q.unplug(u32::MAX, now);
                    }
                    if held && initiator {
                        self.page_cache_held.push(io.tag);
                    }
                    self.touched[d] = true;
                }
                crate::topology::Route::Volume(v) => {
                    stacked = true;
                    self.stack.submit(
                        u32::MAX,
                        io.tag,
                        v,
                        io.op,
                        io.offset_bytes,
                        io.len_bytes,
                        io.flags(),
                        io.owner,
                        now,
                        &mut leaves,
                    );
                }
            }
        }
        // Even with no pieces yet (a remote volume's command is on the link) the stack may
        // now want its timer.
        if stacked {
            self.send_leaves(&mut leaves);
        }
    }

    /// Runs the request queues of the devices a page cache's task now waits on
    /// (`sync_page` → `blk_run_backing_dev`; through a volume, each device under it).
    pub(super) fn run_waited_queues(&mut self, bdis: &mut Vec<u32>) {
        let mut devices = Vec::new();
        for bdi in bdis.drain(..) {
            match self.route_of_bdi(bdi) {
                crate::topology::Route::Device(d) => devices.push(d),
                crate::topology::Route::Volume(v) => self.stack.member_devices(v, &mut devices),
            }
        }
        for d in devices {
            self.queues[d].run_queue(self.now_ns);
            self.touched[d] = true;
        }
    }

    /// A page-cache I/O completed: the initiator's or the target's.
    pub(super) fn page_cache_io_done(&mut self, tag: u32) {
        if tag & super::target::TARGET_TAG != 0 {
            self.target_io_done(tag);
        } else {
            self.vm_io_done(tag);
        }
    }

    /// The system call page-cache task `task` made for its buffered process returned.
    pub(super) fn call_done(&mut self, task: elevator_mm::TaskId) {
        let p = self.task_proc[task as usize];
        let proc = &mut self.procs[p as usize];
        let b = proc.buffered.expect("buffered");
        let slot = match proc.uring_write_slot {
            Some(slot) if task == b.task + b.calls => slot,
            _ => task - b.task,
        } as usize;
        let Some(call) = proc.pending_calls[slot].take() else { return };
        if self.now_ns < call.start_ns {
            // The call's wait ended while the calls before it in its run were still on the
            // CPU: it returns once it has started.
            proc.pending_calls[slot] = Some(call);
            self.push(call.start_ns, Event::CallDone(task));
            return;
        }
        let uring_write = proc.uring && call.op == Op::Write;
        let submitted_ns = proc.call_submitted_ns(&call, self.now_ns);
        let wake =
            proc.completed(call.op, call.len_bytes, call.start_ns, submitted_ns, self.now_ns);
        if uring_write {
            self.next_uring_write(p);
        }
        if self.procs[p as usize].state == State::Done {
            self.process_done(p);
        } else if let Some(r) = wake {
            self.resume(p, r);
        }
    }

    /// Tells the page cache which of its bios the devices' group controls let go (they
    /// take request slots now): before anything else of an event, so a bio is never
    /// reported after its completion. The target's cache is not told (its bios keep their
    /// slots while held), nor are bios held below a volume.
    pub(super) fn note_page_cache_releases(&mut self) {
        let mut released = std::mem::take(&mut self.page_cache_released);
        for q in &mut self.queues {
            q.take_page_cache_released(&mut released);
        }
        for tag in released.drain(..) {
            if tag & super::target::TARGET_TAG == 0 {
                self.vm.io_released(tag);
            }
        }
        self.page_cache_released = released;
    }

    /// Block I/O of the page cache completed.
    pub(super) fn vm_io_done(&mut self, tag: u32) {
        self.note_page_cache_releases();
        let mut out = std::mem::take(&mut self.vm_out);
        self.vm.io_done(tag, self.now_ns, &mut out);
        self.apply_vm(&mut out);
        self.vm_out = out;
    }

    /// Issues what the page cache asked for, schedules the returns of the calls it
    /// finished, and arms its timer.
    pub(super) fn apply_vm(&mut self, out: &mut Output) {
        let now = self.now_ns;
        let mut ios = std::mem::take(&mut out.ios);
        self.submit_page_cache_ios(&mut ios);
        // Bios the group control held free their request slots: what that lets the page
        // cache issue (a flusher, a writer waiting for a slot) goes out the same way.
        while !self.page_cache_held.is_empty() {
            let mut more = Output::default();
            for tag in std::mem::take(&mut self.page_cache_held) {
                self.vm.io_held(tag, now, &mut more);
            }
            self.submit_page_cache_ios(&mut more.ios);
            out.wakes.append(&mut more.wakes);
            out.runnable.append(&mut more.runnable);
            out.unplug.append(&mut more.unplug);
        }
        out.ios = ios;
        self.run_waited_queues(&mut out.unplug);
        for w in out.wakes.drain(..) {
            self.push(w.at_ns.max(now), Event::CallDone(w.task));
        }
        for t in out.runnable.drain(..) {
            self.push(now, Event::VmRun(t));
        }
        if let Some(t) = self.vm.next_timer_ns() {
            let t = t.max(now);
            if self.armed_vm_ns.is_none_or(|armed| t < armed) {
                self.armed_vm_ns = Some(t);
                self.push(t, Event::VmTimer);
            }
        }
    }
}
