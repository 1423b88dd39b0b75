//! The worker's I/O buffers: aligned for `O_DIRECT`, physically contiguous where the kernel
//! can make them so, reused, and registered with the worker's ring.
//!
//! Why contiguity matters: a device takes a request as one descriptor per physically
//! contiguous segment. A 1 MiB buffer of scattered 4 KiB pages is 256 segments: past a
//! virtio-blk queue's `max_segments` (254, so the block layer splits it) and enough to fill
//! the virtqueue's descriptor ring, so the device accepts one such request at a time. Measured
//! on a virtio disk: eight 1 MiB reads in flight from the server, 0.9 at the device, half the
//! bandwidth fio gets from the same file with its (huge-page backed) buffers. Buffers here are
//! carved out of 2 MiB regions mapped with `MADV_HUGEPAGE` before their first touch, so a
//! buffer of up to 2 MiB is one segment whenever the kernel grants the huge page.
//!
//! Each region is registered with the ring (a sparse table, `IORING_REGISTER_BUFFERS2` and
//! updates): reads and writes then use `READ_FIXED`/`WRITE_FIXED` and skip pinning the pages
//! per request. Registration is optional — an old kernel or a `RLIMIT_MEMLOCK` too small for
//! the pinned pages leaves the buffers unregistered, logged once.
//!
//! Memory: regions of up to 2 MiB are split into buffers of one size class and reused; larger
//! buffers are regions of their own, a few kept per class, the rest unmapped. The peak is
//! bounded by the server's memory budget (`budget.rs`), and after a burst [`BufPool::trim`]
//! (called by an idle worker) unmaps every free large buffer and every region whose buffers
//! are all free, so the memory goes back to the system.

use std::cell::RefCell;
use std::rc::Rc;

/// Regions for buffers up to this size are huge pages split into equal buffers.
const REGION_BYTES: usize = 2 << 20;
/// The smallest buffer (and the alignment of every buffer).
const MIN_BYTES: usize = 4096;
/// Free buffers kept per size class above `REGION_BYTES`.
const KEEP_LARGE: usize = 8;
/// Registered buffer table size (the kernel's `IORING_MAX_REG_BUFFERS`).
const TABLE_SLOTS: u32 = 1 << 14;

/// A buffer of `len` bytes from a [`BufPool`]; back in the pool when dropped.
pub(crate) struct IoBuf {
    ptr: *mut u8,
    len: usize,
    /// log2 of the capacity.
    class: u8,
    /// The registered-buffer index of the region, if registered.
    fixed: Option<u16>,
    pool: Rc<RefCell<Pool>>,
}

impl IoBuf {
    /// The start of the buffer, for an SQE. Writing through it is the kernel's business: the
    /// caller keeps the buffer alive until the completion.
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// The registered-buffer index for `READ_FIXED`/`WRITE_FIXED`.
    pub fn fixed_index(&self) -> Option<u16> {
        self.fixed
    }

    pub fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for len bytes and uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// `r` of the buffer, without a reference to the rest: other pieces of a shared read
    /// buffer may still be written by the kernel.
    pub fn slice(&self, r: std::ops::Range<usize>) -> &[u8] {
        assert!(r.start <= r.end && r.end <= self.len, "slice within the buffer");
        // SAFETY: within the buffer (checked above); the caller reads only completed ranges.
        unsafe { std::slice::from_raw_parts(self.ptr.add(r.start), r.end - r.start) }
    }

    /// Zeroes `r` (the part of a read piece past the end of the file).
    ///
    /// # Safety
    /// No reference to `r` exists and no I/O into it is in flight.
    pub unsafe fn zero(&self, r: std::ops::Range<usize>) {
        assert!(r.start <= r.end && r.end <= self.len, "zero within the buffer");
        // SAFETY: within the buffer; exclusive by the caller's promise.
        unsafe { std::ptr::write_bytes(self.ptr.add(r.start), 0, r.end - r.start) };
    }
}

impl Drop for IoBuf {
    fn drop(&mut self) {
        let chunk = Chunk { ptr: self.ptr, fixed: self.fixed };
        self.pool.borrow_mut().put(self.class, chunk);
    }
}

/// A free buffer.
struct Chunk {
    ptr: *mut u8,
    fixed: Option<u16>,
}

/// The buffers of one worker (one ring). Not shared between threads: the worker allocates,
/// sends from and frees its buffers itself.
pub(crate) struct BufPool {
    pool: Rc<RefCell<Pool>>,
}

