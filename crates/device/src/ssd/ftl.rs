//! A page-mapped flash translation layer (Agrawal et al. 2008 §3.3; SSDSim's and MQSim's
//! `PAGE_LEVEL` mapping), without time: it decides *where* units go and which flash
//! operations that takes ([`FlashOp`]); the device decides *when*.
//!
//! - **Map.** `l2p[lpn]` is a u32 per 4 KiB logical unit: [`HOME`] (0) for a unit never
//!   written since power-on, [`TRIMMED`] after a discard, else `pun + 1`. `p2l[pun]` is the
//!   reverse (`lpn + 1`, 0 for nothing valid there), which is what garbage collection needs to
//!   find a block's valid units. Both are `vec![0; n]`, which the allocator gets zeroed from
//!   the OS, so only the pages of the tables that are touched take memory: 8 bytes per 4 KiB
//!   of raw flash at most (64 MiB for the presets' 32 GiB).
//! - **Initial state** ([`Fill`]): `empty` is a drive after a secure erase (all units
//!   unmapped, reads of them never reach the flash, as real drives answer them from the
//!   controller); `full` is a drive written once from start to end: every unit sits at its
//!   *home* location, where one sequential pass striped over the dies would have put it. The
//!   home location is a formula, so `full` costs no table writes: [`HOME`] in `l2p` means "at
//!   home", and a block never erased since power-on (`home`) finds its units' owners by the
//!   inverse formula.
//! - **Write frontier per die.** Each die has one open block and one open die page; units are
//!   appended to it; a full die page is programmed ([`FlashOp::Program`]). Host writes go to
//!   the dies in turn, one die page each (channel first), so a sequential stream is striped
//!   over all channels and dies; relocations by garbage collection stay in their die (the
//!   copies never cross a channel they would compete for).
//! - **Garbage collection** ([`super::gc`]): when a die opens a new block and fewer than
//!   `gc_threshold_blocks` are free, greedy victims are cleaned until enough are.

use std::collections::VecDeque;

use super::geometry::Geometry;

/// `l2p` value: never written since power-on (at its home location in a `full` drive).
pub const HOME: u32 = 0;
/// `l2p` value: discarded.
pub const TRIMMED: u32 = u32::MAX;
/// No open block (a die whose free blocks ran out; never happens with valid parameters).
const NONE: u32 = u32::MAX;

/// The drive's contents at power-on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fill {
    /// Fresh (or secure-erased): nothing mapped.
    Empty,
    /// Every logical unit written once, sequentially.
    Full,
}

