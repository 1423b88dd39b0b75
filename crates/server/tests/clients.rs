//! Real NBD clients against the in-process server: qemu-img, nbdcopy, nbdsh, fio.

use elevator_server::{ExportConfig, Server, ServerConfig};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

mod common;

const MIB: u64 = 1 << 20;

fn have(bin: &str) -> bool {
    let ok = Path::new(bin).exists();
    if !ok {
        eprintln!("SKIP: {bin} is not installed");
    }
    ok
}

fn random_bytes(len: usize, mut seed: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.extend_from_slice(&seed.to_le_bytes());
    }
    v.truncate(len);
    v
}

/// A directory on the build disk (O_DIRECT usually works there, unlike tmpfs).
fn workdir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("nbd-test").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn export(dir: &Path, name: &str, size: u64, read_only: bool) -> ExportConfig {
    let path = dir.join(format!("{name}.img"));
    if read_only {
        std::fs::write(&path, random_bytes(size as usize, 99)).unwrap();
    }
    ExportConfig {
        name: name.into(),
        path,
        size: if read_only { None } else { Some(size) },
        read_only,
        weight: 500,
        description: format!("test export {name}"),
        ..Default::default()
    }
}

fn start(exports: Vec<ExportConfig>, scheduler: &str) -> (Server, String) {
    start_with(exports, |c| c.scheduler = scheduler.into())
}

/// A server on a loopback port of its own, queue depth 8, `tune` applied to its config.
fn start_with(
    exports: Vec<ExportConfig>,
    tune: impl FnOnce(&mut ServerConfig),
) -> (Server, String) {
    let mut c = ServerConfig::with_exports(exports);
    c.listen = Some("127.0.0.1:0".into());
    c.queue_depth = 8;
    tune(&mut c);
    let s = Server::start(c).expect("server starts");
    let port = s.local_addr().unwrap().port();
    eprintln!("server bound to 127.0.0.1:{port}");
    (s, format!("nbd://127.0.0.1:{port}"))
}

/// nbdsh runs `python3 -m nbd`; the system python has the module, a pyenv one may not.
fn nbdsh() -> Command {
    let mut c = Command::new("/usr/bin/nbdsh");
    let path = std::env::var("PATH").unwrap_or_default();
    c.env("PATH", format!("/usr/bin:{path}"));
    c
}

/// Whether nbdsh is installed and starts (says why not when it does not).
fn nbdsh_runs() -> bool {
    if !have("/usr/bin/nbdsh") {
        return false;
    }
    let ok = nbdsh().arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    if !ok {
        eprintln!("SKIP: nbdsh does not run (python nbd module missing?)");
    }
    ok
}

fn run(cmd: &mut Command) -> String {
    // A server that stops answering fails the test rather than hangs it.
    let out = common::output_within(cmd, Duration::from_secs(120), "client")
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed: {text}");
    text
}

#[test]
fn qemu_img_convert_and_compare() {
    if !have("/usr/bin/qemu-img") {
        return;
    }
    let dir = workdir();
    let src: PathBuf = dir.path().join("src.raw");
    let data = random_bytes((8 * MIB) as usize, 1);
    std::fs::write(&src, &data).unwrap();
    let ex = export(dir.path(), "disk", 8 * MIB, false);
    let backing = ex.path.clone();
    let (server, uri) = start(vec![ex], "mq-deadline");
    let uri = format!("{uri}/disk");
    run(Command::new("qemu-img")
        .args(["convert", "-n", "-f", "raw", "-O", "raw"])
        .arg(&src)
        .arg(&uri));
    run(Command::new("qemu-img").args(["compare", "-f", "raw", "-F", "raw"]).arg(&src).arg(&uri));
    let stats = server.stats();
    server.shutdown();
    assert_eq!(std::fs::read(&backing).unwrap(), data, "backing file content");
    assert!(stats[0].writes > 0 && stats[0].reads > 0, "{stats:?}");
    assert_eq!(stats[0].errors, 0);
}

