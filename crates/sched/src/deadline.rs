//! `mq-deadline`: Linux's deadline I/O scheduler for blk-mq, modelled on `block/mq-deadline.c`
//! as it stands in 6.x mainline (read from a 2025 tree): per-priority queues and prio aging
//! (since 5.14), `latest_pos` instead of `next_rq` pointers, no zone write locking (gone
//! in 6.10), `async_depth` defaulting to `nr_requests`. The code below is written from a reading
//! of that file, merge logic from `block/elevator.c`, `blk-merge.c` and `blk-mq-sched.c`; kernel
//! function names are given so the two can be compared side by side. Kernels before 5.14 run the
//! same algorithm with one level, and kernels before 6.5 (and the legacy single-queue
//! `deadline` of 2.6) with `next_rq` pointers: the `next_rq_pointers` switch, which a
//! topology's `[machine] kernel` sets (see "Where a batch goes on" below).
//!
//! # The algorithm
//!
//! Every queued request sits in two structures of its *priority level* (RT, BE, IDLE; I/O class
//! `none` counts as BE, as `ioprio_class_to_prio[]` says) and *data direction* (read, or
//! anything else as write, as `op_is_write()` says):
//!
//! - a **sort tree** keyed by start sector (the kernel's `sort_list` rb-tree), used to sweep the
//!   disk in ascending sector order, and
//! - a **FIFO** in insertion order (`fifo_list`), each request stamped with a deadline
//!   `fifo_time = insert time + read_expire|write_expire`.
//!
//! Dispatch (`dd_dispatch_request`) first hands out anything on the bypass list, then, if
//! requests of two or more priority levels are outstanding, gives BE then IDLE a chance to
//! dispatch a request that was inserted more than `prio_aging_expire` ago
//! (`dd_dispatch_prio_aged_requests`), and otherwise serves the levels in strict order RT, BE,
//! IDLE, stopping at the first level that dispatched *or still has requests outstanding*
//! (outstanding = inserted and not completed, so a level with requests on the device blocks the
//! levels below it until they complete).
//!
//! Within one level (`__dd_dispatch_request`):
//!
//! 1. **Batching.** Requests go out in *batches* of one direction. If the current batch has sent
//!    fewer than `fifo_batch` requests and the sort tree of the batch's direction (`last_dir`)
//!    holds a request at or above `latest_pos` (the sector of the last request dispatched in
//!    that direction at this level), that request goes next: a one-way elevator sweep.
//! 2. **Choosing a direction** for a new batch: reads are preferred. If reads are queued, writes
//!    are queued too and reads have already been chosen `writes_starved` times in a row
//!    (`starved++ >= writes_starved`), this batch is writes; otherwise reads. With no reads
//!    queued, writes. Choosing writes resets `starved`.
//! 3. **Deadline check** (`deadline_check_fifo`), only when a new batch starts: if the oldest
//!    request of the chosen direction has passed its deadline, or the sweep has run off the top
//!    of the disk, the batch starts from the FIFO head (the oldest request); otherwise it
//!    continues the sweep from `latest_pos`.
//!
//! **Where a batch goes on** changed in 6.5 (Bart Van Assche's "Track the dispatch position",
//! 2023). Before, dispatching a request pointed `next_rq` of its direction at the request after
//! it in the sort tree *at that moment* and cleared the other direction's (`deadline_move_request`
//! of 2.6.29 and of mq-deadline 4.x); a request queued later never became `next_rq`, and a new
//! batch found no pointer after the other direction's batch, or after the top of the disk, and
//! started from the FIFO head. Since 6.5 the next request is looked up from `latest_pos` at
//! each dispatch, so one just queued above the last position goes next. The two differ where a
//! sequential reader keeps a request queued just above the last one dispatched (readahead split
//! by `max_sectors_kb`, two windows in flight) while another reader waits higher up: the old rule
//! serves the other reader next (the pointer was set when it was the next one up), the new one
//! serves the sequential reader for as long as `read_expire` allows. `next_rq_pointers` = 1
//! runs the old rule, with this file's per-priority levels (one level holds everything unless
//! I/O priorities are set).
//!
//! Deadlines are therefore *soft*: an expired request waits for the batch in progress to end,
//! and, if writes are due, for one write batch, before a read batch starts with it. With one
//! level, `writes_starved >= 1` and a device taking `T` per request, the oldest queued read is
//! dispatched at most `2·max(fifo_batch, 1)·T` after its deadline; younger reads also wait for
//! the older ones. `tests/deadline_props.rs` derives this bound and checks it.
//!
//! **Merging** (`elv_merge` + `dd_request_merge`, applied by `blk_mq_sched_try_merge`): an
//! offered request is tried, in order, against the one-hit cache `last_merge` (back or front
//! merge), then the "rqhash" of queued requests keyed by *end* sector (back merge: the offered
//! request starts where a queued one ends; the most recently hashed one wins), then, if
//! `front_merges` is 1, the sort tree of its own level and direction (front merge: it ends where
//! a queued one starts). The first candidate that passes `blk_rq_merge_ok` is the only one tried:
//! if the merged size would exceed `max_len_bytes` the merge fails *and the queued request is
//! marked no-merge for the rest of its life* (`req_set_nomerge`), as the kernel does. Requests
//! merge only with the same operation, cgroup and I/O priority (class and level); flushes and
//! FUA writes never merge (`REQ_NOMERGE_FLAGS`). A front merge moves the request in the sort
//! tree; a back merge re-keys it in the rqhash. The grown request keeps its FIFO position and
//! deadline: a bio merge in the kernel leaves `fifo_time` alone, and when two *requests* merge
//! (`dd_merged_requests`) the survivor keeps the earlier of the two deadlines. We apply the same
//! rule (the offered request's would-be deadline is `now + expire`, never earlier than the
//! target's unless the expire tunable was lowered in between).
//!
//! # Tunables (`/sys/block/<dev>/queue/iosched/`)
//!
//! | name | unit | default | meaning |
//! |---|---|---|---|
//! | `read_expire` | ms | 500 | read deadline: short, because a process usually waits for each read |
//! | `write_expire` | ms | 5000 | write deadline: long, writes are mostly write-back the page cache absorbs |
//! | `writes_starved` | batches | 2 | read batches that may be chosen in a row while writes wait |
//! | `front_merges` | bool | 1 | look up front merges in the sort tree (back merges are far more common; 0 saves a lookup) |
//! | `async_depth` | requests | 256 | tag-allocation limit for async I/O and writes (accepted, not acted on; see below) |
//! | `fifo_batch` | requests | 16 | requests per batch: longer batches mean more sequential I/O and looser deadlines |
//! | `prio_aging_expire` | ms | 10000 | after this long, BE/IDLE requests are served even while higher levels have work |
//! | `next_rq_pointers` | bool | 0 | not in sysfs: the `next_rq` rule of kernels before 6.5 (above) |
//!
//! Values are range-checked and refused outside the range (the kernel silently clamps).
//!
//! # Where we deviate, and why
//!
//! - **Flushes** (`Op::Flush`) do not enter the scheduler: the kernel's flush machinery sends
//!   them to the hardware queue's dispatch list (`RQF_FLUSH_SEQ`), ahead of everything the
//!   scheduler holds. We keep them on a bypass list that `dispatch` empties first, in arrival
//!   order, and they do not count as outstanding for any priority level. FUA writes are
//!   scheduled normally (a device with FUA needs no pre/post flush) but never merge.
//! - **Sync-ness** must match for a merge. The kernel's `blk_rq_merge_ok` does not compare
//!   `REQ_SYNC` (only CFQ and BFQ refused sync/async merges), but the [`Scheduler`] contract
//!   requires it.
//! - **No request-to-request merges.** After growing a request the kernel tries to merge it with
//!   its new neighbour (`attempt_back_merge`/`attempt_front_merge`), and an inserted request is
//!   first offered for merging (`blk_mq_sched_try_insert_merge`). Both would make an *inserted*
//!   request disappear into another, which [`Merged`] cannot report, so only offered requests
//!   merge. Multi-range discard merges (`ELEVATOR_DISCARD_MERGE`, for devices with
//!   `max_discard_segments > 1`) are not modelled: discards merge when contiguous, like writes.
//! - **Time** is exact nanoseconds instead of jiffies (HZ granularity, 1–10 ms), so deadlines
//!   expire exactly `read_expire` after insertion. The deadline is stamped at `insert` time
//!   (`now_ns`), as the kernel stamps `jiffies` in `dd_insert_request`, not at `submit_ns`.
//! - **Prio aging** compares a request's insertion time with `now - prio_aging_expire`. The
//!   kernel recovers the insertion time as `fifo_time - fifo_expire` with the *current*
//!   `fifo_expire`; after lowering an expire that can leave fresh requests undispatchable until
//!   time catches up. We store the insertion time instead.
//! - **`writes_starved`** takes 0..=2^31-1. The kernel accepts negative values, which its
//!   unsigned comparison turns into "never starve reads"; that is refused here.
//! - **`async_depth`** limits tag allocation (`dd_limit_depth`), which happens in the block layer
//!   before a request reaches the scheduler. The [`Scheduler`] trait has no such hook, so the
//!   value is kept and shown but changes nothing. Its default is `nr_requests`, which with an
//!   elevator is 2 × min(tag depth, `BLKDEV_DEFAULT_RQ` = 128) = 256 for NBD's 128 tags.
//! - Among several queued requests starting at the same sector, the front merge lookup takes the
//!   oldest (the kernel's `elv_rb_find` returns whichever its tree walk meets first).
//! - Zoned devices (write locking by zone) are not modelled; neither does current mainline.
//!
//! Two kernel behaviours that look like bugs are kept on purpose: the scheduler starts life with
//! `last_dir = write` and `batching = 0`, so the very first dispatch continues a phantom write
//! batch (up to `fifo_batch` writes go before any read; not under `next_rq_pointers`, where no
//! pointer is set yet); and a front merge can happen through the
//! `last_merge` cache even with `front_merges = 0`, because that cache tries both ends.
//!
//! # Cost
//!
//! Requests live in a slab (a `Vec` of nodes with a free list) and every list is intrusive,
//! linked by slab index in a dense side array: the FIFOs, the chains of requests sharing a start
//! sector, and the rqhash chains. Each sort tree is a `BTreeMap` from start sector to the
//! (oldest, newest) request starting there, so equal sectors keep insertion order, as the
//! kernel's rb-tree does. The rqhash is, like the kernel's, an array of bucket heads, but grown
//! with the slab (power of two, at least twice the slab) rather than fixed at 64 buckets.
//! Nothing depends on hash iteration order. Per request: a `BTreeMap` insertion, a range lookup
//! and a removal (B-tree node allocation aside, no heap allocation once the slab has grown), and
//! O(1) list work. `benches/deadline.rs` measures insert + dispatch + complete with 10,000 queued.

