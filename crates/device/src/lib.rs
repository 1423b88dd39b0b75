//! Device models: what happens below the scheduler.
//!
//! A [`Device`] is a state machine like the schedulers: the driver [`Device::submit`]s commands
//! (never more than [`Device::queue_depth`] at once), asks when its next internal event is
//! ([`Device::next_event_ns`]) and [`Device::advance`]s it to that time to collect completions.
//! Inside, a device may reorder its queue (NCQ), cache, prefetch or garbage-collect; outside it
//! is only "this command finished at that time".
//!
//! **Architecture invariant:** no device model reads a clock or does I/O; randomness (a disk's
//! rotational phase at power-on) comes from a [`elevator_core::RandomStream`] handed in.
//!
//! Models: [`ram`], [`hdd`] (the disk of record), [`ssd`] (SATA and NVMe flash drives), and
//! [`array`](mod@array)s of them.

pub mod array;
pub mod hdd;
pub mod limits;
pub mod link;
pub mod ram;
pub mod recorder;
pub mod ssd;

use elevator_core::{Nanos, Op, RequestId};

/// One command as the device sees it: the scheduler's request, stripped to what a disk needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Command {
    pub id: RequestId,
    pub op: Op,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    /// Force unit access: a write is complete only when it is on the media.
    pub fua: bool,
}

/// A finished command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub id: RequestId,
    pub done_ns: Nanos,
}

/// A simulated block device.
pub trait Device: Send {
    /// A one-line description for reports, e.g. "7200 rpm SATA HDD, 500 GB, NCQ 31".
    fn describe(&self) -> String;

    /// Size in bytes; commands never reach past it.
    fn capacity_bytes(&self) -> u64;

    /// How many commands may be outstanding at once (NCQ/TCQ depth, NVMe queue size).
    fn queue_depth(&self) -> u32;

    /// True for devices where seeks cost time (`/sys/block/<dev>/queue/rotational`).
    fn rotational(&self) -> bool;

    /// Accepts a command at `now_ns`. The caller guarantees fewer than `queue_depth` commands
    /// are outstanding and that the range lies within `capacity_bytes`.
    fn submit(&mut self, cmd: Command, now_ns: Nanos);

    /// When the next command will complete (or the next internal event happens), if any.
    fn next_event_ns(&self) -> Option<Nanos>;

    /// Runs the device up to `now_ns`, appending every command finished by then to `completed`
    /// in completion order.
    fn advance(&mut self, now_ns: Nanos, completed: &mut Vec<Completion>);

    /// Internal counters worth reporting, by name (an SSD's write amplification and garbage
    /// collection); none by default.
    fn stats(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
}
