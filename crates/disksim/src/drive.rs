//! Typed view of a DiskSim 4.0 drive (disk spec, `dm_disk` model with `dm_layout_g1`
//! zones and `dm_mech_g1` mechanics, seek curve, bus/controller wiring) plus DiskSim's
//! LBN→PBN mapping (`diskmodel/layout_g1.c`, `layout_g1_load.c`), so an HDD model can be
//! driven by exactly the parameters DiskSim validated. All times are in ms as in DiskSim.

use crate::error::DiskSimError;
use crate::params::{parse_file, Block, Item, Node, ParamFile, Value};
use crate::statdefs::StatDefs;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------- helpers

fn missing(b: &Block, key: &str) -> DiskSimError {
    DiskSimError::MissingKey {
        file: b.file.to_string(),
        line: b.line,
        block: b.label(),
        key: key.to_string(),
    }
}

fn bad(v: &Node<Value>, key: &str, msg: &str) -> DiskSimError {
    DiskSimError::BadValue {
        file: v.file.to_string(),
        line: v.line,
        key: key.to_string(),
        msg: msg.to_string(),
    }
}

fn req_f64(b: &Block, key: &str) -> Result<f64, DiskSimError> {
    let v = b.get(key).ok_or_else(|| missing(b, key))?;
    v.value.as_f64().filter(|x| x.is_finite()).ok_or_else(|| bad(v, key, "expected a number"))
}

fn opt_f64(b: &Block, key: &str) -> Result<Option<f64>, DiskSimError> {
    match b.get(key) {
        None => Ok(None),
        Some(v) => v
            .value
            .as_f64()
            .filter(|x| x.is_finite())
            .map(Some)
            .ok_or_else(|| bad(v, key, "expected a number")),
    }
}

fn req_i64(b: &Block, key: &str) -> Result<i64, DiskSimError> {
    let v = b.get(key).ok_or_else(|| missing(b, key))?;
    v.value.as_i64().ok_or_else(|| bad(v, key, "expected an integer"))
}

fn opt_i64(b: &Block, key: &str) -> Result<Option<i64>, DiskSimError> {
    match b.get(key) {
        None => Ok(None),
        Some(v) => v.value.as_i64().map(Some).ok_or_else(|| bad(v, key, "expected an integer")),
    }
}

fn req_u64(b: &Block, key: &str) -> Result<u64, DiskSimError> {
    let n = req_i64(b, key)?;
    u64::try_from(n).map_err(|_| bad(b.get(key).expect("present"), key, "must be >= 0"))
}

/// Upper bound on geometry numbers so arithmetic on them cannot overflow u64.
const GEOMETRY_LIMIT: u64 = 1 << 40;

fn req_bounded(b: &Block, key: &str) -> Result<u64, DiskSimError> {
    let n = req_u64(b, key)?;
    if n > GEOMETRY_LIMIT {
        return Err(bad(b.get(key).expect("present"), key, "implausibly large"));
    }
    Ok(n)
}

fn req_pos(b: &Block, key: &str) -> Result<u64, DiskSimError> {
    let n = req_bounded(b, key)?;
    if n == 0 {
        return Err(bad(b.get(key).expect("present"), key, "must be > 0"));
    }
    Ok(n)
}

fn opt_flag(b: &Block, key: &str) -> Result<Option<bool>, DiskSimError> {
    Ok(opt_i64(b, key)?.map(|v| v != 0))
}

fn req_block<'a>(b: &'a Block, key: &str) -> Result<&'a Block, DiskSimError> {
    let v = b.get(key).ok_or_else(|| missing(b, key))?;
    v.value.as_block().ok_or_else(|| bad(v, key, "expected a `{ ... }` block"))
}

fn opt_str(b: &Block, key: &str) -> Option<String> {
    b.get(key).map(|v| match &v.value {
        Value::Str(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        _ => String::new(),
    })
}

fn int_list(b: &Block, key: &str) -> Result<Vec<u64>, DiskSimError> {
    match b.get(key) {
        None => Ok(Vec::new()),
        Some(v) => {
            let l = v.value.as_list().ok_or_else(|| bad(v, key, "expected a list `[ ... ]`"))?;
            l.iter()
                .map(|e| {
                    e.value
                        .as_i64()
                        .and_then(|i| u64::try_from(i).ok())
                        .filter(|&i| i <= GEOMETRY_LIMIT)
                        .ok_or_else(|| bad(e, key, "list entries must be non-negative integers"))
                })
                .collect()
        }
    }
}

// ---------------------------------------------------------------- disk spec

/// Controller command overheads (ms), keyed by this and the previous request type
/// ("Read hit over. after read" etc.).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CommandOverheads {
    pub read_hit_after_read_ms: f64,
    pub read_hit_after_write_ms: f64,
    pub read_miss_after_read_ms: f64,
    pub read_miss_after_write_ms: f64,
    pub write_hit_after_read_ms: f64,
    pub write_hit_after_write_ms: f64,
    pub write_miss_after_read_ms: f64,
    pub write_miss_after_write_ms: f64,
}

