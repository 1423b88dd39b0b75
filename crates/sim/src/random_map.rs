//! fio's random map (`lib/axmap.c`): which blocks of its region a random job has already done
//! in this pass, so that by default a random job does each block once per pass (fio's
//! `norandommap=1` turns it off and offsets are drawn with replacement).
//!
//! What fio does with it (`__get_next_rand_offset`, `mark_random_map`): a drawn block that is
//! free is taken; a drawn block already done is replaced by the next free block after it
//! (`axmap_next_free`, wrapping to the start of the region); an I/O marks the blocks it
//! covers, and one longer than the run of free blocks at its offset is cut to that run; when
//! every block is done the pass is over, and a job that goes on (time-based, or `io_size`
//! larger than `size`) starts the next with an empty map (`fio_file_reset`).
//!
//! One bit per block of the job's smallest block size, with a summary bit per word of them
//! (full or not), so finding the next free block skips 4096 done blocks per summary bit read.
//! The bits live in chunks of `CHUNK_WORDS` words, made when a block in them is first
//! marked and kept by chunk number (fio's axmap allocates the whole map up front): a job that
//! does a few thousand I/Os over a 100 GiB partition costs a few thousand chunks, not 3 MiB,
//! and seed 001's 350 random readers fit in the scenario memory bound.

/// The most blocks a job's random map may cover: 2^29 bits, 64 MiB of map, a 2 TiB region of
/// 4 KiB blocks. fio allocates whatever it needs, and fails the job (or, with
/// `softrandommap=1`, goes on without a map) when it cannot.
pub const MAX_RANDOM_MAP_BLOCKS: u64 = 1 << 29;

use elevator_core::hash::FastHashMap;

/// Words per lazily made chunk of the map: 64 bytes, 512 blocks (small, since random I/O
/// touches one chunk per I/O; large enough that a map filled in costs little over a dense one).
const CHUNK_WORDS: usize = 8;

/// The blocks of one region a random job has done in its current pass.
#[derive(Clone, Debug)]
pub struct RandomMap {
    /// Bytes per block (the job's smallest block size over its directions).
    unit_bytes: u64,
    blocks: u64,
    /// Bit `i % 64` of word `i / 64`: block `i` is done. Word `w` is in chunk
    /// `w / CHUNK_WORDS`; a chunk not made yet has all its blocks free. Never iterated, so
    /// its order cannot reach the output.
    /// Every drawn offset looks its chunk up: the fast hash (SipHash was a third of a random
    /// job's simulation).
    chunks: FastHashMap<usize, [u64; CHUNK_WORDS]>,
    /// Words that hold blocks (`blocks / 64` rounded up).
    n_words: usize,
    /// Bit `w % 64` of summary word `w / 64`: word `w` is all done.
    full_words: Vec<u64>,
    done: u64,
}

impl RandomMap {
    /// A map of `blocks` blocks of `unit_bytes` (`blocks` at most [`MAX_RANDOM_MAP_BLOCKS`]).
    pub fn new(unit_bytes: u64, blocks: u64) -> RandomMap {
        assert!(unit_bytes > 0 && blocks > 0 && blocks <= MAX_RANDOM_MAP_BLOCKS);
        let n_words = blocks.div_ceil(64) as usize;
        RandomMap {
            unit_bytes,
            blocks,
            chunks: FastHashMap::default(),
            n_words,
            full_words: vec![0; n_words.div_ceil(64)],
            done: 0,
        }
    }

    pub fn unit_bytes(&self) -> u64 {
        self.unit_bytes
    }

    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Starts a new pass: every block free (the chunks go).
    pub fn reset(&mut self) {
        self.chunks.clear();
        self.full_words.iter_mut().for_each(|w| *w = 0);
        self.done = 0;
    }

    /// The bits past the last block, set in the word that holds the map's end, so that word
    /// is full when its blocks are.
    fn past_end_bits(&self, w: usize) -> u64 {
        let tail = self.blocks % 64;
        if w + 1 == self.n_words && tail != 0 {
            !0u64 << tail
        } else {
            0
        }
    }

