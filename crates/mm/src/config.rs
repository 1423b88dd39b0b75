//! What a simulated machine is: its memory, its kernel and its `vm.*` sysctls, each checked
//! against a named limit.

use elevator_core::{Nanos, NS_PER_SEC};

use crate::dirty::DirtySysctl;

/// The most memory a simulated machine may have (1 TiB).
pub const MAX_MEMORY_BYTES: u64 = 1 << 40;
/// The least (16 MiB: below this the kernels modelled did not boot).
pub const MIN_MEMORY_BYTES: u64 = 16 << 20;
/// Limits on the flusher's period and the dirty expiry (one day).
pub const MAX_CENTISECS: u32 = 24 * 3600 * 100;
/// The most CPUs (ratelimits scale with them).
pub const MAX_CPUS: u64 = 4096;
/// The longest CPU time one read() or write() may be charged.
pub const MAX_SYSCALL_NS: Nanos = NS_PER_SEC;

/// The series that ended: (major, minor) for 2.x, whose third number counts releases, or
/// (major, 0) from 3.0, whose second does; its last release; what came next.
pub const LAST_OF_SERIES: [((u32, u32), &str, u32, &str); 5] = [
    ((2, 5), "2.5", 75, "2.6.0"),
    ((2, 6), "2.6", 39, "3.0"),
    ((3, 0), "3", 19, "4.0"),
    ((4, 0), "4", 20, "5.0"),
    ((5, 0), "5", 19, "6.0"),
];