/// `disksim_disk` block: controller, buffer and bus behaviour of the drive.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskSpec {
    pub name: String,
    pub per_request_overhead_ms: f64,
    pub overhead_time_scale: f64,
    /// Time to move one sector over the drive's bus interface.
    pub bulk_sector_transfer_ms: f64,
    pub max_queue_len: u64,
    pub avg_sectors_per_cylinder: Option<u64>,
    pub hold_bus_entire_read_xfer: Option<bool>,
    pub hold_bus_entire_write_xfer: Option<bool>,
    pub allow_almost_read_hits: Option<bool>,
    pub allow_sneaky_full_read_hits: Option<bool>,
    pub allow_sneaky_partial_read_hits: Option<bool>,
    pub allow_sneaky_intermediate_read_hits: Option<bool>,
    pub allow_read_hits_on_write_data: Option<bool>,
    pub allow_write_prebuffering: Option<bool>,
    pub preseeking_level: Option<i64>,
    pub never_disconnect: Option<bool>,
    pub buffer_segments: u64,
    pub max_write_segments: Option<u64>,
    pub segment_size_sectors: u64,
    pub use_separate_write_segment: Option<bool>,
    pub low_write_water_mark: Option<f64>,
    pub high_read_water_mark: Option<f64>,
    pub set_watermark_by_reqsize: Option<bool>,
    pub calc_sector_by_sector: Option<bool>,
    pub enable_caching_in_buffer: bool,
    /// DiskSim "Buffer continuous read" level (0 = off; higher = keep reading ahead).
    pub buffer_continuous_read: i64,
    pub min_read_ahead_sectors: u64,
    pub max_read_ahead_sectors: u64,
    pub read_ahead_over_requested: i64,
    pub read_ahead_on_idle_hit: Option<bool>,
    pub read_any_free_blocks: Option<bool>,
    /// 0 = write-through, 1 = write-back for sequential, 2 = write-back always.
    pub fast_write_level: i64,
    pub immediate_buffer_read: Option<bool>,
    pub immediate_buffer_write: Option<bool>,
    pub combine_seq_writes: Option<bool>,
    /// "Combine seeks and transfers" (absent in DiskSim 4.0 validation drives).
    pub combine_seeks_and_transfers: Option<bool>,
    pub stop_prefetch_in_sector: Option<bool>,
    pub disconnect_write_if_seek: Option<bool>,
    pub write_hit_stop_prefetch: Option<bool>,
    pub read_directly_to_buffer: Option<bool>,
    pub immed_transfer_partial_hit: Option<bool>,
    pub overheads: CommandOverheads,
    pub read_completion_overhead_ms: f64,
    pub write_completion_overhead_ms: f64,
    pub data_preparation_overhead_ms: f64,
    pub first_reselect_overhead_ms: f64,
    pub other_reselect_overhead_ms: f64,
    pub read_disconnect_after_read_ms: f64,
    pub read_disconnect_after_write_ms: f64,
    pub write_disconnect_overhead_ms: f64,
    pub extra_write_disconnect: Option<bool>,
    pub extradisc_command_overhead_ms: Option<f64>,
    pub extradisc_disconnect_overhead_ms: Option<f64>,
    pub extradisc_inter_disconnect_delay_ms: Option<f64>,
    pub extradisc_2nd_disconnect_overhead_ms: Option<f64>,
    pub extradisc_seek_delta_ms: Option<f64>,
    pub minimum_seek_delay_ms: Option<f64>,
    /// The per-disk `Scheduler = disksim_ioqueue { ... }` block, untyped.
    pub scheduler: Option<Block>,
    /// The whole block, for keys not typed here.
    pub raw: Block,
}

impl DiskSpec {
    pub fn from_block(b: &Block) -> Result<Self, DiskSimError> {
        let ov = CommandOverheads {
            read_hit_after_read_ms: req_f64(b, "Read hit over. after read")?,
            read_hit_after_write_ms: req_f64(b, "Read hit over. after write")?,
            read_miss_after_read_ms: req_f64(b, "Read miss over. after read")?,
            read_miss_after_write_ms: req_f64(b, "Read miss over. after write")?,
            write_hit_after_read_ms: req_f64(b, "Write hit over. after read")?,
            write_hit_after_write_ms: req_f64(b, "Write hit over. after write")?,
            write_miss_after_read_ms: req_f64(b, "Write miss over. after read")?,
            write_miss_after_write_ms: req_f64(b, "Write miss over. after write")?,
        };
        Ok(DiskSpec {
            name: b.name.clone().unwrap_or_default(),
            per_request_overhead_ms: req_f64(b, "Per-request overhead time")?,
            overhead_time_scale: req_f64(b, "Time scale for overheads")?,
            bulk_sector_transfer_ms: req_f64(b, "Bulk sector transfer time")?,
            max_queue_len: req_u64(b, "Max queue length")?,
            avg_sectors_per_cylinder: opt_i64(b, "Avg sectors per cylinder")?
                .map(|v| v.max(0) as u64),
            hold_bus_entire_read_xfer: opt_flag(b, "Hold bus entire read xfer")?,
            hold_bus_entire_write_xfer: opt_flag(b, "Hold bus entire write xfer")?,
            allow_almost_read_hits: opt_flag(b, "Allow almost read hits")?,
            allow_sneaky_full_read_hits: opt_flag(b, "Allow sneaky full read hits")?,
            allow_sneaky_partial_read_hits: opt_flag(b, "Allow sneaky partial read hits")?,
            allow_sneaky_intermediate_read_hits: opt_flag(
                b,
                "Allow sneaky intermediate read hits",
            )?,
            allow_read_hits_on_write_data: opt_flag(b, "Allow read hits on write data")?,
            allow_write_prebuffering: opt_flag(b, "Allow write prebuffering")?,
            preseeking_level: opt_i64(b, "Preseeking level")?,
            never_disconnect: opt_flag(b, "Never disconnect")?,
            buffer_segments: req_u64(b, "Number of buffer segments")?,
            max_write_segments: opt_i64(b, "Maximum number of write segments")?
                .map(|v| v.max(0) as u64),
            segment_size_sectors: req_u64(b, "Segment size (in blks)")?,
            use_separate_write_segment: opt_flag(b, "Use separate write segment")?,
            low_write_water_mark: opt_f64(b, "Low (write) water mark")?,
            high_read_water_mark: opt_f64(b, "High (read) water mark")?,
            set_watermark_by_reqsize: opt_flag(b, "Set watermark by reqsize")?,
            calc_sector_by_sector: opt_flag(b, "Calc sector by sector")?,
            enable_caching_in_buffer: req_i64(b, "Enable caching in buffer")? != 0,
            buffer_continuous_read: req_i64(b, "Buffer continuous read")?,
            min_read_ahead_sectors: req_u64(b, "Minimum read-ahead (blks)")?,
            max_read_ahead_sectors: req_u64(b, "Maximum read-ahead (blks)")?,
            read_ahead_over_requested: req_i64(b, "Read-ahead over requested")?,
            read_ahead_on_idle_hit: opt_flag(b, "Read-ahead on idle hit")?,
            read_any_free_blocks: opt_flag(b, "Read any free blocks")?,
            fast_write_level: req_i64(b, "Fast write level")?,
            immediate_buffer_read: opt_flag(b, "Immediate buffer read")?,
            immediate_buffer_write: opt_flag(b, "Immediate buffer write")?,
            combine_seq_writes: opt_flag(b, "Combine seq writes")?,
            combine_seeks_and_transfers: opt_flag(b, "Combine seeks and transfers")?,
            stop_prefetch_in_sector: opt_flag(b, "Stop prefetch in sector")?,
            disconnect_write_if_seek: opt_flag(b, "Disconnect write if seek")?,
            write_hit_stop_prefetch: opt_flag(b, "Write hit stop prefetch")?,
            read_directly_to_buffer: opt_flag(b, "Read directly to buffer")?,
            immed_transfer_partial_hit: opt_flag(b, "Immed transfer partial hit")?,
            overheads: ov,
            read_completion_overhead_ms: req_f64(b, "Read completion overhead")?,
            write_completion_overhead_ms: req_f64(b, "Write completion overhead")?,
            data_preparation_overhead_ms: req_f64(b, "Data preparation overhead")?,
            first_reselect_overhead_ms: req_f64(b, "First reselect overhead")?,
            other_reselect_overhead_ms: req_f64(b, "Other reselect overhead")?,
            read_disconnect_after_read_ms: req_f64(b, "Read disconnect afterread")?,
            read_disconnect_after_write_ms: req_f64(b, "Read disconnect afterwrite")?,
            write_disconnect_overhead_ms: req_f64(b, "Write disconnect overhead")?,
            extra_write_disconnect: opt_flag(b, "Extra write disconnect")?,
            extradisc_command_overhead_ms: opt_f64(b, "Extradisc command overhead")?,
            extradisc_disconnect_overhead_ms: opt_f64(b, "Extradisc disconnect overhead")?,
            extradisc_inter_disconnect_delay_ms: opt_f64(b, "Extradisc inter-disconnect delay")?,
            extradisc_2nd_disconnect_overhead_ms: opt_f64(b, "Extradisc 2nd disconnect overhead")?,
            extradisc_seek_delta_ms: opt_f64(b, "Extradisc seek delta")?,
            minimum_seek_delay_ms: opt_f64(b, "Minimum seek delay")?,
            scheduler: b.get("Scheduler").and_then(|v| v.value.as_block()).cloned(),
            raw: b.clone(),
        })
    }
}

