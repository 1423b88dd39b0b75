//! Arrays built from member devices: RAID-0 / striped LVM and linear concatenation.
//!
//! An array is itself a [`Device`]: a command is cut at chunk (or member) boundaries into
//! member commands, each member runs its own model (with its own queue and reordering), and
//! the array's command completes when its last piece does. Pieces wait in a per-member FIFO
//! while that member's queue is full, as a RAID controller's or device-mapper's queue would.
//!
//! The array's queue depth is that of its front end (an array controller's, or the sum of the
//! members' for device-mapper); members keep their own.
//!
//! A hardware array may also have a controller cache ([`ControllerCache`]): it detects
//! sequential read streams (a read that starts where a recent one ended) and reads ahead a
//! window beyond each, across the stripe, so that a stream coming back after other streams
//! moved the disks' heads finds its next chunks in controller memory. Reads the cache holds
//! complete after the controller's hit time; reads of a window still being fetched wait for
//! it; writes go through and drop what they overlap. Off for device-mapper arrays.

use std::collections::VecDeque;

use elevator_core::{Nanos, RequestId};

use crate::{Command, Completion, Device};

/// How the address space is laid over the members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// RAID-0 / `dm-stripe`: consecutive chunks go to consecutive members.
    Striped { chunk_bytes: u64 },
    /// `dm-linear` concatenation: member 0's range, then member 1's, ...
    Linear,
}

#[derive(Clone, Copy, Debug)]
struct Parent {
    id: RequestId,
    pieces_left: u32,
    done_ns: Nanos,
    /// A controller read-ahead (no host command): the array range it fetches.
    prefetch: Option<(u64, u64)>,
}

/// An array controller's read cache and sequential read-ahead.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ControllerCache {
    /// Controller memory for read data, bytes.
    pub size_bytes: u64,
    /// How far ahead of a sequential stream the controller reads.
    pub read_ahead_bytes: u64,
    /// Streams it tracks at once.
    pub streams: u32,
    /// Time for a read served from controller memory: fixed part, and per byte (the host
    /// link, e.g. 4 Gb/s Fibre Channel ≈ 400 MB/s).
    pub hit_overhead_ns: Nanos,
    pub link_bytes_per_sec: u64,
}

#[derive(Clone, Copy, Debug)]
struct Extent {
    start: u64,
    end: u64,
    last_used: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Stream {
    /// Where the stream's next read is expected, and how far it has been fetched.
    next: u64,
    fetched_to: u64,
    last_used: u64,
    sequential: bool,
}

/// A read-ahead in flight: its array range and the host reads (id, bytes) waiting for it.
type Fetch = (u64, u64, Vec<(RequestId, u64)>);

struct CacheState {
    params: ControllerCache,
    extents: Vec<Extent>,
    cached_bytes: u64,
    /// Read-aheads in flight: range and the host reads (id, len) waiting for them.
    fetching: Vec<Fetch>,
    streams: Vec<Stream>,
    clock: u64,
}

impl CacheState {
    fn hit_ns(&self, len_bytes: u64) -> Nanos {
        self.params.hit_overhead_ns
            + len_bytes * 1_000_000_000 / self.params.link_bytes_per_sec.max(1)
    }

    fn holds(&mut self, start: u64, end: u64) -> bool {
        self.clock += 1;
        let clock = self.clock;
        match self.extents.iter_mut().find(|e| e.start <= start && end <= e.end) {
            Some(e) => {
                e.last_used = clock;
                true
            }
            None => false,
        }
    }

    fn insert(&mut self, start: u64, end: u64) {
        self.clock += 1;
        self.extents.push(Extent { start, end, last_used: self.clock });
        self.cached_bytes += end - start;
        while self.cached_bytes > self.params.size_bytes && !self.extents.is_empty() {
            let lru =
                (0..self.extents.len()).min_by_key(|&i| self.extents[i].last_used).unwrap_or(0);
            let e = self.extents.swap_remove(lru);
            self.cached_bytes -= e.end - e.start;
        }
    }