use std::collections::{BTreeMap, VecDeque};

use elevator_core::{IoPrioClass, Nanos, Op, Request, NS_PER_MS};

use crate::{Dispatch, Merged, Scheduler, TunableError, TunableInfo, TunableSpec};

const NAME: &str = "mq-deadline";

/// Data directions, as `enum dd_data_dir`.
const READ: usize = 0;
const WRITE: usize = 1;

/// Priority levels, as `enum dd_prio`.
const RT: usize = 0;
const BE: usize = 1;
const IDLE: usize = 2;
const PRIO_COUNT: usize = 3;

/// "No node" in the intrusive lists.
const NIL: u32 = u32::MAX;

const INT_MAX: u64 = i32::MAX as u64;

/// The rqhash starts with 64 buckets, like the kernel's `ELV_HASH_BITS`, and grows.
const MIN_BUCKET_BITS: u32 = 6;

/// The tunables in the order of the kernel's `deadline_attrs[]`.
pub const TUNABLES: &[TunableSpec] = &[
    TunableSpec {
        name: "read_expire",
        unit: "ms",
        default: 500,
        min: 0,
        max: INT_MAX,
        description: "Deadline of a read, counted from its insertion into the scheduler.",
    },
    TunableSpec {
        name: "write_expire",
        unit: "ms",
        default: 5000,
        min: 0,
        max: INT_MAX,
        description: "Deadline of a write (or discard), counted from its insertion.",
    },
    TunableSpec {
        name: "writes_starved",
        unit: "batches",
        default: 2,
        min: 0,
        max: INT_MAX,
        description: "How many read batches may be chosen in a row while writes are waiting.",
    },
    TunableSpec {
        name: "front_merges",
        unit: "bool",
        default: 1,
        min: 0,
        max: 1,
        description: "Look for front merges (a request ending where a queued one starts).",
    },
    TunableSpec {
        name: "async_depth",
        unit: "requests",
        default: 256,
        min: 1,
        max: INT_MAX,
        description: "Tag limit for async I/O and writes (kept for sysfs parity; not acted on).",
    },
    TunableSpec {
        name: "fifo_batch",
        unit: "requests",
        default: 16,
        min: 0,
        max: INT_MAX,
        description: "Requests dispatched in one direction, in sector order, before deadlines are checked again.",
    },
    TunableSpec {
        name: "prio_aging_expire",
        unit: "ms",
        default: 10000,
        min: 0,
        max: INT_MAX,
        description: "After this long a BE or IDLE request is served even while higher priority levels have work.",
    },
    TunableSpec {
        name: "next_rq_pointers",
        unit: "bool",
        default: 0,
        min: 0,
        max: 1,
        description: "Not in sysfs: 1 runs the rule of Linux before 6.5 (and of the legacy deadline): a batch goes on with the request that followed the last one dispatched when it went (next_rq), never one queued since; a topology's [machine] kernel sets it.",
    },
];

/// Current tunable values, in sysfs units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tunables {
    read_expire_ms: u64,
    write_expire_ms: u64,
    writes_starved: u64,
    front_merges: bool,
    async_depth: u64,
    fifo_batch: u64,
    prio_aging_expire_ms: u64,
    next_rq_pointers: bool,
}

impl Default for Tunables {
    fn default() -> Self {
        Tunables {
            read_expire_ms: TUNABLES[0].default,
            write_expire_ms: TUNABLES[1].default,
            writes_starved: TUNABLES[2].default,
            front_merges: TUNABLES[3].default != 0,
            async_depth: TUNABLES[4].default,
            fifo_batch: TUNABLES[5].default,
            prio_aging_expire_ms: TUNABLES[6].default,
            next_rq_pointers: TUNABLES[7].default != 0,
        }
    }
}

impl Tunables {
    fn expire_ns(&self, dir: usize) -> Nanos {
        let ms = if dir == READ { self.read_expire_ms } else { self.write_expire_ms };
        ms * NS_PER_MS
    }

    fn value(&self, name: &str) -> Option<u64> {
        Some(match name {
            "read_expire" => self.read_expire_ms,
            "write_expire" => self.write_expire_ms,
            "writes_starved" => self.writes_starved,
            "front_merges" => self.front_merges as u64,
            "async_depth" => self.async_depth,
            "fifo_batch" => self.fifo_batch,
            "prio_aging_expire" => self.prio_aging_expire_ms,
            "next_rq_pointers" => self.next_rq_pointers as u64,
            _ => return None,
        })
    }
}

