//! Geometry: zoned recording and the LBN → (cylinder, head, sector) map, as DiskSim's
//! `.model` zone tables describe it. The zone table is computed once; mapping is a binary
//! search over zones.
//!
//! By default every sector of a zone's tracks holds data. A layout may also say where the
//! drive keeps its spare sectors and which sectors it slipped (defects found at format
//! time), in any of DiskSim's sparing schemes (`diskmodel/layout_g1.c`), defects found later
//! and remapped to a spare sector (a spare track, for track sparing), plus an offset of each
//! zone's first block, empty space at a zone's front and the order in which surfaces follow
//! each other across cylinders. Those layouts take a slower map (the slips are searched;
//! the blocks that defects displace are found once, when the geometry is built).

use serde::{Deserialize, Serialize};

/// One recording zone as a parameter file gives it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneSpec {
    pub first_cylinder: u64,
    pub last_cylinder: u64,
    pub sectors_per_track: u64,
    /// Logical offset of each track's first sector relative to the previous track (same
    /// cylinder), in sectors: hides the head-switch time during sequential transfers.
    #[serde(default)]
    pub track_skew_sectors: u64,
    /// The same for the first track of the next cylinder: hides the one-cylinder seek.
    #[serde(default)]
    pub cylinder_skew_sectors: u64,
    /// Spare sectors (or tracks, for track sparing) per sparing unit of the layout's
    /// [`Sparing`] scheme (DiskSim "Number of spares").
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spares: u64,
    /// Slipped sectors (tracks, for track sparing), numbered from the zone's first
    /// physical sector, ascending (a sector may repeat: each entry slips one more block).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slips: Vec<u64>,
    /// Defective sectors (tracks, for track sparing) and the spare each is remapped to,
    /// numbered as `slips` are (DiskSim "defects" pairs). The block that would sit on a
    /// defect sits on its spare instead; a defect remapped to itself changes nothing, and
    /// without sparing ([`Sparing::None`]) defects are not looked at, as in DiskSim.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub defects: Vec<(u64, u64)>,
    /// Unused sectors at the zone's front (DiskSim "Empty space at zone front").
    #[serde(default, skip_serializing_if = "is_zero")]
    pub empty_front_sectors: u64,
    /// Angle of the zone's first block, in sectors (DiskSim "Offset of first block").
    #[serde(default, skip_serializing_if = "is_zero")]
    pub first_block_offset_sectors: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Where a zone keeps its spare sectors: DiskSim's "Sparing scheme used" (`layout_g1`).
/// Slips push logical blocks forward within the scheme's sparing unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "snake_case")]
pub enum Sparing {
    /// No spares (0).
    #[default]
    None,
    /// `spares` whole tracks at the zone's end; slips are track numbers (1).
    Track,
    /// `spares` sectors at the end of every cylinder (2).
    SectorsPerCylinder,
    /// `spares` sectors at the end of every track (3).
    SectorsPerTrack,
    /// Per cylinder, slips pushed to the zone's end (4).
    SectorsPerCylinderSlipToEnd,
    /// Per cylinder, at the cylinder's front (5); mapped like 2, as DiskSim does.
    SectorsPerCylinderAtFront,
    /// 5 with slips pushed to the zone's end (6).
    SectorsPerCylinderAtFrontSlipToEnd,
    /// No spares; slips consume sectors at the zone's end (7).
    SectorsAtEnd,
    /// `spares` sectors at the end of every range of `cylinders` cylinders (8).
    SectorsPerRange { cylinders: u64 },
    /// `spares` sectors at the zone's end (9).
    SectorsPerZone,
    /// 9 with slips also pushed to the zone's end (10).
    SectorsPerZoneSlipToEnd,
}

impl Sparing {
    fn is_sect_per_cyl(self) -> bool {
        use Sparing::*;
        matches!(
            self,
            SectorsPerCylinder
                | SectorsPerCylinderSlipToEnd
                | SectorsPerCylinderAtFront
                | SectorsPerCylinderAtFrontSlipToEnd
        )
    }
    /// DiskSim's `issliptoend` (`layout_g1.h`): slips of earlier cylinders push a
    /// cylinder's blocks on. It names the per-cylinder schemes 4 and 6 and also 7 (slips at
    /// the zone's end); scheme 10's slips are counted over the whole zone anyway.
    fn is_slip_to_end(self) -> bool {
        use Sparing::*;
        matches!(
            self,
            SectorsPerCylinderSlipToEnd | SectorsPerCylinderAtFrontSlipToEnd | SectorsAtEnd
        )
    }
}

/// Which surface follows which across a cylinder switch (DiskSim "LBN-to-PBN mapping
/// scheme"): every cylinder from head 0 up, or serpentine (odd cylinders from the last head
/// down), counted within the zone or over the whole disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SurfaceOrder {
    #[default]
    Ascending,
    SerpentineInZone,
    Serpentine,
}

impl ZoneSpec {
    /// A zone without skews, spares or slips.
    pub fn plain(first_cylinder: u64, last_cylinder: u64, sectors_per_track: u64) -> ZoneSpec {
        ZoneSpec {
            first_cylinder,
            last_cylinder,
            sectors_per_track,
            track_skew_sectors: 0,
            cylinder_skew_sectors: 0,
            spares: 0,
            slips: Vec::new(),
            defects: Vec::new(),
            empty_front_sectors: 0,
            first_block_offset_sectors: 0,
        }
    }

    /// `zones` zones of equal cylinder count over `cylinders`, sectors per track falling
    /// linearly from `outer_spt` to `inner_spt`; skews cover `track_switch_ns` and
    /// `cylinder_switch_ns` at each zone's sector time for a rotation `period_ns`.
    pub fn linear(
        cylinders: u64,
        zones: u64,
        outer_spt: u64,
        inner_spt: u64,
        period_ns: f64,
        track_switch_ns: f64,
        cylinder_switch_ns: f64,
    ) -> Vec<ZoneSpec> {
        let per = cylinders.div_ceil(zones);
        (0..zones)
            .map(|z| {
                let spt = outer_spt as f64
                    + (inner_spt as f64 - outer_spt as f64) * z as f64 / (zones - 1).max(1) as f64;
                let spt = spt.round() as u64;
                let sector_ns = period_ns / spt as f64;
                ZoneSpec {
                    first_cylinder: z * per,
                    last_cylinder: ((z + 1) * per).min(cylinders) - 1,
                    sectors_per_track: spt,
                    track_skew_sectors: (track_switch_ns / sector_ns).ceil() as u64,
                    cylinder_skew_sectors: (cylinder_switch_ns / sector_ns).ceil() as u64,
                    spares: 0,
                    slips: Vec::new(),
                    defects: Vec::new(),
                    empty_front_sectors: 0,
                    first_block_offset_sectors: 0,
                }
            })
            .collect()
    }
}

