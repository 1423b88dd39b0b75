//! Device-mapper stacking at run time: bios sent to a volume are remapped and split over its
//! members (linear, striped), held back where a layer limits them (a guest's request limit),
//! and finally handed to the block layers of real devices, each with its own scheduler.
//!
//! Every bio that crosses a volume gets a *node*; the pieces it was split into count down on
//! it, and when the last one completes the node completes its parent, up to the root node of
//! the bio the process issued. Stateless layers (linear, striped) add pieces to the node they
//! were given; stateful layers (guest, ioband, iscsi) make a child node so that they hear of
//! its completion.
//!
//! A remote disk (iscsi) is the one layer that takes time by itself: a command crosses the
//! link, waits for a target thread, goes down to the target's device, and its response
//! crosses back. Those steps are timed events of the stack ([`Stack::next_timer_ns`]).

use std::collections::{BTreeMap, VecDeque};

use elevator_control::ioband::{GroupType, IobandDevice, IobandShare};
use elevator_control::{Bio, Controller};
use elevator_core::{BioFlags, Cgroup, Nanos, Op, Owner, Request, RequestId};
use elevator_device::link::Link;

use crate::slab::Slab;
use crate::topology::{IobandShareSpec, RemoteSpec, Route, Target, Volume, VolumeKind};

/// "No node": a bio issued straight to a device, or a root's parent.
pub const NO_NODE: u32 = u32::MAX;
/// "No tag": a bio of a process, not of the page cache.
pub const NO_TAG: u32 = u32::MAX;

/// One piece of I/O for a real device's block layer, on behalf of `node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeafIo {
    pub device: usize,
    pub op: Op,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    /// Kept through linear, striped and dm-ioband volumes; a VM disk's backend and an iSCSI
    /// target submit bios of their own, sync as the guest's was but without its hints
    /// (`REQ_NOIDLE`, `REQ_META`).
    pub flags: BioFlags,
    pub owner: Owner,
    pub node: u32,
}

/// A read a target thread of a `fileio` remote volume makes through the target's page cache;
/// the driver calls [`Stack::piece_done`] on `node` when it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetRead {
    pub volume: usize,
    pub thread: u32,
    pub node: u32,
    /// Within the volume (the exported device's own offset).
    pub offset_bytes: u64,
    pub len_bytes: u64,
}

/// A bio the process issued to a volume, finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RootDone {
    pub process: u32,
    /// The page-cache I/O it was, or [`NO_TAG`].
    pub tag: u32,
    pub op: Op,
    pub len_bytes: u64,
    pub issue_ns: Nanos,
}

#[derive(Clone, Copy, Debug)]
struct Node {
    parent: u32,
    process: u32,
    tag: u32,
    /// The guest volume that made this node, or `NO_NODE` for a root.
    volume: u32,
    op: Op,
    len_bytes: u64,
    issue_ns: Nanos,
    pieces_left: u32,
    /// For ioband nodes: the bio as the controller saw it (to report its completion).
    bio: Option<Bio>,
    /// For iscsi nodes: the target thread serving it.
    thread: u32,
}

#[derive(Clone, Copy, Debug)]
struct Held {
    node: u32,
    op: Op,
    offset_bytes: u64,
    len_bytes: u64,
    flags: BioFlags,
    owner: Owner,
}

#[derive(Clone, Debug, Default)]
struct GuestState {
    in_flight: u32,
    waiting: VecDeque<Held>,
}

/// A remote disk's initiator queue, link and target threads.
#[derive(Clone, Debug)]
struct RemoteState {
    spec: RemoteSpec,
    link: Link,
    /// Commands the initiator has sent and not yet had answered.
    in_flight: u32,
    /// Commands waiting for an initiator slot.
    waiting: VecDeque<Held>,
    /// Idle target threads, longest idle first: a wake-up takes the first waiter, as SCST's
    /// command threads of seed 002's time queued with `add_wait_queue_exclusive`
    /// (`scst_cmd_thread` in `scst_targ.c`, March 2009; SCST woke the most recently idle
    /// one from June 2009, `add_wait_queue_exclusive_head`). So a stream's commands go round
    /// the threads, which with a context per thread is what CFQ sees. Deviation: blockio's
    /// threads are one pool (`scst_threads`) for every device in SCST, one per volume here.
    idle_threads: VecDeque<u32>,
    /// Commands at the target waiting for a thread.
    waiting_for_thread: VecDeque<Held>,
}

