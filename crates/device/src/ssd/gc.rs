//! Greedy garbage collection: the victim is the full block with the fewest valid units
//! (Agrawal et al. 2008 §3.4 "cleaning"; MQSim's `GREEDY`, SSDSim's default). Its valid units
//! are read into the controller and appended to the die's frontier, then the block is erased.
//!
//! - Cleaning is per die and starts when a die opens a block and fewer than
//!   `gc_threshold_blocks` of its blocks are free; it cleans victims until that many are free
//!   again (MQSim's `GC_Exec_Threshold`, counted in blocks).
//! - Copies go through the controller (read, channel out, channel in, program), not by the
//!   on-die copyback command: with 4 KiB units in 16 KiB pages the valid units of a victim
//!   page must be repacked, and controllers check ECC on the way (MQSim's default
//!   `Use_Copyback_for_GC = false`).
//! - No preemption: a host read that reaches a die behind cleaning waits for it (real
//!   controllers may suspend an erase or program for a read; not modelled). Wear levelling is
//!   not modelled either: free blocks are reused oldest first, which spreads erases anyway.

use super::ftl::{BlockState, FlashOp, Ftl};

impl Ftl {
    /// The greedy victim of die `d`: the full block with the fewest valid units, the lowest
    /// number among equals.
    pub fn victim(&self, d: u32) -> Option<u32> {
        let base = (d * self.g.blocks_per_die) as usize;
        self.blocks[base..base + self.g.blocks_per_die as usize]
            .iter()
            .enumerate()
            .filter(|(_, b)| b.state == BlockState::Full)
            .min_by_key(|(i, b)| (b.valid, *i))
            .map(|(i, _)| i as u32)
    }

    /// Cleans die `d` until it has `gc_threshold_blocks` free blocks, or nothing can be
    /// reclaimed.
    pub(crate) fn collect(&mut self, d: u32, ops: &mut Vec<FlashOp>) {
        self.in_gc = true;
        let g = self.g.clone();
        while (self.dies[d as usize].free.len() as u32) < self.gc_threshold_blocks {
            let Some(v) = self.victim(d) else { break };
            let gb = (d * g.blocks_per_die + v) as usize;
            let valid = self.blocks[gb].valid;
            let die = &self.dies[d as usize];
            let room = if die.active == u32::MAX {
                0
            } else {
                (g.pages_per_block - die.next_page) * g.units_per_page - die.fill
            } + die.free.len() as u32 * g.units_per_block;
            // Nothing to gain, or (never with checked parameters) nowhere to put the copies.
            if valid >= g.units_per_block || valid > room {
                break;
            }
            self.stats.gc_runs += 1;
            let mut lpns = std::mem::take(&mut self.scratch);
            for page in 0..g.pages_per_block {
                lpns.clear();
                let first = g.pun(d, v, page, 0);
                lpns.extend((first..first + g.units_per_page).filter_map(|p| self.owner(p)));
                if lpns.is_empty() {
                    continue;
                }
                ops.push(FlashOp::Read {
                    page: first / g.units_per_page,
                    units: lpns.len() as u32,
                });
                self.stats.gc_pages_read += 1;
                for &lpn in &lpns {
                    // Leaves the victim: its count drops here, the new block's rises in append.
                    let old = (self.l2p[lpn as usize] != super::ftl::HOME)
                        .then(|| self.l2p[lpn as usize] - 1);
                    if let Some(old) = old {
                        self.p2l[old as usize] = 0;
                    }
                    self.blocks[gb].valid -= 1;
                    self.append(d, lpn, false, ops);
                    self.stats.gc_units_moved += 1;
                }
            }
            self.scratch = lpns;
            debug_assert_eq!(self.blocks[gb].valid, 0);
            ops.push(FlashOp::Erase { die: d, block: v });
            self.stats.blocks_erased += 1;
            let start = g.pun(d, v, 0, 0) as usize;
            if !self.blocks[gb].home {
                self.p2l[start..start + g.units_per_block as usize].fill(0);
            }
            self.blocks[gb] = super::ftl::Block { valid: 0, state: BlockState::Free, home: false };
            let die = &mut self.dies[d as usize];
            die.free.push_back(v);
            if die.active == u32::MAX {
                // A die that had run out reopens on the block just erased.
                die.active = die.free.pop_front().expect("just pushed");
                die.next_page = 0;
                self.blocks[(d * g.blocks_per_die + die.active) as usize].state = BlockState::Open;
            }
        }
        self.in_gc = false;
    }
}
