//! The gate: one thread that accepts NBD clients on every listener and runs all their
//! handshakes (and TLS handshakes) in one `poll(2)` loop, before handing each connection to
//! its export's worker. No thread is ever spent on an unauthenticated socket.
//!
//! Bounds, so that idle or hostile clients cannot stop service:
//! - `handshake_timeout_ms` (10 s): a connection that has not reached the transmission phase
//!   by then is closed.
//! - `max_handshakes` (128): connections in their handshake at once. A new client past it
//!   evicts the *oldest* handshake — an idle attacker's connections age, a real client's
//!   handshake takes milliseconds — so a flood of idle sockets delays nobody by more than
//!   the time to accept.
//! - `max_connections` (global, 256) and an export's `max_connections`: connections in the
//!   transmission phase; past them NBD_OPT_GO is refused with NBD_REP_ERR_POLICY and a
//!   message saying so.
//! - Accept errors (EMFILE, ENFILE, ENOMEM, ...) pause that listener with an exponential
//!   backoff (10 ms doubling to 1 s) and evict the oldest handshake to free a descriptor;
//!   refusals, evictions, timeouts and accept errors are logged at most once a second each,
//!   with a count (`ratelog.rs`).
//! - Per handshake: input is parsed as it arrives (the codec bounds an option at 64 KiB);
//!   a client that does not read its option replies stops being read once 256 KiB of them
//!   wait.

use crate::access::{self, Peer};
use crate::conn::{ConnMeta, NewConn, Stream};
use crate::ratelog::RateLog;
use crate::stop::Stop;
use crate::worker::Msg;
use crate::Shared;
use elevator_nbd::{Progress, ServerHandshake};
use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpListener;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Option replies held for a client before its socket is no longer read.
const OUT_HIGH_WATER: usize = 256 << 10;
/// Clients accepted per listener per wake-up, so one busy listener cannot starve the rest.
const ACCEPT_BATCH: usize = 64;
const BACKOFF_MIN: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_secs(1);
const LOG_INTERVAL: Duration = Duration::from_secs(1);

/// The gate's limits (from the configuration).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub handshake_timeout: Duration,
    pub max_handshakes: usize,
    pub max_connections: usize,
}

/// Connections in the transmission phase, in total and per export. Only the gate adds (so a
/// limit is never overshot); a [`Permit`] dropped by the worker takes its count back.
pub(crate) struct Counts {
    total: AtomicUsize,
    per_export: Vec<AtomicUsize>,
}

impl Counts {
    pub fn new(exports: usize) -> Counts {
        Counts {
            total: AtomicUsize::new(0),
            per_export: (0..exports).map(|_| AtomicUsize::new(0)).collect(),
        }
    }
    pub fn total(&self) -> usize {
        self.total.load(Ordering::SeqCst)
    }
    pub fn of(&self, export: usize) -> usize {
        self.per_export.get(export).map_or(0, |c| c.load(Ordering::SeqCst))
    }
}

