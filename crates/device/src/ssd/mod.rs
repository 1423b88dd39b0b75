//! A NAND-flash solid-state drive, SATA or NVMe, after the simulators of record (Agrawal et
//! al., "Design Tradeoffs for SSD Performance", USENIX ATC 2008 — the DiskSim SSD extension;
//! SSDSim; MQSim, Tavakkol et al., FAST 2018), so that what decides scheduler outcomes on an
//! SSD is there: internal parallelism, reads stuck behind programs and erases, and the
//! **write cliff** when garbage collection starts.
//!
//! - [`geometry`]: channels × dies (ways) × planes × blocks × pages; the FTL maps 4 KiB units,
//!   several to a flash page; planes work together (multi-plane operations).
//! - [`ftl`]: page-mapped FTL, a write frontier per die, host writes striped over the dies
//!   channel first; over-provisioning as a fraction of raw capacity; TRIM.
//! - [`gc`]: greedy garbage collection per die below a free-block threshold.
//! - [`frontend`]: submission queues (NVMe: many, round-robin arbitration; SATA: the NCQ
//!   queue) and controller cores that spend `controller_overhead_us` on each command.
//! - [`timeline`]: channels and the host link as calendars of busy intervals.
//!
//! **Timing.** When a core has processed a command, the whole command is planned at once:
//!
//! - *Read*: per die page holding its units, the die reads the page (`page_read_us`; busy
//!   from when it is free) and sends the units over its channel (`channel_bytes_per_sec`; the
//!   die stays busy until its data is out); each piece then crosses the host link. Units in the
//!   write buffer, and unmapped units (never written in a `fill = "empty"` drive, or trimmed),
//!   cost only the host transfer.
//! - *Write*: write-back through a DRAM buffer of `write_buffer_bytes`. Data crosses the host
//!   link as soon as the buffer has room (in command order), and the command completes then.
//!   Units are appended to the frontier; a full die page goes over the channel and is
//!   programmed (`page_program_us`), after which its buffer space is released. When the
//!   buffer is full, writes wait for programs, which is how garbage collection reaches the
//!   host: the write cliff. A FUA write or a flush programs the open pages holding host data
//!   (padding them) and completes when every buffered unit is on flash.
//! - *Discard*: unmaps the units (`controller_overhead_us` only).
//! - The host link carries data plus `host_command_overhead_us` per command (the SATA FIS
//!   exchange; NVMe's doorbell, command fetch, completion entry and interrupt). SATA is half
//!   duplex: one link for both directions; PCIe has a link each way.
//!
//! **Simplifications**, each for speed or for want of published data: one read latency for
//! every page type (MLC/TLC lower and upper pages differ); no program/erase suspend; no
//! SLC write cache (TurboWrite and the like: sustained writes here run at the native cells'
//! rate); no read cache or read-ahead; no mapping-table paging (the whole map is in DRAM, as
//! on drives with 1 GB of DRAM per TB); no wear levelling beyond reusing the oldest free
//! block; a write covering part of a 4 KiB unit is treated as a whole-unit write (no
//! read-modify-write); channel transfers of a program carry the whole die page.
//!
//! **Capacity and memory.** The presets keep their drives' parallelism, page and block
//! sizes and timings but only 128 blocks per plane: 32 GiB of raw flash, where the drives
//! they follow have 8 to 32 times as many blocks. Speed and latency do not depend on the
//! block count, the time to the write cliff does (in proportion), and the maps cost up to 8
//! bytes per raw 4 KiB plus the program times of the die pages (about 72 MiB here once every
//! unit has been written, ~2.3 GiB for a 1 TB drive; untouched pages cost nothing, as the
//! maps are zeroed allocations). Set `blocks_per_plane` for the full capacity.
//!
//! Per command the work is O(die pages touched) plus O(log) per reservation and, every
//! `pages_per_block` die pages written, a greedy victim search over one die's blocks.

pub mod frontend;
pub mod ftl;
pub mod gc;
pub mod geometry;
#[cfg(test)]
mod tests;
pub mod timeline;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use elevator_core::{Nanos, Op, RequestId};
use serde::{Deserialize, Serialize};