/// One queued request and its scheduler bookkeeping (the kernel keeps these in `struct request`).
#[derive(Clone, Copy, Debug)]
struct Node {
    rq: Request,
    /// When `insert` was called.
    insert_ns: Nanos,
    /// Deadline (`fifo_time`).
    fifo_time: Nanos,
    /// In the rqhash (mergeable and not marked no-merge).
    hashed: bool,
    prio: u8,
    dir: u8,
    /// `REQ_NOMERGE`: set by a merge that failed on size, and for FUA requests.
    nomerge: bool,
}

/// The list links of one slab slot, kept apart from [`Node`] so that unlinking touches the
/// neighbours' links only: a dense array that stays in cache, rather than their whole nodes.
#[derive(Clone, Copy, Debug)]
struct Links {
    fifo_prev: u32,
    fifo_next: u32,
    /// Chain of requests with the same start sector in the sort tree, oldest first.
    sort_prev: u32,
    sort_next: u32,
    /// Chain of requests in the same rqhash bucket, newest first.
    hash_prev: u32,
    hash_next: u32,
}

const UNLINKED: Links = Links {
    fifo_prev: NIL,
    fifo_next: NIL,
    sort_prev: NIL,
    sort_next: NIL,
    hash_prev: NIL,
    hash_next: NIL,
};

/// Scheduler state of one priority level (`struct dd_per_prio`).
#[derive(Debug, Default)]
struct PerPrio {
    /// Sort trees by start sector: (oldest, newest) of the requests starting there, chained
    /// through `Links::sort_*` in insertion order, as `elv_rb_add` puts equal keys to the right.
    sort: [BTreeMap<u64, (u32, u32)>; 2],
    fifo_head: [u32; 2],
    fifo_tail: [u32; 2],
    /// Start sector of the request most recently dispatched in each direction.
    latest_pos: [u64; 2],
    /// Under `next_rq_pointers` (else `NIL`): the request that followed the last one
    /// dispatched, in its direction (`next_rq`; `NIL` for none, and for the other direction).
    next_rq: [u32; 2],
    inserted: u64,
    dispatched: u64,
    merged: u64,
    completed: u64,
}

impl PerPrio {
    fn new() -> PerPrio {
        PerPrio {
            fifo_head: [NIL; 2],
            fifo_tail: [NIL; 2],
            next_rq: [NIL; 2],
            ..PerPrio::default()
        }
    }

    /// Requests inserted and not completed (`dd_queued`): queued here or on the device.
    fn outstanding(&self) -> u64 {
        self.inserted - self.completed.min(self.inserted)
    }

    fn fifo_nonempty(&self, dir: usize) -> bool {
        self.fifo_head[dir] != NIL
    }
}

/// Counters of one priority level (`struct io_stats_per_prio`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// Requests inserted (merged offers are not inserted).
    pub inserted: u64,
    /// Offered requests merged into a queued request of this level.
    pub merged: u64,
    pub dispatched: u64,
    pub completed: u64,
}

/// mq-deadline. See the module documentation.
#[derive(Debug)]
pub struct Deadline {
    tun: Tunables,
    slab: Vec<Node>,
    links: Vec<Links>,
    free: Vec<u32>,
    per_prio: [PerPrio; PRIO_COUNT],
    /// The rqhash, as the kernel's `elv_rqhash`: buckets of doubly linked chains (through
    /// `Links::hash_*`) of queued mergeable requests, by end sector, newest at the head. The
    /// bucket count is a power of two kept at least twice the slab size, so chains stay short.
    buckets: Vec<u32>,
    bucket_bits: u32,
    /// The one-hit merge cache (`q->last_merge`).
    last_merge: Option<u32>,
    /// Requests that bypass scheduling (flushes), dispatched first.
    bypass: VecDeque<Request>,
    last_dir: usize,
    batching: u64,
    starved: u64,
    queued: usize,
    /// Why the last request went (`Scheduler::last_decision`).
    decision: &'static str,
}

impl Default for Deadline {
    fn default() -> Self {
        Deadline::new()
    }
}

fn prio_of(rq: &Request) -> usize {
    match rq.owner.prio.class {
        IoPrioClass::RealTime => RT,
        IoPrioClass::None | IoPrioClass::BestEffort => BE,
        IoPrioClass::Idle => IDLE,
    }
}

fn dir_of(rq: &Request) -> usize {
    if rq.op.is_read() {
        READ
    } else {
        WRITE
    }
}

/// `bio_mergeable` / the flag half of `rq_mergeable`: flushes and FUA never merge.
fn flags_mergeable(rq: &Request) -> bool {
    rq.op != Op::Flush && !rq.fua && rq.len_bytes > 0
}

impl Deadline {
    pub fn new() -> Deadline {
        Deadline {
            tun: Tunables::default(),
            slab: Vec::new(),
            links: Vec::new(),
            free: Vec::new(),
            per_prio: [PerPrio::new(), PerPrio::new(), PerPrio::new()],
            buckets: vec![NIL; 1 << MIN_BUCKET_BITS],
            bucket_bits: MIN_BUCKET_BITS,
            last_merge: None,
            bypass: VecDeque::new(),
            // dd_init_sched starts with last_dir = DD_WRITE and batching = 0.
            last_dir: WRITE,
            batching: 0,
            starved: 0,
            queued: 0,
            decision: "",
        }
    }

    /// Per-level counters as the kernel's debugfs shows them, indexed RT, BE, IDLE.
    pub fn stats(&self) -> [LevelStats; PRIO_COUNT] {
        self.per_prio.each_ref().map(|pp| LevelStats {
            inserted: pp.inserted,
            merged: pp.merged,
            dispatched: pp.dispatched,
            completed: pp.completed,
        })
    }

    /// `blk_rq_merge_ok` for queued request `idx` and offered `bio` (plus the trait's sync rule).
    fn merge_ok(&self, idx: u32, bio: &Request) -> bool {
        let n = &self.slab[idx as usize];
        !n.nomerge
            && flags_mergeable(&n.rq)
            && n.rq.op == bio.op
            && n.rq.sync == bio.sync
            && n.rq.owner.cgroup == bio.owner.cgroup
            && n.rq.owner.prio == bio.owner.prio
    }

    /// `req_set_nomerge`: never merge into this request again.
    fn set_nomerge(&mut self, idx: u32) {
        let n = &mut self.slab[idx as usize];
        n.nomerge = true;
        if n.hashed {
            self.hash_del(idx);
        }
        if self.last_merge == Some(idx) {
            self.last_merge = None;
        }
    }

