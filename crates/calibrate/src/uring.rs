//! The real backend: phases run on the target with io_uring, `O_DIRECT`, one aligned buffer
//! per queue slot. The only module of the crate that does I/O on the target.
//!
//! Submission follows fio's defaults (`iodepth_batch_submit=1`, `iodepth_batch_complete_max`
//! = depth): every I/O is submitted by an `io_uring_enter` of its own as soon as its slot is
//! free, and each wait reaps every completion there is. Submitting the refills in one call
//! with the wait, as this backend first did, mostly measured fewer 4 KiB IOPS at QD32 than
//! fio on the same virtio disk (the device saw new I/Os in bursts rather than one by one),
//! and a model fitted on them then missed fio's figure.
//!
//! Timing: the clock is read before each submitting `io_uring_enter` (the I/O's submission
//! time) and once after a wait returns with completions (their completion time), so a
//! latency is what fio's `clat` plus submission would show: kernel block layer, driver and
//! device, and one system call's worth of CPU.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::os::unix::io::AsRawFd;
use std::time::Instant;

use elevator_core::{Nanos, RandomStream};
use io_uring::{opcode, types, IoUring};

use crate::backend::{Backend, Hints, Outcome};
use crate::target::Target;
use crate::workload::{Dir, Phase, MAX_DEPTH, MAX_IO_BYTES};

/// The most buffer memory one phase may pin: depth × largest I/O.
pub const MAX_BUFFER_BYTES: u64 = 512 << 20;

struct Buf {
    ptr: *mut u8,
    layout: Layout,
}