use crate::limits::{check_bytes_per_sec, check_delay_ms, check_delay_us};
use crate::{Command, Completion, Device};
pub use frontend::Frontend;
pub use ftl::{Fill, FlashOp, Ftl, FtlStats, Loc};
pub use geometry::{Geometry, UNIT_BYTES};
use timeline::Timeline;

/// The host interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Interface {
    /// SATA (AHCI, NCQ): one command queue, a half-duplex link.
    Sata,
    /// NVMe over PCIe: many submission queues, a full-duplex link.
    Nvme,
}

/// Parameters of an [`Ssd`]: what a topology file sets. Missing fields take the
/// [`SsdParams::sata_ssd_2015`] values. Names follow MQSim's `ssdconfig.xml` where it has one
/// (`Flash_Channel_Count` → `channels`, `Chip_No_Per_Channel` → `dies_per_channel`,
/// `Page_Read_Latency` → `page_read_us`, `Overprovisioning_Ratio` → `over_provisioning`,
/// `GC_Exec_Threshold` → `gc_threshold`, ...).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SsdParams {
    pub interface: Interface,
    /// Flash channels (buses), each shared by its dies.
    pub channels: u32,
    /// Dies per channel ("ways"); each reads, programs or erases on its own.
    pub dies_per_channel: u32,
    pub planes_per_die: u32,
    /// Flash page size (a multiple of 4 KiB).
    pub page_bytes: u64,
    pub pages_per_block: u32,
    /// Blocks per plane: with the rest, the raw capacity (see "Capacity and memory").
    pub blocks_per_plane: u32,
    /// Raw capacity hidden from the host, as a fraction of raw capacity.
    pub over_provisioning: f64,
    /// tR: array to page register.
    pub page_read_us: f64,
    /// tPROG.
    pub page_program_us: f64,
    /// tBERS.
    pub block_erase_ms: f64,
    /// One channel's data rate (ONFI NV-DDR / Toggle DDR).
    pub channel_bytes_per_sec: f64,
    /// Host link data rate (one direction).
    pub host_bytes_per_sec: f64,
    /// Host link time per command beyond its data.
    pub host_command_overhead_us: f64,
    /// Firmware time per command, on one core.
    pub controller_overhead_us: f64,
    pub controller_cores: u32,
    /// DRAM write buffer.
    pub write_buffer_bytes: u64,
    /// Garbage collection keeps this fraction of each die's blocks free (at least 2 blocks).
    pub gc_threshold: f64,
    /// NVMe submission queues (SATA: 1).
    pub submission_queues: u32,
    /// Commands each submission queue holds (SATA: NCQ tags).
    pub queue_depth: u32,
    /// Contents at power-on.
    pub fill: Fill,
}

impl Default for SsdParams {
    fn default() -> Self {
        SsdParams::sata_ssd_2015()
    }
}