/// What a host write, a flush or garbage collection asks of the flash, in order per die.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlashOp {
    /// Read `units` units of global die page `page` into the controller (GC).
    Read { page: u32, units: u32 },
    /// Program global die page `page`; `host_units` of its units came from the host's write
    /// buffer (they are released when the program ends).
    Program { page: u32, host_units: u32 },
    /// Erase block `block` of `die`.
    Erase { die: u32, block: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BlockState {
    Free,
    Open,
    Full,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Block {
    pub valid: u32,
    pub state: BlockState,
    /// Holds home data (never erased since power-on): `p2l` is implicit.
    pub home: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct Die {
    pub free: VecDeque<u32>,
    pub active: u32,
    pub next_page: u32,
    /// Units in the open die page, and how many of them came from the host.
    pub fill: u32,
    pub host_units: u32,
}

/// Counters for write amplification and garbage collection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FtlStats {
    pub host_units_written: u64,
    pub units_trimmed: u64,
    pub pages_programmed: u64,
    /// Slots of programmed pages left empty (a flush or FUA write closing a partial page).
    pub units_padded: u64,
    pub gc_runs: u64,
    pub gc_units_moved: u64,
    pub gc_pages_read: u64,
    pub blocks_erased: u64,
}

/// Where a logical unit's data is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loc {
    Unmapped,
    At(u32),
}

#[derive(Debug)]
pub struct Ftl {
    pub(crate) g: Geometry,
    pub(crate) fill_mode: Fill,
    pub(crate) l2p: Vec<u32>,
    pub(crate) p2l: Vec<u32>,
    pub(crate) blocks: Vec<Block>,
    pub(crate) dies: Vec<Die>,
    host_die: u32,
    pub(crate) gc_threshold_blocks: u32,
    pub(crate) in_gc: bool,
    pub(crate) scratch: Vec<u32>,
    pub stats: FtlStats,
}

impl Ftl {
    /// A FTL over `g`, keeping `gc_threshold_blocks` (≥ 2) free blocks per die.
    pub fn new(g: Geometry, fill: Fill, gc_threshold_blocks: u32) -> Result<Ftl, String> {
        let per_die_user = g.user_units.div_ceil(u64::from(g.dies));
        let user_blocks = per_die_user.div_ceil(u64::from(g.units_per_block));
        // Spare blocks per die must hold the free pool, the open block and room for invalid
        // units, or cleaning cannot reclaim anything.
        let spare = u64::from(g.blocks_per_die).saturating_sub(user_blocks);
        if gc_threshold_blocks < 2 || spare < u64::from(gc_threshold_blocks) + 2 {
            return Err(format!(
                "each die has {spare} spare blocks beyond the user data but garbage collection keeps {gc_threshold_blocks} free and needs two more: raise over_provisioning or blocks_per_plane, or lower gc_threshold"
            ));
        }
        let nblocks = (g.dies * g.blocks_per_die) as usize;
        let mut ftl = Ftl {
            l2p: vec![HOME; g.user_units as usize],
            p2l: vec![0; g.physical_units as usize],
            blocks: vec![Block { valid: 0, state: BlockState::Free, home: false }; nblocks],
            dies: Vec::with_capacity(g.dies as usize),
            host_die: 0,
            gc_threshold_blocks,
            in_gc: false,
            scratch: Vec::with_capacity(g.units_per_block as usize),
            stats: FtlStats::default(),
            fill_mode: fill,
            g,
        };
        let upp = u64::from(ftl.g.units_per_page);
        let dies = u64::from(ftl.g.dies);
        let user_pages = ftl.g.user_units.div_ceil(upp);
        for d in 0..ftl.g.dies {
            let mut first_free = 0;
            if fill == Fill::Full {
                // Home pages of die d: global stripe pages g ≡ d (mod dies).
                let pages = user_pages.saturating_sub(u64::from(d)).div_ceil(dies);
                for s in 0..pages {
                    let gp = s * dies + u64::from(d);
                    let units = (ftl.g.user_units - gp * upp).min(upp) as u32;
                    let b = (s / u64::from(ftl.g.pages_per_block)) as u32;
                    let blk = &mut ftl.blocks[(d * ftl.g.blocks_per_die + b) as usize];
                    blk.valid += units;
                    blk.state = BlockState::Full;
                    blk.home = true;
                }
                first_free = pages.div_ceil(u64::from(ftl.g.pages_per_block)) as u32;
            }
            let free: VecDeque<u32> = (first_free + 1..ftl.g.blocks_per_die).collect();
            ftl.blocks[(d * ftl.g.blocks_per_die + first_free) as usize].state = BlockState::Open;
            ftl.dies.push(Die { free, active: first_free, next_page: 0, fill: 0, host_units: 0 });
        }
        Ok(ftl)
    }

    pub fn geometry(&self) -> &Geometry {
        &self.g
    }

    /// The home PUN of `lpn` (where a sequential fill put it).
    #[inline]
    pub fn home_pun(&self, lpn: u32) -> u32 {
        let upp = self.g.units_per_page;
        let gp = lpn / upp;
        let die = gp % self.g.dies;
        let s = gp / self.g.dies;
        self.g.pun(die, s / self.g.pages_per_block, s % self.g.pages_per_block, lpn % upp)
    }

    /// The logical unit stored at `pun` if it is valid there.
    #[inline]
    pub fn owner(&self, pun: u32) -> Option<u32> {
        let b = self.g.block_of_pun(pun) as usize;
        if self.blocks[b].home {
            let upp = self.g.units_per_page;
            let page_in_die = (pun / upp) % self.g.pages_per_die;
            let die = pun / upp / self.g.pages_per_die;
            let lpn =
                u64::from(page_in_die * self.g.dies + die) * u64::from(upp) + u64::from(pun % upp);
            (lpn < self.g.user_units && self.l2p[lpn as usize] == HOME).then_some(lpn as u32)
        } else {
            match self.p2l[pun as usize] {
                0 => None,
                l => Some(l - 1),
            }
        }
    }

    /// Where `lpn` lives.
    #[inline]
    pub fn lookup(&self, lpn: u32) -> Loc {
        match self.l2p[lpn as usize] {
            HOME if self.fill_mode == Fill::Full => Loc::At(self.home_pun(lpn)),
            HOME | TRIMMED => Loc::Unmapped,
            v => Loc::At(v - 1),
        }
    }

    /// True if global die page `page` is a die's open page (its data is still in the
    /// controller's buffer).
    #[inline]
    pub fn is_open(&self, page: u32) -> bool {
        let die = self.g.die_of_page(page);
        let d = &self.dies[die as usize];
        d.active != NONE
            && d.fill > 0
            && page
                == (die * self.g.blocks_per_die + d.active) * self.g.pages_per_block + d.next_page
    }

    /// The die the next host unit will go to.
    #[inline]
    pub fn host_die(&self) -> u32 {
        self.host_die
    }

    /// Forgets where `lpn` was.
    fn invalidate(&mut self, lpn: u32) {
        if let Loc::At(pun) = self.lookup(lpn) {
            let b = self.g.block_of_pun(pun) as usize;
            self.blocks[b].valid -= 1;
            if !self.blocks[b].home {
                self.p2l[pun as usize] = 0;
            }
        }
    }

    /// Writes one host unit; returns its new PUN (None only if every die is out of space,
    /// which the parameter checks rule out).
    pub fn write(&mut self, lpn: u32, ops: &mut Vec<FlashOp>) -> Option<u32> {
        let dies = self.g.dies;
        let mut d = self.host_die;
        for _ in 0..dies {
            if self.dies[d as usize].active != NONE {
                break;
            }
            d = (d + 1) % dies;
        }
        if self.dies[d as usize].active == NONE {
            debug_assert!(false, "every die is full");
            return None;
        }
        self.invalidate(lpn);
        self.stats.host_units_written += 1;
        let (pun, closed) = self.append(d, lpn, true, ops);
        if closed {
            self.host_die = (d + 1) % dies;
        }
        Some(pun)
    }

    /// Discards `lpn`.
    pub fn trim(&mut self, lpn: u32) {
        if self.lookup(lpn) != Loc::Unmapped {
            self.stats.units_trimmed += 1;
        }
        self.invalidate(lpn);
        self.l2p[lpn as usize] = TRIMMED;
    }

    /// Appends `lpn` to die `d`'s frontier; returns the PUN and whether the page closed.
    pub(crate) fn append(
        &mut self,
        d: u32,
        lpn: u32,
        host: bool,
        ops: &mut Vec<FlashOp>,
    ) -> (u32, bool) {
        let die = &mut self.dies[d as usize];
        let pun = self.g.pun(d, die.active, die.next_page, die.fill);
        die.fill += 1;
        if host {
            die.host_units += 1;
        }
        self.l2p[lpn as usize] = pun + 1;
        self.p2l[pun as usize] = lpn + 1;
        self.blocks[(d * self.g.blocks_per_die + die.active) as usize].valid += 1;
        let closed = die.fill == self.g.units_per_page;
        if closed {
            self.close_page(d, ops);
        }
        (pun, closed)
    }

    /// Programs die `d`'s open page (padding what is left of it), if it holds anything.
    pub fn close_page(&mut self, d: u32, ops: &mut Vec<FlashOp>) {
        let g = &self.g;
        let die = &mut self.dies[d as usize];
        if die.fill == 0 || die.active == NONE {
            return;
        }
        let page = (d * g.blocks_per_die + die.active) * g.pages_per_block + die.next_page;
        ops.push(FlashOp::Program { page, host_units: die.host_units });
        self.stats.pages_programmed += 1;
        self.stats.units_padded += u64::from(g.units_per_page - die.fill);
        die.fill = 0;
        die.host_units = 0;
        die.next_page += 1;
        if die.next_page == g.pages_per_block {
            self.blocks[(d * g.blocks_per_die + die.active) as usize].state = BlockState::Full;
            self.open_block(d, ops);
        }
    }

    /// Programs every open page holding host data (a flush).
    pub fn close_all(&mut self, ops: &mut Vec<FlashOp>) {
        for d in 0..self.g.dies {
            if self.dies[d as usize].host_units > 0 {
                self.close_page(d, ops);
            }
        }
    }

    /// Opens die `d`'s next free block, cleaning if the free pool ran low.
    fn open_block(&mut self, d: u32, ops: &mut Vec<FlashOp>) {
        let die = &mut self.dies[d as usize];
        die.next_page = 0;
        match die.free.pop_front() {
            Some(b) => {
                die.active = b;
                self.blocks[(d * self.g.blocks_per_die + b) as usize].state = BlockState::Open;
            }
            None => die.active = NONE,
        }
        if !self.in_gc && (self.dies[d as usize].free.len() as u32) < self.gc_threshold_blocks {
            self.collect(d, ops);
        }
    }

    /// Checks the map against the reverse map and every block's valid count; returns the
    /// number of mapped units. For tests (O(capacity)).
    pub fn check(&self) -> Result<u64, String> {
        let mut valid = vec![0u32; self.blocks.len()];
        let mut mapped = 0;
        for lpn in 0..self.g.user_units as u32 {
            if let Loc::At(pun) = self.lookup(lpn) {
                if self.owner(pun) != Some(lpn) {
                    return Err(format!(
                        "lpn {lpn} maps to pun {pun}, owned by {:?}",
                        self.owner(pun)
                    ));
                }
                valid[self.g.block_of_pun(pun) as usize] += 1;
                mapped += 1;
            }
        }
        for pun in 0..self.g.physical_units as u32 {
            if let Some(lpn) = self.owner(pun) {
                if self.lookup(lpn) != Loc::At(pun) {
                    return Err(format!("pun {pun} claims lpn {lpn}, which maps elsewhere"));
                }
            }
        }
        for (b, (blk, &v)) in self.blocks.iter().zip(&valid).enumerate() {
            if blk.valid != v {
                return Err(format!(
                    "block {b}: valid count {} but {v} units map to it",
                    blk.valid
                ));
            }
            if blk.state == BlockState::Free && v != 0 {
                return Err(format!("free block {b} holds {v} valid units"));
            }
        }
        Ok(mapped)
    }
}