/// One connection's place in [`Counts`], held by the worker for as long as it serves it.
pub(crate) struct Permit {
    counts: Arc<Counts>,
    export: usize,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.counts.total.fetch_sub(1, Ordering::SeqCst);
        if let Some(c) = self.counts.per_export.get(self.export) {
            c.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

pub(crate) enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

struct Listening {
    l: Listener,
    /// Not polled until then (after an accept error).
    paused_until: Option<Instant>,
    backoff: Duration,
}

impl Listening {
    fn fd(&self) -> RawFd {
        match &self.l {
            Listener::Tcp(l) => l.as_raw_fd(),
            Listener::Unix(l) => l.as_raw_fd(),
        }
    }
    fn accept(&self) -> io::Result<(Stream, Peer)> {
        match &self.l {
            Listener::Tcp(l) => {
                let (s, _) = l.accept()?;
                let _ = s.set_nodelay(true);
                Ok((Stream::Tcp(s), Peer::default()))
            }
            Listener::Unix(l) => {
                let (s, _) = l.accept()?;
                let uid = access::peer_uid(&s);
                Ok((Stream::Unix(s), Peer { uid, cert_names: None }))
            }
        }
    }
}

/// A connection in its handshake.
struct Pending {
    id: u32,
    stream: Stream,
    accepted: Instant,
    peer: Peer,
    hs: ServerHandshake,
    /// Plaintext received and not yet consumed by the handshake.
    input: Vec<u8>,
    /// Bytes for the socket (option replies, or TLS records once TLS is on).
    out: Vec<u8>,
    tls: Option<Box<rustls::ServerConnection>>,
    /// The handshake chose an export: hand over once `out` is sent.
    done: Option<(usize, bool)>,
    /// Close once `out` is sent (abort, or an error with a reply to deliver).
    closing: bool,
}

enum Outcome {
    Keep,
    Close(&'static str),
    HandOver,
}

pub(crate) struct Gate {
    stop: Arc<Stop>,
    shared: Arc<Shared>,
    counts: Arc<Counts>,
    limits: Limits,
    listeners: Vec<Listening>,
    pending: Vec<Pending>,
    next_id: u32,
    /// One line a second at most about refused, evicted and timed-out clients together.
    log: RateLog,
}

impl Gate {
    pub fn new(
        stop: Arc<Stop>,
        shared: Arc<Shared>,
        counts: Arc<Counts>,
        limits: Limits,
        listeners: Vec<Listener>,
    ) -> Gate {
        let listeners = listeners
            .into_iter()
            .map(|l| Listening { l, paused_until: None, backoff: BACKOFF_MIN })
            .collect();
        Gate {
            stop,
            shared,
            counts,
            limits,
            listeners,
            pending: Vec::new(),
            next_id: 1,
            log: RateLog::new("NBD clients refused or closed", LOG_INTERVAL),
        }
    }

    /// Runs until the server stops; then closes every connection still in its handshake.
    pub fn run(mut self) {
        let mut fds: Vec<libc::pollfd> = Vec::new();
        // For each polled descriptor after the stop eventfd: a listener or a pending index.
        let mut what: Vec<(bool, usize)> = Vec::new();
        while !self.stop.is_set() {
            let now = Instant::now();
            self.expire(now);
            self.log.flush(now);
            fds.clear();
            what.clear();
            fds.push(libc::pollfd { fd: self.stop.raw_fd(), events: libc::POLLIN, revents: 0 });
            let mut wake: Option<Instant> = self.log.next_flush();
            for (i, l) in self.listeners.iter_mut().enumerate() {
                match l.paused_until {
                    Some(t) if t > now => {
                        wake = Some(wake.map_or(t, |w| w.min(t)));
                        continue;
                    }
                    _ => l.paused_until = None,
                }
                fds.push(libc::pollfd { fd: l.fd(), events: libc::POLLIN, revents: 0 });
                what.push((true, i));
            }
            for (i, p) in self.pending.iter().enumerate() {
                let t = p.accepted + self.limits.handshake_timeout;
                wake = Some(wake.map_or(t, |w| w.min(t)));
                let mut events = 0;
                if p.done.is_none() && !p.closing && p.out.len() < OUT_HIGH_WATER {
                    events |= libc::POLLIN;
                }
                if !p.out.is_empty() {
                    events |= libc::POLLOUT;
                }
                fds.push(libc::pollfd { fd: p.stream.raw_fd(), events, revents: 0 });
                what.push((false, i));
            }
            let timeout_ms = match wake {
                None => -1,
                Some(t) => {
                    let d = t.saturating_duration_since(now);
                    d.as_millis().min(60_000) as i32 + 1
                }
            };
            // SAFETY: `fds` is a valid array of pollfds for the duration of the call.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != ErrorKind::Interrupted {
                    tracing::warn!(error = %e, "poll in the gate failed");
                    std::thread::sleep(BACKOFF_MIN);
                }
                continue;
            }
            if self.stop.is_set() {
                break;
            }
            // Handshakes first (indices are those of the poll), then new clients.
            let mut outcomes: Vec<(usize, Outcome)> = Vec::new();
            let mut ready_listeners = Vec::new();
            for (fd, &(is_listener, i)) in fds[1..].iter().zip(&what) {
                if fd.revents == 0 {
                    continue;
                }
                if is_listener {
                    ready_listeners.push(i);
                } else {
                    outcomes.push((i, self.step(i, fd.revents)));
                }
            }
            self.settle(outcomes);
            for i in ready_listeners {
                self.accept(i);
            }
        }
        tracing::debug!(handshakes = self.pending.len(), "gate stopped");
    }

    /// Removes connections that closed or finished (highest index first, so the others keep
    /// theirs) and hands finished ones to their workers.
    fn settle(&mut self, mut outcomes: Vec<(usize, Outcome)>) {
        outcomes.sort_by_key(|(i, _)| std::cmp::Reverse(*i));
        for (i, o) in outcomes {
            match o {
                Outcome::Keep => {}
                Outcome::Close(why) => {
                    let p = self.pending.swap_remove(i);
                    tracing::debug!(conn = p.id, why, "handshake ended");
                }
                Outcome::HandOver => {
                    let p = self.pending.swap_remove(i);
                    self.hand_over(p);
                }
            }
        }
    }

    fn expire(&mut self, now: Instant) {
        let limit = self.limits.handshake_timeout;
        let before = self.pending.len();
        let mut latest = None;
        self.pending.retain(|p| {
            let keep = now.duration_since(p.accepted) < limit;
            if !keep {
                latest = Some(p.id);
            }
            keep
        });
        for _ in self.pending.len()..before {
            let detail = format_args!("conn {}", latest.unwrap_or(0));
            self.log.event(now, "handshake_timeout_ms passed", &detail);
        }
    }

    fn accept(&mut self, li: usize) {
        for _ in 0..ACCEPT_BATCH {
            let l = &mut self.listeners[li];
            match l.accept() {
                Ok((stream, peer)) => {
                    l.backoff = BACKOFF_MIN;
                    self.admit(stream, peer);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::ConnectionAborted => {}
                Err(e) => {
                    // EMFILE and the like leave the listener readable: stop polling it for a
                    // while instead of spinning, and free a descriptor for the next try.
                    let now = Instant::now();
                    l.paused_until = Some(now + l.backoff);
                    l.backoff = (l.backoff * 2).min(BACKOFF_MAX);
                    self.log.event(now, "accept failed (listener paused)", &e);
                    self.evict_oldest(now);
                    return;
                }
            }
        }
    }

    fn evict_oldest(&mut self, now: Instant) {
        let oldest =
            self.pending.iter().enumerate().min_by_key(|(_, p)| p.accepted).map(|(i, _)| i);
        if let Some(i) = oldest {
            let p = self.pending.swap_remove(i);
            let detail = format_args!("conn {}", p.id);
            self.log.event(now, "oldest handshake closed (max_handshakes)", &detail);
        }
    }

    fn admit(&mut self, stream: Stream, peer: Peer) {
        if stream.set_nonblocking(true).is_err() {
            return;
        }
        let now = Instant::now();
        while self.pending.len() >= self.limits.max_handshakes {
            self.evict_oldest(now);
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        let infos = self.shared.exports.iter().map(|e| e.info.clone()).collect();
        let (hs, greeting) = ServerHandshake::with_tls(infos, self.shared.tls_mode);
        tracing::debug!(conn = id, peer_uid = ?peer.uid, "accepted");
        let p = Pending {
            id,
            stream,
            accepted: now,
            peer,
            hs,
            input: Vec::new(),
            out: greeting,
            tls: None,
            done: None,
            closing: false,
        };
        self.pending.push(p);
        let i = self.pending.len() - 1;
        let o = self.flush(i);
        self.settle(vec![(i, o)]);
    }

    /// Why each export would be refused to `peer` now.
    fn refusals(&self, peer: &Peer) -> Vec<Option<String>> {
        let total = self.counts.total();
        self.shared
            .exports
            .iter()
            .enumerate()
            .map(|(i, e)| {
                if let Some(why) = e.rules.refusal(peer) {
                    return Some(why);
                }
                if total >= self.limits.max_connections {
                    return Some(format!(
                        "the server is at max_connections ({}); try again later",
                        self.limits.max_connections
                    ));
                }
                match e.max_connections {
                    Some(m) if self.counts.of(i) >= m => Some(format!(
                        "export `{}` is at its max_connections ({m}); try again later",
                        e.info.name
                    )),
                    _ => None,
                }
            })
            .collect()
    }

    /// Reads what the client sent, runs the handshake on it and sends what it can.
    fn step(&mut self, i: usize, revents: i16) -> Outcome {
        if revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
            let p = &self.pending[i];
            if p.done.is_none() && !p.closing && p.out.len() < OUT_HIGH_WATER {
                match self.receive(i) {
                    Ok(true) => {}
                    Ok(false) => return Outcome::Close("client hung up"),
                    Err(why) => return Outcome::Close(why),
                }
                if let Err(why) = self.advance(i) {
                    return Outcome::Close(why);
                }
            } else if revents & (libc::POLLHUP | libc::POLLERR) != 0 && p.out.is_empty() {
                return Outcome::Close("client hung up");
            }
        }
        self.flush(i)
    }

    /// Receives into the connection's input (decrypting if TLS is on). `Ok(false)`: EOF.
    fn receive(&mut self, i: usize) -> Result<bool, &'static str> {
        let p = &mut self.pending[i];
        let mut buf = [0u8; 16 << 10];
        let n = match p.stream.read(&mut buf) {
            Ok(0) => return Ok(false),
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                return Ok(true)
            }
            Err(_) => return Err("receive failed"),
        };
        match &mut p.tls {
            None => p.input.extend_from_slice(&buf[..n]),
            Some(tls) => feed_tls(tls, &buf[..n], &mut p.input, &mut p.out)?,
        }
        Ok(true)
    }