impl SsdParams {
    /// A SATA MLC SSD of 2015, after the Samsung 850 PRO 256 GB (data sheet rev. 1.0, 2014:
    /// 550 MB/s sequential read, 520 MB/s write, 100k random-read and 90k random-write IOPS
    /// at QD32, 10k / 36k IOPS at QD1; MEX controller with three cores; 256 GiB of flash for
    /// 256 GB, so 7 % over-provisioning).
    ///
    /// Flash: 8 channels × 4 dies × 2 planes (32 dies, the usual 8-channel SATA controller
    /// with four dies per channel), 16 KiB pages, 256 pages per block; tR 50 µs, tPROG
    /// 1.3 ms, typical of 2x-nm MLC data sheets (assumption: Samsung publishes none for its
    /// V-NAND); tBERS 3.8 ms as MQSim's default `Block_Erase_Latency`; Toggle DDR 2.0
    /// channels at 400 MB/s. SATA 6 Gb/s carries 600 MB/s after 8b/10b, ~570 MB/s of data
    /// after FIS framing; 3 µs of link time per command (the NCQ FIS exchange) and 15 µs of
    /// firmware per command are calibrated so that 4 KiB reads come to ~85 µs at QD1 and
    /// ~100k IOPS at QD32 as the data sheet says. A 4 MiB write buffer (assumption; the
    /// drive's 512 MB DRAM holds mostly the map). NCQ depth 32. GC keeps 2 % of the blocks
    /// free (MQSim keeps 5 % of pages: with 128 blocks a die, that would eat most of the
    /// spare area). 128 blocks per plane (32 GiB raw) for memory, where the drive has ~1024.
    pub fn sata_ssd_2015() -> SsdParams {
        SsdParams {
            interface: Interface::Sata,
            channels: 8,
            dies_per_channel: 4,
            planes_per_die: 2,
            page_bytes: 16384,
            pages_per_block: 256,
            blocks_per_plane: 128,
            over_provisioning: 0.07,
            page_read_us: 50.0,
            page_program_us: 1300.0,
            block_erase_ms: 3.8,
            channel_bytes_per_sec: 400e6,
            host_bytes_per_sec: 570e6,
            host_command_overhead_us: 3.0,
            controller_overhead_us: 15.0,
            controller_cores: 3,
            write_buffer_bytes: 4 << 20,
            gc_threshold: 0.02,
            submission_queues: 1,
            queue_depth: 32,
            fill: Fill::Full,
        }
    }

    /// A PCIe 3.0 x4 NVMe TLC SSD of 2018, after the Samsung 970 EVO 1 TB (data sheet rev.
    /// 1.0, 2018: 3,400 MB/s sequential read, 500k random-read IOPS at QD32 × 4 threads, 15k
    /// at QD1; five-core Phoenix controller; 9 % over-provisioning for 1 TB on 1 TiB of flash).
    ///
    /// Flash: 8 channels × 4 dies × 2 planes, 16 KiB pages, 256 pages per block; tR 60 µs and
    /// tPROG 700 µs, of the order of the 64-layer TLC V-NAND papers (assumption), tBERS 3.8 ms
    /// (MQSim); 800 MB/s channels (Toggle DDR 3.0). PCIe 3.0 x4 is 3.94 GB/s per direction
    /// after 128b/130b, ~3.5 GB/s of data after TLP headers; 0.5 µs of link per command (64 B
    /// command fetch, 16 B completion, doorbells, MSI-X) and 6 µs of firmware per command (on
    /// five cores): ~75 µs 4 KiB reads at QD1 and over 400k IOPS at QD128. 64 submission
    /// queues of 1023 commands (Linux's `io_queue_depth` of 1024 entries, one kept empty);
    /// 16 MiB write buffer (assumption). No TurboWrite SLC cache: sustained writes run at the
    /// TLC rate (~1.5 GB/s), as the drive does once its cache is full. 32 GiB raw (see
    /// "Capacity and memory").
    pub fn nvme_pcie3_2018() -> SsdParams {
        SsdParams {
            interface: Interface::Nvme,
            channels: 8,
            dies_per_channel: 4,
            planes_per_die: 2,
            page_bytes: 16384,
            pages_per_block: 256,
            blocks_per_plane: 128,
            over_provisioning: 0.09,
            page_read_us: 60.0,
            page_program_us: 700.0,
            block_erase_ms: 3.8,
            channel_bytes_per_sec: 800e6,
            host_bytes_per_sec: 3.5e9,
            host_command_overhead_us: 0.5,
            controller_overhead_us: 6.0,
            controller_cores: 5,
            write_buffer_bytes: 16 << 20,
            gc_threshold: 0.02,
            submission_queues: 64,
            queue_depth: 1023,
            fill: Fill::Full,
        }
    }
}

/// Counters of an [`Ssd`] beyond the FTL's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SsdStats {
    pub ftl: FtlStats,
    /// Host reads of units served from the write buffer or unmapped.
    pub units_read_without_flash: u64,
    pub flash_page_reads: u64,
}

impl SsdStats {
    /// Flash units programmed (garbage collection's copies and padding included) per unit the
    /// host wrote; 0 before any write.
    pub fn write_amplification(&self, units_per_page: u32) -> f64 {
        if self.ftl.host_units_written == 0 {
            0.0
        } else {
            (self.ftl.pages_programmed * u64::from(units_per_page)) as f64
                / self.ftl.host_units_written as f64
        }
    }
}

