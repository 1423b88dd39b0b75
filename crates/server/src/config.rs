//! The TOML configuration.

use elevator_core::text::{one_line, toml_message_at};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Whether every address `addr` resolves to is a loopback address.
fn is_loopback(addr: &str) -> std::io::Result<bool> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<_> = addr.to_socket_addrs()?.collect();
    Ok(!addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback()))
}

/// Server configuration, as read from TOML:
///
/// ```toml
/// listen = "127.0.0.1:10809"        # the default without unix_socket; "" disables TCP
/// unix_socket = "/run/elevator.sock" # optional: alone, no TCP listener
/// socket_mode = 0o600                # unix_socket's and control_socket's permissions
/// socket_group = "disk"              # optional: their group (name or number)
/// control_socket = "/run/elevator.ctl" # optional: `elevator ctl --socket ...`
/// metrics = "127.0.0.1:9187"         # optional: Prometheus text format at /metrics
/// scheduler = "mq-deadline"
/// controller = "none"               # "mclock": exports' reservation/weight/limit in IOPS;
///                                    # "io.max": exports' cgroup v2 io.max limits;
///                                    # "io.cost": blk-iocost, exports' weight as io.weight;
///                                    # "io.latency": exports' io_latency targets
/// io_cost_qos = "rpct=95 rlat=5000"  # with controller = "io.cost": io.cost.qos keys, no MAJ:MIN
/// io_cost_model = "rrandiops=4000"   # io.cost.model keys (default: the kernel's for the file)
/// queue_depth = 32                   # requests in flight per backing file
/// max_sectors_kb = 256               # largest piece of a read sent to the file at once
/// read_ahead_kb = 128                # read-ahead window of a sequential connection (0: off)
/// direct = true                      # O_DIRECT, falls back to buffered if refused
/// tls = "off"                        # "off", "on" (client's choice) or "require"
/// tls_cert = "/etc/elevator/server-cert.pem"  # PEM chain, with tls = "on"/"require"
/// tls_key = "/etc/elevator/server-key.pem"    # PEM private key
/// tls_ca = "/etc/elevator/ca-cert.pem"         # client certificates are checked against it
/// tls_verify_client = true           # every TLS client must present one (else per export)
/// handshake_timeout_ms = 10000       # a client must reach the transmission phase by then
/// max_handshakes = 128               # connections in their handshake (oldest evicted)
/// max_connections = 256              # connections in the transmission phase
/// memory_limit = "1GiB"              # payload memory of all requests (default: RAM / 8)
/// stall_timeout_ms = 30000           # a client holding memory without progress is dropped
/// metrics_public = false             # allow a non-loopback metrics address
/// [tunables]
/// read_expire = 500
/// [[export]]
/// name = "disk0"
/// path = "/var/lib/disk0.img"
/// size = 1073741824                  # optional: defaults to the file's size
/// read_only = false
/// weight = 500
/// reservation_iops = 0               # with controller = "mclock": I/Os per second guaranteed
/// limit_iops = 0                     # with controller = "mclock": never more (0: no limit)
/// io_max = "riops=2000 wbps=max"     # with controller = "io.max": io.max's keys, no MAJ:MIN
/// io_latency = "target=10000"        # with controller = "io.latency": µs, no MAJ:MIN
/// max_connections = 16               # optional, this export's own limit
/// allow_uids = [1000]                # optional: Unix peers allowed (SO_PEERCRED)
/// allow_names = ["client.example"]   # optional: client certificate DNS names allowed
/// require_client_cert = false        # refuse clients without a verified certificate
/// ```
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The TCP address; unset: `127.0.0.1:10809` unless `unix_socket` is set; `""`: none.
    #[serde(default)]
    pub listen: Option<String>,
    #[serde(default)]
    pub unix_socket: Option<PathBuf>,
    /// Permissions of the socket files (`unix_socket`, `control_socket`).
    #[serde(default = "default_socket_mode")]
    pub socket_mode: u32,
    /// Their group, by name or number.
    #[serde(default)]
    pub socket_group: Option<String>,
    /// A metrics address that is not loopback is refused unless this is set.
    #[serde(default)]
    pub metrics_public: bool,
    /// Connections not in the transmission phase this long after accept are closed.
    #[serde(default = "default_handshake_timeout_ms")]
    pub handshake_timeout_ms: u64,
    /// Connections in their handshake at once; a new one past it evicts the oldest.
    #[serde(default = "default_max_handshakes")]
    pub max_handshakes: u32,
    /// Connections in the transmission phase, over all exports.
    #[serde(default = "default_max_connections")]
    pub max_connections: u32,
    /// Bytes of request payloads (read buffers, write data) held at once, over all exports:
    /// an integer or a string with a unit ("512MiB", "2G"). Default: an eighth of the
    /// machine's memory, between 256 MiB and 4 GiB.
    #[serde(default, deserialize_with = "de_bytes")]
    pub memory_limit: Option<u64>,
    /// A connection that holds memory and makes no progress this long — its replies are not
    /// read, or a write's payload stops arriving — is dropped, and the memory given back.
    #[serde(default = "default_stall_timeout_ms")]
    pub stall_timeout_ms: u64,
    #[serde(default)]
    pub control_socket: Option<PathBuf>,
    #[serde(default)]
    pub metrics: Option<String>,
    #[serde(default = "default_scheduler")]
    pub scheduler: String,
    /// A group controller above the scheduler of each backing file: `none`, `mclock` (each
    /// export's `reservation_iops`, `weight` and `limit_iops`), `io.max` (each export's
    /// `io_max`) or `io.cost` (each export's `weight` as its `io.weight`, 1–10000).
    #[serde(default = "default_controller")]
    pub controller: String,
    /// Under `controller = "io.cost"`: `io.cost.qos` keys (`rpct rlat wpct wlat min max`)
    /// for every backing file; `enable=1` is implied.
    #[serde(default)]
    pub io_cost_qos: Option<String>,
    /// Under `controller = "io.cost"`: `io.cost.model` keys (`rbps rseqiops rrandiops wbps
    /// wseqiops wrandiops`); unset, the kernel's automatic model for the file's class.
    #[serde(default)]
    pub io_cost_model: Option<String>,
    #[serde(default)]
    pub tunables: BTreeMap<String, toml::Value>,
    #[serde(default = "default_queue_depth")]
    pub queue_depth: u32,
    /// The largest read, in KiB, handed to the backing file in one piece (the block layer's
    /// `max_sectors_kb`): a longer client read is issued as pieces of this size, one
    /// scheduler request still, and a client that negotiated structured replies receives each
    /// piece as soon as it is read, so that sending overlaps the rest of the read.
    #[serde(default = "default_max_sectors_kb")]
    pub max_sectors_kb: u32,
    /// The largest read-ahead window, in KiB, of a connection that reads sequentially (the
    /// block layer's `read_ahead_kb`, default 128 as there; a read larger than this still
    /// reads one of its own size ahead). 0 turns readahead off. See `readahead.rs`.
    #[serde(default = "default_read_ahead_kb")]
    pub read_ahead_kb: u32,
    #[serde(default = "default_true")]
    pub direct: bool,
    #[serde(default)]
    pub tls: TlsSetting,
    #[serde(default)]
    pub tls_cert: Option<PathBuf>,
    #[serde(default)]
    pub tls_key: Option<PathBuf>,
    /// CA bundle (PEM) that client certificates must chain to; set: certificates are asked for.
    #[serde(default)]
    pub tls_ca: Option<PathBuf>,
    /// Every TLS client must present a certificate from `tls_ca` (else only exports that
    /// require one refuse clients without).
    #[serde(default)]
    pub tls_verify_client: bool,
    #[serde(rename = "export", default)]
    pub exports: Vec<ExportConfig>,
}