#[test]
fn nbdcopy_both_ways() {
    if !have("/usr/bin/nbdcopy") {
        return;
    }
    let dir = workdir();
    let src = dir.path().join("src.raw");
    let back = dir.path().join("back.raw");
    let data = random_bytes((8 * MIB) as usize, 2);
    std::fs::write(&src, &data).unwrap();
    let (server, uri) = start(vec![export(dir.path(), "d", 8 * MIB, false)], "none");
    let uri = format!("{uri}/d");
    run(Command::new("nbdcopy").arg(&src).arg(&uri));
    run(Command::new("nbdcopy").arg(&uri).arg(&back));
    server.shutdown();
    assert!(std::fs::read(&back).unwrap() == data, "nbdcopy round trip differs");
}

/// The flags libnbd sees (`nbdinfo --can`), and nbdcopy using four connections once the
/// export says it may (NBD_FLAG_CAN_MULTI_CONN).
#[test]
fn libnbd_sees_df_and_multi_conn_and_nbdcopy_uses_four_connections() {
    if !have("/usr/bin/nbdinfo") || !have("/usr/bin/nbdcopy") {
        return;
    }
    let dir = workdir();
    let (server, uri) = start(vec![export(dir.path(), "d", 8 * MIB, false)], "none");
    let uri = format!("{uri}/d");
    for can in ["df", "multi-conn", "flush", "fua", "trim", "zero"] {
        let st = Command::new("nbdinfo").args(["--can", can]).arg(&uri).status().unwrap();
        assert!(st.success(), "nbdinfo --can {can}: {st}");
    }
    let before = server.stats()[0].connections;
    let src = dir.path().join("src.raw");
    std::fs::write(&src, random_bytes((8 * MIB) as usize, 3)).unwrap();
    run(Command::new("nbdcopy")
        .args(["--connections", "4", "--threads", "4", "--flush"])
        .arg(&src)
        .arg(&uri));
    let conns = server.stats()[0].connections - before;
    server.shutdown();
    assert_eq!(conns, 4, "nbdcopy --connections 4 opened {conns} connections");
}

#[test]
fn nbdsh_commands_and_read_only() {
    if !nbdsh_runs() {
        return;
    }
    let dir = workdir();
    let (server, uri) = start(
        vec![export(dir.path(), "rw", 4 * MIB, false), export(dir.path(), "ro", MIB, true)],
        "mq-deadline",
    );
    let script = r#"
import errno
assert h.get_size() == 4 * 1024 * 1024
assert h.can_flush() and h.can_trim() and h.can_zero() and h.can_fua()
h.pwrite(b"\xab" * 65536, 0)
h.pwrite(b"hello, unaligned", 1000)      # read-modify-write path
h.flush()
buf = h.pread(65536, 0)
assert buf[1000:1016] == b"hello, unaligned", buf[990:1020]
assert buf[:1000] == b"\xab" * 1000 and buf[1016:] == b"\xab" * (65536 - 1016)
h.zero(4096, 8192)
assert h.pread(4096, 8192) == bytes(4096)
h.trim(4096, 16384)
h.pwrite(b"z" * 512, 123456, nbd.CMD_FLAG_FUA)
assert h.pread(512, 123456) == b"z" * 512
h.set_strict_mode(0)   # let the server, not libnbd, judge the bounds
try:
    h.pread(4096, 4 * 1024 * 1024 - 100)
    assert False, "read past end succeeded"
except nbd.Error as e:
    assert e.errno in ("EINVAL", errno.EINVAL), (e, e.errno)
try:
    h.pwrite(b"w" * 4096, 4 * 1024 * 1024 - 100)
    assert False, "write past end succeeded"
except nbd.Error as e:
    assert e.errno in ("ENOSPC", errno.ENOSPC), (e, e.errno)
"#;
    run(nbdsh().arg("-u").arg(format!("{uri}/rw")).arg("-c").arg(script));
    let ro = r#"
import errno
assert h.is_read_only()
h.set_strict_mode(0)
assert len(h.pread(4096, 0)) == 4096
try:
    h.pwrite(b"x" * 512, 0)
    assert False, "write to read-only export succeeded"
except nbd.Error as e:
    assert e.errno in ("EPERM", errno.EPERM), (e, e.errno)
"#;
    run(nbdsh().arg("-u").arg(format!("{uri}/ro")).arg("-c").arg(ro));
    let stats = server.stats();
    server.shutdown();
    assert!(
        stats[0].trims >= 1 && stats[0].write_zeroes >= 1 && stats[0].flushes >= 1,
        "{stats:?}"
    );
}

