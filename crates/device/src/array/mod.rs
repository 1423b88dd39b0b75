//! Arrays built from member devices: a hardware RAID controller's LUN, striped (RAID-0) or
//! concatenated.
//!
//! An array is itself a [`Device`]: a command is cut at chunk (or member) boundaries into
//! member commands, each member runs its own model (with its own queue and reordering), and
//! the array's command completes when its last piece does. Pieces wait in a per-member FIFO
//! while that member's queue is full, as a RAID controller's queue would. The array's queue
//! depth is its front end's; members keep their own.
//!
//! A hardware array has a **front end** ([`FrontEnd`]): commands and their data cross a host
//! link (Fibre Channel, SAS: [`Link`]), and the controller spends its command overhead on
//! each before anything else happens, so even a cache hit costs a round trip, the overhead
//! and the transfer, and the link carries one transfer at a time in each direction.
//!
//! It may also have a **controller cache** ([`ControllerCache`]): a read cache with
//! sequential read-ahead ([`read_cache`]): reads it holds are answered from memory, reads
//! of a window still being fetched wait for it; and, when `write_back` is set, a
//! battery-backed write cache ([`write_back`]): writes complete once in controller memory and
//! are destaged to the members by the controller's own rules, and a write that finds the
//! cache full waits for room. Reads of dirty data are hits; FUA writes go through; a FLUSH
//! waits for everything dirty before it, then flushes the members.
//!
//! Inside, the array is a small discrete-event machine: commands arrive at the controller
//! (after the link), members complete pieces, and answers go back over the link; all three
//! are processed in time order by [`Device::advance`].

pub mod read_cache;
pub mod write_back;

use std::collections::{BTreeMap, VecDeque};

use elevator_core::{Nanos, Op, RequestId};

use crate::link::{Link, LinkParams};
use crate::{Command, Completion, Device};
use read_cache::ReadCache;
use write_back::{DestageToken, WriteBack};

/// How the address space is laid over the members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// RAID-0 / `dm-stripe`: consecutive chunks go to consecutive members.
    Striped { chunk_bytes: u64 },
    /// `dm-linear` concatenation: member 0's range, then member 1's, ...
    Linear,
}

/// A hardware array's host side: the link to the host and the controller's per-command
/// processing (the link's `overhead_ns`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrontEnd {
    pub link: LinkParams,
}

/// An array controller's cache.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ControllerCache {
    /// Controller memory for data, bytes (dirty data first, clean data in what is left).
    pub size_bytes: u64,
    /// How far ahead of a sequential stream the controller reads.
    pub read_ahead_bytes: u64,
    /// Streams it tracks at once.
    pub streams: u32,
    /// Write-back caching (battery-backed): writes complete once in controller memory.
    pub write_back: bool,
}

/// What a set of member commands is for.
#[derive(Clone, Copy, Debug)]
enum Work {
    /// A host command, answered when its last piece is done.
    Host { id: RequestId, op: Op, len_bytes: u64 },
    /// A controller read-ahead of this array range.
    Prefetch { from: u64, to: u64 },
    /// A destage write to `member`.
    Destage { member: usize, token: DestageToken },
}

#[derive(Clone, Copy, Debug)]
struct Parent {
    work: Work,
    pieces_left: u32,
    done_ns: Nanos,
}