/// A zone as the map uses it.
#[derive(Clone, Copy, Debug)]
pub struct Zone {
    pub first_lbn: u64,
    pub first_cylinder: u64,
    pub last_cylinder: u64,
    pub sectors_per_track: u64,
    pub track_skew_sectors: u64,
    pub cylinder_skew_sectors: u64,
    pub spares: u64,
    pub empty_front_sectors: u64,
    pub first_block_offset_sectors: u64,
    /// Logical blocks the zone holds.
    pub blocks: u64,
    /// `sectors_per_track`, a cylinder's sectors, the blocks a cylinder holds under
    /// per-cylinder sparing and a range's under per-range sparing, as divisors.
    div_track: Divisor,
    div_cylinder: Divisor,
    div_cylinder_blocks: Divisor,
    div_range_blocks: Divisor,
}

/// Division by one of a zone's constants as a multiply and a shift (Lemire, Kaser and
/// Kurz, "Faster remainder by direct computation", 2019: `M = ⌊(2^64 − 1) / d⌋ + 1`,
/// `a / d = ⌊M·a / 2^64⌋`, exact for every 32-bit `a` and `d`). The map divides several
/// times per block it places; a hardware division is the slowest instruction on that path.
/// Numbers of 2^32 or more (no real drive's zone has so many sectors) divide in hardware.
#[derive(Clone, Copy, Debug)]
struct Divisor {
    d: u64,
    /// `M`, or 0 where the multiply does not apply (`d` is 1 or past 32 bits).
    m: u64,
}

impl Divisor {
    fn new(d: u64) -> Divisor {
        let d = d.max(1);
        let m = if d > 1 && d >> 32 == 0 { u64::MAX / d + 1 } else { 0 };
        Divisor { d, m }
    }

    /// `(a / d, a % d)`.
    #[inline(always)]
    fn divmod(self, a: u64) -> (u64, u64) {
        if self.m != 0 && a >> 32 == 0 {
            let q = ((u128::from(self.m) * u128::from(a)) >> 64) as u64;
            (q, a - q * self.d)
        } else {
            divmod(a, self.d)
        }
    }
}

/// Where a sector is: `head` is the surface, `sector` the physical sector on the track.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chs {
    pub cylinder: u64,
    pub head: u64,
    pub sector: u64,
    pub zone: usize,
}

impl Chs {
    /// The place of a command whose place nothing asks (a queued command that DiskSim's
    /// controller serves in arrival order, one at a time).
    pub const UNPLACED: Chs = Chs { cylinder: 0, head: 0, sector: 0, zone: 0 };
}

/// `(a / b, a % b)`, in 32 bits when both fit (a 64-bit division costs several times more
/// on many x86 cores, and the map divides on every command).
#[inline(always)]
fn divmod(a: u64, b: u64) -> (u64, u64) {
    if (a | b) >> 32 == 0 {
        let (a, b) = (a as u32, b as u32);
        (u64::from(a / b), u64::from(a % b))
    } else {
        (a / b, a % b)
    }
}

/// The most recording surfaces a layout may have (drives have had at most a few dozen).
pub const MAX_SURFACES: u64 = 256;
/// The most cylinders (one past the last cylinder number; a 20 TB drive has about 500,000).
pub const MAX_CYLINDERS: u64 = 1 << 24;
/// The most sectors on one track (today's drives have a few thousand).
pub const MAX_SECTORS_PER_TRACK: u64 = 1 << 20;

/// Cylinders whose slip counts [`Geometry`] keeps, over all zones: past this the zones'
/// slips are searched (8 MiB of counts; real drives have tens of thousands of cylinders).
const MAX_SLIP_INDEX_CYLINDERS: u64 = 1 << 21;

/// A zone's slips (ascending) and, per zone cylinder, how many lie before its first sector:
/// counting the slips before a place is then a lookup and a search among one cylinder's
/// slips (usually none) instead of a search over the zone's.
#[derive(Clone, Debug)]
struct ZoneSlips {
    at: Vec<u64>,
    /// `before_cylinder[c]`, for every zone cylinder and one past the last; empty for slips
    /// numbered by track, and past [`MAX_SLIP_INDEX_CYLINDERS`].
    before_cylinder: Vec<u32>,
    /// The zone's sectors per cylinder: which cylinder a place is on.
    per_cylinder: Divisor,
}

impl ZoneSlips {
    fn new(at: Vec<u64>, cylinders: u64, per_cylinder: Divisor, index: bool) -> ZoneSlips {
        let mut before_cylinder = Vec::new();
        if index && !at.is_empty() && u32::try_from(at.len()).is_ok() {
            let mut n = 0;
            before_cylinder.reserve_exact(cylinders as usize + 1);
            for c in 0..=cylinders {
                while n < at.len() && at[n] < c * per_cylinder.d {
                    n += 1;
                }
                before_cylinder.push(n as u32);
            }
        }
        ZoneSlips { at, before_cylinder, per_cylinder }
    }

    /// How many slips lie before sector `place` (zone-relative).
    #[inline]
    fn count_before(&self, place: u64) -> usize {
        if self.at.is_empty() {
            return 0;
        }
        let c = self.per_cylinder.divmod(place).0 as usize;
        match (self.before_cylinder.get(c), self.before_cylinder.get(c + 1)) {
            (Some(&lo), Some(&hi)) => {
                let (lo, hi) = (lo as usize, hi as usize);
                lo + self.at[lo..hi].partition_point(|&s| s < place)
            }
            _ => self.at.partition_point(|&s| s < place),
        }
    }

    /// [`slipped_past`] over the slips from the `from`-th on, all of whose predecessors lie
    /// before `place`.
    #[inline]
    fn slipped_past(&self, from: usize, place: u64) -> u64 {
        let rest = &self.at[from..];
        if rest.is_empty() {
            return 0;
        }
        let mut n = self.count_before(place + 1) - from;
        while n < rest.len() && rest[n] <= place + n as u64 {
            n += 1;
        }
        n as u64
    }
}

/// The zone table.
#[derive(Clone, Debug)]
pub struct Geometry {
    pub zones: Vec<Zone>,
    pub heads: u64,
    pub total_sectors: u64,
    pub cylinders: u64,
    pub sparing: Sparing,
    pub surface_order: SurfaceOrder,
    /// Per zone, its first block: the zone search reads these, not the zones.
    zone_first_lbns: Vec<u64>,
    /// Per zone, its slips.
    slips: Vec<ZoneSlips>,
    /// Per zone, the blocks that defects displace, by zone-relative block, ascending.
    remaps: Vec<Vec<Remap>>,
    /// Spares, slips, offsets or a surface order: the map takes the full path.
    exact: bool,
    /// Per zone: its blocks' physical places strictly ascend with their numbers (see
    /// [`Geometry::run_next`]).
    ascending: Vec<bool>,
}