/// Reads longer than `max_sectors_kb` go to the file in pieces and, with structured replies,
/// back to the client as one OFFSET_DATA chunk per piece: the bytes must come out the same,
/// with and without structured replies, at offsets that cut pieces anywhere.
#[test]
fn nbdsh_reads_in_pieces() {
    if !nbdsh_runs() {
        return;
    }
    let dir = workdir();
    let ro = export(dir.path(), "ro", 2 * MIB, true);
    let path = ro.path.clone();
    let (server, uri) = start_with(vec![ro], |c| c.max_sectors_kb = 8);
    let uri = format!("{uri}/ro");
    let script = format!(
        r#"
data = open({path:?}, "rb").read()
for structured in (True, False):
    h = nbd.NBD()
    h.set_request_structured_replies(structured)
    h.connect_uri({uri:?})
    assert h.get_structured_replies_negotiated() == structured
    for off, n in ((0, 65536), (1234, 300000), (8191, 8194), (2 * 1024 * 1024 - 70000, 70000)):
        assert h.pread(n, off) == data[off:off + n], (structured, off, n)
    if structured:
        chunks = []
        def chunk(buf, offset, status, err):
            chunks.append((offset, len(buf)))
            return 0
        h.pread_structured(100000, 5000, chunk)
        assert len(chunks) > 1, chunks
        assert sum(n for _, n in chunks) == 100000, chunks
        assert sorted(chunks)[0][0] == 5000, chunks
    h.shutdown()
"#,
        path = path.display().to_string(),
        uri = uri,
    );
    run(nbdsh().arg("-c").arg(script));
    server.shutdown();
}

/// A sequential reader makes the server read ahead; a write over the prefetched range must
/// reach every read that follows its reply, on that connection and on another.
#[test]
fn readahead_never_serves_overwritten_data() {
    if !nbdsh_runs() {
        return;
    }
    let dir = workdir();
    let rw = export(dir.path(), "rw", 16 * MIB, false);
    let (server, uri) = start_with(vec![rw], |c| c.read_ahead_kb = 4096);
    let uri = format!("{uri}/rw");
    let script = format!(
        r#"
K = 65536
h.pwrite(b"a" * (16 * 1024 * 1024), 0)
other = nbd.NBD()
other.connect_uri({uri:?})
for round in range(3):
    # Sequential 64 KiB reads: the window grows to 4 MiB ahead of the reader.
    for i in range(8):
        assert h.pread(K, i * K) == b"a" * K
    # Overwrite data that was read ahead (some of it may still be in flight).
    fill = bytes([ord("b") + round])
    h.pwrite(fill * (3 * K), 9 * K)
    other.pwrite(fill * K, 20 * K)
    assert h.pread(K, 8 * K) == b"a" * K
    assert h.pread(K, 9 * K) == fill * K
    assert h.pread(2 * K, 10 * K) == fill * (2 * K)
    assert h.pread(8 * K, 12 * K) == b"a" * (8 * K)
    assert h.pread(K, 20 * K) == fill * K
    assert other.pread(K, 11 * K) == fill * K
    h.pwrite(b"a" * (32 * K), 0)
"#,
        uri = uri,
    );
    run(nbdsh().arg("-u").arg(&uri).arg("-c").arg(script));
    server.shutdown();
}

#[test]
fn fio_randrw_verify_two_exports() {
    if !have("/usr/bin/fio") {
        return;
    }
    let dir = workdir();
    let (server, uri) = start(
        vec![export(dir.path(), "a", 16 * MIB, false), export(dir.path(), "b", 16 * MIB, false)],
        "mq-deadline",
    );
    let mut cmd = Command::new("fio");
    // fio leaves verify state files in its working directory: keep them in the temp dir.
    cmd.current_dir(dir.path());
    cmd.args(["--ioengine=nbd", "--rw=randrw", "--bs=4k", "--size=16M", "--iodepth=8"]).args([
        "--verify=crc32c",
        "--verify_fatal=1",
        "--do_verify=1",
        "--group_reporting=0",
    ]);
    for name in ["a", "b"] {
        cmd.arg(format!("--name={name}")).arg(format!("--uri={uri}/{name}"));
    }
    let out = run(&mut cmd);
    for l in out.lines().filter(|l| l.contains("err=") || l.contains("IOPS")) {
        eprintln!("fio: {l}");
    }
    let stats = server.stats();
    eprintln!("stats: {stats:?}");
    server.shutdown();
    assert!(out.matches("err= 0").count() == 2, "fio output: {out}");
    assert!(stats.iter().all(|s| s.writes > 0 && s.errors == 0), "{stats:?}");
}