/// Host-data units a command's buffer admission handles at once (a larger write is admitted
/// in pieces, as its DMA proceeds).
const ADMIT_CHUNK_UNITS: u32 = 64;

/// The drive.
#[derive(Debug)]
pub struct Ssd {
    p: SsdParams,
    ftl: Ftl,
    fe: Frontend,
    // Durations, ns.
    read_ns: Nanos,
    program_ns: Nanos,
    erase_ns: Nanos,
    overhead_ns: Nanos,
    host_cmd_ns: Nanos,
    chan_ns_per_byte: f64,
    host_ns_per_byte: f64,
    /// When each die has finished what it was given.
    die_free: Vec<Nanos>,
    channels: Vec<Timeline>,
    /// Host link: [to the device, to the host]; SATA uses the first for both.
    links: [Timeline; 2],
    /// When the host data of each die's open page is all in the buffer.
    open_ready: Vec<Nanos>,
    /// When each die page's program ends (0: before power-on).
    page_done: Vec<Nanos>,
    // The write buffer, in units.
    buf_cap: u32,
    buf_used: u32,
    releases: BinaryHeap<Reverse<(Nanos, u32)>>,
    last_admit: Nanos,
    last_release: Nanos,
    done: BinaryHeap<Reverse<(Nanos, u64, u64)>>,
    seq: u64,
    ops: Vec<FlashOp>,
    stats: SsdStats,
    /// The latest completion handed out (tests resume from it).
    #[cfg(test)]
    last_done: Nanos,
}

fn us(v: f64) -> Nanos {
    (v * 1e3).round() as Nanos
}

impl Ssd {
    pub fn new(p: SsdParams) -> Result<Ssd, String> {
        for (n, v) in [
            ("page_read_us", p.page_read_us),
            ("page_program_us", p.page_program_us),
            ("host_command_overhead_us", p.host_command_overhead_us),
            ("controller_overhead_us", p.controller_overhead_us),
        ] {
            check_delay_us(n, v)?;
        }
        check_delay_ms("block_erase_ms", p.block_erase_ms, 0.0)?;
        for (n, v) in [
            ("channel_bytes_per_sec", p.channel_bytes_per_sec),
            ("host_bytes_per_sec", p.host_bytes_per_sec),
        ] {
            check_bytes_per_sec(n, v)?;
        }
        if p.controller_cores == 0 || p.submission_queues == 0 || p.queue_depth == 0 {
            return Err("controller_cores, submission_queues and queue_depth must be at least 1"
                .to_string());
        }
        if p.queue_depth > 65536 {
            return Err(format!(
                "queue_depth = {} must be at most 65536 (the NVMe limit)",
                p.queue_depth
            ));
        }
        if p.submission_queues > 65535 {
            return Err("submission_queues must be at most 65535 (the NVMe limit)".to_string());
        }
        if p.interface == Interface::Sata && p.submission_queues != 1 {
            return Err("a SATA drive has one command queue: set submission_queues = 1 or interface = \"nvme\"".to_string());
        }
        if !(p.gc_threshold.is_finite() && (0.0..0.5).contains(&p.gc_threshold)) {
            return Err(format!(
                "gc_threshold = {} must be a fraction of a die's blocks in [0, 0.5), e.g. 0.02",
                p.gc_threshold
            ));
        }
        let g = Geometry::new(
            p.channels,
            p.dies_per_channel,
            p.planes_per_die,
            p.page_bytes,
            p.pages_per_block,
            p.blocks_per_plane,
            p.over_provisioning,
        )?;
        let threshold = ((p.gc_threshold * f64::from(g.blocks_per_die)).ceil() as u32).max(2);
        let buf_cap = p.write_buffer_bytes / UNIT_BYTES;
        let need = u64::from(g.dies * g.units_per_page + ADMIT_CHUNK_UNITS);
        if buf_cap < need || buf_cap > u64::from(u32::MAX) {
            return Err(format!(
                "write_buffer_bytes = {} must hold an open page per die plus 256 KiB: at least {} bytes",
                p.write_buffer_bytes,
                need * UNIT_BYTES
            ));
        }
        let pages = g.dies as usize * g.pages_per_die as usize;
        let dies = g.dies as usize;
        let ftl = Ftl::new(g, p.fill, threshold)?;
        Ok(Ssd {
            fe: Frontend::new(p.submission_queues, p.controller_cores),
            read_ns: us(p.page_read_us),
            program_ns: us(p.page_program_us),
            erase_ns: us(p.block_erase_ms * 1e3),
            overhead_ns: us(p.controller_overhead_us),
            host_cmd_ns: us(p.host_command_overhead_us),
            chan_ns_per_byte: 1e9 / p.channel_bytes_per_sec,
            host_ns_per_byte: 1e9 / p.host_bytes_per_sec,
            die_free: vec![0; dies],
            channels: vec![Timeline::default(); p.channels as usize],
            links: [Timeline::default(), Timeline::default()],
            open_ready: vec![0; dies],
            page_done: vec![0; pages],
            buf_cap: buf_cap as u32,
            buf_used: 0,
            releases: BinaryHeap::new(),
            last_admit: 0,
            last_release: 0,
            done: BinaryHeap::new(),
            seq: 0,
            ops: Vec::with_capacity(64),
            stats: SsdStats::default(),
            #[cfg(test)]
            last_done: 0,
            ftl,
            p,
        })
    }

