//! The memory side of a simulated machine: its page cache, and what moves data in and out
//! of it.
//!
//! Linux's page cache sits between a process's `read()`/`write()` and the block layer: reads
//! are served from cached pages and fetched ahead of the reader ([`readahead`]); writes
//! dirty pages that flusher threads write back later, while writers that dirty too much are
//! throttled ([`dirty`]); memory pressure reclaims clean pages from the cold end of the
//! LRU lists ([`pages`]). What a scheduler sees (which requests, issued as whom, sync or
//! async, when) is decided here, so this crate models what moves those decisions:
//! `mm/readahead.c`, `mm/page-writeback.c`, `fs/fs-writeback.c` and `mm/vmscan.c`'s split
//! LRU, in the forms of the kernels the seed experiments ran (2.5 to 3.x; [`config`]).
//!
//! State is kept per run of pages (an extent), never per page or per system call, so a
//! buffered job costs about what the block I/O it causes costs ([`vm`]).
//!
//! **Architecture invariant:** sans-I/O like the schedulers: [`vm::Vm`] receives system
//! calls, I/O completions and timer expiries with `now`, and answers with block I/O to issue
//! and tasks to wake. No clock, no I/O, no randomness.

pub mod config;
pub mod dirty;
pub mod dirty_order;
pub mod pages;
pub mod readahead;
pub mod vm;

pub use config::{Kernel, VmConfig};
pub use vm::{
    Advice, BdiSpec, BlockIo, FileSpec, Output, ReadaheadStats, SyncRangeFlags, Syscall,
    SyscallResult, TaskId, Vm, Wake,
};
