//! Files of a job with `nrfiles` > 1, laid out the way an ext2/ext3 file system lays out a
//! source tree, so that reading "a kernel tree" costs what it costs on a disk.
//!
//! The region is cut into block groups of [`GROUP_BYTES`] (ext3's 128 MiB). Files come in
//! directories of [`FILES_PER_DIR`], created depth first. ext3's Orlov allocator
//! (`find_group_orlov`) spreads only top-level directories over random groups; a
//! subdirectory goes to its parent's group while that has room, and a file to its
//! directory's group. So one top-level directory in [`DIRS_PER_TOP_LEVEL`] lands in a random
//! group and the others follow it (a full group spills into the next). Each directory's inodes
//! are one block at the start of its group's inode table; its files lie one after another in
//! the group's data area. A process opens a
//! file with a metadata read of its inode block before its first data I/O to that file,
//! unless that block is the one it read last: the kernel's inode cache keeps the block, so a
//! directory walk reads each directory's inode block once.
//!
//! Sizes: each file's size is drawn uniformly from `filesize=min-max` in 4 KiB steps (or is
//! `size / nrfiles` without `filesize`). A region smaller than a group's metadata holds its
//! inode blocks, then its files; files that find no room in the region's groups (fio's
//! `size=` counts only the files) go to whole groups after it, and the job reserves that room
//! ([`FileTree::footprint_bytes`]).

use std::collections::BTreeSet;

use elevator_core::RandomStream;
use elevator_fio::rand::Draws as FioDraws;
use elevator_fio::FileServiceType;

use crate::offset_distribution::OffsetDistribution;
use crate::random_map::{RandomMap, MAX_RANDOM_MAP_BLOCKS};

/// Ranges per file of a non-uniform file choice (fio's `FIO_FSERVICE_SHIFT`).
const FSERVICE_SHIFT: u32 = 10;
/// Closing files a choice passes over, per file, before it gives up as busy: fio's random
/// choice draws until it finds one not closing; every closing file has I/O in flight, so
/// the process waits for a completion instead of drawing without end.
const CLOSING_PASSES: usize = 16;

/// ext3's block group size with 4 KiB blocks.
pub const GROUP_BYTES: u64 = 128 << 20;
/// How many files share a directory (and so an inode block and a block group).
pub const FILES_PER_DIR: usize = 16;
/// Directories per top-level directory: a Linux source tree has about 20 top-level directories
/// among about 1,000 (2.6.x), so one in 50 starts a new random group.
pub const DIRS_PER_TOP_LEVEL: usize = 50;
/// Where a group's data blocks start: after its bitmaps and inode table.
const GROUP_DATA_OFFSET_BYTES: u64 = 4 << 20;
/// The most block groups a tree may take (8 TiB of them): a bound on what an oversized
/// `nrfiles` × `filesize` lays out.
pub const MAX_TREE_GROUPS: u64 = 1 << 16;
const BLOCK_BYTES: u64 = 4096;

/// One file: where its inode lives and where its data lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileExtent {
    pub meta_offset_bytes: u64,
    pub data_offset_bytes: u64,
    pub len_bytes: u64,
}

/// The files of one process and how far it has got through them.
#[derive(Clone, Debug)]
pub struct FileTree {
    pub files: Vec<FileExtent>,
    /// Bytes from the region's start to the end of the last block group used: the region's
    /// length, or more when files went to groups after it.
    pub footprint_bytes: u64,
    service: FileServiceType,
    current: usize,
    /// fio's `file_service_nr` (`file_service_type=…:N`): a chosen file serves this many I/Os
    /// before the next is chosen.
    service_nr: u32,
    /// I/Os the current file still serves before the next choice (`file_service_left`);
    /// `None` before the first choice.
    service_left: Option<u32>,
    /// The next file round-robin serves (fio's `next_file`).
    next_rr: usize,
    /// A non-uniform file choice (`zipf`, `pareto`, `normal`): fio's generator over
    /// `files << FSERVICE_SHIFT` ranges.
    distribution: Option<OffsetDistribution>,
    /// `file_service_type=random` drawn as fio draws it ([`FileTree::set_fio_file_draws`]);
    /// `None`: from the caller's stream.
    file_draws: Option<FioDraws>,
    /// The last call opened the current file: the next serves it without a new choice (an
    /// open is not one of fio's I/Os).
    hold: bool,
    /// Bytes of each file already issued in the pass (a sequential job's position in it):
    /// one for the job's direction, or with
    /// `per_direction` one for reads and one for writes, as fio keeps a file's position per
    /// direction (`last_pos[ddir]`), so a mixed job reads and writes each file from its start.
    pos: Vec<[u64; 2]>,
    /// Files counted in `finished` (a mixed job's file is found out in one direction at its
    /// turn, and may be out in the other already).
    counted: Vec<bool>,
    /// A sequential mixed job (`rw=readwrite`): each direction at its own position. A random
    /// one shares one, as fio's random map of a file is shared by both directions (each
    /// block once a pass, read or written).
    per_direction: bool,
    /// A random job's placement of its I/O within each file ([`FileTree::set_random`]);
    /// `None`: each file's blocks in order.
    random: Option<RandomPlacement>,
    opened: Vec<bool>,
    /// Files fio has found done and closed (`set_io_u_file`), and those closed since the
    /// caller last asked ([`FileTree::take_closes`]).
    closed: Vec<bool>,
    closes: Vec<usize>,
    /// The files not closed, for round robin to pass over the closed ones at once.
    unclosed: Unclosed,
    /// Under a non-uniform choice: files fio closed and reset when it drew them finished,
    /// opened again when drawn next; and those reopened since the caller last asked
    /// ([`FileTree::take_opens`]).
    reopen: Vec<bool>,
    opens: Vec<usize>,
    finished: usize,
    /// Files given up without I/O (too small for any block left) since the last data I/O.
    /// Under a non-uniform choice a file given up is reset and drawn again, and its reopening
    /// goes out between the turns: past one per file, no file has room for a block, and
    /// the pass ends (fio 3.33 draws on for ever there: `get_next_file_rand` skips no file
    /// it reset; a hang is no answer).
    given_up: usize,
    /// The inode block read last (what the inode cache still holds).
    cached_meta: Option<u64>,
    /// Report every first open ([`FileIo::Open`]) instead of inode reads: a buffered job's
    /// page cache decides what an open reads.
    announce_opens: bool,
    /// fio's `openfiles=`: at most this many files open at once (`nr_open_files` against
    /// `open_files`); `nrfiles`, the default, never holds a file back.
    open_limit: usize,
    /// Whether fio holds each file open now, and which it holds, in order (for the next open
    /// one, [`FileTree::pass_busy_turns`]). A file fio closed while I/O to it is in flight
    /// stays open, `closing`, until that I/O completes (fio's file references): it keeps its
    /// place under `open_limit` and is not chosen.
    is_open: Vec<bool>,
    open_now: BTreeSet<usize>,
    closing: Vec<bool>,
    /// I/Os to each file in flight ([`FileTree::issued`], [`FileTree::completed`]).
    in_flight: Vec<u32>,
}

