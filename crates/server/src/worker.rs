//! One worker thread per backing file: an io_uring event loop that owns the scheduler, the
//! file I/O and the transmission phase of every connection to the file's exports.
//!
//! One loop iteration: take messages (new connections, control requests), let the scheduler
//! dispatch while fewer than `queue_depth` requests are in flight and queue each as an
//! io_uring read/write/fsync/fallocate, queue one `sendmsg` per connection with replies
//! waiting (headers and small payloads gathered into one buffer, large payloads sent from
//! their I/O buffer), queue a `recv` for every connection that may read more, then submit
//! everything and wait in one `io_uring_enter` (`Dispatch::WaitUntil` becomes its timeout).
//! Completions then feed the parser (received bytes become requests: merged into a queued
//! request or inserted in the scheduler), `Scheduler::completed` and the reply queues. Nothing
//! crosses a thread per request: the connection threads only do the handshake, and messages
//! arrive on a channel with an eventfd kick that an io_uring read on the eventfd turns into a
//! completion.

use crate::budget::Budget;
use crate::buffers::{BufPool, IoBuf};
use crate::conn::{self, ConnMeta, NewConn, Step, Stream};
use crate::readahead::{Cache, Found, ReadStream};
use crate::stats::ExportStats;
use elevator_control::iocost::IoCost;
use elevator_control::iolatency::{parse_io_latency_keys, IoLatency};
use elevator_control::mclock::Mclock;
use elevator_control::throttle::{IoMax, Throttle};
use elevator_control::{Bio, Controller};
use elevator_core::{IoPrio, Op, Owner, Request, RequestId};
use elevator_nbd as nbd;
use elevator_sched::{Dispatch, Scheduler};
use io_uring::{opcode, types, IoUring};
use std::collections::VecDeque;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const EVENTFD_TOKEN: u64 = u64::MAX;

/// Request ids are a counter: SipHash showed in profiles of the hot path.
type IdMap<K, V> = elevator_core::hash::FastHashMap<K, V>;
/// user_data of socket operations: a tag in the top two bits, the connection's slot below.
/// File I/O uses the request id shifted by `PIECE_BITS` with the piece's index below (top
/// bits clear).
const TAG_MASK: u64 = 3 << 62;
/// A read is issued as pieces of `WorkerSetup::piece_bytes` (at least 4 KiB, so at most
/// 8,192 pieces for a 32 MiB read, plus merging).
const PIECE_BITS: u32 = 16;
const PIECE_MASK: u64 = (1 << PIECE_BITS) - 1;
const TAG_RECV: u64 = 1 << 62;
const TAG_SEND: u64 = 2 << 62;
const MAX_MERGE_BYTES: u64 = 1 << 20;
/// Requested socket send buffer (see `Stream::set_send_buffer`).
const SEND_BUFFER_BYTES: usize = 4 << 20;
/// Bytes of prefetched data a worker holds at most (read or in flight).
/// How often a connection waiting for memory budget looks again.
const STARVED_POLL: Duration = Duration::from_millis(2);
/// How soon a scheduler that holds requests, with none in flight and no timer asked for, is
/// asked again (see `Worker::run`).
const STALL_POLL: Duration = Duration::from_millis(10);
/// At most one line per this interval about such a scheduler.
const STALL_LOG_INTERVAL: Duration = Duration::from_secs(1);
/// Idle this long, a worker gives its free buffers back to the system.
const IDLE_TRIM: Duration = Duration::from_secs(1);
/// A connection's receive buffer: requests (and write payloads that fit) are parsed in place.
const RBUF: usize = 256 << 10;

/// user_data of piece `piece` of request `id`'s file I/O (0 for everything but read pieces).
fn file_user_data(id: u64, piece: usize) -> u64 {
    id << PIECE_BITS | piece as u64
}

#[derive(Debug)]
pub(crate) enum JobKind {
    Read,
    Write(Vec<u8>),
    Flush,
    Trim,
    WriteZeroes,
}

/// One client command on its way to the device.
pub(crate) struct Job {
    pub export: usize,
    pub conn: u32,
    /// The connection's slot in its worker.
    pub slot: usize,
    pub handle: u64,
    pub kind: JobKind,
    pub offset: u64,
    pub len: u64,
    pub fua: bool,
    /// Flow-control credit the connection gets back when the reply is written.
    pub cost: u64,
    /// Memory budget given back when the reply is written.
    pub charge: u64,
    pub arrived: Instant,
    /// A read: pieces of the request's read that cover this job and are not yet back.
    pub pieces_left: u32,
    /// A read: the first error of a piece.
    pub error: u32,
}

/// A reply waiting to be sent on its connection.
pub(crate) struct Reply {
    pub handle: u64,
    pub error: u32,
    pub is_read: bool,
    pub offset: u64,
    pub data: Payload,
    /// A successful NBD_CMD_BLOCK_STATUS: base:allocation extents.
    pub status: Option<Vec<(u32, u32)>>,
    pub cost: u64,
    pub charge: u64,
    /// The command's final reply (or its only one). A read answered in structured-reply
    /// chunks sends its other pieces first, with `done` false: they carry no credit.
    pub done: bool,
}

pub(crate) enum Msg {
    /// A connection in its transmission phase.
    Conn(Box<NewConn>),
    /// A control request (`elevator ctl`, metrics), answered on the sender.
    Ctl(Ctl, Sender<CtlReply>),
    Shutdown,
}

/// What the control socket may ask a worker: its scheduler lives on the worker thread.
pub(crate) enum Ctl {
    Tunables,
    SetTunable(String, String),
    /// A new weight for export `.0` (its group, named `.1`).
    SetWeight(usize, String, u32),
    /// A new `reservation_iops` or `limit_iops` (`.1`) for export `.0` under mClock.
    SetMclock(usize, String, u32),
    /// Export `.0`'s mClock settings.
    Mclock(usize),
    /// New `io.max` keys (`riops=2000 wbps=max`) for export `.0`.
    SetIoMax(usize, String),
    /// Export `.0`'s `io.max`.
    IoMax(usize),
    /// Export `.0`'s io.cost state.
    IoCost(usize),
    /// New `io.latency` keys (`target=USEC`) for export `.0`.
    SetIoLatency(usize, String),
    /// Export `.0`'s io.latency target and allowed depth.
    IoLatency(usize),
    Queue,
    /// Start (a file opened for appending) or stop the decision trace.
    Trace(Option<std::fs::File>),
}

/// What io.cost shows of one export: the backing file's vrate and QoS targets, the export's
/// hierarchical weights (none while it is idle).
#[derive(Clone, Copy, Debug)]
pub(crate) struct IoCostView {
    pub vrate_ppm: u64,
    pub rlat_us: u64,
    pub wlat_us: u64,
    /// `hweight_active` and `hweight_inuse`, in 1/65536.
    pub hweights: Option<(u64, u64)>,
}

pub(crate) enum CtlReply {
    Tunables {
        scheduler: &'static str,
        tunables: Vec<elevator_sched::TunableInfo>,
    },
    Done(Result<(), String>),
    /// An export's mClock settings; none without `controller = "mclock"`.
    Mclock(Option<elevator_control::mclock::MclockGroup>),
    /// An export's `io.max`; none without `controller = "io.max"`.
    IoMax(Option<IoMax>),
    /// An export's io.cost state; none without `controller = "io.cost"`.
    IoCost(Option<IoCostView>),
    /// An export's io.latency target (ns, none: no target) and its allowed depth
    /// (`u32::MAX`: not throttled); none without `controller = "io.latency"`.
    IoLatency(Option<(Option<u64>, u32)>),
    /// Requests queued in the scheduler, in flight, and parked.
    Queue {
        queued: usize,
        inflight: usize,
    },
}

/// The sending side of a worker.
#[derive(Clone)]
pub(crate) struct WorkerHandle {
    tx: Sender<Msg>,
    wake: Arc<Wake>,
}