// ---------------------------------------------------------------- model

/// DiskSim sparing schemes (`disksim_diskmap.h` numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SparingScheme {
    /// 0
    None,
    /// 1: spare tracks at the end of each zone; slips/defects are track numbers.
    Track,
    /// 2: `Number of spares` sectors at the end of each cylinder.
    SectorsPerCylinder,
    /// 3: spare sectors at the end of each track.
    SectorsPerTrack,
    /// 4: per-cylinder spares, slips pushed to the zone end.
    SectorsPerCylinderSlipToEnd,
    /// 5: per-cylinder spares at the front of the cylinder.
    SectorsPerCylinderAtFront,
    /// 6: 5 with slips pushed to the zone end.
    SectorsPerCylinderAtFrontSlipToEnd,
    /// 7: slips consume sectors at the end of the zone, no spares.
    SectorsAtEnd,
    /// 8: `Number of spares` sectors at the end of every range of
    /// `Rangesize for sparing` cylinders.
    SectorsPerRange,
    /// 9: `Number of spares` sectors at the end of the zone.
    SectorsPerZone,
    /// 10: 9 with slips also pushed to the zone end.
    SectorsPerZoneSlipToEnd,
}

impl SparingScheme {
    pub fn from_code(c: i64) -> Option<Self> {
        use SparingScheme::*;
        Some(match c {
            0 => None,
            1 => Track,
            2 => SectorsPerCylinder,
            3 => SectorsPerTrack,
            4 => SectorsPerCylinderSlipToEnd,
            5 => SectorsPerCylinderAtFront,
            6 => SectorsPerCylinderAtFrontSlipToEnd,
            7 => SectorsAtEnd,
            8 => SectorsPerRange,
            9 => SectorsPerZone,
            10 => SectorsPerZoneSlipToEnd,
            _ => return Option::None,
        })
    }
    fn is_sect_per_cyl(self) -> bool {
        use SparingScheme::*;
        matches!(
            self,
            SectorsPerCylinder
                | SectorsPerCylinderSlipToEnd
                | SectorsPerCylinderAtFront
                | SectorsPerCylinderAtFrontSlipToEnd
        )
    }
    /// `issliptoend` (DiskSim 4.0 `diskmodel/layout_g1.h:141`): schemes 4, 6 and 7.
    fn is_slip_to_end(self) -> bool {
        use SparingScheme::*;
        matches!(
            self,
            SectorsPerCylinderSlipToEnd | SectorsPerCylinderAtFrontSlipToEnd | SectorsAtEnd
        )
    }
}

/// One `dm_layout_g1_zone` (DiskSim "band").
#[derive(Debug, Clone, PartialEq)]
pub struct Zone {
    pub first_cylinder: u64,
    pub last_cylinder: u64,
    pub blocks_per_track: u64,
    /// "Offset of first block", in sectors (same unit as the skews).
    pub first_block_offset_sectors: f64,
    /// "Empty space at zone front", in sectors (DiskSim `deadspace`).
    pub empty_space_front_sectors: u64,
    /// "Skew for track switch", in sectors.
    pub track_skew_sectors: f64,
    /// "Skew for cylinder switch", in sectors.
    pub cylinder_skew_sectors: f64,
    pub spares: u64,
    /// Slipped physical sectors (or tracks for track sparing), zone-relative, ascending.
    /// DiskSim keeps the file's order (`getslips`, `layout_g1_load.c:359`) and its
    /// LBN→PBN loops count slips in that order, which is the sorted order's answer unless two
    /// out-of-order slips share a sparing unit (then DiskSim's map and its own PBN→LBN
    /// inverse, which does not depend on the order, disagree); sorted, the map is the layout
    /// the list describes. atlas_III's zone 1 lists 25 slips unsorted, none two to a cylinder.
    pub slips: Vec<u64>,
    /// (defective, remapped-to) pairs, zone-relative.
    pub defects: Vec<(u64, u64)>,
    /// LBNs held by this zone (DiskSim `blksinband`).
    pub blocks_in_zone: u64,
    /// First LBN of the zone.
    pub first_lbn: u64,
    pub line: usize,
}

impl Zone {
    pub fn cylinders(&self) -> u64 {
        self.last_cylinder - self.first_cylinder + 1
    }
}

/// `dm_layout_g1`.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// 0 normal, 1/2 cylinder switches stay on the same surface.
    pub mapping_scheme: i64,
    pub sparing: SparingScheme,
    pub sparing_code: i64,
    pub range_size_cylinders: u64,
    pub zones: Vec<Zone>,
}