impl Geometry {
    pub fn new(specs: &[ZoneSpec], heads: u64) -> Result<Geometry, String> {
        Geometry::with_layout(specs, heads, Sparing::None, SurfaceOrder::Ascending)
    }

    /// A geometry whose zones keep spares as `sparing` says, with `order` across cylinders.
    pub fn with_layout(
        specs: &[ZoneSpec],
        heads: u64,
        sparing: Sparing,
        order: SurfaceOrder,
    ) -> Result<Geometry, String> {
        if specs.is_empty() || heads == 0 {
            return Err("geometry needs at least one zone and one head".into());
        }
        if heads > MAX_SURFACES {
            return Err(format!("surfaces = {heads} is past the limit of {MAX_SURFACES}"));
        }
        if let Sparing::SectorsPerRange { cylinders: 0 } = sparing {
            return Err("sectors_per_range sparing needs cylinders > 0".into());
        }
        let mut zones = Vec::with_capacity(specs.len());
        let mut slips = Vec::with_capacity(specs.len());
        let mut exact = sparing != Sparing::None || order != SurfaceOrder::Ascending;
        let mut lbn = 0;
        let mut next_cyl = specs[0].first_cylinder;
        let mut indexed = 0;
        for s in specs {
            // Cylinders between zones (spare cylinders) hold no blocks.
            if s.first_cylinder < next_cyl || s.last_cylinder < s.first_cylinder {
                return Err(format!("zones must be ascending and not overlap at {s:?}"));
            }
            if s.sectors_per_track == 0 {
                return Err("sectors_per_track must be positive".into());
            }
            if s.sectors_per_track > MAX_SECTORS_PER_TRACK || s.last_cylinder >= MAX_CYLINDERS {
                return Err(format!(
                    "a zone's sectors_per_track (at most {MAX_SECTORS_PER_TRACK}) or \
                     last_cylinder (below {MAX_CYLINDERS}) is past its limit at {s:?}"
                ));
            }
            if s.slips.windows(2).any(|w| w[0] > w[1]) {
                return Err(format!("slips must be ascending at {s:?}"));
            }
            exact |= s.spares > 0
                || !s.slips.is_empty()
                || !s.defects.is_empty()
                || s.empty_front_sectors > 0
                || s.first_block_offset_sectors > 0;
            let blocks = zone_blocks(s, heads, sparing)?;
            let bpc = s.sectors_per_track * heads;
            let div_cylinder = Divisor::new(bpc);
            let spares = if sparing.is_sect_per_cyl() { s.spares } else { 0 };
            zones.push(Zone {
                div_track: Divisor::new(s.sectors_per_track),
                div_cylinder,
                div_cylinder_blocks: Divisor::new(bpc.saturating_sub(spares).max(1)),
                div_range_blocks: Divisor::new(match sparing {
                    Sparing::SectorsPerRange { cylinders } => {
                        (bpc * cylinders).saturating_sub(s.spares).max(1)
                    }
                    _ => 1,
                }),
                first_lbn: lbn,
                first_cylinder: s.first_cylinder,
                last_cylinder: s.last_cylinder,
                sectors_per_track: s.sectors_per_track,
                track_skew_sectors: s.track_skew_sectors,
                cylinder_skew_sectors: s.cylinder_skew_sectors,
                spares: s.spares,
                empty_front_sectors: s.empty_front_sectors,
                first_block_offset_sectors: s.first_block_offset_sectors,
                blocks,
            });
            let cylinders = s.last_cylinder - s.first_cylinder + 1;
            let index =
                sparing != Sparing::Track && indexed + cylinders <= MAX_SLIP_INDEX_CYLINDERS;
            if index && !s.slips.is_empty() {
                indexed += cylinders;
            }
            slips.push(ZoneSlips::new(s.slips.clone(), cylinders, div_cylinder, index));
            lbn += blocks;
            next_cyl = s.last_cylinder + 1;
        }
        if lbn == 0 {
            return Err("the layout holds no blocks".into());
        }
        let mut g = Geometry {
            ascending: vec![false; zones.len()],
            remaps: vec![Vec::new(); zones.len()],
            zone_first_lbns: zones.iter().map(|z| z.first_lbn).collect(),
            zones,
            heads,
            total_sectors: lbn,
            cylinders: next_cyl,
            sparing,
            surface_order: order,
            slips,
            exact,
        };
        for (zi, s) in specs.iter().enumerate() {
            g.remaps[zi] = g.find_remaps(zi, &s.defects)?;
            g.ascending[zi] = g.remaps[zi].is_empty() && g.slips_fit(s);
        }
        Ok(g)
    }

    /// The blocks of zone `zi` that `defects` displace (DiskSim's `g1_ltop_*` with
    /// `MAP_FULL`: the block whose slipped place is a defect goes to its spare). Sector
    /// schemes take the first matching defect that is not remapped to itself; track sparing
    /// takes the first match; per-track sparing the last, as DiskSim's loops do.
    fn find_remaps(&self, zi: usize, defects: &[(u64, u64)]) -> Result<Vec<Remap>, String> {
        let z = &self.zones[zi];
        let mut out: Vec<Remap> = Vec::new();
        if self.sparing == Sparing::None || defects.is_empty() || z.blocks == 0 {
            return Ok(out);
        }
        let bpt = z.sectors_per_track;
        let bpc = bpt * self.heads;
        let track = self.sparing == Sparing::Track;
        // The slipped place of block `rel`: its track, or its sector within the zone.
        let place = |rel: u64| {
            let (cyl, head, sector) = self.slip_map(zi, rel);
            if track {
                cyl * self.heads + head
            } else {
                cyl * bpc + head * bpt + sector
            }
        };
        let zone_sectors = (z.last_cylinder - z.first_cylinder + 1) * bpc;
        let limit = if track { zone_sectors / bpt } else { zone_sectors };
        let ordered: Vec<&(u64, u64)> = if self.sparing == Sparing::SectorsPerTrack {
            defects.iter().rev().collect()
        } else {
            defects.iter().collect()
        };
        for &&(from, to) in &ordered {
            if to >= limit {
                return Err(format!(
                    "defect {from} is remapped to {to}, beyond the zone's {limit} {}",
                    if track { "tracks" } else { "sectors" }
                ));
            }
            if from == to || out.iter().any(|r| r.from == from) {
                continue;
            }
            // Places grow with the block number: the blocks on `from` are a range.
            let lo = partition(z.blocks, |rel| place(rel) < from);
            let hi = partition(z.blocks, |rel| place(rel) <= from);
            if lo < hi {
                out.push(Remap { first: lo, len: hi - lo, from, to });
            }
        }
        out.sort_by_key(|r| r.first);
        Ok(out)
    }