    /// Word `w` (below `n_words`).
    #[inline]
    fn word(&self, w: usize) -> u64 {
        match self.chunks.get(&(w / CHUNK_WORDS)) {
            Some(c) => c[w % CHUNK_WORDS],
            None => self.past_end_bits(w),
        }
    }

    /// Word `w`, its chunk made if it was not.
    fn word_mut(&mut self, w: usize) -> &mut u64 {
        let ci = w / CHUNK_WORDS;
        let last = self.n_words - 1;
        let past_end = self.past_end_bits(last);
        let chunk = self.chunks.entry(ci).or_insert_with(|| {
            let mut c = [0u64; CHUNK_WORDS];
            if last / CHUNK_WORDS == ci {
                c[last % CHUNK_WORDS] = past_end;
            }
            c
        });
        &mut chunk[w % CHUNK_WORDS]
    }

    /// fio's use of its map for a drawn offset `rel` (relative to the map's region) and
    /// length `len` (`__get_next_rand_offset`, `mark_random_map`): a block already done gives
    /// way to the next free one, a full map starts a new pass (`fio_file_reset`; true in the
    /// result), and the I/O is cut to the run of free blocks it starts. Returns the offset,
    /// the length and whether a new pass began.
    pub fn take(&mut self, rel: u64, len: u64) -> (u64, u64, bool) {
        let unit = self.unit_bytes;
        let mut block = (rel / unit).min(self.blocks - 1);
        let mut new_pass = false;
        if self.is_done(block) {
            match self.next_free(block) {
                Some(free) => block = free,
                None => {
                    self.reset();
                    new_pass = true;
                }
            }
        }
        let marked = self.mark(block, len.div_ceil(unit).max(1));
        (block * unit, len.min(marked * unit), new_pass)
    }

    /// Every block is done: the pass is over.
    pub fn is_full(&self) -> bool {
        self.done == self.blocks
    }

    pub fn is_done(&self, block: u64) -> bool {
        block >= self.blocks || self.word((block / 64) as usize) >> (block % 64) & 1 == 1
    }

    /// Marks up to `n` blocks from `block` as done, stopping at the first one already done or
    /// the end of the map (`axmap_set_nr`); returns how many it marked. A word at a time.
    pub fn mark(&mut self, block: u64, n: u64) -> u64 {
        let mut marked = 0;
        while marked < n && block + marked < self.blocks {
            let b = block + marked;
            let (w, bit) = ((b / 64) as usize, (b % 64) as u32);
            let word = self.word_mut(w);
            // Free blocks from `bit` up to the word's next done one (bits past the map's end
            // are set), at most the rest of the run.
            let free_run = u64::from((*word >> bit).trailing_zeros().min(64 - bit));
            let take = free_run.min(n - marked);
            if take == 0 {
                break;
            }
            let bits = if take == 64 { !0 } else { ((1u64 << take) - 1) << bit };
            *word |= bits;
            if *word == !0 {
                self.full_words[w / 64] |= 1 << (w % 64);
            }
            marked += take;
            if take < 64 - u64::from(bit) {
                break; // stopped inside the word: at a done block or the run's end
            }
        }
        self.done += marked;
        marked
    }

    /// The first free block after `block`, else the first free block from the start
    /// (`axmap_next_free`); none when the map is full.
    pub fn next_free(&self, block: u64) -> Option<u64> {
        if self.is_full() {
            return None;
        }
        self.free_from(block + 1).or_else(|| self.free_from(0))
    }