impl Buf {
    fn new(len: usize, fill: &mut RandomStream) -> Buf {
        let layout = Layout::from_size_align(len, 4096).expect("a valid layout");
        // SAFETY: non-zero size (len ≥ 4096), checked layout; freed in Drop.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory for a {len}-byte I/O buffer");
        // Fill with random bytes: written data must not be zeros a host could elide.
        // SAFETY: `ptr` points to `len` bytes we own.
        let bytes = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
        for chunk in bytes.chunks_mut(8) {
            let v = fill.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
        Buf { ptr, layout }
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in `new`.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// Runs phases on an opened [`Target`].
pub struct UringBackend {
    target: Target,
    ring: IoUring,
    bufs: Vec<Buf>,
    buf_len: u64,
    write_allowed: bool,
    fill: RandomStream,
}

impl UringBackend {
    pub fn new(target: Target, write_allowed: bool) -> Result<UringBackend, String> {
        let ring = IoUring::new(MAX_DEPTH.next_power_of_two()).map_err(|e| {
            format!("io_uring_setup: {e} (io_uring disabled or not supported by this kernel?)")
        })?;
        Ok(UringBackend {
            target,
            ring,
            bufs: Vec::new(),
            buf_len: 0,
            write_allowed,
            fill: RandomStream::new(0x5eed, 7),
        })
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    fn ensure_buffers(&mut self, depth: u32, len: u64) -> Result<(), String> {
        let len = len.clamp(4096, MAX_IO_BYTES);
        if u64::from(depth) * len > MAX_BUFFER_BYTES {
            return Err(format!(
                "depth {depth} × {len} bytes exceeds the {} MiB buffer limit",
                MAX_BUFFER_BYTES >> 20
            ));
        }
        if len > self.buf_len {
            self.bufs.clear();
            self.buf_len = len;
        }
        while self.bufs.len() < depth as usize {
            self.bufs.push(Buf::new(self.buf_len as usize, &mut self.fill));
        }
        Ok(())
    }
}

impl Backend for UringBackend {
    fn capacity_bytes(&self) -> u64 {
        self.target.size_bytes
    }

    fn hints(&self) -> Hints {
        self.target.hints.clone()
    }

    fn run(&mut self, phase: &Phase) -> Result<Outcome, String> {
        let n = phase.ios.len();
        if n == 0 {
            return Ok(Outcome::default());
        }
        if !self.write_allowed && phase.ios.iter().any(|io| io.dir != Dir::Read) {
            return Err(format!("{}: writes without --write", phase.name));
        }
        let size = self.target.size_bytes;
        if let Some(io) = phase.ios.iter().find(|io| io.offset_bytes + io.len_bytes > size) {
            return Err(format!("{}: I/O at {} beyond the target", phase.name, io.offset_bytes));
        }
        let depth = phase.depth.min(n as u32);
        self.ensure_buffers(depth, phase.max_len_bytes())?;
        let fd = types::Fd(self.target.file.as_raw_fd());
        let mut free: Vec<u32> = (0..depth).rev().collect();
        let mut slot_io = vec![0usize; depth as usize];
        let mut lat: Vec<Nanos> = vec![0; n];
        let mut submitted_at: Vec<Nanos> = vec![0; n];
        let epoch = Instant::now();
        let now = || epoch.elapsed().as_nanos() as Nanos;
        let mut next = 0usize;
        let mut in_flight = 0usize;
        let mut bytes = 0u64;
        let mut last_done: Nanos = 0;
        loop {
            while next < n && now() < phase.max_ns {
                let Some(slot) = free.pop() else { break };
                let io = phase.ios[next];
                let buf = self.bufs[slot as usize].ptr;
                let len = io.len_bytes as u32;
                let entry = match io.dir {
                    Dir::Read => opcode::Read::new(fd, buf, len).offset(io.offset_bytes).build(),
                    Dir::Write => opcode::Write::new(fd, buf, len).offset(io.offset_bytes).build(),
                    Dir::WriteSync => opcode::Write::new(fd, buf, len)
                        .offset(io.offset_bytes)
                        .rw_flags(libc::RWF_DSYNC)
                        .build(),
                }
                .user_data(u64::from(slot));
                // SAFETY: the buffer outlives the operation (kept in `self.bufs`, not touched
                // until its completion is reaped below).
                if unsafe { self.ring.submission().push(&entry) }.is_err() {
                    free.push(slot);
                    break;
                }
                slot_io[slot as usize] = next;
                submitted_at[next] = now();
                self.ring.submit().map_err(|e| format!("{}: io_uring_enter: {e}", phase.name))?;
                bytes += io.len_bytes;
                next += 1;
                in_flight += 1;
            }
            if in_flight == 0 {
                break;
            }
            self.ring
                .submit_and_wait(1)
                .map_err(|e| format!("{}: io_uring_enter: {e}", phase.name))?;
            let t = now();
            let mut err = None;
            for cqe in self.ring.completion() {
                let slot = cqe.user_data() as usize;
                let i = slot_io[slot];
                let io = phase.ios[i];
                if cqe.result() < 0 {
                    err.get_or_insert(format!(
                        "{}: {} at byte {}: {}",
                        phase.name,
                        if io.dir == Dir::Read { "read" } else { "write" },
                        io.offset_bytes,
                        std::io::Error::from_raw_os_error(-cqe.result())
                    ));
                } else if (cqe.result() as u64) < io.len_bytes {
                    err.get_or_insert(format!(
                        "{}: short transfer at byte {}: {} of {} bytes",
                        phase.name,
                        io.offset_bytes,
                        cqe.result(),
                        io.len_bytes
                    ));
                }
                lat[i] = t - submitted_at[i];
                last_done = t;
                free.push(slot as u32);
                in_flight -= 1;
            }
            if let Some(e) = err {
                // Drain what is still in flight before reporting.
                while in_flight > 0 {
                    if self.ring.submit_and_wait(1).is_err() {
                        break;
                    }
                    in_flight -= self.ring.completion().count();
                }
                return Err(e);
            }
        }
        lat.truncate(next);
        let first = submitted_at.first().copied().unwrap_or(0);
        Ok(Outcome { lat_ns: lat, elapsed_ns: last_done.saturating_sub(first), bytes })
    }
}