    pub fn params(&self) -> &SsdParams {
        &self.p
    }

    pub fn ftl(&self) -> &Ftl {
        &self.ftl
    }

    /// Counters: host and flash traffic, garbage collection, write amplification.
    pub fn stats(&self) -> SsdStats {
        SsdStats { ftl: self.ftl.stats, ..self.stats }
    }

    /// Flash units programmed per unit written by the host.
    pub fn write_amplification(&self) -> f64 {
        self.stats().write_amplification(self.ftl.g.units_per_page)
    }

    /// The host link time of `bytes` of data (what every data command costs at least).
    pub fn host_transfer_ns(&self, bytes: u64) -> Nanos {
        (bytes as f64 * self.host_ns_per_byte).ceil() as Nanos
    }

    #[inline]
    fn chan_ns(&self, units: u32) -> Nanos {
        (f64::from(units) * UNIT_BYTES as f64 * self.chan_ns_per_byte).ceil() as Nanos
    }

    #[inline]
    fn link(&mut self, to_host: bool) -> &mut Timeline {
        let i = usize::from(to_host && self.p.interface == Interface::Nvme);
        &mut self.links[i]
    }

    /// Reads `units` of die page `page` out to the controller from `t`; returns when the data
    /// is off the channel.
    fn flash_read(&mut self, page: u32, units: u32, t: Nanos) -> Nanos {
        let d = self.ftl.g.die_of_page(page) as usize;
        let c = self.ftl.g.channel_of_die(d as u32) as usize;
        let start = t.max(self.die_free[d]);
        let dur = self.chan_ns(units);
        let x = self.channels[c].reserve(start + self.read_ns, dur) + dur;
        self.die_free[d] = x;
        self.stats.flash_page_reads += 1;
        x
    }

    /// Schedules the flash operations the FTL asked for, none before `t`.
    fn run_ops(&mut self, t: Nanos) {
        let mut ops = std::mem::take(&mut self.ops);
        for op in ops.drain(..) {
            match op {
                FlashOp::Read { page, units } => {
                    self.flash_read(page, units, t);
                }
                FlashOp::Program { page, host_units } => {
                    let d = self.ftl.g.die_of_page(page) as usize;
                    let c = self.ftl.g.channel_of_die(d as u32) as usize;
                    let start = t.max(self.open_ready[d]).max(self.die_free[d]);
                    self.open_ready[d] = 0;
                    let dur = self.chan_ns(self.ftl.g.units_per_page);
                    let end = self.channels[c].reserve(start, dur) + dur + self.program_ns;
                    self.die_free[d] = end;
                    self.page_done[page as usize] = end;
                    if host_units > 0 {
                        self.releases.push(Reverse((end, host_units)));
                        self.last_release = self.last_release.max(end);
                    }
                }
                FlashOp::Erase { die, .. } => {
                    let d = die as usize;
                    self.die_free[d] = t.max(self.die_free[d]) + self.erase_ns;
                }
            }
        }
        self.ops = ops;
    }