/// Something the stack does later by itself.
#[derive(Clone, Copy, Debug)]
enum Delayed {
    /// A command reaches the target of remote volume `volume`.
    Arrive { volume: u32, io: Held },
    /// The response for `node` reaches the initiator.
    Respond { node: u32 },
}

/// The volumes of a topology and the bios in flight through them.
pub struct Stack {
    volumes: Vec<Volume>,
    guests: Vec<GuestState>,
    remotes: Vec<Option<RemoteState>>,
    /// Timed steps by (time, sequence): a BTreeMap keeps equal times in the order queued.
    delayed: BTreeMap<(Nanos, u64), Delayed>,
    delayed_seq: u64,
    /// One dm-ioband controller per device group, and the volume of each of its devices.
    shares: Vec<IobandShare>,
    share_volumes: Vec<Vec<usize>>,
    released: Vec<Bio>,
    /// Per share: processes asleep in dm-ioband (`prevent_burst_bios`) with the bio they were
    /// submitting and the wait queue they sleep on (their group's, for the bio's class under
    /// v1.14), in the order they fell asleep.
    sleepers: Vec<VecDeque<(usize, u32, Bio)>>,
    /// The process whose own `submit` is being routed now (not a volume's worker, a target
    /// thread or the page cache): only it can be put to sleep by dm-ioband.
    direct_submitter: Option<u32>,
    /// The last `submit` put its process to sleep.
    submitter_slept: bool,
    /// Processes whose bio dm-ioband has now taken: they may go on.
    woken: Vec<u32>,
    woken_queues: Vec<usize>,
    nodes: Slab<Node>,
    /// Reads target threads started through the target's page cache, for the driver.
    pub target_reads: Vec<TargetRead>,
}

impl Stack {
    /// Builds the volumes and their controllers. Cgroup paths in ioband group tables resolve
    /// through `cgroups`; other group ids are numbers.
    pub fn new(
        volumes: &[Volume],
        ioband: &[IobandShareSpec],
        cgroups: &[Cgroup],
    ) -> Result<Stack, String> {
        let mut shares = Vec::new();
        let mut share_volumes = Vec::new();
        for spec in ioband {
            let mut devices = Vec::new();
            for d in &spec.devices {
                let mut groups = Vec::new();
                // Under range-bw: the default group's range, then those of the groups kept.
                let mut ranges: Vec<_> = d.ranges.first().copied().into_iter().collect();
                for (j, (id, weight)) in d.groups.iter().enumerate() {
                    let key = if d.group_type == GroupType::Cgroup {
                        let path = id.trim_matches('/');
                        match cgroups.iter().find(|g| g.path == path) {
                            Some(g) => g.id,
                            None => continue, // no job runs in that cgroup
                        }
                    } else {
                        id.parse().map_err(|_| {
                            format!("ioband device `{}`: group `{id}` is not a number (a pid, pgrp, uid or gid)", d.name)
                        })?
                    };
                    groups.push((key, *weight));
                    ranges.extend(d.ranges.get(1 + j).copied());
                }
                devices.push(IobandDevice {
                    name: d.name.clone(),
                    group_type: d.group_type,
                    weight: d.weight,
                    groups,
                    ranges,
                });
            }
            shares.push(
                IobandShare::new(spec.settings, devices)
                    .map_err(|e| format!("ioband `{}`: {e}", spec.name))?,
            );
            let vols = spec
                .devices
                .iter()
                .map(|d| {
                    volumes
                        .iter()
                        .position(|v| v.name == d.name)
                        .expect("ioband devices are volumes")
                })
                .collect();
            share_volumes.push(vols);
        }
        let remotes = volumes
            .iter()
            .map(|v| match v.kind {
                VolumeKind::Remote(spec) => Some(RemoteState {
                    spec,
                    link: Link::new(spec.link),
                    in_flight: 0,
                    waiting: VecDeque::new(),
                    idle_threads: (0..spec.threads).collect(),
                    waiting_for_thread: VecDeque::new(),
                }),
                _ => None,
            })
            .collect();
        Ok(Stack {
            volumes: volumes.to_vec(),
            guests: vec![GuestState::default(); volumes.len()],
            remotes,
            delayed: BTreeMap::new(),
            delayed_seq: 0,
            sleepers: vec![VecDeque::new(); shares.len()],
            shares,
            share_volumes,
            released: Vec::new(),
            direct_submitter: None,
            submitter_slept: false,
            woken: Vec::new(),
            woken_queues: Vec::new(),
            nodes: Slab::new(),
            target_reads: Vec::new(),
        })
    }