/// How senders wake the worker: an eventfd that an io_uring read waits on, written only when
/// the worker says it is about to sleep.
struct Wake {
    efd: OwnedFd,
    /// Messages sent and not yet received.
    queued: AtomicUsize,
    sleeping: AtomicBool,
}

impl WorkerHandle {
    pub fn send(&self, m: Msg) -> bool {
        self.wake.queued.fetch_add(1, Ordering::SeqCst);
        let ok = self.tx.send(m).is_ok();
        if self.wake.sleeping.swap(false, Ordering::SeqCst) {
            let one: u64 = 1;
            // SAFETY: writing 8 bytes from a valid u64 to an eventfd we own.
            unsafe { libc::write(self.wake.efd.as_raw_fd(), (&one as *const u64).cast(), 8) };
        }
        ok
    }
}

/// A read reply's data: a slice of the request's I/O buffer, shared by the jobs merged into
/// the request (no copy between the ring and the socket).
pub(crate) enum Payload {
    Empty,
    Shared(Rc<IoBuf>, std::ops::Range<usize>),
}

impl Payload {
    /// The bytes `[offset, offset + len)` of the file out of `buf`, which holds the file from
    /// `base` on.
    fn of(buf: Rc<IoBuf>, base: u64, offset: u64, len: u64) -> Payload {
        let lo = (offset - base) as usize;
        Payload::Shared(buf, lo..lo + len as usize)
    }

    pub fn as_slice(&self) -> &[u8] {
        match self {
            Payload::Empty => &[],
            Payload::Shared(b, r) => b.slice(r.clone()),
        }
    }
}

struct Inflight {
    rq: Request,
    jobs: Vec<Job>,
    /// Shared from the start: a read's finished pieces are sent while the kernel still fills
    /// the others; the buffer is freed only after the last completion and the last send.
    buf: Option<Rc<IoBuf>>,
    /// Completions still due (read pieces, fallocates, the fsync after them).
    remaining: u32,
    error: u32,
    /// A FUA trim/zero: fdatasync after the fallocates.
    sync_after: bool,
}

/// A write whose payload does not fit the receive buffer: received into its own buffer.
struct BigWrite {
    hdr: nbd::RequestHeader,
    data: Vec<u8>,
    filled: usize,
    /// Its memory budget, given back if the connection goes before the payload is in.
    charge: u64,
}

/// A connection's replies being sent: one `sendmsg` (repeated after a short send).
struct Sending {
    busy: bool,
    /// Reply headers and small payloads, gathered.
    bytes: Vec<u8>,
    /// The replies on the wire, keeping their payload buffers alive.
    replies: Vec<Reply>,
    /// Where each large payload goes: (offset in `bytes` before it, reply index).
    splits: Vec<(usize, usize)>,
    iov: Vec<libc::iovec>,
    /// The first iovec not completely sent.
    first: usize,
    msg: libc::msghdr,
}

/// A connection in its transmission phase. Boxed: the kernel holds pointers into it (the
/// receive buffer, `msghdr`) while operations are in flight.
struct Conn {
    meta: ConnMeta,
    stream: Stream,
    rbuf: Box<[u8]>,
    /// Received bytes not yet parsed: `rbuf[rlo..rhi]`.
    rlo: usize,
    rhi: usize,
    big: Option<BigWrite>,
    recv_busy: bool,
    /// Sequential-read detection and the read-ahead window.
    ra: ReadStream,
    /// The receive in flight fills `big` (else `rbuf`): `parse` may start a big write while a
    /// receive into `rbuf` is in flight (credit returned by a send).
    recv_big: bool,
    /// No more requests are read (EOF, DISC, a protocol or socket error).
    closed: bool,
    /// Sending failed: replies are dropped.
    broken: bool,
    /// Requests read whose reply is not yet written, and their payload bytes.
    outstanding: usize,
    outstanding_bytes: u64,
    queue: Vec<Reply>,
    send: Sending,
    /// The next request waits for memory budget (`budget.rs`): parse again when it frees.
    starved: bool,
    /// When the send in flight, or the receive of a big write's payload, last made progress:
    /// a client that holds memory and stalls for `stall_timeout_ms` is dropped.
    send_progress: Instant,
    big_progress: Instant,
    budget: Arc<Budget>,
    _permit: crate::gate::Permit,
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(b) = self.big.take() {
            self.budget.give(b.charge);
        }
    }
}

impl Conn {
    fn new(c: NewConn, budget: Arc<Budget>) -> Box<Conn> {
        let mut rbuf = vec![0u8; RBUF.max(c.already.len())].into_boxed_slice();
        rbuf[..c.already.len()].copy_from_slice(&c.already);
        Box::new(Conn {
            meta: c.meta,
            stream: c.stream,
            rhi: c.already.len(),
            rbuf,
            rlo: 0,
            big: None,
            recv_busy: false,
            ra: ReadStream::default(),
            recv_big: false,
            closed: false,
            broken: false,
            outstanding: 0,
            outstanding_bytes: 0,
            queue: Vec::new(),
            send: Sending {
                busy: false,
                bytes: Vec::with_capacity(64 << 10),
                replies: Vec::new(),
                splits: Vec::new(),
                iov: Vec::new(),
                first: 0,
                // SAFETY: msghdr is plain data; all-zero is a valid empty header.
                msg: unsafe { std::mem::zeroed() },
            },
            starved: false,
            send_progress: Instant::now(),
            big_progress: Instant::now(),
            budget,
            _permit: c.permit,
        })
    }

    fn throttled(&self, cost: u64) -> bool {
        self.outstanding >= conn::MAX_OUTSTANDING
            || (self.outstanding_bytes > 0
                && self.outstanding_bytes + cost > conn::MAX_OUTSTANDING_BYTES)
    }

    /// A reply has left (or was dropped): a final one gives its command's credit back.
    fn settle(&mut self, r: &Reply) {
        if r.done {
            self.outstanding -= 1;
            self.outstanding_bytes -= r.cost;
            self.budget.give(r.charge);
        }
    }

    /// Stops reading and sending: the replies still queued are dropped (their credit with them).
    fn break_off(&mut self) {
        self.broken = true;
        self.closed = true;
        self.stream.shutdown();
        for r in std::mem::take(&mut self.queue) {
            self.settle(&r);
        }
    }
}

pub(crate) struct WorkerSetup {
    pub name: String,
    pub file: File,
    pub direct: bool,
    pub sched: Box<dyn Scheduler>,
    /// A group controller above the scheduler (`controller = "mclock"` or `"io.max"`):
    /// requests wait in it until it releases them to the scheduler.
    pub control: Option<GroupControl>,
    pub depth: usize,
    /// Reads longer than this go to the file in pieces of this many bytes (`max_sectors_kb`).
    pub piece_bytes: u64,
    /// The largest read-ahead window of a sequential connection (`read_ahead_kb`; 0: off).
    pub read_ahead_bytes: u64,
    pub start: Instant,
    pub stats: Arc<Vec<Mutex<ExportStats>>>,
    /// The server-wide memory budget for payloads.
    pub budget: Arc<Budget>,
    /// A connection whose replies make no progress this long is dropped.
    pub stall_timeout: Duration,
    /// The prefetch cache's size (`readahead.rs`).
    pub read_ahead_cache_bytes: u64,
}

/// The group controller of a backing file.
pub(crate) enum GroupControl {
    /// mClock: at most `queue_depth` requests below it at once.
    Mclock(Mclock),
    /// cgroup v2 `io.max` (blk-throttle).
    IoMax(Throttle),
    /// cgroup v2 `io.cost` with the exports' weights as `io.weight` (blk-iocost); boxed, it
    /// is several times the others' size.
    IoCost(Box<IoCost>),
    /// cgroup v2 `io.latency` (blk-iolatency).
    IoLatency(IoLatency),
}

