//! A hand-rolled client on the codec: pipelined unaligned writes (read-modify-write must not
//! lose bytes), cut-off payloads, malformed requests, unix socket on tmpfs (buffered fallback).

use elevator_nbd::{self as nbd, Command as Cmd, RequestHeader};
use elevator_server::{ExportConfig, Server, ServerConfig};
use std::io::{Read, Write};
use std::net::TcpStream;

const SIZE: u64 = 1 << 20;

fn start(dir: &std::path::Path, unix: bool) -> (Server, std::path::PathBuf) {
    let path = dir.join("disk.img");
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
    if unix {
        c.unix_socket = Some(dir.join("nbd.sock"));
    }
    c.queue_depth = 4;
    (Server::start(c).unwrap(), path)
}

fn handshake<S: Read + Write>(s: &mut S) {
    let mut greet = [0u8; 18];
    s.read_exact(&mut greet).unwrap();
    assert_eq!(&greet[..8], &nbd::NBDMAGIC.to_be_bytes());
    let mut m = 3u32.to_be_bytes().to_vec();
    m.extend_from_slice(&nbd::IHAVEOPT.to_be_bytes());
    m.extend_from_slice(&nbd::OPT_EXPORT_NAME.to_be_bytes());
    m.extend_from_slice(&4u32.to_be_bytes());
    m.extend_from_slice(b"disk");
    s.write_all(&m).unwrap();
    let mut r = [0u8; 10];
    s.read_exact(&mut r).unwrap();
    assert_eq!(u64::from_be_bytes(r[..8].try_into().unwrap()), SIZE);
}

fn req(command: Cmd, handle: u64, offset: u64, length: u32) -> Vec<u8> {
    RequestHeader { flags: 0, command, handle, offset, length }.encode().to_vec()
}

/// Reads one simple reply: (handle, error).
fn reply<S: Read>(s: &mut S) -> (u64, u32) {
    let mut r = [0u8; 16];
    s.read_exact(&mut r).unwrap();
    assert_eq!(u32::from_be_bytes(r[..4].try_into().unwrap()), nbd::SIMPLE_REPLY_MAGIC);
    (
        u64::from_be_bytes(r[8..].try_into().unwrap()),
        u32::from_be_bytes(r[4..8].try_into().unwrap()),
    )
}

fn pipelined_unaligned_writes<S: Read + Write>(s: &mut S, path: &std::path::Path) {
    handshake(s);
    let mut model = vec![0u8; SIZE as usize];
    let mut out = Vec::new();
    let mut seed = 12345u64;
    let mut n = 0;
    // Many small writes at odd offsets, several into the same 4 KiB blocks, all in flight
    // together; ranges do not overlap, so every byte has exactly one expected value.
    for i in 0..200u64 {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let off = i * 3000 + (seed >> 60);
        let len = 1 + (seed >> 33) % 2900;
        let byte = (i % 251) as u8 + 1;
        out.extend(req(Cmd::Write, i, off, len as u32));
        out.extend(std::iter::repeat_n(byte, len as usize));
        model[off as usize..(off + len) as usize].fill(byte);
        n += 1;
    }
    s.write_all(&out).unwrap();
    for _ in 0..n {
        assert_eq!(reply(s).1, 0);
    }
    s.write_all(&req(Cmd::Flush, 999, 0, 0)).unwrap();
    assert_eq!(reply(s), (999, 0));
    // Read back through the server, unaligned too.
    s.write_all(&req(Cmd::Read, 1000, 777, 300_001)).unwrap();
    assert_eq!(reply(s), (1000, 0));
    let mut got = vec![0u8; 300_001];
    s.read_exact(&mut got).unwrap();
    assert!(got == model[777..777 + 300_001], "read back differs from model");
    // Disconnect without NBD_CMD_DISC, mid-payload: the write must not happen.
    s.write_all(&req(Cmd::Write, 5, 0, 4096)).unwrap();
    s.write_all(&[0xee; 100]).unwrap();
    s.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let _ = path;
    (model, ()).1
}