    /// Per-group counters of every ioband device group.
    pub fn ioband_counters(&self) -> Vec<elevator_control::GroupCounters> {
        self.shares.iter().flat_map(|s| s.counters()).collect()
    }

    /// When the stack has something to do without any arrival or completion: a bandwidth
    /// limit's credit growing, a command or response crossing a link.
    pub fn next_timer_ns(&self) -> Option<Nanos> {
        let link = self.delayed.first_key_value().map(|(&(t, _), _)| t);
        self.shares.iter().filter_map(|s| s.next_timer_ns()).chain(link).min()
    }

    /// The stack's timer fired at `now_ns`: links deliver what has arrived (device pieces go
    /// to `out`, finished process bios to `roots`) and controllers release what they may.
    pub fn timer(&mut self, now_ns: Nanos, out: &mut Vec<LeafIo>, roots: &mut Vec<RootDone>) {
        while let Some(entry) = self.delayed.first_entry() {
            if entry.key().0 > now_ns {
                break;
            }
            match entry.remove() {
                Delayed::Arrive { volume, io } => {
                    let v = volume as usize;
                    match self.remote(v).idle_threads.pop_front() {
                        Some(thread) => self.start_on_thread(v, thread, io, now_ns, out),
                        None => self.remote(v).waiting_for_thread.push_back(io),
                    }
                }
                Delayed::Respond { node } => roots.extend(self.finish(node, now_ns, out)),
            }
        }
        for s in 0..self.shares.len() {
            self.release_share(s, now_ns, out);
        }
    }

    /// The devices under volume `v` on this machine (device-mapper's `unplug_fn` runs each
    /// of them); a remote volume's devices belong to the target, so it has none.
    pub fn member_devices(&self, v: usize, out: &mut Vec<usize>) {
        if matches!(self.volumes[v].kind, VolumeKind::Remote(_)) {
            return;
        }
        for m in &self.volumes[v].members {
            match m.route {
                Route::Device(d) => out.push(d),
                Route::Volume(w) => self.member_devices(w, out),
            }
        }
    }

    fn remote(&mut self, v: usize) -> &mut RemoteState {
        self.remotes[v].as_mut().expect("remote nodes belong to iscsi volumes")
    }

    fn later(&mut self, at_ns: Nanos, what: Delayed) {
        self.delayed_seq += 1;
        self.delayed.insert((at_ns, self.delayed_seq), what);
    }

    /// The initiator sends `io` to remote volume `v`.
    fn send_command(&mut self, v: usize, io: Held, now_ns: Nanos) {
        let data = if io.op == Op::Write { io.len_bytes } else { 0 };
        let at = self.remote(v).link.command(now_ns, data);
        self.later(at, Delayed::Arrive { volume: v as u32, io });
    }