    /// The zone of `lbn` (clamped to the disk), `hint` tried first.
    #[inline]
    pub fn zone_of(&self, lbn: u64, hint: usize) -> usize {
        let lbn = lbn.min(self.total_sectors - 1);
        let z = &self.zones[hint];
        if z.first_lbn <= lbn && lbn - z.first_lbn < z.blocks {
            hint
        } else {
            self.zone_first_lbns.partition_point(|&f| f <= lbn) - 1
        }
    }

    /// Maps a logical block number (clamped to the disk) to its physical place.
    #[inline]
    pub fn map(&self, lbn: u64) -> Chs {
        let lbn = lbn.min(self.total_sectors - 1);
        let zi = self.zone_first_lbns.partition_point(|&f| f <= lbn) - 1;
        self.map_in(zi, lbn)
    }

    /// [`Geometry::map`] of block `lbn` (on the disk), which lies in zone `zi`.
    #[inline]
    fn map_in(&self, zi: usize, lbn: u64) -> Chs {
        let z = &self.zones[zi];
        let within = lbn - z.first_lbn;
        if self.exact {
            return self.map_exact(zi, within);
        }
        let (track, sector) = divmod(within, z.sectors_per_track);
        let (cyl, head) = divmod(track, self.heads);
        Chs { cylinder: z.first_cylinder + cyl, head, sector, zone: zi }
    }

    /// Whether zone `s`'s slips leave every block on a sector of its own, later than the
    /// block before it (in the order of [`Geometry::place`]). Slips take a unit's spares
    /// (a track's, a range's); more slips than a unit has spares push blocks onto the next
    /// unit's (or clamp them to the track's last sector), and per-cylinder sparing moves
    /// a cylinder's blocks past its spares onto the next cylinder with any slip at all
    /// (as DiskSim's `g1_ltop` does), so those layouts, and zones with remapped defects,
    /// are not taken to ascend. Track and per-zone sparing shift every later block alike.
    fn slips_fit(&self, s: &ZoneSpec) -> bool {
        use Sparing::*;
        match self.sparing {
            None | Track | SectorsPerZone | SectorsPerZoneSlipToEnd => true,
            SectorsPerRange { .. } => s.slips.len() as u64 <= s.spares,
            SectorsPerTrack => {
                // The slips are ascending: each track's are one run of them.
                let spt = s.sectors_per_track;
                let most = s.slips.chunk_by(|a, b| a / spt == b / spt).map(<[u64]>::len).max();
                most.unwrap_or(0) as u64 <= s.spares
            }
            SectorsPerCylinder
            | SectorsPerCylinderSlipToEnd
            | SectorsPerCylinderAtFront
            | SectorsPerCylinderAtFrontSlipToEnd
            | SectorsAtEnd => s.slips.is_empty(),
        }
    }

    /// `c`'s sector counted from its zone's first (cylinder by cylinder, each in logical
    /// head order): the order blocks are laid out in.
    #[inline]
    fn place(&self, c: &Chs) -> u64 {
        let z = &self.zones[c.zone];
        let cyl = c.cylinder - z.first_cylinder;
        let head = self.surface(cyl, c.cylinder, c.head);
        (cyl * self.heads + head) * z.sectors_per_track + c.sector
    }

    /// [`Geometry::run`], and where the block right after the run lies when that came out
    /// on the way. In a zone whose blocks' places strictly ascend, block `lbn + k` lies
    /// `k` sectors on from `lbn` exactly when every block between does (each is at least one
    /// sector on from the one before), so mapping the block after a run of `k` settles the
    /// run: one map where [`Geometry::run`] takes one for the run's last block and the caller
    /// another for the next track's first. Anything else (a slip or spare in the way, the
    /// zone's end) takes [`Geometry::run`].
    #[inline]
    pub fn run_next(&self, lbn: u64, c: &Chs, left: u64) -> (u64, u64, Option<Chs>) {
        if self.exact && self.ascending[c.zone] {
            let z = &self.zones[c.zone];
            let k = (z.sectors_per_track - c.sector).min(left);
            if lbn + k < z.first_lbn + z.blocks {
                let d = self.map_in(c.zone, lbn + k);
                if self.place(&d) == self.place(c) + k {
                    return (k, k, Some(d));
                }
            }
        }
        let (n, span) = self.run(lbn, c, left);
        (n, span, None)
    }

    /// DiskSim's `g1_ltop_*` for the zone's `rel`-th block (slips and remapped defects
    /// applied).
    fn map_exact(&self, zi: usize, rel: u64) -> Chs {
        let z = &self.zones[zi];
        let (cyl, head, sector) = match self.remap_of(zi, rel) {
            None => self.slip_map(zi, rel),
            Some(r) => {
                let bpt = z.sectors_per_track;
                let bpc = bpt * self.heads;
                match self.sparing {
                    Sparing::Track => {
                        let sector = (rel + z.empty_front_sectors) % bpt;
                        (r.to / self.heads, r.to % self.heads, sector)
                    }
                    // DiskSim keeps the remapped block in its defect's range.
                    Sparing::SectorsPerRange { cylinders } => {
                        let bpr = bpc * cylinders;
                        let off = r.to % bpr;
                        ((r.from / bpr) * cylinders + off / bpc, (off % bpc) / bpt, off % bpt)
                    }
                    _ => (r.to / bpc, (r.to % bpc) / bpt, r.to % bpt),
                }
            }
        };
        Chs {
            cylinder: z.first_cylinder + cyl,
            head: self.surface(cyl, z.first_cylinder + cyl, head),
            sector,
            zone: zi,
        }
    }

    /// The defect remap that displaces block `rel` of zone `zi`, if any.
    #[inline]
    fn remap_of(&self, zi: usize, rel: u64) -> Option<&Remap> {
        let r = &self.remaps[zi];
        if r.is_empty() {
            return None;
        }
        let i = r.partition_point(|m| m.first <= rel);
        (i > 0 && rel < r[i - 1].first + r[i - 1].len).then(|| &r[i - 1])
    }

