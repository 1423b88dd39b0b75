//! Run-time control and metrics.
//!
//! **Control socket** (`control_socket = PATH`, used by `elevator ctl`): a Unix stream socket
//! with a line protocol. Each request is one line of words, each answer one line of JSON with
//! `"ok": true` or `"ok": false, "error": "..."`:
//!
//! - `list`: exports with backing file, size, weight and scheduler;
//! - `get EXPORT [NAME]`: the scheduler tunables of the export's backing file, as
//!   `/sys/block/<dev>/queue/iosched/` lists them (`weight` is the export's group weight);
//! - `set EXPORT NAME VALUE`: range-checked by the scheduler's tunables API;
//! - `stats`: per-export counters and latency percentiles, and the scheduler queue.
//!
//! **Metrics** (`metrics = "127.0.0.1:PORT"`): `GET /metrics` answers the same counters in
//! Prometheus' text exposition format, from a minimal HTTP/1.1 responder.

use crate::stats::ExportStats;
use crate::stop::Stop;
use crate::worker::{Ctl, CtlReply, Msg};
use crate::Shared;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::fd::AsFd;
use std::os::unix::net::UnixListener;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Stats = Arc<Vec<Mutex<ExportStats>>>;

fn ask(shared: &Shared, export: usize, c: Ctl) -> Result<CtlReply, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    if !shared.exports[export].worker.send(Msg::Ctl(c, tx)) {
        return Err("the export's worker has stopped".into());
    }
    rx.recv_timeout(Duration::from_secs(5)).map_err(|_| "the worker did not answer".to_string())
}

fn find(shared: &Shared, name: &str) -> Result<usize, String> {
    shared
        .exports
        .iter()
        .position(|e| e.info.name == name)
        .ok_or_else(|| format!("no export `{name}`"))
}

/// Answers one request line.
pub(crate) fn handle_line(line: &str, shared: &Shared, stats: &Stats) -> Value {
    match request(line, shared, stats) {
        Ok(mut v) => {
            v["ok"] = json!(true);
            v
        }
        Err(e) => json!({ "ok": false, "error": e }),
    }
}