    fn invalidate(&mut self, start: u64, end: u64) {
        let mut freed = 0;
        self.extents.retain(|e| {
            let keep = end <= e.start || e.end <= start;
            if !keep {
                freed += e.end - e.start;
            }
            keep
        });
        self.cached_bytes -= freed;
    }

    /// Follows the read `[start, end)`; returns a range to read ahead, if the read continues a
    /// stream whose fetched data runs out within half a window.
    fn follow(&mut self, start: u64, end: u64, capacity: u64) -> Option<(u64, u64)> {
        self.clock += 1;
        let ra = self.params.read_ahead_bytes;
        let found =
            self.streams.iter().position(|s| s.next <= start && start <= s.fetched_to.max(s.next));
        let i = match found {
            Some(i) => {
                self.streams[i].sequential = true;
                i
            }
            None => {
                let fresh =
                    Stream { next: end, fetched_to: end, last_used: self.clock, sequential: false };
                if self.streams.len() < self.params.streams as usize {
                    self.streams.push(fresh);
                } else {
                    let lru = (0..self.streams.len())
                        .min_by_key(|&i| self.streams[i].last_used)
                        .unwrap_or(0);
                    self.streams[lru] = fresh;
                }
                return None;
            }
        };
        let s = &mut self.streams[i];
        s.next = end;
        s.last_used = self.clock;
        s.fetched_to = s.fetched_to.max(end);
        if ra == 0 || s.fetched_to >= end + ra / 2 || s.fetched_to >= capacity {
            return None;
        }
        let from = s.fetched_to;
        let to = (from + ra).min(capacity);
        s.fetched_to = to;
        Some((from, to))
    }
}

/// A RAID-0 or linear array of member devices.
pub struct Array {
    layout: Layout,
    members: Vec<Box<dyn Device>>,
    /// Usable bytes per member (all equal for striping: the smallest, in whole chunks).
    member_bytes: Vec<u64>,
    queue_depth: u32,
    parents: Vec<Option<Parent>>,
    free_parents: Vec<u32>,
    waiting: Vec<VecDeque<Command>>,
    in_member: Vec<u32>,
    scratch: Vec<Completion>,
    done: Vec<(Nanos, usize, Completion)>,
    cache: Option<CacheState>,
    /// Host reads answered by the controller cache, due at a time (sorted when drained).
    ready: Vec<Completion>,
}

impl Array {
    /// Builds an array. Striping needs a chunk size that is a non-zero multiple of 512 bytes.
    pub fn new(
        layout: Layout,
        members: Vec<Box<dyn Device>>,
        queue_depth: u32,
    ) -> Result<Array, String> {
        if members.is_empty() {
            return Err("an array needs at least one member device".to_string());
        }
        let member_bytes: Vec<u64> = match layout {
            Layout::Striped { chunk_bytes } => {
                if chunk_bytes == 0 || chunk_bytes % 512 != 0 {
                    return Err(format!(
                        "chunk size {chunk_bytes} must be a non-zero multiple of 512 bytes"
                    ));
                }
                let smallest = members.iter().map(|m| m.capacity_bytes()).min().unwrap_or(0);
                vec![smallest / chunk_bytes * chunk_bytes; members.len()]
            }
            Layout::Linear => members.iter().map(|m| m.capacity_bytes() / 512 * 512).collect(),
        };
        let n = members.len();
        Ok(Array {
            layout,
            members,
            member_bytes,
            queue_depth: queue_depth.max(1),
            parents: Vec::new(),
            free_parents: Vec::new(),
            waiting: vec![VecDeque::new(); n],
            in_member: vec![0; n],
            scratch: Vec::new(),
            done: Vec::new(),
            cache: None,
            ready: Vec::new(),
        })
    }