/// The direction a [`FileTree::next_in`] call tries files in (the one the caller drew, or
/// the last redrawn), and whether a file has been tried in it (then it is spent: fio draws
/// once per file it fills an io_u for).
#[derive(Clone, Copy, Debug)]
pub struct Attempt {
    pub dir: usize,
    pub tried: bool,
}

impl Attempt {
    pub fn new(dir: usize) -> Attempt {
        Attempt { dir, tried: false }
    }
}

/// Where a random job's I/O goes within a file: fio's `get_next_rand_offset` over that
/// file (`last_block`, the file's own random map `f->io_axmap`), with the job's one
/// generator. A file is done when the bytes issued to it in the pass fill it (with a map:
/// every block of it done, which is when fio's next draw finds none free).
#[derive(Clone, Debug)]
struct RandomPlacement {
    /// Each direction's alignment (fio's `ba[ddir]`).
    align_bytes: [u64; 3],
    /// The map's block (fio's `rw_min_bs`); `None` under `norandommap` (drawn with
    /// replacement).
    map_unit_bytes: Option<u64>,
    /// Each file's map, made at its first draw.
    maps: Vec<Option<RandomMap>>,
    /// fio's `random_state` ([`FileTree::set_random`]); `None`: the caller's stream.
    draws: Option<FioDraws>,
}

impl RandomPlacement {
    /// The bytes of a file of `len` its I/O can fill: with a map, its whole blocks.
    fn room(&self, len: u64) -> u64 {
        match self.map_unit_bytes {
            Some(unit) if len / unit <= MAX_RANDOM_MAP_BLOCKS => len / unit * unit,
            _ => len,
        }
    }

    /// A random place for an I/O of `len` in direction `dir` within file `i` of `len_bytes`,
    /// and its length (cut by the file's map to the free blocks there).
    fn place(
        &mut self,
        i: usize,
        len_bytes: u64,
        dir: usize,
        len: u64,
        rng: &mut RandomStream,
    ) -> (u64, u64) {
        let align = self.align_bytes[dir].max(1);
        // fio's last_block for a block of `len` (its smallest, for a fixed size).
        let slots = len_bytes.saturating_sub(len) / align + 1;
        let slot = match self.draws.as_mut() {
            Some(d) => d.below(slots),
            None => rng.below(slots),
        };
        let rel = slot * align;
        let blocks = self.map_unit_bytes.map(|u| (u, len_bytes / u));
        match blocks {
            Some((unit, blocks)) if (1..=MAX_RANDOM_MAP_BLOCKS).contains(&blocks) => {
                let map = self.maps[i].get_or_insert_with(|| RandomMap::new(unit, blocks));
                let (rel, len, _) = map.take(rel, len);
                (rel, len)
            }
            _ => (rel, len),
        }
    }
}

/// The files of a tree not closed, as a union-find over their indices: `next[i]` leads to
/// the first file at or after `i` not closed (`n`: none), so a round robin passes over any
/// run of closed files in near-constant time. Files only close within a pass: they all open
/// again at the next ([`FileTree::rewind`]); the files a non-uniform choice reopens are not
/// chosen round robin.
#[derive(Clone, Debug)]
struct Unclosed {
    next: Vec<u32>,
}

impl Unclosed {
    /// `n` files, none closed. `n` < 2^32: a job file asks for at most
    /// `elevator_fio::MAX_FILES` files.
    fn new(n: usize) -> Unclosed {
        Unclosed { next: (0..=n as u32).collect() }
    }

    /// File `i` is closed.
    fn close(&mut self, i: usize) {
        self.next[i] = i as u32 + 1;
    }

    /// The first file at or after `i` not closed; the number of files if none.
    fn first_from(&mut self, i: usize) -> usize {
        let mut i = i;
        // Path halving: each link passed over now points two on.
        while self.next[i] as usize != i {
            let up = self.next[i] as usize;
            self.next[i] = self.next[up];
            i = up;
        }
        i
    }
}

/// What the tree wants next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileIo {
    /// Read the inode block at this offset (to open file `file`).
    Meta { offset_bytes: u64, file: usize },
    /// Open file `file` for the first time (with [`FileTree::announce_opens`]).
    Open { file: usize },
    /// Open file `file` again, after fio closed it finished under a non-uniform choice
    /// (with [`FileTree::announce_opens`]; its inode is cached).
    Reopen { file: usize },
    Data {
        offset_bytes: u64,
        len_bytes: u64,
        file: usize,
        /// The data direction (0 read, 1 write, 2 trim): the one asked for, or the last
        /// redrawn ([`FileTree::next_in`]).
        dir: usize,
    },
    /// A sync of file `file`, whose turn it takes ([`FileTree::sync_turn`]).
    Sync { file: usize },
    /// The file whose turn it is is not open and `openfiles=` files are (fio's `EBUSY` from
    /// `get_next_file`): fio waits for a completion if I/O is in flight, then asks again
    /// (the choice moved on: round-robin's next file, another draw).
    Busy,
    /// Every file has been read once.
    Done,
}