/// A kernel version: what decides which mechanisms the machine has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Kernel {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Kernel {
    /// The default: 2.6.32, the long-term kernel of the seed experiments' era.
    pub const DEFAULT: Kernel = Kernel { major: 2, minor: 6, patch: 32 };

    /// Parses a release as `uname -r` prints it or as it is named: `2.6.32`, `3.2`,
    /// `3.4.0`, a 2.6 stable release (`2.6.32.27`), a distribution's build
    /// (`2.6.32-754.el6.x86_64`, `3.2.0-4-amd64`: the release before the first `-`, `+` or
    /// `_`) or a git tag (`v3.5`, `3.5-rc1`: taken as the release). Only the mainline release
    /// decides what the machine has: stable updates and a distribution's backports (RHEL 6's
    /// 2.6.32 carries many) are not modelled. 2.5 ..= 6.x, releases that exist only: each
    /// series' last is [`LAST_OF_SERIES`].
    pub fn parse(text: &str) -> Result<Kernel, String> {
        let t = text.trim();
        let release = t.strip_prefix('v').unwrap_or(t);
        let release = release.split(['-', '+', '_']).next().unwrap_or("");
        let parts: Vec<&str> = release.split('.').collect();
        let num = |s: &str| s.parse::<u32>().ok();
        let version = |a: &str, b: &str, c: &str| {
            Some(Kernel { major: num(a)?, minor: num(b)?, patch: num(c)? })
        };
        let k = match parts.as_slice() {
            [a, b] => version(a, b, "0"),
            [a, b, c] => version(a, b, c),
            // A 2.6 stable release's fourth number is its update.
            [a, b, c, d] if (*a, *b) == ("2", "6") && num(d).is_some() => version(a, b, c),
            _ => None,
        }
        .ok_or_else(|| {
            format!("kernel `{text}` is not a version like 2.6.32, 3.2 or 3.2.0-4-amd64")
        })?;
        if k < (Kernel { major: 2, minor: 5, patch: 0 }) || k.major > 6 {
            return Err(format!("kernel {text} is outside the modelled range 2.5 to 6.x"));
        }
        // 2.5 and 2.6 count releases in the third number, 3.0 on in the second.
        let (series, n) =
            if k.major == 2 { ((2, k.minor), k.patch) } else { ((k.major, 0), k.minor) };
        if let Some(&(_, name, last, next)) = LAST_OF_SERIES.iter().find(|l| l.0 == series) {
            if n > last {
                return Err(format!(
                    "kernel {text}: there is no such release ({name}.{last} was the last before {next})"
                ));
            }
        }
        Ok(k)
    }

    fn at_least(&self, major: u32, minor: u32, patch: u32) -> bool {
        *self >= Kernel { major, minor, patch }
    }

    /// Cgroup writeback (4.2, Tejun Heo's series): a file's writeback is issued in the
    /// cgroup that owns it, by that cgroup's own writeback domain on the device
    /// (`struct bdi_writeback`: its own flusher work, bandwidth and share of the dirty
    /// threshold), so `io.max`, `io.latency`, `io.cost` and BFQ's groups see buffered writes
    /// as their cgroup's. It needs cgroup v2 with the memory and io controllers and a file
    /// system that supports it (ext2 and ext4 from 4.2, btrfs 4.3, xfs 5.3; the block
    /// device's own inode): elevator's cgroups are v2's, and every file is taken to support
    /// it. Before, the flushers wrote everything in the root cgroup.
    pub fn cgroup_writeback(&self) -> bool {
        self.at_least(4, 2, 0)
    }

    /// IO-less dirty throttling (3.2): writers sleep, only flushers write back.
    pub fn io_less_throttling(&self) -> bool {
        self.at_least(3, 2, 0)
    }

    /// Request lists counted by sync and async (2.6.30, Jens Axboe's "change the request
    /// allocation/congestion logic to be sync/async based"); before, by direction: reads
    /// apart from every write, a sync write among the async ones (`rl->count[rw]`).
    pub fn request_lists_by_sync(&self) -> bool {
        self.at_least(2, 6, 30)
    }

    /// Queue plugging (before 2.6.39): a request entering an empty queue plugs it, and the
    /// device sees nothing until the queue is run — by a task waiting for one of its pages
    /// (`sync_page`), by a fourth request (`unplug_thresh`), by a completion, by the
    /// scheduler (CFQ and AS when the request they idle for arrives), or 3 ms later
    /// (`unplug_delay`). 2.6.39 replaced it with on-stack plugging per submitter.
    pub fn queue_plugging(&self) -> bool {
        !self.at_least(2, 6, 39)
    }

    /// Async readahead started from an uptodate marker page runs the queue itself (2.6.33,
    /// Hisashi Hifumi's "readahead: add blk_run_backing_dev", 65a80b4c of 17 December
    /// 2009; 2.6.31's and 2.6.32's `page_cache_async_readahead` end at
    /// `ondemand_readahead`): otherwise, with queue plugging, the window waits until
    /// someone needs one of its pages.
    pub fn async_readahead_runs_queue(&self) -> bool {
        self.at_least(2, 6, 33) && self.queue_plugging()
    }

    /// Async readahead is skipped while the device's read requests are congested
    /// (`page_cache_async_readahead`: "Defer asynchronous read-ahead on IO congestion",
    /// `bdi_read_congested`): the marker is used up and no window goes out, so the reader
    /// meets the next miss and reads ahead synchronously from there. On-demand readahead
    /// (2.6.23) to the end of the single-queue block layer (5.0: blk-mq queues never report
    /// congestion). Deviation: the readahead before 2.6.23 skipped congested windows too
    /// (`do_page_cache_readahead`, the current window as well as the ahead one); that older
    /// rule is not modelled.
    pub fn async_readahead_defers_on_congestion(&self) -> bool {
        self.on_demand_readahead() && !self.at_least(5, 0, 0)
    }

    /// Writeback follows the order pages were first dirtied in (`mapping->dirty_pages`)
    /// rather than their offsets: before 2.6.6's radix-tree dirty tags (see
    /// [`crate::dirty_order`]). 2.6.3 still had the list; that 2.6.6 replaced it is this
    /// model's dating of Andrew Morton's tagged-writeback series.
    pub fn dirty_list_writeback(&self) -> bool {
        !self.at_least(2, 6, 6)
    }

    /// Dirty thresholds per backing device and per task (2.6.24, Peter Zijlstra's "mm: per
    /// device dirty threshold" and `task_dirty_limit`): before, a writer was throttled
    /// against the machine's threshold alone and wrote back whatever was dirty.
    pub fn per_bdi_dirty_thresholds(&self) -> bool {
        self.at_least(2, 6, 24)
    }

    /// A device's flusher also writes back in the background while the device's own dirty
    /// pages exceed its share of the background threshold (3.2, `over_bground_thresh`'s
    /// `bdi_dirty_limit(bdi, background_thresh)`; 3.0's looked at the machine's alone): a
    /// device, or from 4.2 a cgroup's writeback domain, that writes back little is not left
    /// holding dirty pages while the machine stays under the threshold.
    pub fn per_bdi_background_threshold(&self) -> bool {
        self.at_least(3, 2, 0)
    }

    /// Context readahead (2.6.31).
    pub fn context_readahead(&self) -> bool {
        self.at_least(2, 6, 31)
    }

    /// On-demand readahead (2.6.23): the next window is submitted when the reader reaches
    /// the first page of the current one. Before, the "ahead window" was submitted only when
    /// the reader asked for the window's second page, that is once the first had been read.
    pub fn on_demand_readahead(&self) -> bool {
        self.at_least(2, 6, 23)
    }

    /// Writes reach the I/O scheduler as sync requests when someone waits for them: fsync's
    /// and `O_SYNC`'s writeback (`WRITE_SYNC` for `WB_SYNC_ALL` in `__block_write_full_page`,
    /// Theodore Ts'o's a64c8610 of 27 March 2009, first in 2.6.30: 2.6.29's submits `WRITE`)
    /// and the ext3 journal's commits (see [`Kernel::jbd_commit_sync`]). Before, every write the page cache and the journal
    /// issued was a plain `WRITE`, and 2.5's anticipatory and deadline schedulers told sync
    /// from async by direction alone. Not modelled: `PF_SYNCWRITE` (2.6.6 to 2.6.2x), with
    /// which AS counted the writes of a task inside fsync as sync.
    pub fn sync_write_requests(&self) -> bool {
        self.at_least(2, 6, 30)
    }

    /// Whether the ext3 journal writes a commit's data and log blocks as sync requests
    /// (`write_op` of `journal_commit_transaction`), given whether a task waits for that
    /// commit (fsync, `O_SYNC`):
    /// - up to 2.6.29, never: every commit write is a plain `WRITE`;
    /// - 2.6.30 to 2.6.36, only a commit someone waits for (`t_synchronous_commit`,
    ///   Theodore Ts'o's "ext3: Use WRITE_SYNC for commits which are caused by fsync()",
    ///   512a0043, 2.6.30-rc1; `int write_op = WRITE` in the 2.6.31.3 to 2.6.36 sources);
    /// - 2.6.37 to 3.4, every commit (`int write_op = WRITE_SYNC` in the 2.6.37 source);
    /// - from 3.5, again only a commit someone waits for (Jan Kara's "jbd: Refine commit
    ///   writeout logic").
    pub fn jbd_commit_sync(&self, waited: bool) -> bool {
        if !self.at_least(2, 6, 30) {
            false
        } else if self.at_least(2, 6, 37) && !self.at_least(3, 5, 0) {
            true
        } else {
            waited
        }
    }

    /// Whether a commit's commit block goes down as a sync request: `sync_dirty_buffer`
    /// submits `WRITE_SYNC` from 2.6.30 (Jens Axboe's "block: switch sync_dirty_buffer()
    /// over to WRITE_SYNC", 1aa2a7cc), a plain `WRITE` in 2.6.29. Deviation: 2.6.27-2.6.28
    /// had `WRITE_SYNC` there too (18ce3751, reverted for 2.6.29), which this model, whose
    /// writes are all plain before 2.6.30 ([`Kernel::sync_write_requests`]), leaves out.
    pub fn jbd_commit_record_sync(&self) -> bool {
        self.at_least(2, 6, 30)
    }

    /// Whether a checkpoint's writes of metadata to their home blocks go down as sync
    /// requests: plain `WRITE`s up to 3.0 (`ll_rw_block(SWRITE, ...)` in 2.6.31.3,
    /// `write_dirty_buffer(bh, WRITE)` in 2.6.37 and 2.6.39.3), `WRITE_SYNC` from 3.1 (Tao
    /// Ma's "Use WRITE_SYNC in journal checkpoint", June 2011; the release is this model's
    /// dating of it).
    pub fn jbd_checkpoint_sync(&self) -> bool {
        self.at_least(3, 1, 0)
    }

    /// The `vm.dirty_*` defaults of this kernel: 40 % / 10 % before 2.6.22, 10 % / 5 % until
    /// 2.6.29, 20 % / 10 % since 2.6.30; 30 s expiry and a 5 s flusher period throughout.
    pub fn default_sysctl(&self) -> DirtySysctl {
        let (dirty, background) = if self.at_least(2, 6, 30) {
            (20, 10)
        } else if self.at_least(2, 6, 22) {
            (10, 5)
        } else {
            (40, 10)
        };
        DirtySysctl {
            dirty_ratio: dirty,
            dirty_background_ratio: background,
            ..DirtySysctl::DEFAULT
        }
    }
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// A machine: memory, kernel, sysctls and the CPU cost of a system call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VmConfig {
    pub memory_bytes: u64,
    /// Memory the page cache cannot have: the kernel and the processes.
    pub reserved_bytes: u64,
    pub kernel: Kernel,
    pub sysctl: DirtySysctl,
    /// Timer ticks per second (`CONFIG_HZ`).
    pub hz: u64,
    pub cpus: u64,
    /// CPU time of one read()/write() besides copying (entry, lookup, locking).
    pub syscall_ns: Nanos,
    /// How fast one CPU copies between the page cache and a buffer.
    pub copy_bytes_per_sec: u64,
}

