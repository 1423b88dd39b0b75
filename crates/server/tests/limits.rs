//! Connection limits and access control, with raw sockets and real clients: idle handshakes
//! are evicted and timed out without costing a thread, max_connections refuses with a
//! message, a slow metrics client holds nobody up, the control socket answers only its
//! owner, Unix peers are checked against `allow_uids`, socket files are 0600 and never
//! replace a regular file.

use elevator_nbd as nbd;
use elevator_server::{ExportConfig, Server, ServerConfig};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn workdir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("nbd-limits").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn export(dir: &Path, name: &str) -> ExportConfig {
    ExportConfig {
        name: name.into(),
        path: dir.join(format!("{name}.img")),
        size: Some(1 << 20),
        weight: 500,
        ..Default::default()
    }
}

fn opt(o: u32, data: &[u8]) -> Vec<u8> {
    let mut v = nbd::IHAVEOPT.to_be_bytes().to_vec();
    v.extend_from_slice(&o.to_be_bytes());
    v.extend_from_slice(&(data.len() as u32).to_be_bytes());
    v.extend_from_slice(data);
    v
}

fn go(name: &str) -> Vec<u8> {
    let mut d = (name.len() as u32).to_be_bytes().to_vec();
    d.extend_from_slice(name.as_bytes());
    d.extend_from_slice(&0u16.to_be_bytes());
    opt(nbd::OPT_GO, &d)
}

/// Greeting, client flags, NBD_OPT_GO `name`: the reply type of the last option reply and
/// its message (for an error).
fn try_go<S: Read + Write>(s: &mut S, name: &str) -> (u32, String) {
    let mut g = [0u8; 18];
    s.read_exact(&mut g).unwrap();
    let mut m = 1u32.to_be_bytes().to_vec();
    m.extend(go(name));
    s.write_all(&m).unwrap();
    loop {
        let mut h = [0u8; 20];
        s.read_exact(&mut h).unwrap();
        let rep = u32::from_be_bytes(h[12..16].try_into().unwrap());
        let len = u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize;
        let mut d = vec![0u8; len];
        s.read_exact(&mut d).unwrap();
        if rep != nbd::REP_INFO {
            return (rep, String::from_utf8_lossy(&d).into_owned());
        }
    }
}

/// Threads of this process whose name starts with `elevator` (the server's).
fn server_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|c| c.starts_with("elevator"))
        .count()
}