    /// Target thread `thread` of remote volume `v` submits `io` to the exported device, as
    /// itself: a kernel thread of the target in the root cgroup.
    fn start_on_thread(
        &mut self,
        v: usize,
        thread: u32,
        io: Held,
        now_ns: Nanos,
        out: &mut Vec<LeafIo>,
    ) {
        let spec = self.remote(v).spec;
        self.nodes.get_mut(io.node).thread = thread;
        let owner = spec.thread_owner(thread, io.owner.job);
        if spec.fileio && io.op == Op::Read {
            // Through the target's page cache: the driver answers the read (one piece).
            self.nodes.get_mut(io.node).pieces_left = 1;
            self.target_reads.push(TargetRead {
                volume: v,
                thread,
                node: io.node,
                offset_bytes: io.offset_bytes,
                len_bytes: io.len_bytes,
            });
            return;
        }
        // The target thread's own bio: an iSCSI command carries no `REQ_NOIDLE`.
        self.send_to_member(
            v,
            Held { owner, flags: BioFlags::sync_if(io.flags.sync), ..io },
            now_ns,
            out,
        );
    }

    /// Sends `io`, addressed within single-member volume `v` (guest, ioband, iscsi), on to
    /// that member.
    fn send_to_member(&mut self, v: usize, io: Held, now_ns: Nanos, out: &mut Vec<LeafIo>) {
        let m = self.volumes[v].members[0];
        let io = Held { offset_bytes: m.start_bytes + io.offset_bytes, ..io };
        self.route(m.route, io, now_ns, out);
    }

    /// Sends what the controller of share `s` releases now down to its volumes' members, and
    /// lets the processes asleep on a wait queue that was woken (their group released all it
    /// held) submit again: in the order they fell asleep, until the group holds `c_limit`
    /// bios again.
    fn release_share(&mut self, s: usize, now_ns: Nanos, out: &mut Vec<LeafIo>) {
        let mut queues = std::mem::take(&mut self.woken_queues);
        loop {
            self.release_share_once(s, now_ns, out);
            self.shares[s].take_woken(&mut queues);
            if queues.is_empty() {
                break;
            }
            for woken in queues.drain(..) {
                let mut k = 0;
                while k < self.sleepers[s].len() {
                    let (queue, process, bio) = self.sleepers[s][k];
                    if queue != woken {
                        k += 1;
                        continue;
                    }
                    if self.shares[s].submitter_sleeps_on(&bio).is_some() {
                        break;
                    }
                    self.sleepers[s].remove(k);
                    self.shares[s].submit(bio, now_ns);
                    self.woken.push(process);
                }
            }
        }
        self.woken_queues = queues;
    }

    /// Processes dm-ioband let go on since the last call.
    pub fn take_woken(&mut self, out: &mut Vec<u32>) {
        out.append(&mut self.woken);
    }

    /// Whether the last `submit` left its process asleep (its bio goes on when it wakes).
    pub fn take_submitter_slept(&mut self) -> bool {
        std::mem::take(&mut self.submitter_slept)
    }

    fn release_share_once(&mut self, s: usize, now_ns: Nanos, out: &mut Vec<LeafIo>) {
        let mut released = std::mem::take(&mut self.released);
        self.shares[s].release(now_ns, &mut released);
        for bio in released.drain(..) {
            let v = self.share_volumes[s][bio.device as usize];
            let r = bio.request;
            let held = Held {
                node: r.id.0 as u32,
                op: r.op,
                offset_bytes: r.offset_bytes,
                len_bytes: r.len_bytes,
                flags: r.flags(),
                owner: r.owner,
            };
            self.send_to_member(v, held, now_ns, out);
        }
        self.released = released;
    }

    fn alloc(&mut self, node: Node) -> u32 {
        self.nodes.insert(node)
    }

    /// Sends a bio of `process` to volume `volume`; the device pieces are appended to `out`.
    #[allow(clippy::too_many_arguments)]
    pub fn submit(
        &mut self,
        process: u32,
        tag: u32,
        volume: usize,
        op: Op,
        offset_bytes: u64,
        len_bytes: u64,
        flags: BioFlags,
        owner: Owner,
        now_ns: Nanos,
        out: &mut Vec<LeafIo>,
    ) {
        let root = self.alloc(Node {
            parent: NO_NODE,
            process,
            tag,
            volume: NO_NODE,
            op,
            len_bytes,
            issue_ns: now_ns,
            pieces_left: 0,
            bio: None,
            thread: u32::MAX,
        });
        let io = Held { node: root, op, offset_bytes, len_bytes, flags, owner };
        self.direct_submitter = (process != u32::MAX && tag == NO_TAG).then_some(process);
        self.route(Route::Volume(volume), io, now_ns, out);
        self.direct_submitter = None;
    }

