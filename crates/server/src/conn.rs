//! One connection: the handshake on the gate's event loop (`gate.rs`), then the transmission
//! phase in the export's worker (its io_uring event loop receives, parses and answers the requests; this
//! module decides what each request becomes and encodes the replies).

use crate::worker::{Job, JobKind, Payload, Reply};
use elevator_nbd::{self as nbd, Command, RequestHeader};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Instant;

/// Requests outstanding (read from the socket, reply not yet written) per connection.
pub(crate) const MAX_OUTSTANDING: usize = 256;
/// Bytes of read or write payload outstanding per connection (one larger request may still
/// go alone).
pub(crate) const MAX_OUTSTANDING_BYTES: u64 = 64 << 20;

/// Reply payloads up to this size are copied into the reply batch; larger ones are sent from
/// their I/O buffer (one iovec each).
pub(crate) const SMALL_PAYLOAD: usize = 16 << 10;

pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    pub fn shutdown(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
        };
    }
    /// Asks for a send buffer of `bytes` (the kernel caps it at `net.core.wmem_max` and
    /// doubles it for its bookkeeping). Large read replies then go out in fewer, larger
    /// sends: with the autotuned default, about half of the batches of 1 MiB replies needed a
    /// second `sendmsg` round trip through the ring (sequential reads: +12 % in one A/B set,
    /// within the noise in another; 4 KiB random reads unchanged).
    pub fn set_send_buffer(&self, bytes: usize) {
        let v = bytes.min(libc::c_int::MAX as usize) as libc::c_int;
        // SAFETY: setsockopt on a socket we own, with a pointer to a live c_int.
        let r = unsafe {
            libc::setsockopt(
                self.raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            tracing::debug!(error = %e, "SO_SNDBUF not set");
        }
    }
    pub fn set_nonblocking(&self, on: bool) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_nonblocking(on),
            Stream::Unix(s) => s.set_nonblocking(on),
        }
    }
    pub fn raw_fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }
    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write_vectored(bufs),
            Stream::Unix(s) => s.write_vectored(bufs),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}

/// What the transmission phase of a connection needs to know about it.
pub(crate) struct ConnMeta {
    pub id: u32,
    pub export: usize,
    pub structured: bool,
    /// `base:allocation` was negotiated (block status allowed).
    pub allocation: bool,
    pub size: u64,
    pub read_only: bool,
    /// The backing file, for SEEK_DATA/SEEK_HOLE (block status).
    pub file: Arc<std::fs::File>,
}

/// A connection whose handshake is done, handed to its export's worker.
pub(crate) struct NewConn {
    pub meta: ConnMeta,
    pub stream: Stream,
    /// Bytes the client sent after the handshake, already received.
    pub already: Vec<u8>,
    /// The connection's place under `max_connections`: dropped by the worker when it has
    /// closed the connection.
    pub permit: crate::gate::Permit,
}

/// What one request becomes.
pub(crate) enum Step {
    /// Goes to the scheduler.
    Job(Job),
    /// Answered at once.
    Reply(Reply),
    /// NBD_CMD_DISC: no more requests.
    Close,
}

/// Checks one request (range, flags, permissions: spec errors are answered at once) and turns
/// it into a job for the scheduler or an immediate reply. `payload` is a write's data.
pub(crate) fn decide(m: &ConnMeta, hdr: RequestHeader, payload: Vec<u8>) -> Step {
    // Reads and writes hold their payload's worth of credit until the reply is out, and
    // their memory's worth of the server's budget (charged by the worker before parsing).
    let cost = request_cost(&hdr);
    let charge = request_charge(&hdr);
    let reply = |error: u32, is_read: bool| Reply {
        handle: hdr.handle,
        error,
        is_read,
        offset: hdr.offset,
        data: Payload::Empty,
        status: None,
        cost,
        charge,
        done: true,
    };
    let size = m.size;
    let len = hdr.length as u64;
    let known_flags =
        nbd::CMD_FLAG_FUA | nbd::CMD_FLAG_NO_HOLE | nbd::CMD_FLAG_DF | nbd::CMD_FLAG_REQ_ONE;
    let kind = match hdr.command {
        Command::Read => JobKind::Read,
        Command::Write => JobKind::Write(payload),
        Command::Flush => JobKind::Flush,
        Command::Trim => JobKind::Trim,
        Command::WriteZeroes => JobKind::WriteZeroes,
        Command::Cache => {
            // Advisory; the range is still checked (proto.md, NBD_CMD_CACHE).
            let e = if out_of_range(hdr.offset, len, size) { nbd::EINVAL } else { 0 };
            return Step::Reply(reply(e, false));
        }
        Command::BlockStatus => {
            // Answered at once from SEEK_DATA/SEEK_HOLE; it reads metadata only.
            let bad = !m.allocation || !m.structured || len == 0;
            let err = if bad || out_of_range(hdr.offset, len, size) { nbd::EINVAL } else { 0 };
            let max = if hdr.flags & nbd::CMD_FLAG_REQ_ONE != 0 { 1 } else { 1024 };
            let status = if err == 0 { extents(&m.file, hdr.offset, len, max) } else { Vec::new() };
            return Step::Reply(Reply { status: Some(status), ..reply(err, false) });
        }
        Command::Disc => return Step::Close,
        Command::Unknown(t) => {
            tracing::debug!(conn = m.id, command = t, "unknown command");
            return Step::Reply(reply(nbd::EINVAL, false));
        }
    };
    let is_read = matches!(kind, JobKind::Read);
    let writes = !is_read && !matches!(kind, JobKind::Flush);
    // proto.md "Error values" and the per-command text: EPERM on a read-only export,
    // ENOSPC for a write beyond the end, EINVAL for other out-of-range requests, for a
    // read longer than the maximum block size and for unknown flags.
    let err = if hdr.flags & !known_flags != 0 {
        nbd::EINVAL
    } else if writes && m.read_only {
        nbd::EPERM
    } else if matches!(kind, JobKind::Flush) {
        0
    } else if out_of_range(hdr.offset, len, size) {
        if matches!(kind, JobKind::Write(_) | JobKind::WriteZeroes) {
            nbd::ENOSPC
        } else {
            nbd::EINVAL
        }
    } else if is_read && hdr.length > nbd::MAX_PAYLOAD {
        nbd::EINVAL
    } else {
        0
    };
    if err != 0 {
        // A structured reply to a failed read is an error chunk, else a simple reply.
        return Step::Reply(reply(err, is_read && m.structured));
    }
    if len == 0 && !matches!(kind, JobKind::Flush) {
        return Step::Reply(reply(0, is_read));
    }
    Step::Job(Job {
        export: m.export,
        conn: m.id,
        slot: 0,
        handle: hdr.handle,
        kind,
        offset: hdr.offset,
        len,
        fua: hdr.flags & nbd::CMD_FLAG_FUA != 0,
        cost,
        charge,
        arrived: Instant::now(),
        pieces_left: 0,
        error: 0,
    })
}