/// A host command the controller has, waiting for room in the write cache or for a flush.
#[derive(Clone, Copy, Debug)]
struct Held {
    cmd: Command,
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
    /// Destage writes in flight per member.
    destaging: Vec<u32>,
    scratch: Vec<Completion>,
    done: Vec<(Nanos, usize, Completion)>,
    front: Option<Link>,
    /// Commands on their way to the controller, by arrival time (and order sent).
    arrivals: BTreeMap<(Nanos, u64), Command>,
    arrival_seq: u64,
    cache: Option<ReadCache>,
    cache_size_bytes: u64,
    wb: Option<WriteBack>,
    /// Writes waiting for room in the write cache, and FLUSHes waiting for the destage.
    held_writes: VecDeque<Held>,
    held_flushes: Vec<Held>,
    /// Host answers on their way back, due at a time (sorted when drained).
    ready: Vec<Completion>,
    pieces: Vec<(usize, Command)>,
    /// When destaging was last looked at.
    destage_checked_ns: Option<Nanos>,
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
            destaging: vec![0; n],
            scratch: Vec::new(),
            done: Vec::new(),
            front: None,
            arrivals: BTreeMap::new(),
            arrival_seq: 0,
            cache: None,
            cache_size_bytes: 0,
            wb: None,
            held_writes: VecDeque::new(),
            held_flushes: Vec::new(),
            ready: Vec::new(),
            pieces: Vec::new(),
            destage_checked_ns: None,
        })
    }

    /// Gives the array a host link and per-command controller overhead.
    pub fn with_front_end(mut self, front: FrontEnd) -> Array {
        self.front = Some(Link::new(front.link));
        self
    }

    /// Gives the array a controller cache.
    pub fn with_cache(mut self, params: ControllerCache) -> Array {
        if params.size_bytes > 0 {
            self.cache = Some(ReadCache::new(params.read_ahead_bytes, params.streams));
            self.cache_size_bytes = params.size_bytes;
            if params.write_back {
                let segment = match self.layout {
                    Layout::Striped { chunk_bytes } => chunk_bytes,
                    Layout::Linear => write_back::LINEAR_SEGMENT_BYTES,
                };
                self.wb = Some(WriteBack::new(self.members.len(), params.size_bytes, segment));
            }
        }
        self
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

    /// Cuts an array range into member pieces `(member, command)` into `self.pieces` (a
    /// flush goes to every member).
    fn cut(&mut self, cmd: &Command) {
        self.pieces.clear();
        if cmd.len_bytes == 0 {
            for m in 0..self.members.len() {
                self.pieces.push((m, Command { offset_bytes: 0, ..*cmd }));
            }
            return;
        }
        let mut offset = cmd.offset_bytes;
        let end = cmd.offset_bytes + cmd.len_bytes;
        while offset < end {
            let (member, member_offset, room) = self.map(offset);
            let len = room.min(end - offset);
            self.pieces
                .push((member, Command { offset_bytes: member_offset, len_bytes: len, ..*cmd }));
            offset += len;
        }
    }

    fn new_parent(&mut self, work: Work, pieces: u32, now_ns: Nanos) -> u32 {
        let slot = self.free_parents.pop().unwrap_or_else(|| {
            self.parents.push(None);
            (self.parents.len() - 1) as u32
        });
        self.parents[slot as usize] = Some(Parent { work, pieces_left: pieces, done_ns: now_ns });
        slot
    }

    /// Sends `cmd` (an array range) to the members under a new parent doing `work`.
    fn issue(&mut self, cmd: Command, work: Work, now_ns: Nanos) {
        self.cut(&cmd);
        let pieces = std::mem::take(&mut self.pieces);
        let slot = self.new_parent(work, pieces.len() as u32, now_ns);
        for (i, &(member, mut piece)) in pieces.iter().enumerate() {
            piece.id = RequestId((u64::from(slot) << 32) | i as u64);
            self.send(member, piece, now_ns);
        }
        self.pieces = pieces;
    }

    fn send(&mut self, member: usize, cmd: Command, now_ns: Nanos) {
        if self.in_member[member] < self.members[member].queue_depth() {
            self.in_member[member] += 1;
            self.members[member].submit(cmd, now_ns);
        } else {
            self.waiting[member].push_back(cmd);
        }
    }

    /// Answers host command `id` at `now_ns`: the response crosses the link with `data`.
    fn answer(&mut self, id: RequestId, data_bytes: u64, now_ns: Nanos) {
        let at = match self.front.as_mut() {
            Some(link) => link.response(now_ns, data_bytes),
            None => now_ns,
        };
        self.ready.push(Completion { id, done_ns: at });
    }

    /// Clean-data room: what the dirty data leaves of the cache.
    fn clean_room(&self) -> u64 {
        self.cache_size_bytes.saturating_sub(self.wb.as_ref().map_or(0, |w| w.dirty_bytes()))
    }

    /// True when every member piece of `[start, end)` is dirty in the write cache.
    fn dirty_hit(&mut self, start: u64, end: u64) -> bool {
        let Some(wb) = self.wb.as_ref() else { return false };
        let mut offset = start;
        while offset < end {
            let (m, mo, room) = self.map(offset);
            let len = room.min(end - offset);
            if !wb.covers(m, mo, mo + len) {
                return false;
            }
            offset += len;
        }
        true
    }

    /// A host command reaches the controller at `now_ns`.
    fn arrive(&mut self, cmd: Command, now_ns: Nanos) {
        let host = Work::Host { id: cmd.id, op: cmd.op, len_bytes: cmd.len_bytes };
        match cmd.op {
            Op::Read if cmd.len_bytes > 0 => {
                if self.cached_read(&cmd, now_ns) {
                    return;
                }
                self.issue(cmd, host, now_ns);
            }
            Op::Write if cmd.len_bytes > 0 => {
                let (start, end) = (cmd.offset_bytes, cmd.offset_bytes + cmd.len_bytes);
                if let Some(c) = self.cache.as_mut() {
                    c.invalidate(start, end);
                }
                if self.wb.is_some() && !cmd.fua {
                    self.held_writes.push_back(Held { cmd });
                    self.admit_writes(now_ns);
                } else {
                    if self.wb.is_some() {
                        self.for_member_pieces(&cmd, |wb, m, s, e| wb.clean(m, s, e));
                    }
                    self.issue(cmd, host, now_ns);
                }
            }
            Op::Flush if self.wb.is_some() => {
                self.wb.as_mut().expect("checked").flush_requested(now_ns);
                self.held_flushes.push(Held { cmd });
                self.finish_flushes(now_ns);
            }
            Op::Discard if self.wb.is_some() => {
                self.for_member_pieces(&cmd, |wb, m, s, e| wb.clean(m, s, e));
                self.issue(cmd, host, now_ns);
            }
            _ => self.issue(cmd, host, now_ns),
        }
    }

    /// Calls `f(write_back, member, start, end)` for each member piece of `cmd`.
    fn for_member_pieces(
        &mut self,
        cmd: &Command,
        mut f: impl FnMut(&mut WriteBack, usize, u64, u64),
    ) {
        self.cut(cmd);
        let Some(wb) = self.wb.as_mut() else { return };
        for &(m, p) in &self.pieces {
            f(wb, m, p.offset_bytes, p.offset_bytes + p.len_bytes);
        }
    }

    /// Takes held writes into the write cache, in arrival order, while they fit.
    fn admit_writes(&mut self, now_ns: Nanos) {
        while let Some(&Held { cmd }) = self.held_writes.front() {
            self.cut(&cmd);
            let wb = self.wb.as_ref().expect("write-back");
            let new: u64 = self
                .pieces
                .iter()
                .map(|&(m, p)| wb.new_bytes(m, p.offset_bytes, p.offset_bytes + p.len_bytes))
                .sum();
            if !wb.fits(new) {
                break;
            }
            self.held_writes.pop_front();
            let wb = self.wb.as_mut().expect("write-back");
            for &(m, p) in &self.pieces {
                wb.insert(m, p.offset_bytes, p.offset_bytes + p.len_bytes, now_ns);
            }
            self.answer(cmd.id, 0, now_ns);
        }
        let room = self.clean_room();
        if let Some(c) = self.cache.as_mut() {
            c.shrink_to(room);
        }
    }

    /// Starts destage writes on every member the write-back rules (or held writes, or a
    /// FLUSH) call for.
    fn destage(&mut self, now_ns: Nanos) {
        if self.wb.is_none() {
            return;
        }
        self.destage_checked_ns = Some(now_ns);
        for m in 0..self.members.len() {
            loop {
                let wb = self.wb.as_mut().expect("write-back");
                let Some((start, end, token)) = wb.next_destage(m, self.destaging[m], now_ns)
                else {
                    break;
                };
                self.destaging[m] += 1;
                let slot = self.new_parent(Work::Destage { member: m, token }, 1, now_ns);
                let piece = Command {
                    id: RequestId(u64::from(slot) << 32),
                    op: Op::Write,
                    offset_bytes: start,
                    len_bytes: end - start,
                    fua: false,
                };
                self.send(m, piece, now_ns);
            }
        }
    }

    /// Answers FLUSHes whose data is all on the members: each flushes the members first.
    fn finish_flushes(&mut self, now_ns: Nanos) {
        let Some(wb) = self.wb.as_mut() else { return };
        if self.held_flushes.is_empty() || wb.flush_pending() {
            return;
        }
        wb.flush_done();
        for Held { cmd } in std::mem::take(&mut self.held_flushes) {
            let host = Work::Host { id: cmd.id, op: cmd.op, len_bytes: 0 };
            self.issue(cmd, host, now_ns);
        }
    }

    /// Tries to answer a host read from the controller cache; `true` if it did (or it now
    /// waits for a read-ahead in flight). Starts read-ahead for sequential streams.
    fn cached_read(&mut self, cmd: &Command, now_ns: Nanos) -> bool {
        let capacity = self.capacity_bytes();
        let (start, end) = (cmd.offset_bytes, cmd.offset_bytes + cmd.len_bytes);
        if self.dirty_hit(start, end) {
            self.answer(cmd.id, cmd.len_bytes, now_ns);
            return true;
        }
        let Some(c) = self.cache.as_mut() else { return false };
        let ahead = c.follow(start, end, capacity);
        let answered = if c.holds(start, end) {
            self.answer(cmd.id, cmd.len_bytes, now_ns);
            true
        } else if let Some(f) = c.fetching.iter_mut().find(|f| f.0 <= start && end <= f.1) {
            f.2.push((cmd.id, cmd.len_bytes));
            true
        } else {
            false
        };
        if let Some((from, to)) = ahead {
            let c = self.cache.as_mut().expect("cached");
            c.fetching.push((from, to, Vec::new()));
            let fetch = Command {
                id: RequestId(u64::MAX),
                op: Op::Read,
                offset_bytes: from,
                len_bytes: to - from,
                fua: false,
            };
            self.issue(fetch, Work::Prefetch { from, to }, now_ns);
        }
        answered
    }

    /// The earliest internal event: a command reaching the controller, a member's event,
    /// or the age of the oldest dirty data running out.
    fn next_internal_ns(&self) -> Option<Nanos> {
        let arrival = self.arrivals.keys().next().map(|&(t, _)| t);
        let members = self.members.iter().filter_map(|m| m.next_event_ns()).min();
        // The age deadline is a timer: once destaging has been looked at since, it has fired.
        let aged = self
            .wb
            .as_ref()
            .and_then(|w| w.age_deadline_ns())
            .filter(|&t| self.destage_checked_ns.is_none_or(|c| t > c));
        [arrival, members, aged].into_iter().flatten().min()
    }

    /// Member completions collected in `self.done`: pieces, parents, answers.
    fn member_completions(&mut self) {
        self.done.sort_by_key(|&(t, m, c)| (t, m, c.id));
        let done = std::mem::take(&mut self.done);
        for &(t, _, c) in &done {
            let slot = (c.id.0 >> 32) as usize;
            let Some(parent) = self.parents[slot].as_mut() else { continue };
            parent.pieces_left -= 1;
            parent.done_ns = parent.done_ns.max(t);
            if parent.pieces_left > 0 {
                continue;
            }
            let p = *parent;
            self.parents[slot] = None;
            self.free_parents.push(slot as u32);
            match p.work {
                Work::Host { id, op, len_bytes } => {
                    let data = if op == Op::Read { len_bytes } else { 0 };
                    self.answer(id, data, p.done_ns);
                }
                Work::Prefetch { from, to } => {
                    // A read-ahead landed: cache it and answer the reads waiting for it.
                    let room = self.clean_room();
                    let Some(c) = self.cache.as_mut() else { continue };
                    if let Some(k) = c.fetching.iter().position(|f| f.0 == from && f.1 == to) {
                        let (_, _, waiters) = c.fetching.swap_remove(k);
                        c.insert(from, to, room);
                        for (id, len) in waiters {
                            self.answer(id, len, p.done_ns);
                        }
                    }
                }
                Work::Destage { member, token } => {
                    self.destaging[member] -= 1;
                    self.wb.as_mut().expect("write-back").destaged(member, token);
                    self.admit_writes(p.done_ns);
                    self.finish_flushes(p.done_ns);
                }
            }
        }
        self.done = done;
        self.done.clear();
    }
}

