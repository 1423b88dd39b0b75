//! Topology files: which devices exist, what they are, how they are partitioned, and which
//! scheduler runs in front of each.
//!
//! ```toml
//! [[device]]
//! name = "sda"
//! model = "hdd"                 # "hdd", "ssd", "nvme" or "ram"
//! preset = "sata-7200-2009"     # hdd presets: "sata-7200-2009", "ide-2003"
//!                               # ssd/nvme presets: "sata-ssd-2015", "nvme-pcie3-2018"
//! scheduler = "mq-deadline"     # as /sys/block/sda/queue/scheduler
//! nr_requests = 128             # /sys/block/sda/queue/nr_requests
//! max_sectors_kb = 512          # /sys/block/sda/queue/max_sectors_kb
//! wbt_lat_usec = 75000          # writeback throttling's read latency target; 0 turns it off
//! [device.params]               # override any parameter of the model
//! queue_depth = 31
//! [device.iosched]              # /sys/block/sda/queue/iosched/*
//! read_expire = 500
//!
//! [[partition]]
//! name = "sda1"
//! device = "sda"
//! start = "1MiB"
//! size = "200GiB"
//!
//! [[cgroup]]                    # cgroup v2 interface files of a cgroup jobs name
//! path = "batch"
//! "io.max" = "8:0 riops=2000"   # one line or a list; 8:0, 8:16, ... by device order
//! "io.prio.class" = "restrict-to-be"
//! ```
//!
//! Without a topology file the simulator uses [`Topology::builtin`]: one 7200 rpm SATA disk
//! with NCQ 31 under mq-deadline. Errors name the file and line and say what to write instead.

use std::path::Path;

use elevator_control::ioband::{
    BwRange, GroupType, IobandVersion, Policy, ShareSettings, MAX_IO_LIMIT, MAX_TOKEN_BASE,
};
use elevator_control::iocost::{
    parse_io_weight_line, parse_weight_line, AutopClass, IoCostModel, IoCostQos,
};
use elevator_control::iolatency::parse_io_latency_keys;
use elevator_control::prio_class::IoPrioClassPolicy;
use elevator_control::throttle::IoMax;
use elevator_core::text::{line_of, one_line, toml_message_at};
use elevator_core::{Nanos, RandomStream};
use elevator_device::array::{Array, ControllerCache, FrontEnd, Layout};
use elevator_device::hdd::{Hdd, HddParams};
use elevator_device::link::LinkParams;
use elevator_device::ram::{RamDevice, RamParams};
use elevator_device::ssd::{Ssd, SsdParams};
use elevator_device::Device;
use elevator_sched::bfq::{BFQ_MAX_WEIGHT, BFQ_MIN_WEIGHT};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::filesystem::{FilesystemSpec, RawFilesystem};
use crate::machine::{MachineSpec, RawMachine};
use crate::units::{parse_duration_ns, parse_rate_bytes_per_sec, parse_size_bytes};

/// The kernel's default `nr_requests` for a scheduler queue (`BLKDEV_DEFAULT_RQ`).
pub const DEFAULT_NR_REQUESTS: u32 = 128;
/// dm-ioband's default weight of a device's default group (`weight` in its table line).
pub const DEFAULT_IOBAND_WEIGHT: u32 = 100;
/// The default `max_sectors_kb`: requests are split above 512 KiB.
pub const DEFAULT_MAX_SECTORS_KB: u32 = 512;
/// The default `read_ahead_kb` (`VM_MAX_READAHEAD`, 128 KiB).
pub const DEFAULT_READ_AHEAD_KB: u32 = 128;
/// The most `read_ahead_kb` may be (64 MiB).
pub const MAX_READ_AHEAD_KB: u32 = 64 << 10;

/// The model under one device, with its parameters resolved.
#[derive(Clone, Debug, PartialEq)]
pub enum DeviceModel {
    Ram(RamParams),
    /// A hard disk and its capacity (from its zone table, computed when it was checked).
    Hdd {
        params: HddParams,
        capacity_bytes: u64,
    },
    /// A flash SSD (SATA or NVMe) and its capacity (raw flash less over-provisioning).
    Ssd {
        params: SsdParams,
        capacity_bytes: u64,
    },
    /// A RAID-0 (striped) or linear array of identical members behind one queue.
    Array {
        layout: Layout,
        members: u32,
        member: Box<DeviceModel>,
        queue_depth: u32,
        /// The host link and controller overhead every command pays.
        front: FrontEnd,
        /// A hardware array's controller cache and read-ahead, if it has one.
        cache: Option<ControllerCache>,
    },
}

/// Hard-disk presets by name.
pub const HDD_PRESETS: &[&str] = &["sata-7200-2009", "ide-2003"];
/// SSD presets by name (models `ssd` and `nvme` take either; `ssd` defaults to the first,
/// `nvme` to the second).
pub const SSD_PRESETS: &[&str] = &["sata-ssd-2015", "nvme-pcie3-2018"];

impl DeviceModel {
    /// Builds the device; its random stream (a disk's rotational phase) is `stream` of `seed`.
    pub fn build(&self, seed: u64, stream: u32) -> Box<dyn Device> {
        match self {
            DeviceModel::Ram(p) => Box::new(RamDevice::new(p.clone())),
            DeviceModel::Hdd { params, .. } => Box::new(
                Hdd::new(params.clone(), &mut RandomStream::new(seed, stream))
                    .expect("parameters were checked when the topology was read"),
            ),
            DeviceModel::Ssd { params, .. } => Box::new(
                Ssd::new(params.clone())
                    .expect("parameters were checked when the topology was read"),
            ),
            DeviceModel::Array { layout, members, member, queue_depth, front, cache } => {
                let parts = (0..*members).map(|m| member.build(seed, stream + 1 + m)).collect();
                let array = Array::new(*layout, parts, *queue_depth)
                    .expect("checked when the topology was read")
                    .with_front_end(*front);
                Box::new(match cache {
                    Some(c) => array.with_cache(*c),
                    None => array,
                })
            }
        }
    }

    pub fn capacity_bytes(&self) -> u64 {
        match self {
            DeviceModel::Ram(p) => p.capacity_bytes,
            DeviceModel::Hdd { capacity_bytes, .. } => *capacity_bytes,
            DeviceModel::Ssd { capacity_bytes, .. } => *capacity_bytes,
            DeviceModel::Array { layout, members, member, .. } => match layout {
                Layout::Striped { chunk_bytes } => {
                    member.capacity_bytes() / chunk_bytes * chunk_bytes * u64::from(*members)
                }
                Layout::Linear => member.capacity_bytes() * u64::from(*members),
            },
        }
    }
}

/// One device of the topology.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceSpec {
    pub name: String,
    pub model: DeviceModel,
    pub scheduler: String,
    /// Tunables to set on the scheduler, in file order, as sysfs text.
    pub iosched: Vec<(String, String)>,
    pub nr_requests: u32,
    pub max_sectors_kb: u32,
    /// `/sys/block/<dev>/queue/read_ahead_kb`.
    pub read_ahead_kb: u32,
    /// `/sys/block/<dev>/queue/wbt_lat_usec` as set (0: off); `None` for the kernel's default.
    pub wbt_lat_usec: Option<u64>,
}

/// A named byte range of a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    pub name: String,
    pub device: usize,
    pub start_bytes: u64,
    pub size_bytes: u64,
}

/// Where I/O to a name goes first: straight into a device's block layer, or into a volume
/// (device-mapper target) that remaps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Route {
    Device(usize),
    Volume(usize),
}

/// What a job's `filename` (or a volume's member) resolves to: a byte range of a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    pub route: Route,
    pub start_bytes: u64,
    pub size_bytes: u64,
}

/// What a volume does with the I/O sent to it.
#[derive(Clone, Debug, PartialEq)]
pub enum VolumeKind {
    /// `dm-linear`: the members' ranges one after another.
    Linear,
    /// `dm-stripe` (an LVM striped LV): `chunk_bytes` chunks round-robin over the members.
    Striped { chunk_bytes: u64 },
    /// A virtual machine's disk: the guest may have `limit` requests in flight (its own
    /// `nr_requests`), and the host issues them as process `pid` (blkback or tapdisk).
    Guest { limit: u32, pid: Option<u32> },
    /// A dm-ioband device: device `device` of ioband device group `share`.
    Ioband { share: usize, device: usize },
    /// A remote disk (an iSCSI LUN): the initiator keeps up to `queue_depth` commands in
    /// flight, they cross `link`, and `threads` target threads (pids `pid_base`..) submit them
    /// to the member, each in its own I/O context or all in one.
    Remote(RemoteSpec),
}

/// The initiator, link and target-thread side of a remote disk.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RemoteSpec {
    pub link: LinkParams,
    /// Commands the initiator keeps in flight (open-iscsi's per-LUN `queue_depth`).
    pub queue_depth: u32,
    /// Target I/O threads; a command waits for a free one.
    pub threads: u32,
    /// All threads in one I/O context (CLONE_IO, SCST's fix of seed 002) or each its own.
    pub shared_context: bool,
    /// Pid of the first target thread; the others follow.
    pub pid_base: u32,
    /// The target reads through its page cache (SCST's `vdisk_fileio`), with readahead on
    /// the exported device; otherwise it submits commands to the device as they come
    /// (`vdisk_blockio`). Writes go to the device either way (write-through).
    pub fileio: bool,
    /// With `fileio`: all threads read through one open file (one readahead state) rather
    /// than each through its own.
    pub shared_readahead: bool,
}

impl RemoteSpec {
    /// Who target thread `thread` is: a kernel thread of the target in the root cgroup, in
    /// its own I/O context or the one all threads share.
    pub fn thread_owner(&self, thread: u32, job: u32) -> elevator_core::Owner {
        let pid = self.pid_base + thread;
        elevator_core::Owner {
            job,
            pid,
            pgrp: self.pid_base,
            uid: 0,
            gid: 0,
            io_context: if self.shared_context { self.pid_base } else { pid },
            cgroup: 0,
            prio: elevator_core::IoPrio::DEFAULT,
        }
    }
}

/// open-iscsi's default per-LUN queue depth (`node.session.queue_depth`).
pub const DEFAULT_REMOTE_QUEUE_DEPTH: u32 = 32;
/// Target I/O threads of a `blockio` volume: SCST's `scst_threads` default of 2009 was one
/// per CPU; seed 002's target had 8 (assumption: a 4-core box with hyper-threading).
/// Deviation: SCST's is one pool for all its devices, here each volume has its own.
pub const DEFAULT_TARGET_THREADS: u32 = 8;
/// Target I/O threads of a `fileio` volume: SCST's FILEIO handler gives each device a pool
/// of its own, `num_threads` of them, 5 by default (`DEF_NUM_THREADS` in
/// `scst/src/dev_handlers/scst_vdisk.c`, March 2009).
pub const DEFAULT_FILEIO_THREADS: u32 = 5;
/// Target threads get pids from here on (10,000 per remote volume), clear of fio's.
pub const TARGET_PID_BASE: u32 = 1_000_000;

