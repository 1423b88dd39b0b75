//! The control socket's line protocol and the Prometheus endpoint, in process.

use elevator_server::{ExportConfig, Server, ServerConfig};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;

fn ask(sock: &std::path::Path, line: &str) -> Value {
    let mut s = UnixStream::connect(sock).unwrap();
    writeln!(s, "{line}").unwrap();
    let mut answer = String::new();
    BufReader::new(s).read_line(&mut answer).unwrap();
    serde_json::from_str(&answer).unwrap()
}

fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn ctl_protocol_and_metrics() {
    let dir = tempfile::Builder::new().tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ex = |name: &str, weight| ExportConfig {
        name: name.into(),
        path: dir.path().join("shared.img"),
        size: Some(1 << 20),
        read_only: false,
        weight,
        description: String::new(),
        ..Default::default()
    };
    let mut c = ServerConfig::with_exports(vec![ex("a", 800), ex("b", 200)]);
    c.listen = Some("127.0.0.1:0".into());
    c.scheduler = "cfq".into();
    let sock = dir.path().join("ctl.sock");
    c.control_socket = Some(sock.clone());
    c.metrics = Some("127.0.0.1:0".into());
    let server = Server::start(c).unwrap();

    let list = ask(&sock, "list");
    assert_eq!(list["ok"], true, "{list}");
    assert_eq!(list["exports"][1]["name"], "b");
    assert_eq!(list["exports"][1]["weight"], 200);
    assert_eq!(list["exports"][0]["scheduler"], "cfq");

    let all = ask(&sock, "get a");
    assert_eq!(all["scheduler"], "cfq");
    let names: Vec<&str> =
        all["tunables"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"slice_idle") && names.contains(&"quantum"), "{names:?}");
    assert_eq!(ask(&sock, "get a slice_idle")["value"], "8");
    // Set, range-checked by the scheduler; both exports share the file, so one scheduler.
    assert_eq!(ask(&sock, "set a slice_idle 0")["ok"], true);
    assert_eq!(ask(&sock, "get b slice_idle")["value"], "0");
    let bad = ask(&sock, "set a quantum 0");
    assert_eq!(bad["ok"], false);
    assert!(bad["error"].as_str().unwrap().contains("1..=1024"), "{bad}");
    let unknown = ask(&sock, "set a read_expire 5");
    assert!(unknown["error"].as_str().unwrap().contains("no tunable"), "{unknown}");
    assert_eq!(ask(&sock, "set b weight 300")["ok"], true);
    assert_eq!(ask(&sock, "get b weight")["value"], "300");
    assert_eq!(ask(&sock, "set b weight 0")["ok"], false);
    assert_eq!(ask(&sock, "get nope")["ok"], false);
    assert_eq!(ask(&sock, "frobnicate")["ok"], false);

    // Some I/O, then the counters.
    let out = std::process::Command::new("/usr/bin/nbdsh")
        .env("PATH", "/usr/bin:/bin")
        .args(["-u", &format!("nbd://{}/a", server.local_addr().unwrap())])
        .args(["-c", "h.pwrite(b'x' * 8192, 0)\nh.flush()\nassert h.pread(8192, 0) == b'x' * 8192"])
        .output();
    let did_io = matches!(&out, Ok(o) if o.status.success());
    let stats = ask(&sock, "stats");
    assert_eq!(stats["ok"], true, "{stats}");
    let a = &stats["exports"][0];
    assert_eq!(a["weight"], 800);
    if did_io {
        assert_eq!(a["writes"], 1);
        assert_eq!(a["reads"], 1);
        assert!(a["latency_p50_ns"].as_u64().unwrap() > 0);
    }

    let addr = server.metrics_addr().unwrap();
    let m = http_get(addr, "/metrics");
    assert!(m.starts_with("HTTP/1.1 200 OK"), "{m}");
    assert!(m.contains("# TYPE elevator_requests_total counter"), "{m}");
    assert!(m.contains("elevator_group_weight{export=\"b\"} 300"), "{m}");
    assert!(m.contains("elevator_request_latency_seconds{export=\"a\",quantile=\"0.99\"}"), "{m}");
    assert!(m.contains("elevator_device_queue{export=\"a\",state=\"queued\"} 0"), "{m}");
    if did_io {
        assert!(m.contains("elevator_requests_total{export=\"a\",op=\"write\"} 1"), "{m}");
        assert!(m.contains("elevator_bytes_total{export=\"a\",op=\"read\"} 8192"), "{m}");
    }
    assert!(http_get(addr, "/").starts_with("HTTP/1.1 404"));
    server.shutdown();
    assert!(!sock.exists(), "control socket removed at shutdown");
}

