//! The deterministic discrete-event simulator.
//!
//! One virtual nanosecond clock, one event queue ordered by (time, sequence number), and a
//! seeded random stream per source. fio-like [`workload`] processes issue bios; the
//! [`block`] layer splits them at `max_sectors_kb`, merges them in the plug and through the
//! scheduler, holds submitters back at `nr_requests`, and feeds the device model up to its
//! queue depth; completions flow back to the scheduler and to the jobs' statistics.
//!
//! **Architecture invariant:** the simulator never reads the wall clock and never iterates a
//! hash map in an order that reaches the output: the same inputs and seed give byte-identical
//! results on every machine.

pub mod blktrace;
pub mod block;
pub mod cpu;
pub mod engine;
pub mod era;
pub mod files;
pub mod filesystem;
pub mod frontend;
pub mod intake;
pub mod iolog_out;
mod key_line;
pub mod machine;
pub mod offset_distribution;
pub mod random_map;
pub mod report;
mod slab;
pub mod stack;
pub mod stats;
pub mod steadystate;
pub mod timeline;
pub mod topology;
pub mod units;
pub mod verify;
pub mod workload;

pub use engine::{simulate, SimError, SimOptions, SimResult};
pub use topology::{read_bounded, toml_error, Topology};