/// `tls = "off" | "on" | "require"`: NOTLS, SELECTIVETLS (every export available with or
/// without TLS) or FORCEDTLS in proto.md's terms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TlsSetting {
    #[default]
    Off,
    On,
    Require,
}

impl std::str::FromStr for TlsSetting {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(TlsSetting::Off),
            "on" => Ok(TlsSetting::On),
            "require" => Ok(TlsSetting::Require),
            _ => Err(format!("tls must be off, on or require, not `{s}`")),
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportConfig {
    pub name: String,
    pub path: PathBuf,
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub read_only: bool,
    #[serde(default = "default_weight")]
    pub weight: u32,
    /// Under `controller = "mclock"`: I/Os per second this export gets while it asks for them.
    #[serde(default)]
    pub reservation_iops: u32,
    /// Under `controller = "mclock"`: I/Os per second it never exceeds (0: no limit).
    #[serde(default)]
    pub limit_iops: u32,
    /// Under `controller = "io.max"`: cgroup v2 `io.max` keys for this export
    /// (`rbps`, `wbps`, `riops`, `wiops`; a number or `max`), without the `MAJ:MIN`.
    #[serde(default)]
    pub io_max: Option<String>,
    /// Under `controller = "io.latency"`: cgroup v2 `io.latency` keys for this export
    /// (`target=USEC`), without the `MAJ:MIN`; exports without one are its peers.
    #[serde(default)]
    pub io_latency: Option<String>,
    #[serde(default)]
    pub description: String,
    /// This export's own limit on connections in the transmission phase.
    #[serde(default)]
    pub max_connections: Option<u32>,
    /// Unix peer UIDs allowed (`SO_PEERCRED`); with `allow_names`, a client must match one.
    #[serde(default)]
    pub allow_uids: Vec<u32>,
    /// DNS names (subjectAltName) of verified client certificates allowed.
    #[serde(default)]
    pub allow_names: Vec<String>,
    /// Refuse clients without a verified TLS client certificate.
    #[serde(default)]
    pub require_client_cert: bool,
}

/// Limits the configuration checks values against.
pub const MAX_HANDSHAKES_LIMIT: u32 = 65_536;
pub const MAX_CONNECTIONS_LIMIT: u32 = 65_536;
pub const HANDSHAKE_TIMEOUT_MS_MAX: u64 = 3_600_000;

fn default_listen() -> String {
    "127.0.0.1:10809".into()
}
fn default_socket_mode() -> u32 {
    0o600
}
fn default_handshake_timeout_ms() -> u64 {
    10_000
}
fn default_max_handshakes() -> u32 {
    128
}
fn default_max_connections() -> u32 {
    256
}
fn default_stall_timeout_ms() -> u64 {
    30_000
}

/// Smallest `memory_limit`: two of the largest requests.
pub const MEMORY_LIMIT_MIN: u64 = 2 * elevator_nbd::MAX_PAYLOAD as u64;
/// Largest `stall_timeout_ms` (an hour).
pub const STALL_TIMEOUT_MS_MAX: u64 = 3_600_000;

/// A byte count: an integer, or a string of a number and a unit (K, M, G, T with or without
/// "iB"/"B", all powers of 1024).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("`{text}` is not a size"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("`{text}`: unknown unit (K, M, G, T)")),
    };
    n.checked_mul(1u64 << shift).ok_or_else(|| format!("`{text}` is too large"))
}