/// `dm_mech_g1`.
#[derive(Debug, Clone, PartialEq)]
pub struct MechModel {
    pub access_time_type: Option<String>,
    pub seek_type: Option<String>,
    pub single_cylinder_seek_ms: Option<f64>,
    /// File name of the "Full seek curve" (relative to the drive directory).
    pub full_seek_curve: Option<String>,
    pub full_strobe_seek_ms: Option<f64>,
    pub average_seek_ms: Option<f64>,
    pub add_write_settling_ms: f64,
    pub head_switch_ms: f64,
    pub rpm: f64,
    pub rpm_error_percent: f64,
    /// "First ten seek times" if given (commented out in the validation drives).
    pub first_ten_seeks_ms: Vec<f64>,
    pub raw: Block,
}

impl MechModel {
    /// One revolution in ms.
    pub fn revolution_ms(&self) -> f64 {
        60_000.0 / self.rpm
    }
}

/// `dm_disk`: geometry, layout and mechanics.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskModel {
    pub name: String,
    pub surfaces: u64,
    pub cylinders: u64,
    /// "Block count" as given.
    pub block_count: u64,
    pub layout: Layout,
    pub mech: MechModel,
    pub raw: Block,
}

/// Measured seek curve: (distance in cylinders, time in ms), ascending distance.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SeekCurve {
    pub points: Vec<(u64, f64)>,
}

impl SeekCurve {
    /// Parse `Seek distances measured: N` followed by `dist, ms` lines.
    pub fn parse(text: &str, file: &str) -> Result<Self, DiskSimError> {
        let err =
            |line: usize, msg: String| DiskSimError::Syntax { file: file.to_string(), line, msg };
        let mut points = Vec::new();
        let mut expected = None;
        for (ln, l) in text.lines().enumerate() {
            let l = l.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            if let Some(n) = l.strip_prefix("Seek distances measured:") {
                expected = Some(n.trim().parse::<usize>().map_err(|_| {
                    err(ln + 1, "bad count after `Seek distances measured:`".into())
                })?);
                continue;
            }
            let mut it = l.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty());
            let (Some(d), Some(t), None) = (it.next(), it.next(), it.next()) else {
                return Err(err(ln + 1, format!("expected `distance, ms`, got `{l}`")));
            };
            let d =
                d.parse::<u64>().map_err(|_| err(ln + 1, format!("bad seek distance `{d}`")))?;
            let t = t
                .parse::<f64>()
                .ok()
                .filter(|t| t.is_finite() && *t >= 0.0)
                .ok_or_else(|| err(ln + 1, format!("bad seek time `{t}`")))?;
            if points.last().is_some_and(|p: &(u64, f64)| p.0 >= d) {
                return Err(err(ln + 1, "seek distances must increase".into()));
            }
            points.push((d, t));
        }
        if let Some(n) = expected {
            if n != points.len() {
                return Err(err(1, format!("header says {n} distances, found {}", points.len())));
            }
        }
        if points.is_empty() {
            return Err(err(1, "no seek points".into()));
        }
        Ok(SeekCurve { points })
    }

    /// Linear interpolation between measured points, proportional below the first point,
    /// flat beyond the last; 0 for distance 0. (A convenience: the HDD model decides how
    /// DiskSim's "extracted" seek type uses the table.)
    pub fn seek_ms(&self, distance: u64) -> f64 {
        if distance == 0 || self.points.is_empty() {
            return 0.0;
        }
        let p = &self.points;
        match p.binary_search_by(|q| q.0.cmp(&distance)) {
            Ok(i) => p[i].1,
            Err(0) => p[0].1 * distance as f64 / p[0].0.max(1) as f64,
            Err(i) if i >= p.len() => p[p.len() - 1].1,
            Err(i) => {
                let (d0, t0) = p[i - 1];
                let (d1, t1) = p[i];
                t0 + (t1 - t0) * (distance - d0) as f64 / (d1 - d0) as f64
            }
        }
    }
}

fn load_zone(z: &Block) -> Result<Zone, DiskSimError> {
    let first_cylinder = req_bounded(z, "First cylinder number")?;
    let last_cylinder = req_bounded(z, "Last cylinder number")?;
    if last_cylinder < first_cylinder {
        return Err(bad(
            z.get("Last cylinder number").expect("present"),
            "Last cylinder number",
            "smaller than First cylinder number",
        ));
    }
    let defects_flat = int_list(z, "defects")?;
    if defects_flat.len() % 2 != 0 {
        return Err(bad(
            z.get("defects").expect("present"),
            "defects",
            "needs (defect, remap) pairs",
        ));
    }
    Ok(Zone {
        first_cylinder,
        last_cylinder,
        blocks_per_track: req_pos(z, "Blocks per track")?,
        first_block_offset_sectors: req_f64(z, "Offset of first block")?,
        empty_space_front_sectors: req_bounded(z, "Empty space at zone front")?,
        track_skew_sectors: req_f64(z, "Skew for track switch")?,
        cylinder_skew_sectors: req_f64(z, "Skew for cylinder switch")?,
        spares: req_bounded(z, "Number of spares")?,
        slips: {
            let mut v = int_list(z, "slips")?;
            v.sort_unstable();
            v
        },
        defects: defects_flat.chunks(2).map(|c| (c[0], c[1])).collect(),
        blocks_in_zone: 0,
        first_lbn: 0,
        line: z.line,
    })
}

