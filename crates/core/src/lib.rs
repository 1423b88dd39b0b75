//! The shared vocabulary of elevator.
//!
//! Everything that crosses a seam lives here: the [`Request`] a submitter hands to the block
//! layer and a scheduler hands to a device, the [`Owner`] that says on whose behalf it was
//! issued, the units of time and space, and the seeded random streams that keep a simulation
//! reproducible.
//!
//! **Architecture invariant:** this crate performs no I/O and never reads a clock. Time is a
//! number of virtual (or, in the real server, monotonic) nanoseconds handed in by the caller.

pub mod hash;
pub mod request;
pub mod rng;
pub mod text;
pub mod units;

pub use request::{BioFlags, Cgroup, IoPrio, IoPrioClass, Op, Owner, Request, RequestId};
pub use rng::RandomStream;
pub use units::{Nanos, NS_PER_MS, NS_PER_SEC, NS_PER_US, SECTOR_BYTES};