    /// Bucket of an end sector: Fibonacci hashing (the top bits of a multiply by 2^64/phi), so
    /// that sectors which are all multiples of 8 still spread over every bucket.
    fn bucket(&self, end_sector: u64) -> usize {
        (end_sector.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - self.bucket_bits)) as usize
    }

    /// `elv_rqhash_add`: hash `idx` under its current end sector, at the head of its bucket.
    fn hash_add(&mut self, idx: u32) {
        let b = self.bucket(self.slab[idx as usize].rq.end_sector());
        let old = std::mem::replace(&mut self.buckets[b], idx);
        if old != NIL {
            self.links[old as usize].hash_prev = idx;
        }
        self.slab[idx as usize].hashed = true;
        let l = &mut self.links[idx as usize];
        l.hash_prev = NIL;
        l.hash_next = old;
    }

    /// `elv_rqhash_del`. Must be called before the request's end sector changes.
    fn hash_del(&mut self, idx: u32) {
        let n = &mut self.slab[idx as usize];
        n.hashed = false;
        let end = n.rq.end_sector();
        let (prev, next) = (self.links[idx as usize].hash_prev, self.links[idx as usize].hash_next);
        if prev == NIL {
            let b = self.bucket(end);
            self.buckets[b] = next;
        } else {
            self.links[prev as usize].hash_next = next;
        }
        if next != NIL {
            self.links[next as usize].hash_prev = prev;
        }
    }

    /// `elv_rqhash_find`: the most recently hashed request ending at `end_sector`.
    fn hash_find(&self, end_sector: u64) -> Option<u32> {
        let mut idx = self.buckets[self.bucket(end_sector)];
        while idx != NIL {
            if self.slab[idx as usize].rq.end_sector() == end_sector {
                return Some(idx);
            }
            idx = self.links[idx as usize].hash_next;
        }
        None
    }

    /// Doubles the buckets, keeping each chain's order (newest first) so lookups answer the same.
    fn hash_grow(&mut self) {
        let old = std::mem::replace(&mut self.buckets, vec![NIL; 1 << (self.bucket_bits + 1)]);
        self.bucket_bits += 1;
        for head in old {
            // Re-add oldest first: each goes to the head of its new bucket.
            let mut tail = head;
            while tail != NIL && self.links[tail as usize].hash_next != NIL {
                tail = self.links[tail as usize].hash_next;
            }
            while tail != NIL {
                let prev = self.links[tail as usize].hash_prev;
                self.hash_add(tail);
                tail = prev;
            }
        }
    }

    fn fifo_push_tail(&mut self, idx: u32) {
        let (p, d) = {
            let n = &self.slab[idx as usize];
            (n.prio as usize, n.dir as usize)
        };
        let tail = self.per_prio[p].fifo_tail[d];
        {
            let l = &mut self.links[idx as usize];
            l.fifo_prev = tail;
            l.fifo_next = NIL;
        }
        if tail == NIL {
            self.per_prio[p].fifo_head[d] = idx;
        } else {
            self.links[tail as usize].fifo_next = idx;
        }
        self.per_prio[p].fifo_tail[d] = idx;
    }

    fn fifo_unlink(&mut self, idx: u32) {
        let n = &self.slab[idx as usize];
        let (p, d) = (n.prio as usize, n.dir as usize);
        let (prev, next) = (self.links[idx as usize].fifo_prev, self.links[idx as usize].fifo_next);
        if prev == NIL {
            self.per_prio[p].fifo_head[d] = next;
        } else {
            self.links[prev as usize].fifo_next = next;
        }
        if next == NIL {
            self.per_prio[p].fifo_tail[d] = prev;
        } else {
            self.links[next as usize].fifo_prev = prev;
        }
    }

    /// `deadline_remove_request`: off the sort tree, the FIFO and the rqhash.
    fn remove(&mut self, idx: u32) -> Request {
        self.fifo_unlink(idx);
        let n = &self.slab[idx as usize];
        let (hashed, rq) = (n.hashed, n.rq);
        // deadline_del_rq_rb moves a pointer to the request on to the one after it; here a
        // request leaves only when dispatched, and `start` has pointed past it first.
        debug_assert!(self.per_prio[n.prio as usize].next_rq[n.dir as usize] != idx);
        self.sort_del(idx);
        if hashed {
            self.hash_del(idx);
        }
        if self.last_merge == Some(idx) {
            self.last_merge = None;
        }
        self.free.push(idx);
        self.queued -= 1;
        rq
    }

    /// `elv_rb_add`: into the sort tree under its current start sector, after equal ones.
    fn sort_add(&mut self, idx: u32) {
        let n = &self.slab[idx as usize];
        let (p, d, sector) = (n.prio as usize, n.dir as usize, n.rq.sector());
        let l = &mut self.links[idx as usize];
        l.sort_prev = NIL;
        l.sort_next = NIL;
        match self.per_prio[p].sort[d].entry(sector) {
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert((idx, idx));
            }
            std::collections::btree_map::Entry::Occupied(mut o) => {
                let ends = o.get_mut();
                let tail = std::mem::replace(&mut ends.1, idx);
                self.links[tail as usize].sort_next = idx;
                self.links[idx as usize].sort_prev = tail;
            }
        }
    }

    /// `elv_rb_del`. Must be called before the request's start sector changes.
    fn sort_del(&mut self, idx: u32) {
        let n = &self.slab[idx as usize];
        let (p, d, sector) = (n.prio as usize, n.dir as usize, n.rq.sector());
        let Links { sort_prev: prev, sort_next: next, .. } = self.links[idx as usize];
        let sort = &mut self.per_prio[p].sort[d];
        if prev == NIL && next == NIL {
            sort.remove(&sector);
            return;
        }
        let ends = sort.get_mut(&sector).expect("sorted request is in its tree");
        if prev == NIL {
            ends.0 = next;
        } else {
            self.links[prev as usize].sort_next = next;
        }
        if next == NIL {
            ends.1 = prev;
        } else {
            self.links[next as usize].sort_prev = prev;
        }
    }

    /// `deadline_latter_request`: the request after `idx` in its sort tree, or `NIL`.
    fn latter(&self, idx: u32) -> u32 {
        let next = self.links[idx as usize].sort_next;
        if next != NIL {
            return next;
        }
        let n = &self.slab[idx as usize];
        let sort = &self.per_prio[n.prio as usize].sort[n.dir as usize];
        let after = (std::ops::Bound::Excluded(n.rq.sector()), std::ops::Bound::Unbounded);
        sort.range(after).next().map_or(NIL, |(_, &(oldest, _))| oldest)
    }

    /// The request a batch of (`p`, `dir`) goes on with: `deadline_from_pos`, the first
    /// starting at or above `latest_pos`, or under `next_rq_pointers` the `next_rq` pointer.
    fn next_request(&self, p: usize, dir: usize) -> Option<u32> {
        let pp = &self.per_prio[p];
        if self.tun.next_rq_pointers {
            return (pp.next_rq[dir] != NIL).then_some(pp.next_rq[dir]);
        }
        pp.sort[dir].range(pp.latest_pos[dir]..).next().map(|(_, &(oldest, _))| oldest)
    }

    /// `__dd_dispatch_request`: picks a request of level `p` by batching, direction preference
    /// and deadlines, and dispatches it if it was inserted at or before `latest_start` (`None`:
    /// before the beginning of time, so nothing qualifies).
    fn dispatch_level(
        &mut self,
        p: usize,
        now_ns: Nanos,
        latest_start: Option<Nanos>,
    ) -> Option<Request> {
        let last_dir = self.last_dir;
        if self.batching < self.tun.fifo_batch {
            if let Some(idx) = self.next_request(p, last_dir) {
                // Still entitled to continue the batch in sector order.
                self.decision = "batch continues";
                return self.start(p, last_dir, idx, latest_start);
            }
        }

        // Not batching: choose a direction, reads first unless writes have starved enough.
        let pp = &self.per_prio[p];
        let dir = if pp.fifo_nonempty(READ) {
            let writes_waiting = pp.fifo_nonempty(WRITE);
            if writes_waiting && {
                let starved = self.starved;
                self.starved += 1;
                starved >= self.tun.writes_starved
            } {
                self.starved = 0;
                self.decision = "writes starved: write batch";
                WRITE
            } else {
                self.decision = "new read batch";
                READ
            }
        } else if pp.fifo_nonempty(WRITE) {
            self.starved = 0;
            self.decision = "new write batch";
            WRITE
        } else {
            return None;
        };

        // Start the batch at the oldest request if it has expired or the sweep has reached the
        // top of the disk; otherwise carry on sweeping from the last position.
        let pp = &self.per_prio[p];
        let head = pp.fifo_head[dir];
        let expired = now_ns >= self.slab[head as usize].fifo_time;
        if expired {
            self.decision = if dir == READ { "read fifo expired" } else { "write fifo expired" };
        }
        let idx = if expired { head } else { self.next_request(p, dir).unwrap_or(head) };
        self.last_dir = dir;
        self.batching = 0;
        self.start(p, dir, idx, latest_start)
    }

    /// The `dispatch_request:` tail of `__dd_dispatch_request` plus `dd_start_request`.
    fn start(
        &mut self,
        p: usize,
        dir: usize,
        idx: u32,
        latest_start: Option<Nanos>,
    ) -> Option<Request> {
        let insert_ns = self.slab[idx as usize].insert_ns;
        match latest_start {
            Some(latest) if insert_ns <= latest => {}
            _ => return None,
        }
        self.batching += 1;
        if self.tun.next_rq_pointers {
            // deadline_move_request: the pointers are set before the request leaves the tree
            // (not kept at all under 6.5's rule, which has none).
            let latter = self.latter(idx);
            self.per_prio[p].next_rq = [NIL; 2];
            self.per_prio[p].next_rq[dir] = latter;
        }
        let rq = self.remove(idx);
        let pp = &mut self.per_prio[p];
        pp.latest_pos[dir] = rq.sector();
        pp.dispatched += 1;
        Some(rq)
    }

    /// `dd_dispatch_prio_aged_requests`.
    fn dispatch_aged(&mut self, now_ns: Nanos) -> Option<Request> {
        let levels = self.per_prio.iter().filter(|pp| pp.outstanding() > 0).count();
        if levels < 2 {
            return None;
        }
        let latest_start = now_ns.checked_sub(self.tun.prio_aging_expire_ms * NS_PER_MS);
        for p in [BE, IDLE] {
            if let Some(rq) = self.dispatch_level(p, now_ns, latest_start) {
                return Some(rq);
            }
        }
        None
    }
}