#[test]
fn nbdsh_block_status_base_allocation() {
    if !nbdsh_runs() {
        return;
    }
    let dir = workdir();
    let (server, uri) = start(vec![export(dir.path(), "sparse", 4 * MIB, false)], "none");
    let script = format!(
        r#"
h2 = nbd.NBD()
h2.add_meta_context(nbd.CONTEXT_BASE_ALLOCATION)
h2.connect_uri("{uri}/sparse")
assert h2.can_meta_context(nbd.CONTEXT_BASE_ALLOCATION)
h2.pwrite(b"x" * 65536, 1048576)
h2.flush()
ext = []
def cb(meta, off, entries, err):
    if meta == nbd.CONTEXT_BASE_ALLOCATION:
        ext.extend(zip(entries[0::2], entries[1::2]))
    return 0
h2.block_status(4 * 1048576, 0, cb)
pos, flags_at = 0, {{}}
for length, flags in ext:
    flags_at[pos] = flags
    pos += length
print(ext)
assert flags_at[0] & nbd.STATE_HOLE, ext
assert 1048576 in flags_at and flags_at[1048576] == 0, ext
one = []
h2.block_status(4 * 1048576, 0, lambda m, o, e, err: one.extend(e) or 0, nbd.CMD_FLAG_REQ_ONE)
assert len(one) == 2, one
# Without the context negotiated the server refuses BLOCK_STATUS.
h.set_strict_mode(0)
try:
    h.block_status(4096, 0, lambda *a: 0)
    assert False, "block status without context succeeded"
except nbd.Error as e:
    pass
"#
    );
    run(nbdsh().arg("-u").arg(format!("{uri}/sparse")).arg("-c").arg(script));
    server.shutdown();
}

/// `ctl trace on FILE`: one JSON line per dispatched request, with the scheduler's reason,
/// while nbdcopy reads the export; `trace off` ends it (nothing more is written).
#[test]
fn decision_trace_by_ctl() {
    if !have("/usr/bin/nbdcopy") {
        return;
    }
    use std::io::{BufRead, BufReader, Write};
    let dir = workdir();
    let sock = dir.path().join("ctl.sock");
    let trace = dir.path().join("decisions.jsonl");
    let (server, uri) = start_with(vec![export(dir.path(), "d", 4 * MIB, true)], |c| {
        c.scheduler = "mq-deadline".into();
        c.control_socket = Some(sock.clone());
    });
    let ctl = |line: &str| {
        let mut s = std::os::unix::net::UnixStream::connect(&sock).unwrap();
        writeln!(s, "{line}").unwrap();
        let mut answer = String::new();
        BufReader::new(s).read_line(&mut answer).unwrap();
        serde_json::from_str::<serde_json::Value>(&answer).unwrap()
    };
    assert_eq!(
        ctl("trace on relative.jsonl")["error"],
        "trace: `relative.jsonl`: give an absolute path"
    );
    assert_eq!(ctl(&format!("trace on {}", trace.display()))["ok"], true);
    run(Command::new("nbdcopy").arg(format!("{uri}/d")).arg(dir.path().join("copy.raw")));
    assert_eq!(ctl("trace off")["ok"], true);
    let text = std::fs::read_to_string(&trace).unwrap();
    let lines: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert!(!lines.is_empty(), "no decisions traced");
    for l in &lines {
        assert_eq!(l["scheduler"], "mq-deadline", "{l}");
        assert_eq!(l["op"], "read", "{l}");
        assert!(l["decision"].as_str().is_some_and(|d| !d.is_empty()), "{l}");
    }
    let sectors: u64 = lines.iter().map(|l| l["sectors"].as_u64().unwrap()).sum();
    assert!(sectors >= 4 * MIB / 512, "{sectors} sectors traced of the 4 MiB read");
    run(Command::new("nbdcopy").arg(format!("{uri}/d")).arg(dir.path().join("again.raw")));
    server.shutdown();
    assert_eq!(std::fs::read_to_string(&trace).unwrap(), text, "written after trace off");
}