impl VmConfig {
    /// A 4 GiB machine with two CPUs running 2.6.32 (HZ 1000), 256 MiB for the kernel and
    /// the processes, 1 µs per system call and 2 GB/s copies (a 2009 server; assumptions).
    pub fn default_for(kernel: Kernel) -> VmConfig {
        VmConfig {
            memory_bytes: 4 << 30,
            reserved_bytes: 256 << 20,
            kernel,
            sysctl: kernel.default_sysctl(),
            hz: 1000,
            cpus: 2,
            syscall_ns: 1_000,
            copy_bytes_per_sec: 2_000_000_000,
        }
    }

    /// Checks every value against its limit.
    pub fn validate(&self) -> Result<(), String> {
        if !(MIN_MEMORY_BYTES..=MAX_MEMORY_BYTES).contains(&self.memory_bytes) {
            return Err(format!(
                "memory {} bytes is outside {MIN_MEMORY_BYTES}..={MAX_MEMORY_BYTES} (16 MiB to 1 TiB)",
                self.memory_bytes
            ));
        }
        if self.reserved_bytes + MIN_MEMORY_BYTES / 2 > self.memory_bytes {
            return Err(format!(
                "reserved {} bytes leaves less than 8 MiB of {} bytes for the page cache",
                self.reserved_bytes, self.memory_bytes
            ));
        }
        let s = &self.sysctl;
        for (name, v) in
            [("dirty_ratio", s.dirty_ratio), ("dirty_background_ratio", s.dirty_background_ratio)]
        {
            if v > 100 {
                return Err(format!("{name} {v} must be a percentage, 0..=100"));
            }
        }
        for (name, v) in
            [("dirty_bytes", s.dirty_bytes), ("dirty_background_bytes", s.dirty_background_bytes)]
        {
            if v > self.memory_bytes {
                return Err(format!("{name} {v} is more than the machine's memory"));
            }
        }
        if s.dirty_ratio == 0 && s.dirty_bytes == 0 {
            return Err("dirty_ratio and dirty_bytes are both 0: nothing could be written".into());
        }
        for (name, v) in [
            ("dirty_expire_centisecs", s.dirty_expire_centisecs),
            ("dirty_writeback_centisecs", s.dirty_writeback_centisecs),
        ] {
            if v > MAX_CENTISECS {
                return Err(format!("{name} {v} is over the limit of {MAX_CENTISECS} (one day)"));
            }
        }
        if ![100, 250, 300, 1000].contains(&self.hz) {
            return Err(format!("hz {} must be one of the kernel's: 100, 250, 300, 1000", self.hz));
        }
        if !(1..=MAX_CPUS).contains(&self.cpus) {
            return Err(format!("cpus {} must be 1..={MAX_CPUS}", self.cpus));
        }
        if self.syscall_ns > MAX_SYSCALL_NS {
            return Err(format!("syscall cost {} ns is over the limit of 1 s", self.syscall_ns));
        }
        if self.copy_bytes_per_sec == 0 {
            return Err("copy rate must be positive".into());
        }
        Ok(())
    }