    /// The slipped place of block `rel` of zone `zi` (zone cylinder, logical head, sector),
    /// defects not applied.
    fn slip_map(&self, zi: usize, rel: u64) -> (u64, u64, u64) {
        let z = &self.zones[zi];
        let slips = &self.slips[zi];
        let surf = self.heads;
        let bpt = z.sectors_per_track;
        let bpc = bpt * surf;
        let mut rel = rel + z.empty_front_sectors;
        use Sparing::*;
        // (cylinder within the zone, logical head, sector)
        match self.sparing {
            None => (rel / bpc, (rel / bpt) % surf, rel % bpt),
            Track => {
                let track = rel / bpt;
                let track = track + slips.slipped_past(0, track);
                (track / surf, track % surf, rel % bpt)
            }
            SectorsPerTrack => {
                let per = bpt.saturating_sub(z.spares).max(1);
                let track = rel / per;
                let off = rel % per;
                let first = bpt * track;
                let off = off + slips.slipped_past(slips.count_before(first), first + off);
                (track / surf, track % surf, off.min(bpt - 1))
            }
            SectorsPerCylinder
            | SectorsPerCylinderSlipToEnd
            | SectorsPerCylinderAtFront
            | SectorsPerCylinderAtFrontSlipToEnd
            | SectorsAtEnd => {
                let per = z.div_cylinder_blocks.d;
                let (mut c, mut off) = z.div_cylinder_blocks.divmod(rel);
                let first = c * bpc;
                // Slips of earlier cylinders (all of them, when they slip to the end) come
                // first in the ascending list; then this cylinder's, one after another.
                let earlier = slips.count_before(first);
                let n = if self.sparing.is_slip_to_end() { earlier as u64 } else { 0 };
                off += n + slips.slipped_past(earlier, first + off + n);
                if off >= per {
                    c += off / per;
                    off %= per;
                }
                let (head, sector) = z.div_track.divmod(off);
                (c, head, sector)
            }
            SectorsPerRange { cylinders } => {
                let (range, mut off) = z.div_range_blocks.divmod(rel);
                let first = range * bpc * cylinders;
                off += slips.slipped_past(slips.count_before(first), first + off);
                let (c, in_cylinder) = z.div_cylinder.divmod(off);
                let (head, sector) = z.div_track.divmod(in_cylinder);
                (range * cylinders + c, head, sector)
            }
            SectorsPerZone | SectorsPerZoneSlipToEnd => {
                rel += slips.slipped_past(0, rel);
                let (c, off) = z.div_cylinder.divmod(rel);
                let (head, sector) = z.div_track.divmod(off);
                (c, head, sector)
            }
        }
    }

    /// The surface of logical head `head` on zone cylinder `cyl` (absolute `abs`); its own
    /// inverse.
    #[inline]
    fn surface(&self, cyl: u64, abs: u64, head: u64) -> u64 {
        match self.surface_order {
            SurfaceOrder::SerpentineInZone if cyl % 2 == 1 => self.heads - head - 1,
            SurfaceOrder::Serpentine if abs % 2 == 1 => self.heads - head - 1,
            _ => head,
        }
    }

    /// `angle_turns` for the full layout (`g1_map_pbn_skew`): skews count logical head
    /// order, and per-cylinder and per-track sparing shift each track by the slips before it.
    fn angle_exact(&self, c: &Chs) -> f64 {
        let z = &self.zones[c.zone];
        let cyl = c.cylinder - z.first_cylinder;
        let head = self.surface(cyl, c.cylinder, c.head);
        let bpt = z.sectors_per_track;
        let mut skew = z.first_block_offset_sectors
            + (head + (self.heads - 1) * cyl) * z.track_skew_sectors
            + cyl * z.cylinder_skew_sectors;
        if self.sparing.is_sect_per_cyl() || self.sparing == Sparing::SectorsPerTrack {
            let mut tracks = cyl * self.heads;
            if self.sparing == Sparing::SectorsPerTrack {
                tracks += head;
            }
            let cutoff = tracks * bpt;
            skew += self.slips[c.zone].count_before(cutoff) as u64;
        }
        z.div_track.divmod(skew + c.sector).1 as f64 / bpt as f64
    }

    /// From block `lbn` at `c`, of the next `left` blocks: how many lie on `c`'s track, and
    /// how many physical sectors they span (slipped and spare sectors pass under the head).
    #[inline]
    pub fn run(&self, lbn: u64, c: &Chs, left: u64) -> (u64, u64) {
        let on_track = self.zones[c.zone].sectors_per_track - c.sector;
        if !self.exact {
            let n = on_track.min(left);
            return (n, n);
        }
        // Physical sectors advance at least one per block, so at most `on_track` blocks.
        let z = &self.zones[c.zone];
        let zone_end = z.first_lbn + z.blocks;
        let mut hi = on_track.min(left).min(zone_end - lbn);
        // A run never crosses into or out of blocks that defects displace.
        let rel = lbn - z.first_lbn;
        if let Some(b) =
            self.remaps[c.zone].iter().flat_map(|r| [r.first, r.first + r.len]).find(|&b| b > rel)
        {
            hi = hi.min(b - rel);
        }
        // The place of the run's last block, if block k-1 is still on the track.
        let on = |k: u64| {
            let d = self.map(lbn + k - 1);
            (d.cylinder == c.cylinder && d.head == c.head).then_some(d)
        };
        let last = match on(hi) {
            Some(d) => d,
            None => {
                // Largest k with block k-1 still on the track; k = 1 (block `lbn`) always is.
                // The blocks past the run are few (the track's last slips or spares), so
                // gallop down from `hi` before bisecting.
                let (mut lo, mut lo_place) = (1, *c);
                let mut step = 1;
                while hi - lo > step {
                    match on(hi - step) {
                        Some(d) => {
                            (lo, lo_place) = (hi - step, d);
                            break;
                        }
                        None => hi -= step,
                    }
                    step *= 2;
                }
                while lo + 1 < hi {
                    let mid = (lo + hi) / 2;
                    match on(mid) {
                        Some(d) => (lo, lo_place) = (mid, d),
                        None => hi = mid,
                    }
                }
                hi = lo;
                lo_place
            }
        };
        (hi, last.sector.saturating_sub(c.sector) + 1)
    }

    /// The first block of the run of blocks that ends at `lbn` and lies on `lbn`'s track
    /// (DiskSim's `dm_get_track_boundaries`, walking back block by block). Without displaced
    /// blocks in the zone a block's track only grows with its number and the blocks before
    /// `lbn` on its track sit on sectors before its own, so the first block is at least
    /// `lbn - sector`: a gallop up from there and a bisection find the same block as the walk
    /// in a few maps (as many as the track's slips and spares before `lbn`, logarithmically).
    /// A zone with remapped defects (whose blocks sit on spares, maybe on this very track)
    /// takes the walk.
    pub fn track_first_block(&self, lbn: u64) -> u64 {
        let lbn = lbn.min(self.total_sectors - 1);
        self.track_first_block_at(lbn, &self.map(lbn))
    }