#[test]
fn mclock_settings_by_ctl_and_in_metrics() {
    let dir = tempfile::Builder::new().tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ex = |name: &str, reservation_iops, limit_iops| ExportConfig {
        name: name.into(),
        path: dir.path().join("shared.img"),
        size: Some(1 << 20),
        weight: 100,
        reservation_iops,
        limit_iops,
        ..Default::default()
    };
    let mut c = ServerConfig::with_exports(vec![ex("a", 100, 0), ex("b", 0, 500)]);
    c.listen = Some("127.0.0.1:0".into());
    c.controller = "mclock".into();
    let sock = dir.path().join("ctl.sock");
    c.control_socket = Some(sock.clone());
    c.metrics = Some("127.0.0.1:0".into());
    let server = Server::start(c).unwrap();

    let list = ask(&sock, "list");
    assert_eq!(list["exports"][0]["reservation_iops"], 100, "{list}");
    assert_eq!(list["exports"][1]["limit_iops"], 500, "{list}");
    assert_eq!(ask(&sock, "set b limit_iops 2000")["ok"], true);
    assert_eq!(ask(&sock, "get b limit_iops")["value"], "2000");
    assert_eq!(ask(&sock, "set a reservation_iops 300")["ok"], true);
    assert_eq!(ask(&sock, "get a reservation_iops")["value"], "300");
    // A reservation above the limit, or a value past the named maximum, is refused.
    let over = ask(&sock, "set b reservation_iops 3000");
    assert!(over["error"].as_str().unwrap().contains("above limit_iops 2000"), "{over}");
    let big = ask(&sock, "set b limit_iops 99999999");
    assert!(big["error"].as_str().unwrap().contains("0..=10000000"), "{big}");
    assert_eq!(ask(&sock, "set b weight 300")["ok"], true);

    let m = http_get(server.metrics_addr().unwrap(), "/metrics");
    assert!(m.contains("elevator_mclock_iops{export=\"a\",setting=\"reservation\"} 300"), "{m}");
    assert!(m.contains("elevator_mclock_iops{export=\"b\",setting=\"limit\"} 2000"), "{m}");
    server.shutdown();
}

#[test]
fn io_max_by_ctl_and_in_metrics() {
    let dir = tempfile::Builder::new().tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ex = |name: &str, io_max: Option<&str>| ExportConfig {
        name: name.into(),
        path: dir.path().join("shared.img"),
        size: Some(1 << 20),
        weight: 100,
        io_max: io_max.map(str::to_string),
        ..Default::default()
    };
    let mut c = ServerConfig::with_exports(vec![ex("a", Some("riops=2000")), ex("b", None)]);
    c.listen = Some("127.0.0.1:0".into());
    c.controller = "io.max".into();
    let sock = dir.path().join("ctl.sock");
    c.control_socket = Some(sock.clone());
    c.metrics = Some("127.0.0.1:0".into());
    let server = Server::start(c).unwrap();

    assert_eq!(ask(&sock, "get a io.max")["value"], "rbps=max wbps=max riops=2000 wiops=max");
    assert_eq!(ask(&sock, "set b io.max wbps=1048576 wiops=50")["ok"], true);
    assert_eq!(ask(&sock, "get b io.max")["value"], "rbps=max wbps=1048576 riops=max wiops=50");
    assert_eq!(
        ask(&sock, "list")["exports"][1]["io.max"],
        "rbps=max wbps=1048576 riops=max wiops=50"
    );
    let bad = ask(&sock, "set a io.max riops=abc");
    assert_eq!(bad["error"], "io.max: `riops=abc`: expected an integer or `max`", "{bad}");
    assert_eq!(ask(&sock, "get a io.max")["value"], "rbps=max wbps=max riops=2000 wiops=max");
    let m = http_get(server.metrics_addr().unwrap(), "/metrics");
    assert!(m.contains("elevator_io_max{export=\"a\",key=\"riops\"} 2000"), "{m}");
    assert!(m.contains("elevator_io_max{export=\"b\",key=\"wiops\"} 50"), "{m}");
    server.shutdown();
}