/// Reads until EOF or error; true if the server closed the connection.
fn closed_by_server(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut b = [0u8; 64];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn idle_handshakes_are_evicted_and_timed_out_without_threads() {
    let dir = workdir();
    let mut c = ServerConfig::with_exports(vec![export(dir.path(), "disk")]);
    c.listen = Some("127.0.0.1:0".into());
    let sock = dir.path().join("nbd.sock");
    c.unix_socket = Some(sock.clone());
    c.max_handshakes = 32;
    c.handshake_timeout_ms = 1500;
    let server = Server::start(c).unwrap();
    let addr: SocketAddr = server.local_addr().unwrap();
    // 200 idle clients on each transport: they never send a byte.
    let mut tcp: Vec<TcpStream> = (0..200).map(|_| TcpStream::connect(addr).unwrap()).collect();
    let mut unix: Vec<UnixStream> = (0..200).map(|_| UnixStream::connect(&sock).unwrap()).collect();
    // Once the server has taken them in, a real client still gets in, on both transports.
    std::thread::sleep(Duration::from_millis(300));
    let mut s = TcpStream::connect(addr).unwrap();
    assert_eq!(try_go(&mut s, "disk").0, nbd::REP_ACK);
    let mut u = UnixStream::connect(&sock).unwrap();
    assert_eq!(try_go(&mut u, "disk").0, nbd::REP_ACK);
    // A few per server (gate, worker, control), whatever the number of sockets; other tests
    // of this binary run servers of their own alongside.
    let threads = server_threads();
    assert!(threads <= 16, "{threads} server threads for 400 idle connections");
    // The oldest idle ones were closed to make room: at most max_handshakes remain.
    let evicted = tcp[..150].iter_mut().map(closed_by_server).filter(|c| *c).count();
    assert_eq!(evicted, 150, "the oldest idle handshakes are closed");
    unix.clear();
    // An idle handshake nobody evicts is closed at the deadline (1.5 s here), not before.
    let started = Instant::now();
    let mut late = TcpStream::connect(addr).unwrap();
    assert!(closed_by_server(&mut late), "an idle handshake outlived its deadline");
    assert!(started.elapsed() >= Duration::from_millis(1400), "{:?}", started.elapsed());
    // The connections that got through are still served.
    let req = nbd::RequestHeader {
        flags: 0,
        command: nbd::Command::Read,
        handle: 7,
        offset: 0,
        length: 512,
    };
    s.write_all(&req.encode()).unwrap();
    let mut r = [0u8; 16 + 512];
    s.read_exact(&mut r).unwrap();
    assert_eq!(u64::from_be_bytes(r[8..16].try_into().unwrap()), 7);
    drop((s, u));
    server.shutdown();
}

#[test]
fn max_connections_refuses_with_a_message() {
    let dir = workdir();
    let mut a = export(dir.path(), "a");
    a.max_connections = Some(1);
    let mut c = ServerConfig::with_exports(vec![a, export(dir.path(), "b")]);
    c.listen = Some("127.0.0.1:0".into());
    c.max_connections = 2;
    let server = Server::start(c).unwrap();
    let addr = server.local_addr().unwrap();
    let mut first = TcpStream::connect(addr).unwrap();
    assert_eq!(try_go(&mut first, "a").0, nbd::REP_ACK);
    let (rep, msg) = try_go(&mut TcpStream::connect(addr).unwrap(), "a");
    assert_eq!(rep, nbd::REP_ERR_POLICY);
    assert!(msg.contains("export `a` is at its max_connections (1)"), "{msg}");
    let mut second = TcpStream::connect(addr).unwrap();
    assert_eq!(try_go(&mut second, "b").0, nbd::REP_ACK);
    let (rep, msg) = try_go(&mut TcpStream::connect(addr).unwrap(), "b");
    assert_eq!(rep, nbd::REP_ERR_POLICY);
    assert!(msg.contains("max_connections (2)"), "{msg}");
    // A closed connection gives its place back.
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (rep, _) = try_go(&mut TcpStream::connect(addr).unwrap(), "a");
        if rep == nbd::REP_ACK {
            break;
        }
        assert!(Instant::now() < deadline, "the place was never given back");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(second);
    server.shutdown();
}

#[test]
fn a_trickling_metrics_client_holds_up_no_scrape() {
    let dir = workdir();
    let mut c = ServerConfig::with_exports(vec![export(dir.path(), "disk")]);
    c.listen = Some("127.0.0.1:0".into());
    c.metrics = Some("127.0.0.1:0".into());
    let server = Server::start(c).unwrap();
    let maddr = server.metrics_addr().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    // Sends a byte every 50 ms and never finishes its request.
    let slow = std::thread::spawn(move || {
        let mut s = TcpStream::connect(maddr).unwrap();
        for b in b"GET /metrics HTTP/1.1\r\nX-Slow: ".iter().cycle() {
            if stop2.load(std::sync::atomic::Ordering::SeqCst) || s.write_all(&[*b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    std::thread::sleep(Duration::from_millis(200));
    for _ in 0..5 {
        let mut s = TcpStream::connect(maddr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(s, "GET /metrics HTTP/1.1\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        assert!(out.contains("elevator_requests_total"), "{out}");
    }
    assert!(!slow.is_finished(), "the scrapes were answered while the slow client trickled");
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    slow.join().unwrap();
    server.shutdown();
}

/// Runs `f` in a child process as user `nobody` (65534): returns its exit status.
fn as_nobody(script: &str) -> std::process::Output {
    Command::new("python3").args(["-c", script]).uid(65534).gid(65534).output().unwrap()
}

fn root() -> bool {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("SKIP: needs root to act as another user");
    }
    root
}

#[test]
fn sockets_are_private_and_checked_by_peer_uid() {
    let dir = workdir();
    let mut open = export(dir.path(), "open");
    open.allow_uids = vec![];
    let mut mine = export(dir.path(), "mine");
    // SAFETY: geteuid cannot fail.
    mine.allow_uids = vec![unsafe { libc::geteuid() }];
    let mut c = ServerConfig::with_exports(vec![open, mine]);
    c.listen = None; // unix_socket alone: no TCP listener
    let sock = dir.path().join("nbd.sock");
    let ctl = dir.path().join("ctl.sock");
    c.unix_socket = Some(sock.clone());
    c.control_socket = Some(ctl.clone());
    let server = Server::start(c).unwrap();
    assert_eq!(server.local_addr(), None, "no TCP listener with unix_socket alone");
    for p in [&sock, &ctl] {
        let mode = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", p.display());
    }
    let mut u = UnixStream::connect(&sock).unwrap();
    assert_eq!(try_go(&mut u, "mine").0, nbd::REP_ACK, "the listed uid gets in");
    if root() {
        // Let everyone reach the sockets, so the server's own checks are what refuse.
        for p in [&sock, &ctl] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o666)).unwrap();
        }
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let script = format!(
            r#"
import socket, struct, sys
def go(name):
    s = socket.socket(socket.AF_UNIX); s.connect({sock:?}); s.recv(18)
    d = struct.pack(">I", len(name)) + name + b"\0\0"
    s.sendall(struct.pack(">I", 1) + struct.pack(">QII", 0x49484156454F5054, 7, len(d)) + d)
    while True:
        h = b""
        while len(h) < 20: h += s.recv(20 - len(h))
        rep, n = struct.unpack(">II", h[12:20])
        m = b""
        while len(m) < n: m += s.recv(n - len(m))
        if rep != 3: return rep, m
rep, m = go(b"mine"); assert rep == 0x80000002 and b"uid 65534" in m, (hex(rep), m)
rep, m = go(b"open"); assert rep == 1, hex(rep)
c = socket.socket(socket.AF_UNIX); c.connect({ctl:?})
try: c.sendall(b"list\n")
except BrokenPipeError: pass  # the refusal may come, and the socket close, before it
a = c.makefile().readline(); assert '"ok":false' in a and "permission denied" in a, a
"#,
            sock = sock.display().to_string(),
            ctl = ctl.display().to_string()
        );
        let out = as_nobody(&script);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        // The owner still controls the server.
        let mut s = UnixStream::connect(&ctl).unwrap();
        writeln!(s, "list").unwrap();
        let mut line = String::new();
        BufReader::new(s).read_line(&mut line).unwrap();
        assert!(line.contains("\"ok\":true"), "{line}");
    }
    drop(u);
    server.shutdown();
    // A regular file where the socket should go is an error, and stays.
    std::fs::write(&sock, b"not a socket").unwrap();
    let mut c = ServerConfig::with_exports(vec![export(dir.path(), "x")]);
    c.listen = None;
    c.unix_socket = Some(sock.clone());
    let e = Server::start(c).err().expect("refused").to_string();
    assert!(e.contains("not a socket"), "{e}");
    assert_eq!(std::fs::read(&sock).unwrap(), b"not a socket");
}

#[test]
fn metrics_stay_on_loopback_unless_configured() {
    let mut c = ServerConfig::with_exports(vec![ExportConfig {
        name: "a".into(),
        path: "/nonexistent".into(),
        ..Default::default()
    }]);
    c.metrics = Some("0.0.0.0:9187".into());
    let e = c.validate().unwrap_err().to_string();
    assert!(e.contains("metrics_public"), "{e}");
    c.metrics_public = true;
    c.validate().unwrap();
}

/// The `elevator_memory_bytes` gauge (`used` or `limit`) from the metrics endpoint.
fn memory_gauge(maddr: SocketAddr, state: &str) -> u64 {
    let mut s = TcpStream::connect(maddr).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let key = format!("elevator_memory_bytes{{state=\"{state}\"}} ");
    let line = out.lines().find(|l| l.starts_with(&key)).unwrap_or_else(|| panic!("{out}"));
    line[key.len()..].parse().unwrap()
}

fn header(command: nbd::Command, handle: u64, offset: u64, length: u32) -> [u8; 28] {
    nbd::RequestHeader { flags: 0, command, handle, offset, length }.encode()
}

/// Clients that pipeline 32 MiB reads and never read the replies, and clients that send a
/// 32 MiB write one byte short, hold at most `memory_limit` of payloads; those that read no
/// replies are dropped after `stall_timeout_ms` and everything they held is given back; a
/// real client is served again then.
#[test]
fn hostile_clients_stay_within_the_memory_budget() {
    let dir = workdir();
    let mut ex = export(dir.path(), "disk");
    ex.size = Some(64 << 20);
    let mut c = ServerConfig::with_exports(vec![ex]);
    c.listen = Some("127.0.0.1:0".into());
    c.metrics = Some("127.0.0.1:0".into());
    c.memory_limit = Some(64 << 20);
    c.stall_timeout_ms = 1000;
    c.read_ahead_kb = 0;
    let server = Server::start(c).unwrap();
    let (addr, maddr) = (server.local_addr().unwrap(), server.metrics_addr().unwrap());
    assert_eq!(memory_gauge(maddr, "limit"), 64 << 20);
    let mut readers = Vec::new();
    for _ in 0..4 {
        let mut s = TcpStream::connect(addr).unwrap();
        assert_eq!(try_go(&mut s, "disk").0, nbd::REP_ACK);
        for h in 0..4 {
            s.write_all(&header(nbd::Command::Read, h, 0, 32 << 20)).unwrap();
        }
        readers.push(s);
    }
    let mut writers = Vec::new();
    for _ in 0..4 {
        let mut s = TcpStream::connect(addr).unwrap();
        assert_eq!(try_go(&mut s, "disk").0, nbd::REP_ACK);
        s.write_all(&header(nbd::Command::Write, 9, 0, 32 << 20)).unwrap();
        s.write_all(&vec![0u8; 1 << 20]).unwrap();
        writers.push(s);
    }
    let mut peak = 0;
    for _ in 0..20 {
        peak = peak.max(memory_gauge(maddr, "used"));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(peak > 0 && peak <= 64 << 20, "payload memory {peak} past the 64 MiB budget");
    // Nobody reads or sends on: past the stall deadline (1 s) the connections holding
    // memory are dropped, and the next ones get their turn, and are dropped in turn.
    std::thread::sleep(Duration::from_millis(2500));
    let closed = |s: &mut TcpStream| {
        s.set_nonblocking(true).unwrap();
        let mut b = vec![0u8; 1 << 20];
        loop {
            match s.read(&mut b) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
                Err(_) => return false,
            }
        }
    };
    let dropped = readers.iter_mut().chain(writers.iter_mut()).map(closed).filter(|c| *c).count();
    assert!(dropped >= 2, "only {dropped} stalled clients were dropped");
    // The clients go away: everything they held comes back.
    drop((readers, writers));
    let deadline = Instant::now() + Duration::from_secs(10);
    while memory_gauge(maddr, "used") != 0 {
        assert!(Instant::now() < deadline, "memory never given back");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut s = TcpStream::connect(addr).unwrap();
    assert_eq!(try_go(&mut s, "disk").0, nbd::REP_ACK);
    s.write_all(&header(nbd::Command::Read, 1, 0, 4096)).unwrap();
    let mut r = vec![0u8; 16 + 4096];
    s.read_exact(&mut r).unwrap();
    assert_eq!(u32::from_be_bytes(r[4..8].try_into().unwrap()), 0, "served without error");
    server.shutdown();
}
