//! The option table: which fio options elevator models and how each sets a [`JobSpec`] field,
//! which fio options exist but are not modelled (accepted with a warning), and the closest-name
//! suggestion for everything else.
//!
//! The known-option list comes from `fio --cmdhelp=all` (fio 3.33) plus the options of the
//! engines elevator supports (`fio --enghelp=io_uring|libaio|pvsync2`), so a job file that runs
//! on real fio never fails here just because elevator ignores part of it.

use elevator_core::{NS_PER_MS, NS_PER_SEC, NS_PER_US, SECTOR_BYTES};

use crate::expr::{self, Keywords};
use crate::job::{
    Amount, BlockSize, EngineClass, ExitWhat, FileServiceType, IoEngine, JobSpec, RwMode,
    RwSequencer, SourceLocation, SteadyState, SyncFileRange, UnifiedRw, MAX_SS_DURATION_S,
};
use crate::units::{
    parse_bool, parse_size, parse_size_or_percent, parse_time_ns, split_ddir, split_range,
};
use crate::RandomDistribution;

/// Why an option line was not applied.
#[derive(Debug, PartialEq)]
pub enum OptionError {
    /// Not a fio option at all; carries the nearest known name, if one is close.
    Unknown { suggestion: Option<&'static str> },
    /// A known option with a value elevator cannot use; the text says what is expected.
    Value(String),
}

/// What applying an option produced besides the field change.
#[derive(Debug, PartialEq)]
pub enum Applied {
    Done,
    /// Accepted, with a caveat for the user (unmodelled option or unmodelled part of a value).
    Warn(String),
}

type Outcome = Result<Applied, OptionError>;

/// Modelled options and their aliases, mapped to the canonical name used by [`Builder::apply`].
const MODELLED: &[(&str, &str)] = &[
    ("name", "name"),
    ("description", "description"),
    ("rw", "rw"),
    ("readwrite", "rw"),
    ("rwmixread", "rwmixread"),
    ("rwmixwrite", "rwmixwrite"),
    ("bs", "bs"),
    ("blocksize", "bs"),
    ("ba", "ba"),
    ("blockalign", "ba"),
    ("bsrange", "bsrange"),
    ("blocksize_range", "bsrange"),
    ("bssplit", "bssplit"),
    ("bs_unaligned", "bs_unaligned"),
    ("blocksize_unaligned", "bs_unaligned"),
    ("size", "size"),
    ("offset", "offset"),
    ("fileoffset", "offset"),
    ("offset_increment", "offset_increment"),
    ("offset_align", "offset_align"),
    ("filename", "filename"),
    ("directory", "directory"),
    ("direct", "direct"),
    ("buffered", "buffered"),
    ("ioengine", "ioengine"),
    ("iodepth", "iodepth"),
    ("iodepth_batch", "iodepth_batch"),
    ("iodepth_batch_submit", "iodepth_batch"),
    ("numjobs", "numjobs"),
    ("runtime", "runtime"),
    ("timeout", "runtime"),
    ("time_based", "time_based"),
    ("ramp_time", "ramp_time"),
    ("startdelay", "startdelay"),
    ("thinktime", "thinktime"),
    ("thinktime_blocks", "thinktime_blocks"),
    ("thinktime_iotime", "thinktime_iotime"),
    ("thinktime_spin", "thinktime_spin"),
    ("rate", "rate"),
    ("rate_iops", "rate_iops"),
    ("rate_process", "rate_process"),
    ("rate_min", "rate_min"),
    ("ratemin", "rate_min"),
    ("rate_iops_min", "rate_iops_min"),
    ("rate_cycle", "rate_cycle"),
    ("ratecycle", "rate_cycle"),
    ("group_reporting", "group_reporting"),
    ("new_group", "new_group"),
    ("stonewall", "stonewall"),
    ("wait_for_previous", "stonewall"),
    ("cgroup", "cgroup"),
    ("ioscheduler", "ioscheduler"),
    ("cgroup_weight", "cgroup_weight"),
    ("prio", "prio"),
    ("nice", "nice"),
    ("zonemode", "zonemode"),
    ("zonesize", "zonesize"),
    ("zonerange", "zonerange"),
    ("zoneskip", "zoneskip"),
    ("prioclass", "prioclass"),
    ("randrepeat", "randrepeat"),
    ("norandommap", "norandommap"),
    ("loops", "loops"),
    ("iodepth_low", "iodepth_low"),
    ("percentile_list", "percentile_list"),
    ("clat_percentiles", "clat_percentiles"),
    ("lat_percentiles", "lat_percentiles"),
    ("iodepth_batch_complete_min", "iodepth_batch_complete_min"),
    ("iodepth_batch_complete", "iodepth_batch_complete_min"),
    ("iodepth_batch_complete_max", "iodepth_batch_complete_max"),
    ("percentage_random", "percentage_random"),
    ("rw_sequencer", "rw_sequencer"),
    ("random_distribution", "random_distribution"),
    ("softrandommap", "softrandommap"),
    ("random_generator", "random_generator"),
    ("randseed", "randseed"),
    ("uid", "uid"),
    ("gid", "gid"),
    ("nrfiles", "nrfiles"),
    ("nr_files", "nrfiles"),
    ("openfiles", "openfiles"),
    ("filesize", "filesize"),
    ("file_service_type", "file_service_type"),
    ("io_size", "io_size"),
    ("io_limit", "io_size"),
    ("number_ios", "number_ios"),
    ("fsync", "fsync"),
    ("fdatasync", "fdatasync"),
    ("sync_file_range", "sync_file_range"),
    ("unified_rw_reporting", "unified_rw_reporting"),
    ("write_barrier", "write_barrier"),
    ("end_fsync", "end_fsync"),
    ("fill_device", "fill_device"),
    ("wait_for", "wait_for"),
    ("fill_fs", "fill_device"),
    ("fsync_on_close", "fsync_on_close"),
    ("sync", "sync"),
    ("fadvise_hint", "fadvise_hint"),
    ("invalidate", "invalidate"),
    ("pre_read", "pre_read"),
    ("create_on_open", "create_on_open"),
    ("file_append", "file_append"),
    ("exitall", "exitall"),
    ("exitall_on_error", "exitall_on_error"),
    ("disk_util", "disk_util"),
    ("cpuload", "cpuload"),
    ("cpuchunks", "cpuchunks"),
    ("cpumode", "cpumode"),
    ("exit_on_io_done", "exit_on_io_done"),
    ("exit_what", "exit_what"),
    ("kb_base", "kb_base"),
    ("read_iolog", "read_iolog"),
    ("replay_no_stall", "replay_no_stall"),
    ("replay_redirect", "replay_redirect"),
    ("replay_time_scale", "replay_time_scale"),
    ("replay_scale", "replay_scale"),
    ("replay_align", "replay_align"),
    ("replay_skip", "replay_skip"),
    ("write_lat_log", "write_lat_log"),
    ("write_iolog", "write_iolog"),
    ("max_latency", "max_latency"),
    ("thinktime_blocks_type", "thinktime_blocks_type"),
    ("verify", "verify"),
    ("do_verify", "do_verify"),
    ("verify_backlog", "verify_backlog"),
    ("verify_backlog_batch", "verify_backlog_batch"),
    ("verify_only", "verify_only"),
    ("write_bw_log", "write_bw_log"),
    ("write_iops_log", "write_iops_log"),
    ("log_avg_msec", "log_avg_msec"),
    ("bwavgtime", "bwavgtime"),
    ("iopsavgtime", "iopsavgtime"),
    ("log_max_value", "log_max_value"),
    ("per_job_logs", "per_job_logs"),
    ("cmdprio_percentage", "cmdprio_percentage"),
    ("cmdprio_class", "cmdprio_class"),
    ("cmdprio", "cmdprio"),
    ("cmdprio_bssplit", "cmdprio_bssplit"),
    ("latency_target", "latency_target"),
    ("latency_window", "latency_window"),
    ("latency_percentile", "latency_percentile"),
    ("steadystate", "steadystate"),
    ("ss", "steadystate"),
    ("steadystate_duration", "steadystate_duration"),
    ("ss_dur", "steadystate_duration"),
    ("steadystate_ramp_time", "steadystate_ramp_time"),
    ("ss_ramp", "steadystate_ramp_time"),
];

/// fio options (and aliases) elevator accepts but does not model, the options of every fio
/// engine among them (from the `fio_option` tables of fio 3.33's `engines/*.c`).
const UNMODELLED: &[&str] = &[
    "allow_file_create",
    "allow_mounted_write",
    "allrandrepeat",
    "arguments",
    "atomic",
    "bindname",
    "block_error_percentiles",
    "brick",
    "buffer_compress_chunk",
    "buffer_compress_percentage",
    "buffer_pattern",
    "busy_poll",
    "busy_wait_polling",
    "cgroup_nodelete",
    "chunk_size",
    "clientname",
    "clocksource",
    "clustername",
    "cmd_type",
    "conf",
    "cont",
    "continue_on_error",
    "cpumask",
    "cpus_allowed",
    "cpus_allowed_policy",
    "create_fsync",
    "create_only",
    "create_serialize",
    "cuda_io",
    "dedupe_global",
    "dedupe_mode",
    "dedupe_percentage",
    "dedupe_working_set_percentage",
    "direct_write_to_pmem",
    "disable_bw",
    "disable_bw_measurement",
    "disable_clat",
    "disable_lat",
    "disable_slat",
    "donorname",
    "engine_name",
    "error_dump",
    "exec_postrun",
    "exec_prerun",
    "experimental_verify",
    "fallocate",
    "filename_format",
    "fixedbufs",
    "flow",
    "flow_id",
    "flow_sleep",
    "force_async",
    "gpu_dev_ids",
    "grace_time",
    "gtod_cpu",
    "gtod_reduce",
    "hdfs_use_direct",
    "hdfsdirectory",
    "hipri",
    "hipri_percentage",
    "hostname",
    "http_host",
    "http_mode",
    "http_pass",
    "http_s3_key",
    "http_s3_keyid",
    "http_s3_region",
    "http_s3_sse_customer_algorithm",
    "http_s3_sse_customer_key",
    "http_s3_storage_class",
    "http_swift_auth_token",
    "http_user",
    "http_verbose",
    "https",
    "hugepage-size",
    "ignore_error",
    "ignore_zone_limits",
    "initiator",
    "inplace",
    "interface",
    "io_submit_mode",
    "iomem",
    "job_max_open_zones",
    "latency_run",
    "librpma_apm_client",
    "librpma_apm_server",
    "librpma_gpspm_client",
    "librpma_gpspm_server",
    "listen",
    "lockfile",
    "lockmem",
    "log_alternate_epoch",
    "log_alternate_epoch_clock_id",
    "log_compression",
    "log_compression_cpus",
    "log_entries",
    "log_hist_coarseness",
    "log_hist_msec",
    "log_offset",
    "log_prio",
    "log_store_compressed",
    "log_unix_epoch",
    "max_open_zones",
    "mem",
    "merge_blktrace_file",
    "merge_blktrace_iters",
    "merge_blktrace_scalars",
    "mss",
    "namenode",
    "nfs_url",
    "no_completion_thread",
    "nodelay",
    "nonvectored",
    "nowait",
    "numa_cpu_nodes",
    "numa_mem_policy",
    "object_class",
    "opendir",
    "overwrite",
    "pingpong",
    "pool",
    "port",
    "profile",
    "program",
    "protocol",
    "rate_ignore_thinktime",
    "rbdname",
    "read_beyond_wp",
    "read_iolog_chunked",
    "readfua",
    "refill_buffers",
    "registerfiles",
    "scramble_buffers",
    "serialize_overlap",
    "serverip",
    "sg_write_mode",
    "significant_figures",
    "single_instance",
    "skip_bad",
    "slat_percentiles",
    "sqthread_poll",
    "sqthread_poll_cpu",
    "stat_type",
    "stats",
    "std_redirect",
    "stream_id",
    "svcl",
    "thp",
    "thread",
    "threads",
    "touch_objects",
    "trim_backlog",
    "trim_backlog_batch",
    "trim_percentage",
    "trim_verify_zero",
    "ttl",
    "uncached",
    "unique_filename",
    "unit_base",
    "unlink",
    "unlink_each_loop",
    "uri",
    "userspace_reap",
    "verb",
    "verify_async",
    "verify_dump",
    "verify_fatal",
    "verify_interval",
    "verify_offset",
    "verify_pattern",
    "verify_state_load",
    "verify_state_save",
    "volume",
    "window_size",
    "write_hint",
    "write_hist_log",
    "writefua",
    "xnvme_admin",
    "xnvme_async",
    "xnvme_be",
    "xnvme_dev_nsid",
    "xnvme_iovec",
    "xnvme_sync",
    "zero_buffers",
    "zone_reset_frequency",
    "zone_reset_threshold",
    "zonecapacity",
];

/// Every engine fio has besides the five named in [`IoEngine`], with its class; `None`: a
/// network or object-store engine, refused (it talks to a server, not a block device).
const ENGINES: &[(&str, Option<EngineClass>)] = &[
    ("binject", Some(EngineClass::Async)),
    ("cpp_null", Some(EngineClass::Null)),
    ("cpuio", Some(EngineClass::Null)),
    ("dev-dax", Some(EngineClass::Sync)),
    ("dfs", None),
    ("dircreate", Some(EngineClass::Sync)),
    ("dirdelete", Some(EngineClass::Sync)),
    ("dirstat", Some(EngineClass::Sync)),
    ("e4defrag", Some(EngineClass::Sync)),
    ("exec", Some(EngineClass::Null)),
    ("falloc", Some(EngineClass::Sync)),
    ("filecreate", Some(EngineClass::Sync)),
    ("filedelete", Some(EngineClass::Sync)),
    ("filestat", Some(EngineClass::Sync)),
    ("ftruncate", Some(EngineClass::Sync)),
    ("gfapi", None),
    ("gfapi_async", None),
    ("guasi", Some(EngineClass::Async)),
    ("http", None),
    ("ime_aio", None),
    ("ime_psync", None),
    ("ime_psyncv", None),
    ("io_uring_cmd", Some(EngineClass::Async)),
    ("libblkio", Some(EngineClass::Async)),
    ("libcufile", Some(EngineClass::Async)),
    ("libhdfs", None),
    ("libhipfile", Some(EngineClass::Async)),
    ("libiscsi", None),
    ("libpmem", Some(EngineClass::Sync)),
    ("libzbc", Some(EngineClass::Sync)),
    ("mmap", Some(EngineClass::Sync)),
    ("mtd", Some(EngineClass::Sync)),
    ("nbd", None),
    ("net", None),
    ("netsplice", None),
    ("nfs", None),
    ("null", Some(EngineClass::Null)),
    ("page_fault", Some(EngineClass::Null)),
    ("pmemblk", Some(EngineClass::Sync)),
    ("posixaio", Some(EngineClass::Async)),
    ("rados", None),
    ("rbd", None),
    ("rdma", None),
    ("sg", Some(EngineClass::Sync)),
    ("solarisaio", Some(EngineClass::Async)),
    ("splice", Some(EngineClass::Sync)),
    ("windowsaio", Some(EngineClass::Async)),
    ("xnvme", Some(EngineClass::Async)),
];

/// The most `loops=` a job may run: a million passes.
pub const MAX_LOOPS: u64 = 1_000_000;

/// The deepest `iodepth=` (and `iodepth_batch*=`, `iodepth_low=`): Linux's default
/// `fs.aio-max-nr`, past which libaio's `io_setup` fails (io_uring stops at 32768 entries,
/// `IORING_MAX_ENTRIES`). A process keeps a slot per I/O it may have in flight.
pub const MAX_IODEPTH: u64 = 65_536;

/// The largest `zonesize=`, `zonerange=` or `zoneskip=`: 1 PiB, past any device, and small
/// enough that a zone's start plus its range and skip cannot overflow.
pub const MAX_ZONE_BYTES: u64 = 1 << 50;

/// `bytes` if at most [`MAX_ZONE_BYTES`].
fn zone_bytes_at_most(bytes: u64) -> Result<u64, String> {
    if bytes > MAX_ZONE_BYTES {
        return Err(format!("zones are at most {MAX_ZONE_BYTES} bytes (1 PiB, MAX_ZONE_BYTES)"));
    }
    Ok(bytes)
}

/// The largest hole (or step back) of `rw=read:SIZE`: 1 PiB, past any device.
pub const MAX_RW_SEQ_ADD_BYTES: u64 = 1 << 50;

/// The longest `log_avg_msec=` window: a day.
pub const MAX_LOG_AVG_MSEC: u64 = 86_400_000;

/// Options fio added after 3.33, up to 3.42 (the release of 2026), with the release that
/// added each: elevator reads job files as fio 3.33 does (Debian 12's, which its tests run),
/// so a newer job file's option is either ignored with a warning, where ignoring it leaves the
/// simulated I/O and its report as fio would have them (`None`), or refused, saying what it
/// would change (`Some`). Taken from the option tables of fio's `options.c` and `engines/*.c`
/// at the tags `fio-3.34` to `fio-3.42`.
const LATER_FIO: &[(&str, &str, Option<&str>)] = &[
    ("apptag", "3.36", None),
    ("apptag_mask", "3.36", None),
    ("cmdprio_hint", "3.36", None),
    ("comm", "3.42", None),
    ("data_placement", "3.38", None),
    ("dataplacement", "3.38", None),
    ("deac", "3.39", None),
    ("dp_scheme", "3.38", None),
    ("end_syncfs", "3.42", Some("a syncfs(2) at the job's end")),
    ("fdp", "3.34", None),
    ("fdp_pli", "3.34", None),
    ("fdp_pli_select", "3.36", None),
    ("filetype", "3.41", None),
    ("http_object_mode", "3.41", None),
    ("http_s3_security_token", "3.41", None),
    ("job_start_clock_id", "3.36", None),
    ("libaio_vectored", "3.39", None),
    ("libblkio_driver", "3.34", None),
    ("libblkio_force_enable_completion_eventfd", "3.34", None),
    ("libblkio_num_entries", "3.34", None),
    ("libblkio_path", "3.34", None),
    ("libblkio_pre_connect_props", "3.34", None),
    ("libblkio_pre_start_props", "3.34", None),
    ("libblkio_queue_size", "3.34", None),
    ("libblkio_vectored", "3.34", None),
    ("libblkio_wait_mode", "3.34", None),
    ("libblkio_write_zeroes_on_trim", "3.34", None),
    ("log_issue_time", "3.38", None),
    ("log_window_value", "3.37", None),
    ("md_per_io_size", "3.36", None),
    ("num_range", "3.37", Some("the ranges each trim command carries")),
    ("pi_act", "3.36", None),
    ("pi_chk", "3.36", None),
    ("plid_select", "3.38", None),
    ("plids", "3.38", None),
    ("priohint", "3.36", None),
    ("ramp_size", "3.42", Some("how much I/O is done before the statistics start")),
    ("rbd_encryption_format", "3.42", None),
    ("rbd_encryption_passphrase", "3.42", None),
    ("recover_zbd_write_error", "3.40", None),
    ("spr_cs", "3.42", Some("the offsets: SSD preconditioning by `sprandom`")),
    ("spr_num_regions", "3.41", Some("the offsets: SSD preconditioning by `sprandom`")),
    ("spr_op", "3.41", Some("the offsets: SSD preconditioning by `sprandom`")),
    ("sprandom", "3.41", Some("the offsets: SSD preconditioning")),
    ("ss_interval", "3.35", Some("how often steady state is sampled")),
    ("steadystate_check_interval", "3.35", Some("how often steady state is sampled")),
    ("thinkcycles", "3.37", Some("the CPU time spent between I/Os")),
    ("verify_header_seed", "3.40", None),
    ("verify_mode", "3.38", None),
    ("verify_pattern_interval", "3.40", None),
    ("verify_write_sequence", "3.38", None),
    (
        "write_mode",
        "3.38",
        Some("the command a write issues (write zeroes, uncorrectable, verify)"),
    ),
    ("write_zone_remainder", "3.42", None),
    ("write_zone_remainders", "3.42", None),
    ("xnvme_dev_subnqn", "3.34", None),
    ("xnvme_mem", "3.34", None),
];

/// What to do with `key` if it is an option fio added after 3.33: a warning to ignore it, or
/// the error refusing it.
fn later_fio(key: &str) -> Option<Outcome> {
    let &(_, version, changes) = LATER_FIO.iter().find(|(name, _, _)| *name == key)?;
    Some(match changes {
        None => Ok(Applied::Warn(format!(
            "`{key}` is a fio {version} option, which elevator does not model (it reads job \
             files as fio 3.33 does); ignored"
        ))),
        Some(what) => Err(OptionError::Value(format!(
            "`{key}` is a fio {version} option, which would change {what}; elevator reads \
             job files as fio 3.33 does and does not model it"
        ))),
    })
}

/// Modelled options whose values are names or words, never expressions.
const TEXT_OPTIONS: &[&str] = &[
    "name",
    "description",
    "rw",
    "filename",
    "directory",
    "ioengine",
    "cgroup",
    "ioscheduler",
    "file_service_type",
    "sync",
    "fadvise_hint",
    "exit_what",
    "rw_sequencer",
    "zonemode",
    "random_generator",
    "sync_file_range",
    "unified_rw_reporting",
    "read_iolog",
    "replay_redirect",
    "write_lat_log",
    "write_bw_log",
    "write_iops_log",
    "write_iolog",
    "verify",
    "thinktime_blocks_type",
];

fn canonical(key: &str) -> Option<&'static str> {
    MODELLED.iter().find(|(name, _)| *name == key).map(|&(_, c)| c)
}