/// The flow-control credit a request holds until its reply is written.
pub(crate) fn request_cost(hdr: &RequestHeader) -> u64 {
    match hdr.command {
        Command::Read | Command::Write => u64::from(hdr.length.min(nbd::MAX_PAYLOAD)),
        _ => 0,
    }
}

/// The memory budget a request holds until its reply is written (`budget.rs`).
pub(crate) fn request_charge(hdr: &RequestHeader) -> u64 {
    let len = u64::from(hdr.length.min(nbd::MAX_PAYLOAD));
    match hdr.command {
        Command::Read => crate::budget::charge(true, false, len),
        Command::Write => crate::budget::charge(false, true, len),
        _ => 0,
    }
}

/// Appends `r`'s reply header (simple or structured) to `out` and returns the payload that
/// follows it on the wire.
pub(crate) fn encode_reply<'a>(out: &mut Vec<u8>, r: &'a Reply, structured: bool) -> &'a [u8] {
    let payload: &[u8] = if r.error == 0 { r.data.as_slice() } else { &[] };
    if let (Some(ext), 0) = (&r.status, r.error) {
        nbd::encode_block_status(out, r.handle, nbd::BASE_ALLOCATION_ID, ext);
    } else if structured && (r.is_read || r.status.is_some()) {
        if r.error == 0 && payload.is_empty() {
            // A zero-length read: OFFSET_DATA chunks must carry data.
            nbd::encode_chunk_header(out, nbd::REPLY_FLAG_DONE, nbd::REPLY_TYPE_NONE, r.handle, 0);
        } else if r.error == 0 {
            nbd::encode_offset_data_header(out, r.done, r.handle, r.offset, payload.len() as u32);
        } else {
            nbd::encode_error_chunk(out, r.handle, r.error, "");
        }
    } else {
        nbd::encode_simple_reply(out, r.handle, r.error);
    }
    payload
}

fn out_of_range(offset: u64, len: u64, size: u64) -> bool {
    match offset.checked_add(len) {
        Some(end) => end > size,
        None => true,
    }
}

/// base:allocation extents of `[offset, offset + len)` from SEEK_DATA/SEEK_HOLE, at most `max`.
/// Anything past the file's end reads as zeroes (a hole).
fn extents(file: &std::fs::File, offset: u64, len: u64, max: usize) -> Vec<(u32, u32)> {
    use std::os::fd::AsRawFd;
    let hole = nbd::STATE_HOLE | nbd::STATE_ZERO;
    let fd = file.as_raw_fd();
    let file_len = file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
    let end = offset + len;
    let mut pos = offset;
    let mut v: Vec<(u32, u32)> = Vec::new();
    let push = |v: &mut Vec<(u32, u32)>, l: u64, f: u32| match v.last_mut() {
        Some(last) if last.1 == f => last.0 += l as u32,
        _ => v.push((l as u32, f)),
    };
    while pos < end && v.len() < max {
        if pos >= file_len {
            push(&mut v, end - pos, hole);
            break;
        }
        // SAFETY: lseek on a descriptor we own; results are checked.
        let data = unsafe { libc::lseek(fd, pos as libc::off_t, libc::SEEK_DATA) };
        if data < 0 {
            let e = std::io::Error::last_os_error().raw_os_error();
            if e == Some(libc::ENXIO) {
                push(&mut v, end - pos, hole);
            } else {
                push(&mut v, end - pos, 0); // no hole information: all data
            }
            break;
        }
        let data = data as u64;
        if data > pos {
            let l = data.min(end) - pos;
            push(&mut v, l, hole);
            pos += l;
            continue;
        }
        // SAFETY: as above.
        let h = unsafe { libc::lseek(fd, pos as libc::off_t, libc::SEEK_HOLE) };
        let h = if h < 0 { file_len } else { h as u64 };
        let l = h.min(end).max(pos + 1) - pos;
        push(&mut v, l, 0);
        pos += l;
    }
    v.truncate(max);
    v
}
