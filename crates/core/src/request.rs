//! The request model: what is asked (operation, range, flags), by whom ([`Owner`]), and when.
//!
//! A `Request` is what the kernel calls a `struct request` after the block layer has built it
//! from bios: one contiguous range on one device. Offsets and lengths are in bytes and must be
//! multiples of [`SECTOR_BYTES`]; [`Request::new`] refuses anything else, because a device can
//! only address whole sectors (the NBD server rounds unaligned client ranges out to whole
//! sectors with a bounce buffer *before* building a request; the simulator's job parser rejects
//! unaligned block sizes with an error naming the option).

use crate::units::{Nanos, SECTOR_BYTES};

/// Identifies one request for its whole life, from insert to completion. Unique per block layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u64);

/// The operation, as the kernel's `REQ_OP_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    Read,
    Write,
    /// A cache flush (`REQ_OP_FLUSH`): carries no data, orders nothing by itself.
    Flush,
    /// `REQ_OP_DISCARD` (NBD's TRIM): the range's contents may be forgotten.
    Discard,
}

impl Op {
    /// Reads and writes are the two "data directions" of the kernel's schedulers.
    pub fn is_read(self) -> bool {
        matches!(self, Op::Read)
    }
    /// Everything that is not a read goes in the write direction, as in `op_is_write()`.
    pub fn is_write(self) -> bool {
        !self.is_read()
    }
}

/// I/O priority class, as `ioprio_set(2)`: `IOPRIO_CLASS_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IoPrioClass {
    /// No class set: CFQ derives one from the CPU nice value (best effort, level 4 at nice 0).
    None,
    RealTime,
    BestEffort,
    Idle,
}

/// An I/O priority: class and level 0 (highest) ..= 7 (lowest), as fio's `prioclass`/`prio`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IoPrio {
    pub class: IoPrioClass,
    pub level: u8,
}

impl IoPrio {
    /// `IOPRIO_NORM`: the level a task gets at nice 0.
    pub const NORM_LEVEL: u8 = 4;

    pub const DEFAULT: IoPrio = IoPrio { class: IoPrioClass::None, level: Self::NORM_LEVEL };

    /// The priority of a task that set none, at nice `nice` (-20..=19): class none, level
    /// `(nice + 20) / 5` (`task_nice_ioprio`; `IOPRIO_NORM` at nice 0, 0 at -20, 7 at 19),
    /// which CFQ and BFQ give the task's queues.
    pub fn of_nice(nice: i8) -> IoPrio {
        let nice = i16::from(nice).clamp(-20, 19);
        IoPrio { class: IoPrioClass::None, level: ((nice + 20) / 5) as u8 }
    }

    /// The class a scheduler should act on: `None` behaves as best effort (CFQ's
    /// `cfq_init_prio_data`).
    pub fn effective_class(self) -> IoPrioClass {
        match self.class {
            IoPrioClass::None => IoPrioClass::BestEffort,
            class => class,
        }
    }
}

impl Default for IoPrio {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// On whose behalf a request was issued. Schedulers key their per-process state (CFQ's
/// `cfq_io_context`, AS's `as_io_context`) on `io_context`, and group controllers key on
/// `cgroup`, `pid`, `uid` and so on.
///
/// Strings are interned by whoever builds the owners (the simulator's job table, the server's
/// export table): `cgroup` is an index into that table, so a request stays `Copy` and cheap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Owner {
    /// The fio job (or NBD export) that issued the request.
    pub job: u32,
    /// Process id of the issuing thread; fio gives each job clone its own.
    pub pid: u32,
    /// Process group id.
    pub pgrp: u32,
    pub uid: u32,
    pub gid: u32,
    /// The I/O context: which "process" a scheduler sees. Threads that share one (CLONE_IO)
    /// carry the same value; usually equal to `pid`.
    pub io_context: u32,
    /// Interned cgroup path; 0 is the root cgroup.
    pub cgroup: u32,
    pub prio: IoPrio,
}