    /// The first free block at or after `from`.
    fn free_from(&self, from: u64) -> Option<u64> {
        if from >= self.blocks {
            return None;
        }
        let w = (from / 64) as usize;
        // The rest of `from`'s own word.
        let free = !self.word(w) & (!0u64 << (from % 64));
        if free != 0 {
            return Some(w as u64 * 64 + u64::from(free.trailing_zeros()));
        }
        // Then the next word not full, found through the summary.
        let start = w + 1;
        let mut s = start / 64;
        let mut not_full = !self.full_words.get(s).copied().unwrap_or(!0) & (!0u64 << (start % 64));
        loop {
            if not_full != 0 {
                let word = s * 64 + not_full.trailing_zeros() as usize;
                if word >= self.n_words {
                    return None;
                }
                let free = !self.word(word);
                return Some(word as u64 * 64 + u64::from(free.trailing_zeros()));
            }
            s += 1;
            if s >= self.full_words.len() {
                return None;
            }
            not_full = !self.full_words[s];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_drawn_block_done_gives_way_to_the_next_free_one_wrapping() {
        let mut m = RandomMap::new(4096, 10);
        assert_eq!(m.mark(3, 1), 1);
        assert_eq!(m.next_free(2), Some(4), "the next one after, not the drawn one");
        assert_eq!(m.mark(9, 1), 1);
        assert_eq!(m.next_free(8), Some(0), "past the end it wraps to the start");
        assert_eq!(m.mark(0, 3), 3);
        assert_eq!(m.mark(3, 4), 0, "block 3 is done: nothing marked");
        assert_eq!(m.mark(4, 10), 5, "a run stops at the next done block (9)");
        assert!(m.is_full());
        assert_eq!(m.next_free(0), None);
        m.reset();
        assert!(!m.is_full() && !m.is_done(9) && m.is_done(10));
    }

    #[test]
    fn the_summary_skips_full_words() {
        let blocks = 64 * 64 * 3 + 5;
        let mut m = RandomMap::new(512, blocks);
        assert_eq!(m.mark(0, blocks - 1), blocks - 1);
        assert_eq!(m.next_free(0), Some(blocks - 1));
        assert_eq!(m.mark(blocks - 1, 1), 1);
        assert!(m.is_full());
    }

    #[test]
    fn chunks_are_made_only_where_blocks_are_marked() {
        let blocks = (CHUNK_WORDS as u64 * 64) * 5 + 7;
        let mut m = RandomMap::new(4096, blocks);
        assert_eq!(m.mark(blocks - 3, 10), 3, "the run stops at the map's end");
        assert_eq!(m.chunks.len(), 1);
        assert_eq!(m.next_free(blocks - 4), Some(0), "wraps to an unmade chunk");
        let chunk_blocks = CHUNK_WORDS as u64 * 64;
        assert_eq!(m.mark(chunk_blocks - 2, 4), 4, "a run across a chunk boundary");
        assert_eq!(m.chunks.len(), 3);
        assert_eq!(m.next_free(chunk_blocks - 3), Some(chunk_blocks + 2));
        m.reset();
        assert!(m.chunks.is_empty() && !m.is_done(blocks - 1));
    }

    /// Marks `marks` (block, count) on a map of `blocks` blocks and on a plain list, then
    /// checks every mark's count, `next_free` from `from` against a scan, and `is_full`.
    fn check_against_a_scan(
        unit: u64,
        blocks: u64,
        marks: Vec<(u64, u64)>,
        from: u64,
    ) -> Result<(), TestCaseError> {
        let mut m = RandomMap::new(unit, blocks);
        let mut done = vec![false; blocks as usize];
        for (b, n) in marks {
            let b = b % blocks;
            let marked = m.mark(b, n);
            let mut expect = 0;
            while expect < n && b + expect < blocks && !done[(b + expect) as usize] {
                done[(b + expect) as usize] = true;
                expect += 1;
            }
            prop_assert_eq!(marked, expect);
        }
        let from = from % blocks;
        let scan = (from + 1..blocks).chain(0..blocks).find(|&i| !done[i as usize]);
        prop_assert_eq!(m.next_free(from), scan);
        prop_assert_eq!(m.is_full(), done.iter().all(|&d| d));
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// The same over maps of several chunks, with runs that cross them.
        #[test]
        fn next_free_is_the_scan_across_chunks(
            blocks in 1u64..200_000,
            marks in proptest::collection::vec((0u64..200_000, 1u64..70_000), 0..12),
            from in 0u64..200_000,
        ) {
            check_against_a_scan(512, blocks, marks, from)?;
        }
    }

    proptest! {
        /// Whatever is marked, next_free names the first free block after the given one
        /// (wrapping), as a scan of the blocks does, and the count of done blocks is right.
        #[test]
        fn next_free_is_the_scan(
            blocks in 1u64..9000,
            marks in proptest::collection::vec((0u64..9000, 1u64..300), 0..60),
            from in 0u64..9000,
        ) {
            check_against_a_scan(4096, blocks, marks, from)?;
        }
    }
}