impl FileTree {
    /// Lays out `nrfiles` files over `[start, start + len)`. A region smaller than a block
    /// group's metadata holds its directories' inode blocks and then its files; files that
    /// do not fit in the region's groups go to whole block groups after it, as the file
    /// system would allocate them elsewhere ([`FileTree::footprint_bytes`] says how far).
    ///
    /// File sizes are fio's (`setup_files`): `filesize=LOW-HIGH` draws each uniformly in
    /// `[LOW, HIGH)` and aligns it down to the job's smallest block `min_bs`
    /// (`get_rand_file_size`), one `filesize=` size is every file's, and without `filesize=`
    /// each file is `len_bytes / nrfiles`. Sizes are kept in whole 512-byte sectors. With
    /// `size_seed` (fio's `rand_seeds[FIO_RAND_FILE_SIZE_OFF]`) the drawn sizes are fio's own,
    /// from its `file_size_state`; without, from `rng`, which also places the directories.
    #[allow(clippy::too_many_arguments)]
    pub fn lay_out(
        start_bytes: u64,
        len_bytes: u64,
        nrfiles: u32,
        filesize: Option<(u64, u64)>,
        min_bs: u64,
        service: FileServiceType,
        rng: &mut RandomStream,
        size_seed: Option<u64>,
    ) -> Result<FileTree, String> {
        let mut size_draws = size_seed.map(|s| FioDraws::new(s, false));
        let groups = (len_bytes / GROUP_BYTES).max(1);
        let mut group_len = len_bytes.min(GROUP_BYTES);
        let dirs = u64::from(nrfiles).div_ceil(FILES_PER_DIR as u64);
        let data_offset = if group_len <= GROUP_DATA_OFFSET_BYTES + BLOCK_BYTES {
            // Its inode blocks before the region's bytes of files.
            let inodes = BLOCK_BYTES * (1 + dirs.min(256));
            group_len += inodes;
            inodes
        } else {
            GROUP_DATA_OFFSET_BYTES
        };
        // Groups past the region (`groups` on) are whole block groups laid after it.
        let group_start = |g: u64| match g.checked_sub(groups) {
            None => start_bytes + g * GROUP_BYTES,
            Some(past) => start_bytes + groups * group_len + past * GROUP_BYTES,
        };
        let capacity = |g: u64| if g < groups { group_len } else { GROUP_BYTES };
        let (min, max) = filesize.unwrap_or_else(|| {
            let each = len_bytes / u64::from(nrfiles);
            (each, each)
        });
        let mut cursor = vec![data_offset; groups as usize];
        let mut files = Vec::with_capacity(nrfiles as usize);
        let mut group = 0u64;
        for i in 0..nrfiles as usize {
            if i % (FILES_PER_DIR * DIRS_PER_TOP_LEVEL) == 0 {
                group = rng.below(groups);
            }
            let size = if max > min {
                let drawn = match size_draws.as_mut() {
                    // get_rand_file_size: (double) sized * (r / (rand_max + 1.0)), truncated.
                    Some(d) => min + d.below(max - min),
                    None => {
                        min + ((u128::from(max - min) * u128::from(rng.below(1 << 32))) >> 32)
                            as u64
                    }
                };
                drawn - drawn % min_bs.max(1)
            } else {
                min
            };
            let size = size.max(512) / 512 * 512;
            if size + data_offset > GROUP_BYTES {
                return Err(format!(
                    "a file of {size} bytes does not fit in a block group ({GROUP_BYTES} bytes with its metadata); lower filesize="
                ));
            }
            // A full group overflows into the next one, as ext3 would allocate elsewhere;
            // with every group full, into a new one after them.
            let mut tries = 0;
            while cursor[group as usize] + size > capacity(group) {
                let known = cursor.len() as u64;
                group = (group + 1) % known;
                tries += 1;
                if tries > known {
                    if known >= MAX_TREE_GROUPS {
                        return Err(format!(
                            "{nrfiles} files of up to {max} bytes need more than {MAX_TREE_GROUPS} block groups (MAX_TREE_GROUPS); lower nrfiles=/filesize="
                        ));
                    }
                    cursor.push(data_offset);
                    group = known;
                    break;
                }
            }
            let dir = (i / FILES_PER_DIR) as u64;
            files.push(FileExtent {
                meta_offset_bytes: group_start(group) + BLOCK_BYTES * (1 + dir % 256),
                data_offset_bytes: group_start(group) + cursor[group as usize],
                len_bytes: size,
            });
            cursor[group as usize] += size.div_ceil(BLOCK_BYTES) * BLOCK_BYTES;
        }
        let footprint_bytes = files
            .iter()
            .map(|f| f.data_offset_bytes + f.len_bytes - start_bytes)
            .max()
            .map_or(len_bytes, |end| (end.div_ceil(BLOCK_BYTES) * BLOCK_BYTES).max(len_bytes));
        let n = files.len();
        let distribution = match &service {
            FileServiceType::Distribution(d) => {
                let mut d = OffsetDistribution::new(d, (n as u64) << FSERVICE_SHIFT, 1, rng)?;
                // fio's init_rand_file_service: ranks in order, the hottest files together.
                if let Some(d) = d.as_mut() {
                    d.disable_hash();
                }
                d
            }
            _ => None,
        };
        Ok(FileTree {
            files,
            footprint_bytes,
            service,
            current: 0,
            service_nr: 1,
            service_left: None,
            next_rr: 0,
            distribution,
            hold: false,
            pos: vec![[0; 2]; n],
            counted: vec![false; n],
            per_direction: false,
            random: None,
            file_draws: None,
            opened: vec![false; n],
            closed: vec![false; n],
            closes: Vec::new(),
            unclosed: Unclosed::new(n),
            reopen: vec![false; n],
            opens: Vec::new(),
            finished: 0,
            given_up: 0,
            cached_meta: None,
            announce_opens: false,
            open_limit: n,
            is_open: vec![false; n],
            open_now: BTreeSet::new(),
            closing: vec![false; n],
            in_flight: vec![0; n],
        })
    }

    /// `file_service_type=…:N`: each chosen file serves `n` I/Os (fio keeps `n - 1` in an
    /// unsigned count, so 0 never switches).
    pub fn set_service_nr(&mut self, n: u32) {
        self.service_nr = n;
    }

    /// `openfiles=N`: at most `n` files open at once; 0 or more than the files is every file
    /// (fio's `fixup_options`).
    pub fn set_open_limit(&mut self, n: u32) {
        let files = self.files.len();
        self.open_limit = if n == 0 { files } else { (n as usize).min(files) };
    }