    /// Gives the array a controller cache with sequential read-ahead.
    pub fn with_cache(mut self, params: ControllerCache) -> Array {
        if params.size_bytes > 0 {
            self.cache = Some(CacheState {
                params,
                extents: Vec::new(),
                cached_bytes: 0,
                fetching: Vec::new(),
                streams: Vec::new(),
                clock: 0,
            });
        }
        self
    }

    /// Cuts an array range into member pieces and sends them, under a new parent.
    fn issue(&mut self, cmd: Command, prefetch: Option<(u64, u64)>, now_ns: Nanos) {
        let slot = self.free_parents.pop().unwrap_or_else(|| {
            self.parents.push(None);
            (self.parents.len() - 1) as u32
        });
        // Cut into pieces first (a flush goes to every member).
        let mut pieces: Vec<(usize, Command)> = Vec::new();
        if cmd.len_bytes == 0 {
            for m in 0..self.members.len() {
                pieces.push((m, Command { id: cmd.id, offset_bytes: 0, ..cmd }));
            }
        } else {
            let mut offset = cmd.offset_bytes;
            let end = cmd.offset_bytes + cmd.len_bytes;
            while offset < end {
                let (member, member_offset, room) = self.map(offset);
                let len = room.min(end - offset);
                pieces.push((
                    member,
                    Command { id: cmd.id, offset_bytes: member_offset, len_bytes: len, ..cmd },
                ));
                offset += len;
            }
        }
        self.parents[slot as usize] = Some(Parent {
            id: cmd.id,
            pieces_left: pieces.len() as u32,
            done_ns: now_ns,
            prefetch,
        });
        for (i, (member, mut piece)) in pieces.into_iter().enumerate() {
            piece.id = RequestId((u64::from(slot) << 32) | i as u64);
            self.send(member, piece, now_ns);
        }
    }

    /// Tries to answer a host read from the controller cache; `true` if it did (or it now
    /// waits for a read-ahead in flight). Starts read-ahead for sequential streams.
    fn cached_read(&mut self, cmd: &Command, now_ns: Nanos) -> bool {
        let capacity = self.capacity_bytes();
        let Some(c) = self.cache.as_mut() else { return false };
        let (start, end) = (cmd.offset_bytes, cmd.offset_bytes + cmd.len_bytes);
        let ahead = c.follow(start, end, capacity);
        let answered = if c.holds(start, end) {
            self.ready.push(Completion { id: cmd.id, done_ns: now_ns + c.hit_ns(cmd.len_bytes) });
            true
        } else if let Some(f) = c.fetching.iter_mut().find(|f| f.0 <= start && end <= f.1) {
            f.2.push((cmd.id, cmd.len_bytes));
            true
        } else {
            false
        };
        if let Some((from, to)) = ahead {
            let id = RequestId(u64::MAX);
            c.fetching.push((from, to, Vec::new()));
            let fetch =
                Command { id, op: cmd.op, offset_bytes: from, len_bytes: to - from, fua: false };
            self.issue(fetch, Some((from, to)), now_ns);
        }
        answered
    }

    /// Maps an array byte offset to (member, member offset, bytes until the piece boundary).
    pub fn map(&self, offset_bytes: u64) -> (usize, u64, u64) {
        match self.layout {
            Layout::Striped { chunk_bytes } => {
                let n = self.members.len() as u64;
                let chunk = offset_bytes / chunk_bytes;
                let within = offset_bytes % chunk_bytes;
                ((chunk % n) as usize, (chunk / n) * chunk_bytes + within, chunk_bytes - within)
            }
            Layout::Linear => {
                let mut start = 0;
                for (i, &len) in self.member_bytes.iter().enumerate() {
                    if offset_bytes < start + len {
                        return (i, offset_bytes - start, start + len - offset_bytes);
                    }
                    start += len;
                }
                let last = self.members.len() - 1;
                (last, offset_bytes - (start - self.member_bytes[last]), u64::MAX)
            }
        }
    }