/// The known option name nearest to `key` by edit distance, if it is plausibly a typo.
pub fn suggest(key: &str) -> Option<&'static str> {
    let limit = (key.chars().count() / 3).clamp(1, 3);
    MODELLED
        .iter()
        .map(|&(name, _)| name)
        .chain(UNMODELLED.iter().copied())
        .map(|name| (edit_distance(key, name), name))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, name)| name)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// A job being assembled: its spec plus the parse state fio keeps beside it.
#[derive(Clone, Debug)]
pub struct Builder {
    pub spec: JobSpec,
    /// `kb_base=`: how later size suffixes are read.
    kb_base: u64,
    /// `bssplit=` per direction; fio lets it win over `bs`/`bsrange` whatever the order.
    split: [Option<BlockSize>; 3],
    /// The machine's values for `$pagesize`, `$ncpus`, `$mb_memory`.
    keywords: Keywords,
    /// `zonesize=`: what the `z` suffix of `size=`, `offset=`, `io_size=` counts.
    zone_bytes: u64,
    /// `zonemode=`, and whether `zonesize=`, `zonerange=`, `zoneskip=` were given (fio checks
    /// them together once the job is read: `fixup_options`).
    zone_mode: ZoneMode,
    zone_size_set: bool,
    zone_range_bytes: u64,
    zone_skip_bytes: u64,
}

/// fio's `zonemode=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ZoneMode {
    None,
    Strided,
}

/// The zone size the `z` suffix counts when `zonesize=` is not given: 256 MiB, the zone of
/// SMR disks and of most ZNS drives.
pub const DEFAULT_ZONE_BYTES: u64 = 256 << 20;

impl Builder {
    #[cfg(test)]
    pub fn new(name: &str, source: SourceLocation) -> Self {
        Builder::with_keywords(name, source, Keywords::default())
    }

    pub fn with_keywords(name: &str, source: SourceLocation, keywords: Keywords) -> Self {
        Builder {
            spec: JobSpec::new_default(name, source),
            kb_base: 1024,
            split: [None, None, None],
            keywords,
            zone_bytes: DEFAULT_ZONE_BYTES,
            zone_mode: ZoneMode::None,
            zone_size_set: false,
            zone_range_bytes: 0,
            zone_skip_bytes: 0,
        }
    }

    /// The finished spec, with the fix-ups fio applies after parsing.
    #[cfg(test)]
    pub fn finish(self) -> JobSpec {
        self.finish_with_warnings().expect("a finished job").0
    }