impl GroupControl {
    fn get(&mut self) -> &mut dyn Controller {
        match self {
            GroupControl::Mclock(m) => m,
            GroupControl::IoMax(t) => t,
            GroupControl::IoCost(c) => c.as_mut(),
            GroupControl::IoLatency(l) => l,
        }
    }

    fn mclock(&mut self) -> Option<&mut Mclock> {
        match self {
            GroupControl::Mclock(m) => Some(m),
            GroupControl::IoMax(_) | GroupControl::IoCost(_) | GroupControl::IoLatency(_) => None,
        }
    }
}

pub(crate) fn spawn(
    setup: WorkerSetup,
) -> std::io::Result<(WorkerHandle, std::thread::JoinHandle<()>)> {
    // SAFETY: plain syscall; the result is checked.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh, owned descriptor.
    let wake = Arc::new(Wake {
        efd: unsafe { OwnedFd::from_raw_fd(fd) },
        queued: AtomicUsize::new(0),
        sleeping: AtomicBool::new(false),
    });
    let ring = IoUring::new(1024)?;
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = WorkerHandle { tx, wake: wake.clone() };
    let name = format!("elevator-io-{}", setup.name);
    let jh = std::thread::Builder::new().name(name).spawn(move || {
        let bufs = BufPool::new(&ring);
        let ra_bytes = setup.read_ahead_cache_bytes;
        let mut w = Worker {
            align: if setup.direct { 4096 } else { 512 },
            setup,
            ring,
            bufs,
            ra: Cache::new(ra_bytes),
            rx,
            wake,
            efd_buf: Box::new(0),
            efd_armed: false,
            next_id: 1,
            pending: IdMap::default(),
            held: IdMap::default(),
            below: IdMap::default(),
            inflight: IdMap::default(),
            parked: VecDeque::new(),
            conns: Vec::new(),
            trace: None,
            stopping: false,
            last_busy: Instant::now(),
            stall_logged: None,
        };
        w.run();
    })?;
    Ok((handle, jh))
}

struct Worker {
    setup: WorkerSetup,
    align: u64,
    ring: IoUring,
    /// I/O buffers, registered with `ring`. Declared after it: dropped after it too, so no
    /// buffer is unmapped while the ring could still write into it.
    bufs: BufPool,
    /// Prefetched reads of the file (`readahead.rs`).
    ra: Cache<Rc<IoBuf>, Job>,
    rx: Receiver<Msg>,
    wake: Arc<Wake>,
    /// `elevator ctl trace on FILE`: a JSON line per dispatched request.
    trace: Option<crate::trace::DecisionTrace>,
    efd_buf: Box<u64>,
    efd_armed: bool,
    next_id: u64,
    /// Jobs of requests inserted and not yet dispatched, by request (merges append).
    pending: IdMap<RequestId, Vec<Job>>,
    /// Requests held in the group controller, with the job they carry (none for a prefetch).
    held: IdMap<RequestId, (Request, Option<Job>)>,
    /// Per request released by the group controller (and the ones merged into it): the
    /// cgroups of the requests whose completion it must hear of.
    below: IdMap<RequestId, Vec<(u32, RequestId)>>,
    inflight: IdMap<u64, Inflight>,
    /// Dispatched writes waiting for an overlapping in-flight write to finish (read-modify-write
    /// must not race with another write to the same block).
    parked: VecDeque<(Request, Vec<Job>)>,
    /// Connections by slot; a slot is reused only once nothing refers to it (no job, no
    /// socket operation in flight).
    conns: Vec<Option<Box<Conn>>>,
    stopping: bool,
    /// The last time requests were queued or in flight (for `trim_when_idle`).
    last_busy: Instant,
    /// When a stalled scheduler was last reported (see `STALL_POLL`).
    stall_logged: Option<Instant>,
}

/// The earlier of a wake-up already asked for, if any, and `t`.
fn earliest<T: Ord + Copy>(asked: Option<T>, t: T) -> Option<T> {
    Some(asked.map_or(t, |a| a.min(t)))
}

fn errno_to_nbd(e: i32) -> u32 {
    match e {
        libc::EPERM | libc::EROFS => nbd::EPERM,
        libc::ENOSPC | libc::EDQUOT => nbd::ENOSPC,
        libc::ENOMEM => nbd::ENOMEM,
        libc::EOPNOTSUPP => nbd::ENOTSUP,
        _ => nbd::EIO,
    }
}

impl Worker {
    fn now(&self) -> u64 {
        self.setup.start.elapsed().as_nanos() as u64
    }

    fn run(&mut self) {
        loop {
            if !self.efd_armed {
                let sqe = opcode::Read::new(
                    types::Fd(self.wake.efd.as_raw_fd()),
                    (&mut *self.efd_buf as *mut u64).cast(),
                    8,
                )
                .build()
                .user_data(EVENTFD_TOKEN);
                self.push(sqe);
                self.efd_armed = true;
            }
            loop {
                let m = self.rx.try_recv();
                if m.is_ok() {
                    self.wake.queued.fetch_sub(1, Ordering::SeqCst);
                }
                match m {
                    Ok(Msg::Conn(c)) => self.add_conn(*c),
                    Ok(Msg::Ctl(c, tx)) => {
                        let _ = tx.send(self.control(c));
                    }
                    Ok(Msg::Shutdown) | Err(TryRecvError::Disconnected) => {
                        if !self.stopping {
                            for c in self.conns.iter_mut().flatten() {
                                c.closed = true;
                                c.stream.shutdown();
                            }
                        }
                        self.stopping = true;
                        break;
                    }
                    Err(TryRecvError::Empty) => break,
                }
            }
            self.retry_parked();
            let mut deadline = self.release_held();
            let mut stalled = false;
            while self.inflight.len() + self.parked.len() < self.setup.depth {
                let now = self.now();
                match self.setup.sched.dispatch(now) {
                    Dispatch::Request(rq) => {
                        if let Some(t) = self.trace.as_mut() {
                            let s = &self.setup.sched;
                            let (name, why, queued) = (s.name(), s.last_decision(), s.queued());
                            t.record(now, &self.setup.name, name, why, &rq, queued);
                        }
                        self.start(rq)
                    }
                    Dispatch::WaitUntil { until_ns } => {
                        deadline = earliest(deadline, until_ns);
                        break;
                    }
                    Dispatch::Empty => {
                        stalled = self.inflight.is_empty()
                            && self.parked.is_empty()
                            && self.setup.sched.queued() > 0;
                        break;
                    }
                }
            }
            let starved = self.retry_starved();
            let wall = Instant::now();
            let mut wake_at = self.drop_silent_readers(wall);
            for slot in 0..self.conns.len() {
                self.service(slot);
            }
            if stalled {
                // A scheduler bug: it holds requests, none is in flight to call it back, and
                // it asked for no timer — nothing would ask it again and its clients would
                // wait for ever. Say so, and ask again soon (one whose state moves with time,
                // as BFQ's budget timeout, gets going again).
                if self.stall_logged.is_none_or(|t| wall.duration_since(t) >= STALL_LOG_INTERVAL) {
                    let s = &self.setup.sched;
                    tracing::error!(
                        worker = %self.setup.name,
                        scheduler = s.name(),
                        queued = s.queued(),
                        last_decision = s.last_decision(),
                        "scheduler holds requests with none in flight and no timer"
                    );
                    self.stall_logged = Some(wall);
                }
                wake_at = earliest(wake_at, wall + STALL_POLL);
            }
            if starved {
                // Budget freed by another worker wakes nobody here: look again soon.
                wake_at = earliest(wake_at, wall + STARVED_POLL);
            }
            if let Some(t) = self.trim_when_idle(wall) {
                wake_at = earliest(wake_at, t);
            }
            if let Some(t) = wake_at {
                let ns = self.now() + t.saturating_duration_since(wall).as_nanos() as u64;
                deadline = earliest(deadline, ns);
            }
            if self.stopping
                && self.inflight.is_empty()
                && self.parked.is_empty()
                && self.pending.is_empty()
                && self.held.is_empty()
                && self.conns.iter().all(Option::is_none)
            {
                tracing::debug!(worker = %self.setup.name, "worker stopped");
                return;
            }
            // Sleep only if nothing was sent since the channel was drained; a sender that
            // comes later sees `sleeping` and kicks the eventfd.
            self.wake.sleeping.store(true, Ordering::SeqCst);
            if self.wake.queued.load(Ordering::SeqCst) > 0 {
                self.wake.sleeping.store(false, Ordering::SeqCst);
                if let Err(e) = self.ring.submit() {
                    tracing::error!(error = %e, "io_uring submit failed");
                }
            } else {
                self.wait(deadline);
                self.wake.sleeping.store(false, Ordering::SeqCst);
            }
            self.reap();
        }
    }