impl Device for Array {
    fn describe(&self) -> String {
        let kind = match self.layout {
            Layout::Striped { chunk_bytes } => format!("RAID-0, {} KiB chunks", chunk_bytes / 1024),
            Layout::Linear => "linear".to_string(),
        };
        let cache = match (&self.cache, &self.wb) {
            (Some(_), Some(_)) => {
                format!(", {} MiB write-back cache", self.cache_size_bytes >> 20)
            }
            (Some(_), None) => format!(", {} MiB read cache", self.cache_size_bytes >> 20),
            _ => String::new(),
        };
        format!("{kind} array of {} × [{}]{cache}", self.members.len(), self.members[0].describe())
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
        match self.front.as_mut() {
            Some(link) => {
                let data = if cmd.op == Op::Write { cmd.len_bytes } else { 0 };
                let at = link.command(now_ns, data);
                self.arrival_seq += 1;
                self.arrivals.insert((at, self.arrival_seq), cmd);
            }
            None => {
                self.arrive(cmd, now_ns);
                self.destage(now_ns);
            }
        }
    }

    fn next_event_ns(&self) -> Option<Nanos> {
        let ready = self.ready.iter().map(|c| c.done_ns).min();
        [self.next_internal_ns(), ready].into_iter().flatten().min()
    }