    /// [`Builder::finish`], with what was changed said in warnings, each with the option it
    /// is about. An error (a replayed log the replay options make too long) names its option.
    #[allow(clippy::type_complexity)]
    pub fn finish_with_warnings(
        mut self,
    ) -> Result<(JobSpec, Vec<(&'static str, String)>), (&'static str, String)> {
        let mut warnings: Vec<(&'static str, String)> = Vec::new();
        if self.spec.direct && self.spec.sync_file_range.take().is_some() {
            warnings.push((
                "sync_file_range",
                "a direct (O_DIRECT) job leaves no dirty pages for sync_file_range to write back; not simulated"
                    .to_string(),
            ));
        }
        let spins = self.spec.thinktime_spin_ns > 0 || self.spec.cpuload_percent > 0;
        if self.spec.nice != 0 && spins {
            warnings.push((
                "nice",
                "nice sets the job's I/O priority here (without prio=), not its share of the CPUs: spinning jobs share them equally"
                    .to_string(),
            ));
        }
        if self.spec.time_based && self.spec.runtime_ns.is_none() {
            // fio runs such a job until it is stopped; a simulation has to end.
            self.spec.time_based = false;
            warnings.push((
                "time_based",
                "time_based without runtime= runs until stopped in fio; elevator does the job's I/O once (add runtime= for a timed run)"
                    .to_string(),
            ));
        }
        // fio's fixup_options: zonesize needs zonemode=strided, which needs zonesize; the
        // range defaults to the size.
        match (self.zone_mode, self.zone_size_set) {
            (ZoneMode::None, true) => {
                return Err((
                    "zonesize",
                    "--zonemode=none and --zonesize are not compatible (fio); add zonemode=strided"
                        .into(),
                ))
            }
            (ZoneMode::Strided, false) => {
                return Err((
                    "zonemode",
                    "--zonesize must be specified when using --zonemode=strided (fio)".into(),
                ))
            }
            (ZoneMode::Strided, true) => {
                let range = if self.zone_range_bytes == 0 {
                    self.zone_bytes
                } else {
                    self.zone_range_bytes
                };
                self.spec.zones = Some(crate::StridedZones {
                    size_bytes: self.zone_bytes,
                    range_bytes: range,
                    skip_bytes: self.zone_skip_bytes,
                });
            }
            (ZoneMode::None, false) => {}
        }
        for (slot, split) in self.spec.block_size.iter_mut().zip(self.split) {
            if let Some(split) = split {
                *slot = split;
            }
        }
        // The replayed log as the replay options make it (they may come before read_iolog).
        if let Some(log) = &self.spec.iolog {
            if self.spec.replay != crate::iolog::Replay::default() {
                if self.spec.replay.skip.iter().any(|&s| s) && !log.from_blktrace() {
                    warnings.push((
                        "replay_skip",
                        "replay_skip applies to blktrace replays only; fio 3.33 replays every action of a fio iolog"
                            .to_string(),
                    ));
                }
                let adjusted = log.adjusted(&self.spec.replay).map_err(|e| ("read_iolog", e))?;
                self.spec.iolog = Some(std::sync::Arc::new(adjusted));
            }
        }
        // fio: blockalign applies to random jobs only; an alignment other than the smallest
        // block turns the random map off.
        let random = self.spec.rw.is_random();
        for (ba, bs) in self.spec.block_align.iter_mut().zip(&self.spec.block_size) {
            if !random || *ba == Some(bs.min_bytes()) {
                *ba = None;
            }
        }
        if self.spec.block_align.iter().any(Option::is_some) && !self.spec.norandommap {
            self.spec.norandommap = true;
            warnings.push((
                "ba",
                "any use of blockalign= turns off the random map (as fio)".to_string(),
            ));
        }
        // fio: any distribution but the uniform one turns the random map off.
        if !self.spec.random_distribution.is_uniform() {
            self.spec.norandommap = true;
        }
        // fio: a batch of 0, or one above iodepth, means "iodepth".
        if self.spec.iodepth_batch == 0 || self.spec.iodepth_batch > self.spec.iodepth {
            self.spec.iodepth_batch = self.spec.iodepth;
        }
        Ok((self.spec, warnings))
    }

    /// Applies one option line. `value` is `None` for a bare flag.
    pub fn apply(&mut self, key: &str, value: Option<&str>) -> Outcome {
        // `$pagesize`, `$ncpus`, `$mb_memory` and arithmetic, as fio rewrites them first, in
        // the values that are numbers (a filename_format's `$jobnum` is not a keyword).
        let numeric =
            canonical(key).is_some_and(|c| !TEXT_OPTIONS.contains(&c)) || key == "zonesize";
        let rewritten = match value {
            Some(v) if numeric => expr::rewrite(v, &self.keywords, self.kb_base)
                .map_err(|reason| OptionError::Value(format!("bad value `{v}`: {reason}")))?,
            _ => None,
        };
        let value = rewritten.as_deref().or(value);
        if key == "zonesize" {
            if let Some(v) = value {
                let bytes = parse_size(v, self.kb_base)
                    .map_err(|reason| OptionError::Value(format!("bad value `{v}`: {reason}")))?;
                if bytes == 0 || bytes % SECTOR_BYTES != 0 {
                    return Err(OptionError::Value(format!(
                        "bad value `{v}`: a zone size is a positive multiple of {SECTOR_BYTES}"
                    )));
                }
                zone_bytes_at_most(bytes)
                    .map_err(|e| OptionError::Value(format!("bad value `{v}`: {e}")))?;
                self.zone_bytes = bytes;
                self.zone_size_set = true;
            }
        }
        let zoned = match (key, value) {
            ("size" | "offset" | "io_size" | "io_limit", Some(v)) => self
                .zones(v)
                .map_err(|reason| OptionError::Value(format!("bad value `{v}`: {reason}")))?,
            _ => None,
        };
        let value = zoned.as_deref().or(value);
        let Some(name) = canonical(key) else {
            if UNMODELLED.contains(&key) {
                return Ok(Applied::Warn(format!("elevator does not model `{key}`; ignored")));
            }
            if let Some(outcome) = later_fio(key) {
                return outcome;
            }
            return Err(OptionError::Unknown { suggestion: suggest(key) });
        };
        match name {
            "time_based" => self.spec.time_based = flag(value)?,
            "bs_unaligned" => self.spec.bs_unaligned = flag(value)?,
            "group_reporting" => self.spec.group_reporting = flag(value)?,
            "do_verify" => self.spec.do_verify = flag(value)?,
            "verify_only" => self.spec.verify_only = flag(value)?,
            "clat_percentiles" => self.spec.clat_percentiles = flag(value)?,
            "lat_percentiles" => self.spec.lat_percentiles = flag(value)?,
            "new_group" => self.spec.new_group = flag(value)?,
            "stonewall" => self.spec.stonewall = flag(value)?,
            "exitall" => self.spec.exitall = flag(value)?,
            "disk_util" => self.spec.disk_util = flag(value)?,
            "exitall_on_error" => self.spec.exitall_on_error = flag(value)?,
            "exit_on_io_done" => self.spec.exit_on_io_done = flag(value)?,
            "replay_no_stall" => self.spec.replay_no_stall = flag(value)?,
            "end_fsync" => self.spec.end_fsync = flag(value)?,
            "fill_device" => self.spec.fill_device = flag(value)?,
            "fsync_on_close" => self.spec.fsync_on_close = flag(value)?,
            "invalidate" => self.spec.invalidate = flag(value)?,
            "pre_read" => self.spec.pre_read = flag(value)?,
            "norandommap" => self.spec.norandommap = flag(value)?,
            "softrandommap" => self.spec.softrandommap = flag(value)?,
            "random_generator" => {
                self.spec.lfsr = match value.unwrap_or("") {
                    "tausworthe" | "tausworthe64" => false,
                    "lfsr" => true,
                    other => {
                        return Err(OptionError::Value(format!(
                            "`{other}`: expected tausworthe, lfsr or tausworthe64"
                        )))
                    }
                }
            }
            "create_on_open" => self.spec.create_on_open = flag(value)?,
            "file_append" => self.spec.file_append = flag(value)?,
            "log_max_value" => self.spec.logs.max_value = flag(value)?,
            "per_job_logs" => self.spec.logs.per_job = flag(value)?,
            // A bare `write_bw_log` names the logs after the job, as fio does.
            "write_lat_log" | "write_bw_log" | "write_iops_log"
                if value.is_none_or(str::is_empty) =>
            {
                let slot = self.spec.logs.slot(name);
                *slot = Some(String::new());
            }
            _ => {
                let Some(v) = value else {
                    return Err(OptionError::Value(format!(
                        "needs a value (`{key}=...`); fio rejects a bare `{key}`"
                    )));
                };
                return self
                    .apply_value(name, v)
                    .map_err(|reason| OptionError::Value(format!("bad value `{v}`: {reason}")));
            }
        }
        Ok(Applied::Done)
    }

    /// fio's `z` suffix: a count of zones (`size=8z`), `None` if the value has none.
    fn zones(&self, v: &str) -> Result<Option<String>, String> {
        let Some(count) = v.trim().strip_suffix(['z', 'Z']) else { return Ok(None) };
        if count.is_empty() || !count.chars().all(|c| c.is_ascii_digit()) {
            return Ok(None);
        }
        let n: u64 = count.parse().map_err(|_| format!("`{v}` is too large"))?;
        let bytes = n.checked_mul(self.zone_bytes).ok_or_else(|| format!("`{v}` is too large"))?;
        Ok(Some(bytes.to_string()))
    }

    fn apply_value(&mut self, name: &str, v: &str) -> Result<Applied, String> {
        let kb = self.kb_base;
        let spec = &mut self.spec;
        match name {
            "name" => {
                if v.is_empty() {
                    return Err("a job name is expected".into());
                }
                spec.name = v.to_string();
            }
            "description" => {}
            "rw" => return self.apply_rw(v),
            "rwmixread" => spec.rwmixread_percent = int_in(v, kb, 0, 100)? as u32,
            "rwmixwrite" => spec.rwmixread_percent = 100 - int_in(v, kb, 0, 100)? as u32,
            "bs" => {
                let parts = split_ddir(v)?;
                for (slot, part) in spec.block_size.iter_mut().zip(parts) {
                    if let Some(p) = part {
                        *slot = BlockSize::Fixed { bytes: block_bytes(p, kb)? };
                    }
                }
            }
            "ba" => {
                for (slot, part) in spec.block_align.iter_mut().zip(split_ddir(v)?) {
                    if let Some(p) = part {
                        *slot = Some(block_bytes(p, kb)?);
                    }
                }
            }
            "bsrange" => {
                // fio's irange also separates the directions with `/`: 1k-4k/8k-32k.
                let v = if v.contains(',') { v.to_string() } else { v.replace('/', ",") };
                let parts = split_ddir(&v)?;
                for (slot, part) in spec.block_size.iter_mut().zip(parts) {
                    if let Some(p) = part {
                        let (lo, hi) = split_range(p).ok_or_else(|| {
                            format!("`{p}` is not a range (expected e.g. 4k-64k)")
                        })?;
                        let (a, b) = (block_bytes(lo, kb)?, block_bytes(hi, kb)?);
                        *slot = BlockSize::Range { min_bytes: a.min(b), max_bytes: a.max(b) };
                    }
                }
            }
            "bssplit" => {
                let parts = split_ddir(v)?;
                for (slot, part) in self.split.iter_mut().zip(parts) {
                    if let Some(p) = part {
                        *slot = Some(parse_bssplit(p, kb)?);
                    }
                }
            }
            "size" => {
                spec.size = match parse_size_or_percent(v, kb)? {
                    Amount::Bytes(0) => None,
                    Amount::Bytes(b) => Some(Amount::Bytes(b)),
                    Amount::Percent(p) if p > 0.0 => Some(Amount::Percent(p)),
                    Amount::Percent(_) => return Err("a size above 0% is expected".into()),
                }
            }
            "offset" => spec.offset = parse_size_or_percent(v, kb)?,
            "offset_increment" => spec.offset_increment = parse_size_or_percent(v, kb)?,
            // 0: the smallest block (fio's default); else a block alignment, as `ba=` is.
            "offset_align" => {
                spec.offset_align = match parse_size(v, kb)? {
                    0 => None,
                    _ => Some(block_bytes(v, kb)?),
                }
            }
            "filename" => {
                if v.is_empty() {
                    return Err("a device or file name is expected".into());
                }
                spec.filename = Some(v.to_string());
            }
            "directory" => {
                if v.is_empty() {
                    return Err("a device, partition or volume name is expected".into());
                }
                spec.directory = Some(v.to_string());
            }
            "direct" => spec.direct = parse_bool(v)?,
            "buffered" => spec.direct = !parse_bool(v)?,
            "ioengine" => spec.ioengine = parse_engine(v)?,
            "iodepth" => spec.iodepth = int_in(v, kb, 1, MAX_IODEPTH)? as u32,
            "iodepth_batch" => spec.iodepth_batch = int_in(v, kb, 0, MAX_IODEPTH)? as u32,
            "iodepth_low" => spec.iodepth_low = int_in(v, kb, 0, MAX_IODEPTH)? as u32,
            "percentile_list" => {
                let (list, precision) = parse_percentile_list(v)?;
                spec.percentile_list = list;
                spec.percentile_precision = precision;
            }
            "iodepth_batch_complete_min" => {
                spec.iodepth_batch_complete_min = int_in(v, kb, 0, MAX_IODEPTH)? as u32;
            }
            // How many completions one reap may take beyond the minimum: each completion is
            // seen when it happens here, so the cap changes nothing; checked and dropped.
            "iodepth_batch_complete_max" => {
                int_in(v, kb, 0, MAX_IODEPTH)?;
            }
            "percentage_random" => {
                for (d, part) in split_ddir(v)?.into_iter().enumerate() {
                    if let Some(part) = part {
                        spec.percentage_random[d] = int_in(part, kb, 0, 100)? as u32;
                    }
                }
            }
            "random_distribution" => {
                spec.random_distribution = crate::parse_random_distribution(v, kb)?;
            }
            "numjobs" => {
                spec.numjobs = int_in(v, kb, 1, crate::parser::MAX_PROCESSES)? as u32;
            }
            "runtime" => {
                let ns = parse_time_ns(v, NS_PER_SEC)?;
                spec.runtime_ns = (ns > 0).then_some(ns);
            }
            "ramp_time" => spec.ramp_time_ns = parse_time_ns(v, NS_PER_SEC)?,
            "latency_target" | "latency_window" => {
                let ns = parse_time_ns(v, 1_000)?;
                if ns > MAX_LATENCY_TARGET_NS {
                    return Err(format!("`{v}` is above an hour (MAX_LATENCY_TARGET_NS)"));
                }
                if name == "latency_target" {
                    spec.latency_target_ns = (ns > 0).then_some(ns);
                } else {
                    spec.latency_window_ns = ns;
                }
            }
            "latency_percentile" => {
                let p: f64 = v
                    .trim_end_matches('%')
                    .parse()
                    .ok()
                    .filter(|p: &f64| (0.0..=100.0).contains(p))
                    .ok_or_else(|| format!("`{v}` is not a percentage 0 to 100"))?;
                spec.latency_percentile = p;
            }
            "startdelay" => spec.startdelay_ns = parse_time_ns(v, NS_PER_SEC)?,
            "verify_backlog" => spec.verify_backlog = int_in(v, kb, 0, u32::MAX.into())?,
            "verify_backlog_batch" => {
                spec.verify_backlog_batch = int_in(v, kb, 0, u32::MAX.into())?;
            }
            "steadystate" => steadystate_criterion(&mut spec.steadystate, v, kb)?,
            "steadystate_duration" | "steadystate_ramp_time" => {
                let ns = parse_time_ns(v, NS_PER_SEC)?;
                if ns > MAX_SS_DURATION_S * NS_PER_SEC {
                    return Err(format!("`{v}` is more than a day (MAX_SS_DURATION_S)"));
                }
                if name == "steadystate_duration" {
                    // fio keeps whole seconds (`ss_dur /= 1000000`): under a second is off.
                    spec.steadystate.duration_s = ns / NS_PER_SEC;
                } else {
                    spec.steadystate.ramp_ns = ns;
                }
            }
            "thinktime" => spec.thinktime_ns = think_time_ns(v)?,
            "thinktime_spin" => spec.thinktime_spin_ns = think_time_ns(v)?,
            // fio's cpuio engine: a load above 100 % is 100 %.
            "cpuload" => spec.cpuload_percent = int_in(v, kb, 0, u32::MAX.into())?.min(100) as u32,
            "cpuchunks" => {
                let us = int_in(v, kb, 1, MAX_THINKTIME_NS / NS_PER_US)?;
                spec.cpuchunks_ns = us * NS_PER_US;
            }
            "cpumode" => {
                // Both burn the CPU; which instructions does not matter here.
                if !matches!(v, "noop" | "qsort") {
                    return Err(format!("`{v}` is not a cpumode (noop, qsort)"));
                }
            }
            "thinktime_blocks" => {
                spec.thinktime_blocks = int_in(v, kb, 1, u32::MAX.into())? as u32;
                spec.thinktime_blocks_set = true;
            }
            "thinktime_iotime" => {
                let ns = parse_time_ns(v, NS_PER_SEC)?;
                if ns > MAX_THINKTIME_NS {
                    return Err(format!("more than a day (MAX_THINKTIME_NS): `{v}`"));
                }
                spec.thinktime_iotime_ns = ns;
            }
            "max_latency" => {
                for (slot, part) in spec.max_latency_ns.iter_mut().zip(split_ddir(v)?) {
                    if let Some(p) = part {
                        let ns = parse_time_ns(p, NS_PER_US)?;
                        if ns > MAX_LATENCY_TARGET_NS {
                            return Err(format!("`{p}` is above an hour (MAX_LATENCY_TARGET_NS)"));
                        }
                        *slot = (ns > 0).then_some(ns);
                    }
                }
            }
            "thinktime_blocks_type" => {
                spec.thinktime_blocks_on_issue = match v.trim() {
                    "complete" => false,
                    "issue" => true,
                    other => return Err(format!("`{other}`: expected complete or issue")),
                }
            }
            "rate" => spec.rate_bytes_per_sec = per_ddir_limit(v, kb)?,
            "rate_iops" => spec.rate_iops = per_ddir_limit(v, kb)?,
            "rate_min" => spec.rate_min_bytes_per_sec = per_ddir_limit(v, kb)?,
            "rate_iops_min" => spec.rate_iops_min = per_ddir_limit(v, kb)?,
            "rate_cycle" => {
                let ns = parse_time_ns(v, NS_PER_MS)?;
                if ns == 0 || ns > MAX_THINKTIME_NS {
                    return Err(format!(
                        "`{v}`: a cycle above 0 and at most a day (MAX_THINKTIME_NS)"
                    ));
                }
                spec.rate_cycle_ns = ns;
            }
            "rate_process" => {
                spec.rate_process = match v.trim() {
                    "linear" => crate::RateProcess::Linear,
                    "poisson" => crate::RateProcess::Poisson,
                    other => return Err(format!("`{other}`: expected linear or poisson")),
                }
            }
            "cgroup" => {
                if v.is_empty() {
                    return Err("a cgroup path is expected (e.g. groupA or a/b)".into());
                }
                spec.cgroup = Some(v.to_string());
            }
            "zonemode" => {
                self.zone_mode = match v {
                    "none" => ZoneMode::None,
                    "strided" => ZoneMode::Strided,
                    "zbd" => return Err("zonemode=zbd needs a zoned block device (host-managed SMR, ZNS); elevator's devices are not zoned".into()),
                    other => return Err(format!("`{other}`: expected none, strided or zbd")),
                }
            }
            // Parsed above, for the `z` suffix.
            "zonesize" => {}
            "zonerange" => self.zone_range_bytes = zone_bytes_at_most(parse_size(v, kb)?)?,
            "zoneskip" => {
                if v.trim_end().ends_with(['z', 'Z']) {
                    return Err("a count of zones (`z`) is zonemode=zbd's, which elevator does not model; give bytes".into());
                }
                self.zone_skip_bytes = zone_bytes_at_most(parse_size(v, kb)?)?;
            }
            "ioscheduler" => {
                if v.is_empty() || v.len() > crate::MAX_IOSCHEDULER_NAME_BYTES {
                    return Err(format!(
                        "a scheduler name of 1 to {} bytes is expected (ELV_NAME_MAX), e.g. bfq",
                        crate::MAX_IOSCHEDULER_NAME_BYTES
                    ));
                }
                spec.ioscheduler = Some(v.to_string());
            }
            "cgroup_weight" => spec.cgroup_weight = Some(int_in(v, kb, 100, 1000)? as u32),
            "prio" => spec.prio = Some(int_in(v, kb, 0, 7)? as u8),
            // fio's minval -20, maxval 19 (strtoll's sign).
            "nice" => {
                let t = v.trim();
                let (negative, magnitude) = match t.strip_prefix('-') {
                    Some(m) => (true, m),
                    None => (false, t.strip_prefix('+').unwrap_or(t)),
                };
                let n = parse_size(magnitude, kb)?;
                if n > if negative { 20 } else { 19 } {
                    return Err(format!("`{v}` is out of range (expected -20 to 19)"));
                }
                spec.nice = if negative { -(n as i8) } else { n as i8 };
            }
            "prioclass" => spec.prioclass = Some(int_in(v, kb, 0, 3)? as u8),
            "randrepeat" => spec.randrepeat = parse_bool(v)?,
            "randseed" => spec.randseed = Some(parse_size(v, kb)?),
            "uid" => spec.uid = Some(int_in(v, kb, 0, u32::MAX.into())? as u32),
            "gid" => spec.gid = Some(int_in(v, kb, 0, u32::MAX.into())? as u32),
            "nrfiles" => spec.nrfiles = int_in(v, kb, 1, crate::parser::MAX_FILES)? as u32,
            "wait_for" => spec.wait_for = Some(v.to_string()),
            "openfiles" => spec.open_files = int_in(v, kb, 0, u32::MAX.into())? as u32,
            "filesize" => {
                let (lo, hi) = split_range(v).unwrap_or((v, v));
                let (a, b) = (parse_size(lo, kb)?, parse_size(hi, kb)?);
                spec.filesize = Some((a.min(b), a.max(b)));
            }
            "file_service_type" => return self.apply_file_service_type(v),
            "io_size" => {
                let bytes = parse_size(v, kb)?;
                spec.io_size_bytes = (bytes > 0).then_some(bytes);
            }
            "number_ios" => {
                let n = parse_size(v, kb)?;
                spec.number_ios = (n > 0).then_some(n);
            }
            "loops" => spec.loops = int_in(v, kb, 1, MAX_LOOPS)?,
            "fsync" => spec.fsync_every = int_in(v, kb, 0, u32::MAX.into())? as u32,
            "fdatasync" => spec.fdatasync_every = int_in(v, kb, 0, u32::MAX.into())? as u32,
            "write_barrier" => spec.write_barrier_every = int_in(v, kb, 0, u32::MAX.into())? as u32,
            "sync" => {
                spec.sync_io = match v {
                    "0" | "none" => crate::job::SyncIo::None,
                    "1" | "sync" => crate::job::SyncIo::Sync,
                    "dsync" => crate::job::SyncIo::Dsync,
                    _ => return Err("expected 0, 1, none, sync or dsync".into()),
                }
            }
            "fadvise_hint" => {
                spec.fadvise_hint = match v {
                    "0" => crate::job::FadviseHint::Off,
                    "1" => crate::job::FadviseHint::Auto,
                    "sequential" => crate::job::FadviseHint::Sequential,
                    "random" => crate::job::FadviseHint::Random,
                    _ => return Err("expected 0, 1, sequential or random".into()),
                }
            }
            "read_iolog" => {
                let path = std::path::Path::new(v);
                let path = if path.is_relative() {
                    std::path::Path::new(&spec.source.file)
                        .parent()
                        .unwrap_or(std::path::Path::new("."))
                        .join(path)
                } else {
                    path.to_path_buf()
                };
                spec.iolog = Some(std::sync::Arc::new(crate::iolog::IoLog::load(&path)?));
            }
            "replay_redirect" => spec.replay_redirect = Some(v.to_string()),
            "replay_time_scale" => {
                spec.replay.time_scale_percent =
                    int_in(v, kb, 1, MAX_REPLAY_TIME_SCALE_PERCENT.into())? as u32;
            }
            "replay_scale" => spec.replay.scale = int_in(v, kb, 0, u32::MAX.into())?.max(1),
            "replay_align" => {
                let a = int_in(v, kb, 0, MAX_BLOCK_BYTES)?;
                if a > 1 && !a.is_power_of_two() {
                    return Err(format!("{a} is not a power of two"));
                }
                spec.replay.align_bytes = a;
            }
            "replay_skip" => {
                for kind in v.split(',').map(str::trim) {
                    let i = ["read", "write", "trim", "sync"]
                        .iter()
                        .position(|k| *k == kind)
                        .ok_or_else(|| {
                            format!("unknown skip type `{kind}` (read, write, trim, sync)")
                        })?;
                    spec.replay.skip[i] = true;
                }
            }
            "verify" => {
                spec.verify = match v.trim() {
                    "0" | "none" => false,
                    kind if VERIFY_KINDS.contains(&kind) => true,
                    other => {
                        return Err(format!(
                            "`{other}` is not a verify method (fio's: {})",
                            VERIFY_KINDS.join(", ")
                        ))
                    }
                }
            }
            "write_iolog" => {
                if v.trim().is_empty() {
                    return Err("a file name is expected".into());
                }
                spec.write_iolog = Some(v.trim().to_string());
            }
            "write_lat_log" | "write_bw_log" | "write_iops_log" => {
                *spec.logs.slot(name) = Some(v.to_string());
            }
            "cmdprio_percentage" | "cmdprio_class" | "cmdprio" => {
                let (min, max) = match name {
                    "cmdprio_percentage" => (0, 100),
                    "cmdprio_class" => (1, 3),
                    _ => (0, 7),
                };
                for (d, part) in split_ddir(v)?.into_iter().enumerate() {
                    let Some(part) = part else { continue };
                    let n = int_in(part, kb, min, max)?;
                    if name == "cmdprio_percentage"
                        && n > 0
                        && spec.cmdprio_bssplit.iter().any(|s| !s.is_empty())
                    {
                        return Err(EXCLUSIVE_CMDPRIO.into());
                    }
                    match name {
                        "cmdprio_percentage" => spec.cmdprio_percentage[d] = n as u32,
                        "cmdprio_class" => spec.cmdprio_class[d] = n as u8,
                        _ => spec.cmdprio_level[d] = n as u8,
                    }
                }
            }
            "cmdprio_bssplit" => {
                if spec.cmdprio_percentage.iter().any(|&p| p > 0) {
                    return Err(EXCLUSIVE_CMDPRIO.into());
                }
                for (d, part) in split_ddir(v)?.into_iter().enumerate() {
                    let Some(part) = part else { continue };
                    spec.cmdprio_bssplit[d] = parse_cmdprio_bssplit(part, kb)?;
                }
            }
            "log_avg_msec" => {
                spec.logs.avg_msec = int_in(v, kb, 0, MAX_LOG_AVG_MSEC)?;
            }
            // A window of 0 ms, which fio takes, samples nothing sensible; at least 1 here.
            "bwavgtime" => spec.logs.bw_avg_ms = Some(int_in(v, kb, 1, MAX_LOG_AVG_MSEC)?),
            "iopsavgtime" => spec.logs.iops_avg_ms = Some(int_in(v, kb, 1, MAX_LOG_AVG_MSEC)?),
            "sync_file_range" => {
                // fio's str_sfr_cb: flags, then `:N` (default 1).
                let (flags, nr) = match v.split_once(':') {
                    Some((f, n)) => (f, Some(n.trim())),
                    None => (v, None),
                };
                let mut sfr =
                    SyncFileRange { wait_before: false, write: false, wait_after: false, every: 1 };
                for flag in flags.split(',').map(str::trim) {
                    match flag {
                        "wait_before" => sfr.wait_before = true,
                        "write" => sfr.write = true,
                        "wait_after" => sfr.wait_after = true,
                        _ => {
                            return Err(format!(
                                "`{flag}` is not one of wait_before, write, wait_after"
                            ))
                        }
                    }
                }
                if let Some(n) = nr {
                    sfr.every = n.parse().map_err(|_| {
                        format!("`{n}`: the writes between calls are a count (0 to {})", u32::MAX)
                    })?;
                }
                spec.sync_file_range = Some(sfr);
            }
            "unified_rw_reporting" => {
                spec.unified_rw_reporting = match v.trim() {
                    "none" | "0" => UnifiedRw::Split,
                    "mixed" | "1" => UnifiedRw::Mixed,
                    "both" | "2" => UnifiedRw::Both,
                    _ => return Err(format!("`{v}` is not one of none, mixed, both, 0, 1, 2")),
                }
            }
            "rw_sequencer" => {
                spec.rw_sequencer = match v.trim() {
                    "sequential" => RwSequencer::Sequential,
                    "identical" => RwSequencer::Identical,
                    _ => return Err(format!("`{v}` is not one of sequential, identical")),
                }
            }
            "exit_what" => {
                spec.exit_what = match v {
                    "group" => ExitWhat::Group,
                    "stonewall" => ExitWhat::Stonewall,
                    "all" => ExitWhat::All,
                    _ => return Err(format!("`{v}` is not one of group, stonewall, all")),
                }
            }
            "kb_base" => {
                self.kb_base = match v.trim() {
                    "1024" => 1024,
                    "1000" => 1000,
                    _ => return Err("expected 1024 or 1000".into()),
                };
                spec.kb_base = self.kb_base;
            }
            _ => return Err(format!("internal: option `{name}` has no handler")),
        }
        Ok(Applied::Done)
    }

    fn apply_rw(&mut self, v: &str) -> Result<Applied, String> {
        let (mode, modifier) = match v.split_once(':') {
            Some((m, n)) => (m.trim(), Some(n.trim())),
            None => (v.trim(), None),
        };
        self.spec.rw = match mode {
            "read" => RwMode::Read,
            "write" => RwMode::Write,
            "trim" => RwMode::Trim,
            "randread" => RwMode::RandRead,
            "randwrite" => RwMode::RandWrite,
            "randtrim" => RwMode::RandTrim,
            "rw" | "readwrite" => RwMode::ReadWrite,
            "randrw" => RwMode::RandRw,
            "trimwrite" | "randtrimwrite" => {
                // Each block trimmed, then written: the writes are what reaches the media.
                self.spec.rw = if mode == "trimwrite" { RwMode::Write } else { RwMode::RandWrite };
                return Ok(Applied::Warn(format!(
                    "elevator runs `{mode}` as its writes (`{}`); the trim before each write is not simulated",
                    if mode == "trimwrite" { "write" } else { "randwrite" }
                )));
            }
            _ => {
                return Err(
                    "expected read, write, trim, randread, randwrite, randtrim, rw, readwrite or randrw"
                        .into(),
                )
            }
        };
        // fio's str_rw_cb: every rw= starts from one I/O per offset and no holes.
        self.spec.rw_seq_nr = 1;
        self.spec.rw_seq_add_bytes = 0;
        let Some(n) = modifier else { return Ok(Applied::Done) };
        if self.spec.rw.is_random() {
            // `randread:8`: a new random offset every 8 I/Os. fio 3.33 reads the count with
            // atoi into an unsigned int (later fio parses sizes and refuses 0), so `8k` is 8,
            // a count past 32 bits wraps and 0 (or no digits) never draws a random offset.
            let nr = c_atoi(n);
            self.spec.rw_seq_nr = nr;
            if nr == 0 || nr.to_string() != n {
                return Ok(Applied::Warn(format!(
                    "`{mode}:{n}` is read as `{mode}:{nr}`, as fio 3.33 reads it (atoi){}",
                    if nr == 0 { ": the job never draws a random offset" } else { "" }
                )));
            }
        } else {
            // `read:4k` leaves a 4 KiB hole after each I/O; `read:-8k` steps back.
            let (negative, size) = match n.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, n),
            };
            let bytes = parse_size(size, self.kb_base)?;
            if bytes > MAX_RW_SEQ_ADD_BYTES {
                return Err(format!(
                    "`{n}`: a step of more than {MAX_RW_SEQ_ADD_BYTES} bytes (MAX_RW_SEQ_ADD_BYTES)"
                ));
            }
            self.spec.rw_seq_add_bytes = if negative { -(bytes as i64) } else { bytes as i64 };
        }
        Ok(Applied::Done)
    }