struct Pool {
    /// Free buffers by size class (log2 of the capacity).
    free: Vec<Vec<Chunk>>,
    /// Registration: on until the kernel refuses.
    register: bool,
    /// Slots of unmapped large buffers whose registration still pins the pages: cleared at
    /// the next `take`, which has the ring (a buffer's drop does not).
    slots_stale: Vec<u16>,
    /// Unused registered-table slots (cleared), then the next new one.
    slots_free: Vec<u16>,
    next_slot: u32,
    /// The 2 MiB regions split into small buffers, unmapped with the pool (or by `trim`).
    regions: Vec<*mut u8>,
    /// A buffer came back since the last trim: there may be memory to give back.
    dirty: bool,
}

impl Drop for Pool {
    /// Runs once the last buffer is back (each holds the pool) and the ring is gone.
    fn drop(&mut self) {
        for (class, list) in self.free.iter().enumerate() {
            if 1usize << class > REGION_BYTES {
                for c in list {
                    // SAFETY: a large buffer's own mapping, free.
                    unsafe { libc::munmap(c.ptr.cast(), 1 << class) };
                }
            }
        }
        for &r in &self.regions {
            // SAFETY: mapped by `map_region`; every buffer carved from it is free.
            unsafe { libc::munmap(r.cast(), REGION_BYTES) };
        }
    }
}

impl BufPool {
    /// A pool for `ring`: creates the ring's (sparse) registered buffer table.
    pub fn new(ring: &io_uring::IoUring) -> BufPool {
        let register = match ring.submitter().register_buffers_sparse(TABLE_SLOTS) {
            Ok(()) => true,
            Err(e) => {
                tracing::info!(error = %e, "no registered buffers (kernel before 5.19?)");
                false
            }
        };
        BufPool {
            pool: Rc::new(RefCell::new(Pool {
                free: Vec::new(),
                register,
                slots_stale: Vec::new(),
                slots_free: Vec::new(),
                next_slot: 0,
                regions: Vec::new(),
                dirty: false,
            })),
        }
    }

    /// A buffer of `len` bytes (at least 4 KiB of capacity, 4 KiB aligned); zeroed if `zeroed`,
    /// else with the contents of an earlier use.
    pub fn take(&self, ring: &io_uring::IoUring, len: usize, zeroed: bool) -> IoBuf {
        let cap = len.max(MIN_BYTES).next_power_of_two();
        let class = cap.trailing_zeros() as u8;
        let chunk = {
            let mut pool = self.pool.borrow_mut();
            pool.clear_stale_slots(ring);
            pool.get(class)
        };
        let chunk = match chunk {
            Some(c) => c,
            None => self.grow(ring, cap, class),
        };
        let buf = IoBuf { ptr: chunk.ptr, len, class, fixed: chunk.fixed, pool: self.pool.clone() };
        if zeroed {
            // SAFETY: a free buffer of at least `len` bytes, owned by nobody else.
            unsafe { std::ptr::write_bytes(buf.ptr, 0, len) };
        }
        buf
    }

    /// Whether buffers came back since the last [`BufPool::trim`].
    pub fn dirty(&self) -> bool {
        self.pool.borrow().dirty
    }

    /// Unmaps every free large buffer and every small-buffer region whose buffers are all
    /// free, clearing their registrations; returns the bytes unmapped.
    pub fn trim(&self, ring: &io_uring::IoUring) -> usize {
        let mut pool = self.pool.borrow_mut();
        pool.dirty = false;
        let mut freed = 0;
        for class in 0..pool.free.len() {
            let cap = 1usize << class;
            if cap > REGION_BYTES {
                for c in std::mem::take(&mut pool.free[class]) {
                    if let Some(slot) = c.fixed {
                        pool.slots_stale.push(slot);
                    }
                    // SAFETY: a free large buffer's own mapping of `cap` bytes.
                    unsafe { libc::munmap(c.ptr.cast(), cap) };
                    freed += cap;
                }
                continue;
            }
            // Free buffers per region (regions are REGION_BYTES-aligned).
            let per_region = REGION_BYTES / cap;
            let mut counts: std::collections::HashMap<usize, usize> = Default::default();
            for c in &pool.free[class] {
                *counts.entry(c.ptr as usize & !(REGION_BYTES - 1)).or_default() += 1;
            }
            let whole: std::collections::HashSet<usize> =
                counts.into_iter().filter(|&(_, n)| n == per_region).map(|(b, _)| b).collect();
            if whole.is_empty() {
                continue;
            }
            let mut slots = Vec::new();
            pool.free[class].retain(|c| {
                let base = c.ptr as usize & !(REGION_BYTES - 1);
                if whole.contains(&base) && c.ptr as usize == base {
                    slots.extend(c.fixed);
                }
                !whole.contains(&base)
            });
            pool.slots_stale.extend(slots);
            pool.regions.retain(|&r| !whole.contains(&(r as usize)));
            for &base in &whole {
                // SAFETY: a region mapped by `map_region` whose buffers are all free (and now
                // off the free list).
                unsafe { libc::munmap(base as *mut libc::c_void, REGION_BYTES) };
                freed += REGION_BYTES;
            }
        }
        pool.clear_stale_slots(ring);
        freed
    }