    /// When `k` more units fit in the write buffer, at or after `t` (and after the previous
    /// admission: the buffer fills in command order).
    fn admit(&mut self, k: u32, t: Nanos) -> Nanos {
        let mut t = t.max(self.last_admit);
        while let Some(&Reverse((r, n))) = self.releases.peek() {
            if r <= t || self.buf_used + k > self.buf_cap {
                self.releases.pop();
                t = t.max(r);
                self.buf_used -= n;
            } else {
                break;
            }
        }
        debug_assert!(self.buf_used + k <= self.buf_cap, "the buffer check guarantees room");
        self.buf_used += k;
        self.last_admit = t;
        t
    }

    fn unit_range(cmd: &Command) -> (u32, u32) {
        let first = cmd.offset_bytes / UNIT_BYTES;
        let end = (cmd.offset_bytes + cmd.len_bytes).div_ceil(UNIT_BYTES);
        (first as u32, end as u32)
    }

    fn write(&mut self, cmd: &Command, t0: Nanos) -> Nanos {
        let (first, end) = Self::unit_range(cmd);
        let mut done = t0;
        let mut lpn = first;
        let mut overhead = self.host_cmd_ns;
        while lpn < end {
            let k = (end - lpn).min(ADMIT_CHUNK_UNITS);
            let a = self.admit(k, t0);
            let bytes = (u64::from(k) * UNIT_BYTES).min(cmd.len_bytes);
            let dur = self.host_transfer_ns(bytes) + overhead;
            overhead = 0;
            let h_end = self.link(false).reserve(a, dur) + dur;
            for l in lpn..lpn + k {
                let d = self.ftl.host_die() as usize;
                self.open_ready[d] = self.open_ready[d].max(h_end);
                if self.ftl.write(l, &mut self.ops).is_none() {
                    // Ruled out by the parameter checks; the unit keeps its old place.
                    self.buf_used -= 1;
                }
                self.run_ops(h_end);
            }
            done = h_end;
            lpn += k;
        }
        if cmd.fua {
            self.ftl.close_all(&mut self.ops);
            self.run_ops(done);
            done = done.max(self.last_release);
        }
        done
    }

    fn read(&mut self, cmd: &Command, t0: Nanos) -> Nanos {
        let (first, end) = Self::unit_range(cmd);
        let upp = self.ftl.g.units_per_page;
        let mut done = t0;
        let mut overhead = self.host_cmd_ns;
        let mut no_flash = 0u32;
        let mut group: Option<(u32, u32)> = None; // (die page, units)
        for lpn in first..=end {
            let page = if lpn == end {
                None
            } else {
                match self.ftl.lookup(lpn) {
                    Loc::At(pun) => {
                        let page = pun / upp;
                        if self.ftl.is_open(page) || self.page_done[page as usize] > t0 {
                            no_flash += 1;
                            continue;
                        }
                        Some(page)
                    }
                    Loc::Unmapped => {
                        no_flash += 1;
                        continue;
                    }
                }
            };
            match (group, page) {
                (Some((g, n)), Some(p)) if g == p => group = Some((g, n + 1)),
                (prev, next) => {
                    if let Some((g, n)) = prev {
                        let x = self.flash_read(g, n, t0);
                        let dur = self.host_transfer_ns(u64::from(n) * UNIT_BYTES) + overhead;
                        overhead = 0;
                        done = done.max(self.link(true).reserve(x, dur) + dur);
                    }
                    group = next.map(|p| (p, 1));
                }
            }
        }
        if no_flash > 0 || overhead > 0 {
            self.stats.units_read_without_flash += u64::from(no_flash);
            let dur = self.host_transfer_ns(u64::from(no_flash) * UNIT_BYTES) + overhead;
            done = done.max(self.link(true).reserve(t0, dur) + dur);
        }
        done
    }