    fn apply_file_service_type(&mut self, v: &str) -> Result<Applied, String> {
        let (kind, arg) = match v.split_once(':') {
            Some((k, a)) => (k.trim(), Some(a.trim())),
            None => (v.trim(), None),
        };
        // fio's str_fst_cb: a count of I/Os per file after the three plain kinds (atoi), a
        // parameter after the distributions (their defaults otherwise).
        let value = |default: f64| -> Result<f64, String> {
            arg.map_or(Ok(default), |a| {
                a.parse::<f64>().map_err(|_| format!("`{a}` is not a number"))
            })
        };
        self.spec.file_service_nr = 1;
        self.spec.file_service_type = match kind {
            "random" => FileServiceType::Random,
            "roundrobin" => FileServiceType::RoundRobin,
            "sequential" => FileServiceType::Sequential,
            "zipf" => {
                let theta = value(1.1)?;
                if theta == 1.0 || !theta.is_finite() || theta <= 0.0 {
                    return Err("zipf theta must be above 0 and different from 1.0".into());
                }
                FileServiceType::Distribution(RandomDistribution::Zipf { theta, center: None })
            }
            "pareto" => {
                let h = value(0.2)?;
                if !(h > 0.0 && h < 1.0) {
                    return Err("pareto input out of range (0 < input < 1.0)".into());
                }
                FileServiceType::Distribution(RandomDistribution::Pareto { h, center: None })
            }
            "normal" | "gauss" => {
                let deviation_percent = value(0.0)?;
                if !(0.0..100.0).contains(&deviation_percent) {
                    return Err("normal deviation out of range (0 <= input < 100.0)".into());
                }
                FileServiceType::Distribution(RandomDistribution::Normal {
                    deviation_percent,
                    center: None,
                })
            }
            _ => {
                return Err(
                    "expected random, roundrobin, sequential (optionally `:N`), zipf, pareto, normal or gauss (optionally `:VALUE`)"
                        .into(),
                )
            }
        };
        if let (Some(a), "random" | "roundrobin" | "sequential") = (arg, kind) {
            self.spec.file_service_nr =
                a.parse::<u32>().map_err(|_| format!("`{a}` is not a count of I/Os per file"))?;
        }
        Ok(Applied::Done)
    }
}