    /// Parses again on connections that waited for memory budget; whether any still waits.
    fn retry_starved(&mut self) -> bool {
        let mut any = false;
        for slot in 0..self.conns.len() {
            if self.conns[slot].as_ref().is_some_and(|c| c.starved) {
                self.parse(slot);
                any |= self.conns[slot].as_ref().is_some_and(|c| c.starved);
            }
        }
        any
    }

    /// Drops connections that hold memory without progress for `stall_timeout` — replies
    /// unread, or a write payload that stopped arriving — so a client holds memory until
    /// then, not longer; returns when the next one would be due.
    fn drop_silent_readers(&mut self, now: Instant) -> Option<Instant> {
        let limit = self.setup.stall_timeout;
        let mut next: Option<Instant> = None;
        for c in self.conns.iter_mut().flatten() {
            let since = match (c.send.busy, &c.big) {
                _ if c.broken => continue,
                (true, Some(_)) => c.send_progress.max(c.big_progress),
                (true, None) => c.send_progress,
                (false, Some(_)) => c.big_progress,
                (false, None) => continue,
            };
            let due = since + limit;
            if due <= now {
                tracing::warn!(conn = c.meta.id, "no progress for stall_timeout_ms: dropped");
                // A big write's buffer goes with the connection, once its receive is back.
                c.break_off();
            } else {
                next = earliest(next, due);
            }
        }
        next
    }

    /// Gives memory back to the system once the worker has been idle for `IDLE_TRIM`: free
    /// I/O buffers are unmapped and the allocator's free pages returned. Returns when to look
    /// again, if there is anything to give back.
    fn trim_when_idle(&mut self, now: Instant) -> Option<Instant> {
        if !self.inflight.is_empty() || !self.pending.is_empty() {
            self.last_busy = now;
        }
        if !self.bufs.dirty() {
            return None;
        }
        let due = self.last_busy + IDLE_TRIM;
        if now < due {
            return Some(due);
        }
        // Prefetches nobody took go too (in-flight ones cannot be: the worker is idle).
        self.ra.make_room(self.setup.read_ahead_cache_bytes);
        let freed = self.bufs.trim(&self.ring);
        #[cfg(target_env = "gnu")]
        // SAFETY: malloc_trim only returns free heap memory to the system.
        unsafe {
            libc::malloc_trim(0);
        }
        tracing::debug!(worker = %self.setup.name, freed, "idle: memory returned");
        None
    }

    fn add_conn(&mut self, c: NewConn) {
        if let Some(Ok(mut s)) = self.setup.stats.get(c.meta.export).map(|s| s.lock()) {
            s.connections += 1;
        }
        let mut c = Conn::new(c, self.setup.budget.clone());
        c.stream.set_send_buffer(SEND_BUFFER_BYTES);
        if self.stopping {
            c.closed = true;
            c.stream.shutdown();
        }
        let slot = match self.conns.iter().position(Option::is_none) {
            Some(s) => s,
            None => {
                self.conns.push(None);
                self.conns.len() - 1
            }
        };
        self.conns[slot] = Some(c);
        self.parse(slot);
    }

    fn control(&mut self, c: Ctl) -> CtlReply {
        let sched = &mut self.setup.sched;
        match c {
            Ctl::Tunables => {
                CtlReply::Tunables { scheduler: sched.name(), tunables: sched.tunables() }
            }
            Ctl::SetTunable(name, value) => {
                let r = sched.set_tunable(&name, &value).map_err(|e| e.to_string());
                if r.is_ok() {
                    tracing::info!(worker = %self.setup.name, %name, %value, "tunable set");
                }
                CtlReply::Done(r)
            }
            Ctl::SetWeight(export, path, weight) => {
                let id = export as u32 + 1;
                sched.set_group(&elevator_core::Cgroup { id, parent: Some(0), path, weight });
                if let Some(GroupControl::IoCost(c)) = self.setup.control.as_mut() {
                    let now = self.setup.start.elapsed().as_nanos() as u64;
                    if let Err(e) = c.set_weight(id, weight, now) {
                        return CtlReply::Done(Err(e));
                    }
                }
                if let Some(m) = self.setup.control.as_mut().and_then(GroupControl::mclock) {
                    if let Some(mut g) = m.group(id).cloned() {
                        g.weight = weight;
                        if let Err(e) = m.set_group(g) {
                            return CtlReply::Done(Err(e));
                        }
                    }
                }
                tracing::info!(worker = %self.setup.name, export, weight, "weight set");
                CtlReply::Done(Ok(()))
            }
            Ctl::SetMclock(export, key, value) => {
                let Some(m) = self.setup.control.as_mut().and_then(GroupControl::mclock) else {
                    return CtlReply::Done(Err(format!(
                        "{key} needs the server to run with controller = \"mclock\""
                    )));
                };
                let Some(mut g) = m.group(export as u32 + 1).cloned() else {
                    return CtlReply::Done(Err("the export has no mClock group".into()));
                };
                match key.as_str() {
                    "reservation_iops" => g.reservation_iops = value,
                    "limit_iops" => g.limit_iops = value,
                    _ => return CtlReply::Done(Err(format!("mClock has no setting `{key}`"))),
                }
                let r = m.set_group(g);
                if r.is_ok() {
                    tracing::info!(worker = %self.setup.name, export, %key, value, "mclock set");
                }
                CtlReply::Done(r)
            }
            Ctl::Mclock(export) => CtlReply::Mclock(
                self.setup
                    .control
                    .as_mut()
                    .and_then(GroupControl::mclock)
                    .and_then(|m| m.group(export as u32 + 1).cloned()),
            ),
            Ctl::SetIoMax(export, keys) => {
                let Some(GroupControl::IoMax(t)) = self.setup.control.as_mut() else {
                    return CtlReply::Done(Err(
                        "io.max needs the server to run with controller = \"io.max\"".into(),
                    ));
                };
                let id = export as u32 + 1;
                let current = t.limits(id).unwrap_or_default();
                let r = IoMax::parse_keys(&keys, current)
                    .map_err(|e| e.to_string())
                    .and_then(|l| t.set_limits(id, l).map(|_| l));
                match r {
                    Ok(l) => {
                        tracing::info!(worker = %self.setup.name, export, limits = %l, "io.max set");
                        CtlReply::Done(Ok(()))
                    }
                    Err(e) => CtlReply::Done(Err(e)),
                }
            }
            Ctl::IoMax(export) => CtlReply::IoMax(match self.setup.control.as_ref() {
                Some(GroupControl::IoMax(t)) => t.limits(export as u32 + 1),
                _ => None,
            }),
            Ctl::IoCost(export) => CtlReply::IoCost(match self.setup.control.as_mut() {
                Some(GroupControl::IoCost(c)) => Some(IoCostView {
                    vrate_ppm: c.vrate_ppm(),
                    rlat_us: c.qos().rlat_us,
                    wlat_us: c.qos().wlat_us,
                    hweights: c.hweights(export as u32 + 1),
                }),
                _ => None,
            }),
            Ctl::SetIoLatency(export, keys) => {
                let Some(GroupControl::IoLatency(l)) = self.setup.control.as_mut() else {
                    return CtlReply::Done(Err(
                        "io.latency needs the server to run with controller = \"io.latency\""
                            .into(),
                    ));
                };
                let r =
                    parse_io_latency_keys(&keys).and_then(|t| l.set_target(export as u32 + 1, t));
                if r.is_ok() {
                    tracing::info!(worker = %self.setup.name, export, %keys, "io.latency set");
                }
                CtlReply::Done(r)
            }
            Ctl::IoLatency(export) => CtlReply::IoLatency(match self.setup.control.as_ref() {
                Some(GroupControl::IoLatency(l)) => {
                    let id = export as u32 + 1;
                    l.max_depth(id).map(|d| (l.target(id), d))
                }
                _ => None,
            }),
            Ctl::Trace(file) => {
                self.trace = file.map(crate::trace::DecisionTrace::new);
                CtlReply::Done(Ok(()))
            }
            Ctl::Queue => CtlReply::Queue {
                queued: sched.queued(),
                inflight: self.inflight.len() + self.parked.len(),
            },
        }
    }