    /// Serves a command a core has processed by `t0`; returns its completion time.
    fn serve(&mut self, cmd: &Command, t0: Nanos) -> Nanos {
        let user_end = self.ftl.g.user_units * UNIT_BYTES;
        let mut cmd = *cmd;
        // The caller keeps commands inside the capacity; clip anyway rather than panic.
        cmd.len_bytes = cmd.len_bytes.min(user_end.saturating_sub(cmd.offset_bytes));
        match cmd.op {
            Op::Read => self.read(&cmd, t0),
            Op::Write => self.write(&cmd, t0),
            Op::Discard => {
                // Whole units only: a partial unit keeps its data.
                let first = cmd.offset_bytes.div_ceil(UNIT_BYTES);
                let end = (cmd.offset_bytes + cmd.len_bytes) / UNIT_BYTES;
                for lpn in first..end.max(first) {
                    self.ftl.trim(lpn as u32);
                }
                t0
            }
            Op::Flush => {
                self.ftl.close_all(&mut self.ops);
                self.run_ops(t0);
                t0.max(self.last_release)
            }
        }
    }

    /// Starts every command a core can take by `limit`.
    fn dispatch(&mut self, limit: Nanos) {
        while let Some((start, cmd)) = self.fe.start_next(limit, self.overhead_ns) {
            let t0 = start + self.overhead_ns;
            for ch in &mut self.channels {
                ch.prune(start);
            }
            self.links[0].prune(start);
            self.links[1].prune(start);
            let done = self.serve(&cmd, t0);
            self.seq += 1;
            self.done.push(Reverse((done, self.seq, cmd.id.0)));
        }
    }
}

impl Device for Ssd {
    fn describe(&self) -> String {
        let g = &self.ftl.g;
        let q = match self.p.interface {
            Interface::Sata => format!("SATA SSD, NCQ {}", self.p.queue_depth),
            Interface::Nvme => {
                format!("NVMe SSD, {} queues × {}", self.p.submission_queues, self.p.queue_depth)
            }
        };
        let gb = self.capacity_bytes() as f64 / 1e9;
        let prec = if gb < 10.0 { 1 } else { 0 };
        format!(
            "{q}, {gb:.prec$} GB, {} ch × {} dies × {} planes, {:.0} % over-provisioned",
            g.channels,
            g.dies / g.channels,
            g.planes,
            self.p.over_provisioning * 100.0
        )
    }

    fn capacity_bytes(&self) -> u64 {
        self.ftl.g.user_units * UNIT_BYTES
    }

    fn queue_depth(&self) -> u32 {
        self.p.submission_queues.saturating_mul(self.p.queue_depth).min(65535)
    }

    fn rotational(&self) -> bool {
        false
    }

    fn submit(&mut self, cmd: Command, now_ns: Nanos) {
        self.dispatch(now_ns);
        self.fe.push(cmd, now_ns);
        self.dispatch(now_ns);
    }

    fn next_event_ns(&self) -> Option<Nanos> {
        let c = self.done.peek().map(|Reverse((t, _, _))| *t);
        match (c, self.fe.next_start()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        let s = self.stats();
        vec![
            ("write_amplification", self.write_amplification()),
            ("host_units_written", s.ftl.host_units_written as f64),
            ("pages_programmed", s.ftl.pages_programmed as f64),
            ("gc_runs", s.ftl.gc_runs as f64),
            ("gc_units_moved", s.ftl.gc_units_moved as f64),
            ("blocks_erased", s.ftl.blocks_erased as f64),
            ("flash_page_reads", s.flash_page_reads as f64),
            ("units_trimmed", s.ftl.units_trimmed as f64),
        ]
    }

    fn advance(&mut self, now_ns: Nanos, completed: &mut Vec<Completion>) {
        self.dispatch(now_ns);
        while let Some(&Reverse((t, _, id))) = self.done.peek() {
            if t > now_ns {
                break;
            }
            self.done.pop();
            completed.push(Completion { id: RequestId(id), done_ns: t });
        }
    }
}