/// A flag option (`time_based`): bare means on, otherwise 0 or 1.
fn flag(value: Option<&str>) -> Result<bool, OptionError> {
    match value {
        None => Ok(true),
        Some(v) => parse_bool(v).map_err(|r| OptionError::Value(format!("bad value `{v}`: {r}"))),
    }
}

/// An integer (fio allows size suffixes on any integer) within `min..=max`.
/// fio's `str_steadystate_cb`: `iops|iops_slope|bw|bw_slope:LIMIT`, the limit a percentage
/// of the mean (`2%`), else IOPS (a float) or bytes/s (a size, `kb_base` for its suffix).
fn steadystate_criterion(ss: &mut SteadyState, v: &str, kb: u64) -> Result<(), String> {
    let Some((kind, limit)) = v.split_once(':') else {
        return Err("a limit is expected after the criterion (`iops:2%`, `bw_slope:1M`)".into());
    };
    (ss.iops, ss.slope) = match kind.trim() {
        "iops" => (true, false),
        "iops_slope" => (true, true),
        "bw" => (false, false),
        "bw_slope" => (false, true),
        k @ ("lat" | "lat_slope") => {
            return Err(format!(
                "`{k}` is a criterion of fio 3.42 (completion latency); elevator reads job \
                 files as fio 3.33 does, whose criteria are iops, iops_slope, bw and bw_slope"
            ))
        }
        k => return Err(format!("`{k}` is not a criterion (iops, iops_slope, bw, bw_slope)")),
    };
    let limit = limit.trim();
    let number = |t: &str| {
        t.trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| format!("`{t}` is not a non-negative number"))
    };
    (ss.limit, ss.percent) = match limit.strip_suffix('%') {
        Some(pct) => (number(pct)?, true),
        None if ss.iops => (number(limit)?, false),
        None => (parse_size(limit, kb)? as f64, false),
    };
    Ok(())
}

fn int_in(v: &str, kb_base: u64, min: u64, max: u64) -> Result<u64, String> {
    let n = parse_size(v, kb_base)?;
    if n < min || n > max {
        return Err(format!("out of range (expected {min} to {max})"));
    }
    Ok(n)
}

/// The largest block size: what Linux moves in one read(2) or write(2) (`MAX_RW_COUNT`,
/// `INT_MAX & PAGE_MASK`); fio asks for more only to get a short transfer.
pub const MAX_BLOCK_BYTES: u64 = 0x7fff_f000;

/// One block size: positive and whole sectors, since the simulator works in 512-byte sectors,
/// and at most [`MAX_BLOCK_BYTES`].
fn block_bytes(v: &str, kb_base: u64) -> Result<u64, String> {
    let bytes = parse_size(v, kb_base)?;
    if bytes == 0 || bytes % SECTOR_BYTES != 0 {
        return Err(format!(
            "block size {bytes} is not a positive multiple of {SECTOR_BYTES}: elevator simulates {SECTOR_BYTES}-byte sectors"
        ));
    }
    if bytes > MAX_BLOCK_BYTES {
        return Err(format!(
            "block size {bytes} is more than Linux moves in one read or write ({MAX_BLOCK_BYTES} bytes, MAX_RW_COUNT)"
        ));
    }
    Ok(bytes)
}

/// Longest `latency_target=` and `latency_window=` taken: an hour (a longer one is a typo).
pub const MAX_LATENCY_TARGET_NS: u64 = 3_600_000_000_000;
/// The longest `thinktime` / `thinktime_spin`: a day.
pub const MAX_THINKTIME_NS: u64 = 86_400_000_000_000;

/// A `thinktime`-like value (default unit µs), at most [`MAX_THINKTIME_NS`].
fn think_time_ns(v: &str) -> Result<u64, String> {
    let ns = parse_time_ns(v, NS_PER_US)?;
    if ns > MAX_THINKTIME_NS {
        return Err(format!("`{v}` is above a day (MAX_THINKTIME_NS)"));
    }
    Ok(ns)
}

/// fio 3.33's `verify=` methods besides `0` (none). Which one changes what fio computes,
/// not the I/O it does: all of them read the written data back.
const VERIFY_KINDS: &[&str] = &[
    "md5",
    "crc64",
    "crc32c",
    "crc32c-intel",
    "crc32",
    "crc16",
    "crc7",
    "xxhash",
    "sha512",
    "sha256",
    "sha1",
    "sha3-224",
    "sha3-256",
    "sha3-384",
    "sha3-512",
    "meta",
    "pattern",
    "null",
];

/// The fastest `replay_time_scale=`: a trace replayed 10,000 times faster than recorded
/// (1,000,000 %). fio sets no bound.
pub const MAX_REPLAY_TIME_SCALE_PERCENT: u32 = 1_000_000;

/// Most percentiles `percentile_list=` takes (fio's `FIO_IO_U_LIST_MAX_LEN`).
pub const MAX_PERCENTILES: usize = 20;

/// `percentile_list=`: up to [`MAX_PERCENTILES`] percentiles joined by `:`, each 0 to 100; a 0
/// ends the list (fio counts entries up to the first zero). Sorted, as fio sorts them, with
/// the most digits any has after its point: the precision fio prints them with.
fn parse_percentile_list(v: &str) -> Result<(Vec<f64>, u32), String> {
    let mut list = Vec::new();
    let mut precision = 0u32;
    for part in v.split(':').map(str::trim) {
        if list.len() == MAX_PERCENTILES {
            return Err(format!(
                "more than {MAX_PERCENTILES} percentiles (MAX_PERCENTILES, fio's FIO_IO_U_LIST_MAX_LEN)"
            ));
        }
        let p: f64 = part
            .parse()
            .ok()
            .filter(|p: &f64| (0.0..=100.0).contains(p))
            .ok_or_else(|| format!("`{part}` is not a percentile (0 to 100)"))?;
        if p == 0.0 {
            break;
        }
        if let Some((_, frac)) = part.split_once('.') {
            let digits = frac.chars().take_while(char::is_ascii_digit).count() as u32;
            precision = precision.max(digits);
        }
        list.push(p);
    }
    if list.is_empty() {
        return Err("at least one percentile above 0 is expected".into());
    }
    list.sort_by(f64::total_cmp);
    Ok((list, precision))
}

/// fio's refusal of both ways of choosing which I/Os get a priority.
const EXCLUSIVE_CMDPRIO: &str = "cmdprio_percentage and cmdprio_bssplit are mutually exclusive";

/// Most entries one direction's `cmdprio_bssplit=` takes (fio's `BSSPLIT_MAX`).
pub const MAX_CMDPRIO_BSSPLIT: usize = 64;

/// The largest I/O priority hint (`IOPRIO_MAX_PRIO_HINT`: ten bits).
pub const MAX_IOPRIO_HINT: u16 = 1023;

