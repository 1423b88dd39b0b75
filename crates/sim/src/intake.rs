//! Job files as fio users write them, fitted to the simulated machine before it is built.
//!
//! fio's examples name devices the topology does not have (`filename=/dev/nvme0n1`), regular
//! files (`filename=/tmp/test`, `directory=/data1`) and engines that do no block I/O
//! (`ioengine=null`). This module decides what each becomes, in one place, and says so:
//!
//! - `/dev/X` not in the built-in topology: a disk of the built-in model named `X` (one per
//!   distinct name, one warning each). A topology file given with `--topology` rules: there
//!   an unknown device stays an error.
//! - a regular path: a file on the default device's file system, laid out like the per-job
//!   files (`engine/build.rs` does the layout); nothing is ever read from or written to the
//!   real path.
//! - the null class of engines (`null`, `cpuio`, `exec`, `page_fault`, `cpp_null`): the
//!   device [`NULL_DEVICE`], RAM that completes each I/O after [`NULL_ENGINE_LATENCY_NS`],
//!   under the `none` scheduler, whatever the job's `filename=`.

use std::collections::BTreeSet;

use elevator_core::NS_PER_SEC;
use elevator_device::ram::RamParams;
use elevator_fio::{Amount, BlockSize, JobFile};

use crate::topology::{DeviceModel, DeviceSpec, Topology};

/// The device that jobs of the null class of engines run on.
pub const NULL_DEVICE: &str = "(null-engine)";
/// What one I/O of a null-class engine costs: a round through fio's submission path, about
/// what fio measures for `ioengine=null` (0.2-1 µs per I/O).
pub const NULL_ENGINE_LATENCY_NS: u64 = 500;
/// Its address space: 1 PiB, more than any example's `size=`.
pub const NULL_DEVICE_BYTES: u64 = 1 << 50;
/// Devices the built-in topology may gain from `/dev/X` names (the arrays' member limit).
pub const MAX_ADOPTED_DEVICES: usize = 256;

/// The size of a regular file that does not exist and is given no `size=` (fio refuses to
/// run such a job; elevator runs it on a file of this size and says so).
pub const DEFAULT_FILE_BYTES: u64 = 1 << 30;

/// Room added to a file tree sized from `nrfiles` × `filesize` for its block groups' metadata.
pub const TREE_SLACK_BYTES: u64 = 16 << 20;

/// The longest a cpuio job with `exit_on_io_done` and no `runtime=` burns: a simulated day.
pub const MAX_CPUIO_NS: elevator_core::Nanos = 86_400 * NS_PER_SEC;

/// A job that does no block I/O issues 512-byte token I/Os to the null device.
fn token_io(spec: &mut elevator_fio::JobSpec) {
    spec.block_size = [
        BlockSize::Fixed { bytes: 512 },
        BlockSize::Fixed { bytes: 512 },
        BlockSize::Fixed { bytes: 512 },
    ];
    spec.size = Some(Amount::Bytes(512));
}