fn request(line: &str, shared: &Shared, stats: &Stats) -> Result<Value, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["list"] => {
            let mut out = Vec::new();
            for (i, e) in shared.exports.iter().enumerate() {
                let scheduler = match ask(shared, i, Ctl::Tunables)? {
                    CtlReply::Tunables { scheduler, .. } => scheduler,
                    _ => "",
                };
                out.push(json!({
                    "name": e.info.name,
                    "path": e.path.display().to_string(),
                    "size": e.info.size,
                    "read_only": e.read_only,
                    "weight": e.weight.load(Ordering::Relaxed),
                    "scheduler": scheduler,
                }));
            }
            Ok(json!({ "exports": out }))
        }
        ["get", export, rest @ ..] if rest.len() <= 1 => {
            let i = find(shared, export)?;
            let weight = shared.exports[i].weight.load(Ordering::Relaxed);
            let CtlReply::Tunables { scheduler, tunables } = ask(shared, i, Ctl::Tunables)? else {
                return Err("unexpected worker reply".into());
            };
            if let [name] = rest {
                if *name == "weight" {
                    return Ok(json!({ "name": "weight", "value": weight.to_string() }));
                }
                let t = tunables.iter().find(|t| t.name == *name).ok_or_else(|| {
                    let known: Vec<&str> = tunables.iter().map(|t| t.name.as_str()).collect();
                    format!(
                        "scheduler `{scheduler}` has no tunable `{name}`; its tunables are: {}",
                        known.join(", ")
                    )
                })?;
                return Ok(json!({ "name": t.name, "value": t.value }));
            }
            let list: Vec<Value> = tunables
                .iter()
                .map(|t| {
                    json!({
                        "name": t.name, "value": t.value, "unit": t.unit, "default": t.default,
                        "range": t.range, "description": t.description,
                    })
                })
                .collect();
            Ok(json!({ "export": export, "scheduler": scheduler, "weight": weight, "tunables": list }))
        }
        ["set", export, name, value] => {
            let i = find(shared, export)?;
            if *name == "weight" {
                let w: u32 = value
                    .parse()
                    .ok()
                    .filter(|w| (1..=10_000).contains(w))
                    .ok_or_else(|| format!("weight `{value}`: expected an integer in 1..=10000"))?;
                let path = shared.exports[i].info.name.clone();
                match ask(shared, i, Ctl::SetWeight(i, path, w))? {
                    CtlReply::Done(r) => r?,
                    _ => return Err("unexpected worker reply".into()),
                }
                shared.exports[i].weight.store(w, Ordering::Relaxed);
                return Ok(json!({}));
            }
            match ask(shared, i, Ctl::SetTunable(name.to_string(), value.to_string()))? {
                CtlReply::Done(r) => r.map(|_| json!({})),
                _ => Err("unexpected worker reply".into()),
            }
        }
        ["stats"] => {
            let mut out = Vec::new();
            for (i, s) in stats.iter().enumerate() {
                let snap = s.lock().map_err(|_| "stats lock poisoned")?.snapshot();
                let mut v = serde_json::to_value(&snap).map_err(|e| e.to_string())?;
                if let Ok(CtlReply::Queue { queued, inflight }) = ask(shared, i, Ctl::Queue) {
                    v["device_queued"] = json!(queued);
                    v["device_inflight"] = json!(inflight);
                }
                v["weight"] = json!(shared.exports[i].weight.load(Ordering::Relaxed));
                out.push(v);
            }
            Ok(json!({ "exports": out }))
        }
        [] => Err("empty request".into()),
        _ => Err(format!(
            "cannot parse `{line}`: expected list | get EXPORT [NAME] | set EXPORT NAME VALUE | stats"
        )),
    }
}

pub(crate) fn serve_ctl(l: UnixListener, stop: &Stop, shared: Arc<Shared>, stats: Stats) {
    let accept = || l.accept().map(|(s, _)| s);
    stop.accept_each(l.as_fd(), "control", accept, |s| {
        let (shared, stats) = (shared.clone(), stats.clone());
        let _ = s.set_nonblocking(false);
        let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
        std::thread::spawn(move || {
            let Ok(mut w) = s.try_clone() else { return };
            for line in BufReader::new(s).lines() {
                let Ok(line) = line else { break };
                let answer = handle_line(&line, &shared, &stats);
                tracing::debug!(request = %line, ok = %answer["ok"], "control");
                if writeln!(w, "{answer}").is_err() {
                    break;
                }
            }
        });
    });
}