/// `cmdprio_bssplit=` of one direction: `bs/perc[/class/level[/hint]]` entries joined by `:`
/// (fio's `parse_cmdprio_bssplit_entry`: class 1-3, level 0-7, hint 0-1023; a block size may
/// have several entries, their percentages at most 100 per block size, as fio's `tot_perc`).
/// The hint (a command duration limit descriptor for drives with CDL) is checked and
/// dropped: no simulated device has command duration limits.
fn parse_cmdprio_bssplit(v: &str, kb_base: u64) -> Result<Vec<crate::job::CmdPrioSplit>, String> {
    let mut out: Vec<crate::job::CmdPrioSplit> = Vec::new();
    for entry in v.split(':').map(str::trim).filter(|e| !e.is_empty()) {
        if out.len() >= MAX_CMDPRIO_BSSPLIT {
            return Err(format!("more than {MAX_CMDPRIO_BSSPLIT} entries"));
        }
        let fields: Vec<&str> = entry.split('/').map(str::trim).collect();
        let bad = |what: &str| format!("`{entry}`: {what}");
        let class_level = |class: &str, level: &str| -> Result<(u8, u8), String> {
            let class: u8 = class
                .parse()
                .ok()
                .filter(|c| (1..=3).contains(c))
                .ok_or_else(|| bad("the class is 1 (RT), 2 (BE) or 3 (IDLE)"))?;
            let level: u8 =
                level.parse().ok().filter(|l| *l <= 7).ok_or_else(|| bad("the level is 0 to 7"))?;
            Ok((class, level))
        };
        let (bs, perc, prio) = match fields.as_slice() {
            [bs, perc] => (*bs, *perc, None),
            [bs, perc, class, level] => (*bs, *perc, Some(class_level(class, level)?)),
            [bs, perc, class, level, hint] => {
                hint.parse::<u16>()
                    .ok()
                    .filter(|h| *h <= MAX_IOPRIO_HINT)
                    .ok_or_else(|| bad(&format!("the hint is 0 to {MAX_IOPRIO_HINT}")))?;
                (*bs, *perc, Some(class_level(class, level)?))
            }
            _ => return Err(bad("expected blocksize/percentage[/class/level[/hint]]")),
        };
        let percent: u32 = perc
            .parse()
            .ok()
            .filter(|p| *p <= 100)
            .ok_or_else(|| bad("the percentage is 0 to 100"))?;
        let bs_bytes = block_bytes(bs, kb_base)?;
        let total: u32 =
            out.iter().filter(|e| e.bs_bytes == bs_bytes).map(|e| e.percent).sum::<u32>() + percent;
        if total > 100 {
            return Err(format!(
                "percentages for block size {bs} add up to {total}, more than 100"
            ));
        }
        out.push(crate::job::CmdPrioSplit { bs_bytes, percent, prio });
    }
    Ok(out)
}