    /// Pages the page cache may use.
    pub fn cache_pages(&self) -> u64 {
        (self.memory_bytes - self.reserved_bytes) / 4096
    }

    /// CPU time of one system call copying `bytes`.
    pub fn syscall_cost_ns(&self, bytes: u64) -> Nanos {
        self.syscall_ns
            + (bytes as u128 * NS_PER_SEC as u128 / self.copy_bytes_per_sec as u128) as Nanos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_journal_s_writes_are_sync_as_each_era_submits_them() {
        // (kernel, periodic commit, waited-for commit, commit block, checkpoint)
        let eras = [
            ("2.6.29", false, false, false, false),
            ("2.6.30", false, true, true, false),
            ("2.6.36", false, true, true, false),
            ("2.6.37", true, true, true, false),
            ("3.1", true, true, true, true),
            ("3.4", true, true, true, true),
            ("3.5", false, true, true, true),
        ];
        for (k, periodic, waited, record, checkpoint) in eras {
            let k = Kernel::parse(k).unwrap();
            assert_eq!(k.jbd_commit_sync(false), periodic, "{k}");
            assert_eq!(k.jbd_commit_sync(true), waited, "{k}");
            assert_eq!(k.jbd_commit_record_sync(), record, "{k}");
            assert_eq!(k.jbd_checkpoint_sync(), checkpoint, "{k}");
        }
    }

    #[test]
    fn kernels_parse_and_gate_mechanisms() {
        let k = Kernel::parse("2.6.32").unwrap();
        assert!(k.context_readahead() && !k.io_less_throttling());
        assert!(Kernel::parse("3.2").unwrap().io_less_throttling());
        assert!(!Kernel::parse("2.6.29").unwrap().context_readahead());
        assert!(!Kernel::parse("2.5.65").unwrap().on_demand_readahead());
        assert!(Kernel::parse("2.5.65").unwrap().dirty_list_writeback());
        assert!(!Kernel::parse("2.6.6").unwrap().dirty_list_writeback());
        assert!(!Kernel::parse("2.6.23").unwrap().per_bdi_dirty_thresholds());
        assert!(Kernel::parse("2.6.24").unwrap().per_bdi_dirty_thresholds());
        assert_eq!(Kernel::parse("2.6.29").unwrap().default_sysctl().dirty_ratio, 10);
        assert_eq!(Kernel::parse("2.5.65").unwrap().default_sysctl().dirty_ratio, 40);
        assert!(Kernel::parse("2.4.20").is_err());
        // As `uname -r` prints it, a 2.6 stable release, a git tag.
        let k = |t: &str| Kernel::parse(t).map(|k| (k.major, k.minor, k.patch));
        assert_eq!(k("2.6.32-754.35.1.el6.x86_64"), Ok((2, 6, 32)));
        assert_eq!(k("2.6.32.27-0.2-default"), Ok((2, 6, 32)));
        assert_eq!(k("3.2.0-4-amd64"), Ok((3, 2, 0)));
        assert_eq!(k("4.18.0-553.el8_10.x86_64"), Ok((4, 18, 0)));
        assert_eq!(k("6.18.44-fc-v669"), Ok((6, 18, 44)));
        assert_eq!(k("v3.5"), Ok((3, 5, 0)));
        assert_eq!(k("3.5-rc1"), Ok((3, 5, 0)));
        assert_eq!(k("5.10.0+"), Ok((5, 10, 0)));
        // Releases that never were, and versions that are not.
        for never in ["2.6.40", "2.6.99", "2.5.76", "3.20", "4.21.3", "5.20"] {
            let e = Kernel::parse(never).unwrap_err();
            assert!(e.contains("no such release"), "{never}: {e}");
        }
        assert!(Kernel::parse("2.6.39").is_ok() && Kernel::parse("5.19").is_ok());
        for bad in ["3.2.0.1", "2.6.32.x", "", "-", "2.6.", "v"] {
            assert!(Kernel::parse(bad).is_err(), "{bad}");
        }
        assert!(Kernel::parse("7.0").is_err());
        assert!(Kernel::parse("three").is_err());
    }

    #[test]
    fn configs_are_checked_against_limits() {
        let ok = VmConfig::default_for(Kernel::DEFAULT);
        assert!(ok.validate().is_ok());
        assert_eq!(ok.cache_pages(), (4096 - 256) * 256);
        for bad in [
            VmConfig { memory_bytes: 1 << 20, ..ok },
            VmConfig { memory_bytes: 2 << 40, ..ok },
            VmConfig { reserved_bytes: 4 << 30, ..ok },
            VmConfig { hz: 123, ..ok },
            VmConfig { sysctl: DirtySysctl { dirty_ratio: 101, ..ok.sysctl }, ..ok },
            VmConfig { sysctl: DirtySysctl { dirty_ratio: 0, dirty_bytes: 0, ..ok.sysctl }, ..ok },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }
}