    /// Whether fio holds file `i` open now.
    pub fn is_open(&self, i: usize) -> bool {
        self.is_open[i]
    }

    /// An I/O to `file` went out: fio holds a reference to the file until it completes.
    pub fn issued(&mut self, file: usize) {
        self.in_flight[file] += 1;
    }

    /// An I/O to `file` completed; a file fio closed meanwhile is closed now.
    pub fn completed(&mut self, file: usize) {
        self.in_flight[file] = self.in_flight[file].saturating_sub(1);
        if self.in_flight[file] == 0 && std::mem::take(&mut self.closing[file]) {
            self.shut(file);
        }
    }

    /// File `i` is no longer open (fio's last `put_file`).
    fn shut(&mut self, i: usize) {
        if std::mem::take(&mut self.is_open[i]) {
            self.open_now.remove(&i);
        }
    }

    /// Chooses the file to serve (fio's `__get_next_file`): the current one while it has
    /// data left and I/Os of its service left (for `sequential`, until it has no data left),
    /// else the next round-robin file with data left or a random one (drawn again until it
    /// has some, as `get_next_file_rand` skips done files). Some file has data left.
    ///
    /// fio marks a file done only when it goes to it and finds no block left: a file whose
    /// last block is out is closed when fio would have gone to it next — at once for
    /// `sequential` (or while its service lasts), at its turn for `roundrobin`, when drawn
    /// for `random`.
    ///
    /// Under `openfiles=`, a choice that falls on a file not open while the limit's worth
    /// are opens nothing and returns false (fio's `EBUSY`); a file closing (closed with I/O
    /// in flight) is passed over, as fio's `FIO_FILE_closing` is. Returns true with the
    /// chosen file open.
    fn choose(&mut self, rng: &mut RandomStream) -> bool {
        // fio passes over the files it has found done (fio_file_done); one whose data is all
        // out is found done when its turn comes and it has no block (FileTree::next_in). A
        // non-uniform choice never marks a file done: fio draws finished ones too, and
        // resets them when it finds them so.
        let live = |t: &FileTree, i: usize| t.distribution.is_some() || !t.closed[i];
        if self.service_left.is_some() {
            let sequential = self.service == FileServiceType::Sequential;
            if live(self, self.current) {
                if sequential {
                    return true;
                }
                if let Some(left) = self.service_left.filter(|&l| l > 0) {
                    self.service_left = Some(left - 1);
                    return true;
                }
            } else if sequential || self.service_left.is_some_and(|l| l > 0) {
                self.close(self.current);
            }
        }
        let n = self.files.len();
        let ranges = (n as u64) << FSERVICE_SHIFT;
        let mut passed = 0;
        self.current = loop {
            let f = match (&self.service, self.distribution.as_mut()) {
                (FileServiceType::Random, _) => match self.file_draws.as_mut() {
                    Some(d) => d.below(n as u64) as usize,
                    None => rng.below(n as u64) as usize,
                },
                (_, Some(d)) => (d.next_slot(0, ranges, 1, rng) >> FSERVICE_SHIFT) as usize,
                _ => {
                    // Round robin (no distribution: live is not closed). fio's
                    // get_next_file_rr walks past the closed files one by one, and so did
                    // this, closing each again (a no-op): quadratic in the files where
                    // openfiles= holds most of them back. The first file not closed from
                    // `next_rr` on, round the end, is the one that walk stops at.
                    let mut f = self.unclosed.first_from(self.next_rr);
                    if f == n {
                        f = self.unclosed.first_from(0);
                    }
                    if f == n {
                        // Every file closed: nothing to choose (callers stop before).
                        return false;
                    }
                    self.next_rr = (f + 1) % n;
                    f
                }
            };
            if !live(self, f) {
                self.close(f);
                continue;
            }
            if self.closing[f] {
                passed += 1;
                if passed > CLOSING_PASSES * n {
                    return false;
                }
                continue;
            }
            if !self.is_open[f] {
                if self.open_now.len() >= self.open_limit {
                    return false;
                }
                self.is_open[f] = true;
                self.open_now.insert(f);
            }
            break f;
        };
        self.service_left = Some(self.service_nr.wrapping_sub(1));
        true
    }

    /// fio's do_io asks again at once after `EBUSY` with no I/O in flight, and round robin
    /// goes on from the next file, `EBUSY` again at each one neither open nor closed while
    /// `openfiles=` files are open. Those turns change nothing else, so this moves the
    /// choice on to the next open file at once: a tree of many files under `openfiles=1`
    /// made every I/O a walk round all of them. A random choice draws at each turn, and
    /// takes them one by one.
    pub fn pass_busy_turns(&mut self) {
        let round_robin = self.service != FileServiceType::Random && self.distribution.is_none();
        if !round_robin || self.open_now.len() < self.open_limit {
            return;
        }
        let next = self.open_now.range(self.next_rr..).next();
        if let Some(&f) = next.or_else(|| self.open_now.first()) {
            self.next_rr = f;
        }
    }

    /// Reports first opens as [`FileIo::Open`] rather than inode-block reads.
    pub fn announce_opens(&mut self) {
        self.announce_opens = true;
    }

    /// Whether files are chosen by a non-uniform distribution (and so never run out).
    pub fn non_uniform(&self) -> bool {
        self.distribution.is_some()
    }