/// A dm-ioband device group: the ioband devices on one disk whose groups compete.
#[derive(Clone, Debug, PartialEq)]
pub struct IobandShareSpec {
    pub name: String,
    pub settings: ShareSettings,
    /// `io_limit` was not given: its first device's queue sets it, as `ioband_ctr` does
    /// with an `io_limit` of 0.
    pub io_limit_from_queue: bool,
    /// Its devices, in order: the volume's name, group type, default weight, and extra
    /// groups by id as written (a number, or a cgroup path).
    pub devices: Vec<IobandDeviceSpec>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct IobandDeviceSpec {
    pub name: String,
    pub group_type: GroupType,
    pub weight: u32,
    pub groups: Vec<(String, u32)>,
    /// Under `range-bw`: the default group's range, then each extra group's.
    pub ranges: Vec<BwRange>,
}

/// A device-mapper target: a named address space built on devices, partitions or earlier
/// volumes. Each member keeps its own block layer and scheduler below.
#[derive(Clone, Debug, PartialEq)]
pub struct Volume {
    pub name: String,
    pub kind: VolumeKind,
    pub members: Vec<Target>,
    pub size_bytes: u64,
    /// The volume's own `read_ahead_kb` (device-mapper devices have one).
    pub read_ahead_kb: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    /// Where it came from, for messages ("built-in" or a path).
    pub source: String,
    pub devices: Vec<DeviceSpec>,
    pub partitions: Vec<Partition>,
    pub volumes: Vec<Volume>,
    pub ioband: Vec<IobandShareSpec>,
    /// The machine the jobs run on: memory, kernel, page-cache sysctls.
    pub machine: MachineSpec,
    /// ext3 file systems on devices, partitions or volumes.
    pub filesystems: Vec<FilesystemSpec>,
    /// cgroup v2 `io.max` lines of the `[[cgroup]]` tables, per cgroup path and device.
    pub io_max: Vec<CgroupIoMax>,
    /// cgroup v2 `io.latency` targets, per cgroup path and device.
    pub io_latency: Vec<CgroupIoLatency>,
    /// cgroup v2 `io.prio.class` policies, per cgroup path.
    pub io_prio_class: Vec<(String, IoPrioClassPolicy)>,
    /// cgroup v2 `io.weight`, per cgroup path.
    pub io_weight: Vec<CgroupIoWeight>,
    /// BFQ's `io.bfq.weight`, per cgroup path (read by BFQ alone).
    pub io_bfq_weight: Vec<CgroupIoWeight>,
    /// The root cgroup's `io.cost.qos` and `io.cost.model` lines, per device, in order.
    pub io_cost: Vec<DeviceIoCost>,
    /// mClock settings (reservation, weight, limit) per cgroup path and device.
    pub mclock: Vec<CgroupMclock>,
}

/// A cgroup's mClock settings on one device (`mclock = "8:0 reservation_iops=500 ..."`):
/// not a kernel file — dmClock is not in Linux — but written the same way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupMclock {
    pub path: String,
    pub device: usize,
    pub reservation_iops: u32,
    pub weight: u32,
    pub limit_iops: u32,
}

/// A cgroup's `io.weight` (or `io.bfq.weight`): its default, and per-device weights.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CgroupIoWeight {
    pub path: String,
    pub default: Option<u32>,
    pub per_device: Vec<(usize, u32)>,
}

impl CgroupIoWeight {
    /// The weight on device `d`, if the cgroup set one.
    pub fn on(&self, d: usize) -> Option<u32> {
        self.per_device.iter().find(|(x, _)| *x == d).map(|&(_, w)| w).or(self.default)
    }
}

/// The root cgroup's blk-iocost files for one device. The keys are kept as written (already
/// checked) because what `ctrl=auto` means depends on the device's class, known when the
/// device is built.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceIoCost {
    pub device: usize,
    /// `io.cost.qos` keys after `MAJ:MIN`, one entry per line, in order.
    pub qos: Vec<String>,
    pub model: Vec<String>,
}

impl DeviceIoCost {
    /// The settings for a device of `class`: the lines applied in order to its automatic ones.
    pub fn settings(&self, class: AutopClass) -> Result<(IoCostQos, IoCostModel), String> {
        let mut qos = IoCostQos::auto(class);
        for keys in &self.qos {
            qos = IoCostQos::parse_keys(keys, qos)?;
        }
        let mut model = IoCostModel::auto(class);
        for keys in &self.model {
            model = IoCostModel::parse_keys(keys, model)?;
        }
        Ok((qos, model))
    }
}

/// One `io.latency` line of a cgroup: its latency target on device `device`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupIoLatency {
    pub path: String,
    pub device: usize,
    pub target_ns: u64,
}

/// One `io.max` line of a cgroup: the limits of cgroup `path` on device `device`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupIoMax {
    /// The cgroup path as jobs name it (`cgroup=`), without leading or trailing slashes.
    pub path: String,
    pub device: usize,
    pub limits: IoMax,
}

/// The device number `io.max` lines use for device `index`: `8:0`, `8:16`, `8:32`, … in
/// topology order, as SCSI disks `sda`, `sdb`, `sdc`, … are numbered.
pub fn device_number(index: usize) -> (u32, u32) {
    (8, 16 * index as u32)
}

/// Most `[[cgroup]]` tables, and `io.max` lines per cgroup, a topology may hold.
pub const MAX_CGROUP_TABLES: usize = 4096;
pub const MAX_IO_MAX_LINES: usize = 256;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTopology {
    machine: Option<Spanned<RawMachine>>,
    #[serde(default)]
    device: Vec<Spanned<RawDevice>>,
    #[serde(default)]
    partition: Vec<Spanned<RawPartition>>,
    #[serde(default)]
    volume: Vec<Spanned<RawVolume>>,
    #[serde(default)]
    ioband: Vec<Spanned<RawIoband>>,
    #[serde(default)]
    filesystem: Vec<Spanned<RawFilesystem>>,
    #[serde(default)]
    cgroup: Vec<Spanned<RawCgroup>>,
}

