//! Arrays built from member devices: RAID-0 / striped LVM and linear concatenation.
//!
//! An array is itself a [`Device`]: a command is cut at chunk (or member) boundaries into
//! member commands, each member runs its own model (with its own queue and reordering), and
//! the array's command completes when its last piece does. Pieces wait in a per-member FIFO
//! while that member's queue is full, as a RAID controller's or device-mapper's queue would.
//!
//! The array's queue depth is that of its front end (an array controller's, or the sum of the
//! members' for device-mapper); members keep their own.

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
        })
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
        self.parents[slot as usize] =
            Some(Parent { id: cmd.id, pieces_left: pieces.len() as u32, done_ns: now_ns });
        for (i, (member, mut piece)) in pieces.into_iter().enumerate() {
            piece.id = RequestId((u64::from(slot) << 32) | i as u64);
            self.send(member, piece, now_ns);
        }
    }

    fn next_event_ns(&self) -> Option<Nanos> {
        self.members.iter().filter_map(|m| m.next_event_ns()).min()
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
                completed.push(Completion { id: parent.id, done_ns: parent.done_ns });
                self.parents[slot] = None;
                self.free_parents.push(slot as u32);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ram::{RamDevice, RamParams};
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
}