    fn send(&mut self, member: usize, cmd: Command, now_ns: Nanos) {
        if self.in_member[member] < self.members[member].queue_depth() {
            self.in_member[member] += 1;
            self.members[member].submit(cmd, now_ns);
        } else {
            self.waiting[member].push_back(cmd);
        }
    }
}

impl Device for Array {
    fn describe(&self) -> String {
        let kind = match self.layout {
            Layout::Striped { chunk_bytes } => format!("RAID-0, {} KiB chunks", chunk_bytes / 1024),
            Layout::Linear => "linear".to_string(),
        };
        format!("{kind} array of {} × [{}]", self.members.len(), self.members[0].describe())
    }

    fn capacity_bytes(&self) -> u64 {
        self.member_bytes.iter().sum()
    }

    fn queue_depth(&self) -> u32 {
        self.queue_depth
    }

    fn rotational(&self) -> bool {
        self.members.iter().any(|m| m.rotational())
    }

    fn submit(&mut self, cmd: Command, now_ns: Nanos) {
        if self.cache.is_some() && cmd.len_bytes > 0 {
            match cmd.op {
                elevator_core::Op::Read => {
                    if self.cached_read(&cmd, now_ns) {
                        return;
                    }
                }
                _ => {
                    let (start, end) = (cmd.offset_bytes, cmd.offset_bytes + cmd.len_bytes);
                    if let Some(c) = self.cache.as_mut() {
                        c.invalidate(start, end);
                    }
                }
            }
        }
        self.issue(cmd, None, now_ns);
    }