/// A `[[cgroup]]` table: cgroup v2 interface files of one cgroup, as their text.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCgroup {
    path: String,
    /// One `io.max` line (`"8:16 riops=2000"`) or several.
    #[serde(rename = "io.max")]
    io_max: Option<OneOrMany>,
    /// One `io.latency` line (`"8:16 target=10000"`, microseconds) or several.
    #[serde(rename = "io.latency")]
    io_latency: Option<OneOrMany>,
    /// `no-change`, `promote-to-rt`, `restrict-to-be` or `idle`.
    #[serde(rename = "io.prio.class")]
    io_prio_class: Option<String>,
    /// `"default 200"`, `"8:16 50"`, or several lines.
    #[serde(rename = "io.weight")]
    io_weight: Option<OneOrMany>,
    /// BFQ's group weight, `io.weight`'s grammar with weights 1-1000 (`bfq_io_set_weight`).
    #[serde(rename = "io.bfq.weight")]
    io_bfq_weight: Option<OneOrMany>,
    /// The root's only: `"8:16 enable=1 rpct=95 rlat=10000"` (blk-iocost's QoS).
    #[serde(rename = "io.cost.qos")]
    io_cost_qos: Option<OneOrMany>,
    /// The root's only: `"8:16 ctrl=user model=linear rbps=... rrandiops=..."`.
    #[serde(rename = "io.cost.model")]
    io_cost_model: Option<OneOrMany>,
    /// `"8:16 reservation_iops=500 weight=100 limit_iops=2000"`: the cgroup's mClock group on
    /// the device (elevator's, not a kernel file).
    mclock: Option<OneOrMany>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIoband {
    name: String,
    policy: Policy,
    token_base: Option<u64>,
    io_throttle: Option<u32>,
    io_limit: Option<u32>,
    /// Whose rules: "1.10" (the default) or "1.14".
    version: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVolume {
    name: String,
    target: String,
    over: Vec<String>,
    chunk: Option<SizeValue>,
    limit: Option<u32>,
    pid: Option<u32>,
    /// ioband: the device group, the default group's weight, how bios are grouped, and
    /// extra groups (id -> weight).
    share: Option<String>,
    weight: Option<u32>,
    /// range-bw: the default group's minimum and maximum, KB/s.
    min_bw: Option<u64>,
    max_bw: Option<u64>,
    group_type: Option<GroupType>,
    #[serde(default)]
    groups: toml::Table,
    /// iscsi: link rate, round trip and per-command target overhead; the initiator's queue
    /// depth; the target's threads and whether they share one I/O context.
    bandwidth: Option<String>,
    rtt: Option<String>,
    overhead: Option<String>,
    queue_depth: Option<u32>,
    threads: Option<u32>,
    io_context: Option<String>,
    read_ahead_kb: Option<u32>,
    /// iscsi: "blockio" (default) or "fileio" (through the target's page cache), and with
    /// fileio whether the threads share one readahead state ("shared") or not ("per_thread").
    target_io: Option<String>,
    readahead_state: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDevice {
    name: String,
    model: String,
    preset: Option<String>,
    scheduler: Option<String>,
    nr_requests: Option<u32>,
    max_sectors_kb: Option<u32>,
    read_ahead_kb: Option<u32>,
    wbt_lat_usec: Option<u64>,
    params: Option<toml::Table>,
    iosched: Option<toml::Table>,
    /// Arrays: the members' count, model and chunk size, and the array's queue depth.
    members: Option<u32>,
    member: Option<RawMember>,
    chunk: Option<SizeValue>,
    queue_depth: Option<u32>,
    /// Hardware arrays: controller cache, sequential read-ahead window, write-back caching,
    /// host link rate and controller overhead per command.
    controller_cache: Option<SizeValue>,
    read_ahead: Option<SizeValue>,
    write_back: Option<bool>,
    host_link: Option<String>,
    controller_overhead: Option<String>,
    /// `model = "disksim"`: the DiskSim drive directory, relative to the topology file.
    drive: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMember {
    model: String,
    preset: Option<String>,
    params: Option<toml::Table>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPartition {
    name: String,
    device: String,
    start: SizeValue,
    size: SizeValue,
}

/// A size written as a number of bytes or a string with a unit.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum SizeValue {
    Bytes(u64),
    Text(String),
}

impl Topology {
    /// One simulated 7200 rpm SATA disk with NCQ 31 under mq-deadline.
    pub fn builtin() -> Topology {
        Topology {
            source: "built-in".to_string(),
            devices: vec![DeviceSpec {
                name: "sda".to_string(),
                model: hdd_model(HddParams::sata_7200_2009()).expect("the preset is valid"),
                scheduler: "mq-deadline".to_string(),
                iosched: Vec::new(),
                nr_requests: DEFAULT_NR_REQUESTS,
                max_sectors_kb: DEFAULT_MAX_SECTORS_KB,
                read_ahead_kb: DEFAULT_READ_AHEAD_KB,
                wbt_lat_usec: None,
            }],
            partitions: Vec::new(),
            volumes: Vec::new(),
            ioband: Vec::new(),
            machine: MachineSpec::default_machine(),
            filesystems: Vec::new(),
            io_max: Vec::new(),
            io_latency: Vec::new(),
            io_prio_class: Vec::new(),
            io_weight: Vec::new(),
            io_bfq_weight: Vec::new(),
            io_cost: Vec::new(),
            mclock: Vec::new(),
        }
    }

    pub fn from_file(path: &Path) -> Result<Topology, String> {
        let text = read_bounded(path, MAX_TOPOLOGY_BYTES)
            .map_err(|e| format!("{}: cannot read topology file: {e}", path.display()))?;
        Topology::from_str(&text, &path.display().to_string())
    }

    /// Parses topology text; `name` labels messages, which name the line of the key at fault
    /// (or of its table).
    pub fn from_str(text: &str, name: &str) -> Result<Topology, String> {
        Topology::from_str_at_tables(text, name)
            .map_err(|e| crate::key_line::at_named_key(text, name, e))
    }

    /// [`Topology::from_str`] with errors about a table at its header line.
    fn from_str_at_tables(text: &str, name: &str) -> Result<Topology, String> {
        let raw: RawTopology = toml::from_str(text).map_err(|e| toml_error(name, text, &e))?;
        let at = |span: std::ops::Range<usize>| format!("{name}:{}", line_of(text, span.start));
        if raw.device.is_empty() {
            return Err(format!(
                "{name}: no [[device]] tables; a topology needs at least one device"
            ));
        }
        let mut devices = Vec::new();
        for spanned in &raw.device {
            let loc = at(spanned.span());
            let d = spanned.get_ref();
            if devices.iter().any(|x: &DeviceSpec| x.name == d.name) {
                return Err(format!("{loc}: device `{}` is defined twice", d.name));
            }
            let base = Path::new(name).parent().unwrap_or(Path::new(""));
            let model = build_model(d, &loc, base)?;
            let scheduler = d.scheduler.clone().unwrap_or_else(|| "mq-deadline".to_string());
            let mut iosched = Vec::new();
            for (key, value) in d.iosched.iter().flatten() {
                let text = match value {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Integer(i) => i.to_string(),
                    toml::Value::Boolean(b) => u8::from(*b).to_string(),
                    other => {
                        return Err(format!(
                            "{loc}: device `{}`: iosched `{key}` = {other} must be an integer",
                            d.name
                        ))
                    }
                };
                iosched.push((key.clone(), text));
            }
            // Tunables are checked now, so a typo fails before any simulation runs.
            let mut probe = elevator_sched::by_name(&scheduler)
                .map_err(|e| format!("{loc}: device `{}`: {e}", d.name))?;
            for (key, value) in &iosched {
                probe
                    .set_tunable(key, value)
                    .map_err(|e| format!("{loc}: device `{}`: {e}", d.name))?;
            }
            let nr_requests = d.nr_requests.unwrap_or(DEFAULT_NR_REQUESTS);
            if nr_requests < 4 {
                return Err(format!("{loc}: device `{}`: nr_requests must be at least 4 (the kernel's minimum BLKDEV_MIN_RQ)", d.name));
            }
            let max_sectors_kb = d.max_sectors_kb.unwrap_or(DEFAULT_MAX_SECTORS_KB);
            if max_sectors_kb < 4 {
                return Err(format!(
                    "{loc}: device `{}`: max_sectors_kb must be at least 4 (one page)",
                    d.name
                ));
            }
            let read_ahead_kb = check_read_ahead(d.read_ahead_kb)
                .map_err(|e| format!("{loc}: device `{}`: {e}", d.name))?;
            if let Some(usec) = d.wbt_lat_usec {
                let max = elevator_control::wbt::WBT_LAT_MAX_NS / 1000;
                if usec > max {
                    return Err(format!(
                        "{loc}: device `{}`: wbt_lat_usec = {usec} is above {max} (a minute; 0 turns writeback throttling off)",
                        d.name
                    ));
                }
            }
            devices.push(DeviceSpec {
                name: d.name.clone(),
                model,
                scheduler,
                iosched,
                nr_requests,
                max_sectors_kb,
                read_ahead_kb,
                wbt_lat_usec: d.wbt_lat_usec,
            });
        }
        let mut partitions: Vec<Partition> = Vec::new();
        for spanned in &raw.partition {
            let loc = at(spanned.span());
            let p = spanned.get_ref();
            let device = devices.iter().position(|d| d.name == p.device).ok_or_else(|| {
                let names: Vec<&str> = devices.iter().map(|d| d.name.as_str()).collect();
                format!(
                    "{loc}: partition `{}`: no device `{}`; devices are: {}",
                    p.name,
                    p.device,
                    names.join(", ")
                )
            })?;
            if devices.iter().any(|d| d.name == p.name)
                || partitions.iter().any(|q| q.name == p.name)
            {
                return Err(format!(
                    "{loc}: the name `{}` is already used by a device or partition",
                    p.name
                ));
            }
            let start_bytes = size_value(&p.start)
                .map_err(|e| format!("{loc}: partition `{}`: start {e}", p.name))?;
            let size_bytes = size_value(&p.size)
                .map_err(|e| format!("{loc}: partition `{}`: size {e}", p.name))?;
            if start_bytes % 512 != 0 || size_bytes % 512 != 0 || size_bytes == 0 {
                return Err(format!(
                    "{loc}: partition `{}`: start and size must be non-zero multiples of 512 bytes",
                    p.name
                ));
            }
            let capacity = devices[device].model.capacity_bytes();
            if start_bytes.checked_add(size_bytes).is_none_or(|end| end > capacity) {
                return Err(format!(
                    "{loc}: partition `{}` ends past the end of `{}` ({capacity} bytes); shrink it or move its start",
                    p.name, p.device
                ));
            }
            if let Some(q) = partitions.iter().find(|q| {
                q.device == device
                    && start_bytes < q.start_bytes + q.size_bytes
                    && q.start_bytes < start_bytes + size_bytes
            }) {
                return Err(format!(
                    "{loc}: partition `{}` overlaps partition `{}`",
                    p.name, q.name
                ));
            }
            partitions.push(Partition { name: p.name.clone(), device, start_bytes, size_bytes });
        }
        let mut ioband: Vec<IobandShareSpec> = Vec::new();
        for spanned in &raw.ioband {
            let loc = at(spanned.span());
            let r = spanned.get_ref();
            if ioband.iter().any(|x| x.name == r.name) {
                return Err(format!("{loc}: ioband device group `{}` is defined twice", r.name));
            }
            let d = ShareSettings::default();
            let version = match r.version.as_deref() {
                None | Some("1.10") => IobandVersion::V1_10,
                Some("1.14") => IobandVersion::V1_14,
                Some(other) => {
                    return Err(format!(
                        "{loc}: ioband `{}`: version = \"{other}\": use \"1.10\" (the default) or \"1.14\" (v1.14.0, for 2.6.31)",
                        r.name
                    ))
                }
            };
            let mut settings = ShareSettings {
                policy: r.policy,
                token_base: r.token_base.unwrap_or(d.token_base),
                io_throttle: r.io_throttle.unwrap_or(d.io_throttle),
                io_limit: r.io_limit.unwrap_or(d.io_limit),
                version,
            };
            // v1.14's `ioband_ctr` raises an io_limit below io_throttle to it.
            if version == IobandVersion::V1_14 && settings.io_limit > 0 {
                settings.io_limit = settings.io_limit.max(settings.io_throttle);
            }
            if r.token_base == Some(0) || settings.io_limit == 0 {
                return Err(format!(
                    "{loc}: ioband `{}`: token_base and io_limit must be at least 1",
                    r.name
                ));
            }
            if settings.token_base > MAX_TOKEN_BASE || settings.io_limit > MAX_IO_LIMIT {
                return Err(format!(
                    "{loc}: ioband `{}`: token_base must be at most {MAX_TOKEN_BASE} and io_limit at most {MAX_IO_LIMIT}",
                    r.name
                ));
            }
            ioband.push(IobandShareSpec {
                name: r.name.clone(),
                settings,
                io_limit_from_queue: r.io_limit.is_none(),
                devices: Vec::new(),
            });
        }
        let machine = match &raw.machine {
            Some(m) => m.get_ref().build().map_err(|e| format!("{}: {e}", at(m.span())))?,
            None => MachineSpec::default_machine(),
        };
        // Writeback throttling came with 4.10: a named older kernel cannot have it set.
        for spanned in &raw.device {
            let d = spanned.get_ref();
            if d.wbt_lat_usec.is_none_or(|u| u == 0) || !machine.kernel_named {
                continue;
            }
            if let Some(why) = crate::era::wbt_missing(machine.vm.kernel) {
                return Err(format!(
                    "{}: device `{}`: wbt_lat_usec: {why}; remove it or set 0",
                    at(spanned.span()),
                    d.name
                ));
            }
        }
        let (io_max, io_latency) = build_cgroup_files(&raw.cgroup, &devices, &at)?;
        let (io_weight, io_cost) = build_iocost_files(&raw.cgroup, &devices, &at)?;
        let io_bfq_weight = build_bfq_weights(&raw.cgroup, &devices, &at)?;
        let mclock = build_mclock_lines(&raw.cgroup, &devices, &at)?;
        let mut io_prio_class: Vec<(String, IoPrioClassPolicy)> = Vec::new();
        for spanned in &raw.cgroup {
            let c = spanned.get_ref();
            if let Some(v) = &c.io_prio_class {
                let policy = IoPrioClassPolicy::parse(v)
                    .map_err(|e| format!("{}: cgroup `{}`: {e}", at(spanned.span()), c.path))?;
                let path = c.path.trim_matches('/').to_string();
                io_prio_class.retain(|(p, _)| *p != path);
                io_prio_class.push((path, policy));
            }
        }
        let mut topology = Topology {
            source: name.to_string(),
            devices,
            partitions,
            volumes: Vec::new(),
            ioband,
            machine,
            filesystems: Vec::new(),
            io_max,
            io_latency,
            io_prio_class,
            io_weight,
            io_bfq_weight,
            io_cost,
            mclock,
        };
        for spanned in &raw.volume {
            let loc = at(spanned.span());
            let volume = build_volume(&mut topology, spanned.get_ref())
                .map_err(|e| format!("{loc}: volume `{}`: {e}", spanned.get_ref().name))?;
            topology.volumes.push(volume);
        }
        for spanned in &raw.filesystem {
            let loc = at(spanned.span());
            let r = spanned.get_ref();
            let t = topology.target(&r.on).map_err(|e| format!("{loc}: filesystem: {e}"))?;
            let fs = r
                .build((t.route, t.start_bytes, t.size_bytes))
                .map_err(|e| format!("{loc}: filesystem on `{}`: {e}", r.on))?;
            let overlaps = topology.filesystems.iter().any(|o| {
                o.route == fs.route
                    && o.start_bytes < fs.start_bytes + fs.len_bytes
                    && fs.start_bytes < o.start_bytes + o.len_bytes
            });
            if overlaps {
                return Err(format!("{loc}: filesystem on `{}` overlaps another one", r.on));
            }
            topology.filesystems.push(fs);
        }
        Ok(topology)
    }

    /// Marks in `reached` (one flag per device) the devices I/O sent to `route` ends on: the
    /// device itself, or every device under a volume's members (devices, partitions and
    /// earlier volumes), each volume walked once however many volumes share it.
    pub fn mark_devices_under(&self, route: Route, reached: &mut [bool]) {
        let mut seen = vec![false; self.volumes.len()];
        let mut todo = vec![route];
        while let Some(route) = todo.pop() {
            match route {
                Route::Device(d) => reached[d] = true,
                Route::Volume(v) if !seen[v] => {
                    seen[v] = true;
                    todo.extend(self.volumes[v].members.iter().map(|m| m.route));
                }
                Route::Volume(_) => {}
            }
        }
    }

    /// Resolves a job's `filename` (a device, partition or volume name; `/dev/` and
    /// `/dev/mapper/` prefixes optional).
    pub fn target(&self, filename: &str) -> Result<Target, String> {
        let name = filename.strip_prefix("/dev/").unwrap_or(filename);
        let name = name.strip_prefix("mapper/").unwrap_or(name);
        if let Some(device) = self.devices.iter().position(|d| d.name == name) {
            return Ok(Target {
                route: Route::Device(device),
                start_bytes: 0,
                size_bytes: self.devices[device].model.capacity_bytes(),
            });
        }
        if let Some(p) = self.partitions.iter().find(|p| p.name == name) {
            return Ok(Target {
                route: Route::Device(p.device),
                start_bytes: p.start_bytes,
                size_bytes: p.size_bytes,
            });
        }
        if let Some(v) = self.volumes.iter().position(|v| v.name == name) {
            return Ok(Target {
                route: Route::Volume(v),
                start_bytes: 0,
                size_bytes: self.volumes[v].size_bytes,
            });
        }
        let mut names: Vec<&str> = self.devices.iter().map(|d| d.name.as_str()).collect();
        names.extend(self.partitions.iter().map(|p| p.name.as_str()));
        names.extend(self.volumes.iter().map(|v| v.name.as_str()));
        Err(format!(
            "filename `{filename}` is not a device, partition or volume of the topology ({}); known names: {}",
            self.source,
            names.join(", ")
        ))
    }
}

fn build_volume(topology: &mut Topology, v: &RawVolume) -> Result<Volume, String> {
    if topology.devices.iter().any(|d| d.name == v.name)
        || topology.partitions.iter().any(|p| p.name == v.name)
        || topology.volumes.iter().any(|x| x.name == v.name)
    {
        return Err("the name is already used by a device, partition or volume".to_string());
    }
    if v.over.is_empty() {
        return Err("`over` must name at least one device, partition or earlier volume".to_string());
    }
    let members = v.over.iter().map(|m| topology.target(m)).collect::<Result<Vec<_>, _>>()?;
    let ioband_fields =
        v.share.is_some() || v.weight.is_some() || v.group_type.is_some() || !v.groups.is_empty();
    let remote_fields = v.bandwidth.is_some()
        || v.rtt.is_some()
        || v.overhead.is_some()
        || v.queue_depth.is_some()
        || v.threads.is_some()
        || v.io_context.is_some()
        || v.target_io.is_some()
        || v.readahead_state.is_some();
    if remote_fields && v.target != "iscsi" {
        return Err("`bandwidth`, `rtt`, `overhead`, `queue_depth`, `threads`, `io_context`, `target_io` and `readahead_state` apply only to iscsi targets".to_string());
    }
    if ioband_fields && v.target != "ioband" {
        return Err(
            "`share`, `weight`, `group_type` and `groups` apply only to ioband targets".to_string()
        );
    }
    let only = |what: &str| -> Result<(), String> {
        if v.chunk.is_some() || v.limit.is_some() || v.pid.is_some() {
            return Err(format!("`chunk`, `limit` and `pid` do not apply to a {what} target"));
        }
        Ok(())
    };
    let (kind, size_bytes) = match v.target.as_str() {
        "linear" => {
            only("linear")?;
            (VolumeKind::Linear, members.iter().map(|m| m.size_bytes / 512 * 512).sum())
        }
        "striped" => {
            let chunk_bytes = match &v.chunk {
                Some(c) => size_value(c).map_err(|e| format!("chunk {e}"))?,
                None => {
                    return Err(
                        "a striped target needs `chunk` (e.g. chunk = \"64KiB\")".to_string()
                    )
                }
            };
            if chunk_bytes == 0 || chunk_bytes % 512 != 0 {
                return Err(format!(
                    "chunk {chunk_bytes} must be a non-zero multiple of 512 bytes"
                ));
            }
            if v.limit.is_some() || v.pid.is_some() {
                return Err("`limit` and `pid` apply only to guest targets".to_string());
            }
            let smallest = members.iter().map(|m| m.size_bytes).min().unwrap_or(0);
            (
                VolumeKind::Striped { chunk_bytes },
                smallest / chunk_bytes * chunk_bytes * members.len() as u64,
            )
        }
        "guest" => {
            if members.len() != 1 {
                return Err(
                    "a guest target sits on exactly one device, partition or volume".to_string()
                );
            }
            if v.chunk.is_some() {
                return Err("`chunk` applies only to striped targets".to_string());
            }
            let limit = v.limit.unwrap_or(DEFAULT_NR_REQUESTS);
            if limit == 0 {
                return Err("`limit` must be at least 1".to_string());
            }
            (VolumeKind::Guest { limit, pid: v.pid }, members[0].size_bytes)
        }
        "ioband" => {
            if members.len() != 1 {
                return Err(
                    "an ioband target sits on exactly one device, partition or volume".to_string()
                );
            }
            if v.chunk.is_some() || v.limit.is_some() || v.pid.is_some() {
                return Err(
                    "`chunk`, `limit` and `pid` do not apply to an ioband target".to_string()
                );
            }
            let share_name = v.share.as_deref().ok_or_else(|| {
                "an ioband target needs `share`, the name of an [[ioband]] device group".to_string()
            })?;
            let names: Vec<&str> = topology.ioband.iter().map(|s| s.name.as_str()).collect();
            let share =
                topology.ioband.iter().position(|s| s.name == share_name).ok_or_else(|| {
                    format!(
                        "`share = \"{share_name}\"` names no [[ioband]] device group; defined: {}",
                        if names.is_empty() {
                            "none (add an [[ioband]] table)".to_string()
                        } else {
                            names.join(", ")
                        }
                    )
                })?;
            let range_bw = topology.ioband[share].settings.policy == Policy::RangeBw;
            let weight = v.weight.unwrap_or(DEFAULT_IOBAND_WEIGHT);
            let group_type = v.group_type.unwrap_or(GroupType::None);
            if !v.groups.is_empty() && group_type == GroupType::None {
                return Err(
                    "`groups` needs a `group_type` (pid, pgrp, uid, gid or cgroup)".to_string()
                );
            }
            let mut ranges = Vec::new();
            if range_bw {
                if v.weight.is_some() {
                    return Err(format!("device group `{share_name}` uses range-bw: give `min_bw` and `max_bw` (KB/s) instead of `weight`"));
                }
                let (Some(min_kbs), Some(max_kbs)) = (v.min_bw, v.max_bw) else {
                    return Err(format!("device group `{share_name}` uses range-bw: the volume needs `min_bw` and `max_bw` in KB/s (e.g. min_bw = 1000, max_bw = 5000)"));
                };
                ranges.push(BwRange { min_kbs, max_kbs });
            } else if v.min_bw.is_some() || v.max_bw.is_some() {
                return Err(format!("`min_bw` and `max_bw` apply to range-bw device groups; `{share_name}` uses weights"));
            }
            let mut groups = Vec::new();
            for (id, w) in &v.groups {
                let w = if range_bw {
                    let text = w.as_str().unwrap_or_default();
                    let range = text.split_once(':').and_then(|(a, b)| {
                        Some(BwRange {
                            min_kbs: a.trim().parse().ok()?,
                            max_kbs: b.trim().parse().ok()?,
                        })
                    });
                    let Some(range) = range else {
                        return Err(format!("group `{id}`: under range-bw a group is \"MIN:MAX\" in KB/s (e.g. \"{id}\" = \"1000:5000\"), got {w}"));
                    };
                    ranges.push(range);
                    1
                } else {
                    w.as_integer().filter(|&w| (1..=i64::from(u32::MAX)).contains(&w)).ok_or_else(
                        || format!("group `{id}`: the weight must be a positive integer, got {w}"),
                    )? as u32
                };
                if group_type != GroupType::Cgroup && id.parse::<u32>().is_err() {
                    return Err(format!(
                        "group `{id}`: pid, pgrp, uid and gid groups are named by a number (e.g. \"1000\" = 20)"
                    ));
                }
                groups.push((id.clone(), w));
            }
            if weight == 0 {
                return Err("`weight` must be at least 1".to_string());
            }
            if let Some(r) = ranges.iter().find(|r| r.max_kbs == 0 || r.min_kbs > r.max_kbs) {
                return Err(format!(
                    "range {}:{} KB/s: the maximum must be at least 1 and at least the minimum",
                    r.min_kbs, r.max_kbs
                ));
            }
            let nr_requests = match members[0].route {
                Route::Device(d) => topology.devices[d].nr_requests,
                Route::Volume(_) => DEFAULT_NR_REQUESTS,
            };
            let spec = &mut topology.ioband[share];
            if spec.io_limit_from_queue && spec.devices.is_empty() {
                let s = &mut spec.settings;
                s.io_limit = s.version.default_io_limit(nr_requests, s.io_throttle);
            }
            let devices = &mut spec.devices;
            devices.push(IobandDeviceSpec {
                name: v.name.clone(),
                group_type,
                weight,
                groups,
                ranges,
            });
            (VolumeKind::Ioband { share, device: devices.len() - 1 }, members[0].size_bytes)
        }
        "iscsi" => {
            if members.len() != 1 {
                return Err(
                    "an iscsi target exports exactly one device, partition or volume".to_string()
                );
            }
            if v.chunk.is_some() || v.limit.is_some() {
                return Err("`chunk` and `limit` do not apply to an iscsi target".to_string());
            }
            let mut link = LinkParams::default();
            if let Some(b) = &v.bandwidth {
                link.bandwidth_bytes_per_sec = parse_rate_bytes_per_sec(b)?;
            }
            if let Some(r) = &v.rtt {
                link.rtt_ns = parse_duration_ns(r).map_err(|e| format!("rtt {e}"))?;
            }
            if let Some(o) = &v.overhead {
                link.overhead_ns = parse_duration_ns(o).map_err(|e| format!("overhead {e}"))?;
            }
            let shared_context = match v.io_context.as_deref() {
                None | Some("separate") => false,
                Some("shared") => true,
                Some(other) => {
                    return Err(format!(
                        "io_context = \"{other}\": use \"separate\" (each target thread its own, SCST's old default) or \"shared\" (one for all)"
                    ))
                }
            };
            let queue_depth = v.queue_depth.unwrap_or(DEFAULT_REMOTE_QUEUE_DEPTH);
            let default_threads = if v.target_io.as_deref() == Some("fileio") {
                DEFAULT_FILEIO_THREADS
            } else {
                DEFAULT_TARGET_THREADS
            };
            let threads = v.threads.unwrap_or(default_threads);
            if queue_depth == 0 || threads == 0 {
                return Err("`queue_depth` and `threads` must be at least 1".to_string());
            }
            if threads > 10_000 {
                return Err(format!("threads = {threads}: at most 10000 target threads"));
            }
            let remotes =
                topology.volumes.iter().filter(|x| matches!(x.kind, VolumeKind::Remote(_))).count()
                    as u32;
            let pid_base = v.pid.unwrap_or(TARGET_PID_BASE + 10_000 * remotes);
            let fileio = match v.target_io.as_deref() {
                None | Some("blockio") => false,
                Some("fileio") => true,
                Some(other) => {
                    return Err(format!(
                        "target_io = \"{other}\": use \"blockio\" (commands go to the device) or \"fileio\" (through the target's page cache)"
                    ))
                }
            };
            let shared_readahead = match v.readahead_state.as_deref() {
                None | Some("per_thread") => false,
                Some("shared") => true,
                Some(other) => {
                    return Err(format!(
                        "readahead_state = \"{other}\": use \"per_thread\" or \"shared\""
                    ))
                }
            };
            if v.readahead_state.is_some() && !fileio {
                return Err("readahead_state needs target_io = \"fileio\"".to_string());
            }
            let spec = RemoteSpec {
                link,
                queue_depth,
                threads,
                shared_context,
                pid_base,
                fileio,
                shared_readahead,
            };
            (VolumeKind::Remote(spec), members[0].size_bytes)
        }
        other => {
            return Err(format!(
                "unknown target `{other}`; targets are: linear, striped, guest, ioband, iscsi"
            ))
        }
    };
    if size_bytes == 0 {
        return Err("it has no usable space".to_string());
    }
    let read_ahead_kb = check_read_ahead(v.read_ahead_kb)?;
    Ok(Volume { name: v.name.clone(), kind, members, size_bytes, read_ahead_kb })
}

/// Members of one array: each is a full device model.
pub const MAX_ARRAY_MEMBERS: u32 = 256;
/// Commands an array's controller keeps in flight.
pub const MAX_ARRAY_QUEUE_DEPTH: u32 = 65_536;
/// Bytes of topology text read (a topology is a few dozen lines).
pub const MAX_TOPOLOGY_BYTES: u64 = 1 << 20;

fn build_model(d: &RawDevice, loc: &str, base: &Path) -> Result<DeviceModel, String> {
    let here = |e: String| format!("{loc}: device `{}`: {e}", d.name);
    if d.model == "disksim" || d.drive.is_some() {
        return disksim_model(d, base).map_err(here);
    }
    let array_fields = d.members.is_some()
        || d.member.is_some()
        || d.chunk.is_some()
        || d.queue_depth.is_some()
        || d.controller_cache.is_some()
        || d.read_ahead.is_some()
        || d.write_back.is_some()
        || d.host_link.is_some()
        || d.controller_overhead.is_some();
    match d.model.as_str() {
        "raid0" | "linear" => {
            if d.preset.is_some() || d.params.is_some() {
                return Err(here("an array has no preset or [device.params]; describe its members in [device.member]".into()));
            }
            let members = d
                .members
                .filter(|&m| m >= 1)
                .ok_or_else(|| here("an array needs `members` (≥ 1)".into()))?;
            if members > MAX_ARRAY_MEMBERS {
                return Err(here(format!(
                    "members = {members} is past the limit of {MAX_ARRAY_MEMBERS}"
                )));
            }
            let m = d
                .member
                .as_ref()
                .ok_or_else(|| here("an array needs a [device.member] table".into()))?;
            let member =
                leaf_model(&m.model, m.preset.as_deref(), m.params.as_ref()).map_err(here)?;
            let layout = if d.model == "raid0" {
                let chunk_bytes = match &d.chunk {
                    Some(c) => size_value(c).map_err(|e| here(format!("chunk {e}")))?,
                    None => {
                        return Err(here(
                            "a raid0 array needs `chunk` (e.g. chunk = \"64KiB\")".into(),
                        ))
                    }
                };
                if chunk_bytes == 0 || chunk_bytes % 512 != 0 {
                    return Err(here(format!(
                        "chunk {chunk_bytes} must be a non-zero multiple of 512 bytes"
                    )));
                }
                Layout::Striped { chunk_bytes }
            } else {
                if d.chunk.is_some() {
                    return Err(here("`chunk` applies only to raid0 arrays".into()));
                }
                Layout::Linear
            };
            let queue_depth = d.queue_depth.unwrap_or(128);
            if queue_depth == 0 || queue_depth > MAX_ARRAY_QUEUE_DEPTH {
                return Err(here(format!("queue_depth must be in 1..={MAX_ARRAY_QUEUE_DEPTH}")));
            }
            let cache = match &d.controller_cache {
                None => {
                    if d.read_ahead.is_some() || d.write_back.is_some() {
                        return Err(here("`read_ahead` and `write_back` need a `controller_cache` (e.g. controller_cache = \"512MiB\")".into()));
                    }
                    None
                }
                Some(c) => {
                    let size_bytes =
                        size_value(c).map_err(|e| here(format!("controller_cache {e}")))?;
                    let stripe = match layout {
                        Layout::Striped { chunk_bytes } => chunk_bytes * u64::from(members),
                        Layout::Linear => 1 << 20,
                    };
                    let read_ahead_bytes = match &d.read_ahead {
                        Some(r) => size_value(r).map_err(|e| here(format!("read_ahead {e}")))?,
                        None => stripe,
                    };
                    if read_ahead_bytes % 512 != 0 || read_ahead_bytes > size_bytes / 4 {
                        return Err(here(format!("read_ahead {read_ahead_bytes} must be a multiple of 512 bytes and at most a quarter of controller_cache")));
                    }
                    if size_bytes > MAX_CONTROLLER_CACHE_BYTES {
                        return Err(here(format!("controller_cache {size_bytes} is over the limit of {MAX_CONTROLLER_CACHE_BYTES} bytes (64 GiB)")));
                    }
                    Some(ControllerCache {
                        size_bytes,
                        read_ahead_bytes,
                        streams: ARRAY_CACHE_STREAMS,
                        write_back: d.write_back.unwrap_or(true),
                    })
                }
            };
            let mut link = LinkParams {
                bandwidth_bytes_per_sec: ARRAY_LINK_BYTES_PER_SEC,
                rtt_ns: ARRAY_LINK_RTT_NS,
                overhead_ns: ARRAY_CONTROLLER_OVERHEAD_NS,
            };
            if let Some(rate) = &d.host_link {
                link.bandwidth_bytes_per_sec =
                    parse_rate_bytes_per_sec(rate).map_err(|e| here(format!("host_link {e}")))?;
            }
            if let Some(o) = &d.controller_overhead {
                link.overhead_ns =
                    parse_duration_ns(o).map_err(|e| here(format!("controller_overhead {e}")))?;
                if link.overhead_ns > MAX_CONTROLLER_OVERHEAD_NS {
                    return Err(here(format!(
                        "controller_overhead {o} is over the limit of 1 s per command"
                    )));
                }
            }
            link.validate().map_err(|e| here(format!("host_link: {e}")))?;
            let front = FrontEnd { link };
            Ok(DeviceModel::Array {
                layout,
                members,
                member: Box::new(member),
                queue_depth,
                front,
                cache,
            })
        }
        model => {
            if array_fields {
                return Err(here("`members`, `member`, `chunk` and `queue_depth` apply only to raid0/linear arrays".into()));
            }
            leaf_model(model, d.preset.as_deref(), d.params.as_ref()).map_err(here)
        }
    }
}

/// A DiskSim drive directory as an HDD (`elevator_disksim::hdd_params`); `[device.params]`
/// override its parameters like a preset's.
fn disksim_model(d: &RawDevice, base: &Path) -> Result<DeviceModel, String> {
    if d.model != "disksim" {
        return Err(format!("`drive` applies only to model = \"disksim\" (got `{}`)", d.model));
    }
    if d.preset.is_some() || d.members.is_some() || d.member.is_some() || d.chunk.is_some() {
        return Err("a disksim device takes `drive` and [device.params] only".into());
    }
    let Some(drive) = &d.drive else {
        return Err(
            "model = \"disksim\" needs `drive = \"path/to/drive-dir\"` (or NAME.parv)".into()
        );
    };
    let dir = base.join(drive);
    if !dir.is_dir() && !dir.is_file() {
        return Err(format!("drive `{}` is neither a directory nor a .parv file", dir.display()));
    }
    let loaded = elevator_disksim::load_drive(&dir).map_err(|e| e.to_string())?;
    let params = elevator_disksim::hdd_params(&loaded).map_err(|e| e.to_string())?;
    let mut params = with_overrides(params, d.params.as_ref())?;
    if let Some(q) = d.queue_depth {
        params.queue_depth = q.max(1);
    }
    hdd_model(params)
}

/// Checks a disk's parameters by building it once, and keeps its capacity.
fn hdd_model(params: HddParams) -> Result<DeviceModel, String> {
    let disk = Hdd::new(params.clone(), &mut RandomStream::new(0, 0))
        .map_err(|e| format!("[device.params]: {e}"))?;
    Ok(DeviceModel::Hdd { params, capacity_bytes: disk.capacity_bytes() })
}

/// Checks an SSD's parameters by building it once, and keeps its capacity.
fn ssd_model(params: SsdParams) -> Result<DeviceModel, String> {
    let ssd = Ssd::new(params.clone()).map_err(|e| format!("[device.params]: {e}"))?;
    Ok(DeviceModel::Ssd { params, capacity_bytes: ssd.capacity_bytes() })
}

/// A hardware array controller: sequential streams its read-ahead follows at once
/// (entry-level controllers of 2009 kept a few dozen), its host link (4 Gb/s Fibre Channel:
/// 400 MB/s of payload after 8b/10b coding; 10 µs round trip through one switch) and the
/// time it spends on every command before anything else (HBA, FC exchange and controller
/// firmware together: entry-level FC arrays of 2009 answered a 4 KiB cache hit in about
/// 0.25–0.3 ms at the host, as seed 000's 13.8 MB/s of 4 KiB reads at queue depth one also
/// implies). Typical values, not one product's.
const ARRAY_CACHE_STREAMS: u32 = 64;
const ARRAY_LINK_BYTES_PER_SEC: f64 = 400e6;
const ARRAY_LINK_RTT_NS: Nanos = 10_000;
const ARRAY_CONTROLLER_OVERHEAD_NS: Nanos = 250_000;
/// Limits on what a topology may ask of an array controller.
const MAX_CONTROLLER_CACHE_BYTES: u64 = 64 << 30;
const MAX_CONTROLLER_OVERHEAD_NS: Nanos = 1_000_000_000;

/// A single (non-array) device model from its name, preset and parameter overrides.
fn leaf_model(
    model: &str,
    preset: Option<&str>,
    params: Option<&toml::Table>,
) -> Result<DeviceModel, String> {
    match model {
        "ram" => {
            if let Some(preset) = preset {
                return Err(format!(
                    "the ram model has no presets (got `{preset}`); set [device.params] instead"
                ));
            }
            Ok(DeviceModel::Ram(with_overrides(RamParams::default(), params)?))
        }
        "hdd" => {
            let base = match preset.unwrap_or("sata-7200-2009") {
                "sata-7200-2009" => HddParams::sata_7200_2009(),
                "ide-2003" => HddParams::ide_2003(),
                other => {
                    return Err(format!(
                        "unknown hdd preset `{other}`; presets are: {}",
                        HDD_PRESETS.join(", ")
                    ))
                }
            };
            hdd_model(with_overrides(base, params)?)
        }
        "ssd" | "nvme" => {
            let default = if model == "ssd" { SSD_PRESETS[0] } else { SSD_PRESETS[1] };
            let base = match preset.unwrap_or(default) {
                "sata-ssd-2015" => SsdParams::sata_ssd_2015(),
                "nvme-pcie3-2018" => SsdParams::nvme_pcie3_2018(),
                other => {
                    return Err(format!(
                        "unknown {model} preset `{other}`; presets are: {}",
                        SSD_PRESETS.join(", ")
                    ))
                }
            };
            ssd_model(with_overrides(base, params)?)
        }
        other => Err(format!(
            "unknown model `{other}`; models are: hdd, ssd, nvme, ram, disksim, raid0, linear"
        )),
    }
}

/// Applies `[device.params]` over a preset: the preset is serialised, the keys given replace
/// its values, and the result is checked by deserialising (unknown keys are errors).
fn with_overrides<P: Serialize + DeserializeOwned>(
    preset: P,
    overrides: Option<&toml::Table>,
) -> Result<P, String> {
    let Some(overrides) = overrides else { return Ok(preset) };
    let mut table = toml::Table::try_from(&preset).map_err(|e| e.to_string())?;
    for (key, value) in overrides {
        table.insert(key.clone(), value.clone());
    }
    P::deserialize(toml::Value::Table(table))
        .map_err(|e| format!("[device.params]: {}", one_line(&e.to_string())))
}

/// `read_ahead_kb` as given, or the default; at most [`MAX_READ_AHEAD_KB`].
fn check_read_ahead(v: Option<u32>) -> Result<u32, String> {
    let kb = v.unwrap_or(DEFAULT_READ_AHEAD_KB);
    if kb > MAX_READ_AHEAD_KB {
        return Err(format!(
            "read_ahead_kb {kb} is over the limit of {MAX_READ_AHEAD_KB} (64 MiB)"
        ));
    }
    Ok(kb)
}

fn size_value(v: &SizeValue) -> Result<u64, String> {
    match v {
        SizeValue::Bytes(b) => Ok(*b),
        SizeValue::Text(t) => parse_size_bytes(t),
    }
}

/// A TOML error as `FILE:LINE: message`, without the excerpt of the file the toml crate
/// shows (the file may be anything: `--topology /etc/shadow`).
/// A message about a value that does not name its key ("invalid value: integer `-1`,
/// expected u32") gets the key the value is written under.
pub fn toml_error(name: &str, text: &str, e: &toml::de::Error) -> String {
    let Some(span) = e.span() else { return format!("{name}: {}", one_line(e.message())) };
    let (line, message) = toml_message_at(text, span.start, e.message());
    format!("{name}:{line}: {message}")
}

/// Reads a text file of at most `max` bytes (an error past it, before reading it all).
pub fn read_bounded(path: &Path, max: u64) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut text = String::new();
    std::fs::File::open(path)?.take(max + 1).read_to_string(&mut text)?;
    if text.len() as u64 > max {
        return Err(std::io::Error::other(format!("larger than {max} bytes")));
    }
    Ok(text)
}

/// The `io.max` and `io.latency` lines of the `[[cgroup]]` tables. A line names its device by
/// number ([`device_number`]) or, as a convenience the kernel does not offer, by name; its keys
/// are checked as the kernel checks them (`tg_set_limit`, `iolatency_set_limit`). A later
/// line for the same cgroup and device changes what it names, as a second write would.
#[allow(clippy::type_complexity)]
fn build_cgroup_files(
    tables: &[Spanned<RawCgroup>],
    devices: &[DeviceSpec],
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> Result<(Vec<CgroupIoMax>, Vec<CgroupIoLatency>), String> {
    if tables.len() > MAX_CGROUP_TABLES {
        return Err(format!("{} [[cgroup]] tables: at most {MAX_CGROUP_TABLES}", tables.len()));
    }
    let mut io_max: Vec<CgroupIoMax> = Vec::new();
    let mut io_latency: Vec<CgroupIoLatency> = Vec::new();
    for spanned in tables {
        let loc = at(spanned.span());
        let c = spanned.get_ref();
        let path = c.path.trim_matches('/').to_string();
        let err = |e: String| format!("{loc}: cgroup `{path}`: {e}");
        let (max_lines, lat_lines) = (lines_of(&c.io_max), lines_of(&c.io_latency));
        if path.is_empty() && !(max_lines.is_empty() && lat_lines.is_empty()) {
            return Err(format!(
                "{loc}: cgroup `{}`: the root cgroup has no io.max or io.latency",
                c.path
            ));
        }
        if max_lines.len() + lat_lines.len() > MAX_IO_MAX_LINES {
            return Err(err(format!("more than {MAX_IO_MAX_LINES} io.max and io.latency lines")));
        }
        for (file, lines) in [("io.max", &max_lines), ("io.latency", &lat_lines)] {
            for line in lines {
                let line = line.trim();
                let (dev, keys) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
                let device =
                    cgroup_line_device(dev, devices).map_err(|e| err(format!("{file}: {e}")))?;
                if file == "io.max" {
                    let i = io_max.iter().position(|x| x.path == path && x.device == device);
                    let current = i.map_or(IoMax::default(), |i| io_max[i].limits);
                    let limits =
                        IoMax::parse_keys(keys, current).map_err(|e| err(e.to_string()))?;
                    match i {
                        Some(i) => io_max[i].limits = limits,
                        None => io_max.push(CgroupIoMax { path: path.clone(), device, limits }),
                    }
                } else {
                    let target = parse_io_latency_keys(keys).map_err(err)?;
                    io_latency.retain(|x| !(x.path == path && x.device == device));
                    if let Some(target_ns) = target {
                        io_latency.push(CgroupIoLatency { path: path.clone(), device, target_ns });
                    }
                }
            }
        }
    }
    Ok((io_max, io_latency))
}

/// BFQ's `io.bfq.weight` files of the `[[cgroup]]` tables (`bfq_io_set_weight`: weights
/// `BFQ_MIN_WEIGHT`..=`BFQ_MAX_WEIGHT`, not on the root).
fn build_bfq_weights(
    tables: &[Spanned<RawCgroup>],
    devices: &[DeviceSpec],
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> Result<Vec<CgroupIoWeight>, String> {
    let mut weights = Vec::new();
    for spanned in tables {
        let c = spanned.get_ref();
        let lines = lines_of(&c.io_bfq_weight);
        if lines.is_empty() {
            continue;
        }
        let path = c.path.trim_matches('/').to_string();
        let err = |e: String| format!("{}: cgroup `{path}`: {e}", at(spanned.span()));
        if lines.len() > MAX_IO_MAX_LINES {
            return Err(err(format!("more than {MAX_IO_MAX_LINES} io.bfq.weight lines")));
        }
        if path.is_empty() {
            return Err(err("the root cgroup has no io.bfq.weight".into()));
        }
        add_weight_lines(
            "io.bfq.weight",
            &lines,
            parse_bfq_weight_line,
            &path,
            devices,
            &mut weights,
        )
        .map_err(err)?;
    }
    Ok(weights)
}

fn parse_bfq_weight_line(line: &str) -> Result<(Option<&str>, Option<u32>), String> {
    parse_weight_line("io.bfq.weight", line, BFQ_MIN_WEIGHT, BFQ_MAX_WEIGHT)
}

/// Adds a cgroup's weight-file `lines` (`default N`, `MAJ:MIN N|default`, parsed by
/// `parse`) to its entry of `weights`, later lines overriding earlier ones as writes do.
fn add_weight_lines<'a>(
    file: &str,
    lines: &'a [String],
    parse: impl Fn(&'a str) -> Result<(Option<&'a str>, Option<u32>), String>,
    path: &str,
    devices: &[DeviceSpec],
    weights: &mut Vec<CgroupIoWeight>,
) -> Result<(), String> {
    let i = match weights.iter().position(|x| x.path == path) {
        Some(i) => i,
        None => {
            weights.push(CgroupIoWeight { path: path.to_string(), ..Default::default() });
            weights.len() - 1
        }
    };
    for line in lines {
        let (dev, weight) = parse(line.as_str())?;
        let entry = &mut weights[i];
        match dev {
            None => entry.default = weight,
            Some(dev) => {
                let d = cgroup_line_device(dev, devices).map_err(|e| format!("{file}: {e}"))?;
                entry.per_device.retain(|(x, _)| *x != d);
                if let Some(weight) = weight {
                    entry.per_device.push((d, weight));
                }
            }
        }
    }
    Ok(())
}

/// The blk-iocost files of the `[[cgroup]]` tables: `io.weight` of any cgroup but the root
/// (`CFTYPE_NOT_ON_ROOT`), `io.cost.qos` and `io.cost.model` of the root only
/// (`CFTYPE_ONLY_ON_ROOT`), checked as `ioc_weight_write`, `ioc_qos_write` and
/// `ioc_cost_model_write` check them.
#[allow(clippy::type_complexity)]
fn build_iocost_files(
    tables: &[Spanned<RawCgroup>],
    devices: &[DeviceSpec],
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> Result<(Vec<CgroupIoWeight>, Vec<DeviceIoCost>), String> {
    let mut weights: Vec<CgroupIoWeight> = Vec::new();
    let mut cost: Vec<DeviceIoCost> = Vec::new();
    for spanned in tables {
        let loc = at(spanned.span());
        let c = spanned.get_ref();
        let path = c.path.trim_matches('/').to_string();
        let err = |e: String| format!("{loc}: cgroup `{path}`: {e}");
        let (w, q, m) =
            (lines_of(&c.io_weight), lines_of(&c.io_cost_qos), lines_of(&c.io_cost_model));
        if w.len() + q.len() + m.len() > MAX_IO_MAX_LINES {
            return Err(err(format!("more than {MAX_IO_MAX_LINES} io.weight and io.cost lines")));
        }
        if !w.is_empty() {
            if path.is_empty() {
                return Err(err("the root cgroup has no io.weight".into()));
            }
            add_weight_lines("io.weight", &w, parse_io_weight_line, &path, devices, &mut weights)
                .map_err(err)?;
        }
        for (file, lines) in [("io.cost.qos", &q), ("io.cost.model", &m)] {
            if lines.is_empty() {
                continue;
            }
            if !path.is_empty() {
                return Err(err(format!("{file} exists only on the root cgroup (path = \"/\")")));
            }
            for line in lines {
                let line = line.trim();
                let (dev, keys) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
                let d =
                    cgroup_line_device(dev, devices).map_err(|e| err(format!("{file}: {e}")))?;
                let i = match cost.iter().position(|x| x.device == d) {
                    Some(i) => i,
                    None => {
                        cost.push(DeviceIoCost { device: d, ..Default::default() });
                        cost.len() - 1
                    }
                };
                if file == "io.cost.qos" {
                    cost[i].qos.push(keys.to_string());
                } else {
                    cost[i].model.push(keys.to_string());
                }
                // Checked now against both kinds of device, so a bad word fails here.
                for class in [AutopClass::Hdd, AutopClass::SsdDfl] {
                    cost[i].settings(class).map_err(err)?;
                }
            }
        }
    }
    Ok((weights, cost))
}

/// The `mclock` lines of the `[[cgroup]]` tables: a later line for the same cgroup and device
/// changes the keys it names.
fn build_mclock_lines(
    tables: &[Spanned<RawCgroup>],
    devices: &[DeviceSpec],
    at: &dyn Fn(std::ops::Range<usize>) -> String,
) -> Result<Vec<CgroupMclock>, String> {
    let mut out: Vec<CgroupMclock> = Vec::new();
    for spanned in tables {
        let c = spanned.get_ref();
        let lines = lines_of(&c.mclock);
        if lines.is_empty() {
            continue;
        }
        let loc = at(spanned.span());
        let path = c.path.trim_matches('/').to_string();
        let err = |e: String| format!("{loc}: cgroup `{path}`: {e}");
        if path.is_empty() {
            return Err(err("the root cgroup has no mclock group".into()));
        }
        if lines.len() > MAX_IO_MAX_LINES {
            return Err(err(format!("more than {MAX_IO_MAX_LINES} mclock lines")));
        }
        for line in &lines {
            let line = line.trim();
            let (dev, keys) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let device =
                cgroup_line_device(dev, devices).map_err(|e| err(format!("mclock: {e}")))?;
            let i = out.iter().position(|x| x.path == path && x.device == device);
            let current = elevator_control::mclock::MclockGroup {
                cgroup: 0,
                name: path.clone(),
                reservation_iops: i.map_or(0, |i| out[i].reservation_iops),
                weight: i
                    .map_or(elevator_control::mclock::MCLOCK_WEIGHT_DEFAULT, |i| out[i].weight),
                limit_iops: i.map_or(0, |i| out[i].limit_iops),
            };
            let g = current.apply_keys(keys).map_err(err)?;
            let entry = CgroupMclock {
                path: path.clone(),
                device,
                reservation_iops: g.reservation_iops,
                weight: g.weight,
                limit_iops: g.limit_iops,
            };
            match i {
                Some(i) => out[i] = entry,
                None => out.push(entry),
            }
        }
    }
    Ok(out)
}

/// The lines of a cgroup file given as one string or a list.
fn lines_of(v: &Option<OneOrMany>) -> Vec<String> {
    match v {
        None => Vec::new(),
        Some(OneOrMany::One(l)) => vec![l.clone()],
        Some(OneOrMany::Many(v)) => v.clone(),
    }
}

/// The device a cgroup file's line names: `MAJ:MIN` in [`device_number`]'s numbering, or a
/// device's name.
fn cgroup_line_device(dev: &str, devices: &[DeviceSpec]) -> Result<usize, String> {
    if let Some(i) = devices.iter().position(|d| d.name == dev) {
        return Ok(i);
    }
    let ((maj, min), _) = IoMax::parse_line(dev)
        .map_err(|e| e.to_string().trim_start_matches("io.max: ").to_string())?;
    (0..devices.len()).find(|&i| device_number(i) == (maj, min)).ok_or_else(|| {
        let known: Vec<String> = (0..devices.len())
            .map(|i| {
                let (a, b) = device_number(i);
                format!("{a}:{b} ({})", devices[i].name)
            })
            .collect();
        format!("`{dev}`: no such device; devices are {}", known.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_PARTS: &str = r#"
[[device]]
name = "sdb"
model = "ram"
scheduler = "none"
[device.params]
capacity_bytes = 1073741824

[[partition]]
name = "sdb1"
device = "sdb"
start = "1MiB"
size = "100MiB"
"#;

    #[test]
    fn parses_devices_partitions_and_targets() {
        let t = Topology::from_str(TWO_PARTS, "t.toml").unwrap();
        assert_eq!(t.devices[0].model.capacity_bytes(), 1 << 30);
        assert_eq!(
            t.target("sdb1").unwrap(),
            Target { route: Route::Device(0), start_bytes: 1 << 20, size_bytes: 100 << 20 }
        );
        assert_eq!(t.target("/dev/sdb").unwrap().size_bytes, 1 << 30);
        assert!(t.target("sdc").unwrap_err().contains("known names: sdb, sdb1"));
    }

    const IOBAND: &str = r#"
[[ioband]]
name = "g"
policy = "weight"

[[volume]]
name = "ioband1"
target = "ioband"
over = ["sdb1"]
share = "g"
weight = 40
group_type = "uid"
groups = { "1000" = 20 }
"#;

    #[test]
    fn parses_ioband_devices_into_their_device_group() {
        let t = Topology::from_str(&format!("{TWO_PARTS}{IOBAND}"), "t.toml").unwrap();
        assert_eq!(t.ioband.len(), 1);
        let d = &t.ioband[0].devices[0];
        assert_eq!((d.name.as_str(), d.weight, d.group_type), ("ioband1", 40, GroupType::Uid));
        assert_eq!(d.groups, vec![("1000".to_string(), 20)]);
        assert_eq!(t.volumes[0].kind, VolumeKind::Ioband { share: 0, device: 0 });
        assert_eq!(t.target("ioband1").unwrap().size_bytes, 100 << 20);
    }

    /// Without `io_limit`, the ioband device's queue sets it as `ioband_ctr` does: its
    /// `nr_requests` under v1.10, half as much again under v1.14; a given one stays.
    #[test]
    fn ioband_io_limit_defaults_to_the_queue_by_version() {
        let text = format!("{TWO_PARTS}{IOBAND}")
            .replace("scheduler = \"none\"", "scheduler = \"none\"\nnr_requests = 64");
        let limit = |from: &str, to: &str| {
            let t = Topology::from_str(&text.replacen(from, to, 1), "t.toml").unwrap();
            (t.ioband[0].settings.io_limit, t.ioband[0].settings.version)
        };
        let weight = "policy = \"weight\"";
        assert_eq!(limit("", ""), (64, IobandVersion::V1_10));
        assert_eq!(
            limit(weight, "policy = \"weight\"\nversion = \"1.14\""),
            (96, IobandVersion::V1_14)
        );
        assert_eq!(
            limit(weight, "policy = \"weight\"\nversion = \"1.14\"\nio_limit = 10"),
            (10, IobandVersion::V1_14)
        );
        let raised = "policy = \"weight\"\nversion = \"1.14\"\nio_limit = 2\nio_throttle = 6";
        assert_eq!(limit(weight, raised), (6, IobandVersion::V1_14), "never below io_throttle");
    }

    #[test]
    fn malformed_ioband_tables_are_rejected_with_the_line_and_the_fix() {
        let cases = [
            ("share = \"g\"", "share = \"h\"", "names no [[ioband]] device group; defined: g"),
            ("policy = \"weight\"", "policy = \"fastest\"", "unknown variant `fastest`"),
            ("weight = 40", "weight = 0", "`weight` must be at least 1"),
            ("\"1000\" = 20", "\"alice\" = 20", "named by a number"),
            ("\"1000\" = 20", "\"1000\" = -3", "positive integer"),
            ("group_type = \"uid\"", "group_type = \"uuid\"", "unknown variant `uuid`"),
            ("group_type = \"uid\"\n", "", "`groups` needs a `group_type`"),
            ("over = [\"sdb1\"]", "over = [\"sdb1\", \"sdb\"]", "exactly one"),
            ("target = \"ioband\"", "target = \"linear\"", "apply only to ioband targets"),
            (
                "policy = \"weight\"",
                "policy = \"weight\"\nio_limit = 0",
                "io_limit must be at least 1",
            ),
            ("policy = \"weight\"", "policy = \"weight\"\nversion = \"1.2\"", "use \"1.10\""),
        ];
        let range_bw = format!("{TWO_PARTS}{IOBAND}")
            .replace("policy = \"weight\"", "policy = \"range-bw\"")
            .replace("weight = 40", "min_bw = 100\nmax_bw = 500")
            .replace("\"1000\" = 20", "\"1000\" = \"10:50\"");
        let t = Topology::from_str(&range_bw, "t.toml").unwrap();
        assert_eq!(t.ioband[0].devices[0].ranges.len(), 2);
        let range_cases = [
            ("min_bw = 100\nmax_bw = 500", "weight = 3", "instead of `weight`"),
            ("max_bw = 500", "max_bw = 50", "at least the minimum"),
            ("\"10:50\"", "\"fast\"", "is \"MIN:MAX\" in KB/s"),
            ("min_bw = 100\n", "", "needs `min_bw` and `max_bw`"),
        ];
        for (from, to, want) in range_cases {
            let e = Topology::from_str(&range_bw.replacen(from, to, 1), "t.toml").unwrap_err();
            assert!(e.starts_with("t.toml:") && e.contains(want), "{from} -> {to}: {e}");
        }
        for (from, to, want) in cases {
            let bad = format!("{TWO_PARTS}{IOBAND}").replacen(from, to, 1);
            let e = Topology::from_str(&bad, "t.toml").unwrap_err();
            assert!(e.starts_with("t.toml:") && e.contains(want), "{from} -> {to}: {e}");
        }
    }

    #[test]
    fn disksim_drives_are_devices() {
        let text = "[[device]]\nname = \"sda\"\nmodel = \"disksim\"\ndrive = \"nowhere\"\n";
        let e = Topology::from_str(text, "/tmp/t.toml").unwrap_err();
        assert!(
            e.starts_with("/tmp/t.toml:4:") && e.contains("neither a directory nor a .parv file"),
            "{e}"
        );
        let e =
            Topology::from_str(&text.replace("drive = \"nowhere\"\n", ""), "t.toml").unwrap_err();
        assert!(e.contains("needs `drive"), "{e}");
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/disksim");
        if !data.join("barracuda").is_dir() {
            eprintln!("skipping: DiskSim data not found");
            return;
        }
        let file = data.join("topology.toml");
        let text = text.replace("nowhere", "barracuda");
        let t = Topology::from_str(&text, &file.display().to_string()).unwrap();
        let DeviceModel::Hdd { params, capacity_bytes } = &t.devices[0].model else {
            panic!("an hdd")
        };
        assert_eq!(*capacity_bytes, 4_217_670 * 512);
        assert_eq!(params.rpm, 7200.0);
        assert!(params.controller.is_some());
        // The drive's .parv file names the same drive.
        let text = text.replace("\"barracuda\"", "\"barracuda/barracuda.parv\"");
        let by_parv = Topology::from_str(&text, &file.display().to_string()).unwrap();
        assert_eq!(by_parv.devices[0].model, t.devices[0].model);
    }

    #[test]
    fn errors_name_file_and_line() {
        let bad = TWO_PARTS.replace("device = \"sdb\"", "device = \"sdx\"");
        let e = Topology::from_str(&bad, "t.toml").unwrap_err();
        // At the line of the key the message names (`device = "sdx"`), not the table's.
        assert!(e.starts_with("t.toml:11:") && e.contains("no device `sdx`"), "{e}");
        let bad = TWO_PARTS.replace("size = \"100MiB\"", "size = \"2GiB\"");
        assert!(Topology::from_str(&bad, "t.toml").unwrap_err().contains("ends past the end"));
        let bad = TWO_PARTS.replace("capacity_bytes", "capacity");
        let e = Topology::from_str(&bad, "t.toml").unwrap_err();
        assert!(e.contains("unknown field `capacity`"), "{e}");
        let bad = TWO_PARTS.replace("scheduler = \"none\"", "scheduler = \"bogus\"");
        assert!(Topology::from_str(&bad, "t.toml")
            .unwrap_err()
            .contains("unknown scheduler `bogus`"));
        let e = Topology::from_str("[[device]\n", "t.toml").unwrap_err();
        assert!(e.starts_with("t.toml:1: "), "{e}");
        // Not TOML at all: the line is named, its text never shown.
        let e = Topology::from_str("root:$6$secret:19000:0:::\n", "t.toml").unwrap_err();
        assert!(e.starts_with("t.toml:1: ") && !e.contains("secret"), "{e}");
    }

    #[test]
    fn filesystems_are_checked_where_they_are_written() {
        let fs = |on: &str, extra: &str| {
            format!("{TWO_PARTS}\n[[filesystem]]\non = \"{on}\"\njournal = \"4MiB\"\n{extra}")
        };
        let text = fs("sdz", "");
        let line = text.lines().position(|l| l == "[[filesystem]]").unwrap() + 1;
        let e = Topology::from_str(&text, "t.toml").unwrap_err();
        assert!(e.starts_with(&format!("t.toml:{line}:")) && e.contains("`sdz`"), "{e}");
        let e = Topology::from_str(&fs("sdb1", "commit = 0"), "t.toml").unwrap_err();
        assert!(e.contains("commit"), "{e}");
        let t = Topology::from_str(&fs("sdb1", ""), "t.toml").unwrap();
        assert_eq!(t.filesystems.len(), 1);
        let twice =
            format!("{}\n[[filesystem]]\non = \"sdb\"\njournal = \"4MiB\"\n", fs("sdb1", ""));
        let e = Topology::from_str(&twice, "t.toml").unwrap_err();
        assert!(e.contains("overlaps"), "{e}");
    }
}

#[cfg(test)]
mod ssd_tests {
    use super::*;

    #[test]
    fn ssd_and_nvme_models_with_presets_and_overrides() {
        let t = Topology::from_str(
            "[[device]]\nname = \"sda\"\nmodel = \"ssd\"\npreset = \"sata-ssd-2015\"\n\
             [[device]]\nname = \"nvme0n1\"\nmodel = \"nvme\"\n[device.params]\nfill = \"empty\"\n",
            "s.toml",
        )
        .unwrap();
        let DeviceModel::Ssd { params, capacity_bytes } = &t.devices[1].model else {
            panic!("an ssd")
        };
        assert_eq!(params.submission_queues, 64, "nvme defaults to the NVMe preset");
        assert_eq!(*capacity_bytes, t.devices[1].model.build(0, 0).capacity_bytes());
        let d = t.devices[0].model.build(0, 0);
        assert!(!d.rotational() && d.queue_depth() == 32, "{}", d.describe());
        let device = "\n[[device]]\nname = \"sda\"\nmodel = \"ssd\"\n";
        // Each at the line of its key: the last line.
        for (extra, want) in [
            (
                "preset = \"x\"\n",
                "unknown ssd preset `x`; presets are: sata-ssd-2015, nvme-pcie3-2018",
            ),
            ("[device.params]\ntR_us = 3\n", "unknown field `tR_us`"),
            ("[device.params]\nover_provisioning = 0.001\n", "raise over_provisioning"),
        ] {
            let text = format!("{device}{extra}");
            let e = Topology::from_str(&text, "s.toml").unwrap_err();
            let line = text.lines().count();
            assert!(
                e.starts_with(&format!("s.toml:{line}: device `sda`: ")) && e.contains(want),
                "{e}"
            );
        }
    }
}

#[cfg(test)]
mod volume_tests {
    use super::*;

    const TWO_DISKS: &str = r#"
[[device]]
name = "sda"
model = "ram"
[[device]]
name = "sdb"
model = "ram"
[[partition]]
name = "sda1"
device = "sda"
start = "1MiB"
size = "1GiB"
[[partition]]
name = "sdb1"
device = "sdb"
start = "1MiB"
size = "2GiB"
[[volume]]
name = "lv0"
target = "striped"
chunk = "64KiB"
over = ["sda1", "sdb1"]
[[volume]]
name = "vm1"
target = "guest"
over = ["lv0"]
limit = 32
pid = 4242
"#;

    /// serde's type errors name no key: the error names the key the value is written under,
    /// in an inline table too, and leaves a message that names its key alone.
    #[test]
    fn a_value_of_the_wrong_type_is_named_by_its_key() {
        let bad = |body: &str| Topology::from_str(body, "t.toml").unwrap_err();
        let e = bad("[machine]\ndirty_ratio = -1\n");
        assert!(e.starts_with("t.toml:2: `dirty_ratio`: invalid value"), "{e}");
        let e = bad("[[device]]\nname = \"sda\"\nmodel = \"hdd\"\nnr_requests = \"many\"\n");
        assert!(e.starts_with("t.toml:4: `nr_requests`: "), "{e}");
        let e = bad("[machine]\nmemory = \"4GiB\"\nhz = 100\ncpus = 2.5\n");
        assert!(e.starts_with("t.toml:4: `cpus`: "), "{e}");
        let e = bad("[machine]\ndirtyratio = 5\n");
        assert!(e.starts_with("t.toml:2: unknown field `dirtyratio`"), "{e}");
    }

    #[test]
    fn volumes_stack_and_resolve() {
        let t = Topology::from_str(TWO_DISKS, "v.toml").unwrap();
        assert_eq!(t.volumes[0].size_bytes, 2 << 30, "two members of the smaller size");
        assert_eq!(t.volumes[0].members[1].route, Route::Device(1));
        assert_eq!(t.target("/dev/mapper/vm1").unwrap().route, Route::Volume(1));
        assert_eq!(t.volumes[1].kind, VolumeKind::Guest { limit: 32, pid: Some(4242) });
    }

    #[test]
    fn bad_volumes_are_explained() {
        let e = Topology::from_str(&TWO_DISKS.replace("chunk = \"64KiB\"\n", ""), "v.toml")
            .unwrap_err();
        // At the `target` line: `chunk` is not written.
        assert!(e.contains("v.toml:20") && e.contains("needs `chunk`"), "{e}");
        let e =
            Topology::from_str(&TWO_DISKS.replace("\"sdb1\"]", "\"sdc9\"]"), "v.toml").unwrap_err();
        assert!(e.contains("volume `lv0`") && e.contains("`sdc9`"), "{e}");
        let e = Topology::from_str(
            &TWO_DISKS.replace("target = \"guest\"", "target = \"raid5\""),
            "v.toml",
        )
        .unwrap_err();
        assert!(e.contains("unknown target `raid5`"), "{e}");
    }

    #[test]
    fn iscsi_targets_take_link_settings_and_explain_mistakes() {
        let lun = "[[volume]]\nname = \"lun\"\ntarget = \"iscsi\"\nover = [\"sda1\"]\n";
        let t = Topology::from_str(
            &format!(
                "{TWO_DISKS}{lun}bandwidth = \"1Gbit\"\nrtt = \"200us\"\nio_context = \"shared\"\n"
            ),
            "v.toml",
        )
        .unwrap();
        let VolumeKind::Remote(spec) = t.volumes.last().unwrap().kind else { panic!() };
        assert_eq!(spec.link.bandwidth_bytes_per_sec, 125e6);
        assert_eq!(spec.link.rtt_ns, 200_000);
        assert!(spec.shared_context);
        assert_eq!((spec.queue_depth, spec.threads), (32, 8));
        for (extra, expect) in [
            ("io_context = \"mine\"\n", "use \"separate\""),
            ("bandwidth = \"fast\"\n", "not a rate"),
            ("rtt = \"soon\"\n", "rtt `soon` is not a duration"),
            ("threads = 0\n", "at least 1"),
        ] {
            let e = Topology::from_str(&format!("{TWO_DISKS}{lun}{extra}"), "v.toml").unwrap_err();
            assert!(e.contains("v.toml:") && e.contains(expect), "{e}");
        }
        let e = Topology::from_str(
            &TWO_DISKS.replace("chunk = \"64KiB\"\n", "chunk = \"64KiB\"\nrtt = \"1ms\"\n"),
            "v.toml",
        )
        .unwrap_err();
        assert!(e.contains("apply only to iscsi targets"), "{e}");
    }
}
