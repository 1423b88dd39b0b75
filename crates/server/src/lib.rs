//! elevator's real backend: an NBD server whose requests are scheduled by the same
//! [`elevator_sched::Scheduler`] code the simulator drives, and executed with io_uring.
//!
//! Threads: the gate (`gate.rs`: accepts on every NBD listener and runs every handshake in
//! one event loop; the protocol is parsed by the sans-I/O [`elevator_nbd`] codec), the
//! control loop (`control.rs`: control socket and metrics), one worker per backing file that
//! owns the scheduler and the io_uring and runs the transmission phase of its connections in
//! the same event loop (see `worker.rs`), and a TLS pump per TLS connection in the
//! transmission phase (at most `max_connections`). Each export is a scheduler group
//! (`Owner.cgroup` = export index + 1, declared with `Scheduler::set_group`), each connection
//! an I/O context (`Owner.pid` = `Owner.io_context` = connection id), which exits
//! (`Scheduler::exited`) when the connection is closed and its last reply sent.

mod access;
mod budget;
mod buffers;
mod config;
mod conn;
mod control;
mod gate;
mod ratelog;
mod readahead;
mod stats;
mod stop;
mod tls;
mod trace;
mod worker;

pub use config::{
    parse_bytes, ExportConfig, ServerConfig, TlsSetting, HANDSHAKE_TIMEOUT_MS_MAX,
    MAX_CONNECTIONS_LIMIT, MAX_HANDSHAKES_LIMIT, MEMORY_LIMIT_MIN, STALL_TIMEOUT_MS_MAX,
};
pub use stats::ExportStatsSnapshot;

use elevator_control::iocost::{IoCost, IoCostGroup};
use elevator_control::iolatency::{parse_io_latency_keys, IoLatency, IoLatencyGroup};
use elevator_control::mclock::{Mclock, MclockGroup};
use elevator_control::throttle::{
    IoMax, Throttle, ThrottleGroup, THROTL_SLICE_HD_NS, THROTL_SLICE_SSD_NS,
};
use elevator_core::Cgroup;
use elevator_nbd::ExportInfo;
use stats::ExportStats;
use std::fs::OpenOptions;
use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use stop::Stop;
use worker::{Msg, WorkerHandle};

#[derive(Debug)]
pub enum ServerError {
    Config(String),
    Io(String, std::io::Error),
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerError::Config(m) => write!(f, "configuration: {m}"),
            ServerError::Io(what, e) => write!(f, "{what}: {e}"),
        }
    }
}
impl std::error::Error for ServerError {}

/// Export `i`'s mClock group: its scheduler group (cgroup `i + 1`), reservation, weight and
/// limit.
pub(crate) fn mclock_group(i: usize, e: &config::ExportConfig) -> MclockGroup {
    MclockGroup {
        cgroup: i as u32 + 1,
        name: e.name.clone(),
        reservation_iops: e.reservation_iops,
        weight: e.weight,
        limit_iops: e.limit_iops,
    }
}

pub(crate) struct ExportRuntime {
    pub info: ExportInfo,
    pub path: PathBuf,
    /// The group weight, as last set (config or `elevator ctl set EXPORT weight N`).
    pub weight: AtomicU32,
    pub read_only: bool,
    pub worker: WorkerHandle,
    /// The backing file, for SEEK_DATA/SEEK_HOLE (block status).
    pub file: Arc<std::fs::File>,
    /// Who may open it.
    pub rules: access::Rules,
    /// Its own limit on connections in the transmission phase.
    pub max_connections: Option<usize>,
}

pub(crate) struct Shared {
    pub exports: Vec<ExportRuntime>,
    pub tls_mode: elevator_nbd::TlsMode,
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The payload memory budget, shared by all workers.
    pub budget: Arc<budget::Budget>,
    pub memory_limit: u64,
}

/// A running server. Dropping it without [`Server::shutdown`] leaves its threads running.
pub struct Server {
    metrics_addr: Option<SocketAddr>,
    control_path: Option<PathBuf>,
    stop: Arc<Stop>,
    tcp_addr: Option<SocketAddr>,
    unix_path: Option<PathBuf>,
    listeners: Vec<JoinHandle<()>>,
    workers: Vec<(WorkerHandle, JoinHandle<()>)>,
    stats: Arc<Vec<Mutex<ExportStats>>>,
}