impl Owner {
    /// An owner for tests and simple callers: process `pid` in the root cgroup.
    pub fn process(pid: u32) -> Owner {
        Owner {
            job: 0,
            pid,
            pgrp: pid,
            uid: 0,
            gid: 0,
            io_context: pid,
            cgroup: 0,
            prio: IoPrio::DEFAULT,
        }
    }

    /// A kernel thread (a flusher, a journal thread): pid `pid`, its own I/O context, the
    /// root cgroup, no job of its own.
    pub fn kernel_thread(pid: u32) -> Owner {
        Owner { job: u32::MAX, ..Owner::process(pid) }
    }
}

/// A control group as a scheduler sees it: the blkio/io controller's node in the hierarchy.
/// Group 0 is the root and always exists; a child's `parent` is smaller than its own id, so a
/// table of groups can be built front to back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cgroup {
    pub id: u32,
    pub parent: Option<u32>,
    /// Path below the root, `a/b`; empty for the root.
    pub path: String,
    /// `blkio.weight` (cgroup v1, 100..=1000, default 500) or `io.weight` (v2, 1..=10000).
    pub weight: u32,
}

impl Cgroup {
    /// blkio.weight's default in cgroup v1 (`CFQ_WEIGHT_DEFAULT`).
    pub const DEFAULT_WEIGHT: u32 = 500;

    pub fn root() -> Cgroup {
        Cgroup { id: 0, parent: None, path: String::new(), weight: Self::DEFAULT_WEIGHT }
    }
}

/// The flags of a bio that the schedulers read, as its submitter decides them (see
/// [`Request::sync`], [`Request::noidle`], [`Request::meta`], [`Request::background`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BioFlags {
    pub sync: bool,
    pub noidle: bool,
    pub meta: bool,
    pub background: bool,
}

impl BioFlags {
    /// A sync bio without hints: a read, an `O_DIRECT` write.
    pub const SYNC: BioFlags =
        BioFlags { sync: true, noidle: false, meta: false, background: false };

    /// Sync or not, without hints.
    pub const fn sync_if(sync: bool) -> BioFlags {
        BioFlags { sync, noidle: false, meta: false, background: false }
    }
}

/// One contiguous range of I/O on one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub id: RequestId,
    pub op: Op,
    /// Start of the range on the device, in bytes, a multiple of [`SECTOR_BYTES`].
    pub offset_bytes: u64,
    /// Length in bytes, a multiple of [`SECTOR_BYTES`]; 0 only for `Flush`.
    pub len_bytes: u64,
    /// Synchronous: someone waits for it (`REQ_SYNC`). Reads are always sync; writes are sync
    /// for `O_DIRECT` and `O_SYNC`.
    pub sync: bool,
    /// The submitter sends nothing more soon, so CFQ does not idle for it (`REQ_NOIDLE`):
    /// the page cache's sync writes (`WRITE_SYNC`, `WRITE_SYNC_PLUG`: fsync's and `O_SYNC`'s
    /// writeback, the ext3 journal's sync commits), not `O_DIRECT` writes (`WRITE_ODIRECT`).
    pub noidle: bool,
    /// File-system metadata the submitter waits for (`REQ_META`, and from 3.1 `REQ_PRIO`,
    /// which is what CFQ looks at): ext3's and ext4's inode and directory reads
    /// (`READ_META` in 2.6.x, `READ | REQ_META | REQ_PRIO` from 3.1). CFQ serves it first
    /// within a queue and lets it preempt a queue that has none.
    pub meta: bool,
    /// The flusher's background or periodic writeback (`REQ_BACKGROUND`, 4.10+:
    /// `wbc->for_background || wbc->for_kupdate`), which writeback throttling holds to its
    /// smallest depth; writeback a task starts itself (`sync_file_range`, `fadvise`, a
    /// journal commit) is not. Only async writes carry it.
    pub background: bool,
    /// Force unit access: durable when completed (`REQ_FUA`).
    pub fua: bool,
    pub owner: Owner,
    /// When the request entered the block layer: the reference for deadlines and FIFOs.
    pub submit_ns: Nanos,
}