    /// Maps a region for class `class` (capacity `cap`), registers it, and returns one buffer
    /// of it (the others go to the free list).
    fn grow(&self, ring: &io_uring::IoUring, cap: usize, class: u8) -> Chunk {
        let region_len = cap.max(REGION_BYTES);
        let base = map_region(region_len);
        let fixed = self.pool.borrow_mut().register(ring, base, region_len);
        let mut pool = self.pool.borrow_mut();
        if cap <= REGION_BYTES {
            pool.regions.push(base);
        }
        for i in 1..region_len / cap {
            // SAFETY: inside the region just mapped.
            let ptr = unsafe { base.add(i * cap) };
            pool.list(class).push(Chunk { ptr, fixed });
        }
        Chunk { ptr: base, fixed }
    }
}

impl Pool {
    fn list(&mut self, class: u8) -> &mut Vec<Chunk> {
        let class = class as usize;
        if self.free.len() <= class {
            self.free.resize_with(class + 1, Vec::new);
        }
        &mut self.free[class]
    }

    fn get(&mut self, class: u8) -> Option<Chunk> {
        self.list(class).pop()
    }

    fn put(&mut self, class: u8, chunk: Chunk) {
        self.dirty = true;
        let cap = 1usize << class;
        if cap > REGION_BYTES && self.list(class).len() >= KEEP_LARGE {
            // A large buffer beyond the few kept: its own region, unmapped.
            if let Some(slot) = chunk.fixed {
                // The registration pins the pages (the kernel's own reference) until the slot
                // is cleared; munmap below only drops ours.
                self.slots_stale.push(slot);
            }
            // SAFETY: the region of a large buffer is exactly its capacity, mapped by
            // `map_region` and referenced by nobody now.
            unsafe { libc::munmap(chunk.ptr.cast(), cap) };
            return;
        }
        self.list(class).push(chunk);
    }

    /// Drops the registrations of unmapped large buffers, so their pages are unpinned now
    /// rather than when the slot is next reused. A request still using one keeps its own
    /// reference in the kernel.
    fn clear_stale_slots(&mut self, ring: &io_uring::IoUring) {
        let empty = libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 };
        while let Some(slot) = self.slots_stale.pop() {
            // SAFETY: an empty entry registers no memory.
            if let Err(e) =
                unsafe { ring.submitter().register_buffers_update(slot as u32, &[empty], None) }
            {
                tracing::debug!(error = %e, slot, "registered buffer slot not cleared");
            }
            self.slots_free.push(slot);
        }
    }

    /// Registers `[base, base + len)` in a table slot; `None` if registration is off or fails.
    fn register(&mut self, ring: &io_uring::IoUring, base: *mut u8, len: usize) -> Option<u16> {
        if !self.register {
            return None;
        }
        let slot = match self.slots_free.pop() {
            Some(s) => s,
            None if self.next_slot < TABLE_SLOTS => {
                self.next_slot += 1;
                (self.next_slot - 1) as u16
            }
            None => return None, // table full: this region goes unregistered
        };
        let iov = libc::iovec { iov_base: base.cast(), iov_len: len };
        // SAFETY: the region stays mapped while any buffer of it is in use; a slot is reused
        // (replacing the registration) only after its region was unmapped.
        match unsafe { ring.submitter().register_buffers_update(slot as u32, &[iov], None) } {
            Ok(()) => Some(slot),
            Err(e) => {
                tracing::info!(
                    error = %e,
                    "buffers left unregistered (RLIMIT_MEMLOCK too small to pin them?)"
                );
                self.register = false;
                None
            }
        }
    }
}