impl Server {
    /// Opens the exports, starts the workers and listeners, and returns at once.
    pub fn start(config: ServerConfig) -> Result<Server, ServerError> {
        config.validate()?;
        let tls = match (&config.tls_cert, &config.tls_key, config.tls) {
            (Some(c), Some(k), t) if t != TlsSetting::Off => {
                let client = config
                    .tls_ca
                    .as_deref()
                    .map(|ca| tls::ClientAuth { ca, optional: !config.tls_verify_client });
                Some(tls::server_config(c, k, client).map_err(ServerError::Config)?)
            }
            _ => None,
        };
        let gid = match &config.socket_group {
            Some(g) => Some(access::group_id(g).map_err(ServerError::Config)?),
            None => None,
        };
        let tls_mode = match config.tls {
            TlsSetting::Off => elevator_nbd::TlsMode::Off,
            TlsSetting::On => elevator_nbd::TlsMode::On,
            TlsSetting::Require => elevator_nbd::TlsMode::Require,
        };
        let start = Instant::now();
        let memory_limit = config.memory_limit.unwrap_or_else(budget::default_limit);
        let budget = Arc::new(budget::Budget::new(memory_limit));
        tracing::info!(memory_limit, "memory budget");
        let stats: Arc<Vec<Mutex<ExportStats>>> = Arc::new(
            config.exports.iter().map(|e| Mutex::new(ExportStats::new(&e.name))).collect(),
        );
        // Group exports by backing file: one scheduler + ring per file.
        let mut groups: Vec<(PathBuf, Vec<usize>)> = Vec::new();
        for (i, e) in config.exports.iter().enumerate() {
            let key = std::fs::canonicalize(&e.path).unwrap_or_else(|_| e.path.clone());
            match groups.iter_mut().find(|(p, _)| *p == key) {
                Some((_, v)) => v.push(i),
                None => groups.push((key, vec![i])),
            }
        }
        let mut runtimes: Vec<Option<ExportRuntime>> =
            config.exports.iter().map(|_| None).collect();
        let mut workers = Vec::new();
        for (path, members) in &groups {
            let writable = members.iter().any(|&i| !config.exports[i].read_only);
            let create = members.iter().any(|&i| config.exports[i].size.is_some()) && writable;
            let open = |direct: bool| {
                let mut o = OpenOptions::new();
                o.read(true).write(writable).create(create);
                if direct {
                    o.custom_flags(libc::O_DIRECT);
                }
                o.open(path)
            };
            let ioerr = |e| ServerError::Io(format!("opening {}", path.display()), e);
            let (file, direct) = if config.direct {
                match open(true) {
                    Ok(f) => (f, true),
                    Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                        tracing::warn!(path = %path.display(), "O_DIRECT refused, using buffered I/O");
                        (open(false).map_err(ioerr)?, false)
                    }
                    Err(e) => return Err(ioerr(e)),
                }
            } else {
                (open(false).map_err(ioerr)?, false)
            };
            let meta = file.metadata().map_err(ioerr)?;
            let file_len = meta.len();
            let rotational = rotational(&meta);
            let want = members.iter().filter_map(|&i| config.exports[i].size).max().unwrap_or(0);
            if want > file_len && writable {
                file.set_len(want).map_err(ioerr)?;
            }
            let mut sched =
                elevator_sched::by_name(&config.scheduler).map_err(ServerError::Config)?;
            sched.set_rotational(rotational);
            for (k, v) in config.tunable_strings() {
                sched
                    .set_tunable(&k, &v)
                    .map_err(|e| ServerError::Config(format!("tunable {k}: {e}")))?;
            }
            for &i in members {
                let e = &config.exports[i];
                sched.set_group(&Cgroup {
                    id: i as u32 + 1,
                    parent: Some(0),
                    path: e.name.clone(),
                    weight: e.weight,
                });
            }
            let control = match config.controller.as_str() {
                "mclock" => Some(worker::GroupControl::Mclock(
                    Mclock::new(
                        members.iter().map(|&i| mclock_group(i, &config.exports[i])).collect(),
                        config.queue_depth,
                    )
                    .map_err(ServerError::Config)?,
                )),
                "io.max" => {
                    let mut groups = Vec::new();
                    for &i in members {
                        let e = &config.exports[i];
                        let limits =
                            IoMax::parse_keys(e.io_max.as_deref().unwrap_or(""), IoMax::default())
                                .map_err(|m| {
                                    ServerError::Config(format!("export `{}`: {m}", e.name))
                                })?;
                        groups.push(ThrottleGroup {
                            cgroup: i as u32 + 1,
                            name: e.name.clone(),
                            limits,
                        });
                    }
                    // blk-throttle's slice: 100 ms on a rotational device, 20 ms otherwise.
                    let slice = if rotational { THROTL_SLICE_HD_NS } else { THROTL_SLICE_SSD_NS };
                    Some(worker::GroupControl::IoMax(
                        Throttle::new(groups, slice).map_err(ServerError::Config)?,
                    ))
                }
                "io.latency" => {
                    let mut groups = Vec::new();
                    for &i in members {
                        let e = &config.exports[i];
                        let keys = e.io_latency.as_deref().unwrap_or("");
                        let target_ns = parse_io_latency_keys(keys).map_err(|m| {
                            ServerError::Config(format!("export `{}`: {m}", e.name))
                        })?;
                        groups.push(IoLatencyGroup {
                            cgroup: i as u32 + 1,
                            name: e.name.clone(),
                            target_ns,
                        });
                    }
                    Some(worker::GroupControl::IoLatency(
                        IoLatency::new(groups, config.queue_depth, rotational)
                            .map_err(ServerError::Config)?,
                    ))
                }
                "io.cost" => {
                    let (qos, model) = config
                        .io_cost_settings(rotational, config.queue_depth)
                        .map_err(ServerError::Config)?;
                    let groups = members
                        .iter()
                        .map(|&i| IoCostGroup {
                            cgroup: i as u32 + 1,
                            name: config.exports[i].name.clone(),
                            parent: None,
                            weight: config.exports[i].weight,
                        })
                        .collect();
                    Some(worker::GroupControl::IoCost(Box::new(
                        IoCost::new(groups, Some(qos), Some(model), rotational, config.queue_depth)
                            .map_err(ServerError::Config)?,
                    )))
                }
                _ => None,
            };
            let name = config.exports[members[0]].name.clone();
            let seek_file = Arc::new(file.try_clone().map_err(ioerr)?);
            let setup = worker::WorkerSetup {
                name,
                file,
                direct,
                sched,
                control,
                depth: config.queue_depth as usize,
                piece_bytes: config.max_sectors_kb as u64 * 1024,
                read_ahead_bytes: config.read_ahead_kb as u64 * 1024,
                start,
                stats: stats.clone(),
                budget: budget.clone(),
                stall_timeout: Duration::from_millis(config.stall_timeout_ms),
                read_ahead_cache_bytes: (memory_limit / 8).min(64 << 20),
            };
            let (handle, jh) = worker::spawn(setup)
                .map_err(|e| ServerError::Io("starting io_uring worker".into(), e))?;
            for &i in members {
                let e = &config.exports[i];
                runtimes[i] = Some(ExportRuntime {
                    path: path.clone(),
                    weight: AtomicU32::new(e.weight),
                    info: ExportInfo {
                        name: e.name.clone(),
                        description: e.description.clone(),
                        size: e.size.unwrap_or(file_len),
                        read_only: e.read_only,
                        min_block: 1,
                        rotational,
                        // One worker per backing file: a flush on any connection is an fsync
                        // of the file after every write completed before it, whichever
                        // connection sent them.
                        multi_conn: true,
                    },
                    read_only: e.read_only,
                    worker: handle.clone(),
                    file: seek_file.clone(),
                    rules: access::Rules {
                        allow_uids: e.allow_uids.clone(),
                        allow_names: e.allow_names.clone(),
                        require_client_cert: e.require_client_cert,
                    },
                    max_connections: e.max_connections.map(|m| m as usize),
                });
                tracing::info!(export = %e.name, path = %path.display(), direct, "export ready");
            }
            workers.push((handle, jh));
        }
        let shared = Arc::new(Shared {
            exports: runtimes.into_iter().map(|r| r.expect("every export is in a group")).collect(),
            tls_mode,
            tls,
            budget,
            memory_limit,
        });
        let stop = Arc::new(Stop::new().map_err(|e| ServerError::Io("stop eventfd".into(), e))?);
        let mut listeners = Vec::new();
        // Control and metrics come up first: once a client can connect, the server is
        // manageable too.
        let ctl = match &config.control_socket {
            Some(p) => {
                let l =
                    access::bind_unix(p, config.socket_mode, gid).map_err(ServerError::Config)?;
                tracing::info!(path = %p.display(), "control socket");
                Some(l)
            }
            None => None,
        };
        let mut metrics_addr = None;
        let metrics = match &config.metrics {
            Some(a) => {
                let l = TcpListener::bind(a)
                    .map_err(|e| ServerError::Io(format!("binding metrics {a}"), e))?;
                metrics_addr = l.local_addr().ok();
                tracing::info!(addr = ?metrics_addr, "metrics");
                Some(l)
            }
            None => None,
        };
        let mut nbd = Vec::new();
        let mut tcp_addr = None;
        if let Some(addr) = config.tcp_listen() {
            let l = TcpListener::bind(addr)
                .map_err(|e| ServerError::Io(format!("binding {addr}"), e))?;
            l.set_nonblocking(true).map_err(|e| ServerError::Io("listener".into(), e))?;
            tcp_addr = l.local_addr().ok();
            tracing::info!(addr = ?tcp_addr, "listening");
            nbd.push(gate::Listener::Tcp(l));
        }
        if let Some(p) = &config.unix_socket {
            let l = access::bind_unix(p, config.socket_mode, gid).map_err(ServerError::Config)?;
            l.set_nonblocking(true).map_err(|e| ServerError::Io("listener".into(), e))?;
            tracing::info!(path = %p.display(), "listening");
            nbd.push(gate::Listener::Unix(l));
        }
        let limits = gate::Limits {
            handshake_timeout: Duration::from_millis(config.handshake_timeout_ms),
            max_handshakes: config.max_handshakes as usize,
            max_connections: config.max_connections as usize,
        };
        if ctl.is_some() || metrics.is_some() {
            let (stop, shared, stats) = (stop.clone(), shared.clone(), stats.clone());
            let loop_ = control::ControlLoop::new(stop, shared, stats, ctl, metrics)
                .map_err(|e| ServerError::Io("control listeners".into(), e))?;
            listeners.push(spawn_named("elevator-control", move || loop_.run())?);
        }
        let counts = Arc::new(gate::Counts::new(shared.exports.len()));
        let g = gate::Gate::new(stop.clone(), shared.clone(), counts, limits, nbd);
        listeners.push(spawn_named("elevator-gate", move || g.run())?);
        Ok(Server {
            metrics_addr,
            control_path: config.control_socket.clone(),
            stop,
            tcp_addr,
            unix_path: config.unix_socket.clone(),
            listeners,
            workers,
            stats,
        })
    }

    /// The bound TCP address (useful with port 0).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.tcp_addr
    }

    /// The bound metrics address (useful with port 0).
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// Per-export counters, in config order.
    pub fn stats(&self) -> Vec<ExportStatsSnapshot> {
        self.stats.iter().filter_map(|s| s.lock().ok().map(|s| s.snapshot())).collect()
    }

    /// Stops accepting, closes connections, lets in-flight I/O finish and joins all threads.
    pub fn shutdown(self) {
        self.stop.set();
        for l in self.listeners {
            let _ = l.join();
        }
        for (w, _) in &self.workers {
            w.send(Msg::Shutdown);
        }
        for (_, jh) in self.workers {
            let _ = jh.join();
        }
        for p in [self.unix_path, self.control_path].into_iter().flatten() {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn spawn_named(
    name: &str,
    f: impl FnOnce() + Send + 'static,
) -> Result<JoinHandle<()>, ServerError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map_err(|e| ServerError::Io(format!("starting thread {name}"), e))
}

/// Whether the device holding a file (or the block device itself) is rotational, from
/// `/sys/dev/block/MAJ:MIN/queue/rotational` (a partition's is its disk's). Unknown: false.
fn rotational(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let dev = if meta.file_type().is_block_device() { meta.rdev() } else { meta.dev() };
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let base = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    for p in [base.join("queue/rotational"), base.join("../queue/rotational")] {
        if let Ok(s) = std::fs::read_to_string(p) {
            return s.trim() == "1";
        }
    }
    false
}
