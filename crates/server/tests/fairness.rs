//! Proportional share for real: two exports on one backing file, weights 2:1, driven by fio's
//! nbd engine at iodepth 32 each, with the server's dispatch depth capped so the scheduler
//! holds the queue.

use elevator_server::{ExportConfig, Server, ServerConfig};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

mod common;

const MIB: u64 = 1 << 20;
/// How long fio may take for its 6 s run before the test gives up on the server.
const FIO_LIMIT: Duration = Duration::from_secs(120);

fn workdir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("nbd-fair").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// One fio run at a time: the two tests would otherwise share the machine's cores, and on a
/// machine of two a run that loses its client threads for a while loses its shares with them.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run_shares(scheduler: &str, tunables: &[(&str, i64)], depth: u32) -> Option<(f64, u64, u64)> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !Path::new("/usr/bin/fio").exists() {
        eprintln!("SKIP: fio is not installed");
        return None;
    }
    let dir = workdir();
    let path = dir.path().join("shared.img");
    // Real data, so that reads reach the device rather than hole zero-filling.
    let size = 64 * MIB;
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&path).unwrap();
        let block: Vec<u8> = (0..MIB).map(|i| (i * 7 + 3) as u8).collect();
        for _ in 0..size / MIB {
            f.write_all(&block).unwrap();
        }
        f.sync_all().unwrap();
    }
    let ex = |name: &str, weight| ExportConfig {
        name: name.into(),
        path: path.clone(),
        size: None,
        read_only: true,
        weight,
        description: String::new(),
        ..Default::default()
    };
    let mut c = ServerConfig::with_exports(vec![ex("heavy", 1000), ex("light", 500)]);
    c.listen = Some("127.0.0.1:0".into());
    c.scheduler = scheduler.into();
    c.queue_depth = depth;
    for (k, v) in tunables {
        c.tunables.insert((*k).into(), toml::Value::Integer(*v));
    }
    let server = Server::start(c).expect("server starts");
    let port = server.local_addr().unwrap().port();
    let mut cmd = Command::new("fio");
    cmd.current_dir(dir.path());
    cmd.args([
        "--ioengine=nbd",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=32",
        "--time_based=1",
        // Shares in the steady state: the clients connect one after the other, and a group
        // that arrives late starts behind (CFQ's vdisktime = last + 200 ms).
        "--ramp_time=1",
        "--runtime=5",
        "--output-format=json",
        "--output=fio.json",
        "--group_reporting=0",
    ]);
    for name in ["heavy", "light"] {
        cmd.arg(format!("--name={name}")).arg(format!("--uri=nbd://127.0.0.1:{port}/{name}"));
    }
    // fio runs for 6 s; a server that stops answering fails the test rather than hangs it.
    let out = common::output_within(&mut cmd, FIO_LIMIT, "fio")
        .unwrap_or_else(|e| panic!("{e}\nserver: {:?}", server.stats()));
    let stats = server.stats();
    server.shutdown();
    assert!(out.status.success(), "fio failed: {}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("fio.json")).unwrap())
            .expect("fio json");
    let ios: Vec<u64> = json["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["read"]["total_ios"].as_u64().unwrap())
        .collect();
    eprintln!("{scheduler} {tunables:?} depth {depth}: fio ios {ios:?}, server {stats:?}");
    let share = ios[0] as f64 / (ios[0] + ios[1]) as f64 * 100.0;
    eprintln!("heavy share {share:.1} %");
    Some((share, ios[0], ios[1]))
}

#[test]
fn cfq_groups_share_two_to_one() {
    // A fast device: slice_idle=0 puts CFQ in IOPS mode (groups are charged requests, not
    // time), as the kernel's blkio documentation recommends for SSDs; quantum 8 lets a queue
    // fill the 8 dispatch slots so that CFQ sees a queueing device (hw_tag). group_idle keeps
    // a group's turn while its client is descheduled (the test machine may be busy: a group
    // whose queue empties leaves the service tree and loses its credit); short slices make
    // the turns fine-grained against the 5 s window.
    let tun = [("slice_idle", 0), ("quantum", 8), ("group_idle", 50), ("slice_sync", 25)];
    let Some((share, a, b)) = run_shares("cfq", &tun, 8) else { return };
    assert!(a > 0 && b > 0);
    assert!((share - 66.7).abs() <= 3.0, "heavy export got {share:.1} % of the I/Os");
}

#[test]
fn bfq_groups_share_two_to_one() {
    // The same two exports under BFQ: each export is a group (weights 1000 and 500), each
    // connection a queue; B-WF2Q+ shares the service 2:1 between the groups. Budgets of 2048
    // sectors make the turns fine-grained against the 5 s window, as the CFQ test's short
    // slices do.
    let Some((share, a, b)) = run_shares("bfq", &[("max_budget", 2048)], 8) else { return };
    assert!(a > 0 && b > 0);
    assert!((share - 66.7).abs() <= 3.0, "heavy export got {share:.1} % of the I/Os");
}