impl DiskModel {
    /// Build from a `dm_disk` block.
    pub fn from_block(b: &Block) -> Result<Self, DiskSimError> {
        let surfaces = req_pos(b, "Number of data surfaces")?;
        let cylinders = req_pos(b, "Number of cylinders")?;
        let block_count = req_bounded(b, "Block count")?;
        let lb = req_block(b, "Layout Model")?;
        let mapping_scheme = req_i64(lb, "LBN-to-PBN mapping scheme")?;
        if !(0..=2).contains(&mapping_scheme) {
            return Err(bad(
                lb.get("LBN-to-PBN mapping scheme").expect("present"),
                "LBN-to-PBN mapping scheme",
                "only 0 (normal), 1, 2 (cylinder switch on surface) are supported",
            ));
        }
        let sparing_code = req_i64(lb, "Sparing scheme used")?;
        let sparing = SparingScheme::from_code(sparing_code).ok_or_else(|| {
            bad(
                lb.get("Sparing scheme used").expect("present"),
                "Sparing scheme used",
                "unknown sparing scheme (0..=10)",
            )
        })?;
        let range_size_cylinders =
            opt_i64(lb, "Rangesize for sparing")?.unwrap_or(1).clamp(0, 1 << 32) as u64;
        if sparing == SparingScheme::SectorsPerRange && range_size_cylinders == 0 {
            return Err(bad(
                lb.get("Rangesize for sparing")
                    .ok_or_else(|| missing(lb, "Rangesize for sparing"))?,
                "Rangesize for sparing",
                "must be > 0 for sparing scheme 8",
            ));
        }
        let zl = lb.get("Zones").ok_or_else(|| missing(lb, "Zones"))?;
        let zlist = zl.value.as_list().ok_or_else(|| bad(zl, "Zones", "expected a list"))?;
        let mut zones = Vec::new();
        for z in zlist {
            let zb = z
                .value
                .as_block()
                .ok_or_else(|| bad(z, "Zones", "entries must be dm_layout_g1_zone blocks"))?;
            zones.push(load_zone(zb)?);
        }
        if zones.is_empty() {
            return Err(bad(zl, "Zones", "no zones"));
        }
        let mut next_lbn = 0u64;
        for z in zones.iter_mut() {
            // layout_g1_load.c: dm_layout_g1_compute_blksinband
            let cyls = z.cylinders() as i128;
            let bpt = z.blocks_per_track as i128;
            let surf = surfaces as i128;
            let spares = z.spares as i128;
            let slips = z.slips.len() as i128;
            if cyls * bpt * surf * range_size_cylinders.max(1) as i128 > GEOMETRY_LIMIT as i128 {
                return Err(DiskSimError::BadValue {
                    file: lb.file.to_string(),
                    line: z.line,
                    key: "Blocks per track".into(),
                    msg: "zone geometry implausibly large".into(),
                });
            }
            let mut n = cyls * bpt * surf - z.empty_space_front_sectors as i128;
            use SparingScheme::*;
            n -= match sparing {
                None => 0,
                Track => spares * bpt,
                SectorsPerTrack => spares * cyls * surf,
                SectorsAtEnd => slips,
                SectorsPerZone => spares,
                SectorsPerZoneSlipToEnd => spares + slips,
                SectorsPerCylinder | SectorsPerCylinderAtFront => spares * cyls,
                SectorsPerCylinderSlipToEnd | SectorsPerCylinderAtFrontSlipToEnd => {
                    spares * cyls + slips
                }
                SectorsPerRange => spares * (cyls / range_size_cylinders as i128),
            };
            if n < 0 {
                return Err(DiskSimError::BadValue {
                    file: lb.file.to_string(),
                    line: z.line,
                    key: "Number of spares".into(),
                    msg: "spares and empty space exceed the zone".into(),
                });
            }
            // DiskSim asserts this of track sparing (`layout_g1_load.c:454`).
            if sparing == Track && (z.slips.len() + z.defects.len()) as u64 > z.spares {
                return Err(DiskSimError::BadValue {
                    file: lb.file.to_string(),
                    line: z.line,
                    key: "Number of spares".into(),
                    msg: format!(
                        "{} slips and {} defects outnumber the {} spare tracks",
                        z.slips.len(),
                        z.defects.len(),
                        z.spares
                    ),
                });
            }
            z.blocks_in_zone = n as u64;
            z.first_lbn = next_lbn;
            next_lbn += n as u64;
        }
        let mb = req_block(b, "Mechanical Model")?;
        let first_ten = match mb.get("First ten seek times") {
            Some(v) => v
                .value
                .as_list()
                .ok_or_else(|| bad(v, "First ten seek times", "expected a list"))?
                .iter()
                .map(|e| {
                    e.value
                        .as_f64()
                        .ok_or_else(|| bad(e, "First ten seek times", "expected numbers"))
                })
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        let rpm = req_f64(mb, "Rotation speed (in rpms)")?;
        if rpm <= 0.0 {
            return Err(bad(
                mb.get("Rotation speed (in rpms)").expect("present"),
                "Rotation speed (in rpms)",
                "must be > 0",
            ));
        }
        let mech = MechModel {
            access_time_type: opt_str(mb, "Access time type"),
            seek_type: opt_str(mb, "Seek type"),
            single_cylinder_seek_ms: opt_f64(mb, "Single cylinder seek time")?,
            full_seek_curve: opt_str(mb, "Full seek curve"),
            full_strobe_seek_ms: opt_f64(mb, "Full strobe seek time")?,
            average_seek_ms: opt_f64(mb, "Average seek time")?,
            add_write_settling_ms: opt_f64(mb, "Add. write settling delay")?.unwrap_or(0.0),
            head_switch_ms: req_f64(mb, "Head switch time")?,
            rpm,
            rpm_error_percent: opt_f64(mb, "Percent error in rpms")?.unwrap_or(0.0),
            first_ten_seeks_ms: first_ten,
            raw: mb.clone(),
        };
        let model = DiskModel {
            name: b.name.clone().unwrap_or_default(),
            surfaces,
            cylinders,
            block_count,
            layout: Layout { mapping_scheme, sparing, sparing_code, range_size_cylinders, zones },
            mech,
            raw: b.clone(),
        };
        model.check_cylinders(lb)?;
        Ok(model)
    }

    /// A zone may reach past "Number of cylinders" (hp_c2490a's last zone ends on cylinder
    /// 2629 of 2629): DiskSim does not check zones against it when loading and only asserts
    /// `p->cyl < d->dm_cyls` when it maps a block there (`layout_g1.c:495`). Spare tracks may
    /// lie there, never a block: the last block of each zone, and each defect's spare, must
    /// lie on a cylinder below the count.
    fn check_cylinders(&self, lb: &Block) -> Result<(), DiskSimError> {
        let beyond = |z: &Zone, what: &str| DiskSimError::BadValue {
            file: lb.file.to_string(),
            line: z.line,
            key: "Last cylinder number".into(),
            msg: format!("{what} lies beyond Number of cylinders ({})", self.cylinders),
        };
        for z in &self.layout.zones {
            if z.blocks_in_zone == 0 {
                continue;
            }
            let last = self.lbn_to_pbn(z.first_lbn + z.blocks_in_zone - 1);
            if !matches!(last, Some(p) if p.cylinder < self.cylinders) {
                return Err(beyond(z, "the zone's last block"));
            }
            let per_unit = match self.layout.sparing {
                SparingScheme::Track => self.surfaces,
                _ => self.surfaces * z.blocks_per_track,
            };
            if z.defects.iter().any(|&(_, to)| z.first_cylinder + to / per_unit >= self.cylinders) {
                return Err(beyond(z, "a defect's spare"));
            }
            // A spare is a sector (track) of the defect's own zone.
            let units = z.cylinders() * per_unit;
            if let Some(&(from, to)) = z.defects.iter().find(|d| d.1 >= units) {
                return Err(DiskSimError::BadValue {
                    file: lb.file.to_string(),
                    line: z.line,
                    key: "defects".into(),
                    msg: format!("defect {from}'s spare {to} lies beyond its zone ({units})"),
                });
            }
        }
        Ok(())
    }

    /// Sum of LBNs over zones (DiskSim replaces "Block count" with this).
    pub fn mapped_blocks(&self) -> u64 {
        self.layout.zones.iter().map(|z| z.blocks_in_zone).sum()
    }

    /// DiskSim's LBN→PBN translation (`layout_g1.c: g1_ltop_*`, MAP_FULL: slips and
    /// defect remaps applied), plus the angle of the track's first sector and of the
    /// sector itself (`g1_map_pbn_skew`). `None` if `lbn` is beyond the last zone.
    /// Written straight from DiskSim as a reference: the HDD model maps with its own geometry,
    /// and a test checks the two agree on both validation drives.
    pub fn lbn_to_pbn(&self, lbn: u64) -> Option<Pbn> {
        let l = &self.layout;
        let zi = l
            .zones
            .iter()
            .position(|z| lbn >= z.first_lbn && lbn < z.first_lbn + z.blocks_in_zone)?;
        let z = &l.zones[zi];
        let surf = self.surfaces;
        let bpt = z.blocks_per_track;
        let bpc = bpt * surf;
        let mut rel = lbn - z.first_lbn + z.empty_space_front_sectors;
        use SparingScheme::*;
        // (cylinder within zone, head, sector, remapped)
        let (cyl, head, sector, remapped) = match l.sparing {
            None => (rel / bpc, (rel / bpt) % surf, rel % bpt, false),
            Track => {
                // g1_ltop_trackspare
                let mut trackno = rel / bpt;
                for &s in &z.slips {
                    if s <= trackno {
                        trackno += 1;
                    }
                }
                let mut remapped = false;
                if let Some(&(_, r)) = z.defects.iter().find(|d| d.0 == trackno) {
                    trackno = r;
                    remapped = true;
                }
                (trackno / surf, trackno % surf, rel % bpt, remapped)
            }
            SectorsPerTrack => {
                // g1_ltop_sectpertrackspare
                let per = bpt.saturating_sub(z.spares).max(1);
                let mut trackno = rel / per;
                let mut off = rel % per;
                let mut first = bpt * trackno;
                for &s in &z.slips {
                    if s >= first && s - first <= off {
                        off += 1;
                    }
                }
                let mut remapped = false;
                for &(d, r) in &z.defects {
                    if d == first + off {
                        remapped = true;
                        trackno = r / bpt;
                        first = bpt * trackno;
                        off = r % bpt;
                    }
                }
                let _ = first;
                if off >= bpt {
                    return Option::None;
                }
                (trackno / surf, trackno % surf, off, remapped)
            }
            SectorsPerCylinder
            | SectorsPerCylinderSlipToEnd
            | SectorsPerCylinderAtFront
            | SectorsPerCylinderAtFrontSlipToEnd
            | SectorsAtEnd => {
                // g1_ltop_sectpercylspare
                let spares = if l.sparing == SectorsAtEnd { 0 } else { z.spares };
                let per = bpc.saturating_sub(spares).max(1);
                let mut c = rel / per;
                let mut off = rel % per;
                let first = c * bpc;
                let mut slips = 0;
                for &s in &z.slips {
                    if (l.sparing.is_slip_to_end() && s / bpc < c)
                        || (s >= first && s - first <= off + slips)
                    {
                        slips += 1;
                    }
                }
                off += slips;
                let mut remapped = false;
                if let Some(&(_, r)) = z.defects.iter().find(|d| d.0 == first + off && d.1 != d.0) {
                    remapped = true;
                    c = r / bpc;
                    off = r % bpc;
                } else {
                    c += off / per;
                    off %= per;
                }
                (c, off / bpt, off % bpt, remapped)
            }
            SectorsPerRange => {
                // g1_ltop_sectperrangespare
                let bpr = bpc * l.range_size_cylinders;
                let per = bpr.saturating_sub(z.spares).max(1);
                let range = rel / per;
                let mut off = rel % per;
                let first = range * bpr;
                let mut slips = 0;
                for &s in &z.slips {
                    if s >= first && s - first <= off + slips {
                        slips += 1;
                    }
                }
                off += slips;
                let mut remapped = false;
                if let Some(&(_, r)) = z.defects.iter().find(|d| d.0 == first + off && d.1 != d.0) {
                    remapped = true;
                    off = r % bpr;
                }
                (range * l.range_size_cylinders + off / bpc, (off % bpc) / bpt, off % bpt, remapped)
            }
            SectorsPerZone | SectorsPerZoneSlipToEnd => {
                // g1_ltop_sectperzonespare
                let mut slips = 0;
                for &s in &z.slips {
                    if s <= rel + slips {
                        slips += 1;
                    }
                }
                rel += slips;
                let mut remapped = false;
                if let Some(&(_, r)) = z.defects.iter().find(|d| d.0 == rel && d.1 != d.0) {
                    remapped = true;
                    rel = r;
                }
                (rel / bpc, (rel % bpc) / bpt, rel % bpt, remapped)
            }
        };
        let cylinder = z.first_cylinder + cyl;
        // g1_surfno_on_cyl
        let surface = match l.mapping_scheme {
            1 if cyl % 2 == 1 => surf - head - 1,
            2 if cylinder % 2 == 1 => surf - head - 1,
            _ => head,
        };
        // g1_map_pbn_skew: angle (in sectors) of the track's first sector. DiskSim uses the
        // logical head order (before surface flipping) for the track-switch count.
        let track_switches = head + (surf - 1) * cyl;
        let mut skew = z.first_block_offset_sectors
            + track_switches as f64 * z.track_skew_sectors
            + cyl as f64 * z.cylinder_skew_sectors;
        if l.sparing.is_sect_per_cyl() || l.sparing == SectorsPerTrack {
            let mut tracks = cyl * surf;
            if l.sparing == SectorsPerTrack {
                tracks += head;
            }
            let cutoff = tracks * bpt;
            skew += z.slips.iter().filter(|&&s| s < cutoff).count() as f64;
        }
        let first = (skew / bpt as f64).rem_euclid(1.0);
        let angle = ((skew + sector as f64) / bpt as f64).rem_euclid(1.0);
        Some(Pbn { cylinder, surface, sector, zone: zi, track_start_angle: first, angle, remapped })
    }
}

/// Physical block: cylinder, surface (head), sector on the track, plus angles in
/// revolutions [0, 1) measured from the index mark.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pbn {
    pub cylinder: u64,
    pub surface: u64,
    pub sector: u64,
    pub zone: usize,
    /// Angle of physical sector 0 of this track (skews and slips applied).
    pub track_start_angle: f64,
    /// Angle of the start of this sector.
    pub angle: f64,
    /// The LBN was remapped to a spare because of a listed defect.
    pub remapped: bool,
}