    /// Runs the handshake over the input received so far.
    fn advance(&mut self, i: usize) -> Result<(), &'static str> {
        loop {
            let refusals = self.refusals(&self.pending[i].peer);
            let p = &mut self.pending[i];
            if let Some(tls) = &p.tls {
                if tls.is_handshaking() {
                    return Ok(());
                }
                if p.peer.cert_names.is_none() {
                    if let Some(c) = tls.peer_certificates().and_then(|c| c.first()) {
                        p.peer.cert_names = Some(access::cert_names(c));
                        continue; // refusals depend on the certificate
                    }
                }
            }
            p.hs.set_refusals(refusals);
            let mut replies = Vec::new();
            let res = p.hs.process(&p.input, &mut replies);
            emit(p, &replies)?;
            let (used, progress) = match res {
                Ok(r) => r,
                Err(e) => {
                    tracing::info!(conn = p.id, error = %e, "handshake failed");
                    p.closing = true;
                    return Ok(());
                }
            };
            p.input.drain(..used);
            match progress {
                Progress::NeedMore => return Ok(()),
                Progress::Abort => {
                    p.closing = true;
                    return Ok(());
                }
                Progress::Done { export, structured } => {
                    p.done = Some((export, structured));
                    return Ok(());
                }
                Progress::StartTls => {
                    let Some(config) = self.shared.tls.clone() else { return Err("no TLS") };
                    let tls = rustls::ServerConnection::new(config).map_err(|_| "TLS setup")?;
                    let mut tls = Box::new(tls);
                    // Everything after the acknowledged STARTTLS is already TLS.
                    let early = std::mem::take(&mut p.input);
                    feed_tls(&mut tls, &early, &mut p.input, &mut p.out)?;
                    p.tls = Some(tls);
                    tracing::debug!(conn = p.id, "TLS started");
                }
            }
        }
    }

    /// Sends what is waiting; says what becomes of the connection.
    fn flush(&mut self, i: usize) -> Outcome {
        let p = &mut self.pending[i];
        while !p.out.is_empty() {
            match p.stream.write(&p.out) {
                Ok(0) => return Outcome::Close("send failed"),
                Ok(n) => {
                    p.out.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Outcome::Close("send failed"),
            }
        }
        if !p.out.is_empty() {
            return Outcome::Keep;
        }
        if p.closing {
            return Outcome::Close("handshake aborted or failed");
        }
        if p.done.is_some() {
            return Outcome::HandOver;
        }
        Outcome::Keep
    }

    /// Takes a permit and gives the connection to its export's worker (through a TLS pump
    /// thread if TLS is on).
    fn hand_over(&mut self, p: Pending) {
        let Some((export, structured)) = p.done else { return };
        let Some(ex) = self.shared.exports.get(export) else { return };
        // The limits were checked when GO was answered; only this thread adds to the counts.
        self.counts.total.fetch_add(1, Ordering::SeqCst);
        if let Some(c) = self.counts.per_export.get(export) {
            c.fetch_add(1, Ordering::SeqCst);
        }
        let permit = Permit { counts: self.counts.clone(), export };
        let id = p.id;
        let stream = match p.tls {
            None => {
                if p.stream.set_nonblocking(false).is_err() {
                    return;
                }
                p.stream
            }
            Some(tls) => match crate::tls::spawn_pump(p.stream, *tls, id) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(conn = id, error = %e, "cannot start the TLS pump");
                    return;
                }
            },
        };
        tracing::info!(conn = id, export = %ex.info.name, structured, "transmission phase");
        let c = NewConn {
            meta: ConnMeta {
                id,
                export,
                structured,
                allocation: p.hs.base_allocation(),
                size: ex.info.size,
                read_only: ex.read_only,
                file: ex.file.clone(),
            },
            stream,
            already: p.input,
            permit,
        };
        ex.worker.send(Msg::Conn(Box::new(c)));
    }
}