/// Why a request could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestError {
    Unaligned { offset_bytes: u64, len_bytes: u64 },
    Empty,
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestError::Unaligned { offset_bytes, len_bytes } => write!(
                f,
                "offset {offset_bytes} and length {len_bytes} must be multiples of {SECTOR_BYTES} bytes"
            ),
            RequestError::Empty => write!(f, "a read, write or discard must have a non-zero length"),
        }
    }
}

impl std::error::Error for RequestError {}

impl Request {
    /// The request a bio becomes as it enters the block layer: its range, its scheduler
    /// flags, its owner. No bio here carries `REQ_FUA` (a flush's writes do, and the device
    /// layer sets that itself). The caller has checked the range, as a bio's is.
    pub fn of_bio(
        id: RequestId,
        op: Op,
        offset_bytes: u64,
        len_bytes: u64,
        flags: BioFlags,
        owner: Owner,
        submit_ns: Nanos,
    ) -> Request {
        Request {
            id,
            op,
            offset_bytes,
            len_bytes,
            sync: flags.sync,
            noidle: flags.noidle,
            meta: flags.meta,
            background: flags.background,
            fua: false,
            owner,
            submit_ns,
        }
    }

    /// Builds a request, checking the alignment rules above.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: RequestId,
        op: Op,
        offset_bytes: u64,
        len_bytes: u64,
        sync: bool,
        owner: Owner,
        submit_ns: Nanos,
    ) -> Result<Request, RequestError> {
        if !offset_bytes.is_multiple_of(SECTOR_BYTES) || !len_bytes.is_multiple_of(SECTOR_BYTES) {
            return Err(RequestError::Unaligned { offset_bytes, len_bytes });
        }
        if len_bytes == 0 && op != Op::Flush {
            return Err(RequestError::Empty);
        }
        Ok(Request::of_bio(
            id,
            op,
            offset_bytes,
            len_bytes,
            BioFlags::sync_if(sync),
            owner,
            submit_ns,
        ))
    }

    /// The flags the schedulers read, as one value.
    pub fn flags(&self) -> BioFlags {
        BioFlags {
            sync: self.sync,
            noidle: self.noidle,
            meta: self.meta,
            background: self.background,
        }
    }

    /// First sector of the range (`blk_rq_pos`).
    #[inline]
    pub fn sector(&self) -> u64 {
        self.offset_bytes / SECTOR_BYTES
    }

    /// Number of sectors (`blk_rq_sectors`).
    #[inline]
    pub fn sectors(&self) -> u64 {
        self.len_bytes / SECTOR_BYTES
    }

    /// One past the last byte.
    #[inline]
    pub fn end_bytes(&self) -> u64 {
        self.offset_bytes + self.len_bytes
    }

    /// One past the last sector (`blk_rq_pos + blk_rq_sectors`): where a back merge would start.
    #[inline]
    pub fn end_sector(&self) -> u64 {
        self.end_bytes() / SECTOR_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_values_map_to_levels_as_task_nice_ioprio() {
        let level = |n| IoPrio::of_nice(n).level;
        assert_eq!(
            [level(-20), level(-16), level(-15), level(0), level(1), level(15), level(19)],
            [0, 0, 1, 4, 4, 7, 7]
        );
        assert_eq!(IoPrio::of_nice(0), IoPrio::DEFAULT);
    }

    #[test]
    fn unaligned_requests_are_refused() {
        let owner = Owner::process(1);
        let err = Request::new(RequestId(1), Op::Read, 100, 4096, true, owner, 0).unwrap_err();
        assert!(err.to_string().contains("multiples of 512"));
        assert_eq!(
            Request::new(RequestId(1), Op::Write, 0, 0, true, owner, 0),
            Err(RequestError::Empty)
        );
        assert!(Request::new(RequestId(1), Op::Flush, 0, 0, true, owner, 0).is_ok());
    }

    #[test]
    fn sectors_and_ends() {
        let rq =
            Request::new(RequestId(1), Op::Read, 8192, 4096, true, Owner::process(1), 0).unwrap();
        assert_eq!((rq.sector(), rq.sectors(), rq.end_sector()), (16, 8, 24));
    }
}
