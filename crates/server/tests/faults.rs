//! Bad input and faults over raw sockets: malformed handshakes and requests get spec-conforming
//! errors or a clean disconnect, never a crash, while a well-behaved client keeps working on
//! the same export with its data intact.

use elevator_nbd::{self as nbd, Command as Cmd, RequestHeader};
use elevator_server::{ExportConfig, Server, ServerConfig};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const SIZE: u64 = 4 << 20;
/// The good client owns the first half of the export, the bad ones write only to the second.
const HALF: u64 = SIZE / 2;

static PANICS: AtomicUsize = AtomicUsize::new(0);

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

fn opt(o: u32, data: &[u8]) -> Vec<u8> {
    let mut v = nbd::IHAVEOPT.to_be_bytes().to_vec();
    v.extend_from_slice(&o.to_be_bytes());
    v.extend_from_slice(&(data.len() as u32).to_be_bytes());
    v.extend_from_slice(data);
    v
}

fn greeting(s: &mut TcpStream) {
    let mut g = [0u8; 18];
    s.read_exact(&mut g).unwrap();
    assert_eq!(&g[..8], &nbd::NBDMAGIC.to_be_bytes());
}

/// Reads one option reply: (option, reply type, data).
fn opt_reply(s: &mut TcpStream) -> (u32, u32, Vec<u8>) {
    let mut h = [0u8; 20];
    s.read_exact(&mut h).unwrap();
    assert_eq!(u64::from_be_bytes(h[..8].try_into().unwrap()), nbd::OPT_REPLY_MAGIC);
    let len = u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize;
    let mut d = vec![0u8; len];
    s.read_exact(&mut d).unwrap();
    (
        u32::from_be_bytes(h[8..12].try_into().unwrap()),
        u32::from_be_bytes(h[12..16].try_into().unwrap()),
        d,
    )
}

/// Fixed-newstyle handshake with NBD_OPT_EXPORT_NAME and no zeroes: returns the export size.
fn handshake(s: &mut TcpStream) -> u64 {
    greeting(s);
    let mut m = 3u32.to_be_bytes().to_vec();
    m.extend(opt(nbd::OPT_EXPORT_NAME, b"disk"));
    s.write_all(&m).unwrap();
    let mut r = [0u8; 10];
    s.read_exact(&mut r).unwrap();
    u64::from_be_bytes(r[..8].try_into().unwrap())
}

fn req(command: Cmd, handle: u64, offset: u64, length: u32) -> Vec<u8> {
    RequestHeader { flags: 0, command, handle, offset, length }.encode().to_vec()
}

fn reply(s: &mut TcpStream) -> (u64, u32) {
    let mut r = [0u8; 16];
    s.read_exact(&mut r).unwrap();
    assert_eq!(u32::from_be_bytes(r[..4].try_into().unwrap()), nbd::SIMPLE_REPLY_MAGIC);
    (
        u64::from_be_bytes(r[8..].try_into().unwrap()),
        u32::from_be_bytes(r[4..8].try_into().unwrap()),
    )
}