/// The jobs and topology to simulate, and what was changed to fit them (one warning each).
pub fn fit(
    jobs: &JobFile,
    topology: &Topology,
) -> Result<(JobFile, Topology, Vec<String>), String> {
    let mut topology = topology.clone();
    let mut jobs = jobs.clone();
    let mut warnings = Vec::new();
    if topology.source == "built-in" {
        let mut adopted = BTreeSet::new();
        for spec in &jobs.jobs {
            if spec.ioengine.is_null() {
                continue;
            }
            for name in
                [spec.filename.as_deref(), spec.replay_redirect.as_deref()].into_iter().flatten()
            {
                let Some(dev) = name.strip_prefix("/dev/") else { continue };
                if topology.target(name).is_ok() || dev.is_empty() || dev.contains('/') {
                    continue;
                }
                if !adopted.insert(dev.to_string()) {
                    continue;
                }
                if adopted.len() > MAX_ADOPTED_DEVICES {
                    return Err(format!(
                        "{}: job `{}`: the job file names more than {MAX_ADOPTED_DEVICES} devices not in the topology (MAX_ADOPTED_DEVICES); describe them with --topology",
                        spec.source, spec.name
                    ));
                }
                let mut device = topology.devices[0].clone();
                device.name = dev.to_string();
                warnings.push(format!(
                    "{}: job `{}`: `{name}` is not in the built-in topology; simulated as a disk like `{}` (7200 rpm SATA, {}); describe it with --topology",
                    spec.source, spec.name, topology.devices[0].name, device.scheduler
                ));
                topology.devices.push(device);
            }
        }
    }
    if jobs.jobs.iter().any(|j| j.ioengine.is_null()) {
        topology.devices.push(DeviceSpec {
            name: NULL_DEVICE.to_string(),
            model: DeviceModel::Ram(RamParams {
                capacity_bytes: NULL_DEVICE_BYTES,
                latency_ns: NULL_ENGINE_LATENCY_NS,
                bandwidth_bytes_per_sec: 0,
                queue_depth: 65_536,
            }),
            scheduler: "none".to_string(),
            iosched: Vec::new(),
            nr_requests: 65_536,
            max_sectors_kb: 1 << 20,
            read_ahead_kb: 0,
            wbt_lat_usec: Some(0),
        });
    }
    for spec in &mut jobs.jobs {
        if spec.ioengine.name() == "cpuio" {
            // fio's cpuio (engines/cpu.c): each cycle burns `cpuchunks` of CPU, then sleeps
            // so that the burn is `cpuload` % of the cycle. Here a cycle is a token I/O on the
            // null device (not reported) and a think that spins the chunk and sleeps the rest.
            if spec.cpuload_percent == 0 {
                return Err(format!(
                    "{}: job `{}`: the cpuio engine needs a rate (cpuload=)",
                    spec.source, spec.name
                ));
            }
            let burn_ns = spec.cpuchunks_ns;
            let load = u64::from(spec.cpuload_percent);
            spec.thinktime_spin_ns = burn_ns;
            spec.thinktime_ns = burn_ns + burn_ns * (100 - load) / load;
            spec.thinktime_blocks = 1;
            token_io(spec);
            spec.time_based = true;
            if spec.runtime_ns.is_none() {
                if spec.exit_on_io_done {
                    spec.runtime_ns = Some(MAX_CPUIO_NS);
                } else {
                    warnings.push(format!(
                        "{}: job `{}`: a cpuio job without runtime= burns for a second here",
                        spec.source, spec.name
                    ));
                    spec.runtime_ns = Some(NS_PER_SEC);
                }
            }
            continue;
        }
        if spec.cpuload_percent > 0 || spec.exit_on_io_done {
            warnings.push(format!(
                "{}: job `{}`: cpuload= and exit_on_io_done are options of the cpuio engine; ignored",
                spec.source, spec.name
            ));
        }
        if spec.ioengine.name() == "exec" {
            // No block I/O at all: one token I/O on the null device, then idle until the
            // runtime is over, as the program would take it.
            spec.thinktime_ns = spec.runtime_ns.unwrap_or(NS_PER_SEC);
            spec.thinktime_blocks = 1;
            token_io(spec);
            continue;
        }
        if spec.size.is_some() || spec.iolog.is_some() {
            continue;
        }
        // fio: without size=, a job's files are nrfiles of filesize= each (here with room
        // for the file system's block-group metadata around them).
        if let Some((_, max_bytes)) = spec.filesize {
            let bytes = max_bytes.saturating_mul(u64::from(spec.nrfiles.max(1)));
            let bytes = if spec.nrfiles > 1 {
                bytes.saturating_mul(2).saturating_add(TREE_SLACK_BYTES)
            } else {
                bytes
            };
            spec.size = Some(Amount::Bytes(bytes));
            continue;
        }
        let Some(name) = spec.filename.as_deref() else { continue };
        if spec.ioengine.is_null() || !is_regular_path(&topology, name) {
            continue;
        }
        // The real file is looked at, never opened for writing: its length is the size.
        let bytes = match host_file_bytes(spec, name) {
            Some(len) if len >= 512 => len / 512 * 512,
            _ => {
                warnings.push(format!(
                    "{}: job `{}`: `{name}` does not exist and the job gives no size= (fio would stop with \"you need to specify size=\"); simulated as a file of {} MiB",
                    spec.source,
                    spec.name,
                    DEFAULT_FILE_BYTES >> 20
                ));
                DEFAULT_FILE_BYTES
            }
        };
        spec.size = Some(Amount::Bytes(bytes));
    }
    Ok((jobs, topology, warnings))
}

/// The length of the regular file `name` (under the job's `directory=`) on this machine, if
/// it is one there: what fio's setup finds (`real_file_size`). Only looked at, never opened.
pub fn host_file_bytes(spec: &elevator_fio::JobSpec, name: &str) -> Option<u64> {
    let path = std::path::Path::new(name);
    let path = match &spec.directory {
        Some(dir) if path.is_relative() => std::path::Path::new(dir).join(path),
        _ => path.to_path_buf(),
    };
    std::fs::metadata(&path).ok().filter(|m| m.is_file()).map(|m| m.len())
}

/// Whether a `filename=` names a regular file rather than a device of the topology.
pub fn is_regular_path(topology: &Topology, name: &str) -> bool {
    topology.target(name).is_err() && !name.starts_with("/dev/")
}
