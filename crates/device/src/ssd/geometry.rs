//! Flash geometry: channels × dies (ways) × planes × blocks × pages, and the addresses the FTL
//! hands out.
//!
//! The FTL maps **4 KiB units** (the host's logical block, [`UNIT_BYTES`]), as SSD firmware
//! does since flash pages outgrew 4 KiB: a flash page of 16 KiB holds four units. Planes are
//! operated together (multi-plane program, read and erase, as controllers do for throughput;
//! Agrawal et al., "Design Tradeoffs for SSD Performance", USENIX ATC 2008, §3.2 "plane
//! interleaving"), so the FTL's page is a **die page** of `planes × page_bytes` and its block
//! is a **die block**: the same-numbered block of each plane. A physical unit number (PUN)
//! counts units die by die:
//!
//! `pun = ((die · blocks_per_die + block) · pages_per_block + page) · units_per_page + slot`
//!
//! and a global die page is `pun / units_per_page`. Dies are numbered channel first
//! (`die = way · channels + channel`), so consecutive dies sit on different channels: striping
//! over consecutive dies spreads transfers over the channels first (MQSim's `CWDP` order).

/// The FTL's mapping unit: 4 KiB.
pub const UNIT_BYTES: u64 = 4096;

/// Derived sizes of a flash array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub channels: u32,
    pub dies: u32,
    pub planes: u32,
    pub pages_per_block: u32,
    pub blocks_per_die: u32,
    /// Units in one die page (`planes × page_bytes / 4 KiB`).
    pub units_per_page: u32,
    pub units_per_block: u32,
    pub pages_per_die: u32,
    /// Raw capacity in units.
    pub physical_units: u64,
    /// What the host sees, in units: raw capacity less over-provisioning.
    pub user_units: u64,
}

impl Geometry {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        channels: u32,
        dies_per_channel: u32,
        planes: u32,
        page_bytes: u64,
        pages_per_block: u32,
        blocks_per_plane: u32,
        over_provisioning: f64,
    ) -> Result<Geometry, String> {
        for (n, v) in [
            ("channels", channels),
            ("dies_per_channel", dies_per_channel),
            ("planes_per_die", planes),
            ("pages_per_block", pages_per_block),
            ("blocks_per_plane", blocks_per_plane),
        ] {
            if v == 0 {
                return Err(format!("{n} must be at least 1"));
            }
        }
        if page_bytes == 0 || !page_bytes.is_multiple_of(UNIT_BYTES) {
            return Err(format!(
                "page_bytes = {page_bytes} must be a non-zero multiple of 4096 (the FTL maps 4 KiB units)"
            ));
        }
        if !(over_provisioning > 0.0 && over_provisioning < 0.5) {
            return Err(format!(
                "over_provisioning = {over_provisioning} must be a fraction of raw capacity in (0, 0.5), e.g. 0.07"
            ));
        }
        let units_per_page = u64::from(planes) * page_bytes / UNIT_BYTES;
        let dies = u64::from(channels) * u64::from(dies_per_channel);
        let units_per_block = units_per_page * u64::from(pages_per_block);
        let physical_units = dies * u64::from(blocks_per_plane) * units_per_block;
        // A PUN + 1 must fit the u32 map entries below the two sentinels.
        if physical_units >= u64::from(u32::MAX) - 2 || units_per_block > u64::from(u32::MAX) {
            return Err(format!(
                "the flash array has {physical_units} 4 KiB units; at most {} (16 TiB) are supported: lower blocks_per_plane",
                u32::MAX - 3
            ));
        }
        let user_units = (physical_units as f64 * (1.0 - over_provisioning)).floor() as u64;
        Ok(Geometry {
            channels,
            dies: dies as u32,
            planes,
            pages_per_block,
            blocks_per_die: blocks_per_plane,
            units_per_page: units_per_page as u32,
            units_per_block: units_per_block as u32,
            pages_per_die: pages_per_block * blocks_per_plane,
            physical_units,
            user_units,
        })
    }

    /// The die holding global die page `page`.
    #[inline]
    pub fn die_of_page(&self, page: u32) -> u32 {
        page / self.pages_per_die
    }

    /// The channel a die sits on.
    #[inline]
    pub fn channel_of_die(&self, die: u32) -> u32 {
        die % self.channels
    }

    /// The global block index (`die · blocks_per_die + block`) of a PUN.
    #[inline]
    pub fn block_of_pun(&self, pun: u32) -> u32 {
        pun / self.units_per_block
    }

    /// The first PUN of a die page.
    #[inline]
    pub fn pun(&self, die: u32, block: u32, page: u32, slot: u32) -> u32 {
        ((die * self.blocks_per_die + block) * self.pages_per_block + page) * self.units_per_page
            + slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip_and_bad_sizes_are_explained() {
        let g = Geometry::new(2, 2, 2, 8192, 4, 8, 0.1).unwrap();
        assert_eq!((g.dies, g.units_per_page, g.units_per_block), (4, 4, 16));
        assert_eq!(g.physical_units, 4 * 8 * 16);
        assert_eq!(g.user_units, (512.0f64 * 0.9).floor() as u64);
        let p = g.pun(3, 5, 2, 1);
        assert_eq!(g.block_of_pun(p), 3 * 8 + 5);
        assert_eq!(g.die_of_page(p / g.units_per_page), 3);
        assert_eq!(g.channel_of_die(3), 1);
        assert!(Geometry::new(2, 2, 2, 6000, 4, 8, 0.1).unwrap_err().contains("multiple of 4096"));
        assert!(Geometry::new(2, 2, 2, 8192, 4, 8, 0.0).unwrap_err().contains("over_provisioning"));
        assert!(Geometry::new(0, 2, 2, 8192, 4, 8, 0.1).unwrap_err().contains("channels"));
        assert!(Geometry::new(64, 64, 4, 16384, 1024, 4096, 0.1).unwrap_err().contains("16 TiB"));
    }
}