    /// Total data bytes in the tree.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.len_bytes).sum()
    }

    /// [`FileTree::next_in`] for a job of one direction (the tests').
    #[cfg(test)]
    pub fn next(
        &mut self,
        bs: u64,
        fit: impl Fn(u64) -> Option<u64>,
        pass_follows: bool,
        rng: &mut RandomStream,
    ) -> FileIo {
        self.next_in(&mut Attempt::new(0), &mut || 0, bs, fit, pass_follows, rng)
    }

    /// The next I/O: of `bs` bytes, or where the file has less left, the block `fit` gives
    /// for what is left. Where `fit` gives none, fio's `fill_io_u` fails and the file is done
    /// (or, under a non-uniform choice, reset), without I/O; another file is chosen.
    /// `pass_follows`: another pass follows this one (`loops=`, `io_size=`), so once every
    /// file's data is out fio's do_io asks for a file once more (at its last pass it stops at
    /// its bytes), and finds them done in its own order (`close_done_in_turn`).
    ///
    /// The I/O goes in `attempt`'s direction, each file at its own position in it (with
    /// `per_direction`). Each further file tried after one found without room asks `redraw` for
    /// the direction first: fio draws a mixed job's direction in `fill_io_u`, once per file
    /// it tries (`get_io_u`). A mixed job's file is found done when the direction drawn at
    /// its turn has no room, whatever the other has left, as in fio.
    pub fn next_in(
        &mut self,
        attempt: &mut Attempt,
        redraw: &mut dyn FnMut() -> usize,
        bs: u64,
        fit: impl Fn(u64) -> Option<u64>,
        pass_follows: bool,
        rng: &mut RandomStream,
    ) -> FileIo {
        loop {
            // Every file given up without I/O: a non-uniform choice would draw them forever.
            if self.finished == self.files.len() || self.given_up > self.files.len() {
                self.given_up = 0;
                if pass_follows {
                    self.close_done_in_turn();
                }
                return FileIo::Done;
            }
            // A direction a file was tried in is spent: the next file gets a new draw,
            // opened first or not (fio draws after opening, with the same counts).
            let spent = std::mem::take(&mut attempt.tried);
            let i = match self.take_turn(rng) {
                Ok(i) => i,
                Err(first) => {
                    // A busy choice fills no io_u: the spent direction waits for the next
                    // file tried.
                    match first {
                        FileIo::Busy => attempt.tried = spent,
                        _ if spent => attempt.dir = redraw(),
                        _ => {}
                    }
                    return first;
                }
            };
            if spent {
                attempt.dir = redraw();
            }
            attempt.tried = true;
            let dir = attempt.dir;
            let at = if self.per_direction { dir } else { 0 };
            let f = self.files[i];
            let room = self.room(i);
            if self.pos[i][at] >= room {
                // A random job's turn at a file with every block done: fio's
                // __get_next_rand_offset draws before it finds the map full.
                self.draw_for_a_full_file();
                // fio's set_io_u_file: fill_io_u finds no block left, and the file is done and
                // closed; under a non-uniform choice it is reset (fio_file_reset) instead of
                // done. Another choice follows.
                self.close(i);
                if room == 0 {
                    // No room for a block at all (a random map of blocks larger than the
                    // file): given up as surely as a file too small for what is left.
                    self.given_up += 1;
                }
                if self.distribution.is_some() {
                    self.pos[i] = [0; 2];
                    self.forget_map(i);
                    self.reopen[i] = true;
                } else {
                    self.file_done(i);
                }
                continue;
            }
            if let Some(reopen) = self.reopen_if_closed(i) {
                return reopen;
            }
            let left = room - self.pos[i][at];
            let Some(len) = (if bs <= left { Some(bs) } else { fit(left) }) else {
                self.pos[i][at] = room;
                self.file_done(i);
                self.close(i);
                self.given_up += 1;
                continue;
            };
            let (rel, len) = match self.random.as_mut() {
                Some(r) => r.place(i, f.len_bytes, dir, len, rng),
                None => (self.pos[i][at], len),
            };
            let offset = f.data_offset_bytes + rel;
            self.given_up = 0;
            self.pos[i][at] += len;
            if self.pos[i][at] >= room && self.out_every_way(i) {
                self.file_done(i);
            }
            return FileIo::Data { offset_bytes: offset, len_bytes: len, file: i, dir };
        }
    }

    /// Whether file `i` has no room left in any direction the job moves in: known done
    /// before its turn finds it so (a mixed job's file only once both are out).
    fn out_every_way(&self, i: usize) -> bool {
        let (len, p) = (self.room(i), self.pos[i]);
        p[0] >= len && (!self.per_direction || p[1] >= len)
    }

    /// The turn a sync takes: fio's `get_io_u` chooses the file before `fill_io_u` finds the
    /// I/O is a sync, so the sync goes to the file whose turn it is (opened first if need
    /// be: the opening is returned, and the next call goes on with that file), which gets
    /// no data I/O this turn; a file whose data is all out is not found done by a sync.
    pub fn sync_turn(&mut self, rng: &mut RandomStream) -> FileIo {
        let i = match self.take_turn(rng) {
            Ok(i) => i,
            Err(first) => return first,
        };
        self.reopen_if_closed(i).unwrap_or(FileIo::Sync { file: i })
    }

    /// A turn: the file chosen now, or the one held over its opening; `Err` is what must go
    /// first — fio's `EBUSY`, or the file's first opening (the next call goes on with it).
    fn take_turn(&mut self, rng: &mut RandomStream) -> Result<usize, FileIo> {
        if !std::mem::take(&mut self.hold) && !self.choose(rng) {
            return Err(FileIo::Busy);
        }
        let i = self.current;
        let f = self.files[i];
        if !self.opened[i] {
            self.opened[i] = true;
            if self.announce_opens {
                self.hold = true;
                return Err(FileIo::Open { file: i });
            }
            if self.cached_meta != Some(f.meta_offset_bytes) {
                self.cached_meta = Some(f.meta_offset_bytes);
                self.hold = true;
                return Err(FileIo::Meta { offset_bytes: f.meta_offset_bytes, file: i });
            }
        }
        Ok(i)
    }

    /// A file fio closed and reset under a non-uniform choice, drawn again: opened again
    /// (its inode is cached); announced as [`FileIo::Reopen`] when opens are.
    fn reopen_if_closed(&mut self, i: usize) -> Option<FileIo> {
        if !std::mem::take(&mut self.reopen[i]) {
            return None;
        }
        debug_assert!(self.distribution.is_some(), "only a non-uniform choice reopens files");
        self.closed[i] = false;
        if self.announce_opens {
            self.hold = true;
            return Some(FileIo::Reopen { file: i });
        }
        self.opens.push(i);
        None
    }

    /// fio closes file `i` (if it opened it and has not closed it yet).
    fn close(&mut self, i: usize) {
        if self.opened[i] && !self.closed[i] {
            self.closed[i] = true;
            self.unclosed.close(i);
            self.closes.push(i);
        }
        if self.in_flight[i] > 0 && self.is_open[i] {
            self.closing[i] = true;
        } else {
            self.shut(i);
        }
    }

    /// Asked for a file once more with every file's data out, fio's round robin goes round
    /// from its next file and closes each open one it finds done (`get_next_file_rr`), so
    /// they close in that order, not the tree's. A random choice finds them in the order it
    /// draws them, which this does not follow.
    fn close_done_in_turn(&mut self) {
        if self.service == FileServiceType::Random || self.distribution.is_some() {
            return;
        }
        let n = self.files.len();
        for k in 0..n {
            self.close((self.next_rr + k) % n);
        }
    }

    /// The files closed since the last call, in the order fio closed them.
    pub fn take_closes(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.closes)
    }

    /// The files opened again since the last call (after [`FileTree::take_closes`]'s).
    pub fn take_opens(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.opens)
    }

    /// File `i` has no data left (counted once a pass).
    fn file_done(&mut self, i: usize) {
        // Under a non-uniform choice fio never marks a file done: it resets it when it draws
        // it finished (see FileTree::next_in).
        if self.distribution.is_none() && !std::mem::replace(&mut self.counted[i], true) {
            self.finished += 1;
        }
    }

    /// The job reads and writes sequentially (`rw=readwrite`): a position per direction, and
    /// a file out only when both directions are.
    pub fn set_per_direction(&mut self, per_direction: bool) {
        self.per_direction = per_direction;
    }

    /// The job is random (`randread`, `randwrite`, `randrw`, `randtrim`): each I/O goes to a
    /// random place of its file, `align_bytes` apart per direction, each block of the file
    /// once per pass when `map_unit_bytes` gives the random map's block (fio's default;
    /// `None` under `norandommap`: drawn with replacement).
    pub fn set_random(
        &mut self,
        align_bytes: [u64; 3],
        map_unit_bytes: Option<u64>,
        draws: Option<FioDraws>,
    ) {
        let maps = vec![None; self.files.len()];
        self.random = Some(RandomPlacement { align_bytes, map_unit_bytes, maps, draws });
    }

    /// `file_service_type=random` draws its files from fio's own generator (`next_file_state`,
    /// seeded at `FIO_RAND_FILE_OFF`), seeded again at each pass where fio reseeds
    /// ([`FileTree::new_pass_draws`]).
    pub fn set_fio_file_draws(&mut self, draws: FioDraws) {
        self.file_draws = Some(draws);
    }

    /// A new pass (fio's `clear_io_state`): where fio reseeds (`randrepeat` without
    /// `randseed=`), the file and offset draws start over.
    pub fn new_pass_draws(&mut self) {
        if let Some(d) = self.file_draws.as_mut() {
            d.new_pass();
        }
        if let Some(d) = self.random.as_mut().and_then(|r| r.draws.as_mut()) {
            d.new_pass();
        }
    }

    /// fio draws an offset before it finds a file's random map full; the draw is spent.
    fn draw_for_a_full_file(&mut self) {
        let random = self.random.as_mut().filter(|r| r.map_unit_bytes.is_some());
        if let Some(d) = random.and_then(|r| r.draws.as_mut()) {
            d.below(1);
        }
    }

    /// The bytes of file `i` a pass can issue.
    fn room(&self, i: usize) -> u64 {
        let len = self.files[i].len_bytes;
        self.random.as_ref().map_or(len, |r| r.room(len))
    }

    /// File `i` starts over: its random map, if any, is empty again.
    fn forget_map(&mut self, i: usize) {
        if let Some(r) = self.random.as_mut() {
            r.maps[i] = None;
        }
    }

    /// Starts another pass over the tree (time-based jobs); files stay open, or, where fio
    /// closed them as done, count as open again (no new inode read).
    pub fn rewind(&mut self) {
        self.closed.iter_mut().for_each(|c| *c = false);
        self.unclosed = Unclosed::new(self.files.len());
        // fio's clear_io_state closes every file; those with I/O still in flight close
        // when it completes.
        for i in 0..self.files.len() {
            if self.in_flight[i] > 0 && self.is_open[i] {
                self.closing[i] = true;
            } else {
                self.shut(i);
            }
        }
        self.reopen.iter_mut().for_each(|r| *r = false);
        self.opens.clear();
        self.pos.iter_mut().for_each(|p| *p = [0; 2]);
        if let Some(r) = self.random.as_mut() {
            r.maps.iter_mut().for_each(|m| *m = None);
        }
        self.counted.iter_mut().for_each(|c| *c = false);
        self.finished = 0;
        self.current = 0;
        // fio's round robin goes on where it was (`td->next_file` outlives clear_io_state).
        self.service_left = None;
        self.hold = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Random placement: with a map, each block of each file once a pass, not in order, the
    /// file done when they all are; without one, as many draws, some repeated.
    #[test]
    fn a_random_job_takes_each_files_blocks_once_from_its_own_map() {
        for map in [Some(4096), None] {
            let mut t = tree(FileServiceType::RoundRobin);
            t.set_random([4096; 3], map, None);
            let mut rng = RandomStream::new(7, 0);
            let mut seen: Vec<Vec<u64>> = vec![Vec::new(); t.files.len()];
            loop {
                match t.next(4096, |_| None, false, &mut rng) {
                    FileIo::Data { offset_bytes, len_bytes, file, .. } => {
                        assert_eq!(len_bytes, 4096);
                        let f = t.files[file];
                        assert!(offset_bytes >= f.data_offset_bytes);
                        assert!(offset_bytes + len_bytes <= f.data_offset_bytes + f.len_bytes);
                        seen[file].push(offset_bytes - f.data_offset_bytes);
                    }
                    FileIo::Done => break,
                    _ => {}
                }
            }
            let mut shuffled = false;
            for (i, offsets) in seen.iter().enumerate() {
                let blocks = t.files[i].len_bytes / 4096;
                assert_eq!(offsets.len() as u64, blocks, "file {i}: one I/O per block");
                shuffled |= offsets.windows(2).any(|w| w[1] < w[0]);
                let distinct: BTreeSet<u64> = offsets.iter().copied().collect();
                if map.is_some() {
                    assert_eq!(distinct.len() as u64, blocks, "file {i}: each block once");
                }
            }
            assert!(shuffled, "offsets drawn in order");
            let distinct: usize =
                seen.iter().map(|o| o.iter().collect::<BTreeSet<_>>().len()).sum();
            let all: usize = seen.iter().map(Vec::len).sum();
            assert_eq!(distinct == all, map.is_some(), "repeats only without a map");
        }
    }

    fn tree(service: FileServiceType) -> FileTree {
        let mut rng = RandomStream::new(1, 0);
        FileTree::lay_out(1 << 30, 4 << 30, 100, Some((4096, 65536)), 4096, service, &mut rng, None)
            .unwrap()
    }

    #[test]
    fn files_are_clustered_by_directory_inside_the_region() {
        let t = tree(FileServiceType::Sequential);
        assert_eq!(t.files.len(), 100);
        for f in &t.files {
            assert!(f.data_offset_bytes >= 1 << 30 && f.data_offset_bytes + f.len_bytes <= 5 << 30);
            assert!((4096..=65536).contains(&f.len_bytes) && f.len_bytes % 4096 == 0);
        }
        // Files of one directory are adjacent; the inode block precedes them in the group.
        let (a, b) = (t.files[0], t.files[1]);
        assert_eq!(b.data_offset_bytes, a.data_offset_bytes + a.len_bytes);
        assert_eq!(a.meta_offset_bytes, b.meta_offset_bytes);
        assert!(a.meta_offset_bytes < a.data_offset_bytes);
    }

    #[test]
    fn sequential_service_opens_then_reads_each_file_once() {
        let mut t = tree(FileServiceType::Sequential);
        let mut rng = RandomStream::new(2, 0);
        let (mut metas, mut bytes) = (0, 0);
        loop {
            match t.next(16384, Some, false, &mut rng) {
                FileIo::Meta { .. } => metas += 1,
                FileIo::Data { len_bytes, .. } => bytes += len_bytes,
                FileIo::Open { .. } | FileIo::Reopen { .. } => {
                    unreachable!("opens are not announced")
                }
                FileIo::Busy | FileIo::Sync { .. } => unreachable!("every file may be open"),
                FileIo::Done => break,
            }
        }
        // One inode block per directory of FILES_PER_DIR files: the inode cache keeps it.
        assert_eq!(metas, 100usize.div_ceil(FILES_PER_DIR));
        assert_eq!(bytes, t.total_bytes());
        t.rewind();
        assert!(
            matches!(t.next(16384, Some, false, &mut rng), FileIo::Data { .. }),
            "files stay open across passes"
        );
    }

    /// The files served, one digit per data I/O, for 4 files of 16 KiB read 4 KiB at a time.
    fn order(service: FileServiceType, nr: u32) -> String {
        order_open(service, nr, 0)
    }

    /// [`order`] under `openfiles=open`, a `.` where the choice fell on a file it could not
    /// open (fio's `EBUSY`).
    fn order_open(service: FileServiceType, nr: u32, open: u32) -> String {
        let mut rng = RandomStream::new(1, 0);
        let mut t =
            FileTree::lay_out(0, 64 << 20, 4, Some((16384, 16384)), 4096, service, &mut rng, None)
                .unwrap();
        t.set_service_nr(nr);
        t.set_open_limit(open);
        let mut out = String::new();
        loop {
            match t.next(4096, Some, false, &mut rng) {
                FileIo::Data { file, .. } => out.push(char::from(b'0' + file as u8)),
                FileIo::Meta { .. } => {}
                FileIo::Busy => out.push('.'),
                FileIo::Open { .. } | FileIo::Reopen { .. } | FileIo::Sync { .. } => {
                    unreachable!()
                }
                FileIo::Done => return out,
            }
        }
    }

    /// The data I/O of a tree of `files` files of `sizes` (drawn), `openfiles=open`, nothing
    /// in flight between calls: each busy turn taken (`pass` false), or passed at once.
    fn data_order(
        files: u32,
        sizes: (u64, u64),
        service: FileServiceType,
        open: u32,
        pass: bool,
    ) -> Vec<(usize, u64)> {
        let mut rng = RandomStream::new(7, 0);
        let mut t =
            FileTree::lay_out(0, 1 << 30, files, Some(sizes), 4096, service, &mut rng, None)
                .unwrap();
        t.set_open_limit(open);
        let mut out = Vec::new();
        loop {
            match t.next(4096, Some, false, &mut rng) {
                FileIo::Data { file, offset_bytes, .. } => out.push((file, offset_bytes)),
                FileIo::Busy if pass => t.pass_busy_turns(),
                FileIo::Done => return out,
                _ => {}
            }
        }
    }

    #[test]
    fn passing_busy_turns_at_once_serves_what_taking_them_does() {
        // Round robin with files of many sizes, a few or one open at a time: the busy turns
        // (a walk round the tree per I/O under openfiles=1) change nothing but the next file.
        for service in [FileServiceType::RoundRobin, FileServiceType::Sequential] {
            for (files, sizes, open) in [
                (40, (4096, 65536), 1),
                (40, (4096, 65536), 3),
                (200, (4096, 4096), 1),
                (9, (8192, 32768), 8),
            ] {
                let taken = data_order(files, sizes, service.clone(), open, false);
                let passed = data_order(files, sizes, service.clone(), open, true);
                assert!(!taken.is_empty());
                assert_eq!(
                    taken, passed,
                    "{service:?} {files} files of {sizes:?}, openfiles={open}"
                );
            }
        }
    }

    #[test]
    fn openfiles_keeps_at_most_that_many_files_open() {
        // As real fio 3.33 serves them: round-robin passes over the files it cannot open
        // (each such turn an EBUSY) and goes on with those it has; a file found done closes
        // and makes room for the next.
        assert_eq!(
            order_open(FileServiceType::RoundRobin, 1, 2),
            "01..01..01..01..23232323",
            "openfiles=2"
        );
        assert_eq!(
            order_open(FileServiceType::RoundRobin, 1, 1).replace('.', ""),
            "0000111122223333"
        );
        assert_eq!(
            order_open(FileServiceType::RoundRobin, 1, 9),
            order(FileServiceType::RoundRobin, 1)
        );
        let random = order_open(FileServiceType::Random, 1, 2).replace('.', "");
        assert_eq!(random.len(), 16);
        // Never a third file before one of two open ones is done (read four times).
        let mut open = BTreeSet::new();
        let mut reads = [0; 4];
        for f in random.bytes().map(|b| usize::from(b - b'0')) {
            open.insert(f);
            reads[f] += 1;
            assert!(open.len() <= 2, "{random}");
            if reads[f] == 4 {
                open.remove(&f);
            }
        }
    }

    #[test]
    fn a_file_closed_with_io_in_flight_keeps_its_place_until_it_completes() {
        let mut rng = RandomStream::new(1, 0);
        let service = FileServiceType::Sequential;
        let mut t =
            FileTree::lay_out(0, 64 << 20, 2, Some((4096, 4096)), 4096, service, &mut rng, None)
                .unwrap();
        t.set_open_limit(1);
        let mut next = |t: &mut FileTree| loop {
            match t.next(4096, Some, false, &mut rng) {
                FileIo::Meta { .. } => continue,
                other => return other,
            }
        };
        assert!(matches!(next(&mut t), FileIo::Data { file: 0, .. }));
        t.issued(0);
        // File 0 is done and closed, but its read is in flight: file 1 waits for the room.
        assert_eq!(next(&mut t), FileIo::Busy);
        assert_eq!(next(&mut t), FileIo::Busy);
        t.completed(0);
        assert!(matches!(next(&mut t), FileIo::Data { file: 1, .. }));
        assert_eq!(next(&mut t), FileIo::Done);
    }

    #[test]
    fn files_are_served_in_fio_s_order() {
        // As real fio 3.33 logs them (write_iolog, null engine): the open does not take the
        // file's turn, and a done file gives its remaining service to the next.
        assert_eq!(order(FileServiceType::RoundRobin, 1), "0123012301230123");
        assert_eq!(order(FileServiceType::RoundRobin, 3), "0001112223330123");
        assert_eq!(order(FileServiceType::Sequential, 3), "0000111122223333");
        assert_eq!(order(FileServiceType::RoundRobin, 0), "0000111122223333", "0: never switch");
        let random = order(FileServiceType::Random, 2);
        assert_eq!(random.len(), 16);
        for f in ['0', '1', '2', '3'] {
            assert_eq!(random.matches(f).count(), 4, "{random}: each file read once");
        }
        // Served two at a time, but for a file that runs out inside its pair.
        let b = random.as_bytes();
        let switches = b.windows(2).filter(|w| w[0] != w[1]).count();
        assert!(switches <= 8, "{random}");
    }

    #[test]
    fn files_past_the_region_go_to_block_groups_after_it() {
        let mut rng = RandomStream::new(1, 0);
        let lay = |len: u64, n: u32, size: u64, rng: &mut RandomStream| {
            FileTree::lay_out(
                0,
                len,
                n,
                Some((size, size)),
                4096,
                FileServiceType::Sequential,
                rng,
                None,
            )
        };
        // fio's size=64m nrfiles=16 filesize=4m: the files fill the region, the metadata does
        // not fit beside them; the last go to a group after it.
        let t = lay(64 << 20, 16, 4 << 20, &mut rng).unwrap();
        assert!(t.footprint_bytes > 64 << 20 && t.footprint_bytes <= (64 << 20) + GROUP_BYTES);
        assert!(t.files.iter().all(|f| f.data_offset_bytes + f.len_bytes <= t.footprint_bytes));
        // A tree smaller than a group's metadata: its inode block, then its files.
        let t = lay(256 << 10, 4, 64 << 10, &mut rng).unwrap();
        assert_eq!(t.files[0].meta_offset_bytes, BLOCK_BYTES);
        assert_eq!(t.files[0].data_offset_bytes, 2 * BLOCK_BYTES);
        assert_eq!(t.footprint_bytes, 2 * BLOCK_BYTES + (256 << 10));
        // No file overlaps another, however far they spill.
        let t = lay(16 << 20, 10_000, 1 << 20, &mut rng).unwrap();
        let mut spans: Vec<(u64, u64)> =
            t.files.iter().map(|f| (f.data_offset_bytes, f.len_bytes)).collect();
        spans.sort_unstable();
        assert!(spans.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0));
        assert!(t.footprint_bytes >= 10_000 << 20);
    }

    #[test]
    fn file_sizes_are_drawn_as_fio_draws_them() {
        // From elevator's stream, and from fio's own generator (file_size_state).
        for size_seed in [None, Some(0x1234)] {
            let sizes = |range: (u64, u64), min_bs: u64| -> BTreeSet<u64> {
                let mut rng = RandomStream::new(7, 0);
                let service = FileServiceType::Sequential;
                let t = FileTree::lay_out(
                    0,
                    1 << 30,
                    2000,
                    Some(range),
                    min_bs,
                    service,
                    &mut rng,
                    size_seed,
                );
                t.unwrap().files.iter().map(|f| f.len_bytes).collect()
            };
            // get_rand_file_size: uniform in [low, high), aligned down to the smallest block.
            let kib = |v: &[u64]| v.iter().map(|k| k << 10).collect::<BTreeSet<u64>>();
            assert_eq!(sizes((4 << 10, 24 << 10), 4096), kib(&[4, 8, 12, 16, 20]));
            assert_eq!(
                sizes((4 << 10, 24 << 10), 8192),
                kib(&[8, 16]).union(&[512].into()).copied().collect()
            );
            assert_eq!(sizes((30 << 10, 30 << 10), 6144), kib(&[30]), "one size: as given");
        }
        // No filesize=: size / nrfiles each.
        let mut rng = RandomStream::new(7, 0);
        let service = FileServiceType::Sequential;
        let t = FileTree::lay_out(0, 30 << 10, 3, None, 4096, service, &mut rng, None);
        assert!(t.unwrap().files.iter().all(|f| f.len_bytes == 10 << 10));
    }

    #[test]
    fn a_file_larger_than_a_block_group_is_an_error_not_a_panic() {
        let mut rng = RandomStream::new(1, 0);
        let laid = FileTree::lay_out(
            0,
            1 << 30,
            4,
            Some((200 << 20, 200 << 20)),
            4096,
            FileServiceType::Sequential,
            &mut rng,
            None,
        );
        // (Not expect_err: a tree's Debug is long.)
        let Err(e) = laid else { panic!("laid out") };
        assert!(e.contains("block group"), "{e}");
    }
}