#[test]
fn io_cost_weight_by_ctl_and_in_metrics() {
    let dir = tempfile::Builder::new().tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ex = |name: &str, weight| ExportConfig {
        name: name.into(),
        path: dir.path().join("shared.img"),
        size: Some(1 << 20),
        weight,
        ..Default::default()
    };
    let mut c = ServerConfig::with_exports(vec![ex("a", 200), ex("b", 100)]);
    c.listen = Some("127.0.0.1:0".into());
    c.controller = "io.cost".into();
    c.io_cost_qos = Some("rpct=95 rlat=5000 wpct=95 wlat=7000".into());
    let sock = dir.path().join("ctl.sock");
    c.control_socket = Some(sock.clone());
    c.metrics = Some("127.0.0.1:0".into());
    let server = Server::start(c).unwrap();
    assert_eq!(ask(&sock, "set b weight 5000")["ok"], true);
    assert_eq!(ask(&sock, "get b weight")["value"], "5000");
    let m = http_get(server.metrics_addr().unwrap(), "/metrics");
    assert!(m.contains("elevator_iocost_vrate_ratio{export=\"a\"} 1"), "{m}");
    assert!(
        m.contains(
            "elevator_iocost_latency_target_seconds{export=\"b\",direction=\"write\"} 0.007"
        ),
        "{m}"
    );
    // Nobody has issued I/O: no export is active, its shares read 0.
    assert!(m.contains("elevator_iocost_hweight_ratio{export=\"a\",kind=\"active\"} 0"), "{m}");
    assert!(m.contains("elevator_group_weight{export=\"b\"} 5000"), "{m}");
    server.shutdown();
}

#[test]
fn io_latency_by_ctl_and_in_metrics() {
    let dir = tempfile::Builder::new().tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ex = |name: &str, io_latency: Option<&str>| ExportConfig {
        name: name.into(),
        path: dir.path().join("shared.img"),
        size: Some(1 << 20),
        weight: 100,
        io_latency: io_latency.map(str::to_string),
        ..Default::default()
    };
    let mut c = ServerConfig::with_exports(vec![ex("web", Some("target=2000")), ex("batch", None)]);
    c.listen = Some("127.0.0.1:0".into());
    c.controller = "io.latency".into();
    let sock = dir.path().join("ctl.sock");
    c.control_socket = Some(sock.clone());
    c.metrics = Some("127.0.0.1:0".into());
    let server = Server::start(c).unwrap();
    assert_eq!(ask(&sock, "get web io.latency")["value"], "target=2000");
    assert_eq!(ask(&sock, "get batch io.latency")["value"], "target=max");
    assert_eq!(ask(&sock, "set web io.latency target=500")["ok"], true);
    assert_eq!(ask(&sock, "get web io.latency")["value"], "target=500");
    let bad = ask(&sock, "set web io.latency target=abc");
    assert!(bad["error"].as_str().unwrap().contains("`target=abc`"), "{bad}");
    let m = http_get(server.metrics_addr().unwrap(), "/metrics");
    assert!(m.contains("elevator_io_latency_target_seconds{export=\"web\"} 0.0005"), "{m}");
    assert!(m.contains("elevator_io_latency_depth{export=\"batch\"} -1"), "{m}");
    server.shutdown();
}