// ---------------------------------------------------------------- bus / ctlr

/// `disksim_bus` block.
#[derive(Debug, Clone, PartialEq)]
pub struct BusSpec {
    pub name: String,
    pub bus_type: Option<i64>,
    pub arbitration_type: Option<i64>,
    pub arbitration_time_ms: Option<f64>,
    pub read_block_transfer_ms: Option<f64>,
    pub write_block_transfer_ms: Option<f64>,
}

/// `disksim_ctlr` block.
#[derive(Debug, Clone, PartialEq)]
pub struct CtlrSpec {
    pub name: String,
    pub ctlr_type: Option<i64>,
    pub scale_for_delays: Option<f64>,
    pub bulk_sector_transfer_ms: Option<f64>,
    pub max_queue_len: Option<i64>,
}

// ---------------------------------------------------------------- drive

/// Everything in a DiskSim validation drive directory.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskSimDrive {
    pub dir: PathBuf,
    pub parv_path: PathBuf,
    /// Whole `.parv` tree (includes expanded).
    pub parv: ParamFile,
    pub disk: DiskSpec,
    pub model: DiskModel,
    pub seek_curve: Option<SeekCurve>,
    pub buses: Vec<BusSpec>,
    pub controllers: Vec<CtlrSpec>,
    /// iodriver "Constant access time" (ms; 0 = simulate).
    pub iodriver_constant_access_ms: Option<f64>,
    pub statdefs: Option<StatDefs>,
    pub trace_path: Option<PathBuf>,
}