fn de_bytes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Size {
        Int(u64),
        Text(String),
    }
    match Size::deserialize(d)? {
        Size::Int(n) => Ok(Some(n)),
        Size::Text(t) => parse_bytes(&t).map(Some).map_err(serde::de::Error::custom),
    }
}
fn default_scheduler() -> String {
    "mq-deadline".into()
}
fn default_controller() -> String {
    "none".to_string()
}

fn default_queue_depth() -> u32 {
    32
}
fn default_max_sectors_kb() -> u32 {
    256
}
fn default_read_ahead_kb() -> u32 {
    128
}
fn default_true() -> bool {
    true
}
fn default_weight() -> u32 {
    elevator_core::Cgroup::DEFAULT_WEIGHT
}

impl ServerConfig {
    /// io.cost's settings for a backing file of this class: `io_cost_qos` (enabled) and
    /// `io_cost_model` over the kernel's automatic parameters.
    pub fn io_cost_settings(
        &self,
        rotational: bool,
        queue_depth: u32,
    ) -> Result<(elevator_control::iocost::IoCostQos, elevator_control::iocost::IoCostModel), String>
    {
        use elevator_control::iocost::{AutopClass, IoCostModel, IoCostQos};
        let class = AutopClass::of_device(rotational, queue_depth);
        let keys = self.io_cost_qos.as_deref().unwrap_or("");
        let qos = IoCostQos::parse_keys(&format!("enable=1 {keys}"), IoCostQos::auto(class))?;
        let keys = self.io_cost_model.as_deref().unwrap_or("");
        let model = IoCostModel::parse_keys(keys, IoCostModel::auto(class))?;
        Ok((qos, model))
    }