    fn push(&mut self, sqe: io_uring::squeue::Entry) {
        loop {
            // SAFETY: every buffer referenced by an SQE lives in `inflight`, in a boxed
            // connection, or is the boxed eventfd buffer, until its completion is reaped.
            if unsafe { self.ring.submission().push(&sqe) }.is_ok() {
                return;
            }
            if let Err(e) = self.ring.submit() {
                tracing::error!(error = %e, "io_uring submit failed");
            }
        }
    }

    fn wait(&mut self, deadline: Option<u64>) {
        let res = match deadline {
            Some(until) => {
                let d = Duration::from_nanos(until.saturating_sub(self.now()).max(1));
                let ts = types::Timespec::from(d);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args)
            }
            None => self.ring.submit_and_wait(1),
        };
        if let Err(e) = res {
            match e.raw_os_error() {
                Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY) => {}
                _ => tracing::error!(error = %e, "io_uring wait failed"),
            }
        }
    }

    // ---- connections: receive, parse, send ----

    /// Turns the complete requests received on `slot` into jobs and replies, as far as the
    /// connection's credit allows.
    fn parse(&mut self, slot: usize) {
        const HDR: usize = nbd::REQUEST_HEADER_LEN;
        loop {
            let Some(c) = self.conns[slot].as_deref_mut() else { return };
            if c.closed || c.big.is_some() {
                return;
            }
            let avail = &c.rbuf[c.rlo..c.rhi];
            let hdr = match nbd::parse_request_header(avail) {
                Ok(Some(h)) => h,
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(conn = c.meta.id, error = %e, "protocol error, closing");
                    c.closed = true;
                    return;
                }
            };
            let cost = conn::request_cost(&hdr);
            if hdr.command != nbd::Command::Disc && c.throttled(cost) {
                return;
            }
            let plen = hdr.payload_len();
            let complete = avail.len() >= HDR + plen;
            if !complete && HDR + plen <= RBUF {
                return; // the rest arrives in the receive buffer
            }
            // Memory before the payload is allocated or the read issued: past the budget the
            // connection waits (its requests stay in the socket).
            let charge = conn::request_charge(&hdr);
            if !c.budget.try_take(charge) {
                c.starved = true;
                return;
            }
            c.starved = false;
            let payload = if plen == 0 {
                c.rlo += HDR;
                Vec::new()
            } else if complete {
                let p = avail[HDR..HDR + plen].to_vec();
                c.rlo += HDR + plen;
                p
            } else {
                let have = avail.len() - HDR;
                let mut data = vec![0u8; plen];
                data[..have].copy_from_slice(&avail[HDR..]);
                c.rlo = c.rhi;
                c.big = Some(BigWrite { hdr, data, filled: have, charge });
                c.big_progress = Instant::now();
                return;
            };
            self.command(slot, hdr, payload);
        }
    }

    fn command(&mut self, slot: usize, hdr: nbd::RequestHeader, payload: Vec<u8>) {
        let Some(c) = self.conns[slot].as_deref_mut() else { return };
        match conn::decide(&c.meta, hdr, payload) {
            Step::Close => c.closed = true,
            Step::Reply(r) => {
                c.outstanding += 1;
                c.outstanding_bytes += r.cost;
                c.queue.push(r);
            }
            Step::Job(mut j) => {
                c.outstanding += 1;
                c.outstanding_bytes += j.cost;
                j.slot = slot;
                self.accept(j);
            }
        }
    }

    /// Queues what `slot` needs: a send of its waiting replies, a receive if it may read on;
    /// frees the slot once the connection is closed and quiet.
    fn service(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_deref_mut() else { return };
        if !c.send.busy && !c.queue.is_empty() {
            if c.broken {
                c.break_off();
            } else {
                let s = &mut c.send;
                std::mem::swap(&mut s.replies, &mut c.queue);
                s.bytes.clear();
                s.splits.clear();
                for (i, r) in s.replies.iter().enumerate() {
                    let payload = conn::encode_reply(&mut s.bytes, r, c.meta.structured);
                    if payload.len() <= conn::SMALL_PAYLOAD {
                        s.bytes.extend_from_slice(payload);
                    } else {
                        s.splits.push((s.bytes.len(), i));
                    }
                }
                s.iov.clear();
                let mut prev = 0;
                let base = s.bytes.as_ptr();
                for &(at, i) in &s.splits {
                    if at > prev {
                        // SAFETY: `prev..at` lies within `bytes`.
                        let p = unsafe { base.add(prev) };
                        s.iov.push(libc::iovec { iov_base: p as *mut _, iov_len: at - prev });
                    }
                    let payload = s.replies[i].data.as_slice();
                    s.iov.push(libc::iovec {
                        iov_base: payload.as_ptr() as *mut _,
                        iov_len: payload.len(),
                    });
                    prev = at;
                }
                if s.bytes.len() > prev {
                    // SAFETY: as above.
                    let p = unsafe { base.add(prev) };
                    s.iov
                        .push(libc::iovec { iov_base: p as *mut _, iov_len: s.bytes.len() - prev });
                }
                s.first = 0;
                s.busy = true;
                c.send_progress = Instant::now();
                let sqe = send_sqe(c, slot);
                self.push(sqe);
            }
        }
        let Some(c) = self.conns[slot].as_deref_mut() else { return };
        if c.closed {
            if !c.recv_busy && !c.send.busy && c.queue.is_empty() && c.outstanding == 0 {
                c.stream.shutdown();
                let id = c.meta.id;
                self.conns[slot] = None;
                // The connection was the scheduler's process: it has exited, so a scheduler
                // idling for it (CFQ, BFQ, AS) stops now; the loop dispatches next.
                let now = self.now();
                self.setup.sched.exited(id, now);
            } else if c.recv_busy && !c.send.busy && c.queue.is_empty() && c.outstanding == 0 {
                // Everything is answered: end the receive still waiting (DISC, errors).
                c.stream.shutdown();
            }
            return;
        }
        if c.recv_busy {
            return;
        }
        let fd = types::Fd(c.stream.raw_fd());
        let sqe = if let Some(b) = &mut c.big {
            let rest = &mut b.data[b.filled..];
            opcode::Recv::new(fd, rest.as_mut_ptr(), rest.len() as u32).build()
        } else {
            if c.rlo == c.rhi {
                c.rlo = 0;
                c.rhi = 0;
            } else if c.rlo > 0 && c.rbuf.len() - c.rhi < RBUF / 2 {
                c.rbuf.copy_within(c.rlo..c.rhi, 0);
                c.rhi -= c.rlo;
                c.rlo = 0;
            }
            if c.rhi == c.rbuf.len() {
                return; // full of requests waiting for credit
            }
            let rest = &mut c.rbuf[c.rhi..];
            opcode::Recv::new(fd, rest.as_mut_ptr(), rest.len() as u32).build()
        };
        c.recv_busy = true;
        c.recv_big = c.big.is_some();
        self.push(sqe.user_data(TAG_RECV | slot as u64));
    }

    fn recv_done(&mut self, slot: usize, res: i32) {
        let Some(c) = self.conns[slot].as_deref_mut() else { return };
        c.recv_busy = false;
        if res == -libc::EINTR || res == -libc::EAGAIN {
            return;
        }
        if res <= 0 {
            if res < 0 {
                tracing::debug!(conn = c.meta.id, errno = -res, "receive failed");
            } else {
                tracing::debug!(conn = c.meta.id, "client hung up");
            }
            c.closed = true;
            return;
        }
        let n = res as usize;
        match &mut c.big {
            Some(b) if c.recv_big => {
                b.filled += n;
                c.big_progress = Instant::now();
            }
            _ => c.rhi += n,
        }
        self.feed_big(slot);
        self.parse(slot);
    }

    /// Moves bytes that arrived in the receive buffer into a big write's payload, and sends
    /// the write on once its payload is complete.
    fn feed_big(&mut self, slot: usize) {
        let Some(c) = self.conns[slot].as_deref_mut() else { return };
        let Some(b) = &mut c.big else { return };
        let take = (c.rhi - c.rlo).min(b.data.len() - b.filled);
        b.data[b.filled..b.filled + take].copy_from_slice(&c.rbuf[c.rlo..c.rlo + take]);
        b.filled += take;
        c.rlo += take;
        if b.filled < b.data.len() {
            return;
        }
        let Some(b) = c.big.take() else { return };
        self.command(slot, b.hdr, b.data);
    }

    fn send_done(&mut self, slot: usize, res: i32) {
        let Some(c) = self.conns[slot].as_deref_mut() else { return };
        let s = &mut c.send;
        s.busy = false;
        if res == -libc::EINTR || res == -libc::EAGAIN {
            s.busy = true;
            let sqe = send_sqe(c, slot);
            self.push(sqe);
            return;
        }
        if res <= 0 {
            tracing::debug!(conn = c.meta.id, errno = -res, "send failed");
            for r in std::mem::take(&mut s.replies) {
                c.settle(&r);
            }
            c.break_off();
            return;
        }
        c.send_progress = Instant::now();
        let s = &mut c.send;
        let mut n = res as usize;
        while n > 0 && s.first < s.iov.len() {
            let v = &mut s.iov[s.first];
            if n >= v.iov_len {
                n -= v.iov_len;
                s.first += 1;
            } else {
                // SAFETY: advancing within the iovec's own buffer.
                v.iov_base = unsafe { (v.iov_base as *mut u8).add(n) }.cast();
                v.iov_len -= n;
                n = 0;
            }
        }
        if s.first < s.iov.len() {
            s.busy = true;
            let sqe = send_sqe(c, slot);
            self.push(sqe);
            return;
        }
        let mut sent = std::mem::take(&mut s.replies);
        for r in &sent {
            c.settle(r);
        }
        sent.clear();
        // The emptied vector keeps its capacity for the next batch.
        c.send.replies = sent;
        // Credit came back: requests held in the receive buffer may go on.
        self.parse(slot);
    }

    // ---- the scheduler and file I/O ----

    /// A new job: a read may be answered by (or wait for) a prefetch and may read ahead;
    /// everything else goes to the scheduler.
    fn accept(&mut self, job: Job) {
        if matches!(job.kind, JobKind::Read) && self.setup.read_ahead_bytes > 0 {
            self.read_ahead(&job);
            match self.ra.find(job.offset, job.len) {
                Found::Ready(buf, at) => {
                    let data = Payload::of(buf, at, job.offset, job.len);
                    self.finish_job(&job, 0, job.offset, data);
                    self.ra.consumed(at, job.offset + job.len);
                    return;
                }
                Found::InFlight(at) => return self.ra.wait(at, job),
                Found::Miss => {}
            }
        }
        self.accept_io(job);
    }

    /// Reads ahead of `job`'s connection if it reads sequentially: prefetch requests of the
    /// job's size (at least `max_sectors_kb`), owned by the connection.
    fn read_ahead(&mut self, job: &Job) {
        let Some(c) = self.conns.get_mut(job.slot).and_then(|c| c.as_deref_mut()) else { return };
        let a = self.align;
        let max = if job.offset.is_multiple_of(a) && job.len.is_multiple_of(a) {
            self.setup.read_ahead_bytes
        } else {
            0
        };
        let Some((lo, hi)) = c.ra.on_read(job.offset, job.len, max, c.meta.size) else { return };
        let chunk = job.len.max(self.setup.piece_bytes);
        let now = self.now();
        let mut at = lo;
        while at < hi {
            let n = chunk.min(hi - at).div_ceil(a) * a;
            if !self.ra.make_room(n) {
                return;
            }
            let id = RequestId(self.next_id);
            self.next_id += 1;
            let Ok(rq) = Request::new(id, Op::Read, at, n, true, job_owner(job), now) else {
                return;
            };
            self.ra.insert(at, n, id.0);
            if let Some(m) = self.setup.control.as_mut() {
                m.get().submit(Bio { device: 0, request: rq }, now);
                self.held.insert(id, (rq, None));
            } else {
                self.setup.sched.insert(rq, now);
                self.pending.insert(id, Vec::new());
            }
            at += n;
        }
    }

    /// A job to the scheduler: merged into a queued request or inserted as a new one.
    fn accept_io(&mut self, job: Job) {
        let now = self.now();
        let (op, off, end) = match job.kind {
            JobKind::Flush => (Op::Flush, 0, 0),
            _ => {
                let op = match job.kind {
                    JobKind::Read => Op::Read,
                    JobKind::Write(_) => Op::Write,
                    _ => Op::Discard,
                };
                let a = self.align;
                (op, job.offset / a * a, (job.offset + job.len).div_ceil(a) * a)
            }
        };
        let id = RequestId(self.next_id);
        self.next_id += 1;
        let mut rq = match Request::new(id, op, off, end - off, true, job_owner(&job), now) {
            Ok(rq) => rq,
            Err(e) => {
                tracing::warn!(error = %e, "cannot build request");
                self.finish_job(&job, nbd::EINVAL, job.offset, Payload::Empty);
                return;
            }
        };
        rq.fua = job.fua;
        if op != Op::Flush {
            if let Some(m) = self.setup.control.as_mut() {
                m.get().submit(Bio { device: 0, request: rq }, now);
                self.held.insert(id, (rq, Some(job)));
                return;
            }
        }
        self.enqueue(rq, Some(job), false, now);
    }

    /// A request to the scheduler, merged into a queued one or inserted; `counted`: the group
    /// controller released it and hears of its completion. A prefetch (no job) is never merged.
    fn enqueue(&mut self, rq: Request, job: Option<Job>, counted: bool, now: u64) {
        let (id, cgroup) = (rq.id, rq.owner.cgroup);
        if rq.op != Op::Flush && job.is_some() {
            if let Some(m) = self.setup.sched.try_merge(&rq, MAX_MERGE_BYTES, now) {
                if let Some(v) = self.pending.get_mut(&m.into) {
                    v.extend(job);
                    if counted {
                        self.below.entry(m.into).or_default().push((cgroup, id));
                    }
                    return;
                }
                tracing::error!(into = m.into.0, "scheduler merged into an unknown request");
            }
        }
        self.setup.sched.insert(rq, now);
        self.pending.insert(id, job.into_iter().collect());
        if counted {
            self.below.insert(id, vec![(cgroup, id)]);
        }
    }

    /// Passes what the group controller releases now to the scheduler; when it next wants to
    /// be asked.
    fn release_held(&mut self) -> Option<u64> {
        let m = self.setup.control.as_mut()?.get();
        let now = self.setup.start.elapsed().as_nanos() as u64;
        let mut out = Vec::new();
        m.release(now, &mut out);
        let timer = m.next_timer_ns();
        for bio in out {
            if let Some((rq, job)) = self.held.remove(&bio.request.id) {
                self.enqueue(rq, job, true, now);
            }
        }
        timer
    }

    fn overlaps_inflight_write(&self, rq: &Request, before: usize) -> bool {
        let hit = |o: &Request| {
            o.op.is_write()
                && o.op != Op::Flush
                && o.offset_bytes < rq.end_bytes()
                && rq.offset_bytes < o.end_bytes()
        };
        self.inflight.values().any(|f| hit(&f.rq))
            || self.parked.iter().take(before).any(|(p, _)| hit(p))
    }

    fn start(&mut self, rq: Request) {
        if let (Some(m), Some(bios)) = (self.setup.control.as_mut(), self.below.get(&rq.id)) {
            // The controller's requests in this one reach the file now (io.cost's rq_wait).
            let now = self.setup.start.elapsed().as_nanos() as u64;
            for &(cgroup, bio_id) in bios {
                let mut b = rq;
                b.owner.cgroup = cgroup;
                b.id = bio_id;
                m.get().dispatched(&Bio { device: 0, request: b }, now);
            }
        }
        let jobs = self.pending.remove(&rq.id).unwrap_or_default();
        if rq.op.is_write()
            && rq.op != Op::Flush
            && self.overlaps_inflight_write(&rq, self.parked.len())
        {
            self.parked.push_back((rq, jobs));
            return;
        }
        self.submit(rq, jobs);
    }

    fn retry_parked(&mut self) {
        let mut i = 0;
        while i < self.parked.len() {
            let rq = self.parked[i].0;
            if self.overlaps_inflight_write(&rq, i) {
                i += 1;
                continue;
            }
            if let Some((rq, jobs)) = self.parked.remove(i) {
                self.submit(rq, jobs);
            }
        }
    }

    fn submit(&mut self, rq: Request, jobs: Vec<Job>) {
        let fd = types::Fd(self.setup.file.as_raw_fd());
        let id = rq.id.0;
        let user = file_user_data(id, 0);
        let mut f = Inflight { rq, jobs, buf: None, remaining: 1, error: 0, sync_after: false };
        let sqe = match rq.op {
            Op::Read => {
                self.submit_read(f);
                return;
            }
            Op::Write => {
                let mut buf = self.bufs.take(&self.ring, rq.len_bytes as usize, true);
                let partial = f
                    .jobs
                    .iter()
                    .any(|j| j.offset % self.align != 0 || (j.offset + j.len) % self.align != 0);
                if partial {
                    // Read-modify-write for the blocks the client only partly writes.
                    if let Err(e) = pread_full(&self.setup.file, buf.as_mut(), rq.offset_bytes) {
                        tracing::warn!(error = %e, "read-modify-write read failed");
                        f.error = errno_to_nbd(e.raw_os_error().unwrap_or(libc::EIO));
                        self.inflight.insert(id, f);
                        self.complete(user, 0);
                        return;
                    }
                }
                let mut fua = false;
                for j in &f.jobs {
                    if let JobKind::Write(data) = &j.kind {
                        let at = (j.offset - rq.offset_bytes) as usize;
                        buf.as_mut()[at..at + data.len()].copy_from_slice(data);
                    }
                    fua |= j.fua;
                }
                let flags = if fua { libc::RWF_DSYNC } else { 0 };
                let (ptr, n) = (buf.as_mut_ptr(), rq.len_bytes as u32);
                let sqe = match buf.fixed_index() {
                    Some(i) => opcode::WriteFixed::new(fd, ptr, n, i)
                        .offset(rq.offset_bytes)
                        .rw_flags(flags)
                        .build(),
                    None => opcode::Write::new(fd, ptr, n)
                        .offset(rq.offset_bytes)
                        .rw_flags(flags)
                        .build(),
                };
                f.buf = Some(Rc::new(buf));
                Some(sqe)
            }
            Op::Flush => Some(opcode::Fsync::new(fd).flags(types::FsyncFlags::DATASYNC).build()),
            Op::Discard => None,
        };
        if let Some(sqe) = sqe {
            self.inflight.insert(id, f);
            self.push(sqe.user_data(user));
            return;
        }
        // Discard: one fallocate per job.
        f.sync_after = f.jobs.iter().any(|j| j.fua);
        let sqes: Vec<io_uring::squeue::Entry> = f
            .jobs
            .iter()
            .map(|j| {
                opcode::Fallocate::new(fd, j.len)
                    .offset(j.offset)
                    .mode(libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE)
                    .build()
                    .user_data(user)
            })
            .collect();
        f.remaining = sqes.len() as u32;
        self.inflight.insert(id, f);
        if sqes.is_empty() {
            self.complete(user, 0);
            return;
        }
        for s in sqes {
            self.push(s);
        }
    }

    /// Queues a read as pieces of at most `piece_bytes` into one buffer, each its own
    /// completion: the device sees `max_sectors_kb`-sized requests, and each piece can be
    /// sent to structured-reply clients as soon as it is back (`piece_read`).
    fn submit_read(&mut self, mut f: Inflight) {
        let fd = types::Fd(self.setup.file.as_raw_fd());
        let len = f.rq.len_bytes as usize;
        let piece = self.setup.piece_bytes as usize;
        let pieces = len.div_ceil(piece).max(1);
        debug_assert!(pieces as u64 <= PIECE_MASK, "max_sectors_kb validated against 32 MiB");
        let base = f.rq.offset_bytes;
        for j in &mut f.jobs {
            let lo = (j.offset - base) as usize;
            let hi = lo + j.len as usize;
            j.pieces_left = (hi.max(lo + 1).div_ceil(piece) - lo / piece) as u32;
        }
        // Not zeroed: a short read (end of file) zeroes the rest on completion.
        let buf = self.bufs.take(&self.ring, len, false);
        let (ptr, fixed) = (buf.as_mut_ptr(), buf.fixed_index());
        f.buf = Some(Rc::new(buf));
        f.remaining = pieces as u32;
        let id = f.rq.id.0;
        self.inflight.insert(id, f);
        for i in 0..pieces {
            let at = i * piece;
            let n = piece.min(len - at);
            // SAFETY: `at + n <= len`, inside the buffer that `inflight` keeps alive until
            // this piece's completion.
            let p = unsafe { ptr.add(at) };
            let sqe = match fixed {
                Some(b) => {
                    opcode::ReadFixed::new(fd, p, n as u32, b).offset(base + at as u64).build()
                }
                None => opcode::Read::new(fd, p, n as u32).offset(base + at as u64).build(),
            };
            let sqe = sqe.user_data(file_user_data(id, i));
            self.push(sqe);
        }
    }

    /// Piece `piece` of read `id` is back: zero what lies past the end of the file, and answer
    /// the jobs it covers — with this piece alone as a structured-reply chunk, or with the
    /// whole job once its last piece is in.
    fn piece_read(&mut self, id: u64, piece: usize, res: i32) {
        let piece_bytes = self.setup.piece_bytes as usize;
        let Some(f) = self.inflight.get_mut(&id) else { return };
        let len = f.rq.len_bytes as usize;
        let (lo, hi) = (piece * piece_bytes, ((piece + 1) * piece_bytes).min(len));
        let mut error = 0;
        if res < 0 {
            tracing::warn!(offset = f.rq.offset_bytes + lo as u64, errno = -res, "read error");
            error = errno_to_nbd(-res);
            f.error = error;
        }
        let Some(buf) = f.buf.clone() else { return };
        if res >= 0 && (res as usize) < hi - lo {
            // Past the end of the file reads as zeroes.
            // SAFETY: this piece's read is complete and nothing refers to it yet.
            unsafe { buf.zero(lo + res as usize..hi) };
        }
        let base = f.rq.offset_bytes;
        let mut jobs = std::mem::take(&mut f.jobs);
        for j in &mut jobs {
            let (jlo, jhi) = ((j.offset - base) as usize, (j.offset - base + j.len) as usize);
            let (a, b) = (jlo.max(lo), jhi.min(hi));
            if a >= b || j.pieces_left == 0 {
                continue;
            }
            j.pieces_left -= 1;
            if j.error == 0 {
                j.error = error;
            }
            let structured = matches!(self.conns.get(j.slot), Some(Some(c)) if c.meta.structured);
            let chunk = || Payload::Shared(buf.clone(), a..b);
            if j.pieces_left > 0 {
                if structured && j.error == 0 {
                    self.reply_piece(j, base + a as u64, chunk());
                }
                continue;
            }
            let (at, data) = match (j.error, structured) {
                (0, true) => (base + a as u64, chunk()),
                (0, false) => (j.offset, Payload::of(buf.clone(), base, j.offset, j.len)),
                _ => (j.offset, Payload::Empty),
            };
            self.finish_job(j, j.error, at, data);
        }
        if let Some(f) = self.inflight.get_mut(&id) {
            f.jobs = jobs;
        }
    }

    /// A non-final OFFSET_DATA chunk of `j`'s reply.
    fn reply_piece(&mut self, j: &Job, offset: u64, data: Payload) {
        let Some(c) = self.conns.get_mut(j.slot).and_then(|c| c.as_deref_mut()) else { return };
        if !c.broken {
            c.queue.push(Reply {
                handle: j.handle,
                error: 0,
                is_read: true,
                offset,
                data,
                status: None,
                cost: 0,
                charge: 0,
                done: false,
            });
        }
    }

    fn reap(&mut self) {
        loop {
            let mut cqes = [(0u64, 0i32); 64];
            let mut n = 0;
            for c in self.ring.completion() {
                cqes[n] = (c.user_data(), c.result());
                n += 1;
                if n == cqes.len() {
                    break;
                }
            }
            for &(user, res) in &cqes[..n] {
                match user {
                    EVENTFD_TOKEN => self.efd_armed = false,
                    u if u & TAG_MASK == TAG_RECV => self.recv_done((u & !TAG_MASK) as usize, res),
                    u if u & TAG_MASK == TAG_SEND => self.send_done((u & !TAG_MASK) as usize, res),
                    u => self.complete(u, res),
                }
            }
            if n < cqes.len() {
                return;
            }
        }
    }

    fn complete(&mut self, user: u64, res: i32) {
        let id = user >> PIECE_BITS;
        let Some(f) = self.inflight.get_mut(&id) else {
            tracing::error!(user, "completion for unknown request");
            return;
        };
        if f.rq.op == Op::Read {
            self.piece_read(id, (user & PIECE_MASK) as usize, res);
        } else if res < 0 {
            tracing::warn!(op = ?f.rq.op, offset = f.rq.offset_bytes, errno = -res, "I/O error");
            f.error = errno_to_nbd(-res);
        } else if f.rq.op == Op::Write && (res as u64) < f.rq.len_bytes {
            tracing::warn!(offset = f.rq.offset_bytes, res, "short write");
            f.error = nbd::EIO;
        }
        let Some(f) = self.inflight.get_mut(&id) else { return };
        f.remaining = f.remaining.saturating_sub(1);
        if f.remaining > 0 {
            return;
        }
        if f.sync_after && f.error == 0 {
            f.sync_after = false;
            f.remaining = 1;
            let fd = types::Fd(self.setup.file.as_raw_fd());
            let sqe = opcode::Fsync::new(fd)
                .flags(types::FsyncFlags::DATASYNC)
                .build()
                .user_data(file_user_data(id, 0));
            self.push(sqe);
            return;
        }
        let Some(f) = self.inflight.remove(&id) else { return };
        let now = self.now();
        self.setup.sched.completed(&f.rq, now);
        if let (Some(m), Some(cgroups)) = (self.setup.control.as_mut(), self.below.remove(&f.rq.id))
        {
            for (cgroup, bio_id) in cgroups {
                let mut rq = f.rq;
                rq.owner.cgroup = cgroup;
                rq.id = bio_id;
                m.get().completed(&Bio { device: 0, request: rq }, now);
            }
        }
        if f.rq.op == Op::Read {
            // Its own jobs were answered piece by piece; a prefetch's waiters are answered now
            // (after a failure they read for themselves, to get their own error).
            if self.ra.is_prefetch(id) {
                let data = f.buf.filter(|_| f.error == 0);
                let read = data.clone().map(|b| (b, f.rq.offset_bytes, f.rq.len_bytes));
                for w in self.ra.completed(id, read) {
                    match &data {
                        Some(b) => {
                            let payload =
                                Payload::of(b.clone(), f.rq.offset_bytes, w.offset, w.len);
                            self.finish_job(&w, 0, w.offset, payload);
                        }
                        None => self.accept_io(w),
                    }
                }
            }
            return;
        }
        if f.rq.op != Op::Flush {
            // Failed or not, the range may have changed: no prefetch of it may answer a read
            // that arrives after this reply.
            self.ra.invalidate(f.rq.offset_bytes, f.rq.end_bytes());
        }
        for job in &f.jobs {
            self.finish_job(job, f.error, job.offset, Payload::Empty);
        }
    }

    /// The final reply of `job`: `data` (a read's, or its last piece's) at `offset`.
    fn finish_job(&mut self, job: &Job, error: u32, offset: u64, data: Payload) {
        let is_read = matches!(job.kind, JobKind::Read);
        if let Some(s) = self.setup.stats.get(job.export) {
            if let Ok(mut s) = s.lock() {
                match job.kind {
                    JobKind::Read => {
                        s.reads += 1;
                        s.read_bytes += job.len;
                    }
                    JobKind::Write(_) => {
                        s.writes += 1;
                        s.write_bytes += job.len;
                    }
                    JobKind::Flush => s.flushes += 1,
                    JobKind::Trim => s.trims += 1,
                    JobKind::WriteZeroes => s.write_zeroes += 1,
                }
                if error != 0 {
                    s.errors += 1;
                }
                let ns = job.arrived.elapsed().as_nanos() as u64;
                s.latency_ns.saturating_record(ns.max(1_000));
                s.latency_sum_ns += ns;
            }
        }
        if let Some(c) = self.conns.get_mut(job.slot).and_then(|c| c.as_deref_mut()) {
            let r = Reply {
                handle: job.handle,
                error,
                is_read,
                offset,
                data,
                status: None,
                cost: job.cost,
                charge: job.charge,
                done: true,
            };
            if c.broken {
                c.settle(&r);
            } else {
                c.queue.push(r);
            }
        }
    }
}

/// Who a job's requests belong to: the export is the cgroup, the connection the process and
/// its I/O context.
fn job_owner(job: &Job) -> Owner {
    Owner {
        job: job.export as u32,
        pid: job.conn,
        pgrp: job.conn,
        uid: 0,
        gid: 0,
        io_context: job.conn,
        cgroup: job.export as u32 + 1,
        prio: IoPrio::DEFAULT,
    }
}

/// The `sendmsg` of what remains of `c`'s batch.
fn send_sqe(c: &mut Conn, slot: usize) -> io_uring::squeue::Entry {
    let s = &mut c.send;
    // SAFETY: `first < iov.len()` while a batch is unsent.
    s.msg.msg_iov = unsafe { s.iov.as_mut_ptr().add(s.first) };
    s.msg.msg_iovlen = (s.iov.len() - s.first) as _;
    opcode::SendMsg::new(types::Fd(c.stream.raw_fd()), &s.msg)
        .flags(libc::MSG_NOSIGNAL as u32)
        .build()
        .user_data(TAG_SEND | slot as u64)
}

fn pread_full(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break, // past EOF: the buffer is already zeroed
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