    fn next_event_ns(&self) -> Option<Nanos> {
        let members = self.members.iter().filter_map(|m| m.next_event_ns()).min();
        let ready = self.ready.iter().map(|c| c.done_ns).min();
        match (members, ready) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn advance(&mut self, now_ns: Nanos, completed: &mut Vec<Completion>) {
        self.done.clear();
        for m in 0..self.members.len() {
            // Run each member to `now`, refilling its queue as pieces finish.
            loop {
                self.scratch.clear();
                let Some(t) = self.members[m].next_event_ns() else { break };
                if t > now_ns {
                    break;
                }
                let mut scratch = std::mem::take(&mut self.scratch);
                self.members[m].advance(t, &mut scratch);
                for c in scratch.drain(..) {
                    self.in_member[m] -= 1;
                    self.done.push((c.done_ns, m, c));
                    if let Some(next) = self.waiting[m].pop_front() {
                        self.in_member[m] += 1;
                        self.members[m].submit(next, c.done_ns);
                    }
                }
                self.scratch = scratch;
            }
        }
        self.done.sort_by_key(|&(t, m, c)| (t, m, c.id));
        for &(t, _, c) in &self.done {
            let slot = (c.id.0 >> 32) as usize;
            let Some(parent) = self.parents[slot].as_mut() else { continue };
            parent.pieces_left -= 1;
            parent.done_ns = parent.done_ns.max(t);
            if parent.pieces_left == 0 {
                let p = *parent;
                self.parents[slot] = None;
                self.free_parents.push(slot as u32);
                match (p.prefetch, self.cache.as_mut()) {
                    (Some((from, to)), Some(c)) => {
                        // A read-ahead landed: cache it and answer the reads waiting for it.
                        if let Some(k) = c.fetching.iter().position(|f| f.0 == from && f.1 == to) {
                            let (_, _, waiters) = c.fetching.swap_remove(k);
                            c.insert(from, to);
                            for (id, len) in waiters {
                                self.ready
                                    .push(Completion { id, done_ns: p.done_ns + c.hit_ns(len) });
                            }
                        }
                    }
                    _ => completed.push(Completion { id: p.id, done_ns: p.done_ns }),
                }
            }
        }
        // Cache answers due by now, in time order.
        if !self.ready.is_empty() {
            self.ready.sort_by_key(|c| (c.done_ns, c.id));
            let due = self.ready.partition_point(|c| c.done_ns <= now_ns);
            completed.extend(self.ready.drain(..due));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ram::{RamDevice, RamParams};
    use crate::recorder::Recorder;
    use elevator_core::Op;

    fn ram(queue_depth: u32) -> Box<dyn Device> {
        Box::new(RamDevice::new(RamParams {
            capacity_bytes: 1 << 30,
            queue_depth,
            ..RamParams::default()
        }))
    }

    fn cmd(id: u64, offset: u64, len: u64) -> Command {
        Command {
            id: RequestId(id),
            op: Op::Read,
            offset_bytes: offset,
            len_bytes: len,
            fua: false,
        }
    }

    #[test]
    fn striping_maps_chunks_round_robin() {
        let a =
            Array::new(Layout::Striped { chunk_bytes: 65536 }, vec![ram(4), ram(4), ram(4)], 64)
                .unwrap();
        assert_eq!(a.map(0), (0, 0, 65536));
        assert_eq!(a.map(65536 + 512), (1, 512, 65024));
        assert_eq!(a.map(3 * 65536), (0, 65536, 65536));
        assert_eq!(a.capacity_bytes(), 3 << 30);
    }

    #[test]
    fn linear_maps_members_in_order() {
        let a = Array::new(Layout::Linear, vec![ram(4), ram(4)], 64).unwrap();
        assert_eq!(a.map((1 << 30) + 4096).0, 1);
        assert_eq!(a.map((1 << 30) + 4096).1, 4096);
    }

    #[test]
    fn a_command_across_chunks_completes_once_after_all_pieces() {
        let mut a =
            Array::new(Layout::Striped { chunk_bytes: 4096 }, vec![ram(1), ram(1)], 64).unwrap();
        a.submit(cmd(7, 0, 16384), 0); // four pieces, two per member, member queues of 1
        let mut done = Vec::new();
        while let Some(t) = a.next_event_ns() {
            a.advance(t, &mut done);
        }
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].id, RequestId(7));
        // Two pieces in series on each member: twice one piece's service time.
        let one = 10_000 + 4096 * 1_000_000_000 / 4_000_000_000;
        assert_eq!(done[0].done_ns, 2 * one);
    }

    #[test]
    fn bad_chunks_are_refused() {
        assert!(Array::new(Layout::Striped { chunk_bytes: 1000 }, vec![ram(1)], 1).is_err());
        assert!(Array::new(Layout::Linear, vec![], 1).is_err());
    }

    fn cached_array() -> Array {
        Array::new(Layout::Striped { chunk_bytes: 65536 }, vec![ram(4), ram(4)], 64)
            .unwrap()
            .with_cache(ControllerCache {
                size_bytes: 16 << 20,
                read_ahead_bytes: 1 << 20,
                streams: 8,
                hit_overhead_ns: 50_000,
                link_bytes_per_sec: 400_000_000,
            })
    }

    /// Runs one command alone; returns its completion time after `now`.
    fn run_one(a: &mut Array, c: Command, now: Nanos) -> Nanos {
        a.submit(c, now);
        let mut done = Vec::new();
        while let Some(t) = a.next_event_ns() {
            a.advance(t, &mut done);
        }
        done.iter().find(|d| d.id == c.id).expect("it completes").done_ns - now
    }

    #[test]
    fn the_controller_reads_ahead_of_a_sequential_stream() {
        let mut a = cached_array();
        let mut now = 0;
        let mut times = Vec::new();
        for i in 0..64u64 {
            let t = run_one(&mut a, cmd(i, i * 4096, 4096), now);
            times.push(t);
            now += t + 1_000;
        }
        let hit = 50_000 + 4096 * 1_000_000_000 / 400_000_000;
        assert_eq!(times[40], hit, "a read the controller fetched ahead costs its hit time");
        assert!(times.iter().filter(|&&t| t == hit).count() > 50, "{times:?}");
        // A write drops what it overlaps: the next read of it goes to the members.
        let w = Command { op: Op::Write, ..cmd(100, 200 * 4096, 4096) };
        run_one(&mut a, w, now);
        let far = cmd(101, 200 * 4096, 4096);
        assert_ne!(run_one(&mut a, far, now + 1_000_000), hit);
    }

    #[test]
    fn random_reads_get_no_read_ahead() {
        let mut a = cached_array();
        let mut now = 0;
        for i in 0..32u64 {
            let offset = (i * 7919 % 1000) * (1 << 20);
            now += run_one(&mut a, cmd(i, offset, 4096), now) + 1_000;
        }
        assert!(a.cache.as_ref().unwrap().extents.is_empty(), "nothing was read ahead");
    }

    proptest::proptest! {
        /// Striping and concatenation conserve bytes (every array byte reaches exactly one
        /// member byte, where the layout says), keep each command's pieces in address order
        /// on every member, and complete every command exactly once.
        #[test]
        fn layouts_conserve_bytes_and_order_per_member(
            striped in proptest::bool::ANY,
            chunk_sectors in 1u64..64,
            members in 1usize..5,
            cmds in proptest::collection::vec((0u64..4096, 1u64..300), 1..40),
        ) {
            let mut logs = Vec::new();
            let parts: Vec<Box<dyn Device>> = (0..members)
                .map(|_| {
                    let (member, log) = Recorder::new(RamDevice::new(RamParams {
                        capacity_bytes: 8 << 20,
                        queue_depth: 2,
                        ..RamParams::default()
                    }));
                    logs.push(log);
                    Box::new(member) as Box<dyn Device>
                })
                .collect();
            let chunk = chunk_sectors * 512;
            let layout = if striped { Layout::Striped { chunk_bytes: chunk } } else { Layout::Linear };
            let mut a = Array::new(layout, parts, 8).unwrap();
            let capacity = a.capacity_bytes();
            let member_bytes = capacity / members as u64;
            let mut done = Vec::new();
            for (i, &(start_sector, sectors)) in cmds.iter().enumerate() {
                let offset = (start_sector * 512 * 7) % (capacity - sectors * 512);
                let len = sectors * 512;
                for log in &logs {
                    log.lock().unwrap().commands.clear();
                }
                a.submit(cmd(i as u64, offset, len), i as u64 * 1_000);
                while let Some(t) = a.next_event_ns() {
                    a.advance(t, &mut done);
                }
                let sent: Vec<Vec<Command>> =
                    logs.iter().map(|l| l.lock().unwrap().commands.clone()).collect();
                let total: u64 = sent.iter().flatten().map(|c| c.len_bytes).sum();
                proptest::prop_assert_eq!(total, len);
                // Walk the array range the way the layout cuts it; each member must get
                // its pieces of it, in address order.
                let mut expected = Vec::new();
                let mut at = offset;
                while at < offset + len {
                    let (m, member_offset, room) = if striped {
                        let k = at / chunk;
                        let m = (k % members as u64) as usize;
                        (m, (k / members as u64) * chunk + at % chunk, chunk - at % chunk)
                    } else {
                        let m = (at / member_bytes) as usize;
                        (m, at % member_bytes, member_bytes - at % member_bytes)
                    };
                    let piece = room.min(offset + len - at);
                    expected.push((m, member_offset, piece));
                    at += piece;
                }
                for (m, commands) in sent.iter().enumerate() {
                    let want: Vec<(u64, u64)> =
                        expected.iter().filter(|e| e.0 == m).map(|e| (e.1, e.2)).collect();
                    let got: Vec<(u64, u64)> =
                        commands.iter().map(|c| (c.offset_bytes, c.len_bytes)).collect();
                    proptest::prop_assert_eq!(got, want, "member {}", m);
                }
            }
            let mut ids: Vec<u64> = done.iter().map(|c| c.id.0).collect();
            ids.sort();
            proptest::prop_assert_eq!(ids, (0..cmds.len() as u64).collect::<Vec<_>>());
        }
    }
}