    /// [`Geometry::track_first_block`] of block `lbn` (on the disk), mapped to `c0`.
    pub fn track_first_block_at(&self, lbn: u64, c0: &Chs) -> u64 {
        let same = |l: u64| {
            let c = self.map(l);
            c.cylinder == c0.cylinder && c.head == c0.head
        };
        let walk_back = |mut l: u64| {
            while l > 0 && same(l - 1) {
                l -= 1;
            }
            l
        };
        if !self.remaps[c0.zone].is_empty() {
            return walk_back(lbn);
        }
        // A layout with more slips than spares in a unit puts two blocks on one sector; then
        // the bound does not hold, which the block before the answer tells.
        let is_first = |l: u64| l == 0 || !same(l - 1);
        let mut lo = lbn - c0.sector.min(lbn);
        if lo == lbn || same(lo) {
            if is_first(lo) {
                return lo;
            }
            lo = lbn.saturating_sub(self.zones[c0.zone].sectors_per_track);
            if same(lo) {
                return walk_back(lo);
            }
        }
        // `lo` is before the track and `hi` on it.
        let mut hi = lbn;
        let mut step = 1;
        while hi - lo > step {
            if same(lo + step) {
                hi = lo + step;
                break;
            }
            lo += step;
            step *= 2;
        }
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if same(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }

    /// The angular position of a sector's start, in turns `[0, 1)`, with the zone's skews
    /// applied cumulatively from the zone's first track.
    #[inline]
    pub fn angle_turns(&self, c: &Chs) -> f64 {
        if self.exact {
            return self.angle_exact(c);
        }
        let z = &self.zones[c.zone];
        let cyl = c.cylinder - z.first_cylinder;
        let per_cyl = (self.heads - 1) * z.track_skew_sectors + z.cylinder_skew_sectors;
        let offset = cyl * per_cyl + c.head * z.track_skew_sectors + c.sector;
        divmod(offset, z.sectors_per_track).1 as f64 / z.sectors_per_track as f64
    }

    /// Sectors from `c` to the end of its track.
    #[inline]
    pub fn left_on_track(&self, c: &Chs) -> u64 {
        self.zones[c.zone].sectors_per_track - c.sector
    }
}

/// Blocks `[first, first + len)` of a zone (zone-relative), whose slipped place is the
/// defect `from`, sit on its spare `to` instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Remap {
    first: u64,
    len: u64,
    from: u64,
    to: u64,
}

