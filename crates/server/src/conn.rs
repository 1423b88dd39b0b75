//! One connection: handshake, a reader that turns commands into jobs, a writer for replies.

use crate::worker::{Job, JobKind, Msg, Payload, Reply};
use crate::Shared;
use elevator_nbd::{self as nbd, Command, Progress, ServerHandshake};
use std::io::{BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// Requests outstanding (read from the socket, reply not yet written) per connection.
const MAX_OUTSTANDING: usize = 256;
/// Bytes of read or write payload outstanding per connection (one larger request may still
/// go alone).
const MAX_OUTSTANDING_BYTES: u64 = 64 << 20;

/// Reply payloads up to this size are copied into the writer's batch; larger ones are written
/// from their I/O buffer.
const SMALL_PAYLOAD: usize = 16 << 10;
/// Bytes gathered before the writer writes even if more replies are queued.
const OUT_BATCH: usize = 256 << 10;

/// Writes `a` then `b` with as few syscalls as the socket allows.
fn write_both(w: &mut Stream, mut a: &[u8], mut b: &[u8]) -> std::io::Result<()> {
    while !a.is_empty() || !b.is_empty() {
        let n = if a.is_empty() {
            w.write(b)?
        } else {
            w.write_vectored(&[std::io::IoSlice::new(a), std::io::IoSlice::new(b)])?
        };
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        let k = n.min(a.len());
        a = &a[k..];
        b = &b[n - k..];
    }
    Ok(())
}

/// Flow control between a connection's reader and writer: the reader takes a credit for each
/// request, the writer returns it when the reply is written.
#[derive(Default)]
struct Credits {
    state: Mutex<(usize, u64)>,
    cv: Condvar,
}

impl Credits {
    fn acquire(&self, cost: u64) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while st.0 >= MAX_OUTSTANDING || (st.1 > 0 && st.1 + cost > MAX_OUTSTANDING_BYTES) {
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.0 += 1;
        st.1 += cost;
    }

    fn release(&self, cost: u64) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.0 = st.0.saturating_sub(1);
        st.1 = st.1.saturating_sub(cost);
        self.cv.notify_one();
    }
}

pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    pub fn try_clone(&self) -> std::io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }
    pub fn shutdown(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
        };
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