/// The Prometheus text exposition of the server's counters.
pub(crate) fn metrics_text(shared: &Shared, stats: &Stats) -> String {
    use std::fmt::Write as _;
    let snaps: Vec<_> = stats.iter().filter_map(|s| s.lock().ok().map(|s| s.snapshot())).collect();
    let mut o = String::new();
    let esc = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
    let _ = writeln!(
        o,
        "# HELP elevator_requests_total NBD requests completed, by export and operation."
    );
    let _ = writeln!(o, "# TYPE elevator_requests_total counter");
    for s in &snaps {
        let n = esc(&s.name);
        for (op, v) in [
            ("read", s.reads),
            ("write", s.writes),
            ("flush", s.flushes),
            ("trim", s.trims),
            ("write_zeroes", s.write_zeroes),
        ] {
            let _ = writeln!(o, "elevator_requests_total{{export=\"{n}\",op=\"{op}\"}} {v}");
        }
    }
    let _ =
        writeln!(o, "# HELP elevator_bytes_total Payload bytes moved, by export and direction.");
    let _ = writeln!(o, "# TYPE elevator_bytes_total counter");
    for s in &snaps {
        let n = esc(&s.name);
        let _ = writeln!(o, "elevator_bytes_total{{export=\"{n}\",op=\"read\"}} {}", s.read_bytes);
        let _ =
            writeln!(o, "elevator_bytes_total{{export=\"{n}\",op=\"write\"}} {}", s.write_bytes);
    }
    let _ = writeln!(o, "# HELP elevator_errors_total Requests answered with an error.");
    let _ = writeln!(o, "# TYPE elevator_errors_total counter");
    for s in &snaps {
        let _ = writeln!(o, "elevator_errors_total{{export=\"{}\"}} {}", esc(&s.name), s.errors);
    }
    let _ = writeln!(o, "# HELP elevator_request_latency_seconds Arrival to reply, per export.");
    let _ = writeln!(o, "# TYPE elevator_request_latency_seconds summary");
    for s in &snaps {
        let n = esc(&s.name);
        for (q, v) in [
            ("0.5", s.latency_p50_ns),
            ("0.9", s.latency_p90_ns),
            ("0.99", s.latency_p99_ns),
            ("0.999", s.latency_p999_ns),
        ] {
            let secs = v as f64 / 1e9;
            let _ = writeln!(
                o,
                "elevator_request_latency_seconds{{export=\"{n}\",quantile=\"{q}\"}} {secs}"
            );
        }
        let sum = s.latency_sum_ns as f64 / 1e9;
        let _ = writeln!(o, "elevator_request_latency_seconds_sum{{export=\"{n}\"}} {sum}");
        let _ = writeln!(
            o,
            "elevator_request_latency_seconds_count{{export=\"{n}\"}} {}",
            s.latency_count
        );
    }
    let _ = writeln!(o, "# HELP elevator_group_weight The export's scheduler group weight.");
    let _ = writeln!(o, "# TYPE elevator_group_weight gauge");
    for e in &shared.exports {
        let w = e.weight.load(Ordering::Relaxed);
        let _ = writeln!(o, "elevator_group_weight{{export=\"{}\"}} {w}", esc(&e.info.name));
    }
    let _ = writeln!(o, "# HELP elevator_device_queue Requests held by the export's scheduler and in flight below it.");
    let _ = writeln!(o, "# TYPE elevator_device_queue gauge");
    for (i, e) in shared.exports.iter().enumerate() {
        if let Ok(CtlReply::Queue { queued, inflight }) = ask(shared, i, Ctl::Queue) {
            let n = esc(&e.info.name);
            let _ =
                writeln!(o, "elevator_device_queue{{export=\"{n}\",state=\"queued\"}} {queued}");
            let _ = writeln!(
                o,
                "elevator_device_queue{{export=\"{n}\",state=\"inflight\"}} {inflight}"
            );
        }
    }
    o
}

pub(crate) fn serve_metrics(l: TcpListener, stop: &Stop, shared: Arc<Shared>, stats: Stats) {
    let accept = || l.accept().map(|(s, _)| s);
    stop.accept_each(l.as_fd(), "metrics", accept, |mut s| {
        let _ = s.set_nonblocking(false);
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        // One request per connection: read the head, answer, close.
        let mut head = Vec::new();
        let mut b = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 8192 {
            match s.read(&mut b) {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&b[..n]),
            }
        }
        let line = String::from_utf8_lossy(&head);
        let mut words = line.split_whitespace();
        let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        let (status, body) = if method != "GET" && method != "HEAD" {
            ("405 Method Not Allowed", "only GET\n".to_string())
        } else if path == "/metrics" || path.starts_with("/metrics?") {
            ("200 OK", metrics_text(&shared, &stats))
        } else {
            ("404 Not Found", "try /metrics\n".to_string())
        };
        let _ = write!(
            s,
            "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        if method != "HEAD" {
            let _ = s.write_all(body.as_bytes());
        }
    });
}