/// An anonymous mapping of `len` bytes aligned to 2 MiB, advised to use huge pages before any
/// page is touched. Aborts like an allocation failure if memory is exhausted.
fn map_region(len: usize) -> *mut u8 {
    let span = len + REGION_BYTES;
    // SAFETY: a fresh private anonymous mapping; the result is checked.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        let layout = std::alloc::Layout::from_size_align(len, REGION_BYTES)
            .unwrap_or(std::alloc::Layout::new::<u8>());
        std::alloc::handle_alloc_error(layout);
    }
    let start = p as usize;
    let aligned = start.next_multiple_of(REGION_BYTES);
    // SAFETY: trimming the unaligned head and the tail of the mapping just made; then advice
    // on the aligned part, which nothing has touched yet. madvise failing (THP disabled) only
    // loses contiguity.
    unsafe {
        if aligned > start {
            libc::munmap(p, aligned - start);
        }
        let tail = start + span - (aligned + len);
        if tail > 0 {
            libc::munmap((aligned + len) as *mut libc::c_void, tail);
        }
        libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
    aligned as *mut u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_reused_and_zeroed_on_request() {
        let ring = io_uring::IoUring::new(8).expect("io_uring");
        let pool = BufPool::new(&ring);
        let mut a = pool.take(&ring, 5000, true);
        assert_eq!(a.as_mut_ptr() as usize % 4096, 0);
        assert_eq!(a.as_mut().len(), 5000);
        assert!(a.slice(0..5000).iter().all(|&b| b == 0));
        a.as_mut().fill(7);
        let p = a.as_mut_ptr();
        drop(a);
        let b = pool.take(&ring, 8192, false);
        assert_eq!(b.as_mut_ptr(), p, "the freed buffer of the same class comes back");
        assert_eq!(b.slice(0..4), &[7, 7, 7, 7]);
        let c = pool.take(&ring, 8192, true);
        assert!(c.slice(0..8192).iter().all(|&b| b == 0));
        // One 2 MiB region serves both 8 KiB buffers: the same registered slot.
        assert_eq!(b.fixed_index(), c.fixed_index());
    }

    #[test]
    fn trim_unmaps_free_regions_and_large_buffers_only() {
        let ring = io_uring::IoUring::new(8).expect("io_uring");
        let pool = BufPool::new(&ring);
        // Two regions of 1 MiB buffers; one buffer of the second stays in use.
        let small: Vec<IoBuf> = (0..4).map(|_| pool.take(&ring, 1 << 20, false)).collect();
        let large = pool.take(&ring, 8 << 20, false);
        assert!(!pool.dirty());
        let mut small = small.into_iter();
        let kept = small.nth(2).unwrap();
        drop(small);
        drop(large);
        assert!(pool.dirty());
        assert_eq!(pool.trim(&ring), REGION_BYTES + (8 << 20));
        assert!(!pool.dirty());
        {
            let p = pool.pool.borrow();
            assert_eq!(p.regions.len(), 1, "the region still in use stays");
            assert_eq!(p.free[20].len(), 1, "its other buffer stays free");
            assert!(p.slots_stale.is_empty());
        }
        drop(kept);
        assert_eq!(pool.trim(&ring), REGION_BYTES);
        // The pool still works after a trim.
        let again = pool.take(&ring, 1 << 20, true);
        assert!(again.slice(0..16).iter().all(|&b| b == 0));
    }

    #[test]
    fn large_buffers_have_regions_of_their_own_and_only_a_few_are_kept() {
        let ring = io_uring::IoUring::new(8).expect("io_uring");
        let pool = BufPool::new(&ring);
        let bufs: Vec<IoBuf> =
            (0..KEEP_LARGE + 3).map(|_| pool.take(&ring, 3 << 20, true)).collect();
        for b in &bufs {
            assert_eq!(b.as_mut_ptr() as usize % REGION_BYTES, 0);
        }
        drop(bufs);
        {
            let p = pool.pool.borrow();
            assert_eq!(p.free[22].len(), KEEP_LARGE);
            if p.register {
                assert_eq!(p.slots_stale.len(), 3, "unmapped regions still pinned");
            }
        }
        // The next take (a kept large buffer: no new region) clears the stale slots.
        let _kept = pool.take(&ring, 3 << 20, false);
        let p = pool.pool.borrow();
        assert!(p.slots_stale.is_empty());
        if p.register {
            assert_eq!(p.slots_free.len(), 3, "cleared slots are free for new regions");
        }
    }
}