    fn route(&mut self, target: Route, io: Held, now_ns: Nanos, out: &mut Vec<LeafIo>) {
        let v = match target {
            Route::Device(device) => {
                self.nodes.get_mut(io.node).pieces_left += 1;
                out.push(LeafIo {
                    device,
                    op: io.op,
                    offset_bytes: io.offset_bytes,
                    len_bytes: io.len_bytes,
                    flags: io.flags,
                    owner: io.owner,
                    node: io.node,
                });
                return;
            }
            Route::Volume(v) => v,
        };
        let kind = self.volumes[v].kind.clone();
        let member = |m: &Target, offset: u64, len: u64| {
            (m.route, Held { offset_bytes: m.start_bytes + offset, len_bytes: len, ..io })
        };
        if io.len_bytes == 0 {
            // A flush reaches every member.
            let members = self.volumes[v].members.clone();
            for m in &members {
                let (route, piece) = member(m, 0, 0);
                self.route(route, piece, now_ns, out);
            }
            return;
        }
        match kind {
            VolumeKind::Linear => {
                let members = self.volumes[v].members.clone();
                let (mut offset, end) = (io.offset_bytes, io.offset_bytes + io.len_bytes);
                let mut base = 0;
                for m in &members {
                    let size = m.size_bytes / 512 * 512;
                    if offset < base + size && offset < end {
                        let len = (base + size).min(end) - offset;
                        let (route, piece) = member(m, offset - base, len);
                        self.route(route, piece, now_ns, out);
                        offset += len;
                    }
                    base += size;
                }
            }
            VolumeKind::Striped { chunk_bytes } => {
                let members = self.volumes[v].members.clone();
                let n = members.len() as u64;
                let (mut offset, end) = (io.offset_bytes, io.offset_bytes + io.len_bytes);
                while offset < end {
                    let chunk = offset / chunk_bytes;
                    let within = offset % chunk_bytes;
                    let len = (chunk_bytes - within).min(end - offset);
                    let m = &members[(chunk % n) as usize];
                    let (route, piece) = member(m, (chunk / n) * chunk_bytes + within, len);
                    self.route(route, piece, now_ns, out);
                    offset += len;
                }
            }
            VolumeKind::Guest { limit, pid } => {
                let child = self.child_node(io.node, v);
                let mut owner = io.owner;
                if let Some(pid) = pid {
                    owner.pid = pid;
                    owner.pgrp = pid;
                    owner.io_context = pid;
                }
                // The backend's own bio: blkback and tapdisk mark no `REQ_NOIDLE`.
                let held =
                    Held { node: child, owner, flags: BioFlags::sync_if(io.flags.sync), ..io };
                let guest = &mut self.guests[v];
                if guest.in_flight < limit {
                    guest.in_flight += 1;
                    // Below a VM's disk the backend submits (blkback, tapdisk), not the
                    // guest's process: that process never sleeps in dm-ioband below.
                    let submitter = self.direct_submitter.take();
                    self.send_to_member(v, held, now_ns, out);
                    self.direct_submitter = submitter;
                } else {
                    guest.waiting.push_back(held);
                }
            }
            VolumeKind::Ioband { share, device } => {
                let child = self.child_node(io.node, v);
                let id = RequestId(u64::from(child));
                let (op, off, len) = (io.op, io.offset_bytes, io.len_bytes);
                let request = Request::of_bio(id, op, off, len, io.flags, io.owner, now_ns);
                let bio = Bio { device: device as u32, request };
                self.nodes.get_mut(child).bio = Some(bio);
                // A process submitting its own bio (not the page cache's writeback, not a
                // volume's worker or a target thread, later) sleeps here while its group
                // holds too much.
                let process = self.nodes.get(child).process;
                let sleeps_on = if self.direct_submitter == Some(process) {
                    self.shares[share].submitter_sleeps_on(&bio)
                } else {
                    None
                };
                if let Some(queue) = sleeps_on {
                    self.sleepers[share].push_back((queue, process, bio));
                    self.submitter_slept = true;
                    return;
                }
                self.shares[share].submit(bio, now_ns);
                self.release_share(share, now_ns, out);
            }
            VolumeKind::Remote(spec) => {
                let child = self.child_node(io.node, v);
                let held = Held { node: child, ..io };
                let r = self.remote(v);
                if r.in_flight < spec.queue_depth {
                    r.in_flight += 1;
                    self.send_command(v, held, now_ns);
                } else {
                    r.waiting.push_back(held);
                }
            }
        }
    }