#[test]
fn tcp_pipelined_unaligned_and_cut_off_write() {
    let dir = tempfile::Builder::new().tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (server, path) = start(dir.path(), false);
    let addr = server.local_addr().unwrap();
    {
        let mut s = TcpStream::connect(addr).unwrap();
        pipelined_unaligned_writes(&mut s, &path);
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    let stats = server.stats();
    server.shutdown();
    let file = std::fs::read(&path).unwrap();
    assert_ne!(&file[..100], &[0xee; 100][..], "cut-off write was submitted");
    assert_eq!(stats[0].writes, 200, "{stats:?}");
}

#[test]
fn unix_socket_on_tmpfs() {
    let base = if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm" } else { "/tmp" };
    let dir = tempfile::Builder::new().tempdir_in(base).unwrap();
    let (server, path) = start(dir.path(), true);
    {
        let mut s = std::os::unix::net::UnixStream::connect(dir.path().join("nbd.sock")).unwrap();
        pipelined_unaligned_writes(&mut s, &path);
    }
    server.shutdown();
}

#[test]
fn malformed_requests() {
    let dir = tempfile::Builder::new().tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (server, _) = start(dir.path(), false);
    let mut s = TcpStream::connect(server.local_addr().unwrap()).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    handshake(&mut s);
    // Unknown command: EINVAL, connection stays usable.
    s.write_all(&req(Cmd::Unknown(77), 1, 0, 0)).unwrap();
    assert_eq!(reply(&mut s), (1, nbd::EINVAL));
    // Read past the end: EINVAL; oversize read: EINVAL; write past end: ENOSPC.
    s.write_all(&req(Cmd::Read, 2, SIZE - 1, 2)).unwrap();
    assert_eq!(reply(&mut s), (2, nbd::EINVAL));
    s.write_all(&req(Cmd::Read, 3, 0, u32::MAX)).unwrap();
    assert_eq!(reply(&mut s), (3, nbd::EINVAL));
    s.write_all(&req(Cmd::Write, 4, SIZE, 1)).unwrap();
    s.write_all(&[1]).unwrap();
    assert_eq!(reply(&mut s), (4, nbd::ENOSPC));
    s.write_all(&req(Cmd::Trim, 5, u64::MAX, 10)).unwrap();
    assert_eq!(reply(&mut s), (5, nbd::EINVAL));
    // Bad magic: the server hangs up.
    let mut bad = req(Cmd::Read, 6, 0, 512);
    bad[0] ^= 0xff;
    s.write_all(&bad).unwrap();
    let mut b = [0u8; 1];
    assert!(matches!(s.read(&mut b), Ok(0) | Err(_)), "connection should be closed");
    server.shutdown();
}

/// A write whose payload is larger than the server's receive buffer, parsed only once credit
/// comes back (256 requests outstanding before it), with the rest of its payload sent later:
/// the server starts receiving into the write's own buffer while a receive into its ring
/// buffer is still in flight, and the bytes of that receive must land in the payload.
#[test]
fn big_write_parsed_after_credit_returns() {
    let dir = tempfile::Builder::new().tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (server, _) = start(dir.path(), false);
    let mut s = TcpStream::connect(server.local_addr().unwrap()).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    handshake(&mut s);
    let len = 512 << 10;
    let data: Vec<u8> = (0..len).map(|i| (i * 13 + i / 4096) as u8).collect();
    let mut out = Vec::new();
    for h in 0..256 {
        out.extend(req(Cmd::Cache, h, 0, 4096));
    }
    out.extend(req(Cmd::Write, 1000, 0, len as u32));
    out.extend_from_slice(&data[..100 << 10]);
    s.write_all(&out).unwrap();
    for h in 0..256 {
        assert_eq!(reply(&mut s), (h, 0));
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    s.write_all(&data[100 << 10..]).unwrap();
    assert_eq!(reply(&mut s), (1000, 0));
    s.write_all(&req(Cmd::Read, 1001, 0, len as u32)).unwrap();
    assert_eq!(reply(&mut s), (1001, 0));
    let mut got = vec![0u8; len];
    s.read_exact(&mut got).unwrap();
    assert!(got == data, "read back differs from what was written");
    server.shutdown();
}