pub(crate) fn handle(mut stream: Stream, conn: u32, shared: Arc<Shared>) {
    if let Stream::Tcp(s) = &stream {
        let _ = s.set_nodelay(true);
    }
    let infos = shared.exports.iter().map(|e| e.info.clone()).collect();
    let (mut hs, greeting) = ServerHandshake::with_tls(infos, shared.tls_mode);
    if stream.write_all(&greeting).is_err() {
        return;
    }
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let (export, structured) = loop {
        let n = match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        let mut out = Vec::new();
        let res = hs.process(&buf, &mut out);
        if !out.is_empty() && stream.write_all(&out).is_err() {
            return;
        }
        match res {
            Ok((used, p)) => {
                buf.drain(..used);
                match p {
                    Progress::NeedMore => {}
                    Progress::Abort => return,
                    Progress::Done { export, structured } => break (export, structured),
                    Progress::StartTls => {
                        let Some(config) = shared.tls.clone() else { return };
                        let already = std::mem::take(&mut buf);
                        stream = match crate::tls::start(stream, already, config, conn) {
                            Ok(s) => s,
                            Err(e) => {
                                tracing::warn!(conn, error = %e, "cannot start TLS");
                                return;
                            }
                        };
                        tracing::debug!(conn, "TLS started");
                    }
                }
            }
            Err(e) => {
                tracing::info!(conn, error = %e, "handshake failed");
                return;
            }
        }
    };
    let Some(ex) = shared.exports.get(export) else { return };
    let allocation = hs.base_allocation();
    tracing::info!(conn, export = %ex.info.name, structured, "transmission phase");

    let Ok(wstream) = stream.try_clone() else { return };
    let (reply_tx, reply_rx) = channel::<Reply>();
    let credits = Arc::new(Credits::default());
    let credit_rx = credits.clone();
    let writer = std::thread::spawn(move || {
        let mut w = wstream;
        let mut broken = false;
        // Headers and small payloads are gathered here and go out in one write per batch; a
        // large payload goes out from its I/O buffer, behind the gathered bytes (writev).
        let mut out: Vec<u8> = Vec::with_capacity(OUT_BATCH);
        let write_one = |w: &mut Stream, hdr: &mut Vec<u8>, r: &Reply| {
            let payload: &[u8] = if r.error == 0 { r.data.as_slice() } else { &[] };
            if let (Some(ext), 0) = (&r.status, r.error) {
                nbd::encode_block_status(hdr, r.handle, nbd::BASE_ALLOCATION_ID, ext);
            } else if structured && (r.is_read || r.status.is_some()) {
                if r.error == 0 && payload.is_empty() {
                    // A zero-length read: OFFSET_DATA chunks must carry data.
                    nbd::encode_chunk_header(
                        hdr,
                        nbd::REPLY_FLAG_DONE,
                        nbd::REPLY_TYPE_NONE,
                        r.handle,
                        0,
                    );
                } else if r.error == 0 {
                    nbd::encode_offset_data_header(hdr, r.handle, r.offset, payload.len() as u32);
                } else {
                    nbd::encode_error_chunk(hdr, r.handle, r.error, "");
                }
            } else {
                nbd::encode_simple_reply(hdr, r.handle, r.error);
            }
            if payload.len() <= SMALL_PAYLOAD {
                hdr.extend_from_slice(payload);
                if hdr.len() >= OUT_BATCH {
                    let failed = w.write_all(hdr).is_err();
                    hdr.clear();
                    return failed;
                }
                return false;
            }
            let failed = write_both(w, hdr, payload).is_err();
            hdr.clear();
            failed
        };
        while let Ok(first) = reply_rx.recv() {
            let mut next = Some(first);
            // Write everything queued, then flush once.
            while let Some(r) = next {
                if !broken {
                    broken = write_one(&mut w, &mut out, &r);
                }
                credit_rx.release(r.cost);
                drop(r);
                next = reply_rx.try_recv().ok();
            }
            if !broken && !out.is_empty() {
                broken = w.write_all(&out).is_err();
            }
            out.clear();
        }
    });

    let mut rd = BufReader::with_capacity(64 << 10, std::io::Cursor::new(buf).chain(stream));
    let reply_now = |tx: &Sender<Reply>, handle: u64, error: u32, cost: u64| {
        let _ = tx.send(Reply {
            handle,
            error,
            is_read: false,
            offset: 0,
            data: Payload::Empty,
            status: None,
            cost,
        });
    };
    loop {
        let mut h = [0u8; nbd::REQUEST_HEADER_LEN];
        if rd.read_exact(&mut h).is_err() {
            tracing::debug!(conn, "client hung up");
            break;
        }
        let hdr = match nbd::parse_request_header(&h) {
            Ok(Some(hdr)) => hdr,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(conn, error = %e, "protocol error, closing");
                break;
            }
        };
        let mut payload = Vec::new();
        if hdr.command == Command::Write {
            payload = vec![0u8; hdr.length as usize];
            if rd.read_exact(&mut payload).is_err() {
                tracing::debug!(conn, "write payload cut off, dropped");
                break;
            }
        }
        if hdr.command == Command::Disc {
            break;
        }
        // Reads and writes hold their payload's worth of credit until the reply is out.
        let cost = match hdr.command {
            Command::Read | Command::Write => u64::from(hdr.length.min(nbd::MAX_PAYLOAD)),
            _ => 0,
        };
        credits.acquire(cost);
        let size = ex.info.size;
        let len = hdr.length as u64;
        let known_flags =
            nbd::CMD_FLAG_FUA | nbd::CMD_FLAG_NO_HOLE | nbd::CMD_FLAG_DF | nbd::CMD_FLAG_REQ_ONE;
        let kind = match hdr.command {
            Command::Read => JobKind::Read,
            Command::Write => JobKind::Write(std::mem::take(&mut payload)),
            Command::Flush => JobKind::Flush,
            Command::Trim => JobKind::Trim,
            Command::WriteZeroes => JobKind::WriteZeroes,
            Command::Cache => {
                // Advisory; the range is still checked (proto.md, NBD_CMD_CACHE).
                let e = if out_of_range(hdr.offset, len, size) { nbd::EINVAL } else { 0 };
                reply_now(&reply_tx, hdr.handle, e, cost);
                continue;
            }
            Command::BlockStatus => {
                // Answered on this thread from SEEK_DATA/SEEK_HOLE; it reads metadata only.
                let bad = !allocation || !structured || len == 0;
                let err = if bad || out_of_range(hdr.offset, len, size) { nbd::EINVAL } else { 0 };
                let max = if hdr.flags & nbd::CMD_FLAG_REQ_ONE != 0 { 1 } else { 1024 };
                let status = if err == 0 {
                    Some(extents(&ex.file, hdr.offset, len, max))
                } else {
                    Some(Vec::new())
                };
                let _ = reply_tx.send(Reply {
                    handle: hdr.handle,
                    error: err,
                    is_read: false,
                    offset: hdr.offset,
                    data: Payload::Empty,
                    status,
                    cost,
                });
                continue;
            }
            Command::Disc => break,
            Command::Unknown(t) => {
                tracing::debug!(conn, command = t, "unknown command");
                reply_now(&reply_tx, hdr.handle, nbd::EINVAL, cost);
                continue;
            }
        };
        let is_read = matches!(kind, JobKind::Read);
        let writes = !is_read && !matches!(kind, JobKind::Flush);
        // proto.md "Error values" and the per-command text: EPERM on a read-only export,
        // ENOSPC for a write beyond the end, EINVAL for other out-of-range requests, for a
        // read longer than the maximum block size and for unknown flags.
        let err = if hdr.flags & !known_flags != 0 {
            nbd::EINVAL
        } else if writes && ex.read_only {
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
            if is_read && structured {
                let _ = reply_tx.send(Reply {
                    handle: hdr.handle,
                    error: err,
                    is_read,
                    offset: hdr.offset,
                    data: Payload::Empty,
                    status: None,
                    cost,
                });
            } else {
                reply_now(&reply_tx, hdr.handle, err, cost);
            }
            continue;
        }
        if len == 0 && !matches!(kind, JobKind::Flush) {
            let _ = reply_tx.send(Reply {
                handle: hdr.handle,
                error: 0,
                is_read,
                offset: hdr.offset,
                data: Payload::Empty,
                status: None,
                cost,
            });
            continue;
        }
        let job = Job {
            export,
            conn,
            handle: hdr.handle,
            kind,
            offset: hdr.offset,
            len,
            fua: hdr.flags & nbd::CMD_FLAG_FUA != 0,
            cost,
            reply: reply_tx.clone(),
            arrived: Instant::now(),
        };
        if !ex.worker.send(Msg::Job(job)) {
            break;
        }
    }
    drop(reply_tx);
    let _ = writer.join();
    rd.into_inner().into_inner().1.shutdown();
    tracing::info!(conn, "connection closed");
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