    /// A node for a stateful layer (guest, ioband) under `parent`, counted as one of its pieces.
    fn child_node(&mut self, parent: u32, volume: usize) -> u32 {
        self.nodes.get_mut(parent).pieces_left += 1;
        let p = *self.nodes.get(parent);
        self.alloc(Node {
            parent,
            volume: volume as u32,
            pieces_left: 0,
            bio: None,
            thread: u32::MAX,
            ..p
        })
    }

    /// One device piece of `node` completed. Pieces released from a layer's queue as a
    /// result are appended to `out`; if the process's bio is now complete it is returned.
    pub fn piece_done(
        &mut self,
        node: u32,
        now_ns: Nanos,
        out: &mut Vec<LeafIo>,
    ) -> Option<RootDone> {
        let n = self.nodes.get_mut(node);
        n.pieces_left -= 1;
        if n.pieces_left > 0 {
            return None;
        }
        let (v, thread, op, len_bytes) = (n.volume, n.thread, n.op, n.len_bytes);
        if v != NO_NODE && matches!(self.volumes[v as usize].kind, VolumeKind::Remote(_)) {
            // The target's device is done: the thread is free, the response goes back.
            let v = v as usize;
            match self.remote(v).waiting_for_thread.pop_front() {
                Some(next) => self.start_on_thread(v, thread, next, now_ns, out),
                None => self.remote(v).idle_threads.push_back(thread),
            }
            let data = if op == Op::Read { len_bytes } else { 0 };
            let at = self.remote(v).link.response(now_ns, data);
            self.later(at, Delayed::Respond { node });
            return None;
        }
        self.finish(node, now_ns, out)
    }

