//! Run-time control and metrics.
//!
//! **Control socket** (`control_socket = PATH`, used by `elevator ctl`): a Unix stream socket
//! with a line protocol. Each request is one line of words, each answer one line of JSON with
//! `"ok": true` or `"ok": false, "error": "..."`:
//!
//! - `list`: exports with backing file, size, weight and scheduler;
//! - `get EXPORT [NAME]`: the scheduler tunables of the export's backing file, as
//!   `/sys/block/<dev>/queue/iosched/` lists them (`weight` is the export's group weight);
//! - `set EXPORT NAME VALUE`: range-checked by the scheduler's tunables API; `weight`, and
//!   under `controller = "mclock"` `reservation_iops` and `limit_iops`, are the export's own;
//!   under `controller = "io.max"`, `set EXPORT io.max KEY=VALUE...` changes the export's
//!   `io.max` keys;
//! - `stats`: per-export counters and latency percentiles, and the scheduler queue.
//!
//! **Metrics** (`metrics = "127.0.0.1:PORT"`): `GET /metrics` answers the same counters in
//! Prometheus' text exposition format, from a minimal HTTP/1.1 responder.

use crate::conn::Stream;
use crate::ratelog::RateLog;
use crate::stats::ExportStats;
use crate::stop::Stop;
use crate::worker::{Ctl, CtlReply, Msg};
use crate::Shared;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixListener;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
        ["trace", "on", path] => {
            let path = std::path::Path::new(path);
            if !path.is_absolute() {
                return Err(format!("trace: `{}`: give an absolute path", path.display()));
            }
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .open(path)
                .and_then(|f| {
                    drop(f);
                    std::fs::OpenOptions::new().append(true).open(path)
                })
                .map_err(|e| format!("trace: `{}`: {e}", path.display()))?;
            for i in 0..shared.exports.len() {
                let f = file.try_clone().map_err(|e| format!("trace: {e}"))?;
                match ask(shared, i, Ctl::Trace(Some(f)))? {
                    CtlReply::Done(r) => r?,
                    _ => return Err("unexpected worker reply".into()),
                }
            }
            Ok(json!({}))
        }
        ["trace", "off"] => {
            for i in 0..shared.exports.len() {
                match ask(shared, i, Ctl::Trace(None))? {
                    CtlReply::Done(r) => r?,
                    _ => return Err("unexpected worker reply".into()),
                }
            }
            Ok(json!({}))
        }
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
                if let Ok(CtlReply::Mclock(Some(g))) = ask(shared, i, Ctl::Mclock(i)) {
                    let last = out.last_mut().expect("just pushed");
                    last["reservation_iops"] = json!(g.reservation_iops);
                    last["limit_iops"] = json!(g.limit_iops);
                }
                if let Ok(CtlReply::IoMax(Some(l))) = ask(shared, i, Ctl::IoMax(i)) {
                    out.last_mut().expect("just pushed")["io.max"] = json!(l.to_string());
                }
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
                if *name == "io.latency" {
                    let CtlReply::IoLatency(Some((t, _))) = ask(shared, i, Ctl::IoLatency(i))? else {
                        return Err("io.latency needs controller = \"io.latency\"".into());
                    };
                    let v = t.map_or("target=max".to_string(), |t| format!("target={}", t / 1000));
                    return Ok(json!({ "name": name, "value": v }));
                }
                if *name == "io.max" {
                    let CtlReply::IoMax(Some(l)) = ask(shared, i, Ctl::IoMax(i))? else {
                        return Err("io.max needs controller = \"io.max\"".into());
                    };
                    return Ok(json!({ "name": name, "value": l.to_string() }));
                }
                if matches!(*name, "reservation_iops" | "limit_iops") {
                    let CtlReply::Mclock(Some(g)) = ask(shared, i, Ctl::Mclock(i))? else {
                        return Err(format!("{name} needs controller = \"mclock\""));
                    };
                    let v = if *name == "limit_iops" { g.limit_iops } else { g.reservation_iops };
                    return Ok(json!({ "name": name, "value": v.to_string() }));
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
        ["set", export, "io.latency", keys @ ..] if !keys.is_empty() => {
            let i = find(shared, export)?;
            match ask(shared, i, Ctl::SetIoLatency(i, keys.join(" ")))? {
                CtlReply::Done(r) => r.map(|_| json!({})),
                _ => Err("unexpected worker reply".into()),
            }
        }
        ["set", export, "io.max", keys @ ..] if !keys.is_empty() => {
            let i = find(shared, export)?;
            match ask(shared, i, Ctl::SetIoMax(i, keys.join(" ")))? {
                CtlReply::Done(r) => r.map(|_| json!({})),
                _ => Err("unexpected worker reply".into()),
            }
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
            if matches!(*name, "reservation_iops" | "limit_iops") {
                let max = elevator_control::mclock::MCLOCK_IOPS_MAX;
                let v: u32 = value.parse().ok().filter(|v| *v <= max).ok_or_else(|| {
                    format!("{name} `{value}`: expected an integer in 0..={max}")
                })?;
                return match ask(shared, i, Ctl::SetMclock(i, name.to_string(), v))? {
                    CtlReply::Done(r) => r.map(|_| json!({})),
                    _ => Err("unexpected worker reply".into()),
                };
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
    let _ = writeln!(
        o,
        "# HELP elevator_memory_bytes Request payload memory: held now, and the limit."
    );
    let _ = writeln!(o, "# TYPE elevator_memory_bytes gauge");
    let _ = writeln!(o, "elevator_memory_bytes{{state=\"used\"}} {}", shared.budget.used());
    let _ = writeln!(o, "elevator_memory_bytes{{state=\"limit\"}} {}", shared.memory_limit);
    let _ = writeln!(o, "# HELP elevator_group_weight The export's scheduler group weight.");
    let _ = writeln!(o, "# TYPE elevator_group_weight gauge");
    for e in &shared.exports {
        let w = e.weight.load(Ordering::Relaxed);
        let _ = writeln!(o, "elevator_group_weight{{export=\"{}\"}} {w}", esc(&e.info.name));
    }
    let mclock: Vec<(usize, elevator_control::mclock::MclockGroup)> = (0..shared.exports.len())
        .filter_map(|i| match ask(shared, i, Ctl::Mclock(i)) {
            Ok(CtlReply::Mclock(Some(g))) => Some((i, g)),
            _ => None,
        })
        .collect();
    if !mclock.is_empty() {
        let _ = writeln!(o, "# HELP elevator_mclock_iops The export's mClock reservation and limit (0: none), to read against elevator_requests_total's rate.");
        let _ = writeln!(o, "# TYPE elevator_mclock_iops gauge");
        for (i, g) in &mclock {
            let n = esc(&shared.exports[*i].info.name);
            let _ = writeln!(
                o,
                "elevator_mclock_iops{{export=\"{n}\",setting=\"reservation\"}} {}",
                g.reservation_iops
            );
            let _ = writeln!(
                o,
                "elevator_mclock_iops{{export=\"{n}\",setting=\"limit\"}} {}",
                g.limit_iops
            );
        }
    }
    let io_max: Vec<(usize, elevator_control::throttle::IoMax)> = (0..shared.exports.len())
        .filter_map(|i| match ask(shared, i, Ctl::IoMax(i)) {
            Ok(CtlReply::IoMax(Some(l))) => Some((i, l)),
            _ => None,
        })
        .collect();
    if !io_max.is_empty() {
        let _ = writeln!(o, "# HELP elevator_io_max The export's io.max limits that are set (bytes or I/Os per second).");
        let _ = writeln!(o, "# TYPE elevator_io_max gauge");
        for (i, l) in &io_max {
            let n = esc(&shared.exports[*i].info.name);
            for (key, v) in
                [("rbps", l.rbps), ("wbps", l.wbps), ("riops", l.riops), ("wiops", l.wiops)]
            {
                if let Some(v) = v {
                    let _ = writeln!(o, "elevator_io_max{{export=\"{n}\",key=\"{key}\"}} {v}");
                }
            }
        }
    }
    let io_latency: Vec<(usize, Option<u64>, u32)> = (0..shared.exports.len())
        .filter_map(|i| match ask(shared, i, Ctl::IoLatency(i)) {
            Ok(CtlReply::IoLatency(Some((t, d)))) => Some((i, t, d)),
            _ => None,
        })
        .collect();
    if !io_latency.is_empty() {
        let _ = writeln!(o, "# HELP elevator_io_latency_target_seconds The export's io.latency target, to read against its request latency.");
        let _ = writeln!(o, "# TYPE elevator_io_latency_target_seconds gauge");
        for (i, t, _) in &io_latency {
            if let Some(t) = t {
                let n = esc(&shared.exports[*i].info.name);
                let s = *t as f64 / 1e9;
                let _ = writeln!(o, "elevator_io_latency_target_seconds{{export=\"{n}\"}} {s}");
            }
        }
        let _ = writeln!(o, "# HELP elevator_io_latency_depth Requests io.latency lets the export have below it now (-1: not throttled).");
        let _ = writeln!(o, "# TYPE elevator_io_latency_depth gauge");
        for (i, _, d) in &io_latency {
            let n = esc(&shared.exports[*i].info.name);
            let v = if *d == u32::MAX { -1 } else { i64::from(*d) };
            let _ = writeln!(o, "elevator_io_latency_depth{{export=\"{n}\"}} {v}");
        }
    }
    let io_cost: Vec<(usize, crate::worker::IoCostView)> = (0..shared.exports.len())
        .filter_map(|i| match ask(shared, i, Ctl::IoCost(i)) {
            Ok(CtlReply::IoCost(Some(v))) => Some((i, v)),
            _ => None,
        })
        .collect();
    if !io_cost.is_empty() {
        let _ = writeln!(o, "# HELP elevator_iocost_vrate_ratio io.cost's vrate on the export's backing file (1: the cost model's rate).");
        let _ = writeln!(o, "# TYPE elevator_iocost_vrate_ratio gauge");
        for (i, v) in &io_cost {
            let n = esc(&shared.exports[*i].info.name);
            let r = v.vrate_ppm as f64 / 1e6;
            let _ = writeln!(o, "elevator_iocost_vrate_ratio{{export=\"{n}\"}} {r}");
        }
        let _ = writeln!(o, "# HELP elevator_iocost_hweight_ratio The export's share of its backing file under io.cost: hierarchical weight active and in use (after donation); 0 while idle.");
        let _ = writeln!(o, "# TYPE elevator_iocost_hweight_ratio gauge");
        for (i, v) in &io_cost {
            let n = esc(&shared.exports[*i].info.name);
            let (a, u) = v.hweights.unwrap_or((0, 0));
            for (kind, w) in [("active", a), ("inuse", u)] {
                let r = w as f64 / 65536.0;
                let _ = writeln!(
                    o,
                    "elevator_iocost_hweight_ratio{{export=\"{n}\",kind=\"{kind}\"}} {r}"
                );
            }
        }
        let _ = writeln!(o, "# HELP elevator_iocost_latency_target_seconds io.cost's QoS latency targets (rlat, wlat), to read against the export's request latency.");
        let _ = writeln!(o, "# TYPE elevator_iocost_latency_target_seconds gauge");
        for (i, v) in &io_cost {
            let n = esc(&shared.exports[*i].info.name);
            for (dir, us) in [("read", v.rlat_us), ("write", v.wlat_us)] {
                let t = us as f64 / 1e6;
                let _ = writeln!(o, "elevator_iocost_latency_target_seconds{{export=\"{n}\",direction=\"{dir}\"}} {t}");
            }
        }
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

/// The answer to one HTTP request head.
fn http_answer(head: &[u8], shared: &Shared, stats: &Stats) -> Vec<u8> {
    let line = String::from_utf8_lossy(head);
    let mut words = line.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let (status, body) = if method != "GET" && method != "HEAD" {
        ("405 Method Not Allowed", "only GET\n".to_string())
    } else if path == "/metrics" || path.starts_with("/metrics?") {
        ("200 OK", metrics_text(shared, stats))
    } else {
        ("404 Not Found", "try /metrics\n".to_string())
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method != "HEAD" {
        out.extend_from_slice(body.as_bytes());
    }
    out
}

/// Control clients at once; a new one past it evicts the oldest.
const MAX_CTL_CLIENTS: usize = 16;
/// Metrics clients at once; a new one past it evicts the oldest.
const MAX_METRICS_CLIENTS: usize = 64;
/// A control client idle this long (no complete line) is closed.
const CTL_IDLE: Duration = Duration::from_secs(60);
/// A metrics client has this long to send its request and take the answer.
const METRICS_DEADLINE: Duration = Duration::from_secs(5);
/// The longest control line and HTTP request head.
const MAX_LINE: usize = 8192;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ctl,
    Metrics,
}

struct Client {
    kind: Kind,
    stream: Stream,
    accepted: Instant,
    deadline: Instant,
    input: Vec<u8>,
    out: Vec<u8>,
    /// Close once `out` is sent.
    closing: bool,
}

/// The control socket and the metrics listener, served by one thread in one `poll(2)` loop
/// over non-blocking sockets: a client that sends a byte a second, or never reads, holds
/// nobody else up; each has a deadline (metrics: 5 s for the whole exchange, control: 60 s
/// idle) and their number is bounded (the oldest is closed for a new one).
pub(crate) struct ControlLoop {
    stop: Arc<Stop>,
    shared: Arc<Shared>,
    stats: Stats,
    ctl: Option<UnixListener>,
    metrics: Option<TcpListener>,
    clients: Vec<Client>,
    log_refused: RateLog,
}

impl ControlLoop {
    pub fn new(
        stop: Arc<Stop>,
        shared: Arc<Shared>,
        stats: Stats,
        ctl: Option<UnixListener>,
        metrics: Option<TcpListener>,
    ) -> std::io::Result<ControlLoop> {
        if let Some(l) = &ctl {
            l.set_nonblocking(true)?;
        }
        if let Some(l) = &metrics {
            l.set_nonblocking(true)?;
        }
        Ok(ControlLoop {
            stop,
            shared,
            stats,
            ctl,
            metrics,
            clients: Vec::new(),
            log_refused: RateLog::new("control or metrics client refused", Duration::from_secs(1)),
        })
    }

    pub fn run(mut self) {
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut paused_until: Option<Instant> = None;
        while !self.stop.is_set() {
            let now = Instant::now();
            self.clients.retain(|c| c.deadline > now);
            self.log_refused.flush(now);
            fds.clear();
            fds.push(libc::pollfd { fd: self.stop.raw_fd(), events: libc::POLLIN, revents: 0 });
            let listening = paused_until.is_none_or(|t| t <= now);
            let lfd = |fd: Option<i32>| libc::pollfd {
                fd: if listening { fd.unwrap_or(-1) } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            };
            fds.push(lfd(self.ctl.as_ref().map(|l| l.as_raw_fd())));
            fds.push(lfd(self.metrics.as_ref().map(|l| l.as_raw_fd())));
            let mut wake = paused_until.filter(|t| *t > now);
            if let Some(t) = self.log_refused.next_flush() {
                wake = Some(wake.map_or(t, |w| w.min(t)));
            }
            for c in &self.clients {
                wake = Some(wake.map_or(c.deadline, |w| w.min(c.deadline)));
                let mut events = 0;
                if c.out.is_empty() && !c.closing {
                    events |= libc::POLLIN;
                } else if !c.out.is_empty() {
                    events |= libc::POLLOUT;
                }
                fds.push(libc::pollfd { fd: c.stream.raw_fd(), events, revents: 0 });
            }
            let timeout = wake.map_or(-1, |t| {
                t.saturating_duration_since(now).as_millis().min(60_000) as i32 + 1
            });
            // SAFETY: a valid array of pollfds for the duration of the call (fd -1 is skipped).
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
            if n < 0 || self.stop.is_set() {
                continue;
            }
            let mut gone = Vec::new();
            for (i, fd) in fds[3..].iter().enumerate() {
                if fd.revents != 0 && !self.serve(i) {
                    gone.push(i);
                }
            }
            for i in gone.into_iter().rev() {
                self.clients.swap_remove(i);
            }
            for (k, kind) in [(1, Kind::Ctl), (2, Kind::Metrics)] {
                if fds[k].revents != 0 && !self.accept(kind) {
                    // EMFILE and the like: stop listening for a moment rather than spin.
                    paused_until = Some(Instant::now() + Duration::from_millis(100));
                }
            }
        }
    }

    /// Accepts what is waiting; `false` on an error other than "nothing to accept".
    fn accept(&mut self, kind: Kind) -> bool {
        for _ in 0..16 {
            let got = match kind {
                Kind::Ctl => match &self.ctl {
                    Some(l) => l.accept().map(|(s, _)| {
                        let uid = crate::access::peer_uid(&s);
                        (Stream::Unix(s), uid)
                    }),
                    None => return true,
                },
                Kind::Metrics => match &self.metrics {
                    Some(l) => l.accept().map(|(s, _)| (Stream::Tcp(s), None)),
                    None => return true,
                },
            };
            let (stream, uid) = match got {
                Ok(x) => x,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.log_refused.event(Instant::now(), "accept failed", &e);
                    return false;
                }
            };
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            let now = Instant::now();
            let (cap, life) = match kind {
                Kind::Ctl => (MAX_CTL_CLIENTS, CTL_IDLE),
                Kind::Metrics => (MAX_METRICS_CLIENTS, METRICS_DEADLINE),
            };
            let same: Vec<usize> =
                (0..self.clients.len()).filter(|&i| self.clients[i].kind == kind).collect();
            if same.len() >= cap {
                if let Some(&oldest) = same.iter().min_by_key(|&&i| self.clients[i].accepted) {
                    self.clients.swap_remove(oldest);
                    self.log_refused.event(now, "oldest closed (too many clients)", &"");
                }
            }
            let mut c = Client {
                kind,
                stream,
                accepted: now,
                deadline: now + life,
                input: Vec::new(),
                out: Vec::new(),
                closing: false,
            };
            if kind == Kind::Ctl && !crate::access::control_allowed(uid) {
                let who = uid.map_or("unknown".to_string(), |u| u.to_string());
                let detail = format_args!("uid {who}");
                self.log_refused.event(now, "control client not allowed", &detail);
                let e = json!({ "ok": false, "error": format!("permission denied: uid {who}") });
                c.out = format!("{e}\n").into_bytes();
                c.closing = true;
            }
            self.clients.push(c);
        }
        true
    }

    /// Reads, answers and writes for client `i`; `false`: close it.
    fn serve(&mut self, i: usize) -> bool {
        let c = &mut self.clients[i];
        if c.out.is_empty() && !c.closing {
            let mut buf = [0u8; 4096];
            match c.stream.read(&mut buf) {
                Ok(0) => return false,
                Ok(n) => c.input.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
            match c.kind {
                Kind::Metrics => {
                    if let Some(end) = c.input.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = c.input[..end].to_vec();
                        let answer = http_answer(&head, &self.shared, &self.stats);
                        let c = &mut self.clients[i];
                        c.out = answer;
                        c.closing = true;
                    } else if c.input.len() > MAX_LINE {
                        c.out = b"HTTP/1.1 431 Request Header Fields Too Large\r\n\
                                  Connection: close\r\nContent-Length: 0\r\n\r\n"
                            .to_vec();
                        c.closing = true;
                    }
                }
                Kind::Ctl => {
                    if let Some(end) = c.input.iter().position(|&b| b == b'\n') {
                        let line: Vec<u8> = c.input.drain(..=end).collect();
                        let line = String::from_utf8_lossy(&line[..end]).trim().to_string();
                        let answer = handle_line(&line, &self.shared, &self.stats);
                        tracing::debug!(request = %line, ok = %answer["ok"], "control");
                        let c = &mut self.clients[i];
                        c.out = format!("{answer}\n").into_bytes();
                        c.deadline = Instant::now() + CTL_IDLE;
                    } else if c.input.len() > MAX_LINE {
                        let e = json!({ "ok": false, "error": "request line too long" });
                        c.out = format!("{e}\n").into_bytes();
                        c.closing = true;
                    }
                }
            }
        }
        let c = &mut self.clients[i];
        while !c.out.is_empty() {
            match c.stream.write(&c.out) {
                Ok(0) => return false,
                Ok(n) => {
                    c.out.drain(..n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        !c.closing
    }
}
