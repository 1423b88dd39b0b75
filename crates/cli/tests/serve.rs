//! `elevator serve` as a child process: a write acknowledged after FLUSH survives `kill -9`.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SIZE: u64 = 8 << 20;

/// A server child process, killed if the test fails before stopping it.
struct Serve(Child);

impl Serve {
    fn kill_9(&mut self) {
        self.0.kill().unwrap(); // SIGKILL
        self.0.wait().unwrap();
    }

    fn terminate(&mut self) -> std::process::ExitStatus {
        // SAFETY: plain kill(2) on our child's pid.
        unsafe { libc_kill(self.0.id() as i32, 15) };
        self.0.wait().unwrap()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn spawn(config: &Path, sock: &Path) -> Serve {
    let _ = std::fs::remove_file(sock);
    let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["serve", "--config"])
        .arg(config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("elevator serve starts");
    let t0 = Instant::now();
    while UnixStream::connect(sock).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(20), "server did not come up");
        std::thread::sleep(Duration::from_millis(20));
    }
    Serve(child)
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().unwrap())
}

fn connect(sock: &Path) -> UnixStream {
    let mut s = UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut g = [0u8; 18];
    s.read_exact(&mut g).unwrap();
    assert_eq!(&g[..8], b"NBDMAGIC");
    let mut m = 3u32.to_be_bytes().to_vec(); // fixed newstyle, no zeroes
    m.extend_from_slice(b"IHAVEOPT");
    m.extend_from_slice(&1u32.to_be_bytes()); // NBD_OPT_EXPORT_NAME
    m.extend_from_slice(&4u32.to_be_bytes());
    m.extend_from_slice(b"disk");
    s.write_all(&m).unwrap();
    let mut r = [0u8; 10];
    s.read_exact(&mut r).unwrap();
    assert_eq!(u64::from_be_bytes(r[..8].try_into().unwrap()), SIZE);
    s
}

fn request(s: &mut UnixStream, cmd: u16, handle: u64, offset: u64, data: &[u8], len: u32) {
    let mut m = 0x2560_9513u32.to_be_bytes().to_vec();
    m.extend_from_slice(&0u16.to_be_bytes());
    m.extend_from_slice(&cmd.to_be_bytes());
    m.extend_from_slice(&handle.to_be_bytes());
    m.extend_from_slice(&offset.to_be_bytes());
    m.extend_from_slice(&len.to_be_bytes());
    m.extend_from_slice(data);
    s.write_all(&m).unwrap();
}

fn reply(s: &mut UnixStream) -> (u64, u32) {
    let mut r = [0u8; 16];
    s.read_exact(&mut r).unwrap();
    assert_eq!(be32(&r), 0x6744_6698, "simple reply magic");
    (u64::from_be_bytes(r[8..].try_into().unwrap()), be32(&r[4..]))
}