    /// `node` is complete: its layer hears of it, and so does its parent.
    fn finish(&mut self, node: u32, now_ns: Nanos, out: &mut Vec<LeafIo>) -> Option<RootDone> {
        let done = self.nodes.remove(node);
        if done.volume != NO_NODE {
            let v = done.volume as usize;
            match self.volumes[v].kind {
                VolumeKind::Ioband { share, .. } => {
                    let bio = done.bio.expect("ioband nodes carry their bio");
                    self.shares[share].completed(&bio, now_ns);
                    self.release_share(share, now_ns, out);
                }
                VolumeKind::Guest { .. } => {
                    self.guests[v].in_flight -= 1;
                    if let Some(held) = self.guests[v].waiting.pop_front() {
                        self.guests[v].in_flight += 1;
                        self.send_to_member(v, held, now_ns, out);
                    }
                }
                VolumeKind::Remote(_) => match self.remote(v).waiting.pop_front() {
                    Some(next) => self.send_command(v, next, now_ns),
                    None => self.remote(v).in_flight -= 1,
                },
                VolumeKind::Linear | VolumeKind::Striped { .. } => {
                    unreachable!("stateless layers make no nodes")
                }
            }
        }
        if done.parent == NO_NODE {
            return Some(RootDone {
                process: done.process,
                tag: done.tag,
                op: done.op,
                len_bytes: done.len_bytes,
                issue_ns: done.issue_ns,
            });
        }
        self.piece_done(done.parent, now_ns, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{Topology, TARGET_PID_BASE};

    const TOPO: &str = r#"
[[device]]
name = "sda"
model = "ram"
[[device]]
name = "sdb"
model = "ram"
[[volume]]
name = "lv0"
target = "striped"
chunk = "64KiB"
over = ["sda", "sdb"]
[[volume]]
name = "vm"
target = "guest"
over = ["lv0"]
limit = 2
pid = 77
"#;

    /// The page cache's sync writes keep `REQ_NOIDLE`, and its metadata reads `REQ_META`,
    /// through a striped volume; below a VM's disk the backend's bios carry neither.
    #[test]
    fn noidle_and_meta_go_through_a_striped_volume_but_not_a_vm_backend() {
        let t = Topology::from_str(TOPO, "t").unwrap();
        let mut s = Stack::new(&t.volumes, &t.ioband, &[]).unwrap();
        let mut out = Vec::new();
        let p1 = Owner::process(1);
        let sync_write = BioFlags { noidle: true, ..BioFlags::SYNC };
        let meta_read = BioFlags { meta: true, ..BioFlags::SYNC };
        s.submit(1, 7, 0, Op::Write, 0, 131072, sync_write, p1, 0, &mut out);
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|l| l.flags == sync_write), "{out:?}");
        out.clear();
        s.submit(1, 8, 1, Op::Write, 0, 4096, sync_write, p1, 0, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].flags, BioFlags::SYNC, "{out:?}");
        out.clear();
        s.submit(1, 9, 0, Op::Read, 0, 131072, meta_read, p1, 0, &mut out);
        assert!(out.len() == 2 && out.iter().all(|l| l.flags == meta_read), "{out:?}");
        out.clear();
        s.submit(1, 10, 1, Op::Read, 0, 4096, meta_read, p1, 0, &mut out);
        assert!(out.len() == 1 && out[0].flags == BioFlags::SYNC, "{out:?}");
    }

    #[test]
    fn striping_splits_and_conserves_bytes() {
        let t = Topology::from_str(TOPO, "t").unwrap();
        let mut s = Stack::new(&t.volumes, &t.ioband, &[]).unwrap();
        let mut out = Vec::new();
        s.submit(
            1,
            NO_TAG,
            0,
            Op::Read,
            32768,
            196608,
            BioFlags::SYNC,
            Owner::process(1),
            0,
            &mut out,
        );
        let pieces: Vec<(usize, u64, u64)> =
            out.iter().map(|l| (l.device, l.offset_bytes, l.len_bytes)).collect();
        assert_eq!(
            pieces,
            vec![(0, 32768, 32768), (1, 0, 65536), (0, 65536, 65536), (1, 65536, 32768)]
        );
        assert_eq!(out.iter().map(|l| l.len_bytes).sum::<u64>(), 196608);
        let node = out[0].node;
        let mut more = Vec::new();
        for _ in 0..3 {
            assert_eq!(s.piece_done(node, 0, &mut more), None);
        }
        let done = s.piece_done(node, 0, &mut more).unwrap();
        assert_eq!((done.process, done.len_bytes), (1, 196608));
    }

    #[test]
    fn a_guest_holds_bios_past_its_limit_and_reissues_them_as_the_host() {
        let t = Topology::from_str(TOPO, "t").unwrap();
        let mut s = Stack::new(&t.volumes, &t.ioband, &[]).unwrap();
        let mut out = Vec::new();
        for i in 0..3 {
            s.submit(
                i,
                NO_TAG,
                1,
                Op::Read,
                i as u64 * 4096,
                4096,
                BioFlags::SYNC,
                Owner::process(i),
                0,
                &mut out,
            );
        }
        assert_eq!(out.len(), 2, "the third bio waits for a guest request slot");
        assert!(out.iter().all(|l| l.owner.pid == 77));
        let mut released = Vec::new();
        let done = s.piece_done(out[0].node, 0, &mut released).unwrap();
        assert_eq!(done.process, 0);
        assert_eq!(released.len(), 1);
        assert_eq!(released[0].offset_bytes / 4096, 2);
    }

    const REMOTE: &str = r#"