    /// Parses and validates a config. A parse error is one line, `line N: message`, without
    /// the excerpt of the file the toml crate's own message shows (an operator's mistyped
    /// `--config` may name any file, and its text is not the server's to echo).
    pub fn from_toml_str(text: &str) -> Result<ServerConfig, crate::ServerError> {
        let c: ServerConfig = toml::from_str(text).map_err(|e| {
            crate::ServerError::Config(match e.span() {
                Some(at) => {
                    let (line, message) = toml_message_at(text, at.start, e.message());
                    format!("line {line}: {message}")
                }
                None => one_line(e.message()),
            })
        })?;
        c.validate()?;
        Ok(c)
    }

    pub fn from_toml_file(path: impl AsRef<Path>) -> Result<ServerConfig, crate::ServerError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| crate::ServerError::Config(format!("{}: {e}", path.display())))?;
        // Parse and validation errors name the file too (parse errors carry the line).
        Self::from_toml_str(&text).map_err(|e| match e {
            crate::ServerError::Config(m) => {
                crate::ServerError::Config(format!("{}: {m}", path.display()))
            }
            other => other,
        })
    }

    /// A config with the given exports and defaults elsewhere (handy for tests).
    pub fn with_exports(exports: Vec<ExportConfig>) -> ServerConfig {
        ServerConfig {
            listen: Some(default_listen()),
            unix_socket: None,
            socket_mode: default_socket_mode(),
            socket_group: None,
            metrics_public: false,
            handshake_timeout_ms: default_handshake_timeout_ms(),
            max_handshakes: default_max_handshakes(),
            max_connections: default_max_connections(),
            memory_limit: None,
            stall_timeout_ms: default_stall_timeout_ms(),
            control_socket: None,
            metrics: None,
            scheduler: default_scheduler(),
            tunables: BTreeMap::new(),
            controller: default_controller(),
            io_cost_qos: None,
            io_cost_model: None,
            queue_depth: default_queue_depth(),
            max_sectors_kb: default_max_sectors_kb(),
            read_ahead_kb: default_read_ahead_kb(),
            direct: true,
            tls: TlsSetting::Off,
            tls_cert: None,
            tls_key: None,
            tls_ca: None,
            tls_verify_client: false,
            exports,
        }
    }

    pub fn validate(&self) -> Result<(), crate::ServerError> {
        let err = |m: String| Err(crate::ServerError::Config(m));
        if self.exports.is_empty() {
            return err("no [[export]] configured".into());
        }
        if self.queue_depth == 0 || self.queue_depth > 4096 {
            return err(format!("queue_depth {} must be in 1..=4096", self.queue_depth));
        }
        let kb = self.max_sectors_kb;
        if kb < 4 || !kb.is_multiple_of(4) || kb > 32 << 10 {
            return err(format!(
                "max_sectors_kb {kb} must be a multiple of 4 in 4..=32768 (whole 4 KiB blocks)"
            ));
        }
        if self.read_ahead_kb > 1 << 20 {
            return err(format!(
                "read_ahead_kb {} must be at most 1048576 (1 GiB)",
                self.read_ahead_kb
            ));
        }
        if self.tcp_listen().is_none() && self.unix_socket.is_none() {
            return err("neither `listen` nor `unix_socket` is set".into());
        }
        if self.socket_mode > 0o777 {
            return err(format!("socket_mode {:#o} must be at most 0o777", self.socket_mode));
        }
        if self.handshake_timeout_ms == 0 || self.handshake_timeout_ms > HANDSHAKE_TIMEOUT_MS_MAX {
            return err(format!(
                "handshake_timeout_ms {} must be in 1..={HANDSHAKE_TIMEOUT_MS_MAX}",
                self.handshake_timeout_ms
            ));
        }
        if self.max_handshakes == 0 || self.max_handshakes > MAX_HANDSHAKES_LIMIT {
            return err(format!(
                "max_handshakes {} must be in 1..={MAX_HANDSHAKES_LIMIT}",
                self.max_handshakes
            ));
        }
        if self.max_connections == 0 || self.max_connections > MAX_CONNECTIONS_LIMIT {
            return err(format!(
                "max_connections {} must be in 1..={MAX_CONNECTIONS_LIMIT}",
                self.max_connections
            ));
        }
        if let Some(m) = self.memory_limit {
            if m < MEMORY_LIMIT_MIN {
                return err(format!(
                    "memory_limit {m} must be at least {MEMORY_LIMIT_MIN} (two 32 MiB requests)"
                ));
            }
        }
        if self.stall_timeout_ms == 0 || self.stall_timeout_ms > STALL_TIMEOUT_MS_MAX {
            return err(format!(
                "stall_timeout_ms {} must be in 1..={STALL_TIMEOUT_MS_MAX}",
                self.stall_timeout_ms
            ));
        }
        if let Some(m) = &self.metrics {
            let loopback = is_loopback(m)
                .map_err(|e| crate::ServerError::Config(format!("metrics `{m}`: {e}")))?;
            if !loopback && !self.metrics_public {
                return err(format!(
                    "metrics `{m}` is not a loopback address: set metrics_public = true to \
                     serve it beyond this machine"
                ));
            }
        }
        if self.tls_verify_client && self.tls_ca.is_none() {
            return err("tls_verify_client needs `tls_ca`, the CA bundle".into());
        }
        let mut names = std::collections::HashSet::new();
        for e in &self.exports {
            if !names.insert(e.name.as_str()) {
                return err(format!("export `{}` is defined twice", e.name));
            }
            if e.name.len() > 4096 {
                return err("export name longer than 4096 bytes".into());
            }
            if let Some(m) = e.max_connections {
                if m == 0 || m > MAX_CONNECTIONS_LIMIT {
                    return err(format!(
                        "export `{}`: max_connections {m} must be in 1..={MAX_CONNECTIONS_LIMIT}",
                        e.name
                    ));
                }
            }
            let wants_cert = e.require_client_cert || !e.allow_names.is_empty();
            if wants_cert && (self.tls == TlsSetting::Off || self.tls_ca.is_none()) {
                return err(format!(
                    "export `{}`: allow_names and require_client_cert need tls and tls_ca",
                    e.name
                ));
            }
        }
        elevator_sched::by_name(&self.scheduler).map_err(crate::ServerError::Config)?;
        if self.controller != "io.cost"
            && (self.io_cost_qos.is_some() || self.io_cost_model.is_some())
        {
            return err("io_cost_qos and io_cost_model need controller = \"io.cost\"".into());
        }
        if self.controller != "io.latency" {
            if let Some(e) = self.exports.iter().find(|e| e.io_latency.is_some()) {
                return err(format!(
                    "export `{}`: io_latency needs controller = \"io.latency\"",
                    e.name
                ));
            }
        }
        if self.controller != "io.max" {
            if let Some(e) = self.exports.iter().find(|e| e.io_max.is_some()) {
                return err(format!("export `{}`: io_max needs controller = \"io.max\"", e.name));
            }
        }
        match self.controller.as_str() {
            "io.max" => {
                for e in &self.exports {
                    if e.reservation_iops != 0 || e.limit_iops != 0 {
                        return err(format!(
                            "export `{}`: reservation_iops and limit_iops need controller = \"mclock\"",
                            e.name
                        ));
                    }
                    let keys = e.io_max.as_deref().unwrap_or("");
                    elevator_control::throttle::IoMax::parse_keys(keys, Default::default())
                        .map_err(|m| {
                            crate::ServerError::Config(format!("export `{}`: {m}", e.name))
                        })?;
                }
            }
            "none" => {
                if let Some(e) =
                    self.exports.iter().find(|e| e.reservation_iops != 0 || e.limit_iops != 0)
                {
                    return err(format!(
                        "export `{}`: reservation_iops and limit_iops need controller = \"mclock\"",
                        e.name
                    ));
                }
            }
            "mclock" => {
                for (i, e) in self.exports.iter().enumerate() {
                    crate::mclock_group(i, e).validate().map_err(|m| {
                        crate::ServerError::Config(format!("export `{}`: {m}", e.name))
                    })?;
                }
            }
            "io.latency" => {
                for e in &self.exports {
                    if e.reservation_iops != 0 || e.limit_iops != 0 {
                        return err(format!(
                            "export `{}`: reservation_iops and limit_iops need controller = \"mclock\"",
                            e.name
                        ));
                    }
                    let keys = e.io_latency.as_deref().unwrap_or("");
                    elevator_control::iolatency::parse_io_latency_keys(keys).map_err(|m| {
                        crate::ServerError::Config(format!("export `{}`: {m}", e.name))
                    })?;
                }
            }
            "io.cost" => {
                for e in &self.exports {
                    if e.reservation_iops != 0 || e.limit_iops != 0 {
                        return err(format!(
                            "export `{}`: reservation_iops and limit_iops need controller = \"mclock\"",
                            e.name
                        ));
                    }
                    let (lo, hi) = (
                        elevator_control::iocost::CGROUP_WEIGHT_MIN,
                        elevator_control::iocost::CGROUP_WEIGHT_MAX,
                    );
                    if !(lo..=hi).contains(&e.weight) {
                        return err(format!(
                            "export `{}`: weight {} is out of io.weight's range {lo}-{hi}",
                            e.name, e.weight
                        ));
                    }
                }
                self.io_cost_settings(true, 32).map_err(crate::ServerError::Config)?;
                self.io_cost_settings(false, 32).map_err(crate::ServerError::Config)?;
            }
            other => {
                return err(format!(
                    "controller `{other}`: expected none, mclock, io.max, io.latency or io.cost"
                ))
            }
        }
        if self.tls != TlsSetting::Off && (self.tls_cert.is_none() || self.tls_key.is_none()) {
            return err("tls needs both `tls_cert` and `tls_key`".into());
        }
        Ok(())
    }

    /// The TCP address to listen on, if any.
    pub fn tcp_listen(&self) -> Option<&str> {
        match &self.listen {
            Some(l) if l.is_empty() => None,
            Some(l) => Some(l),
            None if self.unix_socket.is_some() => None,
            None => Some("127.0.0.1:10809"),
        }
    }

    pub(crate) fn tunable_strings(&self) -> Vec<(String, String)> {
        self.tunables
            .iter()
            .map(|(k, v)| {
                let s = match v {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Boolean(b) => u8::from(*b).to_string(),
                    other => other.to_string(),
                };
                (k.clone(), s)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let c = ServerConfig::from_toml_str(
            r#"
            listen = "127.0.0.1:10809"
            scheduler = "mq-deadline"
            queue_depth = 16
            [tunables]
            read_expire = 250
            [[export]]
            name = "disk0"
            path = "/tmp/disk0.img"
            size = 1048576
            [[export]]
            name = "ro"
            path = "/tmp/ro.img"
            read_only = true
            weight = 100
            "#,
        )
        .unwrap();
        assert_eq!(c.exports.len(), 2);
        assert_eq!(c.exports[1].weight, 100);
        assert_eq!(c.exports[0].weight, 500);
        assert_eq!(c.tunable_strings(), vec![("read_expire".to_string(), "250".to_string())]);
    }

    #[test]
    fn rejects_bad_configs() {
        let e = |t: &str| ServerConfig::from_toml_str(t).unwrap_err().to_string();
        assert!(e("").contains("no [[export]]"));
        assert!(e("scheduler = \"cfqq\"\n[[export]]\nname=\"a\"\npath=\"/x\"")
            .contains("unknown scheduler"));
        assert!(e("bogus = 1").contains("bogus"));
        // One line naming the line, and not the file's text.
        let typo = e("[[export]]\nname = \"a\"\npath = \"/x\"\nschedulerr = \"cfq\"\n");
        assert!(typo.contains("line 4: unknown field `schedulerr`"), "{typo}");
        assert!(!typo.contains('\n') && !typo.contains("\"cfq\""), "{typo}");
        // A value of the wrong type: the key it is written under.
        let wrong = e("[[export]]\nname = \"a\"\npath = \"/x\"\nweight = \"heavy\"\n");
        assert!(wrong.contains("line 4: `weight`: "), "{wrong}");
        let ex = "[[export]]\nname=\"a\"\npath=\"/x\"\n";
        assert!(e(&format!("{ex}reservation_iops = 10"))
            .contains("export `a`: reservation_iops and limit_iops need controller = \"mclock\""));
        assert!(e(&format!("controller = \"dmclock\"\n{ex}")).contains("controller `dmclock`"));
        let over = format!("controller = \"mclock\"\n{ex}reservation_iops = 500\nlimit_iops = 100");
        assert!(e(&over).contains("export `a`: reservation_iops 500 is above limit_iops 100"));
        let big = format!("controller = \"mclock\"\n{ex}limit_iops = 20000000");
        assert!(e(&big).contains("export `a`: limit_iops 20000000 is above 10000000"));
        assert!(e(&format!("{ex}io_max = \"riops=100\"")).contains("io_max needs controller"));
        let iomax = format!("controller = \"io.max\"\n{ex}io_max = \"riops=abc\"");
        assert!(e(&iomax).contains("export `a`: io.max: `riops=abc`: expected an integer"));
        let iomax = format!("controller = \"io.max\"\n{ex}io_max = \"8:0 riops=100\"");
        assert!(e(&iomax).contains("`8:0`: expected KEY=VALUE"));
        let lat = format!("controller = \"io.latency\"\n{ex}io_latency = \"target=x\"");
        assert!(e(&lat).contains("export `a`: io.latency: `target=x`"));
        assert!(
            e(&format!("{ex}io_latency = \"target=5\"")).contains("io_latency needs controller")
        );
        let cost = |extra: &str| e(&format!("controller = \"io.cost\"\n{extra}\n{ex}"));
        assert!(cost("io_cost_qos = \"rpct=abc\"").contains("io.cost.qos: `rpct=abc`"));
        assert!(
            cost("io_cost_model = \"speed=1\"").contains("io.cost.model: `speed=1`: unknown key")
        );
        assert!(
            e(&format!("io_cost_qos = \"rlat=5\"\n{ex}")).contains("need controller = \"io.cost\"")
        );
        let heavy = format!("controller = \"io.cost\"\n{ex}weight = 20000");
        assert!(e(&heavy).contains("out of io.weight's range 1-10000"));
        let ok = format!("controller = \"mclock\"\n{ex}reservation_iops = 100\nlimit_iops = 200");
        let c = ServerConfig::from_toml_str(&ok).unwrap();
        assert_eq!((c.exports[0].reservation_iops, c.exports[0].limit_iops), (100, 200));
        let dup = "[[export]]\nname=\"a\"\npath=\"/x\"\n[[export]]\nname=\"a\"\npath=\"/y\"";
        assert!(e(dup).contains("twice"));
        let tls = "tls = \"require\"\n[[export]]\nname=\"a\"\npath=\"/x\"";
        assert!(e(tls).contains("tls_cert"));
        assert!(e(&tls.replace("require", "sometimes")).contains("sometimes"));
        for kb in ["0", "6", "65536"] {
            let t = format!("max_sectors_kb = {kb}\n[[export]]\nname=\"a\"\npath=\"/x\"");
            assert!(e(&t).contains("multiple of 4"), "{kb}");
        }
        let ra = "read_ahead_kb = 2000000\n[[export]]\nname=\"a\"\npath=\"/x\"";
        assert!(e(ra).contains("read_ahead_kb 2000000"));
        let ex = "\n[[export]]\nname=\"a\"\npath=\"/x\"";
        assert!(e(&format!("memory_limit = \"1MiB\"{ex}")).contains("at least"));
        assert!(e(&format!("memory_limit = \"1 parsec\"{ex}")).contains("unknown unit"));
        assert!(e(&format!("max_connections = 0{ex}")).contains("max_connections 0"));
        assert!(e(&format!("max_handshakes = 100000{ex}")).contains("max_handshakes"));
        assert!(e(&format!("handshake_timeout_ms = 0{ex}")).contains("handshake_timeout_ms"));
        assert!(e(&format!("stall_timeout_ms = 0{ex}")).contains("stall_timeout_ms"));
        assert!(e(&format!("socket_mode = 0o7777{ex}")).contains("socket_mode"));
        assert!(e(&format!("tls_verify_client = true{ex}")).contains("tls_ca"));
        let names = "[[export]]\nname=\"a\"\npath=\"/x\"\nallow_names=[\"c\"]";
        assert!(e(names).contains("need tls and tls_ca"));
        let ok = ServerConfig::from_toml_str(&format!("memory_limit = \"512MiB\"{ex}")).unwrap();
        assert_eq!(ok.memory_limit, Some(512 << 20));
        assert_eq!(ok.tcp_listen(), Some("127.0.0.1:10809"));
        let unix = ServerConfig::from_toml_str(&format!("unix_socket = \"/s\"{ex}")).unwrap();
        assert_eq!(unix.tcp_listen(), None, "unix_socket alone: no TCP");
    }
}