/// The server closed the connection: EOF (or a reset) rather than more data or a timeout.
fn assert_closed(s: &mut TcpStream, what: &str) {
    let mut b = [0u8; 256];
    loop {
        match s.read(&mut b) {
            Ok(0) => return,
            Ok(_) => continue, // replies still in flight before the close
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) => panic!("{what}: expected a disconnect, got {e}"),
        }
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Writes and reads back random (unaligned too) ranges of the first half until told to stop;
/// returns the model of the first half.
fn good_client(addr: SocketAddr, stop: Arc<AtomicBool>) -> (Vec<u8>, u64) {
    let mut s = connect(addr);
    assert_eq!(handshake(&mut s), SIZE);
    let mut model = vec![0u8; HALF as usize];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut rounds = 0u64;
    while !stop.load(Ordering::Relaxed) || rounds < 50 {
        let len = 1 + rng.next() % 20_000;
        let off = rng.next() % (HALF - len);
        let data = rng.bytes(len as usize);
        let mut m = req(Cmd::Write, rounds * 2, off, len as u32);
        m.extend_from_slice(&data);
        s.write_all(&m).unwrap();
        assert_eq!(reply(&mut s), (rounds * 2, 0), "good write");
        model[off as usize..(off + len) as usize].copy_from_slice(&data);
        let (roff, rlen) = (rng.next() % (HALF - 65536), 1 + rng.next() % 65536);
        s.write_all(&req(Cmd::Read, rounds * 2 + 1, roff, rlen as u32)).unwrap();
        assert_eq!(reply(&mut s), (rounds * 2 + 1, 0), "good read");
        let mut got = vec![0u8; rlen as usize];
        s.read_exact(&mut got).unwrap();
        assert!(
            got == model[roff as usize..(roff + rlen) as usize],
            "good client read back differs"
        );
        rounds += 1;
    }
    s.write_all(&req(Cmd::Flush, 1 << 40, 0, 0)).unwrap();
    assert_eq!(reply(&mut s), (1 << 40, 0));
    s.write_all(&req(Cmd::Read, 7, 0, HALF as u32)).unwrap();
    assert_eq!(reply(&mut s), (7, 0));
    let mut all = vec![0u8; HALF as usize];
    s.read_exact(&mut all).unwrap();
    assert!(all == model, "good client's half differs at the end");
    s.write_all(&req(Cmd::Disc, 8, 0, 0)).unwrap();
    (model, rounds)
}

fn bad_handshakes(addr: SocketAddr) {
    // Client flags without FIXED_NEWSTYLE, and with unknown bits.
    for flags in [0u32, 1 | 0x100] {
        let mut s = connect(addr);
        greeting(&mut s);
        s.write_all(&flags.to_be_bytes()).unwrap();
        assert_closed(&mut s, "bad client flags");
    }
    // Bad option magic.
    let mut s = connect(addr);
    greeting(&mut s);
    s.write_all(&1u32.to_be_bytes()).unwrap();
    s.write_all(&[0x42; 16]).unwrap();
    assert_closed(&mut s, "bad option magic");
    // An option longer than the server accepts.
    let mut s = connect(addr);
    greeting(&mut s);
    let mut m = 1u32.to_be_bytes().to_vec();
    m.extend_from_slice(&nbd::IHAVEOPT.to_be_bytes());
    m.extend_from_slice(&nbd::OPT_GO.to_be_bytes());
    m.extend_from_slice(&u32::MAX.to_be_bytes());
    s.write_all(&m).unwrap();
    assert_closed(&mut s, "huge option");
    // Unknown option: NBD_REP_ERR_UNSUP and the negotiation goes on; malformed GO data:
    // NBD_REP_ERR_INVALID; unknown export in GO: NBD_REP_ERR_UNKNOWN; then ABORT is acked.
    let mut s = connect(addr);
    greeting(&mut s);
    let mut m = 1u32.to_be_bytes().to_vec();
    m.extend(opt(99, b"whatever"));
    m.extend(opt(nbd::OPT_GO, &[0, 0, 0, 9, b'x']));
    m.extend(opt(nbd::OPT_GO, &[0, 0, 0, 4, b'n', b'o', b'p', b'e', 0, 0]));
    m.extend(opt(nbd::OPT_ABORT, &[]));
    s.write_all(&m).unwrap();
    assert_eq!(opt_reply(&mut s).1, nbd::REP_ERR_UNSUP);
    assert_eq!(opt_reply(&mut s).1, nbd::REP_ERR_INVALID);
    assert_eq!(opt_reply(&mut s).1, nbd::REP_ERR_UNKNOWN);
    assert_eq!(opt_reply(&mut s).1, nbd::REP_ACK);
    assert_closed(&mut s, "after abort");
    // EXPORT_NAME of an unknown export cannot be answered with an error: the server closes.
    let mut s = connect(addr);
    greeting(&mut s);
    let mut m = 1u32.to_be_bytes().to_vec();
    m.extend(opt(nbd::OPT_EXPORT_NAME, b"nope"));
    s.write_all(&m).unwrap();
    assert_closed(&mut s, "unknown export");
    // Truncated handshakes: the client goes away at every stage.
    for cut in [0usize, 2, 4, 10, 19, 23] {
        let mut s = connect(addr);
        greeting(&mut s);
        let mut m = 1u32.to_be_bytes().to_vec();
        m.extend(opt(nbd::OPT_EXPORT_NAME, b"disk"));
        s.write_all(&m[..cut]).unwrap();
        drop(s);
    }
}

fn bad_requests(addr: SocketAddr) {
    let mut s = connect(addr);
    handshake(&mut s);
    // Unknown command, unknown flags, out of range, oversized: errors, the session goes on.
    s.write_all(&req(Cmd::Unknown(200), 1, 0, 0)).unwrap();
    assert_eq!(reply(&mut s), (1, nbd::EINVAL));
    let mut flagged =
        RequestHeader { flags: 0x8000, command: Cmd::Read, handle: 2, offset: 0, length: 512 };
    s.write_all(&flagged.encode()).unwrap();
    assert_eq!(reply(&mut s), (2, nbd::EINVAL));
    s.write_all(&req(Cmd::Read, 3, SIZE - 100, 4096)).unwrap();
    assert_eq!(reply(&mut s), (3, nbd::EINVAL));
    s.write_all(&req(Cmd::Read, 4, 0, nbd::MAX_PAYLOAD + 1)).unwrap();
    assert_eq!(reply(&mut s), (4, nbd::EINVAL));
    let mut w = req(Cmd::Write, 5, SIZE - 10, 20);
    w.extend_from_slice(&[9; 20]);
    s.write_all(&w).unwrap();
    assert_eq!(reply(&mut s), (5, nbd::ENOSPC));
    s.write_all(&req(Cmd::Trim, 6, u64::MAX - 5, 100)).unwrap();
    assert_eq!(reply(&mut s), (6, nbd::EINVAL));
    s.write_all(&req(Cmd::WriteZeroes, 7, SIZE, 1)).unwrap();
    assert_eq!(reply(&mut s), (7, nbd::ENOSPC));
    s.write_all(&req(Cmd::BlockStatus, 8, 0, 4096)).unwrap();
    assert_eq!(reply(&mut s), (8, nbd::EINVAL), "block status without the context");
    // Unaligned requests are fine (minimum block size 1): they go through read-modify-write.
    let mut w = req(Cmd::Write, 9, HALF + 4093, 7);
    w.extend_from_slice(b"unalign");
    s.write_all(&w).unwrap();
    assert_eq!(reply(&mut s), (9, 0));
    s.write_all(&req(Cmd::Read, 10, HALF + 4090, 13)).unwrap();
    assert_eq!(reply(&mut s), (10, 0));
    let mut got = [0u8; 13];
    s.read_exact(&mut got).unwrap();
    assert_eq!(&got[3..10], b"unalign");
    // Zero-length requests succeed without touching anything.
    s.write_all(&req(Cmd::Read, 11, 0, 0)).unwrap();
    assert_eq!(reply(&mut s), (11, 0));
    // A write whose payload is too large to skip: the server hangs up.
    s.write_all(&req(Cmd::Write, 12, 0, nbd::MAX_PAYLOAD + 1)).unwrap();
    assert_closed(&mut s, "oversized write");
    // Bad request magic: hang up.
    let mut s = connect(addr);
    handshake(&mut s);
    flagged.flags = 0;
    let mut bad = flagged.encode();
    bad[1] ^= 0x55;
    s.write_all(&bad).unwrap();
    assert_closed(&mut s, "bad request magic");
    // Truncated header, and a write cut off mid-payload: dropped, never executed.
    for cut in [1usize, 12, 27] {
        let mut s = connect(addr);
        handshake(&mut s);
        s.write_all(&req(Cmd::Read, 1, HALF, 512)[..cut]).unwrap();
        drop(s);
    }
    let mut s = connect(addr);
    handshake(&mut s);
    s.write_all(&req(Cmd::Write, 1, HALF + 65536, 65536)).unwrap();
    s.write_all(&[0xee; 30_000]).unwrap();
    drop(s);
    // Many requests in flight and the client vanishes without reading the replies.
    let mut s = connect(addr);
    handshake(&mut s);
    let mut burst = Vec::new();
    for i in 0..200u64 {
        burst.extend(req(Cmd::Read, i, HALF + (i % 64) * 4096, 65536));
    }
    s.write_all(&burst).unwrap();
    drop(s);
}

/// Random bytes after the greeting and after the handshake: the server may answer, must not
/// crash, and must close or keep the connection in a sane state.
fn garbage(addr: SocketAddr) {
    let mut rng = Rng(12345);
    for i in 0..60 {
        let mut s = connect(addr);
        s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        if i % 2 == 0 {
            greeting(&mut s);
            let mut m = 1u32.to_be_bytes().to_vec();
            m.extend_from_slice(&nbd::IHAVEOPT.to_be_bytes());
            let n = (rng.next() % 300) as usize;
            m.extend(rng.bytes(n));
            let _ = s.write_all(&m);
        } else {
            handshake(&mut s);
            let mut m = Vec::new();
            // Valid magic, random everything else (offsets beyond the good client's half).
            for _ in 0..(1 + rng.next() % 8) {
                let mut h = req(Cmd::Read, rng.next(), 0, 0);
                let r = rng.bytes(24);
                h[4..].copy_from_slice(&r);
                let len = u32::from_be_bytes(h[24..28].try_into().unwrap()) % 70_000;
                h[24..28].copy_from_slice(&len.to_be_bytes());
                let off = HALF + rng.next() % HALF;
                h[16..24].copy_from_slice(&off.to_be_bytes());
                m.extend(h);
                let extra = (rng.next() % 2000) as usize;
                m.extend(rng.bytes(extra));
            }
            let _ = s.write_all(&m);
        }
        let mut sink = [0u8; 4096];
        while let Ok(n) = s.read(&mut sink) {
            if n == 0 {
                break;
            }
        }
    }
}

#[test]
fn malformed_input_never_hurts_a_good_client() {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        prev(info);
    }));
    let dir = tempfile::Builder::new().tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("disk.img");
    let mut c = ServerConfig::with_exports(vec![ExportConfig {
        name: "disk".into(),
        path: path.clone(),
        size: Some(SIZE),
        read_only: false,
        weight: 500,
        description: String::new(),
        ..Default::default()
    }]);
    c.listen = Some("127.0.0.1:0".into());
    c.queue_depth = 8;
    let server = Server::start(c).unwrap();
    let addr = server.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let good = {
        let stop = stop.clone();
        std::thread::spawn(move || good_client(addr, stop))
    };
    for _ in 0..3 {
        bad_handshakes(addr);
        bad_requests(addr);
        garbage(addr);
    }
    stop.store(true, Ordering::Relaxed);
    let (model, rounds) = good.join().expect("good client");
    eprintln!("good client: {rounds} write+read rounds alongside the bad ones");
    // The server still serves new clients.
    let mut s = connect(addr);
    assert_eq!(handshake(&mut s), SIZE);
    s.write_all(&req(Cmd::Read, 1, 0, 4096)).unwrap();
    assert_eq!(reply(&mut s), (1, 0));
    drop(s);
    std::thread::sleep(Duration::from_millis(200));
    server.shutdown();
    let file = std::fs::read(&path).unwrap();
    assert!(file[..HALF as usize] == model[..], "backing file");
    let cut = (HALF + 65536) as usize;
    assert!(file[cut..cut + 30_000].iter().any(|&b| b != 0xee), "a cut-off write was executed");
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a thread panicked");
}
