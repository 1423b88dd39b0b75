//! Group controllers for real: exports on one backing file under `controller = "mclock"` or
//! `"io.max"` or `"io.cost"`, driven by fio's nbd engine at iodepth 32 each. An mClock
//! reservation is met while a heavier-weighted neighbour saturates the file; mClock's and
//! io.max's limits hold; io.cost splits its modelled capacity by the exports' weights.

use elevator_server::{ExportConfig, Server, ServerConfig};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

mod common;

const MIB: u64 = 1 << 20;
/// How long fio may take for its 6 s run before the test gives up on the server.
const FIO_LIMIT: Duration = Duration::from_secs(120);

struct Export {
    name: &'static str,
    weight: u32,
    reservation_iops: u32,
    limit_iops: u32,
    io_max: Option<&'static str>,
}

/// Runs one fio job per export (4 KiB random reads, iodepth 32, 1 s ramp, 5 s measured);
/// returns each job's IOPS.
fn run(controller: &str, exports: &[Export]) -> Option<Vec<f64>> {
    run_with(controller, exports, &|_| {})
}

/// One run at a time: each saturates the machine's cores (a server and fio at iodepth 32),
/// and a limit test beside another's saturating neighbour could not reach its limit.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run_with(
    controller: &str,
    exports: &[Export],
    tweak: &dyn Fn(&mut ServerConfig),
) -> Option<Vec<f64>> {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !Path::new("/usr/bin/fio").exists() {
        eprintln!("SKIP: fio is not installed");
        return None;
    }
    let dir = tempfile::Builder::new()
        .prefix("nbd-mclock")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let path = dir.path().join("shared.img");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&path).unwrap();
        let block: Vec<u8> = (0..MIB).map(|i| (i * 7 + 3) as u8).collect();
        for _ in 0..64 {
            f.write_all(&block).unwrap();
        }
        f.sync_all().unwrap();
    }
    let mut c = ServerConfig::with_exports(
        exports
            .iter()
            .map(|e| ExportConfig {
                name: e.name.into(),
                path: path.clone(),
                read_only: true,
                weight: e.weight,
                reservation_iops: e.reservation_iops,
                limit_iops: e.limit_iops,
                io_max: e.io_max.map(str::to_string),
                ..Default::default()
            })
            .collect(),
    );
    c.listen = Some("127.0.0.1:0".into());
    c.controller = controller.into();
    c.scheduler = "none".into();
    c.queue_depth = 8;
    tweak(&mut c);
    let server = Server::start(c).expect("server starts");
    let port = server.local_addr().unwrap().port();
    let mut cmd = Command::new("fio");
    cmd.current_dir(dir.path()).args([
        "--ioengine=nbd",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=32",
        "--time_based=1",
        "--ramp_time=1",
        "--runtime=5",
        "--output-format=json",
        "--output=fio.json",
    ]);
    for e in exports {
        cmd.arg(format!("--name={}", e.name))
            .arg(format!("--uri=nbd://127.0.0.1:{port}/{}", e.name));
    }
    // fio runs for 6 s; a server that stops answering fails the test rather than hangs it.
    let out = common::output_within(&mut cmd, FIO_LIMIT, "fio").unwrap_or_else(|e| panic!("{e}"));
    server.shutdown();
    assert!(out.status.success(), "fio failed: {}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("fio.json")).unwrap()).unwrap();
    let iops: Vec<f64> = json["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["read"]["iops"].as_f64().unwrap())
        .collect();
    eprintln!("IOPS per export: {iops:?}");
    Some(iops)
}

#[test]
fn a_reservation_is_met_while_a_heavier_neighbour_saturates() {
    let Some(iops) = run(
        "mclock",
        &[
            Export {
                name: "reserved",
                weight: 1,
                reservation_iops: 1000,
                limit_iops: 0,
                io_max: None,
            },
            Export {
                name: "noisy",
                weight: 1000,
                reservation_iops: 0,
                limit_iops: 0,
                io_max: None,
            },
        ],
    ) else {
        return;
    };
    // By weight alone the reserved export would get a thousandth of the I/Os.
    assert!(iops[0] >= 950.0, "reserved export got {:.0} IOPS of its 1000", iops[0]);
    assert!(iops[1] > iops[0], "the noisy export got {:.0} IOPS", iops[1]);
}

/// The first export's limit of 2000 IOPS holds and is reached: over it is a failure at once;
/// under it by more than 2 % may be this machine's load (the rest of the suite runs beside
/// the server and the client), not the limiter, so it gets up to three runs to show it lets
/// the export reach its limit. `check` looks at every run's IOPS too.
fn a_limit_of_2000_iops_holds(controller: &str, exports: &[Export], check: &dyn Fn(&[f64])) {
    let mut runs = Vec::new();
    for _ in 0..3 {
        let Some(iops) = run(controller, exports) else {
            return;
        };
        assert!(iops[0] <= 2040.0, "capped export ran {:.0} IOPS, over its limit", iops[0]);
        check(&iops);
        if iops[0] >= 1960.0 {
            return;
        }
        runs.push(iops[0].round());
    }
    panic!("the capped export stayed under its limit of 2000 IOPS in every run: {runs:?}");
}

#[test]
fn an_mclock_limit_holds_on_an_idle_server() {
    a_limit_of_2000_iops_holds(
        "mclock",
        &[Export {
            name: "capped",
            weight: 100,
            reservation_iops: 0,
            limit_iops: 2000,
            io_max: None,
        }],
        &|_| {},
    );
}

#[test]
fn io_max_riops_holds_beside_an_unlimited_neighbour() {
    a_limit_of_2000_iops_holds(
        "io.max",
        &[
            Export {
                name: "capped",
                weight: 100,
                reservation_iops: 0,
                limit_iops: 0,
                io_max: Some("riops=2000"),
            },
            Export { name: "free", weight: 100, reservation_iops: 0, limit_iops: 0, io_max: None },
        ],
        &|iops| assert!(iops[1] > iops[0], "the unlimited export ran {:.0} IOPS", iops[1]),
    );
}

#[test]
fn io_cost_splits_the_modelled_capacity_by_weight() {
    // A model of 3,000 random 4 KiB reads a second and vrate held at most at 100 %: the two
    // exports share 3,000 IOPS 2:1, whatever the page cache below could do.
    let model =
        "rbps=1000000000 rseqiops=3000 rrandiops=3000 wbps=1000000000 wseqiops=3000 wrandiops=3000";
    let Some(iops) = run_with(
        "io.cost",
        &[
            Export { name: "gold", weight: 200, reservation_iops: 0, limit_iops: 0, io_max: None },
            Export {
                name: "bronze",
                weight: 100,
                reservation_iops: 0,
                limit_iops: 0,
                io_max: None,
            },
        ],
        &|c| {
            c.io_cost_qos = Some("max=100".into());
            c.io_cost_model = Some(model.into());
        },
    ) else {
        return;
    };
    let share = iops[0] / (iops[0] + iops[1]);
    assert!((share - 2.0 / 3.0).abs() <= 0.03, "gold's share {share:.3} of {iops:?}");
    assert!(iops[0] + iops[1] <= 3000.0 * 1.03, "{iops:?} above the modelled 3,000 IOPS");
}