/// The most entries a directory of drives is read to (a drive directory holds a few files;
/// DiskSim's `valid/` about a hundred).
pub const MAX_DRIVE_DIR_ENTRIES: usize = 100_000;

/// The entries of `dir`, by name; more than `max_entries` is an error.
fn entries_within(dir: &Path, max_entries: usize) -> Result<Vec<PathBuf>, DiskSimError> {
    let rd = std::fs::read_dir(dir)
        .map_err(|e| DiskSimError::Io { path: dir.to_path_buf(), source: e })?;
    let mut found = Vec::new();
    for (i, entry) in rd.enumerate() {
        if i == max_entries {
            return Err(DiskSimError::MissingFile {
                dir: dir.to_path_buf(),
                msg: format!(
                    "more than {max_entries} entries (MAX_DRIVE_DIR_ENTRIES): not a directory \
                     of DiskSim drives"
                ),
            });
        }
        let Ok(entry) = entry else { continue };
        found.push(entry.path());
    }
    found.sort();
    Ok(found)
}

/// Whether `path` is a file ending in `.ext`.
fn has_ext(path: &Path, ext: &str) -> bool {
    path.is_file() && path.extension().and_then(|e| e.to_str()) == Some(ext)
}

/// The files in `dir` ending in `.ext`, by name, among its first [`MAX_DRIVE_DIR_ENTRIES`]
/// entries (more is an error).
fn files_with_ext(dir: &Path, ext: &str) -> Result<Vec<PathBuf>, DiskSimError> {
    files_with_ext_within(dir, ext, MAX_DRIVE_DIR_ENTRIES)
}

fn files_with_ext_within(
    dir: &Path,
    ext: &str,
    max_entries: usize,
) -> Result<Vec<PathBuf>, DiskSimError> {
    let mut found = entries_within(dir, max_entries)?;
    found.retain(|p| has_ext(p, ext));
    Ok(found)
}

/// A drive's own trace: `NAME.trace` beside `NAME.parv`, as DiskSim's `valid/` names them.
fn own_trace(parv: &Path) -> PathBuf {
    parv.with_extension("trace")
}

/// Whether `parv` has its own trace, in DiskSim's validation format.
fn has_validation_trace(parv: &Path) -> bool {
    crate::trace::is_validation_trace(&own_trace(parv))
}

/// The drives under `dir`, by name: its subdirectories holding one `.parv` file, and the
/// `NAME.parv` files that have a `NAME.trace` in DiskSim's validation format beside them, in
/// `dir` or in a subdirectory holding several (the layout of DiskSim 4.0's `valid/`, where the
/// other `.parv` files drive synthetic or ASCII workloads). Each is a path [`load_drive`]
/// takes.
pub fn drives_under(dir: &Path) -> Result<Vec<PathBuf>, DiskSimError> {
    let mut out = Vec::new();
    for path in entries_within(dir, MAX_DRIVE_DIR_ENTRIES)? {
        if path.is_dir() {
            let parvs = files_with_ext(&path, "parv")?;
            match parvs.len() {
                0 => {}
                1 => out.push(path),
                _ => out.extend(parvs.into_iter().filter(|p| has_validation_trace(p))),
            }
        } else if has_ext(&path, "parv") && has_validation_trace(&path) {
            out.push(path);
        }
    }
    out.sort_by_key(|p| p.file_stem().map(|s| s.to_os_string()));
    if out.is_empty() {
        return Err(DiskSimError::MissingFile {
            dir: dir.to_path_buf(),
            msg: "no drives (subdirectories with a .parv, or NAME.parv beside a validation \
                  NAME.trace)"
                .into(),
        });
    }
    Ok(out)
}

/// At most this many names in an error listing a directory's candidates.
const MAX_NAMES_LISTED: usize = 6;