/// The first `x` in `[0, n)` for which `below(x)` is false (`below` true then false).
fn partition(n: u64, below: impl Fn(u64) -> bool) -> u64 {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Logical blocks a zone holds under `sparing` (DiskSim's `dm_layout_g1_compute_blksinband`).
fn zone_blocks(s: &ZoneSpec, heads: u64, sparing: Sparing) -> Result<u64, String> {
    let cyls = (s.last_cylinder - s.first_cylinder + 1) as i128;
    let bpt = s.sectors_per_track as i128;
    let spares = s.spares as i128;
    let slips = s.slips.len() as i128;
    let mut n = cyls * bpt * heads as i128 - s.empty_front_sectors as i128;
    use Sparing::*;
    n -= match sparing {
        None => 0,
        Track => spares * bpt,
        SectorsPerTrack => spares * cyls * heads as i128,
        SectorsAtEnd => slips,
        SectorsPerZone => spares,
        SectorsPerZoneSlipToEnd => spares + slips,
        SectorsPerCylinder | SectorsPerCylinderAtFront => spares * cyls,
        SectorsPerCylinderSlipToEnd | SectorsPerCylinderAtFrontSlipToEnd => spares * cyls + slips,
        SectorsPerRange { cylinders } => spares * (cyls / cylinders as i128),
    };
    u64::try_from(n).map_err(|_| format!("spares and empty space exceed the zone at {s:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// How many of the ascending `slips` push a block whose unslipped place is `place` further
    /// on: DiskSim's loop `for each slip s in order: if s <= place + n { n += 1 }` (each slip at
    /// or before the block's place so far moves it one on), found by a binary search and a short
    /// scan instead of a walk over every slip of the zone. The slips at or before `place` all
    /// count (`s_i <= place <= place + i`); from the first one past it, slip `i` counts while
    /// `s_i <= place + i`, and once one does not, no later (larger) one can.
    pub(super) fn slipped_past(slips: &[u64], place: u64) -> u64 {
        let mut n = slips.partition_point(|&s| s <= place);
        while n < slips.len() && slips[n] <= place + n as u64 {
            n += 1;
        }
        n as u64
    }

    /// The ascending `slips` from `first` on.
    pub(super) fn from(slips: &[u64], first: u64) -> &[u64] {
        &slips[slips.partition_point(|&s| s < first)..]
    }

    proptest! {
        /// The binary search counts the slips DiskSim's linear loop counts, with repeated
        /// slips, runs of adjacent ones and places before, among and after them.
        #[test]
        fn slipped_past_is_the_linear_loop(
            mut slips in proptest::collection::vec(0u64..400, 0..64),
            place in 0u64..500,
            first in 0u64..400,
        ) {
            slips.sort_unstable();
            let linear = |slips: &[u64], place: u64| {
                let mut n = 0;
                for &s in slips {
                    if s <= place + n {
                        n += 1;
                    }
                }
                n
            };
            prop_assert_eq!(slipped_past(&slips, place), linear(&slips, place));
            let after: Vec<u64> = slips.iter().copied().filter(|&s| s >= first).collect();
            prop_assert_eq!(from(&slips, first), &after[..]);
        }

        /// A zone's slip index counts and slips as the searches over the whole list do,
        /// with slips past the zone's last cylinder and places past it too.
        #[test]
        fn slip_index_is_the_search(
            mut slips in proptest::collection::vec(0u64..400, 0..64),
            place in 0u64..500,
            first in 0u64..400,
            per_cylinder in 1u64..40,
            cylinders in 1u64..12,
            index: bool,
        ) {
            slips.sort_unstable();
            let z = ZoneSlips::new(slips.clone(), cylinders, Divisor::new(per_cylinder), index);
            let before = slips.partition_point(|&s| s < first);
            prop_assert_eq!(z.count_before(first), before);
            let place = place.max(first);
            prop_assert_eq!(z.slipped_past(before, place), slipped_past(from(&slips, first), place));
            prop_assert_eq!(z.slipped_past(0, place), slipped_past(&slips, place));
        }
    }

    proptest! {
        /// The multiply divides as the hardware does, at the 32-bit edges too.
        #[test]
        fn divisor_is_division(
            d in prop_oneof![1u64..64, 1u64..=u32::MAX as u64, Just(u32::MAX as u64), 1u64 << 32..u64::MAX],
            a in prop_oneof![0u64..4096, 0u64..=u32::MAX as u64, Just(u32::MAX as u64), any::<u64>()],
        ) {
            prop_assert_eq!(Divisor::new(d).divmod(a), (a / d, a % d));
        }
    }

    fn sparing_scheme(i: u64) -> Sparing {
        use Sparing::*;
        [
            None,
            Track,
            SectorsPerCylinder,
            SectorsPerTrack,
            SectorsPerCylinderSlipToEnd,
            SectorsPerCylinderAtFront,
            SectorsPerCylinderAtFrontSlipToEnd,
            SectorsAtEnd,
            SectorsPerRange { cylinders: 2 },
            SectorsPerZone,
            SectorsPerZoneSlipToEnd,
        ][i as usize % 11]
    }

    /// Two zones (cylinders 0-4 and 5-8) under sparing scheme `scheme` and surface order
    /// `order`, with slips, spares, empty zone fronts and first-block offsets; `None` where
    /// the layout is refused.
    fn two_zones(
        scheme: u64,
        order: u64,
        heads: u64,
        spt: (u64, u64),
        spares: u64,
        slips: (Vec<u64>, Vec<u64>),
        front: (u64, u64),
    ) -> Option<Geometry> {
        let sparing = sparing_scheme(scheme);
        let order =
            [SurfaceOrder::Ascending, SurfaceOrder::SerpentineInZone, SurfaceOrder::Serpentine]
                [order as usize];
        let track = sparing == Sparing::Track;
        let zone = |first, last, spt: u64, mut slips: Vec<u64>, front: u64| {
            slips.sort_unstable();
            if track {
                slips.iter_mut().for_each(|s| *s /= spt);
            }
            ZoneSpec {
                spares: if track { spares.min(1) } else { spares },
                slips,
                empty_front_sectors: if track { 0 } else { front },
                first_block_offset_sectors: front,
                ..ZoneSpec::plain(first, last, spt)
            }
        };
        let specs = [zone(0, 4, spt.0, slips.0, front.0), zone(5, 8, spt.1, slips.1, front.1)];
        Geometry::with_layout(&specs, heads, sparing, order).ok()
    }

    /// [`two_zones`] layouts: every sparing scheme and surface order, 1-3 surfaces, up to 12
    /// slips a zone, up to 3 spares.
    fn layouts() -> impl Strategy<Value = Option<Geometry>> {
        (
            0u64..11,
            0u64..3,
            1u64..4,
            (8u64..24, 6u64..20),
            0u64..4,
            (
                proptest::collection::vec(0u64..120, 0..12),
                proptest::collection::vec(0u64..90, 0..12),
            ),
            (0u64..5, 0u64..5),
        )
            .prop_map(|(scheme, order, heads, spt, spares, slips, front)| {
                two_zones(scheme, order, heads, spt, spares, slips, front)
            })
    }

    proptest! {
        /// `run_next` is `run`, and the place it finds is the map's, on every layout
        /// `two_zones` makes (those with more slips than spares included) and for runs
        /// cut short by `left` or not.
        #[test]
        fn run_next_is_run_and_the_next_map(g in layouts(), cut in 1u64..30) {
            let Some(g) = g else { return Ok(()) };
            for lbn in 0..g.total_sectors {
                let c = g.map(lbn);
                for left in [g.total_sectors - lbn, cut.min(g.total_sectors - lbn)] {
                    let (n, span, after) = g.run_next(lbn, &c, left);
                    prop_assert_eq!((n, span), g.run(lbn, &c, left), "run from {} of {}", lbn, left);
                    if let Some(d) = after {
                        prop_assert_eq!(d, g.map(lbn + n), "after the run from {}", lbn);
                    }
                }
            }
        }

        /// The gallops of `track_first_block` and `run` find what walking block by block
        /// finds, on two zones under every sparing scheme and surface order with slips,
        /// spares, empty zone fronts and first-block offsets.
        #[test]
        fn track_bounds_are_the_block_walks(g in layouts()) {
            let Some(g) = g else { return Ok(()) };
            let on = |a: Chs, b: Chs| a.cylinder == b.cylinder && a.head == b.head;
            // More slips than a unit has spares put blocks on one sector, or past their
            // zone's last cylinder onto the next zone's tracks (DiskSim maps them so too):
            // no panic, but no bounds to compare either.
            let spilled = |c: &Chs| {
                let z = &g.zones[c.zone];
                c.cylinder > z.last_cylinder
            };
            let overfull = spilled(&g.map(0))
                || (1..g.total_sectors).any(|l| {
                    let (a, b) = (g.map(l - 1), g.map(l));
                    (on(a, b) && a.sector >= b.sector) || spilled(&b)
                });
            if overfull {
                for lbn in 0..g.total_sectors {
                    g.track_first_block(lbn);
                    g.run(lbn, &g.map(lbn), g.total_sectors - lbn);
                }
                return Ok(());
            }
            for lbn in 0..g.total_sectors {
                let c = g.map(lbn);
                let mut first = lbn;
                while first > 0 && on(g.map(first - 1), c) {
                    first -= 1;
                }
                prop_assert_eq!(g.track_first_block(lbn), first, "block {}", lbn);
                let left = g.total_sectors - lbn;
                let mut n = 1;
                while n < left && on(g.map(lbn + n), c) {
                    n += 1;
                }
                let z = &g.zones[c.zone];
                let n = n.min(z.first_lbn + z.blocks - lbn);
                let (blocks, span) = g.run(lbn, &c, left);
                prop_assert_eq!(blocks, n.min(g.left_on_track(&c)), "run from {}", lbn);
                let last = g.map(lbn + blocks - 1);
                prop_assert_eq!(span, last.sector - c.sector + 1, "span from {}", lbn);
            }
        }
    }

    #[test]
    fn map_walks_sectors_heads_cylinders_and_zones() {
        let specs = vec![
            ZoneSpec {
                first_cylinder: 0,
                last_cylinder: 1,
                sectors_per_track: 10,
                track_skew_sectors: 2,
                cylinder_skew_sectors: 3,
                ..ZoneSpec::plain(0, 1, 10)
            },
            ZoneSpec {
                first_cylinder: 2,
                last_cylinder: 2,
                sectors_per_track: 5,
                ..ZoneSpec::plain(2, 2, 5)
            },
        ];
        let g = Geometry::new(&specs, 2).unwrap();
        assert_eq!(g.total_sectors, 2 * 2 * 10 + 2 * 5);
        assert_eq!(g.map(0), Chs { cylinder: 0, head: 0, sector: 0, zone: 0 });
        assert_eq!(g.map(13), Chs { cylinder: 0, head: 1, sector: 3, zone: 0 });
        assert_eq!(g.map(20), Chs { cylinder: 1, head: 0, sector: 0, zone: 0 });
        assert_eq!(g.map(41), Chs { cylinder: 2, head: 0, sector: 1, zone: 1 });
        // Track skew 2, cylinder skew 3: cylinder 1 head 0 starts (1·2 + 3) sectors later.
        assert!((g.angle_turns(&g.map(20)) - 0.5).abs() < 1e-12);
        assert!((g.angle_turns(&g.map(10)) - 0.2).abs() < 1e-12);
    }

    /// Zone-relative physical sector of `c` in a zone of `spt` sectors on `heads` surfaces.
    fn phys(c: Chs, heads: u64, spt: u64) -> u64 {
        (c.cylinder * heads + c.head) * spt + c.sector
    }

    #[test]
    fn defects_move_their_block_to_the_spare_and_runs_stop_there() {
        // Five cylinders of two 10-sector tracks, 5 spares at the zone's end, slips 3 and 20,
        // sector 50 remapped to spare 98 (DiskSim scheme 9).
        let z = ZoneSpec {
            spares: 5,
            slips: vec![3, 20],
            defects: vec![(50, 98), (7, 7)],
            ..ZoneSpec::plain(0, 4, 10)
        };
        let g = Geometry::with_layout(&[z], 2, Sparing::SectorsPerZone, SurfaceOrder::Ascending)
            .unwrap();
        assert_eq!(g.total_sectors, 95);
        let p = |l| phys(g.map(l), 2, 10);
        assert_eq!((p(2), p(3), p(18), p(19)), (2, 4, 19, 21));
        // Block 48 would sit on sector 50: it sits on 98; its neighbours stay.
        assert_eq!((p(47), p(48), p(49)), (49, 98, 51));
        // A defect remapped to itself changes nothing.
        assert_eq!(p(6), 7);
        // A run from block 45 stops before the displaced block, which is a run of its own.
        let c = g.map(45);
        assert_eq!(g.run(45, &c, 10).0, 3);
        assert_eq!(g.run(48, &g.map(48), 10).0, 1);
        assert_eq!(g.run(49, &g.map(49), 10).0, 9);
        // Track sparing: track 1 goes to spare track 8 (cylinder 4, head 0), sectors kept.
        let z = ZoneSpec { spares: 2, defects: vec![(1, 8)], ..ZoneSpec::plain(0, 4, 10) };
        let g = Geometry::with_layout(&[z], 2, Sparing::Track, SurfaceOrder::Ascending).unwrap();
        assert_eq!(g.map(13), Chs { cylinder: 4, head: 0, sector: 3, zone: 0 });
        assert_eq!(g.map(20), Chs { cylinder: 1, head: 0, sector: 0, zone: 0 });
        assert_eq!(g.run(10, &g.map(10), 30).0, 10);
        // A spare beyond the zone is refused.
        let z = ZoneSpec { spares: 2, defects: vec![(1, 10)], ..ZoneSpec::plain(0, 4, 10) };
        assert!(Geometry::with_layout(&[z], 2, Sparing::Track, SurfaceOrder::Ascending).is_err());
    }

    #[test]
    fn track_first_block_is_the_walk_back() {
        let walk = |g: &Geometry, lbn: u64| {
            let c0 = g.map(lbn);
            let mut l = lbn;
            while l > 0 {
                let c = g.map(l - 1);
                if c.cylinder != c0.cylinder || c.head != c0.head {
                    break;
                }
                l -= 1;
            }
            l
        };
        let layouts = [
            (
                ZoneSpec { slips: vec![3, 4, 5, 20, 21], ..ZoneSpec::plain(0, 9, 10) },
                Sparing::SectorsPerZone,
            ),
            (
                ZoneSpec { spares: 3, slips: vec![3, 12, 13], ..ZoneSpec::plain(0, 9, 10) },
                Sparing::SectorsPerTrack,
            ),
            (
                ZoneSpec { spares: 2, slips: vec![1, 4], ..ZoneSpec::plain(0, 9, 10) },
                Sparing::Track,
            ),
            (
                ZoneSpec { slips: vec![5, 25, 26], ..ZoneSpec::plain(0, 9, 10) },
                Sparing::SectorsAtEnd,
            ),
            (
                ZoneSpec {
                    spares: 5,
                    slips: vec![3, 20],
                    defects: vec![(50, 98)],
                    ..ZoneSpec::plain(0, 9, 10)
                },
                Sparing::SectorsPerZone,
            ),
        ];
        for (z, sparing) in layouts {
            let g = Geometry::with_layout(&[z], 2, sparing, SurfaceOrder::Ascending).unwrap();
            for lbn in 0..g.total_sectors {
                assert_eq!(g.track_first_block(lbn), walk(&g, lbn), "{sparing:?} block {lbn}");
            }
        }
        let g = Geometry::new(&[ZoneSpec::plain(0, 4, 10), ZoneSpec::plain(5, 9, 8)], 2).unwrap();
        for lbn in 0..g.total_sectors {
            assert_eq!(g.track_first_block(lbn), walk(&g, lbn), "plain block {lbn}");
        }
    }

    #[test]
    fn slips_at_the_zone_end_push_later_cylinders_on() {
        // DiskSim scheme 7 counts the slips of earlier cylinders (`issliptoend`): block 20 is
        // pushed past block 19, and the slip on sector 25 is skipped.
        let z = ZoneSpec { slips: vec![5, 25], ..ZoneSpec::plain(0, 4, 10) };
        let g =
            Geometry::with_layout(&[z], 2, Sparing::SectorsAtEnd, SurfaceOrder::Ascending).unwrap();
        assert_eq!(g.total_sectors, 98);
        let p = |l| phys(g.map(l), 2, 10);
        assert_eq!((p(4), p(5), p(19), p(20), p(23), p(24)), (4, 6, 20, 21, 24, 26));
        // Slips are one per entry: a repeated sector slips two blocks.
        let z = ZoneSpec { slips: vec![5, 5], ..ZoneSpec::plain(0, 4, 10) };
        let g = Geometry::with_layout(&[z], 2, Sparing::SectorsPerZone, SurfaceOrder::Ascending)
            .unwrap();
        assert_eq!((phys(g.map(4), 2, 10), phys(g.map(5), 2, 10)), (4, 7));
        let z = ZoneSpec { slips: vec![6, 5], ..ZoneSpec::plain(0, 4, 10) };
        assert!(Geometry::new(&[z], 2).is_err());
    }
}