#[test]
fn flushed_writes_survive_kill_9() {
    let dir = tempfile_dir("kill9");
    let img = dir.join("disk.img");
    let sock = dir.join("nbd.sock");
    let config = dir.join("server.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"\"\nunix_socket = \"{}\"\nscheduler = \"mq-deadline\"\n\
             [[export]]\nname = \"disk\"\npath = \"{}\"\nsize = {SIZE}\n",
            sock.display(),
            img.display()
        ),
    )
    .unwrap();
    // KILL9_ROUNDS=N (bench/attack.sh uses 20) repeats write, flush, kill -9, restart and
    // read back, each round over the data of the last.
    let rounds: u64 = std::env::var("KILL9_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
    let mut child = spawn(&config, &sock);
    let mut model = vec![0u8; SIZE as usize];
    let mut seed = 0x1234_5678_9abc_def1u64;
    for round in 0..rounds {
        let mut s = connect(&sock);
        // Pipelined writes, aligned and not, then FLUSH; all acknowledged before the kill.
        // Writes in flight together have no order (NBD), so each gets a 32 KiB slot of its own.
        let mut n = 0u64;
        let slot = SIZE / 256;
        for i in 0..256u64 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = 1 + (seed >> 40) % (slot - 4096);
            let off = i * slot + if i % 2 == 0 { 0 } else { (seed >> 8) % 4096 };
            let tag = (i as u8) ^ (round as u8).wrapping_mul(31) ^ 0x5a;
            let data: Vec<u8> = (0..len).map(|k| (k as u8) ^ tag).collect();
            model[off as usize..(off + len) as usize].copy_from_slice(&data);
            request(&mut s, 1, i, off, &data, len as u32);
            n += 1;
        }
        for _ in 0..n {
            assert_eq!(reply(&mut s).1, 0, "write acknowledged");
        }
        request(&mut s, 3, 999, 0, &[], 0);
        assert_eq!(reply(&mut s), (999, 0), "flush acknowledged");
        child.kill_9();
        child = spawn(&config, &sock);
        let mut s = connect(&sock);
        let mut got = vec![0u8; SIZE as usize];
        for (i, chunk) in got.chunks_mut(1 << 20).enumerate() {
            request(&mut s, 0, i as u64, (i as u64) << 20, &[], 1 << 20);
            assert_eq!(reply(&mut s), (i as u64, 0));
            s.read_exact(chunk).unwrap();
        }
        request(&mut s, 2, 0, 0, &[], 0); // NBD_CMD_DISC
        let lost = got.iter().zip(&model).filter(|(a, b)| a != b).count();
        assert!(lost == 0, "round {round}: {lost} bytes acknowledged by FLUSH lost across kill -9");
        eprintln!("kill -9 round {}: 0 bytes lost", round + 1);
    }
    let status = child.terminate();
    assert!(status.success(), "SIGTERM stops the server cleanly: {status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

fn tempfile_dir(test: &str) -> std::path::PathBuf {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("serve-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ctl(sock: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["ctl", "--socket"])
        .arg(sock)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn ctl_reads_and_changes_tunables_of_a_running_server() {
    let dir = tempfile_dir("ctl");
    let sock = dir.join("nbd.sock");
    let ctl_sock = dir.join("ctl.sock");
    let config = dir.join("server.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"\"\nunix_socket = \"{}\"\ncontrol_socket = \"{}\"\n\
             scheduler = \"mq-deadline\"\n[tunables]\nread_expire = 250\n\
             [[export]]\nname = \"disk\"\npath = \"{}\"\nsize = {SIZE}\n",
            sock.display(),
            ctl_sock.display(),
            dir.join("disk.img").display()
        ),
    )
    .unwrap();
    let mut child = spawn(&config, &sock);
    let text = |o: std::process::Output| {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    assert_eq!(text(ctl(&ctl_sock, &["get", "disk", "read_expire"])).trim(), "250");
    text(ctl(&ctl_sock, &["set", "disk", "read_expire", "100"]));
    assert_eq!(text(ctl(&ctl_sock, &["get", "disk", "read_expire"])).trim(), "100");
    let all = text(ctl(&ctl_sock, &["get", "disk"]));
    assert!(all.contains("# scheduler mq-deadline") && all.contains("fifo_batch"), "{all}");
    let bad = ctl(&ctl_sock, &["set", "disk", "read_expire", "soon"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("read_expire"), "{bad:?}");
    let mut s = connect(&sock);
    request(&mut s, 1, 1, 0, &[7u8; 4096], 4096);
    assert_eq!(reply(&mut s), (1, 0));
    let stats = text(ctl(&ctl_sock, &["stats"]));
    assert!(stats.lines().nth(1).unwrap().starts_with("disk"), "{stats}");
    let json = text(ctl(&ctl_sock, &["--json", "stats"]));
    assert!(json.contains("\"writes\":1"), "{json}");
    assert_eq!(text(ctl(&ctl_sock, &["stats", "--json"])), json, "--json after the command");
    let list = text(ctl(&ctl_sock, &["list"]));
    assert!(list.contains("mq-deadline"), "{list}");
    assert!(child.terminate().success());
}