[[device]]
name = "sdb"
model = "ram"
[[volume]]
name = "lun"
target = "iscsi"
over = ["sdb"]
bandwidth = "100MB/s"
rtt = "100us"
overhead = "0us"
queue_depth = 2
threads = 1
"#;

    fn remote_stack(extra: &str) -> Stack {
        let t = Topology::from_str(&format!("{REMOTE}{extra}"), "t").unwrap();
        Stack::new(&t.volumes, &t.ioband, &[]).unwrap()
    }

    #[test]
    fn a_remote_read_crosses_the_link_both_ways() {
        let mut s = remote_stack("");
        let (mut out, mut roots) = (Vec::new(), Vec::new());
        s.submit(1, NO_TAG, 0, Op::Read, 0, 65536, BioFlags::SYNC, Owner::process(1), 0, &mut out);
        assert!(out.is_empty(), "the command is on the wire");
        // 48-byte command at 100 MB/s (480 ns) + half the round trip.
        assert_eq!(s.next_timer_ns(), Some(480 + 50_000));
        s.timer(50_480, &mut out, &mut roots);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].owner.pid, TARGET_PID_BASE, "submitted by the target thread");
        assert!(roots.is_empty());
        assert_eq!(s.piece_done(out[0].node, 60_000, &mut out), None);
        // The data and status go back: 65,584 bytes = 655,840 ns, then 50 µs.
        let back = 60_000 + 655_840 + 50_000;
        assert_eq!(s.next_timer_ns(), Some(back));
        s.timer(back, &mut out, &mut roots);
        assert_eq!(roots.len(), 1);
        assert_eq!((roots[0].process, roots[0].len_bytes), (1, 65536));
        assert_eq!(s.next_timer_ns(), None);
    }

    #[test]
    fn commands_wait_for_an_initiator_slot_and_a_target_thread() {
        let mut s = remote_stack("");
        let (mut out, mut roots) = (Vec::new(), Vec::new());
        for i in 0..3 {
            s.submit(
                i,
                NO_TAG,
                0,
                Op::Read,
                i as u64 * 4096,
                4096,
                BioFlags::SYNC,
                Owner::process(i),
                0,
                &mut out,
            );
        }
        s.timer(1_000_000, &mut out, &mut roots);
        assert_eq!(out.len(), 1, "two commands crossed, one thread serves them");
        let first = out.pop().unwrap();
        s.piece_done(first.node, 1_000_000, &mut out);
        assert_eq!(out.len(), 1, "the freed thread takes the waiting command");
        assert_eq!(out[0].offset_bytes, 4096);
        let second = out.pop().unwrap();
        s.timer(2_000_000, &mut out, &mut roots);
        assert_eq!(roots.len(), 1);
        // The first response freed an initiator slot: the third command went out.
        s.piece_done(second.node, 2_000_000, &mut out);
        s.timer(3_000_000, &mut out, &mut roots);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].offset_bytes, 8192);
        s.piece_done(out[0].node, 3_000_000, &mut Vec::new());
        s.timer(4_000_000, &mut out, &mut roots);
        let mut done: Vec<u32> = roots.iter().map(|r| r.process).collect();
        done.sort();
        assert_eq!(done, vec![0, 1, 2], "each completes exactly once");
    }

    #[test]
    fn target_threads_have_their_own_io_context_unless_shared() {
        for (context, shared) in [("separate", false), ("shared", true)] {
            let extra = format!("io_context = \"{context}\"\n");
            let t = Topology::from_str(
                &REMOTE
                    .replace("threads = 1", "threads = 2")
                    .replace("queue_depth = 2", &format!("queue_depth = 2\n{extra}")),
                "t",
            )
            .unwrap();
            let mut s = Stack::new(&t.volumes, &t.ioband, &[]).unwrap();
            let (mut out, mut roots) = (Vec::new(), Vec::new());
            for i in 0..2 {
                s.submit(
                    i,
                    NO_TAG,
                    0,
                    Op::Read,
                    i as u64 * 4096,
                    4096,
                    BioFlags::SYNC,
                    Owner::process(i),
                    0,
                    &mut out,
                );
            }
            s.timer(1_000_000, &mut out, &mut roots);
            assert_eq!(out.len(), 2);
            assert_ne!(out[0].owner.pid, out[1].owner.pid);
            assert_eq!(out[0].owner.io_context == out[1].owner.io_context, shared, "{context}");
        }
    }
}