impl Scheduler for Deadline {
    fn name(&self) -> &'static str {
        NAME
    }

    fn try_merge(&mut self, bio: &Request, max_len_bytes: u64, now_ns: Nanos) -> Option<Merged> {
        if !flags_mergeable(bio) {
            return None;
        }
        let start = bio.sector();
        let end = bio.end_sector();

        // elv_merge: the one-hit cache first, either end.
        let mut candidate: Option<(u32, bool)> = None;
        if let Some(lm) = self.last_merge {
            if self.merge_ok(lm, bio) {
                let rq = &self.slab[lm as usize].rq;
                if rq.end_sector() == start {
                    candidate = Some((lm, false));
                } else if rq.sector() == end {
                    candidate = Some((lm, true));
                }
            }
        }
        // Then a back merge through the rqhash: the most recently hashed request ending here.
        if candidate.is_none() {
            if let Some(idx) = self.hash_find(start) {
                if self.merge_ok(idx, bio) {
                    candidate = Some((idx, false));
                }
            }
        }
        // Then dd_request_merge: a front merge through the sort tree of the bio's level and
        // direction.
        if candidate.is_none() && self.tun.front_merges {
            let sort = &self.per_prio[prio_of(bio)].sort[dir_of(bio)];
            if let Some(&(idx, _)) = sort.get(&end) {
                if self.merge_ok(idx, bio) {
                    candidate = Some((idx, true));
                }
            }
        }
        let (idx, front) = candidate?;

        // ll_back_merge_fn / ll_front_merge_fn: too big, and the request never merges again.
        if self.slab[idx as usize].rq.len_bytes + bio.len_bytes > max_len_bytes {
            self.set_nomerge(idx);
            return None;
        }

        let expire = self.tun.expire_ns(dir_of(bio));
        if front {
            // dd_request_merged: the start moved, so reposition in the sort tree (after any
            // requests with the same start sector, as elv_rb_add puts equal keys right).
            self.sort_del(idx);
            let n = &mut self.slab[idx as usize];
            n.rq.offset_bytes = bio.offset_bytes;
            n.rq.len_bytes += bio.len_bytes;
            self.sort_add(idx);
        } else {
            // elv_rqhash_reposition: the end moved, so rehash (merge_ok implies hashed).
            self.hash_del(idx);
            self.slab[idx as usize].rq.len_bytes += bio.len_bytes;
            self.hash_add(idx);
        }
        let n = &mut self.slab[idx as usize];
        // The survivor keeps the earlier deadline (dd_merged_requests), in place in the FIFO.
        n.fifo_time = n.fifo_time.min(now_ns.saturating_add(expire));
        let (id, p) = (n.rq.id, n.prio as usize);
        self.per_prio[p].merged += 1;
        self.last_merge = Some(idx);
        Some(Merged { into: id, front })
    }

    fn insert(&mut self, rq: Request, now_ns: Nanos) {
        self.queued += 1;
        if rq.op == Op::Flush {
            self.bypass.push_back(rq);
            return;
        }
        let (p, dir) = (prio_of(&rq), dir_of(&rq));
        let mergeable = flags_mergeable(&rq);
        let node = Node {
            rq,
            insert_ns: now_ns,
            fifo_time: now_ns.saturating_add(self.tun.expire_ns(dir)),
            hashed: false,
            prio: p as u8,
            dir: dir as u8,
            nomerge: !mergeable,
        };
        let idx = match self.free.pop() {
            Some(idx) => {
                self.slab[idx as usize] = node;
                self.links[idx as usize] = UNLINKED;
                idx
            }
            None => {
                self.slab.push(node);
                self.links.push(UNLINKED);
                if self.slab.len() * 2 > self.buckets.len() {
                    self.hash_grow();
                }
                (self.slab.len() - 1) as u32
            }
        };
        self.per_prio[p].inserted += 1;
        self.sort_add(idx);
        if mergeable {
            self.hash_add(idx);
            if self.last_merge.is_none() {
                self.last_merge = Some(idx);
            }
        }
        self.fifo_push_tail(idx);
    }

    fn dispatch(&mut self, now_ns: Nanos) -> Dispatch {
        if let Some(rq) = self.bypass.pop_front() {
            self.queued -= 1;
            self.decision = "flush bypasses scheduling";
            return Dispatch::Request(rq);
        }
        if let Some(rq) = self.dispatch_aged(now_ns) {
            self.decision = "priority aging expired";
            return Dispatch::Request(rq);
        }
        for p in [RT, BE, IDLE] {
            if let Some(rq) = self.dispatch_level(p, now_ns, Some(now_ns)) {
                return Dispatch::Request(rq);
            }
            if self.per_prio[p].outstanding() > 0 {
                break;
            }
        }
        Dispatch::Empty
    }

    fn completed(&mut self, rq: &Request, _now_ns: Nanos) {
        if rq.op != Op::Flush {
            self.per_prio[prio_of(rq)].completed += 1;
        }
    }

    fn queued(&self) -> usize {
        self.queued
    }

    fn last_decision(&self) -> &'static str {
        self.decision
    }

    fn tunables(&self) -> Vec<TunableInfo> {
        TUNABLES
            .iter()
            .map(|spec| spec.info(self.tun.value(spec.name).unwrap_or(spec.default)))
            .collect()
    }

    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), TunableError> {
        let Some(spec) = TUNABLES.iter().find(|s| s.name == name) else {
            return Err(TunableError::unknown(NAME, name, &self.tunables()));
        };
        let v = spec.parse(NAME, value)?;
        let t = &mut self.tun;
        match name {
            "read_expire" => t.read_expire_ms = v,
            "write_expire" => t.write_expire_ms = v,
            "writes_starved" => t.writes_starved = v,
            "front_merges" => t.front_merges = v != 0,
            "async_depth" => t.async_depth = v,
            "fifo_batch" => t.fifo_batch = v,
            "prio_aging_expire" => t.prio_aging_expire_ms = v,
            "next_rq_pointers" => {
                // Either way the rule starts with no pointer: a pointer left from before a
                // switch off could name a request dispatched since.
                t.next_rq_pointers = v != 0;
                for pp in &mut self.per_prio {
                    pp.next_rq = [NIL; 2];
                }
            }
            _ => unreachable!("every entry of TUNABLES is handled"),
        }
        Ok(())
    }

    fn tunable(&self, name: &str) -> Result<String, TunableError> {
        self.tun
            .value(name)
            .map(|v| v.to_string())
            .ok_or_else(|| TunableError::unknown(NAME, name, &self.tunables()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::{IoPrio, Owner, RequestId};

    const MAX: u64 = 1 << 20;

    fn req(id: u64, op: Op, sector: u64, sectors: u64) -> Request {
        Request::new(RequestId(id), op, sector * 512, sectors * 512, true, Owner::process(1), 0)
            .unwrap()
    }
    fn read(id: u64, sector: u64) -> Request {
        req(id, Op::Read, sector, 8)
    }
    fn write(id: u64, sector: u64) -> Request {
        req(id, Op::Write, sector, 8)
    }

    fn next(s: &mut Deadline, now: Nanos) -> Request {
        match s.dispatch(now) {
            Dispatch::Request(rq) => rq,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    fn ids(s: &mut Deadline, now: Nanos) -> Vec<u64> {
        let mut out = Vec::new();
        while let Dispatch::Request(rq) = s.dispatch(now) {
            out.push(rq.id.0);
        }
        out
    }

    /// A scheduler whose state has left the initial phantom write batch: one read dispatched,
    /// so `last_dir` is read with one request in the batch and `latest_pos[read]` = 0.
    fn primed() -> Deadline {
        let mut s = Deadline::new();
        s.insert(read(0, 0), 0);
        assert_eq!(next(&mut s, 0).id, RequestId(0));
        s
    }

    #[test]
    fn sector_order_within_a_batch() {
        let mut s = primed();
        for (id, sector) in [(1, 500), (2, 100), (3, 900), (4, 300), (5, 700)] {
            s.insert(read(id, sector), 1);
        }
        assert_eq!(ids(&mut s, 2), vec![2, 4, 1, 5, 3]);
        assert_eq!(s.queued(), 0);
    }

    #[test]
    fn sweep_goes_up_then_restarts_at_the_oldest() {
        let mut s = primed();
        s.insert(read(1, 500), 1);
        assert_eq!(next(&mut s, 1).id, RequestId(1));
        // Below the sweep position: the sweep has run off the top, so the FIFO head goes.
        s.insert(read(2, 300), 2);
        s.insert(read(3, 100), 3);
        s.set_tunable("fifo_batch", "1").unwrap();
        assert_eq!(ids(&mut s, 4), vec![2, 3]);
    }

    #[test]
    fn reads_are_preferred_to_writes() {
        let mut s = primed();
        for i in 0..4 {
            s.insert(write(10 + i, 1000 + 8 * i), 1);
        }
        for i in 0..4 {
            s.insert(read(20 + i, 5000 + 8 * i), 1);
        }
        assert_eq!(ids(&mut s, 2), vec![20, 21, 22, 23, 10, 11, 12, 13]);
    }

    /// The case that tells the two rules apart: a sequential reader's request queued just
    /// above the one dispatched, after a second reader's request higher up was already queued.
    fn reader_behind_a_stream(pointers: bool) -> Vec<u64> {
        let mut s = primed();
        s.set_tunable("next_rq_pointers", if pointers { "1" } else { "0" }).unwrap();
        s.insert(read(1, 100), 1);
        s.insert(read(9, 1_000_000), 1);
        assert_eq!(next(&mut s, 1).id, RequestId(1));
        // The stream's next window comes while request 1 is on the device.
        s.insert(read(2, 108), 2);
        s.insert(read(3, 116), 2);
        ids(&mut s, 3)
    }

    #[test]
    fn a_batch_goes_on_from_the_last_position_since_6_5() {
        // deadline_from_pos: 2 and 3 start above latest_pos = 100 and below 9.
        assert_eq!(reader_behind_a_stream(false), vec![2, 3, 9]);
    }

    #[test]
    fn before_6_5_a_batch_goes_on_with_the_request_that_was_next_at_dispatch() {
        // deadline_move_request pointed next_rq at 9 when 1 went; 2 and 3 came later. After
        // 9 nothing is above, so the next batch starts at the FIFO head: 2.
        assert_eq!(reader_behind_a_stream(true), vec![9, 2, 3]);
    }

    #[test]
    fn a_batch_from_the_fifo_head_points_at_the_request_after_it() {
        let mut s = primed();
        s.set_tunable("next_rq_pointers", "1").unwrap();
        s.set_tunable("fifo_batch", "1").unwrap();
        s.insert(read(1, 100), 1);
        s.insert(read(5, 500), 1);
        s.insert(read(6, 600), 1);
        s.insert(read(2, 200), 2);
        // No pointer yet: the batch starts at the FIFO head, 1, and points at 2 (queued last).
        assert_eq!(next(&mut s, 3).id, RequestId(1));
        assert_eq!(s.per_prio[BE].next_rq, [s.per_prio[BE].sort[READ][&200].0, NIL]);
        // Everything expired: the FIFO head, 5, goes, and the pointer moves to 6.
        assert_eq!(next(&mut s, 10_000 * NS_PER_MS).id, RequestId(5));
        assert_eq!(s.per_prio[BE].next_rq, [s.per_prio[BE].sort[READ][&600].0, NIL]);
    }

    #[test]
    fn no_phantom_write_batch_with_pointers() {
        let mut s = Deadline::new();
        s.set_tunable("next_rq_pointers", "1").unwrap();
        s.insert(read(1, 0), 0);
        s.insert(write(2, 8), 0);
        s.insert(write(3, 16), 0);
        assert_eq!(ids(&mut s, 0), vec![1, 2, 3]);
    }

    #[test]
    fn initial_phantom_write_batch_is_kept() {
        // dd_init_sched: last_dir = write, batching = 0, so writes go first on a fresh queue.
        let mut s = Deadline::new();
        s.insert(read(1, 0), 0);
        s.insert(write(2, 8), 0);
        s.insert(write(3, 16), 0);
        assert_eq!(ids(&mut s, 0), vec![2, 3, 1]);
    }

    #[test]
    fn writes_get_a_batch_after_writes_starved_read_batches() {
        let mut s = primed();
        s.set_tunable("fifo_batch", "2").unwrap();
        s.set_tunable("writes_starved", "2").unwrap();
        for i in 0..20 {
            s.insert(read(100 + i, 10_000 + 8 * i), 1);
        }
        for i in 0..6 {
            s.insert(write(200 + i, 8 * i), 1);
        }
        let order: Vec<char> = ids(&mut s, 2)
            .into_iter()
            .take(16)
            .map(|id| if id >= 200 { 'W' } else { 'R' })
            .collect();
        // Priming batch (1 read sent, 1 to go), two starving read batches, a write batch, ...
        assert_eq!(order.iter().collect::<String>(), "RRRRRWWRRRRWWRRR");
    }

    #[test]
    fn writes_starved_zero_lets_writes_win_every_choice() {
        let mut s = primed();
        s.set_tunable("fifo_batch", "4").unwrap();
        s.set_tunable("writes_starved", "0").unwrap();
        for i in 0..10 {
            s.insert(read(100 + i, 10_000 + 8 * i), 1);
        }
        for i in 0..10 {
            s.insert(write(200 + i, 8 * i), 1);
        }
        let got = ids(&mut s, 2);
        // The primed batch may send 3 more reads (fifo_batch limits it), then all writes.
        assert_eq!(&got[..3], &[100, 101, 102]);
        assert_eq!(&got[3..13], &(200..210).collect::<Vec<_>>()[..]);
        assert_eq!(&got[13..], &(103..110).collect::<Vec<_>>()[..]);
    }

    #[test]
    fn fifo_batch_limits_a_batch() {
        for batch in [1u64, 3, 5] {
            let mut s = primed();
            s.set_tunable("fifo_batch", &batch.to_string()).unwrap();
            s.set_tunable("writes_starved", "0").unwrap();
            // Dispatch the rest of the primed batch out of the way with no writes around.
            for i in 0..20 {
                s.insert(read(100 + i, 10_000 + 8 * i), 1);
            }
            s.insert(write(999, 0), 1);
            let got = ids(&mut s, 2);
            let reads_first = got.iter().take_while(|&&id| id != 999).count() as u64;
            // The primed batch already counted one read.
            assert_eq!(reads_first, batch - 1, "fifo_batch={batch}: {got:?}");
        }
    }

    #[test]
    fn fifo_batch_zero_checks_every_dispatch() {
        let mut s = primed();
        s.set_tunable("fifo_batch", "0").unwrap();
        s.set_tunable("writes_starved", "1").unwrap();
        for i in 0..4 {
            s.insert(read(100 + i, 10_000 + 8 * i), 1);
            s.insert(write(200 + i, 8 * i), 1);
        }
        assert_eq!(ids(&mut s, 2), vec![100, 200, 101, 201, 102, 202, 103, 203]);
    }

    #[test]
    fn expired_fifo_head_starts_the_next_batch() {
        let mut s = primed();
        s.set_tunable("fifo_batch", "1").unwrap();
        s.insert(read(1, 1000), 0);
        assert_eq!(next(&mut s, 0).id, RequestId(1)); // latest_pos = 1000
        let t0 = NS_PER_MS;
        s.insert(read(2, 10), t0); // behind the sweep, oldest
        s.insert(read(3, 2000), t0 + 1);
        s.insert(read(4, 3000), t0 + 1);
        // Not expired yet: the sweep goes on upwards.
        assert_eq!(next(&mut s, t0 + 2).id, RequestId(3));
        // At its deadline exactly, request 2 has expired and jumps the queue.
        assert_eq!(next(&mut s, t0 + 500 * NS_PER_MS).id, RequestId(2));
        // The sweep restarts from there.
        assert_eq!(next(&mut s, t0 + 500 * NS_PER_MS).id, RequestId(4));
    }

    #[test]
    fn expiry_is_only_checked_between_batches() {
        let mut s = primed();
        s.set_tunable("fifo_batch", "3").unwrap();
        s.insert(read(1, 10), 0);
        s.insert(read(2, 2000), 0);
        s.insert(read(3, 3000), 0);
        s.insert(read(4, 1000), 0);
        // Primed batch (1 sent): two more go in sector order from 0 (1 and 4) even though
        // everything has expired, then a new batch starts from the FIFO head (2).
        let late = 10 * NS_PER_MS * 1000;
        assert_eq!(ids(&mut s, late), vec![1, 4, 2, 3]);
    }

    #[test]
    fn expired_write_fifo() {
        let mut s = primed();
        s.set_tunable("fifo_batch", "1").unwrap();
        s.set_tunable("writes_starved", "0").unwrap();
        s.insert(write(1, 5000), 0);
        assert_eq!(next(&mut s, 0).id, RequestId(1));
        s.insert(write(2, 100), 1);
        s.insert(write(3, 6000), 2);
        assert_eq!(next(&mut s, 3).id, RequestId(3));
        s.insert(write(4, 7000), 3);
        assert_eq!(next(&mut s, 1 + 5000 * NS_PER_MS).id, RequestId(2));
    }

    #[test]
    fn back_and_front_merges() {
        let mut s = Deadline::new();
        s.insert(read(1, 100), 0);
        s.insert(read(2, 500), 0);
        // last_merge is request 1: back merge through the cache.
        assert_eq!(
            s.try_merge(&read(3, 108), MAX, 0),
            Some(Merged { into: RequestId(1), front: false })
        );
        // Back merge into 2 through the rqhash.
        assert_eq!(
            s.try_merge(&read(4, 508), MAX, 0),
            Some(Merged { into: RequestId(2), front: false })
        );
        // last_merge is now 2; front merge into 1 through the sort tree.
        assert_eq!(
            s.try_merge(&read(5, 92), MAX, 0),
            Some(Merged { into: RequestId(1), front: true })
        );
        // Rehashed after the back merge: 1 now ends at 116.
        assert_eq!(
            s.try_merge(&read(6, 116), MAX, 0),
            Some(Merged { into: RequestId(1), front: false })
        );
        assert_eq!(s.try_merge(&read(7, 1000), MAX, 0), None);
        // Write does not merge into reads.
        assert_eq!(s.try_merge(&write(8, 124), MAX, 0), None);
        assert_eq!(s.queued(), 2);
        let a = next(&mut s, 0);
        let b = next(&mut s, 0);
        assert_eq!((a.id, a.sector(), a.sectors()), (RequestId(1), 92, 32));
        assert_eq!((b.id, b.sector(), b.sectors()), (RequestId(2), 500, 16));
        assert_eq!(s.stats()[BE].merged, 4);
    }

    #[test]
    fn front_merge_repositions_in_the_sort_tree() {
        let mut s = primed();
        s.insert(read(9, 180), 1);
        s.insert(read(1, 200), 1);
        s.insert(read(5, 300), 1);
        assert_eq!(next(&mut s, 1).id, RequestId(9)); // latest_pos = 180
        for sector in [192, 184, 176] {
            let m = s.try_merge(&read(sector, sector), MAX, 1).unwrap();
            assert_eq!(m, Merged { into: RequestId(1), front: true });
        }
        // 1 now starts at 176, below the sweep position: 5 comes first, then the FIFO head 1.
        // Left at its old key (200), 1 would have gone first.
        assert_eq!(ids(&mut s, 2), vec![5, 1]);
    }

    #[test]
    fn rqhash_survives_growth_and_finds_the_newest_with_an_end() {
        let mut s = Deadline::new();
        s.insert(read(0, 1 << 30), 0); // last_merge, far from everything
        for i in 1..=1000u64 {
            s.insert(read(i, i * 64), 0);
        }
        assert!(s.buckets.len() >= 2 * s.slab.len());
        for i in (1..=1000u64).rev() {
            let m = s.try_merge(&read(5000 + i, i * 64 + 8), MAX, 0);
            assert_eq!(m, Some(Merged { into: RequestId(i), front: false }), "request {i}");
        }
        // Two requests end at sector 1_000_008: the newer (a write) shadows the older read in
        // the rqhash, so a read offered there finds no back merge (elv_rqhash_find returns the
        // first match in the chain and elv_merge does not look further).
        s.insert(read(7000, 1_000_000), 0);
        s.insert(write(7001, 1_000_000), 0);
        assert_eq!(s.try_merge(&read(7002, 1_000_008), MAX, 0), None);
        assert_eq!(
            s.try_merge(&write(7003, 1_000_008), MAX, 0),
            Some(Merged { into: RequestId(7001), front: false })
        );
        // Now the write ends further on, and the read is found.
        assert_eq!(
            s.try_merge(&read(7004, 1_000_008), MAX, 0),
            Some(Merged { into: RequestId(7000), front: false })
        );
    }

    #[test]
    fn front_merges_zero_disables_the_sort_tree_lookup() {
        let mut s = Deadline::new();
        s.insert(read(1, 0), 0); // becomes last_merge
        s.insert(read(2, 100), 0);
        s.set_tunable("front_merges", "0").unwrap();
        assert_eq!(s.try_merge(&read(3, 92), MAX, 0), None);
        s.set_tunable("front_merges", "1").unwrap();
        assert_eq!(
            s.try_merge(&read(3, 92), MAX, 0),
            Some(Merged { into: RequestId(2), front: true })
        );
    }

    #[test]
    fn last_merge_cache_front_merges_even_with_front_merges_zero() {
        let mut s = Deadline::new();
        s.set_tunable("front_merges", "0").unwrap();
        s.insert(read(1, 100), 0); // last_merge
        assert_eq!(
            s.try_merge(&read(2, 92), MAX, 0),
            Some(Merged { into: RequestId(1), front: true })
        );
    }

    #[test]
    fn merges_respect_max_len_op_sync_prio_cgroup_and_flags() {
        let mut s = Deadline::new();
        s.insert(read(1, 0), 0);
        // Too big: refused, and request 1 never merges again (req_set_nomerge).
        assert_eq!(s.try_merge(&read(2, 8), 8 * 512, 0), None);
        assert_eq!(s.try_merge(&read(3, 8), MAX, 0), None);

        s.insert(write(10, 1000), 0);
        let mut async_write = write(11, 1008);
        async_write.sync = false;
        assert_eq!(s.try_merge(&async_write, MAX, 0), None, "sync-ness differs");
        let mut fua = write(12, 1008);
        fua.fua = true;
        assert_eq!(s.try_merge(&fua, MAX, 0), None, "FUA never merges");
        let mut other_prio = write(13, 1008);
        other_prio.owner.prio = IoPrio { class: IoPrioClass::BestEffort, level: 2 };
        assert_eq!(s.try_merge(&other_prio, MAX, 0), None, "I/O priority differs");
        let mut other_cg = write(14, 1008);
        other_cg.owner.cgroup = 3;
        assert_eq!(s.try_merge(&other_cg, MAX, 0), None, "cgroup differs");
        assert_eq!(s.try_merge(&req(15, Op::Discard, 1008, 8), MAX, 0), None, "op differs");
        let flush =
            Request::new(RequestId(16), Op::Flush, 0, 0, true, Owner::process(1), 0).unwrap();
        assert_eq!(s.try_merge(&flush, MAX, 0), None);
        assert_eq!(
            s.try_merge(&write(17, 1008), 16 * 512, 0),
            Some(Merged { into: RequestId(10), front: false })
        );

        // Nothing merges into a FUA request.
        let mut fua_q = write(20, 5000);
        fua_q.fua = true;
        s.insert(fua_q, 0);
        assert_eq!(s.try_merge(&write(21, 5008), MAX, 0), None);
        // Discards merge with discards.
        s.insert(req(30, Op::Discard, 9000, 8), 0);
        assert_eq!(
            s.try_merge(&req(31, Op::Discard, 9008, 8), MAX, 0),
            Some(Merged { into: RequestId(30), front: false })
        );
    }

    #[test]
    fn flushes_bypass_the_scheduler() {
        let mut s = primed();
        s.insert(read(1, 100), 1);
        s.insert(write(2, 200), 1);
        let flush =
            Request::new(RequestId(3), Op::Flush, 0, 0, true, Owner::process(1), 1).unwrap();
        s.insert(flush, 1);
        assert_eq!(s.queued(), 3);
        let first = next(&mut s, 2);
        assert_eq!(first.id, RequestId(3));
        s.completed(&first, 3);
        assert_eq!(ids(&mut s, 3), vec![1, 2]);
        assert_eq!(s.stats()[BE].inserted, 3); // primed read + 2; the flush is not counted
    }

    fn with_class(mut rq: Request, class: IoPrioClass) -> Request {
        rq.owner.prio = IoPrio { class, level: 4 };
        rq
    }

    #[test]
    fn priority_levels_are_strict_while_outstanding() {
        let mut s = Deadline::new();
        s.insert(with_class(read(1, 100), IoPrioClass::Idle), 0);
        s.insert(read(2, 200), 0);
        s.insert(with_class(read(3, 300), IoPrioClass::RealTime), 0);
        let rt = next(&mut s, 1);
        assert_eq!(rt.id, RequestId(3));
        // The RT request is on the device: lower levels wait for it to complete.
        assert_eq!(s.dispatch(1), Dispatch::Empty);
        s.completed(&rt, 2);
        let be = next(&mut s, 2);
        assert_eq!(be.id, RequestId(2));
        assert_eq!(s.dispatch(2), Dispatch::Empty);
        s.completed(&be, 3);
        assert_eq!(next(&mut s, 3).id, RequestId(1));
    }

    #[test]
    fn prio_aging_serves_old_lower_priority_requests() {
        let mut s = Deadline::new();
        s.insert(read(1, 100), 0); // BE, inserted at 0
        let aging = 10_000 * NS_PER_MS;
        // A continuous RT stream: BE starves until it is older than prio_aging_expire.
        let mut t = 1;
        let mut id = 100;
        loop {
            s.insert(with_class(read(id, 1000 + id), IoPrioClass::RealTime), t);
            id += 1;
            let rq = next(&mut s, t);
            s.completed(&rq, t);
            if rq.id == RequestId(1) {
                assert!(t >= aging, "BE served at {t} before aging");
                assert!(t <= aging + NS_PER_MS);
                break;
            }
            t += NS_PER_MS;
            assert!(t < 2 * aging, "BE request never aged");
        }
    }

    #[test]
    fn tunables_list_get_set_and_errors() {
        let mut s = Deadline::new();
        let names: Vec<String> = s.tunables().into_iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "read_expire",
                "write_expire",
                "writes_starved",
                "front_merges",
                "async_depth",
                "fifo_batch",
                "prio_aging_expire",
                "next_rq_pointers"
            ]
        );
        let defaults: Vec<String> = s.tunables().into_iter().map(|t| t.value).collect();
        assert_eq!(defaults, ["500", "5000", "2", "1", "256", "16", "10000", "0"]);
        assert_eq!(s.tunable("read_expire").unwrap(), "500");
        s.set_tunable("read_expire", "250").unwrap();
        assert_eq!(s.tunable("read_expire").unwrap(), "250");
        assert_eq!(s.tun.expire_ns(READ), 250 * NS_PER_MS);
        s.set_tunable("fifo_batch", " 0\n").unwrap();
        assert_eq!(s.tunable("fifo_batch").unwrap(), "0");

        let err = s.set_tunable("slice_idle", "0").unwrap_err();
        assert!(matches!(err, TunableError::Unknown { .. }));
        assert!(err.to_string().contains("read_expire"), "{err}");
        assert!(matches!(s.tunable("nope"), Err(TunableError::Unknown { .. })));
        for (name, bad) in [
            ("front_merges", "2"),
            ("async_depth", "0"),
            ("read_expire", "-1"),
            ("fifo_batch", "2147483648"),
            ("writes_starved", "x"),
        ] {
            let err = s.set_tunable(name, bad).unwrap_err();
            assert!(matches!(err, TunableError::Invalid { .. }), "{name}={bad}: {err:?}");
        }
        assert_eq!(s.tunable("front_merges").unwrap(), "1");
    }

    #[test]
    fn by_name_builds_it() {
        let s = crate::by_name("deadline").unwrap();
        assert_eq!(s.name(), "mq-deadline");
    }
}