/// `bssplit` for one direction: `4k/10:64k/90`. Entries without a percentage share what is
/// left over equally (the last of them takes the rounding remainder); the total must be 100.
fn parse_bssplit(v: &str, kb_base: u64) -> Result<BlockSize, String> {
    let mut parts: Vec<(u64, Option<u32>)> = Vec::new();
    for entry in v.split(':').map(str::trim) {
        let (bs, perc) = match entry.split_once('/') {
            Some((b, p)) => (b.trim(), Some(p.trim())),
            None => (entry, None),
        };
        let perc = match perc {
            Some("") | None => None,
            Some(p) => Some(
                p.parse::<u32>()
                    .ok()
                    .filter(|&p| p <= 100)
                    .ok_or_else(|| format!("`{p}` is not a percentage 0..=100 in `{entry}`"))?,
            ),
        };
        parts.push((block_bytes(bs, kb_base)?, perc));
    }
    let given: u32 = parts.iter().filter_map(|p| p.1).fold(0, u32::saturating_add);
    if given > 100 {
        return Err(format!("percentages add up to {given}, more than 100"));
    }
    let missing = u32::try_from(parts.iter().filter(|p| p.1.is_none()).count()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(parts.len());
    let mut missing_seen = 0;
    for (bs, perc) in parts {
        let perc = match perc {
            Some(p) => p,
            None => {
                missing_seen += 1;
                let share = (100 - given) / missing;
                if missing_seen == missing {
                    share + (100 - given) % missing
                } else {
                    share
                }
            }
        };
        out.push((bs, perc));
    }
    let total: u32 = out.iter().map(|p| p.1).fold(0, u32::saturating_add);
    if total != 100 {
        return Err(format!(
            "percentages add up to {total}; they must add up to 100 (leave the last one out to give it the rest)"
        ));
    }
    Ok(BlockSize::Split { parts: out })
}

/// `rate=` / `rate_iops=`: per direction, empty or 0 meaning no limit.
fn per_ddir_limit(v: &str, kb_base: u64) -> Result<[Option<u64>; 3], String> {
    let mut out = [None; 3];
    for (slot, part) in out.iter_mut().zip(split_ddir(v)?) {
        if let Some(p) = part {
            let n = parse_size(p, kb_base)?;
            *slot = (n > 0).then_some(n);
        }
    }
    Ok(out)
}

fn parse_engine(v: &str) -> Result<IoEngine, String> {
    let lower = v.trim().to_ascii_lowercase();
    match lower.as_str() {
        "sync" => Ok(IoEngine::Sync),
        "psync" => Ok(IoEngine::Psync),
        "vsync" | "pvsync" | "pvsync2" => Ok(IoEngine::Pvsync),
        "libaio" => Ok(IoEngine::Libaio),
        "io_uring" => Ok(IoEngine::IoUring),
        other => {
            if other.starts_with("external") {
                return Err(
                    "an external engine (a shared object fio loads) cannot be simulated; use a built-in engine such as psync or libaio".into(),
                );
            }
            match ENGINES.iter().find(|(name, _)| *name == other) {
                Some(&(name, Some(class))) => Ok(IoEngine::Other { name, class }),
                Some(&(name, None)) => Err(format!(
                    "the `{name}` engine talks to a network or object-store server, not a block device; elevator simulates block I/O only"
                )),
                None => Err(format!(
                    "`{other}` is not a fio engine (e.g. psync, libaio, io_uring, null; `fio --enghelp` lists them)"
                )),
            }
        }
    }
}

/// C's `atoi` as glibc has it, `(int) strtol(s, NULL, 10)`, stored into an unsigned int:
/// leading blanks, a sign and the digits up to the first other character; a value past
/// `long` saturates, then keeps its low 32 bits.
fn c_atoi(s: &str) -> u32 {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let mut v: i64 = 0;
    for b in t[..digits].bytes() {
        let d = i64::from(b - b'0');
        v = if negative {
            v.checked_mul(10).and_then(|x| x.checked_sub(d)).unwrap_or(i64::MIN)
        } else {
            v.checked_mul(10).and_then(|x| x.checked_add(d)).unwrap_or(i64::MAX)
        };
    }
    v as i32 as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builder() -> Builder {
        Builder::new("j", SourceLocation { file: "t.fio".into(), line: 1 })
    }

    fn applied(opts: &[(&str, Option<&str>)]) -> JobSpec {
        let mut b = builder();
        for (k, v) in opts {
            b.apply(k, *v).unwrap_or_else(|e| panic!("{k}={v:?}: {e:?}"));
        }
        b.finish()
    }

    fn value_err(key: &str, value: &str) -> String {
        match builder().apply(key, Some(value)) {
            Err(OptionError::Value(m)) => m,
            other => panic!("{key}={value}: expected a value error, got {other:?}"),
        }
    }

    #[test]
    fn modelled_and_unmodelled_lists_are_disjoint_and_sorted() {
        for (name, _) in MODELLED {
            assert!(!UNMODELLED.contains(name), "{name} is in both lists");
        }
        assert!(UNMODELLED.windows(2).all(|w| w[0] < w[1]));
        assert!(UNMODELLED.len() > 150);
        for (name, _, _) in LATER_FIO {
            assert!(canonical(name).is_none() && !UNMODELLED.contains(name), "{name}");
        }
        assert!(LATER_FIO.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn options_of_later_fio_releases_are_ignored_or_refused_by_what_they_change() {
        match builder().apply("verify_write_sequence", Some("0")) {
            Ok(Applied::Warn(w)) => assert!(w.contains("fio 3.38") && w.contains("ignored"), "{w}"),
            other => panic!("{other:?}"),
        }
        match builder().apply("ramp_size", Some("1g")) {
            Err(OptionError::Value(e)) => {
                assert!(e.contains("fio 3.42") && e.contains("statistics"), "{e}")
            }
            other => panic!("{other:?}"),
        }
        let mut b = builder();
        match b.apply("steadystate", Some("lat:5%")) {
            Err(OptionError::Value(e)) => assert!(e.contains("fio 3.42"), "{e}"),
            other => panic!("{other:?}"),
        }
        // A name no fio has is still unknown.
        assert!(matches!(
            builder().apply("ramp_sizes", Some("1g")),
            Err(OptionError::Unknown { .. })
        ));
    }

    #[test]
    fn aliases_map_to_the_same_field() {
        let a = applied(&[("readwrite", Some("randrw")), ("blocksize", Some("8k"))]);
        assert_eq!(a.rw, RwMode::RandRw);
        assert_eq!(a.block_size[1], BlockSize::Fixed { bytes: 8192 });
        assert_eq!(applied(&[("timeout", Some("10"))]).runtime_ns, Some(10 * NS_PER_SEC));
        assert!(applied(&[("wait_for_previous", None)]).stonewall);
        assert_eq!(applied(&[("io_limit", Some("1m"))]).io_size_bytes, Some(1 << 20));
        assert_eq!(applied(&[("nr_files", Some("4"))]).nrfiles, 4);
        assert_eq!(
            applied(&[("iodepth_batch_submit", Some("4")), ("iodepth", Some("8"))]).iodepth_batch,
            4
        );
    }

    #[test]
    fn unmodelled_options_warn() {
        assert_eq!(
            builder().apply("refill_buffers", None),
            Ok(Applied::Warn("elevator does not model `refill_buffers`; ignored".into()))
        );
        assert!(matches!(builder().apply("hipri", None), Ok(Applied::Warn(_))));
        let s = applied(&[
            ("ratemin", Some("1m")),
            ("rate_iops_min", Some("10,20")),
            ("ratecycle", Some("500")),
        ]);
        assert_eq!(s.rate_min_bytes_per_sec, [Some(1 << 20); 3]);
        assert_eq!(s.rate_iops_min, [Some(10), Some(20), Some(20)]);
        assert_eq!(s.rate_cycle_ns, 500_000_000);
        assert_eq!(applied(&[]).rate_cycle_ns, 1_000_000_000);
        assert!(value_err("rate_cycle", "0").contains("above 0"));
        assert_eq!(applied(&[]).max_latency_ns, [None; 3]);
        assert_eq!(applied(&[("max_latency", Some("500"))]).max_latency_ns, [Some(500_000); 3]);
        assert_eq!(
            applied(&[("max_latency", Some("10ms,0"))]).max_latency_ns,
            [Some(10_000_000), None, None]
        );
        assert!(value_err("max_latency", "2h").contains("MAX_LATENCY_TARGET_NS"));
        assert!(!applied(&[]).thinktime_blocks_on_issue);
        assert!(applied(&[("thinktime_blocks_type", Some("issue"))]).thinktime_blocks_on_issue);
        assert!(value_err("thinktime_blocks_type", "both").contains("complete or issue"));
        assert!(applied(&[("verify", Some("crc32c"))]).verify);
        assert!(!applied(&[("verify", Some("0"))]).verify);
        assert!(applied(&[]).do_verify);
        assert!(!applied(&[("verify", Some("md5")), ("do_verify", Some("0"))]).do_verify);
        assert_eq!(applied(&[("offset_align", Some("64k"))]).offset_align, Some(65536));
        assert_eq!(applied(&[("offset_align", Some("0"))]).offset_align, None, "0: the block");
        assert!(value_err("offset_align", "100").contains("512"));
        let s = applied(&[("verify_backlog", Some("8")), ("verify_backlog_batch", Some("4"))]);
        assert_eq!((s.verify_backlog, s.verify_backlog_batch), (8, 4));
        assert!(applied(&[("verify_only", None)]).verify_only);
        assert!(value_err("verify_backlog", "-1").contains("-1"));
        assert!(value_err("verify", "crc99").contains("not a verify method"));
    }

    #[test]
    fn unknown_options_suggest_the_nearest() {
        assert_eq!(
            builder().apply("iodpeth", Some("4")),
            Err(OptionError::Unknown { suggestion: Some("iodepth") })
        );
        assert_eq!(
            builder().apply("rwmixred", Some("4")),
            Err(OptionError::Unknown { suggestion: Some("rwmixread") })
        );
        assert_eq!(
            builder().apply("zzzzzzzzzzzz", Some("4")),
            Err(OptionError::Unknown { suggestion: None })
        );
    }

    #[test]
    fn block_sizes() {
        let s = applied(&[("bs", Some("4k,8k"))]);
        assert_eq!(
            s.block_size,
            [
                BlockSize::Fixed { bytes: 4096 },
                BlockSize::Fixed { bytes: 8192 },
                BlockSize::Fixed { bytes: 8192 }
            ]
        );
        let s = applied(&[("bs", Some(",16k"))]);
        assert_eq!(s.block_size[0], BlockSize::Fixed { bytes: 4096 });
        assert_eq!(s.block_size[2], BlockSize::Fixed { bytes: 16384 });
        let s = applied(&[("bsrange", Some("64k-4k"))]);
        assert_eq!(s.block_size[0], BlockSize::Range { min_bytes: 4096, max_bytes: 65536 });
        let s = applied(&[("bsrange", Some("4k-8k,16k:32k"))]);
        assert_eq!(s.block_size[1], BlockSize::Range { min_bytes: 16384, max_bytes: 32768 });
        let s = applied(&[("bsrange", Some("4k-8k/16k-32k"))]);
        assert_eq!(s.block_size[2], BlockSize::Range { min_bytes: 16384, max_bytes: 32768 });
        assert!(value_err("bs", "1000").contains("512-byte sectors"));
        assert!(value_err("bs", "0").contains("512"));
        assert!(value_err("bsrange", "4k").contains("range"));
        assert!(!applied(&[]).bs_unaligned);
        assert!(applied(&[("bs_unaligned", None)]).bs_unaligned);
        assert!(!applied(&[("blocksize_unaligned", Some("0"))]).bs_unaligned);
        // At a file's end: the largest block that fits, aligned or not.
        let r = BlockSize::Range { min_bytes: 1024, max_bytes: 10240 };
        assert_eq!(r.fitting_as(3000, false), Some(2048));
        assert_eq!(r.fitting_as(3000, true), Some(3000));
        assert_eq!(r.fitting_as(20000, true), Some(10240));
        assert_eq!(r.fitting_as(1000, true), None);
    }

    #[test]
    fn bssplit_fills_missing_percentages_and_wins_over_bs() {
        let s = applied(&[("bssplit", Some("4k/10:64k/90")), ("bs", Some("8k"))]);
        assert_eq!(s.block_size[0], BlockSize::Split { parts: vec![(4096, 10), (65536, 90)] });
        let s = applied(&[("bssplit", Some("4k/10:64k"))]);
        assert_eq!(s.block_size[2], BlockSize::Split { parts: vec![(4096, 10), (65536, 90)] });
        let s = applied(&[("bssplit", Some("4k:8k:16k"))]);
        assert_eq!(
            s.block_size[0],
            BlockSize::Split { parts: vec![(4096, 33), (8192, 33), (16384, 34)] }
        );
        let s = applied(&[("bssplit", Some("4k/50:8k/50,64k/100"))]);
        assert_eq!(s.block_size[1], BlockSize::Split { parts: vec![(65536, 100)] });
        assert!(value_err("bssplit", "4k/50:64k/60").contains("more than 100"));
        assert!(value_err("bssplit", "4k/50:64k/40").contains("must add up to 100"));
        assert!(value_err("bssplit", "4k/x").contains("percentage"));
    }

    #[test]
    fn nice_on_a_spinning_job_says_what_it_does_not_do() {
        let mut b = builder();
        b.apply("nice", Some("5")).unwrap();
        b.apply("thinktime_spin", Some("10ms")).unwrap();
        let (_, warnings) = b.finish_with_warnings().unwrap();
        assert!(warnings.iter().any(|(o, m)| *o == "nice" && m.contains("CPUs")), "{warnings:?}");
        let mut b = builder();
        b.apply("nice", Some("5")).unwrap();
        let (spec, warnings) = b.finish_with_warnings().unwrap();
        assert!(warnings.is_empty() && spec.nice == 5, "{warnings:?}");
    }

    #[test]
    fn ranges_of_integers_follow_fio() {
        assert!(value_err("rwmixread", "150").contains("0 to 100"));
        assert_eq!(applied(&[("rwmixwrite", Some("30"))]).rwmixread_percent, 70);
        assert!(value_err("prio", "9").contains("0 to 7"));
        assert!(value_err("prioclass", "4").contains("0 to 3"));
        assert_eq!(applied(&[("nice", Some("19"))]).nice, 19);
        assert_eq!(applied(&[("nice", Some("-20"))]).nice, -20);
        assert_eq!(applied(&[]).nice, 0);
        assert!(value_err("nice", "20").contains("-20 to 19"));
        assert!(value_err("nice", "-21").contains("-20 to 19"));
        assert!(value_err("nice", "x").contains("number"), "{}", value_err("nice", "x"));
        assert_eq!(applied(&[("nice", Some("+5"))]).nice, 5);
        assert!(value_err("cgroup_weight", "50").contains("100 to 1000"));
        assert!(value_err("cgroup_weight", "1001").contains("100 to 1000"));
        assert!(value_err("iodepth", "0").contains("1 to"));
        assert!(value_err("iodepth", "2147483648").contains("1 to 65536"));
        assert!(value_err("iodepth_batch", "65537").contains("0 to 65536"));
        assert!(value_err("iodepth", "-1").contains("not a number"));
        assert_eq!(applied(&[("numjobs", Some("$ncpus"))]).numjobs, 2);
        assert!(value_err("numjobs", "$cpus").contains("`$cpus` is not defined"));
        assert!(value_err("size", "(1g/0)").contains("divides by zero"));
        assert!(value_err("numjobs", "0").contains("1 to"));
        assert!(value_err("iodepth", "99999999999").contains("out of range"));
        assert_eq!(applied(&[("cgroup_weight", Some("100"))]).cgroup_weight, Some(100));
        assert_eq!(applied(&[("ioscheduler", Some("bfq"))]).ioscheduler.as_deref(), Some("bfq"));
        assert!(value_err("ioscheduler", "").contains("1 to 16 bytes"));
        assert!(value_err("ioscheduler", "a-scheduler-name-too-long").contains("ELV_NAME_MAX"));
    }

    #[test]
    fn flags_and_booleans() {
        assert!(applied(&[("time_based", None), ("runtime", Some("1"))]).time_based);
        assert!(!applied(&[("time_based", Some("0"))]).time_based);
        assert!(applied(&[("direct", Some("1"))]).direct);
        assert!(applied(&[("buffered", Some("0"))]).direct);
        assert!(value_err("direct", "yes").contains("0 or 1"));
        assert!(
            matches!(builder().apply("direct", None), Err(OptionError::Value(m)) if m.contains("needs a value"))
        );
        assert!(!applied(&[("randrepeat", Some("0"))]).randrepeat);
        assert!(applied(&[("norandommap", None)]).norandommap);
        assert!(applied(&[("softrandommap", Some("1"))]).softrandommap);
        assert!(!applied(&[]).norandommap);
        assert_eq!(applied(&[]).loops, 1);
        assert_eq!(applied(&[("loops", Some("3"))]).loops, 3);
        assert_eq!(applied(&[("iodepth_low", Some("4"))]).iodepth_low, 4);
        assert_eq!(applied(&[]).iodepth_low, 0);
        assert_eq!(applied(&[]).percentage_random, [100; 3]);
        assert_eq!(applied(&[("percentage_random", Some("25"))]).percentage_random, [25; 3]);
        assert_eq!(
            applied(&[("percentage_random", Some("10,90"))]).percentage_random,
            [10, 90, 90]
        );
        assert!(matches!(
            builder().apply("percentage_random", Some("101")),
            Err(OptionError::Value(_))
        ));
        // rw=...:N: I/Os per random offset for random jobs, a signed step for the others;
        // each rw= starts afresh (fio's str_rw_cb).
        let s = applied(&[("rw", Some("randread:8"))]);
        assert_eq!((s.rw_seq_nr, s.rw_seq_add_bytes), (8, 0));
        let s = applied(&[("rw", Some("read:-8k"))]);
        assert_eq!((s.rw_seq_nr, s.rw_seq_add_bytes), (1, -8192));
        let s = applied(&[("rw", Some("write:4k")), ("rw", Some("randrw"))]);
        assert_eq!((s.rw_seq_nr, s.rw_seq_add_bytes), (1, 0));
        // fio 3.33 reads a random job's count with atoi: a suffix is dropped, 0 and no digits
        // are 0 (never random), a count past 32 bits keeps its low bits.
        for (v, nr) in
            [("randread:8k", 8), ("randread:0", 0), ("randread:x", 0), ("randrw:-2", u32::MAX - 1)]
        {
            let mut b = builder();
            assert!(matches!(b.apply("rw", Some(v)), Ok(Applied::Warn(_))), "{v}");
            assert_eq!(b.spec.rw_seq_nr, nr, "{v}");
        }
        let mut b = builder();
        assert!(matches!(b.apply("rw", Some("randread: 4294967297")), Ok(Applied::Warn(_))));
        assert_eq!(b.spec.rw_seq_nr, 1);
        assert!(value_err("rw", "read:2p").contains("MAX_RW_SEQ_ADD_BYTES"));
        assert_eq!(applied(&[]).sync_file_range, None);
        assert_eq!(
            applied(&[("sync_file_range", Some("wait_before,write:8"))]).sync_file_range,
            Some(SyncFileRange { wait_before: true, write: true, wait_after: false, every: 8 })
        );
        assert_eq!(
            applied(&[("sync_file_range", Some("wait_after"))]).sync_file_range,
            Some(SyncFileRange { wait_before: false, write: false, wait_after: true, every: 1 })
        );
        assert!(value_err("sync_file_range", "bogus:3").contains("wait_before, write"));
        assert!(value_err("sync_file_range", "write:x").contains("a count"));
        let s = applied(&[("thinktime_iotime", Some("9"))]);
        assert_eq!((s.thinktime_iotime_ns, s.thinktime_blocks_set), (9 * NS_PER_SEC, false));
        assert_eq!(
            applied(&[("thinktime_iotime", Some("250ms"))]).thinktime_iotime_ns,
            250 * NS_PER_MS
        );
        assert!(applied(&[("thinktime_blocks", Some("4"))]).thinktime_blocks_set);
        assert!(value_err("thinktime_iotime", "2d").contains("MAX_THINKTIME_NS"));
        assert_eq!(applied(&[]).unified_rw_reporting, UnifiedRw::Split);
        assert_eq!(
            applied(&[("unified_rw_reporting", Some("1"))]).unified_rw_reporting,
            UnifiedRw::Mixed
        );
        assert_eq!(
            applied(&[("unified_rw_reporting", Some("both"))]).unified_rw_reporting,
            UnifiedRw::Both
        );
        assert!(value_err("unified_rw_reporting", "yes").contains("none, mixed, both"));
        assert_eq!(applied(&[]).rw_sequencer, RwSequencer::Sequential);
        let s = applied(&[("rw_sequencer", Some("identical"))]);
        assert_eq!(s.rw_sequencer, RwSequencer::Identical);
        assert!(value_err("rw_sequencer", "random").contains("sequential, identical"));
        // blockalign: per direction, random jobs only; the random map goes.
        let s = applied(&[("rw", Some("randread")), ("bs", Some("64k")), ("ba", Some("4k"))]);
        assert_eq!(s.block_align, [Some(4096); 3]);
        assert!(s.norandommap);
        let s =
            applied(&[("rw", Some("randrw")), ("bs", Some("8k")), ("blockalign", Some("8k,16k"))]);
        assert_eq!(s.block_align, [None, Some(16384), Some(16384)]);
        let s = applied(&[("rw", Some("read")), ("ba", Some("4k"))]);
        assert_eq!(s.block_align, [None; 3]);
        assert!(!s.norandommap);
        assert!(value_err("ba", "1000").contains("multiple of 512"));
        assert_eq!(applied(&[]).rate_process, crate::RateProcess::Linear);
        assert_eq!(
            applied(&[("rate_process", Some("poisson"))]).rate_process,
            crate::RateProcess::Poisson
        );
        assert!(value_err("rate_process", "exponential").contains("linear or poisson"));
        // Any distribution but the uniform one turns fio's random map off.
        let s = applied(&[("random_distribution", Some("zipf:1.2"))]);
        assert_eq!(
            s.random_distribution,
            crate::RandomDistribution::Zipf { theta: 1.2, center: None }
        );
        assert!(s.norandommap);
        assert!(!applied(&[("random_distribution", Some("random"))]).norandommap);
        assert!(matches!(
            builder().apply("random_distribution", Some("zipf:1")),
            Err(OptionError::Value(_))
        ));
        assert!(matches!(builder().apply("loops", Some("0")), Err(OptionError::Value(_))));
        assert!(matches!(builder().apply("loops", Some("2000000")), Err(OptionError::Value(_))));
    }

    #[test]
    fn engines() {
        assert_eq!(applied(&[("ioengine", Some("libaio"))]).ioengine, IoEngine::Libaio);
        assert_eq!(applied(&[("ioengine", Some("pvsync2"))]).ioengine, IoEngine::Pvsync);
        assert_eq!(applied(&[("ioengine", Some("IO_URING"))]).ioengine, IoEngine::IoUring);
        assert_eq!(
            applied(&[("ioengine", Some("posixaio"))]).ioengine,
            IoEngine::Other { name: "posixaio", class: EngineClass::Async }
        );
        assert!(applied(&[("ioengine", Some("sg"))]).ioengine.name() == "sg");
        assert!(!applied(&[("ioengine", Some("sg"))]).ioengine.is_async());
        assert!(applied(&[("ioengine", Some("io_uring_cmd"))]).ioengine.is_async());
        assert!(applied(&[("ioengine", Some("null"))]).ioengine.is_null());
        assert!(value_err("ioengine", "net").contains("`net` engine talks to a network"));
        assert!(value_err("ioengine", "libiscsi").contains("`libiscsi` engine"));
        assert!(value_err("ioengine", "foo").contains("`foo` is not a fio engine"));
    }

    #[test]
    fn rw_modes_and_modifier() {
        assert_eq!(applied(&[("rw", Some("randtrim"))]).rw, RwMode::RandTrim);
        assert_eq!(applied(&[("rw", Some("readwrite"))]).rw, RwMode::ReadWrite);
        assert!(matches!(builder().apply("rw", Some("randread:8")), Ok(Applied::Done)));
        assert!(value_err("rw", "READ").contains("expected read"));
        assert!(matches!(builder().apply("rw", Some("trimwrite")), Ok(Applied::Warn(_))));
        assert_eq!(applied(&[("rw", Some("trimwrite"))]).rw, RwMode::Write);
        assert!(matches!(builder().apply("rw", Some("read:-8k")), Ok(Applied::Done)));
        assert!(value_err("rw", "read:x").contains("not a number"));
    }

    #[test]
    fn sizes_times_and_rates() {
        let s = applied(&[
            ("size", Some("50%")),
            ("offset", Some("1g")),
            ("offset_increment", Some("25%")),
            ("io_size", Some("2m")),
            ("filesize", Some("4k-8k")),
            ("number_ios", Some("1000")),
            ("runtime", Some("1m")),
            ("ramp_time", Some("5")),
            ("startdelay", Some("500ms")),
            ("thinktime", Some("10")),
            ("rate", Some(",1m")),
            ("rate_iops", Some("100")),
        ]);
        assert_eq!(s.size, Some(Amount::Percent(50.0)));
        assert_eq!(s.offset, Amount::Bytes(1 << 30));
        assert_eq!(s.offset_increment, Amount::Percent(25.0));
        assert_eq!(s.io_size_bytes, Some(2 << 20));
        assert_eq!(s.filesize, Some((4096, 8192)));
        assert_eq!(s.number_ios, Some(1000));
        assert_eq!(s.runtime_ns, Some(60 * NS_PER_SEC));
        assert_eq!(s.ramp_time_ns, 5 * NS_PER_SEC);
        assert_eq!(s.startdelay_ns, NS_PER_SEC / 2);
        assert_eq!(s.thinktime_ns, 10 * NS_PER_US);
        assert_eq!(s.rate_bytes_per_sec, [None, Some(1 << 20), Some(1 << 20)]);
        assert_eq!(s.rate_iops, [Some(100); 3]);
        assert_eq!(applied(&[("runtime", Some("0"))]).runtime_ns, None);
        assert_eq!(applied(&[("filesize", Some("1m"))]).filesize, Some((1 << 20, 1 << 20)));
        assert!(value_err("size", "0%").contains("above 0%"));
        assert!(value_err("rate", "1m,2m,3m,4m").contains("at most 3"));
    }

    #[test]
    fn cmdprio_per_direction() {
        let s = applied(&[
            ("cmdprio_percentage", Some("30,0")),
            ("cmdprio_class", Some("3")),
            ("cmdprio", Some("2,5")),
        ]);
        assert_eq!(s.cmdprio_percentage, [30, 0, 0]);
        assert_eq!(s.cmdprio_class, [3, 3, 3]);
        assert_eq!(s.cmdprio_level, [2, 5, 5]);
        assert!(value_err("cmdprio_percentage", "101").contains("0 to 100"));
        assert!(value_err("cmdprio_class", "0").contains("1 to 3"));
    }

    #[test]
    fn cmdprio_bssplit_entries() {
        use crate::job::CmdPrioSplit;
        let s = applied(&[("cmdprio_bssplit", Some("4k/30:64k/50/1/2,8k/100/3/7"))]);
        assert_eq!(
            s.cmdprio_bssplit[0],
            [
                CmdPrioSplit { bs_bytes: 4096, percent: 30, prio: None },
                CmdPrioSplit { bs_bytes: 65536, percent: 50, prio: Some((1, 2)) },
            ]
        );
        assert_eq!(
            s.cmdprio_bssplit[1],
            [CmdPrioSplit { bs_bytes: 8192, percent: 100, prio: Some((3, 7)) }]
        );
        // Percentages count per block size, which may have several entries (fio's example
        // cmdprio-bssplit.fio, with priority hints).
        let s =
            applied(&[("cmdprio_bssplit", Some("1M/10/2/0/1:1M/30/2/0/2:1M/60/2/0/0:2M/90/1/0"))]);
        assert_eq!(s.cmdprio_bssplit[0].len(), 4);
        assert_eq!(
            s.cmdprio_bssplit[0][1],
            CmdPrioSplit { bs_bytes: 1 << 20, percent: 30, prio: Some((2, 0)) }
        );
        assert!(value_err("cmdprio_bssplit", "4k/60:4k/50").contains("add up to 110"));
        assert!(value_err("cmdprio_bssplit", "4k/10/2/0/1024").contains("the hint is 0 to 1023"));
        assert!(value_err("cmdprio_bssplit", "4k/10/4/0").contains("the class is 1"));
        assert!(value_err("cmdprio_bssplit", "4k/10/1/8").contains("the level is 0 to 7"));
        assert!(value_err("cmdprio_bssplit", "4k").contains("expected blocksize/percentage"));
        assert!(value_err("latency_window", "2h").contains("above an hour"));
        assert_eq!(applied(&[("latency_target", Some("250"))]).latency_target_ns, Some(250_000));
        let mut b = builder();
        b.apply("cmdprio_percentage", Some("10")).unwrap();
        let Err(OptionError::Value(e)) = b.apply("cmdprio_bssplit", Some("4k/10")) else {
            panic!("accepted")
        };
        assert!(e.contains("mutually exclusive"), "{e}");
    }

    #[test]
    fn zone_suffix_counts_zones() {
        assert_eq!(
            applied(&[("size", Some("8z"))]).size,
            Some(Amount::Bytes(8 * DEFAULT_ZONE_BYTES))
        );
        let s = applied(&[
            ("zonemode", Some("strided")),
            ("zonesize", Some("64m")),
            ("offset", Some("2z")),
        ]);
        assert_eq!(s.offset, Amount::Bytes(128 << 20));
        assert!(value_err("zonesize", "1000").contains("multiple of 512"));
    }

    /// fio's checks of the zone options together (`fixup_options`), and zonerange's default.
    #[test]
    fn strided_zones_are_checked_as_fio_checks_them() {
        let s = applied(&[("zonemode", Some("strided")), ("zonesize", Some("32k"))]);
        let z = s.zones.expect("strided");
        assert_eq!((z.size_bytes, z.range_bytes, z.skip_bytes), (32 << 10, 32 << 10, 0));
        let s = applied(&[
            ("zoneskip", Some("1m")),
            ("zonerange", Some("256k")),
            ("zonesize", Some("64k")),
            ("zonemode", Some("strided")),
        ]);
        let z = s.zones.expect("strided");
        assert_eq!((z.size_bytes, z.range_bytes, z.skip_bytes), (64 << 10, 256 << 10, 1 << 20));
        assert_eq!(applied(&[("zonemode", Some("none"))]).zones, None);
        let finish_err = |opts: &[(&str, &str)]| {
            let mut b = builder();
            for (k, v) in opts {
                b.apply(k, Some(v)).unwrap();
            }
            b.finish_with_warnings().expect_err("refused")
        };
        let (key, e) = finish_err(&[("zonesize", "64k")]);
        assert_eq!(key, "zonesize");
        assert!(e.contains("--zonemode=none and --zonesize are not compatible"), "{e}");
        let (key, e) = finish_err(&[("zonemode", "strided")]);
        assert_eq!(key, "zonemode");
        assert!(e.contains("--zonesize must be specified"), "{e}");
        assert!(value_err("zonemode", "zbd").contains("zoned block device"));
        assert!(value_err("zonemode", "stride").contains("none, strided or zbd"));
        assert!(value_err("zoneskip", "2z").contains("give bytes"));
        for key in ["zonesize", "zonerange", "zoneskip"] {
            assert!(value_err(key, "2p").contains("MAX_ZONE_BYTES"), "{key}");
        }
    }

    #[test]
    fn time_based_without_runtime_warns_and_runs_once() {
        let mut b = builder();
        b.apply("time_based", None).unwrap();
        let (spec, warnings) = b.finish_with_warnings().unwrap();
        assert!(!spec.time_based);
        assert!(warnings[0].1.contains("runtime="));
    }

    #[test]
    fn kb_base_changes_later_sizes() {
        let s = applied(&[("kb_base", Some("1000")), ("size", Some("8k"))]);
        assert_eq!(s.size, Some(Amount::Bytes(8000)));
        assert!(value_err("kb_base", "1023").contains("1024 or 1000"));
    }

    #[test]
    fn exitall_and_exit_what() {
        let s = applied(&[("exitall", None), ("exit_what", Some("all"))]);
        assert!(s.exitall);
        assert_eq!(s.exit_what, ExitWhat::All);
        assert!(value_err("exit_what", "some").contains("group, stonewall, all"));
    }

    #[test]
    fn disk_util_is_on_unless_turned_off() {
        assert!(applied(&[]).disk_util);
        assert!(!applied(&[("disk_util", Some("0"))]).disk_util);
        assert!(applied(&[("disk_util", None)]).disk_util);
    }

    #[test]
    fn steadystate_options() {
        let s =
            applied(&[("ss", Some("iops:2%")), ("ss_dur", Some("30")), ("ss_ramp", Some("5s"))]);
        let want = SteadyState {
            iops: true,
            slope: false,
            percent: true,
            limit: 2.0,
            duration_s: 30,
            ramp_ns: 5 * NS_PER_SEC,
        };
        assert_eq!(s.steadystate, want);
        assert!(s.steadystate.enabled());
        let s = applied(&[("steadystate", Some("bw_slope:1M"))]).steadystate;
        assert_eq!((s.iops, s.slope, s.percent, s.limit), (false, true, false, 1048576.0));
        assert!(!s.enabled(), "no duration: off, as in fio");
        let s = applied(&[("ss", Some("iops_slope:0.5")), ("ss_dur", Some("900ms"))]);
        assert_eq!((s.steadystate.limit, s.steadystate.percent), (0.5, false));
        assert!(!s.steadystate.enabled(), "under a second is 0 whole seconds");
        assert_eq!(applied(&[]).steadystate, SteadyState::DEFAULT);
        for bad in ["iops", "speed:1%", "iops:x%", "bw:-3", "iops:-1"] {
            assert!(value_err("ss", bad).contains(bad.split(':').next_back().unwrap()), "{bad}");
        }
        assert!(value_err("ss_dur", "2d").contains("MAX_SS_DURATION_S"));
    }

    #[test]
    fn file_service_types() {
        assert_eq!(
            applied(&[("file_service_type", Some("random"))]).file_service_type,
            FileServiceType::Random
        );
        assert_eq!(
            applied(&[("file_service_type", Some("sequential"))]).file_service_type,
            FileServiceType::Sequential
        );
        let s = applied(&[("file_service_type", Some("random:4"))]);
        assert_eq!((s.file_service_type, s.file_service_nr), (FileServiceType::Random, 4));
        assert_eq!(applied(&[("file_service_type", Some("roundrobin:0"))]).file_service_nr, 0);
        assert_eq!(applied(&[]).file_service_nr, 1);
        assert!(value_err("file_service_type", "roundrobin:x").contains("count"));
        assert_eq!(
            applied(&[("file_service_type", Some("zipf:1.2"))]).file_service_type,
            FileServiceType::Distribution(RandomDistribution::Zipf { theta: 1.2, center: None })
        );
        assert_eq!(
            applied(&[("file_service_type", Some("pareto"))]).file_service_type,
            FileServiceType::Distribution(RandomDistribution::Pareto { h: 0.2, center: None })
        );
        for bad in ["zipf:1", "pareto:1.5", "gauss:100", "normal:x"] {
            assert!(builder().apply("file_service_type", Some(bad)).is_err(), "{bad}");
        }
        assert!(value_err("file_service_type", "lru").contains("roundrobin"));
    }

    #[test]
    fn replay_options_parse_as_fio_takes_them() {
        let s = applied(&[
            ("replay_time_scale", Some("50")),
            ("replay_scale", Some("8")),
            ("replay_align", Some("4k")),
            ("replay_skip", Some("write,sync")),
        ]);
        assert_eq!(
            s.replay,
            crate::iolog::Replay {
                time_scale_percent: 50,
                scale: 8,
                align_bytes: 4096,
                skip: [false, true, false, true]
            }
        );
        assert!(value_err("replay_time_scale", "0").contains("out of range"));
        assert!(value_err("replay_align", "3000").contains("power of two"));
        assert!(value_err("replay_skip", "flush").contains("unknown skip type"));
    }

    #[test]
    fn write_iolog_takes_a_file_name() {
        assert_eq!(applied(&[]).write_iolog, None);
        assert_eq!(
            applied(&[("write_iolog", Some("run.log"))]).write_iolog.as_deref(),
            Some("run.log")
        );
        assert!(matches!(builder().apply("write_iolog", None), Err(OptionError::Value(_))));
    }

    #[test]
    fn percentile_options() {
        let d = applied(&[]);
        assert_eq!(d.percentile_list.len(), 17);
        assert_eq!(
            (d.percentile_precision, d.clat_percentiles, d.lat_percentiles),
            (2, true, false)
        );
        let s = applied(&[("percentile_list", Some("50:99.9:99:10")), ("lat_percentiles", None)]);
        assert_eq!(s.percentile_list, [10.0, 50.0, 99.0, 99.9]);
        assert_eq!(s.percentile_precision, 1);
        assert!(s.lat_percentiles);
        assert_eq!(applied(&[("percentile_list", Some("90:0:99"))]).percentile_list, [90.0]);
        assert!(!applied(&[("clat_percentiles", Some("0"))]).clat_percentiles);
        assert!(value_err("percentile_list", "101").contains("percentile"));
        let many = vec!["1"; 21].join(":");
        assert!(value_err("percentile_list", &many).contains("MAX_PERCENTILES"));
    }

    #[test]
    fn iodepth_batch_complete_options() {
        assert_eq!(applied(&[]).iodepth_batch_complete_min, 1);
        let s = applied(&[("iodepth_batch_complete", Some("4"))]);
        assert_eq!(s.iodepth_batch_complete_min, 4);
        let s = applied(&[
            ("iodepth_batch_complete_min", Some("2")),
            ("iodepth_batch_complete_max", Some("8")),
        ]);
        assert_eq!(s.iodepth_batch_complete_min, 2);
        assert!(value_err("iodepth_batch_complete_max", "-1").contains("number"));
    }

    #[test]
    fn iodepth_batch_fixups() {
        assert_eq!(
            applied(&[("iodepth", Some("16")), ("iodepth_batch", Some("0"))]).iodepth_batch,
            16
        );
        assert_eq!(
            applied(&[("iodepth", Some("4")), ("iodepth_batch", Some("8"))]).iodepth_batch,
            4
        );
    }

    #[test]
    fn edit_distance_basics() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }
}