/// `paths`' file names, comma-separated, the first [`MAX_NAMES_LISTED`] of them.
fn names(paths: &[PathBuf]) -> String {
    let mut s: Vec<String> = paths
        .iter()
        .take(MAX_NAMES_LISTED)
        .map(|p| p.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned()))
        .collect();
    if paths.len() > MAX_NAMES_LISTED {
        s.push(format!("and {} more", paths.len() - MAX_NAMES_LISTED));
    }
    s.join(", ")
}

/// Where a drive is: its directory and `.parv` file. `path` is a `.parv` file (as DiskSim
/// takes it: `disksim NAME.parv ...`, beside the files it sources), or a directory holding
/// exactly one.
pub fn locate_drive(path: &Path) -> Result<(PathBuf, PathBuf), DiskSimError> {
    if path.is_file() {
        if !has_ext(path, "parv") {
            return Err(DiskSimError::MissingFile {
                dir: path.to_path_buf(),
                msg: "not a .parv file or a drive directory".into(),
            });
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        return Ok((dir, path.to_path_buf()));
    }
    let parvs = files_with_ext(path, "parv")?;
    match parvs.len() {
        0 => {
            Err(DiskSimError::MissingFile { dir: path.to_path_buf(), msg: "no .parv file".into() })
        }
        1 => Ok((path.to_path_buf(), parvs.into_iter().next().expect("one"))),
        n => Err(DiskSimError::MissingFile {
            dir: path.to_path_buf(),
            msg: format!(
                "{n} .parv files ({}): name the drive's own (DIR/NAME.parv)",
                names(&parvs)
            ),
        }),
    }
}

/// The validation trace of the drive `parv`: `NAME.trace` beside `NAME.parv` (DiskSim's
/// `valid/` names them so), else the directory's only `.trace` file.
fn drive_trace(dir: &Path, parv: &Path) -> Result<Option<PathBuf>, DiskSimError> {
    let own = own_trace(parv);
    if own.is_file() {
        return Ok(Some(own));
    }
    let traces = files_with_ext(dir, "trace")?;
    Ok(if traces.len() == 1 { traces.into_iter().next() } else { None })
}

/// Load a drive: the `.parv` (with its `source`d `.diskspecs` and `.model`), the seek
/// curve named by "Full seek curve", `statdefs` and the `.trace` path. `path` is the
/// `.parv` file or a directory holding only one ([`locate_drive`]).
pub fn load_drive(path: &Path) -> Result<DiskSimDrive, DiskSimError> {
    let (dir, parv_path) = locate_drive(path)?;
    let dir = dir.as_path();
    let parv = parse_file(&parv_path)?;
    // The instantiated disk, else the first disksim_disk block.
    let mut disk_name = None;
    for it in &parv.items {
        if let Item::Statement { words, list, trailing: Some(t), .. } = it {
            if words == "instantiate" {
                let target = t.trim_start_matches("as").trim();
                if !list.is_empty()
                    && parv.blocks_of("disksim_disk").any(|b| b.name.as_deref() == Some(target))
                {
                    disk_name = Some(target.to_string());
                }
            }
        }
    }
    let disk_block = match &disk_name {
        Some(n) => parv.block_named(n),
        None => parv.blocks_of("disksim_disk").next(),
    }
    .ok_or_else(|| DiskSimError::MissingFile {
        dir: parv_path.clone(),
        msg: "no disksim_disk block (elevator imports DiskSim's disk drives, not its simple \
              disks, MEMS or SSD devices)"
            .into(),
    })?;
    let disk = DiskSpec::from_block(disk_block)?;
    let model_block = req_block(disk_block, "Model")?;
    let model = DiskModel::from_block(model_block)?;
    let seek_curve = match &model.mech.full_seek_curve {
        Some(f) if !f.is_empty() => {
            let p = dir.join(f);
            let text = std::fs::read_to_string(&p)
                .map_err(|e| DiskSimError::Io { path: p.clone(), source: e })?;
            Some(SeekCurve::parse(&text, &p.display().to_string())?)
        }
        _ => None,
    };
    let buses = parv
        .blocks_of("disksim_bus")
        .map(|b| {
            Ok(BusSpec {
                name: b.name.clone().unwrap_or_default(),
                bus_type: opt_i64(b, "type")?,
                arbitration_type: opt_i64(b, "Arbitration type")?,
                arbitration_time_ms: opt_f64(b, "Arbitration time")?,
                read_block_transfer_ms: opt_f64(b, "Read block transfer time")?,
                write_block_transfer_ms: opt_f64(b, "Write block transfer time")?,
            })
        })
        .collect::<Result<Vec<_>, DiskSimError>>()?;
    let controllers = parv
        .blocks_of("disksim_ctlr")
        .map(|b| {
            Ok(CtlrSpec {
                name: b.name.clone().unwrap_or_default(),
                ctlr_type: opt_i64(b, "type")?,
                scale_for_delays: opt_f64(b, "Scale for delays")?,
                bulk_sector_transfer_ms: opt_f64(b, "Bulk sector transfer time")?,
                max_queue_len: opt_i64(b, "Maximum queue length")?,
            })
        })
        .collect::<Result<Vec<_>, DiskSimError>>()?;
    let iodriver_constant_access_ms = match parv.blocks_of("disksim_iodriver").next() {
        Some(b) => opt_f64(b, "Constant access time")?,
        None => None,
    };
    let statdefs_name = parv
        .blocks_of("disksim_global")
        .next()
        .and_then(|g| opt_str(g, "Stat definition file"))
        .unwrap_or_else(|| "statdefs".into());
    let sp = dir.join(&statdefs_name);
    let statdefs = if sp.exists() { Some(StatDefs::load(&sp)?) } else { None };
    let trace_path = drive_trace(dir, &parv_path)?;
    Ok(DiskSimDrive {
        dir: dir.to_path_buf(),
        parv_path,
        parv,
        disk,
        model,
        seek_curve,
        buses,
        controllers,
        iodriver_constant_access_ms,
        statdefs,
        trace_path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_listed_up_to_the_limit() {
        let dir = std::env::temp_dir().join(format!("elevator-ds-limit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["a.parv", "b.trace", "c.trace"] {
            std::fs::write(dir.join(name), "").unwrap();
        }
        assert_eq!(files_with_ext_within(&dir, "trace", 3).unwrap().len(), 2);
        let e = files_with_ext_within(&dir, "trace", 2).unwrap_err().to_string();
        assert!(e.contains("more than 2 entries"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