    fn advance(&mut self, now_ns: Nanos, completed: &mut Vec<Completion>) {
        while let Some(t) = self.next_internal_ns().filter(|&t| t <= now_ns) {
            // Members first (what finished at `t` frees room), then arrivals at `t`.
            for m in 0..self.members.len() {
                while self.members[m].next_event_ns().is_some_and(|e| e <= t) {
                    self.scratch.clear();
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
            self.member_completions();
            while let Some(entry) = self.arrivals.first_entry() {
                if entry.key().0 > t {
                    break;
                }
                let cmd = entry.remove();
                self.arrive(cmd, t);
            }
            self.destage(t);
        }
        // Answers due by now, in time order.
        if !self.ready.is_empty() {
            self.ready.sort_by_key(|c| (c.done_ns, c.id));
            let due = self.ready.partition_point(|c| c.done_ns <= now_ns);
            completed.extend(self.ready.drain(..due));
        }
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        match &self.wb {
            Some(w) => vec![
                ("destage_writes", w.destages as f64),
                ("destaged_mib", w.destaged_bytes as f64 / (1 << 20) as f64),
            ],
            None => Vec::new(),
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
            .with_front_end(FrontEnd {
                link: LinkParams { bandwidth_bytes_per_sec: 400e6, rtt_ns: 0, overhead_ns: 50_000 },
            })
            .with_cache(ControllerCache {
                size_bytes: 16 << 20,
                read_ahead_bytes: 1 << 20,
                streams: 8,
                write_back: false,
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
        // The command crosses the link (48 bytes), the controller spends 50 µs, the data and
        // status come back (4,144 bytes at 400 MB/s).
        let hit = 120 + 50_000 + 10_360;
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
        assert!(a.cache.as_ref().unwrap().is_empty(), "nothing was read ahead");
    }

    /// Two slow RAM members (10 ms per command), a 1 MiB write-back cache, a fast link.
    fn write_back_array() -> Array {
        let slow = || -> Box<dyn Device> {
            Box::new(RamDevice::new(RamParams {
                capacity_bytes: 1 << 30,
                latency_ns: 10_000_000,
                queue_depth: 8,
                ..RamParams::default()
            }))
        };
        Array::new(Layout::Striped { chunk_bytes: 65536 }, vec![slow(), slow()], 64)
            .unwrap()
            .with_front_end(FrontEnd {
                link: LinkParams { bandwidth_bytes_per_sec: 400e6, rtt_ns: 0, overhead_ns: 50_000 },
            })
            .with_cache(ControllerCache {
                size_bytes: 1 << 20,
                read_ahead_bytes: 0,
                streams: 8,
                write_back: true,
            })
    }

    fn write(id: u64, offset: u64, len: u64) -> Command {
        Command { op: Op::Write, ..cmd(id, offset, len) }
    }

    /// Runs the array only until `c` completes; returns its latency.
    fn complete(a: &mut Array, c: Command, now: Nanos) -> Nanos {
        a.submit(c, now);
        let mut done = Vec::new();
        loop {
            let t = a.next_event_ns().expect("it completes");
            a.advance(t, &mut done);
            if let Some(d) = done.iter().find(|d| d.id == c.id) {
                return d.done_ns - now;
            }
        }
    }

    #[test]
    fn writes_complete_in_controller_memory_until_it_is_full() {
        let mut a = write_back_array();
        let mut lat = Vec::new();
        let mut now = 0;
        for i in 0..48u64 {
            let t = complete(&mut a, write(i, i * 65536 * 3, 65536), now);
            lat.push(t);
            now += t;
        }
        // 64 KiB over the link (164 µs) + 50 µs, not the members' 10 ms...
        assert!(lat[..8].iter().all(|&t| t < 300_000), "{lat:?}");
        // ...until past 80 % the controller destages, slower than the host writes: with
        // 1 MiB full, writes wait for room.
        assert!(lat[20..].iter().any(|&t| t >= 1_000_000), "{lat:?}");
        let stats = a.stats();
        assert!(stats[0].1 > 0.0, "destaged: {stats:?}");
        // A read of data still dirty is a hit.
        let dirty = (47 * 65536 * 3) as u64;
        let hit = complete(&mut a, cmd(100, dirty, 4096), now + 1);
        assert!(hit < 100_000, "read of dirty data: {hit} ns");
    }

    #[test]
    fn a_flush_waits_for_the_destage_and_old_data_goes_on_its_own() {
        let mut a = write_back_array();
        let mut now = 0;
        for i in 0..4u64 {
            now += complete(&mut a, write(i, i * 65536, 65536), now);
        }
        assert_eq!(a.wb.as_ref().unwrap().dirty_bytes(), 4 * 65536);
        let flush = Command { op: Op::Flush, ..cmd(9, 0, 0) };
        let t = complete(&mut a, flush, now);
        assert!(t > 10_000_000, "the flush destaged to the members: {t} ns");
        assert_eq!(a.wb.as_ref().unwrap().dirty_bytes(), 0);
        // Dirty data left alone is destaged once it is FLUSH_AGE_NS old.
        now += t;
        run_one(&mut a, write(20, 0, 4096), now);
        assert_eq!(a.wb.as_ref().unwrap().dirty_bytes(), 0, "run_one ran past the age timer");
        assert!(a.next_event_ns().is_none());
    }

    proptest::proptest! {
        /// With a front end and a write-back cache, every command completes exactly once,
        /// answers come in time order, and a final FLUSH leaves nothing dirty.
        #[test]
        fn write_back_completes_everything_once(
            ops in proptest::collection::vec((0u8..8, 0u64..2048, 1u64..32, 0u64..400_000), 1..120),
        ) {
            let mut a = write_back_array();
            let mut done = Vec::new();
            let mut now = 0;
            let n = ops.len() as u64;
            for (i, &(kind, block, blocks, gap)) in ops.iter().enumerate() {
                now += gap;
                while let Some(t) = a.next_event_ns().filter(|&t| t <= now) {
                    a.advance(t, &mut done);
                }
                let c = match kind {
                    0..=2 => cmd(i as u64, block * 4096, blocks * 4096),
                    3 => Command { op: Op::Flush, ..cmd(i as u64, 0, 0) },
                    4 => Command { fua: true, ..write(i as u64, block * 4096, blocks * 4096) },
                    _ => write(i as u64, block * 4096, blocks * 4096),
                };
                a.submit(c, now);
            }
            a.submit(Command { op: Op::Flush, ..cmd(n, 0, 0) }, now);
            while let Some(t) = a.next_event_ns() {
                a.advance(t, &mut done);
            }
            let mut ids: Vec<u64> = done.iter().map(|c| c.id.0).collect();
            proptest::prop_assert!(done.windows(2).all(|w| w[0].done_ns <= w[1].done_ns));
            ids.sort();
            proptest::prop_assert_eq!(ids, (0..=n).collect::<Vec<_>>());
            proptest::prop_assert_eq!(a.wb.as_ref().unwrap().dirty_bytes(), 0);
        }
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