/// Handshake output: in the clear, or through TLS.
fn emit(p: &mut Pending, bytes: &[u8]) -> Result<(), &'static str> {
    match &mut p.tls {
        None => p.out.extend_from_slice(bytes),
        Some(tls) => {
            if !bytes.is_empty() {
                tls.writer().write_all(bytes).map_err(|_| "TLS write")?;
            }
            while tls.wants_write() {
                tls.write_tls(&mut p.out).map_err(|_| "TLS write")?;
            }
        }
    }
    Ok(())
}

/// Ciphertext in: decrypted bytes to `plain`, TLS records to send to `out`.
fn feed_tls(
    tls: &mut rustls::ServerConnection,
    mut cipher: &[u8],
    plain: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<(), &'static str> {
    while !cipher.is_empty() {
        let n = tls.read_tls(&mut cipher).map_err(|_| "TLS read")?;
        if let Err(e) = tls.process_new_packets() {
            tracing::info!(error = %e, "TLS handshake failed");
            let _ = tls.write_tls(out); // the alert
            return Err("TLS error");
        }
        let mut chunk = [0u8; 16 << 10];
        loop {
            match tls.reader().read(&mut chunk) {
                Ok(0) => break,
                Ok(k) => plain.extend_from_slice(&chunk[..k]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => return Err("TLS read"),
            }
        }
        if n == 0 {
            break;
        }
    }
    while tls.wants_write() {
        tls.write_tls(out).map_err(|_| "TLS write")?;
    }
    Ok(())
}
