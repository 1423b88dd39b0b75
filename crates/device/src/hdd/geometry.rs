//! Geometry: zoned recording and the LBN → (cylinder, head, sector) map, as DiskSim's
//! `.model` zone tables describe it. The zone table is computed once; mapping is a binary
//! search over zones. Spare sectors and defect slipping are ignored (every sector of a zone's
//! tracks holds data), so capacities are slightly above a real drive's with the same layout.

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
}

impl ZoneSpec {
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
}

/// Where a sector is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chs {
    pub cylinder: u64,
    pub head: u64,
    pub sector: u64,
    pub zone: usize,
}

/// The zone table.
#[derive(Clone, Debug)]
pub struct Geometry {
    pub zones: Vec<Zone>,
    pub heads: u64,
    pub total_sectors: u64,
    pub cylinders: u64,
}

impl Geometry {
    pub fn new(specs: &[ZoneSpec], heads: u64) -> Result<Geometry, String> {
        if specs.is_empty() || heads == 0 {
            return Err("geometry needs at least one zone and one head".into());
        }
        let mut zones = Vec::with_capacity(specs.len());
        let mut lbn = 0;
        let mut next_cyl = specs[0].first_cylinder;
        for s in specs {
            if s.first_cylinder != next_cyl || s.last_cylinder < s.first_cylinder {
                return Err(format!("zones must be contiguous and ascending at {s:?}"));
            }
            if s.sectors_per_track == 0 {
                return Err("sectors_per_track must be positive".into());
            }
            zones.push(Zone {
                first_lbn: lbn,
                first_cylinder: s.first_cylinder,
                last_cylinder: s.last_cylinder,
                sectors_per_track: s.sectors_per_track,
                track_skew_sectors: s.track_skew_sectors,
                cylinder_skew_sectors: s.cylinder_skew_sectors,
            });
            lbn += (s.last_cylinder - s.first_cylinder + 1) * heads * s.sectors_per_track;
            next_cyl = s.last_cylinder + 1;
        }
        Ok(Geometry { zones, heads, total_sectors: lbn, cylinders: next_cyl })
    }

    /// Maps a logical block number (clamped to the disk) to its physical place.
    #[inline]
    pub fn map(&self, lbn: u64) -> Chs {
        let lbn = lbn.min(self.total_sectors - 1);
        let zi = self.zones.partition_point(|z| z.first_lbn <= lbn) - 1;
        let z = &self.zones[zi];
        let within = lbn - z.first_lbn;
        let track = within / z.sectors_per_track;
        Chs {
            cylinder: z.first_cylinder + track / self.heads,
            head: track % self.heads,
            sector: within % z.sectors_per_track,
            zone: zi,
        }
    }

    /// The angular position of a sector's start, in turns `[0, 1)`, with the zone's skews
    /// applied cumulatively from the zone's first track.
    #[inline]
    pub fn angle_turns(&self, c: &Chs) -> f64 {
        let z = &self.zones[c.zone];
        let cyl = c.cylinder - z.first_cylinder;
        let per_cyl = (self.heads - 1) * z.track_skew_sectors + z.cylinder_skew_sectors;
        let offset = cyl * per_cyl + c.head * z.track_skew_sectors + c.sector;
        (offset % z.sectors_per_track) as f64 / z.sectors_per_track as f64
    }

    /// Sectors from `c` to the end of its track.
    #[inline]
    pub fn left_on_track(&self, c: &Chs) -> u64 {
        self.zones[c.zone].sectors_per_track - c.sector
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_walks_sectors_heads_cylinders_and_zones() {
        let specs = vec![
            ZoneSpec {
                first_cylinder: 0,
                last_cylinder: 1,
                sectors_per_track: 10,
                track_skew_sectors: 2,
                cylinder_skew_sectors: 3,
            },
            ZoneSpec {
                first_cylinder: 2,
                last_cylinder: 2,
                sectors_per_track: 5,
                track_skew_sectors: 0,
                cylinder_skew_sectors: 0,
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
}
